"""Ember's sparse tensors (PyTorch's sparse_coo layout and the compressed sparse_csr, sparse_csc,
sparse_bsr and sparse_bsc layouts).

A SparseTensor is a Python object over ordinary strided ember tensors: a COO tensor keeps
`indices` (int64, [sparse_dim, nnz]) and `values` ([nnz, *dense_shape]); a compressed tensor is a
2-D matrix that keeps compressed indices (crow_indices / ccol_indices), plain indices (col_indices /
row_indices) and values ([nnz] for CSR/CSC, [nnz, *blocksize] for BSR/BSC). Every kernel is a composition of ember ops
(index_add, index_select, argsort...), so autograd flows through `values` with no custom backward,
and every index is validated when the tensor is built (and again by the ops themselves), so a bad
index is an error, never a wild read or write.
"""

from __future__ import annotations

import builtins
import math

import ember

from .. import _C


class layout:
    """A tensor layout: ember.strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc or
    jagged (torch.layout)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name  # pickles as the module-level singleton of that name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")  # nested tensors' packed layout (ember.nested); no sparse tensor has it
# how PyTorch's error messages spell each layout
_LAYOUT_WORD = {strided: "Strided", sparse_coo: "Sparse", sparse_csr: "SparseCsr", sparse_csc: "SparseCsc",
                sparse_bsr: "SparseBsr", sparse_bsc: "SparseBsc"}
_COMPRESSED = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
_ROW_MAJOR = (sparse_csr, sparse_bsr)  # compressed over rows (the others over columns)
_BLOCKED = (sparse_bsr, sparse_bsc)
# (compressed, plain) index names, the compressed dimension's name in shape errors, the transpose
_PARTS = {sparse_csr: ("crow_indices", "col_indices"), sparse_bsr: ("crow_indices", "col_indices"),
          sparse_csc: ("ccol_indices", "row_indices"), sparse_bsc: ("ccol_indices", "row_indices")}
_MAJOR_WORD = {sparse_csr: "rows", sparse_csc: "columns", sparse_bsr: "row blocks", sparse_bsc: "column blocks"}
_TRANSPOSED = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc, sparse_bsc: sparse_bsr}


# what PyTorch's resize errors suggest instead
_RESIZE_OPTIONS = (
    "You could try the following options:\n"
    "1. If you need an empty sparse tensor of this size, call `x = torch.sparse_coo_tensor(size)`.\n"
    "2. If you need to resize this tensor, you have the following options:\n"
    "    1. For both sparse and dense dimensions, keep the number of them constant and the size of them "
    "non-shrinking, and then try the same call again.\n"
    "    2. Or, create a new sparse tensor with the correct indices and values from this sparse tensor.")


def _layout_error(fn: str, wanted: str, actual: layout) -> RuntimeError:
    return RuntimeError(f"{fn} expected {wanted} layout but got {_LAYOUT_WORD[actual]}")


def _numel(shape) -> int:
    return math.prod(shape)


def _linear(indices, sizes):
    """Row-major position of each column of `indices` ([k, nnz]) in a tensor of shape `sizes`."""
    lin = _C.zeros([indices.shape[1]], dtype=_C.int64)
    for d, s in enumerate(sizes):
        lin = lin * s + indices[d]
    return lin


def _group_sorted(keys):
    """Sorts the columns of `keys` ([k, n] int64) lexicographically. Returns (perm, new_group,
    group_id): the sorting permutation, a bool mask of the sorted columns that start a new distinct
    key, and each sorted column's group number. Stable sorts key by key, so no linearized index can
    overflow."""
    n = keys.shape[1]
    perm = _C.arange(0, n, 1, dtype=_C.int64)
    for d in range(keys.shape[0] - 1, -1, -1):
        perm = perm.index_select(0, ember.argsort(keys[d].index_select(0, perm), stable=True))
    ordered = keys.index_select(1, perm)
    if keys.shape[0] == 0:  # every column is the same (empty) key
        new_group = _C.arange(0, n, 1, dtype=_C.int64) == 0
    else:
        changed = (ordered[:, 1:] != ordered[:, :-1]).any(0)
        new_group = ember.cat([_C.ones([min(n, 1)], dtype=_C.bool), changed])
    group_id = ember.cumsum(new_group.long(), 0) - 1
    return perm, new_group, group_id


class SparseTensor:
    """A sparse COO or compressed (CSR, CSC, BSR, BSC) tensor, what torch.sparse_coo_tensor and
    torch.sparse_compressed_tensor return.

    Not a subclass of ember.Tensor: dense-only ops reject it with a TypeError instead of reading
    its buffers as if they were strided. Build one with ember.sparse_coo_tensor,
    ember.sparse_compressed_tensor (and its per-layout forms) or Tensor.to_sparse()."""

    def __init__(self, layout_: layout, size, values, indices=None, compressed=None, plain=None,
                 coalesced: builtins.bool = False) -> None:
        self._layout = layout_
        self._size = tuple(int(s) for s in size)
        self._vals = values
        self._idx = indices
        self._cidx = compressed  # crow_indices (CSR, BSR) or ccol_indices (CSC, BSC)
        self._pidx = plain  # col_indices (CSR, BSR) or row_indices (CSC, BSC)
        self._coalesced = coalesced

    # ---- construction helpers (no validation: callers pass consistent parts) -------------------

    @staticmethod
    def _coo(indices, values, size, coalesced=False) -> SparseTensor:
        return SparseTensor(sparse_coo, size, values, indices=indices, coalesced=coalesced)

    @staticmethod
    def _compressed(layout_: layout, compressed, plain, values, size) -> SparseTensor:
        return SparseTensor(layout_, size, values, compressed=compressed, plain=plain)

    @staticmethod
    def _csr(crow, col, values, size) -> SparseTensor:
        return SparseTensor._compressed(sparse_csr, crow, col, values, size)

    def _with_values(self, values) -> SparseTensor:
        """This tensor's pattern with other values (of the same nnz and, if blocked, blocksize)."""
        if self._layout in _COMPRESSED:
            return SparseTensor._compressed(self._layout, self._cidx, self._pidx, values, self._size)
        return SparseTensor._coo(self._idx, values, self._size[:self.sparse_dim()] + tuple(values.shape[1:]),
                                 self._coalesced)

    # ---- metadata ------------------------------------------------------------------------------

    @property
    def layout(self) -> layout:
        return self._layout

    @property
    def is_sparse(self) -> builtins.bool:
        return self._layout is sparse_coo

    @property
    def is_sparse_csr(self) -> builtins.bool:
        return self._layout is sparse_csr

    @property
    def shape(self) -> tuple:
        return self._size

    def size(self, dim=None):
        if dim is None:
            return self._size
        return self._size[dim]

    def dim(self) -> int:
        return len(self._size)

    ndim = property(dim)

    def numel(self) -> int:
        return _numel(self._size)

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def is_cuda(self) -> builtins.bool:
        return self._vals.is_cuda

    def is_floating_point(self) -> builtins.bool:
        return self._vals.is_floating_point()

    def is_complex(self) -> builtins.bool:
        return self._vals.is_complex()

    def sparse_dim(self) -> int:
        return 2 if self._layout in _COMPRESSED else self._idx.shape[0]

    def dense_dim(self) -> int:
        # a BSR/BSC value is a [nnz, *blocksize] tensor: the block dimensions are not dense ones
        return self._vals.dim() - (3 if self._layout in _BLOCKED else 1)

    def _blocksize(self) -> tuple:
        return tuple(self._vals.shape[1:3]) if self._layout in _BLOCKED else (1, 1)

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def is_coalesced(self) -> builtins.bool:
        if self._layout is not sparse_coo:
            raise _layout_error("is_coalesced", "sparse coordinate tensor", self._layout)
        return self._coalesced

    def _coalesced_(self, coalesced: builtins.bool) -> SparseTensor:
        if self._layout is not sparse_coo:
            raise _layout_error("_coalesced_", "sparse coordinate tensor", self._layout)
        self._coalesced = builtins.bool(coalesced)
        return self

    # ---- parts ---------------------------------------------------------------------------------

    def _indices(self):
        if self._layout is not sparse_coo:
            raise _layout_error("_indices", "sparse coordinate tensor", self._layout)
        return self._idx

    def _values(self):
        if self._layout is not sparse_coo:
            raise _layout_error("_values", "sparse coordinate tensor", self._layout)
        return self._vals

    def indices(self):
        if self._layout is not sparse_coo:
            raise _layout_error("indices", "sparse coordinate tensor", self._layout)
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self):
        if self._layout is sparse_coo and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def crow_indices(self):
        if self._layout not in _ROW_MAJOR:
            raise _layout_error("crow_indices", "sparse row compressed tensor", self._layout)
        return self._cidx

    def col_indices(self):
        if self._layout not in _ROW_MAJOR:
            raise _layout_error("col_indices", "sparse row compressed tensor", self._layout)
        return self._pidx

    def ccol_indices(self):
        if self._layout not in (sparse_csc, sparse_bsc):
            raise _layout_error("ccol_indices", "sparse column compressed tensor", self._layout)
        return self._cidx

    def row_indices(self):
        if self._layout not in (sparse_csc, sparse_bsc):
            raise _layout_error("row_indices", "sparse column compressed tensor", self._layout)
        return self._pidx

    # ---- autograd ------------------------------------------------------------------------------

    @property
    def requires_grad(self) -> builtins.bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: builtins.bool = True) -> SparseTensor:
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> builtins.bool:
        return self._vals.is_leaf

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @property
    def grad(self):
        """A leaf's gradient: sparse, with this tensor's coalesced pattern (as PyTorch gives it).
        Duplicate entries each carry the full gradient at their position (the tensor depends on
        their sum), so a position's gradient is their mean, not their sum."""
        g = self._vals.grad if self._vals.is_leaf else None
        if g is None:
            return None
        out = self._with_values(g)
        if self._layout in _COMPRESSED or self._coalesced:
            return out
        out = out.coalesce()
        counts = self._with_values(_C.ones([self._nnz()], dtype=g.dtype)).coalesce()._vals
        return out._with_values(out._vals / counts.reshape([-1] + [1] * (g.dim() - 1)))

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            raise RuntimeError("assigning a gradient to a sparse tensor is not supported in Ember; set it to None")
        self._vals.grad = None

    def detach(self) -> SparseTensor:
        return self._with_values(self._vals.detach())

    def clone(self) -> SparseTensor:
        out = self._with_values(self._vals.clone())
        if self._layout is sparse_coo:
            out._idx = self._idx.clone()
        else:
            out._cidx, out._pidx = self._cidx.clone(), self._pidx.clone()
        return out

    def to(self, *args, dtype=None, **kwargs) -> SparseTensor:
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif not (a is None or str(a).startswith("cpu")):
                raise NotImplementedError(f"sparse tensors live on the cpu in Ember, cannot move to {a}")
        return self if dtype is None or dtype == self.dtype else self._with_values(self._vals.to(dtype))

    def double(self) -> SparseTensor:
        return self.to(_C.float64)

    def float(self) -> SparseTensor:
        return self.to(_C.float32)

    def cpu(self) -> SparseTensor:
        return self

    # ---- conversions ---------------------------------------------------------------------------

    def coalesce(self) -> SparseTensor:
        """Sorted, duplicate-free indices; the values of duplicates are summed."""
        if self._layout is not sparse_coo:
            raise _layout_error("coalesce", "sparse coordinate tensor", self._layout)
        if self._coalesced:
            return self
        if self._nnz() == 0:
            return SparseTensor._coo(self._idx, self._vals, self._size, True)
        perm, new_group, group_id = _group_sorted(self._idx)
        indices = self._idx.index_select(1, perm)[:, new_group]
        n = indices.shape[1]
        values = _C.zeros([n, *self._vals.shape[1:]], dtype=self.dtype).index_add(
            0, group_id, self._vals.index_select(0, perm))
        return SparseTensor._coo(indices, values, self._size, True)

    def _coo_form(self) -> SparseTensor:
        """This tensor in the COO layout, coalesced: compressed indices expanded, and every entry of
        a stored block kept (explicit zeros included), as PyTorch's conversion keeps them."""
        if self._layout is sparse_coo:
            return self
        coo = self._entries()
        return coo if coo._coalesced else coo.coalesce()  # no duplicates (the invariants forbid them): only sorts

    def _entries(self) -> SparseTensor:
        """_coo_form without the sort, for kernels that do not care about order (to_dense, mm)."""
        if self._layout is sparse_coo:
            return self
        row_major = self._layout in _ROW_MAJOR
        nmajor = self._cidx.shape[0] - 1
        major = ember.repeat_interleave(_C.arange(0, nmajor, 1, dtype=_C.int64), ember.diff(self._cidx.long()))
        minor = self._pidx.long()
        rows, cols = (major, minor) if row_major else (minor, major)
        values = self._vals
        if self._layout in _BLOCKED:
            br, bc = self._blocksize()
            within_r = _C.arange(0, br, 1, dtype=_C.int64).repeat_interleave(bc)  # block entries, row-major
            within_c = _C.arange(0, bc, 1, dtype=_C.int64).repeat(br)
            rows = (rows * br).unsqueeze(1) + within_r
            cols = (cols * bc).unsqueeze(1) + within_c
            rows, cols, values = rows.reshape([-1]), cols.reshape([-1]), values.reshape([-1])
        elif row_major:  # CSR is already in row-major order
            return SparseTensor._coo(ember.stack([rows, cols]), values, self._size, True)
        return SparseTensor._coo(ember.stack([rows, cols]), values, self._size)

    def to_dense(self, dtype=None, *, masked_grad: builtins.bool = True):
        """The strided tensor; differentiable with respect to the values."""
        coo = self._entries()
        sd = coo.sparse_dim()
        sparse_sizes, dense_sizes = list(self._size[:sd]), list(self._size[sd:])
        out = _C.zeros([_numel(sparse_sizes), *dense_sizes], dtype=self.dtype)
        out = out.index_add(0, _linear(coo._idx, sparse_sizes), coo._vals).reshape(list(self._size))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        source = _LAYOUT_WORD[self._layout]
        fn = "sparse_coo_to_sparse" if self._layout is sparse_coo else "sparse_compressed_to_sparse"
        if layout not in (None, *_LAYOUT_WORD):
            raise NotImplementedError(f"to_sparse: Ember supports the strided, sparse_coo, sparse_csr, sparse_csc, "
                                      f"sparse_bsr and sparse_bsc layouts, not {layout}")
        target = sparse_coo if layout is None else layout
        # PyTorch names the generic conversion in these errors, or to_sparse for one to the same layout
        _check_blocksize_given("to_sparse" if target is self._layout else fn, source, target, blocksize)
        if target is strided:
            return self.to_dense()
        if target in _COMPRESSED:
            return self._to_compressed(target, blocksize, dense_dim, fn)
        coo = self._coo_form()
        if sparse_dim is not None and sparse_dim != coo.sparse_dim():
            if self._layout is sparse_coo:
                raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                                   "!=self.sparse_dim() is not supported")
            raise RuntimeError(f"{fn}: conversion from {source} to Sparse with sparse_dim argument !=2 is not "
                               f"supported")
        return coo

    def to_sparse_coo(self) -> SparseTensor:
        return self._coo_form()

    def to_sparse_csr(self, dense_dim=None) -> SparseTensor:
        return self._to_compressed(sparse_csr, None, dense_dim)

    def to_sparse_csc(self, dense_dim=None) -> SparseTensor:
        return self._to_compressed(sparse_csc, None, dense_dim)

    def to_sparse_bsr(self, blocksize, dense_dim=None) -> SparseTensor:
        return self._to_compressed(sparse_bsr, blocksize, dense_dim)

    def to_sparse_bsc(self, blocksize, dense_dim=None) -> SparseTensor:
        return self._to_compressed(sparse_bsc, blocksize, dense_dim)

    def _to_compressed(self, target: layout, blocksize, dense_dim, generic=None) -> SparseTensor:
        """This tensor in a compressed layout, its stored pattern kept (a block is stored when any of
        its entries is). Conversions PyTorch refuses (block <-> non-block, a changed blocksize) are
        refused with its messages, which name `generic` when called through to_sparse(layout=)."""
        name = target._name
        source = self._layout
        if source is sparse_coo:
            fn = generic or f"coo_to_{name}"
            if self.sparse_dim() != 2:
                raise RuntimeError(f"{fn}: conversion from Sparse to {_LAYOUT_WORD[target]} for input tensors with "
                                   f"sparse_dim()!=2 is not supported")
        else:
            fn = generic or f"sparse_compressed_to_{name}"
            if source in _BLOCKED and target not in _BLOCKED:
                raise RuntimeError(f"sparse_compressed_to_{name}: expected SparseCsr or SparseCsc layout but got "
                                   f"{_LAYOUT_WORD[source]}")
        if target in _BLOCKED:
            if source in _BLOCKED and _blocksize_tuple(blocksize) != self._blocksize():
                same = ("to_sparse" if generic else f"to_{name}") if source is target else fn
                raise RuntimeError(f"{same}: conversion from {_LAYOUT_WORD[source]} to {_LAYOUT_WORD[target]} with "
                                   f"blocksize changed from {list(self._blocksize())} to "
                                   f"{list(_blocksize_tuple(blocksize))} is not supported")
            blocksize = _check_blocksize(fn, blocksize, self._size)
        if dense_dim or self.dense_dim():
            raise NotImplementedError(f"{fn}: hybrid sparse compressed tensors (with dense dimensions) are not "
                                      f"supported in Ember; got dense_dim={dense_dim or self.dense_dim()}")
        if source is target:
            return self
        return _compress(self._coo_form(), target, blocksize, self._cidx.dtype if self._cidx is not None else None)

    # ---- in-place updates (what optimizers need for sparse momentum buffers and zero_grad) -----

    def zero_(self) -> SparseTensor:
        self._vals = _C.zeros([0, *self._vals.shape[1:]], dtype=self.dtype)
        if self._layout is sparse_coo:
            self._idx = _C.zeros([self.sparse_dim(), 0], dtype=_C.int64)
            self._coalesced = True
        else:
            self._cidx = _C.zeros_like(self._cidx)
            self._pidx = _C.zeros([0], dtype=self._pidx.dtype)
        return self

    def _assign(self, other: SparseTensor) -> SparseTensor:
        self._vals, self._idx, self._cidx, self._pidx = other._vals, other._idx, other._cidx, other._pidx
        self._coalesced = other._coalesced
        return self

    def mul_(self, other) -> SparseTensor:
        return self._assign(self.mul(other))

    def add_(self, other, *, alpha=1) -> SparseTensor:
        return self._assign(self.add(other, alpha=alpha))

    def div_(self, other) -> SparseTensor:
        return self._assign(self.div(other))

    # ---- arithmetic ----------------------------------------------------------------------------

    def add(self, other, *, alpha=1) -> SparseTensor:
        if not isinstance(other, SparseTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if self._size != other._size:
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(self._size)} != "
                               f"{list(other._size)}")
        a, b = self._coo_form(), other._coo_form()
        if a.sparse_dim() != b.sparse_dim():
            raise RuntimeError(f"add: expected 'self' and 'other' to have the same sparse_dim, but got "
                               f"{a.sparse_dim()} and {b.sparse_dim()}")
        dtype = ember.result_type(self._vals, other._vals)
        vb = b._vals if alpha == 1 else b._vals * alpha
        if a._idx.shape == b._idx.shape and ember.equal(a._idx, b._idx):
            # the same pattern: PyTorch adds the values and keeps it (so repeated accumulation of
            # one batch's gradient does not grow)
            out = SparseTensor._coo(a._idx, a._vals.to(dtype) + vb.to(dtype), self._size, a._coalesced)
            return _same_layout_as(out, self, other)
        out = SparseTensor._coo(ember.cat([a._idx, b._idx], 1), ember.cat([a._vals.to(dtype), vb.to(dtype)]),
                                self._size)
        if a._coalesced and b._coalesced:  # as PyTorch, coalesced + coalesced stays coalesced
            out = out.coalesce()
        return _same_layout_as(out, self, other)

    def sub(self, other, *, alpha=1) -> SparseTensor:
        if not isinstance(other, SparseTensor):
            raise RuntimeError("sub(sparse, dense) is not supported. Use sub(dense, sparse) instead.")
        return self.add(other, alpha=-alpha)

    def mul(self, other) -> SparseTensor:
        """By a number, a 0-dim tensor, or a dense tensor of this shape (sparse result)."""
        if isinstance(other, SparseTensor):
            raise NotImplementedError("mul of two sparse tensors is not supported in Ember; "
                                      "multiply by a number or a dense tensor")
        if isinstance(other, _C.Tensor) and other.dim() > 0:
            if tuple(other.shape) != self._size:
                raise RuntimeError(f"mul: expected 'self' and 'other' to have the same size, but self has size "
                                   f"{list(self._size)} while other has size {list(other.shape)}")
            coo = self._coo_form()
            sd = coo.sparse_dim()
            picked = other.reshape([_numel(self._size[:sd]), *self._size[sd:]]).index_select(
                0, _linear(coo._idx, self._size[:sd]))
            return SparseTensor._coo(coo._idx, coo._vals * picked, self._size, coo._coalesced)
        return self._with_values(self._vals * other)

    def div(self, other) -> SparseTensor:
        if isinstance(other, SparseTensor) or (isinstance(other, _C.Tensor) and other.dim() > 0):
            raise NotImplementedError("sparse division is supported by a number or a 0-dim tensor only")
        return self._with_values(self._vals / other)

    def neg(self) -> SparseTensor:
        return self._with_values(-self._vals)

    def __add__(self, other):
        return self.add(other)

    def __radd__(self, other):  # dense + sparse: a dense result
        if isinstance(other, _C.Tensor):
            return _dense_plus_sparse(other, self)
        return NotImplemented

    def __sub__(self, other):
        return self.sub(other)

    def __rsub__(self, other):
        if isinstance(other, _C.Tensor):
            return _dense_plus_sparse(other, self, -1)
        return NotImplemented

    def __mul__(self, other):
        return self.mul(other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self.div(other)

    def __neg__(self):
        return self.neg()

    def __matmul__(self, other):
        if isinstance(other, _C.Tensor) and other.dim() == 1:
            return mm(self, other.unsqueeze(1)).squeeze(1)
        return mm(self, other)

    def mm(self, mat2):
        return mm(self, mat2)

    def smm(self, mat):
        return smm(self, mat)

    # ---- in-place resizing (COO) ---------------------------------------------------------------

    def sparse_resize_(self, size, sparse_dim: int, dense_dim: int) -> SparseTensor:
        """Resizes this COO tensor in place to `size` with `sparse_dim` sparse and `dense_dim`
        dense dimensions. With no stored elements anything consistent goes; with some, the
        numbers of sparse and dense dimensions stay and no size shrinks (RuntimeError, with
        PyTorch's message). Values grown along a dense dimension get zeros there (PyTorch leaves
        their memory unset)."""
        size = self._checked_resize("sparse_resize_", size, sparse_dim, dense_dim)
        if self._nnz() == 0:
            return self._clear_to(size, sparse_dim)
        for what, old, new in (("sparse dimensions", self.sparse_dim(), sparse_dim),
                               ("dense dimensions", self.dense_dim(), dense_dim)):
            if old != new:
                raise RuntimeError(f"changing the number of {what} (from {old} to {new}) on a non-empty sparse "
                                   f"tensor is not supported.\n{_RESIZE_OPTIONS}")
        for what, old, new in (("sparse", self._size[:sparse_dim], size[:sparse_dim]),
                               ("dense", self._size[sparse_dim:], size[sparse_dim:])):
            if any(n < o for o, n in zip(old, new, strict=True)):
                raise RuntimeError(f"shrinking the size of {what} dimensions (from {list(old)} to {list(new)}) on a "
                                   f"non-empty sparse tensor is not supported.\n{_RESIZE_OPTIONS}")
        if size[sparse_dim:] != self._size[sparse_dim:]:
            grown = _C.zeros([self._nnz(), *size[sparse_dim:]], dtype=self._vals.dtype)
            grown[(slice(None), *(slice(0, n) for n in self._size[sparse_dim:]))] = self._vals
            self._vals = grown
        self._size = size
        return self

    def sparse_resize_and_clear_(self, size, sparse_dim: int, dense_dim: int) -> SparseTensor:
        """Removes every stored element, then resizes as sparse_resize_ (any consistent size)."""
        size = self._checked_resize("sparse_resize_and_clear_", size, sparse_dim, dense_dim)
        return self._clear_to(size, sparse_dim)

    def resize_as_sparse_(self, other) -> SparseTensor:
        """sparse_resize_ to `other`'s size and numbers of sparse and dense dimensions."""
        target = (tuple(other.shape), other.sparse_dim(), other.dense_dim())
        if target != (self._size, self.sparse_dim(), self.dense_dim()):
            self.sparse_resize_(*target)
        return self

    def _checked_resize(self, fn: str, size, sparse_dim: int, dense_dim: int) -> tuple:
        if self._layout is not sparse_coo:
            raise NotImplementedError(f"Could not run 'aten::{fn}' with arguments from the "
                                      f"'{_LAYOUT_WORD[self._layout]}' layout: it resizes a sparse COO tensor")
        size = tuple(int(n) for n in size)
        if len(size) != sparse_dim + dense_dim:
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                               f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
        if any(n < 0 for n in size):
            raise RuntimeError(f"{fn}: negative size in {list(size)}")
        return size

    def _clear_to(self, size: tuple, sparse_dim: int) -> SparseTensor:
        self._idx = _C.zeros([sparse_dim, 0], dtype=_C.int64)
        self._vals = _C.zeros([0, *size[sparse_dim:]], dtype=self._vals.dtype)
        self._size, self._coalesced = size, True
        return self

    def sspaddmm(self, mat1, mat2, *, beta=1, alpha=1):
        return sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def matmul(self, other):
        return self @ other

    def __rmatmul__(self, other):  # dense @ sparse = (sparse^T @ dense^T)^T
        if not isinstance(other, _C.Tensor):
            return NotImplemented
        return mm(self._entries().t(), other.t()).t()

    def t(self) -> SparseTensor:
        if self.dim() != 2 or self.dense_dim() != 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is "
                               f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions")
        if self._layout in _COMPRESSED:  # as PyTorch: the same indices read the other way (CSR <-> CSC)
            values = self._vals.transpose(1, 2) if self._layout in _BLOCKED else self._vals
            return SparseTensor._compressed(_TRANSPOSED[self._layout], self._cidx, self._pidx, values,
                                            self._size[::-1])
        coo = self._coo_form()
        return SparseTensor._coo(coo._idx.flip(0), coo._vals, self._size[::-1])

    def sum(self, dim=None, keepdim: builtins.bool = False, dtype=None):
        if keepdim:
            raise NotImplementedError("sum(keepdim=True) of a sparse tensor is not supported in Ember")
        return sum(self, dim, dtype=dtype)

    def __repr__(self) -> str:
        extra = ", requires_grad=True" if self.requires_grad and self.grad_fn is None else ""
        if self.grad_fn is not None:
            extra = f", grad_fn=<{self.grad_fn.name()}>"
        if self._layout in _COMPRESSED:
            cname, pname = _PARTS[self._layout]
            named = [(cname, self._cidx), (pname, self._pidx), ("values", self._vals.detach())]
        else:
            named = [("indices", self._idx), ("values", self._vals.detach())]
        # as PyTorch: each part's continuation lines line up under its first line
        parts = ",\n       ".join(f"{name}=" + _indent(repr(t), 8 + len(name)) for name, t in named)
        return f"tensor({parts},\n       size={self._size}, nnz={self._nnz()}, layout={self._layout}{extra})"


def _indent(text: str, width: int) -> str:
    """Continuation lines indented by width; blank lines (between a block's slices) stay empty."""
    return "\n".join(line if not i or not line else " " * width + line for i, line in enumerate(text.split("\n")))


def _dense_plus_sparse(dense, sp: SparseTensor, alpha=1):
    if tuple(dense.shape) != sp._size:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(dense.shape)} while other has size {list(sp._size)} (FYI: dense-sparse "
                           f"addition does not currently support broadcasting)")
    other = sp.to_dense()
    return dense + other if alpha == 1 else dense + other * alpha


