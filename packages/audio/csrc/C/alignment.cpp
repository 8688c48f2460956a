// CTC forced alignment: the Viterbi path of a target sequence through the CTC lattice
// (blank, y1, blank, y2, ..., blank), as frame-wise labels.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace py = pybind11;

namespace emberaudio {
namespace {

template <typename T>
py::array_t<int64_t> forced_align_impl(py::array_t<T, py::array::c_style> log_probs,
                                       py::array_t<int64_t, py::array::c_style> targets, int64_t blank) {
  if (log_probs.ndim() != 2) throw std::invalid_argument("log_probs must be 2-D (input length, num classes)");
  if (targets.ndim() != 1) throw std::invalid_argument("targets must be 1-D");
  const int64_t tn = log_probs.shape(0), c = log_probs.shape(1), l = targets.shape(0);
  if (blank < 0 || blank >= c) throw std::invalid_argument("blank must be within [0, num classes)");
  const int64_t* y = targets.data();
  int64_t repeats = 0;
  for (int64_t i = 0; i < l; ++i) {
    if (y[i] < 0 || y[i] >= c)
      throw std::invalid_argument("targets values must be within [0, num classes = " + std::to_string(c) +
                                  ")");
    if (y[i] == blank)
      throw std::invalid_argument("targets must not contain the blank index " + std::to_string(blank));
    if (i > 0 && y[i] == y[i - 1]) ++repeats;
  }
  if (tn < l + repeats)
    throw std::invalid_argument(
        "targets length is too long for CTC. Found log_probs length: " + std::to_string(tn) +
        ", targets length: " + std::to_string(l) + ", and number of repeats: " + std::to_string(repeats));
  py::array_t<int64_t> path(tn);
  int64_t* out = path.mutable_data();
  if (tn == 0) return path;
  const T* lp = log_probs.data();
  const int64_t s_len = 2 * l + 1;
  auto label = [&](int64_t s) { return s % 2 == 0 ? blank : y[s / 2]; };
  {
    py::gil_scoped_release release;
    std::vector<double> prev(s_len, -INFINITY), cur(s_len);
    std::vector<uint8_t> back(tn * s_len, 0);  // 0: from s, 1: from s-1, 2: from s-2
    prev[0] = lp[blank];
    if (s_len > 1) prev[1] = lp[label(1)];
    for (int64_t t = 1; t < tn; ++t) {
      for (int64_t s = 0; s < s_len; ++s) {
        double best = prev[s];
        uint8_t from = 0;
        if (s >= 1 && prev[s - 1] > best) best = prev[s - 1], from = 1;
        if (s >= 2 && s % 2 == 1 && label(s) != label(s - 2) && prev[s - 2] > best)
          best = prev[s - 2], from = 2;
        cur[s] = best + double(lp[t * c + label(s)]);
        back[t * s_len + s] = from;
      }
      prev.swap(cur);
    }
    // The path ends on the last blank or the last label.
    int64_t s = s_len - 1;
    if (s_len > 1 && prev[s_len - 2] > prev[s_len - 1]) s = s_len - 2;
    for (int64_t t = tn - 1; t >= 0; --t) {
      out[t] = label(s);
      s -= back[t * s_len + s];
    }
  }
  return path;
}

}  // namespace

void register_alignment(py::module_& m) {
  m.def("forced_align_f32", &forced_align_impl<float>, py::arg("log_probs"), py::arg("targets"),
        py::arg("blank"));
  m.def("forced_align_f64", &forced_align_impl<double>, py::arg("log_probs"), py::arg("targets"),
        py::arg("blank"));
}

}  // namespace emberaudio
