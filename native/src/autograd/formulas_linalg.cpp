// The bodies of formulas_linalg.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas_linalg.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ember::autograd {

Tensor mH(const Tensor& t) {
  return autograd::conj(autograd::transpose(t, -2, -1));
}

Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self) {
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
  if (a.dim() == 2 && b.dim() == 2 && b.stride(0) == 1 && b.stride(1) != 1) {
    // `other` is column-major (a transposed weight, as Linear passes): build its gradient in the
    // same layout, (g^H a)^H, so the transpose's backward hands on a contiguous gradient
    return mH(autograd::matmul(mH(g), a));
  }
  const Tensor r = autograd::matmul(mH(a), g);
  return other_vec ? autograd::squeeze(r, IntList{-1}) : r;
}

Tensor matmul_tangent(const Tensor& self, const Tensor& self_t, const Tensor& other, const Tensor& other_t) {
  return product_tangent(self, self_t, other, other_t,
                         [](const Tensor& a, const Tensor& b) { return autograd::matmul(a, b); });
}

Tensor addbmm_grad_per_batch(const Tensor& grad, const Tensor& batch1) {
  return autograd::expand(autograd::unsqueeze(grad, 0), IntList{batch1.size(0), grad.size(0), grad.size(1)});
}

// ---- solvers and determinants ------------------------------------------------------------------

static Tensor mat_eye(const Tensor& like) {
  return ember::eye(like.size(-1), std::nullopt, like.dtype(), like.device());
}

// The trace over the last two dims.
static Tensor trace_last(const Tensor& t) {
  return autograd::sum(autograd::diagonal(t, 0, -2, -1), IntList{-1}, false, std::nullopt);
}

static Tensor as_matrix_value(const Tensor& t) {
  return autograd::unsqueeze(autograd::unsqueeze(t, -1), -1);
}

// linalg.solve's B is a (batch of) vector(s) when 1-D or one dim short of A with A's batch dims.
static bool solve_vector(const Tensor& A, const Tensor& B) {
  return B.dim() == 1 || (B.dim() == A.dim() - 1 && IntList(B.sizes().begin(), B.sizes().end() - 1) ==
                                                        IntList(A.sizes().begin(), A.sizes().end() - 2));
}

Tensor solve_backward_A(const Tensor& grad, const Tensor& A, const Tensor& B, const Tensor& X, bool left) {
  const bool vec = solve_vector(A, B);
  const Tensor gB = autograd::linalg_solve(mH(A), grad, left);
  const Tensor g = vec ? autograd::unsqueeze(gB, left ? -1 : -2) : gB;
  const Tensor x = vec ? autograd::unsqueeze(X, left ? -1 : -2) : X;
  return autograd::neg(left ? autograd::matmul(g, mH(x)) : autograd::matmul(mH(x), g), std::nullopt);
}

