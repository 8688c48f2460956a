"""Indexing ops against NumPy; out-of-range indices raise PyTorch's errors (Note [negative indices])."""

import numpy as np
import pytest

import ember

A = np.arange(24.0).reshape(4, 6)
RNG = np.random.default_rng(3)


def t(a):
    return ember.tensor(a)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_and_index_select_match_numpy(dim):
    idx = RNG.integers(0, A.shape[dim], (4, 6))
    np.testing.assert_array_equal(ember.gather(t(A), dim, t(idx)).numpy(), np.take_along_axis(A, idx, dim))
    sel = np.array([3, 0, 0, 2])
    np.testing.assert_array_equal(ember.index_select(t(A), dim, t(sel)).numpy(), np.take(A, sel, axis=dim))
    np.testing.assert_array_equal(t(A).t().index_select(dim, t(sel[:2])).numpy(), np.take(A.T, sel[:2], axis=dim))
    # as PyTorch, index_select takes [0, size) only: -1 is an error, not the last row
    with pytest.raises(IndexError, match=r"index out of range in self"):
        ember.index_select(t(A), dim, t(np.array([-1])))


def test_scatter_family_matches_numpy():
    idx = np.array([[0, 1, 2, 0], [3, 3, 1, 0]])
    src = RNG.standard_normal((2, 4))
    ref = A.copy()
    for i in range(2):
        for j in range(4):
            ref[idx[i, j], j] = src[i, j]
    np.testing.assert_array_equal(ember.scatter(t(A), 0, t(idx), t(src)).numpy(), ref)
    ref_add = A.copy()
    np.add.at(ref_add, (idx, np.arange(4)[None, :].repeat(2, 0)), src)
    np.testing.assert_allclose(ember.scatter_add(t(A), 0, t(idx), t(src)).numpy(), ref_add)
    x = t(A)
    x.scatter_add_(0, t(idx), t(src))
    np.testing.assert_allclose(x.numpy(), ref_add)


def test_in_place_forms_follow_pytorchs_in_place_rules():
    # scatter_ ... masked_scatter_ are written through ember/_inplace.py, as every Python in-place form
    x = ember.zeros(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.masked_fill_(ember.ones(2, 3, dtype=ember.bool), 1.0)
    idx = np.array([3, 0, 3])
    w, src = RNG.standard_normal((4, 6)), RNG.standard_normal((3, 6))
    a = ember.tensor(A, requires_grad=True)
    s = ember.tensor(src, requires_grad=True)
    y = a * 1.0
    assert y.index_add_(0, t(idx), s) is y
    ref = A.copy()
    np.add.at(ref, idx, src)
    np.testing.assert_allclose(y.detach().numpy(), ref)
    (y * t(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), w)
    np.testing.assert_allclose(s.grad.numpy(), w[idx])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    base = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([0, 0, 2, 2, 2])
    src = np.array([5.0, -1.0, 2.0, 7.0, 0.5])
    expected = base.copy()
    for target in range(4):
        vals = list(src[idx == target])
        if not vals:
            continue
        if include_self:
            vals.append(base[target])
        expected[target] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](vals)
    out = ember.scatter_reduce(t(base), 0, t(idx), t(src), reduce, include_self=include_self)
    np.testing.assert_allclose(out.numpy(), expected)


def test_index_add_copy_fill():
    idx = np.array([0, 2])
    src = np.ones((2, 6))
    ref = A.copy()
    ref[idx] += 2 * src
    np.testing.assert_array_equal(ember.index_add(t(A), 0, t(idx), t(src), alpha=2).numpy(), ref)
    ref = A.copy()
    ref[:, [1, 4]] = -1
    np.testing.assert_array_equal(ember.index_fill(t(A), 1, t([1, 4]), -1).numpy(), ref)
    ref = A.copy()
    ref[[3, 1]] = src
    np.testing.assert_array_equal(ember.index_copy(t(A), 0, t([3, 1]), t(src)).numpy(), ref)


