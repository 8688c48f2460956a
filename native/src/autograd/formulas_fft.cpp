// The bodies of formulas_fft.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas_fft.h"

#include <string>

#include "autograd/formulas_select.h"

namespace ember::autograd {

Tensor fft_r2c_backward(const Tensor& grad, const IntList& dim, int64_t normalization, bool onesided,
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

Tensor fft_c2r_backward(const Tensor& grad, const IntList& dim, int64_t normalization) {
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

// ---- stft / istft (Note [stft frames] in src/ops/fft/stft.cpp) --------------------------------
// Both are linear in the signal and differentiable in the window; their gradients are written
// with the recording ops, so they can be differentiated again.

// The window zero-padded centrally to n_fft (ones when absent).
static Tensor spectral_window(const std::optional<Tensor>& window, int64_t win_length, int64_t n_fft,
                              DType dtype, const Device& device) {
  const Tensor w = window && window->defined() ? *window : ember::ones({win_length}, dtype, device);
  const int64_t left = (n_fft - win_length) / 2, right = n_fft - win_length - left;
  if (left == 0 && right == 0) return w;
  return autograd::cat(
      {autograd::zeros({left}, w.dtype(), device), w, autograd::zeros({right}, w.dtype(), device)}, 0);
}
static Tensor spectral_window(const Tensor& window, int64_t win_length, int64_t n_fft, DType dtype,
                              const Device& device) {
  return spectral_window(window.defined() ? std::optional<Tensor>(window) : std::nullopt, win_length, n_fft,
                         dtype, device);
}

static DType spectral_real(DType d) {
  return d == DType::Complex128 || d == DType::Float64 ? DType::Float64 : DType::Float32;
}

// Padded positions as indices into the signal with one zero appended (index `length`).
static Tensor stft_positions(int64_t length, int64_t pad, const std::string& mode) {
  Tensor pos = ember::empty({length + 2 * pad}, DType::Int64);
  int64_t* p = pos.data<int64_t>();
  for (int64_t t = 0; t < length + 2 * pad; ++t) {
    int64_t s = t - pad;
    if (s < 0 || s >= length) {
      if (mode == "reflect") {
        s = s < 0 ? -s : 2 * (length - 1) - s;
      } else if (mode == "replicate") {
        s = s < 0 ? 0 : length - 1;
      } else if (mode == "circular") {
        s = ((s % length) + length) % length;
      } else {
        s = length;
      }
    }
    p[t] = s;
  }
  return pos;
}

// The unwindowed frames [B, F, n_fft] of signals x [B, L].
static Tensor stft_frames(const Tensor& x, int64_t n_fft, int64_t hop, bool center, const std::string& mode) {
  const int64_t batch = x.sizes()[0], length = x.sizes()[1], pad = center ? n_fft / 2 : 0;
  const Tensor ext = autograd::cat({x, autograd::zeros({batch, 1}, x.dtype(), x.device())}, 1);
  return autograd::unfold(autograd::index_select(ext, 1, stft_positions(length, pad, mode)), 1, n_fft, hop);
}

// The adjoint DFT of stft's gradient, frame by frame: [B, F, n_fft] complex (onesided bins padded
// with zeros: the adjoint of keeping only them).
static Tensor stft_frame_grads(const Tensor& grad, bool batched, int64_t n_fft, bool normalized,
                               bool onesided) {
  Tensor g = autograd::transpose(batched ? grad : autograd::unsqueeze(grad, 0), 1, 2);
  const int64_t bins = g.sizes()[2];
  if (onesided && bins < n_fft)
    g = autograd::cat({g, autograd::zeros({g.sizes()[0], g.sizes()[1], n_fft - bins}, g.dtype(), g.device())},
                      2);
  return autograd::fft_c2c(g, {2}, normalized ? 1 : 0, false);
}

Tensor stft_backward_self(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                          int64_t win_length, const Tensor& window, bool center, const std::string& pad_mode,
                          bool normalized, bool onesided) {
  const bool batched = self.dim() == 2;
  const int64_t batch = batched ? self.sizes()[0] : 1, length = self.sizes().back();
  const int64_t pad = center ? n_fft / 2 : 0;
  const Tensor w = spectral_window(window, win_length, n_fft, spectral_real(self.dtype()), self.device());
  Tensor gf = autograd::mul(stft_frame_grads(grad, batched, n_fft, normalized, onesided), autograd::conj(w),
                            std::nullopt);
  if (!is_complex(self.dtype())) gf = autograd::real(gf);
  const Tensor gsig = unfold_backward(gf, {batch, length + 2 * pad}, 1, n_fft, hop);
  const Tensor gx = autograd::narrow(
      index_select_backward(gsig, {batch, length + 1}, 1, stft_positions(length, pad, pad_mode)), 1, 0,
      length);
  return batched ? gx : autograd::squeeze(gx, IntList{0});
}

Tensor stft_backward_window(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                            int64_t win_length, const Tensor& window, bool center,
                            const std::string& pad_mode, bool normalized, bool onesided) {
  const bool batched = self.dim() == 2;
  const Tensor frames =
      stft_frames(batched ? self : autograd::unsqueeze(self, 0), n_fft, hop, center, pad_mode);
  const Tensor g = stft_frame_grads(grad, batched, n_fft, normalized, onesided);
  const Tensor gw = autograd::narrow(autograd::sum(autograd::mul(g, autograd::conj(frames), std::nullopt),
                                                   IntList{0, 1}, false, std::nullopt),
                                     0, (n_fft - win_length) / 2, win_length);
  return is_complex(window.dtype()) ? gw : autograd::real(gw);
}

Tensor stft_jvp(const Tensor& self_t, const Tensor& window_t, const Tensor& self,
                const std::optional<Tensor>& window, int64_t n_fft, int64_t hop, int64_t win_length,
                bool center, const std::string& pad_mode, bool normalized, bool onesided) {
  Tensor t = autograd::_stft(self_t, n_fft, hop, win_length, window, center, pad_mode, normalized, onesided);
  if (window && window_t.defined())
    t = autograd::add(
        t, autograd::_stft(self, n_fft, hop, win_length, window_t, center, pad_mode, normalized, onesided),
        Scalar(int64_t(1)), std::nullopt);
  return t;
}

// istft's geometry: the overlap-added length `total`, and the kept samples [start, stop) of it
// (out_len may run past stop: zeros).
namespace {
struct IstftGeometry {
  int64_t batch, frames, total, start, stop, avail, out_len;
};
}  // namespace

static IstftGeometry istft_geometry(const Tensor& self, int64_t n_fft, int64_t hop, bool center,
                                    std::optional<int64_t> length) {
  IstftGeometry g{};
  g.batch = self.dim() == 3 ? self.sizes()[0] : 1;
  g.frames = self.sizes().back();
  g.total = n_fft + hop * (g.frames - 1);
  g.start = center ? n_fft / 2 : 0;
  const int64_t end = length ? g.start + *length : (center ? g.total - n_fft / 2 : g.total);
  g.stop = std::min(std::max(end, g.start), g.total);
  g.avail = std::max<int64_t>(g.stop - g.start, 0);
  g.out_len = std::max<int64_t>(end - g.start, 0);
  return g;
}

// The frames' scaled inverse transforms [B, F, n_fft] (real unless return_complex).
static Tensor istft_frames(const Tensor& self, int64_t n_fft, bool normalized, bool onesided,
                           bool return_complex) {
  Tensor x = autograd::transpose(self.dim() == 3 ? self : autograd::unsqueeze(self, 0), 1, 2);
  if (return_complex) return autograd::fft_c2c(x, {2}, normalized ? 1 : 2, false);
  if (!onesided) x = autograd::narrow(x, 2, 0, n_fft / 2 + 1);
  return autograd::fft_c2r(x, {2}, normalized ? 1 : 2, n_fft);
}

// Overlap-add of frames [..., F, n_fft] into [..., total].
static Tensor overlap_add(const Tensor& frames, int64_t total, int64_t hop) {
  IntList sizes = frames.sizes();
  sizes.pop_back();
  sizes.back() = total;
  return unfold_backward(frames, sizes, static_cast<int64_t>(sizes.size()) - 1, frames.sizes().back(), hop);
}

// The envelope (overlap-added squared window) with ones outside the kept samples, where it may
// vanish and where nothing is divided by it.
static Tensor istft_envelope(const Tensor& w, const IstftGeometry& g, int64_t hop) {
  const int64_t n = w.sizes()[0];
  const Tensor env =
      overlap_add(autograd::expand(autograd::unsqueeze(autograd::mul(w, w, std::nullopt), 0), {g.frames, n}),
                  g.total, hop);
  std::vector<Tensor> parts;
  if (g.start > 0) parts.push_back(autograd::ones({g.start}, env.dtype(), env.device()));
  parts.push_back(autograd::narrow(env, 0, g.start, g.avail));
  if (g.total > g.stop)
    parts.push_back(autograd::ones({g.total - std::max(g.stop, g.start)}, env.dtype(), env.device()));
  return autograd::cat(parts, 0);
}

// The output's gradient placed on the overlap-added length and divided by conj(envelope).
static Tensor istft_scaled_grad(const Tensor& grad, const Tensor& env, const IstftGeometry& g) {
  const Tensor g2 = autograd::narrow(grad.dim() == 2 ? grad : autograd::unsqueeze(grad, 0), 1, 0, g.avail);
  std::vector<Tensor> parts;
  if (g.start > 0) parts.push_back(autograd::zeros({g.batch, g.start}, g2.dtype(), g2.device()));
  parts.push_back(g2);
  if (g.total > g.stop)
    parts.push_back(autograd::zeros({g.batch, g.total - std::max(g.stop, g.start)}, g2.dtype(), g2.device()));
  return autograd::div(autograd::cat(parts, 1), autograd::conj(env), std::nullopt, std::nullopt);
}

Tensor istft_backward_self(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                           int64_t win_length, const Tensor& window, bool center, bool normalized,
                           bool onesided, std::optional<int64_t> length, bool return_complex) {
  const IstftGeometry g = istft_geometry(self, n_fft, hop, center, length);
  const Tensor w = spectral_window(window, win_length, n_fft, spectral_real(self.dtype()), self.device());
  const Tensor u = istft_scaled_grad(grad, istft_envelope(w, g, hop), g);
  Tensor gz = autograd::mul(autograd::unfold(u, 1, n_fft, hop), autograd::conj(w), std::nullopt);
  Tensor gx;
  if (return_complex) {
    gx = autograd::fft_c2c(gz, {2}, normalized ? 1 : 2, true);
  } else {
    gx = fft_c2r_backward(real_part(gz), {2}, normalized ? 1 : 2);
    if (!onesided)
      gx = autograd::cat(
          {gx, autograd::zeros({g.batch, g.frames, n_fft - n_fft / 2 - 1}, gx.dtype(), gx.device())}, 2);
  }
  gx = autograd::transpose(gx, 1, 2);
  return self.dim() == 3 ? gx : autograd::squeeze(gx, IntList{0});
}

Tensor istft_backward_window(const Tensor& grad, const Tensor& self, int64_t n_fft, int64_t hop,
                             int64_t win_length, const Tensor& window, bool center, bool normalized,
                             bool onesided, std::optional<int64_t> length, bool return_complex) {
  const IstftGeometry g = istft_geometry(self, n_fft, hop, center, length);
  const Tensor w = spectral_window(window, win_length, n_fft, spectral_real(self.dtype()), self.device());
  const Tensor z = istft_frames(self, n_fft, normalized, onesided, return_complex);
  const Tensor env = istft_envelope(w, g, hop);
  const Tensor y = autograd::div(overlap_add(autograd::mul(z, w, std::nullopt), g.total, hop), env,
                                 std::nullopt, std::nullopt);
  const Tensor u = autograd::unfold(istft_scaled_grad(grad, env, g), 1, n_fft, hop);
  const Tensor first =
      autograd::sum(autograd::mul(autograd::conj(z), u, std::nullopt), IntList{0, 1}, false, std::nullopt);
  const Tensor second =
      autograd::sum(autograd::mul(autograd::conj(autograd::unfold(y, 1, n_fft, hop)), u, std::nullopt),
                    IntList{0, 1}, false, std::nullopt);
  const Tensor gw = autograd::narrow(
      autograd::sub(
          first,
          autograd::mul(autograd::mul(autograd::conj(w), num(2.0), std::nullopt), second, std::nullopt),
          Scalar(int64_t(1)), std::nullopt),
      0, (n_fft - win_length) / 2, win_length);
  return is_complex(window.dtype()) ? gw : real_part(gw);
}

Tensor istft_jvp(const Tensor& self_t, const Tensor& window_t, const Tensor& self,
                 const std::optional<Tensor>& window, int64_t n_fft, int64_t hop, int64_t win_length,
                 bool center, bool normalized, bool onesided, std::optional<int64_t> length,
                 bool return_complex) {
  Tensor t = autograd::_istft(self_t, n_fft, hop, win_length, window, center, normalized, onesided, length,
                              return_complex);
  if (!window || !window_t.defined()) return t;
  const IstftGeometry g = istft_geometry(self, n_fft, hop, center, length);
  const DType rdt = spectral_real(self.dtype());
  const Tensor w = spectral_window(window, win_length, n_fft, rdt, self.device());
  const Tensor dw = spectral_window(window_t, win_length, n_fft, rdt, self.device());
  const Tensor z = istft_frames(self, n_fft, normalized, onesided, return_complex);
  const Tensor env = istft_envelope(w, g, hop);
  const Tensor y = autograd::div(overlap_add(autograd::mul(z, w, std::nullopt), g.total, hop), env,
                                 std::nullopt, std::nullopt);
  const Tensor denv = overlap_add(
      autograd::expand(
          autograd::unsqueeze(autograd::mul(autograd::mul(w, dw, std::nullopt), num(2.0), std::nullopt), 0),
          {g.frames, n_fft}),
      g.total, hop);
  Tensor dy =
      autograd::div(autograd::sub(overlap_add(autograd::mul(z, dw, std::nullopt), g.total, hop),
                                  autograd::mul(y, denv, std::nullopt), Scalar(int64_t(1)), std::nullopt),
                    env, std::nullopt, std::nullopt);
  dy = autograd::narrow(dy, 1, g.start, g.avail);
  if (g.out_len > g.avail)
    dy = autograd::cat({dy, autograd::zeros({g.batch, g.out_len - g.avail}, dy.dtype(), dy.device())}, 1);
  if (self.dim() == 2) dy = autograd::squeeze(dy, IntList{0});
  return autograd::add(t, dy, Scalar(int64_t(1)), std::nullopt);
}

}  // namespace ember::autograd
