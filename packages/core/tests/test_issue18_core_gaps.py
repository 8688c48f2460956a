"""Core gaps the domain packages hit (issue 18), each against PyTorch's behaviour: a Python-number
base for pow, the modified Bessel functions (ember.i0, ember.special), poisson sampling, median of
integer tensors, complex randn, MultiheadAttention on an empty batch, Python-2-era NumPy dtype
pickles, half-precision FFT errors, backward through many slices, Tensor.as_subclass and the
weight_norm state-dict upgrade. References are float64 NumPy or Decimal series written here."""

from __future__ import annotations

import math
import pickle
from decimal import Decimal, getcontext

import numpy as np
import pytest

import ember
import ember.special as S
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(18)


def t(a, dtype=ember.float64, requires_grad=False):
    return ember.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


# ---- 1. pow with a Python-number base ------------------------------------------------------------


def test_pow_number_base_values_and_dtypes():
    a = RNG.uniform(-2, 2, (3, 4))
    x = t(a)
    np.testing.assert_allclose(ember.pow(2.5, x).numpy(), np.power(2.5, a), rtol=1e-14)
    np.testing.assert_allclose(ember.pow(2.5, x.T).numpy(), np.power(2.5, a.T), rtol=1e-14)  # non-contiguous
    np.testing.assert_allclose((2.5 ** x).numpy(), np.power(2.5, a), rtol=1e-14)
    assert ember.pow(2.0, ember.zeros(0, 3)).shape == (0, 3)
    assert ember.pow(3.0, t(2.0)).item() == 9.0  # 0-dim
    # the number ranks lowest in promotion: int base, int tensor stays int64; float base, float32 stays
    ints = ember.tensor([0, 1, 5])
    assert ember.pow(2, ints).dtype == ember.int64 and ember.pow(2, ints).tolist() == [1, 2, 32]
    assert ember.pow(2.0, ember.ones(2, dtype=ember.float32)).dtype == ember.float32
    assert ember.pow(2.0, ints).dtype == ember.get_default_dtype()
    out = ember.empty(3, dtype=ember.float64)
    ember.pow(2.0, t([1.0, 2.0, 3.0]), out=out)
    assert out.tolist() == [2.0, 4.0, 8.0]
    np.testing.assert_allclose(ember.float_power(2, t(a)).numpy(), np.power(2.0, a), rtol=1e-14)
    assert ember.float_power(2, ember.ones(2, dtype=ember.float32)).dtype == ember.float64


def test_pow_number_base_gradient_wrt_exponent():
    e = t(RNG.uniform(-1, 1, (2, 3)), requires_grad=True)
    assert gradcheck(lambda v: ember.pow(1.7, v), (e,))
    assert gradcheck(lambda v: 1.7 ** v, (e,))
    assert gradcheck(lambda v: ember.float_power(1.7, v), (e,))
    assert gradgradcheck(lambda v: ember.pow(1.7, v), (e,))


def test_pow_of_two_numbers_is_a_type_error():
    with pytest.raises(TypeError, match="pow"):
        ember.pow(2, 3)


# ---- 2. modified Bessel functions of the first kind ----------------------------------------------


def _bessel_ref(nu: int, x: float, scaled: bool) -> float:
    """I_nu(x) (times exp(-|x|) when scaled) by its power series in 50-digit Decimal arithmetic."""
    getcontext().prec = 50
    if math.isnan(x):
        return x
    if math.isinf(x):
        return (math.copysign(0.0, x) if nu else 0.0) if scaled else (x if nu else math.inf)
    d = Decimal(x)
    q = d * d / 4
    term = (d / 2) if nu == 1 else Decimal(1)
    total, k = term, 0
    while True:
        k += 1
        term = term * q / (k * (k + nu))
        total += term
        if term == 0 or abs(term) < abs(total) * Decimal(10) ** -40:
            break
    if scaled:
        total *= (-abs(d)).exp()
    return float(total)


POINTS = [0.0, 1e-8, -1e-3, 0.5, -1.25, 3.0, -7.5, 14.0, 29.99, 30.01, -45.0, 80.0, 200.0, -400.0, 700.0]
FUNCS = [("i0", S.i0, 0, False), ("i0e", S.i0e, 0, True), ("i1", S.i1, 1, False), ("i1e", S.i1e, 1, True)]


