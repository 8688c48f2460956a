"""The native embedding ops (ember.embedding, ember._embedding_bag and their backward ops) against
float64 NumPy references written here: every mode, per_sample_weights, padding_idx,
include_last_offset, empty bags, 2-D input, float16/bfloat16/float32/float64 tables, int32/int64
indices and offsets, non-contiguous tables and indices, zero-size inputs; gradients by float64
gradcheck (backward and forward mode) and gradgradcheck; the table gradient of large batches
against np.add.at and bitwise equal at 1 and 2 threads; adversarial indices and offsets raise
clear errors and never read out of bounds."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(11)
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
MODES = {"sum": 0, "mean": 1, "max": 2}
FLOAT_DTYPES = [(ember.float64, 1e-12), (ember.float32, 1e-5), (ember.float16, 2e-3), (ember.bfloat16, 1.6e-2)]


def _t(a, dtype=None, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    if dtype is not None:
        t = t.to(dtype)
    return t.requires_grad_() if grad else t


def _np(t):
    return t.detach().to(ember.float64).numpy() if t.dtype in (ember.float16, ember.bfloat16) else t.detach().numpy()


def ref_bags(w, idx, offsets, mode, psw=None, padding_idx=-1, include_last_offset=False):
    """(output, max rows) of embedding_bag in float64, bag by bag."""
    n = len(idx)
    bounds = list(offsets) + ([] if include_last_offset else [n])
    out = np.zeros((len(bounds) - 1, w.shape[1]))
    rows = np.full(out.shape, -1)
    for b in range(len(bounds) - 1):
        members = [i for i in range(bounds[b], bounds[b + 1]) if idx[i] != padding_idx]
        if not members:
            continue
        vals = w[idx[members]] * (psw[members][:, None] if psw is not None else 1.0)
        if mode == "max":
            out[b] = vals.max(0)
            rows[b] = idx[members][vals.argmax(0)]
        else:
            out[b] = vals.sum(0) / (len(members) if mode == "mean" else 1)
    return out, rows


def ref_bag_grad(grad, w_shape, idx, offsets, mode, psw=None, padding_idx=-1, include_last_offset=False,
                 freq=False, max_rows=None):
    n = len(idx)
    gw = np.zeros(w_shape)
    if mode == "max":
        for b in range(grad.shape[0]):
            for d in range(grad.shape[1]):
                if max_rows[b, d] >= 0:
                    gw[max_rows[b, d], d] += grad[b, d]
        return gw
    bounds = list(offsets) + ([] if include_last_offset else [n])
    members_all = [i for b in range(len(bounds) - 1) for i in range(bounds[b], bounds[b + 1])
                   if idx[i] != padding_idx]
    uses = np.bincount(idx[members_all], minlength=w_shape[0]) if members_all else np.zeros(w_shape[0], int)
    for b in range(len(bounds) - 1):
        members = [i for i in range(bounds[b], bounds[b + 1]) if idx[i] != padding_idx]
        for i in members:
            f = (psw[i] if psw is not None else 1.0) / (len(members) if mode == "mean" else 1)
            if freq:
                f /= uses[idx[i]]
            gw[idx[i]] += f * grad[b]
    return gw


# ---- forward ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dtype, tol", FLOAT_DTYPES)
def test_embedding_bag_matches_reference_every_mode_and_dtype(mode, dtype, tol):
    for width in (1, 5, 8, 37, 128, 200):  # every vector tile and the scalar tail
        w = RNG.standard_normal((50, width))
        w_cast = _np(_t(w, dtype))  # the table as the dtype holds it
        idx = RNG.integers(0, 50, 40)
        offsets = np.array([0, 3, 3, 10, 25, 25, 39])
        got = F.embedding_bag(_t(idx), _t(w, dtype), _t(offsets), mode=mode)
        want, _ = ref_bags(w_cast, idx, offsets, mode)
        assert got.dtype == dtype and tuple(got.shape) == want.shape
        np.testing.assert_allclose(_np(got), want, rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("offset_dtype", [np.int32, np.int64])
def test_index_and_offset_dtypes_padding_and_include_last_offset(index_dtype, offset_dtype):
    w = RNG.standard_normal((12, 6))
    idx = RNG.integers(0, 12, 30).astype(index_dtype)
    idx[[2, 7, 8]] = 4
    offsets = np.array([0, 5, 5, 12, 20, 27], dtype=offset_dtype)
    for mode in MODES:
        for last in (False, True):
            got = F.embedding_bag(_t(idx), _t(w), _t(offsets), mode=mode, padding_idx=4, include_last_offset=last)
            want, _ = ref_bags(w, idx.astype(np.int64), offsets, mode, padding_idx=4, include_last_offset=last)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    psw = RNG.standard_normal(30)
    got = F.embedding_bag(_t(idx), _t(w), _t(offsets), mode="sum", per_sample_weights=_t(psw), padding_idx=4)
    want, _ = ref_bags(w, idx.astype(np.int64), offsets, "sum", psw=psw, padding_idx=4)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


_PARTIAL_VECTOR_SCRIPT = """
import numpy as np, ember
from ember.nn import functional as F
rng = np.random.default_rng(5)
worst = 0.0
for dtype in (np.float32, np.float64):
    for width in list(range(1, 34)) + [100, 129]:
        wide = rng.standard_normal((30, width + 3)).astype(dtype)
        for table in (wide[:, :width], np.ascontiguousarray(wide[:, :width])):  # stride past the row, or not
            idx, offsets = rng.integers(0, 30, 40), np.array([0, 1, 1, 9, 20, 39])
            idx[-1] = 29  # the table's last row, whose end is the end of the allocation when contiguous
            psw = rng.standard_normal(40).astype(dtype)
            for mode, weights, pad in (("sum", None, -1), ("mean", None, 3), ("sum", psw, 3)):
                got = F.embedding_bag(ember.from_numpy(idx), ember.from_numpy(table), ember.from_numpy(offsets),
                                      mode=mode, per_sample_weights=None if weights is None else
                                      ember.from_numpy(weights), padding_idx=None if pad < 0 else pad).numpy()
                want = np.zeros((len(offsets), width))
                bounds = list(offsets) + [len(idx)]
                for b in range(len(offsets)):
                    members = [i for i in range(bounds[b], bounds[b + 1]) if idx[i] != pad]
                    for i in members:
                        want[b] += table[idx[i]].astype(np.float64) * (1.0 if weights is None else float(weights[i]))
                    if mode == "mean" and members:
                        want[b] /= len(members)
                worst = max(worst, float(np.max(np.abs(got - want) / (1 + np.abs(want)), initial=0)))
