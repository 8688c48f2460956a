"""FBGEMM's jagged-tensor ops (ember.ops.fbgemm.*): NumPy float64 references, gradients, bad
inputs, and parity with fbgemm_gpu 1.8 (run_fbgemm; skipped without EMBER_FBGEMM_PYTHON)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.autograd import gradcheck

F = ember.ops.fbgemm
rng = np.random.default_rng(0)


# ---- references ------------------------------------------------------------------------------------

def offsets_of(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def ref_to_dense(values, offs, max_lengths, pad=0.0):
    B = len(offs[0]) - 1
    out = np.full((B, *max_lengths, *values.shape[1:]), pad, np.float64)

    def rec(level, seg, idx):
        o = offs[level]
        begin, end = int(o[seg]), int(o[seg + 1])
        for j in range(min(end - begin, max_lengths[level])):
            if level == len(offs) - 1:
                out[idx + (j,)] = values[begin + j]
            else:
                rec(level + 1, begin + j, idx + (j,))

    for b in range(B):
        rec(0, b, (b,))
    return out


def ref_to_jagged(dense, offs, total):
    k = len(offs)
    values = np.zeros((total, *dense.shape[k + 1:]), np.float64)

    def rec(level, seg, idx):
        o = offs[level]
        begin, end = int(o[seg]), int(o[seg + 1])
        for j in range(min(end - begin, dense.shape[level + 1])):
            if level == k - 1:
                values[begin + j] = dense[idx + (j,)]
            else:
                rec(level + 1, begin + j, idx + (j,))

    for b in range(dense.shape[0]):
        rec(0, b, (b,))
    return values


def segments(offsets, max_L=None):
    for b in range(len(offsets) - 1):
        begin, end = int(offsets[b]), int(offsets[b + 1])
        n = end - begin if max_L is None else min(end - begin, max_L)
        yield b, begin, end, n


def ref_jagged_dense_bmm(x, offsets, y, max_L):
    out = np.zeros((x.shape[0], y.shape[2]))
    for b, begin, _, n in segments(offsets, max_L):
        out[begin:begin + n] = x[begin:begin + n] @ y[b]
    return out


def ref_jagged_jagged_bmm(x, y, offsets, max_L):
    B = len(offsets) - 1
    out = np.zeros((B, x.shape[1], y.shape[1]))
    for b, begin, _, n in segments(offsets, max_L):
        out[b] = x[begin:begin + n].T @ y[begin:begin + n]
    return out


def ref_dense_vec(v, a, offsets):
    B = len(offsets) - 1
    H = 1 if B == 0 else v.shape[0] // B
    D = a.shape[1] // H
    out = np.zeros((B * H, D))
    for b, begin, _, n in segments(offsets, v.shape[1]):
        for h in range(H):
            out[b * H + h] = v[b * H + h, :n] @ a[begin:begin + n, h * D:(h + 1) * D]
    return out


def ref_softmax(values, offsets, max_L):
    out = np.zeros_like(values)
    for _, begin, _, n in segments(offsets, max_L):
        if n:
            seg = values[begin:begin + n]
            e = np.exp(seg - seg.max(0))
            out[begin:begin + n] = e / e.sum(0)
    return out


# ---- helpers ----------------------------------------------------------------------------------------

def T(a, dtype=None):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t if dtype is None else t.to(dtype)


def noncontig(a):
    """The same values as a non-contiguous (transposed) tensor."""
    a = np.asarray(a)
    if a.ndim == 2:
        return T(np.ascontiguousarray(a.T)).t()
    if a.ndim == 1:
        return T(np.repeat(a, 2))[::2]
    return T(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(0, -1)


def offs_t(offsets, dtype):
    return T(np.asarray(offsets, dtype=np.int32 if dtype == "int32" else np.int64))


def close(e, r, tol=1e-12):
    np.testing.assert_allclose(e.numpy().astype(np.float64), r, rtol=tol, atol=tol)


# ---- jagged <-> dense -------------------------------------------------------------------------------

def test_documented_example_truncates_and_pads():
    values = T(np.array([[1, 1], [2, 2], [3, 3], [4, 4]], np.float32))
    out = F.jagged_to_padded_dense(values, [T(np.array([0, 1, 3]))], [3], 7.0)
    assert out.numpy().tolist() == [[[1, 1], [7, 7], [7, 7]], [[2, 2], [3, 3], [7, 7]]]


@pytest.mark.parametrize("odtype", ["int32", "int64"])
@pytest.mark.parametrize("contig", [True, False])
@pytest.mark.parametrize("folded", [False, True])
def test_jagged_to_padded_dense_and_back(odtype, contig, folded):
    lengths = [3, 0, 5, 1, 0, 2]
    offsets = offsets_of(lengths)
    L = int(offsets[-1])
    v = rng.standard_normal((L,) if folded else (L, 4))
    values = T(v) if contig else noncontig(v)
    for max_len in (0, 2, 5, 7):
        out = F.jagged_to_padded_dense(values, [offs_t(offsets, odtype)], [max_len], -1.5)
        close(out, ref_to_dense(v, [offsets], [max_len], -1.5))
        out = F.jagged_to_padded_dense_forward(values, [offs_t(offsets, odtype)], [max_len])
        close(out, ref_to_dense(v, [offsets], [max_len]))
    d = rng.standard_normal((6, 4) if folded else (6, 4, 3))
    dense = T(d) if contig else noncontig(d)
    vals, offs = F.dense_to_jagged(dense, [offs_t(offsets, odtype)])
    close(vals, ref_to_jagged(d, [offsets], L))
    assert offs[0].numpy().tolist() == offsets.tolist()
    close(F.dense_to_jagged_forward(dense, [offs_t(offsets, odtype)], L), ref_to_jagged(d, [offsets], L))
    close(F.jagged_to_padded_dense_backward(dense, [offs_t(offsets, odtype)], L), ref_to_jagged(d, [offsets], L))


@pytest.mark.parametrize("odtype", ["int32", "int64"])
def test_stacked_offsets(odtype):
    # B=3; level 0 picks rows of level 1; level 1 indexes the values
    off0 = np.array([0, 2, 2, 5])
    off1 = offsets_of([1, 3, 0, 2, 4])
    v = rng.standard_normal((int(off1[-1]), 2))
    offs = [offs_t(off0, odtype), offs_t(off1, odtype)]
    for maxl in ([2, 3], [3, 1], [1, 4], [0, 2]):
        out = F.jagged_to_padded_dense(T(v), offs, maxl, 9.0)
        close(out, ref_to_dense(v, [off0, off1], maxl, 9.0))
        d = rng.standard_normal((3, *maxl, 2))
        vals, _ = F.dense_to_jagged(T(d), offs)
        close(vals, ref_to_jagged(d, [off0, off1], int(off1[-1])))
        y = rng.standard_normal((3, *maxl, 2))
        close(F.jagged_dense_elementwise_add(T(v), offs, T(y)), ref_to_dense(v, [off0, off1], maxl) + y)
        got, _ = F.jagged_dense_elementwise_mul(T(v), offs, T(y))
        close(got, v * ref_to_jagged(y, [off0, off1], len(v)))


def test_non_contiguous_offsets():
    offsets = offsets_of([2, 0, 3])
    v = rng.standard_normal((5, 2))
    for dt in (np.int32, np.int64):
        o = noncontig(offsets.astype(dt))
        assert not o.is_contiguous()
        close(F.jagged_to_padded_dense(T(v), [o], [2]), ref_to_dense(v, [offsets], [2]))
        close(F.jagged_softmax(T(v), o, 2)[0], ref_softmax(v, offsets, 2))


def test_empty_batch_and_empty_values():
    off = T(np.array([0], np.int64))
    assert F.jagged_to_padded_dense(T(np.zeros((0, 3))), [off], [4]).shape == (0, 4, 3)
    vals, _ = F.dense_to_jagged(T(np.zeros((0, 4, 3))), [off])
    assert vals.shape == (0, 3)
    off = T(np.array([0, 0, 0], np.int64))
    close(F.jagged_to_padded_dense(T(np.zeros((0, 3))), [off], [2], 1.0), np.ones((2, 2, 3)))
    assert F.jagged_softmax(T(np.zeros((0, 3))), off, 4)[0].shape == (0, 3)
    assert F.jagged_jagged_bmm(T(np.zeros((0, 3))), T(np.zeros((0, 2))), off, 4).numpy().tolist() == \
        np.zeros((2, 3, 2)).tolist()
    assert F.jagged_dense_bmm(T(np.zeros((0, 3))), off, T(np.zeros((2, 3, 2))), 4)[0].shape == (0, 2)


def test_last_offset_may_end_before_the_values():
    # as FBGEMM's documented example: rows after the last offset belong to no segment
    v = rng.standard_normal((5, 2))
    off = T(np.array([0, 1, 3]))
    close(F.jagged_to_padded_dense(T(v), [off], [2]), ref_to_dense(v, [np.array([0, 1, 3])], [2]))
    out, _ = F.jagged_softmax(T(v), off, 4)
    assert np.all(out.numpy()[3:] == 0)


def test_jagged_1d_and_2d_to_dense():
    offsets = offsets_of([2, 0, 3])
    v = np.arange(5, dtype=np.int64)
    out = F.jagged_1d_to_dense(T(v), T(offsets), 2, -1)
    assert out.dtype == ember.int64
    assert out.numpy().tolist() == [[0, 1], [-1, -1], [2, 3]]
    v2 = rng.standard_normal((5, 3))
    close(F.jagged_2d_to_dense(noncontig(v2), T(offsets.astype(np.int32)), 4), ref_to_dense(v2, [offsets], [4]))


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32])
def test_reduced_dtypes(dtype):
    offsets = offsets_of([2, 0, 3])
    v = rng.standard_normal((5, 8))
    out = F.jagged_to_padded_dense(T(v, dtype), [T(offsets)], [3], 0.5)
    assert out.dtype == dtype
    close(out.to(ember.float64), ref_to_dense(T(v, dtype).to(ember.float64).numpy(), [offsets], [3], 0.5))
    got, _ = F.jagged_softmax(T(v, dtype), T(offsets), 2)
    np.testing.assert_allclose(got.to(ember.float64).numpy(), ref_softmax(v, offsets, 2), atol=2e-2)


# ---- elementwise, products, softmax -------------------------------------------------------------------

@pytest.mark.parametrize("odtype", ["int32", "int64"])
@pytest.mark.parametrize("contig", [True, False])
def test_elementwise(odtype, contig):
    lengths = [2, 0, 4, 1]
    offsets = offsets_of(lengths)
    L = int(offsets[-1])
    x = rng.standard_normal((L, 3))
    mk = T if contig else noncontig
    for max_len in (3, 4):
        y0 = rng.standard_normal((4, max_len, 3))
        y1 = rng.standard_normal((4, max_len, 3))
        o = [offs_t(offsets, odtype)]
        close(F.jagged_dense_elementwise_add(mk(x), o, mk(y0)), ref_to_dense(x, [offsets], [max_len]) + y0)
        yj0, yj1 = ref_to_jagged(y0, [offsets], L), ref_to_jagged(y1, [offsets], L)
        got, offs = F.jagged_dense_elementwise_add_jagged_output(mk(x), o, mk(y0))
        close(got, x + yj0)
        assert offs[0].numpy().tolist() == offsets.tolist()
        got, _ = F.jagged_dense_dense_elementwise_add_jagged_output(mk(x), o, mk(y0), mk(y1))
        close(got, x + yj0 + yj1)
        got, _ = F.jagged_dense_elementwise_mul(mk(x), o, mk(y0))
        close(got, x * yj0)


@pytest.mark.parametrize("odtype", ["int32", "int64"])
@pytest.mark.parametrize("contig", [True, False])
def test_bmm_vec_softmax(odtype, contig):
    offsets = offsets_of([3, 0, 5, 1])
    L = int(offsets[-1])
    mk = T if contig else noncontig
    o = offs_t(offsets, odtype)
    x, yv = rng.standard_normal((L, 4)), rng.standard_normal((L, 3))
    y = rng.standard_normal((4, 4, 3))
    for max_L in (0, 2, 8):
        got, offs = F.jagged_dense_bmm(mk(x), o, mk(y), max_L)
        close(got, ref_jagged_dense_bmm(x, offsets, y, max_L))
        close(F.jagged_jagged_bmm(mk(x), mk(yv), o, max_L), ref_jagged_jagged_bmm(x, yv, offsets, max_L))
        got, _ = F.jagged_softmax(mk(x), o, max_L)
        close(got, ref_softmax(x, offsets, max_L))
    H, D = 2, 3
    for maxN in (2, 6):
        v = rng.standard_normal((4 * H, maxN))
        a = rng.standard_normal((L, H * D))
        close(F.batched_dense_vec_jagged_2d_mul(mk(v), mk(a), o), ref_dense_vec(v, a, offsets))


lengths_st = st.lists(st.integers(0, 5), min_size=0, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=lengths_st, max_len=st.integers(0, 6), D=st.integers(1, 3), i32=st.booleans(),
       pad=st.floats(-2, 2))
def test_property_roundtrip(lengths, max_len, D, i32, pad):
    offsets = offsets_of(lengths)
    L = int(offsets[-1])
    v = rng.standard_normal((L, D))
    o = [offs_t(offsets, "int32" if i32 else "int64")]
    dense = F.jagged_to_padded_dense(T(v), o, [max_len], pad)
    close(dense, ref_to_dense(v, [offsets], [max_len], pad))
    back, _ = F.dense_to_jagged(dense, o)
    close(back, ref_to_jagged(ref_to_dense(v, [offsets], [max_len], pad), [offsets], L))
    close(F.jagged_softmax(T(v), o[0], max_len)[0], ref_softmax(v, offsets, max_len))
    y = rng.standard_normal((len(lengths), D, 2))
    close(F.jagged_dense_bmm(T(v), o[0], T(y), max_len)[0], ref_jagged_dense_bmm(v, offsets, y, max_len))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(l0=st.lists(st.integers(0, 3), min_size=0, max_size=4), data=st.data(), m0=st.integers(0, 3),
       m1=st.integers(0, 3))
def test_property_stacked(l0, data, m0, m1):
    off0 = offsets_of(l0)
    l1 = data.draw(st.lists(st.integers(0, 3), min_size=int(off0[-1]), max_size=int(off0[-1])))
    off1 = offsets_of(l1)
    v = rng.standard_normal((int(off1[-1]), 2))
    offs = [T(off0), T(off1.astype(np.int32))]
    close(F.jagged_to_padded_dense(T(v), offs, [m0, m1], 3.0), ref_to_dense(v, [off0, off1], [m0, m1], 3.0))
    d = rng.standard_normal((len(l0), m0, m1, 2))
    close(F.dense_to_jagged(T(d), offs)[0], ref_to_jagged(d, [off0, off1], len(v)))


# ---- gradients ----------------------------------------------------------------------------------------

def g64(a):
    return T(a).requires_grad_()


def test_gradcheck_jagged_to_dense_family():
    offsets = offsets_of([2, 0, 3, 1])
    o = T(offsets)
    v = g64(rng.standard_normal((6, 2)))
    d = g64(rng.standard_normal((4, 2, 2)))
    kw = {"check_forward_ad": True}
    assert gradcheck(lambda v: ember.ops.fbgemm.jagged_to_padded_dense(v, [o], [2], 3.0), (v,), **kw)
    assert gradcheck(lambda v: ember.ops.fbgemm.jagged_to_padded_dense_forward(v, [o], [2], 3.0), (v,), **kw)
    assert gradcheck(lambda d: ember.ops.fbgemm.jagged_to_padded_dense_backward(d, [o], 6), (d,), **kw)
    assert gradcheck(lambda d: ember.ops.fbgemm.dense_to_jagged_forward(d, [o], 6), (d,), **kw)
    assert gradcheck(lambda d: ember.ops.fbgemm.dense_to_jagged(d, [o])[0], (d,), **kw)
    assert gradcheck(lambda v: ember.ops.fbgemm.jagged_2d_to_dense(v, o, 2), (v,), **kw)
    v1 = g64(rng.standard_normal(6))
    assert gradcheck(lambda v: ember.ops.fbgemm.jagged_1d_to_dense(v, o, 2, 5), (v1,), **kw)
    # stacked offsets
    off0, off1 = T(np.array([0, 2, 3])), T(offsets_of([1, 2, 3]))
    v = g64(rng.standard_normal((6, 2)))
    assert gradcheck(lambda v: ember.ops.fbgemm.jagged_to_padded_dense(v, [off0, off1], [2, 2], 1.0), (v,), **kw)


def test_gradcheck_elementwise():
    o = [T(offsets_of([2, 0, 3]))]
    x = g64(rng.standard_normal((5, 2)))
    y0 = g64(rng.standard_normal((3, 2, 2)))
    y1 = g64(rng.standard_normal((3, 2, 2)))
    kw = {"check_forward_ad": True}
    assert gradcheck(lambda x, y: ember.ops.fbgemm.jagged_dense_elementwise_add(x, o, y), (x, y0), **kw)
    assert gradcheck(lambda x, y: ember.ops.fbgemm.jagged_dense_elementwise_add_jagged_output(x, o, y)[0],
                     (x, y0), **kw)
    assert gradcheck(lambda x, a, b: ember.ops.fbgemm.jagged_dense_dense_elementwise_add_jagged_output(x, o, a, b)[0],
                     (x, y0, y1), **kw)
    assert gradcheck(lambda x, y: ember.ops.fbgemm.jagged_dense_elementwise_mul(x, o, y)[0], (x, y0), **kw)


@pytest.mark.parametrize("max_L", [2, 4])
def test_gradcheck_products_and_softmax(max_L):
    o = T(offsets_of([3, 0, 2]))
    x = g64(rng.standard_normal((5, 3)))
    yv = g64(rng.standard_normal((5, 2)))
    y = g64(rng.standard_normal((3, 3, 2)))
    kw = {"check_forward_ad": True}
    assert gradcheck(lambda x, y: ember.ops.fbgemm.jagged_dense_bmm_forward(x, o, y, max_L), (x, y), **kw)
    assert gradcheck(lambda x, y: ember.ops.fbgemm.jagged_dense_bmm(x, o, y, max_L)[0], (x, y), **kw)
    assert gradcheck(lambda x, y: ember.ops.fbgemm.jagged_jagged_bmm_forward(x, y, o, max_L), (x, yv), **kw)
    assert gradcheck(lambda x, y: ember.ops.fbgemm.jagged_jagged_bmm(x, y, o, max_L), (x, yv), **kw)
    assert gradcheck(lambda x: ember.ops.fbgemm.jagged_softmax_forward(x, o, max_L), (x,), **kw)
    assert gradcheck(lambda x: ember.ops.fbgemm.jagged_softmax(x, o, max_L)[0], (x,), **kw)
    v = g64(rng.standard_normal((6, 2)))
    a = g64(rng.standard_normal((5, 4)))
    assert gradcheck(lambda v, a: ember.ops.fbgemm.batched_dense_vec_jagged_2d_mul(v, a, o), (v, a), **kw)


def test_backward_reaches_values_through_the_tuple_ops():
    o = T(offsets_of([2, 1]))
    x = g64(rng.standard_normal((3, 2)))
    vals, offs = F.jagged_softmax(x, o, 5)
    assert vals.grad_fn is not None and offs.grad_fn is None
    (vals * vals).sum().backward()
    assert x.grad is not None and x.grad.shape == (3, 2)


# ---- bad inputs ----------------------------------------------------------------------------------------

def test_bad_offsets():
    v = T(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"\[jagged_to_padded_dense\] expected offsets\[0\]\[0\] == 0, but got 1"):
        F.jagged_to_padded_dense(v, [T(np.array([1, 2, 4]))], [3])
    with pytest.raises(ValueError, match=r"expected offsets\[0\] to be non-decreasing, but got 3 then 2"):
        F.jagged_to_padded_dense(v, [T(np.array([0, 3, 2, 4]))], [3])
    with pytest.raises(ValueError, match=r"expected the last entry of offsets\[0\] to be at most the number of "
                                         r"values \(4\), but got 9"):
        F.jagged_to_padded_dense(v, [T(np.array([0, 2, 9]))], [3])
    with pytest.raises(ValueError, match=r"expected the last entry of offsets\[0\] to be at most the number of "
                                         r"segments of the next level \(2\), but got 3"):
        F.jagged_to_padded_dense(v, [T(np.array([0, 3])), T(np.array([0, 1, 4]))], [3, 3])
    with pytest.raises(TypeError, match=r"expected offsets\[0\] of dtype int32 or int64, but got float32"):
        F.jagged_to_padded_dense(v, [T(np.array([0.0, 4.0], np.float32))], [3])
    with pytest.raises(ValueError, match=r"expected offsets\[0\] to be 1-D"):
        F.jagged_to_padded_dense(v, [T(np.array([[0, 4]]))], [3])
    with pytest.raises(ValueError, match=r"expected at least one offsets tensor"):
        F.jagged_to_padded_dense(v, [], [])
    with pytest.raises(ValueError, match=r"expected one max length per offsets tensor \(1\), but got 2"):
        F.jagged_to_padded_dense(v, [T(np.array([0, 4]))], [3, 3])
    with pytest.raises(ValueError, match=r"expected non-negative max lengths, but got -1"):
        F.jagged_to_padded_dense(v, [T(np.array([0, 4]))], [-1])
    with pytest.raises(ValueError, match=r"\[jagged_softmax\] expected offsets\[0\]\[0\] == 0"):
        F.jagged_softmax(v, T(np.array([-1, 4])), 3)
    with pytest.raises(ValueError, match=r"\[jagged_jagged_bmm\] expected the last entry of offsets\[0\]"):
        F.jagged_jagged_bmm(v, v, T(np.array([0, 5])), 3)
    with pytest.raises(ValueError, match=r"\[batched_dense_vec_jagged_2d_mul\] expected offsets\[0\] to be "
                                         r"non-decreasing"):
        F.batched_dense_vec_jagged_2d_mul(T(np.zeros((2, 2))), v, T(np.array([0, 3, 1])))


def test_bad_shapes_and_dtypes():
    v = T(np.zeros((4, 2)))
    o = T(np.array([0, 1, 4]))
    with pytest.raises(ValueError, match=r"\[jagged_to_padded_dense\] expected values to be 1-D or 2-D, but got 3-D"):
        F.jagged_to_padded_dense(T(np.zeros((4, 2, 2))), [o], [3])
    with pytest.raises(ValueError, match=r"\[dense_to_jagged\] expected the dense batch size to match the offsets "
                                         r"\(2\), but got 3"):
        F.dense_to_jagged(T(np.zeros((3, 2, 2))), [o])
    with pytest.raises(ValueError, match=r"\[dense_to_jagged\] expected a dense tensor of 2 or 3 dims"):
        F.dense_to_jagged(T(np.zeros(3)), [o])
    with pytest.raises(ValueError, match=r"\[dense_to_jagged\] expected total_L >= 0, but got -2"):
        F.dense_to_jagged(T(np.zeros((2, 2, 2))), [o], -2)
    with pytest.raises(ValueError, match=r"\[jagged_dense_elementwise_add\] expected y's batch size to match"):
        F.jagged_dense_elementwise_add(v, [o], T(np.zeros((3, 2, 2))))
    with pytest.raises(ValueError, match=r"\[jagged_dense_elementwise_mul\] expected y's last dim to equal x_values' 2"):
        F.jagged_dense_elementwise_mul(v, [o], T(np.zeros((2, 2, 3))))
    with pytest.raises(TypeError, match=r"\[jagged_dense_elementwise_add_jagged_output\] expected y of x_values' "
                                        r"dtype float64, but got float32"):
        F.jagged_dense_elementwise_add_jagged_output(v, [o], T(np.zeros((2, 2, 2), np.float32)))
    with pytest.raises(ValueError, match=r"\[jagged_dense_bmm\] expected y's batch size to match the offsets"):
        F.jagged_dense_bmm(v, o, T(np.zeros((3, 2, 2))), 3)
    with pytest.raises(ValueError, match=r"\[jagged_dense_bmm\] expected y.size\(1\) == x_values.size\(1\)"):
        F.jagged_dense_bmm(v, o, T(np.zeros((2, 3, 2))), 3)
    with pytest.raises(ValueError, match=r"\[jagged_dense_bmm\] expected max_L >= 0, but got -1"):
        F.jagged_dense_bmm(v, o, T(np.zeros((2, 2, 2))), -1)
    with pytest.raises(TypeError, match=r"\[jagged_jagged_bmm\] expected x_values of a floating dtype, but got int64"):
        F.jagged_jagged_bmm(T(np.zeros((4, 2), np.int64)), T(np.zeros((4, 2), np.int64)), o, 3)
    with pytest.raises(ValueError, match=r"\[jagged_jagged_bmm\] expected y_values to have x_values' length 4"):
        F.jagged_jagged_bmm(v, T(np.zeros((3, 2))), o, 3)
    with pytest.raises(ValueError, match=r"\[batched_dense_vec_jagged_2d_mul\] expected v.size\(0\) to be a "
                                         r"positive multiple of the batch size 2, but got 3"):
        F.batched_dense_vec_jagged_2d_mul(T(np.zeros((3, 2))), v, o)
    with pytest.raises(ValueError, match=r"\[batched_dense_vec_jagged_2d_mul\] expected a_values.size\(1\) to be a "
                                         r"multiple of H = 2, but got 3"):
        F.batched_dense_vec_jagged_2d_mul(T(np.zeros((4, 2))), T(np.zeros((4, 3))), o)
    with pytest.raises(ValueError, match=r"\[jagged_1d_to_dense\] expected 1-D values, but got 2-D"):
        F.jagged_1d_to_dense(v, o, 3, 0)
    with pytest.raises(ValueError, match=r"\[jagged_2d_to_dense\] expected 2-D values, but got 1-D"):
        F.jagged_2d_to_dense(T(np.zeros(4)), o, 3)
    with pytest.raises(ValueError, match=r"\[jagged_softmax_backward\] expected 2-D grad_output and output of one "
                                         r"shape"):
        F.jagged_softmax_backward(v, T(np.zeros((4, 3))), o, 3)


# ---- parity with fbgemm_gpu ------------------------------------------------------------------------------

def test_parity_with_fbgemm(run_fbgemm):
    lengths = [3, 0, 5, 1, 0, 2, 7]
    offsets = offsets_of(lengths)
    L, B = int(offsets[-1]), len(lengths)
    x = rng.standard_normal((L, 4)).astype(np.float32)
    y = rng.standard_normal((B, 4, 4)).astype(np.float32)
    y1 = rng.standard_normal((B, 4, 4)).astype(np.float32)
    yb = rng.standard_normal((B, 4, 3)).astype(np.float32)
    yv = rng.standard_normal((L, 3)).astype(np.float32)
    v = rng.standard_normal((B * 2, 6)).astype(np.float32)
    a = rng.standard_normal((L, 2 * 3)).astype(np.float32)
    off0 = np.array([0, 2, 2, 4], np.int64)
    off1 = offsets_of([1, 3, 0, 2])
    x2 = rng.standard_normal((int(off1[-1]), 2)).astype(np.float32)
    d2 = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    inputs = dict(x=x, y=y, y1=y1, yb=yb, yv=yv, v=v, a=a, offsets=offsets, off0=off0, off1=off1, x2=x2, d2=d2,
                  x1=np.arange(L, dtype=np.int64))
    out = run_fbgemm('''
        t = {k: torch.from_numpy(a) for k, a in inputs.items()}
        f = torch.ops.fbgemm
        o = t["offsets"]
        result["j2d"] = f.jagged_to_padded_dense(t["x"], [o], [4], 7.0).numpy()
        result["d2j"] = f.dense_to_jagged(t["y"], [o])[0].numpy()
        result["j1d"] = f.jagged_1d_to_dense(t["x1"], o, 4, -3).numpy()
        result["j2d2"] = f.jagged_2d_to_dense(t["x"], o, 6).numpy()
        result["add"] = f.jagged_dense_elementwise_add(t["x"], [o], t["y"]).numpy()
        result["stack"] = f.jagged_to_padded_dense(t["x2"], [t["off0"], t["off1"]], [2, 2], -1.0).numpy()
        result["stack_back"] = f.dense_to_jagged(t["d2"], [t["off0"], t["off1"]])[0].numpy()
        result["dbmm"] = f.jagged_dense_bmm(t["x"], o, t["yb"], 4)[0].numpy()
        result["jbmm"] = f.jagged_jagged_bmm(t["x"], t["yv"], o, 4).numpy()
        result["vec"] = f.batched_dense_vec_jagged_2d_mul(t["v"], t["a"], o).numpy()
        result["softmax"] = f.jagged_softmax(t["x"], o, 4)[0].numpy()
        yy = t["y"][:, :7]
        pad = torch.zeros(len(o) - 1, 8, 4)
        pad[:, :4] = t["y"]
        p1 = torch.zeros(len(o) - 1, 8, 4)
        p1[:, :4] = t["y1"]
        result["addj"] = f.jagged_dense_elementwise_add_jagged_output(t["x"], [o], pad)[0].numpy()
        result["addj2"] = f.jagged_dense_dense_elementwise_add_jagged_output(t["x"], [o], pad, p1)[0].numpy()
        result["mul"] = f.jagged_dense_elementwise_mul(t["x"], [o], pad)[0].numpy()
        del yy
    ''', **inputs)
    o = T(offsets)
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.jagged_to_padded_dense(T(x), [o], [4], 7.0).numpy(), out["j2d"], **tol)
    np.testing.assert_allclose(F.dense_to_jagged(T(y), [o])[0].numpy(), out["d2j"], **tol)
    np.testing.assert_array_equal(F.jagged_1d_to_dense(T(inputs["x1"]), o, 4, -3).numpy(), out["j1d"])
    np.testing.assert_allclose(F.jagged_2d_to_dense(T(x), o, 6).numpy(), out["j2d2"], **tol)
    np.testing.assert_allclose(F.jagged_dense_elementwise_add(T(x), [o], T(y)).numpy(), out["add"], **tol)
    np.testing.assert_allclose(F.jagged_to_padded_dense(T(x2), [T(off0), T(off1)], [2, 2], -1.0).numpy(),
                               out["stack"], **tol)
    np.testing.assert_allclose(F.dense_to_jagged(T(d2), [T(off0), T(off1)])[0].numpy(), out["stack_back"], **tol)
    np.testing.assert_allclose(F.jagged_dense_bmm(T(x), o, T(yb), 4)[0].numpy(), out["dbmm"], **tol)
    np.testing.assert_allclose(F.jagged_jagged_bmm(T(x), T(yv), o, 4).numpy(), out["jbmm"], **tol)
    np.testing.assert_allclose(F.batched_dense_vec_jagged_2d_mul(T(v), T(a), o).numpy(), out["vec"], **tol)
    # FBGEMM leaves rows past max_L uninitialized: compare the defined rows
    mine = F.jagged_softmax(T(x), o, 4)[0].numpy()
    for _, begin, _, n in segments(offsets, 4):
        np.testing.assert_allclose(mine[begin:begin + n], out["softmax"][begin:begin + n], **tol)
    pad = np.zeros((B, 8, 4), np.float32)
    pad[:, :4] = y
    p1 = np.zeros((B, 8, 4), np.float32)
    p1[:, :4] = y1
    np.testing.assert_allclose(F.jagged_dense_elementwise_add_jagged_output(T(x), [o], T(pad))[0].numpy(),
                               out["addj"], **tol)
    np.testing.assert_allclose(
        F.jagged_dense_dense_elementwise_add_jagged_output(T(x), [o], T(pad), T(p1))[0].numpy(), out["addj2"], **tol)
    np.testing.assert_allclose(F.jagged_dense_elementwise_mul(T(x), [o], T(pad))[0].numpy(), out["mul"], **tol)


def test_parity_truncation_and_gradients(run_fbgemm):
    # rows longer than the dense dims: FBGEMM keeps x (adds) or gives 0 (product) there, as Ember does
    offsets = offsets_of([4, 0, 2, 5])
    L, B = int(offsets[-1]), 4
    x = rng.standard_normal((L, 3))
    y = rng.standard_normal((B, 2, 3))
    yb = rng.standard_normal((B, 3, 2))
    g_dense = rng.standard_normal((B, 2, 3))
    g_vals = rng.standard_normal((L, 3))
    g_bmm = rng.standard_normal((L, 2))
    inputs = dict(x=x, y=y, yb=yb, offsets=offsets, g_dense=g_dense, g_vals=g_vals, g_bmm=g_bmm)
    out = run_fbgemm('''
        # FBGEMM's CPU elementwise kernels take no float64: its side runs in float32
        t = {k: torch.from_numpy(a).float() if a.dtype == np.float64 else torch.from_numpy(a)
             for k, a in inputs.items()}
        f = torch.ops.fbgemm
        o = t["offsets"]
        result["addj"] = f.jagged_dense_elementwise_add_jagged_output(t["x"], [o], t["y"])[0].numpy()
        result["mul"] = f.jagged_dense_elementwise_mul(t["x"], [o], t["y"])[0].numpy()
        def grads(fn, outs_grad, *names):
            ins = [t[n].clone().requires_grad_() for n in names]
            fn(*ins).backward(outs_grad)
            return [i.grad.numpy() for i in ins]
        result["g_j2d"], = grads(lambda x: f.jagged_to_padded_dense(x, [o], [2], 5.0), t["g_dense"], "x")
        result["g_d2j"], = grads(lambda y: f.dense_to_jagged(y, [o])[0], t["g_vals"], "y")
        result["g_mul_x"], result["g_mul_y"] = grads(lambda x, y: f.jagged_dense_elementwise_mul(x, [o], y)[0],
                                                     t["g_vals"], "x", "y")
        result["g_add_x"], result["g_add_y"] = grads(lambda x, y: f.jagged_dense_elementwise_add(x, [o], y),
                                                     t["g_dense"], "x", "y")
        result["g_bmm_x"], result["g_bmm_y"] = grads(lambda x, y: f.jagged_dense_bmm(x, o, y, 3)[0], t["g_bmm"],
                                                     "x", "yb")
        result["g_sm"], = grads(lambda x: f.jagged_softmax(x, o, 3)[0], t["g_vals"], "x")
        result["g_jj_x"], result["g_jj_y"] = grads(lambda x, y: f.jagged_jagged_bmm(x, y, o, 3), torch.ones(4, 3, 3),
                                                   "x", "x")
    ''', **inputs)
    o = T(offsets)
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.jagged_dense_elementwise_add_jagged_output(T(x), [o], T(y))[0].numpy(), out["addj"],
                               **tol)
    np.testing.assert_allclose(F.jagged_dense_elementwise_mul(T(x), [o], T(y))[0].numpy(), out["mul"], **tol)

    def grads(fn, outs_grad, *arrays):
        ins = [g64(a) for a in arrays]
        fn(*ins).backward(T(outs_grad))
        return [i.grad.numpy() for i in ins]

    (g,) = grads(lambda x: F.jagged_to_padded_dense(x, [o], [2], 5.0), g_dense, x)
    np.testing.assert_allclose(g, out["g_j2d"], **tol)
    (g,) = grads(lambda y: F.dense_to_jagged(y, [o])[0], g_vals, y)
    np.testing.assert_allclose(g, out["g_d2j"], **tol)
    gx, gy = grads(lambda x, y: F.jagged_dense_elementwise_mul(x, [o], y)[0], g_vals, x, y)
    np.testing.assert_allclose(gx, out["g_mul_x"], **tol)
    np.testing.assert_allclose(gy, out["g_mul_y"], **tol)
    gx, gy = grads(lambda x, y: F.jagged_dense_elementwise_add(x, [o], y), g_dense, x, y)
    np.testing.assert_allclose(gx, out["g_add_x"], **tol)
    np.testing.assert_allclose(gy, out["g_add_y"], **tol)
    gx, gy = grads(lambda x, y: F.jagged_dense_bmm(x, o, y, 3)[0], g_bmm, x, yb)
    np.testing.assert_allclose(gx, out["g_bmm_x"], **tol)
    np.testing.assert_allclose(gy, out["g_bmm_y"], **tol)
    # FBGEMM's softmax gradient is defined on the first max_L rows of each segment
    (g,) = grads(lambda x: F.jagged_softmax(x, o, 3)[0], g_vals, x)
    for _, begin, _, n in segments(offsets, 3):
        np.testing.assert_allclose(g[begin:begin + n], out["g_sm"][begin:begin + n], **tol)
    gx, gy = grads(lambda x, y: F.jagged_jagged_bmm(x, y, o, 3), np.ones((4, 3, 3)), x, x)
    np.testing.assert_allclose(gx, out["g_jj_x"], **tol)
    np.testing.assert_allclose(gy, out["g_jj_y"], **tol)


def test_folded_values_and_reduced_products():
    offsets = offsets_of([2, 0, 3])
    o = T(offsets)
    x = rng.standard_normal(5)
    y = rng.standard_normal((3, 4))
    close(F.jagged_dense_elementwise_add(T(x), [o], T(y)), ref_to_dense(x, [offsets], [4]) + y)
    got, _ = F.jagged_dense_elementwise_add_jagged_output(T(x), [o], T(y))
    close(got, x + ref_to_jagged(y, [offsets], 5))
    close(F.jagged_1d_to_dense(T(x), o, 2, 3), ref_to_dense(x, [offsets], [2], 3.0))
    for dt in (ember.float16, ember.bfloat16):
        a = rng.standard_normal((5, 4))
        b = rng.standard_normal((3, 4, 2))
        got, _ = F.jagged_dense_bmm(T(a).to(dt), o, T(b).to(dt), 3)
        assert got.dtype == dt
        np.testing.assert_allclose(got.to(ember.float64).numpy(), ref_jagged_dense_bmm(a, offsets, b, 3), atol=0.1)
        got = F.jagged_jagged_bmm(T(a).to(dt), T(a).to(dt), o, 3)
        np.testing.assert_allclose(got.to(ember.float64).numpy(), ref_jagged_jagged_bmm(a, a, offsets, 3), atol=0.1)


def test_stacked_offsets_jagged_outputs():
    off0 = np.array([0, 1, 3])
    off1 = offsets_of([2, 0, 3])
    offs = [T(off0), T(off1)]
    x = rng.standard_normal((5, 2))
    y0, y1 = rng.standard_normal((2, 2, 2, 2)), rng.standard_normal((2, 2, 2, 2))
    got, _ = F.jagged_dense_dense_elementwise_add_jagged_output(T(x), offs, T(y0), T(y1))
    close(got, x + ref_to_jagged(y0, [off0, off1], 5) + ref_to_jagged(y1, [off0, off1], 5))
