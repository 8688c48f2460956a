// ember.linalg solvers and determinants: solve, inv, det, slogdet, cholesky, cholesky_ex and
// solve_triangular, on the LU / Cholesky / triangular-solve kernels (backend/cpu/linalg_kernels.cpp).
// Inputs are batches of matrices ([*, n, n]); batch dims broadcast between A and B as PyTorch's do.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/kernels.h"
#include "ops/linalg/matrix_args.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<LuFn> lu_stub("lu");
DispatchStub<CholeskyFn> cholesky_stub("cholesky");
DispatchStub<TriangularSolveFn> triangular_solve_stub("triangular_solve");

namespace {

using linalg_args::as_batch;
using linalg_args::batch_of;
using linalg_args::check_dtype;

void check_square(const char* op, const Tensor& a, const char* name = "A") {
  linalg_args::check_square_matrices(op, a, name);
}

struct Lu {
  Tensor lu, pivots, info;  // [count, n, n], int32 [count, n], int32 [count]
};

Lu lu_of(const Tensor& a) {
  Lu r;
  r.lu = as_batch(a);
  r.pivots = empty({r.lu.size(0), r.lu.size(1)}, DType::Int32, a.device());
  r.info = empty({r.lu.size(0)}, DType::Int32, a.device());
  if (r.lu.numel() > 0) lu_stub.get(a.device().type)(r.lu, r.pivots, r.info);
  if (r.lu.size(1) == 0) fill_(r.info, Scalar(int64_t(0)));
  return r;
}

int32_t first_failure(const Tensor& info) {
  const Tensor c = info.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i)
    if (c.data<int32_t>()[i] != 0) return c.data<int32_t>()[i];
  return 0;
}

// Applies the row swaps of `pivots` to b [count, n, k] in place (b is contiguous).
void permute_rows(const Tensor& b, const Tensor& pivots) {
  const int64_t count = b.size(0), n = b.size(1), k = b.size(2);
  const size_t row_bytes = static_cast<size_t>(k) * itemsize(b.dtype());
  char* base = static_cast<char*>(b.data_ptr());
  const int32_t* piv = pivots.data<int32_t>();
  const int64_t pivot_stride = pivots.size(0) == 1 ? 0 : n;
  std::vector<char> tmp(row_bytes);
  for (int64_t s = 0; s < count; ++s) {
    char* m = base + s * n * static_cast<int64_t>(row_bytes);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = piv[s * pivot_stride + i] - 1;
      if (j == i) continue;
      std::memcpy(tmp.data(), m + i * row_bytes, row_bytes);
      std::memcpy(m + i * row_bytes, m + j * row_bytes, row_bytes);
      std::memcpy(m + j * row_bytes, tmp.data(), row_bytes);
    }
  }
}

// X = A^-1 B in place of x [count, n, k] from A's factors f (of count matrices, or of one that
// serves them all): LAPACK's getrs, as row swaps and two triangular solves.
void solve_factored(const Lu& f, const Tensor& x) {
  if (x.numel() == 0) return;
  permute_rows(x, f.pivots);
  triangular_solve_stub.get(x.device().type)(f.lu, x, false, true);  // L, unit diagonal
  triangular_solve_stub.get(x.device().type)(f.lu, x, true, false);  // U
}

// X with A X = B for A [*, n, n] and B [*, n, k], batch dims broadcast; `singular` names the
// error raised when some A is singular.
Tensor solve_left(const Tensor& a, const Tensor& b, const std::string& singular) {
  const IntList batch = pointwise::broadcast_shapes("linalg.solve", batch_of(a, 2), batch_of(b, 2));
  IntList ea = batch, eb = batch;
  ea.insert(ea.end(), {a.size(-2), a.size(-1)});
  eb.insert(eb.end(), {b.size(-2), b.size(-1)});
  // One matrix serving all of B is factored once (an empty batch factors none, as before).
  const IntList a_batch = batch_of(a, 2);
  const bool one_matrix = std::all_of(a_batch.begin(), a_batch.end(), [](int64_t d) { return d == 1; }) &&
                          std::find(batch.begin(), batch.end(), 0) == batch.end();
  const Lu f = lu_of(one_matrix ? a : expand(a, ea));
  EMBER_CHECK(first_failure(f.info) == 0, LinAlgError, singular);
  const Tensor x = as_batch(expand(b, eb));
  solve_factored(f, x);
  return reshape(x, eb);
}

Tensor eye_like(const Tensor& a) {
  return expand(eye(a.size(-1), std::nullopt, a.dtype(), a.device()), a.sizes());
}

}  // namespace

Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left) {
  check_square("linalg.solve", A);
  check_dtype("linalg.solve", A);
  EMBER_CHECK(A.dtype() == B.dtype(), Error,
              "[linalg.solve] Expected A and B to have the same dtype, but found A of type ",
              dtype_name(A.dtype()), " and B of type ", dtype_name(B.dtype()), " instead");
  // B is a batch of vectors when it is 1-D, or has A's batch dims and one dim fewer than A
  const bool vector = B.dim() == 1 || (B.dim() == A.dim() - 1 && batch_of(B, 1) == batch_of(A, 2));
  const Tensor b = vector ? unsqueeze(B, -1) : B;
  EMBER_CHECK(b.dim() >= 2 && b.size(left ? -2 : -1) == A.size(-1), Error,
              "[linalg.solve] Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B",
              " (", dims::str(A.sizes()), " and ", dims::str(B.sizes()), ")");
  const std::string singular = "[linalg.solve] The solver failed because the input matrix is singular.";
  Tensor x = left ? solve_left(A, b, singular)
                  : transpose(solve_left(transpose(A, -2, -1), transpose(b, -2, -1), singular), -2, -1);
  return vector ? squeeze(x, IntList{-1}) : x;
}

