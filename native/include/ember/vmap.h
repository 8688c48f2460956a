#pragma once
// vmap: batched tensors and vmap levels (the Python transform is ember.func.vmap).
//
// Note [batched tensors]: inside vmap a tensor with a batch dimension is a *batched tensor*: a
// Tensor whose TensorImpl carries BatchedInfo {value, bdim, level}. Its sizes are the logical
// ones (value's sizes without bdim); its data must never be read directly (data_ptr raises), so
// no kernel can silently compute on it. Every op's generated wrapper checks for batched inputs
// below the autograd layer and runs the op's batching rule (declared in native/ops/
// declarations.py) on the values, or, for an op without one, a loop over the batch. Autograd and
// forward mode therefore record and differentiate the logical op, and their formulas run on
// batched tensors too: that is what makes vmap(grad(f)) and batched gradients work. `level`
// tells nested vmaps apart: an op unwraps only the innermost level among its inputs, and the
// values it then computes on may be batched tensors of outer levels.
#include <cstdint>
#include <string>
#include <vector>

#include "ember/export.h"
#include "ember/tensor.h"

namespace ember {

struct BatchedInfo {
  Tensor value;  // the physical tensor (itself batched when levels nest)
  int64_t bdim = 0;
  int64_t level = 0;
};

namespace vmap {

enum class Randomness : uint8_t { Error, Different, Same };

// Levels (thread-local, as vmap calls nest on one thread). enter returns the new level.
EMBER_API int64_t enter_level(int64_t batch_size, Randomness randomness);
EMBER_API void exit_level(int64_t level);
EMBER_API int64_t current_level();               // the innermost; 0 outside vmap
EMBER_API std::vector<int64_t> active_levels();  // outermost first
EMBER_API int64_t batch_size_of(int64_t level);
EMBER_API Randomness randomness_of(int64_t level);

EMBER_API bool is_batched(const Tensor& t);
EMBER_API const BatchedInfo* batched_info(const Tensor& t);  // nullptr when not batched

// The logical tensor seen inside vmap: `physical` with dimension `bdim` as the batch of `level`.
// Differentiable in both modes (backward and the tangent go through remove_batch_dim).
EMBER_API Tensor add_batch_dim(const Tensor& physical, int64_t bdim, int64_t level);
// The inverse at vmap's exit: the batch of `level` becomes dimension `out_dim` (an input not
// batched at `level` is expanded to `batch_size` there). Differentiable in both modes.
EMBER_API Tensor remove_batch_dim(const Tensor& logical, int64_t level, int64_t batch_size, int64_t out_dim);

// Note [gradients across vmap levels]: a tensor used by a vmapped function but not batched by it
// (a weight f closes over) gets a gradient batched at that vmap's level from backward. While
// that vmap is active the batch is kept (backward inside vmap is per example: per-sample
// gradients); once it has exited the function was the whole batch, so the engine sums the batch.
EMBER_API std::vector<int64_t> levels_of(const Tensor& t);  // innermost first
EMBER_API Tensor sum_exited_levels(const Tensor& grad, const std::vector<int64_t>& keep);

// Ops that ran as a loop since the last call, each reported once per process (Python turns
// them into a performance warning).
EMBER_API std::vector<std::string> take_new_fallbacks();

}  // namespace vmap
}  // namespace ember
