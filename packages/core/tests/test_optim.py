"""ember.optim: every optimizer's 20-step trajectory on a fixed least-squares problem equals an
independent float64 NumPy implementation of PyTorch's documented algorithm, plus param groups,
state_dict round trips and argument errors."""

import math

import numpy as np
import pytest

import ember
from ember import nn, optim

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


def ref_nadam(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3, decoupled=False):
    b1, b2 = betas

    def step(x, g, s, t):
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


def ref_radam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    b1, b2 = betas

    def step(x, g, s, t):
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
    (optim.Adam, dict(lr=0.1), ref_adam(lr=0.1)),
    (optim.Adam, dict(lr=0.1, weight_decay=0.2, amsgrad=True, betas=(0.8, 0.9)),
     ref_adam(lr=0.1, weight_decay=0.2, amsgrad=True, betas=(0.8, 0.9))),
    (optim.Adam, dict(lr=0.1, maximize=True), ref_adam(lr=0.1, maximize=True)),
    (optim.AdamW, dict(lr=0.1), ref_adam(lr=0.1, weight_decay=1e-2, decoupled=True)),
    (optim.AdamW, dict(lr=0.1, weight_decay=0.3, amsgrad=True), ref_adam(lr=0.1, weight_decay=0.3, amsgrad=True,
                                                                          decoupled=True)),
    (optim.Adagrad, dict(lr=0.3), ref_adagrad(lr=0.3)),
    (optim.Adagrad, dict(lr=0.3, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5),
     ref_adagrad(lr=0.3, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    (optim.RMSprop, dict(lr=0.01), ref_rmsprop(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1),
     ref_rmsprop(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)),
    (optim.Adadelta, dict(), ref_adadelta()),
    (optim.Adadelta, dict(lr=0.5, rho=0.8, weight_decay=0.1), ref_adadelta(lr=0.5, rho=0.8, weight_decay=0.1)),
    (optim.Adamax, dict(lr=0.1), ref_adamax(lr=0.1)),
    (optim.Adamax, dict(lr=0.1, weight_decay=0.1, maximize=True), ref_adamax(lr=0.1, weight_decay=0.1, maximize=True)),
    (optim.NAdam, dict(lr=0.1), ref_nadam(lr=0.1)),
    (optim.NAdam, dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True),
     ref_nadam(lr=0.1, weight_decay=0.1, decoupled=True)),
    (optim.RAdam, dict(lr=0.1), ref_radam(lr=0.1)),
    (optim.RAdam, dict(lr=0.1, weight_decay=0.1, betas=(0.9, 0.9)), ref_radam(lr=0.1, weight_decay=0.1,
                                                                              betas=(0.9, 0.9))),
]


@pytest.mark.parametrize("cls, kwargs, reference", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in
                                                                  enumerate(CASES)])
def test_twenty_steps_match_the_reference(cls, kwargs, reference):
    param = nn.Parameter(ember.tensor(X0))
    opt = cls([param], **kwargs)
    x, state = X0.copy(), {}
    for t in range(1, 21):
        opt.zero_grad()
        _loss(param).backward()
        np.testing.assert_allclose(param.grad.numpy(), _grad(x), rtol=1e-9, atol=1e-12)
        opt.step()
        x = reference(x, _grad(x), state, t)
        np.testing.assert_allclose(param.detach().numpy(), x, rtol=1e-6, atol=1e-9, err_msg=f"step {t}")
    # The parameters moved. (RAdam takes its unrectified branch for steps 1-5 with beta2 = 0.999
    # and its rectified one after, so both are compared.)
    assert not np.allclose(x, X0)


@pytest.mark.parametrize("cls, kwargs, reference", CASES[:1] + CASES[4:5] + CASES[11:12], ids=["SGD", "Adam", "RMSprop"])
def test_state_dict_resumes_exactly(cls, kwargs, reference, tmp_path):
    def run(steps, opt, param):
        for _ in range(steps):
            opt.zero_grad()
            _loss(param).backward()
            opt.step()

    p1 = nn.Parameter(ember.tensor(X0))
    o1 = cls([p1], **kwargs)
    run(20, o1, p1)

    p2 = nn.Parameter(ember.tensor(X0))
    o2 = cls([p2], **kwargs)
    run(8, o2, p2)
    ember.save({"model": [p2.detach()], "optim": o2.state_dict()}, tmp_path / "ckpt.safetensors")
    saved = ember.load(tmp_path / "ckpt.safetensors")
    p3 = nn.Parameter(saved["model"][0])
    o3 = cls([p3], **kwargs)
    o3.load_state_dict(saved["optim"])
    run(12, o3, p3)
    np.testing.assert_array_equal(p3.detach().numpy(), p1.detach().numpy())


