"""ember.utils._pytree (torch.utils._pytree): nested containers of values ("pytrees") flattened to
their leaves and a TreeSpec of their structure, and rebuilt from them. ember.func's transforms use
it for their arguments and outputs.

Nodes: tuples, lists, dicts (keys in insertion order), named tuples, OrderedDicts, defaultdicts,
deques, and any type given to register_pytree_node; everything else, None included, is a leaf.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = ["LeafSpec", "SUPPORTED_NODES", "TreeSpec", "arg_tree_leaves", "map_only", "register_pytree_node", "tree_all",
           "tree_all_only", "tree_any", "tree_any_only", "tree_flatten", "tree_leaves", "tree_map", "tree_map_",
           "tree_map_only", "tree_map_only_", "tree_structure", "tree_unflatten", "treespec_pprint"]


class NodeDef(NamedTuple):
    """How a node type splits into (children, context) and is rebuilt from (children, context)."""

    type: type
    flatten_fn: Callable[[Any], tuple[list, Any]]
    unflatten_fn: Callable[[Iterable, Any], Any]


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(cls: type, flatten_fn: Callable[[Any], tuple[list, Any]],
                         unflatten_fn: Callable[[Iterable, Any], Any], *, serialized_type_name: str | None = None,
                         to_dumpable_context=None, from_dumpable_context=None, flatten_with_keys_fn=None) -> None:
    """Makes instances of `cls` nodes: flatten_fn(obj) gives (children, context), unflatten_fn(children,
    context) rebuilds one. (The serialization and key-path arguments are accepted for PyTorch's
    signature; Ember's TreeSpecs are not serialized.)"""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def _namedtuple_type(tree) -> type | None:
    cls = type(tree)
    return cls if issubclass(cls, tuple) and hasattr(cls, "_fields") else None


register_pytree_node(tuple, lambda t: (list(t), None), lambda values, _: tuple(values))
register_pytree_node(list, lambda t: (list(t), None), lambda values, _: list(values))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())),
                     lambda values, keys: dict(zip(keys, values, strict=True)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                     lambda values, keys: collections.OrderedDict(zip(keys, values, strict=True)))
register_pytree_node(collections.defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                     lambda values, ctx: collections.defaultdict(ctx[0], zip(ctx[1], values, strict=True)))
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen),
                     lambda values, maxlen: collections.deque(values, maxlen=maxlen))


class _NamedTupleNode:
    """The TreeSpec type of every named tuple (the context holds the class), as PyTorch names it."""

    __name__ = "namedtuple"


def _node_of(tree) -> tuple[type, NodeDef] | None:
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls, SUPPORTED_NODES[cls]
    if _namedtuple_type(tree) is not None:
        return _NamedTupleNode, NodeDef(_NamedTupleNode, lambda t: (list(t), type(t)),
                                        lambda values, cls: cls(*values))
    return None


@dataclasses.dataclass(eq=True)
class TreeSpec:
    """A pytree's structure: its node type, the context that type needs (dict keys, a named tuple's
    class, ...) and its children's specs."""

    type: Any
    context: Any
    children_specs: list

    @property
    def num_children(self) -> int:
        return len(self.children_specs)

    @property
    def num_leaves(self) -> int:
        return sum(c.num_leaves for c in self.children_specs)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def unflatten(self, leaves: Iterable) -> Any:
        return tree_unflatten(leaves, self)

    def __repr__(self, indent: int = 0) -> str:
        name = getattr(self.type, "__name__", str(self.type))
        context = repr(self.context)
        if not self.children_specs:
            return f"TreeSpec({name}, {context}, [])"
        inner = (",\n" + " " * (indent + 2)).join(c.__repr__(indent + 2) for c in self.children_specs)
        return f"TreeSpec({name}, {context}, [{inner}])"


class LeafSpec(TreeSpec):
    """The spec of a leaf (shown as *)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])

    @property
    def num_leaves(self) -> int:
        return 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self, indent: int = 0) -> str:
        return "*"


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeSpec]:
    """The leaves of `tree`, depth first, and its TreeSpec; is_leaf(subtree) may stop at a node."""
    leaves: list = []

    def walk(node) -> TreeSpec:
        found = None if is_leaf is not None and is_leaf(node) else _node_of(node)
        if found is None:
            leaves.append(node)
            return LeafSpec()
        node_type, definition = found
        children, context = definition.flatten_fn(node)
        return TreeSpec(node_type, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> Any:
    """The pytree of `treespec`'s structure holding `leaves`, in order."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")
    items = iter(leaves)

    def build(spec: TreeSpec):
        if spec.is_leaf():
            return next(items)
        children = [build(c) for c in spec.children_specs]
        if spec.type is _NamedTupleNode:
            return spec.context(*children)
        return SUPPORTED_NODES[spec.type].unflatten_fn(children, spec.context)

    return build(treespec)


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def arg_tree_leaves(*args, **kwargs) -> list:
    """The leaves of (args, kwargs) together."""
    return tree_leaves(args) + tree_leaves(kwargs)


def tree_map(func: Callable, tree, *rests, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """The pytree of tree's structure whose leaves are func(leaf, *the same leaves of rests);
    each of rests must have tree's structure (or contain it)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_leaves_like(spec, rest, is_leaf) for rest in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others, strict=True)], spec)


def _leaves_like(spec: TreeSpec, tree, is_leaf) -> list:
    leaves: list = []

    def walk(s: TreeSpec, node) -> None:
        if s.is_leaf():
            leaves.append(node)
            return
        found = _node_of(node)
        if found is None or found[0] is not s.type:
            raise ValueError(f"Node type mismatch; expected {getattr(s.type, '__name__', s.type)}, but got "
                             f"{type(node).__name__}.")
        children, context = found[1].flatten_fn(node)
        if len(children) != s.num_children or (s.type is not _NamedTupleNode and context != s.context):
            raise ValueError(f"Node context mismatch for {type(node).__name__}: expected {s.context}, got {context}.")
        for c, child in zip(s.children_specs, children, strict=True):
            walk(c, child)

    walk(spec, tree)
    return leaves


def tree_map_(func: Callable, tree, *rests, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """func(leaf, ...) for every leaf, for its effect; returns tree itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    for xs in zip(leaves, *[_leaves_like(spec, rest, is_leaf) for rest in rests], strict=True):
        func(*xs)
    return tree


def map_only(type_or_types) -> Callable[[Callable], Callable]:
    """Decorator: func applied to values of the given type(s); other values pass through."""

    def wrap(func: Callable) -> Callable:
        def wrapped(x):
            return func(x) if isinstance(x, type_or_types) else x

        return wrapped

    return wrap


def tree_map_only(type_or_types, func: Callable, tree, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """tree_map of func over the leaves of the given type(s); other leaves stay as they are."""
    return tree_map(map_only(type_or_types)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func: Callable, tree, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    return tree_map_(map_only(type_or_types)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred: Callable[[Any], bool], tree, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_all_only(type_or_types, pred: Callable[[Any], bool], tree, is_leaf=None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred: Callable[[Any], bool], tree, is_leaf=None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure with a * per leaf, as Python literals write it: ((*, *), {'a': *})."""
    if treespec.is_leaf():
        return "*"
    parts = [treespec_pprint(c) for c in treespec.children_specs]
    if treespec.type in (dict, collections.OrderedDict, collections.defaultdict):
        keys = treespec.context[1] if treespec.type is collections.defaultdict else treespec.context
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts, strict=True)) + "}"
    if treespec.type is list:
        return "[" + ", ".join(parts) + "]"
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
