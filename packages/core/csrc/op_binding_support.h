#pragma once
// Argument types and casters the generated op bindings use (ops_bindings.cpp).
#include <pybind11/complex.h>
#include <pybind11/stl.h>

#include <optional>

#include "bindings.h"
#include "ember/ops.h"
#include "ember/promotion.h"

namespace ember::python {

// A Tensor argument that also takes a Python number, wrapped as a 0-dim tensor that ranks
// lowest in type promotion (Note [type promotion]), as PyTorch's wrapped numbers do.
struct TensorArg {
  Tensor tensor;
};
// An int[] argument that also takes a lone int, as PyTorch's IntArrayRef does.
struct IntListArg {
  IntList values;
};
inline const IntList& unwrap(const IntListArg& a) {
  return a.values;
}
inline std::optional<IntList> unwrap(const std::optional<IntListArg>& a) {
  return a ? std::optional<IntList>(a->values) : std::nullopt;
}

bool load_scalar(py::handle src, Scalar& out);
// A tensor, or a Python number as a wrapped 0-dim tensor; false for anything else.
bool load_tensor_or_number(py::handle src, Tensor& out);

void bind_generated_ops(py::module_& m, py::class_<Tensor>& tensor);

// Note [__torch_function__]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// The generated op bindings and the Tensor operators take part in PyTorch's override protocol
// (ember/overrides.py). Their Tensor arguments load through TensorIn / TensorArg / SelfObject,
// which decline a tensor whose type overrides __torch_function__ (any Tensor subclass not marked
// with _disabled_torch_function_impl), and every tensor while a TorchFunctionMode is active. Each
// such binding has a second overload, (*args, **kwargs), registered by def_overridable: it is
// reached when the first declines or fails to convert, and hands the call to Python's
// handle_torch_function when an argument (or a mode) asks for it; otherwise it calls the binding
// on its own (`plain`, the same function without the fallback), which converts as before. A
// plain ember.Tensor costs one type comparison per argument.
struct TorchFunctionState {
  int disabled = 0;   // 0: enabled; 1: subclasses disabled (modes still run); 2: all disabled
  int64_t modes = 0;  // depth of this thread's TorchFunctionMode stack
};
extern thread_local TorchFunctionState torch_function_state;
extern PyTypeObject* tensor_type;  // ember._C.Tensor
bool type_overrides_torch_function(PyTypeObject* type);

inline bool torch_function_mode_active() {
  return torch_function_state.modes > 0 && torch_function_state.disabled != 2;
}
// Whether this thread's switches send a call to __torch_function__: never when all is disabled,
// always under a mode, else when `an_argument_asks()` (and subclasses are not disabled).
template <typename AnArgumentAsks>
inline bool call_dispatches(AnArgumentAsks&& an_argument_asks) {
  const TorchFunctionState& s = torch_function_state;
  if (s.disabled == 2) return false;
  if (s.modes > 0) return true;
  return s.disabled == 0 && an_argument_asks();
}
// Whether a call with this tensor argument goes to Python's __torch_function__ dispatch.
inline bool defers_to_torch_function(PyObject* tensor) {
  return call_dispatches(
      [&] { return Py_TYPE(tensor) != tensor_type && type_overrides_torch_function(Py_TYPE(tensor)); });
}
// A tensor argument that does not defer (TensorItemIn, SelfObject).
inline bool load_tensor_in(py::handle src, Tensor& out) {
  if (!py::isinstance<Tensor>(src) || defers_to_torch_function(src.ptr())) return false;
  out = src.cast<Tensor>();
  return true;
}

// A Tensor argument of an overridable binding (tensors only): the argument's own Tensor, which
// the call's Python object keeps alive (no reference-count traffic per argument).
struct TensorIn {
  const Tensor* tensor = nullptr;
};
// An item of a Tensor[] argument, copied: a sequence may create its items as it is read.
struct TensorItemIn {
  Tensor tensor;
};
// The Tensor[] result of a function or method binding: a tuple, as PyTorch's bindings return one
// (torch.split(x, 1) and x.unbind() are tuples; ember.ops.aten.split stays a list, as torch.ops').
struct TensorTuple {
  std::vector<Tensor> tensors;
};
// The self of an in-place method, which returns its own Python object (x.add_(1) is x).
struct SelfObject {
  py::object obj;
  Tensor tensor;
};
inline const Tensor& unwrap(const Tensor& t) {  // an in-place method's self, already unwrapped
  return t;
}
inline const Tensor& unwrap(const TensorIn& a) {
  return *a.tensor;
}
inline std::optional<Tensor> unwrap(const std::optional<TensorIn>& a) {
  return a ? std::optional<Tensor>(*a->tensor) : std::nullopt;
}
inline std::vector<Tensor> unwrap(const std::vector<TensorItemIn>& a) {
  std::vector<Tensor> out;
  out.reserve(a.size());
  for (const TensorItemIn& t : a) out.push_back(t.tensor);
  return out;
}
inline std::vector<std::optional<Tensor>> unwrap(const std::vector<std::optional<TensorItemIn>>& a) {
  std::vector<std::optional<Tensor>> out;
  out.reserve(a.size());
  for (const auto& t : a) out.push_back(t ? std::optional<Tensor>(t->tensor) : std::nullopt);
  return out;
}

// The (*args, **kwargs) overload of an overridable binding `name` of `scope`.
py::object torch_function_fallback(py::handle scope, const char* name, const py::object& plain, py::args args,
                                   const py::kwargs& kwargs);

void note_overridable(py::handle scope, const char* name);  // for ember.overrides' function lists

// scope.def(name, f, extra...) taking part in __torch_function__ (Note [__torch_function__]).
template <typename F, typename... Extra>
void def_overridable(py::module_& scope, const char* name, F&& f, const Extra&... extra) {
  py::object plain = py::cpp_function(f, py::name(name), py::scope(scope), extra...);
  scope.def(name, std::forward<F>(f), extra...);
  note_overridable(scope, name);
  scope.def(name, [plain, owner = py::handle(scope), name](py::args args, const py::kwargs& kwargs) {
    return torch_function_fallback(owner, name, plain, std::move(args), kwargs);
  });
}
// A Tensor method; __torch_function__ is handed Tensor.<public> (an operator's named method).
template <typename F, typename... Extra>
void def_overridable_as(py::class_<Tensor>& scope, const char* name, const char* public_name, F&& f,
                        const Extra&... extra) {
  py::object plain = py::cpp_function(f, py::name(name), py::is_method(scope), extra...);
  scope.def(name, std::forward<F>(f), extra...);
  note_overridable(scope, name);
  scope.def(name, [plain, owner = py::handle(scope), public_name](py::args args, const py::kwargs& kwargs) {
    return torch_function_fallback(owner, public_name, plain, std::move(args), kwargs);
  });
}
template <typename F, typename... Extra>
void def_overridable(py::class_<Tensor>& scope, const char* name, F&& f, const Extra&... extra) {
  def_overridable_as(scope, name, name, std::forward<F>(f), extra...);
}

}  // namespace ember::python

