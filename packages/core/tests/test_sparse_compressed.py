"""ember.sparse: the compressed layouts CSC, BSR and BSC (beside CSR) against float64 NumPy
references built with plain loops: round trips dense -> layout -> dense (contiguous, transposed
views, zero sizes, float32/float64, several block sizes), the stored parts against hand-computed
arrays, conversions between the sparse layouts, sparse @ dense, gradients through the values
(gradcheck), and the validation of every part with PyTorch's exception types and messages."""

import re

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

RNG = np.random.default_rng(18)
LAYOUTS = {"csr": ember.sparse_csr, "csc": ember.sparse_csc, "bsr": ember.sparse_bsr, "bsc": ember.sparse_bsc}
ROW_MAJOR = ("csr", "bsr")
BLOCKED = ("bsr", "bsc")

# the 4x3 matrix of the hand-computed cases below
A = np.array([[1.0, 0, 2], [0, 0, 3], [4, 5, 0], [0, 0, 0]])


def _t(a):
    return ember.tensor(np.asarray(a))


def _np(t):
    return t.detach().numpy()


def _random(shape, density=0.4, dtype=np.float64, rng=RNG):
    return (rng.normal(size=shape) * (rng.random(shape) < density)).astype(dtype)


def _reference(a, kind, blocksize=(1, 1)):
    """(compressed, plain, values) of `a` in layout `kind`, by loops: a block (a single entry for
    CSR/CSC) is stored when any of its entries is nonzero, in row-major (CSR/BSR) or column-major
    (CSC/BSC) block order."""
    br, bc = blocksize if kind in BLOCKED else (1, 1)
    nrb, ncb = a.shape[0] // br, a.shape[1] // bc
    row_major = kind in ROW_MAJOR
    compressed, plain, values = [0], [], []
    for major in range(nrb if row_major else ncb):
        for minor in range(ncb if row_major else nrb):
            r, c = (major, minor) if row_major else (minor, major)
            block = a[r * br:(r + 1) * br, c * bc:(c + 1) * bc]
            if np.any(block != 0):
                plain.append(minor)
                values.append(block.copy())
        compressed.append(len(plain))
    vals = np.array(values, dtype=a.dtype).reshape(len(values), br, bc)
    return np.array(compressed), np.array(plain, dtype=np.int64), vals if kind in BLOCKED else vals.reshape(-1)


def _convert(x, kind, blocksize=None):
    if kind == "csr":
        return x.to_sparse_csr()
    if kind == "csc":
        return x.to_sparse_csc()
    return x.to_sparse_bsr(blocksize) if kind == "bsr" else x.to_sparse_bsc(blocksize)


def _indices(s):
    if s.layout in (ember.sparse_csr, ember.sparse_bsr):
        return s.crow_indices(), s.col_indices()
    return s.ccol_indices(), s.row_indices()


def _parts(s):
    compressed, plain = _indices(s)
    return _np(compressed), _np(plain), _np(s.values())


def _assert_parts(s, a, kind, blocksize=(1, 1)):
    want_c, want_p, want_v = _reference(a, kind, blocksize)
    got_c, got_p, got_v = _parts(s)
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_array_equal(got_p, want_p)
    assert got_v.shape == want_v.shape
    np.testing.assert_array_equal(got_v, want_v)


# ---- layouts, predicates, hand-computed parts ------------------------------------------------------


def test_layout_objects_and_predicates():
    for name, lay in LAYOUTS.items():
        assert isinstance(lay, ember.layout) and repr(lay) == f"ember.sparse_{name}"
        assert getattr(ember.sparse, f"sparse_{name}") is lay
    x = _t(A)
    for kind, s in (("csc", x.to_sparse_csc()), ("bsr", x.to_sparse_bsr((2, 1))), ("bsc", x.to_sparse_bsc((2, 3)))):
        # as PyTorch: is_sparse means COO, is_sparse_csr means CSR only
        assert s.layout is LAYOUTS[kind] and not s.is_sparse and not s.is_sparse_csr
        assert s.sparse_dim() == 2 and s.dense_dim() == 0 and s.dim() == 2 and s.shape == (4, 3)
        assert s.dtype == ember.float64


def test_hand_computed_csc_bsr_bsc():
    x = _t(A)
    csc = x.to_sparse_csc()
    np.testing.assert_array_equal(_np(csc.ccol_indices()), [0, 2, 3, 5])
    np.testing.assert_array_equal(_np(csc.row_indices()), [0, 2, 2, 0, 1])
    np.testing.assert_array_equal(_np(csc.values()), [1.0, 4.0, 5.0, 2.0, 3.0])
    assert csc._nnz() == 5
    bsr = x.to_sparse_bsr((2, 1))
    np.testing.assert_array_equal(_np(bsr.crow_indices()), [0, 2, 4])
    np.testing.assert_array_equal(_np(bsr.col_indices()), [0, 2, 0, 1])
    np.testing.assert_array_equal(_np(bsr.values()), [[[1.0], [0.0]], [[2.0], [3.0]], [[4.0], [0.0]], [[5.0], [0.0]]])
    assert bsr._nnz() == 4  # blocks, as PyTorch counts them
    bsc = x.to_sparse_bsc((2, 3))
    np.testing.assert_array_equal(_np(bsc.ccol_indices()), [0, 2])
    np.testing.assert_array_equal(_np(bsc.row_indices()), [0, 1])
    np.testing.assert_array_equal(_np(bsc.values()), [A[:2], A[2:]])
    bsc21 = x.to_sparse_bsc((2, 1))
    np.testing.assert_array_equal(_np(bsc21.ccol_indices()), [0, 2, 3, 4])
    np.testing.assert_array_equal(_np(bsc21.row_indices()), [0, 1, 1, 0])
    np.testing.assert_array_equal(_np(bsc21.values()), [[[1.0], [0.0]], [[4.0], [0.0]], [[5.0], [0.0]], [[2.0], [3.0]]])
    for s in (csc, bsr, bsc, bsc21):
        np.testing.assert_array_equal(_np(s.to_dense()), A)


