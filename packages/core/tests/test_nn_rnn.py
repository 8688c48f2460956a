"""RNN / LSTM / GRU layers and their cells against a float64 NumPy reference of the recurrences
(multi-layer, bidirectional, batch_first, proj_size, given and default states, unbatched,
non-contiguous and zero-size batches), gradcheck through inputs, states and parameters, packed
sequences against running each sequence alone, the nn.utils.rnn packing helpers, state-dict keys,
reprs, inter-layer dropout and the argument errors."""

import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from ember.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)
from ember.nn.utils.stateless import functional_call

RNG = np.random.default_rng(5)
F64 = ember.float64


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _np(t):
    return t.detach().numpy()


# ---- NumPy reference ----------------------------------------------------------------------------

def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _np_step(mode, x, h, c, p):
    """One step for a (B, F) batch; p holds weight_ih/weight_hh/bias_ih/bias_hh/weight_hr."""
    gi = x @ p["weight_ih"].T + p.get("bias_ih", 0.0)
    gh = h @ p["weight_hh"].T + p.get("bias_hh", 0.0)
    if mode in ("RNN_TANH", "RNN_RELU"):
        pre = gi + gh
        return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0.0)), None
    if mode == "GRU":
        hs = h.shape[1]
        r = _sigmoid(gi[:, :hs] + gh[:, :hs])
        z = _sigmoid(gi[:, hs:2 * hs] + gh[:, hs:2 * hs])
        n = np.tanh(gi[:, 2 * hs:] + r * gh[:, 2 * hs:])
        return (1 - z) * n + z * h, None
    hs = c.shape[1]
    g = gi + gh
    i, f, gg, o = (g[:, k * hs:(k + 1) * hs] for k in range(4))
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
    h = _sigmoid(o) * np.tanh(c)
    if "weight_hr" in p:
        h = h @ p["weight_hr"].T
    return h, c


def _np_params(module, layer, reverse):
    suffix = f"_l{layer}" + ("_reverse" if reverse else "")
    out = {}
    for stem in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"):
        if hasattr(module, stem + suffix) and getattr(module, stem + suffix) is not None:
            out[stem] = _np(getattr(module, stem + suffix))
    return out


def _np_rnn(module, x, h0=None, c0=None):
    """x: (T, B, F) time-major. Returns output (T, B, D*H_out), h_n, c_n (None unless LSTM)."""
    mode = module.mode
    dirs = 2 if module.bidirectional else 1
    T, B = x.shape[:2]
    out_size = module.proj_size or module.hidden_size
    L = module.num_layers
    h0 = np.zeros((L * dirs, B, out_size)) if h0 is None else h0
    c0 = np.zeros((L * dirs, B, module.hidden_size)) if c0 is None else c0
    hn, cn = [], []
    inp = x
    for layer in range(L):
        outs = []
        for d in range(dirs):
            p = _np_params(module, layer, d == 1)
            h, c = h0[layer * dirs + d], c0[layer * dirs + d]
            seq = np.zeros((T, B, out_size))
            for t in (range(T - 1, -1, -1) if d else range(T)):
                h, c = _np_step(mode, inp[t], h, c, p)
                seq[t] = h
            outs.append(seq)
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hn), (np.stack(cn) if mode == "LSTM" else None)


def _make(mode, *args, **kwargs):
    kwargs.setdefault("dtype", F64)
    if mode in ("RNN_TANH", "RNN_RELU"):
        return RNN(*args, nonlinearity="tanh" if mode == "RNN_TANH" else "relu", **kwargs)
    return {"LSTM": LSTM, "GRU": GRU}[mode](*args, **kwargs)


MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]


