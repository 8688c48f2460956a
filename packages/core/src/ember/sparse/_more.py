"""The rest of torch.sparse that runs on the CPU: sampled_addmm, spdiags, as_sparse_gradcheck,
check_sparse_tensor_invariants and the legacy typed constructors (torch.sparse.FloatTensor & co.).

Like the rest of ember.sparse, every result is built from differentiable ember ops on the values,
so gradients reach the dense operands and the sparse operands' values through the ordinary engine.
"""

from __future__ import annotations

import builtins
import functools
import numbers
import warnings

import ember

from .. import _C
from ._tensor import (
    _BLOCKED,
    _LAYOUT_WORD,
    SparseTensor,
    _dtype_word,
    _group_sorted,
    sparse_compressed_tensor,
    sparse_coo,
    sparse_coo_tensor,
    sparse_csc,
    sparse_csr,
)
from ._tensor import layout as _Layout


def _word(x) -> str:
    """How PyTorch's messages name x's layout."""
    return _LAYOUT_WORD[x.layout] if isinstance(x, SparseTensor) else "Strided"


def _scalar(value, name: str, fn: str):
    if isinstance(value, _C.Tensor) and value.dim() == 0:
        return value.item()
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{fn}(): argument '{name}' must be Number, not {type(value).__name__}")
    return value


# ---- sampled_addmm -------------------------------------------------------------------------------


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):  # noqa: A002 - PyTorch's argument name
    """alpha * (mat1 @ mat2) at the sparsity pattern of `input` (a 2-D sparse CSR matrix), plus
    beta * input: a CSR result with input's pattern (torch.sparse.sampled_addmm). Only the stored
    entries of the product are computed. Differentiable with respect to mat1, mat2 and input's
    values. As torch.addmm documents, beta=0 ignores input's values (nan and inf in them do not
    propagate). float16 and bfloat16 are accepted too (PyTorch's CPU kernel refuses them)."""
    fn = "sparse_sampled_addmm"
    for position, (name, x) in enumerate((("input", input), ("mat1", mat1), ("mat2", mat2)), 1):
        if not isinstance(x, (SparseTensor, _C.Tensor)):
            raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, not {type(x).__name__}")
    beta, alpha = _scalar(beta, "beta", fn), _scalar(alpha, "alpha", fn)
    if not isinstance(input, SparseTensor) or input.layout is sparse_coo:
        raise NotImplementedError(f"sampled_addmm: expected input to have sparse csr layout, but got {_word(input)} "
                                  f"(there is no sampled_addmm for that layout)")
    if input.layout in _BLOCKED:
        raise RuntimeError(f"empty_sparse_compressed expected sparse compressed (non-block) tensor layout but got "
                           f"{_word(input)}")
    if input.layout is not sparse_csr:
        raise RuntimeError(f"sampled_addmm: Expected result to have sparse csr layout, but got {_word(input)}")
    if out is not None and not (isinstance(out, SparseTensor) and out.layout is sparse_csr):
        raise RuntimeError(f"sampled_addmm: Expected result to have sparse csr layout, but got {_word(out)}")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if isinstance(m, SparseTensor):
            raise RuntimeError(f"sampled_addmm: Expected {name} to have strided layout, but got {_word(m)}")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but got "
                           f"{_dtype_word(mat1.dtype)} and {_dtype_word(mat2.dtype)}")
    if mat1.dtype != input.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and self to have the same dtype, but got "
                           f"{_dtype_word(mat1.dtype)} and {_dtype_word(input.dtype)}")
    if out is not None and out.dtype != input.dtype:
        raise RuntimeError(f"sampled_addmm: Expected result and self to have the same dtype, but got "
                           f"{_dtype_word(out.dtype)} and {_dtype_word(input.dtype)}")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.dim() < 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got {m.dim()}-D tensor")
    batch1, batch2 = list(mat1.shape[:-2]), list(mat2.shape[:-2])
    if batch1 != batch2:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same batch size, but got {batch1} and "
                           f"{batch2}")
    if batch1:  # PyTorch broadcasts input over the batch into a batched CSR result, which Ember cannot hold
        raise NotImplementedError(f"sampled_addmm: batched sparse compressed tensors are not supported in Ember; "
                                  f"got mat1 and mat2 with batch dimensions {batch1}")
    (m, k), (k2, n) = mat1.shape, mat2.shape
    if k != k2:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
    if input.shape[0] != m:
        raise RuntimeError("sampled_addmm: self.shape[-2] must match mat1.shape[-2]")
    if input.shape[1] != n:
        raise RuntimeError("sampled_addmm: self.shape[-1] must match mat2.shape[-1]")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"{fn}: Expected self to be a floating-point or complex tensor, but got "
                           f"{_dtype_word(input.dtype)}")
    if isinstance(alpha, complex) or isinstance(beta, complex):
        if not input.dtype.is_complex:
            raise RuntimeError("value cannot be converted to type double without overflow")
    crow, col = input.crow_indices().long(), input.col_indices().long()
    rows = ember.repeat_interleave(_C.arange(0, m, 1, dtype=_C.int64), ember.diff(crow))
    # entry (r, c) of the product: row r of mat1 against column c of mat2, for the stored (r, c) only
    product = (mat1.index_select(0, rows) * mat2.t().index_select(0, col)).sum(1)
    values = product * alpha if alpha != 1 else product
    if beta != 0:
        values = values + (input.values() * beta if beta != 1 else input.values())
    result = SparseTensor._csr(crow.clone(), col.clone(), values, input.shape)
    if out is None:
        return result
    out._assign(result)
    out._size = result.shape
    return out