# ---- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind, blocksize", [("csr", None), ("csc", None), ("bsr", (1, 1)), ("bsr", (2, 3)),
                                             ("bsr", (3, 1)), ("bsr", (6, 6)), ("bsc", (1, 1)), ("bsc", (2, 3)),
                                             ("bsc", (1, 2)), ("bsc", (3, 6))])
def test_round_trip_contiguous_and_transposed(kind, blocksize, dtype):
    a = _random((6, 6), dtype=dtype)
    a[:3, :3] = 0  # an empty block for every block size here
    for x, ref in ((_t(a), a), (_t(np.ascontiguousarray(a.T)).t(), a), (_t(a).t(), a.T)):
        s = _convert(x, kind, blocksize)
        assert s.layout is LAYOUTS[kind] and s.shape == ref.shape and s.dtype == x.dtype
        _assert_parts(s, ref, kind, blocksize)
        back = s.to_dense()
        assert back.layout is ember.strided and back.dtype == x.dtype
        np.testing.assert_array_equal(_np(back), ref)


@pytest.mark.parametrize("kind, blocksize", [("csr", None), ("csc", None), ("bsr", (2, 3)), ("bsc", (2, 3))])
@pytest.mark.parametrize("shape", [(0, 6), (4, 0), (0, 0), (4, 6)])
def test_round_trip_zero_size_and_all_zero(kind, blocksize, shape):
    a = np.zeros(shape)
    s = _convert(_t(a), kind, blocksize)
    assert s.shape == shape and s._nnz() == 0
    nmajor = shape[0] // (blocksize or (1, 1))[0] if kind in ROW_MAJOR else shape[1] // (blocksize or (1, 1))[1]
    np.testing.assert_array_equal(_parts(s)[0], np.zeros(nmajor + 1))
    np.testing.assert_array_equal(_np(s.to_dense()), a)
    assert s.values().shape == ((0, *blocksize) if blocksize else (0,))


def test_round_trip_through_to_sparse_layout_argument():
    a = _random((4, 6))
    x = _t(a)
    for kind, bs in (("csr", None), ("csc", None), ("bsr", (2, 2)), ("bsc", (4, 3))):
        s = x.to_sparse(layout=LAYOUTS[kind], blocksize=bs)
        assert s.layout is LAYOUTS[kind]
        _assert_parts(s, a, kind, bs or (1, 1))
        assert s.to_sparse(layout=ember.strided).layout is ember.strided
        np.testing.assert_array_equal(_np(s.to_sparse(layout=ember.strided)), a)
    assert x.to_sparse(layout=ember.strided) is x


def test_block_keeps_nan_and_integer_dtypes():
    a = np.array([[0.0, np.nan], [0.0, 0.0]])
    s = _t(a).to_sparse_csc()
    np.testing.assert_array_equal(_np(s.ccol_indices()), [0, 0, 1])
    assert np.isnan(_np(s.values())).all()
    b = _t(np.array([[0, 1], [0, 0]])).to_sparse_bsr((1, 1))
    assert b.dtype == ember.int64
    np.testing.assert_array_equal(_np(b.values()), [[[1]]])
    np.testing.assert_array_equal(_np(b.to_dense()), [[0, 1], [0, 0]])


# ---- conversions between sparse layouts -----------------------------------------------------------


@pytest.mark.parametrize("source", ["coo", "csr", "csc", "bsr", "bsc"])
def test_conversions_between_layouts(source):
    a = _random((6, 6))
    x = _t(a)
    src = x.to_sparse() if source == "coo" else _convert(x, source, (2, 3))
    if source not in BLOCKED:  # PyTorch refuses BSR/BSC -> CSR/CSC (see the error test)
        _assert_parts(src.to_sparse_csr(), a, "csr")
        _assert_parts(src.to_sparse_csc(), a, "csc")
        _assert_parts(src.to_sparse(layout=ember.sparse_csc), a, "csc")
    for kind in BLOCKED:
        for bs in ((2, 3),) if source in BLOCKED else ((1, 1), (2, 3), (3, 2)):
            out = _convert(src, kind, bs)
            # a block is stored when any of its entries is stored: here, where any is nonzero
            _assert_parts(out, a, kind, bs)
    coo = src.to_sparse()
    assert coo.layout is ember.sparse_coo and coo.is_coalesced()
    np.testing.assert_array_equal(_np(coo.to_dense()), a)
    if source != "coo":
        assert _convert(src, source, (2, 3)) is src


