// ember.linalg decompositions: svd, svdvals, eigh, eigvalsh, qr, householder_product,
// lu_factor(_ex), lu, lu_solve, ldl_factor(_ex), ldl_solve, eig and eigvals, on the kernels of
// backend/cpu/decomposition_kernels.cpp and the LU / triangular-solve kernels of linalg.cpp.
// Inputs are batches of matrices ([*, m, n]); outputs keep the batch dims.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/kernels.h"
#include "ops/linalg/matrix_args.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<SvdFn> svd_stub("svd");
DispatchStub<EighFn> eigh_stub("eigh");
DispatchStub<GeqrfFn> geqrf_stub("geqrf");
DispatchStub<OrgqrFn> orgqr_stub("orgqr");
DispatchStub<EigFn> eig_stub("eig");
DispatchStub<LdlFactorFn> ldl_factor_stub("ldl_factor");
DispatchStub<LdlSolveFn> ldl_solve_stub("ldl_solve");

namespace {

using linalg_args::as_batch;
using linalg_args::batch_of;

void check_matrix(const char* op, const Tensor& a, const char* name = "A") {
  linalg_args::check_matrices(op, a, name);
  linalg_args::check_dtype(op, a);
}

void check_square(const char* op, const Tensor& a, const char* name = "A") {
  check_matrix(op, a, name);
  linalg_args::check_square_matrices(op, a, name);
}

IntList with(IntList batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

// The first batch element whose info is not 0 (its position and value), or (-1, 0).
std::pair<int64_t, int32_t> first_failure(const Tensor& info) {
  const Tensor c = info.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i)
    if (c.data<int32_t>()[i] != 0) return {i, c.data<int32_t>()[i]};
  return {-1, 0};
}

std::string batch_note(const Tensor& A, int64_t at) {
  return A.dim() > 2 ? "(Batch element " + std::to_string(at) + "): " : "";
}

void check_converged(const char* op, const Tensor& A, const Tensor& info, const char* repeated) {
  const auto [at, code] = first_failure(info);
  EMBER_CHECK(at < 0, LinAlgError, "[", op, "] ", batch_note(A, at),
              "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
              "repeated ",
              repeated, " (error code: ", code, ").");
}

// Applies the row swaps of int32 pivots [count, p] to b [count, n, k] (contiguous), in order
// (P^T b) or, with `inverse`, in reverse order (P b).
void swap_rows(const Tensor& b, const Tensor& pivots, bool inverse) {
  const int64_t count = b.size(0), n = b.size(1), k = b.size(2), p = pivots.size(1);
  const size_t row_bytes = static_cast<size_t>(k) * itemsize(b.dtype());
  char* base = static_cast<char*>(b.data_ptr());
  const int32_t* piv = pivots.data<int32_t>();
  std::vector<char> tmp(row_bytes);
  for (int64_t s = 0; s < count; ++s) {
    char* m = base + s * n * static_cast<int64_t>(row_bytes);
    for (int64_t step = 0; step < p; ++step) {
      const int64_t i = inverse ? p - 1 - step : step;
      const int64_t j = piv[s * p + i] - 1;
      if (j == i) continue;
      std::memcpy(tmp.data(), m + i * row_bytes, row_bytes);
      std::memcpy(m + i * row_bytes, m + j * row_bytes, row_bytes);
      std::memcpy(m + j * row_bytes, tmp.data(), row_bytes);
    }
  }
}

Tensor mH(const Tensor& t) {
  return conj(transpose(t, -2, -1));
}

}  // namespace

// ---- SVD ----------------------------------------------------------------------------------------