Tensor solve_tangent(const Tensor& A, const Tensor& A_t, const Tensor& B, const Tensor& B_t, const Tensor& X,
                     bool left) {
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

Tensor det_backward(const Tensor& grad, const Tensor& A, const Tensor& det) {
  return autograd::mul(as_matrix_value(autograd::mul(grad, autograd::conj(det), std::nullopt)),
                       mH(autograd::linalg_inv(A)), std::nullopt);
}

Tensor det_tangent(const Tensor& A, const Tensor& A_t, const Tensor& det) {
  return autograd::mul(det, trace_last(autograd::linalg_solve(A, A_t, true)), std::nullopt);
}

Tensor slogdet_backward(const std::vector<Tensor>& grads, const Tensor& A, const Tensor& sign) {
  Tensor h = grads.at(1);
  if (is_complex(A.dtype())) {  // h = g_logabs + i Im(g_sign conj(sign))
    const Tensor turn = autograd::imag(autograd::mul(grads.at(0), autograd::conj(sign), std::nullopt));
    h = autograd::complex(h, turn);
  }
  return autograd::mul(as_matrix_value(h), mH(autograd::linalg_inv(A)), std::nullopt);
}

Tensor slogdet_sign_tangent(const Tensor& A, const Tensor& A_t, const Tensor& sign) {
  if (!is_complex(A.dtype())) return zeros_of(sign);
  const Tensor c = autograd::imag(trace_last(autograd::linalg_solve(A, A_t, true)));
  return autograd::mul(sign, autograd::complex(zeros_of(c), c), std::nullopt);
}

Tensor slogdet_logabsdet_tangent(const Tensor& A, const Tensor& A_t) {
  const Tensor c = trace_last(autograd::linalg_solve(A, A_t, true));
  return is_complex(c.dtype()) ? autograd::real(c) : c;
}

Tensor phi(const Tensor& x) {
  const Tensor half_diagonal =
      autograd::mul(autograd::mul(x, mat_eye(x), std::nullopt), num(0.5), std::nullopt);
  return autograd::add(autograd::tril(x, -1), half_diagonal, Scalar(int64_t(1)), std::nullopt);
}

Tensor cholesky_backward(const Tensor& grad, const Tensor& factor, bool upper) {
  const Tensor L = upper ? mH(factor) : factor;
  const Tensor gL = upper ? mH(grad) : grad;
  const Tensor P = phi(autograd::matmul(mH(L), gL));
  const Tensor Y = autograd::linalg_solve_triangular(mH(L), P, true, true, false);
  const Tensor S = autograd::linalg_solve_triangular(L, Y, false, false, false);
  return autograd::mul(autograd::add(S, mH(S), Scalar(int64_t(1)), std::nullopt), num(0.5), std::nullopt);
}

Tensor cholesky_tangent(const Tensor& A_t, const Tensor& factor, bool upper) {
  const Tensor L = upper ? mH(factor) : factor;
  const Tensor M = autograd::linalg_solve_triangular(L, A_t, false, true, false);    // L^-1 dA
  const Tensor N = autograd::linalg_solve_triangular(mH(L), M, true, false, false);  // L^-1 dA L^-H
  const Tensor L_t = autograd::matmul(L, phi(N));
  return upper ? mH(L_t) : L_t;
}

// The part of a square matrix a triangular solve reads.
static Tensor triangle(const Tensor& t, bool upper, bool unit) {
  return upper ? autograd::triu(t, unit ? 1 : 0) : autograd::tril(t, unit ? -1 : 0);
}

Tensor solve_triangular_grad_B(const Tensor& grad, const Tensor& A, bool upper, bool left, bool unit) {
  return autograd::linalg_solve_triangular(mH(A), grad, !upper, left, unit);
}

Tensor solve_triangular_grad_A(const Tensor& grad, const Tensor& A, const Tensor& X, bool upper, bool left,
                               bool unit) {
  const Tensor gB = solve_triangular_grad_B(grad, A, upper, left, unit);
  const Tensor g = left ? autograd::matmul(gB, mH(X)) : autograd::matmul(mH(X), gB);
  return triangle(autograd::neg(g, std::nullopt), upper, unit);
}

Tensor solve_triangular_tangent(const Tensor& A, const Tensor& A_t, const Tensor& B_t, const Tensor& X,
                                bool upper, bool left, bool unit) {
  Tensor rhs = B_t.defined() ? B_t : zeros_of(X);
  if (A_t.defined()) {
    const Tensor a = triangle(A_t, upper, unit);
    rhs = autograd::sub(rhs, left ? autograd::matmul(a, X) : autograd::matmul(X, a), Scalar(int64_t(1)),
                        std::nullopt);
  }
  return autograd::linalg_solve_triangular(A, rhs, upper, left, unit);
}

// ---- decompositions ----------------------------------------------------------------------------
// Formulas of PyTorch's FunctionsManual (svd_backward, linalg_eig_backward, linalg_qr_backward,
// linalg_lu_backward and their JVPs), rederived in the conjugate Wirtinger convention.

Tensor over(const Tensor& a, const Tensor& b) {
  return autograd::div(a, b, std::nullopt, std::nullopt);
}
static Tensor mm_(const Tensor& a, const Tensor& b) {
  return autograd::matmul(a, b);
}
static Tensor diag_of(const Tensor& t) {
  return autograd::diagonal(t, 0, -2, -1);
}
static Tensor eye_n(int64_t n, const Tensor& like) {
  return ember::eye(n, std::nullopt, like.dtype(), like.device());
}
static Tensor off_diagonal(const Tensor& t) {
  return minus(t, autograd::diag_embed(diag_of(t)));
}
static Tensor as_dtype_of(const Tensor& t, const Tensor& like) {
  return t.dtype() == like.dtype() ? t : autograd::to_dtype(t, like.dtype(), false);
}
// E_jk = x_k - x_j off the diagonal, 1 on it (the divided differences' denominators).
static Tensor gaps(const Tensor& x) {
  return plus(minus(autograd::unsqueeze(x, -2), autograd::unsqueeze(x, -1)), eye_n(x.size(-1), x));
}
static double max_abs(const Tensor& t) {
  const Tensor a = ember::to_dtype(ember::abs(t), DType::Float64, false).contiguous();
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, a.data<double>()[i]);
  return m;
}
// i * Im(diag(x)) / (2 d) on the diagonal: the phase part of a complex gauge.
static Tensor phase_diagonal(const Tensor& x_diag, const Tensor& d) {
  const Tensor im = autograd::imag(x_diag);
  return autograd::diag_embed(autograd::complex(zeros_of(im), over(im, times(d, num(2.0)))));
}

