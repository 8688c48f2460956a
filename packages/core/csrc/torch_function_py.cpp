// The native half of the __torch_function__ protocol (Note [__torch_function__]): the per-thread
// switches, the fallback overload of every overridable binding, _disabled_torch_function_impl.
#include <algorithm>

#include "bindings.h"
#include "op_binding_support.h"

namespace ember::python {

thread_local TorchFunctionState torch_function_state;
PyTypeObject* tensor_type = nullptr;

namespace {

PyObject* torch_function_name = nullptr;  // interned "__torch_function__"
PyObject* disabled_impl = nullptr;        // ember._C._disabled_torch_function_impl
PyObject* python_handler = nullptr;       // ember.overrides._dispatch_binding

}  // namespace

// The type defines or inherits a __torch_function__ that is not _disabled_torch_function_impl.
bool type_overrides_torch_function(PyTypeObject* type) {
  PyObject* found = _PyType_Lookup(type, torch_function_name);  // borrowed; the type's method cache
  return found != nullptr && found != disabled_impl;
}

namespace {

// Whether `obj` (an argument, or an element of a list or tuple argument) asks for dispatch.
bool asks_for_torch_function(PyObject* obj, bool top_level) {
  PyTypeObject* type = Py_TYPE(obj);
  if (type == tensor_type) return false;
  if (top_level && (PyList_Check(obj) || PyTuple_Check(obj))) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (asks_for_torch_function(PySequence_Fast_GET_ITEM(obj, i), false)) return true;
    return false;
  }
  return type_overrides_torch_function(type);
}

// The RAII form of DisableTorchFunctionSubclass, for _disabled_torch_function_impl.
struct SubclassesDisabled {
  int previous = torch_function_state.disabled;
  SubclassesDisabled() { torch_function_state.disabled = std::max(previous, 1); }
  ~SubclassesDisabled() { torch_function_state.disabled = previous; }
};

// Whether a call with these arguments (a tuple, and a dict or None) goes to __torch_function__.
bool call_asks_for_torch_function(py::handle args, py::handle kwargs) {
  return call_dispatches([&] {
    for (py::handle a : args)
      if (asks_for_torch_function(a.ptr(), true)) return true;
    if (!kwargs.is_none())
      for (auto item : py::reinterpret_borrow<py::dict>(kwargs))
        if (asks_for_torch_function(item.second.ptr(), true)) return true;
    return false;
  });
}

std::vector<std::pair<py::handle, const char*>> overridable_bindings;

}  // namespace

void note_overridable(py::handle scope, const char* name) {
  overridable_bindings.emplace_back(scope, name);
}

py::object torch_function_fallback(py::handle scope, const char* name, const py::object& plain, py::args args,
                                   const py::kwargs& kwargs) {
  // No override: the binding itself, converting arguments (or raising its usual TypeError).
  if (python_handler == nullptr || !call_asks_for_torch_function(args, kwargs)) return plain(*args, **kwargs);
  return py::reinterpret_borrow<py::object>(python_handler)(scope.attr(name), args, kwargs);
}

namespace {

// Note [overridable Python functions]: the Python-level public functions of ember's namespaces
// (ember.max, F.linear, ...) are wrapped in this type (ember.overrides._overridable), so that they
// dispatch to __torch_function__ under their own name, as PyTorch's do. It is a C type with
// vectorcall, not a Python closure: a closure's frame and *args repacking cost about 0.2 us per
// call, this costs a type comparison per argument and hands the arguments through unchanged. It
// binds like a function when set on a class, and pickles and copies by its qualified name.
struct OverridableFunction {
  PyObject_HEAD PyObject* func;
  PyObject* dict;
  PyObject* weakrefs;
  vectorcallfunc vectorcall;
};

PyObject* overridable_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* f = reinterpret_cast<OverridableFunction*>(self);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  const bool dispatch = python_handler != nullptr && call_dispatches([&] {
                          for (Py_ssize_t i = 0; i < nargs + nkw; ++i)
                            if (asks_for_torch_function(args[i], true)) return true;
                          return false;
                        });
  if (!dispatch) return PyObject_Vectorcall(f->func, args, nargsf, kwnames);
  PyObject* positional = PyTuple_New(nargs);
  PyObject* keywords = PyDict_New();
  if (positional == nullptr || keywords == nullptr) {
    Py_XDECREF(positional);
    Py_XDECREF(keywords);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) PyTuple_SET_ITEM(positional, i, Py_NewRef(args[i]));
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    if (PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
      Py_DECREF(positional);
      Py_DECREF(keywords);
      return nullptr;
    }
  }
  PyObject* result = PyObject_CallFunctionObjArgs(python_handler, self, positional, keywords, nullptr);
  Py_DECREF(positional);
  Py_DECREF(keywords);
  return result;
}

PyObject* overridable_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* func = nullptr;
  if (!PyArg_ParseTuple(args, "O:_OverridableFunction", &func)) return nullptr;
  if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "_OverridableFunction() takes no keyword arguments");
    return nullptr;
  }
  if (!PyCallable_Check(func)) {
    PyErr_Format(PyExc_TypeError, "_OverridableFunction() expected a callable, but got %s",
                 Py_TYPE(func)->tp_name);
    return nullptr;
  }
  auto* f = reinterpret_cast<OverridableFunction*>(type->tp_alloc(type, 0));
  if (f == nullptr) return nullptr;
  f->func = Py_NewRef(func);
  f->dict = PyDict_New();
  f->vectorcall = overridable_call;
  if (f->dict == nullptr) {
    Py_DECREF(f);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(f);
}