namespace {

std::tuple<Tensor, Tensor, Tensor> svd_impl(const char* op, const Tensor& A, bool full, bool uv) {
  check_matrix(op, A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const IntList batch = batch_of(A, 2);
  const Tensor a = as_batch(A);
  const int64_t count = a.size(0);
  Tensor s = empty({count, k}, to_real_dtype(A.dtype()), A.device());
  Tensor u, vh;
  if (uv) {
    u = empty({count, m, full ? m : k}, A.dtype(), A.device());
    vh = empty({count, full ? n : k, n}, A.dtype(), A.device());
  }
  const Tensor info = zeros({count}, DType::Int32, A.device());
  if (count > 0) svd_stub.get(A.device().type)(a, u, s, vh, info, uv);
  check_converged(op, A, info, "singular values");
  s = reshape(s, with(batch, {k}));
  if (!uv) return {Tensor(), s, Tensor()};
  return {reshape(u, with(batch, {m, u.size(2)})), s, reshape(vh, with(batch, {vh.size(1), n}))};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices) {
  return svd_impl("linalg.svd", A, full_matrices, true);
}

Tensor linalg_svdvals(const Tensor& A) {
  return std::get<1>(svd_impl("linalg.svdvals", A, false, false));
}

// ---- Hermitian eigen-decomposition -------------------------------------------------------------

namespace {

bool lower_of(const char* op, const std::string& uplo) {
  const char c =
      uplo.size() == 1 ? static_cast<char>(std::toupper(static_cast<unsigned char>(uplo[0]))) : '?';
  EMBER_CHECK(c == 'L' || c == 'U', Error, "[", op, "] Expected UPLO argument to be 'L' or 'U', but got ",
              uplo);
  return c == 'L';
}

std::tuple<Tensor, Tensor> eigh_impl(const char* op, const Tensor& A, const std::string& UPLO, bool vectors) {
  check_square(op, A);
  const bool lower = lower_of(op, UPLO);
  const int64_t n = A.size(-1);
  const IntList batch = batch_of(A, 2);
  const Tensor a = as_batch(A);
  const int64_t count = a.size(0);
  const Tensor w = empty({count, n}, to_real_dtype(A.dtype()), A.device());
  const Tensor v = vectors ? empty({count, n, n}, A.dtype(), A.device()) : Tensor();
  const Tensor info = zeros({count}, DType::Int32, A.device());
  if (count > 0) eigh_stub.get(A.device().type)(a, w, v, info, lower);
  check_converged(op, A, info, "eigenvalues");
  return {reshape(w, with(batch, {n})), vectors ? reshape(v, A.sizes()) : Tensor()};
}

}  // namespace

std::tuple<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& UPLO) {
  return eigh_impl("linalg.eigh", A, UPLO, true);
}

Tensor linalg_eigvalsh(const Tensor& A, const std::string& UPLO) {
  return std::get<0>(eigh_impl("linalg.eigvalsh", A, UPLO, false));
}

// ---- QR ------------------------------------------------------------------------------------------

namespace {

// Q's first `cols` columns from the reflectors of geqrf's output f [count, m, n] and tau.
Tensor form_q(const Tensor& f, const Tensor& tau, int64_t cols) {
  const int64_t count = f.size(0), m = f.size(1), k = tau.size(1);
  Tensor q = zeros({count, m, cols}, f.dtype(), f.device());
  copy_(narrow(q, 2, 0, k), narrow(f, 2, 0, k));
  if (q.numel() > 0) orgqr_stub.get(f.device().type)(q, tau);
  return q;
}

}  // namespace

std::tuple<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
  EMBER_CHECK(mode == "reduced" || mode == "complete" || mode == "r", Error,
              "[linalg.qr] qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  check_matrix("linalg.qr", A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const IntList batch = batch_of(A, 2);
  const Tensor f = as_batch(A);
  const int64_t count = f.size(0);
  const Tensor tau = empty({count, k}, A.dtype(), A.device());
  if (f.numel() > 0) geqrf_stub.get(A.device().type)(f, tau);
  const bool complete = mode == "complete";
  const int64_t rrows = complete ? m : k;
  const Tensor R = reshape(triu(narrow(f, 1, 0, rrows), 0).contiguous(), with(batch, {rrows, n}));
  if (mode == "r") return {empty({0}, A.dtype(), A.device()), R};
  const int64_t qcols = complete ? m : k;
  return {reshape(form_q(f, tau, qcols), with(batch, {m, qcols})), R};
}

Tensor linalg_householder_product(const Tensor& A, const Tensor& tau) {
  const char* op = "linalg.householder_product";
  EMBER_CHECK(A.dim() >= 2, Error, "[", op, "] input must have at least 2 dimensions.");
  check_matrix(op, A);
  EMBER_CHECK(A.size(-2) >= A.size(-1), Error, "[", op,
              "] input.shape[-2] must be greater than or equal to input.shape[-1]");
  EMBER_CHECK(tau.dim() == A.dim() - 1, Error, "[", op,
              "] Expected tau to have one dimension less than input, but got tau.ndim equal to ", tau.dim(),
              " and input.ndim is equal to ", A.dim());
  EMBER_CHECK(A.size(-1) >= tau.size(-1), Error, "[", op,
              "] input.shape[-1] must be greater than or equal to tau.shape[-1]");
  EMBER_CHECK(batch_of(tau, 1) == batch_of(A, 2), Error, "[", op,
              "] Expected batch dimensions of tau to be equal to input.shape[:-2], but got ",
              dims::str(batch_of(tau, 1)));
  EMBER_CHECK(tau.dtype() == A.dtype(), Error, "[", op, "] tau dtype ", dtype_name(tau.dtype()),
              " does not match input dtype ", dtype_name(A.dtype()));
  const Tensor q = as_batch(A);
  const Tensor t = reshape(tau.clone(), {q.size(0), tau.size(-1)});
  if (q.numel() > 0) orgqr_stub.get(A.device().type)(q, t);
  return reshape(q, A.sizes());
}

// ---- LU ------------------------------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot, bool check_errors) {
  const char* op = "linalg.lu_factor";
  check_matrix(op, A);
  EMBER_CHECK(pivot, NotImplementedError, "[", op, "] LU without pivoting is not implemented on the CPU");
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const IntList batch = batch_of(A, 2);
  const Tensor lu = as_batch(A);
  const int64_t count = lu.size(0);
  const Tensor pivots = empty({count, k}, DType::Int32, A.device());
  const Tensor info = zeros({count}, DType::Int32, A.device());
  if (lu.numel() > 0) lu_stub.get(A.device().type)(lu, pivots, info);
  if (check_errors) {
    const auto [at, code] = first_failure(info);
    EMBER_CHECK(
        at < 0, LinAlgError, "[", op, "] ", batch_note(A, at), "U[", code, ",", code,
        "] is zero and using it on lu_solve would result in a division by zero. If you still want to "
        "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
  }
  return {reshape(lu, A.sizes()), reshape(pivots, with(batch, {k})), reshape(info, batch)};
}

std::tuple<Tensor, Tensor> linalg_lu_factor(const Tensor& A, bool pivot) {
  const auto [lu, pivots, info] = linalg_lu_factor_ex(A, pivot, true);
  return {lu, pivots};
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu(const Tensor& A, bool pivot) {
  const auto [lu, pivots, info] = linalg_lu_factor_ex(A, pivot, false);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const IntList batch = batch_of(A, 2);
  // A = P L U: P's column i is the unit vector of the row that the swaps bring to position i
  const Tensor piv = reshape(pivots.contiguous(), {-1, std::max<int64_t>(k, 1)});
  int64_t count = 1;
  for (int64_t b : batch) count *= b;
  const Tensor P = zeros({count, m, m}, DType::Float64, A.device());
  std::vector<int64_t> perm(static_cast<size_t>(m));
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t i = 0; i < m; ++i) perm[i] = i;
    for (int64_t i = 0; i < k; ++i) std::swap(perm[i], perm[piv.data<int32_t>()[s * k + i] - 1]);
    for (int64_t i = 0; i < m; ++i) P.data<double>()[(s * m + perm[i]) * m + i] = 1.0;
  }
  const Tensor eye_mk = eye(m, k, A.dtype(), A.device());
  const Tensor L = add(tril(narrow(lu, -1, 0, k), -1), eye_mk, Scalar(int64_t(1)), std::nullopt);
  const Tensor U = triu(narrow(lu, -2, 0, k), 0);
  return {reshape(to_dtype(P, A.dtype(), false), with(batch, {m, m})), L, U};
}

Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  check_square(op, LU, "LU");
  EMBER_CHECK(B.dim() >= 2, Error, "[", op, "] The input tensor B must have at least 2 dimensions.");
  EMBER_CHECK(LU.dtype() == B.dtype(), Error, "[", op,
              "] Expected LU and B to have the same dtype, but found LU of type ", dtype_name(LU.dtype()),
              " and B of type ", dtype_name(B.dtype()), " instead");
  EMBER_CHECK(pivots.dtype() == DType::Int32, Error, "[", op,
              "] pivots should be a Tensor of scalar type torch.int32, but got ", dtype_name(pivots.dtype()));
  const int64_t n = LU.size(-1);
  EMBER_CHECK(pivots.dim() == LU.dim() - 1 && batch_of(pivots, 0) == batch_of(LU, 1), Error, "[", op,
              "] Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
              dims::str(pivots.sizes()), " instead");
  EMBER_CHECK(B.size(left ? -2 : -1) == n, Error, "[", op,
              "] Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B", " (", n, "x",
              n, " and ", B.size(-2), "x", B.size(-1), ")");
  {  // the swaps index rows, so they must name rows of LU
    const Tensor p = pivots.contiguous();
    for (int64_t i = 0; i < p.numel(); ++i) {
      const int32_t v = p.data<int32_t>()[i];
      EMBER_CHECK(v >= 1 && v <= n, IndexError, "[", op, "] expected pivots between 1 and ", n, ", but got ",
                  v);
    }
  }
  if (!left)  // X A = B <=> A^H X^H = B^H (and X A^H = B <=> A X^H = B^H)
    return mH(linalg_lu_solve(LU, pivots, mH(B), true, !adjoint));
  const IntList batch = pointwise::broadcast_shapes(op, batch_of(LU, 2), batch_of(B, 2));
  const Tensor lu = as_batch(expand(adjoint ? mH(LU) : LU, with(batch, {n, n})));
  const Tensor piv = reshape(expand(pivots, with(batch, {n})).contiguous(), {lu.size(0), n});
  Tensor x = as_batch(expand(B, with(batch, {n, B.size(-1)})));
  if (x.numel() > 0) {
    const auto solve = triangular_solve_stub.get(LU.device().type);
    if (!adjoint) {  // A = P L U: X = U^-1 L^-1 P^T B
      swap_rows(x, piv, false);
      solve(lu, x, false, true);
      solve(lu, x, true, false);
    } else {  // A^H = U^H L^H P^T: X = P L^-H U^-H B (lu holds LU^H: U^H below, L^H above)
      solve(lu, x, false, false);
      solve(lu, x, true, true);
      swap_rows(x, piv, true);
    }
  }
  return reshape(x, with(batch, {n, B.size(-1)}));
}

