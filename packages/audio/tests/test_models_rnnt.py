"""Tests for emberaudio.models RNNT, emformer_rnnt_model/base and RNNTBeamSearch: NumPy
references for the predictor and joiner, streaming transcription, training, parameter counts,
exhaustive and greedy references for the beam search, chunked decoding and errors."""

import itertools

import numpy as np
import pytest

import ember
from emberaudio.models import RNNT, Hypothesis, RNNTBeamSearch, emformer_rnnt_base, emformer_rnnt_model

BLANK = 2  # torchaudio's convention: the blank is the last symbol


def _tiny(lstm_layer_norm=True, num_lstm_layers=2, tanh_on_mem=False, max_memory_size=0):
    ember.manual_seed(0)
    return emformer_rnnt_model(
        input_dim=4, encoding_dim=8, num_symbols=3, segment_length=4, right_context_length=2,
        time_reduction_input_dim=4, time_reduction_stride=2, transformer_num_heads=2,
        transformer_ffn_dim=8, transformer_num_layers=2, transformer_dropout=0.0,
        transformer_activation="gelu", transformer_left_context_length=4,
        transformer_max_memory_size=max_memory_size,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=tanh_on_mem,
        symbol_embedding_dim=6, num_lstm_layers=num_lstm_layers, lstm_layer_norm=lstm_layer_norm,
        lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.0).double().eval()


def _np(t):
    return t.detach().to(ember.float64).numpy()


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _predictor_reference(model, tokens):
    """Float64 NumPy predictor for one token sequence: (U, encoding_dim)."""
    p = {k: _np(v) for k, v in model.predictor.state_dict().items()}
    x = _ln(p["embedding.weight"][tokens], p["input_layer_norm.weight"], p["input_layer_norm.bias"], 1e-5)
    for i in range(len(model.predictor.lstm_layers)):
        pre = f"lstm_layers.{i}."
        H = p[pre + "p2g.weight"].shape[1]
        h, c, outs = np.zeros(H), np.zeros(H), []
        for xt in x:
            g = xt @ p[pre + "x2g.weight"].T + h @ p[pre + "p2g.weight"].T
            if pre + "x2g.bias" in p:
                g = g + p[pre + "x2g.bias"]
            if pre + "g_norm.weight" in p:
                g = _ln(g, p[pre + "g_norm.weight"], p[pre + "g_norm.bias"], 1e-3)
            c = _sigmoid(g[H:2 * H]) * c + _sigmoid(g[:H]) * np.tanh(g[2 * H:3 * H])
            if pre + "c_norm.weight" in p:
                c = _ln(c, p[pre + "c_norm.weight"], p[pre + "c_norm.bias"], 1e-3)
            h = _sigmoid(g[3 * H:]) * np.tanh(c)
            outs.append(h)
        x = np.array(outs)
    x = x @ p["linear.weight"].T + p["linear.bias"]
    return _ln(x, p["output_layer_norm.weight"], p["output_layer_norm.bias"], 1e-5)


def _joint_log_probs(model, f, g, temperature=1.0):
    """log_softmax(linear(relu(f + g)) / temperature) in NumPy."""
    w, b = _np(model.joiner.linear.weight), _np(model.joiner.linear.bias)
    z = (np.maximum(f + g, 0) @ w.T + b) / temperature
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


# ---------------------------------------------------------------------------- model


@pytest.mark.parametrize("layer_norm", [True, False])
def test_predictor_matches_numpy_and_incremental(layer_norm):
    model = _tiny(lstm_layer_norm=layer_norm)
    tokens = ember.tensor([[2, 0, 1, 1, 0], [2, 1, 0, 0, 0]])
    out, lengths, state = model.predict(tokens, ember.tensor([5, 2]), None)
    assert out.shape == (2, 5, 8) and lengths.tolist() == [5, 2]
    assert len(state) == 2 and tuple(state[0][0].shape) == (2, 6)
    for b in range(2):
        np.testing.assert_allclose(_np(out[b]), _predictor_reference(model, tokens[b].tolist()),
                                   rtol=1e-10, atol=1e-10)
    # Token by token with the carried state gives the same outputs.
    state, steps = None, []
    for u in range(5):
        o, _, state = model.predict(tokens[:, u:u + 1], ember.tensor([1, 1]), state)
        steps.append(o)
    np.testing.assert_allclose(_np(ember.cat(steps, dim=1)), _np(out), rtol=1e-12, atol=1e-12)


