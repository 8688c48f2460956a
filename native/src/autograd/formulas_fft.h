#pragma once
// Derivative helpers (see formulas.h) for the Fourier transforms, as PyTorch's
// fft_r2c_backward / fft_c2r_backward. The transforms are linear; with the conjugate Wirtinger
// convention the gradient of y = s F x is s F^H grad, the opposite direction with the same scale.
#include <string>

#include "autograd/formulas.h"

namespace ember::autograd {

// r2c keeps bins [0, n/2] of the last dim when onesided: its adjoint puts the gradient back in
// those bins (zeros elsewhere), then takes the backward transform's real part (x is real).
Tensor fft_r2c_backward(const Tensor& grad, const IntList& dim, int64_t normalization, bool onesided,
                        const IntList& self_sizes);

// c2r reads bins 1 .. n - n/2 - 1 twice (once as themselves, once as the conjugates standing in
// for the bins above n/2), so their gradient doubles; bin 0 and, for even n, bin n/2 count once.
Tensor fft_c2r_backward(const Tensor& grad, const IntList& dim, int64_t normalization);

// ---- stft / istft (Note [stft frames] in src/ops/fft/stft.cpp) --------------------------------
// Both are linear in the signal and differentiable in the window; their gradients are written
// with the recording ops, so they can be differentiated again.

Tensor stft_backward_self(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                          int64_t win_length, const Tensor& window, bool center, const std::string& pad_mode,
                          bool normalized, bool onesided);

Tensor stft_backward_window(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                            int64_t win_length, const Tensor& window, bool center,
                            const std::string& pad_mode, bool normalized, bool onesided);

// stft's tangent: linear in the signal and in the window separately.
Tensor stft_jvp(const Tensor& self_t, const Tensor& window_t, const Tensor& self,
                const std::optional<Tensor>& window, int64_t n_fft, int64_t hop, int64_t win_length,
                bool center, const std::string& pad_mode, bool normalized, bool onesided);

Tensor istft_backward_self(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                           int64_t win_length, const Tensor& window, bool center, bool normalized,
                           bool onesided, std::optional<int64_t> length, bool return_complex);

Tensor istft_backward_window(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                             int64_t win_length, const Tensor& window, bool center, bool normalized,
                             bool onesided, std::optional<int64_t> length, bool return_complex);

// istft's tangent: the op on the input's tangent, plus the window's part
// (OLA(dw z) - y OLA(2 w dw)) / envelope over the kept samples.
Tensor istft_jvp(const Tensor& self_t, const Tensor& window_t, const Tensor& self,
                 const std::optional<Tensor>& window, int64_t n_fft, int64_t hop, int64_t win_length,
                 bool center, bool normalized, bool onesided, std::optional<int64_t> length,
                 bool return_complex);

}  // namespace ember::autograd
