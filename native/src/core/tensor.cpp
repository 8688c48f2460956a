#include "ember/tensor.h"

#include <atomic>
#include <limits>

#include "ember/error.h"
#include "ember/quantizer.h"
#include "ember/writable.h"

namespace ember {

Storage::Storage(size_t nbytes, Device device)
    : data_(get_allocator(device.type)->allocate(nbytes)), nbytes_(nbytes), device_(device) {}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> release)
    : data_(data, std::move(release)), nbytes_(nbytes), device_(device) {}

void Storage::swap_memory(Storage& other) {
  EMBER_CHECK(nbytes_ == other.nbytes_ && device_ == other.device_, ValueError,
              "[swap_memory] expected two storages of one size and device, but got ", nbytes_, " and ",
              other.nbytes_, " bytes");
  std::swap(data_, other.data_);
  std::swap(read_only_, other.read_only_);
  std::swap(shared_, other.shared_);
}

namespace {
const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  EMBER_CHECK(impl != nullptr, Error, "[Tensor] expected a defined tensor, but got an undefined one");
  return *impl;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t lo = ndim == 0 ? -1 : -ndim;
  const int64_t hi = ndim == 0 ? 0 : ndim - 1;
  EMBER_CHECK(dim >= lo && dim <= hi, IndexError, "[", op,
              "] Dimension out of range (expected to be in range of [", lo, ", ", hi, "], but got ", dim,
              ")");
  return dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
}

int64_t dim_of_sized(int64_t dim, int64_t ndim, const char* op) {
  EMBER_CHECK(ndim > 0, IndexError, "[", op, "] Dimension specified as ", dim,
              " but tensor has no dimensions");
  return wrap_dim(dim, ndim, op);
}
}  // namespace

const IntList& Tensor::sizes() const {
  return checked(impl_).sizes;
}
const IntList& Tensor::strides() const {
  return checked(impl_).strides;
}
int64_t Tensor::size(int64_t dim) const {
  return sizes()[dim_of_sized(dim, this->dim(), "size")];
}
int64_t Tensor::stride(int64_t dim) const {
  return strides()[dim_of_sized(dim, this->dim(), "stride")];
}
int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes()) n *= s;  // cannot overflow: checked when the tensor was made
  return n;
}
DType Tensor::dtype() const {
  return checked(impl_).dtype;
}
Device Tensor::device() const {
  return checked(impl_).storage->device();
}
int64_t Tensor::storage_offset() const {
  return checked(impl_).storage_offset;
}
const std::shared_ptr<Storage>& Tensor::storage() const {
  return checked(impl_).storage;
}
uint32_t Tensor::version() const {
  return checked(impl_).version_counter->version.load();
}
// Note [read-only storage]: from_numpy of a read-only array (np.memmap(mode="r"), an array over
// bytes) wraps memory the process may not write; writing it would crash (PyTorch crashes or
// writes behind NumPy's back). The Storage is flagged, so the tensor and every view of it know,
// and bump_version, which every in-place op and out= passes before writing (copy_, fill_, the
// pointwise ops' outputs, index_put_, the random fills, autograd.Function's dirty tensors),
// raises instead; code that writes without a version bump calls its check, check_writable
// (ember/writable.h). numpy() of such a tensor is a read-only array again.
void check_writable(const Tensor& t) {
  EMBER_CHECK(!t.storage()->read_only(), Error,
              "[in-place] expected a writable tensor, but this one shares the memory of a read-only NumPy "
              "array (from_numpy); copy it first (tensor.clone()) or pass a writable array");
}
namespace {
std::atomic<int> threads_with_write_hooks{0};
thread_local WriteHook write_hook = nullptr;
thread_local bool in_write_hook = false;
}  // namespace

WriteHook set_write_hook(WriteHook hook) {
  const WriteHook previous = write_hook;
  if (!previous && hook) threads_with_write_hooks.fetch_add(1);
  if (previous && !hook) threads_with_write_hooks.fetch_sub(1);
  write_hook = hook;
  return previous;
}