def test_masked_ops_nonzero_take():
    mask = A % 3 == 0
    np.testing.assert_array_equal(ember.masked_fill(t(A), t(mask), 0.5).numpy(), np.where(mask, 0.5, A))
    np.testing.assert_array_equal(ember.masked_select(t(A), t(mask)).numpy(), A[mask])
    np.testing.assert_array_equal(ember.masked_select(t(A), t(mask[0])).numpy(), A[np.broadcast_to(mask[0], A.shape)])
    np.testing.assert_array_equal(ember.nonzero(t(mask)).numpy(), np.argwhere(mask))
    assert ember.nonzero(ember.tensor(0.0)).shape == (0, 0) and ember.nonzero(ember.zeros(0, 3)).shape == (0, 2)
    np.testing.assert_array_equal(ember.take(t(A), t([[0, 23], [-1, 5]])).numpy(), np.take(A, [[0, 23], [-1, 5]]))
    np.testing.assert_array_equal(ember.take_along_dim(t(A), t([[1], [0], [5], [2]]), 1).numpy(),
                                  np.take_along_axis(A, np.array([[1], [0], [5], [2]]), 1))
    # broadcast in the other dims, as numpy.take_along_axis; no dim: both flattened
    np.testing.assert_array_equal(ember.take_along_dim(t(A), t([[1, 5, 0]]), 1).numpy(),
                                  np.take_along_axis(A, np.array([[1, 5, 0]] * 4), 1))
    np.testing.assert_array_equal(ember.take_along_dim(t(A[:1]), t([[1], [2]]), 1).numpy(), A[0, [[1], [2]]])
    np.testing.assert_array_equal(ember.take_along_dim(t(A), t([[7, 0]])).numpy(), A.reshape(-1)[[7, 0]])
    with pytest.raises(ValueError, match=r"same number of dimensions"):
        ember.take_along_dim(t(A), t([1, 2]), 1)


