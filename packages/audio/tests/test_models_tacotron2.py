"""Tests for emberaudio.models.Tacotron2: float64 NumPy references (location-sensitive
attention, encoder and postnet convolutions, one decoder step, the whole teacher-forced pass),
masking, training, inference stopping rules, state-dict names, parameter counts and errors."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from emberaudio.models import Tacotron2
from emberaudio.models.tacotron2 import _Attention, _Prenet

SMALL = dict(n_mels=6, n_symbol=11, symbol_embedding_dim=8, encoder_embedding_dim=8,
             encoder_n_convolution=2, encoder_kernel_size=3, decoder_rnn_dim=10,
             decoder_max_step=12, attention_rnn_dim=9, attention_hidden_dim=7,
             attention_location_n_filter=3, attention_location_kernel_size=5, prenet_dim=5,
             postnet_n_convolution=3, postnet_kernel_size=3, postnet_embedding_dim=4)


def _np(t):
    return t.detach().to(ember.float64).numpy()


def _model(**kw):
    ember.manual_seed(0)
    args = dict(SMALL)
    args.update(kw)
    model = Tacotron2(**args).double()
    # Non-trivial running statistics so the eval-mode batch norms do something.
    for module in model.modules():
        if isinstance(module, nn.BatchNorm1d):
            module.running_mean.copy_(ember.randn(module.num_features, dtype=ember.float64) * 0.1)
            module.running_var.copy_(ember.rand(module.num_features, dtype=ember.float64) + 0.5)
    return model


class _NoDropoutPrenet(nn.Module):
    """The prenet's linear + ReLU layers without their (always-on) dropout, so a whole pass is
    deterministic; it reuses the model's prenet weights."""

    def __init__(self, prenet):
        super().__init__()
        self.inner = prenet

    def forward(self, x):
        for linear in self.inner.layers:
            x = ember.relu(linear(x))
        return x


def _deterministic(model):
    model.decoder.prenet = _NoDropoutPrenet(model.decoder.prenet)
    return model.eval()


# ----------------------------------------------------------------------------- NumPy pieces