namespace pybind11::detail {

template <>
struct type_caster<ember::Scalar> {
  PYBIND11_TYPE_CASTER(ember::Scalar, const_name("Number"));
  bool load(handle src, bool) { return ember::python::load_scalar(src, value); }
  static handle cast(const ember::Scalar& s, return_value_policy, handle) {
    switch (s.kind()) {
      case ember::Scalar::Kind::Bool: return pybind11::bool_(s.to_bool()).release();
      case ember::Scalar::Kind::Int: return pybind11::int_(s.to_int()).release();
      case ember::Scalar::Kind::Float: return pybind11::float_(s.to_double()).release();
      case ember::Scalar::Kind::Complex: return pybind11::cast(s.to_complex()).release();
    }
    return pybind11::none().release();
  }
};

template <>
struct type_caster<ember::python::TensorArg> {
  PYBIND11_TYPE_CASTER(ember::python::TensorArg, const_name("Tensor | Number"));
  bool load(handle src, bool) {
    if (isinstance<ember::Tensor>(src)) {
      if (ember::python::defers_to_torch_function(src.ptr())) return false;
      value.tensor = src.cast<ember::Tensor>();
      return true;
    }
    ember::Scalar s;
    if (!ember::python::load_scalar(src, s)) return false;
    value.tensor = ember::wrapped_number(s);
    return true;
  }
  static handle cast(const ember::python::TensorArg& a, return_value_policy p, handle parent) {
    return type_caster_base<ember::Tensor>::cast(a.tensor, p, parent);
  }
};

template <>
struct type_caster<ember::python::IntListArg> {
  PYBIND11_TYPE_CASTER(ember::python::IntListArg, const_name("int | Sequence[int]"));
  bool load(handle src, bool convert) {
    // sizes decline too while a mode is active, so that factories (zeros(2, 3)) reach it
    if (PyBool_Check(src.ptr()) || ember::python::torch_function_mode_active()) return false;
    if (PyLong_Check(src.ptr())) {
      value.values = {src.cast<int64_t>()};
      return true;
    }
    if (!isinstance<sequence>(src) || isinstance<str>(src)) return false;
    value.values.clear();
    for (handle item : reinterpret_borrow<sequence>(src)) {
      if (PyBool_Check(item.ptr()) || !PyIndex_Check(item.ptr())) return false;
      value.values.push_back(item.cast<int64_t>());
    }
    return true;
  }
  static handle cast(const ember::python::IntListArg& a, return_value_policy p, handle parent) {
    return list_caster<std::vector<int64_t>, int64_t>::cast(a.values, p, parent);
  }
};

template <>
struct type_caster<ember::python::TensorIn> {
  PYBIND11_TYPE_CASTER(ember::python::TensorIn, const_name("Tensor"));
  bool load(handle src, bool) {
    if (!base_.load(src, false) || ember::python::defers_to_torch_function(src.ptr())) return false;
    value.tensor = &static_cast<ember::Tensor&>(base_);
    return true;
  }
  static handle cast(const ember::python::TensorIn& a, return_value_policy p, handle parent) {
    return type_caster_base<ember::Tensor>::cast(*a.tensor, p, parent);
  }

