"""Tests for emberaudio.models.Conformer: a float64 NumPy reference, padding independence,
training, state-dict names, parameter count and errors."""

import numpy as np
import pytest

import ember
from emberaudio.models import Conformer


def _np(t):
    return t.detach().to(ember.float64).numpy()


def _ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _silu(x):
    return x / (1 + np.exp(-x))


def _reference(model, x, length):
    """One item (T, D) through every layer, eval mode; frames >= length are padding."""
    T, D = x.shape
    for layer in model.conformer_layers:
        p = {k: _np(v) for k, v in layer.state_dict().items()}

        def ffn(v, name, p=p):
            h = _ln(v, p[f"{name}.sequential.0.weight"], p[f"{name}.sequential.0.bias"])
            h = _silu(h @ p[f"{name}.sequential.1.weight"].T + p[f"{name}.sequential.1.bias"])
            return h @ p[f"{name}.sequential.4.weight"].T + p[f"{name}.sequential.4.bias"]

        def attention(v, p=p, layer=layer):
            h = _ln(v, p["self_attn_layer_norm.weight"], p["self_attn_layer_norm.bias"])
            qkv = h @ p["self_attn.in_proj_weight"].T + p["self_attn.in_proj_bias"]
            q, k, val = qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:]
            H = layer.self_attn.num_heads
            d = D // H
            out = np.zeros_like(h)
            for hh in range(H):
                s = slice(hh * d, (hh + 1) * d)
                w = q[:, s] @ k[:, s].T / np.sqrt(d)
                w[:, length:] = -np.inf
                w = np.exp(w - w.max(1, keepdims=True))
                out[:, s] = (w / w.sum(1, keepdims=True)) @ val[:, s]
            return out @ p["self_attn.out_proj.weight"].T + p["self_attn.out_proj.bias"]

        def conv(v, p=p):
            h = _ln(v, p["conv_module.layer_norm.weight"], p["conv_module.layer_norm.bias"])
            h = h @ p["conv_module.sequential.0.weight"][:, :, 0].T + p["conv_module.sequential.0.bias"]
            h = h[:, :D] * (1 / (1 + np.exp(-h[:, D:])))
            h[length:] = 0.0  # padded frames read as the convolution's zero padding
            w = p["conv_module.sequential.2.weight"][:, 0]  # (D, K)
            K = w.shape[1]
            padded = np.concatenate([np.zeros(((K - 1) // 2, D)), h, np.zeros(((K - 1) // 2, D))])
            h = np.stack([(padded[t:t + K] * w.T).sum(0) for t in range(T)]) + p["conv_module.sequential.2.bias"]
            if "conv_module.sequential.3.running_mean" in p:
                h = ((h - p["conv_module.sequential.3.running_mean"])
                     / np.sqrt(p["conv_module.sequential.3.running_var"] + 1e-5)
                     * p["conv_module.sequential.3.weight"] + p["conv_module.sequential.3.bias"])
            else:  # GroupNorm with one group: over all channels and frames
                h = (h - h.mean()) / np.sqrt(h.var() + 1e-5)
                h = h * p["conv_module.sequential.3.weight"] + p["conv_module.sequential.3.bias"]
            h = _silu(h)
            return h @ p["conv_module.sequential.5.weight"][:, :, 0].T + p["conv_module.sequential.5.bias"]

        x = 0.5 * ffn(x, "ffn1") + x
        if layer.convolution_first:
            x = x + conv(x)
        x = x + attention(x)
        if not layer.convolution_first:
            x = x + conv(x)
        x = 0.5 * ffn(x, "ffn2") + x
        x = _ln(x, p["final_layer_norm.weight"], p["final_layer_norm.bias"])
    return x


def _model(**kw):
    ember.manual_seed(0)
    args = dict(input_dim=8, num_heads=2, ffn_dim=12, num_layers=2, depthwise_conv_kernel_size=3)
    args.update(kw)
    model = Conformer(**args).double()
    # Non-trivial running statistics so the batch-norm path is exercised.
    for layer in model.conformer_layers:
        norm = layer.conv_module.sequential[3]
        if isinstance(norm, ember.nn.BatchNorm1d):
            norm.running_mean.copy_(ember.randn(8, dtype=ember.float64) * 0.1)
            norm.running_var.copy_(ember.rand(8, dtype=ember.float64) + 0.5)
    return model.eval()


@pytest.mark.parametrize("kw", [{}, {"use_group_norm": True}, {"convolution_first": True},
                                {"depthwise_conv_kernel_size": 5}])
def test_matches_numpy_reference(kw):
    model = _model(**kw)
    x = ember.randn(2, 7, 8, dtype=ember.float64)
    lengths = ember.tensor([7, 7]) if kw.get("use_group_norm") else ember.tensor([7, 5])
    out, out_lengths = model(x, lengths)
    assert out.shape == (2, 7, 8) and out_lengths.tolist() == lengths.tolist()
    for b in range(2):
        n = int(lengths[b])
        want = _reference(model, _np(x[b]), n)
        np.testing.assert_allclose(_np(out[b, :n]), want[:n], rtol=1e-9, atol=1e-9)


def test_padding_and_batch_independence():
    model = _model()
    x = ember.randn(2, 9, 8, dtype=ember.float64)
    lengths = ember.tensor([9, 4])
    out, _ = model(x, lengths)
    y = x.clone()
    y[1, 4:] = 50.0
    out2, _ = model(y, lengths)
    np.testing.assert_allclose(_np(out2[1, :4]), _np(out[1, :4]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(out2[0]), _np(out[0]), rtol=1e-12, atol=1e-12)
    alone, _ = model(x[1:, :4], ember.tensor([4]))
    np.testing.assert_allclose(_np(alone[0]), _np(out[1, :4]), rtol=1e-10, atol=1e-10)


def test_zero_size_batch():
    model = _model()
    out, lengths = model(ember.randn(0, 5, 8, dtype=ember.float64), ember.zeros(0, dtype=ember.int64))
    assert out.shape == (0, 5, 8) and lengths.shape == (0,)


def test_non_contiguous_input_and_eval_determinism():
    model = _model(dropout=0.3)
    x = ember.randn(7, 2, 8, dtype=ember.float64).transpose(0, 1)
    a, _ = model(x, ember.tensor([7, 6]))
    b, _ = model(x.contiguous(), ember.tensor([7, 6]))
    np.testing.assert_array_equal(_np(a), _np(b))


def test_training_step_reduces_loss():
    model = _model(dropout=0.1).train()
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    x = ember.randn(3, 6, 8, dtype=ember.float64)
    target = ember.randn(3, 6, 8, dtype=ember.float64)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        out, _ = model(x, ember.tensor([6, 6, 6]))
        loss = ((out - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_gradcheck_small():
    model = _model(input_dim=4, ffn_dim=4, num_layers=1, use_group_norm=True)
    x = ember.randn(1, 3, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: model(t, ember.tensor([3]))[0], (x,))


def test_state_dict_names_and_parameter_count():
    model = Conformer(input_dim=80, num_heads=4, ffn_dim=128, num_layers=4,
                      depthwise_conv_kernel_size=31)
    keys = list(model.state_dict())
    for k in ["conformer_layers.0.ffn1.sequential.0.weight",
              "conformer_layers.0.ffn1.sequential.1.weight",
              "conformer_layers.0.ffn1.sequential.4.bias",
              "conformer_layers.0.self_attn_layer_norm.weight",
              "conformer_layers.0.self_attn.in_proj_weight",
              "conformer_layers.0.self_attn.out_proj.weight",
              "conformer_layers.0.conv_module.layer_norm.weight",
              "conformer_layers.0.conv_module.sequential.0.weight",
              "conformer_layers.0.conv_module.sequential.2.weight",
              "conformer_layers.0.conv_module.sequential.3.running_var",
              "conformer_layers.0.conv_module.sequential.3.num_batches_tracked",
              "conformer_layers.0.conv_module.sequential.5.bias",
              "conformer_layers.3.final_layer_norm.bias"]:
        assert k in keys, k
    D, F, K = 80, 128, 31
    ffn = 2 * D + D * F + F + F * D + D
    attention = 2 * D + 3 * D * D + 3 * D + D * D + D
    conv = 2 * D + (D * 2 * D + 2 * D) + (D * K + D) + 2 * D + (D * D + D)
    per_layer = 2 * ffn + attention + conv + 2 * D
    assert sum(p.numel() for p in model.parameters()) == 4 * per_layer == 361_024
    assert tuple(model.conformer_layers[0].conv_module.sequential[2].weight.shape) == (80, 1, 31)


def test_errors():
    model = _model()
    with pytest.raises(ValueError, match=r"input must have shape \(batch, frames, 8\)"):
        model(ember.randn(7, 8), ember.tensor([7]))
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 7\]"):
        model(ember.randn(1, 7, 8, dtype=ember.float64), ember.tensor([8]))
    with pytest.raises(ValueError, match="lengths must be at least 1"):
        model(ember.randn(1, 7, 8, dtype=ember.float64), ember.tensor([0]))
    with pytest.raises(ValueError, match="depthwise_kernel_size must be odd to achieve .SAME. padding"):
        Conformer(8, 2, 8, 1, 4)
    with pytest.raises(ValueError, match="must be divisible by num_heads"):
        Conformer(8, 3, 8, 1, 3)
