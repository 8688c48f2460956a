"""CustomDecompTable (torch.export.decomp_utils): the op -> decomposition table that
``default_decompositions()`` returns and ``ExportedProgram.run_decompositions`` takes.

In PyTorch the table starts with the core ATen decompositions and fills in custom ops' own
decompositions lazily (``materialize``), so that deleting an entry is how an op is kept. Ember's
ops are its own core set, with no decomposition applied by default: the table starts empty, an
entry added decomposes that op, and ``materialize`` gives the plain dict a re-trace uses.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CustomDecompTable"]

_MISSING = object()


class CustomDecompTable(dict):
    """A dict of op -> function run (and recorded) in the op's place by ``run_decompositions``."""

    def __init__(self) -> None:
        super().__init__()
        self.has_materialized = False

    # reading, writing, updating, iterating and len() are a dict's

    def __delitem__(self, key: Any) -> None:
        self.pop(key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Removes ``key`` (that op is then kept as it is) and returns its decomposition; a key
        the table does not hold raises KeyError unless ``default`` is given."""
        if default is _MISSING:
            if not super().__contains__(key):
                raise KeyError(f"{key} doesn't exist in the table")
            return super().pop(key)
        return super().pop(key, default)

    def copy(self) -> CustomDecompTable:
        table = CustomDecompTable()
        table.update(self)
        table.has_materialized = self.has_materialized
        return table

    def materialize(self) -> dict:
        """The table as a plain dict (Ember has no lazily registered decompositions to add)."""
        self.has_materialized = True
        return dict(self.items())
