"""ember.compile with a callable backend: the backend gets an FX GraphModule and the example
tensors, as torch.compile's custom backends do; what it returns runs the calls."""

import warnings

import pytest

import ember
import ember.nn as nn


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, gm, example_inputs):
        self.calls.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward


def test_module_is_captured_once_and_wrapped_like_optimized_module():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)).double()
    backend = Recorder()
    compiled = ember.compile(model, backend=backend)
    x = ember.randn(5, 4, dtype=ember.float64, requires_grad=True)
    assert ember.equal(compiled(x), model(x))
    assert len(backend.calls) == 1 and isinstance(backend.calls[0][0], ember.fx.GraphModule)
    assert backend.calls[0][1] == [(5, 4)]
    assert [n.op for n in backend.calls[0][0].graph.nodes].count("call_module") == 3
    compiled(ember.randn(7, 4, dtype=ember.float64))  # one graph serves every shape
    assert len(backend.calls) == 1
    assert list(compiled.state_dict())[0] == "_orig_mod.0.weight" and compiled._orig_mod is model
    assert getattr(compiled, "0") is model[0]  # attributes reach the original module
    # gradients flow through what the backend returned, into the original parameters
    compiled(x).sum().backward()
    assert model[0].weight.grad is not None and x.grad.shape == (5, 4)
    compiled.eval()  # a new training flag captures again
    compiled(x)
    assert len(backend.calls) == 2 and not model.training


def test_non_tensor_arguments_are_fixed_and_guard_the_graph():
    backend = Recorder()

    @ember.compile(backend=backend)
    def f(x, scale=2, flag=True):
        return x * scale if flag else x - scale

    x = ember.arange(3.0)
    assert ember.equal(f(x), x * 2) and ember.equal(f(x, 3, flag=False), x - 3)
    assert ember.equal(f(x), x * 2) and len(backend.calls) == 2
    assert [n.op for n in backend.calls[1][0].graph.nodes] == ["placeholder", "call_function", "output"]
    f(x, True)  # True is not 1: a graph of its own
    assert len(backend.calls) == 3


def test_uncapturable_forward_runs_eagerly_or_raises_with_fullgraph():
    def g(x):
        return x if x.sum() > 0 else -x

    backend = Recorder()
    compiled = ember.compile(g, backend=backend)
    with pytest.warns(UserWarning, match="running eagerly: the forward cannot be captured as one graph"):
        assert ember.equal(compiled(-ember.ones(2)), ember.ones(2))
    assert backend.calls == []
    with pytest.raises(RuntimeError, match=r"fullgraph=True\): the forward cannot be captured.*TraceError"):
        ember.compile(g, backend=backend, fullgraph=True)(ember.ones(2))

    def takes_list(xs):
        return xs[0] + xs[1]

    with pytest.raises(RuntimeError, match="holds tensors inside a container"):
        ember.compile(takes_list, backend=backend, fullgraph=True)([ember.ones(1), ember.ones(1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.compile(takes_list, backend=backend)([ember.ones(1), ember.ones(1)]).item() == 2.0
    with pytest.raises(TypeError, match="missing a required argument|missing 1 required positional"):
        ember.compile(takes_list, backend=backend)()


def test_backend_must_return_a_callable():
    with pytest.raises(TypeError, match="the compile backend returned int, not a callable"):
        ember.compile(lambda x: x + 1, backend=lambda gm, inputs: 3)(ember.ones(1))