@pytest.mark.parametrize("name,fn,nu,scaled", FUNCS)
def test_bessel_values_against_a_decimal_series(name, fn, nu, scaled):
    ref = np.array([_bessel_ref(nu, v, scaled) for v in POINTS])
    got = fn(t(POINTS)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)
    # non-contiguous, batched, zero-size, 0-dim, float32
    grid = RNG.uniform(-35, 35, (4, 5))
    ref2 = np.vectorize(lambda v: _bessel_ref(nu, v, scaled))(grid)
    np.testing.assert_allclose(fn(t(grid).T).numpy(), ref2.T, rtol=1e-13)
    np.testing.assert_allclose(fn(t(grid, dtype=ember.float32)).numpy(), ref2, rtol=2e-5)
    assert fn(ember.zeros(0, 2, dtype=ember.float64)).shape == (0, 2)
    assert fn(t(2.0)).shape == () and math.isclose(fn(t(2.0)).item(), _bessel_ref(nu, 2.0, scaled), rel_tol=1e-14)
    # ints promote to the default float dtype, as PyTorch's unary float ops do
    assert fn(ember.tensor([1, 2])).dtype == ember.get_default_dtype()


def test_bessel_special_values_and_method_forms():
    special = t([math.inf, -math.inf, math.nan])
    assert ember.i0(special).tolist()[:2] == [math.inf, math.inf] and math.isnan(ember.i0(special).tolist()[2])
    assert S.i0e(special).tolist()[:2] == [0.0, 0.0]
    assert S.i1(special).tolist()[:2] == [math.inf, -math.inf]
    assert S.i1e(special).tolist()[:2] == [0.0, -0.0]
    assert S.i0 is ember.i0
    x = t([0.25, -3.0])  # the declared ops under their aten names, as torch._C._special has them
    np.testing.assert_array_equal(ember.special_i0e(x).numpy(), S.i0e(x).numpy())
    np.testing.assert_array_equal(ember.special_i1(x).numpy(), S.i1(x).numpy())
    np.testing.assert_array_equal(ember.special_i1e(x).numpy(), S.i1e(x).numpy())
    x = t([0.5, -2.0])
    np.testing.assert_array_equal(x.i0().numpy(), ember.i0(x).numpy())
    y = x.clone()
    y.i0_()
    np.testing.assert_array_equal(y.numpy(), ember.i0(x).numpy())
    out = ember.empty(2, dtype=ember.float64)
    S.i1(x, out=out)
    np.testing.assert_array_equal(out.numpy(), S.i1(x).numpy())


