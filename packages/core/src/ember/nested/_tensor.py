"""NestedTensor: PyTorch's strided-layout nested tensors (torch.nested, layout=torch.strided) for Ember.

A nested tensor is a list of strided component tensors of one dtype, one device and one number of
dims, whose sizes may differ ("ragged" dims). It predates Ember's __torch_function__ protocol
(ember.overrides) and is a plain Python class (as MaskedTensor is, not an ember.Tensor subclass) that holds the list of ember tensors and runs every op per
component with ember ops: autograd differentiates the components, so gradients reach the tensors
given to as_nested_tensor, and a nested_tensor(..., requires_grad=True) leaf gets a nested `.grad`.

The ops are the ones PyTorch 2.13 runs on a strided nested tensor on CPU, with its checks: the
unary ops in UNARY_NAMES, add/sub/mul/div with a nested tensor of the same structure or a scalar,
matmul/bmm, softmax, transpose of non-batch dims, linear, layer_norm, dropout, sum over the last dim
(keepdim=True), narrow along dim 0 and to_padded_tensor. An op PyTorch does not run on a nested
tensor (exp, sigmoid, pow, log_softmax, mean, ...) raises NotImplementedError naming the op, as does
any other ember.Tensor method. Differences from PyTorch, each on purpose:

* components of different dtypes raise (PyTorch silently converts them to the first one's dtype,
  truncating floats to ints); pass dtype= to convert them;
* masked_select returns a strided nested tensor (PyTorch's is jagged-layout), same components.

The jagged layout (layout=ember.jagged) is in _jagged.py; what both layouts share is here: the
_Nested base class, the component checks, padding and the nn.functional entries.
"""

from __future__ import annotations

import builtins
import numbers

import ember

from ..nn import functional as _F

__all__ = ["NestedTensor", "nested_tensor", "as_nested_tensor", "to_padded_tensor", "narrow", "masked_select"]

# The unary ops PyTorch 2.13 runs on a strided nested tensor (Tensor methods and namespace functions).
UNARY_NAMES = ("relu", "tanh", "sin", "cos", "abs", "neg", "sqrt", "sgn", "logical_not", "isnan")
# Activations of nn.functional that PyTorch runs on one.
FUNCTIONAL_UNARY_NAMES = ("relu", "gelu", "silu", "tanh")
# Ops PyTorch 2.13 does not run on a strided nested tensor (its NotImplementedError, ours too).
UNSUPPORTED_NAMES = (
    "exp", "log", "sigmoid", "floor", "round", "square", "pow", "rsqrt", "reciprocal", "erf", "exp2", "log1p",
    "clamp", "maximum", "minimum", "mean", "amax", "amin", "log_softmax", "elu", "leaky_relu", "hardswish",
    "softplus", "mish",
)


def _not_implemented(name: str, torch_lacks: builtins.bool = True):
    why = " (PyTorch's strided nested tensors do not support it either)" if torch_lacks else ""
    return NotImplementedError(f"{name} is not implemented for nested tensors in Ember{why}")


def _wrap(components, leaf: builtins.bool = False) -> NestedTensor:
    out = object.__new__(NestedTensor)
    out._components = list(components)
    out._dtype = components[0].dtype if components else ember.get_default_dtype()
    out._device = components[0].device if components else ember.device("cpu")
    out._ndim = components[0].dim() + 1 if components else 1
    out._leaf = leaf
    return out


def _mixed_layouts(name: str) -> RuntimeError:
    return RuntimeError(f"{name}: expected nested tensors of one layout, but got a strided and a jagged one")


def _wants_jagged(layout) -> builtins.bool:
    """True for layout=ember.jagged; None or ember.strided mean the strided layout; others raise."""
    if layout is ember.jagged:
        return True
    if layout is not None and layout is not ember.strided:
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")
    return False


# The jagged layout's constructors (nested_tensor, as_nested_tensor, narrow), registered by _jagged
# when ember.nested imports it: _jagged builds on this module, so this one does not import it.
_JAGGED: dict = {}


