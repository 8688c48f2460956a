"""Composite ops (built from other ops) that the op database does not sample on its own."""

import math

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4))


def t(a, dtype=ember.float64):
    return ember.tensor(a, dtype=dtype)


def test_softmax_and_log_softmax():
    for dim in (0, 1, -1):
        e = np.exp(A - A.max(dim, keepdims=True))
        ref = e / e.sum(dim, keepdims=True)
        np.testing.assert_allclose(ember.softmax(t(A), dim).numpy(), ref, rtol=1e-12)
        np.testing.assert_allclose(t(A).log_softmax(dim).numpy(), np.log(ref), rtol=1e-12)
    big = ember.softmax(ember.tensor([1000.0, 1000.0]), 0)
    assert big.tolist() == [0.5, 0.5]
    assert ember.softmax(ember.tensor([1, 2]), 0, dtype=ember.float64).dtype == ember.float64


def test_lerp_addcmul_addcdiv_threshold_nan_to_num():
    a, b, w = A, A[::-1].copy(), RNG.uniform(0, 1, (3, 4))
    np.testing.assert_allclose(ember.lerp(t(a), t(b), t(w)).numpy(), a + w * (b - a), rtol=1e-12)
    np.testing.assert_allclose(ember.addcmul(t(a), t(b), t(w), value=0.5).numpy(), a + 0.5 * b * w, rtol=1e-12)
    np.testing.assert_allclose(ember.addcdiv(t(a), t(b), t(w + 1), value=2).numpy(), a + 2 * b / (w + 1), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"Integer division with addcdiv is no longer supported"):
        ember.addcdiv(ember.tensor([1]), ember.tensor([1]), ember.tensor([2]))
    assert ember.threshold(ember.tensor([0.5, 2.0]), 1.0, -9.0).tolist() == [-9.0, 2.0]
    x = ember.tensor([float("nan"), float("inf"), -float("inf"), 1.5])
    assert ember.nan_to_num(x).tolist() == [0.0, np.finfo(np.float32).max, -np.finfo(np.float32).max, 1.5]
    assert ember.nan_to_num(x, nan=2.0, posinf=1.0, neginf=-1.0).tolist() == [2.0, 1.0, -1.0, 1.5]


def test_activation_arguments():
    x = t(A)
    np.testing.assert_allclose(ember.leaky_relu(x, 0.2).numpy(), np.where(A > 0, A, 0.2 * A), rtol=1e-12)
    np.testing.assert_allclose(ember.elu(x, 2.0).numpy(), np.where(A > 0, A, 2 * np.expm1(A)), rtol=1e-12)
    np.testing.assert_allclose(ember.celu(x, 0.5).numpy(), np.where(A > 0, A, 0.5 * np.expm1(A / 0.5)), rtol=1e-12)
    np.testing.assert_allclose(ember.softplus(x, beta=2.0).numpy(), np.log1p(np.exp(2 * A)) / 2, rtol=1e-12)
    np.testing.assert_allclose(ember.hardtanh(x, -0.5, 0.5).numpy(), np.clip(A, -0.5, 0.5))
    tanh_gelu = 0.5 * A * (1 + np.tanh(math.sqrt(2 / math.pi) * (A + 0.044715 * A**3)))
    np.testing.assert_allclose(ember.gelu(x, approximate="tanh").numpy(), tanh_gelu, rtol=1e-12)
    with pytest.raises(ValueError, match=r"approximate argument must be either none or tanh"):
        ember.gelu(x, approximate="erf")
    with pytest.raises(ValueError, match=r"alpha cannot be 0 for CELU"):
        ember.celu(x, 0.0)
    np.testing.assert_allclose(ember.logit(ember.tensor([0.0, 0.5, 1.0]), eps=0.25).numpy(),
                               np.log(np.array([0.25, 0.5, 0.75]) / (1 - np.array([0.25, 0.5, 0.75]))), rtol=1e-6)


def test_cumsum_cumprod():
    for dim in (0, 1, -1):
        np.testing.assert_allclose(ember.cumsum(t(A), dim).numpy(), np.cumsum(A, dim), rtol=1e-12)
        np.testing.assert_allclose(t(A).t().cumprod(dim).numpy(), np.cumprod(A.T, dim), rtol=1e-12)
    ints = ember.tensor([[1, 2], [3, 4]], dtype=ember.int32)
    assert ints.cumsum(1).dtype == ember.int64 and ints.cumsum(1).tolist() == [[1, 3], [3, 7]]
    assert ember.cumsum(ember.zeros(0, 3), 0).shape == (0, 3)
    assert ember.cumsum(ember.tensor(2.0), 0).item() == 2.0


