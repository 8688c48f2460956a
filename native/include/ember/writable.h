#pragma once
// The read-only check of Tensor::bump_version alone (Note [read-only storage]), for code that
// writes a tensor's memory without bumping its version: batch_norm's running statistics, the
// FBGEMM kernels' in-place outputs, ember.distributed's collectives. And the per-thread hook
// bump_version calls before a write (Note [write hooks]).
#include "ember/export.h"
#include "ember/tensor.h"

namespace ember {

// Error (RuntimeError in Python) if `t` shares the memory of a read-only NumPy array.
EMBER_API void check_writable(const Tensor& t);

// Note [write hooks]: a callback that every in-place write on this thread reaches before it
// writes (Tensor::bump_version), while the thread has one set. ember.autograd.graph's
// allow_mutation_on_saved_tensors uses it to copy a tensor saved for backward before the write
// changes it. The hook is not called again for the writes its own ops make. Threads without a
// hook pay one relaxed atomic load per write.
using WriteHook = void (*)(const Tensor& about_to_be_written);
// Sets this thread's hook (nullptr: none); returns the previous one.
EMBER_API WriteHook set_write_hook(WriteHook hook);

}  // namespace ember
