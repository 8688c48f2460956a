#pragma once
// Autocast (PyTorch's automatic mixed precision on CPU): a thread-local state and the casts the
// generated op entry points apply to ops that declare a policy (declarations.py, `autocast=`).
//
// Note [autocast]: ember::autograd::<op> of an op with a policy checks active() first. When on,
// it casts its floating CPU tensor arguments with the differentiable to_dtype (so gradients
// flow back to the original dtype) and calls itself again under an ExcludeGuard: the op then
// runs as usual (autograd, kernels), and ops called inside it - composites, kernels, the casts
// themselves - are not cast a second time. Policies, as PyTorch's CPU lists:
//   LowerPrecisionFp  float32/float16/bfloat16 inputs -> the autocast dtype (bfloat16 default)
//   Fp32              float16/bfloat16/float32 inputs -> float32
//   Promote           all such inputs -> the widest of them and the autocast dtype
// float64 and non-floating inputs are never cast; an op called with out= is not cast. A cast of
// a float32 leaf that requires grad to the autocast dtype, made with grad mode on, is cached until
// the outermost autocast region exits (clear_cache), so a weight used by many ops is cast once per
// region. The registry (ember.ops.aten.*) routes a built-in op to this entry point under autocast.
#include <optional>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/export.h"
#include "ember/tensor.h"

namespace ember::autocast {

enum class Policy : uint8_t { LowerPrecisionFp, Fp32, Promote };

// Per-thread state of each device type (CPU and CUDA; others raise ValueError).
EMBER_API bool is_enabled(DeviceType device);
EMBER_API void set_enabled(DeviceType device, bool enabled);
EMBER_API DType get_dtype(DeviceType device);
EMBER_API void set_dtype(DeviceType device, DType dtype);
EMBER_API int64_t increment_nesting();  // returns the new depth
EMBER_API int64_t decrement_nesting();  // returns the new depth
EMBER_API bool is_cache_enabled();
EMBER_API void set_cache_enabled(bool enabled);
EMBER_API void clear_cache();
EMBER_API size_t cache_size();

// CPU autocast is on and this thread is not inside an op autocast already handles.
EMBER_API bool active();
EMBER_API bool set_excluded(bool excluded);  // returns the previous value
struct EMBER_API ExcludeGuard {
  ExcludeGuard() : previous_(set_excluded(true)) {}
  ~ExcludeGuard() { set_excluded(previous_); }
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;

 private:
  bool previous_;
};

// The cache's storage (keyed by the source's impl; an entry whose source died is a miss).
EMBER_API std::optional<Tensor> cache_find(const Tensor& source);
EMBER_API void cache_insert(const Tensor& source, const Tensor& cast);

// The casts (src/autograd/autocast_casts.cpp: they record autograd history).
EMBER_API DType target_dtype(Policy policy);  // LowerPrecisionFp or Fp32
EMBER_API DType promote_dtype(std::initializer_list<const Tensor*> tensors,
                              std::initializer_list<const std::vector<Tensor>*> lists);
EMBER_API Tensor cast(const Tensor& t, DType to);
EMBER_API std::optional<Tensor> cast(const std::optional<Tensor>& t, DType to);
EMBER_API std::vector<Tensor> cast(const std::vector<Tensor>& ts, DType to);

}  // namespace ember::autocast
