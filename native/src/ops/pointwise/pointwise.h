#pragma once
// Shared steps of the pointwise ops (internal).
#include <initializer_list>
#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember::pointwise {

// PyTorch's broadcast of shapes; ValueError-free: RuntimeError naming the op and both sizes.
IntList broadcast_shapes(const char* op, const IntList& a, const IntList& b);
// A view of t expanded (stride 0) to `shape`.
Tensor expand_to(const Tensor& t, const IntList& shape, const char* op);
// t as `dtype` (itself when it already is).
Tensor cast_to(const Tensor& t, DType dtype);
// The output: a new tensor, or `out` checked (and resized if it has no elements) for shape,
// device and castability from `result` (PyTorch's "result type X can't be cast to ..." error).
// A new output is laid out in the memory order of `like` (Note [output layout]).
Tensor make_output(const char* op, const std::optional<Tensor>& out, const IntList& shape, DType result,
                   Device device, std::initializer_list<const Tensor*> like = {});
// A new dense tensor of `shape` whose dims are in the memory order of the tensors `like` (each
// broadcast to `shape`); row-major when they are all contiguous or leave the order open.
Tensor empty_like_layout(const IntList& shape, DType dtype, Device device,
                         std::initializer_list<const Tensor*> like);
// When the kernel computed into a temporary of another dtype, copies it into out.
Tensor finish(const Tensor& computed, const std::optional<Tensor>& out);

}  // namespace ember::pointwise
