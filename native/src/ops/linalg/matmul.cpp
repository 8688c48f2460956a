// Matrix products: mm, bmm, matmul (PyTorch's rank rules), mv, dot, vdot, outer, addmm, addmv,
// baddbmm, addbmm, and the float32 matmul precision flag. Every product runs through one batched
// GEMM kernel (gemm_stub, Note [gemm blocking]); float16/bfloat16 compute in float32.
#include <atomic>
#include <string>

#include "ember/error.h"
#include "ember/linalg.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<GemmFn> gemm_stub("gemm");

namespace {

std::atomic<int> matmul_precision{0};  // 0 highest, 1 high, 2 medium
constexpr const char* kPrecisions[] = {"highest", "high", "medium"};

bool reduced(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dtype() == b.dtype(), Error, "[", op,
              "] expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype()),
              " != ", dtype_name(b.dtype()));
  EMBER_CHECK(a.device() == b.device(), Error, "[", op,
              "] expected all tensors to be on the same device, but got ", a.device().str(), " and ",
              b.device().str());
  EMBER_CHECK(a.dtype() != DType::Bool, NotImplementedError, "[", op, "] not implemented for 'Bool'");
}

// a [B, m, k] @ b [B, k, n] (batch strides may be 0) into a new [B, m, n]; with `add` (beta, alpha):
// beta * add + alpha * a @ b, `add` broadcast to the result.
Tensor batched_product(const char* op, const Tensor& a, const Tensor& b, const Tensor& add = Tensor(),
                       const Scalar& beta = Scalar(int64_t(0)), const Scalar& alpha = Scalar(int64_t(1))) {
  const DType dtype = a.dtype();
  const DType compute = reduced(dtype) ? DType::Float32 : dtype;
  const Tensor ac = pointwise::cast_to(a, compute), bc = pointwise::cast_to(b, compute);
  const IntList shape{a.size(0), a.size(1), b.size(2)};
  Tensor out = empty(shape, compute, a.device());
  Scalar scaled = beta;
  if (add.defined()) {
    const Tensor start = pointwise::expand_to(pointwise::cast_to(add, compute), shape, op);
    copy_stub.get(out.device().type)(out, start);
  } else {
    scaled = Scalar(int64_t(0));
  }
  if (out.numel() > 0) gemm_stub.get(a.device().type)(out, ac, bc, alpha, scaled);
  return pointwise::cast_to(out, dtype);
}

Tensor to_out(const char* op, const Tensor& result, const std::optional<Tensor>& out) {
  if (!out) return result;
  EMBER_CHECK(out->dtype() == result.dtype(), Error, "[", op, "] expected out tensor to have dtype ",
              dtype_name(result.dtype()), ", but got ", dtype_name(out->dtype()), " instead");
  const Tensor o = pointwise::make_output(op, out, result.sizes(), result.dtype(), result.device());
  copy_stub.get(result.device().type)(o, result);
  return *out;
}

void check_rank(const char* op, const char* what, const Tensor& t, int64_t rank) {
  EMBER_CHECK(t.dim() == rank, Error, "[", op, "] ", what, " must be a ", rank, "D tensor, but got a ",
              t.dim(), "D tensor");
}

// baddbmm / addbmm: two [B, m, k] @ [B, k, n] batches of self's dtype.
void check_batch_products(const char* op, const Tensor& self, const Tensor& batch1, const Tensor& batch2) {
  check_rank(op, "batch1", batch1, 3);
  check_rank(op, "batch2", batch2, 3);
  check_operands(op, batch1, batch2);
  check_operands(op, self, batch1);
  EMBER_CHECK(batch1.size(0) == batch2.size(0) && batch1.size(2) == batch2.size(1), Error, "[", op,
              "] batch1 and batch2 shapes cannot be multiplied (", dims::str(batch1.sizes()), " and ",
              dims::str(batch2.sizes()), ")");
}

Tensor mm_impl(const char* op, const Tensor& a, const Tensor& b) {
  check_operands(op, a, b);
  EMBER_CHECK(a.size(1) == b.size(0), Error, "[", op, "] mat1 and mat2 shapes cannot be multiplied (",
              a.size(0), "x", a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  return view(batched_product(op, unsqueeze(a, 0), unsqueeze(b, 0)), {a.size(0), b.size(1)});
}

}  // namespace