void Tensor::bump_version() const {
  check_writable(*this);
  VersionCounter& counter = *checked(impl_).version_counter;
  EMBER_CHECK(
      !counter.inference || InferenceMode::is_enabled(), Error,
      "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
      "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
      "more details.");
  if (threads_with_write_hooks.load(std::memory_order_relaxed) > 0 && write_hook && !in_write_hook) {
    // the hook's own copies write too (Note [write hooks])
    struct InHook {
      InHook() { in_write_hook = true; }
      ~InHook() { in_write_hook = false; }
    } in_hook;
    write_hook(*this);
  }
  counter.version.fetch_add(1);
}
// Note [fresh versions]: kernels bump the version on every write, the writes into the outputs they
// build included (cat's copies into its parts, eye's fill of its diagonal). PyTorch counts only
// the writes a user can see, so a tensor an op returns new is at version 0. The generated op
// layer (autograd_ops.cpp) therefore rewinds each result that nothing else holds yet: not an
// input returned as is or written in place (the caller holds it), nor a view of one (it shares the
// counter), nor anything saved or cached (it is called before autograd records the result).
void Tensor::rewind_version_if_unshared() const {
  if (impl_ && impl_.use_count() == 1 && impl_->version_counter.use_count() == 1)
    impl_->version_counter->version.store(0);
}
bool Tensor::is_inference() const {
  return checked(impl_).version_counter->inference;
}

namespace {
thread_local bool inference_mode = false;

std::shared_ptr<VersionCounter> new_version_counter() {
  auto counter = std::make_shared<VersionCounter>();
  counter->inference = inference_mode;
  return counter;
}
}  // namespace

bool InferenceMode::is_enabled() {
  return inference_mode;
}
void InferenceMode::set_enabled(bool enabled) {
  inference_mode = enabled;
}

void* Tensor::data_ptr() const {
  const TensorImpl& t = checked(impl_);
  // Note [batched tensors]: only a batching rule may look inside, at the value
  EMBER_CHECK(t.batched == nullptr, Error,
              "vmap: this operation reads a batched tensor's data (item(), "
              "tolist(), numpy(), data-dependent control flow or an op without a batching rule that reads "
              "it directly), which vmap does not support");
  // Note [Python tensors]: a wrapper subclass's tensor has sizes but no memory
  EMBER_CHECK(t.storage->nbytes() > 0 || checked_numel(t.sizes, "data_ptr") == 0, Error,
              "Cannot access data pointer of Tensor that doesn't have storage (a wrapper subclass's tensor: "
              "its __torch_dispatch__ decides what each op reads)");
  return static_cast<char*>(t.storage->data()) + t.storage_offset * itemsize(t.dtype);
}

// Contiguous in PyTorch's sense: size-1 dims may have any stride.
bool Tensor::is_contiguous() const {
  const TensorImpl& t = checked(impl_);
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(t.sizes.size()) - 1; d >= 0; --d) {
    if (t.sizes[d] == 0) return true;
    if (t.sizes[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

// Note [memory formats]: a 4-d tensor is channels-last contiguous when its strides are those of
// an (N, H, W, C) row-major array (5-d: (N, D, H, W, C)), size-1 dims taking any stride, as
// PyTorch checks it. Ops that read through strides accept any layout; the convolution, pooling
// and batch-norm ops return their result in the layout their input suggests
// (suggest_memory_format), so a channels-last model stays channels last from layer to layer.
bool Tensor::is_contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::Contiguous) return is_contiguous();
  const TensorImpl& t = checked(impl_);
  const size_t rank = format == MemoryFormat::ChannelsLast ? 4 : 5;
  if (t.sizes.size() != rank) return false;
  static constexpr size_t kOrder4[] = {1, 3, 2, 0}, kOrder5[] = {1, 4, 3, 2, 0};  // fastest dim first
  const size_t* order = rank == 4 ? kOrder4 : kOrder5;
  int64_t expected = 1;
  for (size_t i = 0; i < rank; ++i) {
    const size_t d = order[i];
    if (t.sizes[d] == 0) return true;
    if (t.sizes[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

Tensor Tensor::contiguous(MemoryFormat format) const {
  if (is_contiguous(format)) return *this;
  Tensor out = empty(sizes(), dtype(), device(), format);
  out.impl()->quantizer = impl_->quantizer;
  copy_same_shape(out, *this);
  return out;
}

IntList channels_last_strides(const IntList& sizes) {
  EMBER_CHECK(sizes.size() == 4 || sizes.size() == 5, ValueError,
              "[channels_last] expected a 4-d or 5-d shape, but got ", sizes.size(), " dims");
  IntList strides(sizes.size());
  int64_t s = 1;
  strides[1] = s;
  s *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = sizes.size() - 1; d >= 2; --d) {
    strides[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  strides[0] = s;
  return strides;
}

MemoryFormat suggest_memory_format(const Tensor& t) {
  if (t.dim() == 4 && t.is_contiguous(MemoryFormat::ChannelsLast) && !t.is_contiguous())
    return MemoryFormat::ChannelsLast;
  if (t.dim() == 5 && t.is_contiguous(MemoryFormat::ChannelsLast3d) && !t.is_contiguous())
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), dtype(), device());
  out.impl()->quantizer = impl_->quantizer;
  copy_same_shape(out, *this);
  return out;
}

// Note [checked sizes]: every size product that decides an allocation or a bounds check goes
// through checked_numel / checked byte arithmetic, so a huge shape raises instead of wrapping.
int64_t checked_numel(const IntList& sizes, const char* op) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, ValueError, "[", op, "] expected non-negative sizes, but got ", s);
    EMBER_CHECK(!__builtin_mul_overflow(n, s, &n), ValueError, "[", op,
                "] expected the number of elements to fit in int64, but the sizes overflow");
  }
  return n;
}

IntList contiguous_strides(const IntList& sizes) {
  IntList strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d] > 1 ? sizes[d] : 1;
  }
  return strides;
}

