"""Matrix products (mm, bmm, matmul, mv, dot, vdot, outer, addmm, addmv, baddbmm, addbmm) against
NumPy in float64 and complex128 on contiguous, transposed (non-contiguous), broadcast, zero-size
and vector inputs; reduced-precision and integer dtypes; derivatives by gradcheck, forward mode and
second order; vmap rules; out=; errors; the float32 matmul precision flag."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.func import vmap

RNG = np.random.default_rng(11)


def arr(*shape, complex_=False):
    a = RNG.standard_normal(shape)
    if complex_:
        a = a + 1j * RNG.standard_normal(shape)
    return a


def t(a, requires_grad=False):
    a = np.asarray(a)
    dtype = ember.complex128 if np.iscomplexobj(a) else ember.float64
    return ember.tensor(a, dtype=dtype, requires_grad=requires_grad)


def close(got, want, tol=1e-12):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), want, rtol=tol, atol=tol)


# PyTorch's matmul rank rules: (self shape, other shape)
MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (6, 3, 4)), ((1, 2, 3), (4, 3, 2)),
    ((0, 2, 3), (3, 4)), ((2, 0), (0, 4)), ((5, 2, 3), (1, 3, 0)),
]


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("a_shape, b_shape", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_matches_numpy(a_shape, b_shape, complex_):
    a, b = arr(*a_shape, complex_=complex_), arr(*b_shape, complex_=complex_)
    got = ember.matmul(t(a), t(b))
    want = np.matmul(a, b)
    assert got.shape == want.shape
    close(got, want)
    close(t(a) @ t(b), want)


def test_transposed_and_strided_inputs():
    base = arr(6, 8)
    a = t(base)[:, ::2]  # stepped columns: non-contiguous
    b = t(base).t()[::2, :5]  # transposed and stepped
    assert not a.is_contiguous() and not b.is_contiguous()
    close(ember.mm(a, b), base[:, ::2] @ base.T[::2, :5])
    batch = t(arr(4, 3, 5)).transpose(1, 2)  # [4, 5, 3], inner strides swapped
    other = t(arr(4, 3, 2))
    close(ember.bmm(batch, other), np.matmul(batch.numpy(), other.numpy()))
    expanded = t(arr(1, 3, 2)).expand(4, 3, 2)  # stride 0 batch
    close(ember.bmm(batch, expanded), np.matmul(batch.numpy(), expanded.numpy()))


def test_large_product_crosses_the_blocking():
    """Sizes past every block size of Note [gemm blocking] (and not multiples of them)."""
    a, b = arr(150, 300), arr(300, 1100)
    close(ember.mm(t(a), t(b)), a @ b, tol=1e-10)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    got = ember.mm(ember.tensor(af), ember.tensor(bf)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=2e-4, atol=2e-3)


def test_other_products_match_numpy():
    m, v, w = arr(3, 4), arr(4), arr(3)
    c, d = arr(4, complex_=True), arr(4, complex_=True)
    close(ember.mv(t(m), t(v)), m @ v)
    close(ember.dot(t(v), t(v)), v @ v)
    close(ember.vdot(t(c), t(d)), np.vdot(c, d))
    close(ember.dot(t(c), t(d)), np.dot(c, d))
    close(ember.outer(t(w), t(v)), np.outer(w, v))
    s, m1, m2 = arr(3, 5), arr(3, 4), arr(4, 5)
    close(ember.addmm(t(s), t(m1), t(m2), beta=0.5, alpha=-2.0), 0.5 * s + -2.0 * (m1 @ m2))
    bias = arr(5)
    close(ember.addmm(t(bias), t(m1), t(m2)), bias + m1 @ m2)  # a broadcast self
    close(ember.addmv(t(w), t(m), t(v), beta=2.0, alpha=3.0), 2 * w + 3 * (m @ v))
    b1, b2, sb = arr(6, 3, 4), arr(6, 4, 2), arr(6, 3, 2)
    close(ember.baddbmm(t(sb), t(b1), t(b2), beta=-1.0, alpha=0.25), -sb + 0.25 * np.matmul(b1, b2))
    row = arr(2)
    close(ember.addbmm(t(row), t(b1), t(b2)), row + np.matmul(b1, b2).sum(0))


def test_beta_zero_ignores_nan_in_self():
    nan = ember.full([2, 2], float("nan"), dtype=ember.float64)
    out = ember.addmm(nan, t(np.eye(2)), t(np.eye(2)), beta=0)
    assert out.tolist() == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("dtype, tol", [(ember.float32, 1e-5), (ember.float16, 2e-2), (ember.bfloat16, 5e-2),
                                        (ember.complex64, 1e-5)])
def test_lower_precision_dtypes(dtype, tol):
    a, b = arr(7, 9), arr(9, 5)
    if dtype == ember.complex64:
        a, b = a + 1j * arr(7, 9), b + 1j * arr(9, 5)
    got = ember.matmul(ember.tensor(a).to(dtype), ember.tensor(b).to(dtype))
    assert got.dtype == dtype
    want = np.matmul(a, b)
    np.testing.assert_allclose(got.to(ember.complex128 if dtype == ember.complex64 else ember.float64).numpy(), want,
                               rtol=tol, atol=tol * np.abs(want).max())


def test_integer_products_wrap_like_pytorch():
    a = ember.tensor([[1, 2], [3, 4]], dtype=ember.int64)
    assert (a @ a).tolist() == [[7, 10], [15, 22]]
    big = ember.tensor([[2**62, 2**62]], dtype=ember.int64)
    ones = ember.tensor([[2], [2]], dtype=ember.int64)
    assert (big @ ones).tolist() == [[0]]  # 2**64 wraps to 0
    assert ember.mm(ember.tensor([[1, 2]], dtype=ember.int32), ember.tensor([[3], [4]], dtype=ember.int32)).dtype \
        == ember.int32


def test_out_argument():
    a, b = t(arr(2, 3)), t(arr(3, 4))
    out = ember.empty(0, dtype=ember.float64)
    r = ember.mm(a, b, out=out)
    assert out.shape == (2, 4) and r.tolist() == out.tolist()
    close(out, a.numpy() @ b.numpy())
    with pytest.raises(RuntimeError, match=r"\[matmul\] expected out tensor to have dtype float64, but got float32"):
        ember.matmul(a, b, out=ember.empty(2, 4))


def test_errors():
    with pytest.raises(RuntimeError, match=r"\[mm\] mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ember.mm(ember.zeros(2, 3), ember.zeros(4, 5))
    with pytest.raises(RuntimeError, match=r"\[mm\] self must be a 2D tensor, but got a 3D tensor"):
        ember.mm(ember.zeros(1, 2, 3), ember.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"expected m1 and m2 to have the same dtype, but got: float32 != float64"):
        ember.matmul(ember.zeros(2, 3), ember.zeros(3, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"both arguments to matmul need to be at least 1D, but they are 0D and 1D"):
        ember.matmul(ember.tensor(1.0), ember.zeros(2))
    with pytest.raises(RuntimeError, match=r"\[bmm\] expected batch1 and batch2 to have the same batch size"):
        ember.bmm(ember.zeros(2, 3, 4), ember.zeros(3, 4, 5))
    with pytest.raises(RuntimeError, match=r"\[dot\] 1D tensors expected, but got 2D and 1D tensors"):
        ember.dot(ember.zeros(2, 2), ember.zeros(2))
    with pytest.raises(RuntimeError, match=r"\[dot\] inconsistent tensor size"):
        ember.dot(ember.zeros(2), ember.zeros(3))
    with pytest.raises(RuntimeError, match=r"\[matmul\] shape '\[2\]' and '\[3\]'|cannot be broadcast|size of tensor"):
        ember.matmul(ember.zeros(2, 2, 3), ember.zeros(3, 3, 4))
    with pytest.raises(NotImplementedError, match=r"not implemented for 'Bool'"):
        ember.mm(ember.zeros(2, 2, dtype=ember.bool), ember.zeros(2, 2, dtype=ember.bool))


# ---- derivatives ------------------------------------------------------------------------------------

GRAD_CASES = [
    ("mm", lambda a, b: ember.mm(a, b), (3, 4), (4, 2)),
    ("bmm", lambda a, b: ember.bmm(a, b), (2, 3, 4), (2, 4, 2)),
    ("mv", lambda a, b: ember.mv(a, b), (3, 4), (4,)),
    ("dot", lambda a, b: ember.dot(a, b), (4,), (4,)),
    ("vdot", lambda a, b: ember.vdot(a, b), (4,), (4,)),
    ("outer", lambda a, b: ember.outer(a, b), (3,), (4,)),
    *[(f"matmul {sa}@{sb}", lambda a, b: ember.matmul(a, b), sa, sb) for sa, sb in MATMUL_SHAPES if 0 not in sa + sb],
    ("addmm", lambda a, b: ember.addmm(a[:1, :1].expand(3, 2) * 1.0, a, b, beta=0.5, alpha=2.0), (3, 4), (4, 2)),
    ("addmv", lambda a, b: ember.addmv(a[:, 0], a, b, beta=-1.0, alpha=0.5), (3, 4), (4,)),
    ("baddbmm", lambda a, b: ember.baddbmm(a[:, :, :1] * 1.0, a, b, beta=2.0, alpha=0.5), (2, 3, 4), (2, 4, 2)),
    ("addbmm", lambda a, b: ember.addbmm(a[0, :, :2] * 1.0, a, b, beta=0.5, alpha=-1.0), (2, 3, 4), (2, 4, 2)),
]


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("name, fn, sa, sb", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(name, fn, sa, sb, complex_):
    a, b = t(arr(*sa, complex_=complex_), True), t(arr(*sb, complex_=complex_), True)
    assert gradcheck(fn, (a, b), check_forward_ad=True)


@pytest.mark.parametrize("name, fn, sa, sb", GRAD_CASES[:6] + GRAD_CASES[-4:], ids=[c[0] for c in GRAD_CASES[:6] + GRAD_CASES[-4:]])
def test_gradgradcheck(name, fn, sa, sb):
    a, b = t(arr(*sa), True), t(arr(*sb), True)
    assert gradgradcheck(fn, (a, b))


def test_gradient_values_of_matmul_with_broadcast():
    a = t(arr(5, 2, 3), True)
    b = t(arr(3, 4), True)
    g = arr(5, 2, 4)
    (ember.matmul(a, b) * t(g)).sum().backward()
    close(a.grad, g @ b.detach().numpy().T)
    close(b.grad, np.einsum("bij,bik->jk", a.detach().numpy(), g))


# ---- vmap -------------------------------------------------------------------------------------------

def _loop(f, *args, in_dims):
    size = next(x.shape[d] for x, d in zip(args, in_dims, strict=True) if d is not None)
    return np.stack([f(*[x if d is None else x.select(d, i) for x, d in zip(args, in_dims, strict=True)]).numpy()
                     for i in range(size)])


VMAP_CASES = [c for c in GRAD_CASES if c[0].split()[0] in ("mm", "bmm", "mv", "dot", "matmul")]


@pytest.mark.parametrize("name, fn, sa, sb", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_vmap_rules(name, fn, sa, sb, in_dims):
    a = t(arr(4, *sa)) if in_dims[0] == 0 else t(arr(*sa))
    b = t(arr(4, *sb)) if in_dims[1] == 0 else t(arr(*sb))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="vmap: there is no batching rule")
        got = vmap(fn, in_dims=in_dims)(a, b)
    close(got, _loop(fn, a, b, in_dims=in_dims))


def test_per_sample_gradients_of_a_linear_layer():
    w = t(arr(3, 4), True)
    x, y = t(arr(6, 4)), t(arr(6, 3))

    def loss(weight, xi, yi):
        return ((ember.matmul(weight, xi) - yi) ** 2).sum()

    per_sample = vmap(ember.func.grad(loss), in_dims=(None, 0, 0))(w, x, y)
    want = np.stack([2 * np.outer(w.detach().numpy() @ xi - yi, xi) for xi, yi in zip(x.numpy(), y.numpy(), strict=True)])
    close(per_sample, want)


def test_float32_matmul_precision_flag():
    assert ember.get_float32_matmul_precision() == "highest"
    try:
        for p in ("high", "medium", "highest"):
            ember.set_float32_matmul_precision(p)
            assert ember.get_float32_matmul_precision() == p
        with pytest.raises(RuntimeError, match=r"expected one of 'highest', 'high' or 'medium', but got 'low'"):
            ember.set_float32_matmul_precision("low")
    finally:
        ember.set_float32_matmul_precision("highest")


# ---- einsum, tensordot, kron, inner, multi_dot ---------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]), ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 6)]), ("iij->j", [(3, 3, 2)]), ("Ab,ba->A", [(2, 3), (3, 2)]),
    ("i,i,i->i", [(4,), (4,), (4,)]), ("ij,ij->i", [(3, 0), (3, 0)]), ("ab,cd->abcd", [(2, 1), (1, 3)]),
    ("...,...->...", [(2, 3), (3,)]),
]


@pytest.mark.parametrize("equation, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(equation, shapes):
    arrays = [arr(*s) for s in shapes]
    close(ember.einsum(equation, *[t(a) for a in arrays]), np.einsum(equation, *arrays), tol=1e-10)
    close(ember.einsum(equation, [t(a) for a in arrays]), np.einsum(equation, *arrays), tol=1e-10)  # a list


def test_einsum_gradients_and_errors():
    a, b = t(arr(3, 4, complex_=True), True), t(arr(4, 2, complex_=True), True)
    assert gradcheck(lambda x, y: ember.einsum("ij,jk->ik", x, y), (a, b), check_forward_ad=True)
    c = t(arr(3, 3), True)
    assert gradcheck(lambda x: ember.einsum("ii->i", x), (c,), check_forward_ad=True)
    assert gradgradcheck(lambda x, y: ember.einsum("ij,jk,kl->il", x, y, x), (t(arr(3, 3), True), t(arr(3, 3), True)))
    with pytest.raises(RuntimeError, match=r"more operands were provided than specified"):
        ember.einsum("ij->i", t(arr(2, 2)), t(arr(2, 2)))
    with pytest.raises(RuntimeError, match=r"number of subscripts in the equation \(2\) does not match the number of "
                                           r"dimensions \(3\)"):
        ember.einsum("ij->i", t(arr(2, 2, 2)))
    with pytest.raises(RuntimeError, match=r"subscript j has size 3 for an operand which does not broadcast"):
        ember.einsum("ij,jk->ik", t(arr(2, 2)), t(arr(3, 2)))
    with pytest.raises(RuntimeError, match=r"output subscript k does not appear"):
        ember.einsum("ij->k", t(arr(2, 2)))


def test_tensordot_kron_inner_multi_dot():
    a, b = arr(3, 4, 5), arr(4, 5, 2)
    close(ember.tensordot(t(a), t(b)), np.tensordot(a, b), tol=1e-10)
    close(ember.tensordot(t(a), t(b), dims=([1, 2], [0, 1])), np.tensordot(a, b, axes=([1, 2], [0, 1])), tol=1e-10)
    c = arr(2, 3)
    close(ember.tensordot(t(a), t(c), dims=0), np.tensordot(a, c, 0), tol=1e-10)
    for x, y in ((arr(2, 3), arr(4, 5)), (arr(3), arr(2, 2)), (arr(2, 1, 3), arr(2, 2))):
        close(ember.kron(t(x), t(y)), np.kron(x, y))
    x, y = arr(2, 4), arr(3, 4)
    close(ember.inner(t(x), t(y)), np.inner(x, y))
    close(ember.inner(t(x), t(np.array(2.0))), x * 2)
    mats = [arr(2, 30), arr(30, 3), arr(3, 40), arr(40)]
    close(ember.linalg.multi_dot([t(m) for m in mats]), np.linalg.multi_dot(mats), tol=1e-10)
    close(ember.chain_matmul(*[t(m) for m in mats[:3]]), np.linalg.multi_dot(mats[:3]), tol=1e-10)
    v = arr(4, complex_=True)
    close(ember.linalg.vecdot(t(v), t(v)), np.vdot(v, v))
    xs = [t(arr(2, 3), True), t(arr(3, 4), True), t(arr(4), True)]
    assert gradcheck(lambda p, q, r: ember.linalg.multi_dot([p, q, r]), xs, check_forward_ad=True)
    assert gradcheck(lambda p, q: ember.kron(p, q), (xs[0], xs[1]), check_forward_ad=True)
    assert gradcheck(lambda p, q: ember.tensordot(p, q, 1), (xs[0], xs[1]), check_forward_ad=True)
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): expected at least 2 tensors but got 1"):
        ember.linalg.multi_dot([xs[0]])
    with pytest.raises(RuntimeError, match=r"contracted dimensions need to match"):
        ember.tensordot(xs[0], xs[0], 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(1, 37, 23), (23, 37, 1), (1, 37, 1), (1, 200, 300), (300, 200, 1)])
def test_matrix_vector_shapes_take_gemv_correctly(dtype, m, k, n):
    """One output row or column runs as a BLAS gemv (Note [gemv products]): every operand layout
    BLAS can read, and addmm's beta (0 ignores NaN in the input)."""
    rng = np.random.default_rng(m * 1000 + n)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-11, "atol": 1e-11}
    layouts = {
        "contiguous": (ember.tensor(a), ember.tensor(b)),
        "b transposed": (ember.tensor(a), ember.tensor(np.ascontiguousarray(b.T)).t()),
        "a transposed": (ember.tensor(np.ascontiguousarray(a.T)).t(), ember.tensor(b)),
        "both transposed": (ember.tensor(np.ascontiguousarray(a.T)).t(), ember.tensor(np.ascontiguousarray(b.T)).t()),
        "strided": (ember.tensor(np.repeat(a, 2, axis=1))[:, ::2], ember.tensor(np.repeat(b, 3, axis=0))[::3]),
    }
    for name, (x, y) in layouts.items():
        np.testing.assert_allclose((x @ y).numpy(), ref, **tol, err_msg=name)
    x, y = layouts["contiguous"]
    nan_input = ember.full((m, n), float("nan"), dtype=x.dtype)
    np.testing.assert_allclose(ember.addmm(nan_input, x, y, beta=0).numpy(), ref, **tol)
    np.testing.assert_allclose(ember.addmm(ember.ones(m, n, dtype=x.dtype), x, y, beta=0.5, alpha=2.0).numpy(),
                               0.5 + 2.0 * ref, **tol)
    linear = ember.nn.functional.linear(x, y.t().contiguous())  # a Linear at batch 1 (or one output)
    np.testing.assert_allclose(linear.numpy(), ref, **tol)


def test_gemv_products_give_the_same_bits_for_any_thread_count():
    ember.manual_seed(1)
    x, w, a, v = ember.randn(1, 4096), ember.randn(3000, 4096), ember.randn(3000, 4096), ember.randn(4096, 1)
    threads = ember.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            results.append(((x @ w.t()).numpy().tobytes(), (a @ v).numpy().tobytes()))
    finally:
        ember.set_num_threads(threads)
    assert results[0] == results[1] == results[2]
