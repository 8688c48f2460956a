// ember._C profiler entry points used by ember.profiler.
#include <pybind11/stl.h>

#include <memory>

#include "bindings.h"
#include "ember/profiler.h"

namespace ember::python {
namespace {

// The Python frames of the thread calling an op, innermost first, as "file(line): function".
std::vector<std::string> python_stack() {
  py::gil_scoped_acquire gil;
  std::vector<std::string> frames;
  PyFrameObject* frame = PyEval_GetFrame();
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    frames.push_back(py::reinterpret_borrow<py::str>(code->co_filename).cast<std::string>() + "(" +
                     std::to_string(PyFrame_GetLineNumber(frame)) +
                     "): " + py::reinterpret_borrow<py::str>(code->co_name).cast<std::string>());
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return frames;
}

}  // namespace

void bind_profiler(py::module_& m) {
  m.def(
      "_profiler_start",
      [](bool record_shapes, bool profile_memory, bool with_stack) {
        profiler::set_stack_provider(&python_stack);
        profiler::start(profiler::Options{record_shapes, profile_memory, with_stack});
      },
      py::arg("record_shapes"), py::arg("profile_memory"), py::arg("with_stack"));
  // Events as tuples: (name, start_ns, end_ns, thread, depth, user_scope, input_shapes, bytes,
  // stack).
  m.def("_profiler_stop", [] {
    py::list out;
    for (const profiler::Event& e : profiler::stop()) {
      out.append(py::make_tuple(e.name, e.start_ns, e.end_ns, e.thread, e.depth, e.user_scope, e.input_shapes,
                                e.allocated_bytes, e.stack));
    }
    return out;
  });
  m.def("_profiler_active", [] { return profiler::active(); });
  m.def("_profiler_now_ns", &profiler::now_ns);
  // record_function: a scope object the Python context manager opens and closes.
  py::class_<profiler::RecordScope>(m, "_RecordScope").def(py::init([](const std::string& name) {
    return std::make_unique<profiler::RecordScope>(name, true);
  }));
}

}  // namespace ember::python
