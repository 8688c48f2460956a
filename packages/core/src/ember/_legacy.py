"""PyTorch's legacy tensor constructors and typed tensor classes, which old scripts still use.

ember.Tensor(2, 3) and ember.FloatTensor(2, 3) make an uninitialized tensor of that shape;
ember.Tensor([1, 2]) and ember.LongTensor([1, 2]) copy the data; ember.FloatTensor(storage) views
a storage object (an UntypedStorage, or a TypedStorage of its dtype); isinstance(t, ember.FloatTensor)
checks the dtype; t.type() names the class ("ember.FloatTensor") and t.type(dtype) converts.
As in PyTorch, a tuple or list argument is data, and an ember.Size (a tensor's .shape) is a shape.
"""

from __future__ import annotations

import numbers

from . import _C

# (class name, dtype) in PyTorch's order.
_TYPES = [("FloatTensor", _C.float32), ("DoubleTensor", _C.float64), ("HalfTensor", _C.float16),
          ("BFloat16Tensor", _C.bfloat16), ("ByteTensor", _C.uint8), ("CharTensor", _C.int8),
          ("ShortTensor", _C.int16), ("IntTensor", _C.int32), ("LongTensor", _C.int64),
          ("BoolTensor", _C.bool)]
_NAME_OF = {dtype: name for name, dtype in _TYPES}


def _new(dtype: _C.dtype, args: tuple, kwargs: dict, who: str) -> _C.Tensor:
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"{who}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if device is not None and _C.device(device).type != "cpu":
        raise RuntimeError(f"{who}: only 'cpu' tensors can be created; Ember was not compiled with CUDA enabled")
    from ._tensor import empty, tensor

    if not args:
        return empty(0, dtype=dtype)
    if len(args) == 1 and isinstance(args[0], _C.Size):  # a shape, not data
        args = tuple(args[0])
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        if any(a < 0 for a in args):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(args)}: {list(args)}")
        return empty(*args, dtype=dtype)
    if len(args) == 1:
        (data,) = args
        from . import storage

        if storage.is_storage(data):  # a tensor over all of the storage, sharing its memory
            return storage.tensor_over(data, dtype)
        if isinstance(data, _C.Tensor):
            if data.dtype != dtype:
                raise TypeError(f"{who}: expected {dtype} (got {data.dtype})")
            return _C.Tensor(data)
        if isinstance(data, (str, bytes)) or isinstance(data, numbers.Number):
            raise TypeError(f"{who}(): new() received an invalid combination of arguments - got ({type(data).__name__})")
        return tensor(data, dtype=dtype)
    raise TypeError(f"{who}(): new() received an invalid combination of arguments - got "
                    f"({', '.join(type(a).__name__ for a in args)})")


def legacy_new(*args: object, **kwargs: object) -> _C.Tensor:
    """ember.Tensor(*args): a shape (uninitialized), data, a tensor (shared) or nothing (empty)."""
    return _new(_C.get_default_dtype(), args, dict(kwargs), "Tensor")


class _TypedTensorMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args: object, **kwargs: object) -> _C.Tensor:
        return _new(cls.dtype, args, dict(kwargs), cls.__name__)

    def __repr__(cls) -> str:
        return f"<class 'ember.{cls.__name__}'>"


def _typed_class(name: str, dtype: _C.dtype) -> type:
    return _TypedTensorMeta(name, (), {"dtype": dtype, "__module__": "ember",
                                       "__doc__": f"ember.{name}(*size) or ember.{name}(data): a {dtype} tensor."})


TYPED = {name: _typed_class(name, dtype) for name, dtype in _TYPES}


def _dtype_of_type_name(name: str) -> _C.dtype:
    short = name.removeprefix("ember.").removeprefix("torch.")
    if short.startswith("cuda."):
        raise AssertionError("Ember not compiled with CUDA enabled")
    if short in TYPED:
        return TYPED[short].dtype
    raise ValueError(f"invalid type: '{name}'")


def tensor_type(self: _C.Tensor, dtype: object = None, non_blocking: bool = False, **kwargs: object) -> object:
    """t.type() is the type's name ("ember.FloatTensor"); t.type(ember.float64 or
    "ember.DoubleTensor" or ember.DoubleTensor) converts, returning t itself when it already has
    that type (torch.Tensor.type)."""
    if dtype is None:
        name = _NAME_OF.get(self.dtype)
        if name is None:
            raise TypeError(f"type(): Ember has no legacy tensor type for dtype {self.dtype}")
        return f"ember.{name}"
    if isinstance(dtype, str):
        dtype = _dtype_of_type_name(dtype)
    elif isinstance(dtype, _TypedTensorMeta):
        dtype = dtype.dtype
    elif not isinstance(dtype, _C.dtype):
        raise TypeError(f"type(): expected a dtype, a type name or a tensor type, but got {type(dtype).__name__}")
    return self if self.dtype == dtype else _C.to_dtype(self, dtype, False)


def tensor_methods() -> dict[str, object]:
    """Tensor.type, for ember/_tensor_methods.py to attach."""
    return {"type": tensor_type}
