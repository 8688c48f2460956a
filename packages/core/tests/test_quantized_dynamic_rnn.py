"""The dynamically quantized recurrent modules (ember.ao.nn.quantized.dynamic LSTM, GRU, LSTMCell,
GRUCell, RNNCell) against a float64 NumPy re-implementation of PyTorch's CPU arithmetic: the
dequantized weights, and every projection's input quantized as FBGEMM's dynamic linear does
(ChooseQuantizationParams over [min(x, 0), max(x, 0)] onto 0..127, reduce_range). A layer projects
all of its input rows at once, then each time step projects the hidden states of the sequences
still running; the reference forms those sets per step from the lengths, independently of the
module's packed-batch slicing. Also: shapes of every configuration, quantize_dynamic, errors,
state dicts through ember.save / ember.load. PyTorch's own numbers:
tests/test_quantized_rnn_torch_parity.py."""

import io
import warnings

import numpy as np
import pytest

import ember
import ember.ao.nn.quantized.dynamic as nnqd
import ember.ao.quantization as tq
import ember.nn as nn
from ember.nn.utils.rnn import pack_padded_sequence, pack_sequence

# ---- the NumPy reference ----


def choose_qparams(lo, hi, qmin=0, qmax=127):
    """FBGEMM's ChooseQuantizationParams (no symmetric or power-of-two options)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = (hi - lo) / (qmax - qmin)
    if np.float32(scale) == 0 or np.isinf(1 / np.float32(scale)):
        scale = 0.1
    scale = float(np.float32(scale))
    zp_min, zp_max = qmin - lo / scale, qmax - hi / scale
    err_min, err_max = abs(qmin) - abs(lo / scale), abs(qmax) - abs(hi / scale)
    zero_point = zp_min if err_min < err_max else zp_max
    return scale, int(np.clip(np.rint(zero_point), qmin, qmax))


def dyn_linear(x, w, b, dtype):
    """One projection: float16 weights in float (no input quantization); qint8 weights on the input
    quantized over its own range (x is rounded to float32 first, as the module sees it)."""
    x = np.asarray(x, np.float32)
    bias = 0.0 if b is None else b
    if dtype == "float16":
        return x.astype(np.float64) @ w.T + bias
    scale, zp = choose_qparams(x.min(initial=0), x.max(initial=0))
    xq = np.clip(np.rint((np.float32(zp) + x * (np.float32(1) / np.float32(scale))).astype(np.float64)), 0, 127)
    return ((xq - zp) * scale) @ w.T + bias


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def cell_ref(mode, ig, hg, h, c):
    """One step from the input and hidden projections (biases included in each)."""
    if mode == "LSTM":
        i, f, g, o = np.split(ig + hg, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        return sigmoid(o) * np.tanh(c), c
    if mode == "GRU":
        ir, iz, in_ = np.split(ig, 3, axis=1)
        hr, hz, hn = np.split(hg, 3, axis=1)
        r, z = sigmoid(hr + ir), sigmoid(hz + iz)
        n = np.tanh(in_ + hn * r)
        return (1 - z) * n + z * h, None
    pre = ig + hg
    return (np.maximum(pre, 0) if mode == "RNN_RELU" else np.tanh(pre)), None


def rnn_ref(mode, seqs, h0, c0, params, layers, directions, dtype):
    """seqs: one [length, features] array per sequence; h0, c0: [layers * directions, batch, hidden];
    params[k] = (w_ih, b_ih, w_hh, b_hh) as float64. Returns (outputs per sequence, h_n, c_n)."""
    lengths = [len(s) for s in seqs]
    inputs = [np.asarray(s, np.float64) for s in seqs]
    h_n, c_n = [], []
    for layer in range(layers):
        outs = []
        for direction in range(directions):
            k = layer * directions + direction
            w_ih, b_ih, w_hh, b_hh = params[k]
            proj = dyn_linear(np.concatenate(inputs), w_ih, b_ih, dtype)  # every row of the layer's input at once
            proj = np.split(proj, np.cumsum(lengths)[:-1])
            h, c = h0[k].astype(np.float64).copy(), c0[k].astype(np.float64).copy()
            out = [np.zeros((n, h.shape[1])) for n in lengths]
            times = range(max(lengths))
            for t in (reversed(times) if direction == 1 else times):
                running = [b for b, n in enumerate(lengths) if n > t]
                ig = np.stack([proj[b][t] for b in running])
                hg = dyn_linear(h[running], w_hh, b_hh, dtype)  # the running sequences' states together
                h_new, c_new = cell_ref(mode, ig, hg, h[running], c[running])
                h[running] = h_new
                if c_new is not None:
                    c[running] = c_new
                for j, b in enumerate(running):
                    out[b][t] = h_new[j]
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        inputs = [np.concatenate([o[b] for o in outs], axis=1) for b in range(len(seqs))]
    return inputs, np.stack(h_n), np.stack(c_n)


# ---- helpers ----

RNG = np.random.default_rng(0)


def arr(*shape, scale=1.0):
    return ember.tensor(RNG.normal(size=shape).astype(np.float32) * scale)


def fill(model, scale=0.5):
    with ember.no_grad():
        for _, p in sorted(model.state_dict().items()):
            p.copy_(arr(*p.shape, scale=scale))
    return model


def as64(w):
    return (w.dequantize() if w.dtype == ember.qint8 else w.float()).numpy().astype(np.float64)


def layer_params(q):
    params = []
    for packed in q._all_weight_values:
        w_ih, b_ih, w_hh, b_hh = packed.param.state()
        params.append((as64(w_ih), None if b_ih is None else b_ih.numpy().astype(np.float64), as64(w_hh),
                       None if b_hh is None else b_hh.numpy().astype(np.float64)))
    return params


def quantized(float_mod, dtype="qint8"):
    float_mod.qconfig = tq.default_dynamic_qconfig if dtype == "qint8" else tq.float16_dynamic_qconfig
    kind = nnqd.RNNBase if isinstance(float_mod, nn.RNNBase) else nnqd.RNNCellBase
    return kind.from_float(float_mod)


def npy(t):
    return t.detach().numpy()


TOL = {"rtol": 1e-5, "atol": 2e-5}
IN, H = 4, 3

# ---- layers ----


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_layers_against_numpy(mode, dtype, layers, bidirectional):
    lstm = mode == "LSTM"
    for batch_first in (False, True):
        fm = fill(getattr(nn, mode)(IN, H, layers, batch_first=batch_first, bidirectional=bidirectional))
        q = quantized(fm, dtype)
        assert type(q) is getattr(nnqd, mode) and q.dtype == getattr(ember, dtype)
        d = 2 if bidirectional else 1
        T, B = 5, 3
        x = arr(T, B, IN, scale=2.0)
        params = layer_params(q)
        for given in (False, True):
            h0 = arr(layers * d, B, H) if given else ember.zeros(layers * d, B, H)
            c0 = arr(layers * d, B, H) if given else ember.zeros(layers * d, B, H)
            hx = ((h0, c0) if lstm else h0) if given else None
            xin = x.transpose(0, 1).contiguous() if batch_first else x
            out, hidden = q(xin, hx) if given else q(xin)
            h_n, c_n = hidden if lstm else (hidden, None)
            assert out.shape == ((B, T, d * H) if batch_first else (T, B, d * H))
            assert h_n.shape == (layers * d, B, H) and (c_n is None or c_n.shape == h_n.shape)
            seqs = [x.numpy()[:, b] for b in range(B)]
            ref_out, ref_h, ref_c = rnn_ref(mode, seqs, h0.numpy(), c0.numpy(), params, layers, d, dtype)
            ref_out = np.stack(ref_out, axis=0 if batch_first else 1)
            np.testing.assert_allclose(npy(out), ref_out, **TOL)
            np.testing.assert_allclose(npy(h_n), ref_h, **TOL)
            if lstm:
                np.testing.assert_allclose(npy(c_n), ref_c, **TOL)
        # within the quantization error of the float module
        ref = fm(x.transpose(0, 1) if batch_first else x)[0]
        assert np.abs(npy(q(x.transpose(0, 1) if batch_first else x)[0]) - npy(ref)).max() < 0.05


def test_whole_sequence_sets_the_input_range():
    # a sequence whose one step is large: projecting step by step would quantize the other steps finer
    fm = fill(nn.LSTM(IN, H))
    q = quantized(fm)
    x = arr(6, 2, IN)
    x[3] *= 40
    params = layer_params(q)
    zeros = np.zeros((1, 2, H))
    ref_out, _, _ = rnn_ref("LSTM", [x.numpy()[:, b] for b in range(2)], zeros, zeros, params, 1, 1, "qint8")
    got = npy(q(x)[0])
    np.testing.assert_allclose(got, np.stack(ref_out, 1), **TOL)
    # the first step alone, projected over its own (smaller) range, differs from the sequence run
    alone = npy(q(x[:1])[0])[0]
    assert np.abs(alone - got[0]).max() > 1e-3


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_packed_sequences_against_numpy(mode, dtype):
    lstm = mode == "LSTM"
    fm = fill(getattr(nn, mode)(IN, H, 2, bidirectional=True))
    q = quantized(fm, dtype)
    lengths = [3, 6, 1, 5]
    x = arr(6, 4, IN, scale=2.0)
    h0, c0 = arr(4, 4, H), arr(4, 4, H)
    packed = pack_padded_sequence(x, ember.tensor(lengths), enforce_sorted=False)
    out, hidden = q(packed, (h0, c0) if lstm else h0)
    assert type(out).__name__ == "PackedSequence"
    np.testing.assert_array_equal(out.batch_sizes.numpy(), packed.batch_sizes.numpy())
    np.testing.assert_array_equal(out.unsorted_indices.numpy(), packed.unsorted_indices.numpy())
    seqs = [x.numpy()[:n, b] for b, n in enumerate(lengths)]
    ref_out, ref_h, ref_c = rnn_ref(mode, seqs, h0.numpy(), c0.numpy(), layer_params(q), 2, 2, dtype)
    padded, got_lengths = nn.utils.rnn.pad_packed_sequence(out)
    assert got_lengths.tolist() == lengths
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(npy(padded)[:n, b], ref_out[b], **TOL)
    h_n, c_n = hidden if lstm else (hidden, None)
    np.testing.assert_allclose(npy(h_n), ref_h, **TOL)
    if lstm:
        np.testing.assert_allclose(npy(c_n), ref_c, **TOL)


def test_packed_sequences_of_equal_lengths_are_the_padded_batch():
    # the same rows in the same order: bit for bit the padded run (unequal lengths differ from a
    # padded run also on the real steps: the padded batch's finished sequences stay in each step's
    # hidden-state range)
    for mode in ("LSTM", "GRU"):
        q = quantized(fill(getattr(nn, mode)(IN, H, 2, bidirectional=True)))
        x = arr(5, 3, IN)
        out, hidden = q(x)
        packed_out, packed_hidden = q(pack_sequence([x[:, b] for b in range(3)]))
        np.testing.assert_array_equal(npy(packed_out.data), npy(out).reshape(15, 2 * H))
        for a, b in zip(hidden if mode == "LSTM" else (hidden,), packed_hidden if mode == "LSTM" else (packed_hidden,),
                        strict=True):
            np.testing.assert_array_equal(npy(a), npy(b))


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_unbatched_input_is_a_batch_of_one(mode):
    lstm = mode == "LSTM"
    for batch_first in (False, True):
        q = quantized(fill(getattr(nn, mode)(IN, H, 2, bidirectional=True, batch_first=batch_first)))
        x = arr(5, IN)
        h0, c0 = arr(4, H), arr(4, H)
        out, hidden = q(x, (h0, c0) if lstm else h0)
        one = x.unsqueeze(0 if batch_first else 1)
        out1, hidden1 = q(one, (h0.unsqueeze(1), c0.unsqueeze(1)) if lstm else h0.unsqueeze(1))
        assert out.shape == (5, 2 * H)
        np.testing.assert_array_equal(npy(out), npy(out1.squeeze(0 if batch_first else 1)))
        for got, want in zip(hidden if lstm else (hidden,), hidden1 if lstm else (hidden1,), strict=True):
            assert got.shape == (4, H)
            np.testing.assert_array_equal(npy(got), npy(want.squeeze(1)))
        assert q(x)[0].shape == (5, 2 * H)


# ---- cells ----

CELLS = {"LSTMCell": ("LSTM", lambda: nn.LSTMCell(IN, H)), "GRUCell": ("GRU", lambda: nn.GRUCell(IN, H)),
         "RNNCell_tanh": ("RNN_TANH", lambda: nn.RNNCell(IN, H)),
         "RNNCell_relu": ("RNN_RELU", lambda: nn.RNNCell(IN, H, nonlinearity="relu"))}


@pytest.mark.parametrize("name", sorted(CELLS))
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_cells_against_numpy(name, dtype):
    mode, make = CELLS[name]
    fm = fill(make())
    q = quantized(fm, dtype)
    assert q._get_name() == "DynamicQuantized" + name.split("_")[0] and q.weight_dtype == getattr(ember, dtype)
    w = q._weight_bias()
    w_ih, w_hh = as64(w["weight"]["weight_ih"]), as64(w["weight"]["weight_hh"])
    b_ih, b_hh = (w["bias"][k].numpy().astype(np.float64) for k in ("bias_ih", "bias_hh"))
    lstm = mode == "LSTM"
    xs = arr(4, 3, IN, scale=2.0)
    h = c = None
    ref_h, ref_c = np.zeros((3, H)), np.zeros((3, H))
    for t in range(4):  # each call projects its own input: no sequence-wide range
        state = (h, c) if lstm and h is not None else h
        got = q(xs[t], state) if state is not None else q(xs[t])
        h, c = got if lstm else (got, None)
        ig, hg = dyn_linear(xs[t].numpy(), w_ih, b_ih, dtype), dyn_linear(ref_h, w_hh, b_hh, dtype)
        ref_h, ref_c = cell_ref(mode, ig, hg, ref_h, ref_c)
        assert h.shape == (3, H)
        np.testing.assert_allclose(npy(h), ref_h, **TOL)
        if lstm:
            np.testing.assert_allclose(npy(c), ref_c, **TOL)
    # unbatched input, with and without a state
    one = q(xs[0, 1]) if not lstm else q(xs[0, 1], (h[1], c[1]))
    batch = q(xs[0, 1:2]) if not lstm else q(xs[0, 1:2], (h[1:2], c[1:2]))
    for a, b in zip(one if lstm else (one,), batch if lstm else (batch,), strict=True):
        assert a.shape == (H,)
        np.testing.assert_array_equal(npy(a), npy(b[0]))
    # close to the float cell
    float_out = fm(xs[0])
    float_h = float_out[0] if lstm else float_out
    got = q(xs[0])
    assert np.abs(npy(got[0] if lstm else got) - npy(float_h)).max() < 0.05


# ---- from_float, quantize_dynamic ----


def test_each_weight_has_its_own_observer():
    fm = fill(nn.GRU(IN, H, 2, bidirectional=True))
    with ember.no_grad():
        fm.weight_hh_l1_reverse.mul_(10)  # one weight with a much wider range
    q = quantized(fm)
    weights = q.get_weight()
    assert sorted(weights) == sorted(n for n, _ in fm.named_parameters() if n.startswith("weight"))
    scales = set()
    for name, w in weights.items():
        observer = tq.default_dynamic_qconfig.weight()
        observer(getattr(fm, name))
        scale, zero_point = observer.calculate_qparams()
        assert w.dtype == ember.qint8 and w.qscheme() == ember.per_tensor_affine
        assert w.q_scale() == pytest.approx(float(scale)) and w.q_zero_point() == int(zero_point)
        np.testing.assert_array_equal(w.int_repr().numpy(), ember.quantize_per_tensor(
            getattr(fm, name).detach(), float(scale), int(zero_point), ember.qint8).int_repr().numpy())
        scales.add(w.q_scale())
    assert len(scales) > 1 and max(scales) > 5 * min(scales)
    biases = q.get_bias()
    np.testing.assert_array_equal(biases["bias_ih_l0"].numpy(), fm.bias_ih_l0.detach().numpy())
    # per-channel qconfig: a scale per output row
    fm.qconfig = tq.per_channel_dynamic_qconfig
    pc = nnqd.GRU.from_float(fm)
    assert pc.get_weight()["weight_ih_l0"].qscheme() == ember.per_channel_affine
    assert pc(arr(3, 2, IN))[0].shape == (3, 2, 2 * H)


def test_quantize_dynamic_maps_the_recurrent_modules():
    model = fill(nn.Sequential(nn.LSTM(IN, H), nn.GRU(IN, H), nn.LSTMCell(IN, H), nn.RNNCell(IN, H), nn.GRUCell(IN, H),
                               nn.Linear(IN, H)))
    names = ["DynamicQuantizedLSTM", "DynamicQuantizedGRU", "DynamicQuantizedLSTMCell", "DynamicQuantizedRNNCell",
             "DynamicQuantizedGRUCell", "DynamicQuantizedLinear"]
    for dtype in (None, ember.qint8, ember.float16):
        q = tq.quantize_dynamic(model) if dtype is None else tq.quantize_dynamic(model, dtype=dtype)
        assert [m._get_name() for m in q] == names
        assert q[0].dtype == (dtype or ember.qint8) and q[2].weight_dtype == (dtype or ember.qint8)
    assert type(model[0]) is nn.LSTM  # not in place
    # the tables' dtype leaves them float; a set or a dict picks modules
    assert [type(m) for m in tq.quantize_dynamic(model, dtype=ember.quint8)][:5] == [type(m) for m in model][:5]
    only = tq.quantize_dynamic(model, {nn.GRU, nn.GRUCell})
    assert [type(m).__name__ for m in only] == ["LSTM", "GRU", "LSTMCell", "RNNCell", "GRUCell", "Linear"]
    assert type(only[1]) is nnqd.GRU and type(only[4]) is nnqd.GRUCell and type(only[0]) is nn.LSTM
    by_name = tq.quantize_dynamic(model, {"0": tq.float16_dynamic_qconfig})
    assert type(by_name[0]) is nnqd.LSTM and by_name[0].dtype == ember.float16 and type(by_name[1]) is nn.GRU
    assert set(tq.get_default_dynamic_quant_module_mappings()) >= {nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell,
                                                                  nn.GRUCell, nn.Linear}
    assert repr(tq.quantize_dynamic(nn.Sequential(nn.LSTM(IN, H, 2, batch_first=True, bidirectional=True)))) == (
        "Sequential(\n  (0): DynamicQuantizedLSTM(4, 3, num_layers=2, batch_first=True, bidirectional=True)\n)")
    assert repr(only[4]) == "DynamicQuantizedGRUCell(4, 3)"
    assert repr(tq.quantize_dynamic(nn.Sequential(nn.RNNCell(IN, H, nonlinearity="relu")))[0]) == (
        "DynamicQuantizedRNNCell(4, 3, nonlinearity=relu)")


def test_modules_without_bias():
    for fm in (nn.LSTM(IN, H, bias=False), nn.GRU(IN, H, bias=False), nn.GRUCell(IN, H, bias=False)):
        fill(fm)
        q = quantized(fm)
        x = arr(5, 2, IN)
        float_out = fm(x) if not isinstance(fm, nn.GRUCell) else (fm(x[0]),)
        got = q(x) if not isinstance(fm, nn.GRUCell) else (q(x[0]),)
        assert np.abs(npy(got[0]) - npy(float_out[0])).max() < 0.05
    assert nnqd.LSTM(IN, H, bias=False)._weight_bias()["bias"]["bias_ih_l0"] is None


def test_constructors_make_working_modules():
    for q in (nnqd.LSTM(IN, H, 2), nnqd.GRU(IN, H, dtype=ember.float16), nnqd.LSTMCell(IN, H), nnqd.GRUCell(IN, H),
              nnqd.RNNCell(IN, H, dtype=ember.float16)):
        x = arr(3, 2, IN) if isinstance(q, nnqd.RNNBase) else arr(2, IN)
        out = q(x)
        first = out[0] if isinstance(out, tuple) else out
        assert np.isfinite(npy(first)).all()
    assert nnqd.LSTM(IN, H).training is False


def test_older_module_path_reexports():
    import ember.nn.quantized.dynamic as legacy

    for name in ("Linear", "LSTM", "GRU", "LSTMCell", "RNNCell", "GRUCell"):
        assert getattr(legacy, name) is getattr(nnqd, name) and name in legacy.__all__


# ---- errors ----


def test_errors():
    q = quantized(fill(nn.LSTM(IN, H, 2)))
    x = arr(5, 2, IN)
    with pytest.raises(RuntimeError, match="DynamicQuantizedLSTM: expected a float32 input, but got ember.float64"):
        q(x.double())
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size. Expected 4, got 5"):
        q(arr(5, 2, 5))
    with pytest.raises(ValueError, match="DynamicQuantizedLSTM: Expected input to be 2D or 3D, got 4D instead"):
        q(arr(1, 5, 2, IN))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 2, 3\), got \[2, 3, 3\]"):
        q(x, (arr(2, 3, H), arr(2, 2, H)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(2, 2, 3\), got \[1, 2, 3\]"):
        q(x, (arr(2, 2, H), arr(1, 2, H)))
    with pytest.raises(RuntimeError, match="expected a float32 hidden state, but got ember.float64"):
        q(x, (arr(2, 2, H).double(), arr(2, 2, H)))
    with pytest.raises(TypeError, match=r"hx must be a tuple \(h_0, c_0\)"):
        q(x, arr(2, 2, H))
    with pytest.raises(RuntimeError, match="for unbatched 2-D input, hx should also be 2-D but got 3-D, 3-D"):
        q(arr(5, IN), (arr(2, 1, H), arr(2, 1, H)))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        q(arr(0, 2, IN))
    g = quantized(fill(nn.GRU(IN, H)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 3\), got \[1, 2, 4\]"):
        g(x, arr(1, 2, 4))
    with pytest.raises(RuntimeError, match="DynamicQuantizedGRU: expected a float32 input, but got ember.float16"):
        g(x.half())
    cell = quantized(fill(nn.LSTMCell(IN, H)))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5, expected 4"):
        cell(arr(2, 5))
    with pytest.raises(RuntimeError, match=r"Input batch size 2 doesn't match hidden\[1\] batch size 3"):
        cell(arr(2, IN), (arr(2, H), arr(3, H)))
    with pytest.raises(RuntimeError, match=r"hidden\[0\] has inconsistent hidden_size: got 4, expected 3"):
        cell(arr(2, IN), (arr(2, 4), arr(2, H)))
    with pytest.raises(RuntimeError, match="DynamicQuantizedLSTMCell: expected a float32 input, but got ember.float64"):
        cell(arr(2, IN).double())
    with pytest.raises(TypeError, match=r"hx must be a tuple \(h, c\)"):
        cell(arr(2, IN), arr(2, H))
    with pytest.raises(ValueError, match="DynamicQuantizedGRUCell: Expected input to be 1D or 2D, got 3D instead"):
        quantized(fill(nn.GRUCell(IN, H)))(arr(1, 2, IN))
    with pytest.raises(RuntimeError, match="hidden should be 1-D, but got 2-D"):
        quantized(fill(nn.RNNCell(IN, H)))(arr(IN), arr(1, H))
    relu_cell = quantized(fill(nn.RNNCell(IN, H)))
    relu_cell.nonlinearity = "gelu"
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
        relu_cell(arr(2, IN))


def test_from_float_errors():
    lstm = fill(nn.LSTM(IN, H))
    with pytest.raises(AssertionError, match="Input float module must have qconfig defined"):
        nnqd.LSTM.from_float(lstm)
    lstm.qconfig = tq.QConfig(activation=tq.default_dynamic_quant_observer,
                              weight=tq.MinMaxObserver.with_args(dtype=ember.quint8))
    with pytest.raises(RuntimeError, match="Unsupported dtype for dynamic RNN quantization: ember.quint8"):
        nnqd.LSTM.from_float(lstm)
    cell = fill(nn.GRUCell(IN, H))
    cell.qconfig = lstm.qconfig
    with pytest.raises(RuntimeError, match="Unsupported dtype for dynamic RNN quantization: ember.quint8"):
        nnqd.GRUCell.from_float(cell)
    with pytest.raises(AssertionError, match="from_float only works for nn.LSTM and nn.GRU"):
        nnqd.LSTM.from_float(nn.RNN(IN, H))
    with pytest.raises(AssertionError, match="only works for nn.LSTMCell, nn.GRUCell and nn.RNNCell"):
        nnqd.LSTMCell.from_float(nn.Linear(IN, H))
    proj = nn.LSTM(IN, H, proj_size=2)
    proj.qconfig = tq.default_dynamic_qconfig
    with pytest.raises(RuntimeError, match="quantized LSTM with projections is not supported"):
        nnqd.LSTM.from_float(proj)
    # a qconfig of None falls back to default_dynamic_qconfig's weight observer
    lstm.qconfig = None
    assert nnqd.LSTM.from_float(lstm).dtype == ember.qint8
    with pytest.raises(RuntimeError, match="Unsupported dtype for dynamic RNN quantization: ember.float64"):
        nnqd.GRU(IN, H, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="Unsupported dtype for dynamic RNN quantization: ember.quint8"):
        nnqd.RNNCell(IN, H, dtype=ember.quint8)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nnqd.LSTM(IN, H, 2, dropout=1.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nnqd.GRU(IN, H, 1, dropout=0.2)
    assert any("non-zero dropout expects num_layers greater than 1" in str(w.message) for w in caught)


# ---- state dicts ----


def _roundtrip(obj):
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    buffer.seek(0)
    return ember.load(buffer)  # weights_only=True, the default


@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_state_dicts_round_trip(dtype):
    x = arr(5, 2, IN)
    for fm, fresh in ((nn.LSTM(IN, H, 2, bidirectional=True), lambda: nnqd.LSTM(IN, H, 2, bidirectional=True)),
                      (nn.GRU(IN, H), lambda: nnqd.GRU(IN, H))):
        q = quantized(fill(fm), dtype)
        sd = q.state_dict()
        assert sorted(sd) == [f"_all_weight_values.{k}.param" for k in range(len(q._all_weight_values))]
        other = fresh()  # qint8 and random until loaded
        other.load_state_dict(_roundtrip(sd))
        assert other.dtype == getattr(ember, dtype)
        for a, b in zip(q(x), other(x), strict=True):
            for ta, tb in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,), strict=True):
                np.testing.assert_array_equal(npy(ta), npy(tb))
    for fm, fresh in ((nn.LSTMCell(IN, H), nnqd.LSTMCell), (nn.RNNCell(IN, H), nnqd.RNNCell)):
        q = quantized(fill(fm), dtype)
        sd = q.state_dict()
        assert sorted(sd) == ["_packed_weight_hh", "_packed_weight_ih"]
        other = fresh(IN, H)
        other.load_state_dict(_roundtrip(sd))
        assert other.weight_dtype == getattr(ember, dtype)
        a, b = q(x[0]), other(x[0])
        a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
        np.testing.assert_array_equal(npy(a), npy(b))
    # a whole quantized model, and a checkpoint that lacks a layer's weights
    model = tq.quantize_dynamic(fill(nn.Sequential(nn.LSTM(IN, H), nn.GRUCell(IN, H))), dtype=getattr(ember, dtype))
    restored = tq.quantize_dynamic(fill(nn.Sequential(nn.LSTM(IN, H), nn.GRUCell(IN, H))))
    restored.load_state_dict(_roundtrip(model.state_dict()))
    np.testing.assert_array_equal(npy(restored[0](x)[0]), npy(model[0](x)[0]))
    np.testing.assert_array_equal(npy(restored[1](x[0])), npy(model[1](x[0])))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*0._all_weight_values.0.param"):
        restored.load_state_dict({"1._packed_weight_ih": model.state_dict()["1._packed_weight_ih"],
                                  "1._packed_weight_hh": model.state_dict()["1._packed_weight_hh"]})


def test_set_weight_bias_round_trips():
    q = quantized(fill(nn.LSTM(IN, H, 2)))
    other = nnqd.LSTM(IN, H, 2)
    other.set_weight_bias(q._weight_bias())
    x = arr(4, 2, IN)
    np.testing.assert_array_equal(npy(q(x)[0]), npy(other(x)[0]))
    cell = quantized(fill(nn.GRUCell(IN, H)), "float16")
    other_cell = nnqd.GRUCell(IN, H)
    other_cell.set_weight_bias(cell._weight_bias())
    assert other_cell.weight_dtype == ember.float16
    np.testing.assert_array_equal(npy(cell(x[0])), npy(other_cell(x[0])))
