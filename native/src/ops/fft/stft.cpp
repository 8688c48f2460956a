// The short-time Fourier transform and its inverse (torch.stft / torch.istft behind ember.stft,
// ember.istft; the Python wrappers resolve the defaults). Real signals with real windows run the
// fused kernels of backend/cpu/fft_kernels.cpp; complex signals or windows run the same framing
// composed of ops. Derivatives: stft_backward_* and istft_* in autograd/formulas_fft.h.
//
// Note [stft frames]: with pad = n_fft / 2 when centering (else 0), frame f of a signal x of
// length L holds the window times the padded signal at positions f * hop .. f * hop + n_fft - 1,
// padded position t reading x[t - pad] when that is inside x and otherwise what pad_mode says
// (reflect: x[|t'|] mirrored at both ends without repeating the end sample; replicate: the end
// sample; circular: x[t' mod L]; constant: 0). There are 1 + (L + 2 pad - n_fft) / hop frames.
// A window shorter than n_fft (win_length) is zero-padded to n_fft on both sides, the extra zero
// on the right. The output is [B?, bins, frames] (bins = n_fft / 2 + 1 onesided, else n_fft), a
// transposed view of frame-major storage, as PyTorch returns it. istft overlap-adds the windowed inverse
// transforms of the frames and divides by the overlap-added squared window (the envelope), which must stay
// above 1e-11 across the output (the NOLA condition), as PyTorch requires.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<StftFn> stft_stub("stft");
DispatchStub<IstftFn> istft_stub("istft");

namespace {

DType real_of(DType d) {
  return d == DType::Complex128 || d == DType::Float64 ? DType::Float64 : DType::Float32;
}
DType complex_of(DType d) {
  return d == DType::Float64 || d == DType::Complex128 ? DType::Complex128 : DType::Complex64;
}

StftPad pad_mode_of(const std::string& mode) {
  if (mode == "reflect") return StftPad::Reflect;
  if (mode == "constant") return StftPad::Constant;
  if (mode == "replicate") return StftPad::Replicate;
  if (mode == "circular") return StftPad::Circular;
  throw ValueError("[stft] expected pad_mode 'reflect', 'constant', 'replicate' or 'circular', but got '" +
                   mode + "'");
}

// The window zero-padded centrally to n_fft (a rectangle of ones when absent), contiguous.
Tensor padded_window(const char* op, const std::optional<Tensor>& window, int64_t win_length, int64_t n_fft,
                     DType dtype, Device device) {
  Tensor w;
  if (window && window->defined()) {
    EMBER_CHECK(window->dim() == 1 && window->size(0) == win_length, Error, "[", op,
                "] expected a 1D window tensor of size equal to win_length=", win_length,
                ", but got window with size ", dims::str(window->sizes()));
    w = *window;
  } else {
    w = ones({win_length}, dtype, device);
  }
  const int64_t left = (n_fft - win_length) / 2, right = n_fft - win_length - left;
  if (left == 0 && right == 0) return w.contiguous();
  return cat({zeros({left}, w.dtype(), device), w, zeros({right}, w.dtype(), device)}, 0);
}

// Padded positions [0, L + 2 pad) as indices into x with one zero appended (index L).
Tensor padded_positions(int64_t length, int64_t pad, StftPad mode) {
  Tensor pos = empty({length + 2 * pad}, DType::Int64);
  int64_t* p = pos.data<int64_t>();
  for (int64_t t = 0; t < length + 2 * pad; ++t) {
    int64_t s = t - pad;
    if (s < 0 || s >= length) {
      switch (mode) {
        case StftPad::Reflect: s = s < 0 ? -s : 2 * (length - 1) - s; break;
        case StftPad::Replicate: s = s < 0 ? 0 : length - 1; break;
        case StftPad::Circular: s = ((s % length) + length) % length; break;
        default: s = length;
      }
    }
    p[t] = s;
  }
  return pos;
}

}  // namespace

