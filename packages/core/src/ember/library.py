"""``ember.library``: defining ops from Python, as ``torch.library``.

An op defined here is an op of Ember's registry like any built-in or C++ extension op: it is
called as ``ember.ops.<ns>.<name>(...)``, reaches dispatch modes, and goes through autograd.

- ``custom_op("ns::name", mutates_args=...)`` turns a type-annotated function into an op (its
  schema inferred by ``infer_schema``); ``register_kernel`` gives it a per-device kernel,
  ``register_autograd`` its backward, ``register_fake`` its shape function,
  ``register_torch_dispatch`` a rule for a dispatch mode, ``register_autocast`` the dtype its
  floating inputs take inside an autocast region (the op then runs with autocast off),
  ``register_vmap`` its batching rule under ``ember.vmap``.
- ``Library(ns, "DEF" | "FRAGMENT" | "IMPL")`` with ``define(schema)`` and ``impl(name, fn, key)``
  is the older, lower-level form; ``define`` / ``impl`` / ``impl_abstract`` are its function forms.
- ``opcheck(op, args)`` checks an op's registrations on sample inputs.

Where Ember differs (decisions, not omissions of a call):

- Registrations last for the process: Ember's registry never removes an op, so a ``Library``
  going out of scope keeps its ops, and defining a name twice raises.
- Dispatch keys: ``CPU``, ``CUDA``, ``Autograd`` (and ``AutogradCPU`` / ``AutogradCUDA``),
  ``CompositeExplicitAutograd`` (every backend), ``CompositeImplicitAutograd`` (the function is
  composed of other ops: autograd records those), ``Meta`` (the fake implementation). Others
  (``Python``, ``AutocastCPU``, ...) raise ValueError: ``register_autocast`` is the autocast rule.
- Ember has no fake tensors, so a fake implementation (``register_fake``) is never run on fake
  inputs; ``opcheck`` runs it on the real sample inputs and checks that its outputs' shapes,
  dtypes and devices are those of the real kernel.
- Schemas: alias annotations are read for mutation (``Tensor(a!) x`` marks ``x`` mutated) and
  otherwise dropped; ``SymInt`` is ``int``. Types Ember's schemas lack (``Layout``,
  ``MemoryFormat``, ``bool[]``) raise ValueError at ``define``.
- ``register_autocast`` accepts device types "cpu" and "cuda" (a CUDA rule never applies: Ember's
  tensors are on the CPU); registering again for a device type replaces the dtype (PyTorch keeps
  a custom_op's first one); keyword arguments are cast too (PyTorch's rule refuses them).
- ``triton_op`` and ``get_ctx`` (symbolic sizes inside a fake implementation) are not in Ember.
"""

from __future__ import annotations

import collections.abc
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from . import _C
from ._ops import _AUTOCAST_RULES, _VMAP_RULES, OpOverload, _find
from .utils._pytree import tree_leaves, tree_map

__all__ = [
    "CustomOpDef", "Library", "custom_op", "define", "fallthrough_kernel", "impl", "impl_abstract", "infer_schema",
    "opcheck", "register_autocast", "register_autograd", "register_fake", "register_kernel",
    "register_torch_dispatch", "register_vmap",
]

_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA"}


def fallthrough_kernel():
    """Pass to ``Library.impl`` for the ``Autograd`` key: the op then takes no part in autograd
    (its outputs never require grad), as a fallthrough kernel skips the key in PyTorch."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


# --- schemas --------------------------------------------------------------------------------------

_ALIAS = re.compile(r"\(\s*[a-z][a-z0-9]*\s*(!)?\s*(?:->\s*\*\s*)?\)")


def _parse_schema_text(schema: str) -> tuple[str, set[str]]:
    """Ember's schema text for `schema` and the names of the arguments it marks mutated (``!``)."""
    mutated: set[str] = set()
    head, arrow, tail = schema.partition("->")
    if not arrow:
        raise ValueError(f"[schema] expected '->' and the return types, but got '{schema}'")
    for match in re.finditer(r"Tensor(\??)\s*(\([^)]*\))?(\[\])?(\??)\s+([A-Za-z_][A-Za-z0-9_]*)", head):
        if match.group(2) and "!" in match.group(2):
            mutated.add(match.group(5))
    text = _ALIAS.sub("", head) + arrow + _ALIAS.sub("", tail)
    text = re.sub(r"\bSymInt\b", "int", text)
    text = re.sub(r"\b(int|float|bool)\[\d+\]", r"\1[]", text)
    return text, mutated


_SCALAR_TYPES = {int: "int", float: "float", bool: "bool", str: "str"}


