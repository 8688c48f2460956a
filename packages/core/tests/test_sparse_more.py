"""ember.sparse: the rest of torch.sparse's CPU surface: sampled_addmm, spdiags,
as_sparse_gradcheck, check_sparse_tensor_invariants and the legacy typed constructors
(ember.sparse.FloatTensor & co.), against float64 NumPy references built with plain loops, with
zero sizes, gradients (gradcheck) and bad input (PyTorch's exception types and messages)."""

import functools
import re
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import GradcheckError, gradcheck

S = ember.sparse
RNG = np.random.default_rng(2013)


def _t(a, dtype=None):
    return ember.tensor(np.asarray(a), dtype=dtype)


def _np(t):
    return t.detach().numpy()


def _random(shape, density=0.5, rng=RNG):
    return rng.normal(size=shape) * (rng.random(shape) < density)


def _csr(a):
    """The CSR matrix whose pattern is the nonzeros of `a` (float64)."""
    return _t(a).to_sparse_csr()


def _pattern(a):
    return [(i, j) for i in range(a.shape[0]) for j in range(a.shape[1]) if a[i, j] != 0]


def _sampled_reference(a, m1, m2, beta, alpha):
    """beta * a + alpha * (m1 @ m2) at a's nonzeros, zero elsewhere, by loops."""
    out = np.zeros(a.shape, dtype=np.result_type(a, m1, m2))
    for i, j in _pattern(a):
        dot = sum(m1[i, p] * m2[p, j] for p in range(m1.shape[1]))
        out[i, j] = alpha * dot + (beta * a[i, j] if beta != 0 else 0)
    return out


# ---- sampled_addmm -------------------------------------------------------------------------------


@pytest.mark.parametrize("m,k,n", [(4, 3, 5), (1, 1, 1), (3, 6, 2), (5, 1, 4)])
@pytest.mark.parametrize("beta,alpha", [(1.0, 1.0), (0.5, -2.0), (0.0, 3.0), (2.0, 0.0)])
def test_sampled_addmm_matches_loops(m, k, n, beta, alpha):
    a = _random((m, n))
    m1, m2 = RNG.normal(size=(m, k)), RNG.normal(size=(k, n))
    out = S.sampled_addmm(_csr(a), _t(m1), _t(m2), beta=beta, alpha=alpha)
    assert out.layout is ember.sparse_csr and out.dtype == ember.float64 and out.shape == (m, n)
    np.testing.assert_allclose(_np(out.to_dense()), _sampled_reference(a, m1, m2, beta, alpha), rtol=1e-12,
                               atol=1e-12)
    # the result keeps input's pattern, int64-indexed (as PyTorch makes it)
    crow, col = _csr(a).crow_indices(), _csr(a).col_indices()
    assert out.crow_indices().tolist() == crow.tolist() and out.col_indices().tolist() == col.tolist()
    assert out.crow_indices().dtype == ember.int64


def test_sampled_addmm_keeps_stored_zeros_and_int32_input():
    # an explicitly stored zero of input is still a sampled position
    crow, col = _t([0, 2, 3], ember.int32), _t([0, 2, 1], ember.int32)
    vals = _t([0.0, 1.5, -2.0])
    a = ember.sparse_csr_tensor(crow, col, vals, (2, 3))
    m1, m2 = RNG.normal(size=(2, 4)), RNG.normal(size=(4, 3))
    out = S.sampled_addmm(a, _t(m1), _t(m2))
    want = [m1[0] @ m2[:, 0], 1.5 + m1[0] @ m2[:, 2], -2.0 + m1[1] @ m2[:, 1]]
    np.testing.assert_allclose(_np(out.values()), want, rtol=1e-12)
    assert out.crow_indices().dtype == ember.int64 and out.col_indices().tolist() == [0, 2, 1]


