"""Further PyTorch names composed in Python from declared ops (issue 18, item 1): the *_copy
forms of the view ops (a view, then a row-major copy), the *_scatter ops (a copy of input with
src written into one of its views) and slice_inverse, the in-place shape changes squeeze_ ... transpose_, and small
functions: column_stack, vander, trapezoid / trapz / cumulative_trapezoid, unravel_index, rsub,
scalar_tensor, fill, split_with_sizes and the unsafe_* splits, nonzero_static, empty_permuted,
range, lu_unpack, frobenius_norm / nuclear_norm / native_norm / norm_except_dim, native_dropout,
can_cast, is_neg / resolve_neg, and the Tensor methods new, apply_, map_, map2_, dim_order.
"""

from __future__ import annotations

import builtins
import math
import warnings

from . import _C
from ._composites_py import _return_type, _tensor_arg, _wrap_dim
from ._inplace import _can_cast, _graph_source, _write_inplace
from ._surface import _int_list, _legacy_name, empty_strided
from .autograd.function import Function

# ---- *_copy: a view op's result as a new tensor ---------------------------------------------------

# name of the copy form -> the view method it copies.
VIEW_COPIES = {
    "alias_copy": "view_as", "detach_copy": "detach", "diagonal_copy": "diagonal", "expand_copy": "expand",
    "permute_copy": "permute", "select_copy": "select", "squeeze_copy": "squeeze", "t_copy": "t",
    "transpose_copy": "transpose", "unfold_copy": "unfold", "unsqueeze_copy": "unsqueeze", "view_copy": "view",
    "view_as_real_copy": "view_as_real", "view_as_complex_copy": "view_as_complex", "as_strided_copy": "as_strided",
}


def _copy_of(name: str, view: str):
    def copy(input: _C.Tensor, *args: object, **kwargs: object) -> _C.Tensor:  # noqa: A002
        _tensor_arg(input, name)
        if view == "view_as":  # alias_copy(input): a copy of input itself
            result = input
        elif view in ("view_as_real", "view_as_complex", "as_strided"):
            from . import as_strided, view_as_complex, view_as_real

            result = {"view_as_real": view_as_real, "view_as_complex": view_as_complex,
                      "as_strided": as_strided}[view](input, *args, **kwargs)
        else:
            result = getattr(input, view)(*args, **kwargs)
        return _C.Tensor.clone(result).contiguous()
    copy.__name__ = copy.__qualname__ = name
    copy.__doc__ = f"input.{view}(...) as a new row-major tensor that shares no memory with input (torch.{name})."
    return copy


def slice_copy(input: _C.Tensor, dim: builtins.int = 0, start: builtins.int | None = None,  # noqa: A002
               end: builtins.int | None = None, step: builtins.int = 1) -> _C.Tensor:
    return _slice(input, dim, start, end, step).clone().contiguous()


def split_copy(input: _C.Tensor, split_size: object, dim: builtins.int = 0) -> tuple[_C.Tensor, ...]:  # noqa: A002
    return tuple(part.clone() for part in _tensor_arg(input, "split_copy").split(split_size, dim))


def split_with_sizes_copy(input: _C.Tensor, split_sizes: object, dim: builtins.int = 0) -> tuple[_C.Tensor, ...]:  # noqa: A002
    return tuple(part.clone() for part in split_with_sizes(input, split_sizes, dim))


def unbind_copy(input: _C.Tensor, dim: builtins.int = 0) -> tuple[_C.Tensor, ...]:  # noqa: A002
    return tuple(part.clone() for part in _tensor_arg(input, "unbind_copy").unbind(dim))


def _slice(input: _C.Tensor, dim: builtins.int, start: object, end: object, step: builtins.int) -> _C.Tensor:  # noqa: A002
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    dim = _wrap_dim(dim, _tensor_arg(input, "slice").dim())
    index = [builtins.slice(None)] * input.dim()
    index[dim] = builtins.slice(start, end, step)
    return input[tuple(index)]


# ---- *_scatter: input with src written into one of its views --------------------------------------


def _scatter_into(input: _C.Tensor, src: _C.Tensor, view_of) -> _C.Tensor:  # noqa: A002
    out = _tensor_arg(input, "scatter").clone()
    target = view_of(out)
    if tuple(target.shape) != tuple(_tensor_arg(src, "scatter", "src", 2).shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(target.shape)}")
    target.copy_(src)
    return out


def select_scatter(input: _C.Tensor, src: _C.Tensor, dim: builtins.int, index: builtins.int) -> _C.Tensor:  # noqa: A002
    """A copy of input with src in its slice input.select(dim, index) (torch.select_scatter)."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input: _C.Tensor, src: _C.Tensor, dim: builtins.int = 0, start: builtins.int | None = None,  # noqa: A002
                  end: builtins.int | None = None, step: builtins.int = 1) -> _C.Tensor:
    return _scatter_into(input, src, lambda t: _slice(t, dim, start, end, step))


def diagonal_scatter(input: _C.Tensor, src: _C.Tensor, offset: builtins.int = 0, dim1: builtins.int = 0,  # noqa: A002
                     dim2: builtins.int = 1) -> _C.Tensor:
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def as_strided_scatter(input: _C.Tensor, src: _C.Tensor, size: object, stride: object,  # noqa: A002
                       storage_offset: builtins.int | None = None) -> _C.Tensor:
    from . import as_strided

    return _scatter_into(input, src, lambda t: as_strided(t, size, stride, storage_offset))


class _SliceInverse(Function):
    """slice_inverse's gradients, PyTorch's: input (the slice) gets the gradient's slice, src the
    rest of it."""

    @staticmethod
    def forward(ctx, input, src, dim, start, end, step):  # noqa: A002
        ctx.where = (dim, start, end, step)
        return input.as_strided(src.shape, src.stride(), src.storage_offset())

    @staticmethod
    def backward(ctx, grad):
        dim, start, end, step = ctx.where
        return (_slice(grad, dim, start, end, step),
                slice_scatter(grad, _C.zeros_like(_slice(grad, dim, start, end, step)), dim, start, end, step),
                None, None, None, None)


def slice_inverse(input: _C.Tensor, src: _C.Tensor, dim: builtins.int = 0, start: builtins.int | None = None,  # noqa: A002
                  end: builtins.int | None = None, step: builtins.int = 1) -> _C.Tensor:
    """The inverse of a slice for functionalization: `input` (src's slice dim/start/end/step, or a
    slice of memory laid out as src) viewed back with src's sizes, strides and offset, over input's
    memory. as_strided checks that the view stays inside input's storage."""
    if not isinstance(src, _C.Tensor):
        raise TypeError(f"slice_inverse(): argument 'src' must be Tensor, not {type(src).__name__}")
    if not (input.requires_grad or src.requires_grad) or not _C._is_grad_enabled():
        return input.as_strided(src.shape, src.stride(), src.storage_offset())
    return _SliceInverse.apply(input, src, dim, start, end, step)