void set_float32_matmul_precision(const std::string& precision) {
  for (int i = 0; i < 3; ++i) {
    if (precision == kPrecisions[i]) {
      matmul_precision = i;
      return;
    }
  }
  throw Error("[set_float32_matmul_precision] expected one of 'highest', 'high' or 'medium', but got '" +
              precision + "'");
}

std::string get_float32_matmul_precision() {
  return kPrecisions[matmul_precision.load()];
}

Tensor mm(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& out) {
  check_rank("mm", "self", self, 2);
  check_rank("mm", "mat2", mat2, 2);
  return to_out("mm", mm_impl("mm", self, mat2), out);
}

Tensor bmm(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& out) {
  check_rank("bmm", "batch1", self, 3);
  check_rank("bmm", "batch2", mat2, 3);
  check_operands("bmm", self, mat2);
  EMBER_CHECK(self.size(0) == mat2.size(0), Error,
              "[bmm] expected batch1 and batch2 to have the same batch size, but got ", self.size(0), " and ",
              mat2.size(0));
  EMBER_CHECK(self.size(2) == mat2.size(1), Error,
              "[bmm] Expected size for first two dimensions of batch2 tensor to be: [", self.size(0), ", ",
              self.size(2), "] but got: [", mat2.size(0), ", ", mat2.size(1), "].");
  return to_out("bmm", batched_product("bmm", self, mat2), out);
}

Tensor mv(const Tensor& self, const Tensor& vec, const std::optional<Tensor>& out) {
  check_rank("mv", "self", self, 2);
  check_rank("mv", "vec", vec, 1);
  check_operands("mv", self, vec);
  EMBER_CHECK(self.size(1) == vec.size(0), Error, "[mv] size mismatch, got input (", self.size(0), "), mat (",
              self.size(0), "x", self.size(1), "), vec (", vec.size(0), ")");
  return to_out("mv", view(mm_impl("mv", self, unsqueeze(vec, 1)), {self.size(0)}), out);
}

Tensor dot(const Tensor& self, const Tensor& tensor, const std::optional<Tensor>& out) {
  EMBER_CHECK(self.dim() == 1 && tensor.dim() == 1, Error, "[dot] 1D tensors expected, but got ", self.dim(),
              "D and ", tensor.dim(), "D tensors");
  check_operands("dot", self, tensor);
  EMBER_CHECK(self.size(0) == tensor.size(0), Error, "[dot] inconsistent tensor size, expected tensor [",
              self.size(0), "] and src [", tensor.size(0), "] to have the same number of elements, but got ",
              self.size(0), " and ", tensor.size(0), " elements respectively");
  return to_out("dot", view(mm_impl("dot", unsqueeze(self, 0), unsqueeze(tensor, 1)), IntList{}), out);
}

Tensor vdot(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  EMBER_CHECK(self.dim() == 1 && other.dim() == 1, Error, "[vdot] 1D tensors expected, but got ", self.dim(),
              "D and ", other.dim(), "D tensors");
  return dot(conj(self), other, out);
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  EMBER_CHECK(self.dim() == 1 && vec2.dim() == 1, Error, "[outer] 1D tensors expected, but got ", self.dim(),
              "D and ", vec2.dim(), "D tensors");
  check_operands("outer", self, vec2);
  return mul(unsqueeze(self, 1), unsqueeze(vec2, 0));
}