Tensor svd_backward(const std::vector<Tensor>& grads, const Tensor& U_full, const Tensor& S,
                    const Tensor& Vh_full, bool full) {
  const int64_t m = U_full.size(-2), n = Vh_full.size(-1), k = S.size(-1);
  const Tensor U = full ? autograd::narrow(U_full, -1, 0, k) : U_full;
  const Tensor Vh = full ? autograd::narrow(Vh_full, -2, 0, k) : Vh_full;
  if (k == 0) return mm_(U, Vh);  // zeros of A's shape
  const Tensor gU = full ? autograd::narrow(grads.at(0), -1, 0, k) : grads.at(0);
  const Tensor gVh = full ? autograd::narrow(grads.at(2), -2, 0, k) : grads.at(2);
  const Tensor gS = grads.at(1);
  const Tensor V = mH(Vh), gV = mH(gVh);
  const bool cplx = is_complex(U.dtype());
  const Tensor UhgU = mm_(mH(U), gU), VhgV = mm_(Vh, gV);
  const Tensor skewU = minus(UhgU, mH(UhgU)), skewV = minus(VhgV, mH(VhgV));
  if (cplx) {
    EMBER_CHECK(
        max_abs(plus(autograd::imag(diag_of(UhgU)), autograd::imag(diag_of(VhgV)))) <= 1e-2, Error,
        "[linalg.svd] svd_backward: The singular vectors in the complex case are specified up to "
        "multiplication by e^{i phi}. The specified loss function depends on this phase term, making it "
        "ill-defined.");
  }
  const Tensor E = gaps(times(S, S));
  Tensor gP =
      over(plus(times(skewU, autograd::unsqueeze(S, -2)), times(autograd::unsqueeze(S, -1), skewV)), E);
  gP = plus(off_diagonal(gP), autograd::diag_embed(as_dtype_of(gS, gP)));
  if (cplx) gP = plus(gP, phase_diagonal(minus(diag_of(UhgU), diag_of(VhgV)), S));
  Tensor gA = mm_(mm_(U, gP), Vh);
  if (m > k) gA = plus(gA, mm_(over(minus(gU, mm_(U, UhgU)), autograd::unsqueeze(S, -2)), Vh));
  if (n > k) gA = plus(gA, mm_(U, over(minus(mH(gV), mm_(mH(VhgV), Vh)), autograd::unsqueeze(S, -1))));
  return gA;
}

std::vector<Tensor> svd_tangents(const Tensor& A, const Tensor& A_t, const Tensor& U_full, const Tensor& S,
                                 const Tensor& Vh_full, bool full) {
  const int64_t m = A.size(-2), n = A.size(-1), k = S.size(-1);
  const Tensor U = full ? autograd::narrow(U_full, -1, 0, k) : U_full;
  const Tensor Vh = full ? autograd::narrow(Vh_full, -2, 0, k) : Vh_full;
  const Tensor V = mH(Vh);
  const Tensor dP = mm_(mm_(mH(U), A_t), V);
  const Tensor dS = real_part(diag_of(dP));
  if (k == 0) return {zeros_of(U_full), dS, zeros_of(Vh_full)};
  const bool cplx = is_complex(A.dtype());
  const Tensor E = gaps(times(S, S));
  const Tensor Sr = autograd::unsqueeze(S, -2), Sc = autograd::unsqueeze(S, -1);
  Tensor omegaU = off_diagonal(over(plus(times(dP, Sr), times(Sc, mH(dP))), E));
  Tensor omegaV = off_diagonal(over(plus(times(Sc, dP), times(mH(dP), Sr)), E));
  if (cplx) {
    omegaU = plus(omegaU, phase_diagonal(diag_of(dP), S));
    omegaV = minus(omegaV, phase_diagonal(diag_of(dP), S));
  }
  Tensor dU = mm_(U, omegaU), dV = mm_(V, omegaV);
  if (m > k) dU = plus(dU, over(minus(mm_(A_t, V), mm_(U, dP)), Sr));
  if (n > k) dV = plus(dV, over(minus(mm_(mH(A_t), U), mm_(V, mH(dP))), Sr));
  Tensor dVh = mH(dV);
  if (full && m > k) dU = autograd::cat({dU, zeros_of(autograd::narrow(U_full, -1, k, m - k))}, -1);
  if (full && n > k) dVh = autograd::cat({dVh, zeros_of(autograd::narrow(Vh_full, -2, k, n - k))}, -2);
  return {dU, dS, dVh};
}

