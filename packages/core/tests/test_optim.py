"""ember.optim: every optimizer's 20-step trajectory on a fixed least-squares problem equals an
independent float64 NumPy implementation of the algorithm in PyTorch's documentation (main
option combinations each), L-BFGS against a NumPy two-loop recursion and the strong Wolfe
conditions, parameter groups, state_dict layout and round trips, hooks, zero_grad, complex
parameters and argument errors with PyTorch's messages."""

import copy
import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.optim import optimizer as optimizer_module

RNG = np.random.default_rng(0)
A = RNG.normal(size=(6, 4))
B = RNG.normal(size=6)
X0 = RNG.normal(size=4)


def _grad(x):
    return A.T @ (A @ x - B)


def _loss(param):
    a, b = ember.tensor(A), ember.tensor(B)
    r = a.mv(param) - b
    return 0.5 * (r * r).sum()


# ---- float64 references, written from PyTorch's documentation pseudo-code --------------------

def ref_sgd(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    def step(x, g, s, t):
        g = -g if maximize else g
        g = g + weight_decay * x
        if momentum:
            s["b"] = g.copy() if t == 1 else momentum * s["b"] + (1 - dampening) * g
            g = g + momentum * s["b"] if nesterov else s["b"]
        return x - lr * g
    return step


def ref_adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False, decoupled=False):
    b1, b2 = betas

    def step(x, g, s, t):
        g = -g if maximize else g
        if decoupled:
            x = x * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * x
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        v = s["v"]
        if amsgrad:
            s["vmax"] = np.maximum(s.get("vmax", 0), s["v"])
            v = s["vmax"]
        m_hat = s["m"] / (1 - b1 ** t)
        return x - lr * m_hat / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return step


def ref_adagrad(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10, maximize=False):
    def step(x, g, s, t):
        g = -g if maximize else g
        g = g + weight_decay * x
        lr_t = lr / (1 + (t - 1) * lr_decay)
        s["sum"] = s.get("sum", initial_accumulator_value) + g * g
        return x - lr_t * g / (np.sqrt(s["sum"]) + eps)
    return step


def ref_rmsprop(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False):
    def step(x, g, s, t):
        g = -g if maximize else g
        g = g + weight_decay * x
        s["v"] = alpha * s.get("v", 0) + (1 - alpha) * g * g
        v = s["v"]
        if centered:
            s["gavg"] = alpha * s.get("gavg", 0) + (1 - alpha) * g
            v = v - s["gavg"] ** 2
        if momentum > 0:
            s["b"] = momentum * s.get("b", 0) + g / (np.sqrt(v) + eps)
            return x - lr * s["b"]
        return x - lr * g / (np.sqrt(v) + eps)
    return step


def ref_adadelta(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    def step(x, g, s, t):
        g = -g if maximize else g
        g = g + weight_decay * x
        s["v"] = rho * s.get("v", 0) + (1 - rho) * g * g
        delta = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["v"] + eps) * g
        s["u"] = rho * s.get("u", 0) + (1 - rho) * delta * delta
        return x - lr * delta
    return step


def ref_adamax(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    b1, b2 = betas

    def step(x, g, s, t):
        g = -g if maximize else g
        g = g + weight_decay * x
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["u"] = np.maximum(b2 * s.get("u", 0), np.abs(g) + eps)
        return x - lr / (1 - b1 ** t) * s["m"] / s["u"]
    return step


def ref_nadam(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3, decoupled=False,
              maximize=False):
    b1, b2 = betas

    def step(x, g, s, t):
        g = -g if maximize else g
        if decoupled:
            x = x * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * x
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        s["prod"] = s.get("prod", 1.0) * mu
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        v_hat = s["v"] / (1 - b2 ** t)
        update = (1 - mu) / (1 - s["prod"]) * g + mu_next / (1 - s["prod"] * mu_next) * s["m"]
        return x - lr * update / (np.sqrt(v_hat) + eps)
    return step


def ref_radam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False, maximize=False):
    b1, b2 = betas

    def step(x, g, s, t):
        g = -g if maximize else g
        if decoupled:
            x = x * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * x
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        m_hat = s["m"] / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            l_t = math.sqrt(1 - b2 ** t) / (np.sqrt(s["v"]) + eps)
            r_t = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            return x - lr * m_hat * l_t * r_t
        return x - lr * m_hat
    return step


