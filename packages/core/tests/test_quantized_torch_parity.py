"""Quantized tensors and eager-mode quantization against PyTorch's CPU build (x86, FBGEMM): one
script runs with `T = torch` (in its own interpreter, named by EMBER_TORCH_PYTHON) and with
`T = ember`, through the public API only, and every quantized result must be equal bit for bit:
quantize/dequantize per tensor, per channel and dynamically (also at half steps); relu, pooling and cat on quantized
tensors; the quantized Linear/Conv2d modules with per-tensor and per-channel weights (groups,
stride, fused relu); quantize_dynamic; HistogramObserver's choice of range; quantized Embedding/EmbeddingBag tables
(prepare/convert and quantize_dynamic, offsets, weights, empty bags); float32 linspace. A fused conv/BN/relu net through prepare/calibrate/convert
and the float16 dynamic Linear are compared to float32 rounding (the calibration's float GEMMs and
FBGEMM's float16 one sum in orders of their own). Checkpoints
of quantized state dicts cross both ways. Without EMBER_TORCH_PYTHON these tests are skipped;
tests/test_quantized_kernels.py and test_quantization_eager.py hold the NumPy references."""

import os
import subprocess
import sys

import numpy as np
import pytest

TORCH_PYTHON = os.environ.get("EMBER_TORCH_PYTHON")
pytestmark = pytest.mark.skipif(not TORCH_PYTHON, reason="EMBER_TORCH_PYTHON names no Python with torch")

COMMON = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its quantized tensors
T = __import__(sys.argv[1])
nn, F = T.nn, T.nn.functional
tq, nnq, nniq = T.ao.quantization, T.ao.nn.quantized, T.ao.nn.intrinsic.quantized
rng = np.random.default_rng(0)


def arr(*shape, scale=1.0):
    return T.tensor(rng.normal(size=shape).astype(np.float32) * scale)


def fill(model, scale=0.3):
    with T.no_grad():
        for _, p in sorted(model.state_dict().items()):
            if p.dtype == T.float32:
                p.copy_(arr(*p.shape, scale=scale))
    return model


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1); self.bn1 = nn.BatchNorm2d(8); self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=8); self.relu2 = nn.ReLU()
        self.skip = nnq.FloatFunctional()
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d((2, 2))
        self.fc1 = nn.Linear(32, 16); self.relu3 = nn.ReLU(); self.fc2 = nn.Linear(16, 5)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        y = self.relu1(self.bn1(self.conv1(x)))
        y = self.skip.add(y, self.relu2(self.conv2(y)))
        y = T.flatten(self.avg(self.pool(y)), 1)
        return self.dequant(self.fc2(self.relu3(self.fc1(y))))


def static_net():
    m = fill(Net()).eval()
    with T.no_grad():
        m.bn1.running_var.copy_(T.tensor(rng.uniform(0.5, 2, 8).astype(np.float32)))
    m = tq.fuse_modules(m, [["conv1", "bn1", "relu1"], ["conv2", "relu2"], ["fc1", "relu3"]])
    m.qconfig = tq.QConfig(activation=tq.MinMaxObserver.with_args(reduce_range=True),
                           weight=tq.PerChannelMinMaxObserver.with_args(dtype=T.qint8, qscheme=T.per_channel_symmetric))
    p = tq.prepare(m)
    for _ in range(3):
        p(arr(4, 3, 8, 8))
    return tq.convert(p)
"""

SCRIPT = COMMON + """
out = {}
x = arr(6, 5, scale=3)
for name, dtype, zp in (("quint8", T.quint8, 10), ("qint8", T.qint8, -3), ("qint32", T.qint32, 7)):
    q = T.quantize_per_tensor(x, 0.0137, zp, dtype)
    out["pt_" + name] = q.int_repr().numpy().astype(np.int64)
    out["pt_deq_" + name] = q.dequantize().numpy()
# values at half steps and one float32 step to either side, where the fused multiply-add of
# quint8/qint8 and the rounded product of qint32 (Note [quantize arithmetic]) part ways
for scale in (0.0137, 0.3, 0.6373247504234314):
    halves = ((np.arange(-300, 300) + 0.5) * scale).astype(np.float32)
    ties = T.tensor(np.concatenate([halves, np.nextafter(halves, np.float32(np.inf)),
                                    np.nextafter(halves, np.float32(-np.inf))]))
    for name, dtype, zp in (("quint8", T.quint8, 130), ("qint8", T.qint8, -3), ("qint32", T.qint32, 7)):
        out[f"ties_{name}_{scale}"] = T.quantize_per_tensor(ties, scale, zp, dtype).int_repr().numpy()
    out[f"ties_pc_{scale}"] = T.quantize_per_channel(ties.reshape(3, -1), T.tensor([scale, scale / 3, 2 * scale],
                                                     dtype=T.float64), T.tensor([1, 0, -2]), 0, T.qint8).int_repr().numpy()
