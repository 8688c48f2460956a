"""The fused quantized BNReLU2d/3d and the quantizable LSTM against PyTorch's CPU build: one script
runs with `T = torch` (in its own interpreter, named by EMBER_TORCH_PYTHON) and with `T = ember`,
through the public API only. BNReLU's integers must be equal bit for bit (set parameters, quint8
and qint8, channel counts that reach FBGEMM's vector, buffered and scalar paths; and a model
through fuse_modules / prepare / calibrate / convert); the quantizable LSTM's float outputs equal
to float32 rounding (unobserved, and observed after prepare with the custom module config, whose
observers' ranges are compared too). Without EMBER_TORCH_PYTHON these tests are skipped;
tests/test_quantized_fused_and_quantizable.py holds the NumPy references."""

import numpy as np

SCRIPT = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its quantized tensors
T = __import__(sys.argv[1])
nn = T.nn
tq, nni, nniq = T.ao.quantization, T.ao.nn.intrinsic, T.ao.nn.intrinsic.quantized
rng = np.random.default_rng(0)


def arr(*shape, scale=1.0):
    return T.tensor(rng.normal(size=shape).astype(np.float32) * scale)


out = {}
for cls, spatial in ((nniq.BNReLU2d, (3, 4)), (nniq.BNReLU3d, (2, 3, 3))):
    for channels in (5, 45):
        for dname, dtype, in_zp, out_zp in (("quint8", T.quint8, 120, 90), ("qint8", T.qint8, -5, 7),
                                            ("quint8_hi", T.quint8, 30, 250)):
            m = cls(channels, eps=1e-3)
            with T.no_grad():
                m.weight.copy_(arr(channels)); m.bias.copy_(arr(channels))
                m.running_mean.copy_(arr(channels, scale=0.5))
                m.running_var.copy_(T.tensor(rng.uniform(0.3, 2.0, channels).astype(np.float32)))
            m.scale.fill_(0.03)
            m.zero_point.fill_(out_zp)
            x = T.quantize_per_tensor(arr(2, channels, *spatial, scale=2), 0.04, in_zp, dtype)
            y = m(x)
            key = f"{cls.__name__}_{channels}_{dname}"
            out[key] = y.int_repr().numpy().astype(np.int64)
            out[key + "_qparams"] = np.array([y.q_scale(), y.q_zero_point()])


def bn_relu_model(bn):
    model = nn.Sequential(tq.QuantStub(), bn, nn.ReLU(), tq.DeQuantStub()).eval()
    with T.no_grad():
        bn.weight.copy_(arr(4)); bn.bias.copy_(arr(4)); bn.running_mean.copy_(arr(4, scale=0.3))
        bn.running_var.copy_(T.tensor(np.linspace(0.5, 2.0, 4).astype(np.float32)))
    return model


for name, bn, shape in (("flow2d", nn.BatchNorm2d(4), (3, 4, 5, 5)), ("flow3d", nn.BatchNorm3d(4), (3, 4, 2, 4, 4))):
    fused = tq.fuse_modules(bn_relu_model(bn), [["1", "2"]])
    out[name + "_fused_type"] = np.array([type(fused[1]).__name__ == f"BNReLU{len(shape) - 2}d"])
    fused.qconfig = tq.default_qconfig
    prepared = tq.prepare(fused)
    data = [arr(*shape) for _ in range(3)]
    for batch in data:
        prepared(batch)
    converted = tq.convert(prepared)
    out[name + "_converted_type"] = np.array([converted[1]._get_name() == f"QuantizedBNReLU{len(shape) - 2}d"])
    out[name + "_qparams"] = np.array([float(converted[1].scale), int(converted[1].zero_point)])
    out[name] = (converted[1](converted[0](data[0])).int_repr().numpy().astype(np.int64))

# the quantizable LSTM: unobserved (float) forward, from_float, and prepare with the custom module config
nnqa = T.ao.nn.quantizable
for layers, bidirectional, batch_first in ((1, False, False), (2, True, True)):
    lstm = nn.LSTM(5, 6, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first).eval()
    with T.no_grad():
        for _, p in sorted(lstm.named_parameters()):
            p.copy_(arr(*p.shape, scale=0.4))
    seq = arr(2, 7, 5) if batch_first else arr(7, 2, 5)
    dirs = 2 if bidirectional else 1
    h0, c0 = arr(layers * dirs, 2, 6), arr(layers * dirs, 2, 6)
    key = f"lstm_{layers}_{bidirectional}"
    lstm.qconfig = tq.default_qconfig
    q = nnqa.LSTM.from_float(lstm)
    y, (h, c) = q(seq, (h0, c0))
    out[key], out[key + "_h"], out[key + "_c"] = y.detach().numpy(), h.detach().numpy(), c.detach().numpy()
    y, (h, c) = q(seq)
    out[key + "_zero_state"] = y.detach().numpy()
    model = nn.Sequential(lstm)
    model.qconfig = tq.default_qconfig
    config = {"float_to_observed_custom_module_class": {nn.LSTM: nnqa.LSTM}}
    prepared = tq.prepare(model, prepare_custom_config_dict=config)
    out[key + "_prepared_type"] = np.array([prepared[0]._get_name() == "QuantizableLSTM"])
    prepared(seq)
    cell = prepared[0].layers[0].layer_fw.cell
    out[key + "_observed"] = np.array([float(v) for v in (
        cell.igates.activation_post_process.min_val, cell.igates.activation_post_process.max_val,
        cell.gates.activation_post_process.min_val, cell.gates.activation_post_process.max_val,
        cell.fgate_cx_igate_cgate.activation_post_process.min_val,
        cell.fgate_cx_igate_cgate.activation_post_process.max_val)])
    out[key + "_observed_qparams"] = np.array(cell.ogate_cy.activation_post_process.calculate_qparams()[0])

cell = nn.LSTMCell(4, 3)
with T.no_grad():
    for _, p in sorted(cell.named_parameters()):
        p.copy_(arr(*p.shape, scale=0.5))
cell.qconfig = tq.default_qconfig
qcell = nnqa.LSTMCell.from_float(cell)
x, hx, cx = arr(2, 4), arr(2, 3), arr(2, 3)
h, c = qcell(x, (hx, cx))
out["cell_h"], out["cell_c"] = h.detach().numpy(), c.detach().numpy()
np.savez(sys.argv[2], **out)
"""

EXACT_PREFIXES = ("BNReLU", "flow")


def test_bn_relu_and_quantizable_lstm_match_torch(run_torch_and_ember):
    theirs, ours = run_torch_and_ember(SCRIPT)
    for key in theirs:
        if key.startswith(EXACT_PREFIXES) or key.endswith("_type"):
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
        else:  # float32 GEMMs and transcendental functions round in orders of their own
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