def _annotation_type(annotation: Any, where: str) -> str:
    """The schema type of one parameter annotation."""
    from . import Tensor, device, dtype

    origin, targs = typing.get_origin(annotation), typing.get_args(annotation)
    optional = False
    if origin in (typing.Union, types.UnionType) and type(None) in targs:
        rest = tuple(a for a in targs if a is not type(None))
        if set(rest) == {int, float, bool}:
            return "Scalar?"
        optional = True
        annotation = rest[0] if len(rest) == 1 else typing.Union.__getitem__(rest)
        origin, targs = typing.get_origin(annotation), typing.get_args(annotation)
    suffix = "?" if optional else ""
    if annotation is Tensor:
        return "Tensor" + suffix
    if annotation in _SCALAR_TYPES:
        return _SCALAR_TYPES[annotation] + suffix
    if annotation is dtype:
        return "ScalarType" + suffix
    if annotation is device:
        return "Device" + suffix
    if origin in (typing.Union, types.UnionType) and set(targs) == {int, float, bool}:
        return "Scalar" + suffix
    if origin in (list, collections.abc.Sequence) and len(targs) == 1:
        elem = targs[0]
        if elem is Tensor and not optional:
            return "Tensor[]"
        if typing.get_origin(elem) in (typing.Union, types.UnionType) and set(typing.get_args(elem)) == {
                Tensor, type(None)} and not optional:
            return "Tensor?[]"
        if elem in (int, float):
            return _SCALAR_TYPES[elem] + "[]" + suffix
    raise ValueError(f"infer_schema(func): {where} has unsupported type {annotation!r}. The valid types are "
                     "Tensor, int, float, bool, str, ember.dtype, ember.device, Union[int, float, bool] (Scalar), "
                     "Sequence[Tensor], Sequence[Optional[Tensor]], Sequence[int], Sequence[float], and Optional "
                     "of each.")


def _default_text(value: Any, where: str) -> str:
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise ValueError(f"infer_schema(func): {where} has an unsupported default value type {type(value)}.")


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None) -> str:
    """The schema of a type-annotated function, as ``torch.library.infer_schema``:
    ``(Tensor x, float a=1.0) -> Tensor``, prefixed by ``op_name`` when given. ``mutates_args`` is
    ``"unknown"`` or the names of the Tensor arguments the function writes to (marked ``(aN!)``)."""
    sig = inspect.signature(prototype_function)
    try:
        hints = typing.get_type_hints(prototype_function)
    except Exception:  # noqa: BLE001 - an unresolvable string annotation: report the parameter below
        hints = {}

    def error(what: str) -> ValueError:
        return ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    if mutates_args == "unknown":
        raise error("mutates_args='unknown' needs an explicit schema in Ember (it cannot mark the mutated "
                    "arguments).")
    if isinstance(mutates_args, str):
        raise error("mutates_args must be a sequence of argument names (or 'unknown'), not a string.")
    mutated = set(mutates_args)
    params, seen_kw_only = [], False
    for i, (name, p) in enumerate(sig.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise error(f"Parameter {name} may not be *args or **kwargs.")
        if p.annotation is inspect.Parameter.empty:
            raise error(f"Parameter {name} must have a type annotation.")
        kind = _annotation_type(hints.get(name, p.annotation), f"Parameter {name}")
        if name in mutated:
            if not kind.startswith("Tensor"):
                raise error(f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors can "
                            "be mutated")
            kind = kind.replace("Tensor", f"Tensor(a{i}!)", 1)
        if p.kind == p.KEYWORD_ONLY and not seen_kw_only:
            params.append("*")
            seen_kw_only = True
        text = f"{kind} {name}"
        if p.default is not inspect.Parameter.empty:
            text += "=" + _default_text(p.default, f"Parameter {name}")
        params.append(text)
    unknown = mutated - set(sig.parameters)
    if unknown:
        raise error(f"mutates_args contains {sorted(unknown)!r} that is not a parameter of the function.")
    ret = sig.return_annotation
    if ret is inspect.Signature.empty:
        raise error("No return type annotation was provided. Please add one.")
    ret = hints.get("return", ret)
    if ret is None or ret is type(None):
        returns = "()"
    elif typing.get_origin(ret) is tuple:
        returns = "(" + ", ".join(_annotation_type(r, "Return") for r in typing.get_args(ret)) + ")"
    else:
        returns = _annotation_type(ret, "Return")
        if returns not in ("Tensor", "Tensor[]") and not returns.startswith(("int", "float", "bool", "Scalar")):
            raise error(f"Return has unsupported type {ret!r}.")
    return f"{op_name or ''}({', '.join(params)}) -> {returns}"


# --- what Ember keeps about ops defined here -------------------------------------------------------


class _OpInfo:
    """The Python-side registrations of one op defined through this module."""

    def __init__(self, qualname: str, mutated: set[str]) -> None:
        self.qualname = qualname
        self.mutated = mutated
        self.fake: Callable | None = None
        self.keys: set[str] = set()  # keys given a kernel through this module
        self.composite = False  # CompositeImplicitAutograd: made of other ops, needs no fake


_INFO: dict[str, _OpInfo] = {}
_DEF_NAMESPACES: set[str] = set()
_TORCH_DISPATCH_RULES: dict[str, dict[type, Callable]] = {}


def _qualname(op: Any) -> str:
    if isinstance(op, OpOverload):
        return op.name
    if isinstance(op, CustomOpDef):
        return op._qualname
    if isinstance(op, str) and "::" in op:
        return op
    raise ValueError(f"expected an op: 'namespace::name', an ember.ops op or a custom_op, but got {op!r}")


def _op(qualname: str) -> OpOverload:
    found = _find(qualname)
    if found is None:
        raise ValueError(f"[{qualname}] expected a defined op, but there is none of that name (define it first)")
    return found


def _define(qualname: str, schema_rest: str, defined_in: str) -> OpOverload:
    text, mutated = _parse_schema_text(qualname + schema_rest)
    _C._define_op(text, defined_in)
    _INFO[qualname] = _OpInfo(qualname, mutated)
    return _op(qualname)


def _register(qualname: str, key: str, fn: Callable) -> None:
    _op(qualname)
    _C._impl_op(qualname, key, fn)
    _INFO.setdefault(qualname, _OpInfo(qualname, set())).keys.add(key)


# --- autograd --------------------------------------------------------------------------------------


def _is_tensor_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        v is None or isinstance(v, _C.Tensor) for v in value) and any(isinstance(v, _C.Tensor) for v in value)


