"""Hook registries shared by nn.Module and optim.Optimizer: an ordered dict of hooks keyed by
handle id, and the handle whose remove() takes its hook off again (torch.utils.hooks.RemovableHandle,
re-exported as ember.utils.hooks.RemovableHandle)."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["RemovableHandle", "add_hook"]


def _ref(d):
    """A weak reference to d where its type allows one (OrderedDict does, a plain dict does not:
    that one is held strongly), so a handle does not keep a dropped hook table alive."""
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle:
    """Returned by the hook registrations; remove() takes the hook off.

    hooks_dict holds the hooks by handle id; extra_dict (a dict or a list of dicts) holds more
    entries under the same id that remove() deletes too. Ids are unique across all handles."""

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref: tuple = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (_ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(_ref(d) for d in extra_dict)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        # a table that is gone comes back as a dead reference: remove() is then a no-op
        self.hooks_dict_ref = weakref.ref(OrderedDict()) if state[0] is None else _ref(state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 else None
        self.extra_dict_ref = () if extra is None else tuple(_ref(d) for d in extra if d is not None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, type: Any, value: Any, tb: Any) -> None:  # noqa: A002 - PyTorch's argument names
        self.remove()


def add_hook(hooks: OrderedDict, hook, prepend: bool = False) -> RemovableHandle:
    """Register `hook` last in `hooks` (first with prepend) and return its handle."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle
