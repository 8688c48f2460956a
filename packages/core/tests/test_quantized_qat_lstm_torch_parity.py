"""Quantization-aware training of nn.LSTM against PyTorch's CPU build (x86): one script runs with
`T = torch` (in its own interpreter, named by EMBER_TORCH_PYTHON) and with `T = ember`, through the
public API only, on the same weights and data. It compares the fixed-parameter fake quantizers
(values, gradients, qparams, state-dict keys, on contiguous, transposed, 0-dim and empty inputs),
prepare_qat of training Sigmoid / Tanh / Softmax / Hardsigmoid, and prepare_qat -> SGD training ->
eval -> convert of a QuantStub -> LSTM -> Linear -> DeQuantStub model (one layer with the x86 and
the fbgemm QAT qconfig, two bidirectional batch_first layers): the fake-quantized forward before and
after training, the losses, the fake quantizers' scales and zero points, and the converted model's
integers (LSTM output, final h and c, the Linear after it), its qparams and state-dict keys.
Without EMBER_TORCH_PYTHON these tests are skipped; tests/test_quantized_qat_lstm.py holds the
float64 references."""

import numpy as np

SCRIPT = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its quantized tensors and eager quantization
T = __import__(sys.argv[1])
nn = T.nn
tq = T.ao.quantization
rng = np.random.default_rng(0)


def arr(*shape, scale=1.0):
    return T.tensor(rng.normal(size=shape).astype(np.float32) * scale)


out = {}
# the fixed-parameter fake quantizers: values and straight-through gradients
for name in ("default_fixed_qparams_range_0to1_fake_quant", "default_fixed_qparams_range_neg1to1_fake_quant",
             "default_affine_fixed_qparams_fake_quant", "default_symmetric_fixed_qparams_fake_quant"):
    fq = getattr(tq, name)()
    s, zp = fq.calculate_qparams()
    out[name + "_qparams"] = np.array([float(s), int(zp), fq.quant_min, fq.quant_max])
    out[name + "_keys"] = np.array(list(fq.state_dict()))
    x = T.tensor(np.concatenate([np.linspace(-1.3, 1.3, 1041), (np.arange(-130, 130) + 0.5) / 128]).astype(
        np.float32), requires_grad=True)
    y = fq(x)
    y.backward(T.tensor(np.arange(x.numel(), dtype=np.float32)))
    out[name], out[name + "_grad"] = y.detach().numpy(), x.grad.numpy()
    view = arr(9, 7, scale=0.8).t()
    out[name + "_view"] = fq(view).numpy()
    out[name + "_0d"] = fq(T.tensor(0.3337)).numpy()
    out[name + "_empty"] = np.array(fq(T.zeros(2, 0)).shape)
    out[name + "_f64"] = fq(T.tensor(np.linspace(-1.2, 1.2, 301))).numpy()
obs = tq.default_fixed_qparams_range_neg1to1_observer()
out["observer_keys"] = np.array(list(obs.state_dict()))

# prepare_qat of training activations
seq = nn.Sequential(nn.Linear(3, 5), nn.Sigmoid(), nn.Tanh(), nn.Softmax(dim=1), nn.Hardsigmoid(), nn.ReLU())
with T.no_grad():
    for _, p in sorted(seq.named_parameters()):
        p.copy_(arr(*p.shape))
seq.qconfig = tq.get_default_qat_qconfig("x86")
prepared = tq.prepare_qat(seq)
out["act_types"] = np.array([type(getattr(m, "activation_post_process", None)).__name__ for m in prepared])
x = arr(4, 3, scale=2.0)
for i in range(1, 5):
    out[f"act_{i}"] = prepared[: i + 1](x).detach().numpy()


class M(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.quant, self.lstm, self.lin, self.dq = tq.QuantStub(), lstm, nn.Linear(lstm.hidden_size * (
            2 if lstm.bidirectional else 1), 3), tq.DeQuantStub()

    def forward(self, x):
        y, (h, c) = self.lstm(self.quant(x))
        return self.dq(self.lin(y))


GATES = ("gates", "fgate_cx", "igate_cgate", "fgate_cx_igate_cgate", "ogate_cy")
for name, kwargs, backend in (("single", {}, "x86"), ("fbgemm", {}, "fbgemm"),
                              ("deep", {"num_layers": 2, "bidirectional": True, "batch_first": True}, "x86")):
    model = M(nn.LSTM(4, 8, **kwargs))
    with T.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(arr(*p.shape, scale=0.5))
    model.qconfig = tq.get_default_qat_qconfig(backend)
    prepared = tq.prepare_qat(model)
    cell = prepared.lstm.layers[-1].layer_fw.cell
    out[name + "_types"] = np.array([type(m).__name__ for m in (
        prepared.lstm, cell.igates, cell.igates.weight_fake_quant, cell.igates.activation_post_process,
        cell.gates.activation_post_process, cell.input_gate.activation_post_process,
        cell.cell_gate.activation_post_process, cell.ogate_cy.activation_post_process)])
    out[name + "_prepared_keys"] = np.array(sorted(prepared.state_dict()))
    shape = (2, 5, 4) if kwargs.get("batch_first") else (5, 2, 4)
    x = arr(*shape)
    target = arr(*shape[:2], 3, scale=0.5)
    out[name + "_fake_first"] = prepared(x).detach().numpy()
    opt = T.optim.SGD(prepared.parameters(), lr=0.1)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = ((prepared(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    out[name + "_losses"] = np.array(losses)
    out[name + "_grad_wi"] = cell.igates.weight.grad.numpy()
    out[name + "_fq_qparams"] = np.array([[float(getattr(cell, g).activation_post_process.scale),
                                           int(getattr(cell, g).activation_post_process.zero_point)] for g in GATES])
    prepared.eval()
    with T.no_grad():
        out[name + "_fake_eval"] = prepared(x).numpy()
    converted = tq.convert(prepared)
    qcell = converted.lstm.layers[-1].layer_fw.cell
    out[name + "_converted_type"] = np.array([converted.lstm._get_name(), type(qcell.input_gate).__name__])
    out[name + "_qparams"] = np.array([[float(m.scale), int(m.zero_point)] for m in (
        qcell.igates, qcell.hgates, qcell.gates, qcell.fgate_cx, qcell.igate_cgate, qcell.fgate_cx_igate_cgate,
        qcell.ogate_cy, converted.lin)])
    out[name + "_wi_int"] = qcell.igates.weight().int_repr().numpy().astype(np.int64)
    out[name + "_state_keys"] = np.array(sorted(converted.state_dict()))
    out[name] = converted(x).numpy()
    qy, (qh, qc) = converted.lstm(converted.quant(x))
    for key, t in (("_int_lstm", qy), ("_int_h", qh), ("_int_c", qc), ("_int_lin", converted.lin(qy))):
        out[name + key] = t.int_repr().numpy().astype(np.int64)
np.savez(sys.argv[2], **out)
"""

# float results of training (losses, gradients, fake-quantized forwards) agree to float32 rounding
# of sums in a different order; every other entry (fake quantization of given values, integers,
# qparams, types, keys) exactly
MODELS = ("single", "fbgemm", "deep")
CLOSE = {
    model + suffix
    for model in MODELS
    for suffix in ("_losses", "_grad_wi", "_fake_first", "_fake_eval", "_fq_qparams", "_qparams", "")
}


def test_qat_lstm_matches_torch(run_torch_and_ember):
    theirs, ours = run_torch_and_ember(SCRIPT)
    for key in theirs:
        if key in CLOSE:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
