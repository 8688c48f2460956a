// Calling registered ops from Python by name (ember.ops.<ns>.<op>), loading extensions.
#include <pybind11/complex.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "ember/dispatch_mode.h"
#include "op_binding_support.h"

namespace ember::python {
namespace {

std::string type_name(py::handle obj) {
  return py::str(py::type::of(obj).attr("__name__"));
}

int64_t to_int(py::handle obj, const std::string& where) {
  if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr())) {
    throw TypeError(where + " to be int, but got " + type_name(obj));
  }
  int overflow = 0;
  // __index__ may raise (a tensor of several elements): that error is the answer
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!index) throw py::error_already_set();
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  EMBER_CHECK(overflow == 0, ValueError, where, " to fit in int64, but got ", std::string(py::str(obj)));
  return v;
}

double to_float(py::handle obj, const std::string& where) {
  if (PyBool_Check(obj.ptr()) ||
      !(PyFloat_Check(obj.ptr()) || PyIndex_Check(obj.ptr()) || py::hasattr(obj, "__float__"))) {
    throw TypeError(where + " to be float, but got " + type_name(obj));
  }
  const double v = PyFloat_AsDouble(obj.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
  return v;
}

IValue to_scalar_value(const ArgType& t, py::handle obj, const std::string& where) {
  switch (t.base) {
    case BaseType::Tensor:
      if (!py::isinstance<Tensor>(obj)) throw TypeError(where + " to be Tensor, but got " + type_name(obj));
      return obj.cast<Tensor>();
    case BaseType::Int: return to_int(obj, where);
    case BaseType::Float: return to_float(obj, where);
    case BaseType::Bool:
      if (!PyBool_Check(obj.ptr())) throw TypeError(where + " to be bool, but got " + type_name(obj));
      return obj.cast<bool>();
    case BaseType::Str:
      if (!py::isinstance<py::str>(obj)) throw TypeError(where + " to be str, but got " + type_name(obj));
      return obj.cast<std::string>();
    case BaseType::Scalar:
      if (PyBool_Check(obj.ptr())) return obj.cast<bool>();
      if (PyIndex_Check(obj.ptr())) return to_int(obj, where);
      if (PyComplex_Check(obj.ptr())) return obj.cast<std::complex<double>>();
      return to_float(obj, where);
    case BaseType::ScalarType: return dtype_from_object(obj, where.c_str());
    case BaseType::Device:
      if (py::isinstance<Device>(obj)) return obj.cast<Device>();
      if (py::isinstance<py::str>(obj)) return Device(obj.cast<std::string>());
      throw TypeError(where + " to be Device, but got " + type_name(obj));
    case BaseType::Generator:
      if (py::isinstance<Generator>(obj)) return obj.cast<std::shared_ptr<Generator>>();
      throw TypeError(where + " to be Generator, but got " + type_name(obj));
  }
  throw TypeError(where + ": unsupported type");
}

IValue to_ivalue(const ArgType& t, py::handle obj, const std::string& where) {
  if (obj.is_none()) {
    if (t.is_optional) return IValue();
    throw TypeError(where + " to be " + t.str() + ", but got None");
  }
  if (!t.is_list) return to_scalar_value(t, obj, where);
  ArgType element = t;
  element.is_list = false;
  element.is_optional = false;
  if (t.base == BaseType::Int && PyIndex_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) {
    return IntList{to_int(obj, where)};  // like PyTorch, a lone int stands for a one-element list
  }
  if (!(py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj))) {
    throw TypeError(where + " to be " + t.str() + " (a list or tuple), but got " + type_name(obj));
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  switch (t.base) {
    case BaseType::Int: {
      IntList v;
      for (py::handle x : seq) v.push_back(to_int(x, where + " element"));
      return v;
    }
    case BaseType::Float: {
      std::vector<double> v;
      for (py::handle x : seq) v.push_back(to_float(x, where + " element"));
      return v;
    }
    case BaseType::Tensor: {
      if (t.elem_optional) {
        std::vector<std::optional<Tensor>> v;
        for (py::handle x : seq) {
          if (x.is_none()) {
            v.emplace_back(std::nullopt);
          } else {
            v.emplace_back(to_scalar_value(element, x, where + " element").get<Tensor>(""));
          }
        }
        return v;
      }
      std::vector<Tensor> v;
      for (py::handle x : seq) v.push_back(to_scalar_value(element, x, where + " element").get<Tensor>(""));
      return v;
    }
    default: throw TypeError(where + ": lists of " + element.str() + " are not supported");
  }
}

py::object to_python(const IValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return py::none();
        else if constexpr (std::is_same_v<T, Tensor>)
          return x.defined() ? py::cast(x) : py::none();  // an output the op did not compute
        else if constexpr (std::is_same_v<T, DType>)
          return dtype_object(x);
        else
          return py::cast(x);
      },
      v.payload());
}

