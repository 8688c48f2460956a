// ember.Size (torch.Size): the type of Tensor.shape and Tensor.size(), a tuple of ints.
//
// A C type rather than a Python class because shapes are read everywhere: a Python subclass made
// x.shape cost a class construction and x.shape[0] a Python frame (25x a tuple's indexing). This
// type only wraps tuple's own slots so that slicing, + and * give a Size again.
#include "bindings.h"

namespace ember::python {
namespace {

PyTypeObject size_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// A new Size holding the items of `items` (a tuple); steals the reference to `items`.
PyObject* size_from_tuple(PyObject* items) {
  if (items == nullptr) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(items);
  PyObject* out = size_type.tp_alloc(&size_type, n);
  if (out != nullptr) {
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PyTuple_GET_ITEM(items, i);
      Py_INCREF(item);
      PyTuple_SET_ITEM(out, i, item);
    }
  }
  Py_DECREF(items);
  return out;
}

// Size(sizes=()): anything with __index__ counts as an int (int, bool, NumPy integers, 0-dim
// integer tensors), as torch.Size; a float or a str is refused rather than truncated.
PyObject* size_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* sizes = nullptr;
  static const char* keywords[] = {"sizes", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:Size", const_cast<char**>(keywords), &sizes))
    return nullptr;
  PyObject* items = PyList_New(0);
  if (items == nullptr) return nullptr;
  if (sizes != nullptr) {
    PyObject* iterator = PyObject_GetIter(sizes);
    if (iterator == nullptr) {
      Py_DECREF(items);
      return nullptr;
    }
    for (Py_ssize_t i = 0;; ++i) {
      PyObject* item = PyIter_Next(iterator);
      if (item == nullptr) break;
      PyObject* index = PyNumber_Index(item);
      if (index == nullptr) {
        PyErr_Format(PyExc_TypeError, "ember.Size() takes an iterable of 'int' (item %zd is '%s')", i,
                     Py_TYPE(item)->tp_name);
      }
      Py_DECREF(item);
      if (index == nullptr || PyList_Append(items, index) != 0) {
        Py_XDECREF(index);
        break;
      }
      Py_DECREF(index);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
      Py_DECREF(items);
      return nullptr;
    }
  }
  PyObject* as_tuple = PyList_AsTuple(items);
  Py_DECREF(items);
  if (as_tuple == nullptr) return nullptr;
  if (type == &size_type) return size_from_tuple(as_tuple);
  // A Python subclass of Size: tuple's constructor fills any subtype.
  PyObject* call_args = PyTuple_Pack(1, as_tuple);
  Py_DECREF(as_tuple);
  if (call_args == nullptr) return nullptr;
  PyObject* out = PyTuple_Type.tp_new(type, call_args, nullptr);
  Py_DECREF(call_args);
  return out;
}

PyObject* size_subscript(PyObject* self, PyObject* key) {
  PyObject* item = PyTuple_Type.tp_as_mapping->mp_subscript(self, key);
  return item != nullptr && PySlice_Check(key) ? size_from_tuple(item) : item;
}

// Size + tuple and tuple + Size give a Size (tuple's own concatenation gives a tuple).
PyObject* size_add(PyObject* left, PyObject* right) {
  if (!PyTuple_Check(left) || !PyTuple_Check(right)) {
    if (PyObject_TypeCheck(left, &size_type)) {
      PyErr_Format(PyExc_TypeError, "can only concatenate tuple (not %s) to ember.Size",
                   Py_TYPE(right)->tp_name);
      return nullptr;
    }
    Py_RETURN_NOTIMPLEMENTED;
  }
  return size_from_tuple(PyTuple_Type.tp_as_sequence->sq_concat(left, right));
}

PyObject* size_multiply(PyObject* left, PyObject* right) {
  const bool size_on_left = PyObject_TypeCheck(left, &size_type);
  PyObject* count = size_on_left ? right : left;
  if (!PyIndex_Check(count)) Py_RETURN_NOTIMPLEMENTED;  // tuple's repeat then raises its TypeError
  const Py_ssize_t times = PyNumber_AsSsize_t(count, PyExc_OverflowError);
  if (times == -1 && PyErr_Occurred()) return nullptr;
  return size_from_tuple(PyTuple_Type.tp_as_sequence->sq_repeat(size_on_left ? left : right, times));
}

PyObject* size_repr(PyObject* self) {
  PyObject* items = PySequence_List(self);
  if (items == nullptr) return nullptr;
  PyObject* out = PyUnicode_FromFormat("ember.Size(%R)", items);
  Py_DECREF(items);
  return out;
}

PyObject* size_numel(PyObject* self, PyObject*) {
  // Python ints, as torch's: the product of huge shapes must not wrap around.
  PyObject* count = PyLong_FromLong(1);
  for (Py_ssize_t i = 0; count != nullptr && i < PyTuple_GET_SIZE(self); ++i) {
    PyObject* next = PyNumber_Multiply(count, PyTuple_GET_ITEM(self, i));
    Py_DECREF(count);
    count = next;
  }
  return count;
}

PyObject* size_reduce(PyObject* self, PyObject*) {
  PyObject* items = PySequence_Tuple(self);
  if (items == nullptr) return nullptr;
  return Py_BuildValue("(O(N))", reinterpret_cast<PyObject*>(Py_TYPE(self)), items);
}

PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS,
     "The number of elements of a tensor of this shape (1 for the empty shape)."},
    {"__reduce__", size_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyNumberMethods size_as_number = {};
PyMappingMethods size_as_mapping = {};

}  // namespace

PyObject* make_size(const IntList& sizes) {
  PyObject* out = size_type.tp_alloc(&size_type, static_cast<Py_ssize_t>(sizes.size()));
  if (out == nullptr) throw py::error_already_set();
  for (size_t i = 0; i < sizes.size(); ++i) {
    PyObject* item = PyLong_FromLongLong(sizes[i]);
    if (item == nullptr) {
      Py_DECREF(out);
      throw py::error_already_set();
    }
    PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), item);
  }
  return out;
}

void bind_size(py::module_& m) {
  size_as_number.nb_add = size_add;
  size_as_number.nb_multiply = size_multiply;
  size_as_mapping.mp_length = PyTuple_Type.tp_as_mapping->mp_length;
  size_as_mapping.mp_subscript = size_subscript;
  size_type.tp_name = "ember.Size";
  size_type.tp_doc =
      "Size(sizes=()): a tuple of dimension sizes. Indexing with a slice, + and * give a Size again,\n"
      "and numel() is the number of elements a tensor of this shape holds.";
  size_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  size_type.tp_base = &PyTuple_Type;
  size_type.tp_new = size_new;
  size_type.tp_repr = size_repr;
  size_type.tp_methods = size_methods;
  size_type.tp_as_number = &size_as_number;
  size_type.tp_as_mapping = &size_as_mapping;
  if (PyType_Ready(&size_type) < 0) throw py::error_already_set();
  m.attr("Size") = py::handle(reinterpret_cast<PyObject*>(&size_type));
}

}  // namespace ember::python
