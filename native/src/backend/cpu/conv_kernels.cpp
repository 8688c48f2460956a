// CPU convolution kernels (interfaces in src/ops/kernels.h, Note [convolution kernels]).
//
// Every convolution is a 3-d one (1-d and 2-d gain unit leading dims). Per image and group the
// output is W [Og, Cg*K] @ cols [Cg*K, L] (K kernel taps, L output positions), with the columns
// (im2col) built one block of output positions at a time, so the unfolded input never exists
// whole: a block holds about kColumnBlockBytes. 1x1 kernels with unit stride and no padding read
// the input itself as the columns. The products are OpenBLAS GEMMs (blas.h); the tasks
// (image, group, block) run in parallel, each GEMM single-threaded (Note [BLAS threads]).
// Unit-stride convolutions with many input channels build no columns at all: one GEMM per tap
// reads a padded copy of the image (Note [shifted taps]). Convolutions with few input channels
// (RGB stems) skip BLAS (Note [few-channel direct convolution]).
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/vec.h"
#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// About 2 MB of columns per block (and at least 256 positions): wide enough that the GEMM runs
// near its peak, small enough to stay in the last-level cache.
constexpr int64_t kColumnBlockBytes = int64_t(1) << 21;
constexpr int64_t kMinColumnBlock = 256;

struct Geometry {
  int64_t C, O, groups, Cg, Og, K, L, in_spatial;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
  bool pointwise;  // 1x1x1 kernel, unit stride, no padding: the columns are the input itself

  explicit Geometry(const ConvArgs& a) {
    C = a.in_channels;
    O = a.out_channels;
    groups = a.groups;
    Cg = C / groups;
    Og = O / groups;
    K = L = in_spatial = 1;
    pointwise = true;
    for (int i = 0; i < 3; ++i) {
      in[i] = a.input_size[i];
      out[i] = a.output_size[i];
      k[i] = a.kernel[i];
      s[i] = a.stride[i];
      p[i] = a.padding[i];
      d[i] = a.dilation[i];
      K *= k[i];
      L *= out[i];
      in_spatial *= in[i];
      pointwise = pointwise && k[i] == 1 && s[i] == 1 && p[i] == 0;
    }
  }
  int64_t block() const {  // output positions per column block
    const int64_t rows = std::max<int64_t>(Cg * K, 1);
    return std::min(L, std::max<int64_t>(kMinColumnBlock,
                                         kColumnBlockBytes / (rows * static_cast<int64_t>(sizeof(float)))));
  }
};

// Visits the column rows (channel c, tap kd/kh/kw) of output positions [l0, l0 + n): for each
// output row segment, fn(col_offset, the tap's input row id * in[1] + ih or -1 (out of bounds),
// first output column of the segment, count) is called; the caller maps iw = iw0 + t*s[2].
template <typename F>
void for_column_segments(const Geometry& g, int64_t l0, int64_t n, int64_t kd, int64_t kh, F fn) {
  int64_t ow = l0 % g.out[2], rest = l0 / g.out[2];
  int64_t oh = rest % g.out[1], od = rest / g.out[1];
  for (int64_t j = 0; j < n;) {
    const int64_t run = std::min(n - j, g.out[2] - ow);
    const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0], ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
    const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
    fn(j, inside ? id * g.in[1] + ih : int64_t(-1), ow, run);
    j += run;
    ow = 0;
    if (++oh == g.out[1]) {
      oh = 0;
      ++od;
    }
  }
}

// Note [column phases]: with a horizontal stride s > 1 a column row's taps are every s-th element
// of an input row, an element-by-element gather that took a fifth of a 7x7 stride-2 stem's time.
// When the taps read each input element more than twice over, each input row is first split into
// its s column phases (element iw to phase iw % s, place iw / s), once per image and group, and
// every run of taps becomes one contiguous copy out of one phase.
bool uses_phases(const Geometry& g) {
  return g.s[2] > 1 && g.K * g.L > 2 * g.in_spatial;
}

// One thread's column phases of the image channels it split last ([Cg * in0 * in1 rows, s, width]).
template <typename T>
struct ColumnPhases {
  const T* of = nullptr;
  int64_t width = 0;
  std::vector<T> rows;

  // The phases of image channels x [Cg, in_spatial], or null when they do not pay.
  const T* of_image(const Geometry& g, const T* x) {
    if (!uses_phases(g)) return nullptr;
    if (of != x) {
      const int64_t st = g.s[2], W = g.in[2], nrows = g.Cg * g.in[0] * g.in[1];
      width = (W + st - 1) / st;
      rows.resize(static_cast<size_t>(nrows * st * width));
      for (int64_t r = 0; r < nrows; ++r) {
        const T* src = x + r * W;
        T* dst = rows.data() + r * st * width;
        for (int64_t ph = 0; ph < st; ++ph)
          for (int64_t iw = ph, at = ph * width; iw < W; iw += st) dst[at++] = src[iw];
      }
      of = x;
    }
    return rows.data();
  }
};

// cols [Cg*K, n] (row-major) of image channels x [Cg, in_spatial], output positions [l0, l0 + n);
// `phases` are x's column phases (Note [column phases]) or null.
template <typename T>
void im2col(const Geometry& g, const T* x, int64_t l0, int64_t n, T* cols, const ColumnPhases<T>* phases) {
  const T* ph = phases && phases->of == x ? phases->rows.data() : nullptr;
  for (int64_t c = 0; c < g.Cg; ++c) {
    const T* xc = x + c * g.in_spatial;
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          T* row = cols + ((c * g.k[0] + kd) * g.k[1] * g.k[2] + kh * g.k[2] + kw) * n;
          for_column_segments(g, l0, n, kd, kh, [&](int64_t j, int64_t in_row, int64_t ow, int64_t run) {
            T* dst = row + j;
            if (in_row < 0) {
              std::fill(dst, dst + run, T(0));
              return;
            }
            const T* src = xc + in_row * g.in[2];
            const int64_t iw0 = ow * g.s[2] - g.p[2] + kw * g.d[2];
            if (g.s[2] == 1) {  // a contiguous stretch, zero where it leaves the row
              const int64_t lo = std::clamp<int64_t>(-iw0, 0, run),
                            hi = std::clamp<int64_t>(g.in[2] - iw0, lo, run);
              std::fill(dst, dst + lo, T(0));
              std::memcpy(dst + lo, src + iw0 + lo, (hi - lo) * sizeof(T));
              std::fill(dst + hi, dst + run, T(0));
            } else {  // strided: the in-row taps are [lo, hi); no bounds test inside the copy
              const int64_t st = g.s[2];
              const int64_t lo = iw0 >= 0 ? 0 : std::min<int64_t>(run, (-iw0 + st - 1) / st);
              const int64_t hi =
                  g.in[2] - iw0 <= 0 ? lo : std::clamp<int64_t>((g.in[2] - iw0 + st - 1) / st, lo, run);
              std::fill(dst, dst + lo, T(0));
              if (ph && hi > lo) {  // one copy out of the phase of the first tap inside the row
                const int64_t first = iw0 + lo * st, r = c * g.in[0] * g.in[1] + in_row;
                std::memcpy(dst + lo, ph + (r * st + first % st) * phases->width + first / st,
                            (hi - lo) * sizeof(T));
              } else {
                const T* from = src + iw0;
                for (int64_t t = lo; t < hi; ++t) dst[t] = from[t * st];
              }
              std::fill(dst + hi, dst + run, T(0));
            }
          });
        }
  }
}

