"""Quantization-aware training of fused conv-bn-relu / linear-bn models against PyTorch's CPU
build (x86): one script runs with `T = torch` (in its own interpreter, named by
EMBER_TORCH_PYTHON) and with `T = ember`, through the public API only, on the same weights and
data. A CNN (conv-bn-relu, conv-bn, conv-relu, linear) and an MLP (linear-bn, linear-relu) are
trained for some SGD steps in eager mode (fuse_modules_qat -> prepare_qat) and in FX mode
(prepare_qat_fx), the BatchNorm statistics frozen part way; then .eval() and convert / convert_fx.
Compared: the fused QAT module types, the losses, the gradients of the first layer, the fake
quantizers' scales and zero points, the BatchNorm running statistics, the fake-quantized eval
forward, the converted modules' types, output qparams, weight integers and (folded) biases, and the
converted models' outputs. Without EMBER_TORCH_PYTHON these tests are skipped;
tests/test_quantization_qat_fused.py holds the float64 references."""

import numpy as np

SCRIPT = """
import sys, warnings
from importlib import import_module
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its eager and FX quantization
T = __import__(sys.argv[1])
nn = T.nn
F = T.nn.functional
tq = T.ao.quantization
fuse_modules_qat = import_module(sys.argv[1] + ".ao.quantization.fuse_modules").fuse_modules_qat
qfx = import_module(sys.argv[1] + ".ao.quantization.quantize_fx")
nniqat = import_module(sys.argv[1] + ".ao.nn.intrinsic.qat")
rng = np.random.default_rng(0)


def arr(*shape, scale=1.0):
    return T.tensor(rng.normal(size=shape).astype(np.float32) * scale)


def fill(model):
    with T.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("bn1.weight") or name.endswith("bn2.weight") or name.endswith("bn.weight"):
                p.copy_(T.tensor(rng.uniform(0.5, 1.5, p.shape).astype(np.float32)))
            else:
                p.copy_(arr(*p.shape, scale=0.4))
    return model


class CNN(nn.Module):
    def __init__(self, stubs):
        super().__init__()
        self.stubs = stubs
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()
        self.conv2, self.bn2 = nn.Conv2d(4, 6, 3, stride=2, bias=False), nn.BatchNorm2d(6)
        self.conv3, self.relu3 = nn.Conv2d(6, 4, 1), nn.ReLU()
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        if self.stubs:
            x = self.quant(x)
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.relu3(self.conv3(self.bn2(self.conv2(x))))
        x = self.fc(T.flatten(x, 1))
        return self.dequant(x) if self.stubs else x


class MLP(nn.Module):
    def __init__(self, stubs):
        super().__init__()
        self.stubs = stubs
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.fc1, self.bn = nn.Linear(6, 5), nn.BatchNorm1d(5)
        self.fc2, self.relu = nn.Linear(5, 3), nn.ReLU()

    def forward(self, x):
        if self.stubs:
            x = self.quant(x)
        x = self.relu(self.fc2(self.bn(self.fc1(x))))
        return self.dequant(x) if self.stubs else x


def fq_qparams(model):
    rows = []
    for name, m in sorted(model.named_modules()):
        if type(m).__name__ == "FusedMovingAvgObsFakeQuantize":
            rows.append(np.concatenate([m.scale.detach().numpy().reshape(-1).astype(np.float64),
                                        m.zero_point.numpy().reshape(-1).astype(np.float64)]))
    return np.concatenate(rows)


out = {}
CASES = (("cnn", CNN, [["conv1", "bn1", "relu1"], ["conv2", "bn2"], ["conv3", "relu3"]], (8, 3, 6, 6), 3,
          ("conv1", "conv2", "conv3", "fc")),
         ("mlp", MLP, [["fc1", "bn"], ["fc2", "relu"]], (16, 6), 3, ("fc1", "fc2")))
for name, cls, groups, shape, n_out, layers in CASES:
    x = arr(*shape)
    target = arr(shape[0], n_out, scale=0.5)
    weights = fill(cls(True)).state_dict()
    for mode in ("eager", "fx"):
        key = name + "_" + mode
        model = cls(mode == "eager")
        model.load_state_dict(weights)
        model.train()
        if mode == "eager":
            model.qconfig = tq.get_default_qat_qconfig("x86")
            prepared = tq.prepare_qat(fuse_modules_qat(model, groups))
        else:
            prepared = qfx.prepare_qat_fx(model, tq.get_default_qat_qconfig_mapping("x86"), (x,))
        out[key + "_types"] = np.array([type(getattr(prepared, n)).__name__ for n in layers])
        opt = T.optim.SGD(prepared.parameters(), lr=0.1, momentum=0.5)
        losses = []
        for step in range(6):
            if step == 4:
                prepared.apply(nniqat.freeze_bn_stats)
            opt.zero_grad()
            loss = ((prepared(x) - target) ** 2).mean()
            loss.backward()
            if step == 0:
                out[key + "_grad0"] = getattr(prepared, layers[0]).weight.grad.numpy().copy()
            opt.step()
            losses.append(float(loss))
        out[key + "_losses"] = np.array(losses)
        out[key + "_fq_qparams"] = fq_qparams(prepared)
        first = getattr(prepared, layers[0])
        out[key + "_running"] = np.stack([first.bn.running_mean.numpy(), first.bn.running_var.numpy()])
        out[key + "_bn_batches"] = np.array([int(first.bn.num_batches_tracked)])
        prepared.eval()
        with T.no_grad():
            out[key + "_fake_eval"] = prepared(x).numpy()
        converted = tq.convert(prepared) if mode == "eager" else qfx.convert_fx(prepared)
        out[key + "_converted_types"] = np.array([getattr(converted, n)._get_name() for n in layers])
        out[key + "_qparams"] = np.array([[float(getattr(converted, n).scale), int(getattr(converted, n).zero_point)]
                                          for n in layers])
        for n in layers:
            q = getattr(converted, n)
            out[key + "_" + n + "_w_int"] = q.weight().int_repr().numpy().astype(np.int64)
            out[key + "_" + n + "_w_scales"] = q.weight().q_per_channel_scales().numpy()
            out[key + "_" + n + "_bias"] = q.bias().detach().numpy()
        out[key] = converted(x).numpy()
        last = getattr(converted, layers[-1])
        out[key + "_int"] = (np.rint(out[key] / float(last.scale)) + int(last.zero_point)).astype(np.int64)
np.savez(sys.argv[2], **out)
"""

# float results of training (losses, gradients, running statistics, fake-quantized forwards), the
# fake quantizers' and converted modules' scales, and the converted outputs (integers times those
# scales) agree to float32 rounding of sums taken in a different order; the integers (weights,
# zero points, the converted outputs'), types and names exactly
CLOSE_SUFFIXES = ("_losses", "_grad0", "_fq_qparams", "_running", "_fake_eval", "_qparams", "_w_scales", "_bias",
                  "_eager", "_fx")


def test_fused_qat_training_and_convert_match_torch(run_torch_and_ember):
    theirs, ours = run_torch_and_ember(SCRIPT)
    failures = []
    for key in sorted(theirs):
        try:
            if key.endswith(CLOSE_SUFFIXES):
                np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
            else:
                np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
        except AssertionError as error:
            failures.append(str(error))
    assert not failures, "\n".join(failures)
