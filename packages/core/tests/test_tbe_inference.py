"""ember.tbe.IntNBitTableBatchedEmbeddingBagsCodegen and fbgemm::int_nbit_split_embedding_codegen_lookup_function:
property tests against a plain NumPy reference (per-table EmbeddingBag loops over the dequantized
rows), bounds checks, bad inputs, and parity with fbgemm_gpu 1.8 (run_fbgemm)."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.tbe import (
    BoundsCheckMode,
    EmbeddingLocation,
    IntNBitTableBatchedEmbeddingBagsCodegen,
    PoolingMode,
    SparseType,
)
from ember.tbe._inference import rounded_row_size_in_bytes, unpadded_row_size_in_bytes

F = ember.ops.fbgemm
HOST = EmbeddingLocation.HOST
ALL_TYPES = [SparseType.FP32, SparseType.FP16, SparseType.BF16, SparseType.FP8, SparseType.INT8, SparseType.INT4,
             SparseType.INT2]
OUT_NP = {SparseType.FP32: np.float32, SparseType.FP16: np.float16, SparseType.BF16: np.float32}


# ---- reference ----------------------------------------------------------------------------------

def hfp8_decode(codes: np.ndarray, ebits: int, bias: int) -> np.ndarray:
    c = codes.astype(np.uint32)
    mag = ((c & 0x7F) << np.uint32(24 - (8 - ebits))).view(np.float32) * np.float32(2.0 ** (127 - bias))
    return (mag.view(np.uint32) | ((c & 0x80) << np.uint32(24))).view(np.float32)


def dequantize_rows(rows: np.ndarray, ty: SparseType, dim: int, ebits=4, bias=7) -> np.ndarray:
    """(n, unpadded bytes) uint8 rows -> (n, dim) float32, as the lookup reads them."""
    rows = np.ascontiguousarray(rows)
    n = rows.shape[0]
    if ty == SparseType.FP32:
        return rows.view(np.float32).reshape(n, dim)
    if ty == SparseType.FP16:
        return rows.view(np.float16).reshape(n, dim).astype(np.float32)
    if ty == SparseType.BF16:
        return (rows.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(n, dim)
    if ty == SparseType.FP8:
        return hfp8_decode(rows, ebits, bias).reshape(n, dim)
    bits = ty.bit_rate()
    per = 8 // bits
    sb = np.ascontiguousarray(rows[:, :4]).view(np.float16).astype(np.float32)
    data = rows[:, 4:]
    codes = np.stack([(data >> (bits * j)) & ((1 << bits) - 1) for j in range(per)], axis=-1).reshape(n, -1)[:, :dim]
    return (codes.astype(np.float64) * sb[:, :1] + sb[:, 1:2]).astype(np.float32)


def reference_forward(tables, feature_table_map, indices, offsets, pooling, weights=None):
    """tables: per table (n, dim) float32 arrays. Returns float64 (B, sum dims) or (len, dim)."""
    T = len(feature_table_map)
    B = (len(offsets) - 1) // T
    if pooling == PoolingMode.NONE:
        D = tables[0].shape[1]
        out = np.zeros((len(indices), D))
        for f in range(T):
            for b in range(B):
                for i in range(offsets[f * B + b], offsets[f * B + b + 1]):
                    out[i] = tables[feature_table_map[f]][indices[i]]
        return out
    dims = [tables[t].shape[1] for t in feature_table_map]
    out = np.zeros((B, sum(dims)))
    starts = np.cumsum([0, *dims])
    for f in range(T):
        tab = tables[feature_table_map[f]].astype(np.float64)
        for b in range(B):
            s, e = offsets[f * B + b], offsets[f * B + b + 1]
            acc = np.zeros(dims[f])
            for i in range(s, e):
                acc += (weights[i] if weights is not None else 1.0) * tab[indices[i]]
            if pooling == PoolingMode.MEAN and e > s:
                acc /= e - s
            out[b, starts[f]:starts[f + 1]] = acc
    return out


def random_table_bytes(rng, rows, dim, ty):
    """(weights, scale_bias) uint8 arrays shaped as split_embedding_weights() gives them."""
    if ty == SparseType.FP32:
        return rng.standard_normal((rows, dim)).astype(np.float32).view(np.uint8).reshape(rows, 4 * dim), None
    if ty == SparseType.FP16:
        return rng.standard_normal((rows, dim)).astype(np.float16).view(np.uint8).reshape(rows, 2 * dim), None
    if ty == SparseType.BF16:
        v = (rng.standard_normal((rows, dim)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return v.view(np.uint8).reshape(rows, 2 * dim), None
    if ty == SparseType.FP8:
        return rng.integers(0, 256, (rows, dim), dtype=np.uint8), None
    nbytes = unpadded_row_size_in_bytes(dim, ty) - 4
    sb = np.stack([rng.uniform(0.001, 0.1, rows), rng.uniform(-1, 1, rows)], -1).astype(np.float16)
    return rng.integers(0, 256, (rows, nbytes), dtype=np.uint8), sb.view(np.uint8).reshape(rows, 4)


def make_module(specs, rng, **kw):
    m = IntNBitTableBatchedEmbeddingBagsCodegen([(f"t{i}", r, d, ty, HOST) for i, (r, d, ty) in enumerate(specs)],
                                                **kw)
    pairs = [random_table_bytes(rng, r, d, ty) for r, d, ty in specs]
    m.assign_embedding_weights([(ember.tensor(w), None if sb is None else ember.tensor(sb)) for w, sb in pairs])
    tables = [dequantize_rows(w if sb is None else np.concatenate([sb, w], 1), ty, d)
              for (w, sb), (_, d, ty) in zip(pairs, specs, strict=True)]
    return m, tables, pairs


def out_np(t):
    return (t.float() if t.dtype != ember.float32 else t).numpy().astype(np.float64)


# ---- property tests --------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_forward_matches_reference(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    pooling = data.draw(st.sampled_from(list(PoolingMode)))
    n_tables = data.draw(st.integers(1, 3))
    dim0 = data.draw(st.integers(1, 40))
    specs = []
    for _ in range(n_tables):
        dim = dim0 if pooling == PoolingMode.NONE else data.draw(st.integers(0, 40))
        specs.append((data.draw(st.integers(1, 12)), dim, data.draw(st.sampled_from(ALL_TYPES))))
    out_ty = data.draw(st.sampled_from([SparseType.FP32, SparseType.FP16, SparseType.BF16]))
    fmap = data.draw(st.lists(st.integers(0, n_tables - 1), min_size=0, max_size=2)) + list(range(n_tables))
    B = data.draw(st.integers(0, 5))
    idx_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    weighted = pooling != PoolingMode.NONE and data.draw(st.booleans())
    m, tables, _ = make_module(specs, rng, feature_table_map=fmap, pooling_mode=pooling, output_dtype=out_ty,
                               bounds_check_mode=BoundsCheckMode.FATAL)
    lengths = rng.integers(0, 5, len(fmap) * B)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(idx_dtype)
    indices = np.concatenate([rng.integers(0, specs[fmap[f]][0], lengths[f * B:(f + 1) * B].sum())
                              for f in range(len(fmap))] or [[]]).astype(idx_dtype)
    w = rng.uniform(-2, 2, len(indices)).astype(np.float32) if weighted else None
    out = m(ember.tensor(indices), ember.tensor(offsets), None if w is None else ember.tensor(w))
    ref = reference_forward(tables, fmap, indices, offsets, pooling, w)
    assert tuple(out.shape) == ref.shape
    assert out.dtype == {SparseType.FP32: ember.float32, SparseType.FP16: ember.float16,
                         SparseType.BF16: ember.bfloat16}[out_ty]
    tol = {SparseType.FP32: 1e-5, SparseType.FP16: 1e-2, SparseType.BF16: 1e-2}[out_ty]
    scale = np.abs(ref).max() if ref.size else 1.0
    np.testing.assert_allclose(out_np(out), ref, rtol=tol, atol=tol * max(scale, 1e-3))


@pytest.mark.parametrize("ty", ALL_TYPES)
@pytest.mark.parametrize("dim", [1, 3, 5, 8, 13, 64, 100, 128, 130])
def test_dims_and_types_exact_fp32(ty, dim):
    # every tile width and tail of the kernel, against the reference in float64 (tight)
    rng = np.random.default_rng(dim)
    m, tables, _ = make_module([(50, dim, ty)], rng, output_dtype=SparseType.FP32)
    B, L = 7, 20
    indices = rng.integers(0, 50, B * L).astype(np.int64)
    offsets = np.arange(0, B * L + 1, L).astype(np.int64)
    out = m(ember.tensor(indices), ember.tensor(offsets))
    np.testing.assert_allclose(out.numpy(), reference_forward(tables, [0], indices, offsets, PoolingMode.SUM),
                               rtol=1e-5, atol=1e-4)


def test_fbgemm_doc_example_shapes():
    rng = np.random.default_rng(0)
    m, tables, _ = make_module([(3, 8, SparseType.INT8), (5, 4, SparseType.INT4)], rng,
                               output_dtype=SparseType.FP32)
    indices = ember.tensor([0, 2, 1, 0, 2, 1, 1, 3, 4, 0, 2, 4, 3], dtype=ember.int32)
    offsets = ember.tensor([0, 2, 5, 7, 9, 12, 13], dtype=ember.int32)
    assert tuple(m(indices, offsets).shape) == (3, 12)


def test_empty_batch_and_empty_bags():
    rng = np.random.default_rng(1)
    for pooling in PoolingMode:
        m, _, _ = make_module([(4, 8, SparseType.INT4), (4, 8, SparseType.FP16)], rng, pooling_mode=pooling,
                              output_dtype=SparseType.FP32)
        out = m(ember.tensor([], dtype=ember.int32), ember.tensor([0], dtype=ember.int32))
        assert tuple(out.shape) == ((0, 8) if pooling == PoolingMode.NONE else (0, 16))
        out = m(ember.tensor([], dtype=ember.int64), ember.tensor([0, 0, 0, 0, 0], dtype=ember.int64))
        if pooling != PoolingMode.NONE:
            np.testing.assert_array_equal(out.numpy(), np.zeros((2, 16), np.float32))


def test_split_embedding_weights_layout():
    m = IntNBitTableBatchedEmbeddingBagsCodegen(
        [("a", 10, 8, SparseType.INT8, HOST), ("b", 7, 5, SparseType.FP16, HOST), ("c", 3, 6, SparseType.INT2, HOST)],
        row_alignment=16)
    m.initialize_weights()
    shapes = [(tuple(w.shape), None if sb is None else tuple(sb.shape)) for w, sb in m.split_embedding_weights()]
    assert shapes == [((10, 8), (10, 4)), ((7, 10), None), ((3, 2), (3, 4))]
    assert m.weights_offsets.tolist() == [0, 256, 384]
    assert rounded_row_size_in_bytes(5, SparseType.FP16, 16) == 16
    whole = m.split_embedding_weights(split_scale_shifts=False)
    assert tuple(whole[0][0].shape) == (10, 16)


def test_split_views_share_storage():
    m = IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, HOST)])
    m.initialize_weights()
    w, sb = m.split_embedding_weights()[0]
    w.fill_(7)
    sb.fill_(1)
    assert m.weights_host[:16].tolist() == [1, 1, 1, 1, 7, 7, 7, 7] * 2


def test_fill_random_weights_and_default_output():
    m = IntNBitTableBatchedEmbeddingBagsCodegen([("a", 20, 16, SparseType.FP8, HOST)])
    m.fill_random_weights()
    out = m(ember.tensor([1, 2], dtype=ember.int32), ember.tensor([0, 2], dtype=ember.int32))
    assert out.dtype == ember.float16 and tuple(out.shape) == (1, 16)
    assert m.fp8_exponent_bits == 4 and m.fp8_exponent_bias == 7


def test_forward_before_weights_raises():
    m = IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, HOST)])
    with pytest.raises(RuntimeError, match="expected weights to be set"):
        m(ember.tensor([0], dtype=ember.int32), ember.tensor([0, 1], dtype=ember.int32))


def test_is_module_with_buffers():
    m = IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, HOST)])
    assert isinstance(m, ember.nn.Module)
    assert {"D_offsets", "rows_per_table", "weights_tys", "weights_offsets"} <= set(dict(m.named_buffers()))


# ---- bounds checks -------------------------------------------------------------------------------

def _bounds_module(mode, pooling=PoolingMode.SUM):
    rng = np.random.default_rng(5)
    return make_module([(10, 4, SparseType.INT8), (6, 4, SparseType.FP32)], rng, bounds_check_mode=mode,
                       pooling_mode=pooling, output_dtype=SparseType.FP32)


@pytest.mark.parametrize("bad", [-1, 6, 2**63 - 1])
def test_bad_index_fatal(bad):
    m, _, _ = _bounds_module(BoundsCheckMode.FATAL)
    indices = ember.tensor([1, 2, 3, bad], dtype=ember.int64)
    offsets = ember.tensor([0, 1, 2, 3, 4], dtype=ember.int64)  # T=2, B=2; the bad one is table 1, bag 1
    with pytest.raises(IndexError, match=rf"table 1 in \[0, 6\), but got {bad} in bag 1"):
        m(indices, offsets)


def test_bad_index_none_mode_is_fatal_and_op_checks_rows():
    m, _, _ = _bounds_module(BoundsCheckMode.NONE)
    with pytest.raises(IndexError, match="but got 10"):
        m(ember.tensor([10, 0], dtype=ember.int32), ember.tensor([0, 1, 1, 2, 2], dtype=ember.int32))


@pytest.mark.parametrize("mode", [BoundsCheckMode.WARNING, BoundsCheckMode.IGNORE])
@pytest.mark.parametrize("pooling", [PoolingMode.SUM, PoolingMode.MEAN])
def test_bad_index_repaired(mode, pooling):
    m, tables, _ = _bounds_module(mode, pooling)
    indices = np.array([1, -1, 2, 7, 3, 2**62], np.int64)
    offsets = np.array([0, 2, 3, 5, 6], np.int64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = m(ember.tensor(indices), ember.tensor(offsets))
    assert (len(caught) == 1) == (mode == BoundsCheckMode.WARNING)
    good = np.array([1, 2, 3])  # bags: [1], [2], [3], []
    ref = reference_forward(tables, [0, 1], np.array([1, 2, 3]), np.array([0, 1, 2, 3, 3]), pooling)
    del good
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("offsets,what", [
    ([1, 1, 2, 3, 4], "offsets\\[0\\] = 1"),          # first not 0
    ([0, 3, 2, 3, 4], "offsets\\[2\\] = 2 after 3"),  # decreasing
    ([0, 9, 9, 9, 4], "offsets\\[1\\] = 9"),          # oversize middle
    ([0, 1, 2, 3, 3], "offsets\\[4\\] = 3"),          # last != len(indices)
    ([0, 1, 2, 3, 5], "offsets\\[4\\] = 5"),          # last past the end
])
def test_bad_offsets_fatal(offsets, what):
    m, _, _ = _bounds_module(BoundsCheckMode.FATAL)
    with pytest.raises(IndexError, match=what + r".*\(table \d, bag \d\)"):
        m(ember.tensor([0, 1, 2, 3], dtype=ember.int32), ember.tensor(offsets, dtype=ember.int32))


def test_empty_offsets_fatal():
    m, _, _ = _bounds_module(BoundsCheckMode.FATAL)
    with pytest.raises(ValueError, match="expected offsets of length T\\*B\\+1"):
        m(ember.tensor([0], dtype=ember.int32), ember.tensor([], dtype=ember.int32))


@pytest.mark.parametrize("mode", [BoundsCheckMode.WARNING, BoundsCheckMode.IGNORE])
def test_bad_offsets_repaired(mode):
    m, tables, _ = _bounds_module(mode)
    indices = np.array([0, 1, 2, 3], np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = m(ember.tensor(indices), ember.tensor([2, 3, 1, 99, 4], dtype=ember.int64))
    # repaired: [0, 3, 3, 4, 4] -> bags [0,1,2], [], [3], []
    ref = reference_forward(tables, [0, 1], indices, np.array([0, 3, 3, 4, 4]), PoolingMode.SUM)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)
    assert int(m.bounds_check_warning[0]) >= 3


def test_raw_op_checks_rows_from_bytes():
    # the fbgemm-schema op knows no row counts: rows come from each table's bytes
    w = ember.zeros(3 * 8, dtype=ember.uint8)
    args = dict(dev_weights=w, uvm_weights=ember.zeros(0, dtype=ember.uint8),
                weights_placements=ember.tensor([3], dtype=ember.int32),
                weights_offsets=ember.tensor([0], dtype=ember.int64),
                weights_tys=ember.tensor([0], dtype=ember.uint8), D_offsets=ember.tensor([0, 2], dtype=ember.int32),
                total_D=2, max_int2_D=0, max_int4_D=0, max_int8_D=0, max_float16_D=0, max_float32_D=2,
                pooling_mode=0, indice_weights=None, output_dtype=0)
    out = F.int_nbit_split_embedding_codegen_lookup_function(indices=ember.tensor([2], dtype=ember.int32),
                                                             offsets=ember.tensor([0, 1], dtype=ember.int32), **args)
    assert out.tolist() == [[0.0, 0.0]]
    with pytest.raises(IndexError, match=r"table 0 in \[0, 3\), but got 3 in bag 0"):
        F.int_nbit_split_embedding_codegen_lookup_function(indices=ember.tensor([3], dtype=ember.int32),
                                                           offsets=ember.tensor([0, 1], dtype=ember.int32), **args)
    bad = dict(args, weights_tys=ember.tensor([9], dtype=ember.uint8))
    with pytest.raises(ValueError, match="expected weights_tys of SparseType codes"):
        F.int_nbit_split_embedding_codegen_lookup_function(indices=ember.tensor([0], dtype=ember.int32),
                                                           offsets=ember.tensor([0, 1], dtype=ember.int32), **bad)
    bad = dict(args, output_dtype=2)
    with pytest.raises(ValueError, match="expected output_dtype 0 \\(FP32\\), 1 \\(FP16\\) or 5 \\(BF16\\), but got 2"):
        F.int_nbit_split_embedding_codegen_lookup_function(indices=ember.tensor([0], dtype=ember.int32),
                                                           offsets=ember.tensor([0, 1], dtype=ember.int32), **bad)
    bad = dict(args, weights_offsets=ember.tensor([100], dtype=ember.int64))
    with pytest.raises(ValueError, match="expected weights_offsets\\[0\\] in \\[0, 24\\]"):
        F.int_nbit_split_embedding_codegen_lookup_function(indices=ember.tensor([0], dtype=ember.int32),
                                                           offsets=ember.tensor([0, 1], dtype=ember.int32), **bad)


# ---- bad inputs -----------------------------------------------------------------------------------

def test_bad_forward_inputs():
    m, _, _ = _bounds_module(BoundsCheckMode.FATAL)
    with pytest.raises(TypeError, match="expected indices of dtype int32 or int64, but got float32"):
        m(ember.tensor([0.0]), ember.tensor([0, 1, 1, 1, 1], dtype=ember.int32))
    with pytest.raises(TypeError, match="expected offsets of dtype int32 or int64, but got float32"):
        m(ember.tensor([0], dtype=ember.int32), ember.tensor([0.0, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match="expected offsets of length T\\*B\\+1 with T = 2 features, but got 4"):
        m(ember.tensor([0], dtype=ember.int32), ember.tensor([0, 1, 1, 1], dtype=ember.int32))
    with pytest.raises(ValueError, match="expected 1-D indice_weights with one weight per index"):
        m(ember.tensor([0], dtype=ember.int32), ember.tensor([0, 1, 1], dtype=ember.int32), ember.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="expected indice_weights of dtype float32, but got float64"):
        m(ember.tensor([0], dtype=ember.int32), ember.tensor([0, 1, 1], dtype=ember.int32),
          ember.tensor([1.0], dtype=ember.float64))
    with pytest.raises(ValueError, match="expected 1-D indices, but got 2-D"):
        m(ember.tensor([[0]], dtype=ember.int32), ember.tensor([0, 1, 1], dtype=ember.int32))


def test_bad_constructor_inputs():
    with pytest.raises(ValueError, match="expected at least one table"):
        IntNBitTableBatchedEmbeddingBagsCodegen([])
    with pytest.raises(TypeError, match="expected a SparseType"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, "int8", HOST)])
    with pytest.raises(ValueError, match="expected EmbeddingLocation.HOST"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, EmbeddingLocation.DEVICE)])
    with pytest.raises(ValueError, match="expected one dim for every table with PoolingMode.NONE"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, HOST), ("b", 2, 8, SparseType.INT8, HOST)],
                                                pooling_mode=PoolingMode.NONE)
    with pytest.raises(ValueError, match="expected output_dtype FP32, FP16 or BF16"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, HOST)], output_dtype=SparseType.INT8)
    with pytest.raises(ValueError, match="expected every table to have a feature"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, HOST), ("b", 2, 4, SparseType.INT8, HOST)],
                                                feature_table_map=[0])
    m = IntNBitTableBatchedEmbeddingBagsCodegen([("a", 2, 4, SparseType.INT8, HOST)])
    with pytest.raises(ValueError, match="expected 1 \\(weights, scale_bias\\) pairs"):
        m.assign_embedding_weights([])
    with pytest.raises(ValueError, match="expected table 0's weights of shape \\(2, 4\\)"):
        m.assign_embedding_weights([(ember.zeros(2, 5, dtype=ember.uint8), ember.zeros(2, 4, dtype=ember.uint8))])
    with pytest.raises(ValueError, match="expected table 0's scale_bias to be a tensor"):
        m.assign_embedding_weights([(ember.zeros(2, 4, dtype=ember.uint8), None)])


# ---- parity with fbgemm_gpu ------------------------------------------------------------------------

_FBGEMM_TBE = """
from fbgemm_gpu.split_table_batched_embeddings_ops_inference import IntNBitTableBatchedEmbeddingBagsCodegen as M
from fbgemm_gpu.split_embedding_configs import SparseType
from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation, PoolingMode
tys = [SparseType(str(s)) for s in inputs["tys"]]
dims = [int(d) for d in inputs["dims"]]
rows = int(inputs["rows"])
m = M([(f"t{i}", rows, d, ty, EmbeddingLocation.HOST) for i, (d, ty) in enumerate(zip(dims, tys, strict=True))],
      pooling_mode=PoolingMode(int(inputs["pooling"])), device="cpu",
      output_dtype=SparseType(str(inputs["out_ty"])), fp8_exponent_bits=int(inputs["ebits"]),
      fp8_exponent_bias=int(inputs["ebias"]))
m.initialize_weights()
for t, (d, ty) in enumerate(zip(dims, tys)):
    w = torch.from_numpy(inputs[f"w{t}"])
    if ty == SparseType.INT8:
        q = torch.ops.fbgemm.FloatToFusedNBitRowwiseQuantizedSBHalf(w, 8)
    elif ty in (SparseType.INT4, SparseType.INT2):
        q = torch.ops.fbgemm.FloatToFusedNBitRowwiseQuantizedSBHalf(w, ty.bit_rate())
    elif ty == SparseType.FP8:
        q = torch.ops.fbgemm.FloatToHFP8Quantized(w, int(inputs["ebits"]), int(inputs["ebias"]), float(inputs["maxpos"]))
    elif ty == SparseType.FP16:
        q = w.half().view(torch.uint8)
    else:
        q = w.view(torch.uint8)
    dw, dsb = m.split_embedding_weights()[t]
    if dsb is not None:  # FBGEMM's quantizers put scale and bias last; the TBE wants them first
        dw.copy_(q[:, :-4]); dsb.copy_(q[:, -4:])
    else:
        dw.copy_(q)
    result[f"w{t}"] = dw.numpy().copy()
    result[f"sb{t}"] = dsb.numpy().copy() if dsb is not None else np.zeros(0, np.uint8)
psw = torch.from_numpy(inputs["psw"]) if inputs["psw"].size else None
for dt in ("int32", "int64"):
    out = m(torch.from_numpy(inputs["indices"].astype(dt)), torch.from_numpy(inputs["offsets"].astype(dt)), psw)
    result[f"out_{dt}"] = out.float().numpy()
"""


@pytest.mark.parametrize("pooling", [PoolingMode.SUM, PoolingMode.MEAN, PoolingMode.NONE])
@pytest.mark.parametrize("out_ty", [SparseType.FP32, SparseType.FP16, SparseType.BF16])
@pytest.mark.parametrize("weighted", [False, True])
def test_parity_with_fbgemm(run_fbgemm, pooling, out_ty, weighted):
    if weighted and pooling == PoolingMode.NONE:
        pytest.skip("FBGEMM's NONE pooling takes no per-sample weights")
    rng = np.random.default_rng(11)
    tys = [SparseType.INT8, SparseType.INT4, SparseType.INT2, SparseType.FP16, SparseType.FP32, SparseType.FP8]
    dims = [64] * 6 if pooling == PoolingMode.NONE else [128, 64, 32, 24, 12, 40]
    rows, B = 100, 9
    ws = {f"w{t}": rng.standard_normal((rows, d)).astype(np.float32) for t, d in enumerate(dims)}
    lengths = rng.integers(0, 25, len(dims) * B)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    indices = rng.integers(0, rows, offsets[-1])
    psw = rng.uniform(0, 2, len(indices)).astype(np.float32) if weighted else np.zeros(0, np.float32)
    res = run_fbgemm(_FBGEMM_TBE, tys=np.array([str(t) for t in tys]), dims=np.array(dims), rows=np.array(rows),
                     pooling=np.array(int(pooling)), out_ty=np.array(str(out_ty)), ebits=np.array(4),
                     ebias=np.array(7), maxpos=np.array(240.0), indices=indices, offsets=offsets, psw=psw, **ws)
    specs = [(f"t{i}", rows, d, ty, HOST) for i, (d, ty) in enumerate(zip(dims, tys, strict=True))]
    m = IntNBitTableBatchedEmbeddingBagsCodegen(specs, pooling_mode=pooling, output_dtype=out_ty)
    m.assign_embedding_weights([(ember.tensor(res[f"w{t}"]), ember.tensor(res[f"sb{t}"]) if res[f"sb{t}"].size else None)
                                for t in range(len(dims))])
    for dt in (ember.int32, ember.int64):
        out = m(ember.tensor(indices, dtype=dt), ember.tensor(offsets, dtype=dt),
                ember.tensor(psw) if weighted else None)
        np.testing.assert_array_equal(out.float().numpy(), res[f"out_{str(dt).split('.')[-1]}"])
