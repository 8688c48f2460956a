"""Top-level names PyTorch scripts use that are not ops of their own: PyTorch's aliases (each the
declared op under a second name, as torch.multiply is torch.mul), type predicates, comparisons
that answer with a Python bool, and the size= keyword of the factories.

Everything here calls declared ops (native/ops/declarations.py); nothing computes on its own.
"""

from __future__ import annotations

import builtins
import functools

from . import _C

# PyTorch's alias -> the op it names. Each is also a Tensor method where the op is one.
ALIASES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctanh": "atanh", "arctan2": "atan2", "divide": "div", "multiply": "mul",
    "subtract": "sub", "negative": "neg", "greater": "gt", "greater_equal": "ge", "less": "lt",
    "less_equal": "le", "not_equal": "ne", "fix": "trunc", "moveaxis": "movedim", "swapaxes": "transpose",
    "swapdims": "transpose", "concatenate": "cat", "row_stack": "vstack", "ger": "outer",
}


def alias_table() -> dict[str, object]:
    """{alias: function} for the aliases whose op exists in this build."""
    return {alias: getattr(_C, op) for alias, op in ALIASES.items() if hasattr(_C, op)}


def tensor_methods() -> dict[str, object]:
    """Tensor.<alias> and Tensor.<alias>_ for every alias whose op is a method (and that Tensor
    lacks), and the methods of this module's functions that PyTorch's Tensor has (x.isclose(y),
    x.clamp_min_(0), ...), for ember/_tensor_methods.py to attach."""
    methods: dict[str, object] = {}
    for alias, op in ALIASES.items():
        for suffix in ("", "_"):
            method = getattr(_C.Tensor, op + suffix, None)
            if method is not None and not hasattr(_C.Tensor, alias + suffix):
                methods[alias + suffix] = method
    for name in ("isclose", "allclose", "equal", "argwhere", "clamp_min", "clamp_max", "is_nonzero"):
        methods[name] = globals()[name]
    methods["clamp_min_"] = lambda self, min: _C.Tensor.clamp_(self, min=min)  # noqa: A006
    methods["clamp_max_"] = lambda self, max: _C.Tensor.clamp_(self, max=max)  # noqa: A006
    return methods


def is_tensor(obj: object) -> builtins.bool:
    """True for an ember.Tensor (or a subclass such as nn.Parameter)."""
    return isinstance(obj, _C.Tensor)


def is_floating_point(input: _C.Tensor) -> builtins.bool:  # noqa: A002 - PyTorch's argument name
    return _tensor_arg(input, "is_floating_point").dtype.is_floating_point


def is_complex(input: _C.Tensor) -> builtins.bool:  # noqa: A002
    return _tensor_arg(input, "is_complex").dtype.is_complex


def numel(input: _C.Tensor) -> builtins.int:  # noqa: A002
    return _tensor_arg(input, "numel").numel()


def is_nonzero(input: _C.Tensor) -> builtins.bool:  # noqa: A002
    """The truth of a one-element tensor (RuntimeError for any other size, as in PyTorch)."""
    t = _tensor_arg(input, "is_nonzero")
    if t.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if t.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(t.item())


def _tensor_arg(obj: object, who: str, name: str = "input", position: int = 1) -> _C.Tensor:
    if not isinstance(obj, _C.Tensor):
        raise TypeError(f"{who}(): argument '{name}' (position {position}) must be Tensor, not {type(obj).__name__}")
    return obj