CASES = [
    (optim.SGD, dict(lr=0.05), ref_sgd(lr=0.05)),
    (optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.1), ref_sgd(lr=0.05, momentum=0.9, weight_decay=0.1)),
    (optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True), ref_sgd(lr=0.05, momentum=0.9, nesterov=True)),
    (optim.SGD, dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True),
     ref_sgd(lr=0.05, momentum=0.5, dampening=0.3, maximize=True)),
    (optim.SGD, dict(lr=0.02, momentum=0.8, nesterov=True, weight_decay=0.2, maximize=True),
     ref_sgd(lr=0.02, momentum=0.8, nesterov=True, weight_decay=0.2, maximize=True)),
    (optim.Adam, dict(lr=0.1), ref_adam(lr=0.1)),
    (optim.Adam, dict(lr=0.1, weight_decay=0.2, amsgrad=True, betas=(0.8, 0.9)),
     ref_adam(lr=0.1, weight_decay=0.2, amsgrad=True, betas=(0.8, 0.9))),
    (optim.Adam, dict(lr=0.1, maximize=True), ref_adam(lr=0.1, maximize=True)),
    (optim.Adam, dict(lr=0.05, amsgrad=True, maximize=True, eps=1e-3), ref_adam(lr=0.05, amsgrad=True, maximize=True,
                                                                              eps=1e-3)),
    (optim.AdamW, dict(lr=0.1), ref_adam(lr=0.1, weight_decay=1e-2, decoupled=True)),
    (optim.AdamW, dict(lr=0.1, weight_decay=0.3, amsgrad=True), ref_adam(lr=0.1, weight_decay=0.3, amsgrad=True,
                                                                          decoupled=True)),
    (optim.AdamW, dict(lr=0.05, weight_decay=0.5, maximize=True, betas=(0.5, 0.8)),
     ref_adam(lr=0.05, weight_decay=0.5, maximize=True, betas=(0.5, 0.8), decoupled=True)),
    (optim.Adagrad, dict(lr=0.3), ref_adagrad(lr=0.3)),
    (optim.Adagrad, dict(lr=0.3, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5),
     ref_adagrad(lr=0.3, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    (optim.Adagrad, dict(lr=0.1, eps=1e-2, maximize=True), ref_adagrad(lr=0.1, eps=1e-2, maximize=True)),
    (optim.RMSprop, dict(lr=0.01), ref_rmsprop(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1),
     ref_rmsprop(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)),
    (optim.RMSprop, dict(lr=0.01, centered=True, alpha=0.9), ref_rmsprop(lr=0.01, centered=True, alpha=0.9)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, maximize=True), ref_rmsprop(lr=0.01, momentum=0.5, maximize=True)),
    (optim.Adadelta, dict(), ref_adadelta()),
    (optim.Adadelta, dict(lr=0.5, rho=0.8, weight_decay=0.1), ref_adadelta(lr=0.5, rho=0.8, weight_decay=0.1)),
    (optim.Adadelta, dict(lr=2.0, eps=1e-4, maximize=True), ref_adadelta(lr=2.0, eps=1e-4, maximize=True)),
    (optim.Adamax, dict(lr=0.1), ref_adamax(lr=0.1)),
    (optim.Adamax, dict(lr=0.1, weight_decay=0.1, maximize=True), ref_adamax(lr=0.1, weight_decay=0.1, maximize=True)),
    (optim.Adamax, dict(lr=0.1, betas=(0.5, 0.7), eps=0.1), ref_adamax(lr=0.1, betas=(0.5, 0.7), eps=0.1)),
    (optim.NAdam, dict(lr=0.1), ref_nadam(lr=0.1)),
    (optim.NAdam, dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True),
     ref_nadam(lr=0.1, weight_decay=0.1, decoupled=True)),
    (optim.NAdam, dict(lr=0.05, weight_decay=0.2, momentum_decay=0.05, maximize=True),
     ref_nadam(lr=0.05, weight_decay=0.2, momentum_decay=0.05, maximize=True)),
    (optim.RAdam, dict(lr=0.1), ref_radam(lr=0.1)),
    (optim.RAdam, dict(lr=0.1, weight_decay=0.1, betas=(0.9, 0.9)), ref_radam(lr=0.1, weight_decay=0.1,
                                                                              betas=(0.9, 0.9))),
    (optim.RAdam, dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.8, 0.95), maximize=True),
     ref_radam(lr=0.1, weight_decay=0.1, decoupled=True, betas=(0.8, 0.95), maximize=True)),
]
CASE_IDS = [f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(CASES)]
REFERENCES = {optim.SGD: ref_sgd, optim.Adam: ref_adam, optim.AdamW: ref_adam, optim.Adagrad: ref_adagrad,
              optim.RMSprop: ref_rmsprop, optim.Adadelta: ref_adadelta, optim.Adamax: ref_adamax,
              optim.NAdam: ref_nadam, optim.RAdam: ref_radam}


def _run(opt, param, steps):
    for _ in range(steps):
        opt.zero_grad()
        _loss(param).backward()
        opt.step()


@pytest.mark.parametrize("cls, kwargs, reference", CASES, ids=CASE_IDS)
def test_twenty_steps_match_the_reference(cls, kwargs, reference):
    param = nn.Parameter(ember.tensor(X0))
    opt = cls([param], **kwargs)
    x, state = X0.copy(), {}
    for t in range(1, 21):
        opt.zero_grad()
        _loss(param).backward()
        opt.step()
        x = reference(x, _grad(x), state, t)
        np.testing.assert_allclose(param.detach().numpy(), x, rtol=1e-6, atol=1e-9, err_msg=f"step {t}")
    # The parameters moved. (RAdam takes its unrectified branch for steps 1-5 with beta2 = 0.999
    # and its rectified one after, so both are compared.)
    assert not np.allclose(x, X0)


