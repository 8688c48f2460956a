#pragma once
// Shared declarations of the ember._C module's parts.
#include <pybind11/pybind11.h>

#include "ember/ember.h"

namespace ember::python {
namespace py = pybind11;

py::class_<Tensor> bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_autograd(py::module_& m, py::class_<Tensor>& tensor);
void bind_python_function(py::module_& m);
void bind_dlpack(py::module_& m, py::class_<Tensor>& tensor);
void bind_profiler(py::module_& m);
void bind_size(py::module_& m);
void bind_torch_function(py::module_& m, py::class_<Tensor>& tensor);
// A new reference to an ember.Size of these sizes (the type of Tensor.shape).
PyObject* make_size(const IntList& sizes);
// The Python object of a dtype / device (ember.float32, ember.device("cpu")).
py::object dtype_object(DType d);
DType dtype_from_object(py::handle obj, const char* what);

}  // namespace ember::python
