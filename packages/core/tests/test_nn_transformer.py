"""MultiheadAttention, multi_head_attention_forward and the Transformer layers against a float64
NumPy reference (masks of both kinds, key padding, bias_k/bias_v, add_zero_attn, separate
projection weights, unbatched and batch_first inputs); gradients by gradcheck; state-dict keys,
reprs and argument errors as PyTorch's; and the fused inference path (packed tokens, nested
tensors) against the slow path, with its diagnostics."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(61)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _np(t):
    return t.detach().numpy()


def _softmax(x):
    top = x.max(-1, keepdims=True)
    e = np.exp(x - top)
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _ref_mha(q, k, v, wq, wk, wv, b_in, w_out, b_out, heads, key_padding_mask=None, attn_mask=None, bias_k=None,
             bias_v=None, add_zero_attn=False):
    """Sequence-first [L, N, E] multi-head attention in float64 NumPy -> (output, per-head weights)."""
    length, batch, embed = q.shape
    hd = embed // heads
    bq, bk, bv = (np.zeros(embed),) * 3 if b_in is None else np.split(b_in, 3)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv
    extra = 0
    if bias_k is not None:
        K = np.concatenate([K, np.broadcast_to(bias_k, (1, batch, embed))])
        V = np.concatenate([V, np.broadcast_to(bias_v, (1, batch, embed))])
        extra += 1
    heads_of = lambda x: x.reshape(x.shape[0], batch, heads, hd).transpose(1, 2, 0, 3)  # noqa: E731
    Q, K, V = heads_of(Q), heads_of(K), heads_of(V)
    if add_zero_attn:
        K = np.concatenate([K, np.zeros(K.shape[:2] + (1, hd))], 2)
        V = np.concatenate([V, np.zeros(V.shape[:2] + (1, hd))], 2)
        extra += 1
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hd)
    source = scores.shape[-1]

    def additive(mask):
        mask = np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask
        return np.concatenate([mask, np.zeros(mask.shape[:-1] + (extra,))], -1)

    if attn_mask is not None:
        m = additive(attn_mask)
        scores = scores + (m if m.ndim == 2 else m.reshape(batch, heads, length, source))
    if key_padding_mask is not None:
        scores = scores + additive(key_padding_mask)[:, None, None, :]
    weights = _softmax(scores)
    out = (weights @ V).transpose(2, 0, 1, 3).reshape(length, batch, embed)
    return out @ w_out.T + b_out, weights


def _mha_params(embed, kdim=None, vdim=None):
    kdim, vdim = kdim or embed, vdim or embed
    return (RNG.normal(size=(embed, embed)) / 2, RNG.normal(size=(embed, kdim)) / 2,
            RNG.normal(size=(embed, vdim)) / 2, RNG.normal(size=3 * embed), RNG.normal(size=(embed, embed)) / 2,
            RNG.normal(size=embed))


def _call_f(q, k, v, params, heads, grad=False, **kw):
    wq, wk, wv, b_in, w_out, b_out = params
    return F.multi_head_attention_forward(
        _t(q, grad), _t(k, grad), _t(v, grad), q.shape[-1], heads, _t(np.concatenate([wq, wk, wv])), _t(b_in),
        None, None, False, 0.0, _t(w_out), _t(b_out), **kw)


# ---------------------------------------------------------------------------------------------
# multi_head_attention_forward


@pytest.mark.parametrize("need_weights", [True, False])
def test_functional_matches_reference_with_masks(need_weights):
    L, S, N, E, H = 4, 5, 3, 6, 2
    q, k, v = RNG.normal(size=(L, N, E)), RNG.normal(size=(S, N, E)), RNG.normal(size=(S, N, E))
    params = _mha_params(E)
    kpm = np.zeros((N, S), dtype=bool)
    kpm[0, 3:] = True
    kpm[2, 0] = True
    float_mask = RNG.normal(size=(L, S))
    bool_mask = RNG.uniform(size=(N * H, L, S)) > 0.8
    bool_mask[..., 1] = False  # every query keeps a key
    for kw in ({}, {"key_padding_mask": kpm}, {"attn_mask": float_mask}, {"attn_mask": bool_mask, "key_padding_mask": kpm}):
        want, want_w = _ref_mha(q, k, v, *params, H, **kw)
        got, got_w = _call_f(q, k, v, params, H, need_weights=need_weights, average_attn_weights=False,
                             **{name: _t(m) for name, m in kw.items()})
        np.testing.assert_allclose(_np(got), want, rtol=1e-10, atol=1e-12)
        if need_weights:
            np.testing.assert_allclose(_np(got_w), want_w, rtol=1e-10, atol=1e-12)
        else:
            assert got_w is None
    _, averaged = _call_f(q, k, v, params, H)
    np.testing.assert_allclose(_np(averaged), _ref_mha(q, k, v, *params, H)[1].mean(1), rtol=1e-10)


def test_functional_bias_kv_zero_attn_separate_weights_and_unbatched():
    L, S, N, E, H = 3, 4, 2, 4, 2
    q, k, v = RNG.normal(size=(L, N, E)), RNG.normal(size=(S, N, 3)), RNG.normal(size=(S, N, 5))
    wq, wk, wv, b_in, w_out, b_out = _mha_params(E, 3, 5)
    bias_k, bias_v = RNG.normal(size=(1, 1, E)), RNG.normal(size=(1, 1, E))
    kpm = np.zeros((N, S), dtype=bool)
    kpm[1, 2:] = True
    mask = RNG.normal(size=(L, S))
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask is deprecated"):
        got, got_w = F.multi_head_attention_forward(
            _t(q), _t(k), _t(v), E, H, None, _t(b_in), _t(bias_k), _t(bias_v), True, 0.0, _t(w_out), _t(b_out),
            key_padding_mask=_t(kpm), attn_mask=_t(mask), use_separate_proj_weight=True, q_proj_weight=_t(wq),
            k_proj_weight=_t(wk), v_proj_weight=_t(wv), average_attn_weights=False)
    want, want_w = _ref_mha(q, k, v, wq, wk, wv, b_in, w_out, b_out, H, kpm, mask, bias_k, bias_v, True)
    np.testing.assert_allclose(_np(got), want, rtol=1e-10)
    np.testing.assert_allclose(_np(got_w), want_w, rtol=1e-10, atol=1e-14)
    assert tuple(got_w.shape) == (N, H, L, S + 2)
    # unbatched [L, E] inputs give unbatched outputs
    params = _mha_params(E)
    q2 = RNG.normal(size=(L, E))
    out, weights = _call_f(q2, q2, q2, params, H, key_padding_mask=_t(np.array([False, False, True])))
    want, want_w = _ref_mha(q2[:, None], q2[:, None], q2[:, None], *params, H,
                            key_padding_mask=np.array([[False, False, True]]))
    np.testing.assert_allclose(_np(out), want[:, 0], rtol=1e-10)
    np.testing.assert_allclose(_np(weights), want_w.mean(1)[0], rtol=1e-10)
    # zero-size batch
    empty = RNG.normal(size=(L, 0, E))
    out, weights = _call_f(empty, empty, empty, params, H)
    assert tuple(out.shape) == (L, 0, E) and tuple(weights.shape) == (0, L, L)


def test_functional_static_key_and_value():
    L, S, N, E, H = 3, 4, 2, 4, 2
    q, k, v = RNG.normal(size=(L, N, E)), RNG.normal(size=(S, N, E)), RNG.normal(size=(S, N, E))
    params = _mha_params(E)
    wq, wk, wv, b_in, w_out, b_out = params
    heads = lambda x: x.reshape(S, N * H, E // H).transpose(1, 0, 2)  # noqa: E731 - [N*H, S, head_dim]
    static_k, static_v = heads(k @ wk.T + b_in[E:2 * E]), heads(v @ wv.T + b_in[2 * E:])
    # the key/value given to the call are ignored where static ones are passed
    junk = RNG.normal(size=(S, N, E))
    got, _ = _call_f(q, junk, junk, params, H, static_k=_t(static_k), static_v=_t(static_v))
    np.testing.assert_allclose(_np(got), _ref_mha(q, k, v, *params, H)[0], rtol=1e-10)
    with pytest.raises(AssertionError, match=r"expecting static_k.size\(0\) of 4 and static_k.size\(2\) of 2"):
        _call_f(q, junk, junk, params, H, static_k=_t(static_k[:3]))


def test_functional_is_causal_hint_and_errors():
    L, N, E, H = 4, 2, 4, 2
    x = RNG.normal(size=(L, N, E))
    params = _mha_params(E)
    causal = np.triu(np.full((L, L), -np.inf), 1)
    want = _ref_mha(x, x, x, *params, H, attn_mask=causal)[0]
    got, _ = _call_f(x, x, x, params, H, attn_mask=_t(causal), is_causal=True, need_weights=False)
    np.testing.assert_allclose(_np(got), want, rtol=1e-10)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        _call_f(x, x, x, params, H, is_causal=True)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 4"):
        F.multi_head_attention_forward(_t(x), _t(x), _t(x), 8, H, _t(np.zeros((24, 8))), None, None, None, False,
                                       0.0, _t(np.zeros((8, 8))), None)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(3, 4\), but should be \(4, 4\)"):
        _call_f(x, x, x, params, H, attn_mask=_t(np.zeros((3, 4))))
    with pytest.raises(AssertionError, match=r"expecting key_padding_mask shape of \(2, 4\)"):
        _call_f(x, x, x, params, H, key_padding_mask=_t(np.zeros((2, 3), dtype=bool)))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        _call_f(x, x, x, params, H, attn_mask=_t(np.zeros((L, L), dtype=np.int64)))
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D"):
        _call_f(x[None], x[None], x[None], params, H)


def test_functional_gradcheck():
    L, S, N, E, H = 3, 2, 2, 4, 2
    q, k = _t(RNG.normal(size=(L, N, E)), True), _t(RNG.normal(size=(S, N, E)), True)
    w_in, b_in = _t(RNG.normal(size=(3 * E, E)) / 2, True), _t(RNG.normal(size=3 * E), True)
    w_out = _t(RNG.normal(size=(E, E)) / 2, True)
    kpm = _t(np.array([[False, True], [False, False]]))

    def f(q, k, w_in, b_in, w_out):
        out, weights = F.multi_head_attention_forward(q, k, k, E, H, w_in, b_in, None, None, False, 0.0, w_out, None,
                                                      key_padding_mask=kpm)
        return out, weights

    assert gradcheck(f, (q, k, w_in, b_in, w_out))
    assert gradcheck(lambda q, w: F.multi_head_attention_forward(q, q, q, E, H, w, None, None, None, True, 0.0,
                                                                 w_out, None, need_weights=False)[0],
                     (q, w_in))


# ---------------------------------------------------------------------------------------------
# MultiheadAttention


def _module_params(mha):
    return [_np(p) for p in (mha.in_proj_weight[:mha.embed_dim], mha.in_proj_weight[mha.embed_dim:2 * mha.embed_dim],
                             mha.in_proj_weight[2 * mha.embed_dim:], mha.in_proj_bias, mha.out_proj.weight,
                             mha.out_proj.bias)]


def test_module_state_dict_repr_init_and_batch_first():
    mha = nn.MultiheadAttention(8, 2, dtype=ember.float64)
    assert list(mha.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert repr(mha) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
                         "out_features=8, bias=True)\n)")
    assert np.all(_np(mha.in_proj_bias) == 0) and np.all(_np(mha.out_proj.bias) == 0)
    bound = np.sqrt(6 / (8 + 24))  # xavier_uniform_ over the packed [3E, E] weight
    assert np.abs(_np(mha.in_proj_weight)).max() <= bound
    other = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, bias=False)
    assert list(other.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k", "bias_v",
                                        "out_proj.weight"]
    x = RNG.normal(size=(5, 3, 8))
    kpm = np.zeros((3, 5), dtype=bool)
    kpm[1, 3:] = True
    out, w = mha(_t(x), _t(x), _t(x), key_padding_mask=_t(kpm))
    want, want_w = _ref_mha(x, x, x, *_module_params(mha), 2, key_padding_mask=kpm)
    np.testing.assert_allclose(_np(out), want, rtol=1e-10)
    np.testing.assert_allclose(_np(w), want_w.mean(1), rtol=1e-10)
    bf = nn.MultiheadAttention(8, 2, batch_first=True, dtype=ember.float64)
    bf.load_state_dict(mha.state_dict())
    xb = np.ascontiguousarray(x.transpose(1, 0, 2))
    out_b, _ = bf(_t(xb), _t(xb), _t(xb), key_padding_mask=_t(kpm))
    np.testing.assert_allclose(_np(out_b), want.transpose(1, 0, 2), rtol=1e-10)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)


def test_module_gradients_flow_to_every_parameter():
    mha = nn.MultiheadAttention(4, 2, add_bias_kv=True, dtype=ember.float64)
    x = _t(RNG.normal(size=(3, 2, 4)), True)
    out, _ = mha(x, x, x)
    out.sum().backward()
    for name, p in mha.named_parameters():
        assert p.grad is not None and np.isfinite(_np(p.grad)).all(), name
    assert gradcheck(lambda x: mha(x, x, x, need_weights=False)[0], (x,))


# ---------------------------------------------------------------------------------------------
# Transformer layers


def _ref_encoder_layer(layer, x, kpm=None, mask=None):
    """Sequence-first float64 reference of a TransformerEncoderLayer (dropout off)."""
    act = (lambda h: np.maximum(h, 0)) if layer.activation_relu_or_gelu == 1 else _gelu
    p = {k: _np(v) for k, v in layer.state_dict().items()}
    E = x.shape[-1]
    w = p["self_attn.in_proj_weight"]
    attn = lambda h: _ref_mha(h, h, h, w[:E], w[E:2 * E], w[2 * E:], p["self_attn.in_proj_bias"],  # noqa: E731
                              p["self_attn.out_proj.weight"], p["self_attn.out_proj.bias"], layer.self_attn.num_heads,
                              kpm, mask)[0]
    ff = lambda h: act(h @ p["linear1.weight"].T + p["linear1.bias"]) @ p["linear2.weight"].T + p["linear2.bias"]  # noqa: E731
    n1 = lambda h: _layer_norm(h, p["norm1.weight"], p["norm1.bias"], layer.norm1.eps)  # noqa: E731
    n2 = lambda h: _layer_norm(h, p["norm2.weight"], p["norm2.bias"], layer.norm2.eps)  # noqa: E731
    if layer.norm_first:
        x = x + attn(n1(x))
        return x + ff(n2(x))
    x = n1(x + attn(x))
    return n2(x + ff(x))


def _gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def _randomize(module):
    with ember.no_grad():
        for p in module.parameters():
            p.copy_(_t(RNG.normal(size=tuple(p.shape)) * 0.3).to(p.dtype))
    return module


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_encoder_layer_matches_reference(norm_first, activation):
    layer = _randomize(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation, norm_first=norm_first,
                                                  dtype=ember.float64))
    x = RNG.normal(size=(5, 3, 8))
    kpm = np.zeros((3, 5), dtype=bool)
    kpm[2, 4:] = True
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    np.testing.assert_allclose(_np(layer(_t(x), src_key_padding_mask=_t(kpm))), _ref_encoder_layer(layer, x, kpm),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(layer(_t(x), src_mask=_t(mask), is_causal=True)),
                               _ref_encoder_layer(layer, x, mask=mask), rtol=1e-9, atol=1e-12)
    small = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, norm_first=norm_first, dtype=ember.float64)
    assert gradcheck(lambda x: small(x), (_t(RNG.normal(size=(3, 2, 4)), True),))


def test_encoder_layer_repr_and_state_dict_round_trip():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    assert repr(layer) == (
        "TransformerEncoderLayer(\n"
        "  (self_attn): MultiheadAttention(\n"
        "    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        "  )\n"
        "  (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
        "  (dropout): Dropout(p=0.1, inplace=False)\n"
        "  (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
        "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        "  (dropout1): Dropout(p=0.1, inplace=False)\n"
        "  (dropout2): Dropout(p=0.1, inplace=False)\n"
        ")")
    copy = nn.TransformerEncoderLayer(8, 2, 16).eval()
    copy.load_state_dict(layer.state_dict())
    x = _t(RNG.normal(size=(4, 2, 8)).astype(np.float32))
    np.testing.assert_allclose(_np(copy(x)), _np(layer.eval()(x)), rtol=1e-6)
    stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 3, enable_nested_tensor=False)
    assert repr(stack).startswith("TransformerEncoder(\n  (layers): ModuleList(\n    (0-2): 3 x TransformerEncoderLayer(\n")
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == \
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)"
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_decoder_layer_and_transformer_match_reference():
    d, H = 8, 2
    dec = _randomize(nn.TransformerDecoderLayer(d, H, 12, dropout=0.0, dtype=ember.float64))
    tgt, mem = RNG.normal(size=(4, 2, d)), RNG.normal(size=(5, 2, d))
    p = {k: _np(v) for k, v in dec.state_dict().items()}

    def attn(prefix, q, kv, **kw):
        w = p[prefix + ".in_proj_weight"]
        return _ref_mha(q, kv, kv, w[:d], w[d:2 * d], w[2 * d:], p[prefix + ".in_proj_bias"],
                        p[prefix + ".out_proj.weight"], p[prefix + ".out_proj.bias"], H, **kw)[0]

    causal = np.triu(np.full((4, 4), -np.inf), 1)
    mkpm = np.zeros((2, 5), dtype=bool)
    mkpm[0, 3:] = True
    x = _layer_norm(tgt + attn("self_attn", tgt, tgt, attn_mask=causal), p["norm1.weight"], p["norm1.bias"])
    x = _layer_norm(x + attn("multihead_attn", x, mem, key_padding_mask=mkpm), p["norm2.weight"], p["norm2.bias"])
    ff = np.maximum(x @ p["linear1.weight"].T + p["linear1.bias"], 0) @ p["linear2.weight"].T + p["linear2.bias"]
    want = _layer_norm(x + ff, p["norm3.weight"], p["norm3.bias"])
    got = dec(_t(tgt), _t(mem), tgt_mask=_t(causal), memory_key_padding_mask=_t(mkpm))
    np.testing.assert_allclose(_np(got), want, rtol=1e-9, atol=1e-12)
    small = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=True, dtype=ember.float64)
    assert gradcheck(lambda t, m: small(t, m, tgt_is_causal=True,
                                        tgt_mask=nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64)),
                     (_t(RNG.normal(size=(3, 2, 4)), True), _t(RNG.normal(size=(2, 2, 4)), True)))
    assert list(dec.state_dict())[:4] == ["self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                          "self_attn.out_proj.weight", "self_attn.out_proj.bias"]

    model = nn.Transformer(d_model=d, nhead=H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=12,
                           dropout=0.0, dtype=ember.float64)
    assert model.encoder.layers[0].linear1.weight is not model.encoder.layers[1].linear1.weight
    src = _t(RNG.normal(size=(5, 2, d)))
    out = model(src, _t(tgt), tgt_mask=nn.Transformer.generate_square_subsequent_mask(4, dtype=ember.float64))
    memory = model.encoder(src)
    again = model.decoder(_t(tgt), memory, tgt_mask=_t(causal))
    np.testing.assert_allclose(_np(out), _np(again), rtol=1e-12)
    assert tuple(out.shape) == (4, 2, d)
    np.testing.assert_array_equal(_np(nn.Transformer.generate_square_subsequent_mask(3)),
                                  np.triu(np.full((3, 3), -np.inf), 1).astype(np.float32))
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(src, _t(RNG.normal(size=(4, 3, d))))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(_t(RNG.normal(size=(5, 2, 4))), _t(RNG.normal(size=(4, 2, 4))))


def test_transformer_trains():
    ember.manual_seed(0)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16,
                           dropout=0.0, batch_first=True)
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    src = _t(RNG.normal(size=(4, 6, 8)).astype(np.float32))
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = F.mse_loss(model(src, src), src)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


# ---------------------------------------------------------------------------------------------
# The fused inference path


def _padding_mask(batch, length, lengths, left=False):
    kpm = np.ones((batch, length), dtype=bool)
    for i, n in enumerate(lengths):
        if left:
            kpm[i, length - n:] = False
        else:
            kpm[i, :n] = False
    return kpm


@pytest.mark.parametrize("batch_first", [False, True])
def test_attention_fast_path_equals_slow_path(batch_first):
    mha = nn.MultiheadAttention(16, 4, batch_first=batch_first).eval()
    x = _t(RNG.normal(size=(3, 7, 16)).astype(np.float32))
    batch, length = (3, 7) if batch_first else (7, 3)
    kpm = _t(_padding_mask(batch, length, [length, 2, 1, 3, 2, 3, 2][:batch]))
    slow, _ = mha(x, x, x, key_padding_mask=kpm)  # need_weights=True: the slow path
    assert mha.why_not_fast_path.startswith("need_weights was True")
    with ember.no_grad():
        fast, weights = mha(x, x, x, key_padding_mask=kpm, need_weights=False)
    assert mha.why_not_fast_path == "" and weights is None
    np.testing.assert_allclose(_np(fast), _np(slow), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("norm_first,activation,batch_first", [(False, "relu", False), (True, "gelu", True)])
def test_encoder_layer_fast_path_equals_slow_path(norm_first, activation, batch_first):
    layer = nn.TransformerEncoderLayer(16, 4, 32, activation=activation, norm_first=norm_first,
                                       batch_first=batch_first)
    x = RNG.normal(size=(2, 6, 16) if batch_first else (6, 2, 16)).astype(np.float32)
    kpm = _padding_mask(2, 6, [6, 3])  # [N, L] either way
    layer.eval()
    slow = layer(_t(x), src_key_padding_mask=_t(kpm))  # parameters require grad: the slow path
    assert layer.why_not_fast_path.startswith("grad is enabled")
    with ember.no_grad():
        fast = layer(_t(x), src_key_padding_mask=_t(kpm))
    assert layer.why_not_fast_path == ""
    layer.train()
    layer(_t(x))
    assert layer.why_not_fast_path == "training is enabled"
    np.testing.assert_allclose(_np(fast), _np(slow), rtol=1e-5, atol=1e-5)


def test_encoder_nested_tensor_path_skips_padding():
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=True).eval()
    assert encoder.use_nested_tensor and encoder.why_not_sparsity_fast_path == ""
    x = _t(RNG.normal(size=(3, 8, 16)).astype(np.float32))
    for left in (False, True):  # the padding need not be at the end
        kpm = _padding_mask(3, 8, [8, 3, 5], left=left)
        with ember.no_grad():
            fast = encoder(x, src_key_padding_mask=_t(kpm))
        assert encoder.why_not_fast_path == ""
        slow = encoder(x, src_key_padding_mask=_t(kpm))  # parameters require grad: every layer's slow path
        assert encoder.why_not_fast_path.startswith("grad is enabled")
        assert encoder.layers[0].why_not_fast_path.startswith("grad is enabled")
        keep = ~kpm
        np.testing.assert_allclose(_np(fast)[keep], _np(slow)[keep], rtol=1e-5, atol=1e-5)
        assert np.all(_np(fast)[kpm] == 0)  # padded positions come back as zeros, as PyTorch's nested path
    encoder.use_nested_tensor = False
    with ember.no_grad():
        encoder(x, src_key_padding_mask=_t(kpm))
    assert encoder.why_not_fast_path.startswith("use_nested_tensor is False")
    assert encoder.layers[1].why_not_fast_path == ""  # each layer still takes its own fast path


def test_fast_path_diagnostics():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, activation=F.silu), 1)
    assert not enc.use_nested_tensor
    assert any("enable_nested_tensor is True, but self.use_nested_tensor is False because "
               "activation_relu_or_gelu was not True" in str(w.message) for w in caught)
    mha = nn.MultiheadAttention(8, 2).eval()
    x = _t(RNG.normal(size=(3, 2, 8)).astype(np.float32))
    with ember.no_grad():
        mha(x, x, x, need_weights=False)
        assert mha.why_not_fast_path == ""
        mha(x, _t(_np(x)), x, need_weights=False)
        assert mha.why_not_fast_path.startswith("non-self attention was used")
        mha(x[:, 0], x[:, 0], x[:, 0], need_weights=False)
        assert mha.why_not_fast_path == "input not batched; expected query.dim() of 3 but got 2"
        mask = _t(np.zeros((3, 3), dtype=np.float32))
        mha(x, x, x, need_weights=False, attn_mask=mask)
        assert mha.why_not_fast_path.startswith("attn_mask was given")
        x64 = x.to(ember.float64)
        with pytest.raises(RuntimeError):
            mha(x64, x64, x64, need_weights=False)  # slow path: the dtypes differ
        assert mha.why_not_fast_path == "the input's dtype differs from the parameters'"
    layer = nn.TransformerEncoderLayer(8, 2, 16).eval()
    with ember.no_grad():
        layer(x, src_mask=mask)
    assert layer.why_not_fast_path.startswith("src_mask was given")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packed_attention_with_one_key_reads_only_that_key(dtype):
    """Several queries against one key: the scores are a matrix-vector product (BLAS gemv, Note
    [gemv products]) whose vector is the key's row of the packed key matrix. The rows after it
    hold NaN here, so a read down the key's column instead of along its row shows as NaN."""
    keys = np.full((4, 8), np.nan, dtype=dtype)
    keys[0] = RNG.normal(size=8)
    q = _t(RNG.normal(size=(3, 8)).astype(dtype))
    kv = _t(keys)[:1]  # one row of a larger buffer
    out = ember._C._packed_attention(q, kv, kv, _t(np.array([0, 3])), _t(np.array([0, 1])), 2, 0.5)
    np.testing.assert_array_equal(_np(out), np.broadcast_to(keys[:1], (3, 8)))  # softmax of one score is 1