@pytest.mark.parametrize("cls, kwargs, reference", CASES, ids=CASE_IDS)
def test_groups_keep_their_own_options(cls, kwargs, reference):
    """Two parameters in two groups: the second group overrides lr (and weight_decay); each
    follows the reference with its own options."""
    if "lr" not in kwargs:
        kwargs = {**kwargs, "lr": 1.0}
    p1, p2 = nn.Parameter(ember.tensor(X0)), nn.Parameter(ember.tensor(X0))
    opt = cls([{"params": [p1]}, {"params": [p2], "lr": kwargs["lr"] / 3, "weight_decay": 0.05}], **kwargs)
    assert opt.param_groups[1]["lr"] == kwargs["lr"] / 3 and opt.param_groups[0]["lr"] == kwargs["lr"]
    ref_kwargs = dict(kwargs)
    if ref_kwargs.pop("decoupled_weight_decay", False) or cls is optim.AdamW:
        ref_kwargs["decoupled"] = True
        ref_kwargs.setdefault("weight_decay", 1e-2)  # AdamW's default
    ref_fn = REFERENCES[cls]
    ref1 = ref_fn(**ref_kwargs)
    ref2 = ref_fn(**{**ref_kwargs, "lr": kwargs["lr"] / 3, "weight_decay": 0.05})
    x1, x2, s1, s2 = X0.copy(), X0.copy(), {}, {}
    for t in range(1, 11):
        opt.zero_grad()
        (_loss(p1) + _loss(p2)).backward()
        opt.step()
        x1, x2 = ref1(x1, _grad(x1), s1, t), ref2(x2, _grad(x2), s2, t)
    np.testing.assert_allclose(p1.detach().numpy(), x1, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(p2.detach().numpy(), x2, rtol=1e-6, atol=1e-9)
    assert not np.allclose(x1, x2)


STATE_KEYS = {
    "SGD": {"momentum_buffer"},
    "Adam": {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    "AdamW": {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    "Adagrad": {"step", "sum"},
    "RMSprop": {"step", "square_avg", "momentum_buffer", "grad_avg"},
    "Adadelta": {"step", "square_avg", "acc_delta"},
    "Adamax": {"step", "exp_avg", "exp_inf"},
    "NAdam": {"step", "mu_product", "exp_avg", "exp_avg_sq"},
    "RAdam": {"step", "exp_avg", "exp_avg_sq"},
}


# For each optimizer, options that give it all its state (amsgrad, centered + momentum, ...).
RICH_OPTIONS = {
    "SGD": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    "Adam": dict(lr=0.1, amsgrad=True, weight_decay=0.1),
    "AdamW": dict(lr=0.1, amsgrad=True),
    "Adagrad": dict(lr=0.3, lr_decay=0.1, initial_accumulator_value=0.5),
    "RMSprop": dict(lr=0.01, centered=True, momentum=0.9),
    "Adadelta": dict(lr=0.5, rho=0.8),
    "Adamax": dict(lr=0.1, weight_decay=0.1),
    "NAdam": dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True),
    "RAdam": dict(lr=0.1, betas=(0.9, 0.9)),
}


@pytest.mark.parametrize("name", sorted(STATE_KEYS))
def test_state_dict_layout_and_resume_through_a_checkpoint(name, tmp_path):
    cls, kwargs = getattr(optim, name), RICH_OPTIONS[name]
    p1 = nn.Parameter(ember.tensor(X0))
    o1 = cls([p1], **kwargs)
    _run(o1, p1, 20)

    p2 = nn.Parameter(ember.tensor(X0))
    o2 = cls([p2], **kwargs)
    _run(o2, p2, 8)
    sd = o2.state_dict()
    # PyTorch's layout: state keyed by integer ids, groups with their options and the ids.
    assert list(sd) == ["state", "param_groups"] and list(sd["state"]) == [0]
    assert sd["param_groups"][0]["params"] == [0]
    assert {k: v for k, v in sd["param_groups"][0].items() if k != "params"} == o2.defaults
    assert set(sd["state"][0]) == STATE_KEYS[name]
    if "step" in sd["state"][0]:
        assert sd["state"][0]["step"].dtype == ember.float32 and sd["state"][0]["step"].item() == 8
    ember.save({"model": [p2.detach()], "optim": sd}, tmp_path / "ckpt.safetensors")
    saved = ember.load(tmp_path / "ckpt.safetensors")
    p3 = nn.Parameter(saved["model"][0])
    o3 = cls([p3], **kwargs)
    o3.load_state_dict(saved["optim"])
    _run(o3, p3, 12)
    np.testing.assert_array_equal(p3.detach().numpy(), p1.detach().numpy())


def test_state_dict_in_memory_round_trip_copies_and_casts():
    p = nn.Parameter(ember.tensor(X0))
    opt = optim.Adam([p], lr=0.1, amsgrad=True)
    _run(opt, p, 3)
    sd = opt.state_dict()
    # state_dict() hands out the live tensors (as PyTorch does) ...
    assert sd["state"][0]["exp_avg"] is opt.state[p]["exp_avg"]
    # ... load_state_dict copies them, and casts floating state to a floating parameter's dtype.
    q = nn.Parameter(ember.tensor(X0.astype(np.float32)))
    other = optim.Adam([q], lr=0.5)
    other.load_state_dict(copy.deepcopy(sd))
    assert other.param_groups[0]["lr"] == 0.1 and other.param_groups[0]["amsgrad"] is True
    assert other.param_groups[0]["params"][0] is q
    assert other.state[q]["exp_avg"].dtype == ember.float32
    assert other.state[q]["step"].dtype == ember.float32 and other.state[q]["step"].item() == 3
    np.testing.assert_allclose(other.state[q]["exp_avg_sq"].numpy(), sd["state"][0]["exp_avg_sq"].numpy(),
                               rtol=1e-6)
    same = optim.Adam([nn.Parameter(ember.tensor(X0))])
    same.load_state_dict(sd)
    (loaded,) = same.state.values()
    assert loaded["exp_avg"] is not sd["state"][0]["exp_avg"]
    sd["state"][0]["exp_avg"].add_(1.0)
    assert not np.allclose(loaded["exp_avg"].numpy(), sd["state"][0]["exp_avg"].numpy())


def test_state_dict_ids_run_across_groups_and_duplicates():
    a, b, c = (nn.Parameter(ember.ones(2, dtype=ember.float64)) for _ in range(3))
    opt = optim.SGD([{"params": [a, b]}, {"params": [c], "momentum": 0.9}], lr=0.1)
    for p in (a, b, c):
        p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert list(sd["state"]) == [2]  # plain SGD keeps no state; the momentum group does
    with pytest.warns(UserWarning, match=r"optimizer contains a parameter group with duplicate parameters"):
        dup = optim.SGD([{"params": [a, a]}, {"params": [b]}], lr=0.1)
    # PyTorch counts positions, so the second group's first id is 2 although only 1 id was used.
    assert [g["params"] for g in dup.state_dict()["param_groups"]] == [[0, 0], [2]]


def test_param_groups_options_add_group_and_errors():
    w, b, extra = (nn.Parameter(ember.ones(2, dtype=ember.float64)) for _ in range(3))
    opt = optim.SGD([{"params": [w]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[0]["momentum"] == 0 and opt.param_groups[1]["momentum"] == 0.9
    for p in (w, b):
        p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    assert w.tolist() == [0.9, 0.9] and b.tolist() == [0.5, 0.5]
    group = {"params": [extra], "lr": 0.01}
    opt.add_param_group(group)
    assert opt.param_groups[2] is group  # the caller's dict, filled with the defaults
    assert group["momentum"] == 0 and group["nesterov"] is False and group["maximize"] is False
    with pytest.raises(ValueError, match=r"^some parameters appear in more than one parameter group$"):
        opt.add_param_group({"params": [w]})
    with pytest.raises(TypeError, match=r"^param_group must be a dict, but got <class 'list'>$"):
        opt.add_param_group([extra])
    sd = optim.SGD([w], lr=0.1).state_dict()
    with pytest.raises(ValueError, match=r"^loaded state dict has a different number of parameter groups$"):
        opt.load_state_dict(sd)
    two = optim.SGD([w, b], lr=0.1)
    with pytest.raises(ValueError, match=r"^loaded state dict contains a parameter group that doesn't match the "
                                         r"size of optimizer's group$"):
        two.load_state_dict(sd)


def test_repr_follows_pytorch():
    w, b = nn.Parameter(ember.ones(1)), nn.Parameter(ember.ones(1))
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    keys = sorted(k for k in opt.param_groups[0] if k != "params")
    expected = "SGD ("
    for i, lr in enumerate((0.1, 0.5)):
        expected += f"\nParameter Group {i}\n"
        for key in keys:
            expected += f"    {key}: {lr if key == 'lr' else opt.defaults[key]}\n"
    expected += ")"
    assert repr(opt) == expected


def test_zero_grad_and_parameters_without_gradients():
    w, frozen = nn.Parameter(ember.ones(2, dtype=ember.float64)), nn.Parameter(ember.ones(2, dtype=ember.float64))
    opt = optim.Adam([w, frozen], lr=0.1)
    (w * w).sum().backward()
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad.tolist() == [0.0, 0.0] and grad.tolist() == [0.0, 0.0]  # zeroed in place
    assert frozen.grad is None
    (w * w).sum().backward()
    opt.step()
    assert frozen.tolist() == [1.0, 1.0] and frozen not in opt.state and w in opt.state
    opt.zero_grad()
    assert w.grad is None


def test_step_with_closure_returns_its_loss_and_enables_grad():
    p = nn.Parameter(ember.tensor(X0))
    opt = optim.SGD([p], lr=0.1)
    calls = []

    def closure():
        opt.zero_grad()
        loss = _loss(p)
        loss.backward()
        calls.append(float(loss))
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert calls == [pytest.approx(0.5 * np.sum((A @ X0 - B) ** 2))] and float(loss) == calls[0]
    np.testing.assert_allclose(p.detach().numpy(), X0 - 0.1 * _grad(X0), rtol=1e-12)


COMPLEX_CASES = [
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    (optim.Adam, dict(lr=0.1, amsgrad=True)),
    (optim.AdamW, dict(lr=0.1)),
    (optim.Adagrad, dict(lr=0.1, initial_accumulator_value=0.3)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5)),
    (optim.Adadelta, dict(lr=1.0)),
    (optim.Adamax, dict(lr=0.1)),
    (optim.NAdam, dict(lr=0.1)),
    (optim.RAdam, dict(lr=0.1, betas=(0.9, 0.9))),
]


@pytest.mark.parametrize("cls, kwargs", COMPLEX_CASES, ids=[c.__name__ for c, _ in COMPLEX_CASES])
def test_complex_parameters_update_as_real_pairs(cls, kwargs):
    z = nn.Parameter(ember.tensor([1 + 2j, -1j, 0.5 - 0.5j], dtype=ember.complex128))
    r = nn.Parameter(ember.view_as_real(z.detach()).clone())
    oz, orr = cls([z], **kwargs), cls([r], **kwargs)
    weights = ember.tensor([[1.0, 3.0], [2.0, 0.5], [1.5, 1.0]], dtype=ember.float64)
    for _ in range(8):
        for p, o in ((z, oz), (r, orr)):
            o.zero_grad()
            real = ember.view_as_real(p) if p.is_complex() else p
            (real * real * weights - real).sum().backward()
            o.step()
    np.testing.assert_allclose(ember.view_as_real(z.detach()).numpy(), r.detach().numpy(), rtol=1e-12, atol=1e-14)
    # Per-element state of a complex parameter is complex, as in PyTorch.
    for key, value in oz.state[z].items():
        if key not in ("step", "mu_product"):
            assert value.dtype == ember.complex128, key
            np.testing.assert_allclose(ember.view_as_real(value).numpy(), orr.state[r][key].numpy(), rtol=1e-12)


def test_step_hooks():
    p = nn.Parameter(ember.tensor(X0))
    opt = optim.SGD([p], lr=0.1)
    seen = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", o is opt, len(args))))
    h2 = opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", float(p[0]))))
    g1 = optimizer_module.register_optimizer_step_pre_hook(lambda o, args, kwargs: seen.append("global pre"))
    g2 = optimizer_module.register_optimizer_step_post_hook(lambda o, args, kwargs: seen.append("global post"))
    try:
        p.grad = ember.ones(4, dtype=ember.float64)
        opt.step()
    finally:
        g1.remove()
        g2.remove()
    assert seen == ["global pre", ("pre", True, 1), ("post", pytest.approx(X0[0] - 0.1)), "global post"]
    h1.remove()
    h2.remove()
    seen.clear()
    opt.step()
    assert seen == []

    # A pre hook may replace the arguments: here it supplies a closure.
    def supply_closure(o, args, kwargs):
        return args, {"closure": lambda: 42.0}

    with opt.register_step_pre_hook(supply_closure):
        assert opt.step() == 42.0
    assert opt.step() is None
    with opt.register_step_pre_hook(lambda o, args, kwargs: "bad"):
        with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\)"):
            opt.step()


def test_subclass_overriding_step_runs_the_hooks_once():
    class Halving(optim.SGD):
        def step(self, closure=None):
            self.calls = getattr(self, "calls", 0) + 1
            return super().step(closure)

    p = nn.Parameter(ember.ones(2, dtype=ember.float64))
    opt = Halving([p], lr=0.5)
    seen = []
    opt.register_step_pre_hook(lambda *a: seen.append("pre"))
    p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    assert seen == ["pre"] and opt.calls == 1 and p.tolist() == [0.5, 0.5]


def test_state_dict_hooks():
    p = nn.Parameter(ember.tensor(X0))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    _run(opt, p, 2)
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_state_dict_pre_hook(lambda o: order.append("first"), prepend=True)
    sd = opt.state_dict()
    assert order == ["first", "pre"] and sd["extra"] == 1
    other = optim.SGD([nn.Parameter(ember.tensor(X0))], lr=0.5, momentum=0.9)
    loaded = []

    def drop_extra(o, state_dict):
        assert state_dict["extra"] == 1
        return {k: v for k, v in state_dict.items() if k != "extra"}

    other.register_load_state_dict_pre_hook(drop_extra)
    other.register_load_state_dict_post_hook(lambda o: loaded.append(o.param_groups[0]["lr"]))
    other.load_state_dict(sd)
    assert loaded == [0.1]


# ---- L-BFGS -----------------------------------------------------------------------------------

def _quartic(x):
    r = A @ x - B
    return 0.5 * r @ r + 0.25 * np.sum(x ** 4)


def _quartic_grad(x):
    return A.T @ (A @ x - B) + x ** 3


def _quartic_loss(param):
    return _loss(param) + 0.25 * (param * param * param * param).sum()


def ref_lbfgs(x, calls, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
              history_size=100):
    """L-BFGS without line search as torch.optim.LBFGS documents and minFunc does it: the first
    direction is -g with step min(1, 1/|g|_1) * lr, later ones come from the two-loop recursion
    over the last history_size (s, y) pairs with y's > 1e-10 and initial Hessian y's/y'y; the
    iterations of one call stop at max_iter, max_eval evaluations, |g|_inf <= tolerance_grad, a
    step or loss change below tolerance_change, or a non-descent direction."""
    max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
    mem = {"n_iter": 0, "func_evals": 0}
    trajectory = []
    for _ in range(calls):
        f, g = _quartic(x), _quartic_grad(x)
        evals = 1
        mem["func_evals"] += 1
        if np.abs(g).max() <= tolerance_grad:
            trajectory.append(x.copy())
            continue
        n = 0
        while n < max_iter:
            n += 1
            mem["n_iter"] += 1
            if mem["n_iter"] == 1:
                d, pairs, gamma = -g, [], 1.0
            else:
                pairs, gamma = mem["pairs"], mem["gamma"]
                s, y = mem["t"] * mem["d"], g - mem["g_prev"]
                if y @ s > 1e-10:
                    pairs = (pairs + [(s, y)])[-history_size:]
                    gamma = (y @ s) / (y @ y)
                q, alphas = -g, []
                for s_i, y_i in reversed(pairs):
                    a_i = (s_i @ q) / (y_i @ s_i)
                    alphas.insert(0, a_i)
                    q = q - a_i * y_i
                d = gamma * q
                for (s_i, y_i), a_i in zip(pairs, alphas, strict=True):
                    d = d + (a_i - (y_i @ d) / (y_i @ s_i)) * s_i
            mem.update(pairs=pairs, gamma=gamma, g_prev=g, d=d)
            f_prev = f
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if mem["n_iter"] == 1 else lr
            mem["t"] = t
            if g @ d > -tolerance_change:
                break
            x = x + t * d
            converged = False
            if n != max_iter:
                f, g = _quartic(x), _quartic_grad(x)
                evals += 1
                mem["func_evals"] += 1
                converged = np.abs(g).max() <= tolerance_grad
            if n == max_iter or evals >= max_eval or converged:
                break
            if np.abs(t * d).max() <= tolerance_change or abs(f - f_prev) < tolerance_change:
                break
        trajectory.append(x.copy())
    return trajectory, mem


def _closure_for(opt, param, loss_fn=_quartic_loss):
    def closure():
        opt.zero_grad()
        loss = loss_fn(param)
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("kwargs", [dict(max_iter=3, history_size=2), dict(lr=0.5, max_iter=5, history_size=100),
                                    dict(lr=0.8, max_iter=4, max_eval=3, history_size=3)])
def test_lbfgs_matches_the_two_loop_reference(kwargs):
    param = nn.Parameter(ember.tensor(X0))
    opt = optim.LBFGS([param], **kwargs)
    closure = _closure_for(opt, param)
    expected, mem = ref_lbfgs(X0.copy(), 6, **kwargs)
    for i, x in enumerate(expected):
        loss = opt.step(closure)
        assert isinstance(loss, ember.Tensor)
        np.testing.assert_allclose(param.detach().numpy(), x, rtol=1e-6, atol=1e-9, err_msg=f"call {i}")
    state = opt.state[param]
    assert state["n_iter"] == mem["n_iter"] and state["func_evals"] == mem["func_evals"]
    # It is minimising: the gradient shrank by orders of magnitude.
    assert np.abs(_quartic_grad(expected[-1])).max() < 1e-3 * np.abs(_quartic_grad(X0)).max()


def test_lbfgs_flattens_several_parameters_and_complex_ones():
    """Parameters of different shapes (one of them complex) behave as one flat real vector."""
    kwargs = dict(lr=0.5, max_iter=5, history_size=3)
    expected, _ = ref_lbfgs(X0.copy(), 4, **kwargs)
    mat = nn.Parameter(ember.tensor(X0[:2].reshape(2, 1)))
    cplx = nn.Parameter(ember.view_as_complex(ember.tensor(X0[2:].reshape(1, 2))))
    assert cplx.is_complex() and tuple(cplx.shape) == (1,)
    opt = optim.LBFGS([mat, cplx], **kwargs)

    def flat():
        return ember.cat([mat.reshape(-1), ember.view_as_real(cplx).reshape(-1)], 0)

    closure = _closure_for(opt, None, lambda _: _quartic_loss(flat()))
    for x in expected:
        opt.step(closure)
        np.testing.assert_allclose(flat().detach().numpy(), x, rtol=1e-6, atol=1e-9)
    assert set(opt.state) == {mat}  # L-BFGS keeps its state on the first parameter


def test_lbfgs_state_dict_resumes_exactly():
    kwargs = dict(lr=0.7, max_iter=2, history_size=3)
    p1 = nn.Parameter(ember.tensor(X0))
    o1 = optim.LBFGS([p1], **kwargs)
    for _ in range(6):
        o1.step(_closure_for(o1, p1))
    p2 = nn.Parameter(ember.tensor(X0))
    o2 = optim.LBFGS([p2], **kwargs)
    for _ in range(3):
        o2.step(_closure_for(o2, p2))
    sd = copy.deepcopy(o2.state_dict())
    assert set(sd["state"][0]) == {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                                   "prev_flat_grad", "prev_loss"}
    p3 = nn.Parameter(p2.detach().clone())
    o3 = optim.LBFGS([p3], **kwargs)
    o3.load_state_dict(sd)
    for _ in range(3):
        o3.step(_closure_for(o3, p3))
    np.testing.assert_array_equal(p3.detach().numpy(), p1.detach().numpy())
    # A deep copy (parameters, state and all) continues the same way.
    o4 = copy.deepcopy(o3)
    p4 = o4.param_groups[0]["params"][0]
    assert p4 is not p3 and o4.state[p4]["n_iter"] == o3.state[p3]["n_iter"]
    o3.step(_closure_for(o3, p3))
    o4.step(_closure_for(o4, p4))
    np.testing.assert_array_equal(p4.detach().numpy(), p3.detach().numpy())


def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _rosenbrock_grad(x):
    return np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])


def test_lbfgs_strong_wolfe_steps_satisfy_the_wolfe_conditions_and_converge():
    param = nn.Parameter(ember.tensor([-1.5, 2.0], dtype=ember.float64))
    opt = optim.LBFGS([param], lr=1, max_iter=1, tolerance_change=1e-14, line_search_fn="strong_wolfe")

    def loss_fn(p):
        return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] * p[0]) ** 2

    closure = _closure_for(opt, param, loss_fn)
    c1, c2 = 1e-4, 0.9
    for _ in range(200):
        x = param.detach().numpy().copy()
        if np.abs(_rosenbrock_grad(x)).max() <= 1e-7:
            break
        opt.step(closure)
        state = opt.state[param]
        d, t = state["d"].numpy(), state["t"]
        x_new = param.detach().numpy()
        if np.array_equal(x_new, x):  # stopped: -g'd within tolerance_change, no descent left
            break
        np.testing.assert_allclose(x_new, x + t * d, rtol=1e-12, atol=1e-14)
        gtd, gtd_new = _rosenbrock_grad(x) @ d, _rosenbrock_grad(x_new) @ d
        assert gtd < 0
        assert _rosenbrock(x_new) <= _rosenbrock(x) + c1 * t * gtd  # sufficient decrease
        assert abs(gtd_new) <= c2 * abs(gtd) + 1e-12  # strong curvature condition
    np.testing.assert_allclose(param.detach().numpy(), [1.0, 1.0], atol=1e-6)


