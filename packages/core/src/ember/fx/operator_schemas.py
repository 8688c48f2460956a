"""Matching a call's arguments to the signature of what it calls (torch.fx.operator_schemas).

``normalize_function(target, args, kwargs)`` binds a call to its target's signature and returns an
``ArgsKwargsPair``: the arguments given positionally stay positional (or all become keywords with
``normalize_to_only_use_kwargs``), and every parameter left out is filled with its default.
``normalize_module`` does the same for a call of one of ``ember.nn``'s own module classes, and
``Node.normalized_arguments`` picks between the two for a graph node.

Where the signature comes from:

- an op (``ember.ops.<ns>.<op>``): its schema text, parsed into an ``inspect.Signature``. As in
  PyTorch, an argument named ``self`` is called ``input``, the ones after ``*`` are keyword-only,
  and ``from`` (a Python keyword) makes itself and the arguments before it positional-only;
  annotations are PyTorch's (``Scalar`` is ``numbers.Number``, ``ScalarType`` ``int``, ``int[]``
  ``list[int]``, ``T?`` ``Optional[T]``).
- a native function of ``ember`` (``ember.add``, ``ember.sum``, ``ember.special.expit``...): the
  schema of the op it binds, as PyTorch looks a builtin up among its aten ops.
- any other Python callable (``ember.nn.functional.relu``, your own function): ``inspect.signature``.

An op call whose arguments fit no signature normalizes to None; a call of a Python function that
does not fit raises TypeError, as in PyTorch.

Ember's ops fold PyTorch's ``.out`` overload into a keyword ``out=None``; the signatures here split
it back out, as PyTorch declares them: ``ember.ops.aten.add`` has ``(input, other, *, alpha=1)`` and
``add.out``'s ``(input, other, *, alpha=1, out)``, so a call normalizes to the same arguments as in
PyTorch and ``check_for_mutable_operation`` refuses the one passing ``out=``.

Where Ember differs from PyTorch: Ember's ops have no other overloads (PyTorch's ``add`` also has
``add.Scalar``, ``add.int``...), so a call of ``ember.add`` or ``ember.ops.aten.add`` normalizes
without ``arg_types``, where PyTorch reports an ambiguous match; ``ember.nonzero`` takes no
``as_tuple`` and normalizes by its schema (PyTorch gives torch.nonzero no signature). Several
functions that are native in PyTorch are Python in Ember (``ember.nn.functional.conv2d``,
``ember.max``...) and normalize through their Python signature; ``math`` functions have no
signature (PyTorch's TorchScript maps ``math.sqrt`` to ``aten::sqrt``). The schemas
``get_signature_for_torch_op(..., return_schemas=True)`` returns are parsed views of the schema
text (``name``, ``overload_name``, ``arguments``, ``returns``, ``is_mutable``; ``str()`` is the
text), not ``torch._C.FunctionSchema`` objects. Ember's schema text carries no alias annotations,
so an op writes its first argument when its name ends in one underscore (PyTorch's in-place ops,
whose ``self`` is ``Tensor(a!)``) and the arguments ``ember.library`` recorded it mutating.
"""

from __future__ import annotations

import ast
import inspect
import keyword
import numbers
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from .._ops import OpOverload

__all__ = [
    "ArgsKwargsPair",
    "check_for_mutable_operation",
    "create_type_hint",
    "get_signature_for_torch_op",
    "normalize_function",
    "normalize_module",
    "type_matches",
]


