"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and nn.LinearCrossEntropyOptions (PyTorch
2.13): the reference path and the chunked one against a float64 NumPy reference of the loss and its
three gradients, gradcheck, the options' validation and chunk sizes, the fallback warning, and
PyTorch's errors. (The results were also compared with PyTorch 2.13's for every reduction, with and
without class weights and bias, chunked or not: equal to 5e-15.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.nn import LinearCrossEntropyOptions as Options

RNG = np.random.default_rng(5)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def reference(x, w, b, t, cw, reduction, upstream=1.0, ignore=-100):
    """The loss, and d(upstream . loss)/d(x, w, b), in float64."""
    logits = x @ w.T + (0 if b is None else b)
    m = logits.max(1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(1, keepdims=True)))[:, 0]
    keep = t != ignore
    safe = np.where(keep, t, 0)
    scale = keep * (1.0 if cw is None else cw[safe])
    rows = (lse - logits[np.arange(len(t)), safe]) * scale
    soft = np.exp(logits - lse[:, None])
    soft[np.arange(len(t)), safe] -= 1
    dlogits = soft * scale[:, None]
    if reduction == "mean":
        loss, dlogits = rows.sum() / scale.sum(), dlogits / scale.sum()
    elif reduction == "sum":
        loss = rows.sum()
    else:
        loss = rows
    dlogits = dlogits * (np.reshape(upstream, (-1, 1)) if reduction == "none" else upstream)
    return loss, dlogits @ w, dlogits.T @ x, dlogits.sum(0)


CHUNKINGS = [None, Options(batch_chunk_size=1, chunking_method=None), Options(batch_chunk_size=3, chunking_method=None),
             Options(), Options(chunking_method="aspect_ratio:4", allow_retain_graph=True)]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", CHUNKINGS, ids=["reference", "rows1", "rows3", "auto", "aspect4"])
@pytest.mark.parametrize("with_bias,with_weight", [(False, False), (True, True)])
def test_matches_reference(reduction, options, with_bias, with_weight):
    x, w, b = RNG.standard_normal((10, 6)), RNG.standard_normal((7, 6)), RNG.standard_normal(7)
    t = np.array([0, 6, 3, -100, 2, 2, 5, 1, 4, 0])
    cw = RNG.random(7) if with_weight else None
    xe, we, be = _t(x, True), _t(w, True), _t(b, True)
    loss = F.linear_cross_entropy(xe, we, _t(t), linear_bias=be if with_bias else None,
                                  weight=None if cw is None else _t(cw), reduction=reduction, options=options)
    upstream = RNG.standard_normal(10) if reduction == "none" else 1.7
    want, gx, gw, gb = reference(x, w, b if with_bias else None, t, cw, reduction, upstream)
    np.testing.assert_allclose(loss.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    loss.backward(ember.tensor(upstream, dtype=ember.float64))
    np.testing.assert_allclose(xe.grad.numpy(), gx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(we.grad.numpy(), gw, rtol=1e-10, atol=1e-12)
    if with_bias:
        np.testing.assert_allclose(be.grad.numpy(), gb, rtol=1e-10, atol=1e-12)


def test_chunked_float32_and_half_inputs_compute_in_float32():
    x, w = RNG.standard_normal((33, 8)), RNG.standard_normal((40, 8))
    t = RNG.integers(0, 40, 33)
    want = reference(x, w, None, t, None, "mean")[0]
    got32 = F.linear_cross_entropy(_t(x.astype(np.float32)), _t(w.astype(np.float32)), _t(t), options=Options())
    assert got32.dtype == ember.float32
    np.testing.assert_allclose(got32.item(), want, rtol=1e-5)
    for low in (ember.float16, ember.bfloat16):
        xl, wl = _t(x).to(low).requires_grad_(), _t(w).to(low).requires_grad_()
        got = F.linear_cross_entropy(xl, wl, _t(t), options=Options(batch_chunk_size=8, chunking_method=None))
        assert got.dtype == low
        rounded = reference(xl.detach().double().numpy(), wl.detach().double().numpy(), None, t, None, "mean")
        np.testing.assert_allclose(got.float().item(), rounded[0], rtol=1e-2)
        got.backward()
        assert xl.grad.dtype == low and wl.grad.dtype == low
        np.testing.assert_allclose(wl.grad.double().numpy(), rounded[2], atol=2e-3)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_chunked_gradcheck(reduction):
    x, w, b = _t(RNG.standard_normal((5, 3)), True), _t(RNG.standard_normal((4, 3)), True), _t(RNG.standard_normal(4), True)
    t = _t(np.array([1, 0, 3, -100, 2]))
    cw = _t(RNG.random(4))
    opts = Options(batch_chunk_size=2, chunking_method=None, allow_retain_graph=True)
    assert gradcheck(lambda a, c, d: F.linear_cross_entropy(a, c, t, linear_bias=d, weight=cw, reduction=reduction,
                                                             options=opts), (x, w, b))


def test_second_backward_needs_allow_retain_graph():
    x, w = _t(RNG.standard_normal((4, 3)), True), _t(RNG.standard_normal((5, 3)), True)
    t = _t(np.array([0, 1, 2, 3]))
    loss = F.linear_cross_entropy(x, w, t, options=Options())
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="chunked backward called twice; retain_graph=True / double backward"):
        loss.backward()
    loss = F.linear_cross_entropy(x, w, t, options=Options(allow_retain_graph=True))
    x.grad = None
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy())
    rows = F.linear_cross_entropy(x, w, t, reduction="none", options=Options())  # recomputes: any number
    rows.sum().backward(retain_graph=True)
    rows.sum().backward()