Tensor _stft(const Tensor& self, int64_t n_fft, int64_t hop_length, int64_t win_length,
             const std::optional<Tensor>& window, bool center, const std::string& pad_mode, bool normalized,
             bool onesided) {
  const char* op = "stft";
  EMBER_CHECK(self.dim() == 1 || self.dim() == 2, Error, "[stft] expected a 1D or 2D tensor, but got ",
              self.dim(), "D tensor");
  const DType dt = self.dtype();
  EMBER_CHECK(
      dt == DType::Float32 || dt == DType::Float64 || dt == DType::Complex64 || dt == DType::Complex128,
      TypeError, "[stft] expected a float32, float64, complex64 or complex128 input, but got ",
      dtype_name(dt));
  const bool window_complex = window && window->defined() && is_complex(window->dtype());
  EMBER_CHECK(!(onesided && (is_complex(dt) || window_complex)), Error,
              "[stft] Cannot have onesided output if window or input is complex");
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[stft] not implemented for ",
              self.device().str());
  const Tensor x = self.dim() == 1 ? unsqueeze(self, 0) : self;
  const int64_t batch = x.size(0), length = x.size(1);
  const StftPad mode = pad_mode_of(pad_mode);
  const int64_t pad = center ? n_fft / 2 : 0;
  if (pad > 0) {
    EMBER_CHECK(mode != StftPad::Reflect || pad < length, Error, "[stft] expected the reflect padding ", pad,
                " (n_fft / 2) to be less than the signal length, but got length ", length);
    EMBER_CHECK(mode != StftPad::Circular || pad <= length, Error, "[stft] expected the circular padding ",
                pad, " (n_fft / 2) to be at most the signal length, but got length ", length);
    EMBER_CHECK(mode != StftPad::Replicate || length > 0, Error,
                "[stft] expected a non-empty signal to replicate-pad, but got length 0");
  }
  const int64_t padded = length + 2 * pad;
  EMBER_CHECK(n_fft > 0 && n_fft <= padded, Error, "[stft] expected 0 < n_fft <= ", padded,
              ", but got n_fft=", n_fft);
  EMBER_CHECK(hop_length > 0, Error, "[stft] expected hop_length > 0, but got hop_length=", hop_length);
  EMBER_CHECK(win_length > 0 && win_length <= n_fft, Error,
              "[stft] expected 0 < win_length <= n_fft, but got win_length=", win_length);
  const int64_t frames = 1 + (padded - n_fft) / hop_length;
  const int64_t bins = onesided ? n_fft / 2 + 1 : n_fft;
  const DType rdt = real_of(dt);
  Tensor w = padded_window(op, window, win_length, n_fft, rdt, self.device());
  if (!window_complex && w.dtype() != rdt) w = to_dtype(w, rdt, false);  // a float64 window for float32 input
  if (!is_complex(dt) && !window_complex) {
    if (normalized) w = mul(w, wrapped_number(Scalar(1.0 / std::sqrt(static_cast<double>(n_fft)))));
    Tensor out = empty({batch, frames, bins}, complex_of(dt), self.device());
    stft_stub.get(self.device().type)(out, x.contiguous(), w.contiguous(), hop_length, pad, mode);
    out = transpose(out, 1, 2);
    return self.dim() == 1 ? squeeze(out, IntList{0}) : out;
  }
  // complex signal or window: the same frames, composed of ops
  const Tensor ext = cat({x, zeros({batch, 1}, dt, self.device())}, 1);
  const Tensor signal = index_select(ext, 1, padded_positions(length, pad, mode));
  Tensor frames_t = mul(unfold(signal, 1, n_fft, hop_length), w, std::nullopt);
  if (!is_complex(frames_t.dtype())) frames_t = to_dtype(frames_t, complex_of(frames_t.dtype()), false);
  Tensor out = transpose(fft_c2c(frames_t, {2}, normalized ? 1 : 0, true), 1, 2);
  return self.dim() == 1 ? squeeze(out, IntList{0}) : out;
}

