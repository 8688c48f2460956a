// Greedy non-maximum suppression over boxes already sorted by score.
#include <algorithm>
#include <vector>

#include "ops.h"

namespace embervision::ops {

// The IoU is computed as embervision.ops.box_iou does (same operations in T), so the native and
// tensor paths agree on every threshold comparison; a 0/0 IoU (degenerate boxes) is NaN and
// suppresses nothing.
template <class T>
void nms_sorted(const T* boxes, int64_t n, double iou_threshold, uint8_t* keep) {
  std::vector<T> area(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const T* b = boxes + 4 * i;
    area[static_cast<size_t>(i)] = (b[2] - b[0]) * (b[3] - b[1]);
    keep[i] = 1;
  }
  const T threshold = static_cast<T>(iou_threshold);
  for (int64_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    const T* a = boxes + 4 * i;
    for (int64_t j = i + 1; j < n; ++j) {
      if (!keep[j]) continue;
      const T* b = boxes + 4 * j;
      const T w = std::max(std::min(a[2], b[2]) - std::max(a[0], b[0]), T(0));
      const T h = std::max(std::min(a[3], b[3]) - std::max(a[1], b[1]), T(0));
      const T inter = w * h;
      const T iou = inter / (area[static_cast<size_t>(i)] + area[static_cast<size_t>(j)] - inter);
      if (iou > threshold) keep[j] = 0;
    }
  }
}

template void nms_sorted<float>(const float*, int64_t, double, uint8_t*);
template void nms_sorted<double>(const double*, int64_t, double, uint8_t*);

}  // namespace embervision::ops