def test_unbatched_empty_and_k_dimensional():
    x, w = RNG.standard_normal(6), RNG.standard_normal((5, 6))
    want = reference(x[None], w, None, np.array([3]), None, "mean")[0]
    for options in (None, Options()):
        np.testing.assert_allclose(F.linear_cross_entropy(_t(x), _t(w), ember.tensor(3), options=options).item(), want)
        assert F.linear_cross_entropy(_t(x), _t(w), ember.tensor(3), reduction="none", options=options).shape == ()
        empty = F.linear_cross_entropy(_t(np.zeros((0, 6))), _t(w), _t(np.zeros(0, np.int64)), options=options)
        assert math.isnan(empty.item())  # PyTorch's mean over no rows
        assert F.linear_cross_entropy(_t(np.zeros((0, 6))), _t(w), _t(np.zeros(0, np.int64)), reduction="none",
                                      options=options).shape == (0,)
        # no row counts (all ignored): a nan loss with zero gradients, on either path
        xe, we = _t(RNG.standard_normal((3, 6)), True), _t(w, True)
        loss = F.linear_cross_entropy(xe, we, _t(np.full(3, -100)), options=options)
        loss.backward()
        assert math.isnan(loss.item()) and not xe.grad.abs().sum().item() and not we.grad.abs().sum().item()
    # weight [C, d, in] and bias [C, d]: logits [N, C, d] against targets [N, d]
    xs, wk, bk = RNG.standard_normal((4, 6)), RNG.standard_normal((5, 3, 6)), RNG.standard_normal((5, 3))
    tk = RNG.integers(0, 5, (4, 3))
    logits = np.einsum("ni,cji->ncj", xs, wk) + bk
    lse = np.log(np.exp(logits).sum(1))
    want = (lse - np.take_along_axis(logits, tk[:, None], 1)[:, 0]).mean()
    got = F.linear_cross_entropy(_t(xs), _t(wk), _t(tk), linear_bias=_t(bk))
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)


def test_unsupported_options_warn_and_take_the_reference_path():
    x, w = _t(RNG.standard_normal((6, 4))), _t(RNG.standard_normal((5, 4)))
    t = _t(RNG.integers(0, 5, 6))
    with pytest.warns(UserWarning, match=r"``options`` ignored; chunked path needs .*label_smoothing=0.2"):
        got = F.linear_cross_entropy(x, w, t, label_smoothing=0.2, options=Options())
    np.testing.assert_allclose(got.item(), F.cross_entropy(F.linear(x, w), t, label_smoothing=0.2).item())
    probs = ember.softmax(_t(RNG.standard_normal((6, 5))), 1)
    with pytest.warns(UserWarning, match=r"target.dtype=ember.float64"):
        got = F.linear_cross_entropy(x, w, probs, options=Options())
    np.testing.assert_allclose(got.item(), F.cross_entropy(F.linear(x, w), probs).item())


