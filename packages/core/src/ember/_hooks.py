"""Hook registries shared by nn.Module and optim.Optimizer: an ordered dict of hooks keyed by
handle id, and the handle whose remove() takes its hook off again."""

from __future__ import annotations

import itertools
from collections import OrderedDict

__all__ = ["RemovableHandle", "add_hook"]


class RemovableHandle:
    """Returned by the hook registrations; remove() takes the hook off."""

    _next_id = itertools.count()

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = next(self._next_id)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def add_hook(hooks: OrderedDict, hook, prepend: bool = False) -> RemovableHandle:
    """Register `hook` last in `hooks` (first with prepend) and return its handle."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle
