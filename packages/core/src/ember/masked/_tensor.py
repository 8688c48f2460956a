"""MaskedTensor: PyTorch's MaskedTensor prototype (torch.masked.MaskedTensor) for Ember.

A MaskedTensor is a strided `data` tensor and a bool `mask` of the same shape; the elements where
the mask is False are "masked out": they take no part in reductions, print as `--`, and get no
gradient. It predates Ember's __torch_function__ protocol (ember.overrides) and is a plain Python
class (not an ember.Tensor subclass) that carries exactly the operators PyTorch's prototype supports:

* unary ops (exp, log, sin, abs, clamp, pow with a scalar exponent, ...) and their in-place forms:
  the op runs on the data, the mask is kept;
* binary ops (add, mul, div, comparisons, maximum, ...) with a MaskedTensor of the same mask, a
  plain tensor or a scalar; two MaskedTensors with different masks raise ValueError;
* reductions (sum, mean, amax, amin, prod, argmax, argmin, all, norm, var, std) over all
  elements or along dims, through ember.masked's reductions: an output element is masked out
  where nothing was left to reduce; softmax along a dim;
* views and indexing (view, reshape, transpose, t, mT, select, narrow, expand, unsqueeze, flatten,
  unfold, split, [...]), applied to the data and the mask alike; `where`, `cat` and `stack`;
* `.to()`, `.detach()`, `.requires_grad_()`, `.grad`, `.backward()`: autograd runs through the
  data, and `.grad` is a MaskedTensor with the same mask.

Any other tensor method raises a TypeError that names it. `module_functions()` lists the
ember-namespace functions (ember.sum, ember.exp, ember.where, ...) that take a MaskedTensor and
what each does with one; `masked_aware` wraps a plain function with that dispatch.
"""

from __future__ import annotations

import builtins
import functools

import ember

from .. import sparse as _sparse
from . import _reductions

__all__ = ["MaskedTensor", "masked_tensor", "as_masked_tensor", "is_masked_tensor"]

# The dtypes PyTorch's MaskedTensor accepts.
_DTYPES = (ember.float16, ember.float32, ember.float64, ember.int8, ember.int16, ember.int32, ember.int64,
           ember.bool)

# The unary ops (the op on the data, the mask kept) and which of them have an in-place form.
UNARY_NAMES = (
    "abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin", "asinh", "arcsinh", "atan",
    "arctan", "atanh", "arctanh", "bitwise_not", "ceil", "clamp", "clip", "conj_physical", "cos", "cosh",
    "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "fix", "floor", "frac", "lgamma", "log",
    "log10", "log1p", "log2", "logit", "i0", "isnan", "nan_to_num", "neg", "negative", "positive", "pow",
    "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit", "sin", "sinc", "sinh", "sqrt",
    "square", "tan", "tanh", "trunc",
)
_NO_INPLACE = ("angle", "isnan", "positive", "signbit")
INPLACE_UNARY_NAMES = tuple(n + "_" for n in UNARY_NAMES if n not in _NO_INPLACE)

# The binary ops (two operands with one mask) and which of them have an in-place form.
BINARY_NAMES = (
    "add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "div", "divide", "floor_divide", "fmod", "logaddexp", "logaddexp2", "mul", "multiply",
    "nextafter", "remainder", "sub", "subtract", "true_divide", "eq", "ne", "le", "ge", "greater", "greater_equal",
    "gt", "less_equal", "lt", "less", "maximum", "minimum", "fmax", "fmin", "not_equal",
)
_NO_INPLACE_BINARY = ("logaddexp", "logaddexp2", "maximum", "minimum", "fmax", "fmin")
INPLACE_BINARY_NAMES = tuple(n + "_" for n in BINARY_NAMES if n not in _NO_INPLACE_BINARY)