def _autograd_kernel(qualname: str, backward: Callable, setup_context: Callable | None) -> Callable:
    """The Autograd kernel of register_autograd: runs the op below autograd, calls setup_context,
    and records one node whose backward calls `backward`."""
    from .autograd.function import FunctionCtx

    op = _op(qualname)
    takes_kwargs = setup_context is not None and len(inspect.signature(setup_context).parameters) == 4
    node_name = qualname.replace("::", "_") + "Backward"

    def kernel(*args, **kwargs):
        output = op._op._call_below_autograd(*args, **kwargs)
        flat_in = [t for a in args for t in (a if _is_tensor_list(a) else [a]) if isinstance(t, _C.Tensor)]
        if not (_C._is_grad_enabled() and any(t.requires_grad for t in flat_in)):
            return output
        ctx = type(node_name, (FunctionCtx,), {})()
        ctx.needs_input_grad = tuple(
            any(isinstance(t, _C.Tensor) and t.requires_grad for t in a) if _is_tensor_list(a)
            else isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        if setup_context is not None:
            if takes_kwargs:
                setup_context(ctx, args, kwargs, output)
            else:
                setup_context(ctx, args, output)
        if _return_count(op) == 0:  # nothing to differentiate: the op only writes to its arguments
            return output
        single = _return_count(op) == 1
        outs = [output] if single else list(output)
        shape = [len(o) if isinstance(o, list) else None for o in outs]
        flat_out = [t for o in outs for t in (o if isinstance(o, list) else [o])]
        tensors_out = [t for t in flat_out if isinstance(t, _C.Tensor)]
        non_diff = [not (t.dtype.is_floating_point or t.dtype.is_complex) for t in tensors_out]

        def run_backward(grads):
            # gradients arrive per output tensor; a Tensor[] output's come back as a list
            it = iter(grads)
            per_output = []
            for o, n in zip(outs, shape, strict=True):
                if n is not None:
                    per_output.append([next(it) if isinstance(t, _C.Tensor) else None for t in o])
                else:
                    per_output.append(next(it) if isinstance(o, _C.Tensor) else None)
            result = backward(ctx, *per_output)
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise RuntimeError(f"{qualname}: the backward registered with register_autograd returned "
                                   f"{len(result)} gradients, expected one per positional input ({len(args)})")
            picked = []
            for g, a in zip(result, args, strict=True):
                if _is_tensor_list(a):
                    gs = list(g) if g is not None else [None] * len(a)
                    picked += [gi for gi, ai in zip(gs, a, strict=True) if isinstance(ai, _C.Tensor)]
                elif isinstance(a, _C.Tensor):
                    picked.append(g)
            for g in picked:
                if g is not None and not isinstance(g, _C.Tensor):
                    raise TypeError(f"{qualname}: backward returned a gradient of type {type(g).__name__}, "
                                    "expected a Tensor or None")
            return picked

        recorded = iter(_C._record_function(node_name, run_backward, flat_in, tensors_out,
                                            [False] * len(tensors_out), non_diff, materialize_grads=True))
        flat_new = [next(recorded) if isinstance(t, _C.Tensor) else t for t in flat_out]
        it = iter(flat_new)
        rebuilt = [[next(it) for _ in range(n)] if n is not None else next(it) for n in shape]
        return rebuilt[0] if single else type(output)(rebuilt)

    return kernel


def _return_count(op: OpOverload) -> int:
    returns = op.schema.rsplit("->", 1)[1].strip()
    if not returns.startswith("("):
        return 1
    return 0 if returns == "()" else returns.count(",") + 1


def _no_autograd_kernel(qualname: str) -> Callable:
    op = _op(qualname)

    def kernel(*args, **kwargs):
        return op._op._call_below_autograd(*args, **kwargs)
    return kernel


# --- Library ---------------------------------------------------------------------------------------


class Library:
    """Ops of one namespace, as ``torch.library.Library(ns, kind, dispatch_key="")``.

    kind "DEF" defines a new namespace (one DEF library per namespace), "FRAGMENT" adds ops to a
    namespace, "IMPL" only registers kernels (for the library's ``dispatch_key`` by default)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if not isinstance(ns, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ns):
            raise ValueError(f"Library: expected a namespace name (letters, digits, _), but got {ns!r}")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES or ns in _C._op_namespaces():
                raise RuntimeError(f"Only a single DEF library can be used to register the namespace {ns}; "
                                   "use FRAGMENT to add ops to it (Ember's registrations last for the process)")
            _DEF_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Defines the op ``schema`` ("name(Tensor x) -> Tensor") in this namespace; returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed on an IMPL library; use DEF or FRAGMENT")
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        name, paren, rest = schema.partition("(")
        name = name.strip()
        if not paren or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"Library.define: expected 'name(args) -> returns', but got {schema!r}")
        _define(f"{self.ns}::{name}", "(" + rest, f"ember.library.Library({self.ns!r})")
        return name

    def impl(self, op_name, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Registers `fn` as the op's kernel for `dispatch_key` (the library's key by default, else
        CompositeImplicitAutograd)."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        if with_keyset:
            raise ValueError("Library.impl: with_keyset=True is not in Ember (its kernels get no dispatch key set)")
        name = op_name.name if isinstance(op_name, OpOverload) else op_name
        if not isinstance(name, str):
            raise TypeError(f"Library.impl: expected the op's name or an ember.ops op, but got {op_name!r}")
        name = name.split(".")[0]  # an overload name ("add.Tensor"): Ember's ops have none
        qualname = name if "::" in name else f"{self.ns}::{name}"
        _impl_for_key(qualname, fn, dispatch_key or self.dispatch_key or "CompositeImplicitAutograd")


def _impl_for_key(qualname: str, fn: Callable, key: str) -> None:
    if key in ("CPU", "CUDA"):
        _register(qualname, key, fn)
    elif key == "CompositeExplicitAutograd":
        for k in ("CPU", "CUDA"):
            _register(qualname, k, fn)
    elif key in ("Autograd", "AutogradCPU", "AutogradCUDA"):
        _register(qualname, "Autograd", _no_autograd_kernel(qualname) if fn is fallthrough_kernel else fn)
    elif key == "CompositeImplicitAutograd":
        # made of other ops: under autograd they record the graph themselves
        for k in ("CPU", "CUDA", "Autograd"):
            _register(qualname, k, fn)
        _INFO[qualname].composite = True
    elif key == "Meta":
        _op(qualname)
        _INFO.setdefault(qualname, _OpInfo(qualname, set())).fake = fn
    else:
        raise ValueError(f"dispatch key {key!r} is not in Ember: expected CPU, CUDA, Autograd, "
                         "CompositeExplicitAutograd, CompositeImplicitAutograd or Meta")


def define(qualname: str, schema: str, *, lib: Library | None = None, tags=()) -> None:
    """Defines ``qualname`` ("ns::name") with ``schema`` ("(Tensor x) -> Tensor")."""
    ns, sep, name = qualname.partition("::")
    if not sep or not name:
        raise ValueError(f"define(qualname, ...): expected 'namespace::name', but got {qualname!r}")
    if not schema.lstrip().startswith("("):
        raise ValueError(f"define: expected a schema without a name, '(args) -> returns', but got {schema!r}")
    (lib or Library(ns, "FRAGMENT")).define(name + schema)


def impl(qualname, types, func: Callable | None = None, *, lib: Library | None = None):
    """Registers an implementation of an op for device types ("cpu", "cuda", "default" for every
    one, or a sequence); as a decorator when `func` is omitted. The older form
    ``impl(lib, name, dispatch_key)`` is accepted too."""
    if isinstance(qualname, Library):  # impl(lib, name, dispatch_key="") -> decorator
        library, name, key = qualname, types, func if isinstance(func, str) else ""

        def register_old(f):
            library.impl(name, f, key)
            return f
        return register_old
    return register_kernel(_qualname(qualname), types, func)


def _device_keys(types) -> list[str]:
    """The dispatch keys of device types: "cpu", "cuda", a sequence of them, or None / "default"
    for every one."""
    if types is None or types == "default":
        return ["CPU", "CUDA"]
    names = [types] if isinstance(types, str) else list(types)
    keys = []
    for t in names:
        t = str(t).split(":")[0]
        if t not in _DEVICE_KEYS:
            raise ValueError(f"device type {t!r} is not in Ember: expected 'cpu' or 'cuda'")
        keys.append(_DEVICE_KEYS[t])
    return keys


def register_fake(op, func: Callable | None = None, /, *, lib: Library | None = None, _stacklevel: int = 1):
    """Registers the op's fake (shape) implementation: a function of the same arguments whose
    outputs have the shapes, dtypes and devices the op's outputs have. Ember has no fake tensors,
    so it is used by ``opcheck`` (run on real inputs and compared with the kernel); decorator form
    when `func` is omitted."""
    name = _qualname(op)

    def register(f):
        _op(name)
        _INFO.setdefault(name, _OpInfo(name, set())).fake = f
        return f
    return register if func is None else register(func)


impl_abstract = register_fake


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Library | None = None) -> None:
    """Makes the op differentiable: ``setup_context(ctx, inputs, output)`` (or with
    ``keyword_only_inputs`` before output) saves what backward needs, and ``backward(ctx, *grads)``
    returns one gradient per positional input (None for non-tensors)."""
    name = _qualname(op)
    if not callable(backward):
        raise TypeError(f"register_autograd: expected backward to be a function, but got {backward!r}")
    if isinstance(op, CustomOpDef):
        op.register_autograd(backward, setup_context=setup_context)
        return
    _register(name, "Autograd", _autograd_kernel(name, backward, setup_context))


def register_kernel(op, device_types, func: Callable | None = None, /, *, lib: Library | None = None):
    """Registers the op's kernel for `device_types` ("cpu", "cuda", a sequence, or None for all);
    decorator form when `func` is omitted."""
    if isinstance(op, CustomOpDef):
        return op.register_kernel(device_types, func)
    name = _qualname(op)

    def register(f):
        for key in _device_keys(device_types):
            _register(name, key, f)
        return f
    return register if func is None else register(func)


def register_autocast(op, device_type: str, cast_inputs, /, *, lib: Library | None = None) -> None:
    """Inside an autocast region of `device_type` ("cpu" or "cuda"), the op's floating tensor
    inputs on that device (float64 ones aside) are cast to `cast_inputs` and the op runs with
    autocast off, so the ops inside it are not cast again (torch.library.register_autocast).
    Outside such a region the op runs as it is."""
    if not isinstance(op, (str, OpOverload, CustomOpDef)):
        raise ValueError(f"register_autocast({op}): got unexpected type for op: {type(op)}")
    name = _qualname(op)
    _op(name)
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_KEYS:
        raise ValueError(f"Device type '{device_type}' does not support autocast.")
    if not isinstance(cast_inputs, _C.dtype) or not cast_inputs.is_floating_point:
        raise TypeError(f"register_autocast: cast_inputs must be a floating dtype, but got {cast_inputs!r}")
    _AUTOCAST_RULES.setdefault(name, {})[device_type] = cast_inputs


def register_vmap(op, func: Callable | None = None, /, *, lib: Library | None = None):
    """The op's batching rule (torch.library.register_vmap): when the op is called under
    ``ember.vmap`` with a batched argument, ``func(info, in_dims, *args, **kwargs)`` runs instead,
    on the unbatched tensors of the innermost vmap level: ``info.batch_size`` and
    ``info.randomness`` describe that vmap, ``in_dims`` holds each positional argument's batch
    dimension (None when it is not batched; a list of them for a list of tensors), and it returns
    ``(outputs, out_dims)``, an out_dim None meaning the output is the same for every batch
    element. Outer vmap levels batch the ops the rule calls. Decorator form when `func` is
    omitted."""
    if not isinstance(op, (str, OpOverload, CustomOpDef)):
        raise ValueError(f"register_vmap({op}): got unexpected type for op: {type(op)}")
    name = _qualname(op)
    _op(name)

    def register(f):
        if not callable(f):
            raise TypeError(f"register_vmap: expected a function, but got {f!r}")
        _VMAP_RULES[name] = lambda call, args, kwargs: _apply_vmap_rule(name, f, call, args, kwargs)
        return f
    return register if func is None else register(func)


def _vmap_level(value: Any) -> int:
    """The innermost vmap level batching `value` (a tensor or a list of them), 0 for none."""
    if isinstance(value, _C.Tensor):
        info = _C._vmap_info(value)
        return info[0] if info is not None else 0
    if isinstance(value, (list, tuple)):
        return max((_vmap_level(v) for v in value), default=0)
    return 0


def _unbatch(value: Any, level: int, sizes: list) -> tuple[Any, Any]:
    """`value` without the batch of `level` (its batch dimension left where it is), and that
    dimension (None when `level` does not batch it; a list for a list of tensors)."""
    if isinstance(value, _C.Tensor):
        info = _C._vmap_info(value)
        if info is None or info[0] != level:
            return value, None
        _, bdim, physical = info
        sizes.append(physical.shape[bdim])
        return _C._remove_batch_dim(value, level, physical.shape[bdim], bdim), bdim
    if isinstance(value, (list, tuple)) and any(isinstance(v, _C.Tensor) for v in value):
        pairs = [_unbatch(v, level, sizes) for v in value]
        return type(value)(p[0] for p in pairs), [p[1] for p in pairs]
    return value, None


def _apply_vmap_rule(name: str, rule: Callable, call: Callable, args: tuple, kwargs: dict) -> Any:
    from .autograd.function import VmapInfo, _rebatch
    from .func._vmap import RANDOMNESS_OF_LEVEL

    level = max((_vmap_level(a) for a in args), default=0)
    if any(_vmap_level(v) for v in kwargs.values()):
        raise ValueError(f"{name}: vmap over a keyword-only argument is not supported (pass it positionally)")
    if not level:
        return call(*args, **kwargs)
    sizes: list = []
    pairs = [_unbatch(a, level, sizes) for a in args]
    result = rule(VmapInfo(sizes[0], RANDOMNESS_OF_LEVEL.get(level, "error")), tuple(p[1] for p in pairs),
                  *(p[0] for p in pairs), **kwargs)
    return _rebatch(f"the vmap rule of {name}", result, level, sizes[0])


def register_torch_dispatch(op, torch_dispatch_class: type, func: Callable | None = None, /, *,
                            lib: Library | None = None):
    """While a dispatch mode of `torch_dispatch_class` is entered, `op` goes to
    ``func(mode, op, types, args, kwargs)`` instead of the mode's ``__torch_dispatch__``."""
    name = _qualname(op)
    if not isinstance(torch_dispatch_class, type):
        raise TypeError(f"register_torch_dispatch: expected a TorchDispatchMode class, got {torch_dispatch_class!r}")

    def register(f):
        _op(name)
        _TORCH_DISPATCH_RULES.setdefault(name, {})[torch_dispatch_class] = f
        return f
    return register if func is None else register(func)


def _torch_dispatch_rule(name: str, mode_type: type) -> Callable | None:
    """The rule register_torch_dispatch gave `name` for `mode_type` (or a base of it), or None."""
    rules = _TORCH_DISPATCH_RULES.get(name)
    if not rules:
        return None
    for cls in mode_type.__mro__:
        if cls in rules:
            return rules[cls]
    return None


# --- custom_op -------------------------------------------------------------------------------------


class CustomOpDef:
    """An op made by ``custom_op``: calling it calls the op; its ``register_*`` methods add
    kernels, a backward and a fake implementation."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable, mutated: set[str],
                 device_keys: list[str]) -> None:
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema = schema
        self._init_fn = fn
        self._kernels: dict[str, Callable] = dict.fromkeys(device_keys, fn)
        self._autograd_fn: Callable | None = None
        self._opoverload = _define(self._qualname, schema, f"ember.library.custom_op ({_where(fn)})")
        _INFO[self._qualname].mutated |= mutated
        for key in ("CPU", "CUDA"):
            _register(self._qualname, key, self._backend(key))
        self.__name__ = name
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def _backend(self, key: str) -> Callable:
        def kernel(*args, **kwargs):
            f = self._kernels.get(key)
            if f is None:
                raise NotImplementedError(f"{self._qualname}: no kernel for device type "
                                          f"'{key.lower()}' (see register_kernel)")
            return f(*args, **kwargs)
        return kernel

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def register_kernel(self, device_types, fn: Callable | None = None, /):
        """Registers the kernel for `device_types` ("cpu", "cuda", a sequence, or None for all)."""
        def register(f):
            for key in _device_keys(device_types):
                self._kernels[key] = f
            return f
        return register if fn is None else register(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        return register_fake(self._qualname, fn)

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """As ``ember.library.register_autograd``; registering again replaces the backward."""
        if not callable(backward):
            raise TypeError(f"register_autograd: expected backward to be a function, but got {backward!r}")
        first = self._autograd_fn is None
        self._autograd_fn = _autograd_kernel(self._qualname, backward, setup_context)
        if first:  # until now the registry's fallback ran: outputs raise when backward reaches them
            _register(self._qualname, "Autograd", lambda *args, **kwargs: self._autograd_fn(*args, **kwargs))

    def register_torch_dispatch(self, torch_dispatch_class: type, fn: Callable | None = None, /):
        return register_torch_dispatch(self._qualname, torch_dispatch_class, fn)

    def register_autocast(self, device_type: str, cast_inputs, /) -> None:
        """As ``ember.library.register_autocast``."""
        register_autocast(self._qualname, device_type, cast_inputs)

    def register_vmap(self, func: Callable | None = None, /):
        """As ``ember.library.register_vmap``."""
        return register_vmap(self._qualname, func)


def _where(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else repr(fn)


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None,
              schema: str | None = None):
    """Wraps a type-annotated function into the op ``name`` ("namespace::name"); decorator form
    when `fn` is omitted. ``mutates_args`` names the Tensor arguments the function writes to
    (``()`` for none); ``device_types`` limits the function to those devices; ``schema`` replaces
    the inferred one."""
    namespace, sep, opname = name.partition("::")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", namespace) or not re.fullmatch(
            r"[A-Za-z_][A-Za-z0-9_]*", opname):
        raise ValueError(f"custom_op(name): expected 'namespace::name', but got {name!r}")

    def wrap(f: Callable) -> CustomOpDef:
        if schema is None:
            text = infer_schema(f, mutates_args=mutates_args)
            mutated = set(mutates_args)
        else:
            text = schema
            mutated = _parse_schema_text(opname + schema)[1]
        return CustomOpDef(namespace, opname, text, f, mutated, _device_keys(device_types))
    return wrap if fn is None else wrap(fn)


# --- opcheck ---------------------------------------------------------------------------------------


def _no_grad():
    from .autograd import no_grad  # ember.autograd imports later than this module
    return no_grad()


class OpCheckError(Exception):
    """An op's registrations disagree with what it does (raised by ``opcheck``)."""


_OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor")


def _clone_args(value: Any) -> Any:
    """value with each tensor replaced by a detached copy that requires grad as it did."""
    return tree_map(lambda t: t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, _C.Tensor) else t,
                    value)


