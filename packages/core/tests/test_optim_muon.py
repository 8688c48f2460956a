"""ember.optim.Muon (torch.optim.Muon): the step against a float64 NumPy reference of the same
algorithm (the Newton-Schulz iteration runs in bfloat16, hence the tolerance), the step's exact
structure around the orthogonalization, the orthogonalization's effect on singular values, the
learning-rate adjustments, state_dict round trips and PyTorch's errors. With EMBER_TORCH_PYTHON,
the same training run in PyTorch 2.13 gives the same bits."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.optim.muon import _newton_schulz

RNG = np.random.default_rng(5)
A, B, C = 3.4445, -4.7750, 2.0315


def newton_schulz_ref(update, steps=5, eps=1e-7):
    x = update.T if update.shape[0] > update.shape[1] else update
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = A * x + (B * gram + C * gram @ gram) @ x
    return x.T if update.shape[0] > update.shape[1] else x


def muon_ref(w, grads, lr, wd, momentum, nesterov, adjust):
    buf = np.zeros_like(w)
    for g in grads:
        buf = buf + (1 - momentum) * (g - buf)
        update = g + momentum * (buf - g) if nesterov else buf
        rows, cols = w.shape
        scale = math.sqrt(max(1, rows / cols)) if adjust in (None, "original") else 0.2 * math.sqrt(max(rows, cols))
        w = w * (1 - lr * wd) - lr * scale * newton_schulz_ref(update)
    return w


def _param(w):
    return ember.nn.Parameter(ember.from_numpy(w.astype(np.float32)))


@pytest.mark.parametrize("shape", [(12, 5), (5, 12), (8, 8)])
@pytest.mark.parametrize("nesterov,adjust", [(True, None), (False, "original"), (True, "match_rms_adamw")])
def test_steps_match_the_float64_reference(shape, nesterov, adjust):
    w = RNG.standard_normal(shape)
    grads = [RNG.standard_normal(shape) for _ in range(4)]
    p = _param(w)
    opt = ember.optim.Muon([p], lr=0.02, weight_decay=0.1, momentum=0.9, nesterov=nesterov, adjust_lr_fn=adjust)
    for g in grads:
        p.grad = ember.from_numpy(g.astype(np.float32))
        opt.step()
    want = muon_ref(w, grads, 0.02, 0.1, 0.9, nesterov, adjust)
    # bfloat16 keeps 8 bits: each step's update is within about 1 % of its size
    step_size = np.abs(want - w).max()
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=0, atol=0.05 * step_size)
    assert np.abs(p.detach().numpy() - w).max() > 0.5 * step_size  # it moved


def test_step_is_decay_then_the_orthogonalized_momentum():
    w, g = RNG.standard_normal((6, 9)).astype(np.float32), RNG.standard_normal((6, 9)).astype(np.float32)
    p = _param(w)
    opt = ember.optim.Muon([p], lr=0.1, weight_decay=0.2, momentum=0.5, nesterov=False)
    p.grad = ember.from_numpy(g)
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    np.testing.assert_allclose(buf.numpy(), 0.5 * g, rtol=1e-6)  # lerp from zero
    update = _newton_schulz(ember.from_numpy(0.5 * g), (A, B, C), 5, 1e-7).float().numpy()
    want = w * np.float32(1 - 0.1 * 0.2) - np.float32(0.1) * update
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-7)


def test_newton_schulz_pushes_singular_values_towards_one():
    for shape in ((16, 40), (40, 16)):
        g = RNG.standard_normal(shape) * np.logspace(-1, 0, shape[1])  # singular values over a decade
        out = _newton_schulz(ember.from_numpy(g), (A, B, C), 5, 1e-7)
        assert out.dtype == ember.bfloat16 and tuple(out.shape) == shape
        s = np.linalg.svd(out.float().numpy().astype(np.float64), compute_uv=False)
        assert s.min() > 0.3 and s.max() < 1.6, s
        np.testing.assert_allclose(out.float().numpy(), newton_schulz_ref(g), atol=0.05)
    zero = _newton_schulz(ember.zeros(3, 4), (A, B, C), 5, 1e-7)  # eps keeps 0 / 0 away
    assert not zero.float().numpy().any()


def test_state_dict_round_trip_resumes_exactly():
    w = RNG.standard_normal((5, 7)).astype(np.float32)
    grads = [RNG.standard_normal((5, 7)).astype(np.float32) for _ in range(4)]
    p1, p2 = _param(w), _param(w)
    o1 = ember.optim.Muon([p1], lr=0.03)
    o2 = ember.optim.Muon([p2], lr=0.03)
    for k, g in enumerate(grads):
        if k == 2:
            o2 = ember.optim.Muon([p2], lr=0.03)
            o2.load_state_dict(o1.state_dict())
        for p, o in ((p1, o1), (p2, o2)):
            p.grad = ember.from_numpy(g)
            o.step()
    np.testing.assert_array_equal(p1.detach().numpy(), p2.detach().numpy())


def test_errors():
    p = _param(np.ones((2, 3)))
    with pytest.raises(ValueError, match="Learning rate should be >= 0 but is: -1"):
        ember.optim.Muon([p], lr=-1)
    with pytest.raises(ValueError, match="momentum should be >= 0"):
        ember.optim.Muon([p], momentum=-0.1)
    with pytest.raises(ValueError, match="weight decay should be >= 0"):
        ember.optim.Muon([p], weight_decay=-0.1)
    with pytest.raises(ValueError, match="Adjust learning rate function cubic is not supported"):
        ember.optim.Muon([p], adjust_lr_fn="cubic")
    with pytest.raises(ValueError, match="Muon only supports 2D parameters whereas we found a parameter with size"):
        ember.optim.Muon([p, ember.nn.Parameter(ember.ones(4))])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        ember.optim.Muon([p], lr=ember.ones(2))
    for kwargs, message in (({"ns_steps": 100}, "Number of steps must be less than 100"),
                            ({"ns_coefficients": (1.0, 2.0)}, "Coefficients must be a tuple of exactly 3 values")):
        opt = ember.optim.Muon([p], **kwargs)
        p.grad = ember.ones(2, 3)
        with pytest.raises(ValueError, match=message):
            opt.step()
    z = ember.nn.Parameter(ember.ones(2, 2, dtype=ember.complex64))
    opt = ember.optim.Muon([z])
    z.grad = ember.ones(2, 2, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="Muon does not support complex parameters"):
        opt.step()


TRAINING = """
import sys
import numpy as np
T = __import__(sys.argv[1])
rng = np.random.default_rng(2)
w1, w2 = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((3, 16)).astype(np.float32)
x, y = rng.standard_normal((32, 8)).astype(np.float32), rng.integers(0, 3, 32)
l1, l2 = T.nn.Linear(8, 16, bias=False), T.nn.Linear(16, 3, bias=False)
with T.no_grad():
    l1.weight.copy_(T.from_numpy(w1)); l2.weight.copy_(T.from_numpy(w2))
opt = T.optim.Muon(list(l1.parameters()) + list(l2.parameters()), lr=0.02, adjust_lr_fn="match_rms_adamw")
losses = []
for _ in range(5):
    opt.zero_grad()
    loss = T.nn.functional.cross_entropy(l2(T.relu(l1(T.from_numpy(x)))), T.from_numpy(y))
    loss.backward(); opt.step(); losses.append(loss.item())
np.savez(sys.argv[2], w1=l1.weight.detach().numpy(), w2=l2.weight.detach().numpy(), losses=np.array(losses))
"""


@pytest.mark.skipif(not os.environ.get("EMBER_TORCH_PYTHON"), reason="EMBER_TORCH_PYTHON names no Python with torch")
def test_training_matches_torch(tmp_path):
    script = tmp_path / "muon.py"
    script.write_text(TRAINING)
    for python, lib in ((os.environ["EMBER_TORCH_PYTHON"], "torch"), (sys.executable, "ember")):
        done = subprocess.run([python, str(script), lib, str(tmp_path / f"{lib}.npz")], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    theirs, ours = np.load(tmp_path / "torch.npz"), np.load(tmp_path / "ember.npz")
    for key in ("w1", "w2", "losses"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