def test_conversions_keep_the_stored_pattern_and_index_dtype():
    # an explicit zero stays stored, and makes its block stored
    c = ember.sparse_csr_tensor(_t([0, 2, 2]), _t([0, 1]), _t([0.0, 1.0]), (2, 4))
    csc = c.to_sparse_csc()
    np.testing.assert_array_equal(_np(csc.ccol_indices()), [0, 1, 2, 2, 2])
    np.testing.assert_array_equal(_np(csc.values()), [0.0, 1.0])
    b = c.to_sparse_bsr((1, 1))
    np.testing.assert_array_equal(_np(b.col_indices()), [0, 1])
    np.testing.assert_array_equal(_np(b.values()), [[[0.0]], [[1.0]]])
    b22 = c.to_sparse_bsr((2, 2))
    np.testing.assert_array_equal(_np(b22.crow_indices()), [0, 1])
    np.testing.assert_array_equal(_np(b22.values()), [[[0.0, 1.0], [0.0, 0.0]]])
    # a BSR's stored blocks become COO entries, explicit zeros included
    coo = _t(A).to_sparse_bsr((2, 1)).to_sparse()
    assert coo._nnz() == 8
    # duplicates of an uncoalesced COO are summed
    u = ember.sparse_coo_tensor(_t([[0, 0, 0], [3, 0, 3]]), _t([1.0, 2.0, 5.0]), (2, 4))
    np.testing.assert_array_equal(_np(u.to_sparse_csc().values()), [2.0, 6.0])
    np.testing.assert_array_equal(_np(u.to_sparse_bsr((1, 2)).values()), [[[2.0, 0.0]], [[0.0, 6.0]]])
    # int32 indices stay int32 between compressed layouts (COO is always int64)
    i32 = ember.sparse_csr_tensor(_t(np.array([0, 2, 3], np.int32)), _t(np.array([0, 1, 2], np.int32)),
                                  _t([1.0, 2.0, 3.0]))
    assert i32.to_sparse_csc().ccol_indices().dtype == ember.int32
    assert i32.to_sparse_bsr((1, 1)).col_indices().dtype == ember.int32
    assert i32.to_sparse().indices().dtype == ember.int64


def test_transpose_swaps_row_and_column_compression():
    a = _random((4, 6))
    for kind, bs, flipped in (("csr", None, "csc"), ("csc", None, "csr"), ("bsr", (2, 3), "bsc"),
                              ("bsc", (2, 3), "bsr")):
        s = _convert(_t(a), kind, bs)
        t = s.t()
        assert t.layout is LAYOUTS[flipped] and t.shape == (6, 4)
        np.testing.assert_array_equal(_np(t.to_dense()), a.T)
        _assert_parts(t, a.T, flipped, bs[::-1] if bs else (1, 1))


# ---- accessors and the *_copy functions -------------------------------------------------------------


def test_accessors_raise_on_the_wrong_layout():
    x = _t(A)
    tensors = {"SparseCsr": x.to_sparse_csr(), "SparseCsc": x.to_sparse_csc(), "SparseBsr": x.to_sparse_bsr((2, 1)),
               "SparseBsc": x.to_sparse_bsc((2, 1)), "Sparse": x.to_sparse(), "Strided": x}
    allowed = {"crow_indices": ("SparseCsr", "SparseBsr"), "col_indices": ("SparseCsr", "SparseBsr"),
               "ccol_indices": ("SparseCsc", "SparseBsc"), "row_indices": ("SparseCsc", "SparseBsc")}
    wanted = {"crow_indices": "sparse row compressed tensor", "col_indices": "sparse row compressed tensor",
              "ccol_indices": "sparse column compressed tensor", "row_indices": "sparse column compressed tensor"}
    for name, ok in allowed.items():
        for word, t in tensors.items():
            if word in ok:
                part = getattr(t, name)()
                copy = getattr(ember, name + "_copy")(t)
                np.testing.assert_array_equal(_np(copy), _np(part))
                continue
            message = f"^{name} expected {wanted[name]} layout but got {word}$"
            with pytest.raises(RuntimeError, match=message):
                getattr(t, name)()
            with pytest.raises(RuntimeError, match=message):
                getattr(ember, name + "_copy")(t)
    for word in ("SparseCsc", "SparseBsr", "SparseBsc"):
        with pytest.raises(RuntimeError, match=f"^indices expected sparse coordinate tensor layout but got {word}$"):
            tensors[word].indices()
        with pytest.raises(RuntimeError, match=f"^indices expected sparse coordinate tensor layout but got {word}$"):
            ember.indices_copy(tensors[word])
        with pytest.raises(RuntimeError, match=f"^is_coalesced expected sparse coordinate tensor layout but got "
                                               f"{word}$"):
            tensors[word].is_coalesced()
    with pytest.raises(RuntimeError, match="^values expected sparse tensor layout but got Strided$"):
        x.values()
    with pytest.raises(RuntimeError, match="^values expected sparse tensor layout but got Strided$"):
        ember.values_copy(x)


def test_copies_are_copies():
    s = _t(A).to_sparse_bsc((2, 3))
    v = ember.values_copy(s)
    v.zero_()
    np.testing.assert_array_equal(_np(s.values()), [A[:2], A[2:]])
    c = ember.ccol_indices_copy(s)
    c.zero_()
    np.testing.assert_array_equal(_np(s.ccol_indices()), [0, 2])
    coo = _t(A).to_sparse()
    np.testing.assert_array_equal(_np(ember.indices_copy(coo)), _np(coo.indices()))
    out = ember.empty(0, dtype=ember.int64)
    assert ember.row_indices_copy(s, out=out) is out
    np.testing.assert_array_equal(_np(out), [0, 1])


