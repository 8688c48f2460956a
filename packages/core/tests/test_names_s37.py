"""PyTorch names of issue 18 (session 37): the torch.functional module, torch.GradScaler,
torch.binomial and torch.linalg's LDL factorization. Expected values are float64 references."""

import numpy as np
import pytest

import ember

# ---- ember.functional -------------------------------------------------------------------------------


def test_functional_module_reexports_the_python_level_ops():
    import ember.functional as functional
    from ember.functional import einsum, split, stft  # noqa: F401 - importable by name, as from torch.functional

    assert set(functional.__all__) == {
        "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
        "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm", "meshgrid", "pca_lowrank",
        "split", "stft", "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index"}
    for name in functional.__all__:
        assert getattr(functional, name) is getattr(ember, name), name
    a = ember.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(einsum("ij,kj->ik", a, a).numpy(), a.numpy() @ a.numpy().T)


def test_grad_scaler_at_the_top_level_is_amp_s():
    assert ember.GradScaler is ember.amp.GradScaler
    assert not ember.GradScaler(enabled=False).is_enabled()


# ---- ember.binomial ---------------------------------------------------------------------------------


def test_binomial_draws_pytorchs_numbers_from_the_same_seed():
    # Read off PyTorch 2.13 after torch.manual_seed(0): the mt19937 stream and the sampler's steps
    # (inversion below n p = 10, BTRS above, the flip for p > 1/2) are PyTorch's.
    ember.manual_seed(0)
    c = ember.tensor([0., 3., 7., 40., 100., 1000., 5., 25.], dtype=ember.float64)
    p = ember.tensor([0.5, 0.2, 0.9, 0.3, 0.95, 0.5, 1.0, 0.0], dtype=ember.float64)
    assert ember.binomial(c, p).tolist() == [0.0, 2.0, 5.0, 9.0, 96.0, 506.0, 5.0, 0.0]
    assert ember.binomial(c.float(), p.float()).tolist() == [0.0, 0.0, 7.0, 9.0, 96.0, 486.0, 5.0, 0.0]
    g = ember.Generator().manual_seed(3)
    assert ember.binomial(ember.full((6,), 50.), ember.full((6,), 0.4), generator=g).tolist() == [
        11.0, 23.0, 23.0, 17.0, 19.0, 16.0]


@pytest.mark.parametrize("n, p", [(20, 0.3), (9, 0.8), (200, 0.4), (150, 0.93), (1e6, 0.5)])
def test_binomial_matches_the_distribution(n, p):
    # Both samplers (and the flip): the mean and variance within 5 standard errors, and for the small
    # cases every probability of the pmf within 5 standard errors of its frequency.
    from math import comb, sqrt

    draws = 40_000
    g = ember.Generator().manual_seed(11)
    x = ember.binomial(ember.full((draws,), float(n), dtype=ember.float64),
                       ember.full((draws,), p, dtype=ember.float64), generator=g).numpy()
    assert np.all(x == np.floor(x)) and x.min() >= 0 and x.max() <= n
    var = n * p * (1 - p)
    assert abs(x.mean() - n * p) < 5 * sqrt(var / draws)
    assert abs(x.var() - var) < 5 * var * sqrt(2 / draws)
    if n <= 200:
        for k in range(int(n) + 1):
            pk = comb(int(n), k) * p ** k * (1 - p) ** (n - k)
            assert abs(np.mean(x == k) - pk) < 5 * sqrt(pk * (1 - pk) / draws) + 1e-4, k


def test_binomial_edges_shapes_and_dtypes():
    inf, nan = float("inf"), float("nan")
    c = ember.tensor([0., -3., 5., 5., inf, inf, nan, 4.])
    p = ember.tensor([0.5, 0.5, 0.0, 1.0, 0.3, 0.0, 0.5, nan])
    out = ember.binomial(c, p).tolist()
    assert out[:6] == [0.0, 0.0, 0.0, 5.0, inf, 0.0] and np.isnan(out[6]) and np.isnan(out[7])
    # broadcast, 0-dim, zero-size and non-contiguous inputs; the dtype is prob's
    b = ember.binomial(ember.tensor([[10.], [20.]], dtype=ember.float64), ember.full((3,), 0.5, dtype=ember.float64))
    assert b.shape == (2, 3) and b.dtype == ember.float64
    assert np.all(b.numpy()[0] <= 10)
    assert ember.binomial(ember.tensor(10.), ember.tensor(0.5)).shape == ()
    assert ember.binomial(ember.ones(0, 3), ember.ones(0, 3)).shape == (0, 3)
    strided = ember.full((4, 6), 30.0)[:, ::2]
    assert not strided.is_contiguous()
    s = ember.binomial(strided, ember.full((4, 3), 0.5)[:, :])
    assert s.shape == (4, 3) and float(s.max()) <= 30
    # Philox: the same seed gives the same values (each element reads its own stream)
    args = (ember.full((100,), 300.0), ember.full((100,), 0.37))
    first = ember.binomial(*args, generator=ember.Generator(kind="philox").manual_seed(5))
    again = ember.binomial(*args, generator=ember.Generator(kind="philox").manual_seed(5))
    assert ember.equal(first, again) and abs(float(first.mean()) - 111) < 10