# ---- in-place shape changes -----------------------------------------------------------------------


def _reshape_in_place(self: _C.Tensor, view: _C.Tensor, who: str) -> _C.Tensor:
    """Give self the shape and strides of `view` (a view of self's memory), as PyTorch's in-place
    view ops do. Not recorded by autograd: refused where autograd would need to."""
    if self.requires_grad:
        if self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        raise NotImplementedError(f"{who}: changing the shape in place of a tensor that autograd records is not "
                                  f"supported in Ember; use the out-of-place {who[:-1]}")
    self.data = view
    return self


def squeeze_(self: _C.Tensor, dim: object = None) -> _C.Tensor:
    return _reshape_in_place(self, self.squeeze() if dim is None else self.squeeze(dim), "squeeze_")


def unsqueeze_(self: _C.Tensor, dim: builtins.int) -> _C.Tensor:
    return _reshape_in_place(self, self.unsqueeze(dim), "unsqueeze_")


def t_(self: _C.Tensor) -> _C.Tensor:
    return _reshape_in_place(self, self.t(), "t_")


def transpose_(self: _C.Tensor, dim0: builtins.int, dim1: builtins.int) -> _C.Tensor:
    return _reshape_in_place(self, self.transpose(dim0, dim1), "transpose_")


def as_strided_(self: _C.Tensor, size: object, stride: object, storage_offset: builtins.int | None = None) -> _C.Tensor:
    from . import as_strided

    return _reshape_in_place(self, as_strided(self, size, stride, storage_offset), "as_strided_")


# ---- small functions ------------------------------------------------------------------------------


def column_stack(tensors: object, *, out: _C.Tensor | None = None) -> _C.Tensor:
    """The tensors side by side as columns: 0-d and 1-d ones become (n, 1) columns first
    (torch.column_stack)."""
    from . import hstack

    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    columns = [t.reshape([t.numel(), 1]) if t.dim() <= 1 else t for t in tensors]
    from ._args import write_out

    return write_out(hstack(columns), out)


def vander(x: _C.Tensor, N: builtins.int | None = None, increasing: builtins.bool = False) -> _C.Tensor:  # noqa: N803
    """The Vandermonde matrix of x: columns x^(N-1), ..., x^0 (x^0 first with increasing=True);
    integral and bool x give int64 (torch.vander)."""
    if _tensor_arg(x, "vander", "x").dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = _C.promote_types(x.dtype, _C.int64) if x.dtype != _C.bool else _C.int64
    base = x.to(dtype) if x.dtype != dtype else x
    columns = [_C.ones_like(base)] if n else []
    for _ in builtins.range(1, n):  # x^k by repeated products, as PyTorch's cumprod: exact for integers
        columns.append(_C.mul(columns[-1], base))
    if not columns:
        return _C.zeros([x.shape[0], 0], dtype=dtype)
    result = _C.stack(columns, 1)
    return result if increasing else result.flip([1])


def _trapezoid_args(y: _C.Tensor, x: object, dx: object, dim: builtins.int, who: str):
    _tensor_arg(y, who, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{who}() received both x and dx; give one of them")
    dim = _wrap_dim(dim, y.dim())
    if y.dtype in (_C.bool,) or not (y.dtype.is_floating_point or y.dtype.is_complex):
        y = y.to(_C.get_default_dtype())
    return y, dim


def _spacing(x: _C.Tensor, y: _C.Tensor, dim: builtins.int, who: str) -> _C.Tensor:
    """The widths between x's sample points, shaped to broadcast against y's intervals along dim."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{who}: There must be one `x` value for each sample point")
        widths = _C.sub(x[1:], x[:-1])
        shape = [1] * y.dim()
        shape[dim] = widths.shape[0]
        return widths.reshape(shape)
    widths = _C.diff(x, 1, dim if x.dim() == y.dim() else -1)
    return widths


def trapezoid(y: _C.Tensor, x: _C.Tensor | None = None, *, dx: object = None, dim: builtins.int = -1) -> _C.Tensor:
    """The trapezoidal rule along dim: sample points x (a tensor) or a constant spacing dx
    (default 1) (torch.trapezoid)."""
    y, dim = _trapezoid_args(y, x, dx, dim, "trapezoid")
    n = y.shape[dim]
    if n == 0:
        return _C.sum(y, [dim], False)  # zeros of the reduced shape
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    mid = _C.add(left, right)
    if x is None:
        return _C.mul(_C.sum(mid, [dim], False), (1 if dx is None else dx) / 2)
    return _C.div(_C.sum(_C.mul(mid, _spacing(x, y, dim, "trapezoid")), [dim], False), 2)


def trapz(y: _C.Tensor, x: _C.Tensor | None = None, *, dx: object = None, dim: builtins.int = -1) -> _C.Tensor:
    """torch.trapz, the older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: _C.Tensor, x: _C.Tensor | None = None, *, dx: object = None,
                         dim: builtins.int = -1) -> _C.Tensor:
    """The running trapezoidal integral along dim: one fewer element than y there."""
    y, dim = _trapezoid_args(y, x, dx, dim, "cumulative_trapezoid")
    n = y.shape[dim]
    if n == 0:
        return y
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    mid = _C.add(left, right)
    if x is None:
        return _C.mul(_C.cumsum(mid, dim), (1 if dx is None else dx) / 2)
    return _C.div(_C.cumsum(_C.mul(mid, _spacing(x, y, dim, "cumulative_trapezoid")), dim), 2)