// Binds Python positional and keyword arguments to the schema, PyTorch-style.
Stack bind_arguments(const Operator& op, py::args args, py::kwargs kwargs) {
  const Schema& s = op.schema();
  const std::string name = "[" + op.qualified_name() + "]";
  size_t positional = 0;
  for (const Argument& a : s.arguments) positional += a.kwarg_only ? 0 : 1;
  EMBER_CHECK(args.size() <= positional, TypeError, name, " expected at most ", positional,
              " positional arguments, but got ", args.size());
  Stack stack;
  size_t used_kwargs = 0;
  for (size_t i = 0; i < s.arguments.size(); ++i) {
    const Argument& a = s.arguments[i];
    const std::string where = name + " expected argument '" + a.name + "'";
    const bool has_kw = kwargs.contains(a.name.c_str());
    // As torch.ops does, a Python number stands for a tensor argument after the first
    // (ember.ops.aten.add(x, 1)), wrapped as a 0-d tensor that ranks lowest in type promotion.
    const bool number_ok = i > 0 && a.type.base == BaseType::Tensor && !a.type.is_list;
    auto push = [&](py::handle value) {
      Tensor wrapped;
      if (number_ok && !py::isinstance<Tensor>(value) && load_tensor_or_number(value, wrapped)) {
        stack.push_back(wrapped);
      } else {
        stack.push_back(to_ivalue(a.type, value, where));
      }
    };
    if (i < args.size()) {
      EMBER_CHECK(!has_kw, TypeError, name, " expected argument '", a.name,
                  "' once, but got it both by position and by keyword");
      push(args[i]);
    } else if (has_kw) {
      ++used_kwargs;
      push(kwargs[a.name.c_str()]);
    } else if (a.default_value) {
      IValue d = *a.default_value;
      if (a.type.base == BaseType::Float && !a.type.is_list && d.is<int64_t>()) {
        d = static_cast<double>(d.get<int64_t>(""));
      }
      stack.push_back(std::move(d));
    } else {
      throw TypeError(name + " missing required argument '" + a.name + "'");
    }
  }
  if (used_kwargs != kwargs.size()) {
    for (auto item : kwargs) {
      const std::string key = py::str(item.first);
      bool known = false;
      for (const Argument& a : s.arguments) known = known || a.name == key;
      EMBER_CHECK(known, TypeError, name, " got an unexpected keyword argument '", key, "'");
    }
  }
  return stack;
}

// Whether an argument holds its schema default, so that a dispatch mode sees it omitted (as
// PyTorch's Python dispatcher strips defaulted arguments). Tensors never equal a default.
bool holds_default(const Argument& a, const IValue& v) {
  if (!a.default_value) return false;
  const IValue& d = *a.default_value;
  if (v.is_none() || d.is_none()) return v.is_none() && d.is_none();
  const bool plain = v.is<bool>() || v.is<int64_t>() || v.is<double>() || v.is<std::string>() ||
                     v.is<IntList>() || v.is<std::vector<double>>() || v.is<DType>();
  return plain && to_python(v).equal(to_python(d));
}

