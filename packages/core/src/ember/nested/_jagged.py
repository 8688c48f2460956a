"""Jagged-layout nested tensors (torch.nested with layout=torch.jagged, "NJT") for Ember.

A jagged nested tensor of B components packs them one after another into one strided `values`
tensor, along its packed dim ragged_idx - 1: component i is values.narrow(ragged_idx - 1,
offsets[i], length_i), where length_i is offsets[i + 1] - offsets[i], or lengths[i] when lengths
are given (then the components need not cover values: the tensor has holes, is_contiguous() is
False). Elementwise ops run once on values; ops along the ragged dim run per component. All of it
is ember ops, so autograd reaches values and the tensors given to as_nested_tensor.

Shapes: the ragged dim's size is a NestedInt, printed jN like PyTorch's symbolic nested int, so
nt.shape is a plain tuple such as (3, j1, 4), nt.size(1) is j1 and the other dims are ints. Two
ragged sizes are equal exactly when the components' lengths are. A NestedInt equals no number and
has no integer value (int(), comparisons and arithmetic raise TypeError): read the lengths from
offsets() / lengths().

Differences from PyTorch 2.13, each on purpose:
* NJTs whose components have equal lengths combine in binary ops even when built separately
  (PyTorch wants the very same offsets tensor and otherwise raises);
* offsets are checked when the tensor is built (integers, from 0, non-decreasing, ending at values'
  packed size; with lengths, each component inside values), not left to fail or read garbage later;
* to_padded_tensor, sum / mean and softmax along the ragged dim take a tensor with holes too;
  log_softmax along the ragged dim, softmax along it for any ragged_idx, sum / mean over the ragged
  dim together with other non-batch dims, and scaled_dot_product_attention with is_causal=True all
  run (PyTorch on CPU raises for each);
* to_padded_tensor's output_size may set only the ragged dim's size (PyTorch ignores the others);
* a tensor from nested_tensor_from_jagged(values) is a leaf when values is one, its .grad then being
  values.grad (PyTorch's is a non-leaf view of values, whose .grad holds the gradient).
"""

from __future__ import annotations

import builtins
import itertools
import math
import numbers
import weakref

import ember

from ..nn import functional as _F
from . import _tensor as _tensor_module
from ._tensor import (
    _copied_components,
    _dim,
    _is_scalar,
    _layouts_differ,
    _mixed_layouts,
    _Nested,
    _pad_stack,
    _unary,
    _viewed_components,
)

__all__ = ["JaggedNestedTensor", "NestedInt", "nested_tensor_from_jagged", "scaled_dot_product_attention"]

# Elementwise ops an NJT runs on its values beyond the ones both layouts have (PyTorch's NJT runs
# every pointwise op; these are the common ones).
JAGGED_UNARY_NAMES = (
    "sigmoid", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "tan", "sinh", "cosh", "asin", "acos", "atan",
    "asinh", "rsqrt", "square", "reciprocal", "erf", "erfc", "floor", "ceil", "round", "trunc", "frac", "sign",
    "isinf", "isfinite", "signbit", "sinc", "bitwise_not", "positive",
)


class NestedInt:
    """The size of an NJT's ragged dim (PyTorch's nested int, printed jN). One object stands for one
    tuple of component lengths while some NJT uses it, so equal ragged sizes are the same object."""

    __slots__ = ("_lengths", "_id", "__weakref__")
    _ids = itertools.count(1)
    _live: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __init__(self, *args, **kwargs):
        raise TypeError("a NestedInt comes from a jagged nested tensor's shape; it is not built directly")

    @classmethod
    def _of(cls, lengths: tuple) -> NestedInt:
        j = cls._live.get(lengths)
        if j is None:
            j = object.__new__(cls)
            j._lengths, j._id = lengths, next(cls._ids)
            cls._live[lengths] = j
        return j

    def __repr__(self) -> str:
        return f"j{self._id}"

    def __eq__(self, other):
        if isinstance(other, NestedInt):
            return self is other
        return False if isinstance(other, numbers.Number) else NotImplemented

    __hash__ = object.__hash__

    def _no_value(self, *args):
        raise TypeError(f"the ragged size {self} has no single integer value: the component lengths are "
                        "nt.offsets().diff() (or nt.lengths() when given)")

    __int__ = __index__ = __float__ = __lt__ = __le__ = __gt__ = __ge__ = _no_value
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __floordiv__ = __truediv__ = _no_value


