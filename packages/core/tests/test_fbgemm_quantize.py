"""FBGEMM's row-wise quantized formats (ember.ops.fbgemm.*): byte layouts against a NumPy reference,
round trips, zero-size / 1-row / non-contiguous inputs, bad inputs, and byte-for-byte parity with
fbgemm_gpu 1.8 (run_fbgemm)."""

import numpy as np
import pytest

import ember

F = ember.ops.fbgemm


# ---- NumPy references of the layouts ----------------------------------------------------------------

def ref_fused8bit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32).reshape(-1, x.shape[-1])
    mn, mx = x.min(1, keepdims=True), x.max(1, keepdims=True)
    rng = (mx - mn).astype(np.float32)
    scale = (rng / np.float32(255)).astype(np.float32)
    inv = (np.float32(255) / (rng + np.float32(1e-8))).astype(np.float32)
    q = np.rint(((x - mn) * inv).astype(np.float32)).astype(np.uint8)
    qp = np.concatenate([scale, mn], 1).astype(np.float32).view(np.uint8)
    return np.concatenate([q, qp], 1)


def ref_fused_nbit(x: np.ndarray, bits: int) -> np.ndarray:
    x = x.astype(np.float32).reshape(-1, x.shape[-1])
    per, qmax = 8 // bits, (1 << bits) - 1
    out = []
    for row in x:
        mn = np.float32(np.float16(row.min()))
        rng = np.float32(row.max() - mn)
        scale = np.float32(np.float16(np.float32(1) if rng == 0 else rng / np.float32(qmax)))
        if scale == 0:
            scale = np.float32(1)
        inv = np.float32(1) / scale
        if np.isinf(inv):
            scale = inv = np.float32(1)
        q = np.clip(np.rint((row - mn) * inv), 0, qmax).astype(np.uint8)
        packed = np.zeros((len(row) + per - 1) // per, np.uint8)
        for i, v in enumerate(q):
            packed[i // per] |= v << ((i % per) * bits)
        out.append(np.concatenate([packed, np.array([scale, mn], np.float16).view(np.uint8)]))
    return np.array(out, np.uint8).reshape(len(x), -1)


def ref_dequant(q: np.ndarray, bits: int, float_qparams: bool) -> np.ndarray:
    n = 8 if float_qparams else 4
    qp = np.ascontiguousarray(q[:, -n:]).view(np.float32 if float_qparams else np.float16).astype(np.float64)
    data = q[:, :-n]
    per = 8 // bits
    codes = np.stack([(data >> (bits * j)) & ((1 << bits) - 1) for j in range(per)], -1).reshape(len(q), -1)
    return (codes * qp[:, :1] + qp[:, 1:2]).astype(np.float32)


def hfp8_decode(codes, ebits, bias):
    c = np.asarray(codes).astype(np.uint32)
    mag = ((c & 0x7F) << np.uint32(24 - (8 - ebits))).view(np.float32) * np.float32(2.0 ** (127 - bias))
    return (mag.view(np.uint32) | ((c & 0x80) << np.uint32(24))).view(np.float32)


def rand(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * rng.uniform(0.01, 10, shape[:-1] + (1,))).astype(np.float32)


# ---- 8-bit --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 7), (1, 16), (0, 4), (2, 3, 5), (4, 1), (3, 0)])
def test_fused8bit_layout_and_round_trip(shape):
    x = rand(shape)
    q = F.FloatToFused8BitRowwiseQuantized(ember.tensor(x))
    assert q.dtype == ember.uint8 and tuple(q.shape) == shape[:-1] + (shape[-1] + 8,)
    qn = q.numpy().reshape(-1, shape[-1] + 8)
    if shape[-1] > 0 and qn.size:
        np.testing.assert_array_equal(qn, ref_fused8bit(x))
    d = F.Fused8BitRowwiseQuantizedToFloat(q)
    assert d.dtype == ember.float32 and tuple(d.shape) == shape
    if qn.size and shape[-1] > 0:
        np.testing.assert_allclose(d.numpy().reshape(qn.shape[0], -1), ref_dequant(qn, 8, True), rtol=2e-7, atol=0)
        scale = qn[:, -8:-4].copy().view(np.float32)
        assert (np.abs(d.numpy().reshape(len(qn), -1) - x.reshape(len(qn), -1)) <= scale * 0.5 + 1e-5).all()


def test_fused8bit_constant_row_and_extremes():
    x = np.array([[3.0] * 6, [0.0] * 6, [-1e30, 1e30, 0, 0, 0, 0]], np.float32)
    q = F.FloatToFused8BitRowwiseQuantized(ember.tensor(x)).numpy()
    np.testing.assert_array_equal(q, ref_fused8bit(x))
    d = F.Fused8BitRowwiseQuantizedToFloat(ember.tensor(q)).numpy()
    np.testing.assert_array_equal(d[:2], x[:2])


def test_fused8bit_half_input_and_outputs():
    x = rand((6, 10))
    xh = x.astype(np.float16)
    q = F.FloatOrHalfToFused8BitRowwiseQuantized(ember.tensor(xh)).numpy()
    np.testing.assert_array_equal(q, ref_fused8bit(xh.astype(np.float32)))
    qt = ember.tensor(q)
    f32 = F.Fused8BitRowwiseQuantizedToFloatOrHalf(qt, 0).numpy()
    np.testing.assert_array_equal(f32, F.Fused8BitRowwiseQuantizedToFloat(qt).numpy())
    f16 = F.Fused8BitRowwiseQuantizedToFloatOrHalf(qt, 1)
    assert f16.dtype == ember.float16
    np.testing.assert_array_equal(f16.numpy(), f32.astype(np.float16))
    assert F.Fused8BitRowwiseQuantizedToFloatOrHalf(qt, 5).dtype == ember.bfloat16


def test_fused8bit_front_half_qparams():
    # the inference TBE's INT8 rows: fp16 scale and bias first
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256, (4, 6), dtype=np.uint8)
    qp = np.array([[0.5, -1.0]] * 4, np.float16).view(np.uint8)
    rows = np.concatenate([qp, codes], 1)
    out = F.Fused8BitRowwiseQuantizedToFloatOrHalf(ember.tensor(rows), 0, False, False).numpy()
    np.testing.assert_array_equal(out, codes * np.float32(0.5) - 1)


def test_non_contiguous_inputs():
    x = rand((8, 12))
    xt = ember.tensor(x).t()  # (12, 8), transposed strides
    np.testing.assert_array_equal(F.FloatToFused8BitRowwiseQuantized(xt).numpy(), ref_fused8bit(x.T.copy()))
    xs = ember.tensor(x)[::2, 1::2]
    np.testing.assert_array_equal(F.FloatToFusedNBitRowwiseQuantizedSBHalf(xs, 4).numpy(),
                                  ref_fused_nbit(x[::2, 1::2].copy(), 4))
    q = ember.tensor(ref_fused8bit(x))
    np.testing.assert_array_equal(F.Fused8BitRowwiseQuantizedToFloat(q[::2]).numpy(),
                                  F.Fused8BitRowwiseQuantizedToFloat(q).numpy()[::2])


# ---- N-bit --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("shape", [(5, 16), (1, 8), (0, 8), (3, 7), (2, 2, 5), (3, 1)])
def test_fused_nbit_layout_and_round_trip(bits, shape):
    x = rand(shape, seed=bits)
    per = 8 // bits
    q = F.FloatToFusedNBitRowwiseQuantizedSBHalf(ember.tensor(x), bits)
    packed = (shape[-1] + per - 1) // per
    assert q.dtype == ember.uint8 and tuple(q.shape) == shape[:-1] + (packed + 4,)
    qn = q.numpy().reshape(-1, packed + 4)
    if qn.size:
        np.testing.assert_array_equal(qn, ref_fused_nbit(x, bits))
    d = F.FusedNBitRowwiseQuantizedSBHalfToFloat(q, bits)
    assert tuple(d.shape) == shape[:-1] + (packed * per,)
    if qn.size:
        dn = d.numpy().reshape(len(qn), -1)
        np.testing.assert_allclose(dn, ref_dequant(qn, bits, False), rtol=2e-7, atol=0)
        scale = qn[:, -4:-2].copy().view(np.float16).astype(np.float32)
        err = np.abs(dn[:, :shape[-1]] - x.reshape(len(qn), -1))
        assert (err <= scale * 0.5 + np.abs(x.reshape(len(qn), -1)) * 2e-3 + 1e-3).all()


def test_fused_nbit_constant_rows():
    x = np.array([[2.5] * 8, [0.0] * 8], np.float32)
    for bits in (2, 4):
        q = F.FloatToFusedNBitRowwiseQuantizedSBHalf(ember.tensor(x), bits)
        np.testing.assert_array_equal(q.numpy(), ref_fused_nbit(x, bits))
        np.testing.assert_array_equal(F.FusedNBitRowwiseQuantizedSBHalfToFloat(q, bits).numpy(), x)


def test_fused_nbit_half_input_and_outputs():
    x = rand((4, 16)).astype(np.float16)
    q = F.FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf(ember.tensor(x), 4)
    np.testing.assert_array_equal(q.numpy(), ref_fused_nbit(x.astype(np.float32), 4))
    f32 = F.FusedNBitRowwiseQuantizedSBHalfToFloat(q, 4).numpy()
    f16 = F.FusedNBitRowwiseQuantizedSBHalfToFloatOrHalf(q, 4, 1)
    assert f16.dtype == ember.float16
    np.testing.assert_array_equal(f16.numpy(), f32.astype(np.float16))
    # scale and bias first, as the inference TBE stores INT4 rows
    qn = q.numpy()
    front = np.concatenate([qn[:, -4:], qn[:, :-4]], 1)
    np.testing.assert_array_equal(F.FusedNBitRowwiseQuantizedSBHalfToFloatOrHalf(ember.tensor(front), 4, 0,
                                                                                  False).numpy(), f32)


# ---- HFP8 ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ebits,bias,max_pos", [(4, 7, 240.0), (5, 15, 57344.0), (3, 4, 15.0)])
def test_hfp8_decode_all_codes_and_round_trip(ebits, bias, max_pos):
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    dec = F.HFP8QuantizedToFloat(ember.tensor(codes), ebits, bias).numpy()
    np.testing.assert_array_equal(dec, hfp8_decode(codes, ebits, bias))
    # every value up to max_pos encodes back to its own code (0x80, negative zero, aside)
    vals = dec.ravel()
    keep = (np.abs(vals) <= max_pos) & (codes.ravel() != 0x80)
    enc = F.FloatToHFP8Quantized(ember.tensor(vals[keep].reshape(1, -1)), ebits, bias, max_pos).numpy().ravel()
    np.testing.assert_array_equal(enc, codes.ravel()[keep])
    # other values round to a nearest representable one, and saturate at max_pos
    x = np.random.default_rng(0).standard_normal((50, 20)).astype(np.float32) * max_pos / 4
    y = F.HFP8QuantizedToFloat(F.FloatToHFP8Quantized(ember.tensor(x), ebits, bias, max_pos), ebits, bias).numpy()
    grid = np.sort(np.unique(vals[np.abs(vals) <= max_pos]))
    nearest = grid[np.abs(grid[None, :] - np.clip(x, -max_pos, max_pos).reshape(-1, 1)).argmin(1)].reshape(x.shape)
    np.testing.assert_array_equal(np.abs(y - x) <= np.abs(nearest - x) * (1 + 1e-6), True)


# ---- bad inputs ---------------------------------------------------------------------------------------

def test_bad_inputs():
    x = ember.tensor(rand((2, 8)))
    with pytest.raises(TypeError, match=r"\[FloatToFused8BitRowwiseQuantized\] expected input of dtype float32, "
                                        r"but got float16"):
        F.FloatToFused8BitRowwiseQuantized(x.half())
    with pytest.raises(TypeError, match="expected input of dtype float32, float16 or bfloat16, but got int64"):
        F.FloatOrHalfToFused8BitRowwiseQuantized(ember.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="expected an input of at least 1 dimension, but got a 0-D tensor"):
        F.FloatToFused8BitRowwiseQuantized(ember.tensor(1.0))
    with pytest.raises(TypeError, match=r"\[Fused8BitRowwiseQuantizedToFloat\] expected input of dtype uint8, but "
                                        r"got float32"):
        F.Fused8BitRowwiseQuantizedToFloat(x)
    with pytest.raises(ValueError, match=r"expected rows of at least 8 bytes \(fp32 scale and bias\), but got 7"):
        F.Fused8BitRowwiseQuantizedToFloat(ember.zeros(2, 7, dtype=ember.uint8))
    with pytest.raises(ValueError, match=r"expected rows of at least 4 bytes \(fp16 scale and bias\), but got 3"):
        F.FusedNBitRowwiseQuantizedSBHalfToFloat(ember.zeros(2, 3, dtype=ember.uint8), 4)
    with pytest.raises(ValueError, match="expected bit_rate 2, 4 or 8, but got 3"):
        F.FloatToFusedNBitRowwiseQuantizedSBHalf(x, 3)
    with pytest.raises(ValueError, match="expected bit_rate 2, 4 or 8, but got 1"):
        F.FusedNBitRowwiseQuantizedSBHalfToFloat(ember.zeros(2, 6, dtype=ember.uint8), 1)
    with pytest.raises(ValueError, match=r"expected output_dtype 0 \(FP32\), 1 \(FP16\) or 5 \(BF16\), but got 2"):
        F.Fused8BitRowwiseQuantizedToFloatOrHalf(ember.zeros(2, 9, dtype=ember.uint8), 2)
    with pytest.raises(ValueError, match="expected ebits in \\[1, 7\\], but got 8"):
        F.FloatToHFP8Quantized(x, 8, 7, 240.0)
    with pytest.raises(ValueError, match="expected exponent_bias in \\[0, 127\\], but got -1"):
        F.HFP8QuantizedToFloat(ember.zeros(2, 2, dtype=ember.uint8), 4, -1)
    with pytest.raises(ValueError, match="expected a positive max_pos, but got 0"):
        F.FloatToHFP8Quantized(x, 4, 7, 0.0)
    with pytest.raises(TypeError, match=r"\[HFP8QuantizedToFloat\] expected input of dtype uint8"):
        F.HFP8QuantizedToFloat(x, 4, 7)


# ---- parity with fbgemm_gpu ---------------------------------------------------------------------------

_FBGEMM_QUANT = """
ops = torch.ops.fbgemm
x = torch.from_numpy(inputs["x"])
result["q8"] = ops.FloatToFused8BitRowwiseQuantized(x).numpy()
result["d8"] = ops.Fused8BitRowwiseQuantizedToFloat(torch.from_numpy(result["q8"])).numpy()
result["q8h"] = ops.FloatOrHalfToFused8BitRowwiseQuantized(x.half()).numpy()
for od in (0, 1):
    result[f"d8_{od}"] = ops.Fused8BitRowwiseQuantizedToFloatOrHalf(torch.from_numpy(result["q8"]), od).float().numpy()
    result[f"d8f_{od}"] = ops.Fused8BitRowwiseQuantizedToFloatOrHalf(
        torch.from_numpy(inputs["front"]), od, False, False).float().numpy()
result["d8_5"] = ops.Fused8BitRowwiseQuantizedToFloatOrHalf(torch.from_numpy(result["q8"]), 5).float().numpy()
for b in (2, 4, 8):
    q = ops.FloatToFusedNBitRowwiseQuantizedSBHalf(x, b)
    result[f"n{b}"] = q.numpy()
    result[f"nd{b}"] = ops.FusedNBitRowwiseQuantizedSBHalfToFloat(q, b).numpy()
    result[f"n{b}h"] = ops.FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf(x.half(), b).numpy()
    result[f"nd{b}h"] = ops.FusedNBitRowwiseQuantizedSBHalfToFloatOrHalf(q, b, 1).float().numpy()
xf = torch.from_numpy(inputs["xf"])
for eb, bias, mp in ((4, 7, 240.0), (5, 15, 57344.0), (3, 4, 15.0)):
    result[f"h{eb}"] = ops.FloatToHFP8Quantized(xf, eb, bias, mp).numpy()
    result[f"hd{eb}"] = ops.HFP8QuantizedToFloat(torch.arange(256, dtype=torch.uint8).reshape(16, 16), eb, bias).numpy()
"""


def test_parity_with_fbgemm(run_fbgemm):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((400, 48)) * rng.uniform(1e-3, 100, (400, 1))).astype(np.float32)
    x[0] = 3.0
    x[1] = 0.0
    x[2] = np.linspace(-1, 1, 48)
    front = np.concatenate([np.array([[0.25, -2.0]] * 400, np.float16).view(np.uint8),
                            rng.integers(0, 256, (400, 48), dtype=np.uint8)], 1)
    xf = np.concatenate([x.ravel(), rng.standard_normal(4998).astype(np.float32) * 1e-3,
                         np.array([0, -0.0, 1e30, -1e30, 240, 241, 1e-9, 0.0625, 0.1, 7], np.float32)]).reshape(-1, 4)
    ref = run_fbgemm(_FBGEMM_QUANT, x=x, front=front, xf=xf)
    xe = ember.tensor(x)
    np.testing.assert_array_equal(F.FloatToFused8BitRowwiseQuantized(xe).numpy(), ref["q8"])
    np.testing.assert_array_equal(F.Fused8BitRowwiseQuantizedToFloat(ember.tensor(ref["q8"])).numpy(), ref["d8"])
    np.testing.assert_array_equal(F.FloatOrHalfToFused8BitRowwiseQuantized(xe.half()).numpy(), ref["q8h"])
    for od in (0, 1, 5):
        got = F.Fused8BitRowwiseQuantizedToFloatOrHalf(ember.tensor(ref["q8"]), od).float().numpy()
        want = ref[f"d8_{od}"]
        if od == 5:
            # FBGEMM rounds a bf16 tie away from zero (half an ulp added, then truncated), as Ember
            # does, except on CPUs with AVX512-BF16, where its vector path converts to nearest even.
            exact = F.Fused8BitRowwiseQuantizedToFloatOrHalf(ember.tensor(ref["q8"]), 0).numpy()
            nearest_even = ember.tensor(exact).bfloat16().float().numpy()
            tie = (exact.view(np.uint32) & 0xFFFF) == 0x8000
            want = np.where(tie & (want == nearest_even), got, want)
        np.testing.assert_array_equal(got, want)
    for od in (0, 1):
        got = F.Fused8BitRowwiseQuantizedToFloatOrHalf(ember.tensor(front), od, False, False).float().numpy()
        np.testing.assert_array_equal(got, ref[f"d8f_{od}"])
    for b in (2, 4, 8):
        np.testing.assert_array_equal(F.FloatToFusedNBitRowwiseQuantizedSBHalf(xe, b).numpy(), ref[f"n{b}"])
        np.testing.assert_array_equal(F.FusedNBitRowwiseQuantizedSBHalfToFloat(ember.tensor(ref[f"n{b}"]), b).numpy(),
                                      ref[f"nd{b}"])
        np.testing.assert_array_equal(F.FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf(xe.half(), b).numpy(),
                                      ref[f"n{b}h"])
        got = F.FusedNBitRowwiseQuantizedSBHalfToFloatOrHalf(ember.tensor(ref[f"n{b}"]), b, 1).float().numpy()
        np.testing.assert_array_equal(got, ref[f"nd{b}h"])
    for eb, bias, mp in ((4, 7, 240.0), (5, 15, 57344.0), (3, 4, 15.0)):
        np.testing.assert_array_equal(F.FloatToHFP8Quantized(ember.tensor(xf), eb, bias, mp).numpy(), ref[f"h{eb}"])
        codes = ember.tensor(np.arange(256, dtype=np.uint8).reshape(16, 16))
        np.testing.assert_array_equal(F.HFP8QuantizedToFloat(codes, eb, bias).numpy(), ref[f"hd{eb}"])