Tensor svdvals_backward(const Tensor& grad, const Tensor& A) {
  const auto [U, S, Vh] = autograd::linalg_svd(A, false);
  return mm_(times(U, autograd::unsqueeze(as_dtype_of(grad, U), -2)), Vh);
}

Tensor svdvals_tangent(const Tensor& A, const Tensor& A_t) {
  const auto [U, S, Vh] = autograd::linalg_svd(A, false);
  return real_part(diag_of(mm_(mm_(mH(U), A_t), mH(Vh))));
}

Tensor eigh_backward(const std::vector<Tensor>& grads, const Tensor& L, const Tensor& V) {
  const Tensor VhgV = mm_(mH(V), grads.at(1));
  if (is_complex(V.dtype())) {
    EMBER_CHECK(
        max_abs(autograd::imag(diag_of(VhgV))) <= 1e-2, Error,
        "[linalg.eigh] linalg_eigh_backward: The eigenvectors in the complex case are specified up to "
        "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it is "
        "ill-defined.");
  }
  const Tensor skew = times(minus(VhgV, mH(VhgV)), num(0.5));
  const Tensor inner =
      plus(off_diagonal(over(skew, gaps(L))), autograd::diag_embed(as_dtype_of(grads.at(0), V)));
  return mm_(mm_(V, inner), mH(V));
}

std::vector<Tensor> eigh_tangents(const Tensor& A_t, const Tensor& L, const Tensor& V) {
  const Tensor dP = mm_(mm_(mH(V), A_t), V);
  return {real_part(diag_of(dP)), mm_(V, off_diagonal(over(dP, gaps(L))))};
}

Tensor eigvalsh_backward(const Tensor& grad, const Tensor& A, const std::string& uplo) {
  const Tensor V = std::get<1>(autograd::linalg_eigh(A, uplo));
  return mm_(times(V, autograd::unsqueeze(as_dtype_of(grad, V), -2)), mH(V));
}

Tensor eigvalsh_tangent(const Tensor& A, const Tensor& A_t, const std::string& uplo) {
  const Tensor V = std::get<1>(autograd::linalg_eigh(A, uplo));
  return real_part(diag_of(mm_(mm_(mH(V), A_t), V)));
}

static void check_qr_differentiable(const Tensor& Q, const Tensor& R, const std::string& mode) {
  EMBER_CHECK(
      mode != "r", Error,
      "[linalg.qr] The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
      "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  EMBER_CHECK(
      !(mode == "complete" && Q.size(-2) > R.size(-1)), Error,
      "[linalg.qr] The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
}

// A = Q R with R square (m >= n): with M = gR R^H - Q^H gQ and P = triu(M, 1) + Re(diag M) / 2,
// gA = (gQ + Q (P + P^H)) R^-H.
static Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  const Tensor M = minus(mm_(gR, mH(R)), mm_(mH(Q), gQ));
  const Tensor P = plus(autograd::triu(M, 1),
                        times(autograd::diag_embed(as_dtype_of(real_part(diag_of(M)), M)), num(0.5)));
  const Tensor Y = plus(gQ, mm_(Q, plus(P, mH(P))));
  return autograd::linalg_solve_triangular(mH(R), Y, false, false, false);
}

// C = Q^H dA R^-1, S = C + C^H, W = triu(S, 1) + diag(S) / 2: dR = W R, dQ = dA R^-1 - Q W.
static std::vector<Tensor> qr_tangents_tall(const Tensor& A_t, const Tensor& Q, const Tensor& R) {
  const Tensor dARinv = autograd::linalg_solve_triangular(R, A_t, true, false, false);
  const Tensor C = mm_(mH(Q), dARinv);
  const Tensor S = plus(C, mH(C));
  const Tensor W = plus(autograd::triu(S, 1), times(autograd::diag_embed(diag_of(S)), num(0.5)));
  return {minus(dARinv, mm_(Q, W)), mm_(W, R)};
}

