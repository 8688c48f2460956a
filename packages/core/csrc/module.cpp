// ember._C: exceptions, dtypes and devices; tensors and ops are bound in their own files.
#include <pybind11/stl.h>

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "bindings.h"
#include "ember/dispatch_stub.h"
#include "ember/linalg.h"
#include "op_binding_support.h"

namespace ember::python {
namespace {

// PyTorch's CPUGeneratorImplState, byte for byte (x86-64 layout, 5056 bytes): the legacy TH state
// {u64 seed; i32 left; i32 seeded; u64 next; u64 words[624]; f64 normal_x, normal_y, normal_rho;
// i32 normal_is_valid; pad} then {f32 next_float_normal; bool valid; pad}.
constexpr size_t kMtStateBytes = 5056;
constexpr size_t kMtWordsAt = 24, kNormalYAt = 24 + 8 * kMtWords + 8, kNormalValidAt = kNormalYAt + 16,
                 kFloatNormalAt = kNormalValidAt + 8, kFloatValidAt = kFloatNormalAt + 4;

template <class T>
void put(uint8_t* p, size_t at, T v) {
  std::memcpy(p + at, &v, sizeof(T));
}
template <class T>
T take(const uint8_t* p, size_t at) {
  T v;
  std::memcpy(&v, p + at, sizeof(T));
  return v;
}

Tensor generator_state_bytes(const GeneratorState& st) {
  if (st.kind == GeneratorKind::Philox) {
    Tensor out = zeros({16}, DType::UInt8, Device());
    put<uint64_t>(out.data<uint8_t>(), 0, st.philox.seed);
    put<uint64_t>(out.data<uint8_t>(), 8, st.philox.offset);
    return out;
  }
  Tensor out = zeros({static_cast<int64_t>(kMtStateBytes)}, DType::UInt8, Device());
  uint8_t* p = out.data<uint8_t>();
  put<uint64_t>(p, 0, st.mt.seed);
  put<int32_t>(p, 8, st.mt.left);
  put<int32_t>(p, 12, st.mt.seeded ? 1 : 0);
  put<uint64_t>(p, 16, st.mt.next);
  for (int i = 0; i < kMtWords; ++i) put<uint64_t>(p, kMtWordsAt + 8 * i, st.mt.words[i]);
  put<double>(p, kNormalYAt, st.next_double_normal.value_or(0.0));
  put<int32_t>(p, kNormalValidAt, st.next_double_normal ? 1 : 0);
  put<float>(p, kFloatNormalAt, st.next_float_normal.value_or(0.0f));
  put<uint8_t>(p, kFloatValidAt, st.next_float_normal ? 1 : 0);
  return out;
}

GeneratorState generator_state_from_bytes(GeneratorKind kind, const Tensor& bytes) {
  const size_t want = kind == GeneratorKind::Philox ? 16 : kMtStateBytes;
  EMBER_CHECK(static_cast<size_t>(bytes.numel()) == want, Error, "[set_state] expected an RNG state of ",
              want, " bytes for a ", kind == GeneratorKind::Philox ? "philox" : "mt19937",
              " generator, but got ", bytes.numel());
  const uint8_t* p = bytes.data<uint8_t>();
  GeneratorState st;
  st.kind = kind;
  if (kind == GeneratorKind::Philox) {
    st.philox = PhiloxState{take<uint64_t>(p, 0), take<uint64_t>(p, 8)};
    return st;
  }
  st.mt.seed = take<uint64_t>(p, 0);
  st.mt.left = take<int32_t>(p, 8);
  st.mt.seeded = take<int32_t>(p, 12) != 0;
  const uint64_t next = take<uint64_t>(p, 16);
  st.mt.next = next > static_cast<uint64_t>(kMtWords) ? kMtWords + 1 : static_cast<uint32_t>(next);
  for (int i = 0; i < kMtWords; ++i)
    st.mt.words[i] = static_cast<uint32_t>(take<uint64_t>(p, kMtWordsAt + 8 * i));
  if (take<int32_t>(p, kNormalValidAt) != 0) st.next_double_normal = take<double>(p, kNormalYAt);
  if (take<uint8_t>(p, kFloatValidAt) != 0) st.next_float_normal = take<float>(p, kFloatNormalAt);
  return st;
}
// Leaked on purpose: destroying Python objects after the interpreter finalizes would crash.
py::object* const g_dtype_objects = new py::object[kNumDTypes];
}  // namespace

py::object dtype_object(DType d) {
  return g_dtype_objects[static_cast<int>(d)];
}

DType dtype_from_object(py::handle obj, const char* what) {
  if (py::isinstance<DType>(obj)) return obj.cast<DType>();
  throw TypeError(std::string("[") + what + "] expected a dtype such as ember.float32, but got " +
                  std::string(py::str(py::type::of(obj).attr("__name__"))));
}

bool load_tensor_or_number(py::handle src, Tensor& out) {
  if (py::isinstance<Tensor>(src)) {
    out = src.cast<Tensor>();
    return true;
  }
  Scalar s;
  if (!load_scalar(src, s)) return false;
  out = wrapped_number(s);
  return true;
}

bool load_scalar(py::handle src, Scalar& out) {
  PyObject* o = src.ptr();
  if (PyBool_Check(o)) {
    out = Scalar(o == Py_True);
  } else if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0)
      throw ValueError("[scalar] expected a Python int that fits in int64, but got " +
                       std::string(py::str(src)));
    out = Scalar(static_cast<int64_t>(v));
  } else if (PyFloat_Check(o)) {
    out = Scalar(PyFloat_AS_DOUBLE(o));
  } else if (PyComplex_Check(o)) {
    out = Scalar(std::complex<double>(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
  } else {
    return false;
  }
  return true;
}

}  // namespace ember::python

