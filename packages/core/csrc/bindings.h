#pragma once
// Shared declarations of the ember._C module's parts.
#include <pybind11/pybind11.h>

#include "ember/dispatch_mode.h"
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
// Note [Python tensors]: a new reference to the object of a tensor that carries a subclass's
// state: its live object, or else a new instance of the subclass over this very tensor with the
// attributes the last one had when native code last handed it out.
PyObject* python_tensor_object(const Tensor& t);
// Records obj's attributes for t, a Python tensor that obj (its live object) hands to native code.
void note_python_tensor_object(py::handle obj, const Tensor& t);

}  // namespace ember::python

// Every Tensor ember._C hands to Python goes through this caster: a Python tensor comes back as
// its subclass, with its attributes (Note [Python tensors]); any other as before. Loading one
// records its object's attributes. Every file of the module includes this header before casting
// a Tensor, so all of them use this caster.
namespace pybind11::detail {
template <>
class type_caster<ember::Tensor> : public type_caster_base<ember::Tensor> {
  using base = type_caster_base<ember::Tensor>;

 public:
  bool load(handle src, bool convert) {
    if (!base::load(src, convert)) return false;
    const auto* t = static_cast<const ember::Tensor*>(value);
    if (t != nullptr && ember::dispatch_mode::is_python_tensor(*t))
      ember::python::note_python_tensor_object(src, *t);
    return true;
  }
  static handle cast(const ember::Tensor& t, return_value_policy policy, handle parent) {
    if (ember::dispatch_mode::is_python_tensor(t)) return ember::python::python_tensor_object(t);
    return base::cast(t, policy, parent);
  }
  static handle cast(ember::Tensor&& t, return_value_policy policy, handle parent) {
    if (ember::dispatch_mode::is_python_tensor(t)) return ember::python::python_tensor_object(t);
    return base::cast(std::move(t), policy, parent);
  }
  static handle cast(const ember::Tensor* t, return_value_policy policy, handle parent) {
    if (t != nullptr && ember::dispatch_mode::is_python_tensor(*t))
      return ember::python::python_tensor_object(*t);
    return base::cast(t, policy, parent);
  }
};
}  // namespace pybind11::detail
