"""ember.sparse (torch.sparse): sparse COO and compressed (CSR/CSC/BSR/BSC) tensors and the
functions over them.

The tensors themselves are ember.sparse.SparseTensor (see _tensor.py). Everything here is built
from differentiable ember ops on the values, so gradients reach the values (and the dense
operands) through the ordinary engine. A dense parameter's sparse gradient (nn.Embedding with
sparse=True) is kept beside the engine's dense one: see Note [sparse .grad].
"""

from __future__ import annotations

import builtins

import ember

from .. import _C
from ._more import LEGACY_TYPES, as_sparse_gradcheck, check_sparse_tensor_invariants, sampled_addmm, spdiags
from ._tensor import (
    SparseTensor,
    _check_sparse,
    _dense_add_,
    _dense_to_compressed,
    _dense_to_sparse,
    _group_sorted,
    _sparse_mask,
    hspmm,
    layout,
    mm,
    smm,
    sparse_bsc,
    sparse_bsc_tensor,
    sparse_bsr,
    sparse_bsr_tensor,
    sparse_compressed_tensor,
    sparse_coo,
    sparse_coo_tensor,
    sparse_csc,
    sparse_csc_tensor,
    sparse_csr,
    sparse_csr_tensor,
    sspaddmm,
    strided,
    sum,
)

__all__ = ["SparseTensor", "addmm", "as_sparse_gradcheck", "check_sparse_tensor_invariants", "hspmm", "log_softmax",
           "mm", "sampled_addmm", "smm", "softmax", "spdiags", "spmm", "sspaddmm", "sum"]

# torch.sparse.FloatTensor & co., the legacy COO constructors (see _more.py)
FloatTensor = LEGACY_TYPES["FloatTensor"]
DoubleTensor = LEGACY_TYPES["DoubleTensor"]
HalfTensor = LEGACY_TYPES["HalfTensor"]
BFloat16Tensor = LEGACY_TYPES["BFloat16Tensor"]
ByteTensor = LEGACY_TYPES["ByteTensor"]
CharTensor = LEGACY_TYPES["CharTensor"]
ShortTensor = LEGACY_TYPES["ShortTensor"]
IntTensor = LEGACY_TYPES["IntTensor"]
LongTensor = LEGACY_TYPES["LongTensor"]
__all__ += list(LEGACY_TYPES)


def spmm(mat1, mat2):
    """torch.spmm: sparse @ dense, as mm."""
    return mm(mat1, mat2)


dsmm = spmm  # torch.dsmm: the dense product
hsmm = hspmm  # torch.hsmm: the hybrid product
saddmm = sspaddmm  # torch.saddmm: sspaddmm's older name


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse and mat and mat2 dense."""
    product = mm(mat1, mat2)
    return mat * beta + product * alpha if beta != 0 else product * alpha + _C.zeros_like(mat)


def _softmax(input, dim, dtype, log: builtins.bool):
    x = _check_sparse(input, "sparse.softmax")
    if dtype is not None:
        x = x.to(dtype)
    n = x.dim()
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    dim %= n
    coo = x._coo_form().coalesce()
    sd = coo.sparse_dim()
    if dim >= sd:  # along a dense dimension: the ordinary softmax of each stored slice
        fn = ember.log_softmax if log else ember.softmax
        return coo._with_values(fn(coo._vals, dim - sd + 1))
    values = coo._vals
    if values.shape[0] == 0:
        return coo._with_values(values)
    # entries sharing every sparse index but `dim` form one softmax; unstored entries count as -inf
    others = [d for d in range(sd) if d != dim]
    keys = coo._idx.index_select(0, ember.tensor(others, dtype=_C.int64))
    perm, new_group, sorted_group = _group_sorted(keys)
    group = _C.zeros_like(sorted_group).index_put((perm,), sorted_group)
    ngroups = int(new_group.long().sum().item())
    index = group.reshape([-1] + [1] * (values.dim() - 1)).expand(list(values.shape))
    shape = [ngroups, *values.shape[1:]]
    # the group maximum only steadies exp(); softmax does not depend on it, so it carries no gradient
    top = _C.full(shape, float("-inf"), dtype=values.dtype).scatter_reduce(0, index, values.detach(), "amax")
    shifted = values - top.index_select(0, group)
    total = _C.zeros(shape, dtype=values.dtype).index_add(0, group, shifted.exp())
    if log:
        return coo._with_values(shifted - total.log().index_select(0, group))
    return coo._with_values(shifted.exp() / total.index_select(0, group))


def softmax(input, dim, *, dtype=None):
    """Softmax over the stored entries along `dim` (unstored ones act as -inf); same pattern."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype, True)


