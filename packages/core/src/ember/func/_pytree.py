"""Pytrees for the function transforms: ember.utils._pytree's (tuples, lists, dicts, named tuples,
OrderedDicts, ... and registered nodes), in the argument order the transforms use."""

from __future__ import annotations

from ..utils._pytree import tree_flatten as _flatten
from ..utils._pytree import tree_map as _tree_map
from ..utils._pytree import tree_unflatten


def _unflatten(spec, leaves):
    return tree_unflatten(leaves, spec)


__all__ = ["_flatten", "_tree_map", "_unflatten"]
