"""TVTensor: the base of the tensor subclasses that tell transforms v2 what an input is.

Note [TVTensor return type]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
torchvision's TVTensors are torch.Tensor subclasses whose ``__torch_function__`` unwraps every
op's output to a plain Tensor, except ``clone``, ``to``, ``detach`` and ``requires_grad_`` (which
keep the subclass and its metadata), or everything while ``set_return_type("TVTensor")`` is in
force. ember.Tensor subclasses the same way (``nn.Parameter`` does), and its ops already return plain
Tensors, but ember has no ``__torch_function__`` hook; so TVTensor overrides each Tensor *method and
operator* with a thin wrapper that re-wraps tensor outputs when the rule says so. Free functions
(``ember.add(image, 1)``) and properties (``image.T``) always return plain Tensors, in either mode.

Wrapping shares memory but, unlike torch's ``as_subclass``, starts a new autograd leaf: ember has
no way to put an existing graph node under a subclass instance, so a TVTensor built from (or
returned for) a tensor with history does not pass gradients back to it (the kernels themselves, on
plain tensors, are differentiable).
"""

from __future__ import annotations

import inspect
from typing import Any

import ember

_RETURN_TYPE = "Tensor"
# Methods that keep the subclass and metadata whatever the return type (as torchvision).
_FORCE_SUBCLASS = frozenset({"clone", "to", "detach", "requires_grad_"})
# Tensor methods left alone: construction, conversion to Python values, pickling, printing.
_NOT_WRAPPED = frozenset({
    "__init__", "__repr__", "__reduce_ex__", "__setitem__", "__bool__", "__float__", "__int__", "__index__",
    "__len__", "__iter__", "__array__", "__format__", "__dlpack__", "__dlpack_device__", "backward", "item",
    "tolist", "numpy", "dim", "size", "numel", "data_ptr", "stride", "storage_offset", "element_size",
    "is_contiguous", "is_floating_point", "is_complex", "equal", "allclose",
})


class _ReturnTypeCM:
    def __init__(self, previous: str) -> None:
        self._previous = previous

    def __enter__(self) -> _ReturnTypeCM:
        return self

    def __exit__(self, *args: Any) -> None:
        set_return_type(self._previous)


def set_return_type(return_type: str) -> _ReturnTypeCM:
    """Sets what Tensor methods and operators on a TVTensor return: ``"Tensor"`` (default, plain
    tensors) or ``"TVTensor"`` (the input's subclass and metadata). Works as a plain call or as a
    context manager that restores the previous setting."""
    global _RETURN_TYPE
    if return_type.lower() not in ("tensor", "tvtensor"):
        raise ValueError(f"return_type must be 'TVTensor' or 'Tensor', got {return_type}")
    previous = _RETURN_TYPE
    _RETURN_TYPE = "TVTensor" if return_type.lower() == "tvtensor" else "Tensor"
    return _ReturnTypeCM(previous)


def _must_return_subclass() -> bool:
    return _RETURN_TYPE == "TVTensor"


def _to_tensor(data: Any, dtype=None, device=None, requires_grad: bool | None = None) -> tuple[ember.Tensor, bool]:
    """(tensor sharing data's memory where it can, whether the TVTensor requires grad)."""
    if requires_grad is None:
        requires_grad = data.requires_grad if isinstance(data, ember.Tensor) else False
    return ember.as_tensor(data, dtype=dtype, device=device), requires_grad