class ArgsKwargsPair(NamedTuple):
    """The positional and keyword arguments of one call."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


# --- schema text ----------------------------------------------------------------------------------


class _SchemaArgument:
    """One argument (or return) of a parsed schema: its ``name``, schema ``type`` text (alias
    annotation left out), ``default_value``, whether it is ``kwarg_only`` and whether the schema
    writes it (``is_write``, ``Tensor(a!)``)."""

    __slots__ = ("name", "type", "default_value", "kwarg_only", "is_write", "_default_text")

    def __init__(self, name: str, type_text: str, default_text: str | None = None, kwarg_only: bool = False,
                 is_write: bool = False) -> None:
        self.name = name
        self.type = type_text
        self._default_text = default_text
        self.default_value = None if default_text is None else _default_value(default_text, type_text)
        self.kwarg_only = kwarg_only
        self.is_write = is_write

    def has_default_value(self) -> bool:
        return self._default_text is not None

    def _render(self, alias: str) -> str:
        """The argument as schema text, `alias` (``a``, ``b``...) marking a written one."""
        base_end = min([len(self.type)] + [i for i in (self.type.find("["), self.type.find("?")) if i != -1])
        text = self.type[:base_end] + (f"({alias}!)" if self.is_write else "") + self.type[base_end:]
        if self.name:
            text += " " + self.name
        if self._default_text is not None:
            text += "=" + self._default_text
        return text

    def __repr__(self) -> str:
        return self._render("a")


class _OpSchema:
    """A parsed schema of one of an op's overloads (what ``get_signature_for_torch_op`` returns
    as schemas): ``name``, ``overload_name``, ``arguments``, ``returns``, ``is_mutable``;
    ``str()`` is its schema text, written arguments annotated as in PyTorch (``Tensor(a!) out``)."""

    __slots__ = ("name", "overload_name", "arguments", "returns")

    def __init__(self, name: str, overload_name: str, arguments: list[_SchemaArgument],
                 returns: list[_SchemaArgument]) -> None:
        self.name = name
        self.overload_name = overload_name
        self.arguments = arguments
        self.returns = returns

    @property
    def is_mutable(self) -> bool:
        """Whether the op writes to one of its arguments."""
        return any(arg.is_write for arg in self.arguments)

    def __str__(self) -> str:
        letters = iter("abcdefghijklmnopqrstuvwxyz")
        aliases = {id(a): next(letters) for a in self.arguments if a.is_write}
        first_written = next((aliases[id(a)] for a in self.arguments if a.is_write), "a")
        items, star = [], False
        for arg in self.arguments:
            if arg.kwarg_only and not star:
                items.append("*")
                star = True
            items.append(arg._render(aliases.get(id(arg), "a")))
        rets = [r._render(first_written) for r in self.returns]
        returns = rets[0] if len(rets) == 1 and not self.returns[0].name else "(" + ", ".join(rets) + ")"
        overload = f".{self.overload_name}" if self.overload_name else ""
        return f"{self.name}{overload}({', '.join(items)}) -> {returns}"

    __repr__ = __str__


def _split_top_level(text: str) -> list[str]:
    """`text` split at the commas outside brackets, parentheses and quotes, items stripped."""
    items, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail or items:
        items.append(tail)
    return items


def _read_type(text: str) -> tuple[str, bool, str]:
    """(type text without alias annotations, whether an annotation marks it written, the rest)."""
    i = 0
    while i < len(text) and (text[i].isalnum() or text[i] in "_."):
        i += 1
    if i == 0:
        raise ValueError(f"schema: expected a type at '{text}'")
    out, written = text[:i], False
    while i < len(text):
        ch = text[i]
        if ch == "(":  # alias annotation: (a), (a!), (a -> *)
            close = text.index(")", i)
            written = written or "!" in text[i:close]
            i = close + 1
        elif ch == "[":
            close = text.index("]", i)
            out += text[i:close + 1]
            i = close + 1
        elif ch == "?":
            out += "?"
            i += 1
        else:
            break
    return out, written, text[i:].strip()


def _python_type(type_text: str) -> Any:
    """PyTorch's Python annotation for a schema type (``Tensor?[]`` is list[Optional[Tensor]])."""
    from .. import Generator, Tensor, device

    base_end = len(type_text)
    for marker in ("[", "?"):
        pos = type_text.find(marker)
        if pos != -1:
            base_end = min(base_end, pos)
    base, suffix = type_text[:base_end], type_text[base_end:]
    result: Any = {
        "Tensor": Tensor, "int": int, "SymInt": int, "float": float, "bool": bool, "str": str,
        "Scalar": numbers.Number, "ScalarType": int, "Layout": int, "MemoryFormat": int, "Device": device,
        "Generator": Generator, "Dimname": str, "complex": complex, "Any": Any,
    }.get(base, Any)
    i = 0
    while i < len(suffix):
        if suffix[i] == "?":
            result = typing.Optional[result]  # noqa: UP045 - PyTorch's annotations are typing.Optional
            i += 1
        else:
            i = suffix.index("]", i) + 1
            result = typing.List[result]  # noqa: UP006 - PyTorch's annotations are typing.List
    return result