# quantized add / mul where codes land on half steps (input scale 0.1, output 0.2), over a multiple
# of 128 values: PyTorch's last partial block takes its scalar functions (Note [quantized add and mul])
for dname, dtype, np_dtype, lo, hi in (("quint8", T.quint8, np.uint8, 0, 256), ("qint8", T.qint8, np.int8, -128, 128)):
    qa = T._make_per_tensor_quantized_tensor(T.tensor(rng.integers(lo, hi, (8, 256)).astype(np_dtype)), 0.1, 3)
    qb = T._make_per_tensor_quantized_tensor(T.tensor(rng.integers(lo, hi, (8, 256)).astype(np_dtype)), 0.1, -5 if lo else 9)
    for fname, f in (("add", nnq.QFunctional.add), ("add_relu", nnq.QFunctional.add_relu), ("mul", nnq.QFunctional.mul)):
        func = nnq.QFunctional()
        func.scale, func.zero_point = (0.4, 2) if fname == "mul" else (0.2, 4)
        out[f"ties_{fname}_{dname}"] = f(func, qa, qb).int_repr().numpy()
scales = T.tensor(rng.uniform(0.01, 0.2, 5)); points = T.tensor(rng.integers(-10, 10, 5))
q = T.quantize_per_channel(x, scales, points, 1, T.qint8)
out["pc"], out["pc_deq"] = q.int_repr().numpy(), q.dequantize().numpy()
q = T.quantize_per_channel(x, scales.float(), points.float() + 0.5, 1, T.quint8)
out["pcf"], out["pcf_deq"] = q.int_repr().numpy(), q.dequantize().numpy()
for dname, dtype in (("quint8", T.quint8), ("qint8", T.qint8)):
    for reduce_range in (False, True):
        q = T.quantize_per_tensor_dynamic(x, dtype, reduce_range)
        out[f"dyn_{dname}_{reduce_range}"] = np.array([q.q_scale(), q.q_zero_point()])
        out[f"dyn_ints_{dname}_{reduce_range}"] = q.int_repr().numpy()

q = T.quantize_per_tensor(arr(2, 3, 9, 8), 0.05, 100, T.quint8)
q2 = T.quantize_per_tensor(arr(2, 3, 9, 8, scale=2), 0.11, 90, T.quint8)
for name, r in (("relu", T.relu(q)), ("relu6", F.relu6(q)), ("hardtanh", F.hardtanh(q, -0.33, 0.77)),
                ("maxpool", F.max_pool2d(q, 3, 2, 1)), ("avgpool", F.avg_pool2d(q, 3, 2, 1)),
                ("avgpool_nopad", F.avg_pool2d(q, 3, 2, 1, count_include_pad=False)),
                ("avgpool_ceil", F.avg_pool2d(q, 2, 2, 0, ceil_mode=True)),
                ("aavg", F.adaptive_avg_pool2d(q, (1, 1))), ("aavg43", F.adaptive_avg_pool2d(q, (4, 3))),
                ("cat", T.cat([q, q2], 1))):
    out[name] = r.int_repr().numpy()

xq = T.quantize_per_tensor(arr(16, 64, scale=2), 0.05, 128, T.quint8)
w = arr(32, 64, scale=0.3)
b = arr(32)
weights = {"pt": T.quantize_per_tensor(w, 0.01, 0, T.qint8),
           "pc": T.quantize_per_channel(w, T.tensor(np.linspace(0.005, 0.02, 32)), T.zeros(32, dtype=T.int64), 0, T.qint8)}
for name, wq in weights.items():
    for cls in (nnq.Linear, nniq.LinearReLU):
        layer = cls(64, 32)
        layer.set_weight_bias(wq, b)
        layer.scale, layer.zero_point = 0.2, 64
        out[f"{cls.__name__}_{name}"] = layer(xq).int_repr().numpy()
    dyn = nnq.dynamic.Linear(64, 32)
    dyn.set_weight_bias(wq, b)
    out["dynamic_" + name] = dyn(xq.dequantize()).numpy()

