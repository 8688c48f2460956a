"""ember.linalg ops built from registered ops (as PyTorch's CompositeImplicitAutograd ones are),
so their derivatives, forward mode and vmap come from the ops they call:

- vector_norm: the registered `norm` reduction (abs, then sum / amax / amin / pow);
- matrix_norm: 'fro' is the vector 2-norm over both dims; 1 / inf (and -1 / -inf) are the
  max (min) over one dim of the vector 1-norms over the other; 2, -2 and 'nuc' are the largest,
  smallest and summed singular values (linalg.svdvals);
- norm: torch.linalg.norm's dispatch between the two;
- cross: the cyclic form c = roll(a, -1) * roll(b, -2) - roll(a, -2) * roll(b, -1) along dim;
- diagonal: the `diagonal` view over the last two dims;
- matrix_power: repeated squaring (binary powers), through inv for negative n;
- matrix_exp: scaling and squaring with a diagonal Padé approximant (Higham 2005, "The scaling
  and squaring method for the matrix exponential revisited", Algorithm 2.3): degree 3, 5, 7 or 9
  when every matrix's 1-norm is below that degree's theta, otherwise degree 13 after scaling
  each matrix by its own 2^-s, then s squarings per matrix;
- cond: the ratio of the extreme singular values (p = None / 2 / -2), otherwise
  matrix_norm(A) * matrix_norm(inv(A)), inf where LU finds A singular;
- matrix_rank: the count of singular values (|eigenvalues| with hermitian=True) above
  max(atol, rtol * the largest);
- pinv: V diag(1/s) U^H from the thin SVD (Q diag(1/l) Q^H from eigh with hermitian=True),
  dropping the values at or below that tolerance;
- lstsq: the minimum-norm least-squares solution V diag(1/s) U^H B from the thin SVD, with
  rcond as the relative cut-off.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections import namedtuple

from .. import _C
from .. import return_types as _return_types
from .._args import dtype_name, wrap_dim, write_out
from .._autocast_policy import autocast_policy

__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "diagonal", "matrix_power", "matrix_exp", "cond", "matrix_rank",
           "pinv", "lstsq"]


def _check_float_or_complex(x, op: str) -> None:
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"[{op}] Expected a floating point or complex tensor as input. Got {dtype_name(x.dtype)}")


def _check_norm_dtype(dtype, input_dtype, op: str) -> None:
    """dtype= must be a float/complex type of the input's kind that the input widens to, as in PyTorch."""
    if dtype is None:
        return
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"[{op}] dtype should be floating point or complex, but got {dtype_name(dtype)}")
    if dtype.is_complex != input_dtype.is_complex:
        kind = "complex" if input_dtype.is_complex else "real"
        raise RuntimeError(f"[{op}] dtype should be {kind} for {kind} inputs, but got {dtype_name(dtype)}")
    if _C.promote_types(input_dtype, dtype) != dtype:
        raise RuntimeError(f"[{op}] the dtype of the input ({dtype_name(input_dtype)}) should be convertible without "
                           f"narrowing to the specified dtype ({dtype_name(dtype)})")


def _dims(dim) -> list[int] | None:
    if dim is None:
        return None
    return [dim] if isinstance(dim, numbers.Integral) else list(dim)