def test_repr():
    csc = _t(np.array([[1.0, 0.0], [0.0, 2.0]])).to_sparse_csc()
    assert repr(csc) == ("tensor(ccol_indices=tensor([0, 1, 2]),\n"
                         "       row_indices=tensor([0, 1]),\n"
                         "       values=tensor([1., 2.], dtype=ember.float64),\n"
                         "       size=(2, 2), nnz=2, layout=ember.sparse_csc)")
    bsr = ember.ones(2, 2).to_sparse_bsr((1, 2))
    assert repr(bsr) == ("tensor(crow_indices=tensor([0, 1, 2]),\n"
                         "       col_indices=tensor([0, 0]),\n"
                         "       values=tensor([[[1., 1.]],\n"
                         "\n"
                         "                      [[1., 1.]]]),\n"
                         "       size=(2, 2), nnz=2, layout=ember.sparse_bsr)")
    assert repr(bsr.requires_grad_()).endswith("layout=ember.sparse_bsr, requires_grad=True)")


# ---- factories ---------------------------------------------------------------------------------------


def test_factories_build_and_infer_sizes():
    a = _random((6, 4))
    for kind, fn, bs in (("csr", ember.sparse_csr_tensor, None), ("csc", ember.sparse_csc_tensor, None),
                         ("bsr", ember.sparse_bsr_tensor, (3, 2)), ("bsc", ember.sparse_bsc_tensor, (2, 2))):
        c, p, v = _reference(a, kind, bs or (1, 1))
        s = fn(_t(c), _t(p), _t(v), (6, 4))
        assert s.layout is LAYOUTS[kind] and s.shape == (6, 4)
        np.testing.assert_array_equal(_np(s.to_dense()), a)
        g = ember.sparse_compressed_tensor(_t(c), _t(p), _t(v), (6, 4), layout=LAYOUTS[kind])
        assert g.layout is LAYOUTS[kind]
        np.testing.assert_array_equal(_np(g.to_dense()), a)
    # size inference, as PyTorch: the compressed dimension from the indices, one past the largest
    # plain index, both times the blocksize
    assert ember.sparse_csc_tensor(_t([0, 2, 3]), _t([0, 4, 1]), _t([1.0, 2.0, 3.0])).shape == (5, 2)
    assert ember.sparse_bsr_tensor(_t([0, 1, 2]), _t([0, 2]), ember.ones(2, 2, 3)).shape == (4, 9)
    assert ember.sparse_bsc_tensor(_t([0, 1, 2]), _t([0, 2]), ember.ones(2, 2, 3)).shape == (6, 6)
    assert ember.sparse_bsr_tensor(_t([0, 0, 0]), ember.zeros(0, dtype=ember.int64), ember.ones(0, 2, 3)).shape == (4, 0)
    assert ember.sparse_csc_tensor(_t([0, 0, 0]), ember.zeros(0, dtype=ember.int64), ember.ones(0)).shape == (0, 2)
    assert ember.sparse_compressed_tensor(_t([0, 1, 2]), _t([0, 2]), ember.ones(2, 2, 3), (4, 9),
                                          layout=ember.sparse_bsr).shape == (4, 9)


def test_factory_arguments():
    s = ember.sparse_csc_tensor([0, 2, 3], [0, 4, 1], [1, 2, 3], (5, 2), dtype=ember.float64)
    assert s.dtype == ember.float64 and s.ccol_indices().dtype == ember.int64
    i32 = ember.sparse_bsc_tensor(_t(np.array([0, 1], np.int32)), _t(np.array([0], np.int32)), ember.ones(1, 2, 2))
    assert i32.ccol_indices().dtype == ember.int32 and i32.shape == (2, 2)
    leaf = ember.sparse_bsr_tensor(_t([0, 1]), _t([0]), ember.ones(1, 2, 2), requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf and leaf.grad_fn is None
    # check_invariants=False does not turn the checks off in Ember (an unchecked index reads out of bounds)
    with pytest.raises(RuntimeError, match=re.escape("`ccol_indices[..., 0] == 0` is not satisfied.")):
        ember.sparse_csc_tensor(_t([1, 2, 3]), _t([0, 4, 1]), _t([1.0, 2.0, 3.0]), (5, 2), check_invariants=False)


# ---- products and gradients ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind, blocksize", [("csr", None), ("csc", None), ("bsr", (1, 1)), ("bsr", (2, 3)),
                                             ("bsc", (2, 1)), ("bsc", (4, 6))])