class TVTensor(ember.Tensor):
    """Base class of Image, Video, Mask and BoundingBoxes (Note [TVTensor return type])."""

    # the method wrappers below decide the return type; the ops themselves see plain tensors
    __torch_function__ = ember._C._disabled_torch_function_impl

    @classmethod
    def _make(cls, tensor: ember.Tensor, requires_grad: bool | None = None) -> TVTensor:
        # Shares tensor's memory and version counter (a new autograd leaf, see the Note).
        out = ember.Tensor.__new__(cls)
        ember.Tensor.__init__(out, tensor)
        if requires_grad if requires_grad is not None else tensor.requires_grad:
            out.requires_grad_(True)
        return out

    def _metadata(self) -> dict[str, Any]:
        return {}

    def _wrap_output(self, tensor: ember.Tensor) -> TVTensor:
        # An op's output as this tensor's type, shapes unchecked (a box tensor's sum is 0-d).
        return type(self)._make(tensor)

    def as_subclass(self, cls: type) -> ember.Tensor:
        """This tensor's memory seen as ``cls`` (``ember.Tensor`` unwraps; as torch's as_subclass,
        without the autograd history, see the Note)."""
        if cls is ember.Tensor:
            return ember.Tensor.view(self, self.shape)  # a plain view keeps the graph back to self
        if cls is type(self):
            return wrap(self, like=self)
        raise TypeError(f"as_subclass() supports ember.Tensor and {type(self).__name__}, but got {cls}")

    def __repr__(self) -> str:
        text = ember.Tensor.__repr__(self.as_subclass(ember.Tensor))
        name = type(self).__name__
        # re-indent continuation lines under the longer (or shorter) opening than "tensor("
        text = text.replace("tensor(", f"{name}(", 1).replace("\n" + " " * 7, "\n" + " " * (len(name) + 1))
        extra = "".join(f", {k}={v}" for k, v in self._metadata().items())
        return text[:-1] + extra + ")" if extra else text

    def __deepcopy__(self, memo: dict) -> TVTensor:
        if id(self) not in memo:
            memo[id(self)] = wrap(self.detach().clone(), like=self).requires_grad_(self.requires_grad)
        return memo[id(self)]

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (_rebuild, (type(self), self.detach().as_subclass(ember.Tensor), self._metadata(), self.requires_grad))


def _rebuild(cls: type, tensor: ember.Tensor, metadata: dict, requires_grad: bool) -> TVTensor:
    out = cls._wrap(tensor, **metadata) if metadata else cls._make(tensor)
    return out.requires_grad_(requires_grad) if requires_grad else out


def _rewrap(value: Any, like: TVTensor) -> Any:
    if isinstance(value, ember.Tensor):
        return value if isinstance(value, TVTensor) else like._wrap_output(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # sort(), max(dim): named tuples
        return type(value)(*(_rewrap(v, like) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_rewrap(v, like) for v in value)
    return value


def _wrapped_method(name: str, base: Any) -> Any:
    forced = name in _FORCE_SUBCLASS

    def method(self, *args: Any, **kwargs: Any) -> Any:
        out = base(self, *args, **kwargs)
        if forced or _RETURN_TYPE == "TVTensor":
            return _rewrap(out, self)
        return out

    method.__name__ = name
    method.__doc__ = getattr(base, "__doc__", None)
    return method


def _install_wrappers() -> None:
    for name in dir(ember.Tensor):
        if name in _NOT_WRAPPED or name in TVTensor.__dict__:
            continue
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        static = inspect.getattr_static(ember.Tensor, name)
        if type(static).__name__ not in ("function", "instancemethod"):
            continue
        # setattr after class creation: defining __eq__ in the class body would unset __hash__.
        setattr(TVTensor, name, _wrapped_method(name, getattr(ember.Tensor, name)))


_install_wrappers()


def wrap(wrappee: ember.Tensor, *, like: TVTensor, **kwargs: Any) -> TVTensor:
    """``wrappee`` (a tensor) as a TVTensor of the same type and metadata as ``like``; keyword
    arguments override metadata (``format``, ``canvas_size`` of BoundingBoxes)."""
    from ._bounding_boxes import BoundingBoxes

    if isinstance(like, BoundingBoxes):
        return BoundingBoxes._wrap(wrappee, format=kwargs.get("format", like.format),
                                   canvas_size=kwargs.get("canvas_size", like.canvas_size))
    if not isinstance(like, TVTensor):
        raise TypeError(f"wrap() expected like to be a TVTensor, but got {type(like).__name__}")
    return type(like)._make(wrappee)