 private:
  type_caster_base<ember::Tensor> base_;
};

template <>
struct type_caster<ember::python::TensorItemIn> {
  PYBIND11_TYPE_CASTER(ember::python::TensorItemIn, const_name("Tensor"));
  bool load(handle src, bool) { return ember::python::load_tensor_in(src, value.tensor); }
  static handle cast(const ember::python::TensorItemIn& a, return_value_policy p, handle parent) {
    return type_caster_base<ember::Tensor>::cast(a.tensor, p, parent);
  }
};

template <>
struct type_caster<ember::python::TensorTuple> {
  PYBIND11_TYPE_CASTER(ember::python::TensorTuple, const_name("tuple[Tensor, ...]"));
  bool load(handle, bool) { return false; }  // a result type only
  static handle cast(const ember::python::TensorTuple& a, return_value_policy p, handle parent) {
    tuple out(a.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i)
      out[i] = reinterpret_steal<object>(type_caster_base<ember::Tensor>::cast(a.tensors[i], p, parent));
    return out.release();
  }
};

template <>
struct type_caster<ember::python::SelfObject> {
  PYBIND11_TYPE_CASTER(ember::python::SelfObject, const_name("Tensor"));
  bool load(handle src, bool) {
    if (!ember::python::load_tensor_in(src, value.tensor)) return false;
    value.obj = reinterpret_borrow<object>(src);
    return true;
  }
  static handle cast(const ember::python::SelfObject& a, return_value_policy, handle) {
    return a.obj.inc_ref();
  }
};

}  // namespace pybind11::detail
