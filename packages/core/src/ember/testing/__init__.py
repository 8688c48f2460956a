"""ember.testing (torch.testing): assert_close, the comparison PyTorch's own tests and many user
tests use, with PyTorch's default tolerances per dtype and its failure messages; make_tensor for
random test inputs; and the deprecated assert_allclose."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

from .. import _C, _memory_format

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# (rtol, atol) when neither is given, as PyTorch's defaults; integral and bool dtypes compare exactly.
_TOLERANCES = {
    _C.float16: (1e-3, 1e-5), _C.bfloat16: (1.6e-2, 1e-5), _C.float32: (1.3e-6, 1e-5), _C.float64: (1e-7, 1e-7),
    _C.complex64: (1.3e-6, 1e-5), _C.complex128: (1e-7, 1e-7),
}


class _Mismatch(AssertionError):
    pass


def _is_number(obj) -> bool:
    return isinstance(obj, (bool, int, float, complex))


def _is_tensor_like(obj) -> bool:
    return isinstance(obj, _C.Tensor) or (type(obj).__module__ == "numpy" and type(obj).__name__ == "ndarray")


def _as_tensor(obj):
    if isinstance(obj, _C.Tensor):
        return obj
    from .. import from_numpy

    return from_numpy(obj)


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    return _TOLERANCES.get(dtype, (0.0, 0.0))


def _format_index(flat: int, shape) -> str:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat //= size if size else 1
    return "(" + ", ".join(str(i) for i in reversed(index)) + ("," if len(shape) == 1 else "") + ")"


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_dtype, check_stride, kind="Tensor-likes"):
    if tuple(actual.shape) != tuple(expected.shape):
        raise _Mismatch(f"The values for attribute 'shape' do not match: {tuple(actual.shape)} != "
                        f"{tuple(expected.shape)}.")
    if check_dtype and actual.dtype != expected.dtype:
        raise _Mismatch(f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.")
    if check_stride and tuple(actual.stride()) != tuple(expected.stride()):
        raise _Mismatch(f"The values for attribute 'stride()' do not match: {tuple(actual.stride())} != "
                        f"{tuple(expected.stride())}.")
    dtype = _C.promote_types(actual.dtype, expected.dtype)
    rtol, atol = _tolerances(dtype, rtol, atol)
    a = actual.detach().to(dtype)
    e = expected.detach().to(dtype)
    if dtype == _C.bool:
        a, e = a.to(_C.int64), e.to(_C.int64)
    if a.numel() == 0:
        return
    floating = dtype.is_floating_point or dtype.is_complex
    if floating:
        diff = _C.abs(_C.sub(a, e))
        # equal values (infinities of one sign included) match; otherwise within the tolerance
        close = _C.logical_or(_C.eq(a, e), _C.le(diff, atol + rtol * _C.abs(e)))
        if equal_nan:
            close = _C.logical_or(close, _C.logical_and(_C.isnan(a), _C.isnan(e)))
    else:
        diff = _C.abs(_C.sub(a.to(_C.int64), e.to(_C.int64)))
        close = _C.le(diff.to(_C.float64), atol + rtol * _C.abs(e.to(_C.float64)))
    if _C.all(close).item():
        return
    total = a.numel()
    bad = total - int(_C.sum(close.to(_C.int64), [], False).item())
    flat_diff = diff.reshape(-1)
    nan_in_diff = floating and bool(_C.any(_C.isnan(flat_diff)).item())
    if nan_in_diff:
        abs_index = int(_C.nonzero(_C.isnan(flat_diff)).reshape(-1)[0].item())
    else:
        abs_index = int(flat_diff.argmax().item())
    rel = _C.div(diff.to(_C.float64) if not floating else diff, _C.abs(e).to(diff.dtype if floating else _C.float64))
    flat_rel = rel.reshape(-1)
    rel_nan = bool(_C.any(_C.isnan(flat_rel)).item())
    rel_index = int(_C.nonzero(_C.isnan(flat_rel)).reshape(-1)[0].item()) if rel_nan else int(flat_rel.argmax().item())
    abs_value = flat_diff[abs_index].item()
    rel_value = flat_rel[rel_index].item()
    exact = rtol == 0 and atol == 0
    verb = "equal" if exact else "close"
    lines = [f"{kind} are not {verb}!", "",
             f"Mismatched elements: {bad} / {total} ({100 * bad / total:.1f}%)",
             f"Greatest absolute difference: {abs_value} at index {_format_index(abs_index, a.shape)}"
             + ("" if exact else f" (up to {atol} allowed)"),
             f"Greatest relative difference: {rel_value} at index {_format_index(rel_index, a.shape)}"
             + ("" if exact else f" (up to {rtol} allowed)")]
    raise _Mismatch("\n".join(lines))


def _compare(actual, expected, path, options):
    """Compare one pair; a failure inside a sequence or mapping records the item's path."""
    try:
        _compare_pair(actual, expected, path, options)
    except _Mismatch as error:
        if not hasattr(error, "path"):
            error.path = path
        raise


