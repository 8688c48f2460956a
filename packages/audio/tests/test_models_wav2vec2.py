"""Tests for emberaudio.models Wav2Vec2Model / HuBERTPretrainModel / WavLM and builders: a float64
NumPy reference, lengths and padding, extract_features, training, masking, logits, parameter
counts of every builder, state-dict names and errors."""

import math

import numpy as np
import pytest

import ember
import emberaudio.models.wav2vec2.model as w2v_model
from emberaudio.models import (
    HuBERTPretrainModel,
    Wav2Vec2Model,
    hubert_base,
    hubert_large,
    hubert_pretrain_base,
    hubert_pretrain_large,
    hubert_pretrain_model,
    hubert_pretrain_xlarge,
    hubert_xlarge,
    wav2vec2_base,
    wav2vec2_large,
    wav2vec2_large_lv60k,
    wav2vec2_model,
    wavlm_base,
    wavlm_large,
    wavlm_model,
)
from emberaudio.models.wav2vec2 import components
from emberaudio.models.wav2vec2.wavlm_attention import WavLMSelfAttention

CONV = [(6, 10, 5), (6, 3, 2), (6, 2, 2)]


def _tiny(mode="group_norm", bias=False, norm_first=False, aux=None, dropout=0.0, layer_drop=0.0):
    ember.manual_seed(0)
    return wav2vec2_model(
        extractor_mode=mode, extractor_conv_layer_config=CONV, extractor_conv_bias=bias,
        encoder_embed_dim=8, encoder_projection_dropout=dropout, encoder_pos_conv_kernel=4,
        encoder_pos_conv_groups=2, encoder_num_layers=2, encoder_num_heads=2,
        encoder_attention_dropout=dropout, encoder_ff_interm_features=12,
        encoder_ff_interm_dropout=dropout, encoder_dropout=dropout,
        encoder_layer_norm_first=norm_first, encoder_layer_drop=layer_drop,
        aux_num_out=aux).double().eval()


def _np(t):
    return t.detach().to(ember.float64).numpy()


_erf = np.vectorize(math.erf)