// The adjoint of im2col: adds cols [Cg*K, n] into the image channels x [Cg, in_spatial].
template <typename T>
void col2im_add(const Geometry& g, const T* cols, int64_t l0, int64_t n, T* x) {
  for (int64_t c = 0; c < g.Cg; ++c) {
    T* xc = x + c * g.in_spatial;
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const T* row = cols + ((c * g.k[0] + kd) * g.k[1] * g.k[2] + kh * g.k[2] + kw) * n;
          for_column_segments(g, l0, n, kd, kh, [&](int64_t j, int64_t in_row, int64_t ow, int64_t run) {
            if (in_row < 0) return;
            T* dst = xc + in_row * g.in[2];
            const int64_t iw0 = ow * g.s[2] - g.p[2] + kw * g.d[2];
            for (int64_t t = 0; t < run; ++t) {
              const int64_t iw = iw0 + t * g.s[2];
              if (iw >= 0 && iw < g.in[2]) dst[iw] += row[j + t];
            }
          });
        }
  }
}

// Note [depthwise convolution]: with one input and one output channel per group (MobileNet's
// depthwise layers) each group's GEMM is [1, K] @ [K, L]: thousands of tiny BLAS calls plus an
// im2col each, which cost 10x the arithmetic on small images. Those convolutions skip BLAS.
// 1-d and 2-d ones take a block of kLanes channels at a time (depthwise_block): the block's input
// rows are copied, zero-padded, into a channels-last tile, so one vector holds one position of
// every channel of the block, and each output vector sums its K tap products before the bias (in
// y when accumulating) is added. Several output positions are computed together so their
// independent sums keep the FMA units busy even on 7x7 images, where a row-wise loop has only 7
// elements to vectorize. 3-d ones add w[tap] * (the input shifted by the tap) into the output row
// segment by row segment (depthwise_rows).
template <typename T>
void depthwise_rows(const Geometry& g, const T* x, const T* w, T* y, bool accumulate) {
  if (!accumulate) std::fill(y, y + g.L, T(0));
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const T wt = w[(kd * g.k[1] + kh) * g.k[2] + kw];
        for_column_segments(g, 0, g.L, kd, kh, [&](int64_t j, int64_t in_row, int64_t ow, int64_t run) {
          if (in_row < 0) return;
          const int64_t st = g.s[2], iw0 = ow * st - g.p[2] + kw * g.d[2];
          // the taps inside the input row are t in [lo, hi), as in im2col
          const int64_t lo = iw0 >= 0 ? 0 : std::min<int64_t>(run, (-iw0 + st - 1) / st);
          const int64_t hi =
              g.in[2] - iw0 <= 0 ? lo : std::clamp<int64_t>((g.in[2] - iw0 + st - 1) / st, lo, run);
          const T* src = x + in_row * g.in[2] + iw0;
          T* dst = y + j;
          if (st == 1) {
            for (int64_t t = lo; t < hi; ++t) dst[t] += wt * src[t];
          } else {
            for (int64_t t = lo; t < hi; ++t) dst[t] += wt * src[t * st];
          }
        });
      }
}

// About 48 KB of channels-last input tile per block of output rows: it stays in L1/L2.
constexpr int64_t kDepthwiseTileBytes = int64_t(48) << 10;

// NB output positions ow0.. of one output row: out[j] = sum over taps of wv[tap] * tile at the
// tap's position, for all kLanes channels at once. `row` is the tile row of tap row 0.
template <typename T, int NB>
void depthwise_positions(const Geometry& g, const T* row, int64_t tile_w, const Vec<T>* wv, int64_t ow0,
                         Vec<T>* out) {
  constexpr int64_t lanes = kLanes<T>;
  Vec<T> acc[NB];
  for (int j = 0; j < NB; ++j) acc[j] = Vec<T>{};
  for (int64_t kh = 0; kh < g.k[1]; ++kh) {
    const T* r = row + kh * g.d[1] * tile_w * lanes;
    for (int64_t kw = 0; kw < g.k[2]; ++kw) {
      const Vec<T> wt = wv[kh * g.k[2] + kw];
      const T* at = r + (ow0 * g.s[2] + kw * g.d[2]) * lanes;
      for (int j = 0; j < NB; ++j) acc[j] += wt * load(at + j * g.s[2] * lanes);
    }
  }
  for (int j = 0; j < NB; ++j) out[ow0 + j] = acc[j];
}

