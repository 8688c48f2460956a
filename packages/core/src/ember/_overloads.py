"""PyTorch's overloaded entry points over the declared ops, and its named-tuple returns.

torch.max(x) is a value, torch.max(x, dim) is (values, indices), torch.max(x, y) is maximum: one
Python name dispatching on its arguments. Each form calls an op declared once in
native/ops/declarations.py or an ember.linalg composition; nothing here computes on its own.
"""

from __future__ import annotations

from . import _C, return_types


def pow(input, exponent, *, out=None):  # noqa: A001, A002 - PyTorch's names
    """input ** exponent; either may be a Python number (torch.pow(2, x) as well as torch.pow(x, 2)).
    A number base is a wrapped 0-dim tensor, so it ranks lowest in type promotion, as in PyTorch."""
    if isinstance(input, (bool, int, float, complex)) and isinstance(exponent, _C.Tensor):
        input = _C._wrap_number(input)  # noqa: A001
    return _C.pow(input, exponent, out=out)


def sort(input, dim=-1, descending=False, *, stable=False):
    return return_types.sort(*_C.sort(input, dim, descending, stable=stable))


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's argument name
    return return_types.topk(*_C.topk(input, k, dim, largest, sorted))


def kthvalue(input, k, dim=-1, keepdim=False):
    return return_types.kthvalue(*_C.kthvalue(input, k, dim, keepdim))


def median(input, dim=None, keepdim=False):
    """The lower median: of all elements (a value) or along dim ((values, indices))."""
    if dim is None:
        return _C.median(_C.reshape(input, [-1]), 0, False)[0]
    return return_types.median(*_C.median(input, dim, keepdim))


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaNs: of all elements (a value) or along dim ((values, indices))."""
    if dim is None:
        return _C.nanmedian(_C.reshape(input, [-1]), 0, False)[0]
    return return_types.nanmedian(*_C.nanmedian(input, dim, keepdim))


def mode(input, dim=-1, keepdim=False):
    return return_types.mode(*_C.mode(input, dim, keepdim))


def cummax(input, dim):
    return return_types.cummax(*_C.cummax(input, dim))


def cummin(input, dim):
    return return_types.cummin(*_C.cummin(input, dim))


def _extreme(name: str, reduce, arg, elementwise):
    def fn(input, dim=None, keepdim=False):
        if dim is None:
            return reduce(input)
        if isinstance(dim, _C.Tensor):
            return elementwise(input, dim)
        return getattr(return_types, name)(reduce(input, dim, keepdim), arg(input, dim, keepdim))
    fn.__name__ = name
    fn.__doc__ = f"torch.{name}: of all elements, (values, indices) along dim, or elementwise with a tensor."
    return fn


max = _extreme("max", _C.amax, _C.argmax, _C.maximum)  # noqa: A001
min = _extreme("min", _C.amin, _C.argmin, _C.minimum)  # noqa: A001


def aminmax(input, *, dim=None, keepdim=False):
    dims = [] if dim is None else [dim]
    return return_types.aminmax(_C.amin(input, dims, keepdim), _C.amax(input, dims, keepdim))


def var_mean(input, dim=None, *, correction=None, keepdim=False):
    return return_types.var_mean(_C.var(input, dim, correction=correction, keepdim=keepdim),
                                 _C.mean(input, dim, keepdim))


def std_mean(input, dim=None, *, correction=None, keepdim=False):
    return return_types.std_mean(_C.std(input, dim, correction=correction, keepdim=keepdim),
                                 _C.mean(input, dim, keepdim))


def tensor_split(input, indices_or_sections, dim=0):
    """A number of sections (the first size % n get one extra element) or a list of split indices."""
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        size = input.shape[dim] if input.dim() else 0
        cuts, at = [], 0
        for i in range(n - 1):
            at += size // n + (1 if i < size % n else 0)
            cuts.append(at)
        return tuple(_C.tensor_split(input, cuts, dim))
    return tuple(_C.tensor_split(input, list(indices_or_sections), dim))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Sorted unique values; with return_inverse / return_counts, a tuple as torch.unique gives."""
    if dim is not None:
        values, inverse, counts = _C.unique_dim(input, dim, sorted, return_inverse, return_counts)
    else:
        values, inverse, counts = _C.unique(input, sorted, return_inverse, return_counts)
    return _pick(values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        values, inverse, counts = _C.unique_dim_consecutive(input, dim, return_inverse, return_counts)
    else:
        values, inverse, counts = _C.unique_consecutive(input, return_inverse, return_counts)
    return _pick(values, inverse, counts, return_inverse, return_counts)


def _pick(values, inverse, counts, return_inverse, return_counts):
    out = [values] + ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def where(condition, input=None, other=None):
    """where(condition, input, other) elementwise; where(condition) is nonzero(condition, as_tuple=True)."""
    if input is None and other is None:
        if condition.dim() == 0:  # a 0-dim condition acts as a 1-element vector, as in PyTorch
            condition = _C.reshape(condition, [1])
        return tuple(_C.unbind(_C.nonzero(condition), 1))
    return _C.where(condition, input, other)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: 'fro' (or a number) is the vector norm over dim (all elements by default); 'nuc'
    and the other strings are matrix norms over dim (both dims of a 2-D input by default)."""
    from .linalg import matrix_norm, vector_norm

    dims = [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype)
        return matrix_norm(input, p, list(range(input.dim())) if dims is None else dims, keepdim, dtype=dtype)
    return vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype)


def cross(input, other, dim=None, *, out=None):
    """torch.cross: linalg.cross, except that dim=None takes the first dim of size 3."""
    from .linalg import cross as linalg_cross

    if dim is None:
        shape = input.shape if input.dim() != other.dim() else _C.broadcast_tensors([input, other])[0].shape
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("[cross] no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim, out=out)


def matrix_power(input, n, *, out=None):
    from .linalg import matrix_power as linalg_matrix_power

    return linalg_matrix_power(input, n, out=out)


def matrix_exp(input):
    from .linalg import matrix_exp as linalg_matrix_exp

    return linalg_matrix_exp(input)


def tensor_methods() -> dict[str, object]:
    """The overloaded entry points that are Tensor methods too, for ember/_tensor_methods.py to attach."""
    return {name: globals()[name] for name in (
        "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "max", "min", "aminmax",
        "var_mean", "std_mean", "tensor_split", "unique", "unique_consecutive", "norm", "cross", "matrix_power",
        "matrix_exp")}
