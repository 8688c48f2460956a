"""Static (eager-mode) quantization of nn.LSTM against PyTorch's CPU build (x86): one script runs
with `T = torch` (in its own interpreter, named by EMBER_TORCH_PYTHON) and with `T = ember`, through
the public API only, on the same weights and data. The integers must be equal: quantized
sigmoid and tanh over every code of quint8 and qint8 inputs at ~190 scales and zero points (a table
of 256 codes and a 37-element prefix), their fixed output parameters, a transposed input;
stack with equal and different parameters; and the quantized LSTM that prepare (default custom
config) / calibrate / convert make of nn.LSTM in a QuantStub -> LSTM -> Linear -> DeQuantStub model
(one layer with the default and the fbgemm qconfig, two bidirectional batch_first layers): its
output, final h and c, the Linear after it, and the state-dict keys. The calibrated scales agree to
float32 rounding (the observers' arithmetic), the dequantized outputs accordingly. Without
EMBER_TORCH_PYTHON these tests are skipped; tests/test_quantized_static_lstm.py holds the float64
references. (Ember rounds the float64 function, PyTorch a float32 one: a value within float32
rounding of a half step could differ by one code; none of these does.)"""

import numpy as np

SCRIPT = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its quantized tensors
T = __import__(sys.argv[1])
nn = T.nn
tq = T.ao.quantization
rng = np.random.default_rng(0)


def arr(*shape, scale=1.0):
    return T.tensor(rng.normal(size=shape).astype(np.float32) * scale)


out = {}
# sigmoid / tanh: every code of an 8-bit input, at many scales and zero points
for dname, dtype, np_dtype, lo in (("quint8", T.quint8, np.uint8, 0), ("qint8", T.qint8, np.int8, -128)):
    codes = np.arange(lo, lo + 256).astype(np_dtype)
    scales = np.concatenate([rng.uniform(1e-3, 0.3, 120), rng.uniform(0.3, 4.0, 60), 2.0 ** -np.arange(9)])
    zps = rng.integers(lo, lo + 256, len(scales))
    for fn in ("sigmoid", "tanh"):
        ints, small, qparams = [], [], []
        for s, zp in zip(scales, zps):
            x = T._make_per_tensor_quantized_tensor(T.tensor(codes), float(s), int(zp))
            y = getattr(T, fn)(x)
            ints.append(y.int_repr().numpy().astype(np.int64))
            small.append(getattr(T, fn)(x[:37]).int_repr().numpy().astype(np.int64))
            qparams.append((y.q_scale(), y.q_zero_point()))
        out[f"{fn}_{dname}"] = np.stack(ints)
        out[f"{fn}_{dname}_small"] = np.stack(small)
        out[f"{fn}_{dname}_qparams"] = np.array(qparams)
        # a non-contiguous view
        x = T.quantize_per_tensor(arr(16, 20, scale=3), 0.05, int(lo + 100), dtype).t()
        out[f"{fn}_{dname}_view"] = getattr(T, fn)(x).int_repr().numpy().astype(np.int64)

# stack: equal and different parameters (the first tensor's win)
a = T.quantize_per_tensor(arr(3, 4), 0.05, 70, T.quint8)
b = T.quantize_per_tensor(arr(3, 4), 0.11, 130, T.quint8)
for dim in (0, 1, -1):
    y = T.stack([a, b, a], dim)
    out[f"stack_{dim}"] = y.int_repr().numpy().astype(np.int64)
    out[f"stack_{dim}_qparams"] = np.array([y.q_scale(), y.q_zero_point()])


class M(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.quant, self.lstm, self.lin, self.dq = tq.QuantStub(), lstm, nn.Linear(lstm.hidden_size * (
            2 if lstm.bidirectional else 1), 3), tq.DeQuantStub()

    def forward(self, x):
        y, (h, c) = self.lstm(self.quant(x))
        return self.dq(self.lin(y)), self.dq(h), self.dq(c)


for name, kwargs, qconfig in (("single", {}, tq.default_qconfig),
                              ("fbgemm", {}, tq.get_default_qconfig("fbgemm")),
                              ("deep", {"num_layers": 2, "bidirectional": True, "batch_first": True},
                               tq.default_qconfig)):
    model = M(nn.LSTM(4, 8, **kwargs)).eval()
    with T.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(arr(*p.shape, scale=0.5))
    model.qconfig = qconfig
    prepared = tq.prepare(model)
    out[name + "_prepared_type"] = np.array([prepared.lstm._get_name() == "QuantizableLSTM"])
    shape = (2, 5, 4) if kwargs.get("batch_first") else (5, 2, 4)
    for _ in range(3):
        prepared(arr(*shape))
    converted = tq.convert(prepared)
    out[name + "_converted_type"] = np.array([converted.lstm._get_name() == "QuantizedLSTM"])
    cell = converted.lstm.layers[0].layer_fw.cell
    out[name + "_qparams"] = np.array([[float(m.scale), int(m.zero_point)] for m in (
        cell.igates, cell.hgates, cell.gates, cell.fgate_cx, cell.igate_cgate, cell.fgate_cx_igate_cgate,
        cell.ogate_cy, converted.lin)])
    x = arr(*shape)
    y, h, c = converted(x)
    out[name], out[name + "_h"], out[name + "_c"] = y.numpy(), h.numpy(), c.numpy()
    # the integers of each quantized result
    qy, (qh, qc) = converted.lstm(converted.quant(x))
    for key, t in (("_int_lstm", qy), ("_int_h", qh), ("_int_c", qc), ("_int_lin", converted.lin(qy))):
        out[name + key] = t.int_repr().numpy().astype(np.int64)
    out[name + "_state_keys"] = np.array(sorted(converted.state_dict()))
    out[name + "_scales"] = np.array([float(converted.lin.scale), float(cell.ogate_cy.scale),
                                      float(cell.fgate_cx_igate_cgate.scale)])
np.savez(sys.argv[2], **out)
"""

# the calibrated scales (and the float outputs dequantized with them) agree to float32 rounding of the
# observers' arithmetic; every other entry (integers, fixed parameters, types, keys) exactly
MODELS = ("single", "fbgemm", "deep")
CLOSE = {model + suffix for model in MODELS for suffix in ("", "_h", "_c", "_qparams", "_scales")}


def test_static_quantized_lstm_matches_torch(run_torch_and_ember):
    theirs, ours = run_torch_and_ember(SCRIPT)
    for key in theirs:
        if key in CLOSE:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
