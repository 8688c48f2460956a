#pragma once
// Derivative helpers (see formulas.h) for the Fourier transforms, as PyTorch's
// fft_r2c_backward / fft_c2r_backward. The transforms are linear; with the conjugate Wirtinger
// convention the gradient of y = s F x is s F^H grad, the opposite direction with the same scale.
#include "autograd/formulas.h"

namespace ember::autograd {

// r2c keeps bins [0, n/2] of the last dim when onesided: its adjoint puts the gradient back in
// those bins (zeros elsewhere), then takes the backward transform's real part (x is real).
inline Tensor fft_r2c_backward(const Tensor& grad, const IntList& dim, int64_t normalization, bool onesided,
                               const IntList& self_sizes) {
  Tensor g = grad;
  if (onesided) {
    const int64_t last = wrap_dim(dim.back(), static_cast<int64_t>(self_sizes.size()));
    const int64_t n = self_sizes[last], kept = g.sizes()[last];
    if (n > kept) {
      IntList pad_sizes = g.sizes();
      pad_sizes[last] = n - kept;
      g = autograd::cat({g, autograd::zeros(pad_sizes, g.dtype(), g.device())}, last);
    }
  }
  return autograd::real(autograd::fft_c2c(g, dim, normalization, false));
}

// c2r reads bins 1 .. n - n/2 - 1 twice (once as themselves, once as the conjugates standing in
// for the bins above n/2), so their gradient doubles; bin 0 and, for even n, bin n/2 count once.
inline Tensor fft_c2r_backward(const Tensor& grad, const IntList& dim, int64_t normalization) {
  const Tensor g = autograd::fft_r2c(grad, dim, normalization, true);
  const int64_t nd = static_cast<int64_t>(grad.sizes().size());
  const int64_t last = wrap_dim(dim.back(), nd);
  const int64_t n = grad.sizes()[last], half = g.sizes()[last], twice = n - half;
  if (twice <= 0) return g;
  IntList shape(static_cast<size_t>(nd - last), 1);  // the weights broadcast along `last`
  shape[0] = half;
  const Tensor w =
      autograd::cat({autograd::full({1}, Scalar(1.0), grad.dtype(), grad.device()),
                     autograd::full({twice}, Scalar(2.0), grad.dtype(), grad.device()),
                     autograd::full({half - 1 - twice}, Scalar(1.0), grad.dtype(), grad.device())},
                    0);
  return autograd::mul(g, autograd::reshape(w, shape), std::nullopt);
}

}  // namespace ember::autograd
