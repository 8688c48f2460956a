"""ember.linalg's compositions (vector_norm, matrix_norm, norm, cross, diagonal, matrix_power,
matrix_exp; cond, matrix_rank, pinv, lstsq on the SVD) and the top-level norm / cross /
matrix_power / matrix_exp against numpy.linalg in float64 and complex128 (float32 looser):
batched, broadcast, non-contiguous, zero-size and 0-dim inputs; derivatives by gradcheck
(backward and forward mode); bad inputs raise PyTorch's error types."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

RNG = np.random.default_rng(7)
LA = ember.linalg
INF = math.inf
DTYPES = {"float64": (ember.float64, False, 1e-12), "complex128": (ember.complex128, True, 1e-12),
          "float32": (ember.float32, False, 2e-5)}


def arr(*shape, complex_=False):
    a = RNG.standard_normal(shape)
    return a + 1j * RNG.standard_normal(shape) if complex_ else a


def t(a, dtype=None, requires_grad=False):
    a = np.asarray(a)
    if dtype is None:
        dtype = ember.complex128 if np.iscomplexobj(a) else ember.float64
    return ember.tensor(a, dtype=dtype, requires_grad=requires_grad)


def close(got, want, tol=1e-12):
    got = np.asarray(got.detach().numpy())
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def transposed(a, dtype=None):
    """The same values through a non-contiguous (transposed) view."""
    view = t(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype).transpose(-1, -2)
    assert not view.is_contiguous()
    return view


def stepped(a, dtype=None):
    """The same values through a view that steps over every other element of the last dim."""
    wide = np.repeat(a, 2, axis=-1)
    view = t(wide, dtype)[..., ::2]
    assert not view.is_contiguous()
    return view


def np_vector_norm(a, ord, axis=None, keepdims=False):
    """numpy.linalg.norm over the flattened axes (it takes one axis for vector norms)."""
    a = np.asarray(a)
    axes = tuple(range(a.ndim)) if axis is None else tuple(d % a.ndim for d in np.atleast_1d(axis))
    rest = [d for d in range(a.ndim) if d not in axes]
    moved = np.transpose(a, rest + list(axes)).reshape([a.shape[d] for d in rest] + [-1])
    out = np.linalg.norm(moved, ord, axis=-1)
    if keepdims:
        out = out.reshape([1 if d in axes else a.shape[d] for d in range(a.ndim)])
    return out


# ---- vector_norm ----------------------------------------------------------------------------------

ORDS = [2, 1, 3, 0.5, INF, -INF, 0, -1, -2.5]


@pytest.mark.parametrize("kind", DTYPES)
@pytest.mark.parametrize("ord", ORDS)
def test_vector_norm_matches_numpy(kind, ord):
    dtype, complex_, tol = DTYPES[kind]
    a = arr(2, 3, 4, complex_=complex_)
    x = t(a, dtype)
    result = LA.vector_norm(x, ord)
    assert result.dtype == (ember.float32 if dtype == ember.float32 else ember.float64)  # real for complex input
    close(result, np_vector_norm(a, ord), tol)
    close(LA.vector_norm(x, ord, dim=1), np_vector_norm(a, ord, 1), tol)
    close(LA.vector_norm(x, ord, dim=(0, -1), keepdim=True), np_vector_norm(a, ord, (0, 2), True), tol)
    close(LA.vector_norm(x, ord, dim=[]), np_vector_norm(a, ord), tol)  # dim=() is every dim, as None
    close(LA.vector_norm(transposed(a, dtype), ord, dim=-2), np_vector_norm(a, ord, -2), tol)
    close(LA.vector_norm(stepped(a, dtype), ord, dim=(1, 2)), np_vector_norm(a, ord, (1, 2)), tol)
    close(LA.vector_norm(t(a[:1], dtype).expand(5, 3, 4), ord, dim=0), np_vector_norm(np.repeat(a[:1], 5, 0), ord, 0),
          tol)


def test_vector_norm_dtype_zero_size_and_scalars():
    a = arr(3, 4)
    got = LA.vector_norm(t(a, ember.float32), 3, dtype=ember.float64)
    assert got.dtype == ember.float64
    close(got, np_vector_norm(a.astype(np.float32).astype(np.float64), 3))
    c = arr(3, complex_=True)
    got = LA.vector_norm(t(c, ember.complex64), dtype=ember.complex128)
    assert got.dtype == ember.float64
    close(got, np.linalg.norm(c.astype(np.complex64).astype(np.complex128)))
    # empty inputs: sums of no elements are 0; dims that remain empty stay empty
    assert LA.vector_norm(t(np.zeros((0, 3)))).item() == 0.0
    close(LA.vector_norm(t(np.zeros((0, 3))), 2, dim=0), np.zeros(3))
    assert LA.vector_norm(t(np.zeros((0, 3))), INF, dim=1).shape == (0,)
    close(LA.vector_norm(t(np.zeros((2, 0))), 1, dim=1, keepdim=True), np.zeros((2, 1)))
    # 0-dim and one-element inputs
    assert LA.vector_norm(t(np.array(-3.0))).item() == 3.0
    assert LA.vector_norm(t(np.array(-3.0)), INF, dim=0).item() == 3.0
    assert LA.vector_norm(t(np.array(2 - 1j)), 1, dim=-1, keepdim=True).item() == pytest.approx(5 ** 0.5)
    assert LA.vector_norm(t(np.array([0.0, 0.0, 5.0])), 0).item() == 1.0
    out = ember.empty(4, dtype=ember.float64)
    assert LA.vector_norm(t(a), dim=0, out=out) is out
    close(out, np.linalg.norm(a, axis=0))


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, INF, -INF, -1.5])
def test_vector_norm_gradcheck(complex_, ord):
    x = t(arr(3, 4, complex_=complex_), requires_grad=True)
    assert gradcheck(lambda x: LA.vector_norm(x, ord), (x,), check_forward_ad=True)
    assert gradcheck(lambda x: LA.vector_norm(x, ord, dim=1, keepdim=True), (x,), check_forward_ad=True)


def test_vector_norm_gradient_at_zero_is_zero():
    for ord in (2, 1, 3, INF, 0.5):
        x = t(np.zeros(3), requires_grad=True)
        LA.vector_norm(x, ord).backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0], ord
    # ord < 1: |x|^(ord-1) is infinite at a zero element, whose gradient PyTorch takes as 0
    x = t(np.array([0.0, 1.0, -2.0]), requires_grad=True)
    LA.vector_norm(x, 0.5).backward()
    n = 1 + 2 ** 0.5
    np.testing.assert_allclose(x.grad.numpy(), [0.0, n, -n / 2 ** 0.5], rtol=1e-12)


def test_vector_norm_errors():
    with pytest.raises(RuntimeError, match=r"\[linalg.vector_norm\] Expected a floating point or complex tensor as "
                                           r"input. Got int64"):
        LA.vector_norm(ember.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"argument 'ord' must be Number, not str"):
        LA.vector_norm(t(arr(3)), "fro")
    with pytest.raises(RuntimeError, match=r"cannot compute the inf norm on an empty tensor because the operation "
                                           r"does not have an identity"):
        LA.vector_norm(t(np.zeros((0, 2))), INF)
    with pytest.raises(RuntimeError, match=r"cannot compute the -1 norm on the dimension 1 because this dimension is "
                                           r"empty"):
        LA.vector_norm(t(np.zeros((2, 0))), -1, dim=1)
    with pytest.raises(RuntimeError, match=r"dtype should be real for real inputs, but got complex128"):
        LA.vector_norm(t(arr(3)), dtype=ember.complex128)
    with pytest.raises(RuntimeError, match=r"dtype should be floating point or complex, but got int64"):
        LA.vector_norm(t(arr(3)), dtype=ember.int64)
    with pytest.raises(RuntimeError, match=r"the dtype of the input \(float64\) should be convertible without "
                                           r"narrowing to the specified dtype \(float32\)"):
        LA.vector_norm(t(arr(3)), dtype=ember.float32)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        LA.vector_norm(t(arr(2, 2)), dim=2)
    with pytest.raises(RuntimeError, match=r"appears multiple times"):
        LA.vector_norm(t(arr(2, 2)), dim=(1, -1))


# ---- matrix_norm ----------------------------------------------------------------------------------

MATRIX_ORDS = ["fro", 1, -1, INF, -INF]


@pytest.mark.parametrize("kind", DTYPES)
@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm_matches_numpy(kind, ord):
    dtype, complex_, tol = DTYPES[kind]
    a = arr(2, 3, 4, complex_=complex_)
    x = t(a, dtype)
    close(LA.matrix_norm(x, ord), np.linalg.norm(a, ord, axis=(-2, -1)), tol)
    for dim in [(0, 2), (2, 0), (-1, 1), (1, 0)]:
        for keepdim in (False, True):
            close(LA.matrix_norm(x, ord, dim=dim, keepdim=keepdim),
                  np.linalg.norm(a, ord, axis=dim, keepdims=keepdim), tol)
    close(LA.matrix_norm(transposed(a, dtype), ord), np.linalg.norm(a, ord, axis=(-2, -1)), tol)
    close(LA.matrix_norm(stepped(a, dtype), ord, dim=(0, 2)), np.linalg.norm(a, ord, axis=(0, 2)), tol)
    close(LA.matrix_norm(t(a[0], dtype).expand(5, 3, 4), ord), np.linalg.norm(np.stack([a[0]] * 5), ord, axis=(1, 2)),
          tol)
    assert LA.matrix_norm(t(np.zeros((0, 3, 4)), dtype), ord).shape == (0,)
    close(LA.matrix_norm(t(np.array([[-2.5]]), dtype), ord), np.float64(2.5), tol)


def test_matrix_norm_dtype_and_empty_matrices():
    a = arr(3, 3, complex_=True)
    got = LA.matrix_norm(t(a, ember.complex64), 1, dtype=ember.complex128)
    assert got.dtype == ember.float64
    close(got, np.linalg.norm(a.astype(np.complex64).astype(np.complex128), 1))
    close(LA.matrix_norm(t(np.zeros((2, 0, 3)))), np.zeros(2))
    close(LA.matrix_norm(t(np.zeros((2, 0, 3))), 1), np.zeros(2))  # the largest of 3 empty column sums
    close(LA.matrix_norm(t(np.zeros((2, 3, 0))), -INF), np.zeros(2))  # the smallest of 3 empty row sums
    with pytest.raises(RuntimeError, match=r"cannot compute the 1 norm over the empty dimension 2"):
        LA.matrix_norm(t(np.zeros((2, 3, 0))), 1)  # the largest of no column sums
    with pytest.raises(RuntimeError, match=r"cannot compute the inf norm over the empty dimension 1"):
        LA.matrix_norm(t(np.zeros((2, 0, 3))), INF)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm_gradcheck(complex_, ord):
    x = t(arr(2, 3, 4, complex_=complex_), requires_grad=True)
    assert gradcheck(lambda x: LA.matrix_norm(x, ord), (x,), check_forward_ad=True)
    assert gradcheck(lambda x: LA.matrix_norm(x, ord, dim=(2, 0), keepdim=True), (x,), check_forward_ad=True)


@pytest.mark.parametrize("kind", DTYPES)
@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_singular_value_norms(kind, ord):
    dtype, complex_, tol = DTYPES[kind]
    tol = max(tol, 1e-10)
    a = arr(2, 3, 4, complex_=complex_)
    close(LA.matrix_norm(t(a, dtype), ord), np.linalg.norm(a, ord, axis=(-2, -1)), tol)
    close(LA.matrix_norm(t(a, dtype), ord, dim=(2, 0), keepdim=True),
          np.linalg.norm(a, ord, axis=(2, 0), keepdims=True), tol)
    close(LA.matrix_norm(transposed(a, dtype), ord), np.linalg.norm(a, ord, axis=(-2, -1)), tol)
    close(LA.norm(t(a[0], dtype), ord), np.linalg.norm(a[0], ord), tol)
    assert LA.matrix_norm(t(np.zeros((0, 3, 3)), dtype), ord).shape == (0,)
    if dtype == ember.float32:
        assert LA.matrix_norm(t(a, dtype), ord, dtype=ember.float64).dtype == ember.float64


def test_matrix_norm_errors():
    x = t(arr(3, 3))
    with pytest.raises(RuntimeError, match=r"\[linalg.matrix_norm\] Order foo not supported."):
        LA.matrix_norm(x, "foo")
    with pytest.raises(RuntimeError, match=r"\[linalg.matrix_norm\] Order 3 not supported."):
        LA.matrix_norm(x, 3)
    with pytest.raises(RuntimeError, match=r"The input tensor A must have at least 2 dimensions."):
        LA.matrix_norm(t(arr(3)))
    with pytest.raises(RuntimeError, match=r"dim must be a 2-tuple. Got \(0,\)"):
        LA.matrix_norm(x, dim=(0,))
    with pytest.raises(RuntimeError, match=r"dims must be different. Got \(1, 1\)"):
        LA.matrix_norm(x, dim=(1, -1))
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got int32"):
        LA.matrix_norm(ember.tensor([[1, 2]], dtype=ember.int32))
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        LA.matrix_norm(x, dim=(0, 2))
    with pytest.raises(TypeError, match=r"argument 'ord' must be str or Number, not NoneType"):
        LA.matrix_norm(x, None)


# ---- norm (linalg.norm and the top-level torch.norm) ---------------------------------------------

def test_norm_dispatch():
    a = arr(2, 3, 4, complex_=True)
    x = t(a)
    close(LA.norm(x), np.linalg.norm(a.ravel()))  # ord=None: the 2-norm of every element
    close(LA.norm(x, dim=1), np.linalg.norm(a, axis=1))
    close(LA.norm(x, 3, dim=-1, keepdim=True), np.linalg.norm(a, 3, axis=-1, keepdims=True))
    close(LA.norm(x, dim=(0, 2)), np.linalg.norm(a, axis=(0, 2)))  # ord=None, 2 dims: Frobenius
    close(LA.norm(x, 1, dim=(0, 2)), np.linalg.norm(a, 1, axis=(0, 2)))  # a matrix 1-norm
    close(LA.norm(x, "fro", dim=(2, 1)), np.linalg.norm(a, "fro", axis=(2, 1)))
    close(LA.norm(x[0]), np.linalg.norm(a[0]))
    close(LA.norm(x[0], INF), np.linalg.norm(a[0], INF))  # 2-D with an ord: the matrix norm
    close(LA.norm(x[0, 0], INF), np.linalg.norm(a[0, 0], INF))  # 1-D: the vector norm
    close(LA.norm(x[0], -1), np.linalg.norm(a[0], -1))
    assert LA.norm(t(np.array(-2.0))).item() == 2.0
    with pytest.raises(RuntimeError, match=r"If dim is specified, it must be of length 1 or 2. Got \[0, 1, 2\]"):
        LA.norm(x, dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match=r"If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        LA.norm(x, 2)
    with pytest.raises(RuntimeError, match=r"dim must be a 2-tuple"):
        LA.norm(x, "fro", dim=1)
    with pytest.raises(RuntimeError, match=r"Order bad not supported"):
        LA.norm(x[0], "bad")


def test_top_level_norm():
    a = arr(3, 4)
    x = t(a)
    close(ember.norm(x), np.linalg.norm(a))
    close(ember.norm(x, "fro", dim=1), np.linalg.norm(a, axis=1))
    close(x.norm(1, dim=(0, 1)), np.abs(a).sum())  # a number p is always a vector norm
    close(ember.norm(x, dim=0, keepdim=True), np.linalg.norm(a, axis=0, keepdims=True))
    close(ember.norm(t(a, ember.float32), dtype=ember.float64), np.linalg.norm(a.astype(np.float32).astype(np.float64)))
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got int64"):
        ember.norm(ember.tensor([1, 2]), 2)
    close(ember.norm(x, "nuc"), np.linalg.norm(a, "nuc"), 1e-10)


# ---- cross ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", DTYPES)
def test_cross_matches_numpy(kind):
    dtype, complex_, tol = DTYPES[kind]
    a, b = arr(2, 1, 3, complex_=complex_), arr(1, 4, 3, complex_=complex_)
    close(LA.cross(t(a, dtype), t(b, dtype)), np.cross(a, b), tol)  # broadcast over the batch dims
    close(ember.cross(t(a, dtype), t(b, dtype), dim=-1), np.cross(a, b), tol)
    c, d = arr(3, 5, complex_=complex_), arr(3, 5, complex_=complex_)
    close(LA.cross(t(c, dtype), t(d, dtype), dim=0), np.cross(c, d, axis=0), tol)
    close(ember.cross(t(c, dtype), t(d, dtype)), np.cross(c, d, axis=0), tol)  # dim=None: the first dim of size 3
    close(t(c, dtype).cross(t(d, dtype)), np.cross(c, d, axis=0), tol)
    close(LA.cross(transposed(c.T.copy(), dtype), stepped(d.T.copy(), dtype)), np.cross(c.T, d.T), tol)
    assert LA.cross(t(np.zeros((0, 3)), dtype), t(np.zeros((1, 3)), dtype)).shape == (0, 3)
    out = ember.empty(2, 4, 3, dtype=dtype)
    assert LA.cross(t(a, dtype), t(b, dtype), out=out) is out
    close(out, np.cross(a, b), tol)


def test_cross_integer_and_gradcheck():
    assert LA.cross(ember.tensor([1, 0, 0]), ember.tensor([0, 1, 0])).tolist() == [0, 0, 1]
    for complex_ in (False, True):
        a = t(arr(2, 3, complex_=complex_), requires_grad=True)
        b = t(arr(1, 3, complex_=complex_), requires_grad=True)
        assert gradcheck(lambda a, b: LA.cross(a, b), (a, b), check_forward_ad=True)
        c = t(arr(3, 2, complex_=complex_), requires_grad=True)
        assert gradcheck(lambda c: LA.cross(c, c.flip(1), dim=0), (c,), check_forward_ad=True)


def test_cross_errors():
    with pytest.raises(RuntimeError, match=r"\[linalg.cross\] inputs dimension -1 must have length 3. Got 4 and 4"):
        LA.cross(t(arr(2, 4)), t(arr(2, 4)))
    with pytest.raises(RuntimeError, match=r"inputs dimension 0 must have length 3. Got 3 and 1"):
        LA.cross(t(arr(3, 2)), t(arr(1, 2)), dim=0)  # a size-1 dim does not broadcast to 3
    with pytest.raises(RuntimeError, match=r"inputs must have the same number of dimensions."):
        LA.cross(t(arr(2, 3)), t(arr(3)))
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        LA.cross(t(arr(2, 3)), t(arr(2, 3)), dim=2)
    with pytest.raises(RuntimeError, match=r"\[cross\] no dimension of size 3 in input"):
        ember.cross(t(arr(2, 4)), t(arr(2, 4)))


# ---- diagonal -------------------------------------------------------------------------------------

def test_diagonal_is_a_view_matching_numpy():
    a = arr(2, 3, 4, complex_=True)
    x = t(a)
    for offset in (0, 1, -2, 5):
        close(LA.diagonal(x, offset=offset), np.diagonal(a, offset, -2, -1))
    close(LA.diagonal(x, offset=1, dim1=0, dim2=2), np.diagonal(a, 1, 0, 2))
    close(LA.diagonal(transposed(a)), np.diagonal(a, 0, -2, -1))
    assert LA.diagonal(t(np.zeros((0, 3, 3)))).shape == (0, 3)
    y = t(np.zeros((3, 3)))
    LA.diagonal(y).fill_(2.0)  # writes through the view
    close(y, 2 * np.eye(3))
    with pytest.raises(TypeError):
        LA.diagonal(x, 1)  # offset is keyword-only, as in torch.linalg.diagonal
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        LA.diagonal(x, dim1=3)


# ---- matrix_power ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -3])
def test_matrix_power_matches_numpy(kind, n):
    dtype, complex_, tol = DTYPES[kind]
    a = arr(2, 3, 3, complex_=complex_) / 2 + 2 * np.eye(3)  # well conditioned for the negative powers
    want = np.linalg.matrix_power(a, n)
    scale = max(1.0, np.abs(want).max())
    close(LA.matrix_power(t(a, dtype), n), want, tol * scale * 10)
    close(LA.matrix_power(transposed(a, dtype), n), want, tol * scale * 10)
    close(ember.matrix_power(t(a[0], dtype).expand(4, 3, 3), n), np.stack([want[0]] * 4), tol * scale * 10)
    assert LA.matrix_power(t(np.zeros((0, 2, 2)), dtype), n).shape == (0, 2, 2)
    assert LA.matrix_power(t(np.zeros((2, 0, 0)), dtype), n).shape == (2, 0, 0)


def test_matrix_power_integers_identity_and_copy():
    m = ember.tensor([[1, 1], [1, 0]])
    assert LA.matrix_power(m, 10).tolist() == [[89, 55], [55, 34]]  # Fibonacci numbers
    assert LA.matrix_power(m, 0).tolist() == [[1, 0], [0, 1]]
    assert LA.matrix_power(m, 0).dtype == ember.int64
    x = t(arr(3, 3))
    y = LA.matrix_power(x, 1)
    y.fill_(0.0)  # n=1 returns a new tensor, not A itself
    assert x.abs().sum().item() > 0


def test_matrix_power_gradcheck():
    for complex_ in (False, True):
        a = t(arr(2, 3, 3, complex_=complex_) / 2 + 2 * np.eye(3), requires_grad=True)
        for n in (1, 3, 4, -2):
            assert gradcheck(lambda a, n=n: LA.matrix_power(a, n), (a,), check_forward_ad=True)


def test_matrix_power_errors():
    with pytest.raises(RuntimeError, match=r"\[linalg.matrix_power\] A must be batches of square matrices, but they "
                                           r"are 2 by 3 matrices"):
        LA.matrix_power(t(arr(2, 3)), 2)
    with pytest.raises(RuntimeError, match=r"\[linalg.matrix_power\] The input tensor A must have at least 2 "
                                           r"dimensions."):
        LA.matrix_power(t(arr(3)), 2)
    with pytest.raises(TypeError, match=r"argument 'n' must be int, not float"):
        LA.matrix_power(t(arr(3, 3)), 2.0)
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got int64"):
        LA.matrix_power(ember.tensor([[1, 1], [1, 0]]), -1)  # the inverse of an integer matrix
    with pytest.raises(LA.LinAlgError, match=r"singular"):  # from inv
        LA.matrix_power(t(np.ones((2, 2))), -1)


# ---- matrix_exp -----------------------------------------------------------------------------------

def expm_ref(a):
    """exp(A) by an independent route: a 30-term Taylor series after scaling every matrix below
    1-norm 1/2, then squaring back (numpy, complex-safe)."""
    a = np.asarray(a, dtype=np.complex128 if np.iscomplexobj(a) else np.float64)
    norm = np.abs(a).sum(-2).max() if a.size else 0.0
    s = max(0, int(np.ceil(np.log2(norm))) + 1) if norm > 0 else 0
    x = a / 2.0 ** s
    eye = np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    term, total = eye.copy(), eye.copy()
    for k in range(1, 31):
        term = term @ x / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


def rel_close(got, want, tol):
    got = got.detach().numpy()
    assert got.shape == want.shape
    scale = np.abs(want).max(axis=(-2, -1), keepdims=True)
    assert np.all(np.abs(got - want) <= tol * np.maximum(scale, 1e-300)), np.abs(got - want).max()


@pytest.mark.parametrize("kind", DTYPES)
@pytest.mark.parametrize("norm", [0.01, 0.2, 0.9, 2.0, 5.0, 40.0], ids=lambda n: f"norm{n}")
def test_matrix_exp_matches_reference(kind, norm):
    """Each 1-norm picks a different Padé degree (3, 5, 7, 9, 13) or scaling."""
    dtype, complex_, tol = DTYPES[kind]
    a = arr(3, 4, 4, complex_=complex_)
    a = a / np.abs(a).sum(-2).max(-1)[:, None, None] * norm
    want = expm_ref(a)
    tol = max(tol, 1e-13) * (10 + norm)
    rel_close(LA.matrix_exp(t(a, dtype)), want, tol)
    rel_close(LA.matrix_exp(transposed(a, dtype)), want, tol)
    rel_close(ember.matrix_exp(t(a[:1], dtype).expand(2, 4, 4)), np.concatenate([want[:1]] * 2), tol)


def test_matrix_exp_mixed_batch_and_exact_cases():
    # one batch with tiny and large norms: each matrix is scaled and squared on its own
    a = arr(4, 3, 3)
    a[0] *= 1e-4
    a[3] *= 20
    rel_close(LA.matrix_exp(t(a)), np.stack([expm_ref(m) for m in a]), 1e-12)
    d = np.diag([1.0, -2.0, 0.5 + 3j])
    close(LA.matrix_exp(t(d)), np.diag(np.exp(np.diag(d))), 1e-13)
    nilpotent = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
    close(LA.matrix_exp(t(nilpotent)), np.eye(3) + nilpotent + nilpotent @ nilpotent / 2, 1e-13)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]]) * 30  # exp is a rotation by 30 radians
    close(LA.matrix_exp(t(rotation)), [[np.cos(30), -np.sin(30)], [np.sin(30), np.cos(30)]], 1e-11)
    b = arr(2, 5, 5, complex_=True)
    close(ember.matmul(LA.matrix_exp(t(b)), LA.matrix_exp(t(-b))), np.broadcast_to(np.eye(5), (2, 5, 5)), 1e-10)
    close(LA.matrix_exp(t(np.array([[0.7]]))), np.array([[np.exp(0.7)]]), 1e-15)
    close(LA.matrix_exp(t(np.zeros((2, 2)))), np.eye(2), 0.0)
    assert LA.matrix_exp(t(np.zeros((0, 3, 3)))).shape == (0, 3, 3)
    assert LA.matrix_exp(t(np.zeros((2, 0, 0)))).shape == (2, 0, 0)
    assert np.isnan(LA.matrix_exp(t(np.array([[np.nan, 0.0], [0.0, 1.0]]))).numpy()[0, 0])


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_matrix_exp_gradcheck(complex_):
    a = arr(2, 3, 3, complex_=complex_)
    for scale in (0.05, 1.0, 8.0):  # Padé 5, Padé 13 unscaled, Padé 13 with squarings
        x = t(a * scale / np.abs(a).sum(-2).max(), requires_grad=True)
        assert gradcheck(LA.matrix_exp, (x,), check_forward_ad=True)


def test_matrix_exp_errors():
    with pytest.raises(RuntimeError, match=r"\[linalg.matrix_exp\] A must be batches of square matrices, but they are "
                                           r"3 by 2 matrices"):
        LA.matrix_exp(t(arr(3, 2)))
    with pytest.raises(RuntimeError, match=r"The input tensor A must have at least 2 dimensions."):
        LA.matrix_exp(t(arr(3)))
    with pytest.raises(RuntimeError, match=r"\[linalg.matrix_exp\] Expected a floating point or complex tensor as "
                                           r"input. Got int64"):
        LA.matrix_exp(ember.tensor([[1, 0], [0, 1]]))


# ---- on the singular values: cond, matrix_rank, pinv, lstsq --------------------------------------

def low_rank(*shape, rank, complex_=False):
    """A (batch of) m x n matrices of the given rank."""
    m, n = shape[-2], shape[-1]
    return arr(*shape[:-2], m, rank, complex_=complex_) @ arr(*shape[:-2], rank, n, complex_=complex_)


@pytest.mark.parametrize("kind", DTYPES)
def test_matrix_rank_matches_numpy(kind):
    dtype, complex_, tol = DTYPES[kind]
    a = np.stack([low_rank(4, 5, rank=r, complex_=complex_) for r in (1, 2, 4)])
    want = np.linalg.matrix_rank(a)
    assert LA.matrix_rank(t(a, dtype)).tolist() == want.tolist() == [1, 2, 4]
    assert LA.matrix_rank(transposed(a, dtype)).tolist() == [1, 2, 4]
    assert LA.matrix_rank(t(a, dtype)).dtype == ember.int64
    h = a @ np.conj(np.swapaxes(a, -1, -2))  # Hermitian, of the same ranks
    assert LA.matrix_rank(t(h, dtype), hermitian=True).tolist() == [1, 2, 4]
    s = np.linalg.svd(a[2], compute_uv=False)
    # atol alone (rtol becomes 0), rtol alone, both: the larger wins; tensors broadcast over the batch
    assert LA.matrix_rank(t(a[2], dtype), atol=float(s[1] + s[2]) / 2).item() == 2
    assert LA.matrix_rank(t(a[2], dtype), rtol=float(s[2] / s[0]) * 1.01).item() == 2
    assert LA.matrix_rank(t(a[2], dtype), atol=float(s[3]) * 0.5, rtol=float(s[1] / s[0]) * 1.01).item() == 1
    atol = ember.tensor([0.0, 0.0, float(s[1] + s[2]) / 2], dtype=ember.float64)
    assert LA.matrix_rank(t(a, dtype), atol=atol).tolist() == [1, 2, 2]
    assert LA.matrix_rank(t(np.zeros((2, 0, 3)), dtype)).tolist() == [0, 0]
    assert LA.matrix_rank(t(np.zeros((3, 3)), dtype)).item() == 0


@pytest.mark.parametrize("kind", DTYPES)
def test_pinv_matches_numpy(kind):
    dtype, complex_, tol = DTYPES[kind]
    tol = max(tol, 1e-10)
    a = arr(2, 5, 3, complex_=complex_)
    close(LA.pinv(t(a, dtype)), np.linalg.pinv(a), tol * 10)
    close(LA.pinv(transposed(a, dtype)), np.linalg.pinv(a), tol * 10)
    close(LA.pinv(t(np.swapaxes(a, -1, -2), dtype)), np.linalg.pinv(np.swapaxes(a, -1, -2)), tol * 10)
    r = low_rank(4, 4, rank=2, complex_=complex_)
    close(LA.pinv(t(r, dtype), rtol=1e-6), np.linalg.pinv(r, rcond=1e-6), tol * 100)
    h = r @ np.conj(r.T)
    close(LA.pinv(t(h, dtype), hermitian=True, rtol=1e-6), np.linalg.pinv(h, rcond=1e-6, hermitian=True), tol * 100)
    close(LA.pinv(t(h, dtype), atol=1e-6), np.linalg.pinv(h, rcond=1e-6 / np.linalg.norm(h, 2)), tol * 100)
    assert LA.pinv(t(np.zeros((2, 0, 3)), dtype)).shape == (2, 3, 0)
    close(LA.pinv(t(np.zeros((2, 2)), dtype)), np.zeros((2, 2)))


@pytest.mark.parametrize("kind", DTYPES)
@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, INF, -INF])
def test_cond_matches_numpy(kind, p):
    dtype, complex_, tol = DTYPES[kind]
    a = arr(3, 4, 4, complex_=complex_) + 2 * np.eye(4)
    close(LA.cond(t(a, dtype), p), np.linalg.cond(a, p), max(tol, 1e-10) * 100)
    close(LA.cond(transposed(a, dtype), p), np.linalg.cond(a, p), max(tol, 1e-10) * 100)
    assert LA.cond(t(np.zeros((2, 0, 0)), dtype), p).tolist() == [0.0, 0.0]


def test_cond_rectangular_and_singular():
    a = arr(2, 3, 5)
    close(LA.cond(t(a)), np.linalg.cond(a), 1e-10)
    close(LA.cond(t(a), -2), np.linalg.cond(a, -2), 1e-10)
    singular = np.stack([np.ones((3, 3)), np.eye(3)])
    got = LA.cond(t(singular), 1).tolist()
    assert got[0] == INF and got[1] == pytest.approx(1.0)
    with pytest.raises(RuntimeError, match=r"\[linalg.cond\] got an invalid norm type: 3"):
        LA.cond(t(arr(3, 3)), 3)
    with pytest.raises(RuntimeError, match=r"got an invalid norm type: bad"):
        LA.cond(t(arr(3, 3)), "bad")
    with pytest.raises(RuntimeError, match=r"\[linalg.cond\(ord=fro\)\] A must be batches of square matrices, but "
                                           r"they are 2 by 3 matrices"):
        LA.cond(t(arr(2, 3)), "fro")
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got int64"):
        LA.cond(ember.tensor([[1, 0], [0, 1]]))


@pytest.mark.parametrize("kind", DTYPES)
def test_lstsq_matches_numpy(kind):
    dtype, complex_, tol = DTYPES[kind]
    tol = max(tol, 1e-10) * 10
    a, b = arr(2, 6, 3, complex_=complex_), arr(2, 6, 2, complex_=complex_)
    want = [np.linalg.lstsq(a[i], b[i], rcond=None) for i in range(2)]
    got = LA.lstsq(t(a, dtype), t(b, dtype), driver="gelsd")
    close(got.solution, np.stack([w[0] for w in want]), tol)
    close(got.residuals, np.stack([w[1] for w in want]), tol)
    assert got.rank.tolist() == [3, 3]
    close(got.singular_values, np.stack([w[3] for w in want]), tol)
    solution, residuals, rank, sv = LA.lstsq(t(a, dtype), t(b, dtype))  # gelsy: no residuals or singular values
    close(solution, np.stack([w[0] for w in want]), tol)
    assert residuals.shape == (0,) and sv.shape == (0,) and rank.tolist() == [3, 3]
    gels = LA.lstsq(transposed(a, dtype), t(b[:1], dtype), driver="gels")  # B broadcast over A's batch
    close(gels.solution, np.stack([np.linalg.lstsq(a[i], b[0], rcond=None)[0] for i in range(2)]), tol)
    close(gels.residuals, np.stack([np.linalg.lstsq(a[i], b[0], rcond=None)[1] for i in range(2)]), tol)
    assert gels.rank.shape == (0,)
    vec = LA.lstsq(t(a[0], dtype), t(b[0, :, 0], dtype), driver="gelss")  # a vector B
    want = np.linalg.lstsq(a[0], b[0, :, 0], rcond=None)
    close(vec.solution, want[0], tol)
    close(vec.residuals, want[1], tol)  # shape (1,), as NumPy's
    # underdetermined and rank-deficient: the minimum-norm solution
    wide, rhs = arr(3, 5, complex_=complex_), arr(3, 2, complex_=complex_)
    close(LA.lstsq(t(wide, dtype), t(rhs, dtype)).solution, np.linalg.lstsq(wide, rhs, rcond=None)[0], tol)
    r = low_rank(5, 4, rank=2, complex_=complex_)
    got = LA.lstsq(t(r, dtype), t(b[0], dtype)[:5], rcond=1e-6, driver="gelsd")
    want = np.linalg.lstsq(r, b[0][:5], rcond=1e-6)
    close(got.solution, want[0], tol * 100)
    assert got.rank.item() == 2 and got.residuals.shape == (0,)  # not full rank: no residuals
    assert LA.lstsq(t(np.zeros((2, 0, 3)), dtype), t(np.zeros((2, 0, 1)), dtype)).solution.shape == (2, 3, 1)


def test_lstsq_errors():
    with pytest.raises(RuntimeError, match=r"parameter `driver` should be one of \(gels, gelsy, gelsd, gelss\)"):
        LA.lstsq(t(arr(3, 2)), t(arr(3, 1)), driver="bad")
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        LA.lstsq(t(arr(3, 2)), t(arr(4, 1)))
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-1\)"):
        LA.lstsq(t(arr(2, 3, 2)), t(arr(3, 2)))  # one dim fewer: a batch of vectors, of length 2
    with pytest.raises(RuntimeError, match=r"\(input.dim\(\) - other.dim\(\)\) <= 1"):
        LA.lstsq(t(arr(2, 3, 2)), t(arr(3)))
    with pytest.raises(RuntimeError, match=r"Expected input and other to have the same dtype"):
        LA.lstsq(t(arr(3, 2)), t(arr(3, 1)).to(ember.float32))
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got int64"):
        LA.lstsq(ember.tensor([[1, 0], [0, 1]]), ember.tensor([[1], [1]]))


def test_matrix_rank_and_pinv_errors():
    for f, op in ((LA.matrix_rank, "linalg.matrix_rank"), (LA.pinv, "linalg.pinv")):
        with pytest.raises(RuntimeError, match=rf"\[{op}\] The input tensor A must have at least 2 dimensions."):
            f(t(arr(3)))
        with pytest.raises(RuntimeError, match=rf"\[{op}\] Expected a floating point or complex tensor as input. "
                                               r"Got int64"):
            f(ember.tensor([[1, 0], [0, 1]]))
        with pytest.raises(RuntimeError, match=r"A must be batches of square matrices, but they are 3 by 4 matrices"):
            f(t(arr(3, 4)), hermitian=True)
        with pytest.raises(RuntimeError, match=r"atol tensor of complex type is not supported."):
            f(t(arr(3, 3)), atol=t(np.array(1j)))


def test_singular_value_ops_gradcheck():
    for complex_ in (False, True):
        a = t(arr(4, 3, complex_=complex_), requires_grad=True)
        b = t(arr(4, 2, complex_=complex_), requires_grad=True)
        assert gradcheck(LA.pinv, (a,), check_forward_ad=True)
        assert gradcheck(lambda a, b: LA.lstsq(a, b).solution, (a, b), check_forward_ad=True)
        assert gradcheck(lambda a: LA.cond(a), (a,), check_forward_ad=True)
        sq = t(arr(3, 3, complex_=complex_) + 2 * np.eye(3), requires_grad=True)
        assert gradcheck(lambda a: LA.cond(a, "fro"), (sq,), check_forward_ad=True)
        # eigh on the Hermitian part, so that every perturbation stays Hermitian
        assert gradcheck(lambda a: LA.pinv(a + a.mH, hermitian=True), (sq,), check_forward_ad=True)
        for ord in ("nuc", 2, -2):
            assert gradcheck(lambda a, ord=ord: LA.matrix_norm(a, ord), (a,), check_forward_ad=True)


# ---- vmap -----------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:vmap")
def test_vmap_matches_a_loop():
    """The compositions run under vmap (matrix_exp does not: its degree and scaling read the data)."""
    x = t(arr(4, 3, 3, complex_=True))
    for f in (lambda a: LA.vector_norm(a, 3, dim=0), lambda a: LA.matrix_norm(a, 1), LA.norm,
              lambda a: LA.cross(a, a.flip(0)), lambda a: LA.matrix_power(a, 3), LA.diagonal):
        close(ember.func.vmap(f)(x), np.stack([f(xi).numpy() for xi in x]), 1e-12)


def test_out_arguments():
    a = arr(2, 3, 3) + 2 * np.eye(3)
    x = t(a)
    for f, want in ((lambda o: LA.matrix_norm(x, 1, out=o), np.linalg.norm(a, 1, axis=(-2, -1))),
                    (lambda o: LA.norm(x, dim=(1, 2), out=o), np.linalg.norm(a, axis=(1, 2))),
                    (lambda o: LA.cond(x, out=o), np.linalg.cond(a)),
                    (lambda o: LA.matrix_power(x, 2, out=o), a @ a),
                    (lambda o: LA.pinv(x, out=o), np.linalg.pinv(a))):
        out = ember.empty(*want.shape, dtype=ember.float64)
        assert f(out) is out
        close(out, want, 1e-10)
    out = ember.empty(2, dtype=ember.int64)
    assert LA.matrix_rank(x, out=out) is out and out.tolist() == [3, 3]
