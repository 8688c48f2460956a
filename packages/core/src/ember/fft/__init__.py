"""ember.fft (torch.fft): discrete Fourier transforms of any length, on the registered ops
fft_c2c, fft_r2c and fft_c2r (mixed radix 2/3/4/5 and generic odd radices up to 61; Bluestein's
chirp-z for lengths with a larger prime factor; double-precision arithmetic for both complex64
and complex128).

Arguments follow torch.fft: `n` / `s` zero-pad or trim the input along the transformed dims,
`dim` picks them, `norm` is "backward" (default: the inverse divides by n), "ortho" (both by
sqrt(n)) or "forward" (the forward divides by n). Integer and bool inputs are promoted to the
default float dtype; real inputs of the complex transforms to complex. float16 and bfloat16
inputs are rejected (RuntimeError), as PyTorch does on the CPU, rather than computed at half
precision.
"""

from __future__ import annotations

import operator

from .. import _C
from .._args import dtype_name, wrap_dim, write_out
from .._autocast_policy import autocast_policy

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

# PyTorch's fft_norm_mode
_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _norm_mode(norm, forward: bool) -> int:
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


# dtypes a CPU transform rejects, by PyTorch's (c10) names
_UNSUPPORTED = {_C.float16: "Half", _C.bfloat16: "BFloat16", _C.float8_e4m3fn: "Float8_e4m3fn",
                _C.float8_e5m2: "Float8_e5m2", _C.float8_e4m3fnuz: "Float8_e4m3fnuz",
                _C.float8_e5m2fnuz: "Float8_e5m2fnuz", _C.complex32: "Half"}


def _float_input(x, fname: str):
    """x as a tensor whose dtype a transform accepts: ints/bool to the default float dtype."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{fname}(): argument 'input' must be Tensor, not {type(x).__name__}")
    d = x.dtype
    if d in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        return x
    if d in _UNSUPPORTED:
        # PyTorch's CPU build has no half-precision (or float8) transforms and says so in these words
        raise RuntimeError(f"Unsupported dtype {_UNSUPPORTED[d]}")
    return _C.to_dtype(x, _C.get_default_dtype())  # bool and integers


def _complex_input(x, fname: str):
    x = _float_input(x, fname)
    if x.dtype == _C.float32:
        return _C.to_dtype(x, _C.complex64)
    if x.dtype == _C.float64:
        return _C.to_dtype(x, _C.complex128)
    return x


def _real_input(x, fname: str):
    x = _float_input(x, fname)
    if x.is_complex():
        raise RuntimeError(f"{fname} expects a real input tensor, but got {dtype_name(x.dtype)}")
    return x


def _check_n(n) -> None:
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resize(x, dim: int, size: int):
    """x zero-padded or trimmed to `size` along `dim` (at the end, as torch.fft does)."""
    have = x.shape[dim]
    if size == have:
        return x
    if size < have:
        return _C.narrow(x, dim, 0, size)
    shape = list(x.shape)
    shape[dim] = size - have
    return _C.cat([x, _C.zeros(shape, dtype=x.dtype, device=x.device)], dim)


def _one_dim(x, n, dim):
    if x.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, x.dim())
    size = x.shape[d] if n is None else operator.index(n)
    _check_n(size)  # also an empty input dim with no n, as PyTorch
    return d, size


# ---- 1-D transforms ---------------------------------------------------------------------------

@autocast_policy("fp32")
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform along `dim`."""
    x = _complex_input(input, "fft")
    d, size = _one_dim(x, n, dim)
    return write_out(_C.fft_c2c(_resize(x, d, size), [d], _norm_mode(norm, True), True), out)


@autocast_policy("fp32")
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D inverse discrete Fourier transform along `dim`."""
    x = _complex_input(input, "ifft")
    d, size = _one_dim(x, n, dim)
    return write_out(_C.fft_c2c(_resize(x, d, size), [d], _norm_mode(norm, False), False), out)


@autocast_policy("fp32")
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-sided transform of a real signal: bins 0 .. n//2 of fft."""
    x = _real_input(input, "rfft")
    d, size = _one_dim(x, n, dim)
    return write_out(_C.fft_r2c(_resize(x, d, size), [d], _norm_mode(norm, True), True), out)


