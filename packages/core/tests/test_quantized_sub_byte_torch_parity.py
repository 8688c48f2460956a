"""quint4x2 / quint2x4 against PyTorch's CPU build: one script runs with `T = torch` (in its own
interpreter, named by EMBER_TORCH_PYTHON) and with `T = ember`, and every result must be equal bit
for bit: quantize_per_tensor (half steps, NaN, infinities, zero points past the code range) and
per channel with float qparams, int_repr's packed bytes and dequantize; 4-bit EmbeddingBag and
Embedding tables made by prepare/convert and by quantize_dynamic, looked up with offsets,
per-sample weights, include_last_offset and empty bags. Checkpoints of those tensors and state
dicts cross both ways. Without EMBER_TORCH_PYTHON these tests are skipped;
tests/test_quantized_sub_byte.py holds the NumPy references."""

import numpy as np

SCRIPT = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")  # PyTorch 2.13 deprecates its quantized tensors
T = __import__(sys.argv[1])
nn, tq, nnq = T.nn, T.ao.quantization, T.ao.nn.quantized
rng = np.random.default_rng(0)
out = {}

half_steps = (rng.integers(-40, 40, 4000) * 0.05 + 0.025).astype(np.float32)
edges = np.float32([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, 0.0, -0.0])
x = T.tensor(np.concatenate([half_steps, edges, rng.normal(size=1001).astype(np.float32)]))
for name in ("quint4x2", "quint2x4"):
    dtype = getattr(T, name)
    for zp in (0, 3, 20):
        q = T.quantize_per_tensor(x, 0.1, zp, dtype)
        out[f"{name}_zp{zp}_ints"] = q.int_repr().numpy()
        out[f"{name}_zp{zp}_values"] = q.dequantize().numpy()
    w = T.tensor(rng.normal(size=(6, 9)).astype(np.float32))
    for axis in (0, 1):
        n = w.shape[axis]
        scales = T.tensor((rng.random(n) * 0.3 + 0.05).astype(np.float32))
        points = T.tensor((rng.random(n) * 3).astype(np.float32))
        q = T.quantize_per_channel(w, scales, points, axis, dtype)
        out[f"{name}_pc{axis}_ints"] = q.int_repr().numpy()
        out[f"{name}_pc{axis}_values"] = q.dequantize().numpy()


def fill(module, scale):
    with T.no_grad():
        module.weight.copy_(T.tensor(rng.normal(size=tuple(module.weight.shape)).astype(np.float32) * scale))
    return module


indices = T.tensor([1, 2, 9, 0, 3, 3, 7, 7, 7, 11])
offsets = T.tensor([0, 2, 2, 6])
weights = T.tensor(rng.normal(size=10).astype(np.float32))
for dim in (8, 16, 64):
    float_bag = fill(nn.EmbeddingBag(12, dim, mode="sum"), 0.5 + dim)
    float_bag.qconfig = tq.float_qparams_weight_only_qconfig_4bit
    # the observer's row parameters (the converted table's q_per_channel_scales() in PyTorch 2.13 can
    # read freed memory: its scales view a vector of the packed parameters)
    observer = tq.default_float_qparams_observer_4bit()
    observer(float_bag.weight)
    scales, points = observer.calculate_qparams()
    out[f"bag{dim}_scales"], out[f"bag{dim}_points"] = scales.numpy(), points.numpy()
    model = nn.Sequential(float_bag)
    tq.prepare(model, inplace=True)
    tq.convert(model, inplace=True)
    bag = model[0]
    out[f"bag{dim}_table"] = bag.weight().int_repr().numpy()
    out[f"bag{dim}_sum"] = bag(indices, offsets).numpy()
    out[f"bag{dim}_weighted"] = bag(indices, offsets, per_sample_weights=weights).numpy()
    last = nnq.EmbeddingBag(12, dim, include_last_offset=True, dtype=T.quint4x2)
    last.set_weight(bag.weight())
    out[f"bag{dim}_last"] = last(indices, T.tensor([0, 2, 2, 6, 10])).numpy()
    dynamic = tq.quantize_dynamic(nn.Sequential(fill(nn.EmbeddingBag(12, dim, mode="sum"), 1.0)),
                                  dtype=T.quint4x2)
    out[f"dyn{dim}_sum"] = dynamic[0](indices, offsets).numpy()
    table = nnq.Embedding(12, dim, dtype=T.quint4x2)
    table.set_weight(bag.weight())
    out[f"emb{dim}"] = table(T.tensor([[3, 4], [5, 11]])).numpy()
np.savez(sys.argv[2], **out)
"""

CHECKPOINT = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")
T = __import__(sys.argv[1])
nn, tq, nnq = T.nn, T.ao.quantization, T.ao.nn.quantized
results, source = sys.argv[2], sys.argv[3]
if source == "-":  # write
    rng = np.random.default_rng(3)
    x = T.tensor(rng.normal(size=(5, 7)).astype(np.float32))
    bag = nn.EmbeddingBag(10, 6, mode="sum")
    with T.no_grad():
        bag.weight.copy_(T.tensor(rng.normal(size=(10, 6)).astype(np.float32)))
    model = tq.quantize_dynamic(nn.Sequential(bag), dtype=T.quint4x2)
    T.save({"q4": T.quantize_per_tensor(x, 0.1, 3, T.quint4x2), "q2": T.quantize_per_tensor(x, 0.2, 1, T.quint2x4),
            "pc": T.quantize_per_channel(x, T.ones(5) * 0.1, T.arange(5).float(), 0, T.quint4x2),
            "state": model.state_dict()}, results)
else:  # read
    got = T.load(source, weights_only=False)
    bag = tq.quantize_dynamic(nn.Sequential(nn.EmbeddingBag(10, 6, mode="sum")), dtype=T.quint4x2)
    bag.load_state_dict(got["state"])
    np.savez(results, q4=got["q4"].int_repr().numpy(), q2=got["q2"].dequantize().numpy(),
             pc=got["pc"].dequantize().numpy(), q4_params=np.array([got["q4"].q_scale(), got["q4"].q_zero_point()]),
             bag=bag[0](T.tensor([1, 2, 9, 0]), T.tensor([0, 2])).numpy())
"""


def test_same_bits_as_torch(run_torch_and_ember):
    theirs, ours = run_torch_and_ember(SCRIPT)
    for key in theirs:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


def test_checkpoints_cross_both_ways(cross_checkpoints):
    results = cross_checkpoints(CHECKPOINT)
    for key in ("q4", "q2", "pc", "q4_params", "bag"):
        np.testing.assert_array_equal(results["ember"][key], results["torch"][key], err_msg=key)