def test_sampled_addmm_float32_and_complex():
    a = _random((3, 4))
    m1, m2 = RNG.normal(size=(3, 2)), RNG.normal(size=(2, 4))
    out = S.sampled_addmm(_csr(a).to(ember.float32), _t(m1, ember.float32), _t(m2, ember.float32), alpha=2.0)
    assert out.dtype == ember.float32
    np.testing.assert_allclose(_np(out.to_dense()), _sampled_reference(a, m1, m2, 1.0, 2.0), rtol=1e-5, atol=1e-5)
    ac = a * (1 + 1j)
    m1c, m2c = m1 + 1j * RNG.normal(size=m1.shape), m2 - 0.5j
    out = S.sampled_addmm(_t(ac).to_sparse_csr(), _t(m1c), _t(m2c), beta=2j, alpha=1j)
    np.testing.assert_allclose(_np(out.to_dense()), _sampled_reference(ac, m1c, m2c, 2j, 1j), rtol=1e-12,
                               atol=1e-12)


def test_sampled_addmm_beta_zero_ignores_input_nan():
    a = ember.sparse_csr_tensor(_t([0, 1, 2]), _t([1, 0]), _t([float("nan"), float("inf")]), (2, 2))
    m1, m2 = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2))
    out = S.sampled_addmm(a, _t(m1), _t(m2), beta=0)
    np.testing.assert_allclose(_np(out.values()), [m1[0] @ m2[:, 1], m1[1] @ m2[:, 0]], rtol=1e-12)


@pytest.mark.parametrize("m,k,n,nnz", [(0, 3, 4, 0), (3, 0, 4, None), (3, 4, 0, 0), (2, 3, 4, 0)])
def test_sampled_addmm_zero_sizes(m, k, n, nnz):
    a = _random((m, n)) if nnz is None else np.zeros((m, n))
    out = S.sampled_addmm(_csr(a), _t(np.ones((m, k))), _t(np.ones((k, n))), beta=2.0)
    assert out.shape == (m, n) and out.layout is ember.sparse_csr
    np.testing.assert_allclose(_np(out.to_dense()), 2.0 * a)  # k == 0: the product is zero