namespace ember {
// native/src/core/allocator.cpp, for tests/test_cpu_allocator.py (Note [allocator across fork])
EMBER_API void cpu_allocator_hold_lock_for_test(double seconds);
}  // namespace ember

using namespace ember;
using namespace ember::python;

PYBIND11_MODULE(_C, m) {
  m.doc() = "Ember's C++ runtime";
  m.attr("__version__") = EMBER_VERSION_STRING;

  // Most derived first: pybind11 tries translators in reverse registration order, so the
  // base class is registered first.
  // ember.linalg.LinAlgError subclasses RuntimeError (torch.linalg.LinAlgError does too).
  static PyObject* const linalg_error =
      PyErr_NewException("ember.linalg.LinAlgError", PyExc_RuntimeError, nullptr);
  m.attr("LinAlgError") = py::handle(linalg_error);
  // ember.OutOfMemoryError subclasses RuntimeError (torch.OutOfMemoryError does too).
  static PyObject* const out_of_memory_error =
      PyErr_NewException("ember.OutOfMemoryError", PyExc_RuntimeError, nullptr);
  m.attr("OutOfMemoryError") = py::handle(out_of_memory_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const LinAlgError& e) {
      PyErr_SetString(linalg_error, e.what());
    } catch (const OutOfMemoryError& e) {
      PyErr_SetString(out_of_memory_error, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const ImportError& e) {
      PyErr_SetString(PyExc_ImportError, e.what());
    } catch (const OSError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  py::class_<DType>(m, "dtype")
      .def_property_readonly("is_floating_point", [](DType d) { return is_floating_point(d); })
      .def_property_readonly("is_complex", [](DType d) { return is_complex(d); })
      .def_property_readonly("is_signed",
                             [](DType d) {
                               EMBER_CHECK(!is_bits(d), Error, "[is_signed] Bits types are undefined");
                               EMBER_CHECK(!is_quantized(d), Error,
                                           "[is_signed] not supported for quantized types");
                               return is_signed(d);
                             })
      .def_property_readonly("itemsize", [](DType d) { return itemsize(d); })
      .def_property_readonly(
          "abbr",  // PyTorch's short names: f32, bf16, c64, i64, u8, b8, f8e5m2
          [](DType d) {
            if (d == DType::Bool) return std::string("b8");
            if (d == DType::BFloat16) return std::string("bf16");
            std::string name = dtype_name(d);
            const char* prefixes[][2] = {
                {"float8_", "f8"}, {"float", "f"}, {"complex", "c"}, {"uint", "u"}, {"int", "i"}};
            for (const auto& p : prefixes) {
              if (name.rfind(p[0], 0) == 0) return p[1] + name.substr(std::string(p[0]).size());
            }
            return name;
          })
      .def(
          "to_complex",  // the complex dtype of the same precision (bfloat16 widens to complex64, as PyTorch)
          [](DType d) -> py::object {
            switch (d) {
              case DType::BFloat16:
              case DType::Float32:
              case DType::Complex64: return dtype_object(DType::Complex64);
              case DType::Float64:
              case DType::Complex128: return dtype_object(DType::Complex128);
              case DType::Float16:
              case DType::Complex32: return dtype_object(DType::Complex32);
              default: throw Error(std::string("Unknown Complex ScalarType for ") + dtype_name(d));
            }
          })
      .def("to_real",  // the real dtype of a complex one; a real dtype is its own
           [](DType d) {
             if (d == DType::Complex32) return dtype_object(DType::Float16);
             if (d == DType::Complex64) return dtype_object(DType::Float32);
             if (d == DType::Complex128) return dtype_object(DType::Float64);
             return dtype_object(d);
           })
      .def("__repr__", [](DType d) { return std::string("ember.") + dtype_name(d); })
      .def("__str__", [](DType d) { return std::string("ember.") + dtype_name(d); })
      .def("__eq__", [](DType a, py::object b) { return py::isinstance<DType>(b) && a == b.cast<DType>(); })
      .def("__hash__", [](DType d) { return static_cast<int>(d); })
      .def("__reduce__", [](DType d) {  // pickles by name, no internals
        return py::make_tuple(py::module_::import("ember").attr("_dtype_by_name"),
                              py::make_tuple(dtype_name(d)));
      });
  py::list all_dtypes;
#define EMBER_BIND_DTYPE(name, ctype, pyname, typestr)                    \
  g_dtype_objects[static_cast<int>(DType::name)] = py::cast(DType::name); \
  m.attr(pyname) = g_dtype_objects[static_cast<int>(DType::name)];        \
  all_dtypes.append(m.attr(pyname));
  EMBER_FORALL_DTYPES(EMBER_BIND_DTYPE)
#undef EMBER_BIND_DTYPE
  m.attr("_all_dtypes") = all_dtypes;

  py::class_<Device>(m, "device")
      .def(py::init([](py::object spec, std::optional<int64_t> index) {
             if (py::isinstance<Device>(spec)) return spec.cast<Device>();
             if (!py::isinstance<py::str>(spec)) {
               throw TypeError("[device] expected a device string such as 'cuda:0', but got " +
                               std::string(py::str(py::type::of(spec).attr("__name__"))));
             }
             Device d(spec.cast<std::string>());
             if (index) {
               EMBER_CHECK(d.index < 0, Error,
                           "[device] expected the index once, but got it in the string and as index=");
               EMBER_CHECK(*index >= 0 && *index < 32768, Error,
                           "[device] expected a non-negative device index, but got ", *index);
               d = Device(d.type, static_cast<int16_t>(*index));
             }
             return d;
           }),
           py::arg("type"), py::arg("index") = py::none())
      .def_property_readonly("type", [](const Device& d) { return device_type_name(d.type); })
      .def_property_readonly("index",
                             [](const Device& d) -> py::object {
                               return d.index < 0 ? py::object(py::none()) : py::object(py::int_(d.index));
                             })
      .def("__repr__",
           [](const Device& d) {
             std::string s = std::string("device(type='") + device_type_name(d.type) + "'";
             if (d.index >= 0) s += ", index=" + std::to_string(d.index);
             return s + ")";
           })
      .def("__str__", &Device::str)
      .def("__eq__",
           [](const Device& a, py::object b) { return py::isinstance<Device>(b) && a == b.cast<Device>(); })
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 65536 + d.index; });
  m.def("_has_backend", [](const std::string& type) { return has_backend(Device(type).type); });

  py::implicitly_convertible<py::str, Device>();
  m.def("promote_types", &promote_types, py::arg("type1"), py::arg("type2"));
  m.def("get_default_dtype", [] { return dtype_object(get_default_dtype()); });
  m.def(
      "set_default_dtype", [](py::handle d) { set_default_dtype(dtype_from_object(d, "set_default_dtype")); },
      py::arg("d"));
  m.def("set_num_threads", &set_num_threads, py::arg("int"));
  m.def("get_num_threads", &get_num_threads);
  m.def("_wrap_number", &wrapped_number);
  m.def("_cpu_capability", [] { return cpu_capability_name(cpu_capability()); });
  // torch.set_flush_denormal: the calling thread's flush-to-zero and denormals-are-zero bits (pool
  // workers take them per job, Note [denormal mode in the pool]); False where the CPU has none.
  m.def(
      "_set_flush_denormal",
      [](bool on) {
#if defined(__x86_64__) || defined(__i386__)
        constexpr unsigned kBits = 0x8040;  // MXCSR's FTZ (bit 15) and DAZ (bit 6)
        _mm_setcsr(on ? (_mm_getcsr() | kBits) : (_mm_getcsr() & ~kBits));
        return true;
#else
        (void)on;
        return false;
#endif
      },
      py::arg("mode"));
  m.def("_cpu_empty_cache", &cpu_empty_cache);
  m.def("_cpu_cached_bytes", &cpu_cached_bytes);
  m.def("_cpu_allocated_bytes", &cpu_allocated_bytes);
  m.def("_cpu_cache_limit", &cpu_cache_limit);
  m.def("_cpu_set_cache_limit", &cpu_set_cache_limit, py::arg("nbytes"));
  m.def("_cpu_reset_peak_memory_stats", &cpu_reset_peak_memory_stats);
  m.def("_hold_cpu_allocator_lock", &cpu_allocator_hold_lock_for_test, py::arg("seconds"),
        py::call_guard<py::gil_scoped_release>());
  m.def("_cpu_memory_stats", [] {
    const CpuMemoryStats s = cpu_memory_stats();
    py::dict d;
    d["allocated_bytes.all.current"] = s.allocated;
    d["allocated_bytes.all.peak"] = s.allocated_peak;
    d["reserved_bytes.all.current"] = s.reserved;
    d["reserved_bytes.all.peak"] = s.reserved_peak;
    d["cached_bytes.all.current"] = s.cached;
    d["cache_limit_bytes"] = s.cache_limit;
    d["num_cache_hits"] = s.cache_hits;
    d["num_cache_misses"] = s.cache_misses;
    d["num_cache_evictions"] = s.cache_evictions;
    d["num_alloc_retries"] = s.alloc_retries;
    return d;
  });
  m.def("set_float32_matmul_precision", &set_float32_matmul_precision, py::arg("precision"));
  m.def("get_float32_matmul_precision", &get_float32_matmul_precision);
  m.def("_blas_config", &blas_config);
  m.def("_fma_peak_probe", &fma_peak_probe, py::arg("threads"), py::arg("seconds"));

  // Generators: shared with ops through the Generator? schema type. get_state gives a uint8 tensor,
  // as torch's ByteTensor states: 5056 bytes in PyTorch's CPU layout for mt19937 (so torch's saved
  // states load here and ours load there), 16 bytes (seed, Philox offset, little-endian) for philox.
  py::class_<Generator, std::shared_ptr<Generator>>(m, "Generator")
      .def(py::init([](py::object device, const std::string& kind) {
             const Device d =
                 py::isinstance<Device>(device) ? device.cast<Device>() : Device(device.cast<std::string>());
             EMBER_CHECK(d.type == DeviceType::CPU, NotImplementedError, "[Generator] not implemented for ",
                         d.str());
             EMBER_CHECK(kind == "mt19937" || kind == "philox", ValueError,
                         "[Generator] expected kind 'mt19937' or 'philox', but got '", kind, "'");
             return std::make_shared<Generator>(
                 kDefaultSeed, kind == "philox" ? GeneratorKind::Philox : GeneratorKind::MT19937);
           }),
           py::arg("device") = "cpu", py::kw_only(), py::arg("kind") = "mt19937")
      .def(
          "manual_seed",
          [](std::shared_ptr<Generator> g, py::int_ seed) {
            g->manual_seed(PyLong_AsUnsignedLongLongMask(seed.ptr()));  // negative seeds wrap, as in torch
            return g;
          },
          py::arg("seed"))
      .def("seed", &Generator::seed)
      .def("initial_seed", &Generator::initial_seed)
      .def_property_readonly("device", [](const Generator&) { return Device(); })
      .def_property_readonly(
          "kind", [](const Generator& g) { return g.kind() == GeneratorKind::Philox ? "philox" : "mt19937"; })
      .def("get_state", [](const Generator& g) { return generator_state_bytes(g.state()); })
      .def("set_state", [](std::shared_ptr<Generator> g, const Tensor& state) {
        EMBER_CHECK(state.dtype() == DType::UInt8, TypeError,
                    "[set_state] expected the RNG state as a uint8 tensor (torch.ByteTensor), but got ",
                    dtype_name(state.dtype()));
        g->set_state(generator_state_from_bytes(g->kind(), state.contiguous()));
        return g;
      });
  // The process-wide generator; a non-owning handle (it lives until exit).
  m.attr("default_generator") =
      std::shared_ptr<Generator>(&Generator::default_generator(), [](Generator*) {});

  bind_size(m);
  py::class_<Tensor> tensor = bind_tensor(m);
  bind_torch_function(m, tensor);
  bind_ops(m);
  bind_dlpack(m, tensor);
  bind_autograd(m, tensor);
  bind_python_function(m);
  bind_profiler(m);
  bind_generated_ops(m, tensor);
  m.def("result_type", [](const std::vector<py::object>& operands) {
    std::vector<Tensor> ts(operands.size());
    for (size_t i = 0; i < operands.size(); ++i)
      EMBER_CHECK(load_tensor_or_number(operands[i], ts[i]), TypeError,
                  "[result_type] expected tensors or Python numbers, but got ",
                  std::string(py::str(py::type::of(operands[i]).attr("__name__"))));
    return dtype_object(result_type(ts));
  });
}