def test_lbfgs_strong_wolfe_solves_least_squares():
    param = nn.Parameter(ember.tensor(X0))
    opt = optim.LBFGS([param], line_search_fn="strong_wolfe", tolerance_grad=1e-10, tolerance_change=1e-14)
    for _ in range(3):
        opt.step(_closure_for(opt, param, _loss))
    np.testing.assert_allclose(param.detach().numpy(), np.linalg.lstsq(A, B, rcond=None)[0], rtol=1e-8, atol=1e-10)


def test_lbfgs_cubic_interpolation():
    from ember.optim.lbfgs import _cubic_minimum

    # f(x) = x^3 - 3x: the cubic itself, minimum at 1, from either side.
    assert _cubic_minimum(0.0, 0.0, -3.0, 2.0, 2.0, 9.0) == pytest.approx(1.0)
    assert _cubic_minimum(2.0, 2.0, 9.0, 0.0, 0.0, -3.0) == pytest.approx(1.0)
    # (x - 1)^2 through 0 and 3: the fitted cubic is the parabola.
    assert _cubic_minimum(0.0, 1.0, -2.0, 3.0, 4.0, 4.0) == pytest.approx(1.0)
    # Clamped to the bounds; midpoint when the cubic has no minimiser.
    assert _cubic_minimum(0.0, 0.0, -3.0, 2.0, 2.0, 9.0, bounds=(1.5, 4.0)) == 1.5
    # d1 = g1 + g2 - 3 (f1 - f2) / (x1 - x2) = 1.5 and d1^2 - g1 g2 = 2.25 - 9 < 0.
    assert _cubic_minimum(0.0, 0.0, -3.0, 1.0, -2.5, -3.0) == 0.5


