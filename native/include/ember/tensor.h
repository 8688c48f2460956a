#pragma once
// Tensor: a handle to a refcounted TensorImpl, which views a refcounted Storage.
//
//   Tensor ──> TensorImpl {sizes, strides, storage_offset, dtype, version counter}
//                   │ (views of one buffer share the Storage and the version counter)
//                   v
//              Storage {data, nbytes, device, deleter}
//
// Strides and offsets are in elements, as in PyTorch.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "ember/allocator.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/export.h"

namespace ember {

using IntList = std::vector<int64_t>;

// How a dense tensor's elements are ordered in memory (torch.memory_format): row-major, or with
// the channels varying fastest (NHWC / NDHWC) as vision models on CPU prefer. The values are the
// codes the Python layer passes (ember.contiguous_format / channels_last / channels_last_3d).
enum class MemoryFormat : int64_t { Contiguous = 0, ChannelsLast = 1, ChannelsLast3d = 2 };

class EMBER_API Storage {
 public:
  Storage(size_t nbytes, Device device);  // allocates from the device's allocator
  // Wraps memory owned elsewhere (a NumPy array, a DLPack capsule); `release` frees it.
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> release);
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_.get(); }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // Memory that must not be written (a read-only NumPy array): Note [read-only storage].
  bool read_only() const { return read_only_; }
  void set_read_only(bool v) { read_only_ = v; }
  // Memory other processes map too (Tensor.share_memory_, ember.multiprocessing).
  bool shared() const { return shared_; }
  void set_shared(bool v) { shared_ = v; }
  // Exchanges the buffers (and their flags) of two storages of one size and device, so every
  // tensor over either follows: share_memory_ moves a storage into shared memory in place.
  void swap_memory(Storage& other);

 private:
  DataPtr data_;
  size_t nbytes_;
  Device device_;
  bool read_only_ = false;
  bool shared_ = false;
};

// Shared by a tensor and all its views; bumped by every in-place write (autograd checks it).
// `inference`: the memory was allocated in inference mode (Tensor::is_inference).
struct VersionCounter {
  std::atomic<uint32_t> version{0};
  bool inference = false;
};

// Thread-local inference mode (ember.inference_mode): tensors allocated while it is on are
// inference tensors, which cannot be written in place, saved for backward or made to require
// grad once it is off. (The Python context manager also switches grad mode off.)
struct EMBER_API InferenceMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

struct AutogradMeta;  // ember/autograd.h
struct BatchedInfo;   // ember/vmap.h
struct Quantizer;     // ember/quantizer.h

struct EMBER_API TensorImpl {
  std::shared_ptr<Storage> storage;
  IntList sizes;
  IntList strides;
  int64_t storage_offset = 0;
  DType dtype = DType::Float32;
  std::shared_ptr<VersionCounter> version_counter;
  bool requires_grad = false;
  std::shared_ptr<AutogradMeta> autograd_meta;  // grad, grad_fn, ...: set once autograd touches it
  // A Python number wrapped as a 0-dim tensor for an op call; it ranks lowest in type
  // promotion (Note [type promotion]).
  bool is_wrapped_number = false;
  // Inside vmap: this tensor is the logical view of a batched value (Note [batched tensors]).
  std::shared_ptr<BatchedInfo> batched;
  // A tensor of a Python subclass that defines __torch_dispatch__ (Note [Python tensors] in
  // ember/dispatch_mode.h): its ops go to Python below autograd. Opaque here: the bindings keep the
  // subclass and its instance attributes in it.
  std::shared_ptr<void> python_state;
  // A quantized dtype's parameters (Note [quantized tensors] in ember/quantizer.h); shared by views.
  std::shared_ptr<const Quantizer> quantizer;
};

class EMBER_API Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const IntList& sizes() const;
  const IntList& strides() const;
  int64_t size(int64_t dim) const;  // negative dims count from the end; IndexError if out of range
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(sizes().size()); }
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  int64_t storage_offset() const;
  int64_t element_size() const { return itemsize(dtype()); }
  int64_t nbytes() const { return storage_nbytes(dtype(), numel()); }  // packed for quint4x2, quint2x4
  bool is_contiguous() const;
  bool is_contiguous(MemoryFormat format) const;
  void* data_ptr() const;  // address of element 0 (storage data + offset)
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }
  const std::shared_ptr<Storage>& storage() const;
  uint32_t version() const;
  // Every in-place write and out= calls this first: raises for an inference tensor outside
  // inference mode and for read-only memory (Note [read-only storage]).
  void bump_version() const;
  // Version 0 again when nothing but this Tensor holds its impl and version counter: the writes an
  // op made into a result it built are not counted (Note [fresh versions]).
  void rewind_version_if_unshared() const;
  bool is_inference() const;
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  Tensor contiguous() const;  // self if already contiguous, else a contiguous copy
  Tensor clone() const;       // always a fresh contiguous copy
  // self if already contiguous in `format`, else a copy laid out in it (Note [memory formats])
  Tensor contiguous(MemoryFormat format) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Size arithmetic that throws instead of overflowing (Note [checked sizes] in tensor.cpp).
EMBER_API int64_t checked_numel(const IntList& sizes, const char* op);
EMBER_API IntList contiguous_strides(const IntList& sizes);

EMBER_API Tensor empty(const IntList& sizes, DType dtype = DType::Float32, Device device = {});
EMBER_API Tensor empty(const IntList& sizes, DType dtype, Device device, MemoryFormat format);
// Channels-last strides of a 4-d (N, C, H, W) or 5-d (N, C, D, H, W) shape: C varies fastest.
EMBER_API IntList channels_last_strides(const IntList& sizes);
// The layout an op's result should take after its input (PyTorch's suggest_memory_format): a
// 4-d/5-d tensor that is channels-last contiguous and not row-major contiguous suggests channels last.
EMBER_API MemoryFormat suggest_memory_format(const Tensor& t);
// A view of `base`'s storage; ValueError/IndexError if the view would reach outside it.
EMBER_API Tensor as_strided(const Tensor& base, const IntList& sizes, const IntList& strides,
                            int64_t storage_offset);
// Wraps external memory as a tensor without copying (from_numpy, from_dlpack).
EMBER_API Tensor from_blob(void* data, const IntList& sizes, const IntList& strides, DType dtype,
                           Device device, size_t storage_nbytes, std::function<void(void*)> release);
// dst[...] = src[...] elementwise with dtype conversion; shapes must match exactly.
EMBER_API void copy_same_shape(const Tensor& dst, const Tensor& src);

}  // namespace ember
