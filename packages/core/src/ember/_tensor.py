"""Tensor creation from Python data, and the Python-level Tensor methods (tensor_methods() lists
them; ember/_tensor_methods.py attaches them)."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Sequence

import numpy as np

from . import _C, _memory_format
from ._inplace import _graph_source, _write_inplace, in_place_form

_NUMPY_TO_EMBER = {
    np.dtype(np.bool_): _C.bool,
    np.dtype(np.uint8): _C.uint8,
    np.dtype(np.int8): _C.int8,
    np.dtype(np.int16): _C.int16,
    np.dtype(np.int32): _C.int32,
    np.dtype(np.int64): _C.int64,
    np.dtype(np.float16): _C.float16,
    np.dtype(np.float32): _C.float32,
    np.dtype(np.float64): _C.float64,
    np.dtype(np.complex64): _C.complex64,
    np.dtype(np.complex128): _C.complex128,
}


def _infer(data: object) -> tuple[np.ndarray, _C.dtype]:
    """Python data -> (float64/int64/bool/complex128 array, PyTorch's inferred dtype)."""
    if isinstance(data, np.ndarray):
        if data.dtype not in _NUMPY_TO_EMBER:
            raise TypeError(f"[tensor] expected a NumPy array of a supported dtype, but got {data.dtype}")
        return data, _NUMPY_TO_EMBER[data.dtype]
    arr = np.asarray(data)
    if arr.dtype == object or arr.dtype.kind in "US":
        raise TypeError(
            "[tensor] expected numbers or nested sequences of numbers of equal length, "
            f"but got {type(data).__name__} holding {arr.dtype}"
        )
    kind = arr.dtype.kind
    if kind == "b":
        return arr, _C.bool
    if kind in "iu":
        return arr.astype(np.int64), _C.int64
    if kind == "f":
        return arr.astype(np.float64), _C.get_default_dtype()  # Python floats: the default dtype
    if kind == "c":  # the complex dtype matching the default dtype, as in PyTorch
        return arr.astype(np.complex128), _C.complex128 if _C.get_default_dtype() == _C.float64 else _C.complex64
    raise TypeError(f"[tensor] expected numbers, but got {arr.dtype}")


_INT_RANGES = {_C.uint8: np.iinfo(np.uint8), _C.int8: np.iinfo(np.int8), _C.int16: np.iinfo(np.int16),
               _C.int32: np.iinfo(np.int32), _C.int64: np.iinfo(np.int64)}


def _check_fits(arr: np.ndarray, dtype: _C.dtype) -> None:
    """Python numbers bound for an integer dtype must fit it, as PyTorch checks in torch.tensor
    (Note [scalar range]: an unsigned dtype also takes -max..-1 as integers, which wrap)."""
    info = _INT_RANGES.get(dtype)
    if info is None or arr.size == 0 or arr.dtype.kind == "b":
        return
    if arr.dtype.kind == "c":
        if np.any(arr.imag != 0):
            raise RuntimeError(f"value cannot be converted to type {dtype_name(dtype)} without overflow")
        arr = arr.real
    lo = -int(info.max) if info.min == 0 and arr.dtype.kind in "iu" else int(info.min)
    if arr.dtype.kind == "f":
        top = float(info.max)  # 2**63 for int64: rounded up, itself out of range
        bad = (not np.all(np.isfinite(arr)) or arr.min() < lo
               or (arr.max() >= top if dtype == _C.int64 else arr.max() > top))
    else:
        bad = int(arr.min()) < lo or int(arr.max()) > int(info.max)
    if bad:
        raise RuntimeError(f"value cannot be converted to type {dtype_name(dtype)} without overflow")


def dtype_name(dtype: _C.dtype) -> str:
    return str(dtype).removeprefix("ember.")


def tensor(data: object, *, dtype: _C.dtype | None = None, device: object = None,
           requires_grad: builtins.bool = False) -> _C.Tensor:
    """Copies ``data`` (nested sequences, scalars, NumPy arrays or tensors) into a new tensor."""
    if device is not None and _C.device(device).type != "cpu":
        raise NotImplementedError(f"[tensor] not implemented for {_C.device(device)}")
    if isinstance(data, _C.Tensor):
        src = data
        inferred = data.dtype
    else:
        arr, inferred = _infer(data)
        if dtype is not None and not isinstance(data, np.ndarray):  # a NumPy array casts unchecked, as in PyTorch
            _check_fits(arr, dtype)
        src = _C.from_numpy(np.array(arr, order="C", copy=None))  # keeps 0-d arrays 0-d
    # copy=True: always a fresh buffer, never a view of the caller's data (and no autograd history)
    out = _C.detach(_C.to_dtype(src, dtype if dtype is not None else inferred, True))
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data: object, dtype: _C.dtype | None = None, device: object = None) -> _C.Tensor:
    """Like tensor(), but shares memory with ``data`` when it can: a tensor (or a NumPy array,
    on the CPU) already of the requested dtype is returned without a copy."""
    if device is not None and _C.device(device).type != "cpu":
        raise NotImplementedError(f"[as_tensor] not implemented for {_C.device(device)}")
    if isinstance(data, np.ndarray) and data.dtype.kind in "biufc" and data.dtype.byteorder in "=|":
        data = _C.from_numpy(data)
    if isinstance(data, _C.Tensor):
        return data if dtype is None or dtype == data.dtype else _C.to_dtype(data, dtype, False)
    return tensor(data, dtype=dtype)


