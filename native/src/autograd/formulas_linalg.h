#pragma once
// Derivative helpers (see formulas.h) for the matrix products. For C = A B the conjugate
// Wirtinger gradients are dA = dC B^H and dB = A^H dC; tangents follow the product rule.
#include <optional>
#include <string>
#include <vector>

#include "autograd/formulas.h"

namespace ember::autograd {

// The conjugate transpose of the last two dims.
Tensor mH(const Tensor& t);

// The tangent of a product linear in each factor: product(a_t, b) + product(a, b_t), over the
// factors that have a tangent.
template <class Product>
Tensor product_tangent(const Tensor& a, const Tensor& a_t, const Tensor& b, const Tensor& b_t,
                       Product product) {
  return add_tangents(a_t.defined() ? product(a_t, b) : Tensor(), b_t.defined() ? product(a, b_t) : Tensor());
}

// matmul's gradient for `self` (for_self) or `other`: 1-D operands take part as the row / column
// matmul made of them, and the engine sums broadcast batch dims back to the operand's shape.
Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self);

Tensor matmul_tangent(const Tensor& self, const Tensor& self_t, const Tensor& other, const Tensor& other_t);

// addbmm sums the batch of products: each batch element's product gets the whole gradient.
Tensor addbmm_grad_per_batch(const Tensor& grad, const Tensor& batch1);

// ---- solvers and determinants ------------------------------------------------------------------

// For A X = B (left) or X A = B: dB = solve(A^H, dX), dA = -dB X^H (left) or -X^H dB.
Tensor solve_backward_A(const Tensor& grad, const Tensor& A, const Tensor& B, const Tensor& X, bool left);

Tensor solve_tangent(const Tensor& A, const Tensor& A_t, const Tensor& B, const Tensor& B_t, const Tensor& X,
                     bool left);

// d det = det * tr(A^-1 dA): dA = conj(g det) A^-H (A invertible).
Tensor det_backward(const Tensor& grad, const Tensor& A, const Tensor& det);

Tensor det_tangent(const Tensor& A, const Tensor& A_t, const Tensor& det);

// slogdet: with c = tr(A^-1 dA), d logabsdet = Re(c) and d sign = i sign Im(c).
Tensor slogdet_backward(const std::vector<Tensor>& grads, const Tensor& A, const Tensor& sign);

Tensor slogdet_sign_tangent(const Tensor& A, const Tensor& A_t, const Tensor& sign);

Tensor slogdet_logabsdet_tangent(const Tensor& A, const Tensor& A_t);

// Phi: the lower triangle with the diagonal halved.
Tensor phi(const Tensor& x);

// Cholesky A = L L^H: dA = sym(L^-H Phi(L^H dL) L^-1) (Murray 2016); `upper` gives U = L^H.
Tensor cholesky_backward(const Tensor& grad, const Tensor& factor, bool upper);

Tensor cholesky_tangent(const Tensor& A_t, const Tensor& factor, bool upper);

Tensor solve_triangular_grad_B(const Tensor& grad, const Tensor& A, bool upper, bool left, bool unit);

Tensor solve_triangular_grad_A(const Tensor& grad, const Tensor& A, const Tensor& X, bool upper, bool left,
                               bool unit);

Tensor solve_triangular_tangent(const Tensor& A, const Tensor& A_t, const Tensor& B_t, const Tensor& X,
                                bool upper, bool left, bool unit);

// ---- decompositions ----------------------------------------------------------------------------
// Formulas of PyTorch's FunctionsManual (svd_backward, linalg_eig_backward, linalg_qr_backward,
// linalg_lu_backward and their JVPs), rederived in the conjugate Wirtinger convention.

Tensor over(const Tensor& a, const Tensor& b);

// SVD A = U S V^H (reduced; full U / Vh are cut to their first k columns / rows, as PyTorch's
// backward does): gA = U gP V^H + (I - U U^H) gU S^-1 V^H + U S^-1 gV^H (I - V V^H) with
// gP = skew(U^H gU) S / E + S skew(V^H gV) / E + diag(gS) (+ the phase part when complex).
Tensor svd_backward(const std::vector<Tensor>& grads, const Tensor& U_full, const Tensor& S,
                    const Tensor& Vh_full, bool full);

