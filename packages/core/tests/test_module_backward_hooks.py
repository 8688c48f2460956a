"""nn.Module's backward hooks (full, pre, legacy), the global module hooks of
nn.modules.module, and the smaller Module methods (type, cuda, to_empty, compile,
set_submodule, call_super_init)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.modules import module as module_mod


def _linear():
    ember.manual_seed(0)
    return nn.Linear(3, 2).double()


def test_full_backward_hook_and_pre_hook_see_the_gradients():
    lin = _linear()
    seen = []
    lin.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", m, go)))
    lin.register_full_backward_hook(lambda m, gi, go: seen.append(("full", m, gi, go)))
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    lin(x).sum().backward()
    (kind0, m0, go0), (kind1, m1, gi1, go1) = seen
    assert (kind0, kind1) == ("pre", "full") and m0 is lin and m1 is lin
    np.testing.assert_array_equal(go0[0].numpy(), np.ones((4, 2)))
    np.testing.assert_array_equal(go1[0].numpy(), np.ones((4, 2)))
    np.testing.assert_allclose(gi1[0].numpy(), np.ones((4, 2)) @ lin.weight.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), gi1[0].numpy(), rtol=1e-12)


def test_hooks_can_replace_gradients():
    lin = _linear()
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    lin(x).sum().backward()
    base_x, base_w = x.grad.clone(), lin.weight.grad.clone()
    x.grad = None
    lin.weight.grad = None
    h1 = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
    h2 = lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 2,))
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 3 * base_w.numpy(), rtol=1e-12)  # grad_output tripled
    np.testing.assert_allclose(x.grad.numpy(), 6 * base_x.numpy(), rtol=1e-12)  # and grad_input doubled
    h1.remove()
    h2.remove()
    x.grad = None
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), base_x.numpy(), rtol=1e-12)


class TwoWay(nn.Module):
    """Two positional inputs, one of them not a tensor; two outputs, one unused."""

    def forward(self, a, scale, b):
        return a * scale + b, a - b


def test_tuples_have_one_entry_per_argument_and_output():
    seen = []
    mod = TwoWay()
    mod.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    a = ember.randn(3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(3, dtype=ember.float64)  # needs no gradient
    first, _ = mod(a, 2.0, b)
    first.sum().backward()
    (gi, go), = seen
    assert len(gi) == 3 and gi[1] is None
    np.testing.assert_array_equal(gi[0].numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(gi[2].numpy(), np.zeros(3))  # a tensor needing no gradient: zeros, as PyTorch
    assert len(go) == 2 and go[1] is None  # the unused output gets no gradient
    np.testing.assert_array_equal(go[0].numpy(), np.ones(3))


def test_no_input_needs_a_gradient():
    lin = _linear()
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
    lin(ember.randn(2, 3, dtype=ember.float64)).sum().backward()
    assert seen == [(None,)]
    assert lin.weight.grad is not None
    lin2 = _linear()
    lin2.register_full_backward_hook(lambda m, gi, go: (ember.ones(2, 3),))
    with pytest.raises(RuntimeError, match="Backward hook for Modules where no input requires gradient should always "
                                           "return None or None for all gradients."):
        lin2(ember.randn(2, 3, dtype=ember.float64)).sum().backward()


def test_hook_order_through_a_sequential():
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    order = []
    for name, child in net.named_children():
        child.register_full_backward_pre_hook(lambda m, go, name=name: order.append(("pre", name)))
        child.register_full_backward_hook(lambda m, gi, go, name=name: order.append(("full", name)))
    net(ember.randn(5, 3, requires_grad=True)).sum().backward()
    assert order == [("pre", "2"), ("full", "2"), ("pre", "1"), ("full", "1"), ("pre", "0"), ("full", "0")]


def test_prepend_and_errors():
    lin = _linear()
    order = []
    lin.register_full_backward_hook(lambda m, gi, go: order.append("first"))
    lin.register_full_backward_hook(lambda m, gi, go: order.append("prepended"), prepend=True)
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    lin(x).sum().backward()
    assert order == ["prepended", "first"]
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks on a "
                                           "single Module"):
        lin.register_backward_hook(lambda m, gi, go: None)
    bad = _linear()
    bad.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but "
                                           "expected 1"):
        bad(x).sum().backward()
    bad_pre = _linear()
    bad_pre.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 2, but "
                                           "expected 1"):
        bad_pre(x).sum().backward()


class Scale(nn.Module):
    def forward(self, x):
        return (x + 1) * 3  # the last node is the multiplication


def test_legacy_backward_hook_sees_the_last_node():
    mod = Scale()
    seen = []
    mod.register_backward_hook(lambda m, gi, go: seen.append((m, gi, go)))
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    with pytest.warns(FutureWarning, match="Using a non-full backward hook"):
        out = mod(x)
    out.sum().backward()
    (m, gi, go), = seen
    assert m is mod
    np.testing.assert_array_equal(go[0].numpy(), np.ones((4, 3)))
    np.testing.assert_array_equal(gi[0].numpy(), np.full((4, 3), 3.0))  # the multiplication's input gradient
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        mod.register_full_backward_hook(lambda m, gi, go: None)


def test_global_forward_and_backward_hooks():
    lin = _linear()
    calls = []
    handles = [
        module_mod.register_module_forward_pre_hook(lambda m, args: calls.append(("fpre", type(m).__name__))),
        module_mod.register_module_forward_hook(lambda m, args, out: calls.append(("fwd", type(m).__name__))),
        module_mod.register_module_full_backward_pre_hook(lambda m, go: calls.append(("bpre", type(m).__name__))),
        module_mod.register_module_full_backward_hook(lambda m, gi, go: calls.append(("bwd", type(m).__name__))),
    ]
    lin.register_forward_hook(lambda m, args, out: calls.append(("own fwd", type(m).__name__)))
    try:
        x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
        lin(x).sum().backward()
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks as a "
                                               "global Module hook"):
            module_mod.register_module_backward_hook(lambda m, gi, go: None)
    finally:
        for h in handles:
            h.remove()
        module_mod._global_is_full_backward_hook = None
    assert calls == [("fpre", "Linear"), ("fwd", "Linear"), ("own fwd", "Linear"), ("bpre", "Linear"),
                     ("bwd", "Linear")]
    calls.clear()
    lin(x)
    assert calls == [("own fwd", "Linear")]


def test_global_registration_hooks_can_replace_the_value():
    replaced = nn.Parameter(ember.zeros(2))
    seen = []
    handles = [
        module_mod.register_module_parameter_registration_hook(
            lambda m, name, p: (seen.append(("param", name)), replaced)[1] if name == "bias" else None),
        module_mod.register_module_buffer_registration_hook(lambda m, name, b: seen.append(("buffer", name))),
        module_mod.register_module_module_registration_hook(lambda m, name, sub: seen.append(("module", name))),
    ]
    try:
        lin = nn.Linear(3, 2)
        lin.register_buffer("steps", ember.zeros(()))
        holder = nn.Module()
        holder.inner = lin
    finally:
        for h in handles:
            h.remove()
    assert lin.bias is replaced
    assert ("param", "bias") in seen and ("buffer", "steps") in seen and ("module", "inner") in seen
    seen.clear()
    nn.Linear(2, 2)
    assert seen == []


def test_module_type_cuda_to_empty_compile_set_submodule():
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert net.type(ember.float64) is net and net[0].weight.dtype == ember.float64
    net.type("torch.FloatTensor")
    assert net[0].weight.dtype == ember.float32 and net[1].num_batches_tracked.dtype == ember.float32
    with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
        nn.Linear(2, 2).cuda()
    assert nn.ReLU().cuda().__class__ is nn.ReLU  # nothing to move
    lin = nn.Linear(4, 5)
    weight = lin.weight
    assert lin.to_empty(device="cpu") is lin
    assert lin.weight is weight and lin.weight.shape == (5, 4) and lin.weight.dtype == ember.float32
    x = ember.randn(3, 2)
    model = nn.Sequential(nn.Linear(2, 2))
    expected = model(x).detach()
    assert model.compile() is None
    np.testing.assert_array_equal(model(x).detach().numpy(), expected.numpy())
    with pytest.raises(RuntimeError, match="Invalid backend"):
        model.compile(backend="no-such-backend")
    outer = nn.Sequential(nn.Sequential(nn.Linear(2, 2)))
    outer.set_submodule("0.0", nn.ReLU())
    assert isinstance(outer[0][0], nn.ReLU)
    with pytest.raises(AttributeError, match="has no attribute `missing`"):
        outer.set_submodule("0.missing", nn.ReLU(), strict=True)
    with pytest.raises(ValueError, match="`module` is not an nn.Module"):
        outer.set_submodule("0.0", 3)


def test_call_super_init_passes_arguments_on():
    class Mixin:
        def __init__(self, *args, **kwargs):
            self.got = (args, kwargs)

    class WithMixin(nn.Module, Mixin):
        call_super_init = True

    m = WithMixin(1, key=2)
    assert m.got == ((1,), {"key": 2}) and m.training
    with pytest.raises(TypeError, match=r"Linear.__init__\(\) got an unexpected keyword argument"):
        nn.Module.__init__(nn.Linear(1, 1), unknown=1)
    assert nn.Module.dump_patches is False and nn.Module.call_super_init is False


def test_no_warning_and_no_wrapping_without_hooks():
    lin = _linear()
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = lin(x)
    assert out.grad_fn.name() != "_IdentityBackward"
