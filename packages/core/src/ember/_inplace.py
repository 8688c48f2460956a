"""The one way Python-defined in-place forms write into self (t.addcdiv_, t.scatter_, F.relu_, ...):
the out-of-place op runs on self's graph source, and its result is copied in under PyTorch's
in-place rules. Ops declared with inplace=True get native `name_` methods instead (generated)."""

from __future__ import annotations

import builtins

from . import _C


def _dtype_name(dtype: _C.dtype) -> str:
    return repr(dtype).removeprefix("ember.")


def _can_cast(src: _C.dtype, dst: _C.dtype) -> builtins.bool:
    """PyTorch's canCast: no complex to real, no floating to integral, nothing but bool to bool."""
    if src.is_complex and not dst.is_complex:
        return False
    if src.is_floating_point and not (dst.is_floating_point or dst.is_complex):
        return False
    return not (src != _C.bool and dst == _C.bool)


def _graph_source(self: _C.Tensor) -> _C.Tensor:
    """self as an in-place op's input: a clone when autograd records, so the result's saved
    history does not alias the memory the op overwrites."""
    return self.clone() if self.requires_grad and _C._is_grad_enabled() else self


def _write_inplace(self: _C.Tensor, result: _C.Tensor, who: str, *, exact: builtins.bool = False) -> _C.Tensor:
    """Copy an in-place op's result into self under PyTorch's in-place rules: the result's shape
    must be self's, and its dtype castable to self's (`exact`: equal, as the matmul family asks)."""
    if tuple(result.shape) != tuple(self.shape):
        if exact:
            raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and output tensor size "
                               f"{list(result.shape)} should match")
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    if not _can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"result type {_dtype_name(result.dtype)} can't be cast to the desired output type "
                           f"{_dtype_name(self.dtype)}")
    return self.copy_(result)


def in_place_form(name: str):
    """Tensor.<name>_ from the out-of-place op ember.<name>, for ops declared without inplace=True."""
    fn = getattr(_C, name)

    def method(self, *args, **kwargs):
        return _write_inplace(self, fn(_graph_source(self), *args, **kwargs), name + "_")
    method.__name__ = name + "_"
    method.__doc__ = f"In-place {name}: writes the result into self."
    return method