Tensor empty(const IntList& sizes, DType dtype, Device device) {
  const int64_t n = checked_numel(sizes, "empty");
  int64_t nbytes;
  EMBER_CHECK(!__builtin_mul_overflow(n, itemsize(dtype), &nbytes), ValueError,
              "[empty] expected the tensor's byte size to fit in int64, but ", n, " elements of ",
              dtype_name(dtype), " overflow");
  nbytes = storage_nbytes(dtype, n);  // packed for the sub-byte dtypes
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(nbytes), device);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->version_counter = new_version_counter();
  return Tensor(std::move(impl));
}

Tensor empty(const IntList& sizes, DType dtype, Device device, MemoryFormat format) {
  Tensor t = empty(sizes, dtype, device);
  if (format == MemoryFormat::Contiguous) return t;
  const size_t rank = format == MemoryFormat::ChannelsLast ? 4 : 5;
  EMBER_CHECK(sizes.size() == rank, Error, "required rank ", rank, " tensor to use ",
              rank == 4 ? "channels_last" : "channels_last_3d", " format");
  t.impl()->strides = channels_last_strides(sizes);
  return t;
}

Tensor empty_like(const Tensor& other) {
  return empty(other.sizes(), other.dtype(), other.device());
}

namespace {
// Checks that every element a (sizes, strides, offset) view can address lies in the storage.
void check_view_in_bounds(const IntList& sizes, const IntList& strides, int64_t offset, DType dtype,
                          size_t storage_nbytes, const char* op) {
  EMBER_CHECK(sizes.size() == strides.size(), ValueError, "[", op,
              "] expected as many strides as sizes, but got ", strides.size(), " strides for ", sizes.size(),
              " sizes");
  EMBER_CHECK(offset >= 0, ValueError, "[", op, "] expected a non-negative storage offset, but got ", offset);
  const int64_t n = checked_numel(sizes, op);
  if (n == 0) return;
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    EMBER_CHECK(strides[d] >= 0, Error, "[", op,
                "] expected non-negative strides (negative strides are not supported), but got ", strides[d]);
    int64_t reach;
    EMBER_CHECK(!__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) &&
                    !__builtin_add_overflow(last, reach, &last),
                ValueError, "[", op, "] expected the view's extent to fit in int64, but it overflows");
  }
  int64_t needed;
  EMBER_CHECK(!__builtin_mul_overflow(last + 1, itemsize(dtype), &needed) &&
                  (needed = ::ember::storage_nbytes(dtype, last + 1)) >= 0 &&
                  static_cast<uint64_t>(needed) <= storage_nbytes,
              Error, "[", op, "] expected the view to fit in its storage of ", storage_nbytes,
              " bytes, but it needs ", (last + 1), " elements of ", itemsize(dtype), " bytes");
}
}  // namespace

Tensor as_strided(const Tensor& base, const IntList& sizes, const IntList& strides, int64_t storage_offset) {
  check_view_in_bounds(sizes, strides, storage_offset, base.dtype(), base.storage()->nbytes(), "as_strided");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = sizes;
  impl->strides = strides;
  impl->storage_offset = storage_offset;
  impl->dtype = base.dtype();
  impl->version_counter = base.impl()->version_counter;
  if (base.impl()->quantizer) impl->quantizer = view_quantizer(base, *impl, "as_strided");
  return Tensor(std::move(impl));
}

Tensor from_blob(void* data, const IntList& sizes, const IntList& strides, DType dtype, Device device,
                 size_t storage_nbytes, std::function<void(void*)> release) {
  auto storage = std::make_shared<Storage>(data, storage_nbytes, device, std::move(release));
  check_view_in_bounds(sizes, strides, 0, dtype, storage_nbytes, "from_blob");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = dtype;
  impl->version_counter = new_version_counter();
  return Tensor(std::move(impl));
}

}  // namespace ember