def _dense_add_(dense, sp: SparseTensor, alpha=1) -> None:
    """dense += alpha * sp in place, touching only sp's rows (what optimizers do with sparse grads)."""
    coo = sp._coo_form()
    sd = coo.sparse_dim()
    vals = coo._vals if alpha == 1 else coo._vals * alpha
    if dense.is_contiguous():
        flat = dense.view([_numel(sp._size[:sd]), *sp._size[sd:]])
        flat.index_add_(0, _linear(coo._idx, sp._size[:sd]), vals.to(dense.dtype))
    else:
        dense.add_(SparseTensor._coo(coo._idx, vals, sp._size).to_dense().to(dense.dtype))


def _sparse_mask(dense, mask: SparseTensor) -> SparseTensor:
    """The entries of `dense` at the pattern of `mask` (Tensor.sparse_mask)."""
    if not isinstance(mask, SparseTensor):
        raise RuntimeError("sparse_mask expects mask to be a sparse tensor")
    if tuple(dense.shape) != mask._size:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(dense.shape)} "
                           f"but mask has size {list(mask._size)}")
    coo = mask._coo_form()
    sd = coo.sparse_dim()
    picked = dense.reshape([_numel(mask._size[:sd]), *mask._size[sd:]]).index_select(
        0, _linear(coo._idx, mask._size[:sd]))
    out = SparseTensor._coo(coo._idx, picked, mask._size, coo._coalesced)
    return _same_layout_as(out, mask, mask)