@autocast_policy("fp32")
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of n points (default 2 * (input.size(dim) - 1))."""
    x = _complex_input(input, "irfft")
    d, _ = _one_dim(x, n, dim)
    size = 2 * (x.shape[d] - 1) if n is None else operator.index(n)
    _check_n(size)
    return write_out(_C.fft_c2r(_resize(x, d, size // 2 + 1), [d], _norm_mode(norm, False), size), out)


@autocast_policy("fp32")
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a Hermitian-symmetric signal given by its first half: a real spectrum of n points."""
    x = _complex_input(input, "hfft")
    d, _ = _one_dim(x, n, dim)
    size = 2 * (x.shape[d] - 1) if n is None else operator.index(n)
    _check_n(size)
    x = _C.conj_physical(_resize(x, d, size // 2 + 1))
    return write_out(_C.fft_c2r(x, [d], _norm_mode(norm, True), size), out)


@autocast_policy("fp32")
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the one-sided inverse transform of a real signal."""
    x = _real_input(input, "ihfft")
    d, size = _one_dim(x, n, dim)
    return write_out(_C.conj_physical(_C.fft_r2c(_resize(x, d, size), [d], _norm_mode(norm, False), True)), out)


# ---- n-D transforms ---------------------------------------------------------------------------

def _canonical(x, s, dim, fname: str):
    """(dims, sizes): the transformed dims (wrapped, in order) and their signal sizes (-1 and
    None mean the input's size), as torch.fft's canonicalize_fft_shape_and_dim_args."""
    ndim = x.dim()
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [wrap_dim(d, ndim) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [s] if isinstance(s, int) else [operator.index(v) for v in s]
        if dim is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dim is None:
            dims = list(range(ndim - len(s), ndim))
        sizes = [x.shape[d] if v == -1 else v for d, v in zip(dims, s, strict=True)]
        for v in sizes:
            _check_n(v)
    else:
        if dim is None:
            dims = list(range(ndim))
        sizes = [x.shape[d] for d in dims]
    return dims, sizes


def _resize_all(x, dims, sizes):
    for d, v in zip(dims, sizes, strict=True):
        x = _resize(x, d, v)
    return x


@autocast_policy("fp32")
def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D discrete Fourier transform over `dim` (all dims by default)."""
    x = _complex_input(input, "fftn")
    dims, sizes = _canonical(x, s, dim, "fftn")
    return write_out(_C.fft_c2c(_resize_all(x, dims, sizes), dims, _norm_mode(norm, True), True), out)


@autocast_policy("fp32")
def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D inverse discrete Fourier transform over `dim` (all dims by default)."""
    x = _complex_input(input, "ifftn")
    dims, sizes = _canonical(x, s, dim, "ifftn")
    return write_out(_C.fft_c2c(_resize_all(x, dims, sizes), dims, _norm_mode(norm, False), False), out)


@autocast_policy("fp32")
def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D transform of a real signal, one-sided along the last of `dim`."""
    x = _real_input(input, "rfftn")
    dims, sizes = _canonical(x, s, dim, "rfftn")
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    _check_n(sizes[-1])
    return write_out(_C.fft_r2c(_resize_all(x, dims, sizes), dims, _norm_mode(norm, True), True), out)


def _c2r_shape(x, s, dim, fname: str):
    """dims, the input sizes to resize to and the output size of the last dim, for irfftn/hfftn."""
    dims, sizes = _canonical(x, s, dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    last = sizes[-1] if s is not None and (isinstance(s, int) or list(s)[-1] != -1) else 2 * (x.shape[dims[-1]] - 1)
    _check_n(last)
    return dims, sizes[:-1] + [last // 2 + 1], last


@autocast_policy("fp32")
def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn: a real signal (last dim 2 * (input.size(dim[-1]) - 1) by default)."""
    x = _complex_input(input, "irfftn")
    dims, sizes, last = _c2r_shape(x, s, dim, "irfftn")
    return write_out(_C.fft_c2r(_resize_all(x, dims, sizes), dims, _norm_mode(norm, False), last), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D transform of a Hermitian-symmetric signal given by its half along the last of `dim`."""
    x = _complex_input(input, "hfftn")
    dims, sizes, last = _c2r_shape(x, s, dim, "hfftn")
    x = _C.conj_physical(_resize_all(x, dims, sizes))
    return write_out(_C.fft_c2r(x, dims, _norm_mode(norm, True), last), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: the one-sided n-D inverse transform of a real signal."""
    x = _real_input(input, "ihfftn")
    dims, sizes = _canonical(x, s, dim, "ihfftn")
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    _check_n(sizes[-1])
    y = _C.fft_r2c(_resize_all(x, dims, sizes), dims, _norm_mode(norm, False), True)
    return write_out(_C.conj_physical(y), out)


@autocast_policy("fp32")
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return fftn(input, s, dim, norm, out=out)


@autocast_policy("fp32")
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ifftn(input, s, dim, norm, out=out)


@autocast_policy("fp32")
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


@autocast_policy("fp32")
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


# ---- helpers ----------------------------------------------------------------------------------

def _freq_args(n, d):
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return n, float(d)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of fft's bins: [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n)."""
    n, d = _freq_args(n, d)
    k = _C.arange(0, n, dtype=dtype or _C.get_default_dtype(), device=device)
    k = _C.where(k >= (n + 1) // 2, k - n, k) if n else k  # the upper half wraps to negative frequencies
    result = k / (d * n) if n else k
    return result.requires_grad_(requires_grad) if requires_grad else result


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of rfft's bins: [0, 1, ..., n//2] / (d * n)."""
    n, d = _freq_args(n, d)
    k = _C.arange(0, n // 2 + 1, dtype=dtype or _C.get_default_dtype(), device=device)
    result = k / (d * n) if n else k
    return result.requires_grad_(requires_grad) if requires_grad else result


def _shift_dims(x, dim):
    if dim is None:
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [wrap_dim(d, x.dim()) for d in dims]


def fftshift(input, dim=None):
    """Moves the zero-frequency bin to the centre (roll by n // 2 along each of `dim`)."""
    dims = _shift_dims(input, dim)
    if not dims:
        return _C.clone(input)
    return _C.roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """The inverse of fftshift (roll by -(n // 2), which differs from fftshift for odd n)."""
    dims = _shift_dims(input, dim)
    if not dims:
        return _C.clone(input)
    return _C.roll(input, [(input.shape[d] + 1) // 2 for d in dims], dims)