_NAMED_DEFAULTS = {"Mean": 1, "Sum": 2, "inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def _default_value(text: str, type_text: str) -> Any:
    """The Python value of a default written in a schema."""
    if text in _NAMED_DEFAULTS:
        value = _NAMED_DEFAULTS[text]
    else:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            import ember

            value = getattr(ember, text, text)  # contiguous_format, long...: ember's object of that name
    fixed = type_text.rstrip("?")
    if fixed.endswith("]") and not fixed.endswith("[]") and not isinstance(value, (list, type(None))):
        size = int(fixed[fixed.rindex("[") + 1:-1])  # int[2] stride=1 means [1, 1]
        value = [value] * size
    return value


def _parse_argument(text: str, kwarg_only: bool) -> _SchemaArgument:
    type_text, written, rest = _read_type(text)
    name, eq, default_text = rest.partition("=")
    return _SchemaArgument(name.strip(), type_text, default_text.strip() if eq else None, kwarg_only, written)


def _mutated_by_library(qualified_name: str) -> set[str]:
    from ..library import _INFO

    info = _INFO.get(qualified_name)
    return set(info.mutated) if info is not None else set()


def _parse_schemas(op: OpOverload, mutated: set[str]) -> list[_OpSchema]:
    """The overloads of `op` as PyTorch would declare them: one schema, or two for an op taking
    ``*, Tensor? out=None`` (Ember's form of an ``.out`` overload): the functional one without
    ``out`` and ``<name>.out`` taking ``Tensor(a!) out``. `mutated` names the arguments
    ember.library recorded the op writing."""
    text = op.schema
    head, arrow, tail = text.partition(") ->")
    open_paren = head.find("(")
    if not arrow or open_paren == -1:
        raise ValueError(f"schema: cannot read '{text}'")
    name = head[:open_paren]
    arguments: list[_SchemaArgument] = []
    kwarg_only = False
    for item in _split_top_level(head[open_paren + 1:]):
        if item == "*":
            kwarg_only = True
            continue
        arguments.append(_parse_argument(item, kwarg_only))
    opname = op.name.split("::", 1)[-1]
    in_place = opname.endswith("_") and not opname.endswith("__") and bool(arguments)
    if in_place:
        mutated = mutated | {arguments[0].name}  # an in-place op writes its first argument (Tensor(a!) self)
    for arg in arguments:
        arg.is_write = arg.is_write or arg.name in mutated
    tail = tail.strip()
    if tail.startswith("("):
        tail = tail[1:-1]
    returns = []
    for item in _split_top_level(tail):
        type_text, written, rest = _read_type(item)
        returns.append(_SchemaArgument(rest, type_text, is_write=written))
    if in_place and len(returns) == 1 and returns[0].type == "Tensor" and arguments[0].type == "Tensor":
        returns[0].is_write = True  # and returns it: -> Tensor(a!)
    out = arguments[-1] if arguments else None
    if out is None or out.name != "out" or not out.kwarg_only or out.type != "Tensor?" or out._default_text != "None":
        return [_OpSchema(name, "", arguments, returns)]
    functional = _OpSchema(name, "", arguments[:-1], returns)
    out_arg = _SchemaArgument("out", "Tensor", kwarg_only=True, is_write=True)
    out_returns = [_SchemaArgument(r.name, r.type, is_write=len(returns) == 1 and r.type == "Tensor")
                   for r in returns]
    return [functional, _OpSchema(name, "out", [*arguments[:-1], out_arg], out_returns)]


def _schema_to_signature(schema: _OpSchema) -> inspect.Signature:
    """The Python signature PyTorch gives a schema."""
    P = inspect.Parameter
    parameters: list[inspect.Parameter] = []
    for arg in schema.arguments:
        name = "input" if arg.name == "self" else arg.name
        kind = P.KEYWORD_ONLY if arg.kwarg_only else P.POSITIONAL_OR_KEYWORD
        if keyword.iskeyword(name):
            # `from` (uniform_'s bound) cannot be a keyword parameter: it and everything before it
            # become positional-only.
            if kind is not P.POSITIONAL_OR_KEYWORD:
                raise AssertionError(f"Expected POSITIONAL_OR_KEYWORD, got {kind}")
            kind = P.POSITIONAL_ONLY
            parameters = [p.replace(kind=P.POSITIONAL_ONLY) for p in parameters]
        default = arg.default_value if arg.has_default_value() else P.empty
        parameters.append(P(name, kind, default=default, annotation=_python_type(arg.type)))
    ret_types = [_python_type(r.type) for r in schema.returns]
    ret: Any = None if not ret_types else ret_types[0] if len(ret_types) == 1 else tuple(ret_types)
    return inspect.Signature(parameters, return_annotation=ret)


_SIGNATURES: dict[str, tuple[str, set[str], list[inspect.Signature], list[_OpSchema]]] = {}


def _signatures_of(op: OpOverload) -> tuple[list[inspect.Signature], list[_OpSchema]]:
    """`op`'s signatures and schemas, cached by op name; parsed again when its schema text or what
    ember.library records it writing has changed since."""
    mutated = _mutated_by_library(op.name)
    cached = _SIGNATURES.get(op.name)
    if cached is None or cached[0] != op.schema or cached[1] != mutated:
        schemas = _parse_schemas(op, mutated)
        cached = _SIGNATURES[op.name] = (op.schema, mutated, [_schema_to_signature(s) for s in schemas], schemas)
    return list(cached[2]), list(cached[3])


def _native_op(fn: Any) -> OpOverload | None:
    """The op a native function of ember binds (``ember.add`` -> ``ember.ops.aten.add``), or None:
    PyTorch's lookup of a builtin among its aten ops."""
    from .._ops import _find

    fn = inspect.unwrap(fn) if callable(fn) else fn
    if not isinstance(fn, types.BuiltinFunctionType):
        return None
    module, name = getattr(fn, "__module__", None) or "", getattr(fn, "__name__", "")
    if module != "ember" and not module.startswith("ember."):
        return None
    return _find(f"aten::{name}")


# --- binding --------------------------------------------------------------------------------------


def _bind(sig: inspect.Signature, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    """``sig.bind(*args, **kwargs)`` with the TypeError messages of PyTorch's fast binder."""
    P = inspect.Parameter
    params = list(sig.parameters.values())
    if any(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in params):
        return sig.bind(*args, **kwargs)
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    if len(args) > len(positional):
        raise TypeError(f"Too many positional arguments: expected max {len(positional)}, got {len(args)}")
    bound: dict[str, Any] = {}
    for i, p in enumerate(params):
        if p.kind is P.POSITIONAL_ONLY and p.name in kwargs:
            raise TypeError(f"Got some positional-only arguments passed as keyword arguments: '{p.name}'")
        if p.kind is not P.KEYWORD_ONLY and i < len(args):
            if p.name in kwargs:
                raise TypeError(f"Multiple values for argument '{p.name}'")
            bound[p.name] = args[i]
        elif p.kind is not P.POSITIONAL_ONLY and p.name in kwargs:
            bound[p.name] = kwargs[p.name]
        elif p.default is P.empty:
            raise TypeError(f"Missing required argument '{p.name}'")
    for name in kwargs:
        if name not in sig.parameters:
            raise TypeError(f"Got an unexpected keyword argument '{name}'")
    return inspect.BoundArguments(sig, bound)  # type: ignore[arg-type]


def _normalize_with(sig: inspect.Signature, args: tuple, kwargs: dict,
                    normalize_to_only_use_kwargs: bool) -> ArgsKwargsPair | None:
    """`args`/`kwargs` bound to `sig`, defaults filled; None for a signature with ``*args``,
    ``**kwargs`` or positional-only parameters (save uniform_'s ``input, from, to, generator``)."""
    P = inspect.Parameter
    names = list(sig.parameters)
    plain = all(p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY) for p in sig.parameters.values())
    if not plain and names != ["input", "from", "to", "generator"]:
        return None
    bound = _bind(sig, args, kwargs)
    bound.apply_defaults()
    new_args, new_kwargs = [], {}
    for i, name in enumerate(names):
        if not normalize_to_only_use_kwargs and i < len(args):
            new_args.append(bound.arguments[name])
        else:
            new_kwargs[name] = bound.arguments[name]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)