def unravel_index(indices: object, shape: object) -> tuple[_C.Tensor, ...]:
    """The coordinates in a tensor of `shape` of the flat (row-major) indices (torch.unravel_index);
    negative indices count from the end."""
    from ._tensor import as_tensor

    indices = as_tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    dims = (shape,) if isinstance(shape, builtins.int) else tuple(builtins.int(s) for s in shape)
    if builtins.any(s < 0 for s in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    total = 1
    for s in dims:
        total *= s
    if indices.numel():
        low, high = _C.amin(indices).item(), _C.amax(indices).item()
        if low < -total or high >= total:
            raise RuntimeError("'indices' must be in range [-" + str(total) + ", " + str(total) + ")")
    flat = indices.to(_C.int64)
    flat = _C.where(_C.lt(flat, 0), _C.add(flat, total), flat)
    coords = []
    for size in reversed(dims):
        coords.append(_C.remainder(flat, size) if size else flat)
        flat = _C.div(flat, size, rounding_mode="floor") if size else flat
    return tuple(reversed(coords))


def rsub(input: _C.Tensor, other: object, alpha: object = 1) -> _C.Tensor:  # noqa: A002
    """other - alpha * input (torch.rsub)."""
    scaled = _C.mul(_tensor_arg(input, "rsub"), alpha) if alpha != 1 else input
    return _C.neg(scaled) + other if not isinstance(other, _C.Tensor) else _C.sub(other, scaled)


def scalar_tensor(s: object, *, dtype: _C.dtype | None = None, device: object = None,
                  requires_grad: builtins.bool = False) -> _C.Tensor:
    """A 0-dim tensor holding s, in the default float dtype unless dtype is given (torch.scalar_tensor)."""
    out = _C.full([], s, dtype=dtype or _C.get_default_dtype(), device=device)
    return out.requires_grad_() if requires_grad else out


def fill(input: _C.Tensor, value: object) -> _C.Tensor:  # noqa: A002
    """A new tensor of input's shape and dtype, every element value (torch.fill)."""
    return _tensor_arg(input, "fill").clone().fill_(value)


def split_with_sizes(input: _C.Tensor, split_sizes: object, dim: builtins.int = 0) -> tuple[_C.Tensor, ...]:  # noqa: A002
    sizes = _int_list(split_sizes)
    dim = _wrap_dim(dim, _tensor_arg(input, "split_with_sizes").dim())
    if builtins.sum(sizes) != input.shape[dim] or builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[dim]} (input "
                           f"tensor's size at dimension {dim}), but got split_sizes={sizes}")
    return tuple(input.split(sizes, dim))


def unsafe_split(input: _C.Tensor, split_size: object, dim: builtins.int = 0) -> tuple[_C.Tensor, ...]:  # noqa: A002
    """split; PyTorch's unsafe_ forms skip view tracking, Ember's views need none."""
    return tuple(_tensor_arg(input, "unsafe_split").split(split_size, dim))


def unsafe_chunk(input: _C.Tensor, chunks: builtins.int, dim: builtins.int = 0) -> tuple[_C.Tensor, ...]:  # noqa: A002
    return tuple(_tensor_arg(input, "unsafe_chunk").chunk(chunks, dim))


def unsafe_split_with_sizes(input: _C.Tensor, split_sizes: object, dim: builtins.int = 0) -> tuple[_C.Tensor, ...]:  # noqa: A002
    return split_with_sizes(input, split_sizes, dim)


def nonzero_static(input: _C.Tensor, *, size: builtins.int, fill_value: builtins.int = -1) -> _C.Tensor:  # noqa: A002
    """nonzero's (n, ndim) indices cut or padded with fill_value to exactly `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    found = _C.nonzero(_tensor_arg(input, "nonzero_static"))
    if found.shape[0] >= size:
        return found[:size].clone()
    pad = _C.full([size - found.shape[0], found.shape[1]], fill_value, dtype=_C.int64)
    return _C.cat([found, pad], 0)


def empty_permuted(size: object, physical_layout: object, *, dtype: _C.dtype | None = None, device: object = None,
                   requires_grad: builtins.bool = False) -> _C.Tensor:
    """An uninitialized tensor of `size` whose dims are laid out in memory in the order
    physical_layout (outermost first), as torch.empty_permuted."""
    size, order = _int_list(size), _int_list(physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"or physical_layout is not a permutation: size={size}, physical_layout={order}")
    stride = [0] * len(size)
    step = 1
    for d in reversed(order):
        stride[d] = step
        step *= builtins.max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def range(start: object, end: object, step: object = 1, *, dtype: _C.dtype | None = None,  # noqa: A001
          device: object = None, requires_grad: builtins.bool = False) -> _C.Tensor:
    """start, start + step, ..., up to end inclusive, in the default float dtype (torch.range,
    deprecated there in favour of arange, which excludes end)."""
    warnings.warn("ember.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use ember.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end + 0.0) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = builtins.int((end - start) // step) + 1
    steps = _C.arange(0, count, 1, dtype=_C.float64)
    out = _C.add(_C.mul(steps, step), start).to(dtype or _C.get_default_dtype())
    return out.requires_grad_() if requires_grad else out


def lu_unpack(LU_data: _C.Tensor, LU_pivots: _C.Tensor, unpack_data: builtins.bool = True,  # noqa: N803
              unpack_pivots: builtins.bool = True) -> tuple[_C.Tensor, _C.Tensor, _C.Tensor]:
    """(P, L, U) with A = P L U from linalg.lu_factor's LU and 1-based pivots (torch.lu_unpack).
    Parts not asked for are empty tensors, as PyTorch's."""
    from . import empty, eye, stack

    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = builtins.min(m, n)
    batch = list(LU_data.shape[:-2])
    if unpack_data:
        L = _C.add(_C.tril(LU_data[..., :, :k], -1), eye(m, k, dtype=LU_data.dtype))
        U = _C.triu(LU_data[..., :k, :])
    else:
        L = empty([0], dtype=LU_data.dtype)
        U = empty([0], dtype=LU_data.dtype)
    if not unpack_pivots:
        return _return_type("lu_unpack", ("P", "L", "U"))(empty([0], dtype=LU_data.dtype), L, U)
    if LU_pivots.dtype != _C.int32:
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. "
                           f"Note: this function is intended to be used with the output produced by "
                           f"torch.linalg.lu_factor, but got {_legacy_name(LU_pivots.dtype)}")
    pivots = LU_pivots.reshape([-1, LU_pivots.shape[-1]]).tolist() if LU_pivots.dim() else [[]]
    matrices = []
    identity = eye(m, dtype=LU_data.dtype)
    for row in pivots:  # the row swaps applied in order give the permutation
        perm = list(builtins.range(m))
        for i, p in enumerate(row):
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        # A = P L U with P[perm[i], i] = 1.
        matrices.append(identity[:, _inverse_perm(perm)].t())
    P = stack(matrices).reshape(batch + [m, m]) if matrices else empty(batch + [m, m], dtype=LU_data.dtype)
    return _return_type("lu_unpack", ("P", "L", "U"))(P.contiguous(), L, U)


def _inverse_perm(perm: list[builtins.int]) -> list[builtins.int]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def frobenius_norm(input: _C.Tensor, dim: object = (-2, -1), keepdim: builtins.bool = False) -> _C.Tensor:  # noqa: A002
    from .linalg import vector_norm

    return vector_norm(input, 2, dim=_int_list(dim), keepdim=keepdim)


def nuclear_norm(input: _C.Tensor, dim: object = None, keepdim: builtins.bool = False) -> _C.Tensor:  # noqa: A002
    """The sum of singular values over the two dims (the last two by default)."""
    from .linalg import matrix_norm

    if isinstance(dim, builtins.bool):  # nuclear_norm(input, keepdim) form
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else tuple(_int_list(dim)), keepdim=keepdim)