def _compare_pair(actual, expected, path, options):
    if _is_tensor_like(actual) and _is_tensor_like(expected):
        _compare_tensors(_as_tensor(actual), _as_tensor(expected), **options)
    elif _is_number(actual) and _is_number(expected):
        kinds = {type(actual), type(expected)}
        dtype = _C.complex128 if complex in kinds else (_C.float64 if float in kinds else
                                                         (_C.bool if kinds == {bool} else _C.int64))
        number = options | {"kind": "Scalars", "check_dtype": False, "check_stride": False}
        if number["rtol"] is None and options["rtol"] is None:
            number["rtol"], number["atol"] = _TOLERANCES.get(dtype, (0.0, 0.0))
        _compare_tensors(_C.full([], actual, dtype=dtype), _C.full([], expected, dtype=dtype), **number)
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise _Mismatch(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                            f"{sorted(set(expected) - set(actual), key=repr)}\nAdditional keys in the actual "
                            f"mapping: {sorted(set(actual) - set(expected), key=repr)}")
        for key in expected:
            _compare(actual[key], expected[key], path + [repr(key)], options)
    elif (isinstance(actual, Sequence) and isinstance(expected, Sequence) and not isinstance(actual, str)
          and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, path + [str(i)], options)
    elif actual is None and expected is None:
        return
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False, msg=None) -> None:
    """Raise AssertionError unless actual and expected are close: tensors (or NumPy arrays) of the
    same shape and dtype whose elements satisfy |actual - expected| <= atol + rtol * |expected|
    (defaults by dtype), numbers likewise, and sequences / mappings of them elementwise
    (torch.testing.assert_close)."""
    if (rtol is None) != (atol is None):
        _tolerances(None, rtol, atol)
    options = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_dtype": check_dtype,
               "check_stride": check_stride}
    try:
        _compare(actual, expected, [], options)
    except _Mismatch as error:
        message = str(error)
        path = getattr(error, "path", None)
        if path:
            message += "\n\nThe failure occurred for item " + "".join(f"[{p}]" for p in path)
        if callable(msg):
            message = msg(message)
        elif msg is not None:
            message = msg
        raise AssertionError(message) from None


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format=None):
    """A random tensor for tests (torch.testing.make_tensor): integers uniform in [low, high)
    (default [-9, 10)), floating values uniform in [low, high) (default [-9, 9)), bools random;
    noncontiguous gives a strided view with the same values' distribution; exclude_zero replaces
    zeros (by 1 for integers, by the dtype's tiny for floats)."""
    from .. import empty, rand, randint

    sizes = list(shape[0]) if len(shape) == 1 and isinstance(shape[0], (list, tuple)) else list(shape)
    if dtype == _C.bool:
        out = _C.lt(rand(sizes), 0.5)
    elif dtype.is_floating_point or dtype.is_complex:
        lo = -9.0 if low is None else float(low)
        hi = 9.0 if high is None else float(high)
        if lo > hi:
            raise ValueError(f"`low` must be less than or equal to `high`, but got {lo} > {hi}")
        part = (rand(sizes, dtype=_C.float64) * (hi - lo) + lo)
        if dtype.is_complex:
            imag = rand(sizes, dtype=_C.float64) * (hi - lo) + lo
            out = _C.add(part.to(dtype), _C.mul(imag.to(dtype), 1j))
        else:
            out = part.to(dtype)
    else:
        lo = -9 if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        if dtype == _C.uint8 and low is None:
            lo = 0
        if lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        out = randint(lo, hi, sizes, dtype=dtype)
    if exclude_zero:
        from .. import finfo

        replacement = finfo(dtype).tiny if (dtype.is_floating_point or dtype.is_complex) else 1
        if dtype != _C.bool:
            out = _C.where(_C.eq(out, 0), _C.full([], replacement, dtype=dtype), out)
    if noncontiguous and out.numel() > 1:
        wide = empty(sizes[:-1] + [sizes[-1] * 2], dtype=dtype)
        view = wide[..., ::2]
        view.copy_(out)
        out = view
    if memory_format is not None and memory_format is not _memory_format.preserve_format:
        out = _memory_format.contiguous(out, memory_format)
    if requires_grad:
        out.requires_grad_()
    return out


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated torch.testing.assert_allclose: assert_close without the dtype and stride
    checks, non-tensors converted to tensors first."""
    from .. import tensor

    warnings.warn("`ember.testing.assert_allclose()` is deprecated; use `ember.testing.assert_close()` instead.",
                  FutureWarning, stacklevel=2)
    if not isinstance(actual, _C.Tensor):
        actual = tensor(actual)
    if not isinstance(expected, _C.Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _TOLERANCES.get(_C.promote_types(actual.dtype, expected.dtype), (0.0, 0.0))
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)