# ---- ember.mm / matmul / addmm (and the Tensor methods) take a sparse operand, as torch's do ------------


def _product(a, b):
    """a @ b for 2-D operands, at least one sparse: sparse @ dense, dense @ sparse, sparse @ sparse."""
    if isinstance(a, SparseTensor):
        return mm(a, b)
    result = b.__rmatmul__(a)
    if result is NotImplemented:
        raise TypeError(f"mm: expected Tensor operands, but got {type(a).__name__} and {type(b).__name__}")
    return result


def _no_out(fn: str, out) -> None:
    if out is not None:
        raise RuntimeError(f"{fn}: out= is not supported when an operand is sparse")


def _sparse_mm(input, mat2, *, out=None):  # noqa: A002 - PyTorch's argument name
    _no_out("mm", out)
    return _product(input, mat2)


def _sparse_matmul(input, other, *, out=None):  # noqa: A002 - PyTorch's argument name
    _no_out("matmul", out)
    if isinstance(input, SparseTensor):
        return input @ other  # a 1-D dense `other` is a column, as in torch.matmul
    return _product(input, other)


def _sparse_addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):  # noqa: A002 - PyTorch's argument name
    _no_out("addmm", out)
    product = _product(mat1, mat2)
    base = input.to_dense() if isinstance(input, SparseTensor) else input
    result = product * alpha if alpha != 1 else product
    return result if beta == 0 else result + (base * beta if beta != 1 else base)


def _sparse_aware(dense_fn, sparse_fn):
    """dense_fn, except that a call with a sparse operand goes to sparse_fn."""
    def fn(*args, **kwargs):
        # on every dense mm/matmul call too: a plain loop, no generator objects
        for a in args:
            if isinstance(a, SparseTensor):
                return sparse_fn(*args, **kwargs)
        for a in kwargs.values():
            if isinstance(a, SparseTensor):
                return sparse_fn(*args, **kwargs)
        return dense_fn(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = sparse_fn.__name__.removeprefix("_sparse_")
    fn.__doc__ = dense_fn.__doc__
    return fn


sparse_aware_mm = _sparse_aware(_C.mm, _sparse_mm)
sparse_aware_matmul = _sparse_aware(_C.matmul, _sparse_matmul)
sparse_aware_addmm = _sparse_aware(_C.addmm, _sparse_addmm)


def _not_sparse(name: str, wanted: str = "sparse coordinate tensor"):
    def method(self):
        raise RuntimeError(f"{name} expected {wanted} layout but got Strided")
    return method


# torch.crow_indices_copy & co.: the part, copied (values_copy stays differentiable). A dense
# argument raises the accessor's error; unlike PyTorch, COO's indices/values copies work too.
def _part_copy(name: str):
    def fn(input, *, out=None):  # noqa: A002 - PyTorch's argument name
        if not isinstance(input, SparseTensor):
            if isinstance(input, _C.Tensor):
                return getattr(input, name)()  # the dense tensor's method raises PyTorch's error
            raise TypeError(f"{name}_copy(): argument 'input' must be Tensor, not {type(input).__name__}")
        result = getattr(input, name)().clone()
        if out is None:
            return result
        with ember.no_grad():
            out.resize_(list(result.shape)).copy_(result)
        return out

    fn.__name__ = fn.__qualname__ = f"{name}_copy"
    fn.__doc__ = f"torch.{name}_copy: a copy of input.{name}()."
    return fn


crow_indices_copy = _part_copy("crow_indices")
col_indices_copy = _part_copy("col_indices")
ccol_indices_copy = _part_copy("ccol_indices")
row_indices_copy = _part_copy("row_indices")
values_copy = _part_copy("values")
indices_copy = _part_copy("indices")


# Note [sparse .grad]: the engine accumulates dense gradients only. A sparse gradient for a dense
# leaf (embedding(sparse=True)) is handed over by the backward that makes it, stored in the
# tensor's __dict__ beside the engine's dense .grad, and Tensor.grad shows whichever is there (a
# dense gradient arriving as well, e.g. from a tied weight, merges them into a dense one, which is
# what PyTorch's dense + sparse accumulation gives).
_ENGINE_GRAD = _C.Tensor.grad
_SLOT = "_ember_sparse_grad"


def _get_grad(self):
    sparse = self.__dict__.get(_SLOT)
    dense = _ENGINE_GRAD.__get__(self)
    if sparse is None:
        return dense
    if dense is None:
        return sparse
    merged = dense + sparse
    del self.__dict__[_SLOT]
    _ENGINE_GRAD.__set__(self, merged)
    return merged


def _set_grad(self, value) -> None:
    if isinstance(value, SparseTensor):
        if tuple(value.shape) != tuple(self.shape) or value.dtype != self.dtype:
            raise RuntimeError("[grad] assigned grad has data of a different size or type than the tensor")
        _ENGINE_GRAD.__set__(self, None)
        self.__dict__[_SLOT] = value
        return
    self.__dict__.pop(_SLOT, None)
    _ENGINE_GRAD.__set__(self, value)


def _dense_cannot_resize(name: str):
    def refuse(self, *args, **kwargs):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the 'CPU' backend: it resizes a "
                                  "sparse COO tensor")
    refuse.__name__ = name
    return refuse