def test_binomial_errors_and_gradient():
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count, got: int64"):
        ember.binomial(ember.tensor([10]), ember.tensor([0.5]))
    with pytest.raises(RuntimeError, match="expected count and prob to have the same dtype"):
        ember.binomial(ember.tensor([10.]), ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="expected a floating point dtype, but got int64"):
        ember.binomial(ember.tensor([10.]), ember.tensor([1]))
    p = ember.tensor([0.3], requires_grad=True)
    y = ember.binomial(ember.tensor([5.]), p)
    assert y.requires_grad  # as in PyTorch: the derivative exists as a node that refuses
    with pytest.raises(RuntimeError, match="binomial.*not implemented"):
        y.sum().backward()


def test_binomial_distribution_samples_with_the_op():
    ember.manual_seed(0)
    d = ember.distributions.Binomial(ember.tensor([3., 7., 40.]), ember.tensor([0.2, 0.9, 0.3]))
    s = d.sample()
    ember.manual_seed(0)
    assert ember.equal(s, ember.binomial(ember.tensor([3., 7., 40.]), ember.tensor([0.2, 0.9, 0.3])))
    ember.manual_seed(0)
    r = ember.distributions.Poisson(ember.tensor([0.5, 30.0])).sample()
    ember.manual_seed(0)
    assert ember.equal(r, ember.poisson(ember.tensor([0.5, 30.0])))


# ---- ember.linalg.ldl_factor / ldl_solve -------------------------------------------------------------


def _ldl_reconstruct(LD, pivots, hermitian):
    """P L D L^T P^T from LAPACK's lower-triangle form (sytrf's documentation): L is the product of
    P(k) L(k) over the blocks, D block diagonal with 1x1 and 2x2 blocks."""
    LD, piv = np.asarray(LD), np.asarray(pivots)
    n = LD.shape[0]
    L, D = np.eye(n, dtype=LD.dtype), np.zeros_like(LD)
    k = 0
    while k < n:
        s = 1 if piv[k] > 0 else 2
        P = np.eye(n, dtype=LD.dtype)
        r, other = (k, piv[k] - 1) if s == 1 else (k + 1, -piv[k] - 1)
        P[[r, other]] = P[[other, r]]
        M = np.eye(n, dtype=LD.dtype)
        M[k + s:, k:k + s] = LD[k + s:, k:k + s]
        L = L @ P @ M
        D[k, k] = LD[k, k]
        if s == 2:
            D[k + 1, k + 1] = LD[k + 1, k + 1]
            D[k + 1, k] = LD[k + 1, k]
            D[k, k + 1] = np.conj(LD[k + 1, k]) if hermitian else LD[k + 1, k]
        k += s
    return L @ D @ (L.conj().T if hermitian else L.T)


A5 = [[0., 3., 1., 2., -1.], [3., 0., 4., 1., 2.], [1., 4., 2., 0., 5.], [2., 1., 0., -3., 1.],
      [-1., 2., 5., 1., 1.]]


def test_ldl_factor_equals_pytorchs_factors():
    # Read off PyTorch 2.13 (LAPACK's sytrf / hetrf, lower triangle) on the same matrices.
    LD, piv = ember.linalg.ldl_factor(ember.tensor(A5, dtype=ember.float64))
    expected = [[0, 0, 0, 0, 0], [3, 0, 0, 0, 0], [4 / 3, 1 / 3, -2 / 3, 0, 0],
                [1 / 3, 2 / 3, 17 / 3, 7 / 3, 0], [2 / 3, -1 / 3, 0.20792079207920794, -0.504950495049505,
                                                   -3.709570957095709]]
    np.testing.assert_allclose(LD.numpy(), expected, rtol=1e-13, atol=1e-14)
    assert piv.dtype == ember.int32 and piv.tolist() == [-2, -2, -5, -5, 5]
    C = ember.tensor([[1, 2 + 1j, 0], [2 - 1j, 0, 1j], [0, -1j, -2]], dtype=ember.complex128)
    LDh, pivh = ember.linalg.ldl_factor(C, hermitian=True)
    np.testing.assert_allclose(LDh.numpy(), [[1, 0, 0], [2 - 1j, 0, 0], [-0.2 - 0.4j, 0.2j, -1.8]], atol=1e-14)
    assert pivh.tolist() == [-2, -2, 3]
    S = ember.tensor([[0, 1 + 2j, 3], [1 + 2j, 0, 1j], [3, 1j, 1]], dtype=ember.complex128)
    LDs, pivs = ember.linalg.ldl_factor(S)
    np.testing.assert_allclose(LDs.numpy(), [[0, 0, 0], [1 + 2j, 0, 0], [0.4 + 0.2j, 0.6 - 1.2j, -1.4 - 1.2j]],
                               atol=1e-14)
    assert pivs.tolist() == [-2, -2, 3]