def native_norm(input: _C.Tensor, p: object = 2, dim: object = None, keepdim: builtins.bool = False,  # noqa: A002
                dtype: _C.dtype | None = None) -> _C.Tensor:
    from .linalg import vector_norm

    return vector_norm(input, p, dim=None if dim is None else _int_list(dim), keepdim=keepdim, dtype=dtype)


def norm_except_dim(v: _C.Tensor, pow: object = 2, dim: builtins.int = 0) -> _C.Tensor:  # noqa: A002
    """The pow-norm of v over every dim but dim, kept as size-1 dims (weight normalization's
    norm); dim=-1 gives the norm of all of v, as PyTorch's."""
    from .linalg import vector_norm

    if dim == -1:
        return vector_norm(v, pow)
    dim = _wrap_dim(dim, v.dim())
    others = [d for d in builtins.range(v.dim()) if d != dim]
    return vector_norm(v, pow, dim=others, keepdim=True) if others else _C.abs(v)


def native_dropout(input: _C.Tensor, p: float, train: builtins.bool | None) -> tuple[_C.Tensor, _C.Tensor]:  # noqa: A002
    """(output, keep mask) of dropout (torch.native_dropout); in eval the mask is all True."""
    from . import ones_like
    from .nn import functional as F

    if not train:
        return input.clone(), ones_like(input, dtype=_C.bool)
    scaled_mask = F.dropout(ones_like(input), p, True)
    return _C.mul(input, scaled_mask), _C.ne(scaled_mask, 0)


def can_cast(from_: _C.dtype, to: _C.dtype) -> builtins.bool:
    """Whether PyTorch's type promotion lets from_ be cast to `to` (torch.can_cast)."""
    return _can_cast(from_, to)


def is_neg(input: _C.Tensor) -> builtins.bool:  # noqa: A002
    """False: Ember has no lazy negation bit, every tensor's values are materialized."""
    _tensor_arg(input, "is_neg")
    return False


def resolve_neg(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """input itself: with no lazy negation bit there is nothing to resolve."""
    return _tensor_arg(input, "resolve_neg")


def get_device(input: _C.Tensor) -> builtins.int:  # noqa: A002
    from ._surface import get_device as method

    return method(_tensor_arg(input, "get_device"))


def is_same_size(input: _C.Tensor, other: _C.Tensor) -> builtins.bool:  # noqa: A002
    from ._surface import is_same_size as method

    return method(_tensor_arg(input, "is_same_size"), other)


def is_signed(input: _C.Tensor) -> builtins.bool:  # noqa: A002
    return _tensor_arg(input, "is_signed").dtype.is_signed


def asarray(obj: object, *, dtype: _C.dtype | None = None, device: object = None, copy: builtins.bool | None = None,
            requires_grad: builtins.bool = False) -> _C.Tensor:
    """obj as a tensor, sharing its memory where it can (a tensor of the same dtype, a NumPy
    array), copying when it must or copy=True; copy=False refuses to copy (torch.asarray)."""
    from . import tensor

    if isinstance(obj, _C.Tensor):
        same = dtype is None or dtype == obj.dtype
        if copy is False and not same:
            raise ValueError(f"can't alias tensor with dtype '{_legacy_name(obj.dtype)}' into dtype "
                             f"'{_legacy_name(dtype)}'.")
        out = obj if same else obj.to(dtype)
        out = out.clone() if copy and out is obj else out
    elif type(obj).__module__ == "numpy" and type(obj).__name__ == "ndarray":
        from . import from_numpy

        shared = from_numpy(obj)
        if dtype is not None and dtype != shared.dtype:
            if copy is False:
                raise ValueError(f"can't alias NumPy array with dtype '{obj.dtype}' into dtype '{dtype}'.")
            out = shared.to(dtype)
        else:
            out = shared.clone() if copy else shared
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        out = tensor(obj, dtype=dtype)
    return out.requires_grad_() if requires_grad else out


def is_inference(input: _C.Tensor) -> builtins.bool:  # noqa: A002
    return _tensor_arg(input, "is_inference").is_inference()


def is_anomaly_enabled() -> builtins.bool:
    from . import autograd

    return autograd.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> builtins.bool:
    from . import autograd

    return autograd.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled: builtins.bool, check_nan: builtins.bool = True) -> None:
    """Switch autograd's anomaly detection on or off (torch.set_anomaly_enabled)."""
    from . import autograd

    autograd.set_detect_anomaly(enabled, check_nan)


def get_default_device() -> _C.device:
    """The device factories use when given none: always the CPU in Ember."""
    return _C.device("cpu")


def set_default_device(device: object) -> None:
    """Only the CPU (or None, the default) can be the default device in Ember, which runs on
    CPU; any other device is refused here rather than at the next factory call."""
    if device is not None and _C.device(device).type != "cpu":
        raise RuntimeError(f"set_default_device: Ember runs on CPU only, so the default device cannot be "
                           f"{_C.device(device)}")


def _pow2(k: _C.Tensor) -> _C.Tensor:
    """2 ** k for integral float64 k, exact down to the subnormals: two normal factors."""
    half = _C.floor(_C.div(k, 2))
    return _C.mul(_C.exp2(half), _C.exp2(_C.sub(k, half)))