# ---- spdiags -------------------------------------------------------------------------------------


def _shape_arg(shape) -> tuple:
    if isinstance(shape, _C.Tensor) or not isinstance(shape, (tuple, list)):
        raise TypeError(f"_spdiags(): argument 'shape' (position 3) must be tuple of ints, not {type(shape).__name__}")
    out = []
    for pos, s in enumerate(shape):
        if isinstance(s, _C.Tensor) and s.dim() == 0 and not (s.dtype.is_floating_point or s.dtype.is_complex):
            s = s.item()
        if not isinstance(s, numbers.Integral):
            raise TypeError(f"_spdiags(): argument 'shape' (position 3) must be tuple of ints, but found element of "
                            f"type {type(s).__name__} at pos {pos}")
        out.append(int(s))
    return tuple(out)


def spdiags(diagonals, offsets, shape, layout=None):  # noqa: A002 - PyTorch's argument name
    """A 2-D sparse matrix of `shape` whose diagonal offsets[i] (0 the main one, > 0 above it,
    < 0 below it) holds row i of `diagonals`: entry (j - offsets[i], j) is diagonals[i, j], for the
    columns j inside the matrix (torch.sparse.spdiags). COO by default (uncoalesced, in the order
    of the offsets), or layout=sparse_csr / sparse_csc. Stored zeros are kept. Unlike PyTorch,
    differentiable with respect to `diagonals`, and a shape narrower than the diagonals is safe."""
    if isinstance(diagonals, SparseTensor):
        raise NotImplementedError(f"spdiags: expected a strided diagonals tensor, but got layout {_word(diagonals)}")
    for position, (name, x) in enumerate((("diagonals", diagonals), ("offsets", offsets)), 1):
        if not isinstance(x, _C.Tensor):
            what = "sparse tensor" if isinstance(x, SparseTensor) else type(x).__name__
            raise TypeError(f"_spdiags(): argument '{name}' (position {position}) must be Tensor, not {what}")
    shape = _shape_arg(shape)
    if layout is not None and not isinstance(layout, _Layout):
        raise TypeError(f"_spdiags(): argument 'layout' must be ember.layout, not {type(layout).__name__}")
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    if diagonals.dim() not in (1, 2):
        raise RuntimeError("Diagonals must be vector or matrix")
    if offsets.dim() > 1:
        raise RuntimeError("Offsets must be scalar or vector")
    diags = diagonals if diagonals.dim() == 2 else diagonals.unsqueeze(0)
    offs = offsets.reshape([-1])
    if diags.shape[0] != offs.shape[0]:
        raise RuntimeError(f"Number of diagonals ({diags.shape[0]}) does not match the number of offsets "
                           f"({offs.shape[0]})")
    target = sparse_coo if layout is None else layout
    if target not in (sparse_coo, sparse_csr, sparse_csc):
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, got "
                           f"{_LAYOUT_WORD[target]}")
    if offs.dtype != _C.int64:
        raise RuntimeError(f"Offset Tensor must have dtype Long but got {_dtype_word(offs.dtype)}")
    if ember.unique(offs).shape[0] != offs.shape[0]:
        raise RuntimeError("Offset tensor contains duplicate values")
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    nrows, ncols = shape
    ndiag, length = diags.shape
    # every (diagonal, column) slot that lands inside the matrix, diagonal by diagonal, column by column
    cols = _C.arange(0, length, 1, dtype=_C.int64).unsqueeze(0)
    k = offs.unsqueeze(1)
    inside = (cols >= k) & (cols < ncols) & (cols - k < nrows)
    slots = ember.nonzero(inside.reshape([-1])).reshape([-1])
    col = slots % length if length else slots
    row = col - offs.index_select(0, ember.div(slots, length, rounding_mode="floor") if length else slots)
    values = diags.reshape([-1]).index_select(0, slots)
    if target is sparse_coo:
        return SparseTensor._coo(ember.stack([row, col]), values, shape, slots.shape[0] <= 1)
    major, minor = (row, col) if target is sparse_csr else (col, row)
    perm, _, _ = _group_sorted(ember.stack([major, minor]))  # no duplicates: only sorts
    major = major.index_select(0, perm)
    counts = ember.bincount(major, minlength=nrows if target is sparse_csr else ncols)
    compressed = ember.cat([_C.zeros([1], dtype=_C.int64), ember.cumsum(counts, 0)])
    return SparseTensor._compressed(target, compressed, minor.index_select(0, perm), values.index_select(0, perm),
                                    shape)