def empty(*size: int | Sequence[int], dtype: _C.dtype | None = None, device: object = None,
          memory_format: object = _memory_format.contiguous_format) -> _C.Tensor:
    """Uninitialized tensor of the given size (``ember.empty(2, 3)`` or ``ember.empty((2, 3))``)."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    fmt = _memory_format.check(memory_format, "empty")
    if fmt is _memory_format.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by empty()")
    out = _C._empty(list(size), dtype if dtype is not None else _C.get_default_dtype(),
                    _C.device(device) if device is not None else _C.device("cpu"))
    return _memory_format.laid_out(out, fmt)


def _as_numpy_for_print(t: _C.Tensor) -> np.ndarray:
    t = _C.detach(t)
    if t.dtype in (_C.bfloat16, _C.float8_e4m3fn, _C.float8_e5m2, _C.float8_e4m3fnuz, _C.float8_e5m2fnuz):
        return _C.to_dtype(t, _C.float32, False).numpy()
    if t.dtype in (_C.bits8, _C.bits16, _C.bits1x8, _C.bits2x4, _C.bits4x2):
        raise NotImplementedError(f"printing or reading a {t.dtype} tensor is not supported: its bits have no "
                                  "value; view it as an integer dtype (x.view(ember.uint8) or ember.int16)")
    if t.dtype in (_C.qint8, _C.quint8, _C.qint32, _C.quint4x2, _C.quint2x4):
        raise TypeError(f"reading a {t.dtype} tensor's values as Python numbers is not supported (as in "
                        "PyTorch): dequantize() gives its values, int_repr() its integers")
    if t.dtype == _C.complex32:  # NumPy has no complex of two halves
        return _C.to_dtype(t, _C.complex64, False).numpy()
    return t.numpy()


_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": float("inf"), "edgeitems": 3, "linewidth": 80},
}
_PRINT_OPTIONS: dict[str, object] = {**_PROFILES["default"], "sci_mode": None}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print (torch.set_printoptions): digits after the point, the element count above
    which the middle is summarized as "...", the items kept at each edge, the line width, a preset
    profile ("default", "short", "full") and scientific notation (None: chosen per tensor)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"[set_printoptions] profile must be one of {sorted(_PROFILES)}, but got {profile!r}")
        _PRINT_OPTIONS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            if isinstance(value, builtins.bool) or not isinstance(value, (builtins.int, builtins.float)) or value < 0:
                raise ValueError(f"[set_printoptions] {name} must be a non-negative number, but got {value!r}")
            _PRINT_OPTIONS[name] = value
    _PRINT_OPTIONS["sci_mode"] = sci_mode


def _float_formatter(values: np.ndarray) -> object:
    """PyTorch's rules: integer-valued floats print as "1.", otherwise `precision` decimals,
    switching to scientific notation when the finite magnitudes span more than 1000x or exceed
    1e8 (or always / never, as set_printoptions(sci_mode=) says)."""
    precision, sci_mode = _PRINT_OPTIONS["precision"], _PRINT_OPTIONS["sci_mode"]
    finite = np.abs(values[np.isfinite(values)]).astype(np.float64)
    nonzero = finite[finite != 0]
    integral = finite.size and np.all(finite == np.round(finite))
    if sci_mode is None:
        sci = bool(nonzero.size) and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8 or
                                      (not integral and nonzero.min() < 1e-4))
    else:
        sci = sci_mode
    if sci:
        fmt = f"{{:.{precision}e}}"
    elif integral:
        fmt = "{:.0f}."
    else:
        fmt = f"{{:.{precision}f}}"

    def one(v: float) -> str:
        return ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")) if not np.isfinite(v) else fmt.format(v)

    width = max((len(one(v)) for v in values.ravel()), default=0)
    return lambda v: one(v).rjust(width)


def _tensor_repr(self: _C.Tensor) -> str:
    batched = _C._vmap_info(self)
    if batched is not None:  # inside vmap: the value, whose dimension bdim is the batch of level lvl
        level, bdim, value = batched
        inner = "\n".join("    " + line for line in repr(value).splitlines())
        return f"BatchedTensor(lvl={level}, bdim={bdim}, value=\n{inner}\n)"
    if _C._is_python_tensor(self) and _C._storage_nbytes(self) == 0 and self.numel() > 0:
        # a wrapper subclass's tensor (Note [Python tensors]): its values live in its subclass
        return (f"{type(self).__name__}(size={tuple(self.shape)}, dtype={self.dtype}, device={self.device}"
                f"{', requires_grad=True' if self.requires_grad else ''})")
    quantized = _C._quantizer(self) is not None  # printed as its values, then its parameters
    arr = _C.dequantize(self).numpy() if quantized else _as_numpy_for_print(self)
    threshold = _PRINT_OPTIONS["threshold"]
    options: dict[str, object] = {
        "separator": ", ", "prefix": "tensor(", "edgeitems": builtins.int(_PRINT_OPTIONS["edgeitems"]),
        "threshold": sys.maxsize if threshold == float("inf") else builtins.int(threshold),
        "max_line_width": builtins.int(_PRINT_OPTIONS["linewidth"]),
    }
    if arr.dtype.kind == "f":
        options["formatter"] = {"float_kind": _float_formatter(arr)}
    elif arr.dtype.kind == "c":
        real, imag = _float_formatter(arr.real), _float_formatter(arr.imag)
        options["formatter"] = {
            "complex_kind": lambda v: f"{real(v.real)}{'+' if v.imag >= 0 or np.isnan(v.imag) else '-'}"
                                      f"{imag(abs(v.imag)).strip()}j"
        }
    body = np.array2string(arr, **options)  # type: ignore[arg-type]
    extras = []
    if quantized:
        from ._quantized import repr_extras

        return "tensor(" + body + "".join(", " + e for e in repr_extras(self)) + ")"
    if self.dtype not in (_C.float32, _C.int64, _C.bool):
        extras.append(f"dtype={self.dtype!r}")
    if self.numel() == 0 and self.dim() != 1:
        extras.append(f"size={tuple(self.shape)}")
    try:
        fn = self.grad_fn
    except RuntimeError:  # a view whose history may not be rebuilt (Note [view creation]), as PyTorch prints it
        fn = "Invalid"
    if fn is not None:
        extras.append(f"grad_fn=<{fn if isinstance(fn, str) else fn.name()}>")
    elif self.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


def _tolist(self: _C.Tensor) -> object:
    return _as_numpy_for_print(self).tolist()


def _item(self: _C.Tensor) -> object:
    # A __torch_dispatch__ subclass or a dispatch mode sees item() as aten._local_scalar_dense,
    # as in PyTorch; a plain tensor reads its value directly (half the cost of the op call).
    if _C._item_dispatches(self):
        from ._ops import ops

        return ops.aten._local_scalar_dense(self)
    return _read_scalar(self)


def _read_scalar(t: _C.Tensor) -> object:
    """item()'s value, read directly; also aten._local_scalar_dense's kernel (ember/library.py)."""
    if t.numel() != 1:
        raise RuntimeError(f"a Tensor with {t.numel()} elements cannot be converted to Scalar")
    return _as_numpy_for_print(t).reshape(()).item()


def _real_item(self: _C.Tensor) -> object:
    # float(t) / int(t) of a complex tensor take the real part; the value is read once
    value = self.item()
    return value.real if isinstance(value, complex) else value


def _len(self: _C.Tensor) -> int:
    if self.dim() == 0:
        raise TypeError("len() of a 0-d tensor")
    return self.shape[0]


def _array(self: _C.Tensor, dtype: object = None, copy: object = None) -> np.ndarray:
    arr = self.numpy()
    return arr if dtype is None else arr.astype(dtype)


# ---- Python protocols: operators, indexing, conversions ---------------------------------------


def _augmented(name: str):
    """x += y and friends: the generated in-place method (add_, ...), returning self."""
    method = getattr(_C.Tensor, name + "_")

    def op(self, other):
        method(self, other)
        return self
    return op


def _matmul(self, other):
    return _C.matmul(self, other) if isinstance(other, _C.Tensor) else NotImplemented


def _imatmul(self, other):
    # PyTorch: a @= b computes out of place, then writes the result back into a
    return _write_inplace(self, _C.matmul(_graph_source(self), other), "__imatmul__")


def _as_subclass(self: _C.Tensor, cls: type) -> _C.Tensor:
    """This tensor as an instance of `cls`, a subclass of Tensor: the same storage, version counter
    and autograd history (torch.Tensor.as_subclass). cls.__init__ is not called."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, _C.Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    if _C._is_python_tensor(self):  # Note [Python tensors]: the subclass state goes with the tensor
        from ._python_tensor import _dispatches

        alias = _C._plain_alias(self)
        if _dispatches(cls):
            return _C._as_python_tensor(alias, cls)
        self = alias
    out = _C.Tensor.__new__(cls)
    _C.Tensor.__init__(out, self, _share_history=True)
    return out