def test_forward_shapes_and_joiner_reference():
    model = _tiny()
    src = ember.randn(2, 8 + 2, 4, dtype=ember.float64)
    tgt = ember.tensor([[2, 0, 1], [2, 1, 1]])
    out, src_len, tgt_len, state = model(src, ember.tensor([8, 6]), tgt, ember.tensor([3, 2]))
    assert out.shape == (2, 4, 3, 3)
    assert src_len.tolist() == [4, 3] and tgt_len.tolist() == [3, 2]
    f, _ = model.transcribe(src, ember.tensor([8, 6]))
    g, _, _ = model.predict(tgt, ember.tensor([3, 2]), None)
    w, b = _np(model.joiner.linear.weight), _np(model.joiner.linear.bias)
    want = np.maximum(_np(f)[:, :, None] + _np(g)[:, None], 0) @ w.T + b
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-12)
    joined, _, _ = model.join(f, src_len, g, tgt_len)
    np.testing.assert_allclose(_np(joined), _np(out), rtol=0, atol=0)


@pytest.mark.parametrize("memory", [0, 1])
def test_transcribe_streaming_equals_transcribe(memory):
    model = _tiny(max_memory_size=memory, tanh_on_mem=True)
    x = ember.randn(2, 12 + 2, 4, dtype=ember.float64)
    full, full_len = model.transcribe(x, ember.tensor([12, 12]))
    assert full.shape == (2, 6, 8) and full_len.tolist() == [6, 6]
    state, outs = None, []
    for i in range(3):
        out, out_len, state = model.transcribe_streaming(x[:, 4 * i:4 * i + 6], ember.tensor([6, 6]), state)
        assert out.shape == (2, 2, 8) and out_len.tolist() == [2, 2]
        outs.append(out)
    np.testing.assert_allclose(_np(ember.cat(outs, dim=1)), _np(full), rtol=1e-9, atol=1e-9)


def _rnnt_loss(logits, targets, T, U):
    """Negative log-likelihood of one target sequence by the transducer forward algorithm."""
    logp = ember.nn.functional.log_softmax(logits, dim=-1)
    alpha = {(0, 0): ember.zeros((), dtype=logits.dtype)}
    for t in range(T):
        for u in range(U + 1):
            if (t, u) == (0, 0):
                continue
            terms = []
            if t > 0:
                terms.append(alpha[(t - 1, u)] + logp[t - 1, u, BLANK])
            if u > 0:
                terms.append(alpha[(t, u - 1)] + logp[t, u - 1, targets[u - 1]])
            alpha[(t, u)] = ember.logsumexp(ember.stack(terms), 0)
    return -(alpha[(T - 1, U)] + logp[T - 1, U, BLANK])