// ---- LDL -----------------------------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> linalg_ldl_factor_ex(const Tensor& A, bool hermitian, bool check_errors) {
  const char* op = "linalg.ldl_factor_ex";
  check_square(op, A);
  const int64_t n = A.size(-1);
  const IntList batch = batch_of(A, 2);
  const Tensor ld = as_batch(tril(A, 0));  // only the lower triangle is read; the upper stays zero
  const int64_t count = ld.size(0);
  const Tensor pivots = empty({count, n}, DType::Int32, A.device());
  const Tensor info = zeros({count}, DType::Int32, A.device());
  if (ld.numel() > 0) ldl_factor_stub.get(A.device().type)(ld, pivots, info, hermitian);
  if (check_errors) {
    // (PyTorch 2.13 reports this case as an internal assert, "Unknown error code")
    const auto [at, code] = first_failure(info);
    EMBER_CHECK(
        at < 0, LinAlgError, "[", op, "] ", batch_note(A, at), "D[", code, ",", code,
        "] is exactly zero: the factorization is complete, but D is singular and solving with it would "
        "divide by zero. To get the factors anyway, call linalg.ldl_factor_ex(A).");
  }
  return {reshape(ld, A.sizes()), reshape(pivots, with(batch, {n})), reshape(info, batch)};
}

