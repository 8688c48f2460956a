"""ember.ao.nn.quantized.ConvTranspose1d/2d/3d against PyTorch 2.13's CPU build: one script runs with
`T = torch` (in the interpreter EMBER_TORCH_PYTHON names) and with `T = ember`, through the public API
only, and every integer code, the output's scale and zero point, shapes and reprs must be equal.

PyTorch runs with the fbgemm engine. Its default x86 engine sends a transposed convolution to oneDNN
instead when the CPU has AVX-512 VNNI, the weight is symmetric (zero point 0) and output_padding is
0; there PyTorch 2.13's oneDNN path permutes the weight's channels when in_channels != out_channels
(its outputs are far from the float transposed convolution of the dequantized values, up to half the
quint8 range), so Ember follows FBGEMM, the x86 engine's other kernel. The x86 engine is compared as
well on the cases where it gives the right answer (asymmetric weights, nonzero output padding, equal
in and out channels). Without EMBER_TORCH_PYTHON these tests are skipped."""

import numpy as np

PRELUDE = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its quantized tensors
T = __import__(sys.argv[1])
nn, tq, nnq = T.nn, T.ao.quantization, T.ao.nn.quantized


def engine(name):
    if hasattr(T.backends, "quantized"):  # PyTorch only: Ember computes as FBGEMM always
        T.backends.quantized.engine = name


rng = np.random.default_rng(0)


def arr(*s, scale=1.0):
    return T.tensor((rng.normal(size=s) * scale).astype(np.float32))
"""

SCRIPT = PRELUDE + """
out = {}
CLASSES = {1: nnq.ConvTranspose1d, 2: nnq.ConvTranspose2d, 3: nnq.ConvTranspose3d}
# n, in, out, groups, kernel, stride, padding, output_padding, dilation, weight zero point, bias, input shape
CASES = [
    (1, 4, 6, 1, 3, 1, 0, 0, 1, 0, True, (2, 9)),
    (1, 4, 6, 2, 3, 2, 1, 1, 1, 3, True, (3, 7)),
    (1, 5, 3, 1, 4, 3, 2, 2, 3, -1, False, (1, 6)),
    (1, 6, 6, 6, 3, 2, 1, 3, 1, 0, True, (2, 5)),
    (2, 4, 6, 2, 3, 2, 1, 1, 1, 0, True, (2, 5, 6)),
    (2, 6, 4, 2, 2, 3, 1, 2, 2, 0, False, (2, 4, 3)),
    (2, 3, 5, 1, (3, 2), (2, 1), (2, 0), (1, 0), (2, 1), 4, True, (1, 5, 6)),
    (2, 4, 4, 4, 3, 1, 3, 0, 1, 0, True, (2, 5, 5)),
    (2, 8, 8, 1, 1, 1, 0, 0, 1, -2, True, (2, 3, 4)),
    (2, 16, 8, 2, 3, 2, 1, 0, 1, 0, True, (2, 6, 6)),
    (2, 32, 32, 1, 3, 2, 1, 1, 1, 0, True, (1, 7, 5)),
    (3, 2, 4, 2, (1, 2, 3), (2, 1, 3), (0, 1, 1), (1, 0, 2), (1, 2, 1), 1, True, (2, 3, 4, 2)),
    (3, 4, 2, 1, 2, 2, 0, 1, 1, 0, False, (1, 2, 3, 3)),
    (3, 6, 6, 3, 3, 2, 1, 0, 1, 0, True, (2, 3, 3, 4)),
]


