"""torch.fx.passes.infra.pass_base: what a pass returns (``PassResult``) and the base class of
passes with pre- and postconditions (``PassBase``)."""

from __future__ import annotations

import abc
from collections import namedtuple

__all__ = ["PassResult", "PassBase"]


class PassResult(namedtuple("PassResult", ["graph_module", "modified"])):
    """A pass's result: the (maybe new) graph module, and whether the pass changed it."""

    __slots__ = ()

    def __new__(cls, graph_module, modified: bool) -> PassResult:
        return super().__new__(cls, graph_module, modified)


class PassBase(abc.ABC):
    """A pass as an object: calling it runs ``requires`` (preconditions), ``call`` (the pass,
    which subclasses implement) and ``ensures`` (postconditions) on the graph module."""

    def __call__(self, graph_module) -> PassResult | None:
        self.requires(graph_module)
        result = self.call(graph_module)
        self.ensures(graph_module)
        return result

    @abc.abstractmethod
    def call(self, graph_module) -> PassResult | None:
        """The pass: change `graph_module` (or make a new one) and say so in a PassResult."""

    def requires(self, graph_module) -> None:  # noqa: B027 - optional hook, empty by default
        """Checks the pass's preconditions on `graph_module` (nothing by default)."""

    def ensures(self, graph_module) -> None:  # noqa: B027 - optional hook, empty by default
        """Checks the pass's postconditions on `graph_module` (nothing by default)."""