std::tuple<Tensor, Tensor> linalg_ldl_factor(const Tensor& A, bool hermitian) {
  const auto [ld, pivots, info] = linalg_ldl_factor_ex(A, hermitian, true);
  return {ld, pivots};
}

Tensor linalg_ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian) {
  const char* op = "linalg.ldl_solve";
  check_square(op, LD, "LD");
  EMBER_CHECK(B.dim() >= 2, Error, "[", op, "] Expected B to have at least 2 dimensions, but it has ",
              B.dim(), " dimensions instead");
  const int64_t n = LD.size(-1);
  EMBER_CHECK(pivots.dim() == LD.dim() - 1 && batch_of(pivots, 0) == batch_of(LD, 1), Error, "[", op,
              "] Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
              dims::str(pivots.sizes()), " instead");
  EMBER_CHECK(is_integral(pivots.dtype(), false), Error, "[", op, "] Expected pivots to be integers. Got ",
              dtype_name(pivots.dtype()));
  EMBER_CHECK(LD.dtype() == B.dtype(), Error, "[", op,
              "] Expected LD and B to have the same dtype, but found LD of type ", dtype_name(LD.dtype()),
              " and B of type ", dtype_name(B.dtype()), " instead");
  EMBER_CHECK(B.size(-2) == n, Error, "[", op, "] Incompatible matrix sizes: each LD matrix is ", n, " by ",
              n, " but each B matrix is ", B.size(-2), " by ", B.size(-1));
  {
    // LAPACK's sytrs swaps rows by the pivots without checking them: every pivot must name a row,
    // and a negative one (a 2x2 block of D) must repeat at the next position, which must exist.
    const Tensor p =
        reshape(to_dtype(pivots, DType::Int64, false).contiguous(), {-1, std::max<int64_t>(n, 1)});
    const int64_t rows = n == 0 ? 0 : p.size(0);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t* piv = p.data<int64_t>() + r * n;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = piv[i];
        EMBER_CHECK(v != 0 && v >= -n && v <= n, IndexError, "[", op,
                    "] pivots must name rows 1..n (negative for a 2x2 block), with n = ", n, ", but got ", v,
                    ". Did you pass the pivots of linalg.ldl_factor?");
        if (v > 0) continue;
        EMBER_CHECK(i + 1 < n && piv[i + 1] == v, IndexError, "[", op,
                    "] a negative pivot marks a 2x2 block and must repeat at the next position, but pivot ",
                    i, " is ", v, " and the next is ",
                    i + 1 < n ? std::to_string(piv[i + 1]) : std::string("absent"),
                    ". Did you pass the pivots of linalg.ldl_factor?");
        ++i;  // the block's second row
      }
    }
  }
  const IntList batch = pointwise::broadcast_shapes(op, batch_of(LD, 2), batch_of(B, 2));
  const Tensor ld = as_batch(expand(LD, with(batch, {n, n})));
  const Tensor piv =  // (LAPACK's int32: every pivot is checked to be at most n)
      reshape(to_dtype(expand(pivots, with(batch, {n})), DType::Int32, false).contiguous(), {ld.size(0), n});
  Tensor x = as_batch(expand(B, with(batch, {n, B.size(-1)})));
  if (x.numel() > 0) ldl_solve_stub.get(LD.device().type)(ld, piv, x, hermitian);
  return reshape(x, with(batch, {n, B.size(-1)}));
}