# --- public functions -----------------------------------------------------------------------------


def get_signature_for_torch_op(op: Callable, return_schemas: bool = False) -> Any:
    """The ``inspect.Signature``s of an op's overloads (the op's, and its ``.out`` form when it
    takes ``out=``), for an op (``ember.ops.aten.add``) or a native function of ember that binds
    one (``ember.add``).
    None when `op` has no schema (a Python function such as ``ember.nn.functional.relu``). With
    ``return_schemas`` it is ``(signatures, schemas)``, ``(None, None)`` when there is none."""
    target = op if isinstance(op, OpOverload) else _native_op(op)
    if target is None:
        return (None, None) if return_schemas else None
    signatures, schemas = _signatures_of(target)
    return (signatures, schemas) if return_schemas else signatures


def create_type_hint(x: Any) -> Any:
    """A type hint for a list or tuple of types: ``list[T]`` / ``tuple[T, ...]`` with T the one
    of them the others subclass (``Any`` when there is none, or the sequence is empty); any other
    `x` is returned as it is. A sequence of non-types warns and comes back unchanged."""
    try:
        if isinstance(x, (list, tuple)):
            wrap = (lambda t: list[t]) if isinstance(x, list) else (lambda t: tuple[t, ...])
            if not x:
                return wrap(Any)
            base = x[0]
            for t in x:
                if issubclass(t, base):
                    continue
                if issubclass(base, t):
                    base = t
                else:
                    return wrap(Any)
            return wrap(base)
    except Exception:
        warnings.warn(f"We were not able to successfully create type hint from the type {x}", stacklevel=2)
    return x


