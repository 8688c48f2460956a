"""Pytrees for the function transforms: a Tensor, or tuples, lists and dicts of them (nested)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class _TreeSpec:
    """A pytree's structure: kind is None for a leaf, else the container type (keys for a dict)."""

    kind: type | None = None
    keys: tuple = ()
    children: tuple = ()

    def __str__(self) -> str:
        if self.kind is None:
            return "*"
        parts = [str(c) for c in self.children]
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self.keys, parts, strict=True)) + "}"
        if self.kind is list:
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


_LEAF = _TreeSpec()


def _flatten(tree) -> tuple[list, _TreeSpec]:
    """The leaves of tree (depth first) and its structure; containers are tuples (namedtuples
    included), lists and dicts, anything else is a leaf."""
    if isinstance(tree, dict):
        keys, values = tuple(tree.keys()), tuple(tree.values())
    elif isinstance(tree, (tuple, list)):
        keys, values = (), tuple(tree)
    else:
        return [tree], _LEAF
    leaves, specs = [], []
    for value in values:
        sub_leaves, sub_spec = _flatten(value)
        leaves += sub_leaves
        specs.append(sub_spec)
    return leaves, _TreeSpec(type(tree), keys, tuple(specs))


def _unflatten(spec: _TreeSpec, leaves):
    """Rebuilds the structure of spec from leaves (an iterable consumed in order)."""
    leaves = iter(leaves)

    def build(s: _TreeSpec):
        if s.kind is None:
            return next(leaves)
        children = [build(c) for c in s.children]
        if issubclass(s.kind, dict):
            return s.kind(zip(s.keys, children, strict=True))
        if issubclass(s.kind, tuple) and hasattr(s.kind, "_fields"):  # a namedtuple
            return s.kind(*children)
        return s.kind(children)

    return build(spec)


def _tree_map(fn, tree):
    leaves, spec = _flatten(tree)
    return _unflatten(spec, [fn(leaf) for leaf in leaves])
