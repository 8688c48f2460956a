#pragma once
// Derivative helpers (see formulas.h) for the matrix products. For C = A B the conjugate
// Wirtinger gradients are dA = dC B^H and dB = A^H dC; tangents follow the product rule.
#include <optional>

#include "autograd/formulas.h"

namespace ember::autograd {

// The conjugate transpose of the last two dims.
inline Tensor mH(const Tensor& t) {
  return autograd::conj(autograd::transpose(t, -2, -1));
}

// The tangent of a product linear in each factor: product(a_t, b) + product(a, b_t), over the
// factors that have a tangent.
template <class Product>
Tensor product_tangent(const Tensor& a, const Tensor& a_t, const Tensor& b, const Tensor& b_t,
                       Product product) {
  return add_tangents(a_t.defined() ? product(a_t, b) : Tensor(), b_t.defined() ? product(a, b_t) : Tensor());
}

// matmul's gradient for `self` (for_self) or `other`: 1-D operands take part as the row / column
// matmul made of them, and the engine sums broadcast batch dims back to the operand's shape.
inline Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self) {
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
  const Tensor r = autograd::matmul(mH(a), g);
  return other_vec ? autograd::squeeze(r, IntList{-1}) : r;
}

inline Tensor matmul_tangent(const Tensor& self, const Tensor& self_t, const Tensor& other,
                             const Tensor& other_t) {
  return product_tangent(self, self_t, other, other_t,
                         [](const Tensor& a, const Tensor& b) { return autograd::matmul(a, b); });
}

// addbmm sums the batch of products: each batch element's product gets the whole gradient.
inline Tensor addbmm_grad_per_batch(const Tensor& grad, const Tensor& batch1) {
  return autograd::expand(autograd::unsqueeze(grad, 0), IntList{batch1.size(0), grad.size(0), grad.size(1)});
}

}  // namespace ember::autograd