def _named_tensors(op: OpOverload, args: tuple, kwargs: dict) -> dict[str, list]:
    """The tensors of each argument, by schema name."""
    named = dict(zip(op._op.argument_names, args, strict=False))
    named.update(kwargs)
    return {k: _flat_tensors(v) for k, v in named.items()}


def _same(a, b) -> bool:
    """Whether two tensors hold the same values (NaN equal to NaN)."""
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool((a == b).all())


def _flat_tensors(value: Any) -> list:
    return [t for t in tree_leaves(value) if isinstance(t, _C.Tensor)]


def _check_schema(op: OpOverload, args: tuple, kwargs: dict) -> None:
    info = _INFO.get(op.name)
    declared = info.mutated if info is not None else set()
    before = {k: [(t._version, t.detach().clone()) for t in ts] for k, ts in _named_tensors(op, args, kwargs).items()}
    with _no_grad():
        out = op(*args, **kwargs)
    for name, tensors in _named_tensors(op, args, kwargs).items():
        for t, (version, copy) in zip(tensors, before[name], strict=True):
            changed = t._version != version or not _same(t.detach(), copy)
            if changed and name not in declared:
                raise OpCheckError(f"opcheck(op, ...): test_schema failed: {op} mutated argument '{name}', which "
                                   "its schema does not mark mutable (mutates_args / Tensor(a!))")
    inputs = [t for ts in _named_tensors(op, args, kwargs).values() for t in ts]
    for o in _flat_tensors(out):
        for t in inputs:
            if o.numel() and t.numel() and o.untyped_storage().data_ptr() == t.untyped_storage().data_ptr():
                raise OpCheckError(f"opcheck(op, ...): test_schema failed: an output of {op} aliases an input; "
                                   "an op's outputs may not alias its inputs (return a clone)")