REDUCE_NAMES = ("sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "all", "norm", "var", "std")

_MASKS_DIFFER = "Input masks must match. If you need support for this, please open an issue on Github."


def _layout(t):
    return t.layout if isinstance(t, _sparse.SparseTensor) else ember.strided


def _check_dtype(dtype) -> None:
    if dtype not in _DTYPES:
        raise TypeError(f"{dtype} is not supported in MaskedTensor.")


def _validate(data, mask) -> None:
    """PyTorch's checks on a MaskedTensor's parts, in its order and with its messages."""
    if not isinstance(data, (ember.Tensor, _sparse.SparseTensor)):
        raise TypeError("data must be a Tensor")
    if not isinstance(mask, (ember.Tensor, _sparse.SparseTensor)):
        raise TypeError("mask must be a Tensor")
    if _layout(data) is not _layout(mask):
        raise TypeError("data and mask must have the same layout.")
    if _layout(data) is not ember.strided:
        raise NotImplementedError(f"MaskedTensor with {_layout(data)} data and mask is not supported in Ember: "
                                  "only strided data and mask (convert both with .to_dense())")
    if mask.dtype != ember.bool:
        raise TypeError("mask must have dtype bool.")
    if tuple(data.shape) != tuple(mask.shape):
        raise ValueError("data.size() must equal mask.size()")
    if data.device != mask.device:
        raise ValueError("data.device must equal mask.device")
    _check_dtype(data.dtype)


def _wrap(data, mask) -> MaskedTensor:
    """A MaskedTensor over parts known to be consistent (no checks, no copies)."""
    out = object.__new__(MaskedTensor)
    out._data = data
    out._mask = mask
    return out


def _same_mask(a, b) -> builtins.bool:
    return a is b or (tuple(a.shape) == tuple(b.shape) and a.device == b.device and builtins.bool(ember.equal(a, b)))


def _dims(ndim: int, dim) -> list:
    if dim is None:
        return list(range(ndim))
    return [dim] if isinstance(dim, int) else list(dim)


def _any(mask, dim, keepdim: builtins.bool):
    """Where an output of a reduction over `dim` has something left: any() of the mask."""
    if mask.dim() == 0:
        return mask
    dims = _dims(mask.dim(), dim) or list(range(mask.dim()))  # (dim=[] reduces every dim, as sum's does)
    return ember.any(mask, dims, keepdim=builtins.bool(keepdim))


def _no_tensor_args(args, kwargs) -> None:
    for a in (*args, *kwargs.values()):
        if isinstance(a, (ember.Tensor, MaskedTensor)):
            raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")


# ---- repr ------------------------------------------------------------------------------------

_MASKED_OUT = "--"
_WIDTH = 8


def _format(value, dtype) -> str:
    if dtype == ember.bool:
        return str(builtins.bool(value))
    if dtype.is_floating_point:
        return f"{value:{_WIDTH}.4f}"
    return str(int(value))


def _lines(data, mask, dtype, depth: int) -> list:
    """The nested-list layout PyTorch prints: one line per innermost row, `--` where masked out."""
    pad = "  " * depth
    if not data or not isinstance(data[0], list):
        items = [_format(v, dtype) if k else _MASKED_OUT.rjust(_WIDTH) for v, k in zip(data, mask, strict=True)]
        return [pad + "[" + ", ".join(items) + "]"]
    lines = [pad + "["]
    for i, (d, m) in enumerate(zip(data, mask, strict=True)):
        sub = _lines(d, m, dtype, depth + 1)
        if i < len(data) - 1:
            sub[-1] += ","
        lines += sub
    lines.append(pad + "]")
    return lines


def _repr(data, mask) -> str:
    if data.dim() == 0:
        value = _format(data.item(), data.dtype) if mask.item() else _MASKED_OUT
        return f"MaskedTensor({value}, {builtins.bool(mask.item())})"
    values, keep = data.detach().cpu().tolist(), mask.cpu().tolist()
    if data.shape[0] == 0:  # an empty outer dim prints as an empty block
        body = ["  [", "  ", "  ]"] if data.dim() > 1 else ["  []"]
    else:
        body = _lines(values, keep, data.dtype, 1)
    return "MaskedTensor(\n" + "\n".join(body) + "\n)"


# ---- the class -------------------------------------------------------------------------------

def _unary(name: str):
    def op(self, *args, **kwargs):
        _no_tensor_args(args, kwargs)
        return _wrap(getattr(self._data, name)(*args, **kwargs), self._mask)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Tensor.{name} on the data; the mask is kept."
    return op


def _unary_inplace(name: str):
    def op(self, *args, **kwargs):
        _no_tensor_args(args, kwargs)
        getattr(self._data, name)(*args, **kwargs)
        return self

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Tensor.{name} on the data, in place; the mask is kept."
    return op


def _other_data(self_mask, other):
    """The data of a binary op's other operand: a MaskedTensor must have the same mask."""
    if isinstance(other, MaskedTensor):
        if not _same_mask(self_mask, other._mask):
            raise ValueError(_MASKS_DIFFER)
        return other._data
    return other


def _same_shape(data, mask) -> None:
    if tuple(data.shape) != tuple(mask.shape):  # a plain operand broadcast the result beyond the mask
        raise ValueError(_MASKS_DIFFER)


def _binary(name: str):
    def op(self, other, *args, **kwargs):
        out = getattr(self._data, name)(_other_data(self._mask, other), *args, **kwargs)
        _same_shape(out, self._mask)
        return _wrap(out, self._mask)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Tensor.{name} on the data of two operands with one mask (or a plain tensor or scalar)."
    return op


def _binary_inplace(name: str):
    def op(self, other, *args, **kwargs):
        getattr(self._data, name)(_other_data(self._mask, other), *args, **kwargs)
        return self

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Tensor.{name} on the data, in place, with an operand of the same mask."
    return op


def _reflected(dunder: str):
    """other <op> self for a plain tensor or scalar `other` (dunder: "__rsub__", ...)."""
    def op(self, other):
        if isinstance(other, MaskedTensor):  # (Python only reflects for other types)
            return NotImplemented
        if isinstance(other, ember.Tensor):
            out = getattr(other, dunder.replace("__r", "__", 1))(self._data)
        else:
            out = getattr(self._data, dunder)(other)
        if out is NotImplemented:
            return out
        _same_shape(out, self._mask)
        return _wrap(out, self._mask)

    op.__name__ = op.__qualname__ = dunder
    return op


def _unsupported(name: str):
    return TypeError(f"MaskedTensor does not support {name}: PyTorch's MaskedTensor prototype supports a fixed set "
                     "of unary, binary, reduction and view operators (see ember.masked.MaskedTensor)")


class MaskedTensor:
    """A tensor whose elements where `mask` is False are masked out (torch.masked.MaskedTensor).

    Build one with ember.masked.masked_tensor (a copy, a new autograd leaf) or
    ember.masked.as_masked_tensor (keeps the data and its autograd history). `data` must be a
    strided tensor of float16, float32, float64, int8..int64 or bool; `mask` a bool tensor of the
    same shape and device."""

    __array_ufunc__ = None  # NumPy defers to the reflected operators instead of iterating
    __hash__ = object.__hash__  # (== is elementwise, as on tensors)

    def __init__(self, data, mask, requires_grad: builtins.bool = False) -> None:
        _validate(data, mask)
        if requires_grad and not data.requires_grad:
            data = data.detach().requires_grad_()
        self._data = data
        self._mask = mask

    # ---- the parts --------------------------------------------------------------------------

    def get_data(self):
        """The data tensor, masked-out elements included (differentiable)."""
        return self._data

    def get_mask(self):
        return self._mask

    @property
    def _masked_data(self):
        return self._data

    @property
    def _masked_mask(self):
        return self._mask

    def to_tensor(self, value):
        """A plain tensor: the data where the mask holds, `value` elsewhere (differentiable)."""
        return ember.where(self._mask, self._data, ember.full((), value, dtype=self._data.dtype,
                                                              device=self._data.device))

    def is_sparse_coo(self) -> builtins.bool:
        return False

    def is_sparse_csr(self) -> builtins.bool:
        return False

    # ---- metadata ---------------------------------------------------------------------------

    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    device = property(lambda self: self._data.device)
    ndim = property(lambda self: self._data.dim())
    layout = property(lambda self: ember.strided)
    is_sparse = property(lambda self: False)
    is_cuda = property(lambda self: self._data.is_cuda)

    def size(self, dim=None):
        return self._data.shape if dim is None else self._data.size(dim)

    def dim(self) -> int:
        return self._data.dim()

    ndimension = dim

    def numel(self) -> int:
        return self._data.numel()

    nelement = numel

    def is_contiguous(self) -> builtins.bool:
        return self._data.is_contiguous()

    def is_floating_point(self) -> builtins.bool:
        return self._data.is_floating_point()

    def is_complex(self) -> builtins.bool:
        return False

    def element_size(self) -> int:
        return self._data.element_size()

    def __len__(self) -> int:
        if self._data.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        raise _unsupported("iteration (unbind)")

    def __repr__(self) -> str:
        return _repr(self._data, self._mask)

    __str__ = __repr__

    def item(self):
        return self._data.item()

    def __bool__(self) -> builtins.bool:
        return builtins.bool(self._data)

    def __float__(self) -> float:
        return float(self._data)

    def __int__(self) -> int:
        return int(self._data)

    def tolist(self):
        raise RuntimeError(".tolist() is not supported for MaskedTensor: use get_data() and get_mask()")

    def numpy(self, *, force: builtins.bool = False):
        raise RuntimeError(".numpy() is not supported for MaskedTensor: use get_data() and get_mask()")

    def __getattr__(self, name: str):
        # only reached for names the class lacks: a tensor method PyTorch's prototype rejects too
        if not name.startswith("_") and hasattr(ember.Tensor, name):
            raise _unsupported(name)
        raise AttributeError(f"'MaskedTensor' object has no attribute '{name}'")

    # ---- autograd ---------------------------------------------------------------------------

    @property
    def requires_grad(self) -> builtins.bool:
        return self._data.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: builtins.bool) -> None:
        self._data.requires_grad = value

    def requires_grad_(self, requires_grad: builtins.bool = True) -> MaskedTensor:
        self._data.requires_grad_(requires_grad)
        return self

    is_leaf = property(lambda self: self._data.is_leaf)
    grad_fn = property(lambda self: self._data.grad_fn)

    @property
    def grad(self):
        """The data's gradient as a MaskedTensor with this mask (0 stored where masked out), or None."""
        g = self._data.grad
        if g is None:
            return None
        return _wrap(ember.where(self._mask, g, ember.zeros((), dtype=g.dtype, device=g.device)), self._mask)

    @grad.setter
    def grad(self, value) -> None:
        self._data.grad = value._data if isinstance(value, MaskedTensor) else value

    def retain_grad(self) -> None:
        self._data.retain_grad()

    def detach(self) -> MaskedTensor:
        return _wrap(self._data.detach(), self._mask)

    def backward(self, gradient=None, retain_graph=None, create_graph: builtins.bool = False, inputs=None) -> None:
        """Backpropagates through the data; a MaskedTensor gradient contributes its unmasked elements."""
        if isinstance(gradient, MaskedTensor):
            gradient = gradient.to_tensor(0)
        if inputs is not None:
            inputs = [i._data if isinstance(i, MaskedTensor) else i
                      for i in (inputs if isinstance(inputs, (list, tuple)) else [inputs])]
        self._data.backward(gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    # ---- conversions ------------------------------------------------------------------------

    def to(self, *args, **kwargs) -> MaskedTensor:
        args = tuple(a._data if isinstance(a, MaskedTensor) else a for a in args)
        data = self._data.to(*args, **kwargs)
        _check_dtype(data.dtype)
        mask = self._mask if self._mask.device == data.device else self._mask.to(data.device)
        return _wrap(data, mask)

    def float(self) -> MaskedTensor:
        return self.to(ember.float32)

    def double(self) -> MaskedTensor:
        return self.to(ember.float64)

    def half(self) -> MaskedTensor:
        return self.to(ember.float16)

    def bfloat16(self) -> MaskedTensor:
        return self.to(ember.bfloat16)

    def int(self) -> MaskedTensor:
        return self.to(ember.int32)

    def long(self) -> MaskedTensor:
        return self.to(ember.int64)

    def short(self) -> MaskedTensor:
        return self.to(ember.int16)

    def char(self) -> MaskedTensor:
        return self.to(ember.int8)

    def byte(self) -> MaskedTensor:
        return self.to(ember.uint8)

    def bool(self) -> MaskedTensor:
        return self.to(ember.bool)

    def cpu(self) -> MaskedTensor:
        return self.to("cpu")

    def cuda(self, device=None) -> MaskedTensor:
        return self.to("cuda" if device is None else device)

    def clone(self) -> MaskedTensor:
        return _wrap(self._data.clone(), self._mask.clone())

    def contiguous(self) -> MaskedTensor:
        return _wrap(self._data.contiguous(), self._mask.contiguous())

    # ---- views and indexing: the same op on data and mask -----------------------------------

    def _both(self, name: str, *args, **kwargs) -> MaskedTensor:
        return _wrap(getattr(self._data, name)(*args, **kwargs), getattr(self._mask, name)(*args, **kwargs))

    def view(self, *shape) -> MaskedTensor:
        if any(isinstance(s, ember.dtype) for s in shape):
            raise _unsupported("view(dtype)")
        return self._both("view", *shape)

    def reshape(self, *shape) -> MaskedTensor:
        return self._both("reshape", *shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> MaskedTensor:
        return self._both("flatten", start_dim, end_dim)

    def transpose(self, dim0: int, dim1: int) -> MaskedTensor:
        return self._both("transpose", dim0, dim1)

    def t(self) -> MaskedTensor:
        return self._both("t")

    @property
    def mT(self) -> MaskedTensor:  # noqa: N802 - PyTorch's name
        return self._both("transpose", -2, -1)

    def select(self, dim: int, index: int) -> MaskedTensor:
        return self._both("select", dim, index)

    def narrow(self, dim: int, start: int, length: int) -> MaskedTensor:
        return self._both("narrow", dim, start, length)

    def expand(self, *sizes) -> MaskedTensor:
        return self._both("expand", *sizes)

    def unsqueeze(self, dim: int) -> MaskedTensor:
        return self._both("unsqueeze", dim)

    def unfold(self, dimension: int, size: int, step: int) -> MaskedTensor:
        return self._both("unfold", dimension, size, step)

    def split(self, split_size, dim: int = 0) -> tuple:
        data = self._data.split(split_size, dim)
        mask = self._mask.split(split_size, dim)
        return tuple(_wrap(d, m) for d, m in zip(data, mask, strict=True))

    def __getitem__(self, index) -> MaskedTensor:
        parts = index if isinstance(index, tuple) else (index,)
        if any(isinstance(p, MaskedTensor) for p in parts):
            raise TypeError("indexing a MaskedTensor with a MaskedTensor is not supported")
        return _wrap(self._data[index], self._mask[index])

    # ---- reductions (through ember.masked's) ------------------------------------------------

    def _reduced(self, data, dim, keepdim) -> MaskedTensor:
        mask = _any(self._mask, dim, keepdim)
        if tuple(mask.shape) != tuple(data.shape):  # (keepdim without dim: every dim kept as 1)
            mask = mask.reshape(data.shape)
        return _wrap(data, mask)

    def sum(self, dim=None, keepdim: builtins.bool = False, *, dtype=None) -> MaskedTensor:
        data = _reductions.sum(self._data, dim, keepdim=keepdim, dtype=dtype, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def mean(self, dim=None, keepdim: builtins.bool = False, *, dtype=None) -> MaskedTensor:
        data = _reductions.mean(self._data, dim, keepdim=keepdim, dtype=dtype, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def prod(self, dim=None, keepdim: builtins.bool = False, *, dtype=None) -> MaskedTensor:
        data = _reductions.prod(self._data, dim, keepdim=keepdim, dtype=dtype, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def amax(self, dim=None, keepdim: builtins.bool = False) -> MaskedTensor:
        data = _reductions.amax(self._data, dim, keepdim=keepdim, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def amin(self, dim=None, keepdim: builtins.bool = False) -> MaskedTensor:
        data = _reductions.amin(self._data, dim, keepdim=keepdim, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def argmax(self, dim=None, keepdim: builtins.bool = False) -> MaskedTensor:
        """The index of the largest unmasked element, in the data's dtype (as PyTorch)."""
        data = _reductions.argmax(self._data, dim, keepdim=keepdim, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def argmin(self, dim=None, keepdim: builtins.bool = False) -> MaskedTensor:
        data = _reductions.argmin(self._data, dim, keepdim=keepdim, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def all(self, dim=None, keepdim: builtins.bool = False) -> MaskedTensor:
        true = ember.ones((), dtype=ember.bool, device=self._data.device)
        filled = ember.where(self._mask, self._data.to(ember.bool), true)
        dims = _dims(self._data.dim(), dim) or list(range(self._data.dim()))
        data = ember.all(filled, dims, keepdim=builtins.bool(keepdim)) if dims else filled.clone()
        return self._reduced(data, dim, keepdim)

    def norm(self, p="fro", dim=None, keepdim: builtins.bool = False, dtype=None) -> MaskedTensor:
        """The vector norm of the unmasked elements ("fro" is the 2-norm)."""
        if p is None:
            p = "fro"
        if isinstance(p, str):
            if p != "fro":
                raise _unsupported(f"norm(p={p!r})")
            p = 2.0
        data = _reductions.norm(self._data, p, dim, keepdim=keepdim, dtype=dtype, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def var(self, dim=None, unbiased=None, keepdim: builtins.bool = False, *, correction=None) -> MaskedTensor:
        """The unmasked elements' variance (unbiased unless told; NaN where count <= correction)."""
        data = _reductions.var(self._data, dim, unbiased, correction=correction, keepdim=keepdim, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def std(self, dim=None, unbiased=None, keepdim: builtins.bool = False, *, correction=None) -> MaskedTensor:
        data = _reductions.std(self._data, dim, unbiased, correction=correction, keepdim=keepdim, mask=self._mask)
        return self._reduced(data, dim, keepdim)

    def softmax(self, dim: int, dtype=None) -> MaskedTensor:
        """Softmax over the unmasked elements along `dim`; the mask is kept."""
        return _wrap(_reductions.softmax(self._data, dim, dtype=dtype, mask=self._mask), self._mask)

    def where(self, condition, other) -> MaskedTensor:
        """where(condition, self, other)."""
        return where(condition, self, other)

    # ---- operators --------------------------------------------------------------------------

    def __pow__(self, exponent):
        return self.pow(exponent)

    def __ipow__(self, exponent):
        return self.pow_(exponent)

    def __rpow__(self, other):
        raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments (pow's exponent)")


for _name in UNARY_NAMES:
    setattr(MaskedTensor, _name, _unary(_name))
for _name in INPLACE_UNARY_NAMES:
    setattr(MaskedTensor, _name, _unary_inplace(_name))
for _name in BINARY_NAMES:
    setattr(MaskedTensor, _name, _binary(_name))
for _name in INPLACE_BINARY_NAMES:
    setattr(MaskedTensor, _name, _binary_inplace(_name))

_DUNDERS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
}
for _dunder, _name in _DUNDERS.items():
    setattr(MaskedTensor, f"__{_dunder}__", getattr(MaskedTensor, _name))
    if _dunder not in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(MaskedTensor, f"__i{_dunder}__", getattr(MaskedTensor, _name + "_"))
        setattr(MaskedTensor, f"__r{_dunder}__", _reflected(f"__r{_dunder}__"))
MaskedTensor.__neg__ = MaskedTensor.neg
MaskedTensor.__abs__ = MaskedTensor.abs
MaskedTensor.__pos__ = MaskedTensor.positive
MaskedTensor.__invert__ = MaskedTensor.bitwise_not
MaskedTensor.__module__ = "ember.masked"
del _name, _dunder


# ---- construction ----------------------------------------------------------------------------

def masked_tensor(data, mask, requires_grad: builtins.bool = False) -> MaskedTensor:
    """A MaskedTensor over copies of `data` and `mask`: a new autograd leaf (torch.masked.masked_tensor)."""
    _validate(data, mask)
    data = data.detach().clone()
    if requires_grad:
        data.requires_grad_()
    return _wrap(data, mask.clone())


def as_masked_tensor(data, mask) -> MaskedTensor:
    """A MaskedTensor over `data` itself: gradients flow back into whatever computed it."""
    _validate(data, mask)
    return _wrap(data, mask)


def is_masked_tensor(obj) -> builtins.bool:
    return isinstance(obj, MaskedTensor)


# ---- functions of the ember namespace that take a MaskedTensor -------------------------------

def _parts(x, device):
    """(data, mask) of a where() operand: a plain tensor or scalar counts as unmasked."""
    if isinstance(x, MaskedTensor):
        return x._data, x._mask
    return x, ember.ones((), dtype=ember.bool, device=device)


def where(condition, input, other) -> MaskedTensor:  # noqa: A002 - PyTorch's argument name
    """Elementwise input if condition else other; each output element keeps the mask of the
    operand it came from (a plain tensor or scalar operand is unmasked)."""
    if isinstance(condition, MaskedTensor):
        raise TypeError("where(): condition must be a bool Tensor, not a MaskedTensor")
    if not isinstance(input, MaskedTensor) and not isinstance(other, MaskedTensor):
        return ember.where(condition, input, other)
    device = (input if isinstance(input, MaskedTensor) else other).device
    data_a, mask_a = _parts(input, device)
    data_b, mask_b = _parts(other, device)
    data = ember.where(condition, data_a, data_b)
    mask = ember.where(condition, mask_a, mask_b)
    if tuple(mask.shape) != tuple(data.shape):
        mask = mask.expand(data.shape).contiguous()
    return _wrap(data, mask)


def _joined(name: str, tensors, dim: int) -> MaskedTensor:
    tensors = list(tensors)
    for t in tensors:
        if not isinstance(t, MaskedTensor):
            raise TypeError(f"{name}(): expected every tensor to be a MaskedTensor, but got {type(t).__name__}")
    fn = getattr(ember, name)
    return _wrap(fn([t._data for t in tensors], dim), fn([t._mask for t in tensors], dim))


def cat(tensors, dim: int = 0) -> MaskedTensor:
    return _joined("cat", tensors, dim)


def stack(tensors, dim: int = 0) -> MaskedTensor:
    return _joined("stack", tensors, dim)


def softmax(input, dim: int, dtype=None) -> MaskedTensor:  # noqa: A002
    return input.softmax(dim, dtype=dtype)


def _method_call(name: str):
    """ember.<name>(masked, ...) as masked.<name>(...)."""
    def fn(input, *args, **kwargs):  # noqa: A002
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _binary_call(name: str):
    """ember.<name>(a, b, ...) where either operand is a MaskedTensor."""
    def fn(input, other, *args, **kwargs):  # noqa: A002
        if isinstance(input, MaskedTensor):
            return getattr(input, name)(other, *args, **kwargs)
        out = getattr(ember, name)(input, other._data, *args, **kwargs)
        _same_shape(out, other._mask)
        return _wrap(out, other._mask)

    fn.__name__ = fn.__qualname__ = name
    return fn


@functools.cache
def module_functions() -> dict:
    """{name: function} for each ember-namespace function PyTorch lets take a MaskedTensor
    (ember.exp, ember.add, ember.sum, ember.where, ember.cat, ...): what that function does when
    an argument is one. ember's own entries are native; see `masked_aware` to wrap one."""
    table = {n: _method_call(n) for n in UNARY_NAMES + REDUCE_NAMES if hasattr(ember, n)}
    table.update({n: _binary_call(n) for n in BINARY_NAMES if hasattr(ember, n)})
    table.update(where=where, cat=cat, concat=cat, concatenate=cat, stack=stack, softmax=softmax)
    return table


def _has_masked(args, kwargs) -> builtins.bool:
    for a in (*args, *kwargs.values()):
        if isinstance(a, MaskedTensor):
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(t, MaskedTensor) for t in a):
            return True
    return False


# The ember-namespace functions that take a MaskedTensor too (ember/__init__.py wraps them): the
# reductions, softmax, where, cat and stack. The unary and binary functions are left native, since
# a wrapper would add a Python frame to every call of ember.exp or ember.add; their methods
# (mt.exp(), mt + other) work.
# (norm is left out: ember.functional re-exports ember.norm, and PyTorch's own torch.norm refuses a
# MaskedTensor; mt.norm() works.)
NAMESPACE_FUNCTIONS = (*(n for n in REDUCE_NAMES if n != "norm"), "softmax", "where", "cat", "concat", "concatenate",
                       "stack")


def masked_aware(name: str, plain):
    """`plain` (an ember function), except that a call with a MaskedTensor argument goes to
    module_functions()[name]. A native `plain` is tried first (it refuses a MaskedTensor with a
    TypeError), so a plain call pays for one Python frame only."""
    impl = module_functions()[name]
    native = isinstance(plain, type(len))

    def fn(*args, **kwargs):
        if native:
            try:
                return plain(*args, **kwargs)
            except TypeError:
                if not _has_masked(args, kwargs):
                    raise
            return impl(*args, **kwargs)
        if _has_masked(args, kwargs):
            return impl(*args, **kwargs)
        return plain(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = getattr(plain, "__name__", name)
    fn.__doc__ = plain.__doc__
    fn.__wrapped__ = plain
    return fn