def _bool(self: _C.Tensor) -> builtins.bool:
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no' if self.numel() == 0 else 'more than one'} "
                           "values is ambiguous")
    return builtins.bool(self.item())


def _index(self: _C.Tensor) -> int:
    if self.dtype.is_floating_point or self.dtype.is_complex or self.numel() != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return builtins.int(self.item())


def _as_index(item: object) -> object:
    """A list or NumPy array index as a tensor (as PyTorch reads them); other items unchanged."""
    if isinstance(item, (list, np.ndarray)):
        item = tensor(item)
    if isinstance(item, _C.Tensor) and (item.dtype.is_floating_point or item.dtype.is_complex):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return item


def _dims_taken(item: object) -> int:
    if item is None or item is Ellipsis or isinstance(item, builtins.bool):
        return 0
    if isinstance(item, _C.Tensor) and item.dtype in (_C.bool, _C.uint8):
        return item.dim()
    return 1


def _apply_index(self: _C.Tensor, index: object) -> tuple[_C.Tensor, list | None]:
    """PyTorch's indexing, first step: ints, slices, None and Ellipsis become a view; tensor
    indices (and lists, arrays, Python bools) are collected per dim of that view for
    ember.index / index_put_ (None where a dim is not indexed). Returns (view, indices or None)."""
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(_as_index(i) for i in items)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(_dims_taken(i) for i in items)
    if consumed > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
    out, dim, picked = self, 0, []
    for item in items:
        if item is Ellipsis:
            dim += self.dim() - consumed
        elif item is None:
            out = _C.unsqueeze(out, dim)
            dim += 1
        elif isinstance(item, builtins.bool):  # x[True]: a new dim of size 1, kept or emptied
            out = _C.unsqueeze(out, dim)
            picked.append((dim, _C.arange(0, builtins.int(item), 1, dtype=_C.int64)))
            dim += 1
        elif isinstance(item, builtins.slice):
            step = 1 if item.step is None else item.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            out = _C.slice(out, dim, item.start, item.stop, step)
            dim += 1
        elif isinstance(item, (builtins.int, np.integer)):
            out = _C.select(out, dim, builtins.int(item))
        elif isinstance(item, _C.Tensor):
            picked.append((dim, item))
            dim += _dims_taken(item)
        else:
            raise TypeError(f"[index] only integers, slices (`:`), ellipsis (`...`), None, bools and integer or "
                            f"boolean tensors are valid indices, but got {type(item).__name__}")
    if not picked:
        return out, None
    indices, at = [], 0
    for d, t in picked:
        indices += [None] * (d - at) + [t]
        at = d + _dims_taken(t)
    return out, indices