print(worst)
"""


@pytest.mark.parametrize("capability", ["default", "avx2", "avx512"])
def test_partial_last_vectors_on_every_capability(capability):
    """Widths that end in a partial vector (one pass, the tail read by a masked or overlapping
    load; Note in embedding_rows.h) on each build of the kernels this CPU can run."""
    import os
    import subprocess
    import sys

    order = ["DEFAULT", "AVX2", "AVX512"]
    if order.index(capability.upper()) > order.index(ember.backends.cpu.get_cpu_capability()):
        pytest.skip(f"this CPU does not run the {capability} build")
    run = subprocess.run([sys.executable, "-c", _PARTIAL_VECTOR_SCRIPT], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "EMBER_CPU_CAPABILITY": capability})
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) < 1e-5  # float32 sums of 20 rows, relative to 1 + |value|


def test_per_sample_weights_every_dtype_and_width():
    for dtype, tol in FLOAT_DTYPES:
        for width in (3, 64, 130):
            w = RNG.standard_normal((20, width))
            idx, offsets = RNG.integers(0, 20, 25), np.array([0, 4, 4, 11])
            psw = RNG.standard_normal(25)
            got = F.embedding_bag(_t(idx), _t(w, dtype), _t(offsets), mode="sum", per_sample_weights=_t(psw, dtype))
            want, _ = ref_bags(_np(_t(w, dtype)), idx, offsets, "sum", psw=_np(_t(psw, dtype)))
            np.testing.assert_allclose(_np(got), want, rtol=tol, atol=tol * 8)


def test_two_dim_input_and_non_contiguous_operands():
    w = RNG.standard_normal((9, 16))
    idx = RNG.integers(0, 9, (4, 5))
    want, _ = ref_bags(w, idx.ravel(), np.arange(0, 20, 5), "mean")
    np.testing.assert_allclose(F.embedding_bag(_t(idx), _t(w)).numpy(), want, rtol=1e-12)
    table = _t(w.T).t()  # transposed storage: a column stride of 9
    assert not table.is_contiguous()
    np.testing.assert_allclose(F.embedding_bag(_t(idx), table).numpy(), want, rtol=1e-12)
    wide = _t(RNG.standard_normal((9, 40)))
    cols = wide[:, 3:19]  # unit column stride, row stride 40: read in place
    want, _ = ref_bags(cols.numpy(), idx.ravel(), np.arange(0, 20, 5), "sum")
    np.testing.assert_allclose(F.embedding_bag(_t(idx), cols, mode="sum").numpy(), want, rtol=1e-12)
    stepped = _t(RNG.standard_normal((18, 16)))[::2]
    strided_idx = _t(np.stack([idx, idx], 2))[:, :, 0]
    want, _ = ref_bags(stepped.numpy(), idx.ravel(), np.arange(0, 20, 5), "max")
    np.testing.assert_allclose(F.embedding_bag(strided_idx, stepped, mode="max").numpy(), want, rtol=1e-12)
    psw = _t(RNG.standard_normal((4, 10)))[:, ::2]
    want, _ = ref_bags(w, idx.ravel(), np.arange(0, 20, 5), "sum", psw=psw.numpy().ravel())
    np.testing.assert_allclose(F.embedding_bag(_t(idx), _t(w), mode="sum", per_sample_weights=psw).numpy(), want,
                               rtol=1e-12)


def test_zero_size_and_empty_bags():
    w = _t(RNG.standard_normal((5, 3)))
    assert tuple(F.embedding_bag(_t(np.zeros(0, np.int64)), w, _t(np.zeros(0, np.int64))).shape) == (0, 3)
    out = F.embedding_bag(_t(np.zeros(0, np.int64)), w, _t(np.zeros(4, np.int64)), mode="max")
    np.testing.assert_array_equal(out.numpy(), np.zeros((4, 3)))
    assert tuple(F.embedding_bag(_t(np.zeros((3, 0), np.int64)), w, mode="sum").shape) == (3, 3)
    assert tuple(F.embedding_bag(_t(np.zeros((0, 4), np.int64)), w).shape) == (0, 3)
    narrow = _t(np.zeros((5, 0)))
    assert tuple(F.embedding_bag(_t(np.array([1, 2])), narrow, _t(np.array([0]))).shape) == (1, 0)
    last = F.embedding_bag(_t(np.array([1, 2, 3])), w, _t(np.array([0])), include_last_offset=True)
    assert tuple(last.shape) == (0, 3)  # one offset with include_last_offset: no bag, no index read
    only_padding = F.embedding_bag(_t(np.array([2, 2])), w, _t(np.array([0])), mode="mean", padding_idx=2)
    np.testing.assert_array_equal(only_padding.numpy(), np.zeros((1, 3)))
    out, max_rows = ember._embedding_bag(w, _t(np.array([1, 4, 4])), _t(np.array([0, 0, 2])), mode=2)
    np.testing.assert_array_equal(max_rows.numpy()[0], [-1, -1, -1])  # an empty bag's maxima name no row
    assert max_rows.dtype == ember.int64 and tuple(ember._embedding_bag(w, _t(np.array([1])), _t(np.array([0])))[1]
                                                   .shape) == (0, 3)


def test_embedding_lookup_every_dtype_and_shape():
    w = RNG.standard_normal((7, 4))
    idx = RNG.integers(0, 7, (3, 5))
    for dtype in (ember.float64, ember.float32, ember.float16, ember.bfloat16, ember.int64, ember.int8):
        table = _t(w * 10, dtype)
        got = ember.embedding(table, _t(idx))
        assert got.dtype == dtype
        np.testing.assert_array_equal(_np(got), _np(table)[idx])
    table = _t(w)
    np.testing.assert_array_equal(ember.embedding(table, ember.tensor(3)).numpy(), w[3])  # 0-dim index
    np.testing.assert_array_equal(ember.embedding(table, _t(idx.astype(np.int32)).t()).numpy(), w[idx.T])
    np.testing.assert_array_equal(ember.embedding(table.t().contiguous().t(), _t(idx)).numpy(), w[idx])
    assert tuple(ember.embedding(table, _t(np.zeros((2, 0), np.int64))).shape) == (2, 0, 4)
    assert tuple(ember.embedding(_t(np.zeros((0, 4))), _t(np.zeros(0, np.int64))).shape) == (0, 4)
    big = RNG.standard_normal((5000, 64)).astype(np.float32)
    many = RNG.integers(0, 5000, 20000)
    np.testing.assert_array_equal(ember.embedding(_t(big), _t(many)).numpy(), big[many])


# ---- gradients ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(MODES))
def test_embedding_bag_gradcheck_every_mode(mode):
    w = RNG.standard_normal((8, 3))
    idx = _t(np.array([1, 5, 5, 7, 0, 2, 6, 3, 3]))
    offsets = _t(np.array([0, 2, 2, 6]))
    # (scale_grad_by_freq changes the gradient on purpose: checked against the reference below)
    for kwargs in ({}, {"padding_idx": 3}, {"include_last_offset": True}):
        assert gradcheck(lambda t, kw=kwargs: ember._embedding_bag(t, idx, offsets, mode=MODES[mode], **kw)[0],
                         (_t(w, grad=True),), check_forward_ad=True)
    if mode != "max":
        assert gradgradcheck(lambda t: ember._embedding_bag(t, idx, offsets, mode=MODES[mode], padding_idx=5)[0] ** 2,
                             (_t(w, grad=True),))


def test_per_sample_weights_gradcheck_and_gradgradcheck():
    w, psw = _t(RNG.standard_normal((6, 4)), grad=True), _t(RNG.standard_normal(7), grad=True)
    idx, offsets = _t(np.array([1, 2, 2, 5, 0, 4, 2])), _t(np.array([0, 2, 2, 5]))
    for kwargs in ({}, {"padding_idx": 2}, {"scale_grad_by_freq": True}, {"include_last_offset": True}):
        def f(t, s, kw=kwargs):
            return ember._embedding_bag(t, idx, offsets, per_sample_weights=s, **kw)[0]
        if "scale_grad_by_freq" not in kwargs:  # a deliberately scaled gradient (the backward ops are checked below)
            assert gradcheck(f, (w, psw), check_forward_ad=True)
            assert gradgradcheck(f, (w, psw))


def test_backward_ops_gradcheck_directly():
    idx, offsets = _t(np.array([3, 1, 1, 0, 4])), _t(np.array([0, 1, 3]))
    g = _t(RNG.standard_normal((3, 2)), grad=True)
    psw = _t(RNG.standard_normal(5), grad=True)
    for freq in (False, True):
        for mode in (0, 1):
            weights = psw if mode == 0 else None
            assert gradcheck(lambda go, s=weights, m=mode, f=freq: ember._embedding_bag_backward(
                go, idx, offsets, idx, 6, f, m, s, False, 1), (g,) if weights is None else (g, weights),
                check_forward_ad=True)
    _, max_rows = ember._embedding_bag(_t(RNG.standard_normal((6, 2))), idx, offsets, mode=2)
    assert gradcheck(lambda go: ember._embedding_bag_backward(go, idx, offsets, max_rows, 6, False, 2, None, False,
                                                              -1), (g,), check_forward_ad=True)
    table = _t(RNG.standard_normal((6, 2)), grad=True)
    assert gradcheck(lambda go, t: ember._embedding_bag_per_sample_weights_backward(go, t, idx, offsets, 0, False, 1),
                     (g, table), check_forward_ad=True)
    assert gradgradcheck(lambda go, t: ember._embedding_bag_per_sample_weights_backward(go, t, idx, offsets, 0, False,
                                                                                        -1), (g, table))
    gout = _t(RNG.standard_normal((2, 3, 4)), grad=True)
    flat = _t(np.array([[0, 2, 2], [5, 2, 0]]))
    for padding_idx, freq in ((-1, False), (2, True)):
        assert gradcheck(lambda go, p=padding_idx, f=freq: ember.embedding_dense_backward(go, flat, 7, p, f), (gout,),
                         check_forward_ad=True)
        assert gradgradcheck(lambda go, p=padding_idx, f=freq: ember.embedding_dense_backward(go, flat, 7, p, f) ** 2,
                             (gout,))


def test_embedding_gradients_padding_and_freq():
    """padding_idx and scale_grad_by_freq change the gradient on purpose (the forward still returns
    the padding row), so only the plain lookup is gradchecked; the others against a reference."""
    w = _t(RNG.standard_normal((6, 3)), grad=True)
    raw = np.array([[0, 5, 2], [2, 2, 4]])
    idx = _t(raw)
    assert gradcheck(lambda t: ember.embedding(t, idx), (w,), check_forward_ad=True)
    grad = RNG.standard_normal((2, 3, 3))
    uses = np.bincount(raw.ravel(), minlength=6)
    for padding_idx, freq in ((-1, False), (2, False), (-1, True), (5, True)):
        w.grad = None
        ember.embedding(w, idx, padding_idx, freq).backward(_t(grad))
        want = np.zeros((6, 3))
        for pos, row in np.ndenumerate(raw):
            if row != padding_idx:
                want[row] += grad[pos] / (uses[row] if freq else 1)
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)
    assert gradgradcheck(lambda t: ember.embedding(t, idx) ** 2, (w,))


@pytest.mark.parametrize("mode", list(MODES))
def test_table_gradient_matches_scatter_reference(mode):
    """Many bags sharing rows (the sorted segment sums' duplicates), float32 and float64."""
    rows, width = 300, 24
    w = RNG.standard_normal((rows, width))
    idx = RNG.integers(0, rows, 5000)
    offsets = np.sort(RNG.integers(0, 5000, 700))
    offsets[0] = 0
    grad = RNG.standard_normal((700, width))
    psw = RNG.standard_normal(5000) if mode == "sum" else None
    for dtype, tol in ((ember.float64, 1e-10), (ember.float32, 1e-4)):
        for freq in (False, True):
            table = _t(w, dtype, grad=True)
            out = F.embedding_bag(_t(idx), table, _t(offsets), mode=mode, scale_grad_by_freq=freq, padding_idx=7,
                                  per_sample_weights=None if psw is None else _t(psw, dtype))
            out.backward(_t(grad, dtype))
            _, max_rows = ref_bags(_np(_t(w, dtype)), idx, offsets, mode, padding_idx=7)
            want = ref_bag_grad(grad, w.shape, idx, offsets, mode, psw=psw, padding_idx=7, freq=freq and mode != "max",
                                max_rows=max_rows)
            np.testing.assert_allclose(table.grad.numpy(), want, rtol=tol, atol=tol)
            assert np.all(table.grad.numpy()[7] == 0)


def test_reduced_precision_gradients():
    w = RNG.standard_normal((10, 5))
    idx, offsets = RNG.integers(0, 10, 12), np.array([0, 4, 9])
    grad = RNG.standard_normal((3, 5))
    for dtype, tol in ((ember.float16, 5e-3), (ember.bfloat16, 4e-2)):
        for mode in MODES:
            table = _t(w, dtype, grad=True)
            F.embedding_bag(_t(idx), table, _t(offsets), mode=mode).backward(_t(grad, dtype))
            _, max_rows = ref_bags(_np(_t(w, dtype)), idx, offsets, mode)
            want = ref_bag_grad(_np(_t(grad, dtype)), w.shape, idx, offsets, mode, max_rows=max_rows)
            assert table.grad.dtype == dtype
            np.testing.assert_allclose(_np(table.grad), want, rtol=tol, atol=tol)


def test_gradients_identical_at_one_and_two_threads():
    w = RNG.standard_normal((2000, 40)).astype(np.float32)
    idx = RNG.integers(0, 2000, 60000)
    offsets = np.arange(0, 60000, 30)
    grad = RNG.standard_normal((2000, 40)).astype(np.float32)
    results = []
    before = ember.get_num_threads()
    try:
        for threads in (1, 2):
            ember.set_num_threads(threads)
            table = _t(w, grad=True)
            out = F.embedding_bag(_t(idx), table, _t(offsets), mode="mean")
            out.backward(_t(grad))
            results.append((out.detach().numpy(), table.grad.numpy()))
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    want, _ = ref_bags(w.astype(np.float64), idx, offsets, "mean")
    np.testing.assert_allclose(results[0][0], want, rtol=1e-5, atol=1e-6)


# ---- max_norm -----------------------------------------------------------------------------------

def test_embedding_renorm_norm_types():
    w = RNG.standard_normal((5, 4)) * 3
    for norm_type, norm in ((2.0, lambda r: np.linalg.norm(r)), (1.0, lambda r: np.abs(r).sum()),
                            (3.0, lambda r: (np.abs(r) ** 3).sum() ** (1 / 3)), (np.inf, lambda r: np.abs(r).max())):
        table = _t(w.copy())
        ember.embedding_renorm_(table, _t(np.array([0, 3, 3])), 1.5, norm_type)
        for r in range(5):
            if r in (0, 3) and norm(w[r]) > 1.5:
                np.testing.assert_allclose(table.numpy()[r], w[r] * 1.5 / (norm(w[r]) + 1e-7), rtol=1e-12)
            else:
                np.testing.assert_array_equal(table.numpy()[r], w[r])
    table = _t(w.copy())
    out = F.embedding_bag(_t(np.array([1, 2, 1])), table, _t(np.array([0])), max_norm=0.5, mode="sum")
    assert np.all(np.linalg.norm(table.numpy()[[1, 2]], axis=1) <= 0.5 + 1e-6)
    np.testing.assert_allclose(out.numpy()[0], table.numpy()[[1, 2, 1]].sum(0), rtol=1e-12)


# ---- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [-1, 10, INT64_MAX, INT64_MIN, -10])
def test_out_of_range_indices_raise_index_error(bad):
    w = _t(RNG.standard_normal((10, 3)))
    idx = np.array([1, 2, bad, 4], dtype=np.int64)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t(idx), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.embedding(w, _t(idx))
    # a bag's member: PyTorch's RuntimeError, which names the member's position
    bag_error = rf"Index 2 of input takes value {bad} which is not in the valid range \[0, 10\)"
    for mode in MODES:
        with pytest.raises(RuntimeError, match=bag_error):
            F.embedding_bag(_t(idx), w, _t(np.array([0, 2])), mode=mode)
    for dtype in (ember.float16, ember.bfloat16):  # the widened-accumulator path
        with pytest.raises(RuntimeError, match=bag_error):
            F.embedding_bag(_t(idx), w.to(dtype), _t(np.array([0, 2])))
    with pytest.raises(RuntimeError, match=bag_error):
        F.embedding_bag(_t(idx), w, _t(np.array([0, 2])), mode="sum", per_sample_weights=_t(np.ones(4)))
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.embedding_dense_backward(_t(np.ones((4, 3))), _t(idx), 10, -1, False)
    with pytest.raises(IndexError, match="index out of range in self"):
        ember._embedding_bag_backward(_t(np.ones((2, 3))), _t(idx), _t(np.array([0, 2])), _t(idx), 10, False, 0,
                                      None, False, -1)
    with pytest.raises(IndexError, match="index out of range in self"):
        ember._embedding_bag_per_sample_weights_backward(_t(np.ones((2, 3))), w, _t(idx), _t(np.array([0, 2])), 0,
                                                         False, -1)
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.embedding_renorm_(_t(np.ones((10, 3))), _t(idx), 1.0, 2.0)
    if np.iinfo(np.int32).min <= bad <= np.iinfo(np.int32).max:
        with pytest.raises(RuntimeError, match=bag_error):
            F.embedding_bag(_t(idx.astype(np.int32)), w, _t(np.array([0, 2], np.int32)))


def test_indices_after_the_last_offset_are_never_read():
    w = _t(RNG.standard_normal((4, 2)))
    idx = _t(np.array([1, 2, 3, INT64_MAX, -5]))  # the last two belong to no bag
    got = F.embedding_bag(idx, w, _t(np.array([0, 2, 3])), mode="sum", include_last_offset=True)
    np.testing.assert_allclose(got.numpy(), [w.numpy()[[1, 2]].sum(0), w.numpy()[3]])


def test_bad_offsets_raise():
    w = _t(RNG.standard_normal((10, 3)))
    idx = _t(np.array([1, 2, 3, 4]))
    with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0.*However, got 1"):
        F.embedding_bag(idx, w, _t(np.array([1, 2])))
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing and at most the input length 4, but got "
                                           r"offsets\[2\] = 1 after 3"):
        F.embedding_bag(idx, w, _t(np.array([0, 3, 1])))
    for oversize in (5, INT64_MAX):
        with pytest.raises(RuntimeError, match="offsets must be non-decreasing and at most the input length 4"):
            F.embedding_bag(idx, w, _t(np.array([0, oversize])), include_last_offset=True)
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        F.embedding_bag(idx, w, _t(np.array([0, 2, -1])))
    with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0"):
        F.embedding_bag(idx, w, _t(np.array([-1, 2])))
    with pytest.raises(RuntimeError, match="include_last_offset: number of offsets should be at least 1"):
        F.embedding_bag(idx, w, _t(np.zeros(0, np.int64)), include_last_offset=True)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'offsets' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding_bag(idx, w, _t(np.array([0.0])))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        ember._embedding_bag(w, idx, _t(np.array([[0]])))
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        ember._embedding_bag_backward(_t(np.ones((2, 3))), idx, _t(np.array([0, 5])), idx, 10, False, 0, None, False,
                                      -1)