@pytest.mark.parametrize("name,fn,nu,scaled", FUNCS)
def test_bessel_gradients(name, fn, nu, scaled):
    pts = [-3.1, -0.7, 0.4, 2.2, 33.0] if name == "i0e" else [-3.1, -0.7, 0.0, 0.4, 2.2, 33.0]
    x = t(pts, requires_grad=True)
    assert gradcheck(fn, (x,), check_forward_ad=True)
    assert gradgradcheck(fn, (x,))
    # the analytic derivatives, by their closed forms
    v = np.array(pts)
    i0, i1 = (np.array([_bessel_ref(n, p, False) for p in pts]) for n in (0, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        expect = {"i0": i1, "i1": np.where(v == 0, 0.5, i0 - i1 / v),
                  "i0e": (i1 - np.sign(v) * i0) * np.exp(-np.abs(v)),
                  "i1e": np.where(v == 0, 0.5, (i0 - i1 * (np.sign(v) + 1 / v)) * np.exp(-np.abs(v)))}[name]
    (g,) = ember.autograd.grad(fn(x).sum(), [x])
    np.testing.assert_allclose(g.numpy(), expect, rtol=1e-12, atol=1e-300)


# ---- 3. poisson -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_poisson_moments_dtype_and_shape(dtype):
    rates = [0.0, 0.3, 3.0, 9.99, 10.0, 27.5, 400.0]
    n = 4000
    lam = ember.tensor(np.tile(rates, (n, 1)), dtype=dtype)
    ember.manual_seed(0)
    s = ember.poisson(lam)
    assert s.dtype == dtype and s.shape == lam.shape
    a = s.numpy().astype(np.float64)
    assert (a >= 0).all() and (a == np.floor(a)).all()
    assert (a[:, 0] == 0).all()  # rate 0 gives 0
    for j, r in enumerate(rates[1:], start=1):
        mean, var = a[:, j].mean(), a[:, j].var(ddof=1)
        assert abs(mean - r) < 5 * math.sqrt(r / n), (r, mean)
        assert abs(var - r) < 6 * math.sqrt((r + 2 * r * r) / n), (r, var)


def test_poisson_is_deterministic_under_a_seed_and_a_generator():
    lam = ember.tensor([0.5, 4.0, 12.0, 150.0] * 8)
    ember.manual_seed(123)
    a = ember.poisson(lam)
    ember.manual_seed(123)
    b = ember.poisson(lam)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    np.testing.assert_array_equal(ember.poisson(lam, g1).numpy(), ember.poisson(lam, generator=g2).numpy())
    # non-contiguous and zero-size rates
    two_d = ember.tensor(np.full((3, 5), 2.0))
    assert ember.poisson(two_d.T).shape == (5, 3)
    assert ember.poisson(ember.zeros(0, 4)).shape == (0, 4)
    assert ember.poisson(ember.tensor(3.0)).shape == ()


def test_poisson_under_vmap_draws_per_row():
    rates = ember.tensor(np.full((4, 50), 6.0))
    out = ember.func.vmap(ember.poisson, randomness="different")(rates)
    assert out.shape == (4, 50)
    assert not all((out[0] == out[i]).all().item() for i in range(1, 4))


def test_poisson_bad_input():
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
        ember.poisson(ember.tensor([1.0, -0.5]))
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        ember.poisson(ember.tensor([math.nan]))
    with pytest.raises(RuntimeError, match="expected a floating point dtype, but got int64"):
        ember.poisson(ember.tensor([1, 2]))


# ---- 4. median / nanmedian / mode of integer tensors ---------------------------------------------


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.uint8, ember.int16])
def test_median_of_integers_keeps_dtype(dtype):
    a = RNG.integers(0, 100, (5, 6))
    x = ember.tensor(a, dtype=dtype)
    for fn in (ember.median, ember.nanmedian):
        for dim in (0, 1, -1):
            v, i = fn(x, dim)
            ref = np.sort(a, axis=dim).take((a.shape[dim] - 1) // 2, axis=dim)  # the lower median
            assert v.dtype == dtype
            np.testing.assert_array_equal(v.numpy(), ref)
            np.testing.assert_array_equal(np.take_along_axis(a, np.expand_dims(i.numpy(), dim), dim).squeeze(dim), ref)
        v, _ = fn(x.T, 1, keepdim=True)  # non-contiguous, keepdim
        assert v.shape == (6, 1)
        np.testing.assert_array_equal(v.numpy()[:, 0], np.sort(a.T, axis=1)[:, 2])
    assert ember.median(x).item() == np.sort(a.ravel())[(a.size - 1) // 2]
    assert ember.median(x).dtype == dtype
    v, i = ember.mode(ember.tensor([[3, 1, 1, 2]], dtype=dtype), 1)
    assert v.dtype == dtype and v.tolist() == [1] and i.tolist() == [2]


# ---- 5. complex randn -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,real", [(ember.complex64, ember.float32), (ember.complex128, ember.float64)])
def test_complex_randn_has_unit_variance_split_between_parts(dtype, real):
    n = 40000
    z = ember.randn(n, dtype=dtype)
    assert z.dtype == dtype and z.shape == (n,)
    a = z.numpy().astype(np.complex128)
    for part in (a.real, a.imag):
        assert abs(part.mean()) < 5 * math.sqrt(0.5 / n)
        assert abs(part.var() - 0.5) < 6 * math.sqrt(2 * 0.25 / n)
    assert abs(np.mean(np.abs(a) ** 2) - 1.0) < 6 * math.sqrt(1.0 / n)
    # PyTorch's stream: the real view drawn as a real normal of twice the elements, std 1/sqrt(2)
    ember.manual_seed(5)
    z = ember.randn(3, 4, dtype=dtype)
    ember.manual_seed(5)
    r = ember.randn(3, 4, 2, dtype=real)
    np.testing.assert_allclose(ember.view_as_real(z).numpy(), r.numpy() * math.sqrt(0.5), rtol=1e-6)
    like = ember.randn_like(ember.zeros(2, 3, dtype=dtype))
    assert like.dtype == dtype and like.shape == (2, 3)
    assert ember.randn(0, dtype=dtype).shape == (0,)


# ---- 6. MultiheadAttention on an empty batch -----------------------------------------------------------


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_empty_batch(batch_first):
    mha = ember.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    q = ember.zeros(0, 5, 8) if batch_first else ember.zeros(5, 0, 8)
    out, w = mha(q, q, q, need_weights=False, attn_mask=ember.zeros(0, 5, 5, dtype=ember.bool))
    assert tuple(out.shape) == tuple(q.shape) and w is None
    out, w = mha(q, q, q, need_weights=False, key_padding_mask=ember.zeros(0, 5, dtype=ember.bool))
    assert tuple(out.shape) == tuple(q.shape)
    out, w = mha(q, q, q, key_padding_mask=ember.zeros(0, 5, dtype=ember.bool))
    assert tuple(out.shape) == tuple(q.shape) and w.shape == (0, 5, 5)
    out.sum().backward()
    assert mha.in_proj_weight.grad is not None and float(mha.in_proj_weight.grad.abs().sum()) == 0.0


# ---- 7. Python-2-era NumPy dtype pickles ------------------------------------------------------------------


def _legacy_array_pickle(arr, flags: bytes) -> bytes:
    """arr pickled as NumPy does, with dtype(code, align, copy)'s two bools replaced by `flags`."""
    data = pickle.dumps(arr, protocol=2)
    assert data.count(b"\x89\x88\x87") == 1  # NEWFALSE NEWTRUE TUPLE3 after the dtype code
    return data.replace(b"\x89\x88\x87", flags + b"\x87")


def test_unpickler_accepts_int_dtype_flags_and_nothing_else():
    from ember._weights_only_unpickler import Unpickler

    arr = np.arange(12, dtype=np.uint8).reshape(3, 4)
    got = Unpickler(_legacy_array_pickle(arr, b"K\x00K\x01")).load()  # BININT1 0, BININT1 1
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, arr)
    got = Unpickler(_legacy_array_pickle(arr, b"\x89\x88")).load()
    np.testing.assert_array_equal(got, arr)
    for flags in (b"K\x02K\x01", b"K\x00G" + np.float64(1.0).byteswap().tobytes(), b"K\x00N"):
        with pytest.raises(pickle.UnpicklingError, match=r"numpy\.dtype arguments .* are not a plain dtype code"):
            Unpickler(_legacy_array_pickle(arr, flags)).load()


# ---- 8. half-precision FFTs raise PyTorch's CPU error --------------------------------------------------


def test_half_precision_transforms_raise_pytorch_message():
    for dtype, name in ((ember.float16, "Half"), (ember.bfloat16, "BFloat16")):
        x = ember.ones(16, dtype=dtype)
        for fn in (ember.fft.fft, ember.fft.rfft, ember.fft.ifft, ember.fft.fftn):
            with pytest.raises(RuntimeError, match=rf"^Unsupported dtype {name}$"):
                fn(x)
        with pytest.raises(RuntimeError, match=rf"^Unsupported dtype {name}$"):
            ember.stft(x, 8, return_complex=True)


# ---- 9. backward through many slices ---------------------------------------------------------------------


def test_gradients_through_many_slices_and_selects():
    x = ember.randn(4096, dtype=ember.float64, requires_grad=True)
    ember.stack([x[i * 16:(i + 1) * 16].sum() * (i + 1) for i in range(250)]).sum().backward()
    expect = np.zeros(4096)
    for i in range(250):
        expect[i * 16:(i + 1) * 16] = i + 1
    np.testing.assert_array_equal(x.grad.numpy(), expect)
    y = ember.randn(6, 7, dtype=ember.float64, requires_grad=True)
    (y[1:5:2, ::3].sum() * 2 + y[:, -1].sum() + y[-2].sum() * 3).backward()
    e = np.zeros((6, 7))
    e[1:5:2, ::3] += 2
    e[:, -1] += 1
    e[-2] += 3
    np.testing.assert_array_equal(y.grad.numpy(), e)
    z = ember.randn(2, 0, dtype=ember.float64, requires_grad=True)
    z[:, 0:0].sum().backward()
    assert z.grad.shape == (2, 0)
    # a non-leaf reached by several paths: its summed gradient (added in place by the engine after the
    # first sum) is what its hook sees, and is not changed afterwards
    a = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    b = a * 1.0
    seen = []
    b.register_hook(lambda g: seen.append(g))
    (b[0:2].sum() + b[1:3].sum() * 2 + b.sum() * 4 + (b * b).sum()).backward()
    expect = np.array([1 + 4 + 2, 1 + 2 + 4 + 4, 2 + 4 + 6])
    np.testing.assert_array_equal(seen[0].numpy(), expect)
    np.testing.assert_array_equal(a.grad.numpy(), expect)
    # inside vmap and forward-mode AD the slices' gradients take the batched / dual path
    xs = ember.randn(3, 8, dtype=ember.float64)
    per_row = ember.func.vmap(ember.func.grad(lambda r: r[2:6].sum() * r[0] + r[-1]))(xs)
    want = np.zeros((3, 8))
    want[:, 2:6] = xs.numpy()[:, :1]
    want[:, 0] += xs.numpy()[:, 2:6].sum(1)
    want[:, -1] += 1
    np.testing.assert_allclose(per_row.numpy(), want, rtol=1e-12)
    # a recorded backward (create_graph) still differentiates
    w = ember.randn(5, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: v[1:4:2, 1:] * v[0, 1:], (w,))
    assert gradgradcheck(lambda v: (v[1:4, ::2] ** 2, v[2] ** 3), (w,))


# ---- 10. Tensor.as_subclass ------------------------------------------------------------------------------


class _Chunk(ember.Tensor):
    def __init__(self, *args, **kwargs):  # must not run: as_subclass does not call __init__
        raise AssertionError("__init__ called")


def test_as_subclass_shares_storage_and_history():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    y = x * 2
    c = y.as_subclass(_Chunk)
    assert type(c) is _Chunk and isinstance(c, ember.Tensor)
    assert c.data_ptr() == y.data_ptr() and c.shape == (3, 4) and c.dtype == ember.float64
    assert c.requires_grad and c.grad_fn is y.grad_fn
    (c * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 6.0))
    leaf = ember.zeros(3).as_subclass(_Chunk)
    leaf.add_(1.0)
    assert leaf.tolist() == [1.0, 1.0, 1.0]
    base = ember.zeros(2)
    view = base.as_subclass(_Chunk)
    view[0] = 5.0
    assert base.tolist() == [5.0, 0.0]
    assert type(ember.tensor(1.0).as_subclass(ember.Tensor)) is ember.Tensor