def _njt(values, offsets, lengths, ragged_idx: int, starts: list, lens) -> JaggedNestedTensor:
    out = object.__new__(JaggedNestedTensor)
    out._values, out._offsets, out._lengths, out._ragged_idx = values, offsets, lengths, ragged_idx
    out._starts = starts  # where each component begins along the packed dim (Python ints)
    out._j = NestedInt._of(tuple(lens))
    return out


def _packed(comps, ragged_idx: int) -> JaggedNestedTensor:
    """An NJT without holes over components equal in all dims but the ragged one (cat keeps autograd)."""
    lens = [c.shape[ragged_idx - 1] for c in comps]
    offsets = list(itertools.accumulate(lens, initial=0))
    values = ember.cat(list(comps), ragged_idx - 1)
    return _njt(values, ember.tensor(offsets, dtype=ember.int64, device=values.device), None, ragged_idx,
                offsets[:-1], lens)


def _from_components(comps) -> JaggedNestedTensor:
    if not comps:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    if comps[0].dim() == 0:
        raise RuntimeError("Cannot construct a nested tensor from a list of zero-dim tensors")
    ragged = [d for d in range(comps[0].dim()) if len({c.shape[d] for c in comps}) > 1]
    if len(ragged) > 1:
        raise RuntimeError("Cannot represent given tensor list as a nested tensor with the jagged layout. Note that "
                           "the jagged layout only allows for a single ragged dimension. For example: (B, *, D_0, "
                           f"D_1, ..., D_N), with ragged * dim. Got components whose dims {ragged} differ in size.")
    return _packed(comps, ragged[0] + 1 if ragged else 1)


def _shape_text(x) -> str:
    if isinstance(x, JaggedNestedTensor):
        return str(x.shape)
    return str(tuple(x.shape)) if isinstance(x, ember.Tensor) else type(x).__name__