def nextafter(input: _C.Tensor, other: object, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """The next floating-point value after input in the direction of other, elementwise
    (torch.nextafter). Computed exactly in float64 from frexp: one unit in the last place of
    input's dtype, half of it below a power of two, the smallest subnormal next to zero. Not
    differentiable, as PyTorch's."""
    from . import finfo, frexp
    from ._surface import _out

    _tensor_arg(input, "nextafter")
    dtype = _C.result_type([input, other])
    if not dtype.is_floating_point:
        raise RuntimeError(f'"nextafter_cpu" not implemented for \'{_legacy_name(dtype)}\'')
    x = input.detach().to(_C.float64)
    y = (other.detach() if isinstance(other, _C.Tensor) else _C.full([], other, dtype=dtype)).to(_C.float64)
    from . import broadcast_shapes

    shape = list(broadcast_shapes(x.shape, y.shape))
    x, y = x.expand(shape), y.expand(shape)
    info = finfo(dtype)
    digits = round(-math.log2(info.eps)) + 1  # significand bits, the implicit one included
    smallest_sub = _C.full([], info.tiny * info.eps, dtype=_C.float64)  # a float64 tensor: no float32 wrapping
    mantissa, exponent = frexp(x)
    ulp = _C.maximum(_pow2(_C.sub(exponent.to(_C.float64), digits)), smallest_sub)
    toward_zero = _C.ne(_C.gt(y, x), _C.gt(x, 0))  # the step shrinks |x|
    power_of_two = _C.logical_and(_C.eq(_C.abs(mantissa), 0.5), _C.gt(_C.abs(x), info.tiny))
    step = _C.where(_C.logical_and(toward_zero, power_of_two), _C.mul(ulp, 0.5), ulp)
    moved = _C.where(_C.gt(y, x), _C.add(x, step), _C.sub(x, step))
    moved = _C.where(_C.eq(x, 0), _C.where(_C.gt(y, 0), smallest_sub, _C.neg(smallest_sub)), moved)
    moved = _C.where(_C.isinf(x), _C.mul(_C.sign(x), info.max), moved)  # from infinity: the largest finite
    result = _C.where(_C.eq(x, y), y, moved)
    result = _C.where(_C.logical_or(_C.isnan(x), _C.isnan(y)), math.nan, result)
    return _out(result.to(dtype), out)


def nextafter_(self: _C.Tensor, other: object) -> _C.Tensor:
    return _write_inplace(self, nextafter(self, other), "nextafter_")


# (2j)! / B_2j for the Euler-Maclaurin tail of the Hurwitz zeta function, j = 1 .. 12, from the
# Bernoulli numbers B_2 .. B_24.
_BERNOULLI = [(1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510), (43867, 798),
              (-174611, 330), (854513, 138), (-236364091, 2730)]
_EM_DIVISORS = [math.factorial(2 * j) * den / num for j, (num, den) in enumerate(_BERNOULLI, start=1)]


def _hurwitz_zeta(s: builtins.int, q: _C.Tensor) -> _C.Tensor:
    """zeta(s, q) = sum_k (q + k)^-s for an integer s >= 2 and float64 q, as Cephes computes it:
    the terms up to q + k > 9 summed directly (at least nine), then the Euler-Maclaurin tail.
    q a non-positive integer gives inf."""
    total = _C.pow(q, -s)
    a = q
    # Terms are added until every element's shifted argument passes 9 (more terms for negative q).
    count = 0
    while True:
        still = _C.logical_or(_C.lt(_C.full([], count, dtype=_C.float64), 9), _C.le(a, 9.0))
        if count >= 9 and not _C.any(still).item():
            break
        a = _C.where(still, _C.add(a, 1), a)
        total = _C.where(still, _C.add(total, _C.pow(a, -s)), total)
        count += 1
    w = a
    b = _C.pow(w, -s)
    total = _C.add(total, _C.div(_C.mul(b, w), s - 1))
    total = _C.sub(total, _C.mul(b, 0.5))
    rising = 1.0
    k = 0
    for divisor in _EM_DIVISORS:
        rising *= s + k  # s (s + 1) ... (s + 2j - 2)
        b = _C.div(b, w)
        total = _C.add(total, _C.mul(b, rising / divisor))
        k += 1
        rising *= s + k
        b = _C.div(b, w)
        k += 1
    poles = _C.logical_and(_C.le(q, 0), _C.eq(q, _C.floor(q)))
    return _C.where(poles, math.inf, total)


def polygamma(n: builtins.int, input: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """The n-th derivative of digamma (torch.polygamma): digamma for n = 0, else
    (-1)^(n+1) n! zeta(n + 1, input), computed in float64 (Cephes' Hurwitz zeta); its derivative
    is polygamma(n + 1, input)."""
    from ._surface import _out

    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    _tensor_arg(input, "polygamma", "input", 2)
    dtype = input.dtype if input.dtype.is_floating_point else _C.get_default_dtype()
    x = input.to(_C.float64)
    if n == 0:
        result = _C.digamma(x)
    else:
        result = _C.mul(_hurwitz_zeta(n + 1, x), (1.0 if n % 2 else -1.0) * math.factorial(n))
    return _out(result.to(dtype), out)


def polygamma_method(self: _C.Tensor, n: builtins.int) -> _C.Tensor:
    return polygamma(n, self)


def polygamma_(self: _C.Tensor, n: builtins.int) -> _C.Tensor:
    return _write_inplace(self, polygamma(n, _graph_source(self)), "polygamma_")


def gradient(input: _C.Tensor, *, spacing: object = 1, dim: object = None,  # noqa: A002
             edge_order: builtins.int = 1) -> tuple[_C.Tensor, ...]:
    """Estimates of input's derivative along each dim (or the given ones) by central differences
    inside and one-sided differences of order edge_order at the ends (torch.gradient, as
    numpy.gradient). spacing is one number for every dim, one per dim, or one coordinate tensor
    per dim (non-uniform sample points)."""
    _tensor_arg(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(builtins.range(input.dim())) if dim is None else _int_list(dim)
    dims = [_wrap_dim(d, input.dim()) for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            what = "'self.dim() = " + str(input.dim()) + "', since dim argument was not given" if dim is None else \
                "the number of dims given"
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to {what}, but got a list of length {len(spacing)}")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    f = input if (input.dtype.is_floating_point or input.dtype.is_complex) else input.to(_C.get_default_dtype())
    results = []
    for d, h in zip(dims, spacings, strict=True):
        n = f.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
        if isinstance(h, _C.Tensor) and h.dim() == 1:
            if h.shape[0] != n:
                raise RuntimeError(f"torch.gradient expected the coordinates along dim {d} to have {n} elements, "
                                   f"one per sample, but got {h.shape[0]}")
            steps = _C.sub(h[1:], h[:-1]).to(f.dtype)
        else:
            value = h.item() if isinstance(h, _C.Tensor) else h
            steps = _C.full([n - 1], value, dtype=f.dtype)
        results.append(_gradient_1d(f, d, steps, edge_order))
    return tuple(results)


def _gradient_1d(f: _C.Tensor, d: builtins.int, steps: _C.Tensor, edge_order: builtins.int) -> _C.Tensor:
    """numpy.gradient's second-order-accurate differences along d with sample gaps `steps`."""
    n = f.shape[d]
    shape = [1] * f.dim()

    def along(t: _C.Tensor) -> _C.Tensor:  # a 1-D tensor of coefficients, broadcast along dim d
        s = list(shape)
        s[d] = t.shape[0]
        return t.reshape(s)

    def part(start: builtins.int, length: builtins.int) -> _C.Tensor:
        return f.narrow(d, start, length)

    pieces = []
    if edge_order == 1:
        pieces.append(_C.div(_C.sub(part(1, 1), part(0, 1)), along(steps[:1])))
    else:
        h1, h2 = steps[0:1], steps[1:2]
        a = _C.div(_C.neg(_C.add(_C.mul(h1, 2), h2)), _C.mul(h1, _C.add(h1, h2)))
        b = _C.div(_C.add(h1, h2), _C.mul(h1, h2))
        c = _C.div(_C.neg(h1), _C.mul(h2, _C.add(h1, h2)))
        pieces.append(_C.add(_C.add(_C.mul(along(a), part(0, 1)), _C.mul(along(b), part(1, 1))),
                             _C.mul(along(c), part(2, 1))))
    if n > 2:
        h1, h2 = steps[:-1], steps[1:]
        a = _C.div(_C.neg(h2), _C.mul(h1, _C.add(h1, h2)))
        b = _C.div(_C.sub(h2, h1), _C.mul(h1, h2))
        c = _C.div(h1, _C.mul(h2, _C.add(h1, h2)))
        pieces.append(_C.add(_C.add(_C.mul(along(a), part(0, n - 2)), _C.mul(along(b), part(1, n - 2))),
                             _C.mul(along(c), part(2, n - 2))))
    if edge_order == 1:
        pieces.append(_C.div(_C.sub(part(n - 1, 1), part(n - 2, 1)), along(steps[-1:])))
    else:
        h1, h2 = steps[-2:-1], steps[-1:]
        a = _C.div(h2, _C.mul(h1, _C.add(h1, h2)))
        b = _C.div(_C.neg(_C.add(h2, h1)), _C.mul(h1, h2))
        c = _C.div(_C.add(_C.mul(h2, 2), h1), _C.mul(h2, _C.add(h1, h2)))
        pieces.append(_C.add(_C.add(_C.mul(along(a), part(n - 3, 1)), _C.mul(along(b), part(n - 2, 1))),
                             _C.mul(along(c), part(n - 1, 1))))
    return _C.cat(pieces, d)


def _resized(self: _C.Tensor, shape: list[builtins.int]) -> _C.Tensor:
    count = 1
    for size in shape:
        count *= size
    if count != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({count} elements in total), but the "
                           f"given tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the "
                           "number of elements. ")
    return self.contiguous().view(shape)


def resize(self: _C.Tensor, *sizes: object) -> _C.Tensor:
    """The deprecated out-of-place resize: self's elements in a new shape with the same count
    (torch.Tensor.resize, autograd's Resize)."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return _resized(self, _int_list(sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], builtins.int) else sizes))


def resize_as(self: _C.Tensor, tensor: _C.Tensor) -> _C.Tensor:
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return _resized(self, list(_tensor_arg(tensor, "resize_as", "tensor").shape))


def histogramdd(input: _C.Tensor, bins: object = 10, *, range: object = None,  # noqa: A002
                weight: _C.Tensor | None = None, density: builtins.bool = False):
    """The D-dimensional histogram of the points in input's last dim (torch.histogramdd): bins is
    a count for every dim, a count per dim, or a tensor of edges per dim; range gives
    [min_0, max_0, min_1, max_1, ...] (default: the data's extent). A bin holds [e_i, e_i+1), the
    last one its right edge too; points outside are not counted."""
    from . import linspace, searchsorted

    _tensor_arg(input, "histogramdd")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for \'{_legacy_name(input.dtype)}\'')
    dims = input.shape[-1]
    points = input.reshape([-1, dims])
    bins = [bins] * dims if isinstance(bins, builtins.int) else list(bins)
    if len(bins) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: expected range to have {2 * dims} elements, but got {len(range)}")
    edges, index, inside = [], None, None
    for d, spec in enumerate(bins):
        column = points[:, d]
        if isinstance(spec, _C.Tensor):
            edge = spec.to(input.dtype)
        else:
            if range is not None:
                low, high = builtins.float(range[2 * d]), builtins.float(range[2 * d + 1])
            elif column.numel():
                low, high = _C.amin(column).item(), _C.amax(column).item()
            else:
                low, high = 0.0, 0.0
            if low == high:  # a degenerate extent: one unit around it, as PyTorch
                low, high = low - 0.5, high + 0.5
            if spec <= 0:
                raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {spec} for dimension {d}")
            edge = linspace(low, high, spec + 1, dtype=input.dtype)
        count = edge.shape[0] - 1
        position = _C.sub(searchsorted(edge, column.contiguous(), right=True), 1)
        at_right_edge = _C.eq(column, edge[-1])
        position = _C.where(at_right_edge, count - 1, position)
        ok = _C.logical_and(_C.ge(column, edge[0]), _C.le(column, edge[-1]))
        inside = ok if inside is None else _C.logical_and(inside, ok)
        position = _C.clamp(position, 0, builtins.max(count - 1, 0))
        index = position if index is None else _C.add(_C.mul(index, count), position)
        edges.append(edge)
    sizes = [e.shape[0] - 1 for e in edges]
    total = 1
    for size in sizes:
        total *= size
    weights = weight.reshape(-1).to(input.dtype) if weight is not None else _C.ones([points.shape[0]], dtype=input.dtype)
    weights = _C.where(inside, weights, _C.zeros_like(weights))
    hist = _C.zeros([total], dtype=input.dtype).index_add(0, index, weights).reshape(sizes)
    if density:
        volume = None
        for d, edge in enumerate(edges):
            shape = [1] * dims
            shape[d] = sizes[d]
            width = _C.sub(edge[1:], edge[:-1]).reshape(shape)
            volume = width if volume is None else _C.mul(volume, width)
        hist = _C.div(_C.div(hist, _C.sum(hist, [], False)), volume)
    return _return_type("histogramdd", ("hist", "bin_edges"))(hist, tuple(edges))


def frombuffer(buffer: object, *, dtype: _C.dtype, count: builtins.int = -1, offset: builtins.int = 0,
               requires_grad: builtins.bool = False) -> _C.Tensor:
    """A 1-D tensor viewing an object that exposes the buffer protocol (torch.frombuffer): it
    shares the buffer's memory, `count` elements (-1: all) from byte `offset`."""
    import numpy

    from . import from_numpy

    itemsize = dtype.itemsize
    view = memoryview(buffer)
    length = view.nbytes
    if offset < 0 or offset >= length:
        raise ValueError(f"both buffer length ({length}) and offset ({offset}) must be greater than 0 and offset "
                         "must be less than buffer length")
    if count == -1:
        if (length - offset) % itemsize:
            raise ValueError(f"buffer length ({length - offset} after offset) must be a multiple of element size "
                             f"({itemsize})")
        count = (length - offset) // itemsize
    if count <= 0 or offset + count * itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset}) must not be "
                         f"greater than actual buffer length ({length})")
    names = {_C.float32: "float32", _C.float64: "float64", _C.float16: "float16", _C.int64: "int64",
             _C.int32: "int32", _C.int16: "int16", _C.int8: "int8", _C.uint8: "uint8", _C.bool: "bool",
             _C.complex64: "complex64", _C.complex128: "complex128"}
    if dtype not in names:
        raise TypeError(f"frombuffer: {dtype} is not supported")
    array = numpy.frombuffer(buffer, dtype=names[dtype], count=count, offset=offset)
    out = from_numpy(array)
    return out.requires_grad_() if requires_grad else out


# ---- regularized incomplete gamma functions -------------------------------------------------------

_EPS64 = 2.0 ** -53


def _gamma_series(a: _C.Tensor, x: _C.Tensor) -> _C.Tensor:
    """P(a, x) by its power series (Cephes igam), for x <= max(1, a) where it converges fast:
    x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))."""
    term = _C.ones_like(x)
    total = _C.ones_like(x)
    r = a
    for _chunk in builtins.range(400):  # at most 12800 terms; a check every 32
        for _ in builtins.range(32):
            r = _C.add(r, 1)
            term = _C.mul(term, _C.div(x, r))
            total = _C.add(total, term)
        if not _C.any(_C.gt(term, _C.mul(total, _EPS64))).item():
            break
    log_front = _C.sub(_C.sub(_C.mul(a, _C.log(x)), x), _C.lgamma(a))
    return _C.div(_C.mul(total, _C.exp(log_front)), a)


def _gamma_fraction(a: _C.Tensor, x: _C.Tensor) -> _C.Tensor:
    """Q(a, x) by its continued fraction (Cephes igamc), for x > max(1, a): the convergents
    p_k / q_k, rescaled whenever they grow large."""
    y = _C.neg(_C.sub(a, 1))  # 1 - a
    z = _C.add(_C.add(x, y), 1)
    c = _C.zeros_like(x)
    pkm2, qkm2 = _C.ones_like(x), x
    pkm1, qkm1 = _C.add(x, 1), _C.mul(z, x)
    answer = _C.div(pkm1, qkm1)
    big, big_inverse = 2.0 ** 52, 2.0 ** -52
    for _chunk in builtins.range(400):
        for _ in builtins.range(32):
            c = _C.add(c, 1)
            y = _C.add(y, 1)
            z = _C.add(z, 2)
            yc = _C.mul(y, c)
            pk = _C.sub(_C.mul(pkm1, z), _C.mul(pkm2, yc))
            qk = _C.sub(_C.mul(qkm1, z), _C.mul(qkm2, yc))
            nonzero = _C.ne(qk, 0)
            ratio = _C.div(pk, _C.where(nonzero, qk, 1.0))
            change = _C.where(nonzero, _C.abs(_C.div(_C.sub(answer, ratio), ratio)), 1.0)
            answer = _C.where(nonzero, ratio, answer)
            pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
            large = _C.gt(_C.abs(pk), big)
            pkm2, pkm1, qkm2, qkm1 = (_C.where(large, _C.mul(t, big_inverse), t) for t in (pkm2, pkm1, qkm2, qkm1))
        if not _C.any(_C.gt(change, 8 * _EPS64)).item():  # converged to rounding (it may flicker by an ulp)
            break
    log_front = _C.sub(_C.sub(_C.mul(a, _C.log(x)), x), _C.lgamma(a))
    return _C.mul(answer, _C.exp(log_front))


def _incomplete_gamma(a: _C.Tensor, x: _C.Tensor, upper: builtins.bool) -> _C.Tensor:
    """P(a, x) (upper=False) or Q(a, x) = 1 - P, in float64, with PyTorch's special cases."""
    a, x = a.to(_C.float64), x.to(_C.float64)
    from . import broadcast_shapes

    shape = list(broadcast_shapes(a.shape, x.shape))
    a, x = a.expand(shape).contiguous(), x.expand(shape).contiguous()
    regular = _C.logical_and(_C.logical_and(_C.gt(a, 0), _C.gt(x, 0)),
                             _C.logical_and(_C.isfinite(a), _C.isfinite(x)))
    use_series = _C.logical_or(_C.le(x, 1), _C.le(x, a))
    # Each method runs on harmless stand-ins where the other one (or a special case) applies.
    a_safe = _C.where(regular, a, 1.0)
    x_series = _C.where(_C.logical_and(regular, use_series), x, 0.5)
    x_fraction = _C.where(_C.logical_and(regular, _C.logical_not(use_series)), x, _C.add(a_safe, 2.0))
    lower = _gamma_series(a_safe, x_series)
    upper_tail = _gamma_fraction(a_safe, x_fraction)
    p = _C.where(use_series, lower, _C.neg(_C.sub(upper_tail, 1)))
    q = _C.where(use_series, _C.neg(_C.sub(lower, 1)), upper_tail)
    result = q if upper else p
    one, zero = (0.0, 1.0) if upper else (1.0, 0.0)  # P's values, as Q's: (1 - P)
    # PyTorch's special cases: x = 0 -> P = 0; a = 0 (x > 0) -> P = 1; x = inf -> P = 1; a = inf -> P = 0;
    # a or x negative or NaN, a = x = 0, a = x = inf -> NaN.
    result = _C.where(_C.eq(x, 0), zero, result)
    result = _C.where(_C.logical_and(_C.eq(a, 0), _C.gt(x, 0)), one, result)
    result = _C.where(_C.isinf(x), one, result)
    result = _C.where(_C.logical_and(_C.isinf(a), _C.isfinite(x)), zero, result)
    invalid = _C.logical_or(_C.logical_or(_C.lt(a, 0), _C.lt(x, 0)), _C.logical_or(_C.isnan(a), _C.isnan(x)))
    invalid = _C.logical_or(invalid, _C.logical_and(_C.eq(a, 0), _C.eq(x, 0)))
    invalid = _C.logical_or(invalid, _C.logical_and(_C.isinf(a), _C.isinf(x)))
    return _C.where(invalid, math.nan, result)


def _incomplete_gamma_op(name: str, upper: builtins.bool):
    class IncompleteGamma(Function):
        @staticmethod
        def forward(ctx, a, x):
            ctx.save_for_backward(a, x)
            dtype = _C.result_type([a, x])
            return _incomplete_gamma(a, x, upper).to(dtype)

        @staticmethod
        def backward(ctx, grad):
            a, x = ctx.saved_tensors
            if ctx.needs_input_grad[0]:
                raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
            # d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a); Q's is its negative
            density = _C.exp(_C.sub(_C.sub(_C.mul(_C.sub(a, 1), _C.log(x)), x), _C.lgamma(a)))
            grad_x = _C.mul(grad, _C.neg(density) if upper else density)
            return None, grad_x

    IncompleteGamma.__name__ = name
    return IncompleteGamma


def _incomplete_gamma_call(name: str, upper: builtins.bool, input: _C.Tensor, other: _C.Tensor,  # noqa: A002
                           out: _C.Tensor | None) -> _C.Tensor:
    from ._surface import _out

    _tensor_arg(input, name)
    other = other if isinstance(other, _C.Tensor) else _C.full([], other, dtype=input.dtype)
    dtype = _C.result_type([input, other])
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_legacy_name(dtype)}\'')
    return _out(_INCOMPLETE_GAMMA[name].apply(input, other), out)