int overridable_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* f = reinterpret_cast<OverridableFunction*>(self);
  Py_VISIT(f->func);
  Py_VISIT(f->dict);
  return 0;
}

int overridable_clear(PyObject* self) {
  auto* f = reinterpret_cast<OverridableFunction*>(self);
  Py_CLEAR(f->func);
  Py_CLEAR(f->dict);
  return 0;
}

void overridable_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  if (reinterpret_cast<OverridableFunction*>(self)->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
  overridable_clear(self);
  Py_TYPE(self)->tp_free(self);
}

PyObject* overridable_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);  // a function on a class binds, as a Python function does
}

PyObject* overridable_repr(PyObject* self) {
  return PyObject_Repr(reinterpret_cast<OverridableFunction*>(self)->func);
}

PyObject* overridable_reduce(PyObject* self, PyObject*) {
  return PyObject_GetAttrString(self, "__qualname__");  // pickled and copied as the global it is
}

PyMethodDef overridable_methods[] = {
    {"__reduce__", overridable_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef overridable_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject overridable_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

void bind_torch_function(py::module_& m, py::class_<Tensor>& tensor) {
  overridable_type.tp_name = "ember._C._OverridableFunction";
  overridable_type.tp_doc =
      "A Python-level public function that dispatches to __torch_function__ (Note [overridable Python "
      "functions]).";
  overridable_type.tp_basicsize = sizeof(OverridableFunction);
  overridable_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
  overridable_type.tp_new = overridable_new;
  overridable_type.tp_dealloc = overridable_dealloc;
  overridable_type.tp_traverse = overridable_traverse;
  overridable_type.tp_clear = overridable_clear;
  overridable_type.tp_call = PyVectorcall_Call;
  overridable_type.tp_vectorcall_offset = offsetof(OverridableFunction, vectorcall);
  overridable_type.tp_dictoffset = offsetof(OverridableFunction, dict);
  overridable_type.tp_weaklistoffset = offsetof(OverridableFunction, weakrefs);
  overridable_type.tp_descr_get = overridable_descr_get;
  overridable_type.tp_repr = overridable_repr;
  overridable_type.tp_methods = overridable_methods;
  overridable_type.tp_getset = overridable_getset;
  if (PyType_Ready(&overridable_type) < 0) throw py::error_already_set();
  m.attr("_OverridableFunction") = py::handle(reinterpret_cast<PyObject*>(&overridable_type));

  tensor_type = reinterpret_cast<PyTypeObject*>(tensor.ptr());
  torch_function_name = PyUnicode_InternFromString("__torch_function__");
  m.def(
      "_disabled_torch_function_impl",
      [](const py::object& func, const py::object&, const py::object& args, const py::object& kwargs) {
        SubclassesDisabled guard;
        py::tuple positional = args.is_none() ? py::tuple() : py::tuple(args);
        if (kwargs.is_none()) return func(*positional);
        return func(*positional, **py::dict(kwargs));
      },
      py::arg("func"), py::arg("types"), py::arg("args") = py::tuple(), py::arg("kwargs") = py::none(),
      "The __torch_function__ of a Tensor subclass that opts out of the protocol (nn.Parameter): runs func "
      "with subclass dispatch disabled and returns its result unchanged.");
  disabled_impl = m.attr("_disabled_torch_function_impl").ptr();  // the module keeps it alive
  m.def("_set_torch_function_handler", [](py::object handler) { python_handler = handler.release().ptr(); });
  m.def(
      "_set_torch_function_state",
      [](int disabled) {
        EMBER_CHECK(disabled >= 0 && disabled <= 2, ValueError,
                    "[_set_torch_function_state] expected 0, 1 or 2, but got ", disabled);
        const int previous = torch_function_state.disabled;
        torch_function_state.disabled = disabled;
        return previous;
      },
      "Sets this thread's __torch_function__ switch (0 enabled, 1 subclasses disabled, 2 all disabled); "
      "returns the previous one.");
  m.def("_get_torch_function_state", [] { return torch_function_state.disabled; });
  m.def(
      "_instancemethod",
      [](const py::object& func) {
        return py::reinterpret_steal<py::object>(PyInstanceMethod_New(func.ptr()));
      },
      "func as a method that binds self (how pybind11 stores a method in a class dict).");
  m.def("_set_torch_function_mode_depth", [](int64_t depth) { torch_function_state.modes = depth; });
  m.def(
      "_has_torch_function",
      [](const py::tuple& args, const py::object& kwargs) {
        return call_asks_for_torch_function(args, kwargs);
      },
      py::arg("args"), py::arg("kwargs").none(true));
  m.def(
      "_overridable_bindings",
      [] {
        py::list out;
        for (const auto& [scope, name] : overridable_bindings) out.append(py::make_tuple(scope, name));
        return out;
      },
      "(scope, name) of every native binding that dispatches to __torch_function__.");
}

}  // namespace ember::python
