"""Memory formats (torch.memory_format): the order a dense tensor's elements take in memory.

contiguous_format is row-major. channels_last (4-d, NHWC) and channels_last_3d (5-d, NDHWC) put
the channels fastest, as PyTorch 1.12 promotes for vision models on CPU: `x.contiguous(
memory_format=ember.channels_last)` lays a tensor out so, `model.to(memory_format=...)` its 4-d
parameters, and convolution, pooling, batch/group norm and every pointwise op keep a channels-last
input channels last (Note [memory formats] in native/src/core/tensor.cpp). preserve_format keeps
the layout the input suggests: channels last for a channels-last input, row-major otherwise
(PyTorch also keeps other dense strides, such as a transpose's).
"""

from __future__ import annotations

from . import _C


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory layout (torch.memory_format), accepted where PyTorch takes one."""

    __slots__ = ("_code", "_name")

    def __init__(self, name: str, code: int) -> None:
        self._name = name
        self._code = code  # the native layer's MemoryFormat; -1 for preserve_format

    def __repr__(self) -> str:
        return "ember." + self._name

    def __reduce__(self) -> str:  # pickles as the module-level singleton
        return self._name


memory_format.__module__ = "ember"
contiguous_format = memory_format("contiguous_format", 0)
channels_last = memory_format("channels_last", 1)
channels_last_3d = memory_format("channels_last_3d", 2)
preserve_format = memory_format("preserve_format", -1)
legacy_contiguous_format = memory_format("legacy_contiguous_format", 0)  # contiguous_format's older twin
_BY_CODE = (contiguous_format, channels_last, channels_last_3d)

_row_major = _C.Tensor.is_contiguous
_contiguous = _C.Tensor.contiguous


def check(fmt: object, who: str) -> memory_format:
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{who}(): argument 'memory_format' must be ember.memory_format, not {type(fmt).__name__}")
    return fmt


def suggest(t: _C.Tensor) -> memory_format:
    """The layout an op's result takes after t (PyTorch's suggest_memory_format; the native rule)."""
    return _BY_CODE[t._suggest_memory_format()]


def resolve(t: _C.Tensor, fmt: object, who: str) -> memory_format:
    """fmt checked, with preserve_format replaced by the layout t suggests."""
    fmt = check(fmt, who)
    return suggest(t) if fmt is preserve_format else fmt


def is_contiguous(self: _C.Tensor, memory_format: memory_format = contiguous_format) -> bool:
    """Whether self is dense in the given layout (torch.Tensor.is_contiguous)."""
    if memory_format is contiguous_format:  # the common call, kept cheap for the optimizers' checks
        return _row_major(self)
    fmt = resolve(self, memory_format, "is_contiguous")
    return _row_major(self) if fmt._code == 0 else self._is_contiguous_in(fmt._code)


def contiguous(self: _C.Tensor, memory_format: memory_format = contiguous_format) -> _C.Tensor:
    """self if it is dense in the given layout, else a copy laid out so (torch.Tensor.contiguous)."""
    fmt = resolve(self, memory_format, "contiguous")
    if fmt._code == 0:
        return _contiguous(self)
    return self if self._is_contiguous_in(fmt._code) else _C.to_memory_format(self, fmt._code, False)


def laid_out(t: _C.Tensor, fmt: memory_format) -> _C.Tensor:
    """A fresh result t, relaid in fmt (already resolved) when that differs from row-major."""
    return t if fmt._code <= 0 or t._is_contiguous_in(fmt._code) else _C.to_memory_format(t, fmt._code, False)