// An op's arguments as Python values, laid out as its schema says: positional ones in a tuple,
// keyword-only ones in a dict. With omit_defaults, arguments at their schema defaults are left
// out (trailing positional ones and keyword ones), as PyTorch's Python dispatcher strips them.
std::pair<py::tuple, py::dict> python_arguments(const Operator& op, const Stack& args, bool omit_defaults) {
  const Schema& s = op.schema();
  size_t positional = 0;
  for (const Argument& a : s.arguments) positional += a.kwarg_only ? 0 : 1;
  size_t given = positional;
  while (omit_defaults && given > 0 && holds_default(s.arguments[given - 1], args[given - 1])) --given;
  py::tuple py_args(given);
  for (size_t i = 0; i < given; ++i) py_args[i] = to_python(args[i]);
  py::dict py_kwargs;
  for (size_t i = positional; i < s.arguments.size(); ++i) {
    if (!omit_defaults || !holds_default(s.arguments[i], args[i]))
      py_kwargs[s.arguments[i].name.c_str()] = to_python(args[i]);
  }
  return {py_args, py_kwargs};
}

// What a Python function answered for `op`, boxed by the schema's return types; `where` begins
// the TypeError for a value of the wrong kind or count.
Stack python_results(const Operator& op, py::handle result, const std::string& where) {
  const Schema& s = op.schema();
  Stack out;
  // None for a Tensor result: an output the op was not asked to compute (it comes as None too)
  auto result_value = [&](const ArgType& t, py::handle obj) {
    const bool plain_tensor = t.base == BaseType::Tensor && !t.is_list && !t.is_optional;
    return plain_tensor && obj.is_none() ? IValue(Tensor()) : to_ivalue(t, obj, where);
  };
  if (s.returns.size() == 1) {
    out.push_back(result_value(s.returns[0], result));
  } else if (s.returns.empty()) {
    EMBER_CHECK(result.is_none(), TypeError, where, " to be None (the op returns nothing), but got ",
                type_name(result));
  } else {
    EMBER_CHECK(py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result), TypeError, where,
                " to be a tuple of ", s.returns.size(), " values, but got ", type_name(result));
    py::sequence seq = py::reinterpret_borrow<py::sequence>(result);
    EMBER_CHECK(seq.size() == s.returns.size(), TypeError, where, " to be a tuple of ", s.returns.size(),
                " values, but got ", seq.size());
    for (size_t i = 0; i < s.returns.size(); ++i) out.push_back(result_value(s.returns[i], seq[i]));
  }
  return out;
}

// The dispatch-mode handler (Note [dispatch modes] in ember/dispatch_mode.h): calls
// ember.utils._python_dispatch._dispatch(op name, args, kwargs), which runs the innermost mode's
// __torch_dispatch__, and boxes its answer by the schema's return types.
Stack python_dispatch_handler(const Operator& op, Stack args) {
  py::gil_scoped_acquire gil;
  auto [py_args, py_kwargs] = python_arguments(op, args, /*omit_defaults=*/true);
  // leaked on purpose: released at exit without the GIL, it would crash
  static py::object* dispatch =
      new py::object(py::module_::import("ember.utils._python_dispatch").attr("_dispatch"));
  py::object result = (*dispatch)(op.qualified_name(), py_args, py_kwargs);
  return python_results(op, result,
                        "[" + op.qualified_name() + "] expected what __torch_dispatch__ returned");
}

DispatchKey key_named(const std::string& key) {
  for (int k = 0; k < kNumDispatchKeys; ++k) {
    if (key == dispatch_key_name(static_cast<DispatchKey>(k))) return static_cast<DispatchKey>(k);
  }
  throw ValueError("[dispatch key] expected CPU, CUDA or Autograd, but got '" + key + "'");
}

