"""ember.optim.ASGD, ember.optim.Rprop and ember.optim.swa_utils (issue 18, item 1), each step
compared with a float64 NumPy transcription of PyTorch's documented algorithm."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import ember
from ember.optim.swa_utils import (
    SWALR,
    AveragedModel,
    get_ema_avg_fn,
    get_ema_multi_avg_fn,
    get_swa_avg_fn,
    get_swa_multi_avg_fn,
    update_bn,
)

RNG = np.random.default_rng(7)


def _grads(n, shape, flips=True):
    out = []
    for i in range(n):
        g = RNG.normal(size=shape)
        if flips and i % 4 == 3:
            g = -out[-1] * 0.5  # sign flips exercise Rprop's backtracking
        out.append(g)
    return out


def _run(opt_cls, p0, grads, **kw):
    p = ember.tensor(p0, requires_grad=True)
    opt = opt_cls([p], **kw)
    trail = []
    for g in grads:
        p.grad = ember.tensor(g)
        opt.step()
        trail.append(p.detach().numpy().copy())
    return p, opt, trail


# ---- ASGD ---------------------------------------------------------------------------------------


def _asgd_reference(p0, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False):
    """PyTorch's ASGD: eta_1 = lr, mu_1 = 1; each step t: g (+ wd * p), p <- p * (1 - lambd * eta)
    - eta * g, ax <- p if mu == 1 else ax + mu * (p - ax), eta <- lr / (1 + lambd * lr * t)^alpha,
    mu <- 1 / max(1, t - t0). eta and mu are kept in the scalar dtype (float32 here)."""
    p, ax = p0.astype(np.float64).copy(), np.zeros_like(p0, dtype=np.float64)
    eta, mu = float(np.float32(lr)), 1.0
    trail, axes = [], []
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        p = p * (1 - lambd * eta)
        p = p - eta * g
        ax = p.copy() if mu == 1 else ax + (p - ax) * mu
        eta = float(np.float32(lr / ((1 + lambd * lr * t) ** alpha)))
        mu = float(np.float32(1 / max(1, t - t0)))
        trail.append(p.copy())
        axes.append(ax.copy())
    return trail, axes, eta, mu


@pytest.mark.parametrize("kw", [{}, {"lr": 0.05, "lambd": 1e-2, "alpha": 0.5, "t0": 4},
                                {"lr": 0.1, "t0": 2, "weight_decay": 0.3, "maximize": True}])
def test_asgd_matches_reference(kw):
    p0, grads = RNG.normal(size=(3, 4)), _grads(12, (3, 4))
    p, opt, trail = _run(ember.optim.ASGD, p0, grads, **kw)
    want, axes, eta, mu = _asgd_reference(p0, grads, **kw)
    for got, w in zip(trail, want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-13, atol=1e-15)
    state = opt.state[p]
    assert list(state) == ["step", "eta", "mu", "ax"]
    assert state["step"].item() == 12.0 and state["step"].dtype == ember.float32
    np.testing.assert_allclose(state["ax"].numpy(), axes[-1], rtol=1e-13, atol=1e-15)
    assert state["eta"].item() == eta and state["mu"].item() == mu


def test_asgd_defaults_layouts_and_state_dict():
    opt = ember.optim.ASGD([ember.zeros(2, requires_grad=True)])
    assert {k: opt.defaults[k] for k in ("lr", "lambd", "alpha", "t0", "weight_decay", "maximize")} == \
        {"lr": 1e-2, "lambd": 1e-4, "alpha": 0.75, "t0": 1e6, "weight_decay": 0, "maximize": False}
    # a non-contiguous parameter, a 0-dim one and an empty one step like their contiguous values
    base_np = RNG.normal(size=(4, 3))
    p_t = ember.tensor(base_np).t().detach().requires_grad_()
    assert not p_t.is_contiguous()
    p_0 = ember.tensor(1.5, dtype=ember.float64, requires_grad=True)
    p_e = ember.zeros(0, 3, dtype=ember.float64, requires_grad=True)
    g = RNG.normal(size=(3, 4))
    opt = ember.optim.ASGD([p_t, p_0, p_e], lr=0.1, t0=0)
    for _ in range(3):
        p_t.grad, p_0.grad, p_e.grad = ember.tensor(g).t().contiguous().t(), ember.tensor(0.5, dtype=ember.float64), \
            ember.zeros(0, 3, dtype=ember.float64)
        opt.step()
    want, _, _, _ = _asgd_reference(base_np.T, [g] * 3, lr=0.1, t0=0)
    np.testing.assert_allclose(p_t.detach().numpy(), want[-1], rtol=1e-13)
    want0, _, _, _ = _asgd_reference(np.array(1.5), [np.array(0.5)] * 3, lr=0.1, t0=0)
    assert np.isclose(p_0.item(), want0[-1]) and p_e.shape == (0, 3)
    # resuming from a state dict continues the same trajectory
    p0, grads = RNG.normal(size=5), _grads(8, (5,))
    _, _, whole = _run(ember.optim.ASGD, p0, grads, lr=0.05, t0=3)
    p, opt, _ = _run(ember.optim.ASGD, p0, grads[:4], lr=0.05, t0=3)
    saved = copy.deepcopy(opt.state_dict())
    q = ember.tensor(p.detach().numpy(), requires_grad=True)
    opt2 = ember.optim.ASGD([q], lr=0.05, t0=3)
    opt2.load_state_dict(saved)
    for g in grads[4:]:
        q.grad = ember.tensor(g)
        opt2.step()
    np.testing.assert_array_equal(q.detach().numpy(), whole[-1])


def test_asgd_complex_steps_as_real_pairs():
    z0 = RNG.normal(size=3) + 1j * RNG.normal(size=3)
    gs = [RNG.normal(size=3) + 1j * RNG.normal(size=3) for _ in range(5)]
    p, opt, _ = _run(ember.optim.ASGD, z0, gs, lr=0.1, t0=1)
    pr, axes, _, _ = _asgd_reference(np.stack([z0.real, z0.imag], -1), [np.stack([g.real, g.imag], -1) for g in gs],
                                     lr=0.1, t0=1)
    np.testing.assert_allclose(p.detach().numpy(), pr[-1][..., 0] + 1j * pr[-1][..., 1], rtol=1e-13)
    assert opt.state[p]["ax"].dtype == ember.complex128


def test_asgd_bad_arguments():
    w = [ember.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        ember.optim.ASGD(w, lr=-0.1)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -1"):
        ember.optim.ASGD(w, weight_decay=-1)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        ember.optim.ASGD(w, lr=ember.ones(2))


# ---- Rprop --------------------------------------------------------------------------------------


def _rprop_reference(p0, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    """PyTorch's Rprop: step_size starts at lr; each step s = sign(g * prev); step_size *= etaplus
    where s > 0, etaminus where s < 0 (then g = 0 there), 1 where s == 0, clamped to step_sizes;
    p -= sign(g) * step_size; prev = g."""
    etaminus, etaplus = etas
    p = p0.astype(np.float64).copy()
    prev, size = np.zeros_like(p), np.full_like(p, lr)
    trail = []
    for g in grads:
        g = (-g if maximize else g).copy()
        s = np.sign(g * prev)
        size = np.clip(size * np.where(s > 0, etaplus, np.where(s < 0, etaminus, 1.0)), *step_sizes)
        g[s < 0] = 0
        p = p - np.sign(g) * size
        prev = g
        trail.append(p.copy())
    return trail, prev, size


@pytest.mark.parametrize("kw", [{}, {"lr": 0.1, "etas": (0.3, 1.7), "step_sizes": (1e-3, 0.5)},
                                {"lr": 0.2, "maximize": True}])
def test_rprop_matches_reference(kw):
    p0, grads = RNG.normal(size=(4, 3)), _grads(15, (4, 3))
    grads[2][0, 0] = 0.0  # a zero gradient: factor 1, no move
    p, opt, trail = _run(ember.optim.Rprop, p0, grads, **kw)
    want, prev, size = _rprop_reference(p0, grads, **kw)
    for got, w in zip(trail, want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-13, atol=1e-15)
    state = opt.state[p]
    assert list(state) == ["step", "prev", "step_size"] and state["step"].item() == 15.0
    np.testing.assert_allclose(state["prev"].numpy(), prev, rtol=1e-13)
    np.testing.assert_allclose(state["step_size"].numpy(), size, rtol=1e-13)


def test_rprop_defaults_layouts_complex():
    opt = ember.optim.Rprop([ember.zeros(2, requires_grad=True)])
    assert opt.defaults["lr"] == 1e-2 and opt.defaults["etas"] == (0.5, 1.2) and opt.defaults["step_sizes"] == (1e-6, 50)
    base = RNG.normal(size=(3, 5))
    grads = _grads(6, (5, 3))
    p = ember.tensor(base).t().detach().requires_grad_()  # non-contiguous
    opt = ember.optim.Rprop([p], lr=0.1)
    for g in grads:
        p.grad = ember.tensor(g)
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), _rprop_reference(base.T, grads, lr=0.1)[0][-1], rtol=1e-13)
    p0 = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    opt = ember.optim.Rprop([p0, ember.zeros(0, dtype=ember.float64, requires_grad=True)])
    for g in (1.0, 1.0, -1.0):
        p0.grad = ember.tensor(g, dtype=ember.float64)
        opt.step()
    assert np.isclose(p0.item(), _rprop_reference(np.array(2.0), [np.array(g) for g in (1.0, 1.0, -1.0)])[0][-1])
    z0 = RNG.normal(size=3) + 1j * RNG.normal(size=3)
    gs = [RNG.normal(size=3) + 1j * RNG.normal(size=3) for _ in range(6)]
    p, opt, _ = _run(ember.optim.Rprop, z0, gs, lr=0.1)
    pr = _rprop_reference(np.stack([z0.real, z0.imag], -1), [np.stack([g.real, g.imag], -1) for g in gs], lr=0.1)[0]
    np.testing.assert_allclose(p.detach().numpy(), pr[-1][..., 0] + 1j * pr[-1][..., 1], rtol=1e-13)
    ss = ember.optim.Rprop([ember.zeros(2, dtype=ember.complex128, requires_grad=True)], lr=0.3)
    ss.param_groups[0]["params"][0].grad = ember.ones(2, dtype=ember.complex128)
    ss.step()
    assert ss.state[ss.param_groups[0]["params"][0]]["step_size"].dtype == ember.complex128


def test_rprop_bad_arguments():
    w = [ember.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        ember.optim.Rprop(w, lr=-1)
    with pytest.raises(ValueError, match="Invalid eta values: 1.5, 1.2"):
        ember.optim.Rprop(w, etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Invalid eta values: 0.5, 0.9"):
        ember.optim.Rprop(w, etas=(0.5, 0.9))


def test_rprop_and_asgd_train_a_model():
    ember.manual_seed(0)
    x = ember.randn(64, 3)
    y = x @ ember.tensor([[1.0], [-2.0], [0.5]])
    for cls, kw in ((ember.optim.Rprop, {}), (ember.optim.ASGD, {"lr": 0.1})):
        model = ember.nn.Linear(3, 1)
        opt = cls(model.parameters(), **kw)
        first = None
        for _ in range(60):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            first = first if first is not None else loss.item()
        assert loss.item() < 0.05 * first


# ---- swa_utils ----------------------------------------------------------------------------------


def _model():
    ember.manual_seed(3)
    return ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4), ember.nn.Linear(4, 2))


def _perturb(model, k):
    with ember.no_grad():
        for i, p in enumerate(model.parameters()):
            p.mul_(0.9).add_(0.1 * (k + 1) * (i + 1))


def test_averaged_model_swa_is_the_running_mean():
    model = _model()
    swa = AveragedModel(model)
    assert swa.n_averaged.item() == 0 and swa.n_averaged.dtype == ember.int64
    history = []
    for k in range(5):
        _perturb(model, k)
        model(ember.randn(8, 3))  # moves the BatchNorm running statistics
        history.append([p.detach().numpy().astype(np.float64) for p in model.parameters()])
        swa.update_parameters(model)
    assert swa.n_averaged.item() == 5
    for got, *seen in zip(swa.module.parameters(), *history, strict=True):
        np.testing.assert_allclose(got.detach().numpy(), np.mean(seen, axis=0), rtol=1e-5, atol=1e-6)
    for b_avg, b_model in zip(swa.module.buffers(), model.buffers(), strict=True):  # buffers copied
        np.testing.assert_array_equal(b_avg.numpy(), b_model.numpy())
    x = ember.randn(4, 3)
    swa.eval()
    np.testing.assert_array_equal(swa(x).detach().numpy(), swa.module(x).detach().numpy())
    assert list(swa.state_dict())[0] == "n_averaged" and "module.0.weight" in swa.state_dict()
    assert not any(p is q for p, q in zip(swa.parameters(), model.parameters(), strict=False))


def test_averaged_model_ema_and_custom_functions():
    model = _model()
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
    ema_single = AveragedModel(model, avg_fn=get_ema_avg_fn(0.9), use_buffers=True)
    want = None
    for k in range(4):
        _perturb(model, k)
        model(ember.randn(8, 3))
        now = [t.detach().numpy().astype(np.float64) for t in [*model.parameters(), *model.buffers()]]
        want = now if want is None else [0.9 * w + 0.1 * n for w, n in zip(want, now, strict=True)]
        ema.update_parameters(model)
        ema_single.update_parameters(model)
    for averaged in (ema, ema_single):
        tensors = [*averaged.module.parameters(), *averaged.module.buffers()]
        for got, w in zip(tensors, want, strict=True):
            if got.is_floating_point():
                np.testing.assert_allclose(got.detach().numpy(), w, rtol=1e-5, atol=1e-6)
    # the integer num_batches_tracked is averaged too (use_buffers), in integer arithmetic
    assert ema.module[1].num_batches_tracked.dtype == ember.int64
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        AveragedModel(model, avg_fn=get_swa_avg_fn(), multi_avg_fn=get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value 1.5 provided. Please provide a value in \\[0,1\\] range."):
        get_ema_multi_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value -0.1 provided"):
        get_ema_avg_fn(-0.1)


def test_averaging_functions_on_tensors():
    a, c = ember.tensor([1.0, 2.0], dtype=ember.float64), ember.tensor([3.0, 6.0], dtype=ember.float64)
    assert get_swa_avg_fn()(a, c, 1).tolist() == [2.0, 4.0]
    assert get_swa_avg_fn()(a, c, ember.tensor(3)).tolist() == [1.5, 3.0]
    assert np.allclose(get_ema_avg_fn(0.75)(a, c, 0).numpy(), [1.5, 3.0])
    lst = [a.clone(), ember.tensor([4, 8])]
    get_swa_multi_avg_fn()(lst[:1], [c], ember.tensor(1))
    assert lst[0].tolist() == [2.0, 4.0]
    get_swa_multi_avg_fn()(lst[1:], [ember.tensor([0, 0])], 3)
    assert lst[1].tolist() == [3, 6]


def test_update_bn_recomputes_statistics():
    model = _model()
    data = [ember.randn(16, 3) * (j + 1) + j for j in range(4)]
    model.eval()
    update_bn([(x, 0) for x in data], model)
    assert not model.training and model[1].momentum == 0.1
    with ember.no_grad():
        feats = ember.cat([model[0](x) for x in data]).numpy().astype(np.float64)
    # momentum=None: the cumulative average of the per-batch statistics (unbiased variances)
    per_batch = np.split(feats, 4)
    np.testing.assert_allclose(model[1].running_mean.numpy(), np.mean([b.mean(0) for b in per_batch], 0), rtol=1e-5)
    np.testing.assert_allclose(model[1].running_var.numpy(), np.mean([b.var(0, ddof=1) for b in per_batch], 0),
                               rtol=1e-4)
    assert model[1].num_batches_tracked.item() == 4
    plain = ember.nn.Linear(2, 2)
    update_bn(data, plain)  # no BatchNorm: nothing to do


def _swalr_reference(lr0, swa_lr, anneal_epochs, strategy, steps):
    anneal = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    lr, out = lr0, []
    for step_count in range(1, steps + 2):
        step = step_count - 1
        if anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = anneal(max(0, min(1, (step - 1) / max(1, anneal_epochs))))
        prev = swa_lr if prev_alpha == 1 else (lr - prev_alpha * swa_lr) / (1 - prev_alpha)
        alpha = anneal(max(0, min(1, step / max(1, anneal_epochs))))
        lr = swa_lr * alpha + prev * (1 - alpha)
        out.append(lr)
    return out


@pytest.mark.parametrize("strategy,epochs", [("cos", 5), ("linear", 3), ("cos", 0), ("linear", 1)])
def test_swalr_matches_reference(strategy, epochs):
    p = ember.zeros(2, requires_grad=True)
    opt = ember.optim.SGD([p], lr=1.0)
    sched = SWALR(opt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    got = [opt.param_groups[0]["lr"]]
    for _ in range(8):
        opt.step()
        sched.step()
        got.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(got, _swalr_reference(1.0, 0.05, epochs, strategy, 8), rtol=1e-12)
    assert got[-1] == pytest.approx(0.05)
    assert opt.param_groups[0]["swa_lr"] == 0.05
    state = sched.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
    other = SWALR(ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0), swa_lr=0.5)
    other.load_state_dict(state)
    assert other.anneal_epochs == epochs and other._anneal_strategy == strategy


def test_swalr_per_group_and_bad_arguments():
    a, b = ember.zeros(1, requires_grad=True), ember.zeros(1, requires_grad=True)
    opt = ember.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=1.0)
    SWALR(opt, swa_lr=[0.1, 0.2], anneal_epochs=2, anneal_strategy="linear")
    assert [g["swa_lr"] for g in opt.param_groups] == [0.1, 0.2]
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
        SWALR(opt, 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        SWALR(opt, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
        SWALR(opt, [0.1, 0.2, 0.3])


def test_names_are_public():
    for name in ("ASGD", "Rprop", "swa_utils"):
        assert name in ember.optim.__all__
    assert ember.optim.swa_utils.AveragedModel is AveragedModel