class JaggedNestedTensor(_Nested):
    """A jagged-layout nested tensor (see the module docstring). Build one with
    ember.nested.nested_tensor / as_nested_tensor / narrow (layout=ember.jagged) or
    nested_tensor_from_jagged."""

    @property
    def layout(self):
        return ember.jagged

    def _parts(self) -> list:
        return [self._values]

    def _like(self, values, ragged_idx=None) -> JaggedNestedTensor:
        """These components' structure over new values (an elementwise result)."""
        r = self._ragged_idx if ragged_idx is None else ragged_idx
        return _njt(values, self._offsets, self._lengths, r, self._starts, self._j._lengths)

    # ---- the parts ----------------------------------------------------------------------------
    def values(self):
        return self._values

    def offsets(self):
        return self._offsets

    def lengths(self):
        return self._lengths

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self):
        return self._values.device

    @property
    def is_leaf(self) -> builtins.bool:
        return self._values.is_leaf

    @property
    def grad(self):
        g = self._values.grad if self._values.is_leaf else None
        return None if g is None else self._like(g)

    @property
    def shape(self) -> tuple:
        sizes = [len(self._starts), *self._values.shape]
        sizes[self._ragged_idx] = self._j
        return tuple(sizes)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[_dim(dim, self.dim())]

    def dim(self) -> int:
        return self._values.dim() + 1

    def numel(self) -> int:
        r = self._ragged_idx
        rest = math.prod(s for d, s in enumerate(self._values.shape) if d != r - 1)
        return builtins.sum(self._j._lengths) * rest

    def is_contiguous(self, memory_format=None) -> builtins.bool:
        return self._lengths is None and self._values.is_contiguous()

    def __len__(self):
        return len(self._starts)

    def __iter__(self):
        return iter(self.unbind())

    def unbind(self, dim=0):
        if _dim(dim, self.dim()) != 0:
            raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
        r = self._ragged_idx
        return tuple(self._values.narrow(r - 1, s, n) for s, n in zip(self._starts, self._j._lengths, strict=True))

    def __repr__(self):
        lengths = "" if self._lengths is None else f", lengths={self._lengths!r}"
        grad = ""
        if self.requires_grad:
            fn = self.grad_fn
            grad = f", grad_fn=<{fn.name()}>" if fn is not None else ", requires_grad=True"
        return (f"NestedTensor(size={self.shape}, offsets={self._offsets!r}{lengths}{grad}, "
                f"contiguous={self.is_contiguous()})")

    __str__ = __repr__

    # ---- conversions --------------------------------------------------------------------------
    def _map(self, fn) -> JaggedNestedTensor:
        return self._like(fn(self._values))

    def _per_component(self, fn) -> JaggedNestedTensor:
        """fn on each component (keeping its ragged length), packed into a tensor without holes."""
        return _packed([fn(c) for c in self.unbind()], self._ragged_idx)

    def detach(self):
        return self._like(self._values.detach())

    def contiguous(self, memory_format=None):
        if self._lengths is None:
            return self._like(self._values.contiguous())
        return self._per_component(lambda c: c)

    def _without_holes(self) -> JaggedNestedTensor:
        return self if self._lengths is None else self.contiguous()

    def to_padded_tensor(self, padding, output_size=None):
        """One dense tensor, each component padded with `padding` to the longest (or to
        output_size's ragged entry, truncating longer ones as PyTorch does)."""
        r, comps = self._ragged_idx, self.unbind()
        full = list(self.shape)
        full[r] = builtins.max(self._j._lengths, default=0)
        if output_size is not None:
            size = [int(s) for s in output_size]
            if len(size) != len(full):
                raise RuntimeError("Length of output_size does not match NestedTensor dims. Broadcasting is not "
                                   "supported.")
            for d, (want, have) in enumerate(zip(size, full, strict=True)):
                if d != r and want != have:
                    raise RuntimeError(f"to_padded_tensor(): output_size[{d}] is {want}, but the nested tensor's size "
                                       f"there is {have}: the jagged layout lets output_size set only the ragged "
                                       f"dim ({r})")
            if size[r] < 0:
                raise RuntimeError(f"to_padded_tensor(): output_size[{r}] must be >= 0, but got {size[r]}")
            comps = [c.narrow(r - 1, 0, builtins.min(c.shape[r - 1], size[r])) for c in comps]
            full[r] = size[r]
        if not comps:  # a batch split can leave none
            return ember.full(full, padding, dtype=self.dtype, device=self.device)
        return _pad_stack(comps, full, padding)

    # ---- elementwise --------------------------------------------------------------------------
    def _binary(self, other, name, fn):
        if isinstance(other, JaggedNestedTensor):
            if self._j is not other._j or self._ragged_idx != other._ragged_idx or self.dim() != other.dim():
                raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of shapes {self.shape} "
                                   f"and {other.shape}")
            a, b = self, other
            r = self._ragged_idx
            if a._starts != b._starts or a._values.shape[r - 1] != b._values.shape[r - 1]:
                a, b = a._without_holes(), b._without_holes()  # line both up as plain packed components
            return a._like(fn(a._values, b._values))
        if _is_scalar(other):
            return self._map(lambda v: fn(v, other))
        if isinstance(other, _Nested):
            raise _mixed_layouts(name)
        if isinstance(other, ember.Tensor):
            return self._map(lambda v: fn(v, self._dense_operand(other, name)))
        return NotImplemented

    def _dense_operand(self, t, name):
        """A dense operand laid out against values: aligned with the NJT's shape from the right, it
        must have size 1 at the ragged dim; a batch dim of size B gives each component its own row."""
        n, r = self.dim(), self._ragged_idx
        if t.dim() > n:
            raise NotImplementedError(f"{name}: broadcasting a jagged nested tensor of shape {self.shape} with a dense "
                                      f"tensor of more dims {tuple(t.shape)} is not supported (nor in PyTorch)")
        shape = [1] * (n - t.dim()) + list(t.shape)
        if shape[r] != 1:
            raise RuntimeError(f"{name}: a dense operand of shape {tuple(t.shape)} must have size 1 at the ragged dim "
                               f"{r} of the nested tensor of shape {self.shape}")
        t = t.reshape(shape)
        if shape[0] == 1:
            return t.squeeze(0)
        batch = len(self._starts)
        if shape[0] != batch:
            raise RuntimeError(f"{name}: a dense operand's dim 0 must have size 1 or the batch size {batch}, but got "
                               f"{shape[0]}")
        rows = [0] * self._values.shape[r - 1]  # the component of each row along the packed dim
        for i, (s, k) in enumerate(zip(self._starts, self._j._lengths, strict=True)):
            rows[s:s + k] = [i] * k
        index = ember.tensor(rows, dtype=ember.int64, device=t.device)
        return t.squeeze(r).index_select(0, index).movedim(0, r - 1)

    def __rsub__(self, other):
        return self._binary(other, "rsub", lambda a, b: b - a)

    def __rtruediv__(self, other):
        return self._binary(other, "div", lambda a, b: b / a)

    def pow(self, exponent):
        return self._binary(exponent, "pow", lambda a, b: a ** b)

    __pow__ = pow

    def __rpow__(self, other):
        return self._binary(other, "pow", lambda a, b: b ** a)

    def maximum(self, other):
        return self._binary(other, "maximum", ember.maximum)

    def minimum(self, other):
        return self._binary(other, "minimum", ember.minimum)

    def eq(self, other):
        return self._binary(other, "eq", lambda a, b: a == b)

    def ne(self, other):
        return self._binary(other, "ne", lambda a, b: a != b)

    def lt(self, other):
        return self._binary(other, "lt", lambda a, b: a < b)

    def le(self, other):
        return self._binary(other, "le", lambda a, b: a <= b)

    def gt(self, other):
        return self._binary(other, "gt", lambda a, b: a > b)

    def ge(self, other):
        return self._binary(other, "ge", lambda a, b: a >= b)

    __eq__, __ne__, __lt__, __le__, __gt__, __ge__ = eq, ne, lt, le, gt, ge
    __hash__ = object.__hash__

    def clamp(self, min=None, max=None):  # noqa: A002 - PyTorch's argument names
        return self._map(lambda v: v.clamp(min, max))

    # ---- products -----------------------------------------------------------------------------
    def matmul(self, other):
        """NJT @ dense matrix, over a regular last dim (the (B, j, D) @ (D, E) of a projection)."""
        r = self._ragged_idx
        if not isinstance(other, ember.Tensor) or other.dim() != 2 or r == self.dim() - 1:
            raise RuntimeError(f"matmul(): not supported between inputs of shapes {self.shape} and "
                               f"{_shape_text(other)}")
        return self._map(lambda v: ember.matmul(v, other))

    __matmul__ = matmul

    def _linear(self, weight, bias):
        if self._ragged_idx == self.dim() - 1:
            raise RuntimeError(f"linear(): the last dim of the nested tensor of shape {self.shape} is ragged; linear "
                               "needs a regular last dim")
        if weight.dim() != 2 or weight.shape[1] != self._values.shape[-1]:
            raise RuntimeError(f"linear(): expected weight of shape (out_features, {self._values.shape[-1]}), but got "
                               f"{tuple(weight.shape)}")
        return self._map(lambda v: _F.linear(v, weight, bias))

    def _layer_norm(self, normalized_shape, weight, bias, eps):
        shape = [normalized_shape] if isinstance(normalized_shape, numbers.Integral) else list(normalized_shape)
        if not shape or len(shape) > self.dim() - 1 - self._ragged_idx:
            raise RuntimeError(f"layer_norm(): normalized_shape={shape} must cover only regular dims after the ragged "
                               f"one of the nested tensor of shape {self.shape}")
        if list(self._values.shape[-len(shape):]) != shape:
            raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape [*, "
                               f"{', '.join(map(str, shape))}], but got input of size {self.shape}")
        return self._map(lambda v: _F.layer_norm(v, shape, weight, bias, eps))

    # ---- reductions and softmax ---------------------------------------------------------------
    def _softmax(self, fn, name, dim, dtype):
        if dim is None:
            raise TypeError(f"{name}(): a nested tensor needs dim=")
        d = _dim(dim, self.dim())
        if d == 0:
            raise RuntimeError(f"{name}(): not supported when reducing across the batch dimension for NestedTensor")
        if d == self._ragged_idx:
            return self._per_component(lambda c: fn(c, d - 1, dtype=dtype))
        return self._map(lambda v: fn(v, d - 1, dtype=dtype))

    def softmax(self, dim, dtype=None):
        return self._softmax(_F.softmax, "softmax", dim, dtype)

    def log_softmax(self, dim, dtype=None):
        return self._softmax(_F.log_softmax, "log_softmax", dim, dtype)

    def _reduce(self, name, dim, keepdim, dtype):
        if dim is None or (not isinstance(dim, numbers.Integral) and len(dim) == 0):
            return getattr(self._without_holes()._values, name)(dtype=dtype)  # every element

        def op(t, dims):
            return getattr(t, name)(dims, keepdim=keepdim, dtype=dtype)

        n, r = self.dim(), self._ragged_idx
        dims = sorted({_dim(d, n) for d in ([dim] if isinstance(dim, numbers.Integral) else dim)})
        if r not in dims:
            if 0 in dims:
                raise RuntimeError(f"{name}(): reducing along the batch dimension but not the ragged dimension is not "
                                   "supported for nested tensors")
            kept_r = r if keepdim else r - builtins.sum(d < r for d in dims)
            return self._like(op(self._values, [d - 1 for d in dims]), ragged_idx=kept_r)
        if 0 in dims:  # batch and ragged dims: over all components' rows at once
            out = op(self._without_holes()._values, [d - 1 for d in dims if d])
            return out.unsqueeze(0) if keepdim else out
        return ember.stack([op(c, [d - 1 for d in dims]) for c in self.unbind()])

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        """Over regular dims: an NJT. Over the ragged dim (per component, so a zero-length one sums
        to 0): a dense tensor with the batch dim first. Over all dims: a scalar."""
        return self._reduce("sum", dim, keepdim, dtype)

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        """As sum; the mean of a zero-length component is nan (as in PyTorch)."""
        return self._reduce("mean", dim, keepdim, dtype)

    # ---- dims ---------------------------------------------------------------------------------
    def transpose(self, dim0, dim1):
        n, r = self.dim(), self._ragged_idx
        d0, d1 = _dim(dim0, n), _dim(dim1, n)
        if 0 in (d0, d1):
            raise ValueError("Transpose is not supported on the batch dimension for jagged NT")
        kept_r = d1 if r == d0 else d0 if r == d1 else r
        return self._like(self._values.transpose(d0 - 1, d1 - 1), ragged_idx=kept_r)

    swapaxes = swapdims = transpose

    def unsqueeze(self, dim):
        r = self._ragged_idx
        d = _dim(dim, self.dim() + 1)
        if d == 0:
            raise RuntimeError("unsqueeze(): not supported for NestedTensor on dim=0")
        return self._like(self._values.unsqueeze(d - 1), ragged_idx=r + 1 if d <= r else r)

    def squeeze(self, dim=None):
        if dim is None:
            raise NotImplementedError("squeeze(): a jagged nested tensor needs dim= (its batch and ragged dims never "
                                      "squeeze)")
        r = self._ragged_idx
        d = _dim(dim, self.dim())
        if d == 0:
            raise RuntimeError("squeeze(): not supported for NestedTensor on dim=0")
        if d == r:
            raise RuntimeError("squeeze(): not supported for NestedTensor on ragged dim")
        if self._values.shape[d - 1] != 1:
            return self._like(self._values)
        return self._like(self._values.squeeze(d - 1), ragged_idx=r - 1 if d < r else r)

    def _split_dim(self, name, dim) -> int:
        d = _dim(dim, self.dim())
        if d == self._ragged_idx:
            raise RuntimeError(f"{name}(): not supported for NestedTensor on ragged dim")
        return d

    def _batch_slice(self, a: int, b: int) -> JaggedNestedTensor:
        """Components a..b-1 (over the same values' memory)."""
        r, lens = self._ragged_idx, self._j._lengths[a:b]
        if self._lengths is not None:
            return _njt(self._values, self._offsets[a:b + 1], self._lengths[a:b], r, self._starts[a:b], lens)
        lo = self._starts[a]
        hi = self._starts[b] if b < len(self._starts) else self._values.shape[r - 1]
        return _njt(self._values.narrow(r - 1, lo, hi - lo), self._offsets[a:b + 1] - lo, None, r,
                    [s - lo for s in self._starts[a:b]], lens)

    def _batch_split(self, sizes) -> tuple:
        bounds = list(itertools.accumulate(sizes, initial=0))
        return tuple(self._batch_slice(a, b) for a, b in itertools.pairwise(bounds))

    def chunk(self, chunks, dim=0):
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        d = self._split_dim("chunk", dim)
        if d == 0:
            batch = len(self._starts)
            step = -(-batch // chunks)
            return self._batch_split([builtins.min(step, batch - a) for a in range(0, batch, step)])
        return tuple(self._like(v) for v in self._values.chunk(chunks, d - 1))

    def split(self, split_size_or_sections, dim=0):
        d = self._split_dim("split", dim)
        if d == 0:
            batch = len(self._starts)
            if isinstance(split_size_or_sections, numbers.Integral):
                step = int(split_size_or_sections)
                if step <= 0:
                    raise RuntimeError(f"split expects split_size be positive, but got split_size={step}")
                return self._batch_split([builtins.min(step, batch - a) for a in range(0, batch, step)])
            sizes = list(split_size_or_sections)
            if builtins.sum(sizes) != batch or any(s < 0 for s in sizes):
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {batch} (the batch size), "
                                   f"but got split_sizes={sizes}")
            return self._batch_split(sizes)
        return tuple(self._like(v) for v in self._values.split(split_size_or_sections, d - 1))


