"""ember.sparse: COO and CSR tensors against float64 NumPy references (dense reconstructions with
np.add.at), coalescing, conversions, sparse @ dense, sums and softmaxes, autograd through the
values (gradcheck), embedding(sparse=True) gradients with SGD, Adagrad and SparseAdam, and the
validation of every index with PyTorch's exception types and messages."""

import re

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn, optim
from ember.autograd import gradcheck

RNG = np.random.default_rng(0)


def _t(a):
    return ember.tensor(np.asarray(a))


def _dense_ref(indices, values, size):
    """The dense tensor a COO (indices, values) describes: duplicates add up."""
    out = np.zeros(size, dtype=np.asarray(values).dtype)
    np.add.at(out, tuple(np.asarray(indices)), np.asarray(values))
    return out


def _random_coo(size, nnz, dense=(), dtype=np.float64, rng=RNG):
    sd = len(size) - len(dense)
    idx = np.stack([rng.integers(0, size[d], nnz) for d in range(sd)]) if sd else np.zeros((0, nnz), np.int64)
    vals = rng.normal(size=(nnz, *dense)).astype(dtype)
    return idx.astype(np.int64), vals


def _np(t):
    return t.detach().numpy()


# ---- layouts -------------------------------------------------------------------------------------


def test_layout_objects_and_dense_tensors():
    assert repr(ember.strided) == "ember.strided" and str(ember.sparse_coo) == "ember.sparse_coo"
    assert isinstance(ember.sparse_csr, ember.layout)
    x = ember.ones(2, 3)
    assert x.layout == ember.strided and x.layout is not ember.sparse_coo
    assert not x.is_sparse and not x.is_sparse_csr
    assert x.sparse_dim() == 0 and x.dense_dim() == 2
    assert x.to_dense() is x
    with pytest.raises(RuntimeError, match="^is_coalesced expected sparse coordinate tensor layout but got Strided$"):
        x.is_coalesced()
    import pickle
    assert pickle.loads(pickle.dumps(ember.sparse_coo)) is ember.sparse_coo


# ---- COO construction and reconstruction ------------------------------------------------------


@pytest.mark.parametrize("size, nnz, dense", [((4, 5), 12, ()), ((3,), 6, ()), ((2, 3, 4), 9, ()),
                                              ((4, 3), 7, (2,)), ((3,), 4, (2, 2)), ((0, 3), 0, ()),
                                              ((4, 5), 0, ()), ((5,), 0, (3,))])
def test_coo_to_dense_matches_numpy(size, nnz, dense):
    full = tuple(size) + tuple(dense)
    idx, vals = _random_coo(full, nnz, dense)
    s = ember.sparse_coo_tensor(_t(idx), _t(vals), full)
    assert s.layout is ember.sparse_coo and s.is_sparse and not s.is_sparse_csr
    assert s.shape == full and s.dim() == len(full) and s.dtype == ember.float64
    assert s.sparse_dim() == len(size) and s.dense_dim() == len(dense) and s._nnz() == nnz
    np.testing.assert_allclose(_np(s.to_dense()), _dense_ref(idx, vals, full), rtol=1e-12)


def test_repr_follows_pytorch():
    s = ember.sparse_coo_tensor(_t([[0, 1, 1], [2, 0, 0]]), _t([1.0, 2.0, 3.0]).float(), (2, 3))
    assert repr(s) == ("tensor(indices=tensor([[0, 1, 1],\n"
                       "                       [2, 0, 0]]),\n"
                       "       values=tensor([1., 2., 3.]),\n"
                       "       size=(2, 3), nnz=3, layout=ember.sparse_coo)")
    c = ember.ones(2, 2).to_sparse_csr()
    assert repr(c) == ("tensor(crow_indices=tensor([0, 2, 4]),\n"
                       "       col_indices=tensor([0, 1, 0, 1]),\n"
                       "       values=tensor([1., 1., 1., 1.]),\n"
                       "       size=(2, 2), nnz=4, layout=ember.sparse_csr)")
    assert repr(s.requires_grad_()).endswith("layout=ember.sparse_coo, requires_grad=True)")


def test_coo_non_contiguous_indices_and_values():
    idx, vals = _random_coo((4, 6), 10)
    idx_t = _t(np.ascontiguousarray(idx.T)).t()  # a transposed view
    vals_t = _t(np.repeat(vals, 2))[::2]  # every other element
    assert not idx_t.is_contiguous() and not vals_t.is_contiguous()
    s = ember.sparse_coo_tensor(idx_t, vals_t, (4, 6))
    np.testing.assert_allclose(_np(s.to_dense()), _dense_ref(idx, vals, (4, 6)), rtol=1e-12)
    D = RNG.normal(size=(6, 3))
    Dt = _t(np.ascontiguousarray(D.T)).t()
    np.testing.assert_allclose(_np(ember.sparse.mm(s, Dt)), _dense_ref(idx, vals, (4, 6)) @ D, rtol=1e-12)


def test_coo_size_inference_dtype_and_int32_indices():
    s = ember.sparse_coo_tensor(_t([[0, 3, 1], [2, 0, 4]]), _t([1.0, 2.0, 3.0]))
    assert s.shape == (4, 5)
    h = ember.sparse_coo_tensor(_t([[0, 2]]), _t(np.ones((2, 3))))
    assert h.shape == (3, 3) and h.sparse_dim() == 1 and h.dense_dim() == 1
    assert ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.ones(0)).shape == (0, 0)
    f = ember.sparse_coo_tensor(_t([[0, 1]]), _t([1.0, 2.0]), (3,), dtype=ember.float32)
    assert f.dtype == ember.float32
    assert ember.sparse_coo_tensor(_t([[0, 2]]), _t([1.0, 2.0]), (3,), is_coalesced=True).is_coalesced()
    assert ember.sparse_coo_tensor(_t([[2]]), _t([1.0]), (3,)).is_coalesced()  # one entry: coalesced
    assert not ember.sparse_coo_tensor(_t([[0, 2]]), _t([1.0, 2.0]), (3,)).is_coalesced()
    i32 = ember.sparse_coo_tensor(_t([[0, 1]]).int(), _t([1.0, 2.0]), (3,))
    assert i32._indices().dtype == ember.int64
    np.testing.assert_array_equal(_np(i32.to_dense()), [1.0, 2.0, 0.0])
    assert ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2,)).to_dense().tolist() == [1.0, 2.0]