// Registers a Python function as an op's kernel for one key (ember.library). It is called with
// every argument, laid out by the schema. A backend kernel runs below autograd, as PyTorch runs
// a backend kernel: the ops it calls record no graph. The function is kept for the life of the
// process, as the registry keeps every kernel.
void impl_python(const std::string& qualified_name, const std::string& key_name, py::function fn) {
  const DispatchKey key = key_named(key_name);
  const Operator& op = OpRegistry::global().get(qualified_name);
  auto* held = new py::object(std::move(fn));  // leaked on purpose, as the dispatch handler above
  const std::string where = "[" + qualified_name + "] expected what its " + key_name + " kernel returned";
  try {
    OpRegistry::global().impl(qualified_name, key, [&op, held, key, where](Stack& stack) {
      std::optional<dispatch_mode::BelowAutogradGuard> below;
      if (key != DispatchKey::Autograd) below.emplace();
      py::gil_scoped_acquire gil;
      auto [py_args, py_kwargs] = python_arguments(op, stack, /*omit_defaults=*/false);
      py::object result = (*held)(*py_args, **py_kwargs);
      stack = python_results(op, result, where);
    });
  } catch (...) {  // not registered (that key has a kernel already): nothing keeps the function
    delete held;
    throw;
  }
}

// Calls an op from Python: None, its one result, or a tuple of its results. below_autograd: as
// an autograd kernel written in Python (ember.library.register_autograd) runs the op's backend.
py::object call_op(const Operator& op, py::args args, py::kwargs kwargs, bool below_autograd) {
  Stack stack = bind_arguments(op, args, kwargs);
  Stack results;
  {
    py::gil_scoped_release no_gil;  // kernels written in C++ never touch Python objects
    std::optional<dispatch_mode::BelowAutogradGuard> below;
    if (below_autograd) below.emplace();
    results = op.call(std::move(stack));
  }
  if (results.empty()) return py::none();
  if (results.size() == 1) return to_python(results[0]);
  py::tuple out(results.size());
  for (size_t i = 0; i < results.size(); ++i) out[i] = to_python(results[i]);
  return out;
}

}  // namespace

void bind_ops(py::module_& m) {
  dispatch_mode::set_handler(&python_dispatch_handler);
  m.def("_set_dispatch_mode_active", &dispatch_mode::set_active,
        "Whether this thread hands ops to ember.utils._python_dispatch (returns the previous value).");
  m.def("_dispatch_mode_below_autograd", &dispatch_mode::below_autograd);
  // Whether item() of t is to go through aten._local_scalar_dense: t's subclass defines
  // __torch_dispatch__, or this thread has a dispatch mode (with Python dispatch switched on).
  m.def("_item_dispatches", [](const Tensor& t) {
    return dispatch_mode::python_dispatch_enabled() &&
           (dispatch_mode::is_python_tensor(t) || dispatch_mode::active());
  });
  py::class_<Operator>(m, "Operator")
      .def_property_readonly("name", &Operator::qualified_name)
      .def_property_readonly("schema", [](const Operator& op) { return op.schema().str(); })
      .def_property_readonly("defined_in", &Operator::defined_in)
      .def_property_readonly("argument_names",
                             [](const Operator& op) {
                               std::vector<std::string> names;
                               for (const Argument& a : op.schema().arguments) names.push_back(a.name);
                               return names;
                             })
      .def("has_kernel",
           [](const Operator& op, const std::string& key) { return op.has_kernel(key_named(key)); })
      .def("_call_below_autograd", [](const Operator& op, py::args args,
                                      py::kwargs kwargs) { return call_op(op, args, kwargs, true); })
      .def("__call__", [](const Operator& op, py::args args,
                          py::kwargs kwargs) { return call_op(op, args, kwargs, false); })
      .def("__repr__", [](const Operator& op) { return "<ember op " + op.schema().str() + ">"; });

  m.def(
      "_find_op", [](const std::string& name) -> const Operator* { return OpRegistry::global().find(name); },
      py::return_value_policy::reference);
  m.def(
      "_define_op",
      [](const std::string& schema, const std::string& defined_in) -> const Operator* {
        return &OpRegistry::global().def(schema, defined_in);
      },
      py::return_value_policy::reference);
  m.def("_impl_op", &impl_python, "Registers a Python function as an op's kernel for one dispatch key.");
  m.def("_op_names", [] { return OpRegistry::global().names(); });
  m.def("_op_namespaces", [] { return OpRegistry::global().namespaces(); });
  m.def("_load_library", &load_library, py::call_guard<py::gil_scoped_release>());
  m.def("_extension_built_for", &extension_built_for);
  m.def("_check_core_compatible", &check_core_compatible);
}

}  // namespace ember::python