# ---- layers against the reference ---------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("num_layers,bidirectional,batch_first,bias,given", [
    (1, False, False, True, False),
    (2, True, False, True, True),
    (3, False, True, False, True),
    (2, True, True, True, False),
])
def test_layer_matches_numpy(mode, num_layers, bidirectional, batch_first, bias, given):
    m = _make(mode, 3, 4, num_layers=num_layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional)
    T, B, dirs = 5, 2, 2 if bidirectional else 1
    x = RNG.normal(size=(T, B, 3))
    h0 = RNG.normal(size=(num_layers * dirs, B, 4)) if given else None
    c0 = RNG.normal(size=(num_layers * dirs, B, 4)) if given else None
    xin = _t(np.swapaxes(x, 0, 1)) if batch_first else _t(x)
    if not given:
        result = m(xin)
    elif mode == "LSTM":
        result = m(xin, (_t(h0), _t(c0)))
    else:
        result = m(xin, _t(h0))
    want_out, want_h, want_c = _np_rnn(m, x, h0, c0)
    out = _np(result[0])
    if batch_first:
        out = np.swapaxes(out, 0, 1)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(_np(result[1][0]), want_h, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(result[1][1]), want_c, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(_np(result[1]), want_h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_proj_size(bidirectional):
    m = LSTM(3, 6, num_layers=2, proj_size=2, bidirectional=bidirectional, dtype=F64)
    dirs = 2 if bidirectional else 1
    assert tuple(m.weight_hh_l0.shape) == (24, 2)
    assert tuple(m.weight_ih_l1.shape) == (24, 2 * dirs)
    assert tuple(m.weight_hr_l1.shape) == (2, 6)
    x = RNG.normal(size=(4, 3, 3))
    h0, c0 = RNG.normal(size=(2 * dirs, 3, 2)), RNG.normal(size=(2 * dirs, 3, 6))
    out, (h, c) = m(_t(x), (_t(h0), _t(c0)))
    want_out, want_h, want_c = _np_rnn(m, x, h0, c0)
    assert tuple(out.shape) == (4, 3, 2 * dirs) and tuple(h.shape) == (2 * dirs, 3, 2)
    assert tuple(c.shape) == (2 * dirs, 3, 6)
    np.testing.assert_allclose(_np(out), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(h), want_h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(c), want_c, rtol=1e-10, atol=1e-12)
    out2, _ = m(_t(x))
    np.testing.assert_allclose(_np(out2), _np_rnn(m, x)[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_unbatched_and_noncontiguous(mode):
    m = _make(mode, 3, 4, num_layers=2, bidirectional=True)
    x = RNG.normal(size=(5, 3))
    h0, c0 = RNG.normal(size=(4, 4)), RNG.normal(size=(4, 4))
    want_out, want_h, want_c = _np_rnn(m, x[:, None], h0[:, None], c0[:, None])
    if mode == "LSTM":
        out, (h, c) = m(_t(x), (_t(h0), _t(c0)))
        np.testing.assert_allclose(_np(c), want_c[:, 0], rtol=1e-10, atol=1e-12)
    else:
        out, h = m(_t(x), _t(h0))
    assert tuple(out.shape) == (5, 8) and tuple(h.shape) == (4, 4)
    np.testing.assert_allclose(_np(out), want_out[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(h), want_h[:, 0], rtol=1e-10, atol=1e-12)
    # batch_first unbatched input is also (L, H_in); a transposed (non-contiguous) batch matches.
    m.batch_first = True
    np.testing.assert_allclose(_np(m(_t(x))[0]), _np_rnn(m, x[:, None])[0][:, 0], rtol=1e-10, atol=1e-12)
    xb = RNG.normal(size=(2, 5, 3))  # (B, T, F)
    nc = _t(np.ascontiguousarray(np.swapaxes(xb, 0, 1))).transpose(0, 1)
    assert not nc.is_contiguous()
    np.testing.assert_allclose(_np(m(nc)[0]), np.swapaxes(_np_rnn(m, np.swapaxes(xb, 0, 1))[0], 0, 1),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_zero_size_batch(mode):
    m = _make(mode, 3, 4, num_layers=2, bidirectional=True)
    out, hidden = m(_t(np.zeros((5, 0, 3))))
    assert tuple(out.shape) == (5, 0, 8)
    h = hidden[0] if mode == "LSTM" else hidden
    assert tuple(h.shape) == (4, 0, 4)


def test_default_dtype_and_float32():
    m = GRU(3, 4)
    assert m.weight_ih_l0.dtype == ember.float32
    out, h = m(ember.randn(2, 3, 3))
    assert out.dtype == ember.float32 and tuple(h.shape) == (1, 3, 4)
    m.double()
    assert all(p.dtype == F64 for p in m.all_weights[0]) and m._flat_weights[0].dtype == F64
    x = RNG.normal(size=(2, 3, 3))
    np.testing.assert_allclose(_np(m(_t(x))[0]), _np_rnn(m, x)[0], rtol=1e-10, atol=1e-12)


# ---- gradients ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,kwargs", [
    ("RNN_TANH", {"num_layers": 2, "bidirectional": True}),
    ("RNN_RELU", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 2}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"bias": False, "batch_first": True}),
])
def test_gradcheck_layers(mode, kwargs):
    m = _make(mode, 2, 3, dtype=ember.float32, **kwargs).double()
    names = list(m._flat_weights_names)
    dirs = 2 if m.bidirectional else 1
    hdim = m.proj_size or 3
    x = _t(RNG.normal(size=(3, 2, 2)), True)
    batch = 3 if m.batch_first else 2
    h0 = _t(RNG.normal(size=(m.num_layers * dirs, batch, hdim)), True)
    params = [_t(_np(getattr(m, n)), True) for n in names]
    if mode == "RNN_RELU":  # keep pre-activations away from the kink
        params = [_t(np.abs(_np(getattr(m, n))) + 0.1, True) for n in names]
        x = _t(np.abs(RNG.normal(size=(3, 2, 2))) + 0.1, True)
        h0 = _t(np.abs(RNG.normal(size=(1, 2, 3))) + 0.1, True)

    def f(x, h0, *ps):
        state = dict(zip(names, ps, strict=True))
        if mode == "LSTM":
            c0 = ember.zeros(m.num_layers * dirs, h0.shape[1], 3, dtype=F64) + 0.5
            out, (h, c) = functional_call(m, state, (x, (h0, c0)))
            return out, h, c
        out, h = functional_call(m, state, (x, h0))
        return out, h

    assert gradcheck(f, (x, h0, *params))


def test_gradcheck_packed():
    m = LSTM(2, 3, bidirectional=True, dtype=F64)
    names = list(m._flat_weights_names)
    seqs = [_t(RNG.normal(size=(n, 2)), True) for n in (2, 3, 1)]
    params = [_t(_np(getattr(m, n)), True) for n in names]

    def f(a, b, c, *ps):
        out, (h, cc) = functional_call(m, dict(zip(names, ps, strict=True)), (pack_sequence([a, b, c], enforce_sorted=False),))
        return pad_packed_sequence(out)[0], h, cc

    assert gradcheck(f, (*seqs, *params))


def test_backward_populates_parameter_grads():
    m = GRU(3, 4, num_layers=2, bidirectional=True, dtype=F64)
    out, h = m(_t(RNG.normal(size=(4, 2, 3))))
    (out.sum() + h.sum()).backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and tuple(p.grad.shape) == tuple(p.shape), name


# ---- packed sequences through the layers ----------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_packed_equals_each_sequence_alone(mode):
    m = _make(mode, 3, 4, num_layers=2, bidirectional=True)
    lengths = [2, 5, 1, 4]
    seqs = [RNG.normal(size=(n, 3)) for n in lengths]
    h0, c0 = RNG.normal(size=(4, 4, 4)), RNG.normal(size=(4, 4, 4))
    packed = pack_sequence([_t(s) for s in seqs], enforce_sorted=False)
    if mode == "LSTM":
        out, (h, c) = m(packed, (_t(h0), _t(c0)))
    else:
        out, h = m(packed, _t(h0))
    assert isinstance(out, PackedSequence)
    assert out.batch_sizes.tolist() == packed.batch_sizes.tolist()
    padded, lens = pad_packed_sequence(out)
    assert lens.tolist() == lengths
    for b, s in enumerate(seqs):
        want_out, want_h, want_c = _np_rnn(m, s[:, None], h0[:, b:b + 1], c0[:, b:b + 1])
        np.testing.assert_allclose(_np(padded)[:lengths[b], b], want_out[:, 0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(padded)[lengths[b]:, b], 0.0)
        np.testing.assert_allclose(_np(h)[:, b], want_h[:, 0], rtol=1e-10, atol=1e-12)
        if mode == "LSTM":
            np.testing.assert_allclose(_np(c)[:, b], want_c[:, 0], rtol=1e-10, atol=1e-12)


def test_packed_sorted_without_state_and_proj():
    m = LSTM(3, 5, proj_size=2, batch_first=True, dtype=F64)
    seqs = [RNG.normal(size=(n, 3)) for n in (4, 4, 2)]
    padded = np.zeros((3, 4, 3))
    for b, s in enumerate(seqs):
        padded[b, :len(s)] = s
    packed = pack_padded_sequence(_t(padded), ember.tensor([4, 4, 2]), batch_first=True)
    out, (h, c) = m(packed)
    assert out.sorted_indices is None and tuple(h.shape) == (1, 3, 2)
    res, _ = pad_packed_sequence(out, batch_first=True, total_length=5)
    assert tuple(res.shape) == (3, 5, 2)
    for b, s in enumerate(seqs):
        want_out, want_h, want_c = _np_rnn(m, s[:, None])
        np.testing.assert_allclose(_np(res)[b, :len(s)], want_out[:, 0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(h)[:, b], want_h[:, 0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(c)[:, b], want_c[:, 0], rtol=1e-10, atol=1e-12)


# ---- cells -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_numpy(kind, bias):
    if kind.startswith("RNN"):
        cell = RNNCell(3, 4, bias=bias, nonlinearity="tanh" if kind == "RNN_TANH" else "relu", dtype=F64)
    else:
        cell = {"LSTM": LSTMCell, "GRU": GRUCell}[kind](3, 4, bias=bias, dtype=F64)
    p = {k: _np(v) for k, v in cell.named_parameters()}
    x, h, c = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 4)), RNG.normal(size=(2, 4))
    want_h, want_c = _np_step(kind, x, h, c, p)
    zero_h, zero_c = _np_step(kind, x, np.zeros((2, 4)), np.zeros((2, 4)), p)
    if kind == "LSTM":
        got_h, got_c = cell(_t(x), (_t(h), _t(c)))
        np.testing.assert_allclose(_np(got_c), want_c, rtol=1e-10, atol=1e-12)
        d_h, d_c = cell(_t(x))
        np.testing.assert_allclose(_np(d_c), zero_c, rtol=1e-10, atol=1e-12)
        u_h, u_c = cell(_t(x[0]), (_t(h[0]), _t(c[0])))
        assert tuple(u_h.shape) == (4,) and tuple(u_c.shape) == (4,)
        np.testing.assert_allclose(_np(u_c), want_c[0], rtol=1e-10, atol=1e-12)
    else:
        got_h = cell(_t(x), _t(h))
        d_h = cell(_t(x))
        u_h = cell(_t(x[0]), _t(h[0]))
        assert tuple(u_h.shape) == (4,)
    np.testing.assert_allclose(_np(got_h), want_h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(d_h), zero_h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(u_h), want_h[0], rtol=1e-10, atol=1e-12)
    empty = cell(_t(np.zeros((0, 3))))
    assert tuple((empty[0] if kind == "LSTM" else empty).shape) == (0, 4)


@pytest.mark.parametrize("cls", [RNNCell, LSTMCell, GRUCell])
def test_gradcheck_cells(cls):
    cell = cls(2, 3).double()
    names = [n for n, _ in cell.named_parameters()]
    params = [_t(_np(getattr(cell, n)), True) for n in names]
    x, h = _t(RNG.normal(size=(2, 2)), True), _t(RNG.normal(size=(2, 3)), True)
    c = _t(RNG.normal(size=(2, 3)), True)

    def f(x, h, c, *ps):
        state = dict(zip(names, ps, strict=True))
        if cls is LSTMCell:
            return functional_call(cell, state, (x, (h, c)))
        return functional_call(cell, state, (x, h)) + c.sum() * 0.0

    assert gradcheck(f, (x, h, c, *params))


# ---- packing helpers ----------------------------------------------------------------------------------

def test_pack_pad_round_trips():
    seqs = [RNG.normal(size=(n, 2)) for n in (3, 1, 4)]
    ts = [_t(s) for s in seqs]
    padded = pad_sequence(ts)
    assert tuple(padded.shape) == (4, 3, 2)
    for b, s in enumerate(seqs):
        np.testing.assert_array_equal(_np(padded)[:len(s), b], s)
        np.testing.assert_array_equal(_np(padded)[len(s):, b], 0.0)
    bf = pad_sequence(ts, batch_first=True, padding_value=-1.0)
    assert tuple(bf.shape) == (3, 4, 2) and float(_np(bf)[1, 1:].max()) == -1.0
    left = _np(pad_sequence(ts, batch_first=True, padding_side="left"))
    for b, s in enumerate(seqs):
        np.testing.assert_array_equal(left[b, 4 - len(s):], s)
        np.testing.assert_array_equal(left[b, :4 - len(s)], 0.0)

    packed = pack_padded_sequence(padded, [3, 1, 4], enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 2, 1] and packed.batch_sizes.dtype == ember.int64
    assert packed.sorted_indices.tolist() == [2, 0, 1] and packed.unsorted_indices.tolist() == [1, 2, 0]
    np.testing.assert_array_equal(_np(packed.data)[:3], np.stack([seqs[2][0], seqs[0][0], seqs[1][0]]))
    back, lengths = pad_packed_sequence(packed)
    assert lengths.tolist() == [3, 1, 4] and lengths.dtype == ember.int64
    np.testing.assert_array_equal(_np(back), _np(padded))
    back_bf, _ = pad_packed_sequence(packed, batch_first=True, padding_value=7.0, total_length=6)
    assert tuple(back_bf.shape) == (3, 6, 2)
    np.testing.assert_array_equal(_np(back_bf)[1, 1:], 7.0)
    np.testing.assert_array_equal(_np(back_bf)[2, :4], seqs[2])

    for got, s in zip(unpack_sequence(pack_sequence(ts, enforce_sorted=False)), seqs, strict=True):
        np.testing.assert_array_equal(_np(got), s)
    for got, s in zip(unpad_sequence(padded, ember.tensor([3, 1, 4])), seqs, strict=True):
        np.testing.assert_array_equal(_np(got), s)
    for got, s in zip(unpad_sequence(bf, [3, 1, 4], batch_first=True), seqs, strict=True):
        np.testing.assert_array_equal(_np(got), s)

    sorted_pack = pack_sequence([ts[2], ts[0], ts[1]])
    assert sorted_pack.sorted_indices is None and sorted_pack.unsorted_indices is None
    bf_pack = pack_padded_sequence(bf, ember.tensor([3, 1, 4]), batch_first=True, enforce_sorted=False)
    np.testing.assert_array_equal(_np(bf_pack.data), _np(packed.data))
    # non-contiguous sequences pad like contiguous ones; trailing feature dims are carried along
    nc = _t(np.ascontiguousarray(seqs[2].T)).t()
    assert not nc.is_contiguous()
    np.testing.assert_array_equal(_np(pad_sequence([nc, ts[0]]))[:, 0], seqs[2])
    multi = pack_sequence([_t(RNG.normal(size=(n, 2, 3))) for n in (2, 1)])
    assert tuple(multi.data.shape) == (3, 2, 3)


def test_packed_sequence_class_and_invert_permutation():
    p = pack_sequence([_t(np.ones((2, 1))), _t(np.ones((1, 1)))])
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    data, batch_sizes, *_ = p
    assert batch_sizes.tolist() == [2, 1]
    assert p.float().data.dtype == ember.float32 and p.to(F64) is p
    q = PackedSequence(p.data, p.batch_sizes, ember.tensor([1, 0]))
    assert q.unsorted_indices.tolist() == [1, 0]
    assert PackedSequence((p.data, p.batch_sizes)).batch_sizes.tolist() == [2, 1]
    assert invert_permutation(None) is None
    assert invert_permutation(ember.tensor([2, 0, 3, 1])).tolist() == [1, 3, 0, 2]


def test_pack_gradients():
    a, b = _t(RNG.normal(size=(3, 2)), True), _t(RNG.normal(size=(2, 2)), True)
    assert gradcheck(lambda a, b: pad_packed_sequence(pack_sequence([b, a], enforce_sorted=False), True, 0.5)[0],
                     (a, b))
    assert gradcheck(lambda a, b: pad_sequence([a, b], padding_side="left"), (a, b))


def test_pack_errors():
    x = _t(RNG.normal(size=(3, 2, 1)))
    with pytest.raises(RuntimeError, match="sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [1, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [3, 0])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [0, 3], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 3 "
                                           r"\(batch_size=2\)"):
        pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(RuntimeError, match="Cannot pack empty tensors"):
        pack_padded_sequence(_t(np.zeros((0, 2, 1))), [1, 1])
    packed = pack_padded_sequence(x, [3, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest sequence "
                                         "in input, but got total_length=2 and max sequence length being 3"):
        pad_packed_sequence(packed, total_length=2)
    with pytest.raises(ValueError, match="Expected padding_side to be one of left or right, but got middle"):
        pad_sequence([x], padding_side="middle")
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pad_sequence([])


# ---- module surface: state dict, repr, dropout, errors ---------------------------------------------------

def test_state_dict_keys_and_weights_lists():
    m = LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    keys = []
    for layer in range(2):
        for sfx in ("", "_reverse"):
            keys += [f"{s}_l{layer}{sfx}" for s in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
    assert list(m.state_dict().keys()) == keys
    assert m._flat_weights_names == keys
    assert [tuple(w.shape) for w in m.all_weights[2]] == [(80, 10), (80, 5), (80,), (80,), (5, 20)]
    assert len(m.all_weights) == 4 and len(m._flat_weights) == 20
    g = GRU(3, 4, bias=False)
    assert list(g.state_dict().keys()) == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (12, 3)
    assert list(LSTMCell(3, 4).state_dict().keys()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    assert tuple(GRUCell(3, 4).weight_hh.shape) == (12, 4)
    assert list(RNNCell(3, 4, bias=False).state_dict().keys()) == ["weight_ih", "weight_hh"]
    other = LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    other.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(_np(other.weight_hr_l1_reverse), _np(m.weight_hr_l1_reverse))


def test_reset_parameters_range():
    m = GRU(5, 16, num_layers=2)
    for p in m.parameters():
        v = _np(p)
        assert np.abs(v).max() <= 0.25 and np.abs(v).max() > 0.15
    cell = LSTMCell(5, 100)
    assert np.abs(_np(cell.weight_ih)).max() <= 0.1


def test_repr():
    assert repr(LSTM(10, 20, num_layers=2, batch_first=True, bidirectional=True)) == \
        "LSTM(10, 20, num_layers=2, batch_first=True, bidirectional=True)"
    assert repr(LSTM(10, 20, proj_size=5, bias=False, dropout=0.5, num_layers=3)) == \
        "LSTM(10, 20, proj_size=5, num_layers=3, bias=False, dropout=0.5)"
    assert repr(RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"
    assert repr(GRU(3, 4)) == "GRU(3, 4)"
    assert repr(RNNCell(3, 4, bias=False, nonlinearity="relu")) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert repr(LSTMCell(3, 4)) == "LSTMCell(3, 4)"
    assert repr(GRUCell(3, 4, bias=False)) == "GRUCell(3, 4, bias=False)"


def test_dropout_between_layers_only_in_training():
    m = RNN(3, 4, num_layers=2, dropout=1.0, dtype=F64)
    x = RNG.normal(size=(3, 2, 3))
    # dropout=1 zeroes layer 0's output, so layer 1 sees zeros; the last layer's output is not dropped.
    out, h = m(_t(x))
    p1 = _np_params(m, 1, False)
    hh = np.zeros((2, 4))
    for t in range(3):
        hh, _ = _np_step("RNN_TANH", np.zeros((2, 4)), hh, None, p1)
        np.testing.assert_allclose(_np(out)[t], hh, rtol=1e-10, atol=1e-12)
    assert np.abs(_np(out)).min() > 0
    m.eval()
    np.testing.assert_allclose(_np(m(_t(x))[0]), _np_rnn(m, x)[0], rtol=1e-10, atol=1e-12)
    m.train()
    m.dropout = 0.5
    a, b = _np(m(_t(x))[0]), _np(m(_t(x))[0])
    assert not np.allclose(a, b)  # random masks differ between calls
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got dropout=0.5 "
                                         "and num_layers=1"):
        GRU(3, 4, dropout=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GRU(3, 4, num_layers=2, dropout=0.5)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"dropout should be a number in range \[0, 1\]"):
        LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match=r"dropout should be a number in range \[0, 1\]"):
        LSTM(3, 4, dropout=True)
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        GRU(3, 4.0)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        GRU(3, 0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        RNN(3, 4, num_layers=0)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        LSTM(3, 4, proj_size=-1)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        RNN(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."):
        RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="Unrecognized RNN mode: CONV"):
        RNNBase("CONV", 3, 4)
    base = RNNBase("GRU", 3, 4)
    assert list(base.state_dict().keys()) == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]


def test_forward_errors():
    m = LSTM(3, 4, num_layers=2, dtype=F64)
    x = _t(RNG.normal(size=(5, 2, 3)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 2, 4\), got \[1, 2, 4\]"):
        m(x, (_t(np.zeros((1, 2, 4))), _t(np.zeros((2, 2, 4)))))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(2, 2, 4\), got \[2, 3, 4\]"):
        m(x, (_t(np.zeros((2, 2, 4))), _t(np.zeros((2, 3, 4)))))
    with pytest.raises(RuntimeError, match=r"For batched 3-D input, hx and cx should also be 3-D but got "
                                           r"\(2-D, 3-D\) tensors"):
        m(x, (_t(np.zeros((2, 4))), _t(np.zeros((2, 2, 4)))))
    with pytest.raises(RuntimeError, match=r"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           r"\(3-D, 3-D\) tensors"):
        m(x[:, 0], (_t(np.zeros((2, 1, 4))), _t(np.zeros((2, 1, 4)))))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        m(_t(np.zeros((1, 1, 1, 3))))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        m(_t(np.zeros((5, 2, 2))))
    with pytest.raises(ValueError, match="input must have the type"):
        m(ember.zeros(5, 2, 3))
    g = GRU(3, 4, bidirectional=True, dtype=F64)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 2, 4\), got \[1, 2, 4\]"):
        g(x, _t(np.zeros((1, 2, 4))))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"):
        g(x, _t(np.zeros((2, 4))))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"):
        g(x[:, 0], _t(np.zeros((2, 1, 4))))
    with pytest.raises(ValueError, match="GRU: Expected input to be 2D or 3D, got 1D instead"):
        g(x[0, 0])
    with pytest.raises(ValueError, match="RNN: Expected input to be 2D or 3D, got 1D tensor instead"):
        RNN(3, 4, dtype=F64)(x[0, 0])
    packed = pack_sequence([x[:, 0], x[:3, 1]])
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 2, 4\), got \[2, 3, 4\]"):
        g(packed, _t(np.zeros((2, 3, 4))))


def test_cell_errors():
    cell = GRUCell(3, 4, dtype=F64)
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        cell(_t(np.zeros((1, 2, 3))))
    with pytest.raises(ValueError, match="GRUCell: Expected hidden to be 1D or 2D, got 3D instead"):
        cell(_t(np.zeros((2, 3))), _t(np.zeros((1, 2, 4))))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2 expected 3"):
        cell(_t(np.zeros((2, 2))))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        cell(_t(np.zeros((2, 3))), _t(np.zeros((3, 4))))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 5, expected 4"):
        cell(_t(np.zeros((2, 3))), _t(np.zeros((2, 5))))
    lstm = LSTMCell(3, 4, dtype=F64)
    with pytest.raises(ValueError, match=r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D instead"):
        lstm(_t(np.zeros((2, 3))), (_t(np.zeros((2, 4))), _t(np.zeros((1, 2, 4)))))
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 5, expected 4"):
        lstm(_t(np.zeros((2, 3))), (_t(np.zeros((2, 4))), _t(np.zeros((2, 5)))))
    with pytest.raises(ValueError, match="RNNCell: Expected input to be 1D or 2D, got 0D instead"):
        RNNCell(3, 4)(ember.tensor(1.0))
    bad = RNNCell(3, 4, nonlinearity="gelu", dtype=F64)
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
        bad(_t(np.zeros((2, 3))))