for _name in JAGGED_UNARY_NAMES:
    setattr(JaggedNestedTensor, _name, _unary(_name))
del _name


# ---- construction --------------------------------------------------------------------------------
def nested_tensor(tensor_list, *, dtype=None, device=None, requires_grad=False) -> JaggedNestedTensor:
    """nested_tensor(..., layout=ember.jagged): a new leaf NJT, its values a copy of the components."""
    out = _from_components(_copied_components(tensor_list, dtype, device))
    if requires_grad:
        out._values.requires_grad_()
    return out


def as_nested_tensor(ts, dtype=None, device=None) -> JaggedNestedTensor:
    """as_nested_tensor(..., layout=ember.jagged): values concatenated from the tensors (or a dense
    tensor's slices along dim 0), so gradients flow back to them; an NJT is returned as it is."""
    if isinstance(ts, JaggedNestedTensor):
        conv = {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
        return ts.to(**conv) if conv else ts
    if isinstance(ts, _Nested):
        raise _layouts_differ()
    if isinstance(ts, ember.Tensor) and ts.dim() < 2:
        raise RuntimeError("as_nested_tensor(): Expected tensor argument to have dim() > 1")
    return _from_components(_viewed_components(ts, dtype, device))


def _index_list(name: str, t) -> list:
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"nested_tensor_from_jagged(): expected {name} to be a Tensor, but got {type(t).__name__}")
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == ember.bool:
        raise TypeError(f"nested_tensor_from_jagged(): {name} must be an integer tensor, but got {t.dtype}")
    if t.dim() != 1:
        raise RuntimeError(f"nested_tensor_from_jagged(): {name} must be 1-D, but got {t.dim()}-D")
    return t.tolist()