def _check_components(ts) -> None:
    for i, t in enumerate(ts):
        if isinstance(t, _Nested):
            raise RuntimeError("We do not accept nested tensors as input to nested tensors")
        if t.layout is not ember.strided:
            raise RuntimeError("We do not accept non-strided layouts as input to nested tensors")
        if t.dim() != ts[0].dim():
            raise RuntimeError(f"All Tensors given to nested_tensor must have the same dimension. Found dimension "
                               f"{t.dim()} for Tensor at index {i} and dimension {ts[0].dim()} for Tensor at index 0.")
    for i, t in enumerate(ts):
        if t.dtype != ts[0].dtype:
            raise RuntimeError(f"All Tensors given to nested_tensor must have the same dtype. Found dtype {t.dtype} "
                               f"for Tensor at index {i} and dtype {ts[0].dtype} for Tensor at index 0; pass dtype= "
                               "to convert them (PyTorch converts silently to the first one's dtype)")
        if t.device != ts[0].device:
            raise RuntimeError(f"All Tensors given to nested_tensor must be on the same device. Found device "
                               f"{t.device} for Tensor at index {i} and device {ts[0].device} for Tensor at index 0.")


def _is_sparse(t) -> builtins.bool:
    return not isinstance(t, ember.Tensor) and hasattr(t, "layout") and t.layout is not ember.strided


def _copied_components(tensor_list, dtype, device) -> list:
    """nested_tensor's components (both layouts): copies of the tensors, or tensors from nested
    lists of scalars, checked and converted to dtype / device."""
    if not isinstance(tensor_list, list):
        raise TypeError("Only lists (List[Tensor] and List[List...[Scalar]]) are accepted in nested_tensor")
    ts = []
    for item in tensor_list:
        if isinstance(item, _Nested):
            raise RuntimeError("We do not accept nested tensors as input to nested tensors")
        if _is_sparse(item):
            raise RuntimeError("We do not accept non-strided layouts as input to nested tensors")
        ts.append(item.detach().clone() if isinstance(item, ember.Tensor) else ember.tensor(item))
    _check_components(ts)
    return [t.to(dtype=dtype, device=device) if (dtype is not None or device is not None) else t for t in ts]


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """torch.nested.nested_tensor: a new leaf nested tensor from a list of tensors (copied) or of
    nested lists of scalars. pin_memory is accepted and has no effect (CPU memory is not pinned)."""
    if _wants_jagged(layout):
        return _JAGGED["nested_tensor"](tensor_list, dtype=dtype, device=device, requires_grad=requires_grad)
    ts = _copied_components(tensor_list, dtype, device)
    if requires_grad:
        ts = [t.requires_grad_() for t in ts]
    out = _wrap(ts, leaf=True)
    if not ts and dtype is not None:
        out._dtype = dtype
    return out


def _layouts_differ() -> RuntimeError:
    return RuntimeError("as_nested_tensor(): Converting between nested tensor layouts is not supported (as in "
                        "PyTorch): pass list(nt.unbind()), which keeps the autograd history")


def _viewed_components(ts, dtype, device) -> list:
    """as_nested_tensor's components (both layouts): the tensors of a list / tuple, or the slices of
    a tensor along dim 0, checked and converted to dtype / device, autograd history kept."""
    if isinstance(ts, ember.Tensor):
        ts = list(ts.unbind(0))
    elif isinstance(ts, (list, tuple)) and all(isinstance(t, (ember.Tensor, _Nested)) or _is_sparse(t) for t in ts):
        ts = list(ts)
    else:
        raise TypeError("as_nested_tensor(): Expected first argument to be a tensor or a list / tuple of tensors ")
    for t in ts:
        if isinstance(t, _Nested):
            raise RuntimeError("We do not accept nested tensors as input to nested tensors")
        if _is_sparse(t):
            raise RuntimeError("We do not accept non-strided layouts as input to nested tensors")
    if dtype is None:
        _check_components(ts)
    else:
        _check_components([t.to(dtype) for t in ts])
    return [t.to(dtype=dtype, device=device) if (dtype is not None or device is not None) else t for t in ts]


def as_nested_tensor(ts, dtype=None, device=None, layout=None):
    """torch.nested.as_nested_tensor: a nested tensor over a list/tuple of tensors (or the slices of a
    tensor along dim 0) that keeps their autograd history: gradients flow back to them."""
    if _wants_jagged(layout):
        return _JAGGED["as_nested_tensor"](ts, dtype=dtype, device=device)
    if isinstance(ts, _Nested):
        raise _layouts_differ()
    ts = _viewed_components(ts, dtype, device)
    out = _wrap(ts, leaf=not any(t.requires_grad for t in ts))
    if not ts and dtype is not None:
        out._dtype = dtype
    return out