Tensor qr_backward(const std::vector<Tensor>& grads, const Tensor& Q, const Tensor& R,
                   const std::string& mode) {
  check_qr_differentiable(Q, R, mode);
  const int64_t m = Q.size(-2), n = R.size(-1);
  if (m >= n) return qr_backward_tall(grads.at(0), grads.at(1), Q, R);
  const Tensor U = autograd::narrow(R, -1, 0, m), V = autograd::narrow(R, -1, m, n - m);
  const Tensor gU = autograd::narrow(grads.at(1), -1, 0, m), gV = autograd::narrow(grads.at(1), -1, m, n - m);
  const Tensor Y = mm_(Q, V);
  const Tensor gX = qr_backward_tall(plus(grads.at(0), mm_(Y, mH(gV))), gU, Q, U);
  return autograd::cat({gX, mm_(Q, gV)}, -1);
}

std::vector<Tensor> qr_tangents(const Tensor& A_t, const Tensor& Q, const Tensor& R,
                                const std::string& mode) {
  check_qr_differentiable(Q, R, mode);
  const int64_t m = Q.size(-2), n = R.size(-1);
  if (m >= n) return qr_tangents_tall(A_t, Q, R);
  const Tensor U = autograd::narrow(R, -1, 0, m), V = autograd::narrow(R, -1, m, n - m);
  const std::vector<Tensor> square = qr_tangents_tall(autograd::narrow(A_t, -1, 0, m), Q, U);
  const Tensor dV = plus(mm_(mH(square[0]), mm_(Q, V)), mm_(mH(Q), autograd::narrow(A_t, -1, m, n - m)));
  return {square[0], autograd::cat({square[1], dV}, -1)};
}

// householder_product: Q = H_1 ... H_k E (E the first n columns of I_m), H_i = I - tau_i v_i v_i^H,
// v_i = (0, ..., 0, 1, A[i+1:, i]). Per reflector, with G the gradient of H_i's product with
// what follows (S): gH = G S^H, g tau_i = -v^H gH v, g v = -(conj(tau_i) gH + tau_i gH^H) v.
static Tensor rows_below(int64_t m, int64_t i, const Tensor& like) {  // [m, 1]: 1 on rows > i
  const Tensor mask = ember::zeros({m, 1}, DType::Float64, like.device());
  for (int64_t r = i + 1; r < m; ++r) mask.data<double>()[r] = 1.0;
  return ember::to_dtype(mask, like.dtype(), false);
}

namespace {
struct Reflector {
  Tensor v, tau, H;  // [*, m, 1], [*, 1, 1], [*, m, m]
};
}  // namespace

static Reflector reflector(const Tensor& A, const Tensor& tau, int64_t i) {
  const int64_t m = A.size(-2);
  const Tensor unit = ember::narrow(ember::eye(m, std::nullopt, A.dtype(), A.device()), 1, i, 1);
  const Tensor v = plus(times(autograd::narrow(A, -1, i, 1), rows_below(m, i, A)), unit);
  const Tensor t = autograd::unsqueeze(autograd::narrow(tau, -1, i, 1), -1);
  return {v, t, minus(eye_n(m, A), times(t, mm_(v, mH(v))))};
}

std::vector<Tensor> householder_product_grads(const Tensor& grad, const Tensor& A, const Tensor& tau) {
  const int64_t m = A.size(-2), n = A.size(-1), k = tau.size(-1);
  std::vector<Reflector> hs;
  for (int64_t i = 0; i < k; ++i) hs.push_back(reflector(A, tau, i));
  std::vector<Tensor> suffix(static_cast<size_t>(k + 1));  // suffix[i] = H_i ... H_k E
  suffix[k] = ember::eye(m, n, A.dtype(), A.device());
  for (int64_t i = k - 1; i >= 0; --i) suffix[i] = mm_(hs[i].H, suffix[i + 1]);
  std::vector<Tensor> gcols, gtaus;
  Tensor G = grad;
  for (int64_t i = 0; i < k; ++i) {
    const Reflector& h = hs[i];
    const Tensor gH = mm_(G, mH(suffix[i + 1]));
    gtaus.push_back(autograd::neg(mm_(mm_(mH(h.v), gH), h.v), std::nullopt));
    const Tensor gv = autograd::neg(
        plus(times(autograd::conj(h.tau), mm_(gH, h.v)), times(h.tau, mm_(mH(gH), h.v))), std::nullopt);
    gcols.push_back(times(gv, rows_below(m, i, A)));
    G = mm_(mH(h.H), G);
  }
  if (n > k) gcols.push_back(zeros_of(autograd::narrow(A, -1, k, n - k)));
  const Tensor gA = gcols.empty() ? zeros_of(A) : autograd::cat(gcols, -1);
  const Tensor gtau =
      gtaus.empty() ? zeros_of(tau) : autograd::squeeze(autograd::cat(gtaus, -1), IntList{-2});
  return {gA, gtau};
}

