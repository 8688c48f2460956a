#pragma once
// Derivative helpers (see formulas.h) for the matrix products. For C = A B the conjugate
// Wirtinger gradients are dA = dC B^H and dB = A^H dC; tangents follow the product rule.
#include <optional>
#include <vector>

#include "autograd/formulas.h"

namespace ember::autograd {

// The conjugate transpose of the last two dims.
inline Tensor mH(const Tensor& t) {
  return autograd::conj(autograd::transpose(t, -2, -1));
}

// The tangent of a product linear in each factor: product(a_t, b) + product(a, b_t), over the
// factors that have a tangent.
template <class Product>
Tensor product_tangent(const Tensor& a, const Tensor& a_t, const Tensor& b, const Tensor& b_t,
                       Product product) {
  return add_tangents(a_t.defined() ? product(a_t, b) : Tensor(), b_t.defined() ? product(a, b_t) : Tensor());
}

// matmul's gradient for `self` (for_self) or `other`: 1-D operands take part as the row / column
// matmul made of them, and the engine sums broadcast batch dims back to the operand's shape.
inline Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self) {
  const bool self_vec = self.dim() == 1, other_vec = other.dim() == 1;
  const Tensor a = self_vec ? autograd::unsqueeze(self, 0) : self;
  const Tensor b = other_vec ? autograd::unsqueeze(other, 1) : other;
  Tensor g = grad;
  if (self_vec) g = autograd::unsqueeze(g, other_vec ? 0 : -2);
  if (other_vec) g = autograd::unsqueeze(g, -1);
  if (for_self) {
    const Tensor r = autograd::matmul(g, mH(b));
    return self_vec ? autograd::squeeze(r, IntList{-2}) : r;
  }
  const Tensor r = autograd::matmul(mH(a), g);
  return other_vec ? autograd::squeeze(r, IntList{-1}) : r;
}

inline Tensor matmul_tangent(const Tensor& self, const Tensor& self_t, const Tensor& other,
                             const Tensor& other_t) {
  return product_tangent(self, self_t, other, other_t,
                         [](const Tensor& a, const Tensor& b) { return autograd::matmul(a, b); });
}

// addbmm sums the batch of products: each batch element's product gets the whole gradient.
inline Tensor addbmm_grad_per_batch(const Tensor& grad, const Tensor& batch1) {
  return autograd::expand(autograd::unsqueeze(grad, 0), IntList{batch1.size(0), grad.size(0), grad.size(1)});
}

// ---- solvers and determinants ------------------------------------------------------------------

inline Tensor mat_eye(const Tensor& like) {
  return ember::eye(like.size(-1), std::nullopt, like.dtype(), like.device());
}

// The trace over the last two dims.
inline Tensor trace_last(const Tensor& t) {
  return autograd::sum(autograd::diagonal(t, 0, -2, -1), IntList{-1}, false, std::nullopt);
}

inline Tensor as_matrix_value(const Tensor& t) {
  return autograd::unsqueeze(autograd::unsqueeze(t, -1), -1);
}

// linalg.solve's B is a (batch of) vector(s) when 1-D or one dim short of A with A's batch dims.
inline bool solve_vector(const Tensor& A, const Tensor& B) {
  return B.dim() == 1 || (B.dim() == A.dim() - 1 && IntList(B.sizes().begin(), B.sizes().end() - 1) ==
                                                        IntList(A.sizes().begin(), A.sizes().end() - 2));
}

// For A X = B (left) or X A = B: dB = solve(A^H, dX), dA = -dB X^H (left) or -X^H dB.
inline Tensor solve_backward_A(const Tensor& grad, const Tensor& A, const Tensor& B, const Tensor& X,
                               bool left) {
  const bool vec = solve_vector(A, B);
  const Tensor gB = autograd::linalg_solve(mH(A), grad, left);
  const Tensor g = vec ? autograd::unsqueeze(gB, left ? -1 : -2) : gB;
  const Tensor x = vec ? autograd::unsqueeze(X, left ? -1 : -2) : X;
  return autograd::neg(left ? autograd::matmul(g, mH(x)) : autograd::matmul(mH(x), g), std::nullopt);
}

inline Tensor solve_tangent(const Tensor& A, const Tensor& A_t, const Tensor& B, const Tensor& B_t,
                            const Tensor& X, bool left) {
  const bool vec = solve_vector(A, B);
  Tensor rhs = B_t.defined() ? B_t : zeros_of(X);
  if (A_t.defined()) {
    const Tensor x = vec ? autograd::unsqueeze(X, left ? -1 : -2) : X;
    Tensor moved = left ? autograd::matmul(A_t, x) : autograd::matmul(x, A_t);
    if (vec) moved = autograd::squeeze(moved, IntList{left ? -1 : -2});
    rhs = autograd::sub(rhs, moved, Scalar(int64_t(1)), std::nullopt);
  }
  return autograd::linalg_solve(A, rhs, left);
}

