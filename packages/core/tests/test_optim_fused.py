"""The one-call optimizer steps (Note [multi-tensor step]): the default (foreach) path and
fused=True give the per-parameter loop's numbers step by step, state included; ineligible groups
fall back to the loop or, with fused=True, raise."""

from __future__ import annotations

import numpy as np
import pytest

import ember

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), maximize=True, decoupled_weight_decay=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.3)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True)),
    # each step body is compiled per option set (Note [optimizer body flags]): the other sets
    ("SGD", dict(lr=0.1, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.05)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01, centered=True, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, weight_decay=0.01)),
]


def _run(name, options, dtype, steps=5, **path):
    rng = np.random.default_rng(3)
    shapes = [(7, 5), (33,), (2, 3, 4), (1,)]
    params = [ember.from_numpy(rng.standard_normal(s)).to(dtype).requires_grad_() for s in shapes]
    opt = getattr(ember.optim, name)(params, **options, **path)
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(steps)]
    for step in grads:
        for p, g in zip(params, step, strict=True):
            p.grad = ember.from_numpy(g).to(dtype)
        opt.step()
    state = [{k: v.to(ember.float64).numpy() for k, v in opt.state[p].items() if isinstance(v, ember.Tensor)}
             for p in params]
    return [p.detach().to(ember.float64).numpy() for p in params], state


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name,options", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_one_call_paths_equal_the_loop(name, options, dtype):
    loop_params, loop_state = _run(name, options, dtype, foreach=False)
    for path in ({}, {"fused": True}) if name != "RMSprop" else ({},):  # PyTorch's RMSprop has no fused=
        params, state = _run(name, options, dtype, **path)
        tol = dict(rtol=1e-6, atol=1e-7) if dtype == ember.float32 else dict(rtol=1e-14, atol=1e-15)
        if options.get("centered"):
            # sqrt(square_avg - grad_avg^2) cancels where the gradient barely varies, magnifying a
            # single rounding (the loop's kernels may fuse a multiply-add that this one does not)
            tol = dict(rtol=1e-4, atol=1e-6) if dtype == ember.float32 else dict(rtol=1e-12, atol=1e-13)
        elif name == "RMSprop" and options.get("momentum"):
            # buf * momentum + g / avg is one fused multiply-add here; the loop rounds the product
            # first. Terms near 10 cancelling to 0.5 leave that rounding (~1e-6) in the result.
            tol = dict(rtol=1e-6, atol=4e-6) if dtype == ember.float32 else dict(rtol=1e-14, atol=1e-14)
        for a, b in zip(params, loop_params, strict=True):
            np.testing.assert_allclose(a, b, **tol)
        for sa, sb in zip(state, loop_state, strict=True):
            assert sa.keys() == sb.keys()
            for k in sa:
                np.testing.assert_allclose(sa[k], sb[k], **tol, err_msg=k)


def test_parameters_without_gradients_are_left_alone():
    a, b = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    opt = ember.optim.Adam([a, b], lr=0.1)
    a.grad = ember.ones(3)
    opt.step()
    assert b not in opt.state or not opt.state[b]
    np.testing.assert_array_equal(b.detach().numpy(), np.ones(3))
    assert float(opt.state[a]["step"]) == 1.0


def test_fused_refuses_what_it_cannot_run_and_foreach_falls_back():
    z = ember.ones(2, dtype=ember.complex64, requires_grad=True)
    z.grad = ember.ones(2, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="`fused=True` requires all the params to be floating point Tensors"):
        ember.optim.SGD([z], lr=0.1, fused=True).step()
    ember.optim.SGD([z], lr=0.1).step()  # the default path falls back to the loop
    np.testing.assert_allclose(z.detach().numpy(), [0.9, 0.9], rtol=1e-6)
    strided = ember.ones(4, 2).t().detach().requires_grad_()
    strided.grad = ember.ones(2, 4)
    ember.optim.SGD([strided], lr=0.5).step()
    np.testing.assert_allclose(strided.detach().numpy(), np.full((2, 4), 0.5))


def test_fused_ops_check_their_lists():
    p, g = [ember.ones(3)], [ember.ones(4)]
    with pytest.raises(ValueError, match=r"expected grads\[0\] to be a contiguous float32 tensor of shape \[3\]"):
        ember.ops.aten._fused_sgd_(p, g, [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                                   nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(ValueError, match="expected 1 momentum_buffers with momentum 0.9, but got 0"):
        ember.ops.aten._fused_sgd_(p, [ember.ones(3)], [], weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0,
                                   nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(TypeError, match="expected floating point parameters"):
        ember.ops.aten._fused_adagrad_([ember.ones(3, dtype=ember.int64)], [ember.ones(3, dtype=ember.int64)],
                                       [ember.ones(3, dtype=ember.int64)], [ember.zeros([])], lr=0.1, lr_decay=0.0,
                                       weight_decay=0.0, eps=1e-10, maximize=False)