def isclose(input: _C.Tensor, other: _C.Tensor, rtol: builtins.float = 1e-05,  # noqa: A002
            atol: builtins.float = 1e-08, equal_nan: builtins.bool = False) -> _C.Tensor:
    """|input - other| <= atol + rtol * |other| elementwise, infinities equal only to themselves
    (torch.isclose). Bool tensor; no gradient."""
    a, b = _tensor_arg(input, "isclose"), _tensor_arg(other, "isclose", "other", 2)
    if a.dtype != b.dtype:
        raise RuntimeError(f"{a.dtype} did not match {b.dtype}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = a.detach(), b.detach()
    exact = _C.eq(a, b)
    if equal_nan and (a.dtype.is_floating_point or a.dtype.is_complex):
        exact = _C.logical_or(exact, _C.logical_and(_C.isnan(a), _C.isnan(b)))
    if a.dtype == _C.bool or not (a.dtype.is_floating_point or a.dtype.is_complex) and rtol == 0 and atol == 0:
        return exact
    work = a.dtype if (a.dtype.is_floating_point or a.dtype.is_complex) else _C.get_default_dtype()
    a, b = _C.to_dtype(a, work, False), _C.to_dtype(b, work, False)
    diff = _C.abs(_C.sub(a, b))
    allowed = _C.add(_C.mul(_C.abs(b), rtol), atol)
    close = _C.logical_and(_C.le(diff, allowed), _C.isfinite(diff))
    return _C.logical_or(exact, close)


def allclose(input: _C.Tensor, other: _C.Tensor, rtol: builtins.float = 1e-05,  # noqa: A002
             atol: builtins.float = 1e-08, equal_nan: builtins.bool = False) -> builtins.bool:
    """isclose(...).all() as a Python bool (torch.allclose)."""
    return builtins.bool(_C.all(isclose(input, other, rtol, atol, equal_nan)).item())


def equal(input: _C.Tensor, other: _C.Tensor) -> builtins.bool:  # noqa: A002
    """Same shape and same values (torch.equal; NaN is not equal to itself)."""
    a, b = _tensor_arg(input, "equal"), _tensor_arg(other, "equal", "other", 2)
    if tuple(a.shape) != tuple(b.shape):
        return False
    return builtins.bool(_C.all(_C.eq(a.detach(), b.detach())).item())


def clamp_min(input: _C.Tensor, min: object) -> _C.Tensor:  # noqa: A002
    """clamp(input, min=min)."""
    return _C.clamp(input, min=min)


def clamp_max(input: _C.Tensor, max: object) -> _C.Tensor:  # noqa: A002
    """clamp(input, max=max)."""
    return _C.clamp(input, max=max)


def argwhere(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """The indices of the non-zero elements, one row each (torch.argwhere = nonzero)."""
    return _C.nonzero(input)


def _like_factory(name: str, make):
    def fn(input: _C.Tensor, *args: object, dtype: _C.dtype | None = None, device: object = None,  # noqa: A002
           requires_grad: builtins.bool = False, memory_format: object = None, **kwargs: object) -> _C.Tensor:
        t = _tensor_arg(input, name)
        out = make(list(t.shape), *args, dtype=dtype or t.dtype, device=device or t.device, **kwargs)
        return out.requires_grad_() if requires_grad else out
    fn.__name__ = name
    fn.__doc__ = f"ember.{name}(input, ...): as torch.{name}, with input's shape, dtype and device."
    return fn


rand_like = _like_factory("rand_like", lambda size, **kw: _C.rand(size, **kw))
randn_like = _like_factory("randn_like", lambda size, **kw: _C.randn(size, **kw))


def _randint_like(size, *bounds, **kw):
    if len(bounds) == 1:
        low, high = 0, bounds[0]
    elif len(bounds) == 2:
        low, high = bounds
    else:
        raise TypeError("randint_like() takes (input, high) or (input, low, high)")
    return _C.randint(low, high, size, **kw)


randint_like = _like_factory("randint_like", _randint_like)


def size_keyword(fn, *, first: int = 0):
    """fn(..., size=(2, 3)) as well as fn(2, 3) and fn((2, 3)): PyTorch's factories take size= too.
    `first` counts the positional arguments before the size (randint's low, high)."""
    @functools.wraps(fn)
    def call(*args: object, size: object = None, **kwargs: object) -> _C.Tensor:
        if size is None:
            return fn(*args, **kwargs)
        if len(args) > first:
            raise TypeError(f"{fn.__name__}() got multiple values for argument 'size'")
        return fn(*args, tuple(size) if not isinstance(size, builtins.int) else (size,), **kwargs)
    return call


NAMES = ["is_tensor", "is_floating_point", "is_complex", "numel", "is_nonzero", "isclose", "allclose", "equal",
         "clamp_min", "clamp_max", "argwhere", "rand_like", "randn_like", "randint_like"]