def test_training_step_reduces_rnnt_loss():
    model = _tiny().train()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    src = ember.randn(1, 8 + 2, 4, dtype=ember.float64)
    labels = [0, 1]
    tgt = ember.tensor([[BLANK] + labels])
    losses = []
    for _ in range(5):
        opt.zero_grad()
        out, _, _, _ = model(src, ember.tensor([8]), tgt, ember.tensor([3]))
        loss = _rnnt_loss(out[0], labels, 4, 2)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_padding_does_not_change_valid_outputs():
    # No right context here: look-ahead frames are read as given (torchaudio semantics).
    ember.manual_seed(1)
    model = emformer_rnnt_model(
        input_dim=4, encoding_dim=8, num_symbols=3, segment_length=4, right_context_length=0,
        time_reduction_input_dim=4, time_reduction_stride=2, transformer_num_heads=2,
        transformer_ffn_dim=8, transformer_num_layers=1, transformer_dropout=0.0,
        transformer_activation="relu", transformer_left_context_length=2,
        transformer_max_memory_size=0, transformer_weight_init_scale_strategy=None,
        transformer_tanh_on_mem=False, symbol_embedding_dim=6, num_lstm_layers=1,
        lstm_layer_norm=False, lstm_layer_norm_epsilon=1e-5, lstm_dropout=0.0).double().eval()
    x = ember.randn(2, 8, 4, dtype=ember.float64)
    a, la = model.transcribe(x, ember.tensor([8, 4]))
    y = x.clone()
    y[1, 4:] = 9.0
    b, _ = model.transcribe(y, ember.tensor([8, 4]))
    assert la.tolist() == [4, 2]
    np.testing.assert_allclose(_np(b[1, :2]), _np(a[1, :2]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(b[0]), _np(a[0]), rtol=0, atol=0)


def test_zero_size_batch_and_targets():
    model = _tiny()
    out, src_len, tgt_len, _ = model(ember.randn(0, 10, 4, dtype=ember.float64),
                                     ember.zeros(0, dtype=ember.int64),
                                     ember.zeros(0, 2, dtype=ember.int64), ember.zeros(0, dtype=ember.int64))
    assert out.shape == (0, 4, 2, 3) and src_len.shape == (0,)
    pred, _, state = model.predict(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(2, dtype=ember.int64), None)
    assert pred.shape == (2, 0, 8)
    assert all(float(t.abs().sum()) == 0.0 for layer in state for t in layer)  # no step taken


def test_eval_determinism():
    model = emformer_rnnt_model(
        input_dim=4, encoding_dim=8, num_symbols=3, segment_length=4, right_context_length=2,
        time_reduction_input_dim=4, time_reduction_stride=2, transformer_num_heads=2,
        transformer_ffn_dim=8, transformer_num_layers=1, transformer_dropout=0.3,
        transformer_activation="silu", transformer_left_context_length=2,
        transformer_max_memory_size=0, transformer_weight_init_scale_strategy="constant",
        transformer_tanh_on_mem=False, symbol_embedding_dim=6, num_lstm_layers=1,
        lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-5, lstm_dropout=0.3).eval()
    src, tgt = ember.randn(1, 10, 4), ember.tensor([[2, 0]])
    a = model(src, ember.tensor([8]), tgt, ember.tensor([2]))[0]
    b = model(src, ember.tensor([8]), tgt, ember.tensor([2]))[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_emformer_rnnt_base_parameter_count_and_names():
    model = emformer_rnnt_base(4097)
    count = sum(p.numel() for p in model.parameters())
    # torchaudio's emformer_rnnt_base(4097) (EMFORMER_RNNT_BASE_LIBRISPEECH): 76,738,049.
    D, F = 512, 2048
    encoder = 80 * 128 + 20 * (4 * D * D + 4 * D + 2 * D * F + F + D + 6 * D) + (D * 1024 + 1024) + 2048
    predictor = 4097 * 512 + 1024 + 3 * (2 * 512 * 2048 + 512 * 2 + 2048 * 2) + (512 * 1024 + 1024) + 2048
    joiner = 1024 * 4097 + 4097
    assert count == encoder + predictor + joiner == 76738049
    keys = set(model.state_dict())
    for k in ["transcriber.input_linear.weight",
              "transcriber.transformer.emformer_layers.19.attention.emb_to_key_value.weight",
              "transcriber.output_linear.bias", "transcriber.layer_norm.weight",
              "predictor.embedding.weight", "predictor.input_layer_norm.bias",
              "predictor.lstm_layers.2.x2g.weight", "predictor.lstm_layers.2.p2g.weight",
              "predictor.lstm_layers.2.c_norm.weight", "predictor.lstm_layers.2.g_norm.bias",
              "predictor.linear.weight", "predictor.output_layer_norm.weight",
              "joiner.linear.weight", "joiner.linear.bias"]:
        assert k in keys, k
    assert "transcriber.input_linear.bias" not in keys
    assert "predictor.lstm_layers.0.x2g.bias" not in keys  # no bias under layer norm
    assert isinstance(model, RNNT)


def test_model_errors():
    model = _tiny()
    with pytest.raises(ValueError, match=r"sources must have shape \(batch, frames, 4\)"):
        model.transcribe(ember.randn(10, 4), ember.tensor([8]))
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 10\]"):
        model.transcribe(ember.randn(1, 10, 4, dtype=ember.float64), ember.tensor([11]))
    with pytest.raises(ValueError, match=r"targets must have shape \(batch, tokens\)"):
        model.predict(ember.tensor([1, 2]), ember.tensor([2]), None)
    with pytest.raises(TypeError, match="targets must be an integer tensor"):
        model.predict(ember.tensor([[1.0]]), ember.tensor([1]), None)
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 3\)"):
        model.predict(ember.tensor([[3]]), ember.tensor([1]), None)
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 1\]"):
        model.predict(ember.tensor([[1]]), ember.tensor([2]), None)
    with pytest.raises(ValueError, match="one \\[h, c\\] per LSTM layer"):
        model.predict(ember.tensor([[1]]), ember.tensor([1]), [])
    with pytest.raises(ValueError, match="expected size of 3 for dimension 1"):
        model.transcribe_streaming(ember.randn(1, 8, 4, dtype=ember.float64), ember.tensor([8]), None)


# ---------------------------------------------------------------------------- beam search


def _encodings(model, T_in=4, seed=3):
    ember.manual_seed(seed)
    x = ember.randn(1, T_in + 2, 4, dtype=ember.float64)
    f, _ = model.transcribe(x, ember.tensor([T_in]))
    return x, _np(f[0])


def _exact_log_prob(model, f, labels, step_max, temperature=1.0):
    """log P(labels | x) summed over every alignment with at most ``step_max`` tokens per frame."""
    g = _predictor_reference(model, [BLANK] + list(labels))
    U = len(labels)
    A = np.full(U + 1, -np.inf)
    A[0] = 0.0
    for t in range(f.shape[0]):
        lp = _joint_log_probs(model, f[t], g, temperature)  # (U + 1, V)
        nxt = np.full(U + 1, -np.inf)
        for u in range(U + 1):
            run = A[u]
            for k in range(step_max + 1):
                if u + k > U:
                    break
                nxt[u + k] = np.logaddexp(nxt[u + k], run + lp[u + k, BLANK])
                if u + k < U:
                    run = run + lp[u + k, labels[u + k]]
        A = nxt
    return A[U]


def test_huge_beam_is_exhaustive():
    model = _tiny()
    x, f = _encodings(model, T_in=4)  # two encoder frames
    step_max = 2
    hypos = RNNTBeamSearch(model, BLANK, step_max_tokens=step_max)(x[0], ember.tensor(4), 1000)
    got = {tuple(h[0][1:]): h[3] for h in hypos}
    every = [seq for n in range(5) for seq in itertools.product([0, 1], repeat=n)]
    assert set(got) == set(every)
    for seq in every:
        assert got[seq] == pytest.approx(_exact_log_prob(model, f, seq, step_max), abs=1e-9)
    # With at most step_max tokens per frame the mass of longer emissions is lost, so the total
    # is below 1.
    assert np.logaddexp.reduce(list(got.values())) < 0.0
    # Sorted by the default key: score / (tokens + 1), tokens counting the leading blank.
    keys = [h[3] / (len(h[0]) + 1) for h in hypos]
    assert keys == sorted(keys, reverse=True)


def _greedy(model, f, temperature):
    """Per frame: emit the most likely symbol until it is blank."""
    labels = []
    for t in range(f.shape[0]):
        for _ in range(20):
            g = _predictor_reference(model, [BLANK] + labels)[-1]
            k = int(np.argmax(_joint_log_probs(model, f[t], g, temperature)))
            if k == BLANK:
                break
            labels.append(k)
        else:
            raise AssertionError("greedy reference did not stop; pick another seed")
    return labels


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_beam_one_at_low_temperature_is_greedy(seed):
    model = _tiny()
    # Favour blank a little so that the random model's greedy decode ends each frame
    # (for these seeds it emits 7 to 10 tokens in 4 frames).
    with ember.no_grad():
        model.joiner.linear.bias[BLANK] += 1.0
    x, f = _encodings(model, T_in=8, seed=seed)
    want = _greedy(model, f, 0.01)
    assert len(want) >= 7
    hypos = RNNTBeamSearch(model, BLANK, temperature=0.01)(x, ember.tensor([8]), 1)
    assert len(hypos) == 1
    assert hypos[0][0] == [BLANK] + want


@pytest.mark.parametrize("beam", [1, 2, 4])
def test_beam_scores_bounded_by_exact_probability(beam):
    model = _tiny()
    x, f = _encodings(model, T_in=4, seed=5)
    hypos = RNNTBeamSearch(model, BLANK, step_max_tokens=2)(x, ember.tensor([4]), beam)
    assert 1 <= len(hypos) <= beam
    exhaustive = RNNTBeamSearch(model, BLANK, step_max_tokens=2)(x, ember.tensor([4]), 1000)
    best = max(h[3] for h in exhaustive)
    for tokens, pred_out, _state, score in hypos:
        assert tokens[0] == BLANK
        # A beam keeps a subset of the alignments, so its score never exceeds the exact one...
        assert score <= _exact_log_prob(model, f, tokens[1:], 2) + 1e-9
        # ...nor the best exact score, which a wide enough beam reaches.
        assert score <= best + 1e-9
        assert tuple(pred_out.shape) == (1, 8)  # as torchaudio: (1, encoding_dim)
        np.testing.assert_allclose(_np(pred_out[0]), _predictor_reference(model, tokens)[-1], atol=1e-10)


def test_chunked_infer_continues_hypotheses():
    model = _tiny()
    ember.manual_seed(7)
    x = ember.randn(1, 12 + 2, 4, dtype=ember.float64)
    decoder = RNNTBeamSearch(model, BLANK, step_max_tokens=2)
    whole = decoder(x, ember.tensor([12]), 3)
    state, hypos = None, None
    for i in range(3):
        hypos, state = decoder.infer(x[0, 4 * i:4 * i + 6], ember.tensor(6), 3, state=state,
                                     hypothesis=hypos)
    assert [h[0] for h in hypos] == [h[0] for h in whole]
    np.testing.assert_allclose([h[3] for h in hypos], [h[3] for h in whole], rtol=1e-9)
    # A single hypothesis (torchaudio < 2.0 style) seeds the search alone.
    one, _ = decoder.infer(x[0, :6], ember.tensor(6), 2, hypothesis=whole[0])
    assert all(h[0][:len(whole[0][0])] == whole[0][0] for h in one)


def test_custom_sort_key():
    model = _tiny()
    x, _ = _encodings(model, T_in=4)
    hypos = RNNTBeamSearch(model, BLANK, hypo_sort_key=lambda h: -len(h[0]))(x, ember.tensor([4]), 3)
    lengths = [len(h[0]) for h in hypos]
    assert lengths == sorted(lengths)


def test_beam_search_errors():
    model = _tiny()
    decoder = RNNTBeamSearch(model, BLANK)
    with pytest.raises(ValueError, match=r"input must be of shape \(T, D\) or \(1, T, D\)"):
        decoder(ember.randn(2, 6, 4, dtype=ember.float64), ember.tensor([4]), 2)
    with pytest.raises(ValueError, match=r"length must be of shape \(\) or \(1,\)"):
        decoder(ember.randn(6, 4, dtype=ember.float64), ember.tensor([4, 4]), 2)
    with pytest.raises(ValueError, match="beam_width must be a positive int"):
        decoder(ember.randn(6, 4, dtype=ember.float64), ember.tensor([4]), 0)
    with pytest.raises(TypeError, match="hypothesis must be a Hypothesis"):
        decoder.infer(ember.randn(6, 4, dtype=ember.float64), ember.tensor([6]), 2, hypothesis=[])
    with pytest.raises(ValueError, match="temperature must be positive"):
        RNNTBeamSearch(model, BLANK, temperature=0.0)
    with pytest.raises(ValueError, match="step_max_tokens must be at least 1"):
        RNNTBeamSearch(model, BLANK, step_max_tokens=0)
    assert Hypothesis.__origin__ is tuple


def test_gradcheck_model():
    model = _tiny(num_lstm_layers=1)
    src = ember.randn(1, 6, 4, dtype=ember.float64, requires_grad=True)
    tgt = ember.tensor([[BLANK, 0]])

    def joint(s):
        return model(s, ember.tensor([4]), tgt, ember.tensor([2]))[0]

    assert ember.autograd.gradcheck(joint, (src,))