def test_mm_matches_numpy(kind, blocksize, dtype):
    a = _random((4, 6), dtype=dtype)
    b = RNG.normal(size=(6, 5)).astype(dtype)
    c = RNG.normal(size=(3, 4)).astype(dtype)
    s = _convert(_t(a), kind, blocksize)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for out in (ember.sparse.mm(s, _t(b)), s @ _t(b), ember.mm(s, _t(b)), s.mm(_t(b)), ember.matmul(s, _t(b))):
        assert out.layout is ember.strided and out.dtype == s.dtype
        np.testing.assert_allclose(_np(out), a.astype(np.float64) @ b, rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(s @ _t(b[:, 0])), a.astype(np.float64) @ b[:, 0], rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(_t(c) @ s), c.astype(np.float64) @ a, rtol=tol, atol=tol)
    np.testing.assert_allclose(_np((s @ s.t()).to_dense()), a.astype(np.float64) @ a.T, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind, blocksize", [("csr", None), ("csc", None), ("bsr", (2, 3)), ("bsc", (2, 3))])
@pytest.mark.parametrize("shape", [(0, 6), (4, 0), (0, 0), (4, 6)])
def test_mm_zero_size_and_all_zero(kind, blocksize, shape):
    s = _convert(ember.zeros(*shape, dtype=ember.float64), kind, blocksize)
    b = RNG.normal(size=(shape[1], 5))
    np.testing.assert_array_equal(_np(s @ _t(b)), np.zeros((shape[0], 5)))
    np.testing.assert_array_equal(_np(_t(np.ones((2, shape[0]))) @ s), np.zeros((2, shape[1])))


@pytest.mark.parametrize("kind, blocksize", [("csr", None), ("csc", None), ("bsr", (2, 3)), ("bsr", (1, 1)),
                                             ("bsc", (2, 1)), ("bsc", (4, 3))])
def test_gradcheck_through_values(kind, blocksize):
    a = _random((4, 6), density=0.5)
    s = _convert(_t(a), kind, blocksize)
    compressed, plain = _indices(s)
    layout = LAYOUTS[kind]
    values = s.values().clone().requires_grad_(True)
    dense = _t(RNG.normal(size=(6, 3))).requires_grad_(True)

    def build(v):
        return ember.sparse_compressed_tensor(compressed, plain, v, (4, 6), layout=layout)

    assert gradcheck(lambda v: build(v).to_dense(), (values,))
    assert gradcheck(lambda v, d: ember.sparse.mm(build(v), d), (values, dense))
    assert gradcheck(lambda v, d: build(v) @ d, (values, dense))
    assert gradcheck(lambda v: (build(v) * 2.5).to_dense(), (values,))


@pytest.mark.parametrize("kind, blocksize", [("csc", None), ("bsr", (2, 3)), ("bsc", (2, 2))])
def test_gradients_reach_leaves_and_dense_inputs(kind, blocksize):
    a = _random((4, 6), density=0.5)
    b = RNG.normal(size=(6, 3))
    leaf = _convert(_t(a), kind, blocksize).detach().requires_grad_(True)
    (leaf @ _t(b)).sum().backward()
    g = leaf.grad
    assert g.layout is LAYOUTS[kind] and tuple(g.values().shape) == tuple(leaf.values().shape)
    # d/dA sum(A @ B) = ones @ B^T, at the stored positions (every entry of a stored block)
    ones = ember.sparse_compressed_tensor(*_indices(leaf), ember.ones_like(leaf.values().detach()), (4, 6),
                                          layout=LAYOUTS[kind])
    mask = _np(ones.to_dense())
    np.testing.assert_allclose(_np(g.to_dense()), mask * (np.ones((4, 3)) @ b.T), rtol=1e-12)
    # through the conversion from a dense tensor (no zeros, so the pattern cannot change under gradcheck)
    x = _t(RNG.normal(size=(4, 6))).requires_grad_(True)
    assert gradcheck(lambda x: _convert(x, kind, blocksize).values(), (x,))
    assert gradcheck(lambda x: _convert(x, kind, blocksize) @ _t(b), (x,))


def test_elementwise_and_sums_keep_the_layout():
    a = _random((4, 6))
    for kind, bs in (("csc", None), ("bsr", (2, 3)), ("bsc", (2, 2))):
        s = _convert(_t(a), kind, bs)
        for out, want in ((s + s, 2 * a), (s - s * 0.5, 0.5 * a), (-s, -a), (s * 2, 2 * a), (s / 4, a / 4)):
            assert out.layout is LAYOUTS[kind]
            np.testing.assert_allclose(_np(out.to_dense()), want, rtol=1e-12)
        np.testing.assert_allclose(_np(ember.sparse.sum(s)), a.sum(), rtol=1e-12)
        np.testing.assert_allclose(_np(_t(a) + s), 2 * a, rtol=1e-12)
        masked = _t(a * 3).sparse_mask(s)
        assert masked.layout is LAYOUTS[kind]
        np.testing.assert_allclose(_np(masked.to_dense()), 3 * a, rtol=1e-12)
        z = s.clone()
        z.zero_()
        assert z.layout is LAYOUTS[kind] and z._nnz() == 0 and not _np(z.to_dense()).any()
        assert s.float().dtype == ember.float32 and s.float().layout is LAYOUTS[kind]


# ---- validation --------------------------------------------------------------------------------------

V3 = [1.0, 2.0, 3.0]
B3 = np.ones((3, 1, 2))


def _i(a):
    return ember.tensor(np.asarray(a, dtype=np.int64))


@pytest.mark.parametrize("make, error, message", [
    (lambda: ember.sparse_csc_tensor(_i([1, 2, 3]), _i([0, 4, 1]), _t(V3), (5, 2)), RuntimeError,
     "`ccol_indices[..., 0] == 0` is not satisfied."),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 2]), _i([0, 4, 1]), _t(V3), (5, 2)), RuntimeError,
     "`ccol_indices[..., -1] == nnz` is not satisfied."),
    (lambda: ember.sparse_csc_tensor(_i([0, 3, 0, 3]), _i([0, 1, 2]), _t(V3), (3, 3)), RuntimeError,
     "`0 <= ccol_indices[..., 1:] - ccol_indices[..., :-1] <= nrows` is not satisfied."),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 5, 1]), _t(V3), (5, 2)), RuntimeError,
     "`0 <= row_indices < nrows` is not satisfied."),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, -1, 1]), _t(V3), (5, 2)), RuntimeError,
     "`0 <= row_indices < nrows` is not satisfied."),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([4, 0, 1]), _t(V3), (5, 2)), RuntimeError,
     "`row_indices[..., ccol_indices[..., i - 1]:ccol_indices[..., i]] for all i = 1, ..., ncols are sorted and "
     "distinct along the last dimension values` is not satisfied."),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 0, 1]), _t(V3), (5, 2)), RuntimeError,
     "`row_indices[..., ccol_indices[..., i - 1]:ccol_indices[..., i]] for all i = 1, ..., ncols are sorted and "
     "distinct along the last dimension values` is not satisfied."),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3), (5, 3)), RuntimeError,
     "ccol_indices.shape[-1] must be equal to the number of columns + 1 (=4), but got 3"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3[:2]), (5, 2)), RuntimeError,
     "row_indices.shape[-1] must be equal to nnz (=2) as defined by values.shape[0], but got 3"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _t(np.array([0, 4, 1], np.int32)), _t(V3), (5, 2)), RuntimeError,
     "ccol_indices and row_indices must have the same dtype, bot got Long and Int, respectively"),
    (lambda: ember.sparse_csc_tensor(_t([0.0, 2, 3]), _t([0.0, 4, 1]), _t(V3), (5, 2)), RuntimeError,
     "ccol_indices and row_indices dtype must be Int or Long, but got Double"),
    (lambda: ember.sparse_csc_tensor(_t(np.array([0, 2, 3], np.int16)), _t(np.array([0, 4, 1], np.int16)), _t(V3)),
     RuntimeError, "ccol_indices and row_indices dtype must be Int or Long, but got Short"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([[0, 4, 1]]), _t(V3), (5, 2)), RuntimeError,
     "ccol_indices and row_indices dimensionalities must be equal but got 1 and 2, respectively"),
    (lambda: ember.sparse_csc_tensor(_i(0), _i(0), _t(1.0), (1, 1)), RuntimeError,
     "ccol_indices must have dimensionality >= 1 but got 0"),
    (lambda: ember.sparse_csr_tensor(_i([0, 1]), _i([0]), _t(1.0), (1, 1)), RuntimeError,
     "values must have dimensionality > sum of batch and block dimensionalities (=0 + 0) but got 0"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3), (5,)), RuntimeError,
     "tensor dimensionality must be sum of batch, base, and dense dimensionalities (=0 + 2 + 0) but got 1"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3), (5, 2, 2)), RuntimeError,
     "tensor dimensionality must be sum of batch, base, and dense dimensionalities (=0 + 2 + 0) but got 3"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3), (-5, 2)), RuntimeError,
     "Trying to create tensor with negative dimension -5: [-5, 2]"),
    (lambda: ember.sparse_csr_tensor(ember.zeros(0, dtype=ember.int64), ember.zeros(0, dtype=ember.int64),
                                     ember.ones(0)), RuntimeError,
     "crow_indices.shape[-1] must be equal to the number of rows + 1 (=1), but got 0"),
    (lambda: ember.sparse_bsr_tensor(_i([1, 2, 3]), _i([0, 1, 2]), _t(B3), (2, 6)), RuntimeError,
     "`crow_indices[..., 0] == 0` is not satisfied."),
    (lambda: ember.sparse_bsr_tensor(_i([0, 2, 2]), _i([0, 1, 2]), _t(B3), (2, 6)), RuntimeError,
     "`crow_indices[..., -1] == nnz` is not satisfied."),
    (lambda: ember.sparse_bsr_tensor(_i([0, 3, 0, 3]), _i([0, 1, 2]), _t(B3), (3, 6)), RuntimeError,
     "`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied."),
    (lambda: ember.sparse_bsr_tensor(_i([0, 2, 3]), _i([0, 3, 2]), _t(B3), (2, 6)), RuntimeError,
     "`0 <= col_indices < ncols` is not satisfied."),
    (lambda: ember.sparse_bsr_tensor(_i([0, 2, 3]), _i([1, 0, 2]), _t(B3), (2, 6)), RuntimeError,
     "`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, ..., nrows are sorted and "
     "distinct along the last dimension values` is not satisfied."),
    (lambda: ember.sparse_bsr_tensor(_i([0, 1, 2]), _i([0, 2]), ember.ones(2, 2, 3), (6, 9)), RuntimeError,
     "crow_indices.shape[-1] must be equal to the number of row blocks + 1 (=4), but got 3"),
    (lambda: ember.sparse_bsr_tensor(_i([0, 1, 2]), _i([0, 2]), ember.ones(2, 2, 3), (4, 8)), RuntimeError,
     "tensor shape[1] (=8) must be divisible with blocksize[1] (=3) as defined by values shape"),
    (lambda: ember.sparse_bsr_tensor(_i([0, 1, 2]), _i([0, 2]), ember.ones(2, 2, 3), (5, 9)), RuntimeError,
     "tensor shape[0] (=5) must be divisible with blocksize[0] (=2) as defined by values shape"),
    (lambda: ember.sparse_bsr_tensor(_i([0, 1, 2]), _i([0, 2]), ember.ones(2, 6), (4, 9)), RuntimeError,
     "values must have dimensionality > sum of batch and block dimensionalities (=0 + 2) but got 2"),
    (lambda: ember.sparse_bsr_tensor(_i([0, 0]), ember.zeros(0, dtype=ember.int64), ember.ones(0, 0, 2), (0, 4)),
     RuntimeError, "sparse_bsr_tensor: expected a positive blocksize, but values has blocks of shape [0, 2]"),
    (lambda: ember.sparse_bsc_tensor(_i([0, 2, 3]), _i([1, 0, 2]), _t(B3), (3, 4)), RuntimeError,
     "`row_indices[..., ccol_indices[..., i - 1]:ccol_indices[..., i]] for all i = 1, ..., ncols are sorted and "
     "distinct along the last dimension values` is not satisfied."),
    (lambda: ember.sparse_bsc_tensor(_i([0, 2, 3]), _i([0, 3, 2]), _t(B3), (3, 4)), RuntimeError,
     "`0 <= row_indices < nrows` is not satisfied."),
    (lambda: ember.sparse_bsc_tensor(_i([0, 2, 3]), _i([0, 1, 2]), _t(B3), (3, 6)), RuntimeError,
     "ccol_indices.shape[-1] must be equal to the number of column blocks + 1 (=4), but got 3"),
    (lambda: ember.sparse_bsc_tensor(_i([0, 2, 3]), _i([0, 1]), _t(B3), (3, 4)), RuntimeError,
     "row_indices.shape[-1] must be equal to nnz (=3) as defined by values.shape[0], but got 2"),
    (lambda: ember.sparse_bsc_tensor(_i([0, 2, 3]), _i([0, 1, 2]), _t(B3), (3, 5)), RuntimeError,
     "tensor shape[1] (=5) must be divisible with blocksize[1] (=2) as defined by values shape"),
    (lambda: ember.sparse_compressed_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3)), RuntimeError,
     "sparse_compressed_tensor expected sparse compressed tensor layout but got none"),
    (lambda: ember.sparse_compressed_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3), layout=ember.strided), RuntimeError,
     "sparse_compressed_tensor expected sparse compressed tensor layout but got Strided"),
    (lambda: ember.sparse_compressed_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t(V3), layout=ember.sparse_coo),
     RuntimeError, "sparse_compressed_tensor expected sparse compressed tensor layout but got Sparse"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 4, 1]), _t([1, 2, 3]), (5, 2), requires_grad=True),
     RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"),
    # what Ember leaves out: batched and hybrid compressed tensors
    (lambda: ember.sparse_csc_tensor(_i([[0, 2, 3]]), _i([[0, 4, 1]]), _t([V3]), (1, 5, 2)), NotImplementedError,
     "sparse_csc_tensor: batched sparse compressed tensors are not supported in Ember; ccol_indices must be 1-D, "
     "but got 2-D"),
    (lambda: ember.sparse_csc_tensor(_i([0, 2, 3]), _i([0, 4, 1]), ember.ones(3, 2), (5, 2, 2)), NotImplementedError,
     "sparse_csc_tensor: hybrid sparse compressed tensors (with dense dimensions) are not supported in Ember; "
     "values must be 1-D, but got 2-D"),
    (lambda: ember.sparse_bsr_tensor(_i([0, 1]), _i([0]), ember.ones(1, 2, 2, 3), (2, 2, 3)), NotImplementedError,
     "sparse_bsr_tensor: hybrid sparse compressed tensors (with dense dimensions) are not supported in Ember; "
     "values must be 3-D, but got 4-D"),
    (lambda: ember.sparse_bsc_tensor(_i([0, 1]), _i([0]), ember.ones(1, 2, 2), device="cuda"), NotImplementedError,
     "sparse_bsc_tensor: not implemented for cuda"),
])
def test_bad_parts_raise_pytorch_errors(make, error, message):
    with pytest.raises(error, match="^" + re.escape(message) + "$") as info:
        make()
    assert type(info.value) is error