def make(case):
    n, c_in, c_out, g, k, s, p, op, d, wzp, bias, shape = case
    m = CLASSES[n](c_in, c_out, k, stride=s, padding=p, output_padding=op, groups=g, bias=bias, dilation=d)
    w = T.quantize_per_tensor(arr(c_in, c_out // g, *m.kernel_size, scale=0.3), 0.004, wzp, T.qint8)
    m.set_weight_bias(w, arr(c_out) if bias else None)
    m.scale, m.zero_point = 0.11, 100
    x = T.quantize_per_tensor(arr(shape[0], c_in, *shape[1:], scale=2), 0.03, 117, T.quint8)
    return m, x


def put(key, y):
    out[key] = y.int_repr().numpy()
    out[key + "_qparams"] = np.array([y.q_scale(), y.q_zero_point(), *y.shape])


engine("fbgemm")
for i, case in enumerate(CASES):
    m, x = make(case)
    put(f"case{i}", m(x))
    out[f"case{i}_repr"] = np.array([repr(m)])
    out[f"case{i}_weight"] = m.weight().int_repr().numpy()
    # a view with the same values (the last two spatial dims swapped twice) and an empty batch
    view = x.transpose(1, -1).contiguous().transpose(1, -1)
    put(f"case{i}_view", m(view))
    put(f"case{i}_empty", m(x[:0]))

# the x86 engine where it computes as FBGEMM (see the module docstring)
engine("x86")
for i, case in enumerate(CASES):
    n, c_in, c_out, g, k, s, p, op, d, wzp, bias, shape = case
    if wzp != 0 or op != 0 or c_in == c_out:
        m, x = make(case)
        put(f"x86_case{i}", m(x))

# prepare / calibrate / convert (per-tensor weights: PyTorch refuses per-channel ones here)
engine("fbgemm")
rng = np.random.default_rng(2)
for n, (conv, shape) in enumerate([(nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 7)),
                                   (nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2), (2, 4, 5, 4)),
                                   (nn.ConvTranspose3d(2, 3, 2, stride=(1, 2, 2), bias=False), (1, 2, 3, 4, 3))]):
    with T.no_grad():
        conv.weight.copy_(arr(*conv.weight.shape, scale=0.4))
        if conv.bias is not None:
            conv.bias.copy_(arr(*conv.bias.shape))
    model = nn.Sequential(tq.QuantStub(), conv, tq.DeQuantStub()).eval()
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model)
    for _ in range(3):
        prepared(arr(*shape, scale=2))
    converted = tq.convert(prepared)
    q = converted[1]
    out[f"convert{n}_weight"] = q.weight().int_repr().numpy()
    out[f"convert{n}_weight_qparams"] = np.array([q.weight().q_scale(), q.weight().q_zero_point()])
    out[f"convert{n}_in_qparams"] = np.array([float(converted[0].scale), int(converted[0].zero_point)])
    out[f"convert{n}_bias"] = np.zeros(0) if q.bias() is None else q.bias().detach().numpy()
    out[f"convert{n}_repr"] = np.array([repr(converted).replace("torch.", "").replace("ember.", "")])
    out[f"convert{n}_keys"] = np.array(sorted(converted.state_dict().keys()))
    xq = T.quantize_per_tensor(arr(*shape, scale=2), 0.05, 120, T.quint8)
    put(f"convert{n}_out", q(xq))  # with _out_qparams: the module's output scale and zero point, the shape
np.savez(sys.argv[2], **out)
"""

# calibration runs the float transposed convolution, whose float32 sums may round differently
# from PyTorch's: an observed output range, and so the output scale, can move in its last bit
ROUNDING = ("_out_qparams", "_repr")


def test_same_integers_as_torch(run_torch_and_ember):
    theirs, ours = run_torch_and_ember(SCRIPT)
    assert any(k.startswith("x86_") for k in theirs)
    near = {}
    for key in theirs:
        if key.startswith("convert") and key.endswith(ROUNDING):
            if key.endswith("_out_qparams"):
                np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6, err_msg=key)
                near[key[:8]] = bool((ours[key] != theirs[key]).any())
            continue
        if key.startswith("convert") and key.endswith("_out"):
            continue
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    for n in range(3):  # the converted modules on a fixed input: equal unless calibration moved a scale
        key = f"convert{n}"
        if not near[key]:
            np.testing.assert_array_equal(ours[key + "_out"], theirs[key + "_out"], err_msg=key)
            np.testing.assert_array_equal(ours[key + "_repr"], theirs[key + "_repr"], err_msg=key)
        else:
            assert np.abs(ours[key + "_out"].astype(int) - theirs[key + "_out"].astype(int)).max() <= 1, key


CHECKPOINT = PRELUDE + """
engine("fbgemm")
write, read = sys.argv[2], sys.argv[3]