def type_matches(signature_type: Any, argument_type: Any) -> bool:
    """Whether an argument of type `argument_type` fits a parameter annotated `signature_type`:
    subclasses fit, one member of a ``Union`` is enough, ``list[T]`` takes a list or homogeneous
    tuple of T (and an int for ``list[int]``), an ``int`` schema type takes a dtype, and
    ``numbers.Number`` takes int and float."""
    from .. import dtype

    if signature_type is argument_type:
        return True
    origin = getattr(signature_type, "__origin__", signature_type)
    if origin is typing.Union and signature_type != argument_type:
        return any(type_matches(member, argument_type) for member in typing.get_args(signature_type))
    if getattr(signature_type, "__origin__", None) is list:
        element = typing.get_args(signature_type)[0]
        if argument_type is int and element is int:
            return True
        if not inspect.isclass(element):
            warnings.warn(f"Does not support nested parametric types, got {signature_type}. Please file a bug.",
                          stacklevel=2)
            return False
        if getattr(argument_type, "__origin__", None) is list:
            return issubclass(typing.get_args(argument_type)[0], element)
        if typing.get_origin(argument_type) is not tuple:
            return False
        members = typing.get_args(argument_type)
        return members == ((),) or all(m is Ellipsis or issubclass(m, element) for m in members)
    if signature_type is int and argument_type is dtype:
        return True
    if signature_type is numbers.Number and argument_type in (int, float):
        return True
    if inspect.isclass(argument_type) and inspect.isclass(signature_type):
        return issubclass(argument_type, signature_type)
    return False


def _matching(signatures: list[inspect.Signature], args: tuple, kwargs: dict) -> list[int]:
    """Indices of the signatures the call binds to."""
    found = []
    for i, sig in enumerate(signatures):
        try:
            _bind(sig, args, kwargs)
        except TypeError:
            continue
        found.append(i)
    return found