Tensor householder_product_tangent(const Tensor& A, const Tensor& A_t, const Tensor& tau,
                                   const Tensor& tau_t) {
  const int64_t m = A.size(-2), n = A.size(-1), k = tau.size(-1);
  std::vector<Reflector> hs;
  for (int64_t i = 0; i < k; ++i) hs.push_back(reflector(A, tau, i));
  std::vector<Tensor> suffix(static_cast<size_t>(k + 1));
  suffix[k] = ember::eye(m, n, A.dtype(), A.device());
  for (int64_t i = k - 1; i >= 0; --i) suffix[i] = mm_(hs[i].H, suffix[i + 1]);
  Tensor prefix = eye_n(m, A), dQ = zeros_of(A);
  for (int64_t i = 0; i < k; ++i) {
    const Reflector& h = hs[i];
    const Tensor dv = times(autograd::narrow(A_t, -1, i, 1), rows_below(m, i, A));
    const Tensor dtau = autograd::unsqueeze(autograd::narrow(tau_t, -1, i, 1), -1);
    const Tensor dH = autograd::neg(
        plus(times(dtau, mm_(h.v, mH(h.v))), times(h.tau, plus(mm_(dv, mH(h.v)), mm_(h.v, mH(dv))))),
        std::nullopt);
    dQ = plus(dQ, mm_(mm_(prefix, dH), suffix[i + 1]));
    prefix = mm_(prefix, h.H);
  }
  return dQ;
}

// The permutation matrices P of A = P L U from LAPACK's 1-based row swaps (int32 [*, k]).
static Tensor permutation_of(const Tensor& pivots, int64_t m, const Tensor& like) {
  const Tensor piv = ember::reshape(pivots.contiguous(), {-1, std::max<int64_t>(pivots.size(-1), 1)});
  const int64_t count = pivots.numel() == 0 ? 0 : piv.size(0), k = pivots.size(-1);
  const Tensor P = ember::zeros({count, m, m}, DType::Float64, like.device());
  std::vector<int64_t> perm(static_cast<size_t>(m));
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t i = 0; i < m; ++i) perm[i] = i;
    for (int64_t i = 0; i < k; ++i) std::swap(perm[i], perm[piv.data<int32_t>()[s * k + i] - 1]);
    for (int64_t i = 0; i < m; ++i) P.data<double>()[(s * m + perm[i]) * m + i] = 1.0;
  }
  IntList shape(pivots.sizes().begin(), pivots.sizes().end() - 1);
  shape.insert(shape.end(), {m, m});
  return ember::reshape(ember::to_dtype(P, like.dtype(), false), shape);
}

// The factors packed in LU [*, m, n]: L unit lower [*, m, k] and U upper [*, k, n], k = min(m, n).
static Tensor unit_lower(const Tensor& LU) {
  const int64_t m = LU.size(-2), k = std::min(m, LU.size(-1));
  return plus(autograd::tril(autograd::narrow(LU, -1, 0, k), -1), ember::eye(m, k, LU.dtype(), LU.device()));
}
static Tensor upper_of(const Tensor& LU) {
  return autograd::triu(autograd::narrow(LU, -2, 0, std::min(LU.size(-2), LU.size(-1))), 0);
}
static Tensor solve_unit_lower_adjoint(const Tensor& L, const Tensor& B) {  // L^-H B
  return autograd::linalg_solve_triangular(mH(L), B, true, true, true);
}

// Square A = P L U: gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H.
static Tensor lu_grad_square(const Tensor& P, const Tensor& L, const Tensor& U, const Tensor& gL,
                             const Tensor& gU) {
  const Tensor X = plus(autograd::tril(mm_(mH(L), gL), -1), autograd::triu(mm_(gU, mH(U)), 0));
  const Tensor Y = solve_unit_lower_adjoint(L, X);
  const Tensor G = autograd::linalg_solve_triangular(mH(U), Y, false, false, false);
  return P.defined() ? mm_(P, G) : G;
}