// d det = det * tr(A^-1 dA): dA = conj(g det) A^-H (A invertible).
inline Tensor det_backward(const Tensor& grad, const Tensor& A, const Tensor& det) {
  return autograd::mul(as_matrix_value(autograd::mul(grad, autograd::conj(det), std::nullopt)),
                       mH(autograd::linalg_inv(A)), std::nullopt);
}

inline Tensor det_tangent(const Tensor& A, const Tensor& A_t, const Tensor& det) {
  return autograd::mul(det, trace_last(autograd::linalg_solve(A, A_t, true)), std::nullopt);
}

// slogdet: with c = tr(A^-1 dA), d logabsdet = Re(c) and d sign = i sign Im(c).
inline Tensor slogdet_backward(const std::vector<Tensor>& grads, const Tensor& A, const Tensor& sign) {
  Tensor h = grads.at(1);
  if (is_complex(A.dtype())) {  // h = g_logabs + i Im(g_sign conj(sign))
    const Tensor turn = autograd::imag(autograd::mul(grads.at(0), autograd::conj(sign), std::nullopt));
    h = autograd::complex(h, turn);
  }
  return autograd::mul(as_matrix_value(h), mH(autograd::linalg_inv(A)), std::nullopt);
}

inline Tensor slogdet_sign_tangent(const Tensor& A, const Tensor& A_t, const Tensor& sign) {
  if (!is_complex(A.dtype())) return zeros_of(sign);
  const Tensor c = autograd::imag(trace_last(autograd::linalg_solve(A, A_t, true)));
  return autograd::mul(sign, autograd::complex(zeros_of(c), c), std::nullopt);
}

inline Tensor slogdet_logabsdet_tangent(const Tensor& A, const Tensor& A_t) {
  const Tensor c = trace_last(autograd::linalg_solve(A, A_t, true));
  return is_complex(c.dtype()) ? autograd::real(c) : c;
}

// Phi: the lower triangle with the diagonal halved.
inline Tensor phi(const Tensor& x) {
  const Tensor half_diagonal =
      autograd::mul(autograd::mul(x, mat_eye(x), std::nullopt), num(0.5), std::nullopt);
  return autograd::add(autograd::tril(x, -1), half_diagonal, Scalar(int64_t(1)), std::nullopt);
}

// Cholesky A = L L^H: dA = sym(L^-H Phi(L^H dL) L^-1) (Murray 2016); `upper` gives U = L^H.
inline Tensor cholesky_backward(const Tensor& grad, const Tensor& factor, bool upper) {
  const Tensor L = upper ? mH(factor) : factor;
  const Tensor gL = upper ? mH(grad) : grad;
  const Tensor P = phi(autograd::matmul(mH(L), gL));
  const Tensor Y = autograd::linalg_solve_triangular(mH(L), P, true, true, false);
  const Tensor S = autograd::linalg_solve_triangular(L, Y, false, false, false);
  return autograd::mul(autograd::add(S, mH(S), Scalar(int64_t(1)), std::nullopt), num(0.5), std::nullopt);
}

inline Tensor cholesky_tangent(const Tensor& A_t, const Tensor& factor, bool upper) {
  const Tensor L = upper ? mH(factor) : factor;
  const Tensor M = autograd::linalg_solve_triangular(L, A_t, false, true, false);    // L^-1 dA
  const Tensor N = autograd::linalg_solve_triangular(mH(L), M, true, false, false);  // L^-1 dA L^-H
  const Tensor L_t = autograd::matmul(L, phi(N));
  return upper ? mH(L_t) : L_t;
}

// The part of a square matrix a triangular solve reads.
inline Tensor triangle(const Tensor& t, bool upper, bool unit) {
  return upper ? autograd::triu(t, unit ? 1 : 0) : autograd::tril(t, unit ? -1 : 0);
}

inline Tensor solve_triangular_grad_B(const Tensor& grad, const Tensor& A, bool upper, bool left, bool unit) {
  return autograd::linalg_solve_triangular(mH(A), grad, !upper, left, unit);
}

inline Tensor solve_triangular_grad_A(const Tensor& grad, const Tensor& A, const Tensor& X, bool upper,
                                      bool left, bool unit) {
  const Tensor gB = solve_triangular_grad_B(grad, A, upper, left, unit);
  const Tensor g = left ? autograd::matmul(gB, mH(X)) : autograd::matmul(mH(X), gB);
  return triangle(autograd::neg(g, std::nullopt), upper, unit);
}

inline Tensor solve_triangular_tangent(const Tensor& A, const Tensor& A_t, const Tensor& B_t, const Tensor& X,
                                       bool upper, bool left, bool unit) {
  Tensor rhs = B_t.defined() ? B_t : zeros_of(X);
  if (A_t.defined()) {
    const Tensor a = triangle(A_t, upper, unit);
    rhs = autograd::sub(rhs, left ? autograd::matmul(a, X) : autograd::matmul(X, a), Scalar(int64_t(1)),
                        std::nullopt);
  }
  return autograd::linalg_solve_triangular(A, rhs, upper, left, unit);
}

}  // namespace ember::autograd
