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

# what both scripts start with: the library as T, its FX quantization, a generator (SCRIPT_MORE reseeds it)
PRELUDE = """
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
"""

SCRIPT = PRELUDE + """

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


SCRIPT_MORE = PRELUDE + """
rng = np.random.default_rng(1)


def init(model):
    with T.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(arr(*p.shape, scale=0.4))
    return model.eval()


class Extra(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(T.zeros(12, 8))
        self.b1 = nn.Parameter(T.zeros(12))
        self.w2 = nn.Parameter(T.zeros(6, 3, 3, 3))
        self.b2 = nn.Parameter(T.zeros(6))
        self.w3 = nn.Parameter(T.zeros(4, 6, 2, 2))
        self.w4 = nn.Parameter(T.zeros(5, 12))
        self.w5 = nn.Parameter(T.zeros(12, 12))
        self.sig = nn.Sigmoid()
        self.tanh = nn.Tanh()
        self.ln = nn.LayerNorm(12)
        self.fc = nn.Linear(12, 12)
        self.elu = nn.ELU()
        self.lrelu = nn.LeakyReLU(0.1)
        self.sm = nn.Softmax(-1)

    def forward(self, x, img):
        a = F.relu(F.linear(x, self.w1, self.b1))
        s = self.sig(a)
        t = T.tanh(self.fc(s))
        h = F.hardswish(F.linear(t, self.w4))
        u = F.tanh(h)
        n = self.ln(t)
        e = self.lrelu(self.elu(self.tanh(F.linear(a, self.w5))))
        m = self.sm(e)
        z = F.conv2d(img, self.w2, self.b2, (1, 1), (1, 1), (1, 1), 1)
        z2 = F.relu(F.conv2d(z, self.w3, None, (2, 2), (0, 0), (1, 1), 1))
        g = T.sigmoid(z2)
        mm = T.matmul(s, t.transpose(0, 1))
        return a, s, t, h, u, z, z2, g, n, e, m, mm


class Emb(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.bag = nn.EmbeddingBag(10, 8, mode="sum")
        self.fc = nn.Linear(8, 3)

    def forward(self, i, j, off):
        return self.fc(self.emb(i) + self.bag(j, off).unsqueeze(0)), self.emb(i), self.bag(j, off)


def observer_qparams(prepared):
    rows = []
    for node in prepared.graph.nodes:
        if node.op != "call_module" or not hasattr(prepared.get_submodule(node.target), "calculate_qparams"):
            continue
        obs = prepared.get_submodule(node.target)
        if obs.dtype != T.quint8:
            continue
        scale, zp = obs.calculate_qparams()
        rows.append([float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0])])
    return np.array(rows, dtype=np.float64)


def packed_weight_ints(quantized):
    out = {}
    for name in dir(quantized):
        if name.startswith("_packed_weight_"):
            w = getattr(quantized, name)
            w = w if hasattr(w, "int_repr") else w.unpack()[0]
            out[name] = w.int_repr().numpy().astype(np.int64)
    return out


idx = lambda: (T.tensor([[1, 9]]), T.tensor([1, 2, 3, 4, 7]), T.tensor([0, 2]))
wo = tq.float_qparams_weight_only_qconfig
cases = [
    ("extra_default", Extra, tq.get_default_qconfig_mapping(), lambda: (arr(6, 8), arr(2, 3, 8, 8))),
    # min/max observers and per-tensor weights, the fixed-qparams ops keeping the default mapping's
    # (with a plain default_qconfig PyTorch runs sigmoid on the quantized tensor all the same, its
    # observed parameters dropped, and returns a quantized model output; Ember keeps the op float)
    ("extra_minmax", Extra, tq.get_default_qconfig_mapping().set_global(tq.default_qconfig),
     lambda: (arr(6, 8), arr(2, 3, 8, 8))),
    ("emb_wo", Emb, tq.get_default_qconfig_mapping().set_object_type(nn.Embedding, wo).set_object_type(nn.EmbeddingBag, wo), idx),
    ("emb_default", Emb, tq.get_default_qconfig_mapping(), idx),
]
out = {}
for key, cls, mapping, data in cases:
    model = init(cls())
    calib = [data() for _ in range(4)]
    test = data()
    prepared = qfx.prepare_fx(model, mapping, calib[0])
    for inputs in calib:
        prepared(*inputs)
    out[key + "_observers_qparams"] = observer_qparams(prepared)
    quantized = qfx.convert_fx(prepared)
    result = quantized(*test)
    for i, r in enumerate(result):
        out[f"{key}_out{i}"] = r.detach().numpy()
    for name, w in packed_weight_ints(quantized).items():
        out[f"{key}_{name}_wint"] = w
    for name, mod in quantized.named_modules():
        if name in ("ln", "elu", "lrelu", "sm"):  # quantized modules in PyTorch, float in Ember
            continue
        if hasattr(mod, "scale") and hasattr(mod, "zero_point") and name:
            out[f"{key}_{name}_qparams"] = np.array([float(mod.scale), int(mod.zero_point)], dtype=np.float64)
        if hasattr(mod, "weight") and callable(mod.weight) and name:
            w = mod.weight()
            out[f"{key}_{name}_wint"] = w.int_repr().numpy().astype(np.int64)
            if w.qscheme() == T.per_channel_affine_float_qparams:
                out[f"{key}_{name}_wscales"] = w.q_per_channel_scales().numpy().astype(np.float64)
                out[f"{key}_{name}_wpoints"] = w.q_per_channel_zero_points().numpy().astype(np.float64)
        if name:
            out[f"{key}_{name}_type"] = np.array(type(mod).__name__)
np.savez(sys.argv[2], **out)
"""

# The outputs PyTorch computes with a quantized kernel Ember does not have (layer_norm, elu, leaky_relu,
# softmax, matmul) and those after them: Ember runs the float op between the same dequantize and quantize (PyTorch's
# observers, equal parameters), so its codes may differ from the kernel's by one step.
_KERNEL_MISSING = {f"extra_{m}_out{i}" for m in ("default", "minmax") for i in (8, 9, 10, 11)}


def test_quantize_fx_more_ops_match_torch(run_torch_and_ember):
    torch_out, ember_out = run_torch_and_ember(SCRIPT_MORE)
    for key in sorted(torch_out):
        t, e = torch_out[key], ember_out[key]
        assert t.shape == e.shape, key
        if key.endswith("_type"):
            assert str(t) == str(e), key
        elif key.endswith(("_qparams", "_observers_qparams")):
            t2, e2 = t.reshape(-1, 2), e.reshape(-1, 2)
            np.testing.assert_allclose(e2[:, 0], t2[:, 0], rtol=1e-6, err_msg=key)
            np.testing.assert_array_equal(e2[:, 1], t2[:, 1], err_msg=key)
        elif key.endswith(("_wint", "_wpoints")):
            np.testing.assert_array_equal(e, t, err_msg=key)
        elif key.endswith("_wscales"):
            np.testing.assert_allclose(e, t, rtol=1e-6, err_msg=key)
        elif key in _KERNEL_MISSING:
            step = np.diff(np.unique(t)).min() if np.unique(t).size > 1 else 1.0
            assert np.abs(e - t).max() <= 1.01 * step + 1e-6, key
        else:  # dequantized outputs: the same codes times scales equal to float32 rounding
            np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6, err_msg=key)