def nested_tensor_from_jagged(values, offsets=None, lengths=None, jagged_dim=None, min_seqlen=None, max_seqlen=None):
    """torch.nested.nested_tensor_from_jagged (PyTorch 2.3+): an NJT over `values` (no copy) whose
    component i is values.narrow(jagged_dim - 1, offsets[i], length_i); length_i is
    offsets[i + 1] - offsets[i], or lengths[i] when given (then the components may leave holes).
    With lengths alone, offsets are their running sum. min_seqlen / max_seqlen are PyTorch's cached
    hints for its fused kernels, accepted and unused."""
    if not isinstance(values, ember.Tensor):
        raise TypeError(f"nested_tensor_from_jagged(): expected values to be a Tensor, but got {type(values).__name__}")
    if offsets is None and lengths is None:
        raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or lengths is required.")
    r = 1 if jagged_dim is None else jagged_dim
    if r < 1:
        raise ValueError(f"Expected jagged_dim >=1, but got {jagged_dim}.")
    if r > values.dim():
        raise ValueError(f"Expected jagged_dim <= values.dim() ({values.dim()}), but got {r}.")
    total = values.shape[r - 1]
    lens = None if lengths is None else _index_list("lengths", lengths)
    if offsets is None:
        if not lens or builtins.sum(lens) != total or builtins.min(lens) < 0:
            raise RuntimeError(f"nested_tensor_from_jagged(): lengths {lens} must be >= 0, at least one, and sum to "
                               f"values' size {total} along jagged dim {r - 1}")
        off = list(itertools.accumulate(lens, initial=0))
        return _njt(values, ember.tensor(off, dtype=ember.int64, device=values.device), None, r, off[:-1], lens)
    off = _index_list("offsets", offsets)
    if len(off) < 2:
        raise RuntimeError(f"nested_tensor_from_jagged(): offsets needs at least 2 entries (one component), but got "
                           f"{len(off)}")
    if lens is None:
        if off[0] != 0:
            raise RuntimeError(f"nested_tensor_from_jagged(): offsets must start at 0, but offsets[0] is {off[0]}")
        for i in range(1, len(off)):
            if off[i] < off[i - 1]:
                raise RuntimeError(f"nested_tensor_from_jagged(): offsets must be non-decreasing, but offsets[{i}] = "
                                   f"{off[i]} < offsets[{i - 1}] = {off[i - 1]}")
        if off[-1] != total:
            raise RuntimeError(f"nested_tensor_from_jagged(): offsets[-1] is {off[-1]}, but values has size {total} "
                               f"along jagged dim {r - 1}")
        return _njt(values, offsets, None, r, off[:-1], [b - a for a, b in itertools.pairwise(off)])
    if len(lens) != len(off) - 1:
        raise RuntimeError(f"nested_tensor_from_jagged(): lengths needs one entry per component (len(offsets) - 1 = "
                           f"{len(off) - 1}), but got {len(lens)}")
    for i, (s, k) in enumerate(zip(off[:-1], lens, strict=True)):
        if s < 0 or k < 0 or s + k > total:
            raise RuntimeError(f"nested_tensor_from_jagged(): component {i} (offset {s}, length {k}) lies outside "
                               f"values' size {total} along jagged dim {r - 1}")
    return _njt(values, offsets, lengths, r, off[:-1], lens)