// Channels [c0, c0 + nc) (nc <= kLanes) of one image: x and y point at channel c0.
template <typename T>
void depthwise_block(const Geometry& g, const T* x, const T* w, T* y, int64_t nc, bool accumulate,
                     std::vector<T>& tile, std::vector<Vec<T>>& out_row) {
  constexpr int64_t lanes = kLanes<T>;
  const int64_t OH = g.out[1], OW = g.out[2], IH = g.in[1], IW = g.in[2];
  const int64_t tap_rows = (g.k[1] - 1) * g.d[1] + 1;
  const int64_t tile_w = (OW - 1) * g.s[2] + (g.k[2] - 1) * g.d[2] + 1;
  // output rows per tile: its input rows ((rows - 1) * stride + tap_rows) fill about the budget
  const int64_t budget_rows = kDepthwiseTileBytes / (tile_w * lanes * static_cast<int64_t>(sizeof(T)));
  const int64_t rows = std::clamp<int64_t>((budget_rows - tap_rows) / g.s[1] + 1, 1, OH);
  std::vector<Vec<T>> wv(g.K, Vec<T>{});
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t t = 0; t < g.K; ++t) wv[t][c] = w[c * g.K + t];
  tile.resize(((rows - 1) * g.s[1] + tap_rows) * tile_w * lanes);
  out_row.resize(OW);
  for (int64_t oh0 = 0; oh0 < OH; oh0 += rows) {
    const int64_t oh1 = std::min(OH, oh0 + rows), tile_h = (oh1 - oh0 - 1) * g.s[1] + tap_rows;
    // tile[th][tw][c] = x[c][oh0 * s - p + th][tw - p], zero outside the image and past nc
    for (int64_t th = 0; th < tile_h; ++th) {
      const int64_t ih = oh0 * g.s[1] - g.p[1] + th;
      T* trow = tile.data() + th * tile_w * lanes;
      std::fill(trow, trow + tile_w * lanes, T(0));
      if (ih < 0 || ih >= IH) continue;
      const int64_t tw0 = std::max<int64_t>(0, g.p[2]), tw1 = std::min<int64_t>(tile_w, IW + g.p[2]);
      for (int64_t c = 0; c < nc; ++c) {
        const T* src = x + c * g.in_spatial + ih * IW;  // padded column tw is src[tw - p]
        for (int64_t tw = tw0; tw < tw1; ++tw) trow[tw * lanes + c] = src[tw - g.p[2]];
      }
    }
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const T* row = tile.data() + (oh - oh0) * g.s[1] * tile_w * lanes;
      int64_t ow = 0;
      for (; ow + 8 <= OW; ow += 8) depthwise_positions<T, 8>(g, row, tile_w, wv.data(), ow, out_row.data());
      for (; ow + 4 <= OW; ow += 4) depthwise_positions<T, 4>(g, row, tile_w, wv.data(), ow, out_row.data());
      for (; ow < OW; ++ow) depthwise_positions<T, 1>(g, row, tile_w, wv.data(), ow, out_row.data());
      for (int64_t c = 0; c < nc; ++c) {  // back to channels-first
        T* dst = y + c * g.L + oh * OW;
        if (accumulate) {
          for (int64_t i = 0; i < OW; ++i) dst[i] += out_row[i][c];
        } else {
          for (int64_t i = 0; i < OW; ++i) dst[i] = out_row[i][c];
        }
      }
    }
  }
}

template <typename T>
void depthwise_forward(const Geometry& g, const ConvArgs& a, const T* X, const T* W, T* Y) {
  const int64_t N = a.batch;
  if (g.k[0] == 1 && g.in[0] == 1 && g.out[0] == 1) {  // 1-d and 2-d: channel blocks
    constexpr int64_t lanes = kLanes<T>;
    const int64_t blocks = (g.C + lanes - 1) / lanes;
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, lanes * g.K * g.L));
    parallel_for(0, N * blocks, grain, [&](int64_t lo, int64_t hi) {
      std::vector<T> tile;
      std::vector<Vec<T>> out_row;
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t b = t % blocks, n = t / blocks, c0 = b * lanes, nc = std::min(lanes, g.C - c0);
        depthwise_block(g, X + (n * g.C + c0) * g.in_spatial, W + c0 * g.K, Y + (n * g.O + c0) * g.L, nc,
                        a.accumulate, tile, out_row);
      }
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, g.K * g.L));
  parallel_for(0, N * g.groups, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t gi = t % g.groups, n = t / g.groups;
      depthwise_rows(g, X + (n * g.C + gi) * g.in_spatial, W + gi * g.K, Y + (n * g.O + gi) * g.L,
                     a.accumulate);
    }
  });
}

// Note [whole-image tasks]: a task's column scratch and column phases are set up per task call.
// Cut into single blocks, each of an image's blocks allocated its scratch and split the image's
// phases again (4x the phase work of one thread for a 7x7 stride-2 stem at two threads). So with
// at least two images (or image groups) per thread, a task takes an image's blocks together;
// otherwise the blocks themselves are the tasks, to keep every thread busy.
int64_t whole_images(int64_t images, int64_t blocks) {
  return images >= 2 * static_cast<int64_t>(get_num_threads()) ? blocks : 1;
}

// Note [channels-last convolution]: with input, weight and output channels last (NHWC, one
// group), a convolution is Y[positions, O] = rows[positions, K*C] @ W[O, K*C]^T, where a row holds
// one output position's window tap by tap, C channels each: one contiguous copy per tap (per kernel
// row where the taps are adjacent and inside the image), and the weight's channels-last layout
// (O, kd, kh, kw, C) is W as it is. A 1x1 unit-stride unpadded convolution reads the input itself
// as the rows. No layout conversion on the way in or out, as for a channels-last vision model.

// rows [n, K*C] of one channels-last image x [in0, in1, in2, C] for output positions [l0, l0 + n).
template <typename T>
void im2row(const Geometry& g, const T* x, int64_t l0, int64_t n, T* rows) {
  const int64_t C = g.C;
  int64_t ow = l0 % g.out[2], rest = l0 / g.out[2];
  int64_t oh = rest % g.out[1], od = rest / g.out[1];
  for (int64_t j = 0; j < n; ++j) {
    T* row = rows + j * g.K * C;
    const int64_t iw0 = ow * g.s[2] - g.p[2];
    const bool whole_rows = g.d[2] == 1 && iw0 >= 0 && iw0 + g.k[2] <= g.in[2];
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
        const int64_t taps = g.k[2] * C;
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
          std::fill(row, row + taps, T(0));
        } else if (whole_rows) {  // the kernel row's taps are adjacent pixels: one copy
          std::memcpy(row, x + ((id * g.in[1] + ih) * g.in[2] + iw0) * C, taps * sizeof(T));
        } else {
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            const int64_t iw = iw0 + kw * g.d[2];
            T* dst = row + kw * C;
            if (iw < 0 || iw >= g.in[2]) {
              std::fill(dst, dst + C, T(0));
            } else {
              std::memcpy(dst, x + ((id * g.in[1] + ih) * g.in[2] + iw) * C, C * sizeof(T));
            }
          }
        }
        row += taps;
      }
    }
    if (++ow == g.out[2]) {
      ow = 0;
      if (++oh == g.out[1]) {
        oh = 0;
        ++od;
      }
    }
  }
}

template <typename T>
void conv_forward_channels_last(const ConvArgs& a, const Geometry& g) {
  const T* X = a.input->data<T>();
  const T* W = a.weight->data<T>();
  T* Y = a.output->data<T>();
  const int64_t N = a.batch, C = g.C, O = g.O, KC = g.K * g.C;
  const T beta = a.accumulate ? T(1) : T(0);
  if (g.pointwise) {  // rows = x: one product per image
    blas::for_each_problem(N, 2 * g.L * O * C, [&](int64_t lo, int64_t hi) {
      for (int64_t n = lo; n < hi; ++n)
        blas::gemm<T>({false, C}, {true, C}, g.L, O, C, T(1), X + n * g.L * C, W, beta, Y + n * g.L * O, O);
    });
    return;
  }
  const int64_t lb =
      std::min(g.L, std::max<int64_t>(kMinColumnBlock, kColumnBlockBytes / (KC * int64_t(sizeof(T)))));
  const int64_t blocks = (g.L + lb - 1) / lb;
  blas::for_each_problem(
      N * blocks, 2 * lb * O * KC,
      [&](int64_t lo, int64_t hi) {
        std::vector<T> rows;
        for (int64_t t = lo; t < hi; ++t) {
          const int64_t n = t / blocks, l0 = (t % blocks) * lb, len = std::min(lb, g.L - l0);
          rows.resize(static_cast<size_t>(len * KC));
          im2row(g, X + n * g.in_spatial * C, l0, len, rows.data());
          blas::gemm<T>({false, KC}, {true, KC}, len, O, KC, T(1), rows.data(), W, beta,
                        Y + (n * g.L + l0) * O, O);
        }
      },
      whole_images(N, blocks));
}

// Note [shifted taps]: in a zero-padded copy of the image (extents P), the output position
// (od, oh, ow) of a unit-stride convolution sits at e = (od * P1 + oh) * P2 + ow, and tap t reads
// element e + at(t) for every e. So a tap's input for a block of positions is one contiguous run
// per channel, and with enough input channels per group to make a good GEMM depth each tap is its
// own GEMM straight out of the padded image, y[Og, e] += W_t [Og, Cg] @ x[Cg, at(t) + e]: no
// column matrix is built (im2col's copies were a sixth of a 3x3 64-channel layer's time). The GEMMs
// also compute the positions past each output row (P2 > out2), dropped when the block is copied
// into y; where those would cost more than an eighth extra (small images), im2col is used.
constexpr int64_t kDeepTapChannels = 32;
// About 256 KB of output (and of each tap's input) per block: it stays in L2 across the taps.
constexpr int64_t kShiftedBlockBytes = int64_t(1) << 18;

struct ShiftedLayout {
  int64_t P[3], plane, vol;  // the padded extents, P1 * P2 and a channel's size
  int64_t E;                 // positions e in [0, E) cover the output

  explicit ShiftedLayout(const Geometry& g) {
    for (int i = 0; i < 3; ++i) P[i] = g.in[i] + 2 * g.p[i];
    plane = P[1] * P[2];
    vol = P[0] * plane;
    E = ((g.out[0] - 1) * P[1] + g.out[1] - 1) * P[2] + g.out[2];
  }
};

bool shifted_taps_pay(const Geometry& g) {
  if (g.L == 0 || g.pointwise || g.Cg < kDeepTapChannels || g.s[0] != 1 || g.s[1] != 1 || g.s[2] != 1)
    return false;
  const ShiftedLayout s(g);
  return s.E * 8 <= g.L * 9;
}

// One thread's padded copy of the image channels it took last ([Cg, P0, P1, P2]). Only the
// interior is written per image: the zero border stays from the first fill.
template <typename T>
struct PaddedImage {
  const T* of = nullptr;
  std::vector<T> data;

  // `tail` zeros follow the last channel, for readers that overrun the last position.
  const T* of_image(const Geometry& g, const ShiftedLayout& s, const T* x, int64_t tail = 0) {
    if (of == x) return data.data();
    if (data.empty()) data.assign(static_cast<size_t>(g.Cg * s.vol + tail), T(0));
    for (int64_t c = 0; c < g.Cg; ++c)
      for (int64_t i0 = 0; i0 < g.in[0]; ++i0)
        for (int64_t i1 = 0; i1 < g.in[1]; ++i1)
          std::memcpy(data.data() + c * s.vol + (i0 + g.p[0]) * s.plane + (i1 + g.p[1]) * s.P[2] + g.p[2],
                      x + ((c * g.in[0] + i0) * g.in[1] + i1) * g.in[2], g.in[2] * sizeof(T));
    of = x;
    return data.data();
  }
};

// Stores the block of positions [l0, l0 + len) of one group's extended output y_ext [Og, ld] into
// its output y [Og, L]: the positions that are outputs, row segment by row segment.
template <typename T>
void store_shifted_block(const Geometry& g, const ShiftedLayout& s, const T* y_ext, int64_t ld, int64_t l0,
                         int64_t len, T* y, bool accumulate) {
  for (int64_t e = l0; e < l0 + len;) {
    const int64_t r = e / s.P[2], ow = e % s.P[2], run = std::min(s.P[2] - ow, l0 + len - e);
    const int64_t oh = r % s.P[1], od = r / s.P[1], keep = std::min(run, g.out[2] - ow);
    if (oh < g.out[1] && keep > 0) {
      const int64_t at = (od * g.out[1] + oh) * g.out[2] + ow;
      for (int64_t o = 0; o < g.Og; ++o) {
        const T* src = y_ext + o * ld + (e - l0);
        T* dst = y + o * g.L + at;
        if (accumulate) {
          for (int64_t i = 0; i < keep; ++i) dst[i] += src[i];
        } else {
          std::memcpy(dst, src, keep * sizeof(T));
        }
      }
    }
    e += run;
  }
}

// The element tap t reads for position e = 0 of the padded image (Note [shifted taps]).
std::vector<int64_t> shifted_tap_offsets(const Geometry& g, const ShiftedLayout& s) {
  std::vector<int64_t> at;
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw)
        at.push_back(kd * g.d[0] * s.plane + kh * g.d[1] * s.P[2] + kw * g.d[2]);
  return at;
}

template <typename T>
void conv_forward_shifted(const ConvArgs& a, const Geometry& g, const T* X, const T* W, T* Y) {
  const ShiftedLayout s(g);
  const std::vector<int64_t> at = shifted_tap_offsets(g, s);
  // the weights tap-major: wt[gi][t] is W_t of group gi as [Og, Cg]
  std::vector<T> wt(static_cast<size_t>(g.groups * g.K * g.Og * g.Cg));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.Og; ++o)
      for (int64_t c = 0; c < g.Cg; ++c)
        for (int64_t t = 0; t < g.K; ++t)
          wt[((gi * g.K + t) * g.Og + o) * g.Cg + c] = W[((gi * g.Og + o) * g.Cg + c) * g.K + t];
  const int64_t per_position = std::max(g.Og, g.Cg) * static_cast<int64_t>(sizeof(T));
  const int64_t lb = std::min(s.E, std::max<int64_t>(kMinColumnBlock, kShiftedBlockBytes / per_position));
  const int64_t blocks = (s.E + lb - 1) / lb, N = a.batch;
  blas::for_each_problem(
      N * g.groups * blocks, 2 * g.Og * g.Cg * g.K * lb,
      [&](int64_t lo, int64_t hi) {
        PaddedImage<T> image;
        std::vector<T> y_ext;
        for (int64_t task = lo; task < hi; ++task) {
          const int64_t b = task % blocks, gi = (task / blocks) % g.groups, n = task / (blocks * g.groups);
          const int64_t l0 = b * lb, len = std::min(lb, s.E - l0);
          const T* xs = image.of_image(g, s, X + (n * g.C + gi * g.Cg) * g.in_spatial) + l0;
          y_ext.resize(static_cast<size_t>(g.Og * len));
          for (int64_t t = 0; t < g.K; ++t)
            blas::gemm<T>({false, g.Cg}, {false, s.vol}, g.Og, len, g.Cg, T(1),
                          wt.data() + (gi * g.K + t) * g.Og * g.Cg, xs + at[t], t == 0 ? T(0) : T(1),
                          y_ext.data(), len);
          store_shifted_block(g, s, y_ext.data(), len, l0, len, Y + (n * g.O + gi * g.Og) * g.L,
                              a.accumulate);
        }
      },
      whole_images(N * g.groups, blocks));
}

// Note [few-channel direct convolution]: with few input channels per group (an RGB stem: 3
// channels, a 7x7 stride-2 kernel) the GEMM's depth Cg*K is short while its column matrix is Cg*K
// times the image: im2col, BLAS's packing of the columns and BLAS's zeroing of its output took a
// third of a 7x7 stride-2 stem's time. Such 1-d and 2-d convolutions are computed directly. A task
// (one band of output rows of one image and group) copies the input rows the band reads, zero-
// padded, with every padded row split into its column phases (Note [column phases]): the input of
// kLanes consecutive output columns for one tap is then one contiguous load, with no bounds test.
// A register block of kDirectOut output channels x NV vectors of output columns sums over every
// (channel, tap): per tap, NV loads, kDirectOut broadcast weights and kDirectOut * NV fused
// multiply-adds; the block is stored once.
constexpr int64_t kDirectMaxChannels = 4;  // input channels per group
constexpr int kDirectOut = 4;              // output channels per register block
constexpr int kDirectVectors = 2;          // vectors of output columns per register block

bool direct_pays(const Geometry& g) {
  return g.k[0] == 1 && g.in[0] == 1 && g.out[0] == 1 && g.d[1] == 1 && g.d[2] == 1 &&
         g.Cg <= kDirectMaxChannels && g.Og >= 2 * kDirectOut && g.K >= 9 && g.out[2] >= 2 * kLanes<float> &&
         g.L > 0;
}

struct DirectLayout {
  int64_t band;                 // output rows per task
  int64_t rows, phases, width;  // per channel of a band's copy: padded rows x column phases x phase width
  std::vector<int64_t> tap_at;  // per (channel, tap): its element for the band's output (0, 0)

  DirectLayout(const Geometry& g, int64_t lanes) {
    // at least 8 output rows (so the rows two bands share are few), about 64 KB of output
    band = std::clamp<int64_t>((int64_t(1) << 14) / std::max<int64_t>(1, g.Og * g.out[2]), 8, 1 << 20);
    band = std::min(band, g.out[1]);
    rows = (band - 1) * g.s[1] + g.k[1];
    phases = g.s[2];
    const int64_t padded_w = g.in[2] + 2 * g.p[2];
    // room for the last vector's lanes past the output row (they read zeros and are not stored)
    const int64_t vectors = (g.out[2] + lanes - 1) / lanes;
    width = std::max((padded_w + phases - 1) / phases, vectors * lanes + (g.k[2] - 1) / phases);
    for (int64_t c = 0; c < g.Cg; ++c)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw)
          tap_at.push_back(((c * rows + kh) * phases + kw % phases) * width + kw / phases);
  }
  int64_t channel() const { return rows * phases * width; }
};

// The padded, phase-split copy (Note [few-channel direct convolution]) of the input rows that
// output rows [oh0, oh1) read, from image channels x [Cg, in1, in2].
template <typename T>
void fill_direct_band(const Geometry& g, const DirectLayout& d, const T* x, int64_t oh0, int64_t oh1,
                      std::vector<T>& buf) {
  buf.assign(static_cast<size_t>(g.Cg * d.channel()), T(0));
  const int64_t st = d.phases, first = oh0 * g.s[1] - g.p[1], count = (oh1 - oh0 - 1) * g.s[1] + g.k[1];
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t r = 0; r < count; ++r) {
      const int64_t ih = first + r;
      if (ih < 0 || ih >= g.in[1]) continue;
      const T* src = x + (c * g.in[1] + ih) * g.in[2];
      T* row = buf.data() + (c * d.rows + r) * st * d.width;
      for (int64_t ph = 0; ph < st; ++ph) {  // padded column pc goes to phase pc % st, place pc / st
        int64_t iw = ((ph - g.p[2]) % st + st) % st;
        for (T* dst = row + ph * d.width + (iw + g.p[2]) / st; iw < g.in[2]; iw += st) *dst++ = src[iw];
      }
    }
}

