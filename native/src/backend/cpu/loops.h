#pragma once
// CPU loops over strided, broadcast operands (internal to the CPU kernels).
//
// Note [strided loop]: operand 0 is the output; inputs are broadcast to its shape (stride 0
// along broadcast dims). Dims are first put in memory order (the output's strides decide, then
// each input's, as PyTorch's TensorIterator does), so an op on transposed or permuted operands
// walks memory forwards, then coalesced when every operand's strides allow it, so an op whose
// operands share one dense layout becomes one flat loop. The outer range is split by parallel_for into chunks
// that depend only on numel (Note [deterministic parallelism]); each chunk calls the 1-d inner loop
// inner(ptrs, byte_strides, n), which has fast paths for contiguous and scalar operands.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "ember/parallel.h"
#include "ember/tensor.h"
#include "kernel_utils.h"

namespace ember::EMBER_CPU_NS {

constexpr int64_t kGrain = 32768;

// Per-dim values of a StridedLoop, held inline up to kInlineDims dims and on the heap beyond. The
// six small std::vectors a loop used before (sizes, strides, order, index) cost a malloc and a free
// each per op: without them (and with the two-operand result_type), an 8-element add went from
// 9,700 to 7,500 instructions.
constexpr size_t kInlineDims = 8;
template <typename T>
class DimArray {
 public:
  explicit DimArray(size_t capacity) : heap_(capacity > kInlineDims ? capacity : 0) {}
  DimArray(const DimArray&) = delete;
  DimArray& operator=(const DimArray&) = delete;
  T* data() { return heap_.empty() ? inline_.data() : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_.data() : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

 private:
  std::array<T, kInlineDims> inline_{};
  std::vector<T> heap_;
};

template <int N>
class StridedLoop {
 public:
  // operands[0] is the output; all must have been broadcast-checked by the caller.
  explicit StridedLoop(const std::array<Tensor, N>& operands)
      : sizes_(capacity(operands[0])), strides_(capacity(operands[0])) {
    const Tensor& out = operands[0];
    const int64_t ndim = out.dim();
    numel_ = out.numel();
    for (int k = 0; k < N; ++k) base_[k] = static_cast<char*>(operands[k].data_ptr());
    // Per-dim sizes and byte strides, broadcasting inputs to out's shape.
    DimArray<int64_t> dim_sizes(capacity(out));
    DimArray<std::array<int64_t, N>> dim_strides(capacity(out));
    size_t dims = 0;
    for (int64_t d = 0; d < ndim; ++d) {
      const int64_t size = out.sizes()[d];
      if (size == 1) continue;  // size-1 dims never move a pointer
      std::array<int64_t, N> st{};
      for (int k = 0; k < N; ++k) {
        const Tensor& t = operands[k];
        const int64_t offset = ndim - t.dim();
        const int64_t td = d - offset;
        st[k] = (td < 0 || t.sizes()[td] == 1) ? 0 : t.strides()[td] * t.element_size();
      }
      dim_sizes[dims] = size;
      dim_strides[dims] = st;
      ++dims;
    }
    // Memory order, innermost last: a stable insertion sort (equal or broadcast strides keep
    // the logical order, so contiguous operands are left as they are).
    DimArray<size_t> order(capacity(out));
    for (size_t i = 0; i < dims; ++i) order[i] = i;
    for (size_t i = 1; i < dims; ++i) {
      for (size_t j = i; j > 0 && outer_of(dim_strides[order[j]], dim_strides[order[j - 1]]); --j)
        std::swap(order[j], order[j - 1]);
    }
    for (size_t o = 0; o < dims; ++o) {
      const int64_t size = dim_sizes[order[o]];
      const std::array<int64_t, N>& st = dim_strides[order[o]];
      if (nd_ > 0 && coalescable(strides_[nd_ - 1], size, st)) {
        sizes_[nd_ - 1] *= size;
        strides_[nd_ - 1] = st;
      } else {
        sizes_[nd_] = size;
        strides_[nd_] = st;
        ++nd_;
      }
    }
    if (nd_ == 0) {
      sizes_[0] = 1;
      strides_[0] = {};
      nd_ = 1;
    }
  }

