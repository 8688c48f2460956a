"""Transformer encoder inference: Ember's fused fast path beside a NumPy float32 encoder layer
(the same math on NumPy's BLAS), and beside Ember's own slow path, printing time ratios.

ratio = Ember fast-path time / peer time (lower is better; 1.00 is parity).
"""

from __future__ import annotations

import numpy as np
from timing import print_ratios

import ember
from ember import nn


def _numpy_layer(layer, heads):
    """A post-norm ReLU encoder layer in NumPy float32, on padded [N, L, E] input with a key mask."""
    p = {k: v.detach().numpy().copy() for k, v in layer.state_dict().items()}
    w_in, b_in = p["self_attn.in_proj_weight"].T.copy(), p["self_attn.in_proj_bias"]
    w_out, b_out = p["self_attn.out_proj.weight"].T.copy(), p["self_attn.out_proj.bias"]
    w1, b1, w2, b2 = p["linear1.weight"].T.copy(), p["linear1.bias"], p["linear2.weight"].T.copy(), p["linear2.bias"]

    def norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        var = x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * w + b

    def run(x, additive_mask):
        n, length, e = x.shape
        hd = e // heads
        qkv = x.reshape(-1, e) @ w_in + b_in
        q, k, v = (qkv[:, i * e:(i + 1) * e].reshape(n, length, heads, hd).transpose(0, 2, 1, 3) for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + additive_mask[:, None, None, :]
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attn = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, e) @ w_out + b_out
        h = norm(x.reshape(-1, e) + attn, p["norm1.weight"], p["norm1.bias"])
        ff = np.maximum(h @ w1 + b1, 0) @ w2 + b2
        return norm(h + ff, p["norm2.weight"], p["norm2.bias"]).reshape(n, length, e)

    return run


def main() -> None:
    rng = np.random.default_rng(0)
    rows_numpy, rows_slow = [], []
    for batch, length, d_model, heads in ((8, 64, 256, 8), (32, 128, 256, 8)):
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, batch_first=True).eval()
        encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=True).eval()
        x = rng.standard_normal((batch, length, d_model)).astype(np.float32)
        lengths = rng.integers(length // 4, length + 1, batch)
        lengths[0] = length
        pad = np.arange(length)[None, :] >= lengths[:, None]
        xt, mask = ember.from_numpy(x), ember.from_numpy(pad)
        additive = np.where(pad, -np.inf, 0).astype(np.float32)
        run_numpy = _numpy_layer(layer, heads)

        def fast(xt=xt, mask=mask, encoder=encoder):
            with ember.no_grad():
                return encoder(xt, src_key_padding_mask=mask)

        def slow(xt=xt, mask=mask, layer=layer):
            with ember.no_grad():
                return _slow_layer(layer, xt, mask)

        shape = f"N={batch} L={length} E={d_model} H={heads}, {pad.mean():.0%} padding"
        rows_numpy.append((f"encoder layer, {shape}", fast, lambda x=x, a=additive, f=run_numpy: f(x, a)))
        rows_slow.append((f"encoder layer, {shape}", fast, slow))
    print_ratios(rows_numpy)
    print()
    print_ratios(rows_slow, peer="slow path")


def _slow_layer(layer, xt, mask):
    """The same layer through the composite (slow) path: train() with dropout off takes it."""
    saved = [(m, m.p) for m in layer.modules() if isinstance(m, nn.Dropout)]
    for m, _ in saved:
        m.p = 0.0
    attention_dropout, layer.self_attn.dropout = layer.self_attn.dropout, 0.0
    layer.train()
    try:
        return layer(xt, src_key_padding_mask=mask)
    finally:
        layer.eval()
        for m, p in saved:
            m.p = p
        layer.self_attn.dropout = attention_dropout


if __name__ == "__main__":
    main()
