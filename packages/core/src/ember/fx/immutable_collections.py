"""The containers a Node keeps its arguments in: a list and a dict that refuse in-place change, so
every edit of a node's inputs goes through ``Node.args``/``Node.kwargs`` and keeps the use lists
right (torch.fx.immutable_collections)."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["immutable_dict", "immutable_list"]


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise NotImplementedError(f"'{type(self).__name__}' object does not support mutation. Assign a new value to "
                              "Node.args / Node.kwargs (or use Node.update_arg) instead.")


class immutable_list(list):  # noqa: N801 (PyTorch's name)
    """A list whose contents are fixed once made; hashable by its items."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple:
        return (immutable_list, (list(self),))


class immutable_dict(dict):  # noqa: N801 (PyTorch's name)
    """A dict whose contents are fixed once made; hashable by its items."""

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> tuple:
        return (immutable_dict, (dict(self),))