def _conv_same(x, w, b=None):
    """x (C_in, T), w (C_out, C_in, K) odd K, zero 'same' padding."""
    K = w.shape[2]
    T = x.shape[1]
    pad = np.pad(x, ((0, 0), ((K - 1) // 2, (K - 1) // 2)))
    out = np.stack([np.einsum("oik,ik->o", w, pad[:, t:t + K]) for t in range(T)], axis=1)
    return out if b is None else out + b[:, None]


def _bn(x, p, name):
    return ((x - p[name + ".running_mean"][:, None])
            / np.sqrt(p[name + ".running_var"][:, None] + 1e-5)
            * p[name + ".weight"][:, None] + p[name + ".bias"][:, None])


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    g = w_ih @ x + b_ih + w_hh @ h + b_hh
    i, f, gg, o = np.split(g, 4)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
    return _sigmoid(o) * np.tanh(c), c


def _attention_ref(p, pre, query, memory, weights_cat, valid):
    """Location-sensitive attention for one item, from the definition
    e_j = v . tanh(W q + U (F * [a_prev, a_cum])_j + V m_j)."""
    location = _conv_same(weights_cat, p[pre + "location_layer.location_conv.weight"])  # (F, T)
    location = location.T @ p[pre + "location_layer.location_dense.weight"].T
    e = np.tanh(p[pre + "query_layer.weight"] @ query + location
                + memory @ p[pre + "memory_layer.weight"].T) @ p[pre + "v.weight"][0]
    e = np.where(valid, e, -np.inf)
    w = np.exp(e - e.max())
    w /= w.sum()
    return e, w, w @ memory


def _encoder_ref(p, tokens, length, n_conv):
    x = p["embedding.weight"][tokens].T  # (D, T): the convolutions see the padded tokens
    for i in range(n_conv):
        pre = f"encoder.convolutions.{i}"
        x = np.maximum(_bn(_conv_same(x, p[pre + ".0.weight"], p[pre + ".0.bias"]), p, pre + ".1"), 0)
    x = x.T[:length]
    H = p["encoder.lstm.weight_hh_l0"].shape[1]
    out = np.zeros((length, 2 * H))
    for suffix, order, half in (("", range(length), slice(0, H)),
                                ("_reverse", reversed(range(length)), slice(H, 2 * H))):
        h, c = np.zeros(H), np.zeros(H)
        for t in order:
            h, c = _lstm_cell(x[t], h, c, *(p[f"encoder.lstm.{n}_l0{suffix}"]
                                            for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
            out[t, half] = h
    return out


def _postnet_ref(p, x, n_conv):
    for i in range(n_conv):
        pre = f"postnet.convolutions.{i}"
        x = _bn(_conv_same(x, p[pre + ".0.weight"], p[pre + ".0.bias"]), p, pre + ".1")
        if i < n_conv - 1:
            x = np.tanh(x)
    return x


def _decode_ref(p, prenet_out, state, memory, valid):
    """One decoder step for one item; state = [att_h, att_c, dec_h, dec_c, w, w_cum, ctx]."""
    att_h, att_c, dec_h, dec_c, w, w_cum, ctx = state
    d = "decoder."
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    att_h, att_c = _lstm_cell(np.concatenate([prenet_out, ctx]), att_h, att_c,
                              *(p[d + "attention_rnn." + n] for n in names))
    _, w, ctx = _attention_ref(p, d + "attention_layer.", att_h, memory, np.stack([w, w_cum]), valid)
    w_cum = w_cum + w
    dec_h, dec_c = _lstm_cell(np.concatenate([att_h, ctx]), dec_h, dec_c,
                              *(p[d + "decoder_rnn." + n] for n in names))
    hc = np.concatenate([dec_h, ctx])
    mel = p[d + "linear_projection.weight"] @ hc + p[d + "linear_projection.bias"]
    gate = p[d + "gate_layer.weight"] @ hc + p[d + "gate_layer.bias"]
    return mel, gate[0], [att_h, att_c, dec_h, dec_c, w, w_cum, ctx]


def _forward_ref(model, tokens, length, mel_truth, n_mem):
    """Teacher-forced pass for one item (prenet without dropout), eval mode."""
    p = {k: _np(v) for k, v in model.state_dict().items()}
    n_enc = len(model.encoder.convolutions)
    memory = np.zeros((n_mem, model.encoder.lstm.hidden_size * 2))
    memory[:length] = _encoder_ref(p, tokens, length, n_enc)
    valid = np.arange(n_mem) < length
    d = model.decoder
    state = [np.zeros(d.attention_rnn_dim), np.zeros(d.attention_rnn_dim), np.zeros(d.decoder_rnn_dim),
             np.zeros(d.decoder_rnn_dim), np.zeros(n_mem), np.zeros(n_mem),
             np.zeros(d.encoder_embedding_dim)]
    r, n_mels = d.n_frames_per_step, d.n_mels
    steps = mel_truth.shape[1] // r
    prev = np.zeros(n_mels * r)
    mels, gates, aligns = [], [], []
    for s in range(steps):
        x = prev
        for i in range(2):
            x = np.maximum(p[f"decoder.prenet.inner.layers.{i}.weight"] @ x, 0)
        mel, gate, state = _decode_ref(p, x, state, memory, valid)
        mels.append(mel.reshape(r, n_mels))
        gates.append(gate)
        aligns.append(state[4])
        prev = mel_truth[:, s * r:(s + 1) * r].T.reshape(-1)
    mel = np.concatenate(mels).T
    return mel, mel + _postnet_ref(p, mel, len(model.postnet.convolutions)), np.array(gates), np.array(aligns)


# ----------------------------------------------------------------------------- tests

def test_attention_energies_match_numpy():
    ember.manual_seed(1)
    attention = _Attention(6, 5, 4, 3, 5).double()
    B, T = 3, 7
    query = ember.randn(B, 6, dtype=ember.float64)
    memory = ember.randn(B, 5, T, dtype=ember.float64).transpose(1, 2)  # non-contiguous
    weights_cat = ember.rand(B, 2, T, dtype=ember.float64)
    lengths = [7, 4, 1]
    mask = ember.arange(T).unsqueeze(0) >= ember.tensor(lengths).unsqueeze(1)
    processed = attention.memory_layer(memory)
    energies = attention._get_alignment_energies(query, processed, weights_cat)
    context, weights = attention(query, memory, processed, weights_cat, mask)
    p = {k: _np(v) for k, v in attention.state_dict().items()}
    for b in range(B):
        valid = np.arange(T) < lengths[b]
        e, w, ctx = _attention_ref(p, "", _np(query[b]), _np(memory[b]), _np(weights_cat[b]), valid)
        np.testing.assert_allclose(_np(energies[b])[valid], e[valid], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_np(weights[b]), w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(_np(context[b]), ctx, rtol=1e-12, atol=1e-12)
        assert not _np(weights[b])[~valid].any()


def test_attention_gradcheck():
    ember.manual_seed(2)
    attention = _Attention(3, 4, 3, 2, 3).double()
    memory = ember.randn(2, 5, 4, dtype=ember.float64, requires_grad=True)
    query = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    weights_cat = ember.rand(2, 2, 5, dtype=ember.float64, requires_grad=True)
    mask = ember.tensor([[False] * 5, [False] * 3 + [True] * 2])

    def f(q, m, w):
        return attention(q, m, attention.memory_layer(m), w, mask)

    assert ember.autograd.gradcheck(f, (query, memory, weights_cat))


def test_encoder_and_postnet_convolutions_match_numpy():
    model = _model().eval()
    p = {k: _np(v) for k, v in model.state_dict().items()}
    tokens = ember.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 0, 0], [5, 0, 0, 0, 0]])
    lengths = ember.tensor([5, 3, 1])
    memory = model.encoder(model.embedding(tokens).transpose(1, 2), lengths)
    assert memory.shape == (3, 5, 8)
    for b, n in enumerate([5, 3, 1]):
        want = _encoder_ref(p, _np(tokens[b]).astype(int), n, 2)
        np.testing.assert_allclose(_np(memory[b, :n]), want, rtol=1e-10, atol=1e-12)
        assert not _np(memory[b, n:]).any()
    # The postnet on a non-contiguous batch.
    x = ember.randn(2, 9, 6, dtype=ember.float64).transpose(1, 2)
    out = model.postnet(x)
    for b in range(2):
        np.testing.assert_allclose(_np(out[b]), _postnet_ref(p, _np(x[b]), 3), rtol=1e-10, atol=1e-12)


def test_encoder_outputs_span_longest_item():
    model = _model().eval()
    tokens = ember.tensor([[1, 2, 3, 0, 0, 0], [4, 5, 0, 0, 0, 0]])
    memory = model.encoder(model.embedding(tokens).transpose(1, 2), ember.tensor([3, 2]))
    assert memory.shape == (2, 3, 8)


def test_prenet_dropout_is_always_on():
    ember.manual_seed(3)
    prenet = _Prenet(4, [50]).double().eval()
    x = ember.randn(20, 4, dtype=ember.float64)
    out = _np(prenet(x))
    full = 2 * np.maximum(_np(x) @ _np(prenet.layers[0].weight).T, 0)  # 1 / (1 - 0.5) scaling
    kept = out != 0
    np.testing.assert_allclose(out[kept], full[kept], rtol=1e-12)
    # About half of the positive units are dropped, in eval mode too.
    dropped = (~kept & (full > 0)).sum() / (full > 0).sum()
    assert 0.35 < dropped < 0.65


def test_decoder_step_matches_numpy():
    model = _model().eval()
    p = {k: _np(v) for k, v in model.state_dict().items()}
    d = model.decoder
    B, T = 2, 4
    memory = ember.randn(B, T, 8, dtype=ember.float64)
    mask = ember.tensor([[False] * 4, [False, False, True, True]])
    prenet_out = ember.rand(B, 5, dtype=ember.float64)
    state = [ember.randn(B, 9, dtype=ember.float64), ember.randn(B, 9, dtype=ember.float64),
             ember.randn(B, 10, dtype=ember.float64), ember.randn(B, 10, dtype=ember.float64),
             ember.rand(B, T, dtype=ember.float64), ember.rand(B, T, dtype=ember.float64),
             ember.randn(B, 8, dtype=ember.float64)]
    mel, gate, *new = d.decode(prenet_out, *state, memory, d.attention_layer.memory_layer(memory), mask)
    assert mel.shape == (B, 6) and gate.shape == (B, 1)
    for b in range(B):
        valid = ~_np(mask[b]).astype(bool)
        want_mel, want_gate, want_state = _decode_ref(p, _np(prenet_out[b]), [_np(s[b]) for s in state],
                                                      _np(memory[b]), valid)
        np.testing.assert_allclose(_np(mel[b]), want_mel, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(gate[b, 0]), want_gate, rtol=1e-10, atol=1e-12)
        for got, want in zip(new, want_state, strict=False):
            np.testing.assert_allclose(_np(got[b]), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("r", [1, 2])
def test_forward_matches_numpy(r):
    model = _deterministic(_model(n_frames_per_step=r))
    tokens = ember.tensor([[3, 1, 4, 1, 5, 0], [9, 2, 6, 0, 0, 0]])
    token_lengths = ember.tensor([5, 3])
    mel_truth = ember.randn(2, 6, 4, dtype=ember.float64)
    mel, post, gate, align = model(tokens, token_lengths, mel_truth, ember.tensor([4, 2]))
    assert mel.shape == post.shape == (2, 6, 4)
    assert gate.shape == (2, 4 // r) and align.shape == (2, 4 // r, 5)
    for b, n in enumerate([5, 3]):
        want = _forward_ref(model, _np(tokens[b]).astype(int), n, _np(mel_truth[b]), 5)
        for got, ref in zip((mel, post, gate, align), want, strict=False):
            np.testing.assert_allclose(_np(got[b]), ref, rtol=1e-9, atol=1e-11)


def test_forward_gradcheck():
    model = _deterministic(_model(n_mels=2, postnet_embedding_dim=2, postnet_n_convolution=2))
    tokens = ember.tensor([[1, 2, 3], [4, 5, 0]])
    token_lengths = ember.tensor([3, 2])
    mel_truth = ember.randn(2, 2, 3, dtype=ember.float64, requires_grad=True)

    def f(m):
        return model(tokens, token_lengths, m, ember.tensor([3, 3]))[:3]

    assert ember.autograd.gradcheck(f, (mel_truth,))


def test_mask_padding_zeroes_padded_frames():
    tokens = ember.tensor([[3, 1, 4], [9, 2, 0]])
    token_lengths = ember.tensor([3, 2])
    mel_truth = ember.randn(2, 6, 5, dtype=ember.float64)
    mel_lengths = ember.tensor([5, 3])
    plain = _deterministic(_model())
    masked = _deterministic(_model(mask_padding=True))
    a = plain(tokens, token_lengths, mel_truth, mel_lengths)
    m = masked(tokens, token_lengths, mel_truth, mel_lengths)
    for got, ref in zip(m[:2], a[:2], strict=False):
        assert not _np(got[1, :, 3:]).any()
        np.testing.assert_array_equal(_np(got[1, :, :3]), _np(ref[1, :, :3]))
        np.testing.assert_array_equal(_np(got[0]), _np(ref[0]))
    np.testing.assert_array_equal(_np(m[2][1, 3:]), [1e3, 1e3])
    np.testing.assert_array_equal(_np(m[2][1, :3]), _np(a[2][1, :3]))
    np.testing.assert_array_equal(_np(m[3]), _np(a[3]))


def test_mask_padding_with_frames_per_step():
    tokens = ember.tensor([[3, 1, 4], [9, 2, 0]])
    mel_truth = ember.randn(2, 6, 6, dtype=ember.float64)
    model = _deterministic(_model(mask_padding=True, n_frames_per_step=2))
    mel, post, gate, align = model(tokens, ember.tensor([3, 2]), mel_truth, ember.tensor([6, 3]))
    assert gate.shape == (2, 3) and align.shape == (2, 3, 3)
    assert not _np(mel[1, :, 3:]).any() and not _np(post[1, :, 3:]).any()
    assert _np(mel[1, :, :3]).all()
    # Step 1 holds frames 2 and 3, so it is still partly valid; step 2 is padding.
    np.testing.assert_array_equal(_np(gate[1] == 1e3), [False, False, True])
    assert not (_np(gate[0]) == 1e3).any()


def test_training_step_reduces_loss():
    model = _model(decoder_dropout=0.0, attention_dropout=0.0).float().train()
    ember.manual_seed(5)
    tokens = ember.randint(1, 11, (3, 6))
    token_lengths = ember.tensor([6, 5, 4])
    mel_truth = ember.randn(3, 6, 8) * 0.5
    mel_lengths = ember.tensor([8, 7, 6])
    gate_target = (ember.arange(8).unsqueeze(0) >= (mel_lengths - 1).unsqueeze(1)).float()
    optimizer = ember.optim.Adam(model.parameters(), lr=1e-2)
    F = ember.nn.functional

    def loss_fn():
        ember.manual_seed(7)  # the same dropout masks every time
        mel, post, gate, _ = model(tokens, token_lengths, mel_truth, mel_lengths)
        return (F.mse_loss(mel, mel_truth) + F.mse_loss(post, mel_truth)
                + F.binary_cross_entropy_with_logits(gate, gate_target))

    first = loss_fn().item()
    for _ in range(15):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimizer.step()
    assert loss_fn().item() < 0.7 * first
    assert all(p.grad is not None for p in model.parameters())


class _ScriptedGate(nn.Module):
    """Stands in for the gate layer: item b's logit goes positive on its step stop[b]."""

    def __init__(self, stop):
        super().__init__()
        self.stop = stop
        self.step = 0

    def forward(self, x):
        logits = [[20.0 if self.step == s else -20.0] for s in self.stop]
        self.step += 1
        return ember.tensor(logits, dtype=x.dtype)


def test_infer_stops_on_gate_with_lengths():
    model = _model().eval()
    model.decoder.gate_layer = _ScriptedGate([2, 4, 0])
    tokens = ember.tensor([[3, 1, 4, 1], [9, 2, 6, 0], [5, 0, 0, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mel, lengths, align = model.infer(tokens, ember.tensor([4, 3, 1]))
    assert lengths.dtype == ember.int32 and lengths.tolist() == [3, 5, 1]
    assert mel.shape == (3, 6, 5) and align.shape == (3, 5, 4)
    a = _np(align)
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-12)
    assert not a[1, :, 3:].any() and not a[2, :, 1:].any()


def test_infer_runs_to_max_step_with_warning():
    model = _model(decoder_max_step=6).eval()
    model.decoder.gate_layer = _ScriptedGate([1, 100])
    tokens = ember.tensor([[3, 1, 4], [9, 2, 6]])
    with pytest.warns(UserWarning, match="Reached max decoder steps"):
        mel, lengths, align = model.infer(tokens)
    assert mel.shape == (2, 6, 6) and lengths.tolist() == [2, 6] and align.shape == (2, 6, 3)


def test_infer_without_early_stopping_and_frames_per_step():
    model = _model(decoder_early_stopping=False, decoder_max_step=4, n_frames_per_step=2).eval()
    model.decoder.gate_layer = _ScriptedGate([0, 1])
    tokens = ember.tensor([[3, 1, 4], [9, 2, 6]])
    with pytest.warns(UserWarning, match="Reached max decoder steps"):
        mel, lengths, align = model.infer(tokens)
    # Lengths count frames: (steps up to and including the stop step) * n_frames_per_step.
    assert mel.shape == (2, 6, 8) and lengths.tolist() == [2, 4] and align.shape == (2, 4, 3)


def test_infer_default_lengths_and_deterministic_decoder():
    model = _deterministic(_model(decoder_max_step=5))
    with ember.no_grad():
        model.decoder.gate_layer.bias.fill_(-50.0)  # never stops: runs all 5 steps
    tokens = ember.tensor([[3, 1, 4], [9, 2, 6]])
    with pytest.warns(UserWarning):
        a = model.infer(tokens)
    with pytest.warns(UserWarning):
        b = model.infer(tokens, ember.tensor([3, 3]))
    for x, y in zip(a, b, strict=False):
        np.testing.assert_array_equal(_np(x), _np(y))
    # Free-running decoding is teacher forcing on its own (pre-postnet) output.
    memory = model.encoder(model.embedding(tokens).transpose(1, 2), ember.tensor([3, 3]))
    with pytest.warns(UserWarning):
        mel, _, gate, align = model.decoder.infer(memory, ember.tensor([3, 3]))
    tf_mel, tf_gate, tf_align = model.decoder(memory, mel, ember.tensor([3, 3]))
    np.testing.assert_allclose(_np(tf_mel), _np(mel), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(tf_gate), _np(gate), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(tf_align), _np(align), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(a[0]), _np(mel + model.postnet(mel)), rtol=1e-12, atol=1e-12)


def test_state_dict_names_and_parameter_count():
    model = Tacotron2()
    # Counted layer by layer from torchaudio 2.2's Tacotron2 with its defaults.
    assert sum(p.numel() for p in model.parameters()) == 28_193_153
    keys = list(model.state_dict())
    assert len(keys) == 84
    for key in ["embedding.weight", "encoder.convolutions.0.0.weight",
                "encoder.convolutions.2.1.running_var", "encoder.lstm.weight_ih_l0_reverse",
                "decoder.prenet.layers.1.weight", "decoder.attention_rnn.bias_hh",
                "decoder.attention_layer.query_layer.weight",
                "decoder.attention_layer.memory_layer.weight", "decoder.attention_layer.v.weight",
                "decoder.attention_layer.location_layer.location_conv.weight",
                "decoder.attention_layer.location_layer.location_dense.weight",
                "decoder.decoder_rnn.weight_hh", "decoder.linear_projection.bias",
                "decoder.gate_layer.weight", "postnet.convolutions.4.0.weight",
                "postnet.convolutions.4.1.num_batches_tracked"]:
        assert key in keys
    assert tuple(model.decoder.attention_layer.location_layer.location_conv.weight.shape) == (32, 2, 31)
    assert model.decoder.attention_layer.location_layer.location_conv.bias is None


def test_parameter_count_formula():
    E, M, A, Dr, H, F, K, P, Pd, Pk, S, R = 8, 6, 9, 10, 7, 3, 5, 5, 4, 3, 11, 2
    model = _model(n_frames_per_step=R)
    conv = lambda i, o, k: i * o * k + o + 2 * o  # noqa: E731 (convolution + batch norm)
    lstm = lambda i, h: 4 * h * (i + h) + 8 * h  # noqa: E731
    want = (S * E + 2 * conv(E, E, 3) + 2 * lstm(E, E // 2)
            + M * R * P + P * P + lstm(P + E, A) + A * H + E * H + H + 2 * F * K + F * H
            + lstm(A + E, Dr) + (Dr + E) * M * R + M * R + (Dr + E) + 1
            + conv(M, Pd, Pk) + conv(Pd, Pd, Pk) + conv(Pd, M, Pk))
    assert sum(p.numel() for p in model.parameters()) == want


def test_errors():
    model = _model().eval()
    tokens = ember.tensor([[1, 2, 3]])
    mel = ember.randn(1, 6, 4, dtype=ember.float64)
    with pytest.raises(ValueError, match=r"tokens must have shape \(n_batch, n_tokens\)"):
        model.infer(ember.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="tokens must be an integer tensor"):
        model.infer(ember.randn(1, 3))
    with pytest.raises(ValueError, match=r"tokens must lie in \[0, 11\)"):
        model.infer(ember.tensor([[1, 11]]))
    with pytest.raises(ValueError, match="lengths must be a 1-D tensor of size 1"):
        model.infer(tokens, ember.tensor([3, 3]))
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 3\]"):
        model.infer(tokens, ember.tensor([4]))
    with pytest.raises(ValueError, match="lengths must be at least 1"):
        model.infer(tokens, ember.tensor([0]))
    with pytest.raises(ValueError, match="tokens must hold at least one item"):
        model.infer(ember.zeros(0, 3, dtype=ember.int64))
    with pytest.raises(ValueError, match=r"mel_specgram must have shape \(1, 6, n_frames\)"):
        model(tokens, ember.tensor([3]), ember.randn(1, 5, 4, dtype=ember.float64), ember.tensor([4]))
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 4\]"):
        model(tokens, ember.tensor([3]), mel, ember.tensor([5]))
    with pytest.raises(ValueError, match="must be a positive multiple of n_frames_per_step"):
        _model(n_frames_per_step=3)(tokens, ember.tensor([3]), mel, ember.tensor([4]))
    with pytest.raises(ValueError, match="kernel_size must be a positive odd number, got 4"):
        Tacotron2(**dict(SMALL, encoder_kernel_size=4))
    with pytest.raises(ValueError, match="kernel_size must be a positive odd number, got 6"):
        Tacotron2(**dict(SMALL, attention_location_kernel_size=6))
    with pytest.raises(ValueError, match=r"symbol_embedding_dim \(6\) must equal encoder_embedding_dim \(8\)"):
        Tacotron2(**dict(SMALL, symbol_embedding_dim=6))
    with pytest.raises(ValueError, match="n_frames_per_step must be at least 1"):
        Tacotron2(**dict(SMALL, n_frames_per_step=0))