// *p in every lane as one broadcast load (splat's 0 + x costs two more instructions, and a
// lane-by-lane fill compiles to shuffles).
template <typename T>
inline Vec<T> broadcast(const T* p) {
  const T x = *p;
  if constexpr (kLanes<T> == 2)
    return Vec<T>{x, x};
  else if constexpr (kLanes<T> == 4)
    return Vec<T>{x, x, x, x};
  else if constexpr (kLanes<T> == 8)
    return Vec<T>{x, x, x, x, x, x, x, x};
  else
    return Vec<T>{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}

// Output rows [oh, oh + 1) of kDirectOut channels, NV vectors from column ow0 (only `keep`
// columns are stored). `in` is the padded image at output row oh, `w` the block's weights
// [Cg*K][kDirectOut].
template <typename T, int NV>
void direct_block(const DirectLayout& d, int64_t taps, const T* in, const T* w, int64_t ow0, int64_t keep,
                  T* const* y, int64_t outs, bool accumulate) {
  constexpr int64_t lanes = kLanes<T>;
  Vec<T> acc[kDirectOut][NV];
  for (int o = 0; o < kDirectOut; ++o)
    for (int v = 0; v < NV; ++v) acc[o][v] = Vec<T>{};
  const T* base = in + ow0;
  for (int64_t t = 0; t < taps; ++t, w += kDirectOut) {
    const T* at = base + d.tap_at[t];
    Vec<T> wv[kDirectOut];
    for (int o = 0; o < kDirectOut; ++o) wv[o] = broadcast(w + o);
    for (int v = 0; v < NV; ++v) {
      const Vec<T> xv = load(at + v * lanes);
      for (int o = 0; o < kDirectOut; ++o) acc[o][v] += wv[o] * xv;
    }
  }
  for (int64_t o = 0; o < outs; ++o) {
    T* dst = y[o] + ow0;
    if (keep == NV * lanes && !accumulate) {
      for (int v = 0; v < NV; ++v) store(dst + v * lanes, acc[o][v]);
      continue;
    }
    T part[NV * lanes];
    for (int v = 0; v < NV; ++v) store(part + v * lanes, acc[o][v]);
    for (int64_t i = 0; i < keep; ++i) dst[i] = accumulate ? dst[i] + part[i] : part[i];
  }
}

template <typename T>
void conv_forward_direct(const ConvArgs& a, const Geometry& g, const T* X, const T* W, T* Y) {
  constexpr int64_t lanes = kLanes<T>;
  const DirectLayout d(g, lanes);
  const int64_t taps = g.Cg * g.K, out_blocks = (g.Og + kDirectOut - 1) / kDirectOut;
  // the weights as [group][output block][channel, tap][kDirectOut], zero past the last channel
  std::vector<T> wb(static_cast<size_t>(g.groups * out_blocks * taps * kDirectOut), T(0));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.Og; ++o)
      for (int64_t t = 0; t < taps; ++t)
        wb[((gi * out_blocks + o / kDirectOut) * taps + t) * kDirectOut + o % kDirectOut] =
            W[(gi * g.Og + o) * taps + t];
  const int64_t OH = g.out[1], OW = g.out[2], N = a.batch, bands = (OH + d.band - 1) / d.band;
  // tasks: (image, group, band of output rows), each with its own copy of the rows it reads
  parallel_for(0, N * g.groups * bands, 1, [&](int64_t lo, int64_t hi) {
    std::vector<T> band;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t b = task % bands, gi = (task / bands) % g.groups, n = task / (bands * g.groups);
      const int64_t oh0 = b * d.band, oh1 = std::min(OH, oh0 + d.band);
      fill_direct_band(g, d, X + (n * g.C + gi * g.Cg) * g.in_spatial, oh0, oh1, band);
      for (int64_t oh = oh0; oh < oh1; ++oh) {
        const T* in = band.data() + (oh - oh0) * g.s[1] * d.phases * d.width;
        for (int64_t ob = 0; ob < out_blocks; ++ob) {
          const int64_t o0 = ob * kDirectOut, outs = std::min<int64_t>(kDirectOut, g.Og - o0);
          T* y[kDirectOut];
          for (int64_t o = 0; o < outs; ++o) y[o] = Y + (n * g.O + gi * g.Og + o0 + o) * g.L + oh * OW;
          const T* w = wb.data() + (gi * out_blocks + ob) * taps * kDirectOut;
          int64_t ow = 0;
          for (; ow + kDirectVectors * lanes <= OW; ow += kDirectVectors * lanes)
            direct_block<T, kDirectVectors>(d, taps, in, w, ow, kDirectVectors * lanes, y, outs,
                                            a.accumulate);
          for (; ow < OW; ow += lanes)
            direct_block<T, 1>(d, taps, in, w, ow, std::min(lanes, OW - ow), y, outs, a.accumulate);
        }
      }
    }
  });
}

// Note [direct shifted taps]: in float32 with 8- or 16-lane vectors, the convolutions of Note
// [shifted taps] skip BLAS. Each tap's GEMM there has depth Cg (64 in a ResNet stage): OpenBLAS
// loads and stores its output tile once per tap and packs each tap's input anew, and stayed at 60%
// of the FMA peak on an AVX-512 Xeon where oneDNN's direct kernel reached 80%. Here a register
// block of kShiftedOut output channels x kShiftedVectors vectors of consecutive positions e sums
// over every (channel, tap): per pair, kShiftedVectors loads from the padded image at e + at(t),
// kShiftedOut broadcast weights and their products; the block is stored once, into the extended
// output that store_shifted_block copies from. The weights of one output block (about 18 KB for
// 64 channels and 9 taps) stay in L1 while the block walks the positions.
// The positions past each output row cost less here than im2col's copies and BLAS's 60%, so the
// path also takes smaller images than Note [shifted taps] (14x14: a fifth more positions) and
// fewer channels (16 per group: 144 (channel, tap) pairs per block of sums).
constexpr int kShiftedOut = kLanes<float> >= 16 ? 8 : 6;
constexpr int kShiftedVectors = kLanes<float> >= 16 ? 3 : 2;
constexpr int64_t kDirectShiftedChannels = 16;

bool direct_shifted_pays(const Geometry& g) {
  if (kLanes<float> < 8 || g.L == 0 || g.pointwise || g.Cg < kDirectShiftedChannels || g.s[0] != 1 ||
      g.s[1] != 1 || g.s[2] != 1)
    return false;
  const ShiftedLayout s(g);
  const int64_t tile = kShiftedVectors * kLanes<float>, computed = (s.E + tile - 1) / tile * tile;
  return computed * 4 <= g.L * 5;
}