def test_fused_kernels_check_their_arguments():
    q = _t(RNG.normal(size=(5, 4)).astype(np.float32))
    offsets = _t(np.array([0, 2, 5]))
    out = ember._C._packed_attention(q, q, q, offsets, offsets, 2, 0.5)
    assert tuple(out.shape) == (5, 4)
    for bad, message in (([1, 2, 5], "to start at 0"), ([0, 3, 2, 5], "to be non-decreasing"),
                         ([0, 2, 6], r"to end at 5 \(the number of packed rows\)")):
        with pytest.raises(ValueError, match="query_offsets " + message):
            ember._C._packed_attention(q, q, q, _t(np.array(bad)), offsets, 2, 0.5)
    with pytest.raises(ValueError, match="as many sequences"):
        ember._C._packed_attention(q, q, q, offsets, _t(np.array([0, 5])), 2, 0.5)
    with pytest.raises(ValueError, match="expected num_heads to divide 4, but got 3"):
        ember._C._packed_attention(q, q, q, offsets, offsets, 3, 0.5)
    with pytest.raises(TypeError, match="expected key to have dtype float32, but got float64"):
        ember._C._packed_attention(q, q.to(ember.float64), q, offsets, offsets, 2, 0.5)
    w, b = _t(np.ones(4, dtype=np.float32)), _t(np.zeros(4, dtype=np.float32))
    got = ember._C._add_layer_norm(q, q, w, b, 1e-5)
    np.testing.assert_allclose(_np(got), _layer_norm(2 * _np(q), 1, 0), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"expected weight and bias of shape \[4\]"):
        ember._C._add_layer_norm(q, None, _t(np.ones(3, dtype=np.float32)), b, 1e-5)
    with pytest.raises(ValueError, match=r"expected residual of shape \[5, 4\]"):
        ember._C._add_layer_norm(q, q[:2], w, b, 1e-5)
    # inference-only: differentiating through the fused kernels is refused, not silently wrong
    leaf = _t(RNG.normal(size=(5, 4)), True)
    out = ember._C._packed_attention(leaf, leaf, leaf, offsets, offsets, 2, 0.5)
    with pytest.raises(NotImplementedError, match="the derivative for '_packed_attention' is not implemented"):
        out.sum().backward()
