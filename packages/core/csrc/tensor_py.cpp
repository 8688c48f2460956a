// Tensor bindings and zero-copy NumPy interop.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string_view>

#include "bindings.h"
#include "ember/quantizer.h"
#include "ember/writable.h"
#include "op_binding_support.h"

namespace ember::python {
namespace {

// A dtype for memory made without a quantizer: a quantized tensor comes only from the quantize
// ops (Note [quantized tensors] in ember/quantizer.h).
DType unquantized_dtype(py::handle obj, const char* what) {
  const DType dtype = dtype_from_object(obj, what);
  EMBER_CHECK(
      !is_quantized(dtype), NotImplementedError, "[", what, "] cannot make a ", dtype_name(dtype),
      " tensor without its scale and zero point: use ember.quantize_per_tensor, quantize_per_channel or "
      "_make_per_tensor_quantized_tensor");
  return dtype;
}

DType dtype_from_numpy(const py::dtype& dt) {
  const std::string typestr = py::str(dt.attr("str"));
#define EMBER_NUMPY_CASE(name, ctype, pyname, ts) \
  if (typestr == ts && std::strlen(ts) > 0) return DType::name;
  EMBER_FORALL_DTYPES(EMBER_NUMPY_CASE)
#undef EMBER_NUMPY_CASE
  throw TypeError(
      "[from_numpy] expected a NumPy array of dtype bool, uint8, int8, int16, int32, "
      "int64, float16, float32, float64, complex64 or complex128 in native byte order, "
      "but got dtype " +
      std::string(py::str(dt)));
}

// Shares the array's memory; the tensor keeps the array alive.
Tensor from_numpy(py::array arr) {
  const DType dtype = dtype_from_numpy(arr.dtype());
  const int64_t item = itemsize(dtype);
  IntList sizes(arr.ndim());
  IntList strides(arr.ndim());
  int64_t lowest = 0;
  int64_t highest = 0;
  for (py::ssize_t d = 0; d < arr.ndim(); ++d) {
    sizes[d] = arr.shape(d);
    const int64_t s = arr.strides(d);
    EMBER_CHECK(s >= 0, ValueError,
                "[from_numpy] expected non-negative strides (At least one stride "
                "in the given numpy array is negative), but got ",
                s, " bytes; copy the array first");
    EMBER_CHECK(s % item == 0, ValueError,
                "[from_numpy] expected strides that are multiples of the "
                "element size ",
                item, ", but got ", s, " bytes");
    strides[d] = s / item;
    if (sizes[d] > 0) highest += (sizes[d] - 1) * s;
  }
  const bool empty_array = arr.size() == 0;
  const size_t nbytes = empty_array ? 0 : static_cast<size_t>(highest - lowest + item);
  auto* keep = new py::object(arr);
  Tensor t = from_blob(const_cast<void*>(arr.data()), sizes, strides, dtype, Device(), nbytes, [keep](void*) {
    py::gil_scoped_acquire gil;
    delete keep;
  });
  t.storage()->set_read_only(!arr.writeable());  // Note [read-only storage]
  return t;
}

py::array to_numpy(const Tensor& t) {
  EMBER_CHECK(t.device().type == DeviceType::CPU, TypeError, "[numpy] expected a cpu tensor, but got one on ",
              t.device().str(), "; use Tensor.cpu() to copy the tensor to host memory first");
  EMBER_CHECK(!t.impl()->requires_grad, Error,
              "[numpy] Can't call numpy() on Tensor that requires "
              "grad. Use tensor.detach().numpy() instead.");
  const char* typestr = dtype_typestr(t.dtype());
  EMBER_CHECK(std::strlen(typestr) > 0, TypeError, "[numpy] Got unsupported ScalarType ",
              dtype_name(t.dtype()),
              is_quantized(t.dtype())
                  ? " (a quantized tensor: dequantize() gives its values, int_repr() its integers)"
                  : " (NumPy has no such dtype; convert with .float() first)");
  std::vector<py::ssize_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(s * t.element_size());
  py::capsule owner(new Tensor(t), [](void* p) { delete static_cast<Tensor*>(p); });
  py::array out(py::dtype(std::string(typestr)), shape, strides, t.data_ptr(), owner);
  if (t.storage()->read_only()) out.attr("flags").attr("writeable") = false;  // Note [read-only storage]
  return out;
}

py::object shape_of(const Tensor& t) {
  return py::reinterpret_steal<py::object>(make_size(t.sizes()));
}

// Note [C-level operators]: the binary operators (a + b, a < b, 2 ** a, ...) are bound here
// rather than as Python functions: a Python-level __add__ (a frame, an isinstance check, then the
// op's binding with its keyword arguments) cost about a fifth of an 8-element add. An operand that
// is neither a tensor nor a Python number fails to convert, and py::is_operator then answers
// NotImplemented, so Python tries the other operand's reflected method, as it did before.
// Reflected forms of the non-commutative ops take only numbers (a tensor on the left has already
// run its own method). Like the generated ops they honour __torch_function__ (def_overridable).
void bind_operators(py::class_<Tensor>& cls) {
// `public`: the function __torch_function__ is handed, PyTorch's choice per operator (x * y hands
// Tensor.mul, 1 - x hands Tensor.__rsub__).
#define EMBER_OPERATOR(dunder, op, public)                                                                   \
  def_overridable_as(                                                                                        \
      cls, dunder, public,                                                                                   \
      [](const TensorIn& self, const TensorArg& other) { return autograd::op(unwrap(self), other.tensor); }, \
      py::is_operator(), py::call_guard<py::gil_scoped_release>());
#define EMBER_REFLECTED_OPERATOR(dunder, op, public)              \
  def_overridable_as(                                             \
      cls, dunder, public,                                        \
      [](const TensorIn& self, const Scalar& other) {             \
        return autograd::op(wrapped_number(other), unwrap(self)); \
      },                                                          \
      py::is_operator(), py::call_guard<py::gil_scoped_release>());
  EMBER_OPERATOR("__add__", add, "add")
  EMBER_OPERATOR("__radd__", add, "add")
  EMBER_OPERATOR("__sub__", sub, "sub")
  EMBER_REFLECTED_OPERATOR("__rsub__", sub, "__rsub__")
  EMBER_OPERATOR("__mul__", mul, "mul")
  EMBER_OPERATOR("__rmul__", mul, "mul")
  EMBER_OPERATOR("__truediv__", div, "div")
  EMBER_REFLECTED_OPERATOR("__rtruediv__", div, "__rtruediv__")
  EMBER_OPERATOR("__floordiv__", floor_divide, "__floordiv__")
  EMBER_REFLECTED_OPERATOR("__rfloordiv__", floor_divide, "__rfloordiv__")
  EMBER_OPERATOR("__mod__", remainder, "remainder")
  EMBER_REFLECTED_OPERATOR("__rmod__", remainder, "__rmod__")
  EMBER_OPERATOR("__pow__", pow, "pow")
  EMBER_REFLECTED_OPERATOR("__rpow__", pow, "__rpow__")
  EMBER_OPERATOR("__and__", bitwise_and, "__and__")
  EMBER_OPERATOR("__rand__", bitwise_and, "bitwise_and")
  EMBER_OPERATOR("__or__", bitwise_or, "__or__")
  EMBER_OPERATOR("__ror__", bitwise_or, "bitwise_or")
  EMBER_OPERATOR("__xor__", bitwise_xor, "__xor__")
  EMBER_OPERATOR("__rxor__", bitwise_xor, "bitwise_xor")
  EMBER_OPERATOR("__lshift__", bitwise_left_shift, "__lshift__")
  EMBER_REFLECTED_OPERATOR("__rlshift__", bitwise_left_shift, "__rlshift__")
  EMBER_OPERATOR("__rshift__", bitwise_right_shift, "__rshift__")
  EMBER_REFLECTED_OPERATOR("__rrshift__", bitwise_right_shift, "__rrshift__")
  EMBER_OPERATOR("__eq__", eq, "__eq__")
  EMBER_OPERATOR("__ne__", ne, "ne")
  EMBER_OPERATOR("__lt__", lt, "lt")
  EMBER_OPERATOR("__le__", le, "le")
  EMBER_OPERATOR("__gt__", gt, "gt")
  EMBER_OPERATOR("__ge__", ge, "ge")
#undef EMBER_OPERATOR
#undef EMBER_REFLECTED_OPERATOR
}

}  // namespace

namespace {
// Note [Python tensors]: what TensorImpl::python_state holds: the subclass, a weak reference to
// the tensor's live Python object (returned again while it lives, so `is` holds), and a copy of
// that object's attributes, taken each time it passes between native code and Python, for the
// object made when it is gone. (Sharing one __dict__ between objects is not safe: CPython and
// pybind11 both report it to the cycle collector, which then counts it unreachable and empties it.)
struct PythonState {
  py::object cls;
  py::object live = py::none();  // weakref.ref to the object, or None
  py::dict attributes;
};

PythonState& state_of(const Tensor& t) {
  return *static_cast<PythonState*>(t.impl()->python_state.get());
}

// The live object of t's state if it is alive and holds this very TensorImpl (an autograd alias
// of the tensor shares the state, not the object); else null.
PyObject* live_object(const PythonState& state, const Tensor& t) {
  if (state.live.is_none()) return nullptr;
  PyObject* obj = PyWeakref_GetObject(state.live.ptr());  // borrowed; None once dead
  if (obj == Py_None) return nullptr;
  py::detail::type_caster_base<Tensor> held;  // not the module's caster, which would come back here
  if (!held.load(obj, false)) return nullptr;
  return static_cast<const Tensor&>(held).impl() == t.impl() ? obj : nullptr;
}

void remember_attributes(PythonState& state, py::handle obj) {
  py::object dict = py::getattr(obj, "__dict__", py::none());
  if (dict.is_none()) return;
  // a copy (py::dict(dict) would be the same dict)
  state.attributes = py::reinterpret_steal<py::dict>(PyDict_Copy(dict.ptr()));
  if (!state.attributes) throw py::error_already_set();
}
}  // namespace

void note_python_tensor_object(py::handle obj, const Tensor& t) {
  PythonState& state = state_of(t);
  if (!py::isinstance(obj, state.cls)) return;  // a plain Tensor object over it (while one is made)
  if (PyObject* live = live_object(state, t); live != nullptr && live != obj.ptr()) return;
  remember_attributes(state, obj);
}

PyObject* python_tensor_object(const Tensor& t) {
  PythonState& state = state_of(t);
  if (PyObject* obj = live_object(state, t)) {
    remember_attributes(state, obj);
    Py_INCREF(obj);
    return obj;
  }
  py::object plain = py::reinterpret_steal<py::object>(
      py::detail::type_caster_base<Tensor>::cast(t, py::return_value_policy::copy, py::handle()));
  py::object tensor_type = py::type::of<Tensor>();
  py::object obj = tensor_type.attr("__new__")(state.cls);
  tensor_type.attr("__init__")(obj, plain, py::arg("_share_history") = true);  // the same TensorImpl
  py::object dict = py::getattr(obj, "__dict__", py::none());
  if (!dict.is_none()) dict.attr("update")(state.attributes);
  if (state.live.is_none() || PyWeakref_GetObject(state.live.ptr()) == Py_None) {
    state.live = py::reinterpret_steal<py::object>(PyWeakref_NewRef(obj.ptr(), nullptr));
    if (!state.live) throw py::error_already_set();
  }
  return obj.release().ptr();
}

py::class_<Tensor> bind_tensor(py::module_& m) {
  py::class_<Tensor> cls(m, "Tensor", py::dynamic_attr());
  cls.def_property_readonly("shape", &shape_of)
      .def(
          "size",
          [](const Tensor& t, std::optional<int64_t> dim) -> py::object {
            if (dim) return py::int_(t.size(*dim));
            return shape_of(t);
          },
          py::arg("dim") = py::none())
      .def(
          "stride",
          [](const Tensor& t, std::optional<int64_t> dim) -> py::object {
            if (dim) return py::int_(t.stride(*dim));
            return py::tuple(py::cast(t.strides()));  // a tuple, as torch's
          },
          py::arg("dim") = py::none())
      .def_property_readonly("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); })
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("storage_offset", &Tensor::storage_offset)
      .def("element_size", &Tensor::element_size)
      .def_property_readonly("itemsize", &Tensor::element_size)
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def("is_contiguous", [](const Tensor& t) { return t.is_contiguous(); })
      // 0 row-major, 1 channels last, 2 channels last 3d (ember/_memory_format.py)
      .def("_suggest_memory_format",
           [](const Tensor& t) { return static_cast<int64_t>(suggest_memory_format(t)); })
      .def("_is_contiguous_in",
           [](const Tensor& t, int64_t format) {
             EMBER_CHECK(format >= 0 && format <= 2, ValueError,
                         "[is_contiguous] expected a memory format code in [0, 2], but got ", format);
             return t.is_contiguous(static_cast<MemoryFormat>(format));
           })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def_property_readonly("_version",
                             [](const Tensor& t) {
                               EMBER_CHECK(!t.is_inference(), Error,
                                           "Inference tensors do not track version counter.");
                               return t.version();
                             })
      .def("numpy", &to_numpy);
  bind_operators(cls);

  m.def("from_numpy", &from_numpy, py::arg("ndarray"));
  // For ember.distributed's collectives, which write without a version bump (FSDP gathers into
  // buffers that autograd has saved).
  m.def("_check_writable", &check_writable, py::arg("tensor"));
  m.def("_empty", [](const IntList& sizes, py::handle dtype, const Device& device) {
    return empty(sizes, unquantized_dtype(dtype, "empty"), device);
  });
  // Raw element bytes for the checkpoint format (ember/serialization.py): no Python objects, so
  // reading one back cannot run code.
  m.def("_to_bytes", [](const Tensor& t) {
    EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[serialize] not implemented for ",
                t.device().str());
    const Tensor c = t.contiguous();
    return py::bytes(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
  });
  m.def("_from_bytes", [](py::bytes data, const IntList& sizes, py::handle dtype_obj) {
    const DType dtype = unquantized_dtype(dtype_obj, "deserialize");
    for (int64_t s : sizes)
      EMBER_CHECK(s >= 0, ValueError, "[deserialize] negative size ", s, " in the shape");
    const int64_t nbytes = checked_numel(sizes, "deserialize") * itemsize(dtype);
    const std::string_view raw = data;
    EMBER_CHECK(static_cast<int64_t>(raw.size()) == nbytes, ValueError, "[deserialize] expected ", nbytes,
                " bytes of ", dtype_name(dtype), " data for shape ", std::string(py::str(py::cast(sizes))),
                ", but the record holds ", raw.size());
    if (dtype == DType::Bool) {  // any other byte would not be a valid C++ bool
      for (char c : raw) {
        EMBER_CHECK(c == 0 || c == 1, ValueError, "[deserialize] a bool tensor's bytes must be 0 or 1");
      }
    }
    Tensor out = empty(sizes, dtype, Device());
    if (nbytes > 0) std::memcpy(out.data_ptr(), raw.data(), raw.size());
    return out;
  });
  m.def("_as_strided",
        static_cast<Tensor (*)(const Tensor&, const IntList&, const IntList&, int64_t)>(&as_strided));
  // The bytes of t's storage read as `dtype` with the given geometry (in elements of dtype), no
  // history, sharing the memory and the version counter: Tensor.view(dtype), the storage objects
  // and set_(storage, ...) in ember/_storage.py. as_strided checks that the view fits the storage.
  m.def(
      "_reinterpret",
      [](const Tensor& t, py::handle dtype_obj, const IntList& sizes, const IntList& strides,
         int64_t offset) {
        auto impl = std::make_shared<TensorImpl>();
        impl->storage = t.storage();
        impl->sizes = {0};
        impl->strides = {1};
        impl->dtype = unquantized_dtype(dtype_obj, "view");
        // a quantized tensor's memory reads only as its integers (what the checkpoint saves)
        EMBER_CHECK(!is_quantized(t.dtype()) || impl->dtype == quantized_underlying(t.dtype()),
                    NotImplementedError, "[view] a ", dtype_name(t.dtype()), " tensor cannot be viewed as ",
                    dtype_name(impl->dtype), "; int_repr() gives its integers");
        impl->version_counter = t.impl()->version_counter;
        return as_strided(Tensor(std::move(impl)), sizes, strides, offset);
      },
      py::arg("tensor"), py::arg("dtype"), py::arg("sizes"), py::arg("strides"), py::arg("storage_offset"));
  m.def("_storage_nbytes", [](const Tensor& t) { return t.storage()->nbytes(); });
  // Note [Python tensors]: the pieces of Tensor._make_wrapper_subclass / _make_subclass
  // (ember/_python_tensor.py).
  m.def(
      "_wrapper_tensor",
      [](const IntList& sizes, std::optional<IntList> strides, int64_t storage_offset, py::handle dtype,
         Device device) {
        for (int64_t n : sizes) EMBER_CHECK(n >= 0, ValueError, "[_make_wrapper_subclass] negative size ", n);
        checked_numel(sizes, "_make_wrapper_subclass");
        EMBER_CHECK(!strides || strides->size() == sizes.size(), ValueError,
                    "[_make_wrapper_subclass] expected ", sizes.size(), " strides, but got ",
                    strides->size());
        EMBER_CHECK(storage_offset >= 0, ValueError, "[_make_wrapper_subclass] negative storage_offset ",
                    storage_offset);
        auto impl = std::make_shared<TensorImpl>();
        impl->storage = std::make_shared<Storage>(nullptr, 0, device, [](void*) {});  // no memory of its own
        impl->sizes = sizes;
        impl->strides = strides ? *strides : contiguous_strides(sizes);
        impl->storage_offset = storage_offset;
        impl->dtype = unquantized_dtype(dtype, "_make_wrapper_subclass");
        impl->version_counter = std::make_shared<VersionCounter>();
        return Tensor(std::move(impl));
      },
      py::arg("sizes"), py::arg("strides"), py::arg("storage_offset"), py::arg("dtype"), py::arg("device"));
  m.def(
      "_as_python_tensor",
      [](const Tensor& t, py::type cls) {
        auto* state = new PythonState{cls};
        t.impl()->python_state = std::shared_ptr<void>(state, [](void* p) {
          if (Py_IsInitialized()) {
            py::gil_scoped_acquire gil;
            delete static_cast<PythonState*>(p);
          }
        });
        dispatch_mode::python_tensors_exist.store(true);
        return t;
      },
      py::arg("tensor"), py::arg("cls"),
      "Makes t's tensor an instance of cls whose ops go to cls.__torch_dispatch__.");
  m.def("_is_python_tensor", [](const Tensor& t) { return dispatch_mode::is_python_tensor(t); });

  // The same tensor (memory, version counter and autograd history) without the subclass state.
  m.def("_plain_alias", [](const Tensor& t) {
    auto impl = std::make_shared<TensorImpl>(*t.impl());
    impl->python_state = nullptr;
    return Tensor(std::move(impl));
  });
  m.def("_set_python_dispatch_enabled", &dispatch_mode::set_python_dispatch_enabled, py::arg("enabled"),
        "This thread's switch for __torch_dispatch__, of modes and subclasses alike; returns the previous "
        "value.");
  // Which tensor t is, however it reached Python (each crossing makes a new Python object): equal
  // for the same TensorImpl while it lives. ember.fx's make_fx keys the values it traces by it.
  m.def("_tensor_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); });
  // Whether t is a Python number an op wrapped as a 0-d tensor (make_fx records it as the number).
  m.def("_is_wrapped_number", [](const Tensor& t) { return t.impl()->is_wrapped_number; });
  // A quantized tensor's quantizer (Note [quantized tensors] in ember/quantizer.h) as
  // (qscheme code, scale, zero_point, scales, zero_points, axis); None for any other tensor.
  m.def("_quantizer", [](const Tensor& t) -> py::object {
    if (!is_quantized(t.dtype()) || !t.impl()->quantizer) return py::none();
    const Quantizer& q = *t.impl()->quantizer;
    if (!q.per_channel())
      return py::make_tuple(static_cast<int64_t>(q.qscheme), q.scale, q.zero_point, py::none(), py::none(),
                            py::none());
    return py::make_tuple(static_cast<int64_t>(q.qscheme), py::none(), py::none(), q.scales.clone(),
                          q.zero_points.clone(), q.axis);
  });
  // Which storage t views: equal for every view of one buffer, while that buffer lives.
  m.def("_storage_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage().get()); });
  // Note [write hooks]: one Python callable serves every thread; _set_write_hook(fn) switches it on
  // for the calling thread, _set_write_hook(None) off. Returns whether it was on.
  m.def(
      "_set_write_hook",
      [](py::object fn) {
        if (fn.is_none()) return set_write_hook(nullptr) != nullptr;
        static py::object* python_hook = new py::object();  // lives as long as the process
        *python_hook = std::move(fn);
        return set_write_hook([](const Tensor& t) {
                 py::gil_scoped_acquire gil;
                 (*python_hook)(t);
               }) != nullptr;
      },
      py::arg("hook"));
  // Shared memory (ember/_shared_memory.py): `source`'s storage must already hold t's bytes; the two
  // storages then exchange buffers, so t and all its views use source's memory from now on.
  m.def("_storage_swap_memory", [](const Tensor& t, const Tensor& source) {
    EMBER_CHECK(t.storage() != source.storage(), ValueError,
                "[_storage_swap_memory] expected two different storages");
    t.storage()->swap_memory(*source.storage());
  });
  m.def("_storage_is_shared", [](const Tensor& t) { return t.storage()->shared(); });
  m.def("_storage_set_shared", [](const Tensor& t, bool shared) { t.storage()->set_shared(shared); });
  return cls;
}

}  // namespace ember::python