def _per_component_ints(name: str, x, batch: int) -> list:
    if isinstance(x, numbers.Integral) and not isinstance(x, builtins.bool):
        return [int(x)] * batch
    if isinstance(x, ember.Tensor) and not (x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == ember.bool):
        if x.dim() == 0:
            return [int(x.item())] * batch
        if x.dim() == 1 and x.shape[0] == batch:
            return x.tolist()
    raise RuntimeError(f"narrow(): {name} must be an int or a 1-D integer tensor of {batch} entries (one per "
                       f"component), but got {_shape_text(x)}")


def narrow(tensor, dim, start, length) -> JaggedNestedTensor:
    """narrow(..., layout=ember.jagged): component i is tensor[i, start_i:start_i + length_i], over
    tensor's own memory (values is tensor with dims 0 and 1 merged, so the result has holes)."""
    if not isinstance(tensor, ember.Tensor):
        raise RuntimeError(f"narrow(): the jagged layout narrows a dense tensor, but got {type(tensor).__name__}")
    if tensor.dim() < 2:
        raise RuntimeError(f"narrow(): expected a dense tensor of at least 2 dims, but got {tensor.dim()}")
    if _dim(dim, tensor.dim()) != 1:
        raise RuntimeError("jagged layout only supports dim=1")
    batch, seq = tensor.shape[0], tensor.shape[1]
    if batch == 0:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    starts, lens = _per_component_ints("start", start, batch), _per_component_ints("length", length, batch)
    for i, (s, k) in enumerate(zip(starts, lens, strict=True)):
        if s < 0 or k < 0 or s + k > seq:
            raise IndexError(f"narrow(): component {i}: start ({s}) + length ({k}) exceeds dimension size ({seq}).")
    values = tensor.reshape([batch * seq, *tensor.shape[2:]])
    starts = [s + i * seq for i, s in enumerate(starts)]
    offsets = ember.tensor([*starts, starts[-1] + lens[-1]], dtype=ember.int64, device=tensor.device)
    return _njt(values, offsets, ember.tensor(lens, dtype=ember.int64, device=tensor.device), 1, starts, lens)


