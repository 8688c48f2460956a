#pragma once
// Pointwise loops for functions written on vectors (vec_math.h): float32 operands run the vector
// function over whole vectors, float16/bfloat16 widen to float32 vectors and narrow back, and
// float64 runs the scalar function (the C library's, already within 1 ulp). Strided runs and
// the last partial vector of a run go through a small buffer, so every element takes the same
// vector path whatever the layout (results do not depend on strides or thread count).
#include <algorithm>
#include <type_traits>

#include "backend/cpu/loops.h"
#include "backend/cpu/vec.h"

namespace ember::EMBER_CPU_NS {

template <typename T>
constexpr bool kVecFloat = std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// out = f(in...) elementwise for N inputs of type T broadcast to out (also of type T).
// vf: Vec<float>(Vec<float>...), sf: double(double...).
template <typename T, int N, typename VF, typename SF>
void vec_map(const std::array<Tensor, N + 1>& operands, const VF& vf, const SF& sf) {
  constexpr int64_t L = kLanes<float>;
  StridedLoop<N + 1>(operands).run([&](char** p, const int64_t* s, int64_t n) {
    if constexpr (kVecFloat<T>) {
      bool contiguous = std::is_same_v<T, float>;
      for (int k = 0; k <= N; ++k) contiguous = contiguous && s[k] == static_cast<int64_t>(sizeof(T));
      int64_t i = 0;
      if (contiguous) {
        for (; i + L <= n; i += L) {
          std::array<Vec<float>, N> in;
          for (int k = 0; k < N; ++k) in[k] = load(reinterpret_cast<const float*>(p[k + 1]) + i);
          store(reinterpret_cast<float*>(p[0]) + i, std::apply(vf, in));
        }
      }
      for (; i < n; i += L) {  // through a buffer: strided, reduced precision or the tail
        const int64_t m = std::min(L, n - i);
        std::array<Vec<float>, N> in{};
        for (int k = 0; k < N; ++k)
          for (int64_t j = 0; j < m; ++j)
            in[k][j] = static_cast<float>(*reinterpret_cast<const T*>(p[k + 1] + (i + j) * s[k + 1]));
        const Vec<float> r = std::apply(vf, in);
        for (int64_t j = 0; j < m; ++j) *reinterpret_cast<T*>(p[0] + (i + j) * s[0]) = static_cast<T>(r[j]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        std::array<double, N> in;
        for (int k = 0; k < N; ++k)
          in[k] = static_cast<double>(*reinterpret_cast<const T*>(p[k + 1] + i * s[k + 1]));
        *reinterpret_cast<T*>(p[0] + i * s[0]) = static_cast<T>(std::apply(sf, in));
      }
    }
  });
}

}  // namespace ember::EMBER_CPU_NS