# ---- as_sparse_gradcheck -------------------------------------------------------------------------


class _Strided:
    """Marks, in the argument list handed to gradcheck, a sparse input replaced by its strided parts
    (the next two arguments: a dict of its structure and its values)."""

    def __repr__(self) -> str:
        return "<sparse input as its values>"


_STRIDED = _Strided()


def as_sparse_gradcheck(gradcheck):
    """Wraps a gradcheck function (ember.autograd.gradcheck or a functools.partial of it) so that
    `func` may take and return sparse tensors (torch.sparse.as_sparse_gradcheck). A sparse input
    that requires grad is handed to gradcheck as its values (a strided tensor) and rebuilt, same
    structure, before each call of func; a sparse output that requires grad is compared as
    to_dense(). With masked=False (the default) every element of a sparse input is a variable (its
    unstored elements are materialized as stored zeros first); with masked=True only its stored
    elements are. The wrapped gradcheck itself only ever sees strided tensors."""

    def gradcheck_with_sparse_support(func, inputs, **kwargs):
        masked = kwargs.pop("masked", False)

        def as_strided_parts(args) -> tuple:
            if not isinstance(args, (list, tuple)):
                args = (args,)
            parts: list = []
            for obj in args:
                if not (isinstance(obj, SparseTensor) and obj.requires_grad):
                    parts.append(obj)
                    continue
                if not masked:  # every element becomes a stored one (zeros included)
                    blocksize = obj._blocksize() if obj.layout in _BLOCKED else None
                    everything = _C.ones(list(obj.shape), dtype=_C.bool)
                    if obj.layout is sparse_coo:
                        full = everything.to_sparse(obj.sparse_dim())
                    else:
                        full = everything.to_sparse(layout=obj.layout, blocksize=blocksize)
                    obj = obj.to_dense().sparse_mask(full)
                structure = {"layout": obj.layout, "shape": obj.shape}
                if obj.layout is sparse_coo:
                    structure.update(indices=obj._indices(), is_coalesced=obj.is_coalesced())
                else:
                    structure.update(compressed_indices=obj._cidx, plain_indices=obj._pidx)
                parts.extend((_STRIDED, structure, obj._vals.detach().requires_grad_(True)))
            return tuple(parts)

        def from_strided_parts(args) -> tuple:
            restored = []
            args = list(args)
            while args:
                a = args.pop(0)
                if a is _STRIDED:
                    structure, values = args.pop(0), args.pop(0)
                    if structure["layout"] is sparse_coo:
                        a = sparse_coo_tensor(structure["indices"], values, structure["shape"],
                                              is_coalesced=structure["is_coalesced"])
                    else:
                        a = sparse_compressed_tensor(structure["compressed_indices"], structure["plain_indices"],
                                                     values, structure["shape"], layout=structure["layout"])
                restored.append(a)
            return tuple(restored)

        def func_wrapper(*args, **kw):
            outputs = func(*from_strided_parts(args), **kw)
            seq = tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)
            strided = tuple(o.to_dense(masked_grad=masked) if isinstance(o, SparseTensor) and o.requires_grad else o
                            for o in seq)
            return strided if isinstance(outputs, (list, tuple)) else strided[0]

        return gradcheck(func_wrapper, as_strided_parts(inputs), **kwargs)

    return gradcheck_with_sparse_support