def test_bad_arguments_raise():
    w = _t(RNG.standard_normal((10, 3)))
    idx, offsets = _t(np.array([1, 2])), _t(np.array([0]))
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got float64"):
        ember.embedding(w, _t(np.array([1.0])))
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        ember.embedding(_t(np.ones(3)), idx)
    with pytest.raises(ValueError, match="^max mode does not support sparse weights$"):
        F.embedding_bag(idx, w, offsets, mode="max", sparse=True)
    with pytest.raises(TypeError, match="expected a float16, bfloat16, float32 or float64 weight, but got int64"):
        ember._embedding_bag(_t(np.ones((3, 2), np.int64)), idx, offsets)
    with pytest.raises(ValueError, match="expected mode 0 \\(sum\\), 1 \\(mean\\) or 2 \\(max\\), but got 3"):
        ember._embedding_bag(w, idx, offsets, mode=3)
    with pytest.raises(ValueError, match="expected padding_idx in \\[0, num_embeddings\\) or -1"):
        ember._embedding_bag(w, idx, offsets, padding_idx=10)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum' \\(got "
                                                  "mode='max'\\)"):
        F.embedding_bag(idx, w, offsets, mode="max", per_sample_weights=_t(np.ones(2)))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        F.embedding_bag(idx, w, offsets, mode="sum", per_sample_weights=_t(np.ones(3)))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        ember._embedding_bag(w, idx, offsets, per_sample_weights=_t(np.ones(3)))
    with pytest.raises(TypeError, match="expected per_sample_weights of the weight's dtype float64, but got float32"):
        F.embedding_bag(idx, w, offsets, mode="sum", per_sample_weights=_t(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor, but got Tensor of dimension 3"):
        F.embedding_bag(_t(np.zeros((1, 1, 1), np.int64)), w)
    with pytest.raises(ValueError, match="input has to be a 1D Tensor"):
        ember._embedding_bag(w, _t(np.zeros((1, 1), np.int64)), offsets)
    with pytest.raises(ValueError, match="expected int64 max_indices of shape"):
        ember._embedding_bag_backward(_t(np.ones((1, 3))), idx, offsets, idx, 10, False, 2, None, False, -1)
    with pytest.raises(IndexError, match="index out of range in self"):
        bad_rows = _t(np.full((1, 3), 10, np.int64))
        ember._embedding_bag_backward(_t(np.ones((1, 3))), idx, offsets, bad_rows, 10, False, 2, None, False, -1)
    with pytest.raises(ValueError, match="expected a gradient of 1 rows of 3 values"):
        ember._embedding_bag_backward(_t(np.ones((2, 3))), idx, offsets, idx, 10, False, 0, None, False, -1)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        ember._embedding_bag_per_sample_weights_backward(_t(np.ones((1, 3))), w, idx, offsets, 1, False, -1)
    with pytest.raises(ValueError, match="expected a 3-D gradient for 2-D indices"):
        ember.embedding_dense_backward(_t(np.ones((2, 3))), _t(np.zeros((1, 2), np.int64)), 10, -1, False)
    with pytest.raises(ValueError, match="expected max_norm >= 0"):
        ember.embedding_renorm_(w, idx, -1.0, 2.0)