def to_padded_tensor(input, padding, output_size=None):
    """torch.nested.to_padded_tensor: one dense tensor [n, max sizes...], the gaps filled with padding
    (output_size, if given, may only grow each dim). Differentiable back to the components."""
    if not isinstance(input, _Nested):
        raise RuntimeError("to_padded_tensor: expected a nested tensor")
    if input.layout is ember.jagged:
        return input.to_padded_tensor(padding, output_size)
    comps = input._components
    if not comps:
        return ember.empty(0, dtype=input.dtype, device=input.device)
    if all(c.numel() == 0 for c in comps):
        raise RuntimeError("to_padded_tensor: at least one constituent tensor should have non-zero numel")
    sizes = [builtins.max(c.shape[d] for c in comps) for d in range(comps[0].dim())]
    full = [len(comps)] + sizes
    if output_size is not None:
        output_size = [int(s) for s in output_size]
        if len(output_size) != len(full):
            raise RuntimeError("Length of output_size does not match NestedTensor dims. Broadcasting is not supported.")
        if any(o < s for o, s in zip(output_size, full, strict=True)):
            raise RuntimeError("Value in output_size is less than NestedTensor padded size. Truncation is not "
                               "supported.")
        full = output_size
    return _pad_stack(comps, full, padding)


def _pad_stack(comps, full, padding):
    """The components padded with `padding` to full[1:] and stacked, then padded rows up to full[0]."""
    rows = []
    for c in comps:
        pad = []
        for d in reversed(range(c.dim())):
            pad += [0, full[d + 1] - c.shape[d]]
        rows.append(_F.pad(c, pad, value=padding) if any(pad) else c)
    out = ember.stack(rows)
    if full[0] > len(comps):
        extra = ember.full([full[0] - len(comps)] + full[1:], padding, dtype=out.dtype, device=out.device)
        out = ember.cat([out, extra])
    return out


def _dim(d: int, ndim: int) -> int:
    if not -ndim <= d < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
    return d % ndim


def narrow(tensor, dim, start, length, layout=None):
    """torch.nested.narrow. Strided layout: only dim 0 (the components start..start+length-1), a
    dense tensor first split into components along dim 0. Jagged layout: see _jagged.narrow."""
    if _wants_jagged(layout):
        return _JAGGED["narrow"](tensor, dim, start, length)
    if not isinstance(start, numbers.Integral) or not isinstance(length, numbers.Integral):
        raise RuntimeError("start and length must be integers for the strided layout NT impl")
    nt = tensor if isinstance(tensor, NestedTensor) else as_nested_tensor(tensor)
    return nt.narrow(dim, start, length)


def masked_select(tensor, mask):
    """torch.nested.masked_select: row i of the nested result holds the elements of tensor's row i
    (tensor viewed as [-1, last dim]) where mask is True. Strided layout (PyTorch's is jagged)."""
    if mask.dtype != ember.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    tensor, mask = ember.broadcast_tensors(tensor, mask)
    last = tensor.shape[-1] if tensor.dim() else 1
    rows, masks = tensor.reshape(-1, last), mask.reshape(-1, last)
    return as_nested_tensor([r.masked_select(m) for r, m in zip(rows.unbind(0), masks.unbind(0), strict=True)])


def _is_scalar(x) -> builtins.bool:
    return isinstance(x, (numbers.Number, builtins.bool)) or (isinstance(x, ember.Tensor) and x.dim() == 0)