# ---- check_sparse_tensor_invariants --------------------------------------------------------------


def _always_on_warning(what: str) -> None:
    warnings.warn(f"{what}: Ember always checks sparse tensor invariants (an unchecked index could read or write "
                  f"out of bounds), so checks cannot be disabled; this does nothing", UserWarning, stacklevel=3)


class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """torch.sparse.check_sparse_tensor_invariants: the switch for checking sparse tensors'
    invariants in their constructors, as a context manager, a decorator or through the static
    enable() / disable() / is_enabled().

    In Ember the checks are always on: every sparse constructor validates its indices (PyTorch
    checks only when enabled, and by default it is not), whatever this switch or a constructor's
    check_invariants says, because kernels index with what the constructors accepted and an
    unchecked tensor could make them read or write out of bounds. So is_enabled() is always True,
    enable() and entering with enable=True do nothing, and disable() or entering with enable=False
    warn and do nothing."""

    @staticmethod
    def is_enabled() -> builtins.bool:
        """True: Ember's sparse constructors always check their invariants."""
        return True

    @staticmethod
    def enable() -> None:
        """Checks are always on in Ember: nothing to do."""

    @staticmethod
    def disable() -> None:
        """A no-op that warns: Ember's checks cannot be switched off."""
        _always_on_warning("check_sparse_tensor_invariants.disable()")

    def __init__(self, enable=True) -> None:
        self.state = enable
        self.saved_state: builtins.bool | None = None

    def __enter__(self) -> None:
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a different context manager "
                               "instance for context nesting.")
        self.saved_state = self.is_enabled()
        if not self.state:
            _always_on_warning("check_sparse_tensor_invariants(enable=False)")

    def __exit__(self, type, value, traceback) -> None:  # noqa: A002 - the context manager protocol's names
        if self.saved_state is None:
            raise AssertionError("saved_state should not be None on exit")
        self.saved_state = None

    def __call__(self, mth):
        @functools.wraps(mth)
        def test_mth(*args, **kwargs):
            with type(self)(self.state):
                return mth(*args, **kwargs)

        return test_mth


# ---- legacy typed constructors: torch.sparse.FloatTensor & co. -----------------------------------


class _SparseTypeMeta(type):
    """torch.sparse.FloatTensor & co.: isinstance checks for a COO tensor of that dtype, and calling
    one is the legacy constructor."""

    def __instancecheck__(cls, obj) -> builtins.bool:
        return isinstance(obj, SparseTensor) and obj.layout is sparse_coo and obj.dtype == cls.dtype

    def __call__(cls, *args, **kwargs) -> SparseTensor:
        return _legacy_new(cls, args, kwargs)

    def __repr__(cls) -> str:
        return f"<class 'ember.sparse.{cls.__name__}'>"


def _is_int(a) -> builtins.bool:
    return isinstance(a, numbers.Integral) and not isinstance(a, builtins.bool)