def _check_autograd_registration(op: OpOverload, args: tuple, kwargs: dict) -> None:
    tensors = _flat_tensors(list(args) + list(kwargs.values()))
    if not any(t.requires_grad for t in tensors):
        return
    if not op.has_kernel("Autograd"):
        raise OpCheckError(f"opcheck(op, ...): test_autograd_registration failed: {op} takes inputs that require "
                           "grad but has no autograd registration, so backward through its outputs raises; use "
                           "register_autograd (or a CompositeImplicitAutograd kernel)")
    outs = [o for o in _flat_tensors(op(*args, **kwargs)) if o.dtype.is_floating_point or o.dtype.is_complex]
    if outs and not any(o.requires_grad for o in outs):
        raise OpCheckError(f"opcheck(op, ...): test_autograd_registration failed: {op}'s autograd kernel returned "
                           "outputs that do not require grad from inputs that do")


def _check_faketensor(op: OpOverload, args: tuple, kwargs: dict) -> None:
    info = _INFO.get(op.name)
    if info is not None and info.composite:
        return
    if info is None or info.fake is None:
        raise OpCheckError(f"opcheck(op, ...): test_faketensor failed: there is no fake implementation registered "
                           f"for {op} (use register_fake)")
    with _no_grad():
        real = op(*args, **kwargs)
        fake = info.fake(*args, **kwargs)
    real_t, fake_t = _flat_tensors(real), _flat_tensors(fake)
    if len(real_t) != len(fake_t):
        raise OpCheckError(f"opcheck(op, ...): test_faketensor failed: the fake implementation of {op} returned "
                           f"{len(fake_t)} tensors, the kernel {len(real_t)}")
    for i, (r, f) in enumerate(zip(real_t, fake_t, strict=True)):
        for what in ("shape", "dtype", "device"):
            if getattr(r, what) != getattr(f, what):
                raise OpCheckError(f"opcheck(op, ...): test_faketensor failed: output {i} of {op}'s fake "
                                   f"implementation has {what} {getattr(f, what)}, the kernel's "
                                   f"{getattr(r, what)}")


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils=_OPCHECK_TESTS,
            raise_exception: bool = True, atol=None, rtol=None) -> dict[str, Any]:
    """Checks an op's registrations on sample inputs, as ``torch.library.opcheck``:

    - ``test_schema``: the op writes only to the arguments its schema marks mutable, and no
      output aliases an input;
    - ``test_autograd_registration``: given inputs that require grad, the op has an autograd
      registration and its outputs require grad;
    - ``test_faketensor``: the fake implementation, run on the inputs, gives outputs of the
      kernel's shapes, dtypes and devices (ops made of other ops need none).

    Each test runs on a copy of the inputs. Returns ``{test: "SUCCESS"}``; a failure raises
    ``OpCheckError`` (or, with ``raise_exception=False``, is returned in place of "SUCCESS")."""
    opov = op._opoverload if isinstance(op, CustomOpDef) else _op(_qualname(op))
    kwargs = kwargs or {}
    names = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    checks = {"test_schema": _check_schema, "test_autograd_registration": _check_autograd_registration,
              "test_faketensor": _check_faketensor}
    for name in names:
        if name not in checks:
            raise ValueError(f"opcheck: test_utils {name!r} is not in Ember: expected some of {list(checks)} "
                             "(Ember has no AOT compilation for test_aot_dispatch_*)")
    results: dict[str, Any] = {}
    for name in names:
        try:
            checks[name](opov, _clone_args(tuple(args)), _clone_args(dict(kwargs)))
            results[name] = "SUCCESS"
        except OpCheckError as e:
            if raise_exception:
                raise
            results[name] = e
    return results


# ---- aten._local_scalar_dense ------------------------------------------------------------------
# Tensor.item() as an op, which __torch_dispatch__ subclasses and dispatch modes see in its place,
# as in PyTorch (ember/_tensor.py's _item calls it only for them; this Library keeps it registered).


def _local_scalar_dense(t: Any) -> Any:
    from ._tensor import _read_scalar

    return _read_scalar(t)


_aten_fragment = Library("aten", "FRAGMENT")
_aten_fragment.define("_local_scalar_dense(Tensor self) -> Scalar")
_aten_fragment.impl("_local_scalar_dense", _local_scalar_dense, "CPU")
