"""ember.optim.swap_in_optimizer_params_and_state (torch.optim's, PyTorch 2.13): an optimizer steps
on swapped-in parameters and state, and gets its own back on exit. The expected numbers come from a
second optimizer built on copies of the swapped-in tensors with load_state_dict."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
from ember.optim import swap_in_optimizer_params_and_state as swap_in


def _trained(make):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Linear(4, 2))
    opt = make([{"params": model[0].parameters()}, {"params": model[1].parameters(), "lr": 0.05}])
    model(ember.ones(2, 3)).sum().backward()
    opt.step()
    return model, opt


def _swapped_inputs(model, opt, seed):
    rng = np.random.default_rng(seed)
    params = {n: ember.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)).requires_grad_()
              for n, p in model.named_parameters()}
    for p in params.values():
        p.grad = ember.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32))
    osd = copy.deepcopy(opt.state_dict())
    for group in osd["param_groups"]:
        group["lr"] = 0.5
    return params, osd


@pytest.mark.parametrize("make", [lambda g: ember.optim.SGD(g, lr=0.1, momentum=0.9),
                                  lambda g: ember.optim.Adam(g, lr=0.1)], ids=["sgd-momentum", "adam"])
def test_step_runs_on_the_swapped_in_parameters_and_state(make):
    model, opt = _trained(make)
    live_params = [p.detach().clone() for p in model.parameters()]
    live_state = copy.deepcopy(opt.state_dict())
    params, osd = _swapped_inputs(model, opt, 0)
    osd_before = copy.deepcopy(osd)

    # the reference: a fresh optimizer over copies, loaded with the same state and options
    ref_params = [p.detach().clone().requires_grad_() for p in params.values()]
    for r, p in zip(ref_params, params.values(), strict=True):
        r.grad = p.grad.clone()
    ref = make([{"params": ref_params[:2]}, {"params": ref_params[2:], "lr": 0.05}])
    ref.load_state_dict(copy.deepcopy(osd_before))
    ref.step()

    with swap_in(opt, params, osd):
        assert opt.param_groups[0]["params"][0] is params["0.weight"] and opt.param_groups[1]["lr"] == 0.5
        opt.step()
    for got, want in zip(params.values(), ref_params, strict=True):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-7)
    # the caller's state tensors were updated in place, as the reference's were
    key = "momentum_buffer" if "momentum_buffer" in osd["state"][0] else "exp_avg"
    for i in osd["state"]:
        np.testing.assert_allclose(osd["state"][i][key].numpy(), ref.state_dict()["state"][i][key].numpy(),
                                   rtol=1e-6, atol=1e-7)
        assert not np.array_equal(osd["state"][i][key].numpy(), osd_before["state"][i][key].numpy())
    # the live optimizer and model are untouched
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.05]
    for p, before in zip(model.parameters(), live_params, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), before.numpy())
        assert opt.param_groups[0]["params"][0] is next(model.parameters())
    after = opt.state_dict()
    for i in live_state["state"]:
        np.testing.assert_array_equal(after["state"][i][key].numpy(), live_state["state"][i][key].numpy())


def test_new_state_entries_do_not_reach_the_caller():
    model, opt = _trained(lambda g: ember.optim.SGD(g, lr=0.1, momentum=0.9))
    params, osd = _swapped_inputs(model, opt, 1)
    with swap_in(opt, params, osd):
        opt.state[params["0.weight"]]["extra"] = 1
        opt.state[params["0.bias"]]["momentum_buffer"] = ember.zeros(4)  # a reassignment
    assert "extra" not in osd["state"][0] and osd["state"][1]["momentum_buffer"].abs().sum().item() > 0


def test_the_live_optimizer_comes_back_after_an_exception():
    model, opt = _trained(lambda g: ember.optim.SGD(g, lr=0.1, momentum=0.9))
    params, osd = _swapped_inputs(model, opt, 2)
    groups, state = opt.param_groups, opt.state
    with pytest.raises(KeyError):
        with swap_in(opt, params, osd):
            raise KeyError("inside")
    assert opt.param_groups is groups and opt.state is state


def test_swap_in_errors():
    model, opt = _trained(lambda g: ember.optim.SGD(g, lr=0.1, momentum=0.9))
    params, osd = _swapped_inputs(model, opt, 3)
    with pytest.raises(RuntimeError, match="requires the explicit parameter state to match optimizer.param_groups"):
        with swap_in(opt, {"w": params["0.weight"]}, osd):
            pass
    with pytest.raises(RuntimeError, match="different number of parameter groups than the live optimizer"):
        with swap_in(opt, params, {"state": {}, "param_groups": []}):
            pass
    fresh = ember.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with swap_in(fresh, params, osd):
            pass