def test_advanced_getitem_and_setitem():
    x = t(A)
    np.testing.assert_array_equal(x[ember.tensor([3, 0, 3])].numpy(), A[[3, 0, 3]])
    np.testing.assert_array_equal(x[[1, 2]].numpy(), A[[1, 2]])
    np.testing.assert_array_equal(x[ember.tensor([[0, 1], [2, 3]])].numpy(), A[np.array([[0, 1], [2, 3]])])
    np.testing.assert_array_equal(x[x > 10].numpy(), A[A > 10])
    np.testing.assert_array_equal(x[ember.tensor([True, False, True, False])].numpy(), A[[True, False, True, False]])
    y = t(A)
    y[y > 10] = -1.0
    y[ember.tensor([0])] = ember.tensor([7.0])
    ref = A.copy()
    ref[ref > 10] = -1
    ref[[0]] = 7
    np.testing.assert_array_equal(y.numpy(), ref)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: ember.index_select(t(A), 0, t([4])), IndexError, r"index out of range in self"),
        (lambda: ember.index_select(t(A), 1, t([-7])), IndexError, r"index out of range in self"),
        (lambda: ember.gather(t(A), 1, t([[9]])), RuntimeError, r"index 9 is out of bounds for dimension 1 with size 6"),
        (lambda: ember.scatter(t(A), 0, t([[4]]), t([[1.0]])), RuntimeError, r"index 4 is out of bounds"),
        (lambda: ember.gather(t(A), 0, t([0])), RuntimeError, r"Index tensor must have the same number of dimensions"),
        (lambda: ember.gather(t(A), 0, t([[0.0]])), RuntimeError, r"Expected dtype int64 for index, but got float32"),
        (lambda: ember.gather(t(A), 2, t([[0]])), IndexError, r"Dimension out of range"),
        (lambda: ember.take(t(A), t([24])), IndexError, r"out of range: tried to access index 24 on a tensor of 24 elements"),
        (lambda: ember.masked_fill(t(A), t(A), 0.0), RuntimeError, r"masked_fill_ only supports boolean masks"),
        (lambda: ember.masked_fill(t(A), ember.tensor([True, False]), 0.0), RuntimeError, r"must match the size"),
        (lambda: ember.index_select(t(A), 0, t([[0]])), IndexError, r"Index is supposed to be a vector"),
        (lambda: ember.scatter_reduce(t(A), 0, t([[0]]), t([[1.0]]), "median"), ValueError,
         r"reduce argument must be either sum, prod, mean, amax or amin"),
        (lambda: t(A)[ember.tensor([9])], IndexError, r"index 9 is out of bounds for dimension 0 with size 4"),
        (lambda: t(A)[ember.tensor([True, False])], IndexError, r"The shape of the mask \[2\] at index 0 does not match"),
        (lambda: t(A)[ember.tensor([0.5])], IndexError, r"tensors used as indices must be long, int, byte or bool"),
    ],
)
def test_bad_indices(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_backward_adds_grad_at_the_indices(dim):
    # The plain backward (no create_graph) adds grad straight into zeros; the recorded one is
    # scatter_add. Both must equal a float64 np.add.at reference, with repeated indices, a
    # transposed index and grad, and a 0-dim input.
    idx = RNG.integers(0, A.shape[dim], (6, 4)).T.copy()  # (4, 6) with repeats
    grad = RNG.standard_normal((6, 4)).T  # non-contiguous view
    ref = np.zeros_like(A)
    rows, cols = np.indices(idx.shape)
    np.add.at(ref, (idx, cols) if dim == 0 else (rows, idx), grad)
    x = t(A).requires_grad_()
    index = ember.from_numpy(idx.T.copy()).t()
    (plain,) = ember.autograd.grad(ember.gather(x, dim, index), x, ember.from_numpy(grad.T.copy()).t())
    np.testing.assert_allclose(plain.numpy(), ref, rtol=1e-12, atol=1e-12)
    (recorded,) = ember.autograd.grad(ember.gather(x, dim, index), x, ember.from_numpy(grad), create_graph=True)
    np.testing.assert_allclose(recorded.numpy(), ref, rtol=1e-12, atol=1e-12)
    assert ember.autograd.gradcheck(lambda v: ember.gather(v, dim, index), (x,))
    s = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    (g0,) = ember.autograd.grad(ember.gather(s, 0, ember.tensor(0)), s, ember.tensor(3.0, dtype=ember.float64))
    assert g0.shape == () and g0.item() == 3.0
    e = t(A).requires_grad_()
    (ge,) = ember.autograd.grad(ember.gather(e, dim, ember.zeros(0, 6, dtype=ember.int64)).sum(), e)
    np.testing.assert_array_equal(ge.numpy(), np.zeros_like(A))


# ---- scatter's src as a Python number or a 0-d tensor (a 0-d src once read past its strides) ----


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_scatter_takes_a_python_number_as_one_value_for_every_index(op):
    idx = np.array([[0, 2, 1, 0], [3, 3, 0, 1]])
    ref = A.copy()
    for (_, c), k in np.ndenumerate(idx):
        ref[k, c] = 2.5 if op == "scatter" else ref[k, c] + 2.5
    np.testing.assert_array_equal(getattr(ember, op)(t(A), 0, t(idx), 2.5).numpy(), ref)
    # a non-contiguous self and index, and the in-place form
    x = t(A.T.copy()).t()
    getattr(x, op + "_")(0, t(idx.T.copy()).t(), 2.5)
    np.testing.assert_array_equal(x.numpy(), ref)


def test_scatter_reduce_takes_a_python_number_too():
    idx = np.array([[0, 2, 1, 0], [0, 3, 0, 1]])
    hit = np.zeros_like(A, dtype=bool)
    counts = np.zeros_like(A)
    for (_, c), k in np.ndenumerate(idx):
        hit[k, c] = True
        counts[k, c] += 1
    np.testing.assert_array_equal(ember.scatter_reduce(t(A), 0, t(idx), 9.5, "amax").numpy(),
                                  np.where(hit, np.maximum(A, 9.5), A))
    np.testing.assert_allclose(ember.scatter_reduce(t(A), 0, t(idx), 9.5, "mean").numpy(),
                               (A + 9.5 * counts) / (counts + 1))


def test_scatter_and_gather_treat_a_0d_tensor_as_1d_of_one_element():
    # PyTorch's ensure_nonempty_dim: 0-d self or src meets a 1-d index of at most one element
    np.testing.assert_array_equal(ember.gather(t(2.0), 0, t([0, 0])).numpy(), [2.0, 2.0])
    assert ember.scatter(t(2.0), 0, t([0]), t(3.0)).item() == 3.0
    np.testing.assert_array_equal(ember.scatter(t([0.0, 0.0, 0.0]), 0, t([2]), t(3.0)).numpy(), [0, 0, 3])
    np.testing.assert_array_equal(ember.scatter_add(t([1.0, 1.0]), 0, t([1]), t(3.0)).numpy(), [1, 4])
    # an empty index is not checked, and changes nothing
    np.testing.assert_array_equal(ember.scatter(t(A), 0, t(np.zeros(0, np.int64)), t(3.0)).numpy(), A)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ember.scatter(t(A), 0, t([[0, 1]]), t(1.0)), r"same number of dimensions as src tensor"),
        (lambda: ember.scatter_add(t(A), 0, t([[0, 1]]), t(1.0)), r"same number of dimensions as src tensor"),
        (lambda: ember.scatter_reduce(t(A), 0, t([[0, 1]]), t(1.0), "sum"), r"same number of dimensions as src"),
        (lambda: ember.scatter(t(2.0), 0, t([0, 0]), t(3.0)), r"expected index 2 to be smaller than src 1"),
        (lambda: ember.gather(t(2.0), 0, t([1])), r"index 1 is out of bounds for dimension 0 with size 1"),
        (lambda: ember.scatter(t(A), 0, t([0, 1]), t([1.0, 2.0])), r"same number of dimensions as input tensor"),
    ],
)
def test_scatter_src_of_other_rank_is_a_clear_error(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_with_a_number_differentiates_as_with_a_full_src(reduce, include_self):
    idx = t([[0, 2, 1, 0], [0, 1, 0, 1]])
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    full = ember.full((2, 4), 0.5, dtype=ember.float64)
    ember.scatter_reduce(x, 0, idx, 0.5, reduce, include_self=include_self).pow(2).sum().backward()
    by_number, x.grad = x.grad, None
    ember.scatter_reduce(x, 0, idx, full, reduce, include_self=include_self).pow(2).sum().backward()
    np.testing.assert_allclose(by_number.numpy(), x.grad.numpy(), rtol=1e-12)
    assert ember.autograd.gradcheck(lambda a: ember.scatter_reduce(a, 0, idx, 0.5, reduce, include_self=include_self),
                                    (x.detach().requires_grad_(),))


def test_scatter_with_a_number_or_a_0d_src_under_both_autograd_modes():
    import ember.autograd.forward_ad as fwAD

    idx = t([[0, 2, 1, 0], [0, 1, 0, 1]])
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    for op in (ember.scatter, ember.scatter_add):
        assert ember.autograd.gradcheck(lambda a, op=op: op(a, 0, idx, 0.5), (x,))
        with fwAD.dual_level():
            out = op(fwAD.make_dual(x.detach(), ember.ones(3, 4, dtype=ember.float64)), 0, idx, 0.5)
            tangent = fwAD.unpack_dual(out).tangent.numpy()
        # the number has no tangent: scatter zeroes the written places, scatter_add leaves all
        expected = op(ember.ones(3, 4, dtype=ember.float64), 0, idx, 0.0).numpy()
        np.testing.assert_array_equal(tangent, expected)
    # a 0-d src that requires grad, met by a one-element index
    s = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    y = ember.zeros(3, dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda a: ember.scatter(y, 0, t([1]), a), (s,))
    assert ember.autograd.gradcheck(lambda a: ember.scatter_reduce(y, 0, t([1]), a, "prod"), (s,))