// dP = U^H dA V; dS = Re diag dP; dU = U Omega_U + (dA V - U dP) S^-1, dV = V Omega_V +
// (dA^H U - V dP^H) S^-1, Omega the skew parts of dP S + S dP^H (resp. S dP + dP^H S) over E.
std::vector<Tensor> svd_tangents(const Tensor& A, const Tensor& A_t, const Tensor& U_full, const Tensor& S,
                                 const Tensor& Vh_full, bool full);

Tensor svdvals_backward(const Tensor& grad, const Tensor& A);

Tensor svdvals_tangent(const Tensor& A, const Tensor& A_t);

// Hermitian A = V diag(L) V^H: gA = V (diag(gL) + skew(V^H gV) / (2 E)) V^H (Hermitian).
Tensor eigh_backward(const std::vector<Tensor>& grads, const Tensor& L, const Tensor& V);

std::vector<Tensor> eigh_tangents(const Tensor& A_t, const Tensor& L, const Tensor& V);

Tensor eigvalsh_backward(const Tensor& grad, const Tensor& A, const std::string& uplo);

Tensor eigvalsh_tangent(const Tensor& A, const Tensor& A_t, const std::string& uplo);

// A wide matrix (m < n) is [X | Y] with X = Q U the QR of its square part, R = [U | V] and
// Y = Q V: V's gradient flows to Q (gQ + Y gV^H) and to Y (Q gV).
Tensor qr_backward(const std::vector<Tensor>& grads, const Tensor& Q, const Tensor& R,
                   const std::string& mode);

std::vector<Tensor> qr_tangents(const Tensor& A_t, const Tensor& Q, const Tensor& R, const std::string& mode);

std::vector<Tensor> householder_product_grads(const Tensor& grad, const Tensor& A, const Tensor& tau);

// dQ = sum_i H_1 ... H_{i-1} dH_i H_{i+1} ... H_k E, dH_i = -(dtau v v^H + tau (dv v^H + v dv^H)).
Tensor householder_product_tangent(const Tensor& A, const Tensor& A_t, const Tensor& tau,
                                   const Tensor& tau_t);

// lu_factor's packed gradient / tangent: L's strictly lower part and U's upper part of one matrix.
Tensor lu_factor_backward(const Tensor& gLU, const Tensor& LU, const Tensor& pivots);

Tensor lu_factor_tangent(const Tensor& A_t, const Tensor& LU, const Tensor& pivots);

Tensor lu_backward(const std::vector<Tensor>& grads, const Tensor& P, const Tensor& L, const Tensor& U);

std::vector<Tensor> lu_tangents(const Tensor& A_t, const Tensor& P, const Tensor& L, const Tensor& U);

// lu_solve: gB = lu_solve(gX, adjoint flipped); gA (of A = P L U) by the solve rule, then gLU
// = tril(P^T gA U^H, -1) + triu(L^H P^T gA).
Tensor lu_solve_grad_LU(const Tensor& grad, const Tensor& LU, const Tensor& pivots, const Tensor& X,
                        bool left, bool adjoint);

Tensor lu_solve_tangent(const Tensor& LU, const Tensor& LU_t, const Tensor& pivots, const Tensor& B_t,
                        const Tensor& X, bool left, bool adjoint);

// General A V = V diag(L), unit-norm columns: gA = V^-H (diag(gL) + (V^H gV - V^H V Re diag(V^H gV))
// / conj(E)) V^H (PyTorch's linalg_eig_backward).
Tensor eig_backward(const std::vector<Tensor>& grads, const Tensor& L, const Tensor& V);

// dP = V^-1 dA V: dL = diag dP, dV = V (dP / E off the diagonal), less V Re diag(V^H dV) (unit norms).
std::vector<Tensor> eig_tangents(const Tensor& A_t, const Tensor& L, const Tensor& V);

Tensor eigvals_backward(const Tensor& grad, const Tensor& A);

Tensor eigvals_tangent(const Tensor& A, const Tensor& A_t);

}  // namespace ember::autograd