@pytest.mark.parametrize("dtype, hermitian", [(ember.float32, False), (ember.float64, False),
                                              (ember.float64, True), (ember.complex64, False),
                                              (ember.complex128, False), (ember.complex128, True)])
def test_ldl_factor_and_solve_against_float64_references(dtype, hermitian):
    rng = np.random.default_rng(7)
    cplx = dtype in (ember.complex64, ember.complex128)
    M = rng.standard_normal((3, 6, 6)) + (1j * rng.standard_normal((3, 6, 6)) if cplx else 0)
    A = M + (np.conj(np.swapaxes(M, -1, -2)) if hermitian else np.swapaxes(M, -1, -2))
    A[:, 0, 0] = 0  # forces a 2x2 pivot block
    upper_noise = np.triu(rng.standard_normal((3, 6, 6)), 1)  # the upper triangle is never read
    At = ember.tensor(np.tril(A) + upper_noise, dtype=dtype)
    LD, piv, info = ember.linalg.ldl_factor_ex(At, hermitian=hermitian)
    assert LD.shape == (3, 6, 6) and piv.shape == (3, 6) and info.tolist() == [0, 0, 0]
    tol = 1e-4 if dtype in (ember.float32, ember.complex64) else 1e-11
    for b in range(3):
        np.testing.assert_allclose(_ldl_reconstruct(LD[b].numpy().astype(np.complex128 if cplx else np.float64),
                                                    piv[b].numpy(), hermitian), A[b], atol=tol * 10)
        assert np.all(np.triu(LD[b].numpy(), 1) == 0)
    # solve: batched A, broadcast B (its own batch dim), and a non-contiguous B
    B = rng.standard_normal((2, 1, 6, 4)) + (1j * rng.standard_normal((2, 1, 6, 4)) if cplx else 0)
    Bt = ember.tensor(np.swapaxes(B, -1, -2).copy(), dtype=dtype).transpose(-1, -2)
    assert not Bt.is_contiguous()
    X = ember.linalg.ldl_solve(LD, piv, Bt, hermitian=hermitian)
    assert X.shape == (2, 3, 6, 4)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(A[None], B), atol=tol * 100, rtol=tol * 100)
    # a non-contiguous A (a transposed view of the same matrices) gives the same factors
    At_nc = ember.tensor(np.swapaxes(np.tril(A) + upper_noise, -1, -2).copy(), dtype=dtype).transpose(-1, -2)
    assert not At_nc.is_contiguous()
    LD2, piv2, _ = ember.linalg.ldl_factor_ex(At_nc, hermitian=hermitian)
    assert ember.equal(LD2, LD) and ember.equal(piv2, piv)
    # pivots of any integer dtype
    assert ember.allclose(ember.linalg.ldl_solve(LD, piv.long(), Bt, hermitian=hermitian), X)


def test_ldl_empty_and_singular_inputs():
    LD, piv = ember.linalg.ldl_factor(ember.zeros(0, 3, 3))
    assert LD.shape == (0, 3, 3) and piv.shape == (0, 3)
    LD, piv = ember.linalg.ldl_factor(ember.zeros(0, 0))
    assert LD.shape == (0, 0) and piv.shape == (0,)
    assert ember.linalg.ldl_solve(LD, piv, ember.zeros(0, 2)).shape == (0, 2)
    assert ember.linalg.ldl_solve(*ember.linalg.ldl_factor(ember.eye(3)), ember.zeros(3, 0)).shape == (3, 0)
    LD, piv, info = ember.linalg.ldl_factor_ex(ember.zeros(3, 3))
    assert int(info) == 1 and LD.abs().sum().item() == 0
    with pytest.raises(ember.linalg.LinAlgError, match=r"D\[1,1\] is exactly zero"):
        ember.linalg.ldl_factor(ember.zeros(3, 3))
    with pytest.raises(ember.linalg.LinAlgError, match=r"\(Batch element 1\): D\[2,2\] is exactly zero"):
        ember.linalg.ldl_factor_ex(ember.tensor([[[1., 0.], [0., 1.]], [[1., 0.], [0., 0.]]]), check_errors=True)
    A = ember.tensor(A5, requires_grad=True)
    LD, _ = ember.linalg.ldl_factor(A)
    with pytest.raises(RuntimeError, match="not implemented"):
        LD.sum().backward()