Tensor linalg_inv(const Tensor& A) {
  check_square("linalg.inv", A);
  check_dtype("linalg.inv", A);
  const Lu f = lu_of(A);
  const int32_t bad = first_failure(f.info);
  EMBER_CHECK(bad == 0, LinAlgError, "[linalg.inv] The diagonal element ", bad,
              " is zero, the inversion could not be completed because the input matrix is singular.");
  const Tensor x = as_batch(eye_like(A));
  solve_factored(f, x);
  return reshape(x, A.sizes());
}

std::tuple<Tensor, Tensor> linalg_slogdet(const Tensor& A) {
  check_square("linalg.slogdet", A);
  check_dtype("linalg.slogdet", A);
  const Lu f = lu_of(A);
  const int64_t count = f.lu.size(0), n = f.lu.size(1);
  const IntList batch = batch_of(A, 2);
  const bool cplx = is_complex(A.dtype());
  const DType real = cplx ? (A.dtype() == DType::Complex64 ? DType::Float32 : DType::Float64) : A.dtype();
  // sign and log|det| from U's diagonal and the number of row swaps, in double precision
  const Tensor lu = to_dtype(f.lu, cplx ? DType::Complex128 : DType::Float64, false).contiguous();
  const Tensor sign64 = empty({count}, cplx ? DType::Complex128 : DType::Float64, A.device());
  const Tensor logabs64 = empty({count}, DType::Float64, A.device());
  for (int64_t s = 0; s < count; ++s) {
    std::complex<double> phase = 1.0;
    double log_sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      if (f.pivots.data<int32_t>()[s * n + i] != i + 1) phase = -phase;
      const std::complex<double> u = cplx ? lu.data<std::complex<double>>()[(s * n + i) * n + i]
                                          : std::complex<double>(lu.data<double>()[(s * n + i) * n + i]);
      const double mag = std::abs(u);
      log_sum += std::log(mag);  // -inf for a zero pivot
      phase *= mag == 0 ? 0.0 : u / mag;
    }
    if (cplx) {
      sign64.data<std::complex<double>>()[s] = phase;
    } else {
      sign64.data<double>()[s] = phase.real();
    }
    logabs64.data<double>()[s] = log_sum;
  }
  return {reshape(to_dtype(sign64, A.dtype(), false), batch),
          reshape(to_dtype(logabs64, real, false), batch)};
}

Tensor linalg_det(const Tensor& A) {
  check_square("linalg.det", A);
  const auto [sign, logabs] = linalg_slogdet(A);
  return mul(sign, exp(logabs));
}

std::tuple<Tensor, Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  check_square("linalg.cholesky", A);
  check_dtype("linalg.cholesky", A);
  Tensor l = as_batch(A);
  Tensor info = zeros({l.size(0)}, DType::Int32, A.device());
  if (l.numel() > 0) cholesky_stub.get(A.device().type)(l, info);
  const int32_t bad = first_failure(info);
  EMBER_CHECK(!check_errors || bad == 0, LinAlgError,
              "[linalg.cholesky] The factorization could not be completed because the input is not "
              "positive-definite (the leading minor of order ",
              bad, " is not positive-definite).");
  l = reshape(l, A.sizes());
  if (upper) l = conj(transpose(l, -2, -1)).contiguous();
  return {l, reshape(info, batch_of(A, 2))};
}

Tensor linalg_cholesky(const Tensor& A, bool upper) {
  return std::get<0>(linalg_cholesky_ex(A, upper, true));
}

Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  check_square("linalg.solve_triangular", A);
  check_dtype("linalg.solve_triangular", A);
  EMBER_CHECK(B.dim() >= 2, Error,
              "[linalg.solve_triangular] The input tensor B must have at least 2 dimensions.");
  EMBER_CHECK(A.dtype() == B.dtype(), Error,
              "[linalg.solve_triangular] Expected A and B to have the same dtype");
  if (!left) {  // X A = B  <=>  A^T X^T = B^T, and A^T is triangular the other way
    return transpose(
        linalg_solve_triangular(transpose(A, -2, -1), transpose(B, -2, -1), !upper, true, unitriangular), -2,
        -1);
  }
  EMBER_CHECK(B.size(-2) == A.size(-1), Error,
              "[linalg.solve_triangular] Incompatible shapes of A and B for the "
              "equation AX = B (",
              dims::str(A.sizes()), " and ", dims::str(B.sizes()), ")");
  const IntList batch =
      pointwise::broadcast_shapes("linalg.solve_triangular", batch_of(A, 2), batch_of(B, 2));
  IntList ea = batch, eb = batch;
  ea.insert(ea.end(), {A.size(-2), A.size(-1)});
  eb.insert(eb.end(), {B.size(-2), B.size(-1)});
  const Tensor t = as_batch(expand(A, ea));
  Tensor x = as_batch(expand(B, eb));
  if (x.numel() > 0) triangular_solve_stub.get(A.device().type)(t, x, upper, unitriangular);
  return reshape(x, eb);
}

}  // namespace ember