def igamma(input: _C.Tensor, other: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """The regularized lower incomplete gamma function P(input, other) =
    gamma(a, x) / Gamma(a) (torch.igamma, special.gammainc), computed in float64 by Cephes'
    series and continued fraction; differentiable in other only, as PyTorch's."""
    return _incomplete_gamma_call("igamma", False, input, other, out)


def igammac(input: _C.Tensor, other: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P (torch.igammac)."""
    return _incomplete_gamma_call("igammac", True, input, other, out)


def igamma_(self: _C.Tensor, other: _C.Tensor) -> _C.Tensor:
    return _write_inplace(self, igamma(_graph_source(self), other), "igamma_")


def igammac_(self: _C.Tensor, other: _C.Tensor) -> _C.Tensor:
    return _write_inplace(self, igammac(_graph_source(self), other), "igammac_")


_INCOMPLETE_GAMMA = {"igamma": _incomplete_gamma_op("igamma", False),
                     "igammac": _incomplete_gamma_op("igammac", True)}


# ---- Tensor methods -------------------------------------------------------------------------------


def new(self: _C.Tensor, *args: object, **kwargs: object) -> _C.Tensor:
    """The legacy constructor: self.new(2, 3) is uninitialized of self's dtype, self.new(data) a
    tensor of data in self's dtype, self.new() an empty one (torch.Tensor.new)."""
    from . import empty, tensor

    dtype, device = kwargs.pop("dtype", self.dtype), kwargs.pop("device", self.device)
    if kwargs:
        raise TypeError(f"new() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if not args:
        return empty([0], dtype=dtype, device=device)
    if builtins.all(isinstance(a, builtins.int) for a in args):
        return empty(list(args), dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], tuple) and builtins.all(isinstance(a, builtins.int) for a in args[0]):
        return empty(list(args[0]), dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], _C.Tensor):
        if args[0].dtype != dtype:
            raise TypeError(f"expected {dtype} (got {args[0].dtype})")
        return args[0]  # PyTorch returns an alias of the given tensor
    if len(args) == 1:
        return tensor(args[0], dtype=dtype, device=device)
    raise TypeError("new() expects sizes (ints), a size tuple, a tensor or data")


def apply_(self: _C.Tensor, callable: object) -> _C.Tensor:  # noqa: A002
    """callable applied to every element in place (a Python loop, CPU only, as PyTorch's)."""
    from . import tensor

    if self.requires_grad:
        raise RuntimeError("apply_ is not supported on tensors that require grad: it bypasses autograd")
    values = [callable(v) for v in self.reshape(-1).tolist()]
    self.copy_(tensor(values, dtype=self.dtype).reshape(list(self.shape)))
    return self


def map_(self: _C.Tensor, tensor: _C.Tensor, callable: object) -> _C.Tensor:  # noqa: A002
    """self[i] = callable(self[i], tensor[i]) in place, tensor broadcast to self's shape."""
    from . import tensor as make

    if self.requires_grad:
        raise RuntimeError("map_ is not supported on tensors that require grad: it bypasses autograd")
    other = tensor.expand(list(self.shape)).reshape(-1).tolist()
    values = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other, strict=True)]
    self.copy_(make(values, dtype=self.dtype).reshape(list(self.shape)))
    return self