def test_sampled_addmm_out():
    a = _random((3, 4))
    m1, m2 = RNG.normal(size=(3, 2)), RNG.normal(size=(2, 4))
    out = ember.zeros(5, 5, dtype=ember.float64).to_sparse_csr()
    got = S.sampled_addmm(_csr(a), _t(m1), _t(m2), out=out)
    assert got is out and out.shape == (3, 4) and out._nnz() == len(_pattern(a))
    np.testing.assert_allclose(_np(out.to_dense()), _sampled_reference(a, m1, m2, 1.0, 1.0), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected result to have sparse csr layout, but got Strided"):
        S.sampled_addmm(_csr(a), _t(m1), _t(m2), out=ember.zeros(3, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="Expected result and self to have the same dtype, but got Float and Double"):
        S.sampled_addmm(_csr(a), _t(m1), _t(m2), out=ember.zeros(3, 4).to_sparse_csr())


def test_sampled_addmm_gradients():
    a = _random((3, 4), density=0.6)
    m1, m2 = RNG.normal(size=(3, 2)), RNG.normal(size=(2, 4))
    base = _csr(a)

    def fn(v, x, y):
        inp = ember.sparse_csr_tensor(base.crow_indices(), base.col_indices(), v, (3, 4))
        return S.sampled_addmm(inp, x, y, beta=0.5, alpha=-1.5).values()

    args = (base.values().clone().requires_grad_(), _t(m1).requires_grad_(), _t(m2).requires_grad_())
    assert gradcheck(fn, args)
    # and the gradients themselves: beta at input's entries, alpha * G @ m2^T and alpha * m1^T @ G
    v, x, y = (t.detach().clone().requires_grad_() for t in args)
    fn(v, x, y).sum().backward()
    g = (a != 0).astype(float)
    np.testing.assert_allclose(_np(v.grad), np.full(v.shape[0], 0.5))
    np.testing.assert_allclose(_np(x.grad), -1.5 * g @ m2.T, rtol=1e-12)
    np.testing.assert_allclose(_np(y.grad), -1.5 * m1.T @ g, rtol=1e-12)


def _sampled_args():
    a = _csr(np.array([[1.0, 0, 2], [0, 0, 3]]))
    return a, _t(np.ones((2, 4))), _t(np.ones((4, 3)))


@pytest.mark.parametrize("change,exc,message", [
    (lambda a, x, y: (a.to_sparse_coo(), x, y), NotImplementedError, "expected input to have sparse csr layout, "
                                                                      "but got Sparse"),
    (lambda a, x, y: (a.to_dense(), x, y), NotImplementedError, "expected input to have sparse csr layout, but got "
                                                                "Strided"),
    (lambda a, x, y: (a.to_sparse_csc(), x, y), RuntimeError, "sampled_addmm: Expected result to have sparse csr "
                                                              "layout, but got SparseCsc"),
    (lambda a, x, y: (a.to_sparse_bsr(1), x, y), RuntimeError, "empty_sparse_compressed expected sparse compressed "
                                                               r"\(non-block\) tensor layout but got SparseBsr"),
    (lambda a, x, y: (a, x.to_sparse_csr(), y), RuntimeError, "Expected mat1 to have strided layout, but got "
                                                              "SparseCsr"),
    (lambda a, x, y: (a, x, y.to_sparse()), RuntimeError, "Expected mat2 to have strided layout, but got Sparse"),
    (lambda a, x, y: (a, x.float(), y), RuntimeError, "Expected mat1 and mat2 to have the same dtype, but got Float "
                                                      "and Double"),
    (lambda a, x, y: (a.float(), x, y), RuntimeError, "Expected mat1 and self to have the same dtype, but got Double "
                                                      "and Float"),
    (lambda a, x, y: (a, x[0], y), RuntimeError, "Expected mat1 to be a matrix, got 1-D tensor"),
    (lambda a, x, y: (a, x, y[0]), RuntimeError, "Expected mat2 to be a matrix, got 1-D tensor"),
    (lambda a, x, y: (a, x.unsqueeze(0), y), RuntimeError, r"Expected mat1 and mat2 to have the same batch size, "
                                                           r"but got \[1\] and \[\]"),
    # PyTorch broadcasts input into a batched CSR result, which Ember's 2-D compressed tensors cannot hold
    (lambda a, x, y: (a, x.unsqueeze(0), y.unsqueeze(0)), NotImplementedError, "batched sparse compressed tensors are "
                                                                               "not supported in Ember"),
    (lambda a, x, y: (a, x, y[:3]), RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x4 and 3x3\)"),
    (lambda a, x, y: (a, x[:1], y), RuntimeError, r"self.shape\[-2\] must match mat1.shape\[-2\]"),
    (lambda a, x, y: (a, x, y[:, :2]), RuntimeError, r"self.shape\[-1\] must match mat2.shape\[-1\]"),
    (lambda a, x, y: (a.to(ember.int64), x.long(), y.long()), RuntimeError, "sparse_sampled_addmm: Expected self to "
                                                                            "be a floating-point or complex tensor, "
                                                                            "but got Long"),
    (lambda a, x, y: (a, [[1.0]], y), TypeError, r"argument 'mat1' \(position 2\) must be Tensor, not list"),
])
def test_sampled_addmm_bad_input(change, exc, message):
    with pytest.raises(exc, match=message):
        S.sampled_addmm(*change(*_sampled_args()))


def test_sampled_addmm_bad_scalars():
    a, x, y = _sampled_args()
    with pytest.raises(TypeError, match="argument 'beta' must be Number, not str"):
        S.sampled_addmm(a, x, y, beta="x")
    with pytest.raises(RuntimeError, match="value cannot be converted to type double without overflow"):
        S.sampled_addmm(a, x, y, alpha=1j)
    with pytest.raises(TypeError):
        S.sampled_addmm(a, x, y, 1.0)  # beta and alpha are keyword-only


# ---- spdiags -------------------------------------------------------------------------------------


def _spdiags_reference(diags, offsets, shape):
    """scipy.sparse.spdiags' rule by loops: entry (j - k, j) = diags[i, j] for offset k = offsets[i]."""
    diags = np.atleast_2d(diags)
    out = np.zeros(shape, dtype=diags.dtype)
    for i, k in enumerate(np.atleast_1d(offsets)):
        for j in range(diags.shape[1]):
            if 0 <= j - k < shape[0] and j < shape[1]:
                out[j - k, j] = diags[i, j]
    return out


SPDIAG_CASES = [
    ((3, 3), [0, -1, 2], (3, 3)),
    ((3, 3), [0, -1, 2], (4, 5)),
    ((3, 3), [0, -1, 2], (2, 6)),
    ((3, 3), [2, 0, -1], (3, 1)),  # narrower than the diagonals (PyTorch corrupts memory here)
    ((3, 3), [0, -1, 2], (1, 1)),  # (PyTorch segfaults here)
    ((2, 5), [0, 1], (5, 5)),
    ((3, 2), [0, -5, 7], (3, 3)),  # offsets beyond the matrix place nothing
    ((1, 4), [-2], (6, 4)),
    ((0, 3), [], (3, 3)),
    ((2, 0), [0, 1], (3, 3)),  # empty diagonals (PyTorch raises a negative-dimension error)
    ((3, 3), [0, -1, 2], (0, 0)),
    ((3, 3), [0, -1, 2], (0, 3)),
]


@pytest.mark.parametrize("dshape,offsets,shape", SPDIAG_CASES)
@pytest.mark.parametrize("layout", [None, ember.sparse_coo, ember.sparse_csr, ember.sparse_csc])
def test_spdiags_matches_loops(dshape, offsets, shape, layout):
    d = RNG.normal(size=dshape)
    out = S.spdiags(_t(d), _t(np.array(offsets, dtype=np.int64)), shape, layout)
    assert out.layout is (ember.sparse_coo if layout is None else layout) and out.shape == shape
    assert out.dtype == ember.float64
    np.testing.assert_array_equal(_np(out.to_dense()), _spdiags_reference(d, offsets, shape))


def test_spdiags_coo_order_and_csr_parts():
    d = np.arange(1.0, 10.0).reshape(3, 3)
    coo = S.spdiags(_t(d), _t([0, -1, 2]), (3, 3))
    # PyTorch's order: diagonal by diagonal (as offsets lists them), column by column; uncoalesced
    assert coo._indices().tolist() == [[0, 1, 2, 1, 2, 0], [0, 1, 2, 0, 1, 2]]
    assert _np(coo._values()).tolist() == [1, 2, 3, 4, 5, 9] and not coo.is_coalesced()
    csc = S.spdiags(_t(d), _t([2, 0, -1]), (4, 5), layout=ember.sparse_csc)
    assert csc.ccol_indices().tolist() == [0, 2, 4, 7, 7, 7]
    assert csc.row_indices().tolist() == [0, 1, 1, 2, 0, 2, 3]
    assert _np(csc.values()).tolist() == [4, 7, 5, 8, 3, 6, 9]
    csr = S.spdiags(_t(d), _t([2, 0, -1]), (4, 5), layout=ember.sparse_csr)
    assert csr.crow_indices().tolist() == [0, 2, 4, 6, 7]
    assert csr.col_indices().tolist() == [0, 2, 0, 1, 1, 2, 2]
    assert _np(csr.values()).tolist() == [4, 3, 7, 5, 8, 6, 9]


def test_spdiags_vector_scalar_offset_zeros_and_dtypes():
    d = np.array([1.0, 0.0, 3.0])
    out = S.spdiags(_t(d), _t(np.int64(0)), (3, 3))  # a 1-D diagonal and a 0-dim offset
    assert out._nnz() == 3  # the stored zero is kept, as PyTorch keeps it
    np.testing.assert_array_equal(_np(out.to_dense()), np.diag(d))
    for dtype in (ember.int64, ember.bool, ember.float32, ember.complex64):
        for layout in (None, ember.sparse_csr):
            got = S.spdiags(_t(np.arange(1, 7).reshape(2, 3)).to(dtype), _t([0, 1]), (3, 3), layout)
            assert got.dtype == dtype
            want = _spdiags_reference(np.arange(1, 7).reshape(2, 3), [0, 1], (3, 3))
            np.testing.assert_array_equal(_np(got.to_dense().to(ember.float64)), want.astype(bool) if
                                          dtype == ember.bool else want)


def test_spdiags_shape_forms():
    d, offsets = _t(np.ones((1, 3))), _t([0])
    for shape in ((3, 3), [3, 3], ember.Size([3, 3]), (3, ember.tensor(3))):
        assert S.spdiags(d, offsets, shape).shape == (3, 3)


def test_spdiags_gradcheck():
    # PyTorch has no derivative for spdiags; Ember's reaches the diagonals
    d = _t(RNG.normal(size=(3, 4))).requires_grad_()
    offsets = _t([1, -1, 0])
    for layout in (None, ember.sparse_csr, ember.sparse_csc):
        assert gradcheck(lambda x, lay=layout: S.spdiags(x, offsets, (4, 3), lay).to_dense(), (d,))


LONG, INT, FLOAT = np.int64, np.int32, np.float32


@pytest.mark.parametrize("args,exc,message", [
    ((np.ones((3, 3)), [0, 1, 2], (3, 3, 3)), RuntimeError, "Output shape must be 2d"),
    ((np.ones((1, 3, 3)), [0], (3, 3)), RuntimeError, "Diagonals must be vector or matrix"),
    ((np.ones(()), [0], (3, 3)), RuntimeError, "Diagonals must be vector or matrix"),
    ((np.ones((3, 3)), [[0, 1, 2]], (3, 3)), RuntimeError, "Offsets must be scalar or vector"),
    ((np.ones((3, 3)), [0, 1], (3, 3)), RuntimeError, r"Number of diagonals \(3\) does not match the number of "
                                                      r"offsets \(2\)"),
    ((np.ones(3), [0, 1], (3, 3)), RuntimeError, r"Number of diagonals \(1\) does not match the number of offsets "
                                                 r"\(2\)"),
    ((np.ones((3, 3)), [0, 1, 2], (3, 3), FLOAT), RuntimeError, "Offset Tensor must have dtype Long but got Float"),
    ((np.ones((3, 3)), [0, 1, 2], (3, 3), INT), RuntimeError, "Offset Tensor must have dtype Long but got Int"),
    ((np.ones((3, 3)), [0, 0, 1], (3, 3), FLOAT), RuntimeError, "Offset Tensor must have dtype Long"),
    ((np.ones((3, 3)), [0, 0, 1], (3, 3)), RuntimeError, "Offset tensor contains duplicate values"),
    ((np.ones((3, 3)), [0, 1, 2], (-1, 3)), RuntimeError, r"Trying to create tensor with negative dimension -1"),
    ((np.ones((3, 3)), [0, 1, 2], 3), TypeError, r"argument 'shape' \(position 3\) must be tuple of ints, not int"),
    ((np.ones((3, 3)), [0, 1, 2], (3.0, 3)), TypeError, "must be tuple of ints, but found element of type float at "
                                                        "pos 0"),
])
def test_spdiags_bad_input(args, exc, message):
    d, offsets, shape, *dtype = args
    with pytest.raises(exc, match=message):
        S.spdiags(_t(d), _t(np.asarray(offsets, dtype=dtype[0] if dtype else LONG)), shape)


def test_spdiags_bad_layout_and_types():
    d, offsets = _t(np.ones((3, 3))), _t([0, 1, 2])
    for layout, word in ((ember.sparse_bsr, "SparseBsr"), (ember.sparse_bsc, "SparseBsc"), (ember.strided,
                                                                                           "Strided")):
        with pytest.raises(RuntimeError, match=rf"Only output layouts \(Sparse, SparseCsc, SparseCsr\) are "
                                               rf"supported, got {word}"):
            S.spdiags(d, offsets, (3, 3), layout=layout)
    # layout is checked after the counts, before the offsets' dtype (PyTorch's order)
    with pytest.raises(RuntimeError, match="Only output layouts"):
        S.spdiags(d, offsets.double(), (3, 3), layout=ember.sparse_bsr)
    with pytest.raises(TypeError, match="argument 'layout' must be ember.layout, not str"):
        S.spdiags(d, offsets, (3, 3), layout="csr")
    with pytest.raises(TypeError, match=r"argument 'offsets' \(position 2\) must be Tensor, not list"):
        S.spdiags(d, [0, 1, 2], (3, 3))
    with pytest.raises(TypeError, match=r"argument 'diagonals' \(position 1\) must be Tensor, not list"):
        S.spdiags([[1.0]], _t([0]), (3, 3))
    with pytest.raises(NotImplementedError, match="expected a strided diagonals tensor"):
        S.spdiags(d.to_sparse(), offsets, (3, 3))


# ---- as_sparse_gradcheck -------------------------------------------------------------------------


SPARSE_GRADCHECK = S.as_sparse_gradcheck(gradcheck)


@pytest.mark.parametrize("kind", ["coo", "csr", "csc", "bsr", "bsc"])
def test_as_sparse_gradcheck_layouts(kind):
    a = np.array([[0.0, 1, 0, 0], [2, 3, 0, 0]])
    x = _t(a)
    x = {"coo": x.to_sparse(), "csr": x.to_sparse_csr(), "csc": x.to_sparse_csc(),
         "bsr": x.to_sparse_bsr((1, 2)), "bsc": x.to_sparse_bsc((2, 1))}[kind].requires_grad_(True)
    dense = _t(RNG.normal(size=(4, 3)))
    assert SPARSE_GRADCHECK(lambda s: s.to_dense() * 2, x)
    assert SPARSE_GRADCHECK(lambda s: s.to_dense().sin(), (x,), masked=True)
    if kind in ("coo", "csr"):
        assert SPARSE_GRADCHECK(lambda s, d: ember.sparse.mm(s, d), (x, dense.requires_grad_()))


def test_as_sparse_gradcheck_sparse_outputs_and_partials():
    x = _t(np.array([[0.0, 1], [2, 3]])).to_sparse_coo().requires_grad_(True)
    assert SPARSE_GRADCHECK(lambda s: s.to_sparse_csr(), x)  # torch's docstring example
    assert SPARSE_GRADCHECK(lambda s: (s.to_sparse_csc(), s.to_dense().sum()), [x])
    partial = S.as_sparse_gradcheck(functools.partial(gradcheck, atol=1e-6))
    assert partial(lambda s: s * 3.0, (x,))
    a = _csr(_random((3, 4), density=0.6)).requires_grad_(True)
    m1, m2 = _t(RNG.normal(size=(3, 2))).requires_grad_(), _t(RNG.normal(size=(2, 4))).requires_grad_()
    assert SPARSE_GRADCHECK(lambda i, p, q: S.sampled_addmm(i, p, q, beta=0.5, alpha=2.0), (a, m1, m2))
    assert SPARSE_GRADCHECK(lambda i, p, q: S.sampled_addmm(i, p, q, beta=0.5, alpha=2.0), (a, m1, m2), masked=True)


def test_as_sparse_gradcheck_only_strided_reaches_gradcheck():
    seen = []

    def spy(func, inputs, **kwargs):
        seen.extend(type(x).__name__ for x in inputs)
        seen.append(sorted(kwargs))
        return gradcheck(func, inputs, **kwargs)

    x = _t(np.eye(2)).to_sparse_csr().requires_grad_(True)
    assert S.as_sparse_gradcheck(spy)(lambda s: s.to_dense(), x, masked=True, atol=1e-5)
    assert "SparseTensor" not in seen and seen[-1] == ["atol"]  # masked is the wrapper's own


def test_as_sparse_gradcheck_catches_a_wrong_gradient():
    x = _t(np.array([[1.0, 0], [0, 2]])).to_sparse().requires_grad_(True)
    # detach() hides part of the dependence from backward: analytical and numerical Jacobians differ
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        SPARSE_GRADCHECK(lambda s: s.to_dense() + s.to_dense().detach() ** 2, x)
    assert not SPARSE_GRADCHECK(lambda s: s.to_dense() + s.to_dense().detach() ** 2, x, raise_exception=False)


# ---- check_sparse_tensor_invariants --------------------------------------------------------------


def test_check_invariants_always_enabled():
    c = S.check_sparse_tensor_invariants
    assert c.is_enabled() is True
    c.enable()
    assert c.is_enabled()
    with pytest.warns(UserWarning, match="Ember always checks sparse tensor invariants"):
        c.disable()
    assert c.is_enabled()
    with pytest.warns(UserWarning, match="cannot be disabled"), c(enable=False):
        assert c.is_enabled()
        # still checked: an out-of-bounds index is refused
        with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
            ember.sparse_coo_tensor(_t([[0, 5]]), _t([1.0, 2.0]), (3,), check_invariants=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with c():
            assert c.is_enabled()
    with pytest.raises(RuntimeError, match=r"`crow_indices\[..., -1\] == nnz` is not satisfied."):
        ember.sparse_csr_tensor(_t([0, 1, 3]), _t([0, 1]), _t([1.0, 2.0]), check_invariants=True)


def test_check_invariants_context_and_decorator():
    c = S.check_sparse_tensor_invariants
    ctx = c()
    assert ctx.__enter__() is None
    with pytest.raises(RuntimeError, match="This context manager instance is already activated. Use a different "
                                           "context manager instance for context nesting."):
        ctx.__enter__()
    ctx.__exit__(None, None, None)
    with pytest.raises(AssertionError, match="saved_state should not be None on exit"):
        ctx.__exit__(None, None, None)

    @c()
    def run(a, *, b):
        """doc"""
        return c.is_enabled(), a, b

    assert run(1, b=2) == (True, 1, 2) and run.__doc__ == "doc"
    assert run(3, b=4) == (True, 3, 4)  # the decorator enters a fresh instance each call


# ---- legacy typed constructors -------------------------------------------------------------------


LEGACY = [("FloatTensor", ember.float32), ("DoubleTensor", ember.float64), ("HalfTensor", ember.float16),
          ("BFloat16Tensor", ember.bfloat16), ("ByteTensor", ember.uint8), ("CharTensor", ember.int8),
          ("ShortTensor", ember.int16), ("IntTensor", ember.int32), ("LongTensor", ember.int64)]


@pytest.mark.parametrize("name,dtype", LEGACY)
def test_legacy_size_form(name, dtype):
    cls = getattr(S, name)
    with pytest.warns(UserWarning, match=rf"ember.sparse.{name}\(shape, \*, device=\) is deprecated"):
        t = cls(2, 3)
    assert t.layout is ember.sparse_coo and t.dtype == dtype and t.shape == (2, 3) and t._nnz() == 0
    assert t.sparse_dim() == 2 and t.dense_dim() == 0 and t.is_coalesced()
    np.testing.assert_array_equal(_np(t.to_dense().to(ember.float64)), np.zeros((2, 3)))
    assert isinstance(t, cls) and not isinstance(t.to_dense(), cls)
    assert repr(cls) == f"<class 'ember.sparse.{name}'>" and cls.dtype == dtype
    with pytest.warns(UserWarning):
        assert cls(ember.Size([4])).shape == (4,) and cls().shape == (0,) and cls(0).shape == (0,)


def test_legacy_indices_values_form():
    i = _t([[0, 1, 1], [2, 0, 2]])
    v = _t([1.0, 2.0, 3.0], ember.float32)
    with pytest.warns(UserWarning, match=r"ember.sparse.FloatTensor\(indices, values, shape, \*, device=\) is "
                                         r"deprecated.  Please use ember.sparse_coo_tensor\(indices, values, shape, "
                                         r"dtype=, device=\)."):
        t = S.FloatTensor(i, v, (2, 3))
    want = np.zeros((2, 3))
    want[0, 2], want[1, 0], want[1, 2] = 1, 2, 3
    np.testing.assert_array_equal(_np(t.to_dense()), want)
    assert isinstance(t, S.FloatTensor) and not isinstance(t, S.DoubleTensor)
    assert not isinstance(t.to_sparse_csr(), S.FloatTensor)  # a COO type
    with pytest.warns(UserWarning, match=r"\(indices, values, \*, device=\) is deprecated"):
        inferred = S.FloatTensor(i, v)
    assert inferred.shape == (2, 3)
    with pytest.warns(UserWarning):
        hybrid = S.DoubleTensor(i, _t(np.ones((3, 2))), ember.Size([2, 3, 2]), device="cpu")
    assert hybrid.dense_dim() == 1 and hybrid.dtype == ember.float64
    with pytest.warns(UserWarning):  # as PyTorch: the values' dtype wins over the class's
        assert S.DoubleTensor(i, v, (2, 3)).dtype == ember.float32
        assert S.LongTensor(i, v, [2, 3]).dtype == ember.float32
        assert S.FloatTensor(_t(np.zeros((1, 0), dtype=np.int64)), _t(np.zeros(0)), (0,))._nnz() == 0


@pytest.mark.parametrize("args,kwargs,exc,message", [
    (((2, 3),), {}, TypeError, r"ember.sparse.FloatTensor\(sequence\) only accepts sizes"),
    (([2, 3],), {}, TypeError, "only accepts sizes"),
    ((np.zeros((2, 2)),), {}, TypeError, "new\\(\\) received an invalid combination of arguments - got \\(Tensor\\)"),
    ((np.array([[0, 1]]), [1.0, 2.0], (2,)), {}, TypeError, r"got \(Tensor, list, tuple\)"),
    ((np.array([[0, 1]]), np.array([1.0, 2.0]), (2.0,)), {}, TypeError, "invalid combination of arguments"),
    ((2, 2.0), {}, TypeError, "new\\(\\): argument 'size' failed to unpack the object at pos 2 with error \"type must "
                              "be tuple of ints,but got float\""),
    ((2, 2), {"dtype": ember.float64}, TypeError, r"invalid combination of arguments - got \(int, int, "
                                                  r"dtype=ember.dtype\)"),
    ((2, 2), {"device": "cuda"}, RuntimeError, "legacy constructor expects device type: cpu but device type: cuda "
                                               "was passed"),
    ((-1,), {}, RuntimeError, r"Trying to create tensor with negative dimension -1: \[-1\]"),
    ((np.array([[0, 1]], dtype=np.int32), np.array([1.0, 2.0]), (2,)), {}, RuntimeError,
     "indices must be an int64 tensor"),
    ((np.array([0, 1]), np.array([1.0, 2.0]), (2,)), {}, RuntimeError, r"indices must be sparse_dim x nnz, but got: "
                                                                        r"\[2\]"),
    # unlike PyTorch (which builds it unchecked): an index outside the size is refused
    ((np.array([[0, 5]]), np.array([1.0, 2.0]), (3,)), {}, RuntimeError, "size is inconsistent with indices"),
    ((np.array([[0, -1]]), np.array([1.0, 2.0]), (3,)), {}, RuntimeError, "found negative index -1 for dim 0"),
])
def test_legacy_bad_input(args, kwargs, exc, message):
    args = tuple(_t(a) if isinstance(a, np.ndarray) else a for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=message):
            S.FloatTensor(*args, **kwargs)


def test_public_names():
    for name in ("sampled_addmm", "spdiags", "as_sparse_gradcheck", "check_sparse_tensor_invariants",
                 *(n for n, _ in LEGACY)):
        assert hasattr(S, name), name
    assert {"sampled_addmm", "spdiags", "as_sparse_gradcheck", "check_sparse_tensor_invariants"} <= set(S.__all__)
    assert re.fullmatch(r"<class 'ember\.sparse\.LongTensor'>", repr(S.LongTensor))