def _getitem(self: _C.Tensor, index: object) -> _C.Tensor:
    view, indices = _apply_index(self, index)
    if indices is not None:
        return _C.index(view, indices)
    return view if view is not self else _C.view(self, list(self.shape))  # x[...]: an alias, keeping history


def _setitem(self: _C.Tensor, index: object, value: object) -> None:
    view, indices = _apply_index(self, index)
    if indices is None:
        if isinstance(value, _C.Tensor):
            _C.copy_(view, value)
        else:
            _C.fill_(view, value)
        return
    if not isinstance(value, _C.Tensor):
        value = tensor(value, dtype=self.dtype)
    _C.index_put_(view, indices, _C.to_dtype(value, self.dtype, False), False)


def _iter(self: _C.Tensor):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(_C.unbind(self, 0))


def _to_arguments(args: tuple, dtype, device) -> tuple:
    """(dtype, device) from to()'s positional forms: a dtype, a device, or a tensor to match."""
    for arg in args:
        if isinstance(arg, _C.dtype):
            dtype = arg
        elif isinstance(arg, _C.Tensor):
            dtype, device = arg.dtype, arg.device
        else:
            device = arg
    return dtype, device


def _to(self: _C.Tensor, *args: object, dtype: _C.dtype | None = None, device: object = None,
        copy: builtins.bool = False, non_blocking: builtins.bool = False,
        memory_format: object = _memory_format.preserve_format) -> _C.Tensor:
    """Tensor.to(dtype), .to(device), .to(device, dtype), .to(other), .to(memory_format=): a copy
    only when needed; a copy keeps the layout self suggests unless memory_format names another."""
    dtype, device = _to_arguments(args, dtype, device)
    if device is not None and _C.device(device) != self.device:
        raise NotImplementedError(f"[to] not implemented for copies to {_C.device(device)}")
    fmt = _memory_format.resolve(self, memory_format, "to")
    target = dtype if dtype is not None else self.dtype
    if target == self.dtype and not copy:  # self, relaid only when a memory format is named
        return self if memory_format is _memory_format.preserve_format else _memory_format.contiguous(self, fmt)
    return _memory_format.laid_out(_C.to_dtype(self, target, copy), fmt)


