// CPU gather/scatter kernel (interface in src/ops/kernels.h).
#include <algorithm>
#include <vector>

#include "ember/parallel.h"
#include "loops.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// Visits every position p of `index` (row-major), giving p's element offset in each of the three
// tensors with dim `dim` left out of the third (where the index value goes instead).
template <typename F>
void for_each_position(const Tensor& index, const Tensor& a, const Tensor& b, int64_t dim, F f) {
  const int64_t nd = index.dim();
  const int64_t n = index.numel();
  if (n == 0) return;
  std::vector<int64_t> pos(static_cast<size_t>(nd), 0);
  int64_t oi = 0, oa = 0, ob = 0;
  for (int64_t k = 0; k < n; ++k) {
    f(oi, oa, ob);
    for (int64_t d = nd - 1; d >= 0; --d) {
      const int64_t sa = nonempty_stride(a, d);
      const int64_t sb = d == dim ? 0 : nonempty_stride(b, d);
      if (++pos[d] < index.sizes()[d]) {
        oi += index.strides()[d];
        oa += sa;
        ob += sb;
        break;
      }
      oi -= (index.sizes()[d] - 1) * index.strides()[d];
      oa -= (index.sizes()[d] - 1) * sa;
      ob -= (index.sizes()[d] - 1) * sb;
      pos[d] = 0;
    }
  }
}

void index_kernel(IndexOp op, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor& src) {
  const int64_t* idx = index.data<int64_t>();
  const int64_t nd = index.dim();
  const Tensor& indexed = op == IndexOp::Gather ? self : out;  // the tensor the index values address
  const int64_t size = nd == 0 ? 1 : nonempty_size(indexed, dim);
  const int64_t stride = nd == 0 ? 0 : nonempty_stride(indexed, dim);
  auto checked = [&](int64_t i) {  // Note [negative indices] in src/ops/indexing/indexing.cpp
    EMBER_CHECK(static_cast<uint64_t>(i) < static_cast<uint64_t>(size), Error, "[",
                op == IndexOp::Gather ? "gather" : "scatter", "] index ", i,
                " is out of bounds for dimension ", dim, " with size ", size);
    return i;
  };
  visit<kAll | kComplexHalf>(out.dtype(), "gather", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    if (op == IndexOp::Gather) {
      const T* s = self.data<T>();
      for_each_position(index, out, self, dim, [&](int64_t oi, int64_t oo, int64_t os) {
        o[oo] = s[os + checked(idx[oi]) * stride];
      });
      return;
    }
    const T* s = src.data<T>();
    using A = acc_t<T>;
    for_each_position(index, src, out, dim, [&](int64_t oi, int64_t os, int64_t oo) {
      T& target = o[oo + checked(idx[oi]) * stride];
      const A v = static_cast<A>(s[os]);
      const A t = static_cast<A>(target);
      switch (op) {
        case IndexOp::Scatter: target = s[os]; break;
        case IndexOp::ScatterAdd: target = static_cast<T>(wrap_add(t, v)); break;
        case IndexOp::ScatterMul: target = static_cast<T>(wrap_mul(t, v)); break;
        case IndexOp::ScatterMax:
          if constexpr (!is_complex_v<A>) target = (v > t || v != v) ? s[os] : target;
          break;
        case IndexOp::ScatterMin:
          if constexpr (!is_complex_v<A>) target = (v < t || v != v) ? s[os] : target;
          break;
        case IndexOp::Gather: break;
      }
    });
  });
}

EMBER_REGISTER_CPU_KERNEL(index_stub, &index_kernel);

void advanced_index_kernel(AdvancedIndexMode mode, const Tensor& dst, const Tensor& src, const Tensor& dst_b,
                           const Tensor& src_b, const Tensor& dst_r, const Tensor& src_r) {
  const int64_t nb = dst_b.numel();
  const int64_t nr = dst_r.numel();
  const int64_t* db = dst_b.data<int64_t>();
  const int64_t* sb = src_b.data<int64_t>();
  const int64_t* dr = dst_r.data<int64_t>();
  const int64_t* sr = src_r.data<int64_t>();
  // The common layout: the untouched dims are one contiguous run on both sides.
  bool dense = true;
  for (int64_t r = 0; r < nr && dense; ++r) dense = dr[r] == r && sr[r] == r;
  visit<kAll | kComplexHalf>(dst.dtype(), "index", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = dst.data<T>();
    const T* s = src.data<T>();
    auto row = [&](int64_t b) {
      T* drow = d + db[b];
      const T* srow = s + sb[b];
      if (mode == AdvancedIndexMode::Accumulate) {
        using A = acc_t<T>;
        for (int64_t r = 0; r < nr; ++r) {
          T& target = dense ? drow[r] : drow[dr[r]];
          target =
              static_cast<T>(wrap_add(static_cast<A>(target), static_cast<A>(dense ? srow[r] : srow[sr[r]])));
        }
      } else if (dense) {
        for (int64_t r = 0; r < nr; ++r) drow[r] = srow[r];
      } else {
        for (int64_t r = 0; r < nr; ++r) drow[dr[r]] = srow[sr[r]];
      }
    };
    if (mode == AdvancedIndexMode::Get) {  // distinct destinations: rows can run in parallel
      const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(nr, 1));
      parallel_for(0, nb, grain, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) row(b);
      });
    } else {
      for (int64_t b = 0; b < nb; ++b) row(b);
    }
  });
}

EMBER_REGISTER_CPU_KERNEL(advanced_index_stub, &advanced_index_kernel);

}  // namespace
}  // namespace ember::EMBER_CPU_NS