def _gelu(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _conv1d(x, w, b, stride, padding=0, groups=1):
    """x (C_in, T), w (C_out, C_in / groups, K)."""
    C_out, cpg, K = w.shape
    x = np.pad(x, ((0, 0), (padding, padding)))
    T = (x.shape[1] - K) // stride + 1
    out = np.zeros((C_out, T))
    per_group = C_out // groups
    for o in range(C_out):
        g = o // per_group
        xs = x[g * cpg:(g + 1) * cpg]
        for t in range(T):
            out[o, t] = (xs[:, t * stride:t * stride + K] * w[o]).sum()
    return out + (b[:, None] if b is not None else 0)


def _reference(model, wave, n_samples):
    """One waveform through the model, float64 NumPy; returns the valid frames."""
    p = {k: _np(v) for k, v in model.state_dict().items()}
    x = wave[None, :n_samples]
    for i, block in enumerate(model.feature_extractor.conv_layers):
        pre = f"feature_extractor.conv_layers.{i}."
        x = _conv1d(x, p[pre + "conv.weight"], p.get(pre + "conv.bias"), block.stride)
        if pre + "layer_norm.weight" in p:
            w, b = p[pre + "layer_norm.weight"], p[pre + "layer_norm.bias"]
            if isinstance(block.layer_norm, ember.nn.GroupNorm):  # per channel over time
                mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
                x = (x - mu) / np.sqrt(var + 1e-5) * w[:, None] + b[:, None]
            else:  # per frame over channels
                x = _ln(x.T, w, b).T
        x = _gelu(x)
    x = x.T  # (frames, channels)
    e = "encoder."
    x = _ln(x, p[e + "feature_projection.layer_norm.weight"], p[e + "feature_projection.layer_norm.bias"])
    x = x @ p[e + "feature_projection.projection.weight"].T + p[e + "feature_projection.projection.bias"]
    t = e + "transformer."
    g = p[t + "pos_conv_embed.conv.parametrizations.weight.original0"]
    v = p[t + "pos_conv_embed.conv.parametrizations.weight.original1"]
    w = g * v / np.sqrt((v ** 2).sum(axis=(0, 1), keepdims=True))  # weight norm over dim 2
    K = w.shape[2]
    pos = _conv1d(x.T, w, p[t + "pos_conv_embed.conv.bias"], 1, padding=K // 2, groups=2)
    pos = pos[:, :x.shape[0]]  # even kernel: drop the extra frame
    x = x + _gelu(pos).T
    post_norm = not model.encoder.transformer.layer_norm_first
    if not post_norm:
        x = _ln(x, p[t + "layer_norm.weight"], p[t + "layer_norm.bias"])
    D = x.shape[1]
    for li in range(len(model.encoder.transformer.layers)):
        q = f"{t}layers.{li}."

        def lin(v, name, q=q):
            return v @ p[q + name + ".weight"].T + p[q + name + ".bias"]

        def attention(h):
            Q, Kk, V = lin(h, "attention.q_proj"), lin(h, "attention.k_proj"), lin(h, "attention.v_proj")
            out = np.zeros_like(h)
            for hh in range(2):
                s = slice(hh * D // 2, (hh + 1) * D // 2)
                a = Q[:, s] @ Kk[:, s].T / math.sqrt(D // 2)
                a = np.exp(a - a.max(1, keepdims=True))
                out[:, s] = a / a.sum(1, keepdims=True) @ V[:, s]
            return lin(out, "attention.out_proj")

        def ffn(h):
            return lin(_gelu(lin(h, "feed_forward.intermediate_dense")), "feed_forward.output_dense")

        ln1 = (p[q + "layer_norm.weight"], p[q + "layer_norm.bias"])
        ln2 = (p[q + "final_layer_norm.weight"], p[q + "final_layer_norm.bias"])
        if post_norm:  # encoder_layer_norm_first=True
            x = x + attention(_ln(x, *ln1))
            x = x + ffn(_ln(x, *ln2))
        else:
            x = _ln(x + attention(x), *ln1)
            x = _ln(x + ffn(x), *ln2)
    if post_norm:
        x = _ln(x, p[t + "layer_norm.weight"], p[t + "layer_norm.bias"])
    return x


@pytest.mark.parametrize("mode,bias,norm_first", [("group_norm", False, False), ("layer_norm", True, True)])
def test_matches_numpy_reference(mode, bias, norm_first):
    model = _tiny(mode, bias, norm_first)
    waves = ember.randn(2, 200, dtype=ember.float64)
    lengths = ember.tensor([200, 150])
    out, out_lengths = model(waves, lengths)
    # Frames per conv block: floor((L - k) / s) + 1.
    want_lengths = []
    for L in (200, 150):
        for _, k, s in CONV:
            L = (L - k) // s + 1
        want_lengths.append(L)
    assert out.shape == (2, want_lengths[0], 8)
    assert out_lengths.tolist() == want_lengths
    for b in range(2):
        n = want_lengths[b]
        want = _reference(model, _np(waves[b]), int(lengths[b]))
        np.testing.assert_allclose(_np(out[b, :n]), want[:n], rtol=1e-8, atol=1e-8)
    # Without lengths every sample is valid.
    full, none_lengths = model(waves[:1])
    assert none_lengths is None
    np.testing.assert_allclose(_np(full[0]), _reference(model, _np(waves[0]), 200), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("mode", ["group_norm", "layer_norm"])
def test_padding_and_batch_independence(mode):
    model = _tiny(mode)
    waves = ember.randn(2, 200, dtype=ember.float64)
    lengths = ember.tensor([200, 120])
    out, out_lengths = model(waves, lengths)
    n = int(out_lengths[1])
    noisy = waves.clone()
    noisy[1, 120:] = 7.0
    out2, _ = model(noisy, lengths)
    np.testing.assert_allclose(_np(out2[1, :n]), _np(out[1, :n]), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_np(out2[0]), _np(out[0]), rtol=1e-12, atol=1e-12)
    alone, _ = model(waves[1:, :120])
    np.testing.assert_allclose(_np(alone[0]), _np(out[1, :n]), rtol=1e-10, atol=1e-10)


def test_zero_size_batch_and_short_input():
    model = _tiny()
    out, lengths = model(ember.randn(0, 200, dtype=ember.float64), ember.zeros(0, dtype=ember.int64))
    assert out.shape == (0, 9, 8) and lengths.shape == (0,)
    # A waveform shorter than the first kernel has no valid frame (length clamped to 0).
    waves = ember.randn(2, 200, dtype=ember.float64)
    out, lengths = model(waves, ember.tensor([200, 5]))
    assert lengths.tolist() == [9, 0] and out.shape == (2, 9, 8)
    alone, _ = model(waves[:1])
    np.testing.assert_allclose(_np(out[0]), _np(alone[0]), rtol=1e-12, atol=1e-12)


def test_non_contiguous_waveforms():
    model = _tiny()
    waves = ember.randn(200, 2, dtype=ember.float64).transpose(0, 1)
    a, _ = model(waves)
    b, _ = model(waves.contiguous())
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm_first", [False, True])
def test_extract_features(norm_first):
    model = _tiny(norm_first=norm_first)
    waves = ember.randn(2, 200, dtype=ember.float64)
    feats, lengths = model.extract_features(waves, ember.tensor([200, 180]))
    assert len(feats) == 2 and all(f.shape == (2, 9, 8) for f in feats)
    assert lengths.tolist() == [9, 8]
    first, _ = model.extract_features(waves, ember.tensor([200, 180]), num_layers=1)
    assert len(first) == 1
    np.testing.assert_allclose(_np(first[0]), _np(feats[0]), rtol=0, atol=0)
    out, _ = model(waves, ember.tensor([200, 180]))
    last = _np(feats[-1])
    if norm_first:  # the transformer's final layer norm follows the layers
        ln = model.encoder.transformer.layer_norm
        last = _ln(last, _np(ln.weight), _np(ln.bias))
    np.testing.assert_allclose(_np(out), last, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match=r"`num_layers` must be between \[1, 2\]"):
        model.extract_features(waves, None, num_layers=3)


def test_eval_determinism_and_layer_drop():
    model = _tiny(dropout=0.2, layer_drop=0.5)
    waves = ember.randn(1, 200, dtype=ember.float64)
    a, _ = model(waves)
    b, _ = model(waves)
    np.testing.assert_array_equal(_np(a), _np(b))
    model.train()
    outs = {tuple(np.round(_np(model(waves)[0]).ravel()[:4], 6)) for _ in range(6)}
    assert len(outs) > 1


def test_training_step_reduces_ctc_loss():
    model = _tiny(aux=5).train()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    waves = ember.randn(2, 200, dtype=ember.float64)
    targets = ember.tensor([[1, 2, 3], [4, 1, 0]])
    losses = []
    for _ in range(5):
        opt.zero_grad()
        logits, lengths = model(waves, ember.tensor([200, 200]))
        logp = ember.nn.functional.log_softmax(logits, dim=-1).transpose(0, 1)
        loss = ember.nn.functional.ctc_loss(logp, targets, lengths, ember.tensor([3, 2]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert model.aux.weight.shape == (5, 8)


# ---------------------------------------------------------------------------- HuBERT


def _tiny_hubert(feature_grad_mult=None, mask_prob=0.5):
    ember.manual_seed(0)
    return hubert_pretrain_model(
        extractor_mode="layer_norm", extractor_conv_layer_config=CONV, extractor_conv_bias=False,
        encoder_embed_dim=8, encoder_projection_dropout=0.0, encoder_pos_conv_kernel=3,
        encoder_pos_conv_groups=2, encoder_num_layers=1, encoder_num_heads=2,
        encoder_attention_dropout=0.0, encoder_ff_interm_features=12,
        encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_norm_first=True,
        encoder_layer_drop=0.0, mask_prob=mask_prob, mask_selection="static", mask_other=0.0,
        mask_length=2, no_mask_overlap=False, mask_min_space=1, mask_channel_prob=0.0,
        mask_channel_selection="static", mask_channel_other=0.0, mask_channel_length=2,
        no_mask_channel_overlap=False, mask_channel_min_space=1, skip_masked=False,
        skip_nomask=False, num_classes=4, final_dim=5,
        feature_grad_mult=feature_grad_mult).double()


def test_hubert_pretrain_logits():
    model = _tiny_hubert()
    waves = ember.randn(2, 400, dtype=ember.float64)
    labels = ember.randint(0, 4, (2, 19))
    ember.manual_seed(3)
    logit_m, logit_u, pen = model(waves, labels, ember.tensor([400, 300]))
    # Valid frames: 19 and 14; masked + unmasked cover exactly the valid ones.
    assert logit_m.shape[1] == logit_u.shape[1] == 5
    assert logit_m.shape[0] + logit_u.shape[0] == 19 + 14
    assert logit_m.shape[0] > 0 and logit_u.shape[0] > 0
    # Column 0 is the target's column; the same label among the negatives is -inf.
    for logits in (logit_m, logit_u):
        lg = _np(logits)
        assert np.isfinite(lg[:, 0]).all()
        assert (np.isinf(lg[:, 1:]).sum(1) == 1).all()
        for row in lg:
            target = int(np.where(np.isinf(row[1:]))[0][0])
            assert -10.0 - 1e-9 <= row[0] <= 10.0 + 1e-9  # cosine / 0.1
            assert 0 <= target < 4
    assert pen.dim() == 0 and pen.item() > 0


def test_compute_logits_reference():
    ember.manual_seed(1)
    proj = ember.randn(3, 5, dtype=ember.float64)
    emb = ember.randn(4, 5, dtype=ember.float64)
    target = ember.tensor([2, 0, 2])
    got = _np(components._compute_logits(proj, target, emb))
    P, E = _np(proj), _np(emb)

    def cos(a, b):
        return a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-8)

    for i in range(3):
        assert got[i, 0] == pytest.approx(cos(P[i], E[target[i]]) / 0.1, abs=1e-12)
        for c in range(4):
            want = -np.inf if c == int(target[i]) else cos(P[i], E[c]) / 0.1
            assert got[i, c + 1] == pytest.approx(want, abs=1e-12)


def test_hubert_training_step_and_grad_multiply():
    model = _tiny_hubert(feature_grad_mult=0.5).train()
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    waves = ember.randn(2, 400, dtype=ember.float64)
    labels = ember.randint(0, 4, (2, 19))
    losses = []
    for _ in range(5):
        ember.manual_seed(11)  # the same masks every step
        opt.zero_grad()
        logit_m, logit_u, _ = model(waves, labels)
        zeros = ember.zeros(logit_m.shape[0], dtype=ember.int64)
        loss = ember.nn.functional.cross_entropy(logit_m, zeros)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    y = components.GradMultiply.apply(x, 0.25)
    np.testing.assert_array_equal(_np(y), _np(x))
    (y * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [0.25, 0.5, 0.75])


@pytest.mark.parametrize("no_overlap", [False, True])
def test_compute_mask_indices(no_overlap):
    ember.manual_seed(5)
    padding = ember.zeros(3, 40, dtype=ember.bool)
    padding[1, 30:] = True
    padding[2, 20:] = True
    mask = components._compute_mask_indices((3, 40), padding, 0.4, 3, min_masks=2,
                                            no_overlap=no_overlap, min_space=1)
    assert mask.shape == (3, 40) and mask.dtype == ember.bool
    m = _np(mask.to(ember.int64)).astype(bool)
    counts = m.sum(1)
    assert (counts == counts[0]).all() and counts[0] >= 3
    assert not m[1, 30:].any() and not m[2, 20:].any()


def test_mask_generator_replaces_frames():
    gen = components.MaskGenerator(4, 0.5, "static", 0.0, 2, False, 1, 0.5, "static", 0.0, 1,
                                   False, 1).double()
    ember.manual_seed(2)
    x = ember.randn(2, 10, 4, dtype=ember.float64)
    y, idx = gen(x.clone(), None)
    yy, xx, ii = _np(y), _np(x), _np(idx.to(ember.int64)).astype(bool)
    emb = _np(gen.mask_embedding)
    for b in range(2):
        for t in range(10):
            if ii[b, t]:
                zero = yy[b, t] == 0
                np.testing.assert_allclose(yy[b, t][~zero], emb[~zero])
            else:
                zero = yy[b, t] == 0
                np.testing.assert_allclose(yy[b, t][~zero], xx[b, t][~zero])
    assert (yy == 0).any()  # channel masking zeroed some channels


# ---------------------------------------------------------------------------- sizes and names


def _expected_count(cfg):
    """Parameter count of wav2vec2_model(**cfg), derived from the architecture."""
    conv = cfg["extractor_conv_layer_config"] or w2v_model._DEFAULT_CONV_LAYERS
    n, c_in = 0, 1
    for i, (c, k, _) in enumerate(conv):
        n += c_in * c * k + (c if cfg["extractor_conv_bias"] else 0)
        if cfg["extractor_mode"] == "layer_norm" or i == 0:
            n += 2 * c
        c_in = c
    D, F, K, G = (cfg["encoder_embed_dim"], cfg["encoder_ff_interm_features"],
                  cfg["encoder_pos_conv_kernel"], cfg["encoder_pos_conv_groups"])
    n += 2 * c_in + c_in * D + D  # feature projection
    n += D * (D // G) * K + K + D  # weight-normed positional conv: v, g (1, 1, K), bias
    n += 2 * D  # transformer layer norm
    n += cfg["encoder_num_layers"] * (4 * (D * D + D) + 4 * D + D * F + F + F * D + D)
    if cfg["aux_num_out"] is not None:
        n += D * cfg["aux_num_out"] + cfg["aux_num_out"]
    return n


def test_wav2vec2_base_count_and_state_dict_names():
    model = wav2vec2_base()
    # torchaudio's wav2vec2_base(): 94,370,944 parameters (HuBERT base: the same architecture).
    count = sum(p.numel() for p in model.parameters())
    cfg = dict(extractor_mode="group_norm", extractor_conv_layer_config=None,
               extractor_conv_bias=False, encoder_embed_dim=768, encoder_pos_conv_kernel=128,
               encoder_pos_conv_groups=16, encoder_num_layers=12, encoder_ff_interm_features=3072,
               aux_num_out=None)
    assert count == _expected_count(cfg) == 94_370_944
    keys = list(model.state_dict())
    assert keys[:3] == ["feature_extractor.conv_layers.0.layer_norm.weight",
                        "feature_extractor.conv_layers.0.layer_norm.bias",
                        "feature_extractor.conv_layers.0.conv.weight"]
    for k in ["feature_extractor.conv_layers.6.conv.weight",
              "encoder.feature_projection.layer_norm.weight",
              "encoder.feature_projection.projection.bias",
              "encoder.transformer.pos_conv_embed.conv.bias",
              "encoder.transformer.pos_conv_embed.conv.parametrizations.weight.original0",
              "encoder.transformer.pos_conv_embed.conv.parametrizations.weight.original1",
              "encoder.transformer.layer_norm.weight",
              "encoder.transformer.layers.11.attention.k_proj.weight",
              "encoder.transformer.layers.11.attention.out_proj.bias",
              "encoder.transformer.layers.11.layer_norm.weight",
              "encoder.transformer.layers.11.feed_forward.intermediate_dense.weight",
              "encoder.transformer.layers.11.feed_forward.output_dense.bias",
              "encoder.transformer.layers.11.final_layer_norm.bias"]:
        assert k in keys, k
    assert "feature_extractor.conv_layers.1.layer_norm.weight" not in keys  # group norm: block 0 only
    assert isinstance(model, Wav2Vec2Model)


# Expected counts (torchaudio's architectures): the builder's configuration is captured
# without allocating the large models, and the count derived from it by _expected_count, which
# the tiny and base models check against real modules.
_BUILDERS = [
    (wav2vec2_base, 94_370_944), (wav2vec2_large, 315_427_968),
    (wav2vec2_large_lv60k, 315_437_696), (hubert_base, 94_370_944),
    (hubert_large, 315_434_112), (hubert_xlarge, 962_492_544),
]


@pytest.mark.parametrize("builder,count", _BUILDERS)
def test_builder_parameter_counts(monkeypatch, builder, count):
    seen = {}
    monkeypatch.setattr(w2v_model, "wav2vec2_model", lambda **cfg: seen.update(cfg))
    builder()
    assert _expected_count(seen) == count
    builder(aux_num_out=32)
    assert _expected_count(seen) == count + seen["encoder_embed_dim"] * 32 + 32


_PRETRAIN = [(hubert_pretrain_base, 94_594_176), (hubert_pretrain_large, 316_606_336),
             (hubert_pretrain_xlarge, 964_317_568)]


@pytest.mark.parametrize("builder,count", _PRETRAIN)
def test_hubert_pretrain_parameter_counts(monkeypatch, builder, count):
    seen = {}
    monkeypatch.setattr(w2v_model, "hubert_pretrain_model", lambda **cfg: seen.update(cfg))
    builder()
    D = seen["encoder_embed_dim"]
    extra = D + seen["num_classes"] * seen["final_dim"] + D * seen["final_dim"] + seen["final_dim"]
    assert _expected_count(dict(seen, aux_num_out=None)) + extra == count


@pytest.mark.parametrize("mode,bias,norm_first,aux", [("group_norm", False, False, None),
                                                      ("layer_norm", True, True, 3)])
def test_expected_count_matches_real_modules(mode, bias, norm_first, aux):
    model = _tiny(mode, bias, norm_first, aux)
    cfg = dict(extractor_mode=mode, extractor_conv_layer_config=CONV, extractor_conv_bias=bias,
               encoder_embed_dim=8, encoder_pos_conv_kernel=4, encoder_pos_conv_groups=2,
               encoder_num_layers=2, encoder_ff_interm_features=12, aux_num_out=aux)
    assert sum(p.numel() for p in model.parameters()) == _expected_count(cfg)
    hub = _tiny_hubert()
    cfg = dict(cfg, extractor_mode="layer_norm", extractor_conv_bias=False,
               encoder_pos_conv_kernel=3, encoder_num_layers=1, aux_num_out=None)
    assert sum(p.numel() for p in hub.parameters()) == _expected_count(cfg) + 8 + 4 * 5 + 8 * 5 + 5


def test_loads_legacy_weight_norm_keys():
    model = _tiny()
    state = model.state_dict()
    pre = "encoder.transformer.pos_conv_embed.conv."
    legacy = {k: v.clone() for k, v in state.items() if "parametrizations" not in k}
    legacy[pre + "weight_g"] = state[pre + "parametrizations.weight.original0"] * 2
    legacy[pre + "weight_v"] = state[pre + "parametrizations.weight.original1"].clone()
    other = _tiny()
    other.load_state_dict(legacy)
    np.testing.assert_array_equal(_np(other.encoder.transformer.pos_conv_embed.conv.parametrizations.weight.original0),
                                  _np(legacy[pre + "weight_g"]))


def test_errors():
    model = _tiny()
    with pytest.raises(ValueError, match=r"Expected the input Tensor to be 2D \(batch, time\)"):
        model(ember.randn(200, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 200\]"):
        model(ember.randn(1, 200, dtype=ember.float64), ember.tensor([201]))
    with pytest.raises(ValueError, match="1-D tensor of size 2"):
        model.extract_features(ember.randn(2, 200, dtype=ember.float64), ember.tensor([200]))
    with pytest.raises(ValueError, match="Invalid norm mode"):
        wav2vec2_model("batch_norm", CONV, False, 8, 0.0, 4, 2, 1, 2, 0.0, 8, 0.0, 0.0, False, 0.0, None)
    with pytest.raises(ValueError, match="is not divisible by `num_heads"):
        wav2vec2_model("group_norm", CONV, False, 8, 0.0, 4, 2, 1, 3, 0.0, 8, 0.0, 0.0, False, 0.0, None)
    hub = _tiny_hubert()
    with pytest.raises(ValueError, match="The length of label must match that of HuBERT model output"):
        hub(ember.randn(1, 400, dtype=ember.float64), ember.zeros(1, 17, dtype=ember.int64))
    with pytest.raises(ValueError, match=r"`feature_grad_mult` must be ``None``or between \(0, 1\)"):
        HuBERTPretrainModel(hub.wav2vec2, hub.mask_generator, hub.logit_generator, 1.5)
    with pytest.raises(ValueError, match="mask_selection must be 'static', 'uniform' or 'normal'"):
        components.MaskGenerator(4, 0.5, "poisson", 0.0, 2, False, 1, 0.0, "static", 0.0, 1, False, 1)


# ---------------------------------------------------------------------------- WavLM


def _bucket_reference(rel, num_buckets, max_distance):
    """WavLM's bidirectional relative-position bucket of one offset (key - query)."""
    half = num_buckets // 2
    bucket = half if rel > 0 else 0
    d = abs(rel)
    exact = half // 2
    if d < exact:
        return bucket + d
    large = exact + int(math.log(d / exact) / math.log(max_distance / exact) * (half - exact))
    return bucket + min(large, half - 1)


def test_wavlm_relative_position_buckets():
    attn = WavLMSelfAttention(8, 2, has_relative_attention_bias=True, num_buckets=16, max_distance=20)
    rel = ember.arange(-40, 41).unsqueeze(0)
    got = attn._relative_positions_bucket(rel)[0].tolist()
    assert got == [_bucket_reference(r, 16, 20) for r in range(-40, 41)]
    bias = attn.compute_bias(3, 4)
    assert bias.shape == (2, 3, 4)
    table = _np(attn.rel_attn_embed.weight)
    for i in range(3):
        for j in range(4):
            np.testing.assert_array_equal(_np(bias[:, i, j]), table[_bucket_reference(j - i, 16, 20)])


def _wavlm_attention_reference(attn, x, position_bias, pad):
    """NumPy WavLM attention for one item x (T, D); position_bias (H, T, T); pad (T,) bool."""
    T, D = x.shape
    H, d = attn.num_heads, attn.head_dim
    w, b = _np(attn.gru_rel_pos_linear.weight), _np(attn.gru_rel_pos_linear.bias)
    const = _np(attn.gru_rel_pos_const).reshape(H)
    qkv = x @ _np(attn.attention.in_proj_weight).T + _np(attn.attention.in_proj_bias)
    out = np.zeros((T, D))
    for h in range(H):
        g = 1 / (1 + np.exp(-((x[:, h * d:(h + 1) * d] @ w.T + b).reshape(T, 2, 4).sum(-1))))
        scale = g[:, 0] * (g[:, 1] * const[h] - 1.0) + 2.0
        s = slice(h * d, (h + 1) * d)
        q, k, v = qkv[:, s], qkv[:, D + h * d:D + (h + 1) * d], qkv[:, 2 * D + h * d:2 * D + (h + 1) * d]
        a = q @ k.T / math.sqrt(d) + scale[:, None] * position_bias[h]
        a[:, pad] = -np.inf
        a = np.exp(a - a.max(1, keepdims=True))
        out[:, s] = a / a.sum(1, keepdims=True) @ v
    return out @ _np(attn.attention.out_proj.weight).T + _np(attn.attention.out_proj.bias)


def test_wavlm_attention_matches_numpy():
    ember.manual_seed(4)
    first = WavLMSelfAttention(8, 2, has_relative_attention_bias=True, num_buckets=8,
                               max_distance=10).double().eval()
    second = WavLMSelfAttention(8, 2).double().eval()
    with ember.no_grad():  # non-trivial gates
        first.gru_rel_pos_const.copy_(ember.tensor([0.5, 1.5], dtype=ember.float64).reshape(1, 2, 1, 1))
    x = ember.randn(2, 6, 8, dtype=ember.float64)
    pad = ember.tensor([[False] * 6, [False] * 4 + [True] * 2])
    out1, bias = first(x, key_padding_mask=pad)
    assert bias.shape == (2, 2, 6, 6)
    out2, bias2 = second(out1, key_padding_mask=pad, position_bias=bias)
    assert bias2 is bias
    raw = _np(first.compute_bias(6, 6))
    for bi in range(2):
        p = _np(pad[bi].to(ember.int64)).astype(bool)
        want1 = _wavlm_attention_reference(first, _np(x[bi]), raw, p)
        np.testing.assert_allclose(_np(out1[bi]), want1, rtol=1e-10, atol=1e-10)
        want2 = _wavlm_attention_reference(second, _np(out1[bi]), raw, p)
        np.testing.assert_allclose(_np(out2[bi]), want2, rtol=1e-10, atol=1e-10)


def _tiny_wavlm(mode="group_norm", norm_first=False):
    ember.manual_seed(0)
    return wavlm_model(
        extractor_mode=mode, extractor_conv_layer_config=CONV, extractor_conv_bias=False,
        encoder_embed_dim=8, encoder_projection_dropout=0.0, encoder_pos_conv_kernel=4,
        encoder_pos_conv_groups=2, encoder_num_layers=2, encoder_num_heads=2,
        encoder_num_buckets=8, encoder_max_distance=16, encoder_attention_dropout=0.0,
        encoder_ff_interm_features=12, encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
        encoder_layer_norm_first=norm_first, encoder_layer_drop=0.0, aux_num_out=4).double().eval()


@pytest.mark.parametrize("mode,norm_first", [("group_norm", False), ("layer_norm", True)])
def test_wavlm_padding_and_training(mode, norm_first):
    model = _tiny_wavlm(mode, norm_first)
    waves = ember.randn(2, 200, dtype=ember.float64)
    lengths = ember.tensor([200, 120])
    out, out_lengths = model(waves, lengths)
    assert out.shape == (2, 9, 4) and out_lengths.tolist() == [9, 5]
    alone, _ = model(waves[1:, :120])
    np.testing.assert_allclose(_np(alone[0]), _np(out[1, :5]), rtol=1e-10, atol=1e-10)
    model.train()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    target = ember.randn(2, 9, 4, dtype=ember.float64)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((model(waves)[0] - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("builder,count", [(wavlm_base, 94_381_168), (wavlm_large, 315_452_096)])
def test_wavlm_parameter_counts(monkeypatch, builder, count):
    seen = {}
    monkeypatch.setattr(w2v_model, "wavlm_model", lambda **cfg: seen.update(cfg))
    builder()
    D, H = seen["encoder_embed_dim"], seen["encoder_num_heads"]
    # Same projections as Wav2Vec2; per layer a gate (head_dim x 8 + 8) and constant (H), and
    # the first layer's bucket embedding.
    extra = seen["encoder_num_layers"] * ((D // H) * 8 + 8 + H) + seen["encoder_num_buckets"] * H
    assert _expected_count(seen) + extra == count
    tiny = _tiny_wavlm()
    cfg = dict(extractor_mode="group_norm", extractor_conv_layer_config=CONV,
               extractor_conv_bias=False, encoder_embed_dim=8, encoder_pos_conv_kernel=4,
               encoder_pos_conv_groups=2, encoder_num_layers=2, encoder_ff_interm_features=12,
               aux_num_out=4)
    tiny_extra = 2 * (4 * 8 + 8 + 2) + 8 * 2
    assert sum(p.numel() for p in tiny.parameters()) == _expected_count(cfg) + tiny_extra


def test_gradcheck_waveform_and_wavlm_attention():
    model = _tiny("layer_norm", True, True)
    waves = ember.randn(1, 40, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda w: model(w)[0], (waves,))
    attn = WavLMSelfAttention(4, 2, has_relative_attention_bias=True, num_buckets=4,
                              max_distance=8).double()
    x = ember.randn(1, 3, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: attn(t)[0], (x,))