def test_lbfgs_arguments():
    p = nn.Parameter(ember.ones(2))
    opt = optim.LBFGS([p])
    assert {k: v for k, v in opt.defaults.items()} == dict(lr=1, max_iter=20, max_eval=25, tolerance_grad=1e-7,
                                                         tolerance_change=1e-9, history_size=100,
                                                         line_search_fn=None)
    with pytest.raises(ValueError, match=r"^LBFGS doesn't support per-parameter options \(parameter groups\)$"):
        optim.LBFGS([{"params": [p]}, {"params": [nn.Parameter(ember.ones(1))]}])
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -0.5$"):
        optim.LBFGS([p], lr=-0.5)
    bad = optim.LBFGS([p], line_search_fn="backtracking")
    with pytest.raises(RuntimeError, match=r"^only 'strong_wolfe' is supported$"):
        bad.step(_closure_for(bad, p, lambda q: (q * q).sum()))
    with pytest.raises(TypeError):
        opt.step()
    # Already optimal: one evaluation, no move.
    zero = nn.Parameter(ember.zeros(2))
    opt = optim.LBFGS([zero])
    assert float(opt.step(_closure_for(opt, zero, lambda q: (q * q).sum()))) == 0.0
    assert opt.state[zero]["func_evals"] == 1 and opt.state[zero]["n_iter"] == 0