def test_ldl_errors():
    LD, piv = ember.linalg.ldl_factor(ember.tensor(A5, dtype=ember.float64))
    B = ember.ones(5, 2, dtype=ember.float64)
    cases = [
        (lambda: ember.linalg.ldl_factor(ember.zeros(3, 4)), RuntimeError,
         "A must be batches of square matrices, but they are 3 by 4 matrices"),
        (lambda: ember.linalg.ldl_factor(ember.zeros(3, 3, dtype=ember.int64)), RuntimeError,
         "Expected a floating point or complex tensor as input. Got int64"),
        (lambda: ember.linalg.ldl_factor(ember.zeros(3)), RuntimeError, "must have at least 2 dimensions"),
        (lambda: ember.linalg.ldl_solve(LD, piv, B.float()), RuntimeError,
         "Expected LD and B to have the same dtype, but found LD of type float64 and B of type float32"),
        (lambda: ember.linalg.ldl_solve(LD, piv.double(), B), RuntimeError, "Expected pivots to be integers"),
        (lambda: ember.linalg.ldl_solve(LD, piv[:3], B), RuntimeError,
         r"Expected LD.shape\[:-1\] and pivots.shape to be the same"),
        (lambda: ember.linalg.ldl_solve(LD, piv, B[0]), RuntimeError, "Expected B to have at least 2 dimensions"),
        (lambda: ember.linalg.ldl_solve(LD, piv, ember.ones(4, 2, dtype=ember.float64)), RuntimeError,
         "each LD matrix is 5 by 5 but each B matrix is 4 by 2"),
        # pivots LAPACK would follow out of bounds
        (lambda: ember.linalg.ldl_solve(LD, piv + 10, B), IndexError, "pivots must name rows 1..n"),
        (lambda: ember.linalg.ldl_solve(LD, ember.tensor([1, 2, 0, 4, 5], dtype=ember.int32), B), IndexError,
         "but got 0"),
        (lambda: ember.linalg.ldl_solve(LD, ember.tensor([1, 2, 3, 4, -5], dtype=ember.int32), B), IndexError,
         "the next is absent"),
        (lambda: ember.linalg.ldl_solve(LD, ember.tensor([-2, 2, 3, 4, 5], dtype=ember.int32), B), IndexError,
         "pivot 0 is -2 and the next is 2"),
        (lambda: ember.linalg.ldl_solve(LD, ember.tensor([1, 2, 3, 4, 2 ** 40]), B), IndexError,
         "but got 1099511627776"),
        (lambda: ember.linalg.ldl_solve(LD, ember.tensor([1, 2, 3, 4, -2 ** 63]), B), IndexError,
         "but got -9223372036854775808"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()


def test_binomial_and_ldl_under_vmap():
    from ember.func import vmap

    c, p = ember.full((3,), 10.), ember.tensor([[0.1, 0.5, 0.9], [0.2, 0.3, 0.4]])
    with pytest.warns(UserWarning, match="no batching rule"):
        out = vmap(lambda q: ember.binomial(c, q), randomness="different")(p)
    assert out.shape == (2, 3) and float(out.max()) <= 10
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda q: ember.binomial(c, q))(p)
    A = ember.tensor(A5, dtype=ember.float64)
    with pytest.warns(UserWarning, match="no batching rule"):
        LD = vmap(lambda a: ember.linalg.ldl_factor(a)[0])(ember.stack([A, 2 * A]))
    assert ember.equal(LD[0], ember.linalg.ldl_factor(A)[0])


def test_multithreading_mode_is_per_thread_and_restored():
    import threading

    from ember.autograd import is_multithreading_enabled, set_multithreading_enabled

    assert is_multithreading_enabled()
    with set_multithreading_enabled(False):
        assert not is_multithreading_enabled()
        seen = []
        other = threading.Thread(target=lambda: seen.append(is_multithreading_enabled()))
        other.start(), other.join()
        assert seen == [True]  # thread-local, as in PyTorch
        x = ember.ones(3, requires_grad=True)
        (x * 2).sum().backward()  # a backward runs on the calling thread either way
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
    assert is_multithreading_enabled()
    set_multithreading_enabled(False)  # the function form sets it until changed
    assert not is_multithreading_enabled()
    set_multithreading_enabled(True)

    @set_multithreading_enabled(False)
    def inside():
        return is_multithreading_enabled()

    assert is_multithreading_enabled() and inside() is False and is_multithreading_enabled()
    assert set_multithreading_enabled(True).clone().mode is True