// Rectangular A reduces to its square part. Wide (m < n): U = [U1 | U2] with U2 = L^-1 P^T A2,
// so A2 gets P L^-H gU2 and L also gets -L^-H gU2 U2^H. Tall (m > n): P^T A = [B1; B2] with
// L2 = B2 U^-1, so B2 gets gL2 U^-H and U also gets -L2^H gL2 U^-H.
static Tensor lu_grad_from(const Tensor& P, const Tensor& L, const Tensor& U, const Tensor& gL,
                           const Tensor& gU) {
  const int64_t m = L.size(-2), n = U.size(-1);
  if (m == n) return lu_grad_square(P, L, U, gL, gU);
  if (m < n) {
    const Tensor U1 = autograd::narrow(U, -1, 0, m), U2 = autograd::narrow(U, -1, m, n - m);
    const Tensor gU2 = autograd::narrow(gU, -1, m, n - m);
    const Tensor LinvHgU2 = solve_unit_lower_adjoint(L, gU2);
    const Tensor gL1 = minus(gL, mm_(LinvHgU2, mH(U2)));
    return autograd::cat({lu_grad_square(P, L, U1, gL1, autograd::narrow(gU, -1, 0, m)), mm_(P, LinvHgU2)},
                         -1);
  }
  const Tensor L1 = autograd::narrow(L, -2, 0, n), L2 = autograd::narrow(L, -2, n, m - n);
  const Tensor gB2 =
      autograd::linalg_solve_triangular(mH(U), autograd::narrow(gL, -2, n, m - n), false, false, false);
  const Tensor gU1 = minus(gU, mm_(mH(L2), gB2));
  const Tensor gB1 = lu_grad_square(Tensor(), L1, U, autograd::narrow(gL, -2, 0, n), gU1);
  return mm_(P, autograd::cat({gB1, gB2}, -2));
}

// Square: F = L^-1 P^T dA U^-1, dL = L tril(F, -1), dU = triu(F) U; rectangular as above.
static std::pair<Tensor, Tensor> lu_tangent_parts(const Tensor& A_t, const Tensor& P, const Tensor& L,
                                                  const Tensor& U) {
  const int64_t m = L.size(-2), n = U.size(-1);
  const Tensor B_t = mm_(mH(P), A_t);
  const auto square = [](const Tensor& dB, const Tensor& L1, const Tensor& U1) {
    const Tensor Y = autograd::linalg_solve_triangular(L1, dB, false, true, true);
    const Tensor F = autograd::linalg_solve_triangular(U1, Y, true, false, false);
    return std::make_pair(mm_(L1, autograd::tril(F, -1)), mm_(autograd::triu(F, 0), U1));
  };
  if (m == n) return square(B_t, L, U);
  if (m < n) {
    const Tensor U2 = autograd::narrow(U, -1, m, n - m);
    const auto [dL, dU1] = square(autograd::narrow(B_t, -1, 0, m), L, autograd::narrow(U, -1, 0, m));
    const Tensor dU2 = autograd::linalg_solve_triangular(
        L, minus(autograd::narrow(B_t, -1, m, n - m), mm_(dL, U2)), false, true, true);
    return {dL, autograd::cat({dU1, dU2}, -1)};
  }
  const Tensor L1 = autograd::narrow(L, -2, 0, n), L2 = autograd::narrow(L, -2, n, m - n);
  const auto [dL1, dU] = square(autograd::narrow(B_t, -2, 0, n), L1, U);
  const Tensor dL2 = autograd::linalg_solve_triangular(
      U, minus(autograd::narrow(B_t, -2, n, m - n), mm_(L2, dU)), true, false, false);
  return {autograd::cat({dL1, dL2}, -2), dU};
}

Tensor lu_factor_backward(const Tensor& gLU, const Tensor& LU, const Tensor& pivots) {
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  return lu_grad_from(permutation_of(pivots, m, LU), unit_lower(LU), upper_of(LU),
                      autograd::tril(autograd::narrow(gLU, -1, 0, k), -1),
                      autograd::triu(autograd::narrow(gLU, -2, 0, k), 0));
}

Tensor lu_factor_tangent(const Tensor& A_t, const Tensor& LU, const Tensor& pivots) {
  const int64_t m = LU.size(-2), n = LU.size(-1);
  const auto [dL, dU] = lu_tangent_parts(A_t, permutation_of(pivots, m, LU), unit_lower(LU), upper_of(LU));
  // dL is strictly lower [*, m, k], dU upper [*, k, n]: pad both to m x n and add
  const Tensor dLfull = m < n ? autograd::cat({dL, zeros_of(autograd::narrow(LU, -1, m, n - m))}, -1) : dL;
  const Tensor dUfull = m > n ? autograd::cat({dU, zeros_of(autograd::narrow(LU, -2, n, m - n))}, -2) : dU;
  return plus(autograd::tril(dLfull, -1), autograd::triu(dUfull, 0));
}

