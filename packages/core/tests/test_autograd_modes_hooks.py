"""inference_mode, anomaly detection, backward-node hooks, set_materialize_grads and the release
of saved tensors after backward."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import ember
from ember.autograd import Function


def f64(values, requires_grad=False):
    return ember.tensor(values, dtype=ember.float64, requires_grad=requires_grad)


# ---- inference_mode ---------------------------------------------------------------------------

def test_inference_mode_records_nothing_and_marks_tensors():
    x = f64([1.0, 2.0], requires_grad=True)
    assert not ember.is_inference_mode_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        y = x * 2.0
        assert not y.requires_grad and y.grad_fn is None and y.is_inference()
        y.add_(1.0)  # in place inside the mode is fine
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled()
            assert not ember.ones(1).is_inference()
        view = x[0:1]
        assert not view.is_inference()  # a view of a normal tensor stays normal
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
    assert not x.is_inference()
    assert y.tolist() == [3.0, 5.0]


def test_inference_tensors_outside_the_mode():
    with ember.inference_mode():
        y = ember.ones(2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=r"Inplace update to inference tensor outside InferenceMode is not "
                                           r"allowed"):
        y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"Inplace update to inference tensor outside InferenceMode"):
        y[0] = 3.0
    with pytest.raises(RuntimeError, match=r"Setting requires_grad=True on inference tensor outside InferenceMode "
                                           r"is not allowed"):
        y.requires_grad_()
    w = f64([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Inference tensors cannot be saved for backward"):
        _ = w * y  # mul saves both inputs
    assert (w + y).requires_grad  # add saves nothing: allowed, as in PyTorch
    with pytest.raises(RuntimeError, match=r"Inference tensors do not track version counter"):
        _ = y._version
    c = y.clone()  # a clone is a normal tensor
    assert not c.is_inference()
    c.add_(1.0)
    (w * c).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_inference_mode_decorator_forms_and_threads():
    @ember.inference_mode
    def bare(x):
        return x * 2.0, ember.is_inference_mode_enabled()

    @ember.inference_mode()
    def called(x):
        return x * 2.0

    @ember.autograd.inference_mode(mode=False)
    def off(x):
        return ember.is_inference_mode_enabled()

    x = f64([1.0], requires_grad=True)
    y, on = bare(x)
    assert on and y.is_inference() and not ember.is_inference_mode_enabled()
    assert called(x).is_inference()
    with ember.inference_mode():
        assert off(x) is False
        seen = []
        t = threading.Thread(target=lambda: seen.append(ember.is_inference_mode_enabled()))
        t.start()
        t.join()
        assert seen == [False]  # thread-local


# ---- anomaly detection ------------------------------------------------------------------------

def test_detect_anomaly_names_the_node_and_its_forward_call():
    x = f64([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        assert ember.autograd.is_anomaly_enabled()
        y = ember.sqrt(x) * 0.0  # d sqrt at 0 is inf; inf * 0 is nan
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th output\."
                                               r"(.|\n)*Traceback of forward call(.|\n)*test_detect_anomaly_names"):
            y.sum().backward()
    assert not ember.autograd.is_anomaly_enabled()
    y = ember.sqrt(x) * 0.0
    y.sum().backward()  # off: no check
    assert np.isnan(x.grad.numpy()[0])


def test_set_detect_anomaly_and_check_nan_flag():
    prev = ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(True, check_nan=False)
    try:
        assert ember.autograd.is_anomaly_enabled() and not ember.autograd.is_anomaly_check_nan_enabled()
        x = f64([0.0], requires_grad=True)
        (ember.sqrt(x) * 0.0).sum().backward()  # no nan check
        assert np.isnan(x.grad.numpy()[0])
    finally:
        ember.autograd.set_detect_anomaly(prev)
    with ember.autograd.set_detect_anomaly(True):
        assert ember.autograd.is_anomaly_enabled()
    assert ember.autograd.is_anomaly_enabled() == prev


def test_anomaly_mode_adds_the_forward_stack_to_errors_from_backward():
    x = f64([1.0, 2.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x * 2.0
        y.register_hook(lambda g: g.reshape(1, 2, 1) * ember.ones(3, 1, 1, dtype=ember.float64))
        with pytest.raises(RuntimeError, match=r"(.|\n)*Error detected in MulBackward0(.|\n)*test_anomaly_mode_adds"):
            y.sum().backward()


# ---- node hooks -------------------------------------------------------------------------------

def test_node_prehook_and_posthook_see_and_replace_gradients():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    seen = {}

    def pre(grad_outputs):
        seen["pre"] = [g.tolist() for g in grad_outputs]
        return (grad_outputs[0] * 10.0,)

    def post(grad_inputs, grad_outputs):
        seen["post_in"] = [None if g is None else g.tolist() for g in grad_inputs]
        seen["post_out"] = [g.tolist() for g in grad_outputs]
        return (grad_inputs[0] + 1.0, grad_inputs[1])

    h1 = y.grad_fn.register_prehook(pre)
    h2 = y.grad_fn.register_hook(post)
    y.sum().backward()
    assert seen["pre"] == [[1.0, 1.0]]
    assert seen["post_out"] == [[10.0, 10.0]]  # after the pre hook
    assert seen["post_in"] == [[30.0, 30.0], None]  # no gradient for the constant
    assert x.grad.tolist() == [31.0, 31.0]
    h1.remove()
    h2.remove()
    x.grad = None
    y = x * 3.0
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_hooks_on_accumulate_grad_and_removal_with_context_manager():
    x = f64([1.0, 2.0], requires_grad=True)
    y = (x * 2.0).sum()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert acc.name() == "AccumulateGrad"
    calls = []
    with acc.register_prehook(lambda grads: calls.append(grads[0].tolist())):
        y.backward(retain_graph=True)
    y.backward()
    assert calls == [[2.0, 2.0]]
    assert x.grad.tolist() == [4.0, 4.0]


def test_node_hook_returning_the_wrong_count_raises():
    x = f64([1.0], requires_grad=True)
    y = x * 2.0
    y.grad_fn.register_prehook(lambda grads: (grads[0], grads[0]))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has returned an incorrect number of values \(got 2, but "
                                           r"expected 1\)"):
        y.sum().backward()


# ---- set_materialize_grads ----------------------------------------------------------------------

class TwoOutputs(Function):
    seen: list = []

    @staticmethod
    def forward(ctx, x, materialize):
        ctx.set_materialize_grads(materialize)
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, g0, g1):
        TwoOutputs.seen.append((g0 is None, g1 is None))
        total = None
        for g, k in ((g0, 2.0), (g1, 3.0)):
            if g is not None:
                total = g * k if total is None else total + g * k
        return total, None


@pytest.mark.parametrize("materialize", [True, False])
def test_set_materialize_grads(materialize):
    TwoOutputs.seen = []
    x = f64([1.0, 2.0], requires_grad=True)
    a, _ = TwoOutputs.apply(x, materialize)
    a.sum().backward()  # the second output gets no gradient
    assert TwoOutputs.seen == [(False, not materialize)]
    assert x.grad.tolist() == [2.0, 2.0]


# ---- saved tensors are released -----------------------------------------------------------------

def test_saved_tensors_are_released_after_backward():
    """Memory returns to its baseline: every tensor a node saved is freed by backward (checked by
    the allocator's live byte count), unless retain_graph keeps them."""
    gc.collect()
    x = ember.ones(1 << 16, dtype=ember.float64, requires_grad=True)
    baseline = ember._C._cpu_allocated_bytes()
    y = (x.exp() * x).sin().sum()  # saves exp's result and mul's (512 KiB each)
    assert ember._C._cpu_allocated_bytes() - baseline >= 2 * (1 << 19)
    y.backward(retain_graph=True)
    grad_bytes = x.grad.numel() * 8
    assert ember._C._cpu_allocated_bytes() - baseline >= 2 * (1 << 19) + grad_bytes  # retained
    x.grad = None
    y.backward()
    assert ember._C._cpu_allocated_bytes() - baseline == grad_bytes + 8  # x.grad and y are left
    del y
    gc.collect()
    assert ember._C._cpu_allocated_bytes() - baseline == grad_bytes
    x.grad = None
    assert ember._C._cpu_allocated_bytes() == baseline
