"""ember.fx.passes.infra (torch.fx.passes.infra): PassBase, PassResult, pass_result_wrapper,
constraints and PassManager running passes over an FX GraphModule."""

import operator

import pytest

import ember
from ember import fx, nn
from ember.fx.passes.infra.pass_base import PassBase, PassResult
from ember.fx.passes.infra.pass_manager import (
    PassManager,
    pass_result_wrapper,
    this_before_that_pass_constraint,
)


class AddMul(nn.Module):
    def forward(self, x):
        return (x + 1) * 2


def replace_add_with_sub(gm):
    """Rewrites every add into a sub (a pass that edits in place and returns nothing)."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is operator.add:
            node.target = operator.sub


class MulToDiv(PassBase):
    def __init__(self):
        self.required = self.ensured = 0

    def requires(self, graph_module):
        self.required += 1

    def ensures(self, graph_module):
        self.ensured += 1

    def call(self, graph_module):
        changed = False
        for node in graph_module.graph.nodes:
            if node.op == "call_function" and node.target is operator.mul:
                node.target = operator.truediv
                changed = True
        return PassResult(graph_module, changed)


def test_pass_manager_runs_passes_until_nothing_changes():
    gm = fx.symbolic_trace(AddMul())
    mul_to_div = MulToDiv()
    seen = []
    manager = PassManager([pass_result_wrapper(replace_add_with_sub), mul_to_div], steps=3,
                          run_checks_after_each_pass=True)
    manager.add_checks(lambda module: seen.append(module.code.count("operator")))
    result = manager(gm)
    assert isinstance(result, PassResult) and result.modified and result.graph_module is gm
    x = ember.tensor([3.0, 5.0])
    assert gm(x).tolist() == [1.0, 2.0]  # (x - 1) / 2: the graph was recompiled
    # the wrapped pass always reports a change, so all three rounds run; the PassBase hooks run each time
    assert mul_to_div.required == mul_to_div.ensured == 3
    assert len(seen) == 1 + 3 * 2
    quiet = PassManager([mul_to_div], steps=5)
    assert quiet(gm) == PassResult(gm, False) and mul_to_div.required == 4  # one round: nothing changed


def test_constraints_order_and_validate_the_passes():
    def a(gm):
        return PassResult(gm, False)

    def b(gm):
        return PassResult(gm, False)

    def c(gm):
        return PassResult(gm, False)

    manager = PassManager([c, b, a], constraints=[this_before_that_pass_constraint(a, b),
                                                  this_before_that_pass_constraint(b, c)])
    with pytest.raises(RuntimeError, match="pass schedule constraint violated"):
        manager.validate_constraints()
    manager.solve_constraints()
    assert manager.passes == [a, b, c]
    manager.validate_constraints()
    manager.add_constraint(this_before_that_pass_constraint(c, a))
    with pytest.raises(RuntimeError, match="Circular dependency detected within the following passes"):
        manager.solve_constraints()


def test_pass_errors():
    gm = fx.symbolic_trace(AddMul())

    def first(module):
        return PassResult(module, False)

    def broken(module):
        return module  # not a PassResult

    with pytest.raises(Exception, match=r"An error occurred when running the 'broken' pass after the following passes: "
                                        r"\['first'\]") as info:
        PassManager([first, broken])(gm)
    assert isinstance(info.value.__cause__, TypeError) and "pass_result_wrapper" in str(info.value.__cause__)
    with pytest.raises(TypeError, match="should only take in one variable"):
        PassManager().add_checks(lambda module, extra: None)
    with pytest.raises(TypeError, match="abstract"):
        PassBase()
    assert pass_result_wrapper(None) is None
    assert pass_result_wrapper(lambda m: m)(gm) == PassResult(gm, True)
