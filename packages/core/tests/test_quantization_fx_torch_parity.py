"""FX graph mode post-training quantization against PyTorch 2.13 (x86): one script runs with
`T = torch` (in its own interpreter, named by EMBER_TORCH_PYTHON) and with `T = ember`, through the
public API only (prepare_fx -> calibrate -> convert_fx), on the same weights and calibration data.
Compared: the calibrated output scale / zero point of every quantized module, its weight integers,
and the converted model's outputs (dequantized: equal integers give equal floats), for an MLP
(Linear + ReLU fusions), a CNN (Conv2d + BatchNorm2d + ReLU folded and fused, max pooling, adaptive
average pooling, flatten), a residual block (add + relu, cat sharing one observer, scalar mul) and
a 1d/3d conv model, each under get_default_qconfig_mapping() (histogram observers, per-channel
weights) and QConfigMapping().set_global(default_qconfig). The float models agree to float32
rounding only (accumulation order), so the observed ranges and the scales computed from them do too
(zero points and weight integers are equal); a mean of quantized values is taken over 9 elements,
where no average falls on a rounding tie that a one-ulp scale difference could flip. Skipped without
EMBER_TORCH_PYTHON."""

import numpy as np

SCRIPT = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")
T = __import__(sys.argv[1])
nn = T.nn
F = T.nn.functional
tq = T.ao.quantization
from importlib import import_module
qfx = import_module(sys.argv[1] + ".ao.quantization.quantize_fx")
rng = np.random.default_rng(0)


def arr(*shape, scale=1.0):
    return T.tensor(rng.normal(size=shape).astype(np.float32) * scale)


def init(model):
    with T.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(arr(*p.shape, scale=0.4))
        for name, b in sorted(model.named_buffers()):
            if name.endswith("running_mean"):
                b.copy_(arr(*b.shape, scale=0.1))
            elif name.endswith("running_var"):
                b.copy_(T.tensor(rng.uniform(0.5, 1.5, b.shape).astype(np.float32)))
    return model.eval()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 5)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(self.drop(x))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 12, 3)
        self.bn2 = nn.BatchNorm2d(12)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(12, 6)

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.pool(x)
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.avg(x)
        x = T.flatten(x, 1)
        return self.fc(x)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv0 = nn.Conv2d(4, 8, 1)
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(16, 4, 1)

    def forward(self, x):
        y = self.conv0(x)
        z = F.relu(self.conv1(y))
        z = self.conv2(z)
        r = T.relu(z + y)
        m = r * y
        c = T.cat([r, m], 1)
        out = self.conv3(c)
        out = out * 0.5
        return out.reshape(out.shape[0], -1)


class Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 6, 3)
        self.r1 = nn.ReLU()
        self.c3 = nn.Conv3d(2, 4, 2)
        self.bn3 = nn.BatchNorm3d(4)

    def forward(self, x, v):
        a = self.r1(self.c1(x)).mean(2)
        b = self.bn3(self.c3(v)).flatten(1)
        return a, b


cases = [("mlp", MLP, lambda: (arr(8, 16),)), ("cnn", CNN, lambda: (arr(2, 3, 12, 12),)),
         ("res", Residual, lambda: (arr(2, 4, 6, 6),)), ("convs", Convs, lambda: (arr(2, 3, 11), arr(2, 2, 4, 4, 4)))]
out = {}
for cname, cls, data in cases:
    for mname, mapping in (("default", tq.get_default_qconfig_mapping()),
                           ("minmax", tq.QConfigMapping().set_global(tq.default_qconfig))):
        key = cname + "_" + mname
        model = init(cls())
        calib = [data() for _ in range(4)]
        test = data()
        prepared = qfx.prepare_fx(model, mapping, calib[0])
        for inputs in calib:
            prepared(*inputs)
        quantized = qfx.convert_fx(prepared)
        result = quantized(*test)
        result = result if isinstance(result, tuple) else (result,)
        for i, r in enumerate(result):
            out[f"{key}_out{i}"] = r.detach().numpy()
        for name, mod in quantized.named_modules():
            if hasattr(mod, "scale") and hasattr(mod, "zero_point") and name:
                out[f"{key}_{name}_qparams"] = np.array([float(mod.scale), int(mod.zero_point)], dtype=np.float64)
            if hasattr(mod, "weight") and callable(mod.weight) and name:
                out[f"{key}_{name}_wint"] = mod.weight().int_repr().numpy().astype(np.int64)
        out[f"{key}_float"] = model(*test)[0].detach().numpy() if cname == "convs" else model(*test).detach().numpy()
np.savez(sys.argv[2], **out)
"""


def test_quantize_fx_matches_torch(run_torch_and_ember):
    torch_out, ember_out = run_torch_and_ember(SCRIPT)
    for key in sorted(torch_out):
        t, e = torch_out[key], ember_out[key]
        assert t.shape == e.shape, key
        if key.endswith("_float"):
            np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-5, err_msg=key)
        elif key.endswith("_qparams"):
            np.testing.assert_allclose(e[0], t[0], rtol=1e-6, err_msg=key)
            assert e[1] == t[1], key
        elif key.endswith("_wint"):
            np.testing.assert_array_equal(e, t, err_msg=key)
        else:  # dequantized outputs: the same codes times scales equal to float32 rounding
            np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6, err_msg=key)