# ---- argument errors ------------------------------------------------------------------------

@pytest.mark.parametrize("make, error, message", [
    (lambda p: optim.SGD(p, lr=-1), ValueError, r"Invalid learning rate: -1"),
    (lambda p: optim.SGD(p, momentum=-0.1), ValueError, r"Invalid momentum value: -0.1"),
    (lambda p: optim.SGD(p, weight_decay=-0.1), ValueError, r"Invalid weight_decay value: -0.1"),
    (lambda p: optim.SGD(p, nesterov=True), ValueError, r"Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True), ValueError,
     r"Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, lr=-0.01), ValueError, r"Invalid learning rate: -0.01"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.9)), ValueError, r"Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.Adam(p, betas=(0.9, -0.1)), ValueError, r"Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.Adam(p, eps=-1e-8), ValueError, r"Invalid epsilon value: -1e-08"),
    (lambda p: optim.AdamW(p, weight_decay=-1), ValueError, r"Invalid weight_decay value: -1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), ValueError, r"Invalid lr_decay value: -1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1), ValueError,
     r"Invalid initial_accumulator_value value: -1"),
    (lambda p: optim.Adagrad(p, eps=-1), ValueError, r"Invalid epsilon value: -1"),
    (lambda p: optim.RMSprop(p, alpha=-1), ValueError, r"Invalid alpha value: -1"),
    (lambda p: optim.RMSprop(p, momentum=-1), ValueError, r"Invalid momentum value: -1"),
    (lambda p: optim.Adadelta(p, rho=1.5), ValueError, r"Invalid rho value: 1.5"),
    (lambda p: optim.Adadelta(p, lr=-2), ValueError, r"Invalid learning rate: -2"),
    (lambda p: optim.Adamax(p, betas=(0.9, 1.0)), ValueError, r"Invalid beta parameter at index 1: 1.0"),
    (lambda p: optim.NAdam(p, momentum_decay=-1), ValueError, r"Invalid momentum_decay value: -1"),
    (lambda p: optim.RAdam(p, weight_decay=-1), ValueError, r"Invalid weight_decay value: -1"),
    (lambda p: optim.SparseAdam(p, lr=0), ValueError, r"Invalid learning rate: 0"),
    (lambda p: optim.SparseAdam(p, eps=0.0), ValueError, r"Invalid epsilon value: 0.0"),
    (lambda p: optim.SparseAdam(p, betas=(1.0, 0.9)), ValueError, r"Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.SparseAdam(p, betas=(0.9, 1.5)), ValueError, r"Invalid beta parameter at index 1: 1.5"),
    (lambda p: optim.SparseAdam([p[0], nn.Parameter(ember.ones(2, dtype=ember.complex64))]), ValueError,
     r"Complex params at indices \[\[0, 1\]\]: SparseAdam does not support complex parameters"),
    (lambda p: optim.SGD([], lr=0.1), ValueError, r"optimizer got an empty parameter list"),
    (lambda p: optim.SGD(p[0], lr=0.1), TypeError, r"params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
     r"ember.FloatTensor"),
    (lambda p: optim.SGD([{"params": set(p)}], lr=0.1), TypeError, r"optimizer parameters need to be organized in ordered "
     r"collections, but the ordering of tensors in sets will change between runs. Please use a list instead."),
    (lambda p: optim.SGD([1.0], lr=0.1), TypeError, r"optimizer can only optimize Tensors, but one of the params is float"),
    (lambda p: optim.SGD([p[0] * 2], lr=0.1), ValueError, r"can't optimize a non-leaf Tensor"),
])
def test_bad_arguments(make, error, message):
    params = [nn.Parameter(ember.ones(2))]
    with pytest.raises(error, match="^" + message + "$") as info:
        make(params)
    assert type(info.value) is error


def test_defaults_follow_pytorch():
    p = [nn.Parameter(ember.ones(1))]
    expected = {
        optim.SGD: dict(lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False),
        optim.Adam: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False),
        optim.AdamW: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False),
        optim.Adagrad: dict(lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10),
        optim.RMSprop: dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False),
        optim.Adadelta: dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0),
        optim.Adamax: dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0),
        optim.NAdam: dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                          decoupled_weight_decay=False),
        optim.RAdam: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False),
        optim.SparseAdam: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False),
    }
    for cls, values in expected.items():
        defaults = cls(p).defaults
        for key, value in values.items():
            assert defaults[key] == value, (cls.__name__, key)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optim.SGD(p, 0.1, 0.9, 0, 0, True)  # lr, momentum, dampening, weight_decay, nesterov positionally