def _is_ord_number(ord) -> bool:
    return isinstance(ord, numbers.Real) and not isinstance(ord, bool)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector ord-norm over `dim` (all elements when None): sum(|x|^ord)^(1/ord); ord=inf / -inf
    is max / min |x| and ord=0 the count of nonzeros. Complex inputs give real results."""
    if not _is_ord_number(ord):
        raise TypeError(f"linalg.vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    _check_float_or_complex(x, "linalg.vector_norm")
    _check_norm_dtype(dtype, x.dtype, "linalg.vector_norm")
    dims = _dims(dim)
    if dims is not None:
        dims = [wrap_dim(d, x.dim()) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"[linalg.vector_norm] dim {dims} appears multiple times in the list of dims")
        if not dims:
            dims = None  # dim=() reduces over every dim, as dim=None
    ord = float(ord)
    if x.numel() == 0 and (ord < 0 or ord == math.inf):
        # min/max (and the negative powers) of no elements have no value to give
        if dims is None:
            raise RuntimeError(f"[linalg.vector_norm] cannot compute the {ord:g} norm on an empty tensor because "
                               f"the operation does not have an identity")
        for d in dims:
            if x.dim() and x.shape[d] == 0:
                raise RuntimeError(f"[linalg.vector_norm] cannot compute the {ord:g} norm on the dimension {d} "
                                   f"because this dimension is empty and the operation does not have an identity")
    if dtype is not None:
        x = _C.to_dtype(x, dtype)
    return write_out(_C.norm(x, ord, dims, keepdim), out)


def _factorization(name: str):
    """An ember.linalg factorization (registered in the package's __init__)."""
    return getattr(sys.modules[__package__], name)


def _matrix_dims(A, dim, op: str) -> list[int]:
    if A.dim() < 2:
        raise RuntimeError(f"[{op}] The input tensor A must have at least 2 dimensions.")
    dims = _dims(dim)
    if len(dims) != 2:
        raise RuntimeError(f"[{op}] dim must be a 2-tuple. Got {tuple(dims)}")
    dims = [wrap_dim(d, A.dim()) for d in dims]
    if dims[0] == dims[1]:
        raise RuntimeError(f"[{op}] dims must be different. Got ({dims[0]}, {dims[1]})")
    return dims


def _singular_value_norm(A, ord, dims, keepdim, dtype):
    """2 / -2 / 'nuc': max / min / sum of the singular values of the matrices spanned by dims."""
    if dtype is not None:
        A = _C.to_dtype(A, dtype)
    rest = [d for d in range(A.dim()) if d not in dims]
    s = _factorization("svdvals")(_C.permute(A, rest + dims))  # (..., k)
    if ord == "nuc":
        result = _C.sum(s, [-1], False)
    else:
        result = (_C.amax if ord > 0 else _C.amin)(s, [-1], False)
    if keepdim:
        for d in sorted(dims):
            result = _C.unsqueeze(result, d)
    return result


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norms over the two dims `dim`: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf."""
    op = "linalg.matrix_norm"
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"[{op}] Order {ord} not supported.")
    elif _is_ord_number(ord):
        if abs(float(ord)) not in (1.0, 2.0, math.inf):
            raise RuntimeError(f"[{op}] Order {ord} not supported.")
        ord = float(ord)
    else:
        raise TypeError(f"linalg.matrix_norm(): argument 'ord' must be str or Number, not {type(ord).__name__}")
    dims = _matrix_dims(A, dim, op)
    _check_float_or_complex(A, op)
    _check_norm_dtype(dtype, A.dtype, op)
    if ord == "fro":
        result = vector_norm(A, 2, dims, keepdim, dtype=dtype)
    elif ord == "nuc" or abs(ord) == 2:
        result = _singular_value_norm(A, ord, dims, keepdim, dtype)
    else:
        # 1-norm: the largest column sum of |A| (sum over rows, then max over columns); inf: rows
        d_sum, d_ext = dims if abs(ord) == 1 else dims[::-1]
        if A.shape[d_ext] == 0:  # the max (min) of no sums has no value to give
            raise RuntimeError(f"[{op}] cannot compute the {ord:g} norm over the empty dimension {d_ext} because "
                               f"the operation does not have an identity")
        sums = vector_norm(A, 1, d_sum, keepdim, dtype=dtype)
        if not keepdim and d_sum < d_ext:
            d_ext -= 1
        result = (_C.amax if ord > 0 else _C.amin)(sums, [d_ext], keepdim)
    return write_out(result, out)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a matrix norm when dim has two entries (or, with ord given and no dim,
    for a 2-D input), otherwise a vector norm (ord=None is the 2-norm of all elements)."""
    dims = _dims(dim)
    if dims is not None:
        if len(dims) not in (1, 2):
            raise RuntimeError(f"[linalg.norm] If dim is specified, it must be of length 1 or 2. Got {dims}")
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"[linalg.norm] If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.dim()}D.")
    if isinstance(ord, str):
        return matrix_norm(A, ord, dims if dims is not None else (0, 1), keepdim, dtype=dtype, out=out)
    if ord is not None and (dims is not None and len(dims) == 2 or dims is None and A.dim() == 2):
        return matrix_norm(A, ord, dims if dims is not None else (0, 1), keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along dim; the other dims broadcast."""
    if input.dim() != other.dim():
        raise RuntimeError("[linalg.cross] inputs must have the same number of dimensions.")
    d = wrap_dim(dim, input.dim())
    if input.dim() == 0 or input.shape[d] != 3 or other.shape[d] != 3:
        got = (input.shape[d], other.shape[d]) if input.dim() else (1, 1)
        raise RuntimeError(f"[linalg.cross] inputs dimension {dim} must have length 3. Got {got[0]} and {got[1]}")
    a, b = input, other  # the products broadcast the other dims
    result = _C.roll(a, [-1], [d]) * _C.roll(b, [-2], [d]) - _C.roll(a, [-2], [d]) * _C.roll(b, [-1], [d])
    return write_out(result, out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal (offset above it when > 0) of the matrices over dim1, dim2, as a view."""
    return _C.diagonal(A, offset, dim1, dim2)


def _square(A, op: str) -> None:
    if A.dim() < 2:
        raise RuntimeError(f"[{op}] The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"[{op}] A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _identity_like(A):
    eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return _C.clone(_C.expand(eye, list(A.shape)))


def matrix_power(A, n, *, out=None):
    """A^n for integer n by repeated squaring; n=0 gives the identity, n<0 powers inv(A)."""
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    _square(A, "linalg.matrix_power")
    if n == 0:
        return write_out(_identity_like(A), out)
    if n < 0:
        A, n = _C.linalg_inv(A), -n
    result = None
    power = A
    while True:
        if n & 1:
            result = power if result is None else _C.matmul(result, power)
        n >>= 1
        if not n:
            break
        power = _C.matmul(power, power)
    if result is A:  # n=1 gives a new tensor, as PyTorch's clone
        result = _C.clone(result)
    return write_out(result, out)


# Higham (2005), Table 2.3: the largest 1-norm for which the [m/m] Padé approximant of exp
# has backward error below the double-precision unit roundoff.
_THETA = {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1,
          9: 2.097847961257068e0, 13: 5.371920351148152e0}
# Coefficients b_0..b_m of the [m/m] Padé numerator p(x) = sum b_j x^j (the denominator is p(-x)).
_PADE = {
    3: [120.0, 60.0, 12.0, 1.0],
    5: [30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
    7: [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0],
    9: [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0,
        90.0, 1.0],
    13: [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0,
         1.0],
}


def _pade(A, m: int):
    """The [m/m] Padé approximant of exp(A): (V - U)^-1 (V + U), U the odd and V the even part."""
    b = _PADE[m]
    eye = _identity_like(A)
    A2 = _C.matmul(A, A)
    if m == 13:  # Higham's evaluation with 6 products: A^6 (b13 A^6 + b11 A^4 + b9 A^2) + ...
        A4 = _C.matmul(A2, A2)
        A6 = _C.matmul(A4, A2)
        u = _C.matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye
        U = _C.matmul(A, u)
        V = _C.matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    else:
        powers = [eye, A2]  # I, A^2, A^4, ... up to A^(m-1)
        while len(powers) < (m + 1) // 2:
            powers.append(_C.matmul(powers[-1], A2))
        u = sum((b[2 * k + 1] * p for k, p in enumerate(powers)), start=_C.zeros_like(A))
        U = _C.matmul(A, u)
        V = sum((b[2 * k] * p for k, p in enumerate(powers)), start=_C.zeros_like(A))
    return _C.linalg_solve(V - U, V + U)


def matrix_exp(A):
    """exp(A) = sum A^k / k! for (batches of) square matrices, by scaling and squaring (see the
    module docstring)."""
    _square(A, "linalg.matrix_exp")
    _check_float_or_complex(A, "linalg.matrix_exp")
    if A.numel() == 0:
        return _C.clone(A)
    with _no_grad():  # the degree and scaling are piecewise constant in A: no gradient flows through them
        norm1 = _C.amax(_C.sum(_C.abs(A), [-2], False), [-1], False)  # each matrix's 1-norm
        largest = _C.amax(norm1, [], False).item()
    if math.isfinite(largest):
        for m in (3, 5, 7, 9):
            if largest <= _THETA[m]:
                return _pade(A, m)
    with _no_grad():
        s = _C.ceil(_C.log2(norm1 / _THETA[13]))
        s = _C.where(_C.isfinite(s), _C.clamp(s, 0, None), _C.zeros_like(s))  # NaN/inf inputs give NaN anyway
        squarings = int(_C.amax(s, [], False).item())
        scale = _C.unsqueeze(_C.unsqueeze(_C.exp2(-s), -1), -1)
    X = _pade(A * scale, 13)
    if squarings:
        s = _C.unsqueeze(_C.unsqueeze(s, -1), -1)
        for k in range(squarings):  # each matrix squares its own s times
            X = _C.where(s > k, _C.matmul(X, X), X)
    return X


def _no_grad():
    from ..autograd.grad_mode import no_grad

    return no_grad()


# ---- on the factorizations (linalg.svd / svdvals / eigh / eigvalsh) ------------------------------

def _real_dtype(dtype):
    return {_C.complex64: _C.float32, _C.complex128: _C.float64}.get(dtype, dtype)


def _tolerance(S, atol, rtol, m: int, n: int, op: str):
    """max(atol, rtol * largest singular value) per matrix, as PyTorch: rtol defaults to
    eps * max(m, n), or to 0 when atol > 0 is given."""
    real = S.dtype

    def as_tensor(x, name):
        if x is None:
            return None
        if isinstance(x, _C.Tensor):
            if x.dtype.is_complex:
                raise RuntimeError(f"[{op}] {name} tensor of complex type is not supported.")
            return _C.to_dtype(x, real)
        return _C.full([], float(x), dtype=real)

    atol_t, rtol_t = as_tensor(atol, "atol"), as_tensor(rtol, "rtol")
    if rtol_t is None:
        from .._info import finfo

        default = _C.full([], finfo(real).eps * max(m, n), dtype=real)
        rtol_t = default if atol_t is None else _C.where(atol_t > 0, _C.zeros_like(default), default)
    if atol_t is None:
        atol_t = _C.zeros([], dtype=real)
    largest = _C.amax(S, [-1], False) if S.shape[-1] else _C.zeros(list(S.shape[:-1]), dtype=real)
    return _C.maximum(atol_t, rtol_t * largest)


def _spectrum(A, hermitian: bool, op: str):
    """The singular values of A (|eigenvalues| for Hermitian A), in any order."""
    if hermitian:
        _square(A, op)
        return _C.abs(_factorization("eigvalsh")(A))
    return _factorization("svdvals")(A)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values above max(atol, rtol * the largest)."""
    op = "linalg.matrix_rank"
    if A.dim() < 2:
        raise RuntimeError(f"[{op}] The input tensor A must have at least 2 dimensions.")
    _check_float_or_complex(A, op)
    m, n = A.shape[-2], A.shape[-1]
    with _no_grad():
        S = _spectrum(A, hermitian, op)
        tol = _tolerance(S, atol, rtol, m, n, op)
        rank = _C.sum(S > _C.unsqueeze(tol, -1), [-1], False, dtype=_C.int64)
    return write_out(rank, out)


@autocast_policy("fp32")
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse V diag(1/s) U^H from the SVD, dropping singular values at
    or below max(atol, rtol * the largest) (from eigh for Hermitian A)."""
    op = "linalg.pinv"
    if A.dim() < 2:
        raise RuntimeError(f"[{op}] The input tensor A must have at least 2 dimensions.")
    _check_float_or_complex(A, op)
    m, n = A.shape[-2], A.shape[-1]
    if A.numel() == 0:
        return write_out(_C.zeros(list(A.shape[:-2]) + [n, m], dtype=A.dtype), out)
    if hermitian:
        _square(A, op)
        L, Q = _factorization("eigh")(A)
        with _no_grad():
            tol = _C.unsqueeze(_tolerance(_C.abs(L), atol, rtol, m, n, op), -1)
        keep = _C.abs(L) > tol
        # 1/L only where kept: a dropped (near-)zero L must not reach the reciprocal's backward
        inv = _C.where(keep, _C.reciprocal(_C.where(keep, L, _C.ones_like(L))), _C.zeros_like(L))
        result = _C.matmul(Q * _C.unsqueeze(inv, -2), _mH(Q))
    else:
        U, S, Vh = _factorization("svd")(A, full_matrices=False)
        with _no_grad():
            tol = _C.unsqueeze(_tolerance(S, atol, rtol, m, n, op), -1)
        keep = S > tol
        inv = _C.where(keep, _C.reciprocal(_C.where(keep, S, _C.ones_like(S))), _C.zeros_like(S))
        result = _C.matmul(_mH(Vh) * _C.unsqueeze(inv, -2), _mH(U))
    return write_out(result, out)


def _mH(A):
    return _C.conj(_C.transpose(A, -2, -1))


def cond(A, p=None, *, out=None):
    """The condition number ||A||_p ||A^-1||_p: for p = None / 2 / -2 the ratio of the largest and
    smallest singular values (any shape); for 'fro', 'nuc', 1, -1, inf, -inf from matrix_norm and
    inv of square matrices, inf where A is singular."""
    op = "linalg.cond"
    if p is None:
        p = 2.0
    if isinstance(p, str):
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"[{op}] got an invalid norm type: {p}")
    elif _is_ord_number(p):
        if abs(float(p)) not in (1.0, 2.0, math.inf):
            raise RuntimeError(f"[{op}] got an invalid norm type: {p}")
        p = float(p)
    else:
        raise TypeError(f"linalg.cond(): argument 'p' must be str or Number, not {type(p).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"[{op}] The input tensor A must have at least 2 dimensions.")
    _check_float_or_complex(A, op)
    if A.numel() == 0:  # NumPy leaves cond of empty matrices undefined; PyTorch gives 0
        return write_out(_C.zeros(list(A.shape[:-2]), dtype=_real_dtype(A.dtype)), out)
    if p in (2.0, -2.0):
        S = _factorization("svdvals")(A)
        s_max, s_min = _C.amax(S, [-1], False), _C.amin(S, [-1], False)
        return write_out(s_max / s_min if p == 2.0 else s_min / s_max, out)
    _square(A, f"{op}(ord={p if isinstance(p, str) else f'{p:g}'})")
    with _no_grad():
        singular = _C.linalg_slogdet(A)[0] == 0  # LU found an exact zero pivot: inv does not exist
    eye = _identity_like(A)
    safe = _C.where(_C.unsqueeze(_C.unsqueeze(singular, -1), -1), eye, A)
    value = matrix_norm(safe, p) * matrix_norm(_C.linalg_inv(safe), p)
    return write_out(_C.where(singular, _C.full([], math.inf, dtype=value.dtype), value), out)


_LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
for _result in (_LstsqResult,):
    _return_types._register(_result)  # ember.return_types.<name>, as torch.return_types
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@autocast_policy("fp32")
def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares (minimum-norm, for rank-deficient A) solution X of A X = B from the SVD,
    dropping singular values at or below rcond * the largest (rcond defaults to eps * max(m, n)).
    Which outputs are filled follows PyTorch's CPU drivers: residuals (squared, per column) for
    m > n with 'gels', and with 'gelsd' / 'gelss' when every matrix has full rank; rank for all
    but 'gels'; singular_values for 'gelsd' and 'gelss'. The default driver is 'gelsy'."""
    op = "linalg.lstsq"
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"[{op}] parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dim() < 2:
        raise RuntimeError(f"[{op}] input must have at least 2 dimensions.")
    _check_float_or_complex(A, op)
    if A.dtype != B.dtype:
        raise RuntimeError(f"[{op}] Expected input and other to have the same dtype, but got input's dtype "
                           f"{dtype_name(A.dtype)} and other's dtype {dtype_name(B.dtype)}.")
    if B.dim() < 1:
        raise RuntimeError(f"[{op}] other must have at least 1 dimension.")
    if not 0 <= A.dim() - B.dim() <= 1:
        raise RuntimeError(f"[{op}] input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1")
    vector = A.dim() - B.dim() == 1  # B is a (batch of) vector(s), as PyTorch decides
    if vector:
        B = _C.unsqueeze(B, -1)
    m, n = A.shape[-2], A.shape[-1]
    if B.shape[-2] != m:
        raise RuntimeError(f"[{op}] input.size(-2) should match other.size({-1 if vector else -2})")
    from .. import broadcast_shapes

    batch = list(broadcast_shapes(A.shape[:-2], B.shape[:-2]))
    A = _C.expand(A, batch + [m, n])
    B = _C.expand(B, batch + [m, B.shape[-1]])
    real = _real_dtype(A.dtype)
    k = B.shape[-1]
    if min(m, n) == 0:
        X = _C.zeros(batch + [n, k], dtype=A.dtype)
        S = _C.zeros(batch + [0], dtype=real)
    else:
        U, S, Vh = _factorization("svd")(A, full_matrices=False)
        with _no_grad():
            from .._info import finfo

            eps = finfo(real).eps
            # LAPACK's convention: a negative rcond means the machine precision
            rcond = eps * max(m, n) if rcond is None else eps if rcond < 0 else float(rcond)
            tol = _C.unsqueeze(_C.amax(S, [-1], False) * rcond, -1)
        keep = S > tol
        inv = _C.where(keep, _C.reciprocal(_C.where(keep, S, _C.ones_like(S))), _C.zeros_like(S))
        X = _C.matmul(_mH(Vh) * _C.unsqueeze(inv, -2), _C.matmul(_mH(U), B))
        with _no_grad():
            rank = _C.sum(keep, [-1], False, dtype=_C.int64)
    empty = _C.zeros([0], dtype=real)
    if min(m, n) == 0:
        rank = _C.zeros(batch, dtype=_C.int64)
    full_rank = m > n and (driver == "gels" or driver in ("gelsd", "gelss") and bool(_C.all(rank == n, [], False)))
    # the squared residual of each column (shape (..., 1) for a vector B, as NumPy's)
    residuals = _C.sum(_C.abs(_C.matmul(A, X) - B) ** 2, [-2], False) if full_rank else empty
    if vector:
        X = _C.squeeze(X, [-1])
    return _LstsqResult(X, residuals, _C.to_dtype(empty, _C.int64) if driver == "gels" else rank,
                        S if driver in ("gelsd", "gelss") else empty)