def test_options_validate_and_size_chunks():
    for kwargs, message in [({"acc_policy": "x"}, "invalid acc_policy: 'x'"),
                            ({"chunking_method": "foo"}, "invalid chunking_method: 'foo'"),
                            ({"chunking_method": "aspect_ratio:0"}, "invalid chunking_method: 'aspect_ratio:0'"),
                            ({"batch_chunk_size": 0}, "batch_chunk_size must be positive int or None, got 0"),
                            ({"acc_dtype": ember.int64}, "acc_dtype must be one of")]:
        with pytest.raises(ValueError, match=message):
            Options(**kwargs)
    # aspect_ratio: next_pow2(ceil(64 / ceil(50 / 4))) = 8 rows; ":2" halves it
    assert Options(chunking_method="aspect_ratio")._chunk_rows(64, 4, 50, False) == 8
    assert Options(chunking_method="aspect_ratio:2")._chunk_rows(64, 4, 50, False) == 4
    assert Options()._chunk_rows(64, 4, 50, False) == 4 and Options()._chunk_rows(64, 4, 50, True) == 8
    assert Options(batch_chunk_size=5)._chunk_rows(64, 4, 50, False) == 5  # "auto" defers to it
    assert Options(chunking_method=None)._chunk_rows(64, 4, 50, False) == 64
    with pytest.raises(ValueError, match=r"batch_chunk_size \(=2\) and chunking_method \('aspect_ratio'\) give "
                                         r"different chunk sizes \(2 vs 8\); pass only one"):
        Options(batch_chunk_size=2, chunking_method="aspect_ratio")._chunk_rows(64, 4, 50, False)
    with pytest.raises(AttributeError):
        Options().batch_chunk_size = 3  # frozen, as PyTorch's dataclass


def test_bad_inputs():
    x, w, t = _t(RNG.standard_normal((6, 4))), _t(RNG.standard_normal((5, 4))), _t(RNG.integers(0, 5, 6))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.linear_cross_entropy(x, w, t, reduction="avg")
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(x.reshape(2, 3, 4), w, t)
    with pytest.raises(RuntimeError, match=r"last dimensions \(in_features\), got 4 and 3, respectively"):
        F.linear_cross_entropy(x, w[:, :3], t)
    with pytest.raises(IndexError, match=r"\[linear_cross_entropy\] Target 9 is out of bounds"):
        F.linear_cross_entropy(x, w, _t(np.array([0, 1, 9, 2, 3, 4])), options=Options())
    with pytest.raises(ValueError, match=r"Expected input batch_size \(6\) to match target batch_size \(4\)"):
        F.linear_cross_entropy(x, w, t[:4], options=Options())


def test_module_layout_forward_and_training():
    loss_fn = ember.nn.LinearCrossEntropyLoss(4, 5, out_features=(3,), bias=True, weight=ember.ones(5))
    assert [n for n, _ in loss_fn.named_parameters()] == ["linear.weight", "linear.bias"]
    assert list(loss_fn.state_dict()) == ["weight", "linear.weight", "linear.bias"]
    assert tuple(loss_fn.linear.weight.shape) == (15, 4) and tuple(loss_fn.linear.bias.shape) == (15,)
    assert loss_fn.extra_repr() == ("in_features=4, num_classes=5, out_features=(3,), bias=True, reduction=mean, "
                                    "ignore_index=None, label_smoothing=0.0, options=None")
    x, t = ember.randn(6, 4), ember.randint(0, 5, (6, 3))
    want = F.linear_cross_entropy(x, loss_fn.linear.weight.reshape(5, 3, 4), t,
                                  linear_bias=loss_fn.linear.bias.reshape(5, 3))
    np.testing.assert_allclose(loss_fn(x, t).item(), want.item(), rtol=1e-6)

    ember.manual_seed(0)
    head = ember.nn.LinearCrossEntropyLoss(8, 3, bias=True, options=Options(batch_chunk_size=16, chunking_method=None))
    opt = ember.optim.SGD(head.parameters(), lr=0.5)
    centers = ember.randn(3, 8) * 3
    labels = ember.randint(0, 3, (96,))
    data = centers[labels] + ember.randn(96, 8) * 0.3
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = head(data, labels)
        first = loss.item() if first is None else first
        loss.backward()
        opt.step()
    assert loss.item() < first / 5