def test_param_groups_options_and_state_dict_layout():
    w, b, extra = (nn.Parameter(ember.ones(2, dtype=ember.float64)) for _ in range(3))
    opt = optim.SGD([{"params": [w]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[0]["momentum"] == 0 and opt.param_groups[1]["momentum"] == 0.9
    for p in (w, b):
        p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    assert w.tolist() == [0.9, 0.9] and b.tolist() == [0.5, 0.5]
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][1]["params"] == [1]
    assert list(sd["state"]) == [1] and sd["state"][1]["momentum_buffer"].tolist() == [1.0, 1.0]
    opt.add_param_group({"params": [extra], "lr": 0.01})
    assert opt.param_groups[2]["momentum"] == 0 and opt.param_groups[2]["nesterov"] is False
    with pytest.raises(ValueError, match=r"some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [w]})
    with pytest.raises(ValueError, match=r"loaded state dict has a different number of parameter groups"):
        opt.load_state_dict(sd)
    opt.zero_grad(set_to_none=False)
    assert w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None
    assert "Parameter Group 1" in repr(opt) and "    lr: 0.5" in repr(opt)


def test_complex_parameters_update_as_real_pairs():
    z = nn.Parameter(ember.tensor([1 + 2j, -1j], dtype=ember.complex128))
    r = nn.Parameter(ember.view_as_real(z.detach()).clone())
    oz, orr = optim.Adam([z], lr=0.1), optim.Adam([r], lr=0.1)
    for _ in range(5):
        for p, o in ((z, oz), (r, orr)):
            o.zero_grad()
            real = ember.view_as_real(p) if p.is_complex() else p
            (real * real * ember.tensor([[1.0, 3.0]], dtype=ember.float64)).sum().backward()
            o.step()
    np.testing.assert_allclose(ember.view_as_real(z.detach()).numpy(), r.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("make, error, message", [
    (lambda p: optim.SGD(p, lr=-1), ValueError, r"Invalid learning rate: -1"),
    (lambda p: optim.SGD(p, momentum=-0.1), ValueError, r"Invalid momentum value: -0.1"),
    (lambda p: optim.SGD(p, nesterov=True), ValueError, r"Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.9)), ValueError, r"Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.Adam(p, betas=(0.9, -0.1)), ValueError, r"Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.Adam(p, eps=-1e-8), ValueError, r"Invalid epsilon value: -1e-08"),
    (lambda p: optim.AdamW(p, weight_decay=-1), ValueError, r"Invalid weight_decay value: -1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), ValueError, r"Invalid lr_decay value: -1"),
    (lambda p: optim.RMSprop(p, alpha=-1), ValueError, r"Invalid alpha value: -1"),
    (lambda p: optim.Adadelta(p, rho=1.5), ValueError, r"Invalid rho value: 1.5"),
    (lambda p: optim.NAdam(p, momentum_decay=-1), ValueError, r"Invalid momentum_decay value: -1"),
    (lambda p: optim.SGD([], lr=0.1), ValueError, r"optimizer got an empty parameter list"),
    (lambda p: optim.SGD(p[0], lr=0.1), TypeError, r"params argument given to the optimizer should be an iterable"),
    (lambda p: optim.SGD([{"params": set(p)}], lr=0.1), TypeError, r"ordering of tensors in sets will change"),
    (lambda p: optim.SGD([1.0], lr=0.1), TypeError, r"optimizer can only optimize Tensors, but one of the params is float"),
    (lambda p: optim.SGD([p[0] * 2], lr=0.1), ValueError, r"can't optimize a non-leaf Tensor"),
])
def test_bad_arguments(make, error, message):
    params = [nn.Parameter(ember.ones(2))]
    with pytest.raises(error, match=message):
        make(params)