def test_coalesce_sums_duplicates_and_sorts():
    idx = np.array([[2, 0, 2, 1, 0, 2], [1, 3, 1, 0, 3, 0]])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    s = ember.sparse_coo_tensor(_t(idx), _t(vals), (3, 4))
    assert not s.is_coalesced()
    with pytest.raises(RuntimeError, match=r"^Cannot get indices on an uncoalesced tensor, please call "
                                           r"\.coalesce\(\) first$"):
        s.indices()
    with pytest.raises(RuntimeError, match=r"^Cannot get values on an uncoalesced tensor"):
        s.values()
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    keys, inverse = np.unique(idx.T, axis=0, return_inverse=True)
    summed = np.zeros(len(keys))
    np.add.at(summed, inverse.reshape(-1), vals)
    np.testing.assert_array_equal(_np(c.indices()), keys.T)
    np.testing.assert_allclose(_np(c.values()), summed)
    np.testing.assert_allclose(_np(c.to_dense()), _np(s.to_dense()))
    # the raw parts stay reachable on the uncoalesced tensor
    np.testing.assert_array_equal(_np(s._indices()), idx)
    np.testing.assert_array_equal(_np(s._values()), vals)
    # hybrid and zero-nnz tensors coalesce too
    hidx = np.array([[1, 0, 1]])
    hvals = RNG.normal(size=(3, 2))
    h = ember.sparse_coo_tensor(_t(hidx), _t(hvals), (2, 2)).coalesce()
    np.testing.assert_allclose(_np(h.values()), [hvals[1], hvals[0] + hvals[2]])
    z = ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(0), (2, 2)).coalesce()
    assert z.is_coalesced() and z._nnz() == 0


def test_dense_to_sparse_and_back():
    x = RNG.normal(size=(3, 4)) * (RNG.random((3, 4)) > 0.5)
    s = _t(x).to_sparse()
    assert s.is_coalesced() and s._nnz() == np.count_nonzero(x)
    np.testing.assert_array_equal(_np(s.indices()), np.stack(np.nonzero(x)))
    np.testing.assert_array_equal(_np(s.values()), x[np.nonzero(x)])
    np.testing.assert_array_equal(_np(s.to_dense()), x)
    assert _t(x).to_sparse_coo()._nnz() == s._nnz()
    # sparse_dim=1: rows that are not all zero, with their dense rows
    x[1] = 0
    h = _t(x).to_sparse(1)
    assert h.sparse_dim() == 1 and h.dense_dim() == 1
    np.testing.assert_array_equal(_np(h.indices()), [[0, 2]])
    np.testing.assert_array_equal(_np(h.values()), x[[0, 2]])
    assert ember.zeros(2, 3).to_sparse()._nnz() == 0
    assert ember.zeros(0, 3).to_sparse().shape == (0, 3)
    assert s.to_sparse() is s and s.to_sparse_coo() is s
    with pytest.raises(RuntimeError, match=re.escape("dense_to_sparse: sparse_dim argument must be in [0,2] range, "
                                                     "but 3 is given")):
        ember.ones(2, 3).to_sparse(3)
    with pytest.raises(RuntimeError, match="^to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                                           "!=self.sparse_dim"):
        s.to_sparse(1)


# ---- CSR -----------------------------------------------------------------------------------------


def test_csr_construction_accessors_and_conversions():
    crow, col, vals = [0, 2, 2, 3], [0, 3, 1], [1.0, 2.0, 3.0]
    c = ember.sparse_csr_tensor(_t(crow), _t(col), _t(vals), (3, 4))
    assert c.layout is ember.sparse_csr and c.is_sparse_csr and not c.is_sparse
    assert c.sparse_dim() == 2 and c.dense_dim() == 0 and c._nnz() == 3
    np.testing.assert_array_equal(_np(c.crow_indices()), crow)
    np.testing.assert_array_equal(_np(c.col_indices()), col)
    np.testing.assert_array_equal(_np(c.values()), vals)
    ref = _dense_ref([[0, 0, 2], col], vals, (3, 4))
    np.testing.assert_array_equal(_np(c.to_dense()), ref)
    coo = c.to_sparse_coo()
    assert coo.is_coalesced()
    np.testing.assert_array_equal(_np(coo.indices()), [[0, 0, 2], col])
    assert c.to_sparse_csr() is c
    # COO (uncoalesced) -> CSR coalesces first; dense -> CSR
    s = ember.sparse_coo_tensor(_t([[0, 1, 1], [2, 0, 0]]), _t([1.0, 2.0, 3.0]), (2, 3))
    sc = s.to_sparse_csr()
    np.testing.assert_array_equal(_np(sc.crow_indices()), [0, 1, 2])
    np.testing.assert_array_equal(_np(sc.col_indices()), [2, 0])
    np.testing.assert_array_equal(_np(sc.values()), [1.0, 5.0])
    d = _t(ref).to_sparse_csr()
    np.testing.assert_array_equal(_np(d.crow_indices()), crow)
    assert ember.sparse_csr_tensor(_t(crow), _t(col), _t(vals)).shape == (3, 4)  # inferred
    e = ember.sparse_csr_tensor(_t([0, 0, 0]), ember.zeros(0, dtype=ember.int64), ember.zeros(0), (2, 5))
    np.testing.assert_array_equal(_np(e.to_dense()), np.zeros((2, 5)))
    with pytest.raises(RuntimeError, match="^crow_indices expected sparse row compressed tensor layout but got "
                                           "Sparse$"):
        s.crow_indices()
    with pytest.raises(RuntimeError, match="^indices expected sparse coordinate tensor layout but got SparseCsr$"):
        c.indices()


# ---- validation ----------------------------------------------------------------------------------

V3 = [1.0, 2.0, 3.0]


@pytest.mark.parametrize("make, error, message", [
    (lambda: ember.sparse_coo_tensor(_t([[0, 1, 5]]), _t(V3), (4,)), RuntimeError,
     "size is inconsistent with indices: for dim 0, size is 4 but found index 5"),
    (lambda: ember.sparse_coo_tensor(_t([[0, 1, 2], [0, 3, 0]]), _t(V3), (4, 3)), RuntimeError,
     "size is inconsistent with indices: for dim 1, size is 3 but found index 3"),
    (lambda: ember.sparse_coo_tensor(_t([[0, -1, 2]]), _t(V3), (4,)), RuntimeError,
     "found negative index -1 for dim 0"),
    (lambda: ember.sparse_coo_tensor(_t([[0, -1, 2]]), _t(V3)), RuntimeError, "found negative index -1 for dim 0"),
    (lambda: ember.sparse_coo_tensor(_t([[0.0, 1.0, 2.0]]), _t(V3), (4,)), RuntimeError,
     "indices must be an int64 tensor"),
    (lambda: ember.sparse_coo_tensor(_t([0, 1, 2]), _t(V3), (4,)), RuntimeError,
     "indices must be sparse_dim x nnz, but got: [3]"),
    (lambda: ember.sparse_coo_tensor(_t([[0, 1]]), _t(V3), (4,)), RuntimeError,
     "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 3"),
    (lambda: ember.sparse_coo_tensor(_t([[0, 1, 2]]), _t(V3), (4, 5)), RuntimeError,
     "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = 2, sparse_dim = 1, dense_dim = 0"),
    (lambda: ember.sparse_coo_tensor(_t([[0, 1, 2]]), ember.ones(3, 2), (4, 3)), RuntimeError,
     "values has incorrect size, expected [3, 3], got [3, 2]"),
    (lambda: ember.sparse_coo_tensor(_t([[0, 1]]), _t([1, 2]), (2,), requires_grad=True), RuntimeError,
     "Only Tensors of floating point and complex dtype can require gradients"),
    (lambda: ember.sparse_coo_tensor(_t([[1, 0, 2]]), _t(V3), (3,), is_coalesced=True), RuntimeError,
     "cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor"),
    (lambda: ember.sparse_coo_tensor(_t([[0, 1, 1]]), _t(V3), (3,), is_coalesced=True), RuntimeError,
     "cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor"),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 1]), _t([0, 1, 2]), _t(V3), (2, 3)), RuntimeError,
     "`crow_indices[..., -1] == nnz` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 1, 3]), _t([0, 1, 2]), _t(V3), (3, 3)), RuntimeError,
     "`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([1, 2, 3]), _t([0, 1, 2]), _t(V3), (2, 3)), RuntimeError,
     "`crow_indices[..., 0] == 0` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 4]), _t([0, 1, 2]), _t(V3), (2, 3)), RuntimeError,
     "`crow_indices[..., -1] == nnz` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 3]), _t([0, 1, 3]), _t(V3), (2, 3)), RuntimeError,
     "`0 <= col_indices < ncols` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 3]), _t([0, -1, 2]), _t(V3), (2, 3)), RuntimeError,
     "`0 <= col_indices < ncols` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 3]), _t([1, 0, 2]), _t(V3), (2, 3)), RuntimeError,
     "`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, ..., nrows are sorted and "
     "distinct along the last dimension values` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 3]), _t([1, 1, 2]), _t(V3), (2, 3)), RuntimeError,
     "`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, ..., nrows are sorted and "
     "distinct along the last dimension values` is not satisfied."),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 3]), _t([0, 1, 2]), _t(V3), (3, 3)), RuntimeError,
     "crow_indices.shape[-1] must be equal to the number of rows + 1 (=4), but got 3"),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 3]), _t([0, 1, 2]), ember.ones(2), (2, 3)), RuntimeError,
     "col_indices.shape[-1] must be equal to nnz (=2) as defined by values.shape[0], but got 3"),
    (lambda: ember.sparse_csr_tensor(_t([0, 2, 3]).float(), _t([0, 1, 2]), _t(V3), (2, 3)), RuntimeError,
     "crow_indices and col_indices must have the same dtype, bot got Float and Long, respectively"),
    (lambda: ember.sparse_csr_tensor(_t([[0, 2, 3]]), _t([0, 1, 2]), _t(V3), (2, 3)), RuntimeError,
     "crow_indices and col_indices dimensionalities must be equal but got 2 and 1, respectively"),
])
def test_bad_indices_raise_pytorch_errors(make, error, message):
    with pytest.raises(error, match="^" + re.escape(message) + "$") as info:
        make()
    assert type(info.value) is error


