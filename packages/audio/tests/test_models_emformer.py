"""Tests for emberaudio.models.Emformer: a float64 NumPy reference, streaming equals forward,
masking and batch independence, training, state-dict names and errors."""

import math

import numpy as np
import pytest

import ember
from emberaudio.models import Emformer


def _model(**kw):
    ember.manual_seed(0)
    args = dict(input_dim=8, num_heads=2, ffn_dim=16, num_layers=2, segment_length=4,
                left_context_length=8, right_context_length=2)
    args.update(kw)
    return Emformer(**args).double().eval()


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _reference(model, x, length):
    """One item, no memory: every frame of segment i sees utterance frames
    [i*S - L, (i+1)*S) and right-context block i; written from the paper's definition."""
    S, L, R = model.segment_length, model.left_context_length, model.right_context_length
    T = x.shape[0] - R
    nseg = math.ceil(T / S)
    utt = x[:T]
    rc = [x[(i + 1) * S:(i + 1) * S + R] if i < nseg - 1 else x[T:] for i in range(nseg)]
    for layer in model.emformer_layers:
        p = {k: _np(v) for k, v in layer.state_dict().items()}
        H, D = layer.attention.num_heads, x.shape[1]
        d = D // H

        def ln(v, name, p=p):
            return _layer_norm(v, p[name + ".weight"], p[name + ".bias"])

        def lin(v, name, p=p):
            return v @ p[name + ".weight"].T + p[name + ".bias"]

        u_n = ln(utt, "layer_norm_input")
        rc_n = [ln(r, "layer_norm_input") for r in rc]
        new_utt, new_rc = np.zeros_like(utt), []
        for i in range(nseg):
            lo, hi = max(i * S - L, 0), min((i + 1) * S, T)
            keys_in = np.concatenate([rc_n[i], u_n[lo:hi]])
            valid = np.concatenate([np.ones(len(rc_n[i]), bool), np.arange(lo, hi) < length])
            kv = lin(keys_in, "attention.emb_to_key_value")
            k, v = kv[:, :D], kv[:, D:]
            queries = np.concatenate([rc_n[i], u_n[i * S:hi]])
            q = lin(queries, "attention.emb_to_query")
            out = np.zeros_like(q)
            for h in range(H):
                sl = slice(h * d, (h + 1) * d)
                w = q[:, sl] @ k[:, sl].T / math.sqrt(d)
                w[:, ~valid] = -1e8
                w = np.exp(w - w.max(1, keepdims=True))
                w /= w.sum(1, keepdims=True)
                out[:, sl] = w @ v[:, sl]
            out = lin(out, "attention.out_proj")
            res = np.concatenate([rc[i], utt[i * S:hi]]) + out
            hidden = np.maximum(lin(ln(res, "pos_ff.0"), "pos_ff.1"), 0)
            res = lin(hidden, "pos_ff.4") + res
            res = ln(res, "layer_norm_output")
            new_rc.append(res[:len(rc[i])])
            new_utt[i * S:hi] = res[len(rc[i]):]
        utt, rc = new_utt, new_rc
    return utt


@pytest.mark.parametrize("T,L,R", [(12, 8, 2), (10, 0, 1), (9, 4, 0)])
def test_forward_matches_numpy_reference(T, L, R):
    model = _model(left_context_length=L, right_context_length=R)
    x = ember.randn(2, T + R, 8, dtype=ember.float64)
    lengths = ember.tensor([T, T - 2])
    out, out_lengths = model(x, lengths)
    assert out.shape == (2, T, 8)
    assert out_lengths.tolist() == [T, T - 2]
    for b in range(2):
        want = _reference(model, _np(x[b]), int(lengths[b]))
        n = int(lengths[b])
        np.testing.assert_allclose(_np(out[b])[:n], want[:n], rtol=1e-9, atol=1e-9)


def test_forward_non_contiguous_input():
    model = _model()
    x = ember.randn(14, 2, 8, dtype=ember.float64).transpose(0, 1)
    assert not x.is_contiguous()
    out, _ = model(x, ember.tensor([12, 12]))
    ref, _ = model(x.contiguous(), ember.tensor([12, 12]))
    np.testing.assert_allclose(_np(out), _np(ref), rtol=0, atol=0)


