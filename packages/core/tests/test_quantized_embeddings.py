"""Quantized embedding tables (ember.ao.nn.quantized.Embedding / EmbeddingBag; Note [quantized
embedding bags]): the kernel against a NumPy model of FBGEMM's float arithmetic, bad input, and the
eager-mode workflow. PyTorch's own results are compared in test_quantized_torch_parity.py."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.ao import quantization as tq
from ember.ao.nn import quantized as nnq

RNG = np.random.default_rng(7)


def table(rows=30, dim=11):
    """A float table and its quint8 quantization per row (float qparams), as convert makes it."""
    w = ember.from_numpy(RNG.normal(size=(rows, dim)).astype(np.float32) * 2)
    observer = tq.default_float_qparams_observer()
    observer(w)
    scale, zero_point = observer.calculate_qparams()
    return w, ember.quantize_per_channel(w, scale, zero_point, 0, ember.quint8)


def reference(qw, idx, offsets, weights=None, include_last_offset=False):
    """acc = fma(s * w, q, acc + b * w) per member, in float32, b = -zero_point * s (float32).
    The float64 sum of s*q (exact: 24 x 8 bits) and acc + b is exact for these magnitudes, so
    rounding it once to float32 is the fused multiply-add's one rounding."""
    codes = qw.int_repr().numpy().astype(np.float64)
    s = qw.q_per_channel_scales().numpy().astype(np.float32)
    b = (-qw.q_per_channel_zero_points().numpy().astype(np.float32) * s).astype(np.float32)
    ends = list(offsets[1:]) + ([] if include_last_offset else [len(idx)])
    starts = list(offsets[:len(ends)])
    out = np.zeros((len(starts), codes.shape[1]), np.float32)
    for bag, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
        acc = np.zeros(codes.shape[1], np.float32)
        for i in range(lo, hi):
            r = idx[i]
            sr, br = s[r], b[r]
            if weights is not None:
                sr, br = np.float32(sr * weights[i]), np.float32(br * weights[i])
            acc = (np.float64(sr) * codes[r] + (acc + br).astype(np.float64)).astype(np.float32)
        out[bag] = acc
    return out


def test_bags_sum_in_fbgemm_order():
    _, qw = table()
    idx = RNG.integers(0, 30, 40)
    offsets = [0, 7, 7, 19, 33]  # an empty bag among them
    weights = RNG.uniform(-1, 2, 40).astype(np.float32)
    for index_dtype in (ember.int64, ember.int32):
        i = ember.tensor(idx, dtype=index_dtype)
        o = ember.tensor(offsets, dtype=index_dtype)
        got = ember._C._quantized_embedding_bag(qw, i, o)
        np.testing.assert_array_equal(got.numpy(), reference(qw, idx, offsets))
        got = ember._C._quantized_embedding_bag(qw, i, o, ember.from_numpy(weights))
        np.testing.assert_array_equal(got.numpy(), reference(qw, idx, offsets, weights))
    got = ember._C._quantized_embedding_bag(qw, ember.tensor(idx), ember.tensor(offsets + [40]), None, True)
    np.testing.assert_array_equal(got.numpy(), reference(qw, idx, offsets + [40], include_last_offset=True))
    # the dequantized rows summed in float64 agree to float32 rounding
    deq = qw.dequantize().numpy().astype(np.float64)
    np.testing.assert_allclose(got.numpy()[3], deq[idx[19:33]].sum(0), rtol=1e-5, atol=1e-5)


def test_zero_size_inputs():
    _, qw = table()
    empty = ember.tensor([], dtype=ember.int64)
    assert ember._C._quantized_embedding_bag(qw, empty, empty).shape == (0, 11)
    out = ember._C._quantized_embedding_bag(qw, empty, ember.tensor([0, 0]))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 11), np.float32))
    emb = nnq.Embedding(30, 11)
    emb.set_weight(qw)
    assert emb(ember.zeros((0, 3), dtype=ember.int64)).shape == (0, 3, 11)
    narrow = ember._make_per_channel_quantized_tensor(ember.zeros(30, 0, dtype=ember.uint8), ember.ones(30),
                                                      ember.zeros(30), 0)
    assert ember._C._quantized_embedding_bag(narrow, ember.tensor([1, 2]), ember.tensor([0])).shape == (1, 0)