def _cuda(self: _C.Tensor, device: object = None, non_blocking: builtins.bool = False,
          memory_format: object = None) -> _C.Tensor:
    """Tensor.cuda(): AssertionError "Ember not compiled with CUDA enabled" on a CPU-only build."""
    from . import cuda

    return cuda._tensor_cuda(self, device, non_blocking)


def _no_accelerator(self, device=None) -> _C.Tensor:
    """Tensor.pin_memory(): PyTorch's CPU build has no accelerator to pin memory for."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _no_streams(self, stream) -> None:
    raise RuntimeError("record_stream: Ember has no device streams (its tensors live on the CPU)")


def _not_compiled(backend: str):
    def move(self, *args, **kwargs):
        raise AssertionError(f"Ember not compiled with {backend} enabled")
    move.__name__ = backend.lower()
    return move


def _not_linked_ipu(self, *args, **kwargs):
    raise RuntimeError("Ember is not linked with support for ipu devices")


def _sizes(args: tuple) -> object:
    """PyTorch's size arguments: f(2, 3) and f((2, 3)) alike."""
    return list(args) if len(args) != 1 else args[0]


def _varargs_method(name: str):
    bound = getattr(_C.Tensor, name)

    def method(self, *sizes, **kwargs):
        return bound(self, _sizes(sizes), **kwargs) if sizes else bound(self, **kwargs)
    method.__name__ = name
    method.__doc__ = bound.__doc__
    return method


def _view(self, *args, **kwargs):
    """Tensor.view(*shape) or view(size=shape); view(dtype) reads the same memory as another dtype
    (ember/storage.py)."""
    if not args and len(kwargs) == 1 and next(iter(kwargs)) in ("dtype", "size"):
        args = (kwargs.popitem()[1],)
    if len(args) == 1 and not kwargs and isinstance(args[0], _C.dtype):
        from .storage import view_dtype

        return view_dtype(self, args[0])
    if kwargs or not args or builtins.any(isinstance(a, _C.dtype) for a in args):
        got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError(f"view() received an invalid combination of arguments - got ({got}), but expected one of: "
                        f"(ember.dtype dtype), (tuple of ints size)")
    return _C.view(self, _sizes(args))