def _dense_to_sparse(x, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """Tensor.to_sparse: the nonzero entries (rows of the dense part that are not all zero)."""
    if layout not in (None, *_LAYOUT_WORD):
        raise NotImplementedError(f"to_sparse: Ember supports the strided, sparse_coo, sparse_csr, sparse_csc, "
                                  f"sparse_bsr and sparse_bsc layouts, not {layout}")
    target = sparse_coo if layout is None else layout
    _check_blocksize_given("to_sparse" if target is strided else "dense_to_sparse", "Strided", target, blocksize)
    if target is strided:
        return x
    if target in _COMPRESSED:
        if sparse_dim is not None:
            raise TypeError(f"to_sparse: sparse_dim is for the sparse_coo layout, not {layout}")
        return _dense_to_compressed(x, target, blocksize, dense_dim, "dense_to_sparse")
    sd = x.dim() if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= x.dim():
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{x.dim()}] range, but {sd} is given")
    sizes = tuple(x.shape)
    flat = x.reshape([_numel(sizes[:sd]), *sizes[sd:]])
    nonzero = flat.detach() != 0
    if nonzero.dim() > 1:
        nonzero = nonzero.reshape([nonzero.shape[0], -1]).any(1)
    lin = ember.nonzero(nonzero).reshape([-1])
    indices = _C.zeros([sd, lin.shape[0]], dtype=_C.int64)
    rest = lin
    for d in range(sd - 1, -1, -1):  # unravel the row-major positions, last dimension first
        indices[d] = rest % sizes[d]
        rest = ember.div(rest, sizes[d], rounding_mode="floor")
    return SparseTensor._coo(indices, flat.index_select(0, lin), sizes, True)