Tensor matmul(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  const int64_t da = self.dim(), db = other.dim();
  EMBER_CHECK(da > 0 && db > 0, Error,
              "[matmul] both arguments to matmul need to be at least 1D, but they are ", da, "D and ", db,
              "D");
  if (da == 1 && db == 1) return to_out("matmul", dot(self, other), out);
  if (da == 2 && db == 1) return to_out("matmul", mv(self, other), out);
  if (da == 1 && db == 2) return to_out("matmul", squeeze(mm(unsqueeze(self, 0), other), IntList{0}), out);
  if (da == 2 && db == 2) return to_out("matmul", mm(self, other), out);
  check_operands("matmul", self, other);
  // Batched: a vector operand gains a matrix dim (dropped from the result); batch dims broadcast.
  const Tensor a = da == 1 ? unsqueeze(self, 0) : self;
  const Tensor b = db == 1 ? unsqueeze(other, 1) : other;
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  EMBER_CHECK(k == b.size(-2), Error, "[matmul] mat1 and mat2 shapes cannot be multiplied (", m, "x", k,
              " and ", b.size(-2), "x", n, ")");
  const IntList a_batch(a.sizes().begin(), a.sizes().end() - 2);
  const IntList b_batch(b.sizes().begin(), b.sizes().end() - 2);
  IntList result_shape;
  Tensor r;
  if (b.dim() == 2) {  // fold a's batch into its rows: one matrix product, no copies of b
    const Tensor rows = reshape(a, {-1, k});
    r = view(batched_product("matmul", unsqueeze(rows, 0), unsqueeze(b, 0)), {rows.size(0), n});
    result_shape = a_batch;
  } else {
    const IntList batch = pointwise::broadcast_shapes("matmul", a_batch, b_batch);
    IntList ea = batch, eb = batch;
    ea.insert(ea.end(), {m, k});
    eb.insert(eb.end(), {k, n});
    int64_t count = 1;
    for (int64_t s : batch) count *= s;
    const Tensor a3 = reshape(expand(a, ea), {count, m, k});
    const Tensor b3 = reshape(expand(b, eb), {count, k, n});
    r = batched_product("matmul", a3, b3);
    result_shape = batch;
  }
  if (da > 1) result_shape.push_back(m);
  if (db > 1) result_shape.push_back(n);
  return to_out("matmul", reshape(r, result_shape), out);
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha, const std::optional<Tensor>& out) {
  check_rank("addmm", "mat1", mat1, 2);
  check_rank("addmm", "mat2", mat2, 2);
  check_operands("addmm", mat1, mat2);
  check_operands("addmm", self, mat1);
  EMBER_CHECK(mat1.size(1) == mat2.size(0), Error, "[addmm] mat1 and mat2 shapes cannot be multiplied (",
              mat1.size(0), "x", mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  const Tensor r = batched_product("addmm", unsqueeze(mat1, 0), unsqueeze(mat2, 0), self, beta, alpha);
  return to_out("addmm", view(r, {mat1.size(0), mat2.size(1)}), out);
}

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta,
             const Scalar& alpha, const std::optional<Tensor>& out) {
  check_rank("addmv", "mat", mat, 2);
  check_rank("addmv", "vec", vec, 1);
  check_operands("addmv", mat, vec);
  check_operands("addmv", self, mat);
  EMBER_CHECK(mat.size(1) == vec.size(0), Error, "[addmv] size mismatch, got input (", mat.size(0),
              "), mat (", mat.size(0), "x", mat.size(1), "), vec (", vec.size(0), ")");
  const Tensor add = self.dim() == 1 ? unsqueeze(self, 1) : self;  // the result is a column, then a vector
  const Tensor r =
      batched_product("addmv", unsqueeze(mat, 0), unsqueeze(unsqueeze(vec, 1), 0), add, beta, alpha);
  return to_out("addmv", view(r, {mat.size(0)}), out);
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha, const std::optional<Tensor>& out) {
  check_batch_products("baddbmm", self, batch1, batch2);
  return to_out("baddbmm", batched_product("baddbmm", batch1, batch2, self, beta, alpha), out);
}

Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha, const std::optional<Tensor>& out) {
  check_batch_products("addbmm", self, batch1, batch2);
  // sum over the batch of batch1[i] @ batch2[i] = [m, B*k] @ [B*k, n]
  const int64_t b = batch1.size(0), m = batch1.size(1), k = batch1.size(2), n = batch2.size(2);
  const Tensor left = reshape(movedim(batch1, {0}, {1}), {m, b * k});
  const Tensor right = reshape(batch2, {b * k, n});
  const Tensor r = batched_product("addbmm", unsqueeze(left, 0), unsqueeze(right, 0), self, beta, alpha);
  return to_out("addbmm", view(r, {m, n}), out);
}

}  // namespace ember