def test_nan_reductions_and_count_nonzero():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 6.0]])
    np.testing.assert_allclose(ember.nansum(t(x), 1).numpy(), np.nansum(x, 1))
    np.testing.assert_allclose(ember.nanmean(t(x), 0).numpy(), [1.0, np.nan, 4.5])
    assert ember.count_nonzero(ember.tensor([[0, 1, 2], [0, 0, 3]])).item() == 3
    assert ember.count_nonzero(ember.tensor([[0, 1, 2], [0, 0, 3]]), dim=0).tolist() == [0, 1, 2]


def test_cat_stack_and_friends():
    a, b = ember.tensor([[1, 2]]), ember.tensor([[3, 4], [5, 6]])
    assert ember.cat([a, b]).tolist() == [[1, 2], [3, 4], [5, 6]]
    assert ember.cat([a, ember.tensor([[2.5, 0.5]])], dim=0).dtype == ember.float32
    assert ember.cat([ember.tensor([]), a]).tolist() == [[1, 2]]  # legacy empty 1-d tensors are skipped
    assert ember.stack([b, b], dim=1).shape == (2, 2, 2)
    assert ember.hstack([ember.tensor([1]), ember.tensor([2, 3])]).tolist() == [1, 2, 3]
    assert ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])]).shape == (2, 2)
    assert ember.dstack([ember.tensor([1, 2]), ember.tensor([3, 4])]).shape == (1, 2, 2)
    np.testing.assert_array_equal(ember.concat([b.t(), b], 1).numpy(), np.concatenate([b.numpy().T, b.numpy()], 1))
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 0"):
        ember.cat([a, ember.tensor([[1, 2, 3]])])
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 0\) cannot be concatenated"):
        ember.cat([ember.tensor(1), ember.tensor(2)])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size"):
        ember.stack([a, b])


def test_tril_triu_repeat_tile_roll():
    m = np.arange(12).reshape(3, 4)
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(ember.tril(ember.tensor(m), k).numpy(), np.tril(m, k))
        np.testing.assert_array_equal(ember.tensor(m).triu(k).numpy(), np.triu(m, k))
    np.testing.assert_array_equal(ember.tensor(m).repeat(2, 1, 3).numpy(), np.tile(m, (2, 1, 3)))
    np.testing.assert_array_equal(ember.tensor([1, 2]).tile((2,)).numpy(), np.tile([1, 2], 2))
    np.testing.assert_array_equal(ember.roll(ember.tensor(m), 1, 1).numpy(), np.roll(m, 1, 1))
    np.testing.assert_array_equal(ember.tensor(m).roll(-5).numpy(), np.roll(m, -5))
    np.testing.assert_array_equal(ember.roll(ember.tensor(m), (1, 2), (0, 1)).numpy(), np.roll(m, (1, 2), (0, 1)))
    with pytest.raises(RuntimeError, match=r"Number of dimensions of repeat dims can not be smaller"):
        ember.tensor(m).repeat(2)


def test_broadcast_tensors_meshgrid_atleast():
    x, y = ember.broadcast_tensors(ember.zeros(3, 1), ember.zeros(4))
    assert x.shape == y.shape == (3, 4) and x.stride() == (1, 0)
    gx, gy = ember.meshgrid(ember.tensor([1, 2, 3]), ember.tensor([4, 5]), indexing="xy")
    nx, ny = np.meshgrid([1, 2, 3], [4, 5], indexing="xy")
    np.testing.assert_array_equal(gx.numpy(), nx)
    np.testing.assert_array_equal(gy.numpy(), ny)
    assert ember.atleast_3d(ember.tensor([1, 2])).shape == (1, 2, 1)
    assert ember.atleast_2d(ember.tensor(1)).shape == (1, 1)


def test_clip_and_broadcast_shapes():
    assert ember.clip(ember.tensor([-2.0, 2.0]), -1, 1).tolist() == [-1.0, 1.0]
    x = ember.tensor([5.0])
    x.clip_(max=1.0)
    assert x.tolist() == [1.0]
    assert ember.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    assert ember.broadcast_shapes((0, 1), (1, 4)) == (0, 4)
    with pytest.raises(RuntimeError, match=r"must match the size"):
        ember.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_bool_all_and_any_over_the_split_reduction(threads):
    """all()/any() of one long bool run take the split reduction (pieces of 65536 reduced in
    parallel, Note [split reduction]); each piece's result must survive, whichever thread wrote
    it. Their partial results were once a std::vector<bool>, whose packed bits threads race on."""
    n = 19 * 65536 + 123
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for _ in range(20):
            assert ember.ones(n, dtype=ember.bool).all().item()
            assert not ember.zeros(n, dtype=ember.bool).any().item()
        for piece in (0, 7, 19):  # one odd element out, in the first, a middle and the last piece
            a = np.ones(n, dtype=bool)
            a[piece * 65536 + 5] = False
            assert not ember.from_numpy(a).all().item()
            assert ember.from_numpy(~a).any().item()
            assert (ember.from_numpy(a.astype(np.float64)) >= 1).sum().item() == n - 1
    finally:
        ember.set_num_threads(before)