def map2_(self: _C.Tensor, x: _C.Tensor, y: _C.Tensor, callable: object) -> _C.Tensor:  # noqa: A002
    from . import tensor as make

    if self.requires_grad:
        raise RuntimeError("map2_ is not supported on tensors that require grad: it bypasses autograd")
    shape = list(self.shape)
    xs, ys = x.expand(shape).reshape(-1).tolist(), y.expand(shape).reshape(-1).tolist()
    values = [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), xs, ys, strict=True)]
    self.copy_(make(values, dtype=self.dtype).reshape(shape))
    return self


def dim_order(self: _C.Tensor) -> tuple[builtins.int, ...]:
    """The dims from outermost to innermost in memory (largest stride first; ties keep dim order)."""
    strides = list(self.stride())
    return tuple(sorted(builtins.range(self.dim()), key=lambda d: -strides[d]))


def const_data_ptr(self: _C.Tensor) -> builtins.int:
    return self.data_ptr()


# ---- exports ------------------------------------------------------------------------------------

_FUNCTIONS = ["slice_copy", "split_copy", "split_with_sizes_copy", "unbind_copy", "select_scatter", "slice_scatter",
              "diagonal_scatter", "as_strided_scatter", "slice_inverse", "column_stack", "vander", "trapezoid", "trapz",
              "cumulative_trapezoid", "unravel_index", "rsub", "scalar_tensor", "fill", "split_with_sizes",
              "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes", "nonzero_static", "empty_permuted", "range",
              "lu_unpack", "frobenius_norm", "nuclear_norm", "native_norm", "norm_except_dim", "native_dropout",
              "can_cast", "is_neg", "resolve_neg", "get_device", "is_same_size", "is_signed", "as_strided_", "asarray",
              "is_inference", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
              "get_default_device", "set_default_device", "nextafter", "polygamma", "gradient", "histogramdd", "frombuffer", "igamma", "igammac"]