# Ember has no lazy conjugate / negative bits: conj() of a complex tensor materializes the
# conjugate (and is self for real tensors), so these report "no bit" and resolving is a no-op.
def is_conj(input: _C.Tensor) -> builtins.bool:  # noqa: A002 - PyTorch's argument name
    return False


def resolve_conj(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    return input


def _backward(self: _C.Tensor, gradient: _C.Tensor | None = None, retain_graph: builtins.bool | None = None,
              create_graph: builtins.bool = False, inputs=None) -> None:
    """Accumulates the gradient of this tensor into the .grad of the leaves it depends on."""
    from .autograd._engine import backward

    backward(self, gradient, retain_graph, create_graph, inputs)


# ---- the names old and new PyTorch scripts reach first (issue 18, item 1) ----------------------


def _new_factory(name: str, make):
    def method(self: _C.Tensor, *size: object, dtype: _C.dtype | None = None, device: object = None,
               requires_grad: builtins.bool = False, **kwargs: object) -> _C.Tensor:
        if "size" in kwargs:
            size = (kwargs.pop("size"),)
        out = make(self, _sizes(size), dtype or self.dtype, device or self.device, **kwargs)
        return out.requires_grad_() if requires_grad else out
    method.__name__ = name
    method.__doc__ = f"Tensor.{name}(size, ...): a new tensor with self's dtype and device unless given."
    return method


def _new_full(self: _C.Tensor, size: object, fill_value: object, *, dtype: _C.dtype | None = None,
              device: object = None, requires_grad: builtins.bool = False) -> _C.Tensor:
    """Tensor.new_full(size, fill_value): with self's dtype and device unless given."""
    out = _C.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device)
    return out.requires_grad_() if requires_grad else out


def _new_tensor(self: _C.Tensor, data: object, *, dtype: _C.dtype | None = None, device: object = None,
                requires_grad: builtins.bool = False) -> _C.Tensor:
    """Tensor.new_tensor(data): a copy of data (never sharing memory) with self's dtype unless given."""
    if isinstance(data, _C.Tensor):
        out = _C.to_dtype(data.detach(), dtype or self.dtype, True)
    else:
        out = tensor(data, dtype=dtype or self.dtype, device=device or self.device)
    return out.requires_grad_() if requires_grad else out


def _format(self: _C.Tensor, spec: str) -> str:
    """format(t, ".2f"): a 0-dim tensor formats as its Python number, as in PyTorch."""
    if self.dim() == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


_fill_scalar = _C.Tensor.fill_