def _invalid(args, kwargs=None) -> TypeError:
    names = ", ".join(["Tensor" if isinstance(a, _C.Tensor) else type(a).__name__ for a in args] +
                      [f"{k}={type(v).__module__}.{type(v).__name__}" for k, v in (kwargs or {}).items()])
    return TypeError(f"new() received an invalid combination of arguments - got ({names}), but expected one of: "
                     f"(*, ember.device device), (Tensor indices, Tensor values, *, ember.device device), "
                     f"(Tensor indices, Tensor values, tuple of ints size, *, ember.device device), "
                     f"(tuple of ints size, *, ember.device device)")


def _deprecated(cls, form: str, replacement: str) -> None:
    warnings.warn(f"ember.sparse.{cls.__name__}({form}) is deprecated.  Please use ember.sparse_coo_tensor("
                  f"{replacement}).", UserWarning, stacklevel=4)


def _legacy_new(cls, args: tuple, kwargs: dict) -> SparseTensor:
    device = kwargs.pop("device", None)
    if kwargs:
        raise _invalid(args, kwargs)
    if device is not None and _C.device(device).type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {_C.device(device).type} "
                           f"was passed")
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and not isinstance(args[0], ember.Size):
        raise TypeError(f"ember.sparse.{cls.__name__}(sequence) only accepts sizes.  Please use "
                        f"ember.sparse_coo_tensor() or construct a strided tensor and convert it to sparse via "
                        f"to_sparse.")
    if len(args) == 1 and isinstance(args[0], ember.Size):
        args, form = tuple(args[0]), "shape, *, device="
    else:
        form = "shape, *, device=" if args else "*, device="
    if args and all(isinstance(a, numbers.Number) for a in args) and not all(_is_int(a) for a in args):
        pos, bad = next((p, a) for p, a in enumerate(args) if not _is_int(a))
        raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos + 1} with error \"type must be "
                        f"tuple of ints,but got {type(bad).__name__}\"")
    if all(_is_int(a) for a in args):  # a shape (none: the empty 1-D tensor)
        if args:
            _deprecated(cls, form, "shape, dtype=, device=")
        else:
            _deprecated(cls, "", "(0,), dtype=")
            args = (0,)
        size = tuple(int(a) for a in args)
        for s in size:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        return SparseTensor._coo(_C.zeros([len(size), 0], dtype=_C.int64), _C.zeros([0], dtype=cls.dtype), size,
                                 True)
    if len(args) in (2, 3) and isinstance(args[0], _C.Tensor) and isinstance(args[1], _C.Tensor):
        indices, values = args[0], args[1]
        size = None
        if len(args) == 3:
            size = args[2]
            if not isinstance(size, (tuple, list)) or not all(_is_int(s) for s in size):
                raise _invalid(args)
            _deprecated(cls, "indices, values, shape, *, device=", "indices, values, shape, dtype=, device=")
        else:
            _deprecated(cls, "indices, values, *, device=", "indices, values, dtype=, device=")
        if indices.dtype != _C.int64:
            raise RuntimeError("indices must be an int64 tensor")
        # as PyTorch: the values keep their dtype, whichever typed class is called
        return sparse_coo_tensor(indices, values, size)
    raise _invalid(args)


def _sparse_type(name: str, dtype) -> type:
    return _SparseTypeMeta(name, (), {
        "dtype": dtype, "is_sparse": True, "layout": sparse_coo, "__module__": "ember.sparse",
        "__doc__": f"ember.sparse.{name}(indices, values[, size]) or ember.sparse.{name}(*size): the legacy "
                   f"sparse COO constructor (deprecated: use ember.sparse_coo_tensor). isinstance(t, "
                   f"ember.sparse.{name}) is true for a COO tensor of dtype {dtype}. As in PyTorch, the "
                   f"(indices, values) forms keep the values' dtype; unlike PyTorch, the indices are checked."})


_LEGACY = [("FloatTensor", _C.float32), ("DoubleTensor", _C.float64), ("HalfTensor", _C.float16),
           ("BFloat16Tensor", _C.bfloat16), ("ByteTensor", _C.uint8), ("CharTensor", _C.int8),
           ("ShortTensor", _C.int16), ("IntTensor", _C.int32), ("LongTensor", _C.int64)]
LEGACY_TYPES = {name: _sparse_type(name, dtype) for name, dtype in _LEGACY}
