// DLPack exchange: Tensor.__dlpack__ / __dlpack_device__ and ember.from_dlpack, zero-copy both
// ways. The structs below are the DLPack ABI (the unversioned DLManagedTensor, carried in a
// PyCapsule named "dltensor" and renamed "used_dltensor" once a consumer owns it).
#include <pybind11/stl.h>

#include <cstdint>
#include <string>

#include "bindings.h"

namespace ember::python {
namespace {

struct DLDevice {
  int32_t device_type;  // kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means row-major contiguous
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

constexpr int32_t kDLCPU = 1;
constexpr int32_t kDLCUDAHost = 3;
constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";

DLDataType dl_dtype(DType d) {
  switch (d) {
    case DType::Bool: return {6, 8, 1};
    case DType::UInt8: return {1, 8, 1};
    case DType::Int8: return {0, 8, 1};
    case DType::Int16: return {0, 16, 1};
    case DType::Int32: return {0, 32, 1};
    case DType::Int64: return {0, 64, 1};
    case DType::Float16: return {2, 16, 1};
    case DType::BFloat16: return {4, 16, 1};
    case DType::Float32: return {2, 32, 1};
    case DType::Float64: return {2, 64, 1};
    case DType::Complex64: return {5, 64, 1};
    case DType::Complex128: return {5, 128, 1};
    default:
      throw py::buffer_error("[__dlpack__] " + std::string(dtype_name(d)) +
                             " has no code in DLPack 0.8; convert it (e.g. .float()) first");
  }
}

DType ember_dtype(DLDataType t) {
  if (t.lanes == 1) {
    for (DType d :
         {DType::Bool, DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Float16,
          DType::BFloat16, DType::Float32, DType::Float64, DType::Complex64, DType::Complex128}) {
      const DLDataType e = dl_dtype(d);
      if (e.code == t.code && e.bits == t.bits) return d;
    }
  }
  throw py::buffer_error("[from_dlpack] unsupported DLPack dtype (code " + std::to_string(t.code) +
                         ", bits " + std::to_string(t.bits) + ", lanes " + std::to_string(t.lanes) + ")");
}

// What an exported DLManagedTensor owns: the tensor (keeping its storage alive) and the arrays
// its shape and strides point into.
struct ExportContext {
  Tensor tensor;
  IntList shape;
  IntList strides;
};

void delete_export(DLManagedTensor* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
  delete self;
}

// A capsule nobody consumed still owns its tensor.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsule)) return;  // consumed ("used_dltensor"): not ours to free
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
  if (managed && managed->deleter) managed->deleter(managed);
}

py::capsule to_dlpack(const Tensor& t, py::object stream, py::object max_version, py::object dl_device,
                      py::object copy) {
  EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[__dlpack__] not implemented for ",
              t.device().str());
  if (!stream.is_none()) throw py::buffer_error("[__dlpack__] stream must be None for a cpu tensor");
  if (!dl_device.is_none()) {
    const auto dev = dl_device.cast<std::pair<int32_t, int32_t>>();
    if (dev.first != kDLCPU) throw py::buffer_error("[__dlpack__] can only export to the cpu device (1, 0)");
  }
  (void)max_version;  // we produce the unversioned capsule, which every consumer must accept
  EMBER_CHECK(!t.impl()->requires_grad, Error,
              "[__dlpack__] Can't export a tensor that requires grad; use tensor.detach() first");
  const Tensor source = (!copy.is_none() && copy.cast<bool>()) ? t.clone() : t;
  // The unversioned capsule has no read-only flag, so a consumer would take read-only memory as
  // writable (Note [read-only storage]); NumPy refuses such an export with the same error.
  if (source.storage()->read_only()) {
    throw py::buffer_error(
        "[__dlpack__] Cannot export a read-only tensor (from_numpy of a read-only array) since signalling "
        "read-only is unsupported by the DLPack capsule; clone it first or pass copy=True");
  }
  const DLDataType dtype = dl_dtype(source.dtype());
  auto* ctx = new ExportContext{source, source.sizes(), source.strides()};
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor.data = source.data_ptr();
  managed->dl_tensor.device = {kDLCPU, 0};
  managed->dl_tensor.ndim = static_cast<int32_t>(source.dim());
  managed->dl_tensor.dtype = dtype;
  managed->dl_tensor.shape = ctx->shape.data();
  managed->dl_tensor.strides = ctx->strides.data();
  managed->dl_tensor.byte_offset = 0;
  managed->manager_ctx = ctx;
  managed->deleter = &delete_export;
  PyObject* capsule = PyCapsule_New(managed, kCapsule, &capsule_destructor);
  if (!capsule) {
    delete_export(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

Tensor from_capsule(py::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsule)) {
    throw py::value_error(
        "[from_dlpack] expected an unconsumed DLPack capsule named 'dltensor' (a capsule can be used once)");
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsule));
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost) {
    throw py::buffer_error(
        "[from_dlpack] only cpu memory can be imported, but the tensor is on DLPack device type " +
        std::to_string(dl.device.device_type));
  }
  const DType dtype = ember_dtype(dl.dtype);
  EMBER_CHECK(dl.ndim >= 0, ValueError, "[from_dlpack] negative ndim ", dl.ndim);
  // The producer's sizes and strides are untrusted: every extent is computed with overflow checks
  // (a wrapped product could describe a small view over memory the producer does not own).
  const int64_t item = itemsize(dtype);
  IntList sizes(dl.shape, dl.shape + dl.ndim);
  for (int32_t d = 0; d < dl.ndim; ++d) {
    EMBER_CHECK(sizes[d] >= 0, ValueError, "[from_dlpack] negative size ", sizes[d], " in dim ", d);
  }
  const int64_t numel = checked_numel(sizes, "from_dlpack");
  IntList strides(sizes.size());
  if (dl.strides) {
    strides.assign(dl.strides, dl.strides + dl.ndim);
  } else {
    int64_t step = 1;
    for (int32_t d = dl.ndim - 1; d >= 0; --d) {
      strides[d] = step;
      EMBER_CHECK(sizes[d] <= 1 || !__builtin_mul_overflow(step, sizes[d], &step), ValueError,
                  "[from_dlpack] the sizes overflow int64 strides");
    }
  }
  int64_t highest = 0;  // offset of the last element, in items
  for (int32_t d = 0; d < dl.ndim; ++d) {
    EMBER_CHECK(strides[d] >= 0, ValueError, "[from_dlpack] negative strides are not supported (dim ", d,
                " has stride ", strides[d], "); copy the tensor first");
    int64_t reach = 0;
    EMBER_CHECK(sizes[d] == 0 || (!__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) &&
                                  !__builtin_add_overflow(highest, reach, &highest)),
                ValueError, "[from_dlpack] the strides overflow int64 (dim ", d, ")");
  }
  int64_t span = 0;
  EMBER_CHECK(numel == 0 || !__builtin_mul_overflow(highest + 1, item, &span), ValueError,
              "[from_dlpack] the tensor's byte extent overflows int64");
  EMBER_CHECK(numel == 0 || dl.data != nullptr, ValueError,
              "[from_dlpack] null data pointer for a tensor of ", numel, " elements");
  uintptr_t start = 0;
  EMBER_CHECK(!__builtin_add_overflow(reinterpret_cast<uintptr_t>(dl.data), dl.byte_offset, &start),
              ValueError, "[from_dlpack] data pointer plus byte_offset ", dl.byte_offset,
              " overflows the address space");
  if (dl.data == nullptr) {  // an empty tensor without memory: nothing to keep alive, so release it now
    PyCapsule_SetName(capsule.ptr(), kUsedCapsule);
    Tensor result = empty(sizes, dtype);
    if (managed->deleter) managed->deleter(managed);
    return result;
  }
  const size_t nbytes = static_cast<size_t>(span);
  void* data = reinterpret_cast<void*>(start);
  PyCapsule_SetName(capsule.ptr(), kUsedCapsule);  // the tensor owns it from here on
  return from_blob(data, sizes, strides, dtype, Device(), nbytes, [managed](void*) {
    if (!managed->deleter) return;
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;  // producers' deleters may touch Python objects
      managed->deleter(managed);
    } else {
      managed->deleter(managed);
    }
  });
}

}  // namespace