class _Nested:
    """What both layouts' nested tensors share. A subclass keeps its data in ember tensors and
    defines _map (a function applied to them elementwise, giving a nested tensor of the same
    structure), _binary, unbind, dim and layout; the rest here is written over those."""

    is_nested = True

    def __init__(self, *args, **kwargs):
        raise TypeError("build a nested tensor with ember.nested.nested_tensor, as_nested_tensor or "
                        "nested_tensor_from_jagged")

    def _parts(self) -> list:
        """The ember tensors that hold the data (autograd flows through them)."""
        raise NotImplementedError

    # ---- metadata -----------------------------------------------------------------------------
    def ndimension(self) -> int:
        return self.dim()

    @property
    def ndim(self) -> int:
        return self.dim()

    @property
    def requires_grad(self) -> builtins.bool:
        return any(t.requires_grad for t in self._parts())

    @property
    def grad_fn(self):
        """The autograd node of the first part that has one (PyTorch's is one node for all)."""
        return next((t.grad_fn for t in self._parts() if t.grad_fn is not None), None)

    def __bool__(self):
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def __getitem__(self, index):
        if isinstance(index, numbers.Integral) and not isinstance(index, builtins.bool):
            comps = self.unbind()
            return comps[_dim(index, len(comps))] if comps else [][index]
        raise _not_implemented(f"indexing with {type(index).__name__}", torch_lacks=False)

    # ---- conversions and autograd -------------------------------------------------------------
    def to(self, *args, **kwargs):
        return self._map(lambda t: t.to(*args, **kwargs))

    def double(self):
        return self.to(ember.float64)

    def float(self):
        return self.to(ember.float32)

    def clone(self):
        return self._map(lambda t: t.clone())

    def requires_grad_(self, requires_grad=True):
        for t in self._parts():
            t.requires_grad_(requires_grad)
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        mine = self.unbind()
        grads = gradient.unbind() if isinstance(gradient, _Nested) else None
        if grads is None or len(grads) != len(mine) or any(
                tuple(c.shape) != tuple(g.shape) for c, g in zip(mine, grads, strict=True)):
            raise RuntimeError("backward(): gradient must be a nested tensor of the same structure as self")
        pairs = [(c, g) for c, g in zip(mine, grads, strict=True) if c.requires_grad]
        ember.autograd.backward([c for c, _ in pairs], [g for _, g in pairs], retain_graph=retain_graph,
                                create_graph=create_graph, inputs=inputs)

    def to_padded_tensor(self, padding, output_size=None):
        return to_padded_tensor(self, padding, output_size)

    # ---- elementwise --------------------------------------------------------------------------
    def add(self, other, *, alpha=1):
        return self._binary(other, "add", lambda a, b: ember.add(a, b, alpha=alpha))

    def sub(self, other, *, alpha=1):
        return self._binary(other, "sub", lambda a, b: ember.sub(a, b, alpha=alpha))

    def mul(self, other):
        return self._binary(other, "mul", lambda a, b: a * b)

    def div(self, other):
        return self._binary(other, "div", lambda a, b: a / b)

    __add__ = __radd__ = add
    __sub__ = sub
    __mul__ = __rmul__ = mul
    __truediv__ = div
    multiply = mul
    divide = true_divide = div
    subtract = sub

    def __neg__(self):
        return self.neg()

    def __abs__(self):
        return self.abs()

    def _inplace(self, result):
        pairs = list(zip(self.unbind(), result.unbind(), strict=True))
        for c, r in pairs:
            if c.dtype != r.dtype:
                raise RuntimeError(f"result type {r.dtype} can't be cast to the desired output type {c.dtype}")
        for c, r in pairs:
            c.copy_(r)
        return self

    def add_(self, other, *, alpha=1):
        return self._inplace(self.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return self._inplace(self.sub(other, alpha=alpha))

    def mul_(self, other):
        return self._inplace(self.mul(other))

    def div_(self, other):
        return self._inplace(self.div(other))

    def relu_(self):
        return self._inplace(self.relu())

    def __getattr__(self, name):
        # Any other ember.Tensor method: not implemented for nested tensors (named in the error).
        if not name.startswith("_") and hasattr(ember.Tensor, name):
            def unsupported(*args, **kwargs):
                raise _not_implemented(name, torch_lacks=False)
            return unsupported
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")


class NestedTensor(_Nested):
    """A strided-layout nested tensor (see the module docstring). Build one with nested_tensor or
    as_nested_tensor; it is never an ember.Tensor, so the native ops do not take it."""

    @property
    def layout(self):
        return ember.strided

    def _parts(self) -> list:
        return self._components

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def is_leaf(self) -> builtins.bool:
        return self._leaf

    @property
    def grad(self):
        if not self._leaf or all(c.grad is None for c in self._components):
            return None
        return _wrap([c.grad if c.grad is not None else ember.zeros_like(c) for c in self._components])

    @property
    def shape(self):
        raise RuntimeError("A nested tensor has no single shape: read .size(dim) for one dim, or each "
                           "component's shape from .unbind()")

    def dim(self) -> int:
        return self._ndim

    def size(self, dim=None):
        if dim is None:
            return self.shape
        d = _dim(dim, self._ndim)
        if d == 0:
            return len(self._components)
        sizes = {c.shape[d - 1] for c in self._components}
        if len(sizes) != 1:
            raise RuntimeError(f"Given dimension {dim} is irregular and does not have a size.")
        return sizes.pop()

    def numel(self) -> int:
        return builtins.sum(c.numel() for c in self._components)

    def is_contiguous(self, memory_format=None) -> builtins.bool:
        return True

    def __len__(self):
        raise RuntimeError("len() of a nested tensor is not supported (as in PyTorch): use .size(0)")

    def __iter__(self):
        raise RuntimeError("iterating a nested tensor is not supported (as in PyTorch): use .unbind()")

    def unbind(self, dim=0):
        if _dim(dim, self._ndim) != 0:
            raise RuntimeError(f"NestedTensor can only be unbound along dimension 0 got dimension {dim} instead.")
        return tuple(c.view_as(c) for c in self._components)

    def __repr__(self):
        lines = []
        for c in self._components:
            r = repr(c.detach())
            if c.requires_grad:
                r = r[:-1] + ", requires_grad=True)"
            lines.append("\n".join("  " + line for line in r.split("\n")))
        body = ",\n".join(lines)
        suffix = ""
        if self.requires_grad:
            fn = self.grad_fn
            suffix = f", grad_fn=<{fn.name()}>" if fn is not None and not self._leaf else ", requires_grad=True"
        return f"nested_tensor([\n{body}\n]{suffix})"

    __str__ = __repr__

    # ---- conversions ----------------------------------------------------------------------------
    def _map(self, fn) -> NestedTensor:
        return _wrap([fn(c) for c in self._components])

    def detach(self):
        return _wrap([c.detach() for c in self._components], leaf=True)

    def contiguous(self, memory_format=None):
        return self

    def narrow(self, dim, start, length):
        if _dim(dim, self._ndim) != 0:
            raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: {dim}")
        n = len(self._components)
        start = start + n if start < 0 else start
        if not 0 <= start <= n or length < 0 or start + length > n:
            raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
        return _wrap(self._components[start:start + length])

    # ---- elementwise --------------------------------------------------------------------------
    def _binary(self, other, name, fn):
        if isinstance(other, NestedTensor):
            if len(other._components) != len(self._components) or any(
                    tuple(a.shape) != tuple(b.shape) for a, b in zip(self._components, other._components, strict=True)):
                raise RuntimeError(f"{name} does not support broadcasting when given a NestedTensor")
            return _wrap([fn(a, b) for a, b in zip(self._components, other._components, strict=True)])
        if _is_scalar(other):
            return self._map(lambda c: fn(c, other))
        if isinstance(other, _Nested):
            raise _mixed_layouts(name)
        if isinstance(other, ember.Tensor):
            raise RuntimeError("Expected both self and other to be nested, but got a nested self and non-nested other")
        return NotImplemented

    def __rsub__(self, other):
        raise _not_implemented("rsub")

    def __rtruediv__(self, other):
        raise _not_implemented("reciprocal")

    def __pow__(self, other):
        raise _not_implemented("pow")

    # ---- products -----------------------------------------------------------------------------
    def _check_pair(self, other, name):
        if not isinstance(other, NestedTensor):
            raise RuntimeError("Expected both to be nested, but got a nested self and non-nested other")
        if len(other._components) != len(self._components):
            which = "2nd input tensor" if name == "matmul" else "batch2 tensor"
            prefix = "matmul: " if name == "matmul" else ""
            raise RuntimeError(f"{prefix}Expected size for the 1st dimension of {which} to be: "
                               f"{len(self._components)} but got: {len(other._components)}.")
        if self.dtype != other.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {self.dtype} != {other.dtype}")

    def bmm(self, mat2):
        if self._ndim != 3:
            raise RuntimeError("batch1 must be a 3D tensor")
        if isinstance(mat2, NestedTensor) and mat2._ndim != 3:
            raise RuntimeError("batch2 must be a 3D tensor")
        self._check_pair(mat2, "bmm")
        for i, (a, b) in enumerate(zip(self._components, mat2._components, strict=True)):
            if a.shape[1] != b.shape[0]:
                raise RuntimeError(f"{i}-th nested matrices in batch cannot be multiplied ({a.shape[0]}x{a.shape[1]} "
                                   f"and {b.shape[0]}x{b.shape[1]})")
        return _wrap([ember.mm(a, b) for a, b in zip(self._components, mat2._components, strict=True)])

    def matmul(self, other):
        if not isinstance(other, NestedTensor):
            raise RuntimeError("Expected both to be nested, but got a nested self and non-nested other")
        for k, t in ((1, self), (2, other)):
            if t._ndim < 3:
                raise RuntimeError(f"matmul: For nested tensors, only inputs with >= 3 dims are currently supported. "
                                   f"{'1st' if k == 1 else '2nd'} input has rank: {t._ndim}")
        self._check_pair(other, "matmul")
        if any(a.shape[-1] != b.shape[-2] for a, b in zip(self._components, other._components, strict=True)):
            raise RuntimeError("matmul: Nested tensors cannot be matrix multiplied, last dimension of self has sizes "
                               f"{[a.shape[-1] for a in self._components]} second last dimension of mat2 has sizes "
                               f"{[b.shape[-2] for b in other._components]}")
        return _wrap([ember.matmul(a, b) for a, b in zip(self._components, other._components, strict=True)])

    __matmul__ = matmul

    # ---- dims ---------------------------------------------------------------------------------
    def transpose(self, dim0, dim1):
        d0, d1 = _dim(dim0, self._ndim), _dim(dim1, self._ndim)
        if d0 == 0 or d1 == 0:
            raise RuntimeError("Nested tensor dimension 0 cannot be transposed")
        return self._map(lambda c: c.transpose(d0 - 1, d1 - 1))

    def softmax(self, dim, dtype=None):
        d = _dim(dim, self._ndim)
        if d == 0:
            raise RuntimeError("Cannot apply softmax across nested dimension 0")
        return self._map(lambda c: _F.softmax(c, d - 1, dtype=dtype))

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        if dim is None:
            raise _not_implemented("sum over all dims")
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
        for d in dims:
            if _dim(d, self._ndim) != self._ndim - 1:
                raise RuntimeError("NestedTensor can only be reduced across the last dimension for now got dimension "
                                   f"{d} instead.")
        if not keepdim:
            raise RuntimeError("NestedTensor always requires keepdim=True for now.")
        if dtype is not None:
            raise RuntimeError("NestedTensor does not support dtype argument for now.")
        if self._ndim == 1:
            raise _not_implemented("sum of a nested tensor of 0-dim components")
        return self._map(lambda c: c.sum(-1, keepdim=True))


def _unary(name):
    def method(self):
        return self._map(getattr(ember, name))
    method.__name__ = name
    return method


for _name in UNARY_NAMES:
    setattr(_Nested, _name, _unary(_name))


def _unsupported(name):
    def method(self, *args, **kwargs):
        raise _not_implemented(name)
    method.__name__ = name
    return method


for _name in UNSUPPORTED_NAMES:
    if not hasattr(NestedTensor, _name):
        setattr(NestedTensor, _name, _unsupported(_name))
del _name


# ---- nn.functional forms (torch.nn.functional's entries that take a nested tensor) -------------------
# (each takes either layout: the elementwise ones through _map; linear and layer_norm hand a jagged
# input to its own method, since their checks differ by layout)
def _need_nested(fn_name, x):
    if not isinstance(x, _Nested):
        raise TypeError(f"ember.nested.functional.{fn_name}: expected a NestedTensor input")


def gelu(input, approximate="none"):
    _need_nested("gelu", input)
    return input._map(lambda c: _F.gelu(c, approximate=approximate))


def silu(input, inplace=False):
    _need_nested("silu", input)
    return input._map(_F.silu)


def relu(input, inplace=False):
    _need_nested("relu", input)
    return input.relu_() if inplace else input.relu()


def tanh(input):
    _need_nested("tanh", input)
    return input.tanh()


def sigmoid(input):
    _need_nested("sigmoid", input)
    return input.sigmoid()


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    _need_nested("softmax", input)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    _need_nested("log_softmax", input)
    return input.log_softmax(dim, dtype=dtype)


def linear(input, weight, bias=None):
    _need_nested("linear", input)
    if input.layout is ember.jagged:
        return input._linear(weight, bias)
    if input.dim() != 3 or weight.dim() != 2:
        raise RuntimeError(f"Linear requires nested_tensor.dim == 3 and dense_matrix.dim == 2. Nested tensor dim: "
                           f"{input.dim()}. Dense tensor dim: {weight.dim()}")
    for c in input._components:
        if c.shape[-1] != weight.shape[1]:
            raise RuntimeError("Shape mismatch for NestedTensor Linear: Expected input's (a nested tensor) 'last_dim' "
                               f"to equal 'weight.size(1), but got: last_dim = {c.shape[-1]}, and weight.size(1) = "
                               f"{weight.shape[1]}")
    return input._map(lambda c: _F.linear(c, weight, bias))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    _need_nested("layer_norm", input)
    if input.layout is ember.jagged:
        return input._layer_norm(normalized_shape, weight, bias, eps)
    if weight is None or bias is None:
        raise ValueError("NestedTensor layer_norm requires weight and bias")
    shape = [normalized_shape] if isinstance(normalized_shape, numbers.Integral) else list(normalized_shape)
    k = len(shape)
    if k >= input.dim():
        raise RuntimeError("normalized_shape extends into irregular dimensions for the nested tensor")
    for j in range(k):
        d = input.dim() - k + j
        try:
            size = input.size(d)
        except RuntimeError:
            raise RuntimeError("normalized_shape extends into irregular dimensions for the nested tensor") from None
        if size != shape[j]:
            raise RuntimeError(f"The shape at dimension {j} of normalized_shape doesn't match the input")
    return input._map(lambda c: _F.layer_norm(c, shape, weight, bias, eps))


def dropout(input, p=0.5, training=True, inplace=False):
    _need_nested("dropout", input)
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training:
        return input
    out = input._map(lambda c: _F.dropout(c, p, True))
    return input._inplace(out) if inplace else out


FUNCTIONAL = {"gelu": gelu, "silu": silu, "relu": relu, "tanh": tanh, "sigmoid": sigmoid, "softmax": softmax,
              "log_softmax": log_softmax, "linear": linear, "layer_norm": layer_norm, "dropout": dropout}

# The ember-namespace functions that take a NestedTensor: name -> what they do with one.
def _method_call(name):
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


NAMESPACE_FUNCTIONS = {
    **{n: _method_call(n) for n in UNARY_NAMES},
    "add": lambda x, y, *, alpha=1: x.add(y, alpha=alpha),
    "sub": lambda x, y, *, alpha=1: x.sub(y, alpha=alpha),
    "mul": lambda x, y: x.mul(y),
    "div": lambda x, y: x.div(y),
    "matmul": lambda x, y: x.matmul(y),
    "bmm": lambda x, y: x.bmm(y),
    "softmax": lambda x, dim, dtype=None: x.softmax(dim, dtype=dtype),
    "transpose": lambda x, d0, d1: x.transpose(d0, d1),
    "sum": lambda x, *a, **k: x.sum(*a, **k),
    "narrow": lambda x, *a: x.narrow(*a),
}


def nested_aware(name: str, plain, table=None):
    """`plain` (an ember or ember.nn.functional function) extended to take a NestedTensor first
    argument, as PyTorch's does: the NestedTensor goes to table[name], anything else to plain."""
    impl = (NAMESPACE_FUNCTIONS if table is None else table)[name]

    def wrapper(*args, **kwargs):
        if args and isinstance(args[0], _Nested):
            return impl(*args, **kwargs)
        return plain(*args, **kwargs)

    wrapper.__name__ = getattr(plain, "__name__", name)
    wrapper.__doc__ = getattr(plain, "__doc__", None)
    wrapper.__wrapped__ = plain
    return wrapper
