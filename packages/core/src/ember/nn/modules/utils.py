"""ember.nn.modules.utils (torch.nn.modules.utils): consume_prefix_in_state_dict_if_present, and
the private argument helpers _single / _pair / _triple / _quadruple / _ntuple that custom layers
ported from PyTorch import from here."""

from __future__ import annotations

import collections.abc
from typing import Any

from .._functional_utils import _ntuple as _repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse"):
    """A parser: an iterable as a tuple (its length unchecked, as PyTorch), anything else
    repeated n times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return _repeat(x, n, name)

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """t reversed, each element repeated n times: Conv's padding in F.pad's order."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip prefix from the keys of state_dict (and of its _metadata) in place, where present:
    a DataParallel / DDP checkpoint ('module.' keys) then loads into the bare model."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata.keys()):
        # '' is the wrapper's own entry, kept; 'module' (the prefix without its dot) and
        # 'module.x.y' are the wrapped model's
        if len(key) == 0:
            continue
        if key == prefix.replace(".", "") or key.startswith(prefix):
            metadata[key[len(prefix):]] = metadata.pop(key)
