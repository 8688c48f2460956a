"""searchsorted, bucketize, unique, unique_consecutive, where(cond) and norm against NumPy."""

import numpy as np
import pytest

import ember


def test_searchsorted_and_bucketize():
    seq = np.array([1.0, 3.0, 3.0, 5.0, 9.0])
    vals = np.array([[0.0, 3.0, 4.0], [9.0, 10.0, 5.0]])
    for side in ("left", "right"):
        ours = ember.searchsorted(ember.tensor(seq), ember.tensor(vals), right=side == "right")
        np.testing.assert_array_equal(ours.numpy(), np.searchsorted(seq, vals, side=side))
    rows = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
    ours = ember.searchsorted(ember.tensor(rows), ember.tensor([[2.5], [2.5]]))
    assert ours.tolist() == [[2], [1]]
    assert ember.bucketize(ember.tensor([0.5, 3.0, 7.0]), ember.tensor([1.0, 3.0, 5.0])).tolist() == [0, 1, 3]
    assert ember.bucketize(ember.tensor([3.0]), ember.tensor([1.0, 3.0]), right=True, out_int32=True).dtype == ember.int32
    with pytest.raises(RuntimeError, match=r"first N-1 dimensions of boundaries tensor and input value tensor must match"):
        ember.searchsorted(ember.zeros(2, 3), ember.zeros(3, 1))


def test_unique_and_unique_consecutive():
    x = np.array([3, 1, 3, 2, 1, 1])
    values, inverse, counts = ember.unique(ember.tensor(x), return_inverse=True, return_counts=True)
    ref_values, ref_inverse, ref_counts = np.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), ref_values)
    np.testing.assert_array_equal(inverse.numpy(), ref_inverse)
    np.testing.assert_array_equal(counts.numpy(), ref_counts)
    assert ember.unique(ember.tensor([[2, 2], [1, 2]])).tolist() == [1, 2]
    v, c = ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 1]), return_counts=True)
    assert v.tolist() == [1, 2, 1] and c.tolist() == [2, 2, 1]
    assert ember.unique(ember.zeros(0)).shape == (0,)


def test_where_one_argument_is_nonzero_as_tuple():
    rows, cols = ember.where(ember.tensor([[0, 1], [1, 1]]) > 0)
    assert rows.tolist() == [0, 1, 1] and cols.tolist() == [1, 0, 1]
    assert ember.where(ember.tensor([True, False]), ember.tensor([1, 2]), 0).tolist() == [1, 0]


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, float("inf"), -float("inf"), 0])
def test_vector_norms(p):
    a = np.random.default_rng(4).standard_normal((3, 5))
    np.testing.assert_allclose(ember.norm(ember.tensor(a, dtype=ember.float64), p).item(),
                               np.linalg.norm(a.ravel(), p), rtol=1e-12)
    np.testing.assert_allclose(ember.tensor(a, dtype=ember.float64).norm(p, dim=1).numpy(),
                               np.linalg.norm(a, p, axis=1), rtol=1e-12)


def test_norm_errors():
    assert abs(ember.norm(ember.tensor([3.0, 4.0])).item() - 5.0) < 1e-6  # 'fro' is the 2-norm
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got int64"):
        ember.norm(ember.tensor([1, 2]), 2)
    with pytest.raises(RuntimeError, match=r"Order bad not supported"):
        ember.norm(ember.zeros(2, 2), "bad")


def test_where_with_a_zero_dim_condition():
    assert [t.tolist() for t in ember.where(ember.tensor(True))] == [[0]]
    assert [t.tolist() for t in ember.where(ember.tensor(False))] == [[]]
