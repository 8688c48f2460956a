"""torch.fx.passes.infra.pass_manager: ``PassManager`` runs a list of passes, ordered to satisfy
its constraints (``this_before_that_pass_constraint``), ``steps`` times or until a round changes
nothing; ``pass_result_wrapper`` adapts a pass that returns a module or None."""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Callable
from functools import wraps
from typing import Any

from ...graph_module import GraphModule
from .pass_base import PassResult

__all__ = ["PassManager", "pass_result_wrapper", "this_before_that_pass_constraint"]

logger = logging.getLogger(__name__)

Constraint = Callable[[Callable[..., Any], Callable[..., Any]], bool]


def _name(fn: Callable[..., Any]) -> str:
    return fn.__name__ if inspect.isfunction(fn) else type(fn).__name__


def pass_result_wrapper(fn: Callable[..., Any]) -> Callable[..., PassResult | None]:
    """`fn` made to return a PassResult: None means it changed the module it was given in place,
    a module is its result (both count as modified); a PassResult passes through."""
    if fn is None:
        return None

    @wraps(fn)
    def wrapped(module):
        result = fn(module)
        if result is None:
            return PassResult(module, True)
        if isinstance(result, PassResult):
            return result
        from ....nn import Module

        if isinstance(result, Module):
            return PassResult(result, True)
        return None

    if not inspect.isfunction(fn):
        wrapped.__name__ = type(fn).__name__
    return wrapped


def this_before_that_pass_constraint(this: Callable[..., Any], that: Callable[..., Any]) -> Constraint:
    """A constraint saying `this` runs before `that`: constraint(a, b) is False only for
    a = that, b = this (a may not come before b)."""

    def depends_on(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
        return a != that or b != this

    return depends_on


def _validate_pass_schedule_constraint(constraint: Constraint, passes: list) -> None:
    for i, a in enumerate(passes):
        for j, b in enumerate(passes[i + 1:], start=i + 1):
            if not constraint(a, b):
                raise RuntimeError(f"pass schedule constraint violated. Expected {b} before {a} but found {a} at "
                                   f"index {i} and {b} at index {j} in pass list.")


def _topological_sort_passes(passes: list, constraints: list[Constraint]) -> list:
    """The passes reordered so that every constraint holds (Kahn's algorithm, stable for passes
    the constraints leave free); RuntimeError naming the passes of a circular dependency."""
    if not constraints:
        return passes
    after = {p: [] for p in passes}  # p -> the passes that must run after p
    waiting = dict.fromkeys(passes, 0)  # how many passes must still run before p
    for a in passes:
        for b in passes:
            if a != b and any(not constraint(a, b) for constraint in constraints):
                after[b].append(a)  # a may not come before b
                waiting[a] += 1
    ready = deque(p for p in passes if waiting[p] == 0)
    order = []
    while ready:
        p = ready.popleft()
        order.append(p)
        for q in after[p]:
            waiting[q] -= 1
            if waiting[q] == 0:
                ready.append(q)
    if len(order) != len(passes):
        cycle = [p for p in passes if waiting[p] != 0]
        raise RuntimeError(f"Circular dependency detected within the following passes: {cycle}")
    return order


class PassManager:
    """Collects passes and constraints, and runs them on a module (torch's PassManager).

    passes: callables taking the module and returning a PassResult (see pass_result_wrapper);
    constraints: callables (a, b) -> False when pass a may not run before pass b; steps: the most
    rounds over the passes (a round that modifies nothing stops early); run_checks_after_each_pass:
    run ``check`` (see add_checks) after every pass too, not only before the first."""

    _validated: bool = False
    steps: int = 1

    def __init__(self, passes: list | None = None, constraints: list[Constraint] | None = None,
                 steps: int | None = None, run_checks_after_each_pass: bool = False,
                 suppress_check_failures: bool = False) -> None:
        self.passes = passes or []
        self.constraints = constraints or []
        if steps:
            self.steps = steps
        self.run_checks_after_each_pass = run_checks_after_each_pass
        self.suppress_check_failures = suppress_check_failures

    def add_pass(self, _pass: Callable[..., PassResult | None]) -> None:
        self.passes.append(_pass)
        self._validated = False

    def add_constraint(self, constraint: Constraint) -> None:
        self.constraints.append(constraint)
        self._validated = False

    def validate_constraints(self) -> None:
        """RuntimeError when the passes, in their current order, break a constraint."""
        if self._validated:
            return
        for constraint in self.constraints:
            _validate_pass_schedule_constraint(constraint, self.passes)
        self._validated = True

    def solve_constraints(self) -> None:
        """Reorders the passes so that every constraint holds."""
        self.passes = _topological_sort_passes(self.passes, self.constraints)
        self._validated = True

    def add_checks(self, check: Callable[[Any], None]) -> None:
        """Sets the check run on the module before the passes (and after each one with
        run_checks_after_each_pass): a function of the module alone."""
        if len(inspect.signature(check).parameters) != 1:
            raise TypeError("PassManager check function should only take in one variable, a module")
        self.check = check

    def check(self, module) -> None:
        """The module's invariants (none until add_checks sets a check)."""

    def __call__(self, module) -> PassResult:
        """Runs the passes in order on `module`, `steps` rounds or until a round modifies nothing;
        a GraphModule is recompiled after each pass. An error in a pass is re-raised as an
        Exception naming the pass and the passes before it."""
        if not self._validated:
            self.solve_constraints()
        self.check(module)
        overall = False
        for _ in range(self.steps):
            modified = False
            for i, fn in enumerate(self.passes):
                name = _name(fn)
                logger.debug("Running pass '%s'", name)
                try:
                    result = fn(module)
                    if not isinstance(result, PassResult) and not hasattr(result, "graph_module"):
                        raise TypeError(f"The result of the pass {name} should be type PassResult.Please wrap it "
                                        "with pass_result_wrapper()")
                    module = result.graph_module
                    modified = modified or result.modified
                    if isinstance(module, GraphModule):
                        logger.debug("Graph after pass '%s': %s", name, module.graph)
                        module.recompile()
                    if self.run_checks_after_each_pass:
                        self.check(module)
                except Exception as err:
                    before = [_name(p) for p in self.passes[:i]]
                    raise Exception(f"An error occurred when running the '{name}' pass after the following "  # noqa: TRY002 - PyTorch's type
                                    f"passes: {before}") from err
            overall = overall or modified
            if not modified:
                break
        return PassResult(module, overall)