xc = T.quantize_per_tensor(arr(2, 8, 9, 9, scale=2), 0.05, 100, T.quint8)
for name, (groups, stride, relu, per_channel) in {"conv": (1, 1, False, False), "conv_relu_pc": (1, 2, True, True),
                                                   "dwconv": (8, 2, True, True), "grouped": (2, 1, False, True)}.items():
    wc = arr(16, 8 // groups, 3, 3, scale=0.3)
    wq = (T.quantize_per_channel(wc, T.tensor(np.linspace(0.005, 0.02, 16)), T.zeros(16, dtype=T.int64), 0, T.qint8)
          if per_channel else T.quantize_per_tensor(wc, 0.01, 0, T.qint8))
    conv = (nniq.ConvReLU2d if relu else nnq.Conv2d)(8, 16, 3, stride=stride, padding=1, groups=groups)
    conv.set_weight_bias(wq, arr(16))
    conv.scale, conv.zero_point = 0.3, 70
    out[name] = conv(xc).int_repr().numpy()

net = static_net()
xs = arr(4, 3, 8, 8)
out["static_net"] = net(xs).numpy()
out["static_fc2_weight"] = net.fc2.weight().int_repr().numpy()
out["static_scales"] = np.array([net.conv1.scale, net.conv2.scale, net.skip.scale, net.fc1.scale, net.fc2.scale])

d = fill(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), scale=1.0)
xd = arr(5, 8)
out["quantize_dynamic"] = tq.quantize_dynamic(d, {nn.Linear}, dtype=T.qint8)(xd).numpy()
out["quantize_dynamic_pc"] = tq.quantize_dynamic(d, {nn.Linear: tq.per_channel_dynamic_qconfig})(xd).numpy()
out["fp16_dynamic"] = tq.quantize_dynamic(d, {nn.Linear}, dtype=T.float16)(xd).detach().numpy()

# HistogramObserver (get_default_qconfig's): the chosen range, and the histogram it searched
cases = {"normal": [arr(64, 100) for _ in range(3)], "growing": [arr(1000, scale=k + 1) for k in range(4)],
         "heavy": [T.tensor(rng.standard_t(2, size=5000).astype(np.float32)) for _ in range(2)],
         "one_value_first": [T.full((10,), 0.7), arr(300)]}
for name, batches in cases.items():
    for backend in ("x86", "qnnpack"):
        observer = tq.get_default_qconfig(backend).activation()
        for b in batches:
            observer(b)
        scale, zero_point = observer.calculate_qparams()
        out[f"histogram_{name}_{backend}"] = observer.histogram.numpy()
        out[f"histogram_qparams_{name}_{backend}"] = np.array([float(scale[0]), float(zero_point[0])])
# embedding tables quantized per row (float qparams): prepare/convert, quantize_dynamic, bags with
# offsets, include_last_offset, 2-d indices, per_sample_weights and empty bags
tables = nn.Sequential(nn.EmbeddingBag(40, 13, mode="sum"), nn.Embedding(40, 13))
fill(tables, scale=2.0)
tables[0].qconfig = tables[1].qconfig = tq.float_qparams_weight_only_qconfig
qtables = tq.convert(tq.prepare(tables))
bag, emb = qtables[0], qtables[1]
qw = bag.weight()
out["emb_table"] = qw.int_repr().numpy()
out["emb_qparams"] = np.stack([qw.q_per_channel_scales().numpy(), qw.q_per_channel_zero_points().numpy()])
idx = T.tensor(rng.integers(0, 40, 23))
offsets = T.tensor([0, 5, 5, 12, 20])
out["emb_bag"] = bag(idx, offsets).numpy()
out["emb_bag_psw"] = bag(idx, offsets, per_sample_weights=arr(23)).numpy()
out["emb_bag_2d"] = bag(idx[:20].reshape(4, 5)).numpy()
last = nnq.EmbeddingBag(40, 13, include_last_offset=True)
last.set_weight(qw)
out["emb_bag_last"] = last(idx.to(T.int32), T.tensor([0, 3, 3, 23], dtype=T.int32)).numpy()
out["emb_lookup"] = emb(idx.reshape(23, 1)).numpy()
out["emb_dynamic"] = tq.quantize_dynamic(tables, dtype=T.quint8)[0](idx, offsets).numpy()
# QFunctional's scalar forms: the zero point (add) or scale (mul) moves, or the integers are requantized
qf = nnq.QFunctional()
for k, (s, z, dt) in enumerate([(0.05, 128, T.quint8), (0.1, 250, T.quint8), (0.04, -5, T.qint8),
                                 (0.03, 3, T.quint8)]):
    q = T.quantize_per_tensor(arr(300, scale=3.0), s, z, dt)
    for j, c in enumerate((0.0, 0.37, -0.37, 5.0, -5.0, 12.0, 0.075, -0.025)):
        for name, r in (("add", qf.add_scalar(q, c)), ("mul", qf.mul_scalar(q, c))):
            out[f"scalar_{name}_{k}_{j}"] = np.concatenate([r.int_repr().numpy().astype(np.float64),
                                                            [r.q_scale(), r.q_zero_point()]])
