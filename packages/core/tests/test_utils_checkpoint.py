"""Saved-tensor hooks on the native ops' saved tensors (Note [saved-tensor hooks]) and activation
checkpointing on top of them (ember.utils.checkpoint, torch.utils.checkpoint): both the reentrant
and the non-reentrant way, checked against the same computation without a checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck, gradgradcheck, graph
from ember.utils import checkpoint as cp

F64 = ember.float64


def t64(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# ---- saved-tensor hooks on native ops ----------------------------------------------------------------


def test_native_saves_pass_through_the_hooks():
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t.detach().numpy().copy()  # kept as a NumPy copy: the tensor itself is not held

    def unpack(arr):
        log.append(("unpack", arr.shape))
        return ember.from_numpy(arr)

    x = t64([0.5, -1.0, 2.0], requires_grad=True)
    w = t64([3.0, 4.0, 5.0], requires_grad=True)
    with graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * w).sum()  # exp saves its output; mul saves both inputs
    assert [k for k, _ in log] == ["pack", "pack", "pack"]
    y.backward()
    assert [k for k, _ in log].count("unpack") == 3
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, -1.0, 2.0]) * [3.0, 4.0, 5.0], rtol=1e-15)
    np.testing.assert_allclose(w.grad.numpy(), np.exp([0.5, -1.0, 2.0]), rtol=1e-15)


def test_hooked_saves_keep_their_place_in_the_graph():
    # Second derivatives need the unpacked inputs and outputs joined to the graph as the originals.
    x = t64([0.3, -0.7, 1.1], requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (x * x * x).sum() + x.exp().sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([0.3, -0.7, 1.1]) + np.exp([0.3, -0.7, 1.1]), rtol=1e-14)


def test_unpack_must_give_a_tensor():
    x = t64([1.0, 2.0], requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t, lambda p: "not a tensor"):
        y = x.exp().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type str"):
        y.backward()


def test_a_hook_running_ops_does_not_recurse():
    calls = []

    def pack(t):
        calls.append(1)
        return (t * 1).exp().log()  # ops that save tensors themselves, inside the hook

    x = t64([1.0, 2.0], requires_grad=True)
    with graph.saved_tensors_hooks(pack, lambda p: p):
        y = x.sin().sum()
    assert len(calls) == 1
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([1.0, 2.0]), rtol=1e-15)


def test_innermost_hooks_apply_and_pop_on_exit():
    outer, inner = [], []
    x = t64([1.0], requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: outer.append(1) or t, lambda p: p):
        with graph.saved_tensors_hooks(lambda t: inner.append(1) or t, lambda p: p):
            x.exp()
        x.exp()
    x.exp()
    assert len(inner) == 1 and len(outer) == 1


# ---- checkpoint: helpers ------------------------------------------------------------------------------


def _mlp(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 2)).double()


def _grads(model, x):
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


def _reference(model, x_values, seed):
    x = t64(x_values, requires_grad=True)
    ember.manual_seed(seed)
    out = model(x)
    out.square().sum().backward()
    grads = _grads(model, x)
    model.zero_grad()
    return out.detach().numpy(), grads


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gives_the_same_values_and_gradients(use_reentrant):
    model = _mlp()
    x_values = np.random.default_rng(1).standard_normal((5, 4))
    want_out, want = _reference(model, x_values, seed=7)
    x = t64(x_values, requires_grad=True)
    ember.manual_seed(7)
    out = cp.checkpoint(model, x, use_reentrant=use_reentrant)  # dropout's mask is replayed in the rerun
    out.square().sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want_out, rtol=1e-15)
    for got, expected in zip(_grads(model, x), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_non_reentrant_keeps_placeholders_and_reruns_once_per_backward():
    runs = []

    def f(x, *, scale):
        runs.append(1)
        return (x.exp().sin() * scale).sum()

    x = t64([0.1, 0.2], requires_grad=True)
    y = cp.checkpoint(f, x, use_reentrant=False, scale=2.0)
    assert len(runs) == 1
    y.backward(retain_graph=True)
    assert len(runs) == 2
    y.backward()  # a second backward reruns again
    assert len(runs) == 3
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.cos(np.exp([0.1, 0.2])) * np.exp([0.1, 0.2]), rtol=1e-14)


def test_non_reentrant_stops_the_rerun_early():
    after = []

    def f(x):
        y = x.exp().sin()  # the last tensor saved is sin's input
        after.append(1)
        return y.sum()

    x = t64([0.3, 0.4], requires_grad=True)
    cp.checkpoint(f, x, use_reentrant=False).backward()
    assert len(after) == 1  # the rerun stopped inside sin
    x.grad = None
    with cp.set_checkpoint_early_stop(False):
        cp.checkpoint(f, x, use_reentrant=False).backward()
    assert len(after) == 3
    np.testing.assert_allclose(x.grad.numpy(), np.cos(np.exp([0.3, 0.4])) * np.exp([0.3, 0.4]), rtol=1e-14)


def test_non_reentrant_works_with_autograd_grad_and_double_backward():
    def f(t):
        return cp.checkpoint(lambda u: (u.sin() * u).sum(), t, use_reentrant=False)

    x = t64([0.2, -0.5, 0.9], requires_grad=True)
    (g,) = ember.autograd.grad(f(x), x)
    np.testing.assert_allclose(g.numpy(), np.cos(x.detach().numpy()) * x.detach().numpy() + np.sin(x.detach().numpy()),
                               rtol=1e-14)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_nested_non_reentrant_checkpoints():
    def inner(u):
        return u.exp() * u

    def outer(u):
        return cp.checkpoint(inner, u.sin(), use_reentrant=False).sum()

    x = t64([0.1, 0.7], requires_grad=True)
    cp.checkpoint(outer, x, use_reentrant=False).backward()
    s = np.sin([0.1, 0.7])
    np.testing.assert_allclose(x.grad.numpy(), (np.exp(s) * s + np.exp(s)) * np.cos([0.1, 0.7]), rtol=1e-14)


def test_reentrant_refuses_autograd_grad_and_kwargs():
    x = t64([1.0, 2.0], requires_grad=True)
    y = cp.checkpoint(lambda t: t.exp().sum(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad"):
        ember.autograd.grad(y, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        cp.checkpoint(lambda t, scale: t * scale, x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported when use_reentrant=False"):
        cp.checkpoint(lambda t: t, x, use_reentrant=True, debug=True)


def test_reentrant_with_tuple_outputs_and_non_tensor_arguments():
    x = t64([1.0, 2.0], requires_grad=True)
    a, b = cp.checkpoint(lambda t, k: (t * k, t.exp()), x, 3.0, use_reentrant=True)
    (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 + np.exp([1.0, 2.0]), rtol=1e-15)


def test_determinism_check_and_save_count():
    calls = {"n": 0}

    def changing(x):  # the rerun slices differently
        calls["n"] += 1
        return (x[: 3 - calls["n"]] ** 2).sum()

    x = t64([1.0, 2.0, 3.0], requires_grad=True)
    y = cp.checkpoint(changing, x, use_reentrant=False)
    with pytest.raises(cp.CheckpointError, match=r"different metadata than during the forward pass\.\n"
                                                 r"tensor at position 0:\nsaved metadata: \{'shape': \[2\]"):
        y.backward()

    calls["n"] = 0

    def fewer(x):
        calls["n"] += 1
        return x.exp().sin().sum() if calls["n"] == 1 else x.exp().sum()

    y = cp.checkpoint(fewer, x, use_reentrant=False, debug=True)
    with pytest.raises(cp.CheckpointError, match=r"(?s)Number of tensors saved during forward: 2\n"
                                                 r"Number of tensors saved during recomputation: 1.*"
                                                 r"Saved during the forward pass:"):
        y.backward()


def test_checkpoint_argument_errors_and_default_warning():
    x = t64([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', 'none'\], but got maybe"):
        cp.checkpoint(lambda t: t, x, use_reentrant=False, determinism_check="maybe")
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        cp.checkpoint(lambda t: t * 2, x).sum().backward()
    assert x.grad.tolist() == [2.0]


def test_context_fn_wraps_forward_and_rerun():
    seen = []

    class Mark:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            seen.append(self.name)

        def __exit__(self, *exc):
            return False

    x = t64([0.5], requires_grad=True)
    cp.checkpoint(lambda t: t.exp().sum(), x, use_reentrant=False,
                  context_fn=lambda: (Mark("forward"), Mark("rerun"))).backward()
    assert seen == ["forward", "rerun"]


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential(use_reentrant, segments):
    model = _mlp(seed=3).eval()  # no dropout: segments do not replay random state across each other
    x_values = np.random.default_rng(2).standard_normal((3, 4))
    want_out, want = _reference(model, x_values, seed=0)
    x = t64(x_values, requires_grad=True)
    out = cp.checkpoint_sequential(model, segments, x, use_reentrant=use_reentrant)
    out.square().sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want_out, rtol=1e-15)
    for got, expected in zip(_grads(model, x), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        cp.checkpoint_sequential(model, 2, x, use_reentrant=use_reentrant, foo=1)


def test_helpers():
    a = t64([1.0], requires_grad=True)
    b = t64([2.0])
    da, db, c = cp.detach_variable((a, b, 3))
    assert da.requires_grad and not db.requires_grad and da.grad_fn is None and c == 3
    with pytest.raises(RuntimeError, match="Only tuple of tensors is supported. Got Unsupported input type: list"):
        cp.detach_variable([a])
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        cp.check_backward_validity((b,))
    assert cp.get_device_states(a, b) == ([], [])
    cp.set_device_states([], [])
    with pytest.raises(RuntimeError, match="no device random states"):
        cp.set_device_states([0], [b])
    assert cp.DefaultDeviceType.get_device_type() == "cpu"
    forward, rerun = cp.noop_context_fn()
    with forward, rerun:
        pass
    assert issubclass(cp.CheckpointError, RuntimeError)
    assert ember.utils.checkpoint is cp


def test_hooked_saves_read_what_the_hooks_kept():
    # as in PyTorch, no version check under hooks: this pack hook kept a copy, which a later
    # in-place write to the tensor does not change
    x = t64([1.0, 2.0], requires_grad=True)
    w = x * 1
    with graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (w * w).sum()  # mul saves w
    with ember.no_grad():
        w.add_(1)
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


# ---- GraphExecGroup ----------------------------------------------------------------------------------


def _two_outputs(calls):
    def f(x):
        calls.append(1)
        return x.sin().exp(), x.cos().exp()
    return f


def test_graph_exec_group_shares_one_rerun_between_backward_calls():
    calls = []
    a = t64([0.5, 1.0, -2.0], requires_grad=True)
    y1, y2 = cp.checkpoint(_two_outputs(calls), a, use_reentrant=False)
    with cp.GraphExecGroup() as group:
        assert cp.GraphExecGroup._get_current_group() is group
        (g1,) = ember.autograd.grad(y1.sum(), a, retain_graph=True)
        (g2,) = ember.autograd.grad(y2.sum(), a, retain_graph=True)
    assert cp.GraphExecGroup._get_current_group() is None
    assert len(calls) == 2  # the forward and one rerun for both backward calls
    x = np.array([0.5, 1.0, -2.0])
    np.testing.assert_allclose(g1.numpy(), np.cos(x) * np.exp(np.sin(x)), rtol=1e-12)
    np.testing.assert_allclose(g2.numpy(), -np.sin(x) * np.exp(np.cos(x)), rtol=1e-12)
    # a backward after the block reruns the region again
    (g3,) = ember.autograd.grad(y1.sum(), a, retain_graph=True)
    assert len(calls) == 3
    np.testing.assert_allclose(g3.numpy(), g1.numpy(), rtol=0)


def test_graph_exec_group_refuses_overlapping_backward_calls_and_nesting():
    a = t64([0.5, 1.0], requires_grad=True)
    y = cp.checkpoint(lambda x: x.sin().exp(), a, use_reentrant=False)
    with pytest.raises(cp.CheckpointError, match="already unpacked once. Performing two backward calls that overlap"):
        with cp.GraphExecGroup():
            y.sum().backward(retain_graph=True)
            y.sum().backward(retain_graph=True)
    # outside a group the same two calls each rerun the region
    a.grad = None
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.cos([0.5, 1.0]) * np.exp(np.sin([0.5, 1.0])), rtol=1e-12)
    with pytest.raises(RuntimeError, match="GraphExecGroup contexts cannot be nested"):
        with cp.GraphExecGroup(), cp.GraphExecGroup():
            pass
    assert cp.GraphExecGroup._get_current_group() is None