Tensor _istft(const Tensor& self, int64_t n_fft, int64_t hop_length, int64_t win_length,
              const std::optional<Tensor>& window, bool center, bool normalized, bool onesided,
              std::optional<int64_t> length, bool return_complex) {
  const char* op = "istft";
  EMBER_CHECK(is_complex(self.dtype()), Error,
              "[istft] requires a complex-valued input tensor matching the output from stft with "
              "return_complex=True.");
  EMBER_CHECK(self.dim() == 2 || self.dim() == 3, Error,
              "[istft] expected a tensor with 2 or 3 dimensions of complex values, but got ", self.dim(),
              "D tensor");
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[istft] not implemented for ",
              self.device().str());
  const Tensor x = self.dim() == 2 ? unsqueeze(self, 0) : self;
  const int64_t batch = x.size(0), bins = x.size(1), frames = x.size(2);
  EMBER_CHECK(n_fft > 0, Error, "[istft] expected n_fft > 0, but got ", n_fft);
  if (onesided) {
    EMBER_CHECK(
        n_fft / 2 + 1 == bins, Error,
        "[istft] expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 "
        "+ 1 when onesided=True, but got ",
        bins);
  } else {
    EMBER_CHECK(
        n_fft == bins, Error,
        "[istft] expected the frequency dimension (3rd to the last) of the input tensor to match n_fft "
        "when onesided=False, but got ",
        bins);
  }
  EMBER_CHECK(win_length > 0 && win_length <= n_fft, Error,
              "[istft] expected 0 < win_length <= n_fft, but got win_length=", win_length);
  EMBER_CHECK(hop_length > 0 && hop_length <= win_length, Error,
              "[istft] expected 0 < hop_length <= win_length, but got hop_length=", hop_length);
  EMBER_CHECK(frames > 0, Error, "[istft] expected at least one frame, but got none");
  const bool window_complex = window && window->defined() && is_complex(window->dtype());
  EMBER_CHECK(!(return_complex && onesided), Error,
              "[istft] cannot have onesided output if window or input is complex");
  EMBER_CHECK(return_complex || !window_complex, Error,
              "[istft] Complex windows are incompatible with return_complex=False");
  const DType rdt = real_of(self.dtype());
  Tensor w = padded_window(op, window, win_length, n_fft, rdt, self.device());
  if (!window_complex && w.dtype() != rdt) w = to_dtype(w, rdt, false);
  const int64_t total = n_fft + hop_length * (frames - 1);
  const int64_t start = center ? n_fft / 2 : 0;
  const int64_t end = length ? start + *length : (center ? total - n_fft / 2 : total);
  EMBER_CHECK(!length || *length >= 0, ValueError, "[istft] expected length >= 0, but got ", *length);
  const int64_t stop = std::min(std::max(end, start), total), avail = std::max<int64_t>(stop - start, 0);
  // the envelope over the kept samples (in double; its minimum decides NOLA)
  const Tensor wd =
      to_dtype(w, is_complex(w.dtype()) ? DType::Complex128 : DType::Float64, false).contiguous();
  Tensor envelope;
  if (!is_complex(wd.dtype())) {
    const double* wp = wd.data<double>();
    Tensor inv = empty({avail}, rdt);
    double lowest = INFINITY;
    std::vector<double> env(static_cast<size_t>(avail), 0.0);
    for (int64_t t = 0; t < avail; ++t) {
      const int64_t p = t + start;
      const int64_t f_hi = std::min(frames - 1, p / hop_length),
                    f_lo = p >= n_fft ? (p - n_fft) / hop_length + 1 : 0;
      for (int64_t f = f_lo; f <= f_hi; ++f) env[t] += wp[p - f * hop_length] * wp[p - f * hop_length];
      lowest = std::min(lowest, std::fabs(env[t]));
    }
    EMBER_CHECK(avail == 0 || lowest >= 1e-11, Error, "[istft] window overlap add min: ", lowest,
                ", NOLA check failed (the squared window must overlap-add to a nonzero value at every output "
                "sample)");
    for (int64_t t = 0; t < avail; ++t) {
      if (rdt == DType::Float32) {
        inv.data<float>()[t] = static_cast<float>(1.0 / env[t]);
      } else {
        inv.data<double>()[t] = 1.0 / env[t];
      }
    }
    envelope = inv;
  }
  const int64_t out_len = std::max<int64_t>(end - start, 0);
  Tensor y;
  if (!return_complex) {
    const double s =
        normalized ? 1.0 / std::sqrt(static_cast<double>(n_fft)) : 1.0 / static_cast<double>(n_fft);
    const Tensor scaled = mul(w, wrapped_number(Scalar(s))).contiguous();
    y = zeros({batch, out_len}, rdt, self.device());
    if (avail > 0) {
      Tensor part = avail == out_len ? y : empty({batch, avail}, rdt, self.device());
      istft_stub.get(self.device().type)(part, x, scaled, envelope, hop_length, start);
      if (!part.is_same(y)) copy_(narrow(y, 1, 0, avail), part);
    }
  } else {
    // a complex output: the frames' inverse transforms, windowed and overlap-added, by ops
    const Tensor z = mul(fft_c2c(transpose(x, 1, 2), {2}, normalized ? 1 : 2, false), w, std::nullopt);
    const Tensor index = reshape(
        add(unsqueeze(arange(Scalar(int64_t(0)), Scalar(frames * hop_length), Scalar(hop_length),
                             DType::Int64, std::nullopt),
                      1),
            unsqueeze(
                arange(Scalar(int64_t(0)), Scalar(n_fft), Scalar(int64_t(1)), DType::Int64, std::nullopt), 0),
            Scalar(int64_t(1)), std::nullopt),
        {-1});
    Tensor sum = index_add(zeros({batch, total}, z.dtype(), self.device()), 1, index,
                           reshape(z, {batch, frames * n_fft}), Scalar(int64_t(1)));
    const Tensor squares = reshape(expand(unsqueeze(mul(w, w, std::nullopt), 0), {frames, n_fft}), {-1});
    Tensor env =
        index_add(zeros({total}, squares.dtype(), self.device()), 0, index, squares, Scalar(int64_t(1)));
    env = narrow(env, 0, start, avail);
    if (avail > 0) {
      const double lowest = to_dtype(amin(abs(env, std::nullopt), IntList{}, false), DType::Float64, false)
                                .contiguous()
                                .data<double>()[0];
      EMBER_CHECK(
          lowest >= 1e-11, Error, "[istft] window overlap add min: ", lowest,
          ", NOLA check failed (the squared window must overlap-add to a nonzero value at every output "
          "sample)");
    }
    y = div(narrow(sum, 1, start, avail), env, std::nullopt, std::nullopt);
    if (out_len > avail) y = cat({y, zeros({batch, out_len - avail}, y.dtype(), self.device())}, 1);
  }
  return self.dim() == 2 ? squeeze(y, IntList{0}) : y;
}

}  // namespace ember