def namespace() -> dict[str, object]:
    names = {name: globals()[name] for name in _FUNCTIONS}
    names.update({name: _copy_of(name, view) for name, view in VIEW_COPIES.items()})
    return names


METHODS = ["select_scatter", "slice_scatter", "slice_inverse", "diagonal_scatter", "as_strided_scatter", "split_with_sizes",
           "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes", "nonzero_static", "is_neg", "resolve_neg",
           "squeeze_", "unsqueeze_", "t_", "transpose_", "as_strided_", "new", "apply_", "map_", "map2_",
           "dim_order", "const_data_ptr", "nextafter", "nextafter_", "polygamma_", "resize", "resize_as", "igamma", "igammac", "igamma_",
           "igammac_"]


def tensor_methods() -> dict[str, object]:
    """The METHODS that Tensor lacks, and swapaxes_ / swapdims_ (transpose_), polygamma and
    prelu, for ember/_tensor_methods.py to attach."""
    methods = {name: globals()[name] for name in METHODS if not hasattr(_C.Tensor, name)}
    methods["swapaxes_"] = methods["swapdims_"] = transpose_
    if not hasattr(_C.Tensor, "polygamma"):
        methods["polygamma"] = polygamma_method
    if not hasattr(_C.Tensor, "prelu"):
        from .nn import functional as F

        methods["prelu"] = lambda self, weight: F.prelu(self, weight)
    return methods