def test_as_subclass_bad_input():
    with pytest.raises(TypeError, match=r"cls must be a type \(got int\)"):
        ember.zeros(1).as_subclass(3)
    with pytest.raises(TypeError, match="Creating a Tensor subclass from a class that does not inherit from Tensor"):
        ember.zeros(1).as_subclass(dict)


# ---- 11. weight_norm parametrization loads the old weight_g / weight_v keys ----------------------------


def test_weight_norm_parametrization_loads_old_keys():
    nn = ember.nn
    g = ember.rand(4, 1, dtype=ember.float32) + 0.5
    v = ember.randn(4, 3, dtype=ember.float32)
    b = ember.randn(4, dtype=ember.float32)
    expect = (g * v / (v * v).sum(1, keepdim=True).sqrt()).numpy()
    lin = nn.utils.parametrizations.weight_norm(nn.Linear(3, 4))
    result = lin.load_state_dict({"weight_g": g, "weight_v": v, "bias": b})
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_allclose(lin.weight.detach().numpy(), expect, rtol=1e-6)
    seq = nn.Sequential(nn.utils.parametrizations.weight_norm(nn.Linear(3, 4)))
    seq.load_state_dict({"0.weight_g": g, "0.weight_v": v, "0.bias": b})
    np.testing.assert_allclose(seq[0].weight.detach().numpy(), expect, rtol=1e-6)
    # the new keys still load, and a lone weight_g is not renamed (strict reports it)
    lin.load_state_dict(lin.state_dict())
    with pytest.raises(RuntimeError, match="weight_g"):
        lin.load_state_dict({"weight_g": g, "bias": b})