def test_operand_errors():
    s = ember.sparse_coo_tensor(_t([[0, 1, 1], [2, 0, 0]]), _t(V3), (2, 3))
    with pytest.raises(RuntimeError, match=re.escape("addmm: Argument #3 (dense): Expected dim 0 size 3, got 4")):
        ember.sparse.mm(s, ember.ones(4, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=re.escape("add(sparse, dense) is not supported. Use add(dense, sparse) "
                                                     "instead.")):
        s + ember.ones(2, 3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=re.escape("add: expected 'self' and 'other' to have same size, but self "
                                                     "has size [3] while other has size [2, 3] (FYI: dense-sparse "
                                                     "addition does not currently support broadcasting)")):
        ember.ones(3, dtype=ember.float64) + s
    other = ember.sparse_coo_tensor(_t([[0]]), _t([1.0]), (3,))
    with pytest.raises(RuntimeError, match=re.escape("add: expected sizes of 'self' and 'other' to match, but [2, 3] "
                                                     "!= [3]")):
        s + other
    with pytest.raises(RuntimeError, match="^expected scalar type Double but found Float$"):
        ember.sparse.mm(s, ember.ones(3, 2))
    with pytest.raises(TypeError, match="sparse.mm: expected a sparse tensor, but got Tensor"):
        ember.sparse.mm(ember.ones(2, 2), ember.ones(2, 2))
    with pytest.raises(TypeError):  # dense-only ops do not take a sparse tensor for a dense one
        ember.exp(s)


# ---- arithmetic ----------------------------------------------------------------------------------


def test_add_mul_and_dense_plus_sparse():
    i1, v1 = _random_coo((3, 4), 5)
    i2, v2 = _random_coo((3, 4), 6)
    a = ember.sparse_coo_tensor(_t(i1), _t(v1), (3, 4))
    b = ember.sparse_coo_tensor(_t(i2), _t(v2), (3, 4))
    ra, rb = _dense_ref(i1, v1, (3, 4)), _dense_ref(i2, v2, (3, 4))
    np.testing.assert_allclose(_np((a + b).to_dense()), ra + rb, rtol=1e-12)
    np.testing.assert_allclose(_np((a - b).to_dense()), ra - rb, rtol=1e-12)
    np.testing.assert_allclose(_np(a.add(b, alpha=2.5).to_dense()), ra + 2.5 * rb, rtol=1e-12)
    ca, cb = a.coalesce(), b.coalesce()
    assert (ca + cb).is_coalesced()
    np.testing.assert_allclose(_np((2 * a).to_dense()), 2 * ra)
    np.testing.assert_allclose(_np((a * ember.tensor(3.0, dtype=ember.float64)).to_dense()), 3 * ra)
    np.testing.assert_allclose(_np((a / 4).to_dense()), ra / 4)
    np.testing.assert_allclose(_np((-a).to_dense()), -ra)
    d = RNG.normal(size=(3, 4))
    prod = a.mul(_t(d))
    assert prod.is_sparse
    np.testing.assert_allclose(_np(prod.to_dense()), ra * d, rtol=1e-12)
    out = _t(d) + a
    assert out.layout is ember.strided
    np.testing.assert_allclose(_np(out), d + ra, rtol=1e-12)
    np.testing.assert_allclose(_np(_t(d) - a), d - ra, rtol=1e-12)
    mask = cb
    masked = _t(d).sparse_mask(mask)
    np.testing.assert_array_equal(_np(masked._indices()), _np(mask.indices()))
    np.testing.assert_allclose(_np(masked._values()), d[tuple(_np(mask.indices()))])
    csr = a.to_sparse_csr() + b.to_sparse_csr()
    assert csr.is_sparse_csr
    np.testing.assert_allclose(_np(csr.to_dense()), ra + rb, rtol=1e-12)


def test_hybrid_arithmetic_and_transpose():
    i, v = _random_coo((4, 2), 5, dense=(2,))
    s = ember.sparse_coo_tensor(_t(i), _t(v), (4, 2))
    ref = _dense_ref(i, v, (4, 2))
    np.testing.assert_allclose(_np((s + s).to_dense()), 2 * ref)
    np.testing.assert_allclose(_np(ember.zeros(4, 2, dtype=ember.float64) + s), ref)
    m_i, m_v = _random_coo((3, 5), 6)
    m = ember.sparse_coo_tensor(_t(m_i), _t(m_v), (3, 5))
    np.testing.assert_allclose(_np(m.t().to_dense()), _dense_ref(m_i, m_v, (3, 5)).T)


# ---- products ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("m, k, n, nnz", [(4, 5, 3, 9), (3, 3, 1, 0), (0, 3, 2, 0), (2, 4, 0, 3)])
def test_mm_matches_numpy(layout, m, k, n, nnz):
    i, v = _random_coo((m, k), nnz)
    s = ember.sparse_coo_tensor(_t(i), _t(v), (m, k))
    if layout == "csr":
        s = s.to_sparse_csr()
    d = RNG.normal(size=(k, n))
    ref = _dense_ref(i, v, (m, k)) @ d
    np.testing.assert_allclose(_np(ember.sparse.mm(s, _t(d))), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(ember.spmm(s, _t(d))), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(s @ _t(d)), ref, rtol=1e-12, atol=1e-14)
    c = RNG.normal(size=(m, n))
    np.testing.assert_allclose(_np(ember.sparse.addmm(_t(c), s, _t(d), beta=0.5, alpha=2.0)), 0.5 * c + 2 * ref,
                               rtol=1e-12, atol=1e-14)
    vec = RNG.normal(size=k)
    np.testing.assert_allclose(_np(s @ _t(vec)), _dense_ref(i, v, (m, k)) @ vec, rtol=1e-12, atol=1e-14)
    left = RNG.normal(size=(2, m))
    np.testing.assert_allclose(_np(_t(left) @ s), left @ _dense_ref(i, v, (m, k)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("nnz1, nnz2", [(9, 8), (0, 5), (4, 0), (12, 12)])
def test_sparse_times_sparse_matches_numpy(nnz1, nnz2):
    i1, v1 = _random_coo((4, 5), nnz1)
    i2, v2 = _random_coo((5, 3), nnz2)
    a = ember.sparse_coo_tensor(_t(i1), _t(v1), (4, 5))
    b = ember.sparse_coo_tensor(_t(i2), _t(v2), (5, 3))
    ref = _dense_ref(i1, v1, (4, 5)) @ _dense_ref(i2, v2, (5, 3))
    for x, y in ((a, b), (a.to_sparse_csr(), b), (a, b.to_sparse_csr())):
        out = ember.sparse.mm(x, y)
        assert out.is_sparse and out.is_coalesced() and out.shape == (4, 3)
        np.testing.assert_allclose(_np(out.to_dense()), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np((a @ b).to_dense()), ref, rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match=re.escape("mat1 and mat2 shapes cannot be multiplied (4x5 and 4x5)")):
        ember.sparse.mm(a, a)


def test_gradcheck_sparse_times_sparse_wrt_both_values():
    i1, v1 = _random_coo((3, 4), 6)
    i2, v2 = _random_coo((4, 2), 5)

    def f(x, y):
        a = ember.sparse_coo_tensor(_t(i1), x, (3, 4))
        b = ember.sparse_coo_tensor(_t(i2), y, (4, 2))
        return ember.sparse.mm(a, b).to_dense()

    assert gradcheck(f, (_t(v1).requires_grad_(), _t(v2).requires_grad_()))


@pytest.mark.parametrize("nnz", [0, 1, 7])
def test_hspmm_smm_dsmm_sspaddmm_match_numpy(nnz):
    i, v = _random_coo((5, 4), nnz)
    s = ember.sparse_coo_tensor(_t(i), _t(v), (5, 4))
    d = RNG.normal(size=(4, 3))
    product = _dense_ref(i, v, (5, 4)) @ d
    rows = np.unique(i[0])
    h = ember.hspmm(s, _t(d))
    assert h.sparse_dim() == 1 and h.dense_dim() == 1 and h.shape == (5, 3) and h.is_coalesced()
    np.testing.assert_array_equal(_np(h.indices()), [rows])
    np.testing.assert_allclose(_np(h.values()), product[rows], rtol=1e-12, atol=1e-14)
    assert ember.hsmm(s, _t(d))._nnz() == len(rows)
    m = ember.smm(s, _t(d))
    assert m.sparse_dim() == 2 and m._nnz() == 3 * len(rows)  # whole rows, zeros included
    np.testing.assert_array_equal(_np(m.indices()), [np.repeat(rows, 3), np.tile(np.arange(3), len(rows))])
    np.testing.assert_allclose(_np(m.to_dense()), product, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(ember.dsmm(s, _t(d))), product, rtol=1e-12, atol=1e-14)
    ci, cv = _random_coo((5, 3), 4)
    c = ember.sparse_coo_tensor(_t(ci), _t(cv), (5, 3))
    out = ember.sspaddmm(c, s, _t(d), beta=0.5, alpha=2.0)
    assert out.is_sparse
    np.testing.assert_allclose(_np(out.to_dense()), 0.5 * _dense_ref(ci, cv, (5, 3)) + 2 * product, rtol=1e-12,
                               atol=1e-14)
    # the method forms and torch.saddmm (sspaddmm's older name) give the same entries
    np.testing.assert_array_equal(_np(s.smm(_t(d)).indices()), _np(m.indices()))
    np.testing.assert_allclose(_np(s.smm(_t(d)).values()), _np(m.values()))
    method = c.sspaddmm(s, _t(d), beta=0.5, alpha=2.0)
    older = ember.saddmm(c, s, _t(d), beta=0.5, alpha=2.0)
    for other in (method, older):
        np.testing.assert_array_equal(_np(other._indices()), _np(out._indices()))
        np.testing.assert_allclose(_np(other._values()), _np(out._values()))
    for dense_call in (lambda: _t(d).smm(_t(d)), lambda: _t(d).sspaddmm(s, _t(d))):
        with pytest.raises(RuntimeError, match=r"tensor.sspaddmm\(...\) can only be called on sparse tensors"):
            dense_call()


def test_gradcheck_mm_wrt_dense_and_values():
    i, v = _random_coo((4, 5), 8)  # with duplicates: each stored entry gets its own gradient
    idx = _t(i)
    dense = _t(RNG.normal(size=(5, 3))).requires_grad_()
    vals = _t(v).requires_grad_()

    def f(values, d):
        return ember.sparse.mm(ember.sparse_coo_tensor(idx, values, (4, 5)), d)

    assert gradcheck(f, (vals, dense))

    def g(values, d):
        return ember.sparse.mm(ember.sparse_coo_tensor(idx, values, (4, 5)).coalesce().to_sparse_csr(), d)

    assert gradcheck(g, (vals, dense))
    assert gradcheck(lambda x, d: ember.hspmm(ember.sparse_coo_tensor(idx, x, (4, 5)), d).values(), (vals, dense))


def test_gradcheck_to_dense_coalesce_sum_and_softmax():
    i, v = _random_coo((3, 4, 2), 7, dense=(2,))
    idx = _t(i)
    vals = _t(v).requires_grad_()

    def sp(values):
        return ember.sparse_coo_tensor(idx, values, (3, 4, 2))

    assert gradcheck(lambda x: sp(x).to_dense(), (vals,))
    assert gradcheck(lambda x: sp(x).coalesce().values(), (vals,))
    assert gradcheck(lambda x: ember.sparse.sum(sp(x), 1).to_dense(), (vals,))
    assert gradcheck(lambda x: ember.sparse.sum(sp(x)), (vals,))
    assert gradcheck(lambda x: ember.sparse.softmax(sp(x), 1).to_dense(), (vals,))
    assert gradcheck(lambda x: ember.sparse.log_softmax(sp(x), 0).to_dense(), (vals,))
    assert gradcheck(lambda x: ember.sparse.softmax(sp(x), 2).to_dense(), (vals,))
    # no zeros in `dense`: a perturbed zero would change the pattern, not just the values
    dense = _t(RNG.normal(size=(3, 4))).requires_grad_()
    assert gradcheck(lambda x: x.to_sparse().values() * 2, (dense,))
    assert gradcheck(lambda x: x.to_sparse(1).to_dense(), (dense,))
    assert gradcheck(lambda x: x.to_sparse_csr().values(), (dense,))


def test_leaf_sparse_tensor_gets_a_sparse_gradient_with_its_pattern():
    idx = _t([[0, 1, 1], [2, 0, 0]])
    s = ember.sparse_coo_tensor(idx, _t([1.0, 2.0, 3.0]), (2, 3), requires_grad=True)
    assert s.is_leaf and s.requires_grad and s.grad is None
    d = RNG.normal(size=(3, 2))
    dt = _t(d).requires_grad_()
    ember.sparse.mm(s, dt).sum().backward()
    g = s.grad
    assert g.is_sparse and g.is_coalesced()
    # d(sum(S @ D))/dS[r, c] = sum_j D[c, j], at the (coalesced) stored positions
    np.testing.assert_array_equal(_np(g.indices()), [[0, 1], [2, 0]])
    np.testing.assert_allclose(_np(g.values()), [d[2].sum(), d[0].sum()])
    np.testing.assert_allclose(_np(dt.grad), _dense_ref(_np(idx), [1.0, 2.0, 3.0], (2, 3)).T @ np.ones((2, 2)))
    s.grad = None
    assert s.grad is None
    # hybrid, with duplicates: the gradient at each coalesced position is the dense gradient there
    hi = np.array([[2, 0, 2, 2]])
    h = ember.sparse_coo_tensor(_t(hi), _t(RNG.normal(size=(4, 3))), (3, 3), requires_grad=True)
    weights = RNG.normal(size=(3, 3))
    (h.to_dense() * _t(weights)).sum().backward()
    np.testing.assert_array_equal(_np(h.grad.indices()), [[0, 2]])
    np.testing.assert_allclose(_np(h.grad.values()), weights[[0, 2]], rtol=1e-12)
    # values that require grad give a non-leaf sparse tensor whose gradient reaches them
    v = _t([1.0, 2.0]).requires_grad_()
    t = ember.sparse_coo_tensor(_t([[0, 1]]), v, (2,))
    assert not t.is_leaf and t.grad_fn is not None
    (t.to_dense() * _t([3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(_np(v.grad), [3.0, 4.0])


# ---- reductions and softmax ---------------------------------------------------------------------


def test_sparse_sum_matches_numpy():
    i, v = _random_coo((3, 4, 5, 2), 10, dense=(2,))
    s = ember.sparse_coo_tensor(_t(i), _t(v), (3, 4, 5, 2))
    ref = _dense_ref(i, v, (3, 4, 5, 2))
    total = ember.sparse.sum(s)
    assert total.layout is ember.strided and total.dim() == 0
    np.testing.assert_allclose(_np(total), ref.sum(), rtol=1e-12)
    for dim in [0, 1, (0, 2), -1, (1, 3)]:
        out = ember.sparse.sum(s, dim)
        assert out.is_sparse and out.is_coalesced()
        np.testing.assert_allclose(_np(out.to_dense()), ref.sum(axis=dim), rtol=1e-12)
    dense_out = ember.sparse.sum(s, (0, 1, 2))
    assert dense_out.layout is ember.strided
    np.testing.assert_allclose(_np(dense_out), ref.sum(axis=(0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(_np(s.sum()), ref.sum(), rtol=1e-12)
    with pytest.raises(IndexError, match=re.escape("Dimension out of range (expected to be in range of [-4, 3], but "
                                                   "got 4)")):
        ember.sparse.sum(s, 4)


def _softmax_ref(i, v, size, dim, log=False):
    """Softmax over the stored entries (coalesced) along dim of a 2-D COO; unstored entries stay 0."""
    dense = _dense_ref(i, v, size)
    stored = np.zeros(size, bool)
    stored[tuple(i)] = True
    x = np.where(stored, dense, -np.inf)
    top = np.max(x, axis=dim, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(x - top)
    total = e.sum(axis=dim, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(e / total) if log else e / total
    return np.where(stored, out, 0.0)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_sparse_softmax_matches_numpy(dim, log):
    i, v = _random_coo((4, 6), 14)
    v = v * 20  # large values: the stabilizing shift matters
    s = ember.sparse_coo_tensor(_t(i), _t(v), (4, 6))
    fn = ember.sparse.log_softmax if log else ember.sparse.softmax
    out = fn(s, dim)
    assert out.is_sparse
    np.testing.assert_allclose(_np(out.to_dense()), _softmax_ref(i, v, (4, 6), dim, log), rtol=1e-10, atol=1e-12)
    empty = ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(0, dtype=ember.float64), (2, 3))
    assert fn(empty, dim)._nnz() == 0


# ---- embedding(sparse=True) gradients ---------------------------------------------------------------


def test_embedding_sparse_grad_is_uncoalesced_coo():
    w = nn.Parameter(_t(RNG.normal(size=(6, 3))))
    idx = _t([[1, 2], [1, 4]])
    F.embedding(idx, w, sparse=True, padding_idx=2).sum().backward()
    g = w.grad
    assert g.is_sparse and g.layout is ember.sparse_coo and not g.is_coalesced()
    assert g.shape == (6, 3) and g.dtype == ember.float64
    np.testing.assert_array_equal(_np(g._indices()), [[1, 1, 4]])  # the padding entry is left out
    np.testing.assert_array_equal(_np(g._values()), np.ones((3, 3)))
    # a second backward accumulates: the rows are appended
    F.embedding(_t([5]), w, sparse=True).sum().backward()
    np.testing.assert_array_equal(_np(w.grad._indices()), [[1, 1, 4, 5]])
    expected = np.zeros((6, 3))
    expected[[1, 4, 5]] = [[2, 2, 2], [1, 1, 1], [1, 1, 1]]
    np.testing.assert_array_equal(_np(w.grad.to_dense()), expected)
    # the same lookup again: as PyTorch, the same pattern adds values instead of growing
    w.grad = None
    for scale in (1.0, 2.0):
        (F.embedding(_t([0, 3, 0]), w, sparse=True) * scale).sum().backward()
    np.testing.assert_array_equal(_np(w.grad._indices()), [[0, 3, 0]])
    np.testing.assert_array_equal(_np(w.grad._values()), np.full((3, 3), 3.0))


@pytest.mark.parametrize("kind", ["embedding", "sum", "mean", "sum-weights", "2d-mean", "last-offset"])
def test_sparse_and_dense_gradients_agree(kind):
    table = RNG.normal(size=(7, 4))
    inp = _t([3, 1, 3, 6, 0, 3])
    offsets = _t([0, 2, 2])
    psw = _t(RNG.normal(size=6))
    grads = []
    for sparse in (False, True):
        w = nn.Parameter(_t(table))
        if kind == "embedding":
            out = F.embedding(inp.reshape(2, 3), w, sparse=sparse)
        elif kind == "sum":
            out = F.embedding_bag(inp, w, offsets, mode="sum", sparse=sparse)
        elif kind == "mean":
            out = F.embedding_bag(inp, w, offsets, mode="mean", sparse=sparse, padding_idx=3)
        elif kind == "sum-weights":
            out = F.embedding_bag(inp, w, offsets, mode="sum", sparse=sparse, per_sample_weights=psw)
        elif kind == "2d-mean":
            out = F.embedding_bag(inp.reshape(3, 2), w, mode="mean", sparse=sparse)
        else:
            out = F.embedding_bag(inp, w, _t([0, 2, 2, 6]), mode="sum", sparse=sparse, include_last_offset=True)
        (out * _t(np.random.default_rng(5).normal(size=tuple(out.shape)))).sum().backward()
        grads.append(w.grad)
    assert grads[0].layout is ember.strided and grads[1].is_sparse
    np.testing.assert_allclose(_np(grads[1].to_dense()), _np(grads[0]), rtol=1e-12, atol=1e-14)


def test_torch_style_embedding_op_takes_sparse():
    w = nn.Parameter(_t(RNG.normal(size=(4, 2))))
    ember.embedding(w, _t([3, 0, 3]), sparse=True).sum().backward()
    assert w.grad.is_sparse
    np.testing.assert_array_equal(_np(w.grad._indices()), [[3, 0, 3]])
    w.grad = None
    ember.embedding(w, _t([3, 0, 3]), 3, False, True).sum().backward()  # padding_idx=3 positionally
    np.testing.assert_array_equal(_np(w.grad._indices()), [[0]])
    v = nn.Parameter(_t(RNG.normal(size=(4, 2))))
    ember.embedding(v, _t([1])).sum().backward()
    assert v.grad.layout is ember.strided


def test_embedding_bag_sparse_rows_follow_the_input_order():
    w = nn.Parameter(_t(RNG.normal(size=(5, 3))))
    F.embedding_bag(_t([1, 2, 1, 4]), w, _t([0, 2]), mode="sum", sparse=True).sum().backward()
    np.testing.assert_array_equal(_np(w.grad._indices()), [[1, 2, 1, 4]])
    np.testing.assert_array_equal(_np(w.grad._values()), np.ones((4, 3)))


def test_per_sample_weights_still_get_their_gradient():
    table = RNG.normal(size=(5, 3))
    grads = []
    for sparse in (False, True):
        w = nn.Parameter(_t(table))
        psw = _t([0.5, 2.0, -1.0]).requires_grad_()
        F.embedding_bag(_t([1, 2, 4]), w, _t([0, 1]), mode="sum", sparse=sparse, per_sample_weights=psw).pow(2) \
            .sum().backward()
        grads.append(_np(psw.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_sparse_grad_with_autograd_grad_inputs_tied_weights_and_zero_grad():
    table = RNG.normal(size=(5, 3))
    w = nn.Parameter(_t(table))
    idx = _t([0, 2, 2])
    # autograd.grad leaves .grad alone and returns the gradient, dense
    (g,) = ember.autograd.grad(F.embedding(idx, w, sparse=True).sum(), w)
    assert g.layout is ember.strided and w.grad is None
    np.testing.assert_array_equal(_np(g)[:, 0], [1, 0, 2, 0, 0])
    # backward(inputs=[w]) accumulates the sparse gradient
    F.embedding(idx, w, sparse=True).sum().backward(inputs=[w])
    assert w.grad.is_sparse
    other = nn.Parameter(_t(table))
    F.embedding(idx, w, sparse=True).sum().add(other.sum()).backward(inputs=[other])
    assert w.grad._nnz() == 3  # w was not among the inputs
    # zero_grad(set_to_none=False) empties a sparse gradient; set_to_none drops it
    opt = optim.SGD([w], lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert w.grad.is_sparse and w.grad._nnz() == 0
    nn.Embedding.from_pretrained(_t(table))  # the module path builds
    opt.zero_grad()
    assert w.grad is None
    # a tied weight: a dense gradient joins the sparse one, the result is dense
    (F.embedding(idx, w, sparse=True).sum() + (w * 2).sum()).backward()
    expected = np.full((5, 3), 2.0)
    expected[[0, 2]] += [[1, 1, 1], [2, 2, 2]]
    assert w.grad.layout is ember.strided
    np.testing.assert_array_equal(_np(w.grad), expected)
    # a non-leaf weight gets a dense gradient that flows on to its leaf
    base = nn.Parameter(_t(table))
    F.embedding(idx, base * 3, sparse=True).sum().backward()
    assert base.grad.layout is ember.strided
    np.testing.assert_array_equal(_np(base.grad)[:, 0], [3, 0, 6, 0, 0])


def test_scale_grad_by_freq_with_sparse_raises_as_pytorch():
    w = nn.Parameter(ember.ones(4, 2, dtype=ember.float64))
    out = F.embedding(_t([1, 1]), w, sparse=True, scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="^embedding_backward: scale_grad_by_freq not supported with sparse "
                                           "gradients$"):
        out.sum().backward()


# ---- optimizers on sparse gradients -------------------------------------------------------------------


def _train(sparse, make_opt, steps=4, table=None):
    emb = nn.Embedding(8, 3, sparse=sparse, dtype=ember.float64)
    with ember.no_grad():
        emb.weight.copy_(_t(table))
    opt = make_opt(emb.parameters())
    rng = np.random.default_rng(1)
    target = _t(rng.normal(size=(5, 3)))
    for _ in range(steps):
        opt.zero_grad()
        idx = _t(rng.integers(0, 8, 5))
        ((emb(idx) - target) ** 2).sum().backward()
        opt.step()
    return _np(emb.weight)


@pytest.mark.parametrize("make_opt", [
    lambda p: optim.SGD(p, lr=0.1),
    lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.2, maximize=True),
    lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    lambda p: optim.Adagrad(p, lr=0.3),
    lambda p: optim.Adagrad(p, lr=0.3, lr_decay=0.1, initial_accumulator_value=0.2, maximize=True),
], ids=["sgd", "sgd-momentum", "sgd-dampening-maximize", "sgd-nesterov", "adagrad", "adagrad-decay"])
def test_sparse_gradient_training_matches_the_dense_run(make_opt):
    table = RNG.normal(size=(8, 3))
    dense = _train(False, make_opt, table=table)
    sparse = _train(True, make_opt, table=table)
    assert not np.allclose(dense, table)
    np.testing.assert_allclose(sparse, dense, rtol=1e-12, atol=1e-14)


def _ref_sparse_adam(table, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, steps=4):
    """SparseAdam from PyTorch's documentation: moments and parameter move only at the rows the
    (coalesced) gradient holds."""
    x = table.copy()
    m, v = np.zeros_like(x), np.zeros_like(x)
    rng = np.random.default_rng(1)
    target = rng.normal(size=(5, 3))
    b1, b2 = betas
    for t in range(1, steps + 1):
        idx = rng.integers(0, 8, 5)
        g = np.zeros_like(x)
        np.add.at(g, idx, 2 * (x[idx] - target))
        rows = np.unique(idx)
        m[rows] = b1 * m[rows] + (1 - b1) * g[rows]
        v[rows] = b2 * v[rows] + (1 - b2) * g[rows] ** 2
        step = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        x[rows] -= step * m[rows] / (np.sqrt(v[rows]) + eps)
    return x


@pytest.mark.parametrize("kwargs", [dict(lr=0.1), dict(lr=0.05, betas=(0.5, 0.8), eps=1e-3)])
def test_sparse_adam_matches_the_reference(kwargs):
    table = RNG.normal(size=(8, 3))
    got = _train(True, lambda p: optim.SparseAdam(p, **kwargs), table=table)
    np.testing.assert_allclose(got, _ref_sparse_adam(table, **kwargs), rtol=1e-10, atol=1e-12)


def test_optimizer_sparse_gradient_errors():
    emb = nn.Embedding(4, 2, sparse=True)
    emb(_t([1])).sum().backward()
    cases = [
        (optim.SGD(emb.parameters(), lr=0.1, weight_decay=0.1),
         "add(sparse, dense) is not supported. Use add(dense, sparse) instead."),
        (optim.Adagrad(emb.parameters(), weight_decay=0.1), "weight_decay option is not compatible with sparse gradients"),
        (optim.Adam(emb.parameters()), "Adam does not support sparse gradients, please consider SparseAdam instead"),
        (optim.RMSprop(emb.parameters()), "RMSprop does not support sparse gradients"),
    ]
    for opt, message in cases:
        with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
            opt.step()
    dense = nn.Embedding(4, 2)
    dense(_t([1])).sum().backward()
    with pytest.raises(RuntimeError, match="^SparseAdam does not support dense gradients, please consider Adam "
                                           "instead$"):
        optim.SparseAdam(dense.parameters()).step()
    with pytest.raises(RuntimeError, match="with dense gradients"):
        optim.SGD(emb.parameters(), lr=0.1, fused=True).step()


def test_sparse_adam_state_dict_resumes_exactly():
    table = RNG.normal(size=(8, 3))
    straight = _train(True, lambda p: optim.SparseAdam(p, lr=0.1), steps=4, table=table)
    emb = nn.Embedding(8, 3, sparse=True, dtype=ember.float64)
    with ember.no_grad():
        emb.weight.copy_(_t(table))
    opt = optim.SparseAdam(emb.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    target = _t(rng.normal(size=(5, 3)))
    for step in range(4):
        if step == 2:  # a fresh optimizer picks up from the saved state
            saved = opt.state_dict()
            opt = optim.SparseAdam(emb.parameters(), lr=0.1)
            opt.load_state_dict(saved)
            assert opt.state[emb.weight]["step"] == 2
        opt.zero_grad()
        ((emb(_t(rng.integers(0, 8, 5))) - target) ** 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(_np(emb.weight), straight, rtol=1e-12)


# ---- checkpoints --------------------------------------------------------------------------------


def test_save_and_load_sparse_tensors_weights_only(tmp_path):
    i, v = _random_coo((4, 3, 2), 6, dense=(2,))
    coo = ember.sparse_coo_tensor(_t(i), _t(v), (4, 3, 2))
    csr = _t(np.eye(3)).to_sparse_csr()
    leaf = ember.sparse_coo_tensor(_t([[0, 2]]), _t([1.0, 2.0]), (3,), requires_grad=True)
    emb = nn.Embedding(5, 2, sparse=True, dtype=ember.float64)
    opt = optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)
    emb(_t([1, 3, 1])).sum().backward()
    opt.step()
    path = tmp_path / "sparse.pt"
    ember.save({"coo": coo, "csr": csr, "leaf": leaf, "opt": opt.state_dict(), "layout": ember.sparse_csr}, path)
    back = ember.load(path)  # weights_only=True, as PyTorch allows: _rebuild_sparse_tensor and _get_layout
    assert back["coo"].is_sparse and not back["coo"].is_coalesced()
    np.testing.assert_array_equal(_np(back["coo"]._indices()), i)
    np.testing.assert_array_equal(_np(back["coo"].to_dense()), _dense_ref(i, v, (4, 3, 2)))
    assert back["csr"].is_sparse_csr
    np.testing.assert_array_equal(_np(back["csr"].to_dense()), np.eye(3))
    assert back["leaf"].is_leaf and back["leaf"].requires_grad
    assert back["layout"] is ember.sparse_csr
    buf = back["opt"]["state"][0]["momentum_buffer"]
    np.testing.assert_array_equal(_np(buf.to_dense()), _np(opt.state[emb.weight]["momentum_buffer"].to_dense()))


def test_loading_a_sparse_tensor_checks_its_indices(tmp_path):
    import pickle

    # a file whose indices point past the size (built around the constructors, as a corrupt file would be)
    bad = ember.sparse.SparseTensor._coo(_t([[0, 7]]), _t([1.0, 2.0]), (3,))
    path = tmp_path / "bad.pt"
    ember.save({"bad": bad}, path)
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError, match="the checkpoint holds an invalid sparse tensor: size is "
                                                         "inconsistent with indices: for dim 0, size is 3 but found "
                                                         "index 7"):
            ember.load(path, weights_only=weights_only)


def test_torch_level_products_take_a_sparse_operand():
    """ember.mm / matmul / addmm and their Tensor methods route a sparse operand to sparse.mm
    (sparse @ dense, dense @ sparse), as torch.mm does for gcn-style layers; dense calls are
    unchanged; gradients reach the dense operand."""
    idx, vals = _random_coo((4, 5), 7)
    s = ember.sparse_coo_tensor(_t(idx), _t(vals), (4, 5))
    ref = _dense_ref(idx, vals, (4, 5))
    d = ember.tensor(RNG.normal(size=(6, 5)))  # used transposed: a non-contiguous (5, 6) operand
    want = ref @ _np(d).T
    np.testing.assert_allclose(_np(ember.mm(s, d.t())), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(s.mm(d.t())), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(ember.matmul(s, d.t())), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(ember.matmul(s, d[0])), ref @ _np(d)[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(ember.mm(d.t()[:4].t()[:0], s)), np.zeros((0, 5)))  # zero rows
    left = ember.tensor(RNG.normal(size=(3, 4)))
    np.testing.assert_allclose(_np(ember.mm(left, s)), _np(left) @ ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(left.mm(s)), _np(left) @ ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(left.matmul(s)), _np(left) @ ref, rtol=1e-12, atol=1e-12)
    base = ember.tensor(RNG.normal(size=(4, 6)))
    np.testing.assert_allclose(_np(ember.addmm(base, s, d.t(), beta=0.5, alpha=2.0)),
                               0.5 * _np(base) + 2.0 * want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(base.addmm(s, d.t(), beta=0)), want, rtol=1e-12, atol=1e-12)
    assert isinstance(ember.mm(left, ember.ones(4, 2, dtype=ember.float64)), ember.Tensor)  # dense path untouched
    with pytest.raises(RuntimeError, match="out= is not supported when an operand is sparse"):
        ember.mm(s, d.t(), out=ember.empty(4, 6))
    dense = ember.tensor(RNG.normal(size=(5, 3)), requires_grad=True)
    assert gradcheck(lambda m: ember.mm(s, m), (dense,))
    assert gradcheck(lambda m: ember.mm(m.t(), s.t()), (dense,))


def test_sparse_resize_in_place():
    s = ember.sparse_coo_tensor(ember.tensor([[0, 1], [1, 0]]), ember.tensor([[1.0, 2.0], [3.0, 4.0]]), (2, 3, 2))
    assert s.sparse_resize_((4, 5, 2), 2, 1) is s and s.shape == (4, 5, 2) and s._nnz() == 2
    assert _np(s.to_dense())[0, 1].tolist() == [1.0, 2.0] and _np(s.to_dense())[3:].sum() == 0
    s.sparse_resize_((4, 5, 3), 2, 1)  # a dense dimension grows: the new column is zero (PyTorch leaves it unset)
    assert _np(s._values()).tolist() == [[1.0, 2.0, 0.0], [3.0, 4.0, 0.0]]
    for args, message in ((((1, 5, 3), 2, 1), r"shrinking the size of sparse dimensions \(from \[4, 5\] to \[1, 5\]\)"),
                          (((4, 5, 2), 2, 1), r"shrinking the size of dense dimensions \(from \[3\] to \[2\]\)"),
                          (((4, 5, 3, 1), 3, 1), r"changing the number of sparse dimensions \(from 2 to 3\)"),
                          (((4, 5), 2, 0), r"changing the number of dense dimensions \(from 1 to 0\)"),
                          (((4, 5, 3), 2, 2), r"'len\(size\) == sparse_dim \+ dense_dim' is not satisfied")):
        with pytest.raises(RuntimeError, match=message):
            s.sparse_resize_(*args)
    assert s.shape == (4, 5, 3) and s._nnz() == 2  # untouched by the refused calls
    # with no stored elements any consistent size goes
    empty = ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(0), (3, 3))
    empty.sparse_resize_((2, 2, 4), 1, 2)
    assert empty.shape == (2, 2, 4) and empty.sparse_dim() == 1 and tuple(empty._values().shape) == (0, 2, 4)
    s.sparse_resize_and_clear_((7, 7, 3), 1, 2)
    assert s.shape == (7, 7, 3) and s._nnz() == 0 and s.sparse_dim() == 1 and s.is_coalesced()
    # resize_as_sparse_: to another tensor's size and dimensions
    a = ember.sparse_coo_tensor(ember.tensor([[0, 1], [1, 0]]), ember.tensor([[1.0, 2.0], [3.0, 4.0]]), (2, 3, 2))
    template = ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(0, 2), (9, 5, 2))
    assert ember.resize_as_sparse_(a, template) is a and a.shape == (9, 5, 2) and float(a.to_dense().sum()) == 10.0
    with pytest.raises(RuntimeError, match=r"changing the number of sparse dimensions \(from 2 to 0\)"):
        a.resize_as_sparse_(ember.ones(2))
    with pytest.raises(NotImplementedError, match="Could not run 'aten::sparse_resize_' with arguments from the 'CPU'"):
        ember.ones(2).sparse_resize_((2,), 1, 0)
    with pytest.raises(NotImplementedError, match="it resizes a sparse COO tensor"):
        ember.sparse_csr_tensor(ember.tensor([0, 1]), ember.tensor([0]), ember.tensor([1.0]), (1, 1)).sparse_resize_(
            (2, 2), 2, 0)