def modules():
    return {"c1": nnq.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
            "c2": nnq.ConvTranspose2d(3, 5, (2, 3), stride=(2, 1), dilation=(1, 2), bias=False),
            "c3": nnq.ConvTranspose3d(2, 4, 2, stride=2, output_padding=1)}


mods = modules()
if read == "-":
    for name, m in mods.items():
        w = m.weight()
        m.set_weight_bias(T.quantize_per_tensor(arr(*w.shape, scale=0.3), 0.004, 3, T.qint8),
                          None if m.bias() is None else arr(m.out_channels))
        m.scale, m.zero_point = 0.07, 90
    T.save({name: m.state_dict() for name, m in mods.items()}, write)
else:  # the other library's file, loaded with weights_only=True (the default)
    got = T.load(read)
    results = {}
    for name, m in mods.items():
        m.load_state_dict(got[name])
        shape = {"c1": (2, 4, 5), "c2": (2, 3, 4, 4), "c3": (1, 2, 2, 3, 2)}[name]
        x = T.quantize_per_tensor(arr(*shape, scale=2), 0.04, 110, T.quint8)
        y = m(x)
        results[name] = y.int_repr().numpy()
        results[name + "_params"] = np.array([m.scale, m.zero_point, y.q_scale(), y.q_zero_point()])
        results[name + "_weight"] = m.weight().int_repr().numpy()
        results[name + "_wparams"] = np.array([m.weight().q_scale(), m.weight().q_zero_point()])
        results[name + "_bias"] = np.zeros(0) if m.bias() is None else m.bias().numpy()
        results[name + "_keys"] = np.array(sorted(got[name].keys()))
    np.savez(write + ".npz", **results)
"""


def test_checkpoints_cross_both_ways(cross_checkpoints):
    results = cross_checkpoints(CHECKPOINT)
    ember_read, torch_read = results["ember"], results["torch"]
    assert sorted(ember_read) == sorted(torch_read)
    for key in torch_read:
        np.testing.assert_array_equal(ember_read[key], torch_read[key], err_msg=key)
    assert list(torch_read["c1_keys"]) == ["bias", "scale", "weight", "zero_point"]


FX = PRELUDE + """
from importlib import import_module
qfx = import_module(sys.argv[1] + ".ao.quantization.quantize_fx")
engine("fbgemm")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up1 = nn.ConvTranspose1d(6, 2, 2, stride=3, dilation=2)
        self.up3 = nn.ConvTranspose3d(2, 2, (1, 2, 2), stride=(1, 2, 1), bias=False)

    def forward(self, x):
        y = self.up1(self.up(self.conv(x)).flatten(2))
        return self.up3(y.reshape(2, 2, 1, 12, 16))


model = Net().eval()
with T.no_grad():
    for key, p in sorted(model.state_dict().items()):
        p.copy_(arr(*p.shape, scale=0.4))
prepared = qfx.prepare_fx(model, tq.get_default_qconfig_mapping("x86"), (arr(2, 3, 6, 6),))
for _ in range(3):
    prepared(arr(2, 3, 6, 6))
converted = qfx.convert_fx(prepared)
mods = dict(converted.named_modules())
out = {"types": np.array([type(mods[k]).__name__ for k in ("conv", "up", "up1", "up3")])}
assert all(mods[k]._get_name().startswith("Quantized") for k in ("conv", "up", "up1", "up3"))
for k in ("up", "up1", "up3"):
    out[k + "_weight"] = mods[k].weight().int_repr().numpy()
    out[k + "_qparams"] = np.array([mods[k].weight().q_scale(), mods[k].scale, mods[k].zero_point])
out["out"] = converted(arr(2, 3, 6, 6)).numpy()
np.savez(sys.argv[2], **out)
"""


def test_convert_fx_lowers_transposed_modules(run_torch_and_ember):
    theirs, ours = run_torch_and_ember(FX)
    np.testing.assert_array_equal(theirs["types"], ["Conv2d", "ConvTranspose2d", "ConvTranspose1d", "ConvTranspose3d"])
    np.testing.assert_array_equal(ours["types"], theirs["types"])  # the quantized modules' class names
    for key in theirs:
        if key.endswith("_weight"):
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
        elif key.endswith("_qparams") or key == "out":  # calibration may move an output scale in its last bit
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6, atol=1e-6, err_msg=key)