X = ember.tensor(A)


@pytest.mark.parametrize("make, error, message", [
    (lambda: X.to_sparse_bsr((3, 1)), RuntimeError,
     "dense_to_sparse_bsr: tensor sparse size (4,3) must be divisible by given blocksize (3,1)"),
    (lambda: X.to_sparse_bsc((2, 2)), RuntimeError,
     "dense_to_sparse_bsc: tensor sparse size (4,3) must be divisible by given blocksize (2,2)"),
    (lambda: X.to_sparse_bsr(2), RuntimeError,
     "dense_to_sparse_bsr: tensor sparse size (4,3) must be divisible by given blocksize (2,2)"),
    (lambda: X.to_sparse_bsr((2, 1, 1)), RuntimeError,
     "dense_to_sparse_bsr: blocksize needs to be a tuple of size 2, but got 3"),
    (lambda: X.to_sparse_bsr((0, 1)), RuntimeError, "dense_to_sparse_bsr: blocksize needs to be positive, but got [0, 1]"),
    (lambda: X.to_sparse(layout=ember.sparse_bsr, blocksize=(3, 1)), RuntimeError,
     "dense_to_sparse: tensor sparse size (4,3) must be divisible by given blocksize (3,1)"),
    (lambda: X.to_sparse(layout=ember.sparse_bsr), RuntimeError,
     "dense_to_sparse: conversion from Strided to SparseBsr without blocksize argument given is not supported"),
    (lambda: X.to_sparse(layout=ember.sparse_bsc), RuntimeError,
     "dense_to_sparse: conversion from Strided to SparseBsc without blocksize argument given is not supported"),
    (lambda: X.to_sparse(layout=ember.sparse_csc, blocksize=(2, 1)), RuntimeError,
     "dense_to_sparse: conversion from Strided to SparseCsc with blocksize argument given is not supported"),
    (lambda: X.to_sparse(blocksize=(2, 1)), RuntimeError,
     "dense_to_sparse: conversion from Strided to Sparse with blocksize argument given is not supported"),
    (lambda: X.to_sparse(layout=ember.strided, blocksize=(2, 1)), RuntimeError,
     "to_sparse: conversion from Strided to Strided with blocksize argument given is not supported"),
    (lambda: X.to_sparse_csc(dense_dim=1), RuntimeError,
     "dense_to_sparse_csc: dense_dim argument must be in [0,0] range, but 1 is given"),
    (lambda: ember.ones(3).to_sparse_csc(), RuntimeError,
     "dense_to_sparse_csc: expected a tensor with at least 2 dimensions, but got a 1-D tensor"),
    (lambda: ember.ones(2, 3, 4).to_sparse_bsr((1, 2)), NotImplementedError,
     "dense_to_sparse_bsr: batched sparse compressed tensors are not supported in Ember; got a 3-D tensor "
     "(1 batch dimensions), convert each 2-D matrix"),
    (lambda: ember.ones(2, 3, 4).to_sparse_csc(dense_dim=1), NotImplementedError,
     "dense_to_sparse_csc: hybrid sparse compressed tensors (with dense dimensions) are not supported in Ember; "
     "got dense_dim=1"),
    (lambda: X.to_sparse().to_sparse_bsr((3, 1)), RuntimeError,
     "coo_to_sparse_bsr: tensor sparse size (4,3) must be divisible by given blocksize (3,1)"),
    (lambda: X.to_sparse().to_sparse(layout=ember.sparse_bsr), RuntimeError,
     "sparse_coo_to_sparse: conversion from Sparse to SparseBsr without blocksize argument given is not supported"),
    (lambda: X.to_sparse_csr().to_sparse_bsc((3, 1)), RuntimeError,
     "sparse_compressed_to_sparse_bsc: tensor sparse size (4,3) must be divisible by given blocksize (3,1)"),
    (lambda: X.to_sparse_csc().to_sparse(layout=ember.sparse_csc, blocksize=(1, 1)), RuntimeError,
     "to_sparse: conversion from SparseCsc to SparseCsc with blocksize argument given is not supported"),
    (lambda: X.to_sparse_bsr((2, 1)).to_sparse_csr(), RuntimeError,
     "sparse_compressed_to_sparse_csr: expected SparseCsr or SparseCsc layout but got SparseBsr"),
    (lambda: X.to_sparse_bsc((2, 1)).to_sparse(layout=ember.sparse_csc), RuntimeError,
     "sparse_compressed_to_sparse_csc: expected SparseCsr or SparseCsc layout but got SparseBsc"),
    (lambda: X.to_sparse_bsr((2, 1)).to_sparse_bsr((1, 1)), RuntimeError,
     "to_sparse_bsr: conversion from SparseBsr to SparseBsr with blocksize changed from [2, 1] to [1, 1] is not "
     "supported"),
    (lambda: X.to_sparse_bsc((2, 1)).to_sparse_bsr((2, 3)), RuntimeError,
     "sparse_compressed_to_sparse_bsr: conversion from SparseBsc to SparseBsr with blocksize changed from [2, 1] to "
     "[2, 3] is not supported"),
    (lambda: X.to_sparse_bsr((2, 1)).to_sparse(layout=ember.sparse_bsr), RuntimeError,
     "to_sparse: conversion from SparseBsr to SparseBsr without blocksize argument given is not supported"),
    (lambda: X.to_sparse_bsr((2, 1)).to_sparse(1), RuntimeError,
     "sparse_compressed_to_sparse: conversion from SparseBsr to Sparse with sparse_dim argument !=2 is not supported"),
    (lambda: ember.sparse_coo_tensor(_i([[0, 1]]), _t([1.0, 2.0]), (3,)).to_sparse_csc(), RuntimeError,
     "coo_to_sparse_csc: conversion from Sparse to SparseCsc for input tensors with sparse_dim()!=2 is not supported"),
    (lambda: ember.sparse_coo_tensor(_i([[0, 1], [0, 1]]), ember.ones(2, 2), (3, 3, 2)).to_sparse_csc(),
     NotImplementedError, "coo_to_sparse_csc: hybrid sparse compressed tensors (with dense dimensions) are not "
                          "supported in Ember; got dense_dim=1"),
    (lambda: ember.sparse.mm(X.to_sparse_bsr((2, 1)), ember.ones(4, 2, dtype=ember.float64)), RuntimeError,
     "addmm: Argument #3 (dense): Expected dim 0 size 3, got 4"),
])
def test_bad_conversions_raise_pytorch_errors(make, error, message):
    with pytest.raises(error, match="^" + re.escape(message) + "$") as info:
        make()
    assert type(info.value) is error


def test_same_layout_conversions_return_self():
    for s, again in ((X.to_sparse_csc(), lambda s: s.to_sparse_csc()),
                     (X.to_sparse_bsr((2, 1)), lambda s: s.to_sparse_bsr((2, 1))),
                     (X.to_sparse_bsc((2, 3)), lambda s: s.to_sparse(layout=ember.sparse_bsc, blocksize=(2, 3)))):
        assert again(s) is s