# quantized batch norm: the function (quint8 4-d, qint8 3-d) and the module
qbx = T.quantize_per_tensor(arr(2, 40, 6, 5, scale=2.0), 0.05, 121, T.quint8)
bn_w, bn_b, bn_m = arr(40), arr(40), arr(40, scale=0.3)
bn_v = T.tensor(rng.uniform(0.5, 2, 40).astype(np.float32))
out["qbn"] = T.quantized_batch_norm(qbx, bn_w, bn_b, bn_m, bn_v, 1e-5, 0.07, 101).int_repr().numpy()
out["qbn_s8"] = T.quantized_batch_norm(T.quantize_per_tensor(arr(3, 7, 9, scale=2.0), 0.03, -3, T.qint8), bn_w[:7],
                                       bn_b[:7], bn_m[:7], bn_v[:7], 1e-3, 0.02, 5).int_repr().numpy()
qbn = nnq.BatchNorm2d(40)
with T.no_grad():
    for name, value in (("weight", bn_w), ("bias", bn_b), ("running_mean", bn_m), ("running_var", bn_v)):
        getattr(qbn, name).copy_(value)
qbn.scale, qbn.zero_point = T.tensor(0.06), T.tensor(99)
out["qbn_module"] = qbn(qbx).int_repr().numpy()
out["linspace32"] = T.linspace(-4.49411726, 3.94554973, 32769).numpy()
out["linspace_half"] = T.linspace(-3.0, 7.0, 1001, dtype=T.float16).float().numpy()
out["linspace_bf16"] = T.linspace(-3.0, 7.0, 1001, dtype=T.bfloat16).float().numpy()
np.savez(sys.argv[2], **out)
"""

CHECKPOINT = COMMON + """
write, read = sys.argv[2], sys.argv[3]
net = static_net()
if read == "-":
    table = nn.EmbeddingBag(10, 6); table.qconfig = tq.float_qparams_weight_only_qconfig
    # kept alive until saved: PyTorch 2.13's unpacked weight reads its scales from the packed
    # parameters' memory, so a temporary module's state dict saves whatever reuses that memory
    bag = nnq.EmbeddingBag.from_float(fill(table))
    T.save({"state": net.state_dict(), "q": T.quantize_per_tensor(arr(3, 4), 0.1, 5, T.quint8),
            "bag": bag.state_dict(),
            "pc": T.quantize_per_channel(arr(3, 4), T.tensor([0.1, 0.2, 0.3]), T.tensor([0, 1, 2]), 0, T.qint8)}, write)
else:  # the other library's file, loaded with weights_only=True (the default)
    got = T.load(read)
    net.load_state_dict(got["state"])
    bag = nnq.EmbeddingBag(10, 6)
    bag.load_state_dict(got["bag"])
    np.savez(write + ".npz", out=net(arr(4, 3, 8, 8)).numpy(), q=got["q"].int_repr().numpy(),
             bag=bag(T.tensor([1, 2, 9, 0]), T.tensor([0, 2])).numpy(),
             q_params=np.array([got["q"].q_scale(), got["q"].q_zero_point()]), pc=got["pc"].dequantize().numpy())
"""


def _run(script: str, tmp_path, name: str, pythons: dict, args_for) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(script)
    for lib, python in pythons.items():
        done = subprocess.run([python, str(path), lib, *args_for(lib)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr


def test_same_bits_as_torch(tmp_path):
    pythons = {"torch": TORCH_PYTHON, "ember": sys.executable}
    _run(SCRIPT, tmp_path, "quantized_parity", pythons, lambda lib: [str(tmp_path / f"{lib}.npz")])
    theirs, ours = np.load(tmp_path / "torch.npz"), np.load(tmp_path / "ember.npz")
    assert sorted(theirs.files) == sorted(ours.files)
    # Calibration runs the float model, whose float32 GEMMs round differently from PyTorch's (MKL):
    # an observed range, and so a scale, can differ in its last float32 bit; FBGEMM's float16
    # GEMM sums in an order of its own. Those are compared to float32 rounding.
    rounding = {"static_net", "static_scales", "fp16_dynamic"}
    for key in theirs.files:
        if key.startswith("histogram_") and "qparams" not in key:
            # where the range grows, old bins are spread onto new ones by their pieces' midpoints, and a
            # midpoint that falls on an edge within float rounding may land on either side
            assert np.abs(ours[key] - theirs[key]).max() <= 1.0 and ours[key].sum() == theirs[key].sum(), key
        elif key in rounding:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


def test_checkpoints_cross_both_ways(cross_checkpoints):
    results = cross_checkpoints(CHECKPOINT)
    for key in ("q", "q_params", "pc", "bag"):
        np.testing.assert_array_equal(results["ember"][key], results["torch"][key], err_msg=key)
    # each library calibrated its own writer's net: scales may differ in the last float32 bit
    np.testing.assert_allclose(results["ember"]["out"], results["torch"]["out"], rtol=1e-5, atol=1e-6)