def resize_as_sparse_(input, the_template):  # noqa: A002 - PyTorch's argument name
    """torch.resize_as_sparse_: input (sparse COO) resized in place as the_template (see
    SparseTensor.resize_as_sparse_)."""
    return input.resize_as_sparse_(the_template)


def _sparse_only_product(self, *args, **kwargs):
    raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")


def tensor_methods() -> dict[str, object]:
    """The dense Tensor's side of sparse support, for ember/_tensor_methods.py to attach: its layout
    methods, mm / matmul / addmm taking a sparse operand, the sparse-only methods (which raise) and
    .grad holding a sparse gradient (Note [sparse .grad])."""
    methods: dict[str, object] = {
        "layout": property(lambda self: strided),
        "is_sparse": property(lambda self: False),
        "is_sparse_csr": property(lambda self: False),
        "sparse_dim": lambda self: 0,
        "dense_dim": lambda self: self.dim(),
        "to_dense": lambda self, dtype=None, *, masked_grad=True: self if dtype is None else self.to(dtype),
        "to_sparse": _dense_to_sparse,
        "to_sparse_coo": lambda self: _dense_to_sparse(self),
        "to_sparse_csr": lambda self, dense_dim=None: _dense_to_compressed(self, sparse_csr, None, dense_dim),
        "to_sparse_csc": lambda self, dense_dim=None: _dense_to_compressed(self, sparse_csc, None, dense_dim),
        "to_sparse_bsr": lambda self, blocksize, dense_dim=None: _dense_to_compressed(self, sparse_bsr, blocksize,
                                                                                       dense_dim),
        "to_sparse_bsc": lambda self, blocksize, dense_dim=None: _dense_to_compressed(self, sparse_bsc, blocksize,
                                                                                       dense_dim),
        "sparse_mask": _sparse_mask,
        "mm": _sparse_aware(_C.Tensor.mm, _sparse_mm),
        "matmul": _sparse_aware(_C.Tensor.matmul, _sparse_matmul),
        "addmm": _sparse_aware(_C.Tensor.addmm, _sparse_addmm),
    }
    for name in ("is_coalesced", "coalesce", "_indices", "_values", "indices"):
        methods[name] = _not_sparse(name)
    for name in ("crow_indices", "col_indices"):
        methods[name] = _not_sparse(name, "sparse row compressed tensor")
    for name in ("ccol_indices", "row_indices"):
        methods[name] = _not_sparse(name, "sparse column compressed tensor")
    methods["values"] = _not_sparse("values", "sparse tensor")
    for name in ("smm", "sspaddmm"):  # PyTorch's message names sspaddmm for both
        methods[name] = _sparse_only_product
    for name in ("sparse_resize_", "sparse_resize_and_clear_", "resize_as_sparse_"):
        methods[name] = _dense_cannot_resize(name)
    methods["grad"] = property(_get_grad, _set_grad, doc=_ENGINE_GRAD.__doc__)
    return methods


def _accumulate_grad(param, grad: SparseTensor) -> None:
    """param.grad += grad for a sparse `grad` (Note [sparse .grad]): sparse + sparse as PyTorch adds
    them (the same pattern: values added; otherwise concatenated, uncoalesced), a dense .grad
    absorbs it in place."""
    with ember.no_grad():
        existing = param.grad
        if existing is None:
            param.grad = grad
        elif isinstance(existing, SparseTensor):
            param.grad = existing.add(grad)
        else:
            _dense_add_(existing, grad)


__all__ += ["layout", "sparse_coo", "sparse_coo_tensor", "sparse_csr", "sparse_csr_tensor", "strided", "sparse_csc",
            "sparse_bsr", "sparse_bsc", "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor",
            "sparse_compressed_tensor"]  # the *_copy functions are torch's top level only (ember/__init__.py)