# ---- attention -----------------------------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """F.scaled_dot_product_attention over NJTs of shape (B, H, j, D) (a (B, j, H, D) tensor after
    .transpose(1, 2)), run per component: query i attends over key / value i, which may have other
    lengths than query's. The result has query's structure."""
    qkv = {"query": query, "key": key, "value": value}
    if not all(isinstance(t, JaggedNestedTensor) for t in qkv.values()):
        if any(isinstance(t, _Nested) for t in qkv.values()) and all(getattr(t, "is_nested", False)
                                                                    for t in qkv.values()):
            raise NotImplementedError("scaled_dot_product_attention(): Ember runs it on jagged-layout nested tensors "
                                      "only (layout=ember.jagged)")
        raise ValueError("Expected query, key, and value to be nested tensors, but got " + ", ".join(
            f"{k}.is_nested: {getattr(t, 'is_nested', False)}" for k, t in qkv.items()) + " instead.")
    if attn_mask is not None:
        raise ValueError("scaled_dot_product_attention(): attn_mask is not supported with nested tensors (as in "
                         "PyTorch); use is_causal=True or call it per component")
    for k, t in qkv.items():
        if t.dim() != 4 or t._ragged_idx != 2:
            raise RuntimeError(f"scaled_dot_product_attention(): expected {k} of shape (B, H, j, D) with the ragged "
                               f"dim 2 (transpose a (B, j, H, D) tensor with .transpose(1, 2)), but got {t.shape}")
    if not len(query) == len(key) == len(value):
        raise RuntimeError(f"scaled_dot_product_attention(): query, key and value need the same batch size, but got "
                           f"{len(query)}, {len(key)} and {len(value)}")
    if key._j is not value._j:
        raise RuntimeError(f"scaled_dot_product_attention(): key and value need the same ragged size, but got shapes "
                           f"{key.shape} and {value.shape}")

    def attend(q, k, v):
        out = _F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), None, dropout_p,
                                              is_causal, scale=scale, enable_gqa=enable_gqa)
        return out.squeeze(0)

    outs = [attend(q, k, v) for q, k, v in zip(query.unbind(), key.unbind(), value.unbind(), strict=True)]
    return _packed(outs, 2)


_tensor_module._JAGGED.update(nested_tensor=nested_tensor, as_nested_tensor=as_nested_tensor, narrow=narrow)