# ---- compressed layouts: conversions -------------------------------------------------------------


def _same_layout_as(out: SparseTensor, a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """out (COO) back in the layout of a and b when they share a compressed layout (and blocksize)."""
    if a._layout in _COMPRESSED and a._layout is b._layout and a._blocksize() == b._blocksize():
        blocksize = a._blocksize() if a._layout in _BLOCKED else None
        return _compress(out, a._layout, blocksize, a._cidx.dtype)
    return out


def _check_blocksize_given(fn: str, source: str, target: layout, blocksize) -> None:
    wanted = target in _BLOCKED
    if wanted != (blocksize is not None):
        which = "without" if wanted else "with"
        raise RuntimeError(f"{fn}: conversion from {source} to {_LAYOUT_WORD[target]} {which} blocksize argument "
                           f"given is not supported")


def _blocksize_tuple(blocksize) -> tuple:
    if blocksize is None:
        return ()
    if isinstance(blocksize, int):  # PyTorch reads an int as a square block
        return (blocksize, blocksize)
    return tuple(int(b) for b in blocksize)


def _check_blocksize(fn: str, blocksize, size) -> tuple:
    bs = _blocksize_tuple(blocksize)
    if len(bs) != 2:
        raise RuntimeError(f"{fn}: blocksize needs to be a tuple of size 2, but got {len(bs)}")
    if bs[0] <= 0 or bs[1] <= 0:
        raise RuntimeError(f"{fn}: blocksize needs to be positive, but got {list(bs)}")
    if size[0] % bs[0] or size[1] % bs[1]:
        raise RuntimeError(f"{fn}: tensor sparse size ({size[0]},{size[1]}) must be divisible by given blocksize "
                           f"({bs[0]},{bs[1]})")
    return bs


def _compress(coo: SparseTensor, target: layout, blocksize, index_dtype) -> SparseTensor:
    """A 2-D COO tensor with no dense dimensions in a compressed layout. Duplicates are summed; a
    block is stored when any of its entries is (the others are zeros); differentiable in the values."""
    coo = coo.coalesce()  # sorted row-major, duplicates summed
    nrows, ncols = coo._size
    row_major = target in _ROW_MAJOR
    rows, cols, vals = coo._idx[0], coo._idx[1], coo._vals
    br, bc = blocksize if target in _BLOCKED else (1, 1)
    nmajor = nrows // br if row_major else ncols // bc
    if target in _BLOCKED:
        brow = ember.div(rows, br, rounding_mode="floor")
        bcol = ember.div(cols, bc, rounding_mode="floor")
        keys = ember.stack([brow, bcol] if row_major else [bcol, brow])
        if coo._nnz():
            perm, new_group, group = _group_sorted(keys)
            blocks = keys.index_select(1, perm)[:, new_group]  # the distinct blocks, in storage order
            within = (rows % br) * bc + cols % bc  # row-major position inside the block
            slot = group * (br * bc) + within.index_select(0, perm)
            values = _C.zeros([blocks.shape[1] * br * bc], dtype=vals.dtype).index_add(
                0, slot, vals.index_select(0, perm)).reshape([blocks.shape[1], br, bc])
        else:
            blocks, values = keys, _C.zeros([0, br, bc], dtype=vals.dtype)
        major, minor = blocks[0], blocks[1]
    elif row_major:
        major, minor, values = rows, cols, vals
    else:  # column-major order: sort by (column, row)
        perm, _, _ = _group_sorted(ember.stack([cols, rows]))
        major, minor, values = cols.index_select(0, perm), rows.index_select(0, perm), vals.index_select(0, perm)
    counts = ember.bincount(major, minlength=nmajor)
    compressed = ember.cat([_C.zeros([1], dtype=_C.int64), ember.cumsum(counts, 0)])
    if index_dtype is not None and index_dtype != _C.int64:  # PyTorch keeps a compressed source's int32
        compressed, minor = compressed.to(index_dtype), minor.to(index_dtype)
    return SparseTensor._compressed(target, compressed, minor, values, coo._size)


def _dense_to_compressed(x, target: layout, blocksize, dense_dim, fn=None) -> SparseTensor:
    """Tensor.to_sparse_csr / csc / bsr / bsc: the nonzero entries, or the blocks holding any."""
    fn = fn or f"dense_to_{target._name}"
    if x.dim() < 2:
        raise RuntimeError(f"{fn}: expected a tensor with at least 2 dimensions, but got a {x.dim()}-D tensor")
    if dense_dim is not None and dense_dim != 0:
        if not 0 <= dense_dim <= x.dim() - 2:
            raise RuntimeError(f"{fn}: dense_dim argument must be in [0,{x.dim() - 2}] range, but {dense_dim} is "
                               f"given")
        raise NotImplementedError(f"{fn}: hybrid sparse compressed tensors (with dense dimensions) are not "
                                  f"supported in Ember; got dense_dim={dense_dim}")
    if x.dim() > 2:
        raise NotImplementedError(f"{fn}: batched sparse compressed tensors are not supported in Ember; got a "
                                  f"{x.dim()}-D tensor ({x.dim() - 2} batch dimensions), convert each 2-D matrix")
    if target not in _BLOCKED:
        return _compress(_dense_to_sparse(x), target, None, None)
    br, bc = _check_blocksize(fn, blocksize, tuple(x.shape))
    nrows, ncols = x.shape
    blocks = x.reshape([nrows // br, br, ncols // bc, bc]).permute([0, 2, 1, 3])  # [row block, col block, ...]
    if target is sparse_bsc:
        blocks = blocks.transpose(0, 1)
    nmajor, nminor = blocks.shape[0], blocks.shape[1]
    stored = (blocks.detach() != 0).reshape([nmajor, nminor, br * bc]).any(2)
    where = ember.nonzero(stored)  # [nblocks, 2], in (major, minor) order
    major, minor = where[:, 0].contiguous(), where[:, 1].contiguous()
    values = blocks.reshape([nmajor * nminor, br, bc]).index_select(0, major * nminor + minor)
    counts = ember.bincount(major, minlength=nmajor)
    compressed = ember.cat([_C.zeros([1], dtype=_C.int64), ember.cumsum(counts, 0)])
    return SparseTensor._compressed(target, compressed, minor, values, (nrows, ncols))


# ---- validation ----------------------------------------------------------------------------------

def _as_index_tensor(x, what: str):
    t = x if isinstance(x, _C.Tensor) else ember.tensor(x)
    if t.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{what} must be an int64 tensor")
    return t


def _check_coo(indices, values, size) -> tuple:
    """Validates the parts of a COO tensor and returns its size (inferred when None)."""
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sd, nnz = indices.shape
    if values.dim() < 1:
        raise RuntimeError("values must have at least one dimension (nnz), but got a 0-dim tensor")
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {values.shape[0]}")
    dense_sizes = tuple(values.shape[1:])
    lows = indices.min(1).values.tolist() if nnz else [0] * sd
    highs = indices.max(1).values.tolist() if nnz else [-1] * sd
    for d, low in enumerate(lows):
        if low < 0:
            raise RuntimeError(f"found negative index {low} for dim {d}")
    if size is None:  # PyTorch: one past the largest index in each sparse dimension
        return tuple(h + 1 for h in highs) + dense_sizes
    size = tuple(int(s) for s in size)
    if any(s < 0 for s in size):
        raise RuntimeError(f"sparse_coo_tensor: size {list(size)} has a negative dimension")
    if len(size) != sd + len(dense_sizes):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sd}, dense_dim = {len(dense_sizes)}")
    if size[sd:] != dense_sizes:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got {list(values.shape)}")
    for d, high in enumerate(highs):
        if high >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                               f"index {high}")
    return size


def _check_compressed(fn: str, target: layout, cidx, pidx, values, size) -> tuple:
    """Validates the parts of a compressed tensor (always: PyTorch checks only with
    check_invariants=True) and returns its size, inferred when None."""
    cname, pname = _PARTS[target]
    row_major, blocked = target in _ROW_MAJOR, target in _BLOCKED
    if cidx.dim() != pidx.dim():
        raise RuntimeError(f"{cname} and {pname} dimensionalities must be equal but got {cidx.dim()} and "
                           f"{pidx.dim()}, respectively")
    if cidx.dtype != pidx.dtype:
        raise RuntimeError(f"{cname} and {pname} must have the same dtype, bot got {_dtype_word(cidx.dtype)} and "
                           f"{_dtype_word(pidx.dtype)}, respectively")
    if cidx.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{cname} and {pname} dtype must be Int or Long, but got {_dtype_word(cidx.dtype)}")
    if cidx.dim() < 1:
        raise RuntimeError(f"{cname} must have dimensionality >= 1 but got 0")
    block_dims = 2 if blocked else 0
    if values.dim() < 1 + block_dims:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block dimensionalities (=0 + "
                           f"{block_dims}) but got {values.dim()}")
    if cidx.dim() > 1:
        raise NotImplementedError(f"{fn}: batched sparse compressed tensors are not supported in Ember; {cname} "
                                  f"must be 1-D, but got {cidx.dim()}-D")
    if values.dim() > 1 + block_dims:
        raise NotImplementedError(f"{fn}: hybrid sparse compressed tensors (with dense dimensions) are not supported "
                                  f"in Ember; values must be {1 + block_dims}-D, but got {values.dim()}-D")
    nnz = values.shape[0]
    if pidx.shape[0] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by values.shape[0], but got "
                           f"{pidx.shape[0]}")
    br, bc = tuple(values.shape[1:3]) if blocked else (1, 1)
    if br <= 0 or bc <= 0:  # a zero-size block would divide the size by zero
        raise RuntimeError(f"{fn}: expected a positive blocksize, but values has blocks of shape [{br}, {bc}]")
    if size is None:  # PyTorch: the compressed dimension from the indices, one past the largest plain index
        nmajor = max(cidx.shape[0] - 1, 0)
        nminor = int(pidx.max().item()) + 1 if nnz else 0
        size = (nmajor * br, nminor * bc) if row_major else (nminor * br, nmajor * bc)
    size = tuple(int(s) for s in size)
    if len(size) != 2:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense dimensionalities (=0 + 2 + "
                           f"0) but got {len(size)}")
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    for d, b in enumerate((br, bc)):
        if size[d] % b:
            raise RuntimeError(f"tensor shape[{d}] (={size[d]}) must be divisible with blocksize[{d}] (={b}) as "
                               f"defined by values shape")
    nmajor, nminor = (size[0] // br, size[1] // bc) if row_major else (size[1] // bc, size[0] // br)
    minor_word, major_word = ("ncols", "nrows") if row_major else ("nrows", "ncols")
    if cidx.shape[0] != nmajor + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {_MAJOR_WORD[target]} + 1 "
                           f"(={nmajor + 1}), but got {cidx.shape[0]}")
    if int(cidx[0].item()) != 0:
        raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
    if int(cidx[-1].item()) != nnz:
        raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied.")
    steps = ember.diff(cidx)
    if nmajor and not builtins.bool(((steps >= 0) & (steps <= nminor)).all()):
        raise RuntimeError(f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {minor_word}` is not satisfied.")
    if nnz and not builtins.bool(((pidx >= 0) & (pidx < nminor)).all()):
        raise RuntimeError(f"`0 <= {pname} < {minor_word}` is not satisfied.")
    if nnz > 1:  # within a compressed row (column), the plain indices strictly increase
        major = ember.repeat_interleave(_C.arange(0, nmajor, 1, dtype=_C.int64), steps.long())
        same = major[1:] == major[:-1]
        if builtins.bool((same & (pidx[1:] <= pidx[:-1])).any()):
            raise RuntimeError(f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = 1, ..., {major_word} "
                               f"are sorted and distinct along the last dimension values` is not satisfied.")
    return size


_DTYPE_WORDS = {_C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte",
                _C.float32: "Float", _C.float64: "Double", _C.float16: "Half", _C.bfloat16: "BFloat16",
                _C.complex64: "ComplexFloat", _C.complex128: "ComplexDouble", _C.bool: "Bool"}


def _dtype_word(dtype) -> str:
    return _DTYPE_WORDS.get(dtype, str(dtype))


def _prepare_values(values, dtype, requires_grad):
    values = values if isinstance(values, _C.Tensor) else ember.tensor(values, dtype=dtype)
    if dtype is not None and values.dtype != dtype:
        values = values.to(dtype)
    if requires_grad:
        if not (values.dtype.is_floating_point or values.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return values.detach().requires_grad_(True)  # a new leaf, as PyTorch makes the result one
    if values.requires_grad:
        return values.view_as(values)  # not the caller's leaf: the sparse tensor has a history of its own
    return values


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad: builtins.bool = False, check_invariants=None,
                      is_coalesced=None) -> SparseTensor:
    """A COO tensor with values[i] at indices[:, i] (duplicates allowed until coalesce() sums them).
    Ember always checks the indices (PyTorch does with check_invariants=True): never a wild write."""
    if device is not None and _C.device(device).type != "cpu":
        raise NotImplementedError(f"sparse_coo_tensor: not implemented for {_C.device(device)}")
    indices = _as_index_tensor(indices, "indices")
    if not isinstance(values, _C.Tensor):
        values = ember.tensor(values, dtype=dtype)
    size = _check_coo(indices, values, size)
    values = _prepare_values(values, dtype, requires_grad)
    indices = indices.long()  # PyTorch stores int64 indices
    if is_coalesced:  # a claim the kernels would trust (duplicates summed once), so it is checked
        perm, new_group, _ = _group_sorted(indices)
        in_order = builtins.bool((perm == _C.arange(0, perm.shape[0], 1, dtype=_C.int64)).all())
        if not (in_order and builtins.bool(new_group.all())):
            raise RuntimeError("cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor")
    # a 0- or 1-entry tensor is coalesced by construction
    coalesced = builtins.bool(is_coalesced) if is_coalesced is not None else values.shape[0] <= 1
    return SparseTensor._coo(indices, values, size, coalesced)


def _build_compressed(fn: str, target: layout, compressed_indices, plain_indices, values, size, dtype, device,
                      requires_grad) -> SparseTensor:
    if device is not None and _C.device(device).type != "cpu":
        raise NotImplementedError(f"{fn}: not implemented for {_C.device(device)}")
    cidx = compressed_indices if isinstance(compressed_indices, _C.Tensor) else ember.tensor(compressed_indices)
    pidx = plain_indices if isinstance(plain_indices, _C.Tensor) else ember.tensor(plain_indices)
    if not isinstance(values, _C.Tensor):
        values = ember.tensor(values, dtype=dtype)
    size = _check_compressed(fn, target, cidx, pidx, values, size)
    return SparseTensor._compressed(target, cidx, pidx, _prepare_values(values, dtype, requires_grad), size)


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad: builtins.bool = False,
                             check_invariants=None) -> SparseTensor:
    """A 2-D CSR, CSC, BSR or BSC matrix (`layout`): compressed row (column) i holds the plain
    indices plain_indices[compressed_indices[i]:compressed_indices[i + 1]]. The invariants are
    always checked, whatever check_invariants says (an unchecked index could read out of bounds)."""
    if layout not in _COMPRESSED:
        word = "none" if layout is None else _LAYOUT_WORD.get(layout, str(layout))
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout but got {word}")
    return _build_compressed("sparse_compressed_tensor", layout, compressed_indices, plain_indices, values, size,
                             dtype, device, requires_grad)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad: builtins.bool = False, check_invariants=None) -> SparseTensor:
    """A 2-D CSR matrix: row r holds the columns col_indices[crow_indices[r]:crow_indices[r + 1]]."""
    return _build_compressed("sparse_csr_tensor", sparse_csr, crow_indices, col_indices, values, size, dtype,
                             device, requires_grad)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad: builtins.bool = False, check_invariants=None) -> SparseTensor:
    """A 2-D CSC matrix: column c holds the rows row_indices[ccol_indices[c]:ccol_indices[c + 1]]."""
    return _build_compressed("sparse_csc_tensor", sparse_csc, ccol_indices, row_indices, values, size, dtype,
                             device, requires_grad)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad: builtins.bool = False, check_invariants=None) -> SparseTensor:
    """A 2-D BSR matrix of [nnz, *blocksize] values: block row r holds the block columns
    col_indices[crow_indices[r]:crow_indices[r + 1]]."""
    return _build_compressed("sparse_bsr_tensor", sparse_bsr, crow_indices, col_indices, values, size, dtype,
                             device, requires_grad)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad: builtins.bool = False, check_invariants=None) -> SparseTensor:
    """A 2-D BSC matrix of [nnz, *blocksize] values: block column c holds the block rows
    row_indices[ccol_indices[c]:ccol_indices[c + 1]]."""
    return _build_compressed("sparse_bsc_tensor", sparse_bsc, ccol_indices, row_indices, values, size, dtype,
                             device, requires_grad)