void bind_dlpack(py::module_& m, py::class_<Tensor>& tensor) {
  tensor.def("__dlpack__", &to_dlpack, py::kw_only(), py::arg("stream") = py::none(),
             py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
             py::arg("copy") = py::none(), "A DLPack capsule sharing this tensor's memory.");
  tensor.def(
      "__dlpack_device__",
      [](const Tensor& t) {
        EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError,
                    "[__dlpack_device__] not implemented for ", t.device().str());
        return py::make_tuple(kDLCPU, 0);
      },
      "(device type, device id) in DLPack's numbering: (1, 0) is the cpu.");
  m.def(
      "from_dlpack",
      [](py::object ext) {
        if (py::hasattr(ext, "__dlpack__")) {
          if (py::hasattr(ext, "__dlpack_device__")) {
            const auto dev = ext.attr("__dlpack_device__")().cast<std::pair<int32_t, int32_t>>();
            if (dev.first != kDLCPU && dev.first != kDLCUDAHost) {
              throw py::buffer_error(
                  "[from_dlpack] only cpu memory can be imported, but the producer is on DLPack "
                  "device type " +
                  std::to_string(dev.first));
            }
          }
          return from_capsule(ext.attr("__dlpack__")());
        }
        if (!PyCapsule_CheckExact(ext.ptr())) {
          throw py::type_error(
              "[from_dlpack] expected an object with __dlpack__ or a DLPack capsule, but got " +
              std::string(py::str(py::type::handle_of(ext).attr("__name__"))));
        }
        return from_capsule(ext);
      },
      py::arg("ext_tensor"),
      "A tensor sharing the memory of a DLPack producer (NumPy array, tensor, capsule).");
}

}  // namespace ember::python