// ---- general eigen-decomposition -----------------------------------------------------------------

namespace {

std::tuple<Tensor, Tensor> eig_impl(const char* op, const Tensor& A, bool vectors) {
  check_square(op, A);
  const DType c = is_complex(A.dtype()) ? A.dtype() : to_complex_dtype(A.dtype());
  const int64_t n = A.size(-1);
  const IntList batch = batch_of(A, 2);
  const Tensor a = as_batch(A);  // real input runs as real (LAPACK's sgeev / dgeev)
  const int64_t count = a.size(0);
  const Tensor w = empty({count, n}, c, A.device());
  const Tensor v = vectors ? empty({count, n, n}, c, A.device()) : Tensor();
  const Tensor info = zeros({count}, DType::Int32, A.device());
  if (a.numel() > 0) eig_stub.get(A.device().type)(a, w, v, info);
  check_converged(op, A, info, "eigenvalues");
  return {reshape(w, with(batch, {n})), vectors ? reshape(v, A.sizes()) : Tensor()};
}

}  // namespace

std::tuple<Tensor, Tensor> linalg_eig(const Tensor& A) {
  return eig_impl("linalg.eig", A, true);
}

Tensor linalg_eigvals(const Tensor& A) {
  return std::get<0>(eig_impl("linalg.eigvals", A, false));
}

}  // namespace ember