# ---- the products and sums SparseTensor's operators use (ember.sparse re-exports them) -------------


def _check_sparse(x, fn: str) -> SparseTensor:
    if not isinstance(x, SparseTensor):
        raise TypeError(f"{fn}: expected a sparse tensor, but got {type(x).__name__}")
    return x


def mm(mat1, mat2):
    """sparse @ dense -> dense, sparse @ sparse -> sparse (coalesced COO); 2-D COO or CSR, no
    dense dimensions. Gradients reach a dense mat2 and the sparse operands' values."""
    mat1 = _check_sparse(mat1, "sparse.mm")
    if isinstance(mat2, SparseTensor):
        return _sparse_sparse_mm(mat1, mat2)
    _check_mm_operands(mat1, mat2)
    if mat1._layout in _BLOCKED:
        return _blocked_mm(mat1, mat2)
    coo = mat1._entries()
    rows, cols = coo._idx[0], coo._idx[1]
    # each stored entry (r, c, v) adds v * mat2[c] to output row r
    contrib = coo._vals.unsqueeze(1) * mat2.index_select(0, cols)
    out = _C.zeros([mat1.shape[0], mat2.shape[1]], dtype=mat2.dtype)
    return out.index_add(0, rows, contrib)


def _blocked_mm(mat1: SparseTensor, mat2):
    """BSR/BSC @ dense a block at a time: each stored block (r, c) adds block @ mat2's block row c
    to the output's block row r (one batched matmul and one index_add of whole blocks)."""
    br, bc = mat1._blocksize()
    nrows, ncols = mat1.shape
    n = mat2.shape[1]
    major = ember.repeat_interleave(_C.arange(0, mat1._cidx.shape[0] - 1, 1, dtype=_C.int64),
                                    ember.diff(mat1._cidx.long()))
    minor = mat1._pidx.long()
    brow, bcol = (major, minor) if mat1._layout is sparse_bsr else (minor, major)
    rhs = mat2.reshape([ncols // bc, bc, n]).index_select(0, bcol)  # [nnz, bc, n]
    out = _C.zeros([nrows // br, br, n], dtype=mat2.dtype)
    return out.index_add(0, brow, ember.matmul(mat1._vals, rhs)).reshape([nrows, n])


def _sparse_sparse_mm(mat1: SparseTensor, mat2: SparseTensor) -> SparseTensor:
    """Each stored a[r, k] meets every stored b[k, c] (b's row k, found through its crow_indices);
    the products are summed per (r, c) by coalescing."""
    for m in (mat1, mat2):
        if m.dim() != 2 or m.dense_dim() != 0:
            raise RuntimeError(f"sparse.mm: expected 2-D sparse matrices with no dense dimensions, but got size "
                               f"{list(m.shape)} with dense_dim {m.dense_dim()}")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_word(mat1.dtype)} but found {_dtype_word(mat2.dtype)}")
    a = mat1._coo_form()
    b = _compress(mat2._coo_form(), sparse_csr, None, _C.int64)  # any layout, blocked included
    crow = b._cidx.long()
    rows_a, k = a._idx[0], a._idx[1]
    counts = crow.index_select(0, k + 1) - crow.index_select(0, k)  # b entries each a entry meets
    entry = ember.repeat_interleave(_C.arange(0, a._nnz(), 1, dtype=_C.int64), counts)
    first = ember.cumsum(counts, 0) - counts  # where each a entry's run of products starts
    within = _C.arange(0, entry.shape[0], 1, dtype=_C.int64) - first.index_select(0, entry)
    b_entry = crow.index_select(0, k.index_select(0, entry)) + within
    indices = ember.stack([rows_a.index_select(0, entry), b._pidx.long().index_select(0, b_entry)])
    values = a._vals.index_select(0, entry) * b._vals.index_select(0, b_entry)
    return SparseTensor._coo(indices, values, (mat1.shape[0], mat2.shape[1])).coalesce()


def _check_mm_operands(mat1: SparseTensor, mat2) -> None:
    if isinstance(mat2, SparseTensor):
        raise NotImplementedError("hspmm/smm: mat2 must be dense")
    if mat1.dim() != 2 or mat1.dense_dim() != 0:
        raise RuntimeError(f"sparse.mm: expected a 2-D sparse matrix with no dense dimensions, but got size "
                           f"{list(mat1.shape)} with dense_dim {mat1.dense_dim()}")
    if mat2.dim() != 2:
        raise RuntimeError(f"addmm: matrices expected, got {mat2.dim()}D tensor")
    if mat2.shape[0] != mat1.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, got {mat2.shape[0]}")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_word(mat1.dtype)} but found {_dtype_word(mat2.dtype)}")


def sum(input, dim=None, dtype=None):  # noqa: A001 - PyTorch's name
    """Sum over all (dim=None: a dense 0-dim tensor) or some dimensions. Summing every sparse
    dimension gives a dense tensor; otherwise the result stays sparse (coalesced)."""
    x = _check_sparse(input, "sparse.sum")
    if dtype is not None:
        x = x.to(dtype)
    coo = x._coo_form()
    if dim is None:
        return coo._vals.sum()
    dims = [dim] if isinstance(dim, int) else list(dim)
    n = x.dim()
    norm = []
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        norm.append(d % n)
    if len(set(norm)) != len(norm):
        raise RuntimeError("sparse.sum: a dimension appears more than once in dim")
    sd = coo.sparse_dim()
    sparse_dims = sorted(d for d in norm if d < sd)
    dense_dims = [d - sd + 1 for d in norm if d >= sd]
    values = coo._vals.sum(dense_dims) if dense_dims else coo._vals
    kept = [d for d in range(sd) if d not in sparse_dims]
    size = [x.shape[d] for d in kept] + [s for i, s in enumerate(x.shape[sd:]) if i + 1 not in dense_dims]
    if not kept:
        return values.sum(0)
    indices = coo._idx.index_select(0, ember.tensor(kept, dtype=_C.int64))
    return SparseTensor._coo(indices, values, size).coalesce()


def hspmm(mat1, mat2):
    """sparse @ dense as a hybrid COO tensor: one sparse dimension (mat1's nonempty rows, sorted)
    and the dense rows of the product. Only those rows are computed."""
    mat1 = _check_sparse(mat1, "hspmm")
    _check_mm_operands(mat1, mat2)
    coo = mat1._coo_form().coalesce()
    rows, inverse = ember.unique(coo._idx[0], sorted=True, return_inverse=True)
    contrib = coo._vals.unsqueeze(1) * mat2.index_select(0, coo._idx[1])
    values = _C.zeros([rows.shape[0], mat2.shape[1]], dtype=mat2.dtype).index_add(0, inverse, contrib)
    return SparseTensor._coo(rows.unsqueeze(0), values, (mat1.shape[0], mat2.shape[1]), True)


def smm(input, mat):  # noqa: A002 - PyTorch's argument name
    """sparse @ dense as a 2-D COO tensor: every column of each of input's nonempty rows is stored
    (explicit zeros included, as PyTorch stores them)."""
    h = hspmm(input, mat)
    rows, values = h._idx[0], h._vals
    ncols = values.shape[1]
    indices = ember.stack([rows.repeat_interleave(ncols), _C.arange(0, ncols, 1, dtype=_C.int64).repeat(rows.shape[0])])
    return SparseTensor._coo(indices, values.reshape([-1]), h.shape, True)


def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002 - PyTorch's argument name
    """beta * input + alpha * smm(mat1, mat2), input sparse: the entries of both, uncoalesced
    (also torch.saddmm, PyTorch's older name)."""
    input = _check_sparse(input, "sspaddmm")
    product = smm(mat1, mat2)
    if tuple(input.shape) != product.shape:
        raise RuntimeError(f"sspaddmm: Argument #1: Expected dim 0 size {product.shape[0]} and dim 1 size "
                           f"{product.shape[1]}, got {list(input.shape)}")
    coo = input._coo_form()
    return SparseTensor._coo(ember.cat([coo._idx, product._idx], 1),
                             ember.cat([coo._vals * beta, product._vals * alpha]), product.shape)
