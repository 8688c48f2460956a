"""Tensor subclasses with ``__torch_dispatch__``, as PyTorch's (Note [Python tensors] in
``ember/dispatch_mode.h``)::

    class Logged(ember.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return ember.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype,
                                                       requires_grad=elem.requires_grad)

        def __init__(self, elem):
            self.elem = elem

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            unwrap = lambda x: x.elem if isinstance(x, Logged) else x
            out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
            return tree_map(lambda x: Logged(x) if isinstance(x, ember.Tensor) else x, out)

An op called with such a tensor is recorded by autograd as usual, then, below autograd, handed to
the subclass's ``__torch_dispatch__`` (after any dispatch mode, which comes first) with ``func`` the
registered op (``ember.ops.aten.<op>``), as ``ember.utils._python_dispatch`` describes for modes.

    Tensor._make_wrapper_subclass(cls, size, strides=None, ...)
                        a tensor of cls with that geometry and no memory of its own: the
                        subclass keeps its data in attributes, and reading its data raises
    Tensor._make_subclass(cls, data, require_grad=False)
                        a tensor of cls sharing data's memory; its ops go to
                        cls.__torch_dispatch__ if cls defines one
    _disabled_torch_dispatch_impl
                        Tensor.__torch_dispatch__: runs the op's kernel (for a subclass that
                        opts out, as nn.Parameter-like classes do)
    DisableTorchDispatch
                        within it, this thread's ops run their kernels: neither dispatch modes
                        nor such subclasses see them (torch._C._DisableTorchDispatch,
                        ember.utils._mode_utils.no_dispatch)

Where Ember differs from PyTorch: a tensor comes back from native code as its live Python object
while that lives (``x.grad is x.grad``), as in PyTorch. Once that object is gone (the tensor lives
on in the autograd graph, say), it comes back as a new instance of its subclass with the attributes
the last one had when native code last handed it out; PyTorch keeps the object itself alive
instead. ``item()`` (and so ``bool()``, ``int()``, ``float()``) reaches the subclass, and any
dispatch mode, as ``aten._local_scalar_dense``, as in PyTorch; other reads of a wrapper's data
(``tolist()``, ``numpy()``) raise rather than dispatching, and ``repr`` of one, unless the
subclass defines its own, shows its class and geometry, not values.
"""

from __future__ import annotations

from . import _C, _memory_format
from .sparse._tensor import strided


def _disabled_torch_dispatch_impl(func, types, args=(), kwargs=None):
    """Tensor.__torch_dispatch__: the op's kernel, with this thread's dispatch switched off."""
    with DisableTorchDispatch():
        return func(*args, **(kwargs or {}))


class DisableTorchDispatch:
    """Within it, this thread's ops run their kernels: dispatch modes and __torch_dispatch__
    subclasses do not see them (torch._C._DisableTorchDispatch)."""

    def __enter__(self) -> DisableTorchDispatch:
        self._previous = _C._set_python_dispatch_enabled(False)
        return self

    def __exit__(self, *exc: object) -> None:
        _C._set_python_dispatch_enabled(self._previous)


def _dispatches(cls: type) -> bool:
    return getattr(cls, "__torch_dispatch__", _disabled_torch_dispatch_impl) is not _disabled_torch_dispatch_impl


def _check_subclass(cls, fn: str) -> None:
    if not isinstance(cls, type) or not issubclass(cls, _C.Tensor):
        raise TypeError(f"{fn}: cls must be a subclass of Tensor, but got {cls!r}")


def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None, memory_format=None, dtype=None,
                           layout=None, device=None, pin_memory=False, requires_grad=False,
                           dispatch_sizes_strides_policy=None, dispatch_device=False, dispatch_layout=False,
                           _extra_dispatch_keys=None, storage_size=None):
    """A tensor of `cls` with this geometry, dtype and device and no memory of its own (its
    subclass holds the data, in attributes): every op on it goes to cls.__torch_dispatch__."""
    _check_subclass(cls, "_make_wrapper_subclass")
    if dispatch_sizes_strides_policy is not None or dispatch_device or dispatch_layout:
        raise NotImplementedError("_make_wrapper_subclass: Ember's wrapper tensors have fixed sizes, strides, "
                                  "device and layout (dispatch_sizes_strides_policy / dispatch_device / "
                                  "dispatch_layout are not supported)")
    if layout is not None and layout is not strided:
        raise NotImplementedError(f"_make_wrapper_subclass: only the strided layout is supported, not {layout}")
    size = [int(n) for n in size]
    fmt = _memory_format.check(memory_format, "_make_wrapper_subclass") if memory_format is not None else None
    if fmt is not None and fmt is not _memory_format.contiguous_format:
        if strides is not None:
            raise ValueError("_make_wrapper_subclass: give strides or memory_format, not both")
        strides = _channels_last_strides(size, fmt)
    t = _C._wrapper_tensor(size, None if strides is None else [int(s) for s in strides], int(storage_offset or 0),
                           dtype if dtype is not None else _C.get_default_dtype(),
                           _C.device(device) if device is not None else _C.device("cpu"))
    if requires_grad:
        t.requires_grad_(True)
    return _C._as_python_tensor(t, cls)


def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None, dispatch_device=False,
                   dispatch_layout=False, _extra_dispatch_keys=None):
    """A tensor of `cls` sharing data's memory and version counter, without its history; its ops go
    to cls.__torch_dispatch__ if cls defines one."""
    _check_subclass(cls, "_make_subclass")
    if not isinstance(data, _C.Tensor):
        raise TypeError(f"_make_subclass: data must be a Tensor, but got {type(data).__name__}")
    alias = _C.Tensor(_C._plain_alias(data) if _C._is_python_tensor(data) else data)
    out = _C._as_python_tensor(alias, cls) if _dispatches(cls) else alias.as_subclass(cls)
    if require_grad:
        out.requires_grad_(True)
    return out


def _channels_last_strides(size: list[int], fmt) -> list[int]:
    rank = 4 if fmt is _memory_format.channels_last else 5
    if len(size) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt} format")
    order = [1, *range(rank - 1, 1, -1), 0]  # C varies fastest, then W, H, (D), N
    strides = [0] * rank
    step = 1
    for d in order:
        strides[d] = step
        step *= max(size[d], 1)
    return strides


def tensor_methods() -> dict[str, object]:
    return {
        "_make_wrapper_subclass": staticmethod(_make_wrapper_subclass),
        "_make_subclass": staticmethod(_make_subclass),
        "__torch_dispatch__": _disabled_torch_dispatch_impl,
    }


_C._disabled_torch_dispatch_impl = _disabled_torch_dispatch_impl
_C._DisableTorchDispatch = DisableTorchDispatch

