"""quint4x2 and quint2x4 (Note [sub-byte quantized tensors] in native/include/ember/quantizer.h):
quantize / dequantize / int_repr against a NumPy reference of PyTorch's loops, the packing, the
views they allow and refuse, copies, checkpoints, and the 4-bit quantized embedding tables against
a float64 reference. tests/test_quantized_sub_byte_torch_parity.py checks the same bits as PyTorch."""

import io
import pickle

import numpy as np
import pytest

import ember
from ember.ao import quantization as tq
from ember.ao.nn import quantized as nnq

BITS = {ember.quint4x2: 4, ember.quint2x4: 2}
SUB_BYTE = list(BITS)


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """PyTorch's packing: element i in bits (i % k) * bits of byte i // k."""
    k = 8 // bits
    flat = codes.reshape(-1).astype(np.uint8)
    out = np.zeros(-(-flat.size // k), dtype=np.uint8)
    for i, c in enumerate(flat):
        out[i // k] |= np.uint8(c << ((i % k) * bits))
    return out


def per_tensor_codes(x: np.ndarray, scale: float, zero_point: int, bits: int) -> np.ndarray:
    """PyTorch's sub-byte loop in float32: lrint(nearbyint(x * (1 / scale)) + zero_point), clamped;
    what lrint cannot represent (NaN, inf, beyond int64) gives 0."""
    inv = np.float32(1.0) / np.float32(scale)
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.rint(x.astype(np.float32) * inv).astype(np.float32) + np.float32(zero_point)
    ok = np.abs(v) < np.float32(9.2233715e18)
    codes = np.where(ok, np.clip(np.rint(np.where(ok, v, 0)), 0, (1 << bits) - 1), 0)
    return codes.astype(np.uint8)


@pytest.mark.parametrize("dtype", SUB_BYTE)
@pytest.mark.parametrize("shape", [(3, 5), (4, 8), (7,), (), (0, 3), (2, 3, 3)])
def test_quantize_per_tensor_packs_as_pytorch(dtype, shape):
    rng = np.random.default_rng(len(shape))
    x = np.asarray(rng.normal(size=shape) * 0.6, dtype=np.float32)
    q = ember.quantize_per_tensor(ember.from_numpy(x), 0.1, 3, dtype)
    codes = per_tensor_codes(x, 0.1, 3, BITS[dtype])
    assert q.dtype == dtype and tuple(q.shape) == shape and q.element_size() == 1
    assert q.is_quantized and q.qscheme() is ember.per_tensor_affine
    assert (q.q_scale(), q.q_zero_point()) == (0.1, 3)
    np.testing.assert_array_equal(q.int_repr().numpy(), pack(codes, BITS[dtype]))
    want = ((codes.astype(np.float32) - np.float32(3)) * np.float32(0.1)).astype(np.float32)
    np.testing.assert_array_equal(q.dequantize().numpy(), want)


@pytest.mark.parametrize("dtype", SUB_BYTE)
def test_quantize_per_tensor_edges(dtype):
    bits = BITS[dtype]
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.25, 0.35, -0.05, 0.05, 0.15, 1.45, 1.55, 0.0],
                 dtype=np.float32)
    for zero_point in (0, 3, 20, 255):
        q = ember.quantize_per_tensor(ember.from_numpy(x), 0.1, zero_point, dtype)
        np.testing.assert_array_equal(q.int_repr().numpy(), pack(per_tensor_codes(x, 0.1, zero_point, bits), bits))
    # a transposed (non-contiguous) input quantizes its values in row-major order
    y = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.05
    q = ember.quantize_per_tensor(ember.from_numpy(y).t(), 0.05, 0, dtype)
    np.testing.assert_array_equal(q.int_repr().numpy(), pack(per_tensor_codes(y.T.copy(), 0.05, 0, bits), bits))
    # a broadcast (expanded) input too
    row = ember.tensor([0.0, 0.1, 0.2]).expand(4, 3)
    np.testing.assert_array_equal(ember.quantize_per_tensor(row, 0.1, 0, dtype).dequantize().numpy(),
                                  np.tile(np.float32([0.0, 0.1, 0.2]), (4, 1)))


@pytest.mark.parametrize("dtype", SUB_BYTE)
def test_bad_quantize_arguments(dtype):
    x = ember.randn(4)
    with pytest.raises(RuntimeError, match="zero_point 256 is above upper bound"):
        ember.quantize_per_tensor(x, 0.1, 256, dtype)
    with pytest.raises(RuntimeError, match="zero_point -1 is below lower bound"):
        ember.quantize_per_tensor(x, 0.1, -1, dtype)
    with pytest.raises(RuntimeError, match="positive, finite scale"):
        ember.quantize_per_tensor(x, 0.0, 0, dtype)
    with pytest.raises(RuntimeError, match="quantizes only a float32 tensor"):
        ember.quantize_per_tensor(x.double(), 0.1, 0, dtype)
    with pytest.raises(NotImplementedError, match="only with floating zero points"):
        ember.quantize_per_channel(ember.randn(2, 4), ember.ones(2), ember.zeros(2, dtype=ember.int64), 0, dtype)
    with pytest.raises(NotImplementedError, match="cannot make a quint"):
        ember.empty(3, dtype=dtype)


@pytest.mark.parametrize("dtype", SUB_BYTE)
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_per_channel_float_qparams(dtype, axis):
    bits = BITS[dtype]
    rng = np.random.default_rng(axis)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    channels = x.shape[axis]
    scales = (rng.random(channels) * 0.3 + 0.05).astype(np.float32)
    points = (rng.random(channels) * 4).astype(np.float32)
    q = ember.quantize_per_channel(ember.from_numpy(x), ember.from_numpy(scales), ember.from_numpy(points), axis,
                                   dtype)
    shape = [1, 1]
    shape[axis] = channels
    s, z = scales.reshape(shape), points.reshape(shape)
    codes = np.clip(np.rint(x * (np.float32(1) / s) + z), 0, (1 << bits) - 1).astype(np.uint8)
    assert q.qscheme() is ember.per_channel_affine_float_qparams and q.q_per_channel_axis() == axis
    np.testing.assert_array_equal(q.int_repr().numpy(), pack(codes, bits))
    np.testing.assert_array_equal(q.dequantize().numpy(), ((codes.astype(np.float32) - z) * s).astype(np.float32))


@pytest.mark.parametrize("dtype", SUB_BYTE)
def test_views_reshape_only(dtype):
    x = ember.arange(24, dtype=ember.float32).reshape(2, 3, 4) * 0.01
    q = ember.quantize_per_tensor(x, 0.01, 0, dtype)
    for view in (q.view(6, 4), q.reshape(24), q.flatten(), q.unsqueeze(0), q.view(2, 12), q.detach(),
                 q.reshape(1, 2, 3, 4).squeeze(0), q.contiguous()):
        np.testing.assert_array_equal(view.dequantize().numpy().reshape(-1), q.dequantize().numpy().reshape(-1))
        assert view.dtype == dtype
    refused = [lambda: q.transpose(0, 1), lambda: q.t() if q.dim() == 2 else q.permute(2, 1, 0),
               lambda: q[1], lambda: q[:, 1:], lambda: q.narrow(2, 1, 2), lambda: q.expand(3, 2, 3, 4),
               lambda: q.select(0, 1), lambda: q.unbind(0), lambda: q.chunk(2, 2)]
    for make in refused:
        with pytest.raises(NotImplementedError, match="packs .* codes per byte, so its views only reshape it"):
            make()
    with pytest.raises(NotImplementedError, match="not implemented for quantized tensors"):
        ember.quantize_per_tensor(ember.randn(2, 3, 4, 5), 0.1, 0, dtype).contiguous(
            memory_format=ember.channels_last)


@pytest.mark.parametrize("dtype", SUB_BYTE)
def test_copies_and_other_ops(dtype):
    q = ember.quantize_per_tensor(ember.randn(5, 3), 0.2, 2, dtype)
    c = q.clone()
    assert c.data_ptr() != q.data_ptr()
    np.testing.assert_array_equal(c.int_repr().numpy(), q.int_repr().numpy())
    assert c.q_scale() == 0.2 and c.q_zero_point() == 2
    with pytest.raises(NotImplementedError, match="not implemented for quantized tensors"):
        q + 1
    with pytest.raises(NotImplementedError, match="codes are packed several to a byte"):
        ember.relu(q)
    with pytest.raises(TypeError, match="dequantize\\(\\) gives its values"):
        q.tolist()
    text = repr(q)
    assert f"dtype=ember.{dtype.__repr__().split('.')[-1]}" in text and "scale=0.2, zero_point=2" in text


@pytest.mark.parametrize("dtype", SUB_BYTE)
def test_make_from_codes(dtype):
    bits = BITS[dtype]
    codes = np.arange(15, dtype=np.uint8).reshape(3, 5) % (1 << bits)
    q = ember._make_per_tensor_quantized_tensor(ember.from_numpy(codes), 0.5, 1, dtype=dtype)
    np.testing.assert_array_equal(q.int_repr().numpy(), pack(codes, bits))
    np.testing.assert_array_equal(q.dequantize().numpy(), (codes.astype(np.float32) - 1) * 0.5)
    pc = ember._make_per_channel_quantized_tensor(ember.from_numpy(codes), ember.tensor([1.0, 2.0, 0.5]),
                                                  ember.tensor([0.0, 1.0, 0.5]), 0, dtype=dtype)
    assert pc.dtype == dtype and pc.qscheme() is ember.per_channel_affine_float_qparams
    with pytest.raises(RuntimeError, match=f"holds codes 0 to {(1 << bits) - 1}, but element 0 is {1 << bits}"):
        ember._make_per_tensor_quantized_tensor(ember.full((2,), 1 << bits, dtype=ember.uint8), 0.5, 1, dtype=dtype)
    with pytest.raises(RuntimeError, match="expected ember.uint8 integers"):
        ember._make_per_tensor_quantized_tensor(ember.zeros(2, dtype=ember.int8), 0.5, 1, dtype=dtype)
    with pytest.raises(NotImplementedError, match="only with floating zero points"):
        ember._make_per_channel_quantized_tensor(ember.from_numpy(codes), ember.ones(3), ember.zeros(3, dtype=ember.int64),
                                                 0, dtype=dtype)
    # the quantizer's empty_quantized keeps the dtype
    assert ember.empty_quantized([4], q).dtype == dtype


@pytest.mark.parametrize("dtype", SUB_BYTE)
def test_pickle_and_checkpoints(dtype, tmp_path):
    q = ember.quantize_per_tensor(ember.randn(3, 5), 0.1, 3, dtype)
    pc = ember.quantize_per_channel(ember.randn(3, 5), ember.tensor([0.1, 0.2, 0.3]), ember.tensor([1.0, 2.0, 3.5]),
                                    0, dtype)
    empty = ember.quantize_per_tensor(ember.zeros(0, 3), 0.1, 3, dtype)
    for t in (q, pc, empty):
        back = pickle.loads(pickle.dumps(t))
        assert back.dtype == dtype and back.shape == t.shape and back.qscheme() is t.qscheme()
        np.testing.assert_array_equal(back.int_repr().numpy(), t.int_repr().numpy())
    buffer = io.BytesIO()
    ember.save({"q": q, "pc": pc, "view": q.view(15)}, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer)
    for key, t in (("q", q), ("pc", pc), ("view", q.view(15))):
        assert loaded[key].dtype == dtype and loaded[key].shape == t.shape
        np.testing.assert_array_equal(loaded[key].dequantize().numpy(), t.dequantize().numpy())
    # a record whose packed bytes do not fit its shape is refused
    record = bytearray(ember.serialization.tensor_to_bytes(q))
    with pytest.raises(ValueError, match="bytes hold the 15 codes"):
        ember.serialization.tensor_from_bytes(bytes(record[:-1]))
    with pytest.raises(ValueError, match="bytes hold the 15 codes"):
        ember.serialization.tensor_from_bytes(bytes(record) + b"\0")


def _bag_reference(table: np.ndarray, scales: np.ndarray, points: np.ndarray, indices, offsets, weights=None):
    """float64 sums of the dequantized rows with the scale and bias rounded to float16 (4-bit tables)."""
    s = scales.astype(np.float16).astype(np.float64)
    b = (-(points * scales).astype(np.float32)).astype(np.float16).astype(np.float64)
    bounds = list(offsets) + [len(indices)]
    out = np.zeros((len(offsets), table.shape[1]))
    for bag in range(len(offsets)):
        for i in range(bounds[bag], bounds[bag + 1]):
            w = 1.0 if weights is None else float(weights[i])
            r = indices[i]
            out[bag] += w * (s[r] * table[r] + b[r])
    return out


@pytest.mark.parametrize("dim", [8, 7])
def test_4bit_embedding_bag(dim):
    ember.manual_seed(0)
    float_bag = ember.nn.EmbeddingBag(10, dim, mode="sum")
    float_bag.qconfig = tq.float_qparams_weight_only_qconfig_4bit
    bag = nnq.EmbeddingBag.from_float(float_bag)
    weight = bag.weight()
    assert weight.dtype == ember.quint4x2 and weight.qscheme() is ember.per_channel_affine_float_qparams
    assert bag.dtype == ember.quint4x2 and "dtype=ember.quint4x2" in repr(bag)
    # the observer's row ranges over 15 steps, and the table dequantizes within half a step of the weights
    w = float_bag.weight.detach().numpy()
    scales = weight.q_per_channel_scales().numpy()
    np.testing.assert_allclose(scales, (w.max(1) - w.min(1)) / 15, rtol=1e-6)
    assert np.all(np.abs(weight.dequantize().numpy() - w) <= scales[:, None] / 2 + 1e-6)
    codes = np.rint(weight.dequantize().numpy() / scales[:, None] + weight.q_per_channel_zero_points().numpy()[:, None])
    points = weight.q_per_channel_zero_points().numpy()
    indices, offsets = [1, 2, 9, 0, 3, 3], [0, 2, 2]
    per_sample = np.float32([0.5, 1.0, 2.0, -1.0, 0.25, 3.0])
    got = bag(ember.tensor(indices), ember.tensor(offsets)).numpy()
    np.testing.assert_allclose(got, _bag_reference(codes, scales, points, indices, offsets), rtol=1e-6, atol=1e-6)
    got = bag(ember.tensor(indices), ember.tensor(offsets), per_sample_weights=ember.from_numpy(per_sample)).numpy()
    np.testing.assert_allclose(got, _bag_reference(codes, scales, points, indices, offsets, per_sample), rtol=1e-6,
                               atol=1e-5)
    assert got[1].tolist() == [0.0] * dim  # an empty bag
    # 2-d indices without offsets: one bag per row
    two_d = bag(ember.tensor([[1, 2], [9, 0]])).numpy()
    np.testing.assert_array_equal(two_d, bag(ember.tensor([1, 2, 9, 0]), ember.tensor([0, 2])).numpy())
    with pytest.raises(RuntimeError, match="Index 0 is out of bounds: 10, range 0 to 10"):
        bag(ember.tensor([10]), ember.tensor([0]))


def test_4bit_embedding_and_quantize_dynamic(tmp_path):
    ember.manual_seed(1)
    model = ember.nn.Sequential(ember.nn.EmbeddingBag(12, 6, mode="sum"), ember.nn.Linear(6, 2))
    quantized = tq.quantize_dynamic(model, dtype=ember.quint4x2)
    assert isinstance(quantized[0], nnq.EmbeddingBag) and quantized[0].dtype == ember.quint4x2
    assert type(quantized[1]) is ember.nn.Linear  # only the tables, as PyTorch's default for quint4x2
    table = nnq.Embedding(12, 6, dtype=ember.quint4x2)
    table.set_weight(quantized[0].weight())
    rows = table(ember.tensor([[3, 4], [5, 11]])).numpy()
    one_bags = quantized[0](ember.tensor([3, 4, 5, 11]), ember.arange(4)).numpy()
    np.testing.assert_array_equal(rows.reshape(4, 6), one_bags)
    # state dicts keep the packed table
    path = tmp_path / "bag.pt"
    ember.save(quantized.state_dict(), path)
    fresh = tq.quantize_dynamic(ember.nn.Sequential(ember.nn.EmbeddingBag(12, 6, mode="sum"),
                                                    ember.nn.Linear(6, 2)), dtype=ember.quint4x2)
    fresh.load_state_dict(ember.load(path))
    np.testing.assert_array_equal(fresh[0].weight().int_repr().numpy(), quantized[0].weight().int_repr().numpy())
    with pytest.raises(NotImplementedError, match="Supports quint8 and quint4x2"):
        nnq.EmbeddingBag(4, 4, dtype=ember.quint2x4)
    with pytest.raises(RuntimeError, match="of dtype ember.quint4x2 takes a ember.quint4x2 weight"):
        table.set_weight(ember.quantize_per_channel(ember.randn(12, 6), ember.ones(12), ember.zeros(12), 0,
                                                    ember.quint8))