// y [kShiftedOut, ld] from column 0 = the sums over the taps, at positions in[0, tile).
void shifted_block(int64_t taps, const int64_t* tap_at, const float* in, const float* w, float* y,
                   int64_t ld) {
  constexpr int64_t lanes = kLanes<float>;
  constexpr int OB = kShiftedOut, NV = kShiftedVectors;
  Vec<float> acc[OB][NV];
  for (int o = 0; o < OB; ++o)
    for (int v = 0; v < NV; ++v) acc[o][v] = Vec<float>{};
  for (int64_t i = 0; i < taps; ++i, w += OB) {
    const float* at = in + tap_at[i];
    Vec<float> xv[NV];
    for (int v = 0; v < NV; ++v) xv[v] = load(at + v * lanes);
    for (int o = 0; o < OB; ++o) {
      const Vec<float> wv = broadcast(w + o);
      for (int v = 0; v < NV; ++v) acc[o][v] += wv * xv[v];
    }
  }
  for (int o = 0; o < OB; ++o)
    for (int v = 0; v < NV; ++v) store(y + o * ld + v * lanes, acc[o][v]);
}

void conv_forward_shifted_direct(const ConvArgs& a, const Geometry& g, const float* X, const float* W,
                                 float* Y) {
  constexpr int64_t OB = kShiftedOut, tile = kShiftedVectors * kLanes<float>;
  const ShiftedLayout s(g);
  const std::vector<int64_t> at = shifted_tap_offsets(g, s);
  const int64_t taps = g.Cg * g.K, out_blocks = (g.Og + OB - 1) / OB;
  std::vector<int64_t> tap_at;  // per (channel, tap) of the padded image
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t t = 0; t < g.K; ++t) tap_at.push_back(c * s.vol + at[t]);
  // the weights as [group][output block][channel, tap][OB], zero past the last channel
  std::vector<float> wb(static_cast<size_t>(g.groups * out_blocks * taps * OB), 0.0f);
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.Og; ++o)
      for (int64_t i = 0; i < taps; ++i)
        wb[((gi * out_blocks + o / OB) * taps + i) * OB + o % OB] = W[(gi * g.Og + o) * taps + i];
  const int64_t per_position = std::max(g.Og, g.Cg) * static_cast<int64_t>(sizeof(float));
  const int64_t lb = std::min(s.E, std::max<int64_t>(kMinColumnBlock, kShiftedBlockBytes / per_position));
  const int64_t blocks = (s.E + lb - 1) / lb, N = a.batch;
  blas::for_each_problem(
      N * g.groups * blocks, 2 * g.Og * taps * lb,
      [&](int64_t lo, int64_t hi) {
        PaddedImage<float> image;
        std::vector<float> y_ext;
        for (int64_t task = lo; task < hi; ++task) {
          const int64_t b = task % blocks, gi = (task / blocks) % g.groups, n = task / (blocks * g.groups);
          const int64_t l0 = b * lb, len = std::min(lb, s.E - l0), ld = (len + tile - 1) / tile * tile;
          // the last tile reads up to tile - 1 positions past E: the zero tail
          const float* xs = image.of_image(g, s, X + (n * g.C + gi * g.Cg) * g.in_spatial, tile) + l0;
          y_ext.resize(static_cast<size_t>(out_blocks * OB * ld));
          for (int64_t ob = 0; ob < out_blocks; ++ob) {
            const float* w = wb.data() + (gi * out_blocks + ob) * taps * OB;
            for (int64_t e = 0; e < len; e += tile)
              shifted_block(taps, tap_at.data(), xs + e, w, y_ext.data() + ob * OB * ld + e, ld);
          }
          store_shifted_block(g, s, y_ext.data(), ld, l0, len, Y + (n * g.O + gi * g.Og) * g.L, a.accumulate);
        }
      },
      whole_images(N * g.groups, blocks));
}

// y[n] = W conv x[n] (+ beta y: the bias, already broadcast into y, when add_to_output).
template <typename T>
void conv_forward_typed(const ConvArgs& a) {
  const Geometry g(a);
  if (a.channels_last) {  // Note [channels-last convolution]
    conv_forward_channels_last<T>(a, g);
    return;
  }
  const T* X = a.input->data<T>();
  const T* W = a.weight->data<T>();
  T* Y = a.output->data<T>();
  const int64_t N = a.batch, lb = g.pointwise ? g.L : g.block(), blocks = (g.L + lb - 1) / lb;
  const int64_t tasks = N * g.groups * blocks;
  if (g.Cg == 1 && g.Og == 1 && !g.pointwise) {  // Note [depthwise convolution]
    depthwise_forward(g, a, X, W, Y);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (direct_shifted_pays(g)) {  // Note [direct shifted taps]
      conv_forward_shifted_direct(a, g, X, W, Y);
      return;
    }
  }
  if (shifted_taps_pay(g)) {  // Note [shifted taps]
    conv_forward_shifted(a, g, X, W, Y);
    return;
  }
  if (direct_pays(g)) {  // Note [few-channel direct convolution]
    conv_forward_direct(a, g, X, W, Y);
    return;
  }
  const T beta = a.accumulate ? T(1) : T(0);
  auto task = [&](int64_t t, std::vector<T>& cols, ColumnPhases<T>& phases) {
    const int64_t b = t % blocks, gi = (t / blocks) % g.groups, n = t / (blocks * g.groups);
    const int64_t l0 = b * lb, len = std::min(lb, g.L - l0);
    const T* x = X + (n * g.C + gi * g.Cg) * g.in_spatial;
    T* y = Y + (n * g.O + gi * g.Og) * g.L + l0;
    const T* w = W + gi * g.Og * g.Cg * g.K;
    if (g.pointwise) {  // cols = x itself: [Cg, L]
      blas::gemm<T>({false, g.Cg}, {false, g.L}, g.Og, len, g.Cg, T(1), w, x + l0, beta, y, g.L);
      return;
    }
    cols.resize(g.Cg * g.K * len);
    phases.of_image(g, x);  // consecutive tasks are mostly blocks of one image: split it once
    im2col(g, x, l0, len, cols.data(), &phases);
    blas::gemm<T>({false, g.Cg * g.K}, {false, len}, g.Og, len, g.Cg * g.K, T(1), w, cols.data(), beta, y,
                  g.L);
  };
  // Several blocks: one per task with single-threaded BLAS; a lone one uses BLAS's threads.
  blas::for_each_problem(
      tasks, 2 * g.Og * g.Cg * g.K * lb,
      [&](int64_t lo, int64_t hi) {
        std::vector<T> cols;
        ColumnPhases<T> phases;
        for (int64_t t = lo; t < hi; ++t) task(t, cols, phases);
      },
      whole_images(N * g.groups, blocks));
}

