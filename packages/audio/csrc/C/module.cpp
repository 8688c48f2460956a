// emberaudio._C: the audio package's CPU algorithms (RNN-T loss, CTC forced alignment, CTC
// beam-search decoding with lexicon, ARPA and custom language models).
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace emberaudio {
void register_rnnt(py::module_& m);
void register_alignment(py::module_& m);
void register_ctc_decoder(py::module_& m);
}  // namespace emberaudio

PYBIND11_MODULE(_C, m) {
  m.doc() = "emberaudio's native algorithms: RNN-T loss, forced alignment, CTC beam search";
  m.attr("built_for_core") = EMBERAUDIO_BUILT_FOR_CORE;
  m.attr("__version__") = EMBERAUDIO_VERSION;
  emberaudio::register_rnnt(m);
  emberaudio::register_alignment(m);
  emberaudio::register_ctc_decoder(m);
}
