"""FBGEMM's sparse-feature helpers (ember.ops.fbgemm.*: asynchronous_complete_cumsum,
permute_1D/2D_sparse_data, bucketize_sparse_features, offsets_range): NumPy references,
properties, bad inputs, and parity with fbgemm_gpu 1.8 (run_fbgemm; skipped without
EMBER_FBGEMM_PYTHON)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember

F = ember.ops.fbgemm
rng = np.random.default_rng(0)
HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def T(a) -> ember.Tensor:
    return ember.from_numpy(np.ascontiguousarray(a))


def N(t) -> np.ndarray:
    return t.numpy()


# ---- references ------------------------------------------------------------------------------------

def ref_cumsum(x: np.ndarray) -> np.ndarray:
    pad = np.zeros((*x.shape[:-1], 1), x.dtype)
    return np.concatenate([pad, np.cumsum(x, axis=-1, dtype=np.int64).astype(x.dtype)], axis=-1)


def ref_permute(perm, lengths, values, weights=None):
    """Output row i is input row perm[i] of lengths, with its block of values (and weights)."""
    rows = lengths.shape[0]
    row_len = lengths.reshape(rows, int(np.prod(lengths.shape[1:]))).sum(axis=1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(row_len)]).astype(np.int64)
    blocks = [np.arange(starts[p], starts[p + 1]) for p in perm]
    take = np.concatenate(blocks).astype(np.int64) if blocks else np.zeros(0, np.int64)
    out_w = None if weights is None else weights[take]
    return lengths[np.asarray(perm, np.int64)], values[take], out_w


def ref_bucketize(lengths, indices, pos, my_size, weights=None):
    n = len(lengths)
    buckets = [[[] for _ in range(n)] for _ in range(my_size)]
    start = 0
    for i, length in enumerate(lengths):
        for j in range(start, start + int(length)):
            v = int(indices[j])
            buckets[v % my_size][i].append((v // my_size, j - start, None if weights is None else weights[j]))
        start += int(length)
    flat = [e for b in buckets for seg in b for e in seg]
    new_lengths = np.array([len(seg) for b in buckets for seg in b], lengths.dtype)
    new_indices = np.array([e[0] for e in flat], indices.dtype)
    new_pos = np.array([e[1] for e in flat], indices.dtype) if pos else None
    new_w = None if weights is None else np.array([e[2] for e in flat], weights.dtype)
    return new_lengths, new_indices, new_w, new_pos


def ref_offsets_range(offsets, range_size):
    out = np.zeros(range_size, offsets.dtype)
    ends = [*offsets[1:].tolist(), range_size] if len(offsets) else []
    for lo, hi in zip(offsets.tolist(), ends, strict=True):
        out[lo:hi] = np.arange(hi - lo)
    return out


def check_same(got, want):
    if want is None:
        assert got is None
        return
    assert got is not None
    g = N(got)
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    assert g.shape == want.shape, (g.shape, want.shape)
    np.testing.assert_array_equal(g, want)


def check_all(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        check_same(g, w)


# ---- asynchronous_complete_cumsum ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_complete_cumsum_1d_2d(dtype):
    x = np.array([3, 0, 5, 1, 0, 2], dtype)
    check_same(F.asynchronous_complete_cumsum(T(x)), ref_cumsum(x))
    x2 = rng.integers(0, 9, (3, 4)).astype(dtype)
    check_same(F.asynchronous_complete_cumsum(T(x2)), ref_cumsum(x2))
    # a non-contiguous input
    check_same(F.asynchronous_complete_cumsum(T(x2).t()), ref_cumsum(np.ascontiguousarray(x2.T)))
    check_same(F.asynchronous_complete_cumsum(T(np.zeros(0, dtype))), np.zeros(1, dtype))
    check_same(F.asynchronous_complete_cumsum(T(np.zeros((2, 0), dtype))), np.zeros((2, 1), dtype))
    # negative entries are summed as they are
    check_same(F.asynchronous_complete_cumsum(T(np.array([2, -3], dtype))), np.array([0, 2, -1], dtype))


def test_complete_cumsum_bad_inputs():
    with pytest.raises(ValueError, match=r"\[asynchronous_complete_cumsum\] expected the running sum to fit in the "
                                         r"input's dtype, but it reached 2147483648 at position 1"):
        F.asynchronous_complete_cumsum(T(np.array([2**31 - 1, 1], np.int32)))
    with pytest.raises(ValueError, match=r"reached -2147483649 at position 1"):
        F.asynchronous_complete_cumsum(T(np.array([-(2**31), -1], np.int32)))
    with pytest.raises(TypeError, match=r"\[asynchronous_complete_cumsum\] expected t_in of dtype int32 or int64, "
                                        r"but got float32"):
        F.asynchronous_complete_cumsum(T(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match=r"\[asynchronous_complete_cumsum\] expected a 1-D or 2-D t_in, but got 3-D"):
        F.asynchronous_complete_cumsum(T(np.zeros((1, 2, 3), np.int64)))
    # int64 sums past int32 fine
    check_same(F.asynchronous_complete_cumsum(T(np.array([2**31 - 1, 1], np.int64))),
               np.array([0, 2**31 - 1, 2**31], np.int64))


# ---- permute_2D_sparse_data / permute_1D_sparse_data -----------------------------------------------------

def sparse_2d(Tn, B, ldtype, vdtype=np.int64, max_len=4, zero_frac=0.3):
    lengths = rng.integers(0, max_len + 1, (Tn, B))
    lengths[rng.random((Tn, B)) < zero_frac] = 0
    lengths = lengths.astype(ldtype)
    total = int(lengths.sum())
    values = rng.integers(-100, 100, total).astype(vdtype)
    weights = rng.standard_normal(total).astype(np.float32)
    return lengths, values, weights


@pytest.mark.parametrize("ldtype", [np.int32, np.int64])
@pytest.mark.parametrize("pdtype", [np.int32, np.int64])
@pytest.mark.parametrize("with_weights", [False, True])
def test_permute_2d_reference(ldtype, pdtype, with_weights):
    lengths, values, weights = sparse_2d(5, 4, ldtype)
    lengths[2] = 0  # a feature with no values at all
    values = rng.integers(-100, 100, int(lengths.sum())).astype(np.int64)
    weights = rng.standard_normal(len(values)).astype(np.float32)
    w = weights if with_weights else None
    for perm in ([4, 2, 0, 1, 3], [3, 3, 0], [1], [2, 2], list(range(5))[::-1]):
        p = np.array(perm, pdtype)
        got = F.permute_2D_sparse_data(T(p), T(lengths), T(values), None if w is None else T(w))
        check_all(got, ref_permute(p, lengths, values, w))
        total = int(ref_permute(p, lengths, values)[1].shape[0])
        got = F.permute_2D_sparse_data(T(p), T(lengths), T(values), None if w is None else T(w), total)
        check_all(got, ref_permute(p, lengths, values, w))


@pytest.mark.parametrize("vdtype", [np.float32, np.float64, np.float16, np.int8, np.bool_, np.int32, np.complex64])
def test_permute_values_of_any_dtype(vdtype):
    lengths = np.array([[2, 0, 1], [0, 3, 1]], np.int64)
    values = (np.arange(7) % 3).astype(vdtype)
    perm = np.array([1, 0, 1], np.int32)
    check_all(F.permute_2D_sparse_data(T(perm), T(lengths), T(values)), ref_permute(perm, lengths, values))
    check_all(F.permute_1D_sparse_data(T(perm), T(lengths[:, 0].copy()), T(values[:2])),
              ref_permute(perm, lengths[:, 0].copy(), values[:2]))


@pytest.mark.parametrize("wdtype", [np.float32, np.float64, np.float16])
def test_permute_weight_dtypes(wdtype):
    lengths = np.array([1, 2, 0, 3], np.int32)
    values = np.arange(6, dtype=np.int64)
    weights = np.linspace(-1, 1, 6).astype(wdtype)
    perm = np.array([3, 0, 2, 1], np.int64)
    check_all(F.permute_1D_sparse_data(T(perm), T(lengths), T(values), T(weights)),
              ref_permute(perm, lengths, values, weights))


@pytest.mark.parametrize("ldtype", [np.int32, np.int64])
@pytest.mark.parametrize("with_weights", [False, True])
def test_permute_1d_reference(ldtype, with_weights):
    lengths = np.array([1, 2, 0, 3, 0, 4], ldtype)
    values = rng.standard_normal(int(lengths.sum())).astype(np.float32)
    weights = rng.standard_normal(len(values)).astype(np.float32) if with_weights else None
    for perm in ([3, 0, 0], [5, 4, 3, 2, 1, 0], [2, 4], []):
        p = np.array(perm, np.int32)
        got = F.permute_1D_sparse_data(T(p), T(lengths), T(values), None if weights is None else T(weights))
        check_all(got, ref_permute(p, lengths, values, weights))


def test_permute_empty_inputs():
    e32, e64 = np.zeros(0, np.int32), np.zeros(0, np.int64)
    w0 = np.zeros(0, np.float32)
    # no permute entries
    lengths = np.array([[1, 2], [0, 1]], np.int32)
    check_all(F.permute_2D_sparse_data(T(e32), T(lengths), T(np.arange(4)), T(np.ones(4, np.float32))),
              (np.zeros((0, 2), np.int32), e64, w0))
    # no features
    check_all(F.permute_2D_sparse_data(T(e32), T(np.zeros((0, 3), np.int64)), T(e64), T(w0), 0),
              (np.zeros((0, 3), np.int64), e64, w0))
    # features with an empty batch
    check_all(F.permute_2D_sparse_data(T(np.array([1, 0], np.int32)), T(np.zeros((2, 0), np.int32)), T(e64)),
              (np.zeros((2, 0), np.int32), e64, None))
    # all lengths zero
    check_all(F.permute_1D_sparse_data(T(np.array([1, 1], np.int32)), T(np.zeros(3, np.int64)), T(w0), T(w0)),
              (np.zeros(2, np.int64), w0, w0))
    check_all(F.permute_1D_sparse_data(T(e64), T(e64), T(e32)), (e64, e32, None))


def test_permute_ignores_values_past_the_lengths():
    # as FBGEMM: values (and weights) may run past sum(lengths); the tail is never read
    lengths = np.array([1, 1], np.int32)
    values = np.array([5, 6, 7, 8], np.int64)
    check_all(F.permute_1D_sparse_data(T(np.array([1, 0], np.int32)), T(lengths), T(values)),
              (np.array([1, 1], np.int32), np.array([6, 5], np.int64), None))


def test_permute_noncontiguous_inputs():
    lengths, values, weights = sparse_2d(4, 3, np.int64)
    lt = np.ascontiguousarray(lengths.T)  # (3, 4): transposed back through ember
    perm = np.array([3, 1, 2, 0, 1], np.int32)
    got = F.permute_2D_sparse_data(T(perm), T(lt).t(), T(values), T(weights))
    check_all(got, ref_permute(perm, lengths, values, weights))
    stepped = np.zeros(2 * len(values), values.dtype)
    stepped[::2] = values
    got = F.permute_2D_sparse_data(T(perm), T(lengths), T(stepped)[::2], T(weights))
    check_all(got, ref_permute(perm, lengths, values, weights))


def test_permute_large_parallel():
    # big enough for several parallel_for chunks
    lengths, values, weights = sparse_2d(64, 512, np.int32, max_len=8)
    perm = rng.permutation(64).astype(np.int32)
    perm = np.concatenate([perm, perm[:10]])
    check_all(F.permute_2D_sparse_data(T(perm), T(lengths), T(values), T(weights)),
              ref_permute(perm, lengths, values, weights))


@pytest.mark.filterwarnings("ignore:vmap. there is no batching rule")
def test_permute_in_vmap():
    # the loop over the batch stacks each output and passes the None weights through. (ember.ops.*
    # reaches the autograd layer, where vmap is handled, only when an input requires grad.)
    lengths = T(np.array([1, 2, 0], np.int64))
    perm = T(np.array([1, 2, 0], np.int32))
    vals = rng.standard_normal((4, 3)).astype(np.float32)
    v = T(vals).requires_grad_()
    out = ember.vmap(lambda v: F.permute_1D_sparse_data(perm, lengths, v), out_dims=(0, 0, None))(v)
    assert out[2] is None
    np.testing.assert_array_equal(N(out[0].detach()), np.tile([2, 0, 1], (4, 1)))
    np.testing.assert_array_equal(N(out[1].detach()), vals[:, [1, 2, 0]])
    w = T(vals * 2)
    out = ember.vmap(lambda v, w: F.permute_1D_sparse_data(perm, lengths, v, w))(v, w)
    np.testing.assert_array_equal(N(out[2]), 2 * vals[:, [1, 2, 0]])


# ---- bucketize_sparse_features ------------------------------------------------------------------------

@pytest.mark.parametrize("ldtype", [np.int32, np.int64])
@pytest.mark.parametrize("idtype", [np.int32, np.int64])
@pytest.mark.parametrize("pos", [False, True])
@pytest.mark.parametrize("with_weights", [False, True])
def test_bucketize_reference(ldtype, idtype, pos, with_weights):
    lengths = np.array([2, 0, 1, 3, 0, 5], ldtype)
    indices = rng.integers(0, 50, int(lengths.sum())).astype(idtype)
    weights = rng.standard_normal(len(indices)).astype(np.float32) if with_weights else None
    for my_size in (1, 2, 3, 7, 100):
        got = F.bucketize_sparse_features(T(lengths), T(indices), pos, my_size,
                                          None if weights is None else T(weights))
        check_all(got, ref_bucketize(lengths, indices, pos, my_size, weights))


def test_bucketize_known_values():
    lengths = np.array([2, 1, 3], np.int32)
    indices = np.array([0, 5, 3, 7, 2, 9], np.int32)
    new_l, new_i, new_w, new_p = F.bucketize_sparse_features(T(lengths), T(indices), True, 3,
                                                             T(np.arange(6, dtype=np.float32)))
    assert N(new_l).tolist() == [1, 1, 1, 0, 0, 1, 1, 0, 1]
    assert N(new_i).tolist() == [0, 1, 3, 2, 1, 0]
    assert N(new_w).tolist() == [0, 2, 5, 3, 1, 4]
    assert N(new_p).tolist() == [0, 0, 2, 0, 1, 1]


@pytest.mark.parametrize("wdtype", [np.float64, np.float16])
def test_bucketize_weight_dtypes(wdtype):
    lengths = np.array([3, 1], np.int64)
    indices = np.array([4, 1, 6, 3], np.int64)
    weights = np.array([0.5, -1, 2, 3], wdtype)
    check_all(F.bucketize_sparse_features(T(lengths), T(indices), False, 2, T(weights)),
              ref_bucketize(lengths, indices, False, 2, weights))


def test_bucketize_empty_inputs():
    e32 = np.zeros(0, np.int32)
    w0 = np.zeros(0, np.float32)
    check_all(F.bucketize_sparse_features(T(e32), T(e32), True, 3, T(w0)), (e32, e32, w0, e32))
    check_all(F.bucketize_sparse_features(T(np.zeros(2, np.int64)), T(e32), False, 3),
              (np.zeros(6, np.int64), e32, None, None))


# ---- offsets_range ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_offsets_range_reference(dtype):
    for offsets, size in (([0, 2, 2, 5], 7), ([0, 2, 2, 5], 5), ([0], 0), ([0], 4), ([0, 0, 0], 0), ([0, 0, 3], 3),
                          ([], 0)):
        o = np.array(offsets, dtype)
        check_same(F.offsets_range(T(o), size), ref_offsets_range(o, size))
    assert N(F.offsets_range(T(np.array([0, 2, 2, 5], dtype)), 7)).tolist() == [0, 1, 0, 1, 2, 0, 1]


def test_offsets_range_large_parallel():
    lengths = rng.integers(0, 30, 5000)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    size = int(lengths.sum())
    check_same(F.offsets_range(T(offsets), size), ref_offsets_range(offsets, size))
    stepped = np.repeat(offsets, 2)
    check_same(F.offsets_range(T(stepped)[::2], size), ref_offsets_range(offsets, size))


# ---- properties ------------------------------------------------------------------------------------

@st.composite
def sparse_2d_st(draw):
    Tn = draw(st.integers(0, 5))
    B = draw(st.integers(0, 4))
    lengths = np.array(draw(st.lists(st.integers(0, 4), min_size=Tn * B, max_size=Tn * B)), np.int64).reshape(Tn, B)
    perm = draw(st.lists(st.integers(0, Tn - 1), max_size=8)) if Tn else []
    return lengths, np.array(perm, np.int64)


@HYP
@given(case=sparse_2d_st(), i32=st.booleans(), with_weights=st.booleans())
def test_permute_2d_property(case, i32, with_weights):
    lengths, perm = case
    ldtype = np.int32 if i32 else np.int64
    lengths = lengths.astype(ldtype)
    values = np.arange(int(lengths.sum()), dtype=np.int64) * 3 + 1
    weights = values.astype(np.float32) / 2 if with_weights else None
    got = F.permute_2D_sparse_data(T(perm.astype(ldtype)), T(lengths), T(values),
                                   None if weights is None else T(weights))
    want = ref_permute(perm, lengths, values, weights)
    check_all(got, want)
    # permuting by a permutation and then by its inverse gives the input back
    if len(lengths):
        p = np.random.default_rng(len(perm)).permutation(len(lengths))
        once = F.permute_2D_sparse_data(T(p), T(lengths), T(values))
        back = F.permute_2D_sparse_data(T(np.argsort(p)), once[0], once[1])
        check_same(back[0], lengths)
        check_same(back[1], values)


@HYP
@given(lengths=st.lists(st.integers(0, 5), max_size=10), data=st.data(), with_weights=st.booleans())
def test_permute_1d_property(lengths, data, with_weights):
    lengths = np.array(lengths, np.int64)
    perm = np.array(data.draw(st.lists(st.integers(0, max(len(lengths) - 1, 0)), max_size=12))
                    if len(lengths) else [], np.int32)
    values = np.arange(int(lengths.sum()), dtype=np.float64)
    weights = -values.astype(np.float32) if with_weights else None
    got = F.permute_1D_sparse_data(T(perm), T(lengths), T(values), None if weights is None else T(weights))
    check_all(got, ref_permute(perm, lengths, values, weights))
    assert N(got[0]).sum() == len(N(got[1]))


@HYP
@given(lengths=st.lists(st.integers(0, 5), max_size=8), my_size=st.integers(1, 6), pos=st.booleans(),
       i32=st.booleans(), data=st.data())
def test_bucketize_property(lengths, my_size, pos, i32, data):
    dtype = np.int32 if i32 else np.int64
    lengths = np.array(lengths, dtype)
    total = int(lengths.sum())
    indices = np.array(data.draw(st.lists(st.integers(0, 2**31 - 1), min_size=total, max_size=total)), dtype)
    weights = np.arange(total, dtype=np.float32)
    new_l, new_i, new_w, new_p = F.bucketize_sparse_features(T(lengths), T(indices), pos, my_size, T(weights))
    check_all((new_l, new_i, new_w, new_p), ref_bucketize(lengths, indices, pos, my_size, weights))
    # every index comes back as new * my_size + bucket, each exactly once (the weights name them)
    nl, ni, nw = N(new_l).reshape(my_size, len(lengths)), N(new_i), N(new_w).astype(np.int64)
    bucket = np.repeat(np.arange(my_size), nl.sum(axis=1))
    np.testing.assert_array_equal(ni.astype(np.int64) * my_size + bucket, indices[nw].astype(np.int64))
    assert sorted(nw.tolist()) == list(range(total))
    np.testing.assert_array_equal(nl.sum(axis=0), lengths)


@HYP
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=10), tail=st.integers(0, 6), i32=st.booleans())
def test_offsets_range_property(lengths, tail, i32):
    dtype = np.int32 if i32 else np.int64
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(dtype)
    size = int(offsets[-1]) + tail
    out = N(F.offsets_range(T(offsets), size))
    check_same(F.offsets_range(T(offsets), size), ref_offsets_range(offsets, size))
    # subtracting the position within its segment leaves each segment's start
    starts = np.repeat(offsets, np.diff(np.concatenate([offsets, [size]])))
    np.testing.assert_array_equal(np.arange(size) - out, starts)


@HYP
@given(rows=st.lists(st.lists(st.integers(-1000, 1000), min_size=3, max_size=3), max_size=5), i32=st.booleans())
def test_complete_cumsum_property(rows, i32):
    dtype = np.int32 if i32 else np.int64
    x = np.array(rows, dtype).reshape(len(rows), 3)
    out = N(F.asynchronous_complete_cumsum(T(x)))
    check_same(F.asynchronous_complete_cumsum(T(x)), ref_cumsum(x))
    np.testing.assert_array_equal(np.diff(out, axis=-1), x)


# ---- bad inputs --------------------------------------------------------------------------------------

I32 = np.int32


def a(*v, dtype=np.int64):
    return T(np.array(v, dtype))


def test_permute_bad_inputs():
    lengths = T(np.array([[1, 2, 0], [3, 0, 1]], I32))
    values = T(np.arange(7, dtype=np.int64))
    weights = T(np.arange(7, dtype=np.float32))
    op = r"\[permute_2D_sparse_data\] "
    P = F.permute_2D_sparse_data
    with pytest.raises(IndexError, match=op + r"expected every permute entry in \[0, 2\), but got 2 at position 1"):
        P(a(0, 2, dtype=I32), lengths, values)
    with pytest.raises(IndexError, match=op + r"expected every permute entry in \[0, 2\), but got -1 at position 0"):
        P(a(-1), lengths, values)
    with pytest.raises(IndexError, match=r"expected every permute entry in \[0, 0\), but got 0"):
        P(a(0), T(np.zeros((0, 2), I32)), values)
    with pytest.raises(TypeError, match=op + r"expected permute of dtype int32 or int64, but got float32"):
        P(T(np.zeros(1, np.float32)), lengths, values)
    with pytest.raises(TypeError, match=op + r"expected lengths of dtype int32 or int64, but got float32"):
        P(a(0), T(np.ones((2, 3), np.float32)), values)
    with pytest.raises(ValueError, match=op + r"expected 1-D permute, but got shape"):
        P(a(0, 1).reshape(2, 1), lengths, values)
    with pytest.raises(ValueError, match=op + r"expected 2-D lengths, but got shape"):
        P(a(0), lengths.reshape(6), values)
    with pytest.raises(ValueError, match=op + r"expected 1-D values, but got shape"):
        P(a(0), lengths, values.reshape(7, 1))
    with pytest.raises(ValueError, match=op + r"expected non-negative lengths, but got -2 at position \[0, 1\]"):
        P(a(0), T(np.array([[1, -2, 0], [3, 0, 1]], I32)), values)
    with pytest.raises(ValueError, match=op + r"expected the lengths to sum to at most len\(values\) \(5\), but they "
                                              r"reach 3 \+ 3 at position \[1, 0\]"):
        P(a(0), lengths, values[:5])
    with pytest.raises(ValueError, match=op + r"expected the lengths to sum to at most len\(values\) \(7\)"):
        P(a(0), T(np.array([[1, 2**62], [2**62, 2**62]], np.int64)), values)
    with pytest.raises(ValueError, match=op + r"expected one weight per entry of values \(7\), but got 6"):
        P(a(0), lengths, values, weights[:6])
    with pytest.raises(ValueError, match=op + r"expected one weight per entry of values \(7\), but got 8"):
        P(a(0), lengths, values, T(np.zeros(8, np.float32)))
    with pytest.raises(ValueError, match=op + r"expected 1-D weights, but got shape"):
        P(a(0), lengths, values, weights.reshape(7, 1))
    with pytest.raises(TypeError, match=op + r"expected weights of a floating dtype, but got int64"):
        P(a(0), lengths, values, values)
    with pytest.raises(ValueError, match=op + r"expected permuted_lengths_sum to equal the sum of the permuted "
                                              r"lengths \(7\), but got 5"):
        P(a(1, 0), lengths, values, weights, 5)
    with pytest.raises(ValueError, match=r"\(7\), but got 9"):
        P(a(1, 0), lengths, values, None, 9)


def test_permute_1d_bad_inputs():
    op = r"\[permute_1D_sparse_data\] "
    P = F.permute_1D_sparse_data
    lengths, values = a(1, 2, 0, 3), T(np.arange(6.0))
    with pytest.raises(IndexError, match=op + r"expected every permute entry in \[0, 4\), but got 4 at position 2"):
        P(a(3, 0, 4), lengths, values)
    with pytest.raises(ValueError, match=op + r"expected 1-D lengths, but got shape"):
        P(a(0), lengths.reshape(2, 2), values)
    with pytest.raises(ValueError, match=op + r"expected non-negative lengths, but got -1 at position 2"):
        P(a(0), a(1, 2, -1, 3), values)
    with pytest.raises(ValueError, match=op + r"expected the lengths to sum to at most len\(values\) \(6\), but they "
                                              r"reach 3 \+ 4 at position 3"):
        P(a(0), a(1, 2, 0, 4), values)
    with pytest.raises(ValueError, match=op + r"expected permuted_lengths_sum to equal the sum of the permuted "
                                              r"lengths \(4\), but got 3"):
        P(a(3, 0), lengths, values, None, 3)
    with pytest.raises(ValueError, match=op + r"expected one weight per entry of values \(6\), but got 5"):
        P(a(0), lengths, values, values[:5])


def test_bucketize_bad_inputs():
    op = r"\[bucketize_sparse_features\] "
    B = F.bucketize_sparse_features
    lengths, indices = a(2, 1, 3, dtype=I32), a(0, 5, 3, 7, 2, 9, dtype=I32)
    for bad in (0, -3):
        with pytest.raises(ValueError, match=op + rf"expected my_size > 0, but got {bad}"):
            B(lengths, indices, False, bad)
    with pytest.raises(ValueError, match=op + r"expected my_size \* len\(lengths\) to fit in int64"):
        B(lengths, indices, False, 2**62)
    with pytest.raises(TypeError, match=op + r"expected lengths of dtype int32 or int64, but got float64"):
        B(T(np.array([2.0, 4.0])), indices, False, 2)
    with pytest.raises(TypeError, match=op + r"expected indices of dtype int32 or int64, but got float32"):
        B(lengths, T(np.zeros(6, np.float32)), False, 2)
    with pytest.raises(ValueError, match=op + r"expected 1-D lengths, but got shape"):
        B(lengths.reshape(3, 1), indices, False, 2)
    with pytest.raises(ValueError, match=op + r"expected 1-D indices, but got shape"):
        B(lengths, indices.reshape(3, 2), False, 2)
    with pytest.raises(ValueError, match=op + r"expected non-negative lengths, but got -1 at position 1"):
        B(a(2, -1, 5), indices, False, 2)
    with pytest.raises(ValueError, match=op + r"expected the lengths to sum to at most len\(indices\) \(6\), but they "
                                              r"reach 3 \+ 4 at position 2"):
        B(a(2, 1, 4), indices, False, 2)
    with pytest.raises(ValueError, match=op + r"expected the lengths to sum to len\(indices\) \(6\), but they sum to 5"):
        B(a(2, 1, 2), indices, False, 2)
    with pytest.raises(ValueError, match=op + r"expected non-negative indices, but got -5 at position 1"):
        B(lengths, a(0, -5, 3, 7, 2, 9, dtype=I32), False, 2)
    with pytest.raises(ValueError, match=op + r"expected one weight per entry of indices \(6\), but got 5"):
        B(lengths, indices, True, 2, T(np.zeros(5, np.float32)))
    with pytest.raises(TypeError, match=op + r"expected weights of a floating dtype, but got int32"):
        B(lengths, indices, True, 2, indices)
    with pytest.raises(ValueError, match=op + r"expected 1-D weights, but got shape"):
        B(lengths, indices, True, 2, T(np.zeros((3, 2), np.float32)))


def test_offsets_range_bad_inputs():
    op = r"\[offsets_range\] "
    with pytest.raises(ValueError, match=op + r"expected range_size >= 0, but got -1"):
        F.offsets_range(a(0, 1), -1)
    with pytest.raises(ValueError, match=op + r"expected offsets\[0\] == 0, but got 1"):
        F.offsets_range(a(1, 2, 2, 5), 5)
    with pytest.raises(ValueError, match=op + r"expected offsets to be non-decreasing, but got 3 then 2 at position 2"):
        F.offsets_range(a(0, 3, 2), 4)
    with pytest.raises(ValueError, match=op + r"expected the last offset to be at most range_size \(3\), but got 5"):
        F.offsets_range(a(0, 2, 5), 3)
    with pytest.raises(ValueError, match=op + r"expected range_size == 0 for empty offsets \(no segment to fill it\), "
                                              r"but got 3"):
        F.offsets_range(a(), 3)
    with pytest.raises(ValueError, match=op + r"expected range_size to fit in the offsets' dtype int32, but got "
                                              r"2147483648"):
        F.offsets_range(a(0, dtype=I32), 2**31)
    with pytest.raises(TypeError, match=op + r"expected offsets of dtype int32 or int64, but got float32"):
        F.offsets_range(T(np.zeros(2, np.float32)), 4)
    with pytest.raises(ValueError, match=op + r"expected 1-D offsets, but got shape"):
        F.offsets_range(a(0, 1, 2, 3).reshape(2, 2), 4)


# ---- parity with fbgemm_gpu ----------------------------------------------------------------------------

def test_parity_with_fbgemm(run_fbgemm):
    # fbgemm_gpu 1.8 on CPU takes int32 permutes, lengths and indices of one dtype, float32
    # weights for bucketize; Ember takes more (int64 permutes, mixed dtypes, any float weights)
    l2_32, v2, w2 = sparse_2d(6, 5, np.int32)
    l2_64 = l2_32.astype(np.int64)
    perm2 = np.array([5, 0, 3, 3, 1], np.int32)
    l1 = np.array([1, 0, 3, 2, 0, 4, 1], np.int64)
    v1 = rng.standard_normal(int(l1.sum())).astype(np.float32)  # fbgemm's 1-D kernel takes no float64
    w1 = rng.standard_normal(len(v1)).astype(np.float32)
    perm1 = np.array([6, 2, 2, 0, 4], np.int32)
    bl = np.array([2, 0, 1, 3, 0, 5, 1], np.int32)
    bi = rng.integers(0, 1000, int(bl.sum())).astype(np.int32)
    bw = rng.standard_normal(len(bi)).astype(np.float32)
    offs32 = np.array([0, 2, 2, 5, 9], np.int32)
    cs2 = rng.integers(0, 9, (3, 5)).astype(np.int64)
    arrays = dict(l2_32=l2_32, l2_64=l2_64, v2=v2, w2=w2, perm2=perm2, l1=l1, v1=v1, w1=w1, perm1=perm1, bl=bl,
                  bi=bi, bw=bw, offs32=offs32, offs64=offs32.astype(np.int64), cs1=bl, cs2=cs2)
    out = run_fbgemm('''
        t = {k: torch.from_numpy(a) for k, a in inputs.items()}
        f = torch.ops.fbgemm
        def put(name, res):
            for i, r in enumerate(res):
                if r is not None:
                    result[f"{name}{i}"] = r.numpy()
        put("p2w32", f.permute_2D_sparse_data(t["perm2"], t["l2_32"], t["v2"], t["w2"]))
        put("p2w64", f.permute_2D_sparse_data(t["perm2"], t["l2_64"], t["v2"], t["w2"], int(t["l2_64"][[5, 0, 3, 3, 1]].sum())))
        put("p2", f.permute_2D_sparse_data(t["perm2"], t["l2_32"], t["v2"].float()))
        put("p1w", f.permute_1D_sparse_data(t["perm1"], t["l1"], t["v1"], t["w1"]))
        put("p1i", f.permute_1D_sparse_data(t["perm1"], t["l1"], t["l1"].repeat(3)[:len(t["v1"])]))
        put("p1", f.permute_1D_sparse_data(t["perm1"], t["l1"].int(), t["v1"]))
        for pos in (False, True):
            for size in (1, 3, 4):
                put(f"b{int(pos)}{size}w", f.bucketize_sparse_features(t["bl"], t["bi"], pos, size, t["bw"]))
                put(f"b{int(pos)}{size}", f.bucketize_sparse_features(t["bl"].long(), t["bi"].long(), pos, size, None))
        for size in (9, 12):
            result[f"or32_{size}"] = f.offsets_range(t["offs32"], size).numpy()
            result[f"or64_{size}"] = f.offsets_range(t["offs64"], size).numpy()
        result["cs1"] = f.asynchronous_complete_cumsum(t["cs1"]).numpy()
        result["cs2"] = f.asynchronous_complete_cumsum(t["cs2"]).numpy()
    ''', **arrays)

    def put(got, name, res):
        for i, r in enumerate(res):
            if r is not None:
                got[f"{name}{i}"] = N(r)

    got = {}
    t = {k: T(v) for k, v in arrays.items()}
    put(got, "p2w32", F.permute_2D_sparse_data(t["perm2"], t["l2_32"], t["v2"], t["w2"]))
    put(got, "p2w64", F.permute_2D_sparse_data(t["perm2"], t["l2_64"], t["v2"], t["w2"],
                                               int(l2_64[[5, 0, 3, 3, 1]].sum())))
    put(got, "p2", F.permute_2D_sparse_data(t["perm2"], t["l2_32"], T(v2.astype(np.float32))))
    put(got, "p1w", F.permute_1D_sparse_data(t["perm1"], t["l1"], t["v1"], t["w1"]))
    put(got, "p1i", F.permute_1D_sparse_data(t["perm1"], t["l1"], T(np.tile(l1, 3)[:len(v1)])))
    put(got, "p1", F.permute_1D_sparse_data(t["perm1"], T(l1.astype(np.int32)), t["v1"]))
    for pos in (False, True):
        for size in (1, 3, 4):
            put(got, f"b{int(pos)}{size}w", F.bucketize_sparse_features(t["bl"], t["bi"], pos, size, t["bw"]))
            put(got, f"b{int(pos)}{size}", F.bucketize_sparse_features(T(bl.astype(np.int64)), T(bi.astype(np.int64)),
                                                                       pos, size, None))
    for size in (9, 12):
        got[f"or32_{size}"] = N(F.offsets_range(t["offs32"], size))
        got[f"or64_{size}"] = N(F.offsets_range(t["offs64"], size))
    got["cs1"] = N(F.asynchronous_complete_cumsum(t["cs1"]))
    got["cs2"] = N(F.asynchronous_complete_cumsum(t["cs2"]))

    assert sorted(got) == sorted(out)
    for k in out:
        assert got[k].dtype == out[k].dtype, (k, got[k].dtype, out[k].dtype)
        assert got[k].shape == out[k].shape, (k, got[k].shape, out[k].shape)
        np.testing.assert_array_equal(got[k], out[k], err_msg=k)