// grad_x[n] = W^T grad_y[n], folded back (col2im) into the image.
template <typename T>
void conv_backward_input_typed(const ConvArgs& a) {
  const Geometry g(a);
  const T* GY = a.output->data<T>();  // the output's gradient
  const T* W = a.weight->data<T>();
  T* GX = a.input->data<T>();  // written
  const int64_t N = a.batch, lb = g.pointwise ? g.L : g.block(), blocks = (g.L + lb - 1) / lb;
  const int64_t tasks = N * g.groups;  // blocks of one image fold into overlapping input regions
  auto task = [&](int64_t t, std::vector<T>& cols) {
    const int64_t gi = t % g.groups, n = t / g.groups;
    T* gx = GX + (n * g.C + gi * g.Cg) * g.in_spatial;
    const T* gy = GY + (n * g.O + gi * g.Og) * g.L;
    const T* w = W + gi * g.Og * g.Cg * g.K;
    if (g.pointwise) {
      blas::gemm<T>({true, g.Cg}, {false, g.L}, g.Cg, g.L, g.Og, T(1), w, gy, T(0), gx, g.L);
      return;
    }
    std::fill(gx, gx + g.Cg * g.in_spatial, T(0));
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t l0 = b * lb, len = std::min(lb, g.L - l0);
      cols.resize(g.Cg * g.K * len);
      blas::gemm<T>({true, g.Cg * g.K}, {false, g.L}, g.Cg * g.K, len, g.Og, T(1), w, gy + l0, T(0),
                    cols.data(), len);
      col2im_add(g, cols.data(), l0, len, gx);
    }
  };
  blas::for_each_problem(tasks, 2 * g.Og * g.Cg * g.K * g.L, [&](int64_t lo, int64_t hi) {
    std::vector<T> cols;
    for (int64_t t = lo; t < hi; ++t) task(t, cols);
  });
}

// grad_W[g] = sum over images of grad_y[n, g] cols[n, g]^T; images split into chunks that each
// sum into their own buffer, added in chunk order (Note [deterministic parallelism]).
template <typename T>
void conv_backward_weight_typed(const ConvArgs& a) {
  const Geometry g(a);
  const T* X = a.input->data<T>();
  const T* GY = a.output->data<T>();
  T* GW = a.weight->data<T>();  // written
  const int64_t N = a.batch, lb = g.pointwise ? g.L : g.block(), blocks = (g.L + lb - 1) / lb;
  const int64_t wsize = g.O * g.Cg * g.K;
  const int64_t grain = std::max<int64_t>(1, (N + get_num_threads() - 1) / get_num_threads());
  const int64_t chunks = num_chunks(0, N, grain);
  std::vector<T> partial(chunks > 1 ? (chunks - 1) * wsize : 0);
  auto run = [&](int64_t lo, int64_t hi) {
    const int64_t chunk = lo / grain;
    T* gw = chunk == 0 ? GW : partial.data() + (chunk - 1) * wsize;
    std::vector<T> cols;
    ColumnPhases<T> phases;
    for (int64_t n = lo; n < hi; ++n)
      for (int64_t gi = 0; gi < g.groups; ++gi) {  // a group's blocks in a row: its phases split once
        const T* x = X + (n * g.C + gi * g.Cg) * g.in_spatial;
        T* w = gw + gi * g.Og * g.Cg * g.K;
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t l0 = b * lb, len = std::min(lb, g.L - l0);
          const T* gy = GY + (n * g.O + gi * g.Og) * g.L + l0;
          const T beta = n == lo && b == 0 ? T(0) : T(1);
          if (g.pointwise) {
            blas::gemm<T>({false, g.L}, {true, g.L}, g.Og, g.Cg, len, T(1), gy, x + l0, beta, w, g.Cg);
          } else {
            cols.resize(g.Cg * g.K * len);
            phases.of_image(g, x);
            im2col(g, x, l0, len, cols.data(), &phases);
            blas::gemm<T>({false, g.L}, {true, len}, g.Og, g.Cg * g.K, len, T(1), gy, cols.data(), beta, w,
                          g.Cg * g.K);
          }
        }
      }
  };
  if (N == 0) {
    std::fill(GW, GW + wsize, T(0));
    return;
  }
  if (chunks > 1) {
    blas::SerialBlas serial;
    parallel_for(0, N, grain, run);
  } else {
    run(0, N);
  }
  for (int64_t c = 0; c + 1 < chunks; ++c) {
    const T* p = partial.data() + c * wsize;
    for (int64_t i = 0; i < wsize; ++i) GW[i] += p[i];
  }
}

template <template <typename> class Body>
void float_types(const ConvArgs& a, const char* name) {
  visit<kFloats>(a.input->dtype(), name, [&](auto tag) { Body<typename decltype(tag)::type>::run(a); });
}
template <typename T>
struct Forward {
  static void run(const ConvArgs& a) { conv_forward_typed<T>(a); }
};
template <typename T>
struct BackwardInput {
  static void run(const ConvArgs& a) { conv_backward_input_typed<T>(a); }
};
template <typename T>
struct BackwardWeight {
  static void run(const ConvArgs& a) { conv_backward_weight_typed<T>(a); }
};

void conv_forward_kernel(const ConvArgs& a) {
  float_types<Forward>(a, "convolution");
}
void conv_backward_input_kernel(const ConvArgs& a) {
  float_types<BackwardInput>(a, "convolution_backward");
}
void conv_backward_weight_kernel(const ConvArgs& a) {
  float_types<BackwardWeight>(a, "convolution_backward");
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(conv_forward_stub, &conv_forward_kernel);
EMBER_REGISTER_CPU_KERNEL(conv_backward_input_stub, &conv_backward_input_kernel);
EMBER_REGISTER_CPU_KERNEL(conv_backward_weight_stub, &conv_backward_weight_kernel);

}  // namespace ember::EMBER_CPU_NS