  // Inner: void(char** ptrs, const int64_t* strides, int64_t n)
  template <typename Inner>
  void run(const Inner& inner, int64_t grain = kGrain) const {
    if (numel_ == 0) return;
    parallel_for(0, numel_, grain, [&](int64_t begin, int64_t end) { run_range(inner, begin, end); });
  }

 private:
  static size_t capacity(const Tensor& out) { return std::max<size_t>(1, static_cast<size_t>(out.dim())); }

  // Whether dim a belongs outside dim b: the first operand that strides both (non-zero) with
  // different steps decides, the output first.
  static bool outer_of(const std::array<int64_t, N>& a, const std::array<int64_t, N>& b) {
    for (int k = 0; k < N; ++k) {
      if (a[k] == 0 || b[k] == 0 || a[k] == b[k]) continue;
      return a[k] > b[k];
    }
    return false;
  }

  // Dim d (outer) merges into d+1 (inner, already stored) when stride[d] == stride[d+1]*size[d+1].
  static bool coalescable(const std::array<int64_t, N>& outer, int64_t inner_size,
                          const std::array<int64_t, N>& inner) {
    for (int k = 0; k < N; ++k) {
      if (outer[k] != inner[k] * inner_size) return false;
    }
    return true;
  }

  template <typename Inner>
  void run_range(const Inner& inner, int64_t begin, int64_t end) const {
    const int64_t nd = static_cast<int64_t>(nd_);
    DimArray<int64_t> index(nd_);  // zeros
    int64_t rest = begin;
    for (int64_t d = nd - 1; d >= 0; --d) {
      index[d] = rest % sizes_[d];
      rest /= sizes_[d];
    }
    std::array<char*, N> ptrs;
    for (int k = 0; k < N; ++k) {
      ptrs[k] = base_[k];
      for (int64_t d = 0; d < nd; ++d) ptrs[k] += index[d] * strides_[d][k];
    }
    std::array<int64_t, N> inner_strides = strides_[nd - 1];
    int64_t pos = begin;
    while (pos < end) {
      const int64_t n = std::min(end - pos, sizes_[nd - 1] - index[nd - 1]);
      inner(ptrs.data(), inner_strides.data(), n);
      pos += n;
      for (int k = 0; k < N; ++k) ptrs[k] += n * inner_strides[k];
      index[nd - 1] += n;
      for (int64_t d = nd - 1; d > 0 && index[d] == sizes_[d]; --d) {
        index[d] = 0;
        ++index[d - 1];
        for (int k = 0; k < N; ++k) ptrs[k] += strides_[d - 1][k] - sizes_[d] * strides_[d][k];
      }
    }
  }

  int64_t numel_ = 0;
  std::array<char*, N> base_{};
  size_t nd_ = 0;  // dims in sizes_ and strides_, outermost first
  DimArray<int64_t> sizes_;
  DimArray<std::array<int64_t, N>> strides_;
};

// out = op(a) elementwise; In and Out are storage types, op works on storage types.
template <typename Out, typename In, typename Op>
void unary_loop(const Tensor& out, const Tensor& a, const Op& op) {
  StridedLoop<2>({out, a}).run([&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* x = reinterpret_cast<const In*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = op(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = op(*reinterpret_cast<const In*>(p[1] + i * s[1]));
      }
    }
  });
}

template <typename Out, typename In, typename Op>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Op& op) {
  StridedLoop<3>({out, a, b}).run([&](char** p, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
      const In yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], yv);
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
      const In xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = op(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            op(*reinterpret_cast<const In*>(p[1] + i * s[1]), *reinterpret_cast<const In*>(p[2] + i * s[2]));
      }
    }
  });
}

template <typename Out, typename In, typename Op>
void ternary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, const Op& op) {
  StridedLoop<4>({out, a, b, c}).run([&](char** p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<Out*>(p[0] + i * s[0]) =
          op(*reinterpret_cast<const In*>(p[1] + i * s[1]), *reinterpret_cast<const In*>(p[2] + i * s[2]),
             *reinterpret_cast<const In*>(p[3] + i * s[3]));
    }
  });
}

}  // namespace ember::EMBER_CPU_NS