Tensor lu_backward(const std::vector<Tensor>& grads, const Tensor& P, const Tensor& L, const Tensor& U) {
  return lu_grad_from(P, L, U, grads.at(1), grads.at(2));
}

std::vector<Tensor> lu_tangents(const Tensor& A_t, const Tensor& P, const Tensor& L, const Tensor& U) {
  const auto [dL, dU] = lu_tangent_parts(A_t, P, L, U);
  return {Tensor(), dL, dU};
}

Tensor lu_solve_grad_LU(const Tensor& grad, const Tensor& LU, const Tensor& pivots, const Tensor& X,
                        bool left, bool adjoint) {
  const Tensor gB = autograd::linalg_lu_solve(LU, pivots, grad, left, !adjoint);
  const Tensor gA = autograd::neg(
      left ? (adjoint ? mm_(X, mH(gB)) : mm_(gB, mH(X))) : (adjoint ? mm_(mH(gB), X) : mm_(mH(X), gB)),
      std::nullopt);
  const Tensor PtgA = mm_(mH(permutation_of(pivots, LU.size(-2), LU)), gA);
  return plus(autograd::tril(mm_(PtgA, mH(upper_of(LU))), -1),
              autograd::triu(mm_(mH(unit_lower(LU)), PtgA), 0));
}

Tensor lu_solve_tangent(const Tensor& LU, const Tensor& LU_t, const Tensor& pivots, const Tensor& B_t,
                        const Tensor& X, bool left, bool adjoint) {
  const Tensor P = permutation_of(pivots, LU.size(-2), LU);
  const Tensor dA =
      mm_(P, plus(mm_(autograd::tril(LU_t, -1), upper_of(LU)), mm_(unit_lower(LU), autograd::triu(LU_t, 0))));
  const Tensor dAop = adjoint ? mH(dA) : dA;
  const Tensor rhs = minus(B_t, left ? mm_(dAop, X) : mm_(X, dAop));
  return autograd::linalg_lu_solve(LU, pivots, rhs, left, adjoint);
}

Tensor eig_backward(const std::vector<Tensor>& grads, const Tensor& L, const Tensor& V) {
  const Tensor gL = grads.at(0), gV = grads.at(1);
  const Tensor VhgV = mm_(mH(V), gV);
  EMBER_CHECK(max_abs(autograd::imag(diag_of(VhgV))) <= 1e-2, Error,
              "[linalg.eig] linalg_eig_backward: The eigenvectors in the complex case are specified up to "
              "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it is "
              "ill-defined.");
  const Tensor projected =
      minus(VhgV, mm_(mH(V), times(V, autograd::unsqueeze(as_dtype_of(real_part(diag_of(VhgV)), V), -2))));
  const Tensor inner =
      plus(off_diagonal(over(projected, gaps(autograd::conj(L)))), autograd::diag_embed(as_dtype_of(gL, V)));
  return autograd::linalg_solve(mH(V), mm_(inner, mH(V)), true);
}

std::vector<Tensor> eig_tangents(const Tensor& A_t, const Tensor& L, const Tensor& V) {
  const Tensor dP = autograd::linalg_solve(V, mm_(as_dtype_of(A_t, V), V), true);
  Tensor dV = mm_(V, off_diagonal(over(dP, gaps(L))));
  dV = minus(dV, times(V, autograd::unsqueeze(as_dtype_of(real_part(diag_of(mm_(mH(V), dV))), V), -2)));
  return {diag_of(dP), dV};
}

Tensor eigvals_backward(const Tensor& grad, const Tensor& A) {
  const Tensor V = std::get<1>(autograd::linalg_eig(A));
  return autograd::linalg_solve(mH(V), times(autograd::unsqueeze(as_dtype_of(grad, V), -1), mH(V)), true);
}

Tensor eigvals_tangent(const Tensor& A, const Tensor& A_t) {
  const Tensor V = std::get<1>(autograd::linalg_eig(A));
  return diag_of(autograd::linalg_solve(V, mm_(as_dtype_of(A_t, V), V), true));
}

}  // namespace ember::autograd