def _types_fit(sig: inspect.Signature, arg_types: tuple, kwarg_types: dict) -> bool:
    try:
        bound = _bind(sig, arg_types, kwarg_types)
    except TypeError:
        return False
    return all(type_matches(sig.parameters[name].annotation, t) for name, t in bound.arguments.items())


def normalize_function(target: Callable, args: tuple, kwargs: dict | None = None, arg_types: tuple | None = None,
                       kwarg_types: dict | None = None,
                       normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """The call ``target(*args, **kwargs)`` with its arguments matched to `target`'s signature:
    positional ones stay positional (all become keywords with `normalize_to_only_use_kwargs`) and
    defaults fill the rest. None when the signature has ``*args``, ``**kwargs`` or positional-only
    parameters, or an op's schema does not take these arguments; a Python function that does not
    take them raises TypeError. `arg_types` / `kwarg_types` pick among overloads that all match.
    Modules are normalize_module's."""
    if kwargs is None:
        kwargs = {}
    if not isinstance(target, (OpOverload, types.BuiltinFunctionType)) and hasattr(target, "_op"):
        target = target._op  # a wrapper of an op (ExecuTorch's EdgeOpOverload in PyTorch)
    analysed = target if isinstance(target, OpOverload) else inspect.unwrap(target) if callable(target) else target
    if not isinstance(analysed, (OpOverload, types.BuiltinFunctionType)):
        if not callable(analysed):
            raise AssertionError(f"target_for_analysis must be callable, got {type(analysed)}")
        return _normalize_with(inspect.signature(analysed), tuple(args), dict(kwargs), normalize_to_only_use_kwargs)
    signatures = get_signature_for_torch_op(target)
    if not signatures:
        return None
    matched = _matching(signatures, tuple(args), dict(kwargs))
    if not matched:
        return None
    if len(matched) == 1:
        return _normalize_with(signatures[matched[0]], tuple(args), dict(kwargs), normalize_to_only_use_kwargs)
    if arg_types is None and kwarg_types is None:
        from .. import typename

        listing = "\n".join(str(signatures[i]) for i in matched)
        raise RuntimeError(f"Tried to normalize arguments to {typename(target)} but the schema match was "
                           "ambiguous! Please provide argument types to the normalize_arguments() call. "
                           f"Available schemas:\n{listing}")
    for sig in signatures:
        if _types_fit(sig, tuple(arg_types or ()), dict(kwarg_types or {})):
            return _normalize_with(sig, tuple(args), dict(kwargs), normalize_to_only_use_kwargs)
    return None


def normalize_module(root: Any, target: str, args: tuple, kwargs: dict | None = None,
                     normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """The call of ``root``'s submodule at `target` with its arguments matched to the submodule's
    ``forward``, as normalize_function does; None unless the submodule is an instance of one of
    ``ember.nn``'s own classes (not a subclass). A `target` root lacks raises RuntimeError."""
    from .. import nn

    try:
        submodule = root.get_submodule(target)
    except AttributeError as e:
        raise RuntimeError(f"Tried to normalize node with target {target} but root did not have that target!") from e
    cls = type(submodule)
    if getattr(nn, getattr(cls, "__name__", ""), None) is not cls:
        return None
    sig = inspect.signature(inspect.unwrap(submodule.forward))
    return _normalize_with(sig, tuple(args), dict(kwargs or {}), normalize_to_only_use_kwargs)


def check_for_mutable_operation(target: Callable, args: tuple, kwargs: dict) -> None:
    """Raises RuntimeError when ``target(*args, **kwargs)`` calls an op that writes to an
    argument: an in-place op, one ``ember.library`` declared mutating, or any op given ``out=``
    (its ``.out`` overload).
    Best effort, as in PyTorch: a call that fits no schema, or several, passes."""
    signatures, schemas = get_signature_for_torch_op(target, return_schemas=True)
    if not signatures or not schemas:
        return
    matched = _matching(signatures, tuple(args), dict(kwargs))
    if len(matched) != 1:
        return
    schema = schemas[matched[0]]
    if schema.is_mutable:
        raise RuntimeError(f"Tried to trace mutable operation {schema}. FX only supports functional code, so "
                           "operations that mutate operands in-place (e.g. via `out` arguments) are not supported")