def _fill(self: _C.Tensor, value: object) -> _C.Tensor:
    """Tensor.fill_(value): a number, or a 0-dim tensor (fill_.Tensor)."""
    if isinstance(value, _C.Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        value = value.item()
    return _fill_scalar(self, value)


_fill.__doc__ = _fill_scalar.__doc__




def tensor_methods() -> dict[str, object]:
    """This module's Tensor protocols and methods, {name: function or property}, in the order they
    are attached (later entries replace earlier ones): ember/_tensor_methods.py attaches them."""
    methods: dict[str, object] = {}
    methods["__repr__"] = _tensor_repr
    methods["tolist"] = _tolist
    methods["item"] = _item
    methods["__len__"] = _len
    methods["__array__"] = _array
    # a + b and the other binary operators are C-level methods (Note [C-level operators]); their
    # in-place forms are the generated add_, sub_, ... methods
    for _dunder, _op in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                         ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "pow"),
                         ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                         ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift")]:
        methods[f"__i{_dunder}__"] = _augmented(_op)
    methods["__matmul__"] = _matmul
    methods["__rmatmul__"] = lambda self, other: _C.matmul(other, self) if isinstance(other, _C.Tensor) else NotImplemented
    methods["__imatmul__"] = _imatmul
    methods["__neg__"] = lambda self: _C.neg(self)
    methods["__pos__"] = lambda self: self
    methods["__abs__"] = lambda self: _C.abs(self)
    methods["__invert__"] = lambda self: _C.bitwise_not(self)
    methods["as_subclass"] = _as_subclass
    methods["__hash__"] = object.__hash__  # tensors hash by identity, as in PyTorch
    methods["T"] = property(lambda self: _C.permute(self, list(range(self.dim() - 1, -1, -1))))
    methods["mT"] = property(lambda self: _C.transpose(self, -2, -1))
    methods["mH"] = property(lambda self: _C.conj(_C.transpose(self, -2, -1)))
    methods["H"] = property(lambda self: _C.conj(_C.permute(self, list(range(self.dim() - 1, -1, -1)))))
    methods["__bool__"] = _bool
    methods["__float__"] = lambda self: builtins.float(_real_item(self))
    methods["__int__"] = lambda self: builtins.int(_real_item(self))
    methods["__index__"] = _index
    methods["__getitem__"] = _getitem
    methods["__setitem__"] = _setitem
    methods["__iter__"] = _iter
    methods["to"] = _to
    methods["cuda"] = _cuda
    methods["cpu"] = lambda self, memory_format=None: self if self.device.type == "cpu" else _to(self, "cpu")
    methods["is_cuda"] = property(lambda self: self.device.type == "cuda")
    methods["is_cpu"] = property(lambda self: self.device.type == "cpu")
    # The other device kinds and memory kinds PyTorch names: answered as PyTorch's CPU-only build
    # answers them (Ember's tensors live in ordinary CPU memory), and moving to them raises its errors.
    for _kind in ("mps", "xpu", "ipu", "maia", "mtia", "vulkan", "xla"):
        methods["is_" + _kind] = property(lambda self, _kind=_kind: self.device.type == _kind)
    methods["is_mkldnn"] = property(lambda self: False)  # no MKL-DNN layout in Ember
    methods["is_pinned"] = lambda self, device=None: False  # page-locked memory exists only beside a GPU
    methods["is_distributed"] = lambda self: False
    methods["pin_memory"] = _no_accelerator
    methods["record_stream"] = _no_streams
    methods["xpu"] = _not_compiled("XPU")
    methods["mtia"] = _not_compiled("MTIA")
    methods["ipu"] = _not_linked_ipu
    for _name, _dt in [("float", _C.float32), ("double", _C.float64), ("half", _C.float16),
                       ("bfloat16", _C.bfloat16), ("int", _C.int32), ("long", _C.int64), ("short", _C.int16),
                       ("bool", _C.bool), ("byte", _C.uint8), ("char", _C.int8), ("chalf", _C.complex32), ("cfloat", _C.complex64),
                       ("cdouble", _C.complex128)]:
        methods[_name] = lambda self, _dt=_dt: _C.to_dtype(self, _dt, False)
    methods["type_as"] = lambda self, other: _C.to_dtype(self, other.dtype, False)
    methods["expand_as"] = lambda self, other: _C.expand(self, list(other.shape))
    methods["view_as"] = lambda self, other: _C.view(self, list(other.shape))
    methods["reshape_as"] = lambda self, other: _C.reshape(self, list(other.shape))
    methods["is_floating_point"] = lambda self: self.dtype.is_floating_point
    methods["is_complex"] = lambda self: self.dtype.is_complex
    for _name in ("reshape", "permute", "expand", "repeat", "tile", "flip"):
        methods[_name] = _varargs_method(_name)
    methods["view"] = _view
    for _name in ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill", "masked_fill",
                  "masked_scatter"):
        methods[_name + "_"] = in_place_form(_name)  # ops declared without inplace=True
    methods["clip"] = _C.Tensor.clamp
    methods["clip_"] = _C.Tensor.clamp_
    # x.real and x.imag are views (writes reach x), as in PyTorch.
    methods["real"] = property(lambda self: _C.real(self))
    methods["imag"] = property(lambda self: _C.imag(self))
    methods["is_conj"] = is_conj
    methods["resolve_conj"] = resolve_conj
    methods["is_neg"] = is_conj
    methods["resolve_neg"] = resolve_conj
    methods["backward"] = _backward
    methods["new_zeros"] = _new_factory("new_zeros", lambda self, size, dtype, device: _C.zeros(size, dtype=dtype,
                                                                                                 device=device))
    methods["new_ones"] = _new_factory("new_ones", lambda self, size, dtype, device: _C.ones(size, dtype=dtype,
                                                                                              device=device))
    methods["new_empty"] = _new_factory("new_empty", lambda self, size, dtype, device: empty(size, dtype=dtype,
                                                                                              device=device))
    methods["new_full"] = _new_full
    methods["new_tensor"] = _new_tensor
    methods["__format__"] = _format
    methods["fill_"] = _fill
    return methods
