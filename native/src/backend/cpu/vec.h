#pragma once
// Vectors of this build's width (Note [CPU capabilities]): 64 bytes in the AVX-512 build, 32 in
// the AVX2 build, 16 (SSE2) in the baseline build, written with GCC/Clang vector extensions so
// one source serves every width. Included only by per-capability kernel files.
#include <cstdint>
#include <cstring>

namespace ember::EMBER_CPU_NS {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

template <typename T>
struct VecOf {
  typedef T type __attribute__((vector_size(kVecBytes)));
};
template <typename T>
using Vec = typename VecOf<T>::type;
template <typename T>
constexpr int64_t kLanes = kVecBytes / static_cast<int64_t>(sizeof(T));

// Unaligned loads and stores (memcpy compiles to one vector move).
template <typename T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename T>
inline void store(T* p, const Vec<T>& v) {
  std::memcpy(p, &v, sizeof(v));
}
// x in every lane. (x - 0 rather than 0 + x: +0 + -0 is +0, which would lose a -0.0 argument.)
template <typename T>
inline Vec<T> splat(T x) {
  return x - Vec<T>{};
}

}  // namespace ember::EMBER_CPU_NS