def test_bad_input_raises():
    w, qw = table()
    bag = ember._C._quantized_embedding_bag
    i, o = ember.tensor([1, 2, 3]), ember.tensor([0, 2])
    with pytest.raises(RuntimeError, match=r"Index 1 is out of bounds: 30, range 0 to 30"):
        bag(qw, ember.tensor([1, 30]), o)
    with pytest.raises(RuntimeError, match=r"Index 0 is out of bounds: -1, range 0 to 30"):
        bag(qw, ember.tensor([-1, 2]), o)
    with pytest.raises(RuntimeError, match="the last offset value should be the size of the indices tensor"):
        bag(qw, i, ember.tensor([0, 4]))
    with pytest.raises(RuntimeError, match="expected non-decreasing offsets"):
        bag(qw, i, ember.tensor([0, 2, 1]))
    with pytest.raises(RuntimeError, match="expected offsets to start at 0"):
        bag(qw, i, ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="Expect 32 or 64 bit indices, but found float32"):
        bag(qw, i.float(), o)
    with pytest.raises(RuntimeError, match="expected 1-D indices and offsets"):
        bag(qw, i.reshape(1, 3), o)
    with pytest.raises(RuntimeError, match="expected float32 per_sample_weights of shape \\[3\\]"):
        bag(qw, i, o, ember.ones(2))
    with pytest.raises(RuntimeError, match="quantized per row"):
        bag(ember.quantize_per_tensor(w, 0.1, 3, ember.quint8), i, o)
    with pytest.raises(RuntimeError, match="quantized per row"):
        bag(ember.quantize_per_channel(w, ember.ones(30), ember.zeros(30, dtype=ember.int64), 0, ember.quint8), i, o)
    with pytest.raises(RuntimeError):  # a float table is not a quantized one
        bag(w, i, o)
    with pytest.raises(RuntimeError, match="per row"):
        nnq.EmbeddingBag(30, 11).set_weight(ember.quantize_per_tensor(w, 0.1, 3, ember.quint8))
    with pytest.raises(NotImplementedError, match="Supports quint8"):
        nnq.EmbeddingBag(30, 11, dtype=ember.qint8)
    with pytest.raises(NotImplementedError, match="compressed_indices_mapping"):
        nnq.EmbeddingBag(30, 11)(i, o, compressed_indices_mapping=i)
    with pytest.raises(ValueError, match="indices must be 2-d"):
        nnq.EmbeddingBag(30, 11)(i)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nnq.Embedding(31, 11, _weight=qw)


def test_convert_quantize_dynamic_and_state_dict():
    w, qw = table(40, 13)
    model = nn.Sequential(nn.EmbeddingBag(40, 13, mode="sum"), nn.Embedding(40, 13))
    with ember.no_grad():
        model[0].weight.copy_(w)
        model[1].weight.copy_(w)
    model[0].qconfig = model[1].qconfig = tq.float_qparams_weight_only_qconfig
    converted = tq.convert(tq.prepare(model))
    assert type(converted[0]) is nnq.EmbeddingBag and type(converted[1]) is nnq.Embedding
    assert repr(converted[1]) == ("QuantizedEmbedding(num_embeddings=40, embedding_dim=13, dtype=ember.quint8, "
                                  "qscheme=ember.per_channel_affine_float_qparams)")
    np.testing.assert_array_equal(converted[0].weight().int_repr().numpy(), qw.int_repr().numpy())
    idx, offsets = RNG.integers(0, 40, 9), [0, 4]
    got = converted[0](ember.tensor(idx), ember.tensor(offsets))
    np.testing.assert_array_equal(got.numpy(), reference(qw, idx, offsets))
    rows = converted[1](ember.tensor(idx.reshape(3, 3)))
    np.testing.assert_array_equal(rows.numpy().reshape(9, 13), reference(qw, idx, list(range(9))))
    dynamic = tq.quantize_dynamic(model, dtype=ember.quint8)
    assert type(dynamic[0]) is nnq.EmbeddingBag and type(dynamic[1]) is nnq.Embedding
    np.testing.assert_array_equal(dynamic[0](ember.tensor(idx), ember.tensor(offsets)).numpy(), got.numpy())
    # the qint8 default quantizes Linear layers only (a module's own qconfig would still be honoured)
    assert type(tq.quantize_dynamic(nn.Sequential(nn.EmbeddingBag(4, 3)))[0]) is nn.EmbeddingBag
    state = converted[0].state_dict()
    assert list(state) == ["_packed_params.dtype", "_packed_params._packed_weight"]
    again = nnq.EmbeddingBag(40, 13)
    again.load_state_dict(state)
    np.testing.assert_array_equal(again(ember.tensor(idx), ember.tensor(offsets)).numpy(), got.numpy())
    plain = nn.EmbeddingBag(40, 13)
    plain.qconfig = tq.default_qconfig
    with pytest.raises(AssertionError, match="only supported with float_qparams_weight_only_qconfig"):
        nnq.EmbeddingBag.from_float(plain)


def test_float_qparams_observer_matches_the_row_ranges():
    w, qw = table(5, 8)
    rows = w.numpy()
    scale = (rows.max(1) - rows.min(1)) / np.float32(255)
    np.testing.assert_array_equal(qw.q_per_channel_scales().numpy(), scale.astype(np.float32))
    np.testing.assert_allclose(qw.q_per_channel_zero_points().numpy(), -rows.min(1) / scale, rtol=1e-6)
    assert qw.qscheme() == ember.per_channel_affine_float_qparams
    flat = tq.default_float_qparams_observer()
    flat(ember.ones(3, 4))  # a constant row: scale 1 (not 0), as PyTorch
    scale, zero_point = flat.calculate_qparams()
    np.testing.assert_array_equal(scale.numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(zero_point.numpy(), -np.ones(3, np.float32))