@pytest.mark.parametrize("memory", [0, 2])
def test_streaming_infer_equals_forward(memory):
    model = _model(max_memory_size=memory, num_layers=3)
    S, R = 4, 2
    x = ember.randn(3, 4 * S + R, 8, dtype=ember.float64)
    full, _ = model(x, ember.tensor([4 * S] * 3))
    states, outs = None, []
    for i in range(4):
        out, out_lengths, states = model.infer(x[:, i * S:i * S + S + R], ember.tensor([S + R] * 3), states)
        assert out.shape == (3, S, 8)
        assert out_lengths.tolist() == [S] * 3
        outs.append(out)
    np.testing.assert_allclose(_np(ember.cat(outs, dim=1)), _np(full), rtol=1e-9, atol=1e-9)
    # Per layer: memory (M, B, D), left-context keys and values (L, B, D), frames seen (1, B).
    assert len(states) == 3
    assert [tuple(t.shape) for t in states[0]] == [(memory, 3, 8), (8, 3, 8), (8, 3, 8), (1, 3)]
    assert states[0][3].tolist() == [[16, 16, 16]]


@pytest.mark.parametrize("T,S,L,R,M", [(7, 3, 2, 1, 1), (8, 2, 4, 2, 2), (5, 5, 0, 0, 3)])
def test_attention_mask_follows_definition(T, S, L, R, M):
    model = _model(segment_length=S, left_context_length=L, right_context_length=R, max_memory_size=M)
    got = _np(model._attention_mask(T, None).to(ember.int64)).astype(bool)
    n = math.ceil(T / S)
    # Keys: memory 0..n-2, right-context blocks (R each), utterance frames.
    keys = [("m", i) for i in range(n - 1)] + [("r", i) for i in range(n) for _ in range(R)] + \
           [("u", t) for t in range(T)]
    queries = [("r", i) for i in range(n) for _ in range(R)] + [("u", t // S) for t in range(T)] + \
              [("s", i) for i in range(n)]
    want = np.ones((len(queries), len(keys)), bool)
    for qi, (kind, seg) in enumerate(queries):
        for ki, (kk, idx) in enumerate(keys):
            if kk == "m":
                ok = kind != "s" and seg - M <= idx < seg
            elif kk == "r":
                ok = idx == seg
            else:
                ok = max(seg * S - L, 0) <= idx < min((seg + 1) * S, T)
            want[qi, ki] = not ok
    np.testing.assert_array_equal(got, want)


def test_padding_and_batch_independence():
    # No right context: a segment's look-ahead frames are read as given, padding or not (as in
    # torchaudio), so only with R = 0 are all frames past ``lengths`` irrelevant.
    model = _model(max_memory_size=1, right_context_length=0)
    x = ember.randn(2, 12, 8, dtype=ember.float64)
    lengths = ember.tensor([12, 7])
    out, _ = model(x, lengths)
    # Changing item 1's padding frames does not change its valid outputs...
    y = x.clone()
    y[1, 7:12] = 100.0
    out2, _ = model(y, lengths)
    np.testing.assert_allclose(_np(out2[1, :7]), _np(out[1, :7]), rtol=1e-12, atol=1e-12)
    # ...nor does running it alone, and item 0 is untouched.
    np.testing.assert_allclose(_np(out2[0]), _np(out[0]), rtol=0, atol=0)
    alone, _ = model(x[1:], lengths[1:])
    np.testing.assert_allclose(_np(alone[0, :7]), _np(out[1, :7]), rtol=1e-12, atol=1e-12)


def test_infer_padded_last_segment_masks_padding():
    model = _model(right_context_length=0)
    x = ember.randn(1, 4, 8, dtype=ember.float64)
    lengths = ember.tensor([2])
    a, la, _ = model.infer(x, lengths)
    y = x.clone()
    y[0, 2:] = -50.0
    b, _, _ = model.infer(y, lengths)
    assert la.tolist() == [2]
    np.testing.assert_allclose(_np(a[0, :2]), _np(b[0, :2]), rtol=1e-12, atol=1e-12)


def test_zero_size_batch_and_zero_length():
    model = _model(max_memory_size=1)
    out, lengths = model(ember.randn(0, 14, 8, dtype=ember.float64), ember.zeros(0, dtype=ember.int64))
    assert out.shape == (0, 12, 8) and lengths.shape == (0,)
    out, lengths, states = model.infer(ember.randn(0, 6, 8, dtype=ember.float64),
                                       ember.zeros(0, dtype=ember.int64))
    assert out.shape == (0, 4, 8) and tuple(states[0][1].shape) == (8, 0, 8)
    # An item with no valid frame leaves the other item unchanged.
    x = ember.randn(2, 14, 8, dtype=ember.float64)
    both, _ = model(x, ember.tensor([12, 0]))
    alone, _ = model(x[:1], ember.tensor([12]))
    assert np.isfinite(_np(both)).all()
    np.testing.assert_allclose(_np(both[0]), _np(alone[0]), rtol=1e-12, atol=1e-12)


def test_eval_determinism_and_training_dropout():
    model = _model(dropout=0.5)
    x = ember.randn(2, 14, 8, dtype=ember.float64)
    lengths = ember.tensor([12, 12])
    a, _ = model(x, lengths)
    b, _ = model(x, lengths)
    np.testing.assert_array_equal(_np(a), _np(b))
    model.train()
    c, _ = model(x, lengths)
    assert not np.allclose(_np(c), _np(a))


def test_training_step_reduces_loss():
    model = _model(max_memory_size=2).train()
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    x = ember.randn(2, 14, 8, dtype=ember.float64)
    target = ember.randn(2, 12, 8, dtype=ember.float64)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        out, _ = model(x, ember.tensor([12, 12]))
        loss = ((out - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_gradcheck_small():
    model = _model(input_dim=4, ffn_dim=4, num_layers=1, segment_length=2,
                   left_context_length=2, right_context_length=1, max_memory_size=1)
    x = ember.randn(1, 5, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: model(t, ember.tensor([4]))[0], (x,))


def test_state_dict_names_and_parameter_count():
    model = Emformer(512, 8, 2048, 3, 4, right_context_length=1)
    keys = list(model.state_dict())
    assert keys[:6] == [
        "emformer_layers.0.attention.emb_to_key_value.weight",
        "emformer_layers.0.attention.emb_to_key_value.bias",
        "emformer_layers.0.attention.emb_to_query.weight",
        "emformer_layers.0.attention.emb_to_query.bias",
        "emformer_layers.0.attention.out_proj.weight",
        "emformer_layers.0.attention.out_proj.bias",
    ]
    assert "emformer_layers.2.pos_ff.4.weight" in keys
    assert "emformer_layers.2.layer_norm_output.bias" in keys
    assert "emformer_layers.3.pos_ff.4.weight" not in keys
    # Per layer: 4 D^2 + 4 D (attention) + 2 D F + F + D (FFN) + 6 D (three LayerNorms).
    D, F = 512, 2048
    assert sum(p.numel() for p in model.parameters()) == 3 * (4 * D * D + 4 * D + 2 * D * F + F + D + 6 * D)


def test_depthwise_init_scales_layers():
    model = Emformer(64, 4, 64, 4, 4)
    stds = [float(layer.attention.emb_to_query.weight.std()) for layer in model.emformer_layers]
    bound = math.sqrt(6.0 / (64 + 64))
    for i, s in enumerate(stds):
        assert abs(s - bound / math.sqrt(3) / math.sqrt(i + 1)) < 0.15 * s


def test_errors():
    model = _model()
    with pytest.raises(ValueError, match="3-D tensor"):
        model(ember.randn(14, 8), ember.tensor([12]))
    with pytest.raises(ValueError, match="feature dimension must be 8"):
        model(ember.randn(1, 14, 7), ember.tensor([12]))
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 12\]"):
        model(ember.randn(1, 14, 8, dtype=ember.float64), ember.tensor([13]))
    with pytest.raises(ValueError, match="1-D tensor of size 2"):
        model(ember.randn(2, 14, 8, dtype=ember.float64), ember.tensor([12]))
    with pytest.raises(TypeError, match="integer tensor"):
        model(ember.randn(1, 14, 8, dtype=ember.float64), ember.tensor([12.0]))
    with pytest.raises(ValueError, match="more than right_context_length"):
        model(ember.randn(1, 2, 8, dtype=ember.float64), ember.tensor([0]))
    with pytest.raises(ValueError, match="expected size of 6 for dimension 1 of input, but got 5"):
        model.infer(ember.randn(1, 5, 8, dtype=ember.float64), ember.tensor([5]))
    with pytest.raises(ValueError, match="one entry per layer"):
        model.infer(ember.randn(1, 6, 8, dtype=ember.float64), ember.tensor([6]), [[]])
    with pytest.raises(ValueError, match="not a multiple of num_heads"):
        Emformer(6, 4, 8, 1, 4)
    with pytest.raises(ValueError, match="Unsupported activation tanh"):
        Emformer(8, 2, 8, 1, 4, activation="tanh")
    with pytest.raises(ValueError, match="Unsupported weight_init_scale_strategy value x"):
        Emformer(8, 2, 8, 1, 4, weight_init_scale_strategy="x")
    with pytest.raises(ValueError, match="segment_length must be positive"):
        Emformer(8, 2, 8, 1, 0)
