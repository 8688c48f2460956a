"""flip, rot90, tensor_split, repeat_interleave, diff, narrow_copy, logspace, tril/triu_indices,
bincount and histc against NumPy."""

import numpy as np
import pytest

import ember

A = np.arange(24).reshape(2, 3, 4)


def test_flip_family_and_rot90():
    t = ember.tensor(A)
    np.testing.assert_array_equal(ember.flip(t, [0, 2]).numpy(), np.flip(A, (0, 2)))
    np.testing.assert_array_equal(t.flip(1).numpy(), np.flip(A, 1))
    np.testing.assert_array_equal(ember.fliplr(t).numpy(), np.fliplr(A))
    np.testing.assert_array_equal(ember.flipud(t).numpy(), np.flipud(A))
    for k in (-1, 0, 1, 2, 3, 5):
        np.testing.assert_array_equal(ember.rot90(t, k, [1, 2]).numpy(), np.rot90(A, k, (1, 2)))
    with pytest.raises(RuntimeError, match=r"expected rotation dims to be different"):
        ember.rot90(t, 1, [1, 1])
    with pytest.raises(RuntimeError, match=r"dim 0 appears multiple times"):
        ember.flip(t, [0, 0])


def test_tensor_split_sections_and_indices():
    x = ember.arange(10)
    for arg in (3, [2], [2, 7], [-3, 20]):
        ours = [p.tolist() for p in ember.tensor_split(x, arg)]
        theirs = [p.tolist() for p in np.array_split(np.arange(10), arg)]
        assert ours == theirs
    assert [p.shape for p in ember.tensor(A).tensor_split(2, dim=2)] == [(2, 3, 2), (2, 3, 2)]
    with pytest.raises(RuntimeError, match=r"number of sections must be larger than 0"):
        ember.tensor_split(x, 0)


def test_repeat_interleave_and_diff():
    x = ember.tensor([[1, 2], [3, 4]])
    np.testing.assert_array_equal(ember.repeat_interleave(x, 2).numpy(), np.repeat(x.numpy(), 2))
    np.testing.assert_array_equal(x.repeat_interleave(ember.tensor([1, 3]), dim=0).numpy(),
                                  np.repeat(x.numpy(), [1, 3], axis=0))
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim"):
        ember.repeat_interleave(x, ember.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match=r"repeats can not be negative"):
        ember.repeat_interleave(x, ember.tensor([-1, 1]), dim=0)
    a = np.array([[1.0, 4.0, 9.0, 16.0], [2.0, 3.0, 5.0, 8.0]])
    np.testing.assert_array_equal(ember.diff(ember.tensor(a)).numpy(), np.diff(a))
    np.testing.assert_array_equal(ember.diff(ember.tensor(a), 2, 1).numpy(), np.diff(a, 2, 1))
    np.testing.assert_array_equal(ember.diff(ember.tensor(a), dim=0, prepend=ember.zeros(1, 4, dtype=ember.float64)).numpy(),
                                  np.diff(a, axis=0, prepend=np.zeros((1, 4))))
    assert ember.diff(ember.tensor([True, True, False])).tolist() == [False, True]


def test_narrow_copy_logspace_triangle_indices():
    t = ember.tensor(A)
    c = ember.narrow_copy(t, 2, 1, 2)
    np.testing.assert_array_equal(c.numpy(), A[:, :, 1:3])
    assert c.is_contiguous() and c.data_ptr() != t.data_ptr()
    np.testing.assert_allclose(ember.logspace(0, 3, 4).numpy(), [1, 10, 100, 1000], rtol=1e-6)
    np.testing.assert_allclose(ember.logspace(0, 2, 3, base=2.0, dtype=ember.float64).numpy(), [1, 2, 4])
    for offset in (-1, 0, 2):
        np.testing.assert_array_equal(ember.tril_indices(3, 4, offset).numpy(), np.array(np.tril_indices(3, offset, 4)))
        np.testing.assert_array_equal(ember.triu_indices(3, 4, offset).numpy(), np.array(np.triu_indices(3, offset, 4)))


def test_bincount_and_histc():
    v = np.array([0, 3, 3, 1, 7])
    np.testing.assert_array_equal(ember.bincount(ember.tensor(v)).numpy(), np.bincount(v))
    np.testing.assert_array_equal(ember.bincount(ember.tensor(v), minlength=10).numpy(), np.bincount(v, minlength=10))
    w = np.array([0.5, 1.0, 2.0, 0.25, 1.5])
    np.testing.assert_allclose(ember.bincount(ember.tensor(v), ember.tensor(w, dtype=ember.float64)).numpy(),
                               np.bincount(v, w))
    with pytest.raises(RuntimeError, match=r"non-negative integral inputs"):
        ember.bincount(ember.tensor([-1, 2]))
    x = np.random.default_rng(0).uniform(-1, 1, 1000)
    ours = ember.histc(ember.tensor(x, dtype=ember.float64), bins=8, min=-1, max=1).numpy()
    np.testing.assert_array_equal(ours, np.histogram(x, bins=8, range=(-1, 1))[0])
    assert ember.histc(ember.tensor([1.0, 2.0, 1.0]), bins=4).tolist() == [2.0, 0.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match=r"bins must be > 0"):
        ember.histc(ember.zeros(2), bins=0)


def test_tensor_list_results_are_tuples_as_pytorchs_bindings():
    # torch.split(x, 1) and x.unbind() are tuples; the boxed op (torch.ops.aten.split) returns a list
    x = ember.arange(6.0).reshape(3, 2)
    for parts in (ember.split(x, 1), x.split([1, 2]), ember.chunk(x, 3), x.chunk(2, 1), ember.unbind(x),
                  x.unbind(1), ember.tensor_split(x, 2)):
        assert type(parts) is tuple
    a, b, c = x.unbind()
    np.testing.assert_array_equal(b.numpy(), [2.0, 3.0])
    assert type(ember.ops.aten.split(x, [1], 0)) is list
