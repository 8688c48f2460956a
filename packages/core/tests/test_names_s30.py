"""More of PyTorch's public surface (issue 18, item 1), composed in ember/_surface.py and
ember/nn/_functional_more.py: constants and memory formats, the top-level in-place unary
functions, Tensor in-place forms, ATen-signature functional forms (ember.conv2d, ember.kl_div,
...), Tensor methods (addr, put_, index_reduce_, renorm, sum_to_size, ...), the legacy linear
algebra (inverse, qr, svd, lu, triangular_solve, ...) and nn.functional's in-place activations,
*_with_indices pooling, multilabel_margin_loss and triplet_margin_with_distance_loss. Each is
checked against a float64 NumPy reference written here."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

RNG = np.random.default_rng(30)


def t64(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def close(got, want, **kw):
    np.testing.assert_allclose(np.asarray(got.detach().numpy() if isinstance(got, ember.Tensor) else got),
                               np.asarray(want), **{"rtol": 1e-10, "atol": 1e-12, **kw})


def noncontig(a):
    """The values of the 2-D array `a` in a non-contiguous ember tensor (a transposed view)."""
    t = t64(np.ascontiguousarray(np.asarray(a).T)).t()
    assert not t.is_contiguous()
    return t


def layouts(a):
    """(name, ember tensor) for `a` contiguous and as a transposed view; plus a 0-dim and a zero-size
    case built by the caller."""
    return [("contiguous", t64(a)), ("transposed", noncontig(a))]


# ---- constants and memory formats -----------------------------------------------------------------


def test_constants():
    assert ember.pi == math.pi and ember.e == math.e
    assert ember.inf == math.inf and math.isnan(ember.nan)
    assert ember.newaxis is None
    x = ember.arange(3.0)
    assert x[ember.newaxis].shape == (1, 3)


def test_memory_formats_contiguous_clone_like():
    a = RNG.normal(size=(3, 4))
    x = noncontig(a)
    assert repr(ember.contiguous_format) == "ember.contiguous_format"
    assert isinstance(ember.preserve_format, ember.memory_format)
    assert pickle.loads(pickle.dumps(ember.contiguous_format)) is ember.contiguous_format
    y = x.contiguous(memory_format=ember.contiguous_format)
    assert y.is_contiguous()
    close(y, a)
    c = t64(a)
    assert c.contiguous(memory_format=ember.contiguous_format).data_ptr() == c.data_ptr()  # no copy
    kept = x.clone(memory_format=ember.preserve_format)  # accepted; Ember's copies are row-major
    close(kept, a)
    rowmajor = ember.clone(x, memory_format=ember.contiguous_format)
    assert rowmajor.is_contiguous() and list(rowmajor.stride()) == [4, 1]
    close(rowmajor, a)
    fresh = c.clone(memory_format=ember.contiguous_format)
    assert fresh.data_ptr() != c.data_ptr()
    for like in (ember.empty_like, ember.zeros_like, ember.ones_like, ember.rand_like, ember.randn_like):
        assert like(x, memory_format=ember.preserve_format).shape == (3, 4)
        assert like(x, memory_format=ember.contiguous_format).is_contiguous()
    z = ember.zeros_like(x, memory_format=ember.contiguous_format, requires_grad=True)
    assert z.is_leaf and z.requires_grad
    close(ember.full_like(x, 2.0, memory_format=ember.contiguous_format), np.full((3, 4), 2.0))
    assert ember.zeros_like(x, device="cpu").shape == (3, 4)
    with pytest.raises(RuntimeError, match="Ember creates tensors on the CPU only, but got device=cuda"):
        ember.ones_like(x, device="cuda")
    g = t64(a, requires_grad=True)
    assert gradcheck(lambda t: t.t().clone(memory_format=ember.contiguous_format), (g,))


def test_memory_format_bad_input():
    x = ember.ones(2, 3)
    with pytest.raises(TypeError, match="argument 'memory_format' must be ember.memory_format, not int"):
        x.contiguous(memory_format=3)
    with pytest.raises(TypeError, match="argument 'memory_format' must be ember.memory_format, not str"):
        ember.clone(x, memory_format="channels_last")
    with pytest.raises(TypeError, match="must be ember.memory_format"):
        ember.empty_like(x, memory_format=0)


def test_empty_strided_and_new_empty_strided():
    x = ember.empty_strided((2, 3), (1, 2), dtype=ember.float64)
    assert x.shape == (2, 3) and list(x.stride()) == [1, 2] and x.dtype == ember.float64
    x.copy_(t64(np.arange(6.0).reshape(2, 3)))
    close(x, np.arange(6.0).reshape(2, 3))
    assert ember.empty_strided((0, 3), (3, 1)).numel() == 0
    assert ember.empty_strided((), ()).shape == ()
    y = ember.ones(2, dtype=ember.int32).new_empty_strided((3, 2), (1, 3))
    assert y.dtype == ember.int32 and list(y.stride()) == [1, 3]
    assert ember.empty_strided((2,), (1,), requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)"):
        ember.empty_strided((2, 2), (1,))
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        ember.empty_strided((2, 2), (-1, 1))


# ---- top-level in-place unary functions -----------------------------------------------------------

# name: (numpy reference, low, high) over a float64 input drawn in [low, high].
UNARY_INPLACE = {
    "abs_": (np.abs, -2, 2), "acos_": (np.arccos, -0.9, 0.9), "acosh_": (np.arccosh, 1.1, 3),
    "arccos_": (np.arccos, -0.9, 0.9), "arccosh_": (np.arccosh, 1.1, 3), "arcsin_": (np.arcsin, -0.9, 0.9),
    "arcsinh_": (np.arcsinh, -2, 2), "arctan_": (np.arctan, -2, 2), "arctanh_": (np.arctanh, -0.9, 0.9),
    "asin_": (np.arcsin, -0.9, 0.9), "asinh_": (np.arcsinh, -2, 2), "atan_": (np.arctan, -2, 2),
    "atanh_": (np.arctanh, -0.9, 0.9), "ceil_": (np.ceil, -3, 3), "cos_": (np.cos, -3, 3), "cosh_": (np.cosh, -2, 2),
    "deg2rad_": (np.deg2rad, -180, 180), "erf_": (lambda a: np.vectorize(math.erf)(a), -2, 2),
    "erfc_": (lambda a: np.vectorize(math.erfc)(a), -2, 2), "exp2_": (np.exp2, -2, 2), "exp_": (np.exp, -2, 2),
    "expm1_": (np.expm1, -2, 2), "fix_": (np.trunc, -3, 3), "floor_": (np.floor, -3, 3),
    "frac_": (lambda a: a - np.trunc(a), -3, 3), "i0_": (np.i0, -3, 3), "log10_": (np.log10, 0.1, 5),
    "log1p_": (np.log1p, -0.5, 3), "log2_": (np.log2, 0.1, 5), "log_": (np.log, 0.1, 5),
    "logit_": (lambda a: np.log(a / (1 - a)), 0.05, 0.95), "nan_to_num_": (np.nan_to_num, -2, 2),
    "neg_": (np.negative, -2, 2), "negative_": (np.negative, -2, 2), "rad2deg_": (np.rad2deg, -3, 3),
    "reciprocal_": (np.reciprocal, 0.5, 3), "relu_": (lambda a: np.maximum(a, 0), -2, 2),
    "round_": (np.round, -3, 3), "rsqrt_": (lambda a: 1 / np.sqrt(a), 0.2, 4),
    "sigmoid_": (lambda a: 1 / (1 + np.exp(-a)), -3, 3), "sin_": (np.sin, -3, 3),
    "sinc_": (lambda a: np.sinc(a), -2, 2), "sinh_": (np.sinh, -2, 2), "sqrt_": (np.sqrt, 0, 4),
    "square_": (np.square, -2, 2), "tan_": (np.tan, -1, 1), "tanh_": (np.tanh, -2, 2), "trunc_": (np.trunc, -3, 3),
    "conj_physical_": (np.conj, -2, 2), "detach_": (lambda a: a, -2, 2),
}


@pytest.mark.parametrize("name", sorted(UNARY_INPLACE))
def test_top_level_inplace_unary(name):
    ref, low, high = UNARY_INPLACE[name]
    fn = getattr(ember, name)
    a = RNG.uniform(low, high, (3, 4))
    for label, x in layouts(a):
        out = fn(x)
        assert out is x, label
        close(x, ref(a), err_msg=label)
    base = t64(np.zeros((3, 4)))
    view = base[:, 1]  # a strided view: the write lands in base
    v = RNG.uniform(low, high, 3)
    view.copy_(t64(v))
    fn(view)
    close(base[:, 1], ref(v))
    scalar = t64(a[0, 0])
    fn(scalar)
    close(scalar, ref(np.float64(a[0, 0])))
    empty = ember.zeros(0, 4, dtype=ember.float64)
    assert fn(empty).shape == (0, 4)


def test_top_level_inplace_with_arguments():
    a = RNG.uniform(-2, 2, (3, 4))
    x = t64(a)
    ember.clamp_(x, -1, 1)
    close(x, np.clip(a, -1, 1))
    x = t64(a)
    ember.clamp_min_(x, 0.5)
    close(x, np.maximum(a, 0.5))
    x = t64(a)
    ember.clamp_max_(x, 0.5)
    close(x, np.minimum(a, 0.5))
    x = t64(a)
    ember.clip_(x, max=0.3)
    close(x, np.minimum(a, 0.3))
    x = t64(np.array([[1.0, np.nan], [np.inf, -np.inf]]))
    ember.nan_to_num_(x, nan=7.0, posinf=5.0, neginf=-5.0)
    close(x, [[1.0, 7.0], [5.0, -5.0]])
    i = ember.tensor([12, 18, 7])
    ember.gcd_(i, ember.tensor([8, 12, 5]))
    assert i.tolist() == [4, 6, 1]
    ember.lcm_(i, ember.tensor([6]))  # broadcast
    assert i.tolist() == [12, 6, 6]
    b = RNG.uniform(0.5, 2, (4,))
    x = t64(a)
    ember.xlogy_(x, t64(b))
    close(x, a * np.log(b))
    x = t64(a)
    ember.ldexp_(x, ember.tensor([0, 1, 2, 3]))
    close(x, a * 2.0 ** np.array([0, 1, 2, 3]))
    m, v = RNG.normal(size=(3, 5)), RNG.normal(size=5)
    y = t64(a[:, 0])
    ember.addmv_(y, t64(m), t64(v), beta=0.5, alpha=2.0)
    close(y, 0.5 * a[:, 0] + 2.0 * m @ v)


def test_top_level_inplace_nn_forms():
    a = RNG.uniform(-2, 2, (3, 4))
    x = t64(a)
    assert ember.celu_(x, 0.5) is x
    close(x, np.where(a > 0, a, 0.5 * (np.exp(a / 0.5) - 1)))
    x = t64(a)
    ember.selu_(x)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    close(x, scale * np.where(a > 0, a, alpha * (np.exp(a) - 1)))
    x = t64(a)
    ember.threshold_(x, 0.5, -3.0)
    close(x, np.where(a > 0.5, a, -3.0))
    x = t64(a)
    ember.rrelu_(x, 0.1, 0.3, False)  # eval: the mean slope
    close(x, np.where(a >= 0, a, a * 0.2))
    x = t64(a)
    ember.dropout_(x, 0.5, False)
    close(x, a)
    x = t64(np.ones((200, 50)))
    ember.dropout_(x, 0.5, True)
    vals = x.numpy()
    assert set(np.unique(vals)) <= {0.0, 2.0} and 0.4 < (vals == 0).mean() < 0.6
    for name in ("alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_"):
        x = t64(a)
        getattr(ember, name)(x, 0.3, False)
        close(x, a)
    x = t64(np.ones((40, 60, 3)))
    ember.feature_dropout_(x, 0.5, True)
    vals = x.numpy()
    assert (vals == vals[:, :, :1]).all()  # whole channels
    assert set(np.unique(vals)) <= {0.0, 2.0}


def test_top_level_inplace_gradcheck():
    a = t64(RNG.uniform(0.2, 0.8, (2, 3)), requires_grad=True)
    for name in ("sin_", "exp_", "logit_", "sqrt_", "sigmoid_", "square_", "tanh_", "reciprocal_"):
        assert gradcheck(lambda t, n=name: getattr(ember, n)(t.clone()), (a,)), name
    assert gradcheck(lambda t: ember.celu_(t.clone() - 0.5, 0.7), (a,))
    assert gradcheck(lambda t: ember.selu_(t.clone() - 0.5), (a,))


def test_top_level_inplace_bad_input():
    with pytest.raises(TypeError, match=r"sin_\(\): argument 'input' \(position 1\) must be Tensor, not float"):
        ember.sin_(1.0)
    with pytest.raises(TypeError, match=r"celu_\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        ember.celu_([1.0])
    with pytest.raises(TypeError, match="takes at most 2 positional arguments but 3 were given"):
        ember.celu_(ember.ones(2), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        ember.sin_(ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        ember.feature_dropout(ember.ones(3), 0.5, True)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        ember.feature_dropout(ember.ones(3, 2), 1.5, True)


# ---- Tensor in-place forms ------------------------------------------------------------------------


def test_tensor_inplace_forms_values():
    a = RNG.uniform(0.1, 0.9, (3, 4))
    for label, x in layouts(a):
        assert x.logit_(0.2) is x
        close(x, np.log(np.clip(a, 0.2, 0.8) / (1 - np.clip(a, 0.2, 0.8))), err_msg=label)
    b = RNG.normal(size=(3, 4))
    for label, x in layouts(b):
        x.tril_(1)
        close(x, np.tril(b, 1), err_msg=label)
    for label, x in layouts(b):
        x.triu_(-1)
        close(x, np.triu(b, -1), err_msg=label)
    x = t64(b)
    x.sgn_()
    close(x, np.sign(b))
    z = ember.tensor(np.array([3 + 4j, 0j, -1j]))
    z.sgn_()
    close(z, [0.6 + 0.8j, 0, -1j])
    z = ember.tensor(np.array([1 + 2j, -3j]))
    z.conj_physical_()
    close(z, [1 - 2j, 3j])
    r = t64(b)
    assert r.conj_physical_() is r
    close(r, b)
    h = t64(np.array([-1.0, 0.0, 2.0]))
    h.heaviside_(t64([0.5]))
    close(h, [0.0, 0.5, 1.0])
    x = t64(b)
    end = RNG.normal(size=(4,))
    x.lerp_(t64(end), 0.25)
    close(x, b + 0.25 * (end - b))
    x = t64(b)
    x.lerp_(t64(end), t64(np.full((3, 1), 0.5)))
    close(x, b + 0.5 * (end - b))
    n = t64(np.array([np.nan, np.inf, -np.inf, 1.0]))
    n.nan_to_num_()
    fmax = np.finfo(np.float64).max
    close(n, [0.0, fmax, -fmax, 1.0])
    k = ember.tensor([1, 2])
    k.nan_to_num_()
    assert k.tolist() == [1, 2]
    s = t64(2.5)
    s.logit_(0.1)  # 0-dim: clamped to 0.9 first
    close(s, math.log(0.9 / 0.1))
    e0 = ember.zeros(0, 3, dtype=ember.float64)
    assert e0.tril_().shape == (0, 3) and e0.sgn_().shape == (0, 3)


def test_tensor_inplace_forms_gradcheck():
    a = t64(RNG.uniform(0.2, 0.8, (3, 3)), requires_grad=True)
    end = t64(RNG.normal(size=(3, 3)), requires_grad=True)
    assert gradcheck(lambda t: t.clone().logit_(), (a,))
    assert gradcheck(lambda t: t.clone().tril_(), (a,))
    assert gradcheck(lambda t: t.clone().triu_(1), (a,))
    assert gradcheck(lambda t, u: t.clone().lerp_(u, 0.3), (a, end))
    assert gradcheck(lambda t: t.clone().nan_to_num_(), (a,))


def test_tensor_inplace_forms_bad_input():
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        ember.ones(3).tril_()
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2 dimensions"):
        ember.ones(3).triu_()
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        ember.ones(3, dtype=ember.int64).logit_()
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        ember.ones(3).lerp_(ember.ones(2, 3), 0.5)


# ---- ATen-signature functional forms --------------------------------------------------------------


def test_functional_forms_match_nn_functional():
    x = t64(RNG.normal(size=(2, 3, 8)))
    w = t64(RNG.normal(size=(4, 3, 3)))
    close(ember.conv1d(x, w, None, 1, 1), F.conv1d(x, w, None, 1, 1))
    x2 = t64(RNG.normal(size=(1, 2, 5, 5)))
    w2 = t64(RNG.normal(size=(3, 2, 2, 2)))
    close(ember.conv2d(x2, w2, stride=2), F.conv2d(x2, w2, stride=2))
    close(ember.conv_transpose2d(x2, w2.transpose(0, 1)), F.conv_transpose2d(x2, w2.transpose(0, 1)))
    close(ember.max_pool1d(x, 2), F.max_pool1d(x, 2))
    close(ember.max_pool2d(x2, [2, 2], []), F.max_pool2d(x2, 2))
    out, idx = ember.max_pool1d_with_indices(x, 3, [1])
    ref_out, ref_idx = F.max_pool1d(x, 3, 1, return_indices=True)
    close(out, ref_out)
    assert idx.tolist() == ref_idx.tolist()
    close(ember.avg_pool1d(x, 2), F.avg_pool1d(x, 2))
    close(ember.adaptive_avg_pool1d(x, 3), F.adaptive_avg_pool1d(x, 3))
    out, idx = ember.adaptive_max_pool1d(x, 3)
    close(out, F.adaptive_max_pool1d(x, 3))
    gamma, beta = t64(RNG.normal(size=8)), t64(RNG.normal(size=8))
    close(ember.layer_norm(x, [8], gamma, beta, 1e-5, True), F.layer_norm(x, [8], gamma, beta))
    close(ember.group_norm(x, 3), F.group_norm(x, 3))
    close(ember.rms_norm(x, (8,), gamma), F.rms_norm(x, [8], gamma))
    ps = t64(RNG.normal(size=(1, 4, 2, 2)))
    close(ember.pixel_shuffle(ps, 2), F.pixel_shuffle(ps, 2))
    close(ember.pixel_unshuffle(ps, 2), F.pixel_unshuffle(ps, 2))
    close(ember.channel_shuffle(ps, 2), F.channel_shuffle(ps, 2))
    wp = t64([0.25])
    close(ember.prelu(x, wp), np.where(x.numpy() > 0, x.numpy(), 0.25 * x.numpy()))
    close(ember.hardshrink(x, 0.3), F.hardshrink(x, 0.3))
    close(x.hardshrink(), F.hardshrink(x))
    close(ember.constant_pad_nd(x, [1, 2], 9.0), F.pad(x, [1, 2], value=9.0))
    close(ember.dropout(x, 0.5, False), x)


def test_batch_and_instance_norm_aten_argument_order():
    a = RNG.normal(size=(4, 3, 5))
    w, b = RNG.normal(size=3), RNG.normal(size=3)
    mean = a.mean(axis=(0, 2), keepdims=True)
    var = a.var(axis=(0, 2), keepdims=True)
    want = (a - mean) / np.sqrt(var + 1e-5) * w[:, None] + b[:, None]
    rm, rv = t64(np.zeros(3)), t64(np.ones(3))
    got = ember.batch_norm(t64(a), t64(w), t64(b), rm, rv, True, 0.1, 1e-5, False)
    close(got, want, rtol=1e-9)
    close(rm, 0.1 * a.mean(axis=(0, 2)))
    eval_out = ember.batch_norm(t64(a), None, None, t64(np.zeros(3)), t64(np.full(3, 4.0)), False, 0.1, 0.0, False)
    close(eval_out, a / 2)
    mean_i = a.mean(axis=2, keepdims=True)
    var_i = a.var(axis=2, keepdims=True)
    got = ember.instance_norm(t64(a), t64(w), t64(b), None, None, True, 0.1, 1e-5, False)
    close(got, (a - mean_i) / np.sqrt(var_i + 1e-5) * w[:, None] + b[:, None], rtol=1e-9)


def test_losses_with_integer_reduction():
    x = RNG.normal(size=(3, 4))
    target = RNG.uniform(0.1, 1, (3, 4))
    pointwise = target * (np.log(target) - x)
    close(ember.kl_div(t64(x), t64(target), 0), pointwise)
    close(ember.kl_div(t64(x), t64(target)), pointwise.mean())
    close(ember.kl_div(t64(x), t64(target), 2), pointwise.sum())
    close(ember.kl_div(t64(x), t64(np.log(target)), 2, log_target=True), pointwise.sum())
    y = (RNG.uniform(size=(3, 4)) > 0.5).astype(np.float64)
    bce = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))
    close(ember.binary_cross_entropy_with_logits(t64(x), t64(y)), bce.mean())
    close(ember.binary_cross_entropy_with_logits(t64(x), t64(y), None, None, 0), bce)
    x1, x2 = RNG.normal(size=5), RNG.normal(size=5)
    sign = np.array([1.0, -1, 1, -1, 1])
    close(ember.margin_ranking_loss(t64(x1), t64(x2), t64(sign), 0.1, 2),
          np.maximum(0, -sign * (x1 - x2) + 0.1).sum())
    close(ember.hinge_embedding_loss(t64(x1), t64(sign), 1.0, 0),
          np.where(sign == 1, x1, np.maximum(0, 1 - x1)))
    a, p, n = (RNG.normal(size=(3, 4)) for _ in range(3))

    def dist(u, v):
        return np.linalg.norm(u - v + 1e-6, axis=-1)

    close(ember.triplet_margin_loss(t64(a), t64(p), t64(n), 1.0, 2.0, 1e-6, False, 0),
          np.maximum(dist(a, p) - dist(a, n) + 1.0, 0), rtol=1e-9)
    u1, u2 = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    cos = (u1 * u2).sum(1) / np.sqrt((u1 ** 2).sum(1) * (u2 ** 2).sum(1))
    close(ember.cosine_embedding_loss(t64(u1), t64(u2), t64([1.0, -1.0, 1.0]), 0.0, 0),
          np.where([True, False, True], 1 - cos, np.maximum(cos, 0)), rtol=1e-9)
    rate = RNG.uniform(0.5, 2, 5)
    k = np.array([0.0, 1, 2, 3, 1])
    close(ember.poisson_nll_loss(t64(np.log(rate)), t64(k), True, False, 1e-8, 2), (rate - k * np.log(rate)).sum())
    assert ember.kl_div(ember.zeros(0, dtype=ember.float64), ember.zeros(0, dtype=ember.float64), 2).item() == 0.0
    xg = t64(x, requires_grad=True)
    assert gradcheck(lambda t: ember.kl_div(t, t64(target), 1), (xg,))
    assert gradcheck(lambda t: ember.binary_cross_entropy_with_logits(t, t64(y), None, None, 2), (xg,))


def test_functional_forms_bad_input():
    x = ember.ones(2, 3)
    with pytest.raises(ValueError, match="5 is not a valid value for reduction"):
        ember.kl_div(x, x, 5)
    with pytest.raises(ValueError, match="mean is not a valid value for reduction"):
        ember.binary_cross_entropy_with_logits(x, x, None, None, "mean")
    with pytest.raises(NotImplementedError, match="generator= is not supported"):
        ember.rrelu(x, generator=ember.Generator())


# ---- Tensor methods -------------------------------------------------------------------------------


def test_addr():
    m, v1, v2 = RNG.normal(size=(3, 4)), RNG.normal(size=3), RNG.normal(size=4)
    close(ember.addr(t64(m), t64(v1), t64(v2)), m + np.outer(v1, v2))
    close(t64(m).addr(t64(v1), t64(v2), beta=0.5, alpha=2), 0.5 * m + 2 * np.outer(v1, v2))
    close(ember.addr(noncontig(m.T).t(), t64(v1), t64(v2)), m + np.outer(v1, v2))
    close(ember.addr(t64(v2), t64(v1), t64(v2)), v2 + np.outer(v1, v2))  # broadcast input
    nan = t64(np.full((3, 4), np.nan))
    close(ember.addr(nan, t64(v1), t64(v2), beta=0), np.outer(v1, v2))  # beta=0 ignores NaN
    assert ember.addr(ember.zeros(0, 4), ember.zeros(0), ember.zeros(4)).shape == (0, 4)
    b = ember.addr(ember.tensor([[False, True]]), ember.tensor([True, False]), ember.tensor([True, False]))
    assert b.tolist() == [[True, True], [False, True]]
    x = t64(m)
    assert x.addr_(t64(v1), t64(v2), alpha=-1) is x
    close(x, m - np.outer(v1, v2))
    out = ember.empty(3, 4, dtype=ember.float64)
    assert ember.addr(t64(m), t64(v1), t64(v2), out=out) is out
    close(out, m + np.outer(v1, v2))
    args = tuple(t64(a, requires_grad=True) for a in (m, v1, v2))
    assert gradcheck(lambda a, b, c: ember.addr(a, b, c, beta=0.3, alpha=1.7), args)
    with pytest.raises(RuntimeError, match="addr: Expected 1-D argument vec1, but got 2-D"):
        ember.addr(t64(m), t64(v1[:, None]), t64(v2))
    with pytest.raises(RuntimeError, match="addr: Expected 1-D argument vec2, but got 0-D"):
        ember.addr(t64(m), t64(v1), t64(1.0))
    with pytest.raises(RuntimeError, match="expand"):
        ember.addr(ember.zeros(2, 3), ember.ones(2), ember.ones(4))


def test_small_methods():
    a = RNG.normal(size=(3, 4))
    x = noncontig(a)
    close(x.ravel(), a.ravel())
    close(ember.ravel(t64(a)), a.ravel())
    assert ember.ravel(t64(2.0)).shape == (1,)
    assert x.nelement() == 12 and ember.zeros(0, 3).nelement() == 0
    assert ember.positive(x) is x and x.positive() is x
    assert [ember.ones(1, dtype=d).is_signed() for d in (ember.float32, ember.int8, ember.uint8, ember.bool)] == [
        True, True, False, False]
    assert x.get_device() == -1
    assert x.is_same_size(t64(a)) and not x.is_same_size(t64(a.T))
    close(t64(a).inner(t64(a[0])), a @ a[0])
    close(t64(a[:2, :2]).kron(t64(np.eye(2))), np.kron(a[:2, :2], np.eye(2)))
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not supported."):
        ember.positive(ember.ones(2, dtype=ember.bool))
    with pytest.raises(TypeError, match="must be Tensor"):
        x.is_same_size([1, 2])


def test_isposinf_isneginf_isreal():
    vals = np.array([[1.0, np.inf, -np.inf], [np.nan, -0.0, np.inf]])
    for label, x in layouts(vals):
        assert ember.isposinf(x).tolist() == np.isposinf(vals).tolist(), label
        assert x.isneginf().tolist() == np.isneginf(vals).tolist(), label
        assert x.isreal().tolist() == np.ones((2, 3), bool).tolist()
    assert ember.isposinf(ember.tensor([1, 2])).tolist() == [False, False]
    assert ember.isposinf(t64(np.inf)).item() is True
    assert ember.isneginf(ember.zeros(0)).shape == (0,)
    z = ember.tensor(np.array([1 + 0j, 2j, -0.0j]))
    assert ember.isreal(z).tolist() == [True, False, True]
    out = ember.empty(3, dtype=ember.bool)
    assert ember.isposinf(t64([np.inf, 0, -np.inf]), out=out) is out and out.tolist() == [True, False, False]
    with pytest.raises(RuntimeError, match="isposinf does not support complex inputs."):
        ember.isposinf(z)
    with pytest.raises(RuntimeError, match="isneginf does not support complex inputs."):
        z.isneginf()


def test_ldexp():
    a, k = RNG.normal(size=(3, 4)), RNG.integers(-3, 4, (4,))
    close(ember.ldexp(t64(a), ember.tensor(k)), np.ldexp(a, k))
    close(noncontig(a).ldexp(ember.tensor(k)), np.ldexp(a, k))
    got = ember.ldexp(ember.tensor([1, 2]), ember.tensor([1, 2]))
    assert got.dtype == ember.float32 and got.tolist() == [2.0, 8.0]
    close(ember.ldexp(t64(1.5), ember.tensor(3)), 12.0)
    assert ember.ldexp(ember.zeros(0), ember.tensor(1)).shape == (0,)
    g = t64(a, requires_grad=True)
    assert gradcheck(lambda t: ember.ldexp(t, t64(k)), (g,))


def test_renorm():
    a = RNG.normal(size=(3, 4, 2)) * 3

    def ref(x, p, dim, maxnorm):
        axes = tuple(d for d in range(x.ndim) if d != dim % x.ndim)
        norm = np.sum(np.abs(x) ** p, axis=axes, keepdims=True) ** (1 / p)
        return x * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)

    for p, dim, maxnorm in ((2, 0, 4.0), (1, 1, 3.0), (3, -1, 5.0), (2, 2, 100.0)):
        close(ember.renorm(t64(a), p, dim, maxnorm), ref(a, p, dim, maxnorm))
    m = RNG.normal(size=(3, 4)) * 3
    close(noncontig(m).renorm(2, 1, 2.0), ref(m, 2, 1, 2.0))
    assert ember.renorm(ember.zeros(0, 3, dtype=ember.float64), 2, 0, 1.0).shape == (0, 3)
    x = t64(m)
    assert x.renorm_(2, 0, 1.0) is x
    close(x, ref(m, 2, 0, 1.0))
    g = t64(m, requires_grad=True)
    assert gradcheck(lambda t: ember.renorm(t, 2, 0, 2.0), (g,))
    with pytest.raises(RuntimeError, match="renorm: expected maxnorm to be >= 0 but got -1"):
        ember.renorm(t64(m), 2, 0, -1)
    with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
        ember.renorm(t64(m), 0, 0, 1)
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        ember.renorm(ember.ones(2, 3, dtype=ember.int64), 2, 0, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.renorm(t64(m), 2, 2, 1)
    with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions, got 1 dimensions"):
        ember.renorm(t64([3.0, 1.0]), 2, 0, 1.0)


def test_sum_to_size():
    a = RNG.normal(size=(2, 3, 4))
    close(t64(a).sum_to_size(3, 1), a.sum(axis=(0, 2)).reshape(3, 1))
    close(t64(a).sum_to_size((1, 3, 4)), a.sum(axis=0, keepdims=True))
    close(t64(a).sum_to_size([4]), a.sum(axis=(0, 1)))
    close(t64(a).sum_to_size(()), a.sum())
    x = t64(a)
    assert x.sum_to_size(2, 3, 4) is x
    close(ember.zeros(0, 3).sum_to_size(1, 3), np.zeros((1, 3)))
    g = t64(a, requires_grad=True)
    assert gradcheck(lambda t: t.sum_to_size(3, 1), (g,))
    with pytest.raises(RuntimeError, match=r"size \{\[3, 3\]\} is not expandable to size \{\[2, 3\]\}."):
        ember.ones(2, 3).sum_to_size(3, 3)
    with pytest.raises(RuntimeError, match=r"size \{\[2, 2, 3\]\} is not expandable to size \{\[2, 3\]\}."):
        ember.ones(2, 3).sum_to_size(2, 2, 3)


def test_where_method():
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4,))
    cond = a > 0
    close(t64(a).where(ember.tensor(cond), t64(b)), np.where(cond, a, b))
    close(noncontig(a).where(ember.tensor(cond), 0.0), np.where(cond, a, 0.0))


def test_put():
    a = RNG.normal(size=(3, 4))
    for label, x in layouts(a):
        src = RNG.normal(size=3)
        idx = np.array([0, 5, -1])
        assert x.put_(ember.tensor(idx), t64(src)) is x
        want = a.copy().ravel()
        want[idx] = src
        close(x, want.reshape(3, 4), err_msg=label)
    x = t64(a)
    src = np.array([1.0, 2.0, 3.0])
    x.put_(ember.tensor([1, 1, 7]), t64(src), accumulate=True)
    want = a.copy().ravel()
    np.add.at(want, [1, 1, 7], src)
    close(x, want.reshape(3, 4))
    got = ember.put(t64(a), ember.tensor([[2], [3]]), t64([[9.0], [8.0]]))
    want = a.copy().ravel()
    want[[2, 3]] = [9.0, 8.0]
    close(got, want.reshape(3, 4))
    s = t64(1.0)
    s.put_(ember.tensor([0]), t64([5.0]))
    close(s, 5.0)
    assert t64(a).put_(ember.tensor([], dtype=ember.int64), t64([])).shape == (3, 4)
    base = t64(a, requires_grad=True)
    vals = t64(RNG.normal(size=2), requires_grad=True)
    assert gradcheck(lambda t, v: t.put(ember.tensor([0, 6]), v), (base, vals))
    assert gradcheck(lambda t, v: t.put(ember.tensor([0, 0]), v, accumulate=True), (base, vals))
    with pytest.raises(IndexError, match="out of range: tried to access index 12 on a tensor of 12 elements."):
        t64(a).put_(ember.tensor([12]), t64([1.0]))
    with pytest.raises(IndexError, match="out of range: tried to access index -13 on a tensor of 12 elements."):
        t64(a).put_(ember.tensor([-13]), t64([1.0]))
    with pytest.raises(IndexError, match="Expected source and index to have the same number of elements, but got "
                                         r"source.numel\(\) = 1, index.numel\(\) = 2"):
        t64(a).put_(ember.tensor([1, 2]), t64([1.0]))
    with pytest.raises(RuntimeError, match=r"put_\(\): Expected a long tensor for index, but got Int"):
        t64(a).put_(ember.tensor([1], dtype=ember.int32), t64([1.0]))
    with pytest.raises(RuntimeError, match="self and source expected to have the same dtype, but got self.dtype = "
                                           "Double and source.dtype = Float"):
        t64(a).put_(ember.tensor([1]), ember.tensor([1.0]))


def _index_reduce_ref(base, dim, index, source, reduce, include_self):
    out = np.moveaxis(base.copy(), dim, 0)
    src = np.moveaxis(source, dim, 0)
    ops = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum, "mean": np.add}
    counts = np.ones(out.shape[0]) if include_self else np.zeros(out.shape[0])
    touched = set()
    for i, j in enumerate(index):
        if not include_self and j not in touched:
            out[j] = src[i]
            counts[j] = 1
        else:
            out[j] = ops[reduce](out[j], src[i])
            counts[j] += 1
        touched.add(j)
    if reduce == "mean":
        for j in touched:
            out[j] = out[j] / counts[j]
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    base = RNG.normal(size=(4, 3))
    index = np.array([0, 2, 0, 3, 2])
    source = RNG.normal(size=(4, 5))
    for label, x in layouts(base):
        src = RNG.normal(size=(5, 3))
        want = _index_reduce_ref(base, 0, index, src, reduce, include_self)
        assert x.index_reduce_(0, ember.tensor(index), t64(src), reduce, include_self=include_self) is x
        close(x, want, err_msg=label)
    want = _index_reduce_ref(base, 1, np.array([2, 2, 0]), source[:, :3], reduce, include_self)
    close(ember.index_reduce(t64(base), -1, ember.tensor([2, 2, 0], dtype=ember.int32), t64(source[:, :3]), reduce,
                             include_self=include_self), want)
    assert ember.index_reduce(t64(base), 0, ember.tensor([], dtype=ember.int64), ember.zeros(0, 3, dtype=ember.float64),
                              reduce).shape == (4, 3)
    if reduce in ("prod", "mean"):
        b = t64(base, requires_grad=True)
        s = t64(RNG.uniform(0.5, 2, (3, 3)), requires_grad=True)
        assert gradcheck(lambda t, u: t.index_reduce(0, ember.tensor([0, 2, 0]), u, reduce,
                                                     include_self=include_self), (b, s))


def test_index_reduce_bad_input():
    x = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin but got sum."):
        x.index_reduce_(0, ember.tensor([1]), ember.ones(1, 3), "sum")
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to source.size\(dim\): \(1\), "
                                           "for dim: 0"):
        x.index_reduce_(0, ember.tensor([1, 0]), ember.ones(1, 3), "prod")
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index but got: Float"):
        x.index_reduce_(0, ember.tensor([1.0]), ember.ones(1, 3), "prod")
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_reduce_(0, ember.tensor([5]), ember.ones(1, 3), "prod")
    with pytest.raises(RuntimeError, match="must have the same scalar type"):
        x.index_reduce_(0, ember.tensor([1]), ember.ones(1, 3, dtype=ember.float64), "prod")


def test_mvlgamma():
    a = RNG.uniform(2, 5, (3, 4))
    lg = np.vectorize(math.lgamma)
    for p in (1, 2, 4):
        want = p * (p - 1) / 4 * math.log(math.pi) + sum(lg(a - i / 2) for i in range(p))
        for label, x in layouts(a):
            close(ember.mvlgamma(x, p), want, err_msg=label, rtol=1e-9)
    x = t64(a)
    assert x.mvlgamma_(3) is x
    assert ember.mvlgamma(ember.zeros(0, dtype=ember.float64), 2).shape == (0,)
    assert gradcheck(lambda t: ember.mvlgamma(t, 3), (t64(a, requires_grad=True),))
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        ember.mvlgamma(t64(a), 0)
    with pytest.raises(RuntimeError, match=r"All elements must be greater than \(p-1\)/2"):
        ember.mvlgamma(t64([1.0]), 3)


# ---- legacy linear algebra ------------------------------------------------------------------------


def spd(n, batch=()):
    m = RNG.normal(size=(*batch, n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def test_inverse_pinverse():
    a = spd(3)
    close(ember.inverse(t64(a)), np.linalg.inv(a), rtol=1e-8)
    close(noncontig(a).inverse(), np.linalg.inv(a), rtol=1e-8)
    r = RNG.normal(size=(4, 2))
    close(ember.pinverse(t64(r)), np.linalg.pinv(r), rtol=1e-8, atol=1e-10)
    close(t64(r).pinverse(rcond=0.5), np.linalg.pinv(r, rcond=0.5), rtol=1e-8, atol=1e-10)
    assert gradcheck(ember.inverse, (t64(a, requires_grad=True),))


def test_qr_svd():
    a = RNG.normal(size=(4, 3))
    q, r = ember.qr(t64(a))
    assert q.shape == (4, 3) and r.shape == (3, 3)
    close(q @ r, a, rtol=1e-9, atol=1e-12)
    q, r = t64(a).qr(some=False)
    assert q.shape == (4, 4) and r.shape == (4, 3)
    close(q @ r, a, rtol=1e-9, atol=1e-12)
    u, s, v = ember.svd(t64(a))
    assert u.shape == (4, 3) and v.shape == (3, 3)
    close(s, np.linalg.svd(a, compute_uv=False), rtol=1e-9)
    close(u @ ember.diag(s) @ v.t(), a, rtol=1e-9, atol=1e-12)  # V, not V^H
    u, s, v = t64(a).svd(some=False)
    assert u.shape == (4, 4) and v.shape == (3, 3)
    u, s, v = ember.svd(t64(np.stack([a, 2 * a])), compute_uv=False)
    assert u.shape == (2, 4, 4) and v.shape == (2, 3, 3)
    assert not u.numpy().any() and not v.numpy().any()
    close(s[1], 2 * np.linalg.svd(a, compute_uv=False), rtol=1e-9)
    result = ember.svd(t64(a))
    assert result.S is result[1]


def test_cholesky_family():
    a = spd(3)
    L = np.linalg.cholesky(a)
    close(ember.cholesky(t64(a)), L, rtol=1e-9)
    close(t64(a).cholesky(upper=True), L.T, rtol=1e-9)
    b = RNG.normal(size=(3, 2))
    close(ember.cholesky_solve(t64(b), t64(L)), np.linalg.solve(a, b), rtol=1e-8)
    close(t64(b).cholesky_solve(t64(L.T), upper=True), np.linalg.solve(a, b), rtol=1e-8)
    close(ember.cholesky_inverse(t64(L)), np.linalg.inv(a), rtol=1e-8)
    close(t64(L.T).cholesky_inverse(True), np.linalg.inv(a), rtol=1e-8)
    batch = spd(2, (3,))
    close(ember.cholesky_inverse(t64(np.linalg.cholesky(batch))), np.linalg.inv(batch), rtol=1e-8)
    Lg = t64(L, requires_grad=True)
    assert gradcheck(lambda m, rhs: ember.cholesky_solve(rhs, m.tril()), (Lg, t64(b, requires_grad=True)))
    with pytest.raises(RuntimeError, match="cholesky_inverse: The input tensor A must have at least 2 dimensions."):
        ember.cholesky_inverse(t64([1.0]))


def test_lu_and_triangular_solve():
    a = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
    lu, piv = ember.lu(t64(a))
    assert piv.dtype == ember.int32
    lu, piv, info = t64(a).lu(get_infos=True)
    assert info.item() == 0
    b = RNG.normal(size=(3, 2))
    close(ember.lu_solve(t64(b), lu, piv), np.linalg.solve(a, b), rtol=1e-8)
    close(t64(b).lu_solve(lu, piv), np.linalg.solve(a, b), rtol=1e-8)
    with pytest.raises(RuntimeError):
        ember.lu(ember.zeros(2, 2, dtype=ember.float64))
    assert ember.lu(ember.zeros(2, 2, dtype=ember.float64), get_infos=True)[2].item() > 0
    up = np.triu(a)
    x, coeff = ember.triangular_solve(t64(b), t64(up))
    close(x, np.linalg.solve(up, b), rtol=1e-9)
    close(coeff, up)
    x, _ = t64(b).triangular_solve(t64(up), transpose=True)
    close(x, np.linalg.solve(up.T, b), rtol=1e-9)
    lo = np.tril(a)
    np.fill_diagonal(lo, 1.0)
    res = ember.triangular_solve(t64(b), t64(lo), upper=False, unitriangular=True)
    close(res.solution, np.linalg.solve(lo, b), rtol=1e-9)
    ug = t64(up, requires_grad=True)
    assert gradcheck(lambda m, rhs: ember.triangular_solve(rhs, m.triu())[0], (ug, t64(b, requires_grad=True)))
    with pytest.raises(RuntimeError, match="Expected b to have at least 2 dimensions, but it has 1 dimensions"):
        ember.triangular_solve(t64([1.0]), t64(up))


# ---- nn.functional additions ----------------------------------------------------------------------


def test_functional_inplace_activations():
    a = RNG.normal(size=(3, 4))
    cases = {
        "relu_": ((), np.maximum(a, 0)), "elu_": ((0.5,), np.where(a > 0, a, 0.5 * (np.exp(a) - 1))),
        "celu_": ((2.0,), np.where(a > 0, a, 2.0 * (np.exp(a / 2.0) - 1))),
        "hardtanh_": ((-0.5, 0.5), np.clip(a, -0.5, 0.5)),
        "leaky_relu_": ((0.2,), np.where(a > 0, a, 0.2 * a)),
        "threshold_": ((0.1, 9.0), np.where(a > 0.1, a, 9.0)),
        "rrelu_": ((0.1, 0.3), np.where(a >= 0, a, 0.2 * a)),
    }
    for name, (args, want) in cases.items():
        for label, x in layouts(a):
            assert getattr(F, name)(x, *args) is x
            close(x, want, err_msg=f"{name} {label}")
    x = t64(a)
    F.selu_(x)
    close(x, 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * (np.exp(a) - 1)))
    assert F.relu_(ember.zeros(0, 2)).shape == (0, 2)
    s = t64(-1.0)
    F.relu_(s)
    close(s, 0.0)
    assert gradcheck(lambda t: F.elu_(t.clone(), 0.7), (t64(a, requires_grad=True),))
    assert gradcheck(lambda t: F.leaky_relu_(t * 1.0, 0.1), (t64(a, requires_grad=True),))


def test_functional_with_indices():
    x = t64(RNG.normal(size=(2, 3, 6, 6)))
    for n in (1, 2, 3):
        inp = x.reshape(2, 3, 36) if n == 1 else (x if n == 2 else x.unsqueeze(0))
        out, idx = getattr(F, f"max_pool{n}d_with_indices")(inp, 2)
        ref, ref_idx = getattr(F, f"max_pool{n}d")(inp, 2, return_indices=True)
        close(out, ref)
        assert idx.tolist() == ref_idx.tolist()
        out, idx = getattr(F, f"adaptive_max_pool{n}d_with_indices")(inp, 2)
        ref, ref_idx = getattr(F, f"adaptive_max_pool{n}d")(inp, 2, return_indices=True)
        close(out, ref)
        assert idx.tolist() == ref_idx.tolist()


def _multilabel_ref(x, y):
    x, y = np.atleast_2d(x), np.atleast_2d(y)
    losses = []
    for row, targets in zip(x, y, strict=True):
        js = []
        for t in targets:
            if t == -1:
                break
            js.append(t)
        total = 0.0
        for j in js:
            for i in range(len(row)):
                if i not in js:
                    total += max(0.0, 1 - (row[j] - row[i]))
        losses.append(total / len(row))
    return np.array(losses)


def test_multilabel_margin_loss():
    x = RNG.normal(size=(4, 5))
    y = np.array([[3, 0, -1, 1, 2], [1, 1, 4, -1, 0], [-1, 2, 3, 4, 0], [0, 1, 2, 3, 4]])
    want = _multilabel_ref(x, y)
    close(F.multilabel_margin_loss(t64(x), ember.tensor(y), reduction="none"), want)
    close(F.multilabel_margin_loss(t64(x), ember.tensor(y)), want.mean())
    close(F.multilabel_margin_loss(noncontig(x.T).t(), ember.tensor(y), reduction="sum"), want.sum())
    close(F.multilabel_margin_loss(t64(x[0]), ember.tensor(y[0]), reduction="none"), want[0])
    close(F.multilabel_margin_loss(t64([0.1, 0.2, 0.4, 0.8]), ember.tensor([3, 0, -1, 1])), 0.85)
    close(F.multilabel_margin_loss(ember.zeros(0, 5, dtype=ember.float64), ember.zeros(0, 5, dtype=ember.int64),
                                   reduction="sum"), 0.0)
    module = ember.nn.MultiLabelMarginLoss(reduction="sum")
    close(module(t64(x), ember.tensor(y)), want.sum())
    assert gradcheck(lambda t: F.multilabel_margin_loss(t, ember.tensor(y)), (t64(x, requires_grad=True),))
    with pytest.raises(RuntimeError, match=r"inconsistent target size: \[4\] for input of size: \[4, 5\]"):
        F.multilabel_margin_loss(t64(x), ember.tensor([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match=r"target values must be in \[-1, 4\]"):
        F.multilabel_margin_loss(t64(x[:1]), ember.tensor([[5, -1, 0, 0, 0]]))
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix with optional 0-dim batch size"):
        F.multilabel_margin_loss(ember.zeros(2, 2, 2), ember.zeros(2, 2, 2, dtype=ember.int64))


def test_triplet_margin_with_distance_loss():
    a, p, n = (RNG.normal(size=(3, 4)) for _ in range(3))

    def dist(u, v):
        return np.linalg.norm(u - v + 1e-6, axis=-1)

    want = np.maximum(dist(a, p) - dist(a, n) + 1.0, 0)
    close(F.triplet_margin_with_distance_loss(t64(a), t64(p), t64(n), reduction="none"), want, rtol=1e-9)
    l1 = lambda u, v: (u - v).abs().sum(-1)  # noqa: E731
    want = np.maximum(np.abs(a - p).sum(-1) - np.minimum(np.abs(a - n).sum(-1), np.abs(p - n).sum(-1)) + 0.5, 0)
    close(F.triplet_margin_with_distance_loss(t64(a), t64(p), t64(n), distance_function=l1, margin=0.5, swap=True,
                                              reduction="sum"), want.sum(), rtol=1e-9)
    module = ember.nn.TripletMarginWithDistanceLoss(distance_function=l1, margin=0.5, swap=True)
    close(module(t64(a), t64(p), t64(n)), want.mean(), rtol=1e-9)
    args = tuple(t64(v, requires_grad=True) for v in (a, p, n))
    assert gradcheck(lambda x, y, z: F.triplet_margin_with_distance_loss(x, y, z, distance_function=l1), args)
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0 instead"):
        F.triplet_margin_with_distance_loss(t64(a), t64(p), t64(n), margin=0)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D inputs"):
        F.triplet_margin_with_distance_loss(t64(a), t64(p[0]), t64(n))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.triplet_margin_with_distance_loss(t64(a), t64(p), t64(n), reduction="avg")


# ---- *_copy and *_scatter -------------------------------------------------------------------------


def test_view_copies():
    a = RNG.normal(size=(3, 4))
    x = noncontig(a)
    cases = {
        "t_copy": ((), a.T), "transpose_copy": ((0, 1), a.T), "permute_copy": (([1, 0],), a.T),
        "diagonal_copy": ((), np.diagonal(a)), "select_copy": ((1, 2), a[:, 2]), "unsqueeze_copy": ((0,), a[None]),
        "expand_copy": (([2, 3, 4],), np.broadcast_to(a, (2, 3, 4))), "view_copy": (([12],), a.ravel()),
        "detach_copy": ((), a), "alias_copy": ((), a), "unfold_copy": ((1, 2, 2), np.stack([a[:, 0:2], a[:, 2:4]], 1)),
        "squeeze_copy": ((), a),
    }
    for name, (args, want) in cases.items():
        src = t64(a) if name == "view_copy" else x
        got = getattr(ember, name)(src, *args)
        assert got.is_contiguous(), name
        close(got, want, err_msg=name)
        if got.numel():
            assert got.data_ptr() != src.data_ptr(), name
    close(ember.slice_copy(t64(a), 1, 1, None, 2), a[:, 1::2])
    parts = ember.split_copy(t64(a), 2, 1)
    close(parts[1], a[:, 2:])
    close(ember.split_with_sizes_copy(t64(a), [1, 3], 1)[1], a[:, 1:])
    close(ember.unbind_copy(t64(a), 1)[3], a[:, 3])
    z = np.array([[1.0, 2.0], [3.0, 4.0]])
    close(ember.view_as_complex_copy(t64(z)), [1 + 2j, 3 + 4j])
    close(ember.view_as_real_copy(ember.tensor(np.array([1 + 2j]))), [[1.0, 2.0]])
    close(ember.as_strided_copy(t64(np.arange(6.0)), (2, 2), (1, 2)), [[0.0, 2.0], [1.0, 3.0]])
    assert ember.t_copy(ember.zeros(0, 3)).shape == (3, 0)
    assert gradcheck(lambda t: ember.permute_copy(t, [1, 0]), (t64(a, requires_grad=True),))


def test_scatters():
    a = RNG.normal(size=(3, 4))
    row = RNG.normal(size=4)
    want = a.copy()
    want[1] = row
    for label, x in layouts(a):
        out = ember.select_scatter(x, t64(row), 0, 1)
        close(out, want, err_msg=label)
        close(x, a)  # input untouched
    want = a.copy()
    block = RNG.normal(size=(3, 2))
    want[:, 1::2] = block
    close(ember.slice_scatter(t64(a), t64(block), 1, 1, None, 2), want)
    close(t64(a).slice_scatter(t64(block), dim=1, start=1, step=2), want)
    want = a.copy()
    diag = RNG.normal(size=3)
    want[np.arange(3), np.arange(1, 4)] = diag
    close(ember.diagonal_scatter(t64(a), t64(diag), 1), want)
    flat = np.arange(6.0)
    got = ember.as_strided_scatter(t64(flat), t64([[9.0, 8.0]]), (1, 2), (1, 3))
    close(got, [9.0, 1, 2, 8, 4, 5])
    close(ember.select_scatter(t64(2.0 * np.ones(3)), t64(5.0), 0, 2), [2.0, 2.0, 5.0])  # 0-dim src
    assert ember.slice_scatter(ember.zeros(0, 3), ember.zeros(0, 1), 1, 0, 1).shape == (0, 3)
    base, src = t64(a, requires_grad=True), t64(row, requires_grad=True)
    assert gradcheck(lambda t, s: ember.select_scatter(t, s, 0, 1), (base, src))
    assert gradcheck(lambda t, s: ember.diagonal_scatter(t, s), (base, t64(diag, requires_grad=True)))
    with pytest.raises(RuntimeError, match=r"expected src to have a size equal to the slice of self. src size = "
                                           r"\[3\], slice size = \[4\]"):
        ember.select_scatter(ember.zeros(2, 4), ember.ones(3), 0, 0)
    with pytest.raises(RuntimeError, match=r"src size = \[3, 4\], slice size = \[2, 4\]"):
        ember.slice_scatter(ember.zeros(4, 4), ember.ones(3, 4), 0, 0, 2)


# ---- in-place shape changes -----------------------------------------------------------------------


def test_inplace_shape_changes():
    a = RNG.normal(size=(2, 1, 3))
    x = t64(a)
    assert x.squeeze_() is x and x.shape == (2, 3)
    close(x, a[:, 0])
    x.unsqueeze_(0)
    assert x.shape == (1, 2, 3)
    x.squeeze_(0)
    x.t_()
    assert x.shape == (3, 2) and not x.is_contiguous()
    close(x, a[:, 0].T)
    x.transpose_(0, 1)
    close(x, a[:, 0])
    x.swapaxes_(0, 1)
    assert x.shape == (3, 2)
    x.swapdims_(1, 0)
    assert x.shape == (2, 3)
    y = t64(np.arange(6.0))
    view = y[:]
    y.as_strided_((2, 2), (1, 2))
    close(y, [[0.0, 2.0], [1.0, 3.0]])
    y[0, 0] = 7.0  # still the same memory
    assert view[0].item() == 7.0
    s = t64(3.0)
    assert s.unsqueeze_(0).shape == (1,)
    assert ember.zeros(0, 1).squeeze_().shape == (0,)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        t64(a, requires_grad=True).squeeze_()
    with pytest.raises(NotImplementedError, match="squeeze_: changing the shape in place of a tensor that autograd"):
        (t64(a, requires_grad=True) * 2).squeeze_()
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2).unsqueeze_(3)


# ---- small functions ------------------------------------------------------------------------------


def test_column_stack_vander():
    a, b = RNG.normal(size=3), RNG.normal(size=(3, 2))
    close(ember.column_stack([t64(a), t64(b), t64(a)]), np.column_stack([a, b, a]))
    close(ember.column_stack((noncontig(b),)), b)
    close(ember.column_stack([t64(1.0), t64(2.0)]), [[1.0, 2.0]])
    assert ember.column_stack([ember.zeros(0), ember.zeros(0, 2)]).shape == (0, 3)
    with pytest.raises(RuntimeError, match="column_stack expects a non-empty TensorList"):
        ember.column_stack([])
    x = RNG.normal(size=4)
    close(ember.vander(t64(x)), np.vander(x))
    close(ember.vander(t64(x), 2, increasing=True), np.vander(x, 2, increasing=True))
    close(ember.vander(t64(x[::2].copy())), np.vander(x[::2]))
    close(ember.vander(t64(x), N=0), np.zeros((4, 0)))
    assert ember.vander(ember.zeros(0, dtype=ember.float64)).shape == (0, 0)
    got = ember.vander(ember.tensor([1, 2, 3], dtype=ember.int32), 4)
    assert got.dtype == ember.int64 and got.tolist() == np.vander([1, 2, 3], 4).tolist()
    assert ember.vander(ember.tensor([True, False]), 3).tolist() == [[1, 1, 1], [0, 0, 1]]
    close(ember.vander(t64([2.0, 0.0]), 3), [[4.0, 2.0, 1.0], [0.0, 0.0, 1.0]])
    assert gradcheck(lambda t: ember.vander(t, 3), (t64(x, requires_grad=True),))
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor."):
        ember.vander(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="N must be non-negative."):
        ember.vander(ember.ones(2), -1)


def _trapz_ref(y, x=None, dx=1.0, axis=-1):
    y = np.moveaxis(y, axis, -1)
    mids = (y[..., 1:] + y[..., :-1]) / 2
    widths = np.diff(x) if x is not None else dx
    return (mids * widths).sum(-1)


def _cumtrapz_ref(y, x=None, dx=1.0, axis=-1):
    y = np.moveaxis(y, axis, -1)
    mids = (y[..., 1:] + y[..., :-1]) / 2
    widths = np.diff(x) if x is not None else dx
    return np.moveaxis(np.cumsum(mids * widths, -1), -1, axis)


def test_trapezoid_family():
    y = RNG.normal(size=(3, 5))
    xs = np.sort(RNG.uniform(0, 4, 5))
    close(ember.trapezoid(t64(y)), _trapz_ref(y))
    close(ember.trapezoid(t64(y), dx=0.5), _trapz_ref(y, dx=0.5))
    close(ember.trapezoid(t64(y), t64(xs)), _trapz_ref(y, xs))
    close(ember.trapezoid(noncontig(y), t64(xs)), _trapz_ref(y, xs))
    close(ember.trapezoid(t64(y), dim=0), _trapz_ref(y, axis=0))
    close(ember.trapz(t64(y), t64(xs)), _trapz_ref(y, xs))
    close(ember.trapezoid(t64(y), t64(np.broadcast_to(xs, (3, 5)).copy())), _trapz_ref(y, xs))
    close(ember.cumulative_trapezoid(t64(y)), _cumtrapz_ref(y))
    close(ember.cumulative_trapezoid(t64(y), t64(xs)), _cumtrapz_ref(y, xs))
    close(ember.cumulative_trapezoid(t64(y), dx=2.0, dim=0), _cumtrapz_ref(y, dx=2.0, axis=0))
    assert ember.trapezoid(ember.tensor([1, 2, 3])).dtype == ember.float32
    close(ember.trapezoid(ember.zeros(3, 0, dtype=ember.float64)), np.zeros(3))
    close(ember.trapezoid(t64([2.0])), 0.0)
    assert ember.cumulative_trapezoid(ember.zeros(2, 0)).shape == (2, 0)
    assert gradcheck(lambda t, u: ember.trapezoid(t, u), (t64(y, requires_grad=True), t64(xs, requires_grad=True)))
    with pytest.raises(RuntimeError, match="trapezoid: There must be one `x` value for each sample point"):
        ember.trapezoid(t64(y), t64(xs[:3]))


def test_unravel_index():
    shape = (3, 4, 5)
    idx = RNG.integers(0, 60, 7)
    got = ember.unravel_index(ember.tensor(idx), shape)
    for g, w in zip(got, np.unravel_index(idx, shape), strict=True):
        assert g.tolist() == w.tolist()
    neg = ember.unravel_index(ember.tensor([-1, -60]), shape)
    assert [g.tolist() for g in neg] == [[2, 0], [3, 0], [4, 0]]
    scalar = ember.unravel_index(ember.tensor(7), (2, 5))
    assert [g.item() for g in scalar] == [1, 2]
    assert ember.unravel_index(ember.zeros(0, dtype=ember.int64), (2, 3))[0].shape == (0,)
    assert [g.tolist() for g in ember.unravel_index(ember.tensor([[5]]), 6)] == [[[5]]]
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype, but got ember.float32"):
        ember.unravel_index(ember.tensor([4.0]), (2, 3))
    with pytest.raises(RuntimeError, match=r"'indices' must be in range \[-6, 6\)"):
        ember.unravel_index(ember.tensor([6]), (2, 3))
    with pytest.raises(ValueError, match=r"'shape' cannot have negative values, but got \(2, -3\)"):
        ember.unravel_index(ember.tensor(4), (2, -3))


def test_small_functions():
    a = RNG.normal(size=(3, 4))
    close(ember.rsub(t64(a), 5.0, alpha=2), 5.0 - 2 * a)
    close(ember.rsub(t64(a), t64(a[0])), a[0] - a)
    assert ember.rsub(ember.tensor([1, 2]), 5, alpha=2).tolist() == [3, 1]
    s = ember.scalar_tensor(3)
    assert s.shape == () and s.dtype == ember.float32 and s.item() == 3.0
    assert ember.scalar_tensor(2, dtype=ember.int64).dtype == ember.int64
    f = ember.fill(noncontig(a), 1.5)
    close(f, np.full((3, 4), 1.5))
    assert ember.fill(ember.ones(2, dtype=ember.int32), 2.7).tolist() == [2, 2]
    close(ember.fill(t64(a), t64(4.0)), np.full((3, 4), 4.0))
    parts = ember.split_with_sizes(t64(a), [1, 3], 1)
    close(parts[0], a[:, :1])
    close(parts[1], a[:, 1:])
    assert [p.shape for p in t64(a).split_with_sizes([0, 3])] == [(0, 4), (3, 4)]
    close(ember.unsafe_split(t64(a), 2)[1], a[2:])
    close(t64(a).unsafe_chunk(2, 1)[1], a[:, 2:])
    close(ember.unsafe_split_with_sizes(t64(a), [2, 1])[1], a[2:])
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 5 \(input "
                                           r"tensor's size at dimension 0\), but got split_sizes=\[1, 2\]"):
        ember.split_with_sizes(ember.zeros(5), [1, 2])
    m = np.array([[0, 1], [1, 1]])
    assert ember.nonzero_static(ember.tensor(m), size=4, fill_value=-5).tolist() == [[0, 1], [1, 0], [1, 1],
                                                                                      [-5, -5]]
    assert ember.nonzero_static(ember.tensor([0, 1, 0, 1, 1]), size=2).tolist() == [[1], [3]]
    assert ember.nonzero_static(ember.zeros(0), size=1).tolist() == [[-1]]
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer, but got -1"):
        ember.nonzero_static(ember.ones(2), size=-1)
    p = ember.empty_permuted((2, 3, 4), (0, 2, 1))
    assert p.shape == (2, 3, 4) and list(p.stride()) == [12, 1, 3]
    with pytest.raises(RuntimeError, match="physical_layout is not a permutation"):
        ember.empty_permuted((2, 3), (0, 0))
    with pytest.warns(UserWarning, match="ember.range is deprecated"):
        r = ember.range(0, 1, 0.25)
    close(r, [0.0, 0.25, 0.5, 0.75, 1.0])
    with pytest.warns(UserWarning):
        assert ember.range(1, 4).tolist() == [1.0, 2.0, 3.0, 4.0]
        assert ember.range(3, 0, -1, dtype=ember.int64).tolist() == [3, 2, 1, 0]
        with pytest.raises(RuntimeError, match="upper bound and larger bound inconsistent with step sign"):
            ember.range(0, 3, -1)
    assert ember.can_cast(ember.float32, ember.float64) and not ember.can_cast(ember.float32, ember.int32)
    assert not ember.can_cast(ember.int32, ember.bool) and ember.can_cast(ember.bool, ember.int8)
    x = t64(a)
    assert ember.is_neg(x) is False and ember.resolve_neg(x) is x and x.resolve_neg() is x
    assert ember.get_device(x) == -1 and ember.is_same_size(x, t64(a)) and ember.is_signed(x)


def test_lu_unpack():
    for shape in ((4, 4), (5, 3), (3, 5), (2, 4, 4)):
        a = RNG.normal(size=shape)
        lu, piv = ember.linalg.lu_factor(t64(a))
        P, L, U = ember.lu_unpack(lu, piv)
        close(P @ L @ U, a, rtol=1e-9, atol=1e-12)
        k = min(shape[-2:])
        assert L.shape[-2:] == (shape[-2], k) and U.shape[-2:] == (k, shape[-1])
        close(L, np.tril(L.numpy()))
        close(np.diagonal(L.numpy(), axis1=-2, axis2=-1), np.ones(L.shape[:-2] + (k,)))
        close(U, np.triu(U.numpy()))
    P, L, U = ember.lu_unpack(lu, piv, unpack_data=False)
    assert L.numel() == 0 and U.numel() == 0 and P.shape == (2, 4, 4)
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of torch.int32 dtype"):
        ember.lu_unpack(lu, piv.to(ember.int64))


def test_norm_helpers():
    a = RNG.normal(size=(2, 3, 4))
    close(ember.frobenius_norm(t64(a)), np.sqrt((a ** 2).sum(axis=(-2, -1))))
    close(ember.frobenius_norm(t64(a), (0, 2)), np.sqrt((a ** 2).sum(axis=(0, 2))))
    m = a[0]
    close(ember.nuclear_norm(t64(m)), np.linalg.svd(m, compute_uv=False).sum(), rtol=1e-9)
    close(ember.nuclear_norm(t64(a), (1, 2), True), np.linalg.svd(a, compute_uv=False).sum(-1)[:, None, None],
          rtol=1e-9)
    close(ember.native_norm(t64(a), 3), (np.abs(a) ** 3).sum() ** (1 / 3))
    close(ember.norm_except_dim(t64(a), 2, 1), np.sqrt((a ** 2).sum(axis=(0, 2), keepdims=True)))
    close(ember.norm_except_dim(t64(a), 2, -1), np.sqrt((a ** 2).sum()))
    assert gradcheck(lambda t: ember.norm_except_dim(t, 2, 0), (t64(a, requires_grad=True),))


def test_native_dropout():
    x = t64(np.ones((100, 100)))
    out, mask = ember.native_dropout(x, 0.3, True)
    assert mask.dtype == ember.bool
    close(out, np.where(mask.numpy(), 1 / 0.7, 0.0))
    assert 0.25 < 1 - mask.numpy().mean() < 0.35
    out, mask = ember.native_dropout(x, 0.3, False)
    close(out, x.numpy())
    assert mask.numpy().all()


def test_tensor_new_apply_map():
    x = ember.ones(2, 3, dtype=ember.float64)
    assert x.new(2, 4).shape == (2, 4) and x.new(2, 4).dtype == ember.float64
    assert x.new((3,)).shape == (3,)
    assert x.new().shape == (0,)
    assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype == ember.float64
    other = t64([5.0])
    assert x.new(other) is other
    with pytest.raises(TypeError, match="expected ember.float64 \\(got ember.float32\\)"):
        x.new(ember.ones(2))
    a = RNG.normal(size=(2, 3))
    y = noncontig(a.T).t()
    assert y.apply_(lambda v: v * 2 + 1) is y
    close(y, a * 2 + 1)
    z = t64(a)
    z.map_(t64(a[0]), lambda u, v: u - v)
    close(z, a - a[0])
    w = t64(a)
    w.map2_(t64(a), t64(2.0), lambda u, v, s: u * v * s)
    close(w, 2 * a * a)
    i = ember.tensor([1, 2, 3])
    i.apply_(lambda v: v * 10)
    assert i.tolist() == [10, 20, 30]
    with pytest.raises(RuntimeError, match="apply_ is not supported on tensors that require grad"):
        t64(a, requires_grad=True).apply_(abs)
    assert ember.ones(2, 3).dim_order() == (0, 1) and ember.ones(2, 3).t().dim_order() == (1, 0)
    assert ember.empty_permuted((2, 3, 4), (2, 0, 1)).dim_order() == (2, 0, 1)
    assert x.const_data_ptr() == x.data_ptr()
    close(t64(a).prelu(t64([0.5])), np.where(a > 0, a, 0.5 * a))


# ---- nn: Buffer, lazy modules, fractional pooling, adaptive softmax -------------------------------


def test_nn_buffer():
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.kept = ember.nn.Buffer(ember.ones(2))
            self.scratch = ember.nn.Buffer(ember.zeros(3), persistent=False)

    m = M()
    assert [n for n, _ in m.named_buffers()] == ["kept", "scratch"]
    assert list(m.state_dict()) == ["kept"]
    assert isinstance(m.kept, ember.nn.Buffer) and not m.kept.requires_grad
    src = ember.ones(2, requires_grad=True)
    b = ember.nn.Buffer(src)
    assert b.requires_grad and b.is_leaf and b.data_ptr() == src.data_ptr()
    m.kept = ember.full([2], 7.0)  # a plain tensor replaces a registered buffer
    close(m.state_dict()["kept"], [7.0, 7.0])


def test_uninitialized_parameter():
    p = ember.nn.UninitializedParameter(dtype=ember.float64)
    assert isinstance(p, ember.nn.Parameter) and p.shape == (0,)
    assert ember.nn.parameter.is_lazy(p)
    p.materialize((2, 3))
    assert type(p) is ember.nn.Parameter and p.shape == (2, 3) and p.dtype == ember.float64 and p.requires_grad
    assert not ember.nn.parameter.is_lazy(p)


@pytest.mark.parametrize("name, base, args, shape", [
    ("LazyConv1d", "Conv1d", (4, 3), (2, 3, 8)), ("LazyConv2d", "Conv2d", (4, 3), (2, 3, 6, 6)),
    ("LazyConv3d", "Conv3d", (2, 2), (1, 3, 4, 4, 4)), ("LazyConvTranspose1d", "ConvTranspose1d", (4, 3), (2, 6, 5)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (4, 2), (2, 3, 4, 4)),
    ("LazyConvTranspose3d", "ConvTranspose3d", (2, 2), (1, 3, 3, 3, 3)),
])
def test_lazy_convolutions(name, base, args, shape):
    ember.manual_seed(0)
    lazy = getattr(ember.nn, name)(*args, dtype=ember.float64)
    assert lazy.has_uninitialized_params() and isinstance(lazy.weight, ember.nn.UninitializedParameter)
    x = t64(RNG.normal(size=shape))
    out = lazy(x)
    assert type(lazy).__name__ == base and type(lazy.weight) is ember.nn.Parameter
    assert lazy.in_channels == shape[1]
    eager = getattr(ember.nn, base)(shape[1], *args, dtype=ember.float64)
    assert lazy.weight.shape == eager.weight.shape and lazy.bias.shape == eager.bias.shape
    eager.load_state_dict(lazy.state_dict())
    close(out, eager(x).detach())
    unbatched = getattr(ember.nn, name)(*args, bias=False)
    unbatched(ember.randn(*shape[1:]))
    assert unbatched.bias is None and unbatched.in_channels == shape[1]


def test_lazy_convolution_bad_input():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ember.nn.LazyConv1d(4, 3, groups=2)(ember.randn(1, 3, 8))
    with pytest.raises(RuntimeError, match="expected a 3D \\(unbatched\\) or 4D \\(batched\\) input"):
        ember.nn.LazyConv2d(4, 3)(ember.randn(8))
    with pytest.raises(TypeError, match="unexpected keyword argument 'stride2'"):
        ember.nn.LazyConv2d(4, 3, stride2=1)


@pytest.mark.parametrize("name, shape, dims", [
    ("LazyBatchNorm1d", (5, 3), (0,)), ("LazyBatchNorm2d", (4, 3, 2, 2), (0, 2, 3)),
    ("LazyBatchNorm3d", (2, 3, 2, 2, 2), (0, 2, 3, 4)),
    ("LazyInstanceNorm1d", (2, 3, 6), (2,)), ("LazyInstanceNorm2d", (2, 3, 4, 4), (2, 3)),
    ("LazyInstanceNorm3d", (2, 3, 2, 2, 3), (2, 3, 4)),
])
def test_lazy_norms(name, shape, dims):
    a = RNG.normal(size=shape)
    module = getattr(ember.nn, name)(dtype=ember.float64)
    out = module(t64(a))
    assert module.num_features == 3 and not type(module).__name__.startswith("Lazy")
    want = (a - a.mean(axis=dims, keepdims=True)) / np.sqrt(a.var(axis=dims, keepdims=True) + 1e-5)
    close(out, want, rtol=1e-9, atol=1e-10)
    if "Batch" in name:
        assert module.weight.shape == (3,) and module.running_mean.shape == (3,)
        close(module.running_mean, 0.1 * a.mean(axis=dims))
    else:
        assert module.weight is None and module.running_mean is None
    affine = getattr(ember.nn, name)(affine=True, track_running_stats=True)
    affine(ember.randn(*shape))
    assert affine.weight.shape == (3,) and affine.running_var.shape == (3,)


def test_lazy_instance_norm_unbatched():
    m = ember.nn.LazyInstanceNorm1d(affine=True)
    m(ember.randn(3, 7))
    assert m.num_features == 3 and m.weight.shape == (3,)


def _fractional_ref(x, kernel, out_size, samples, order):
    """Loop reference of fractional max pooling over the planes of x (N, C, *spatial)."""
    n = len(kernel)
    spatial = x.shape[2:]
    out = np.empty(x.shape[:2] + tuple(out_size))
    idx = np.empty(out.shape, dtype=np.int64)
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            starts = []
            for d in range(n):
                u = samples[b, c, order[d]]
                size, pool, o = spatial[d], kernel[d], out_size[d]
                alpha = (size - pool) / (o - 1) if o > 1 else 0.0
                seq = [int(np.floor((i + u) * alpha)) - int(np.floor(u * alpha)) for i in range(o - 1)]
                starts.append(seq + [size - pool])
            for pos in np.ndindex(*out_size):
                window = tuple(slice(starts[d][pos[d]], starts[d][pos[d]] + kernel[d]) for d in range(n))
                block = x[(b, c) + window]
                k = int(np.argmax(block))
                local = np.unravel_index(k, block.shape)
                out[(b, c) + pos] = block.flat[k]
                idx[(b, c) + pos] = np.ravel_multi_index(
                    tuple(starts[d][pos[d]] + local[d] for d in range(n)), spatial)
    return out, idx


def test_fractional_max_pool():
    x = RNG.normal(size=(2, 3, 9, 11))
    samples = RNG.uniform(size=(2, 3, 2))
    out, idx = F.fractional_max_pool2d(t64(x), (2, 3), output_size=(5, 4), return_indices=True,
                                       _random_samples=t64(samples))
    want, want_idx = _fractional_ref(x, (2, 3), (5, 4), samples, [1, 0])
    close(out, want)
    assert idx.tolist() == want_idx.tolist()
    out2, idx2 = F.fractional_max_pool2d_with_indices(noncontig(x[0, 0])[None], 2, output_ratio=(0.5, 0.5),
                                                      _random_samples=t64(samples[:1, :1]))
    want, want_idx = _fractional_ref(x[:1, :1], (2, 2), (4, 5), samples[:1, :1], [1, 0])
    close(out2, want[0])
    x3 = RNG.normal(size=(1, 2, 5, 6, 7))
    s3 = RNG.uniform(size=(1, 2, 3))
    out3 = F.fractional_max_pool3d(t64(x3), 2, output_size=3, _random_samples=t64(s3))
    close(out3, _fractional_ref(x3, (2, 2, 2), (3, 3, 3), s3, [0, 1, 2])[0])
    random = ember.nn.FractionalMaxPool2d(3, output_ratio=0.5)(ember.randn(2, 3, 10, 10))
    assert random.shape == (2, 3, 5, 5)
    module = ember.nn.FractionalMaxPool3d(2, output_size=(2, 3, 3), return_indices=True,
                                          _random_samples=t64(s3))
    o, i = module(t64(x3))
    close(o, _fractional_ref(x3, (2, 2, 2), (2, 3, 3), s3, [0, 1, 2])[0])
    g = t64(x[:1, :1], requires_grad=True)
    assert gradcheck(lambda t: F.fractional_max_pool2d(t, 2, output_size=3, _random_samples=t64(samples[:1, :1])),
                     (g,))
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an output size, or a "
                                         "pooling ratio"):
        ember.nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        ember.nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio may be specified"):
        ember.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(RuntimeError, match="pool height 4 too large relative to input height 5"):
        F.fractional_max_pool2d(ember.randn(1, 1, 5, 5), 4, output_size=3)
    with pytest.raises(RuntimeError, match=r"Expected 3D or 4D tensor, but got: \[5, 5\]"):
        F.fractional_max_pool2d(ember.randn(5, 5), 2, output_size=2)


def test_adaptive_log_softmax():
    ember.manual_seed(1)
    m = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2, 5], div_value=2.0, head_bias=True).double()
    assert m.head.weight.shape == (4, 8) and m.tail[0][0].weight.shape == (4, 8) and m.tail[1][1].weight.shape == (5, 2)
    x = RNG.normal(size=(6, 8))
    target = np.array([0, 3, 9, 5, 1, 4])

    def softmax_log(z):
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    w = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    head = softmax_log(x @ w["head.weight"].T + w["head.bias"])
    clusters = [softmax_log(x @ w[f"tail.{i}.0.weight"].T @ w[f"tail.{i}.1.weight"].T) for i in range(2)]
    full = np.concatenate([head[:, :2], clusters[0] + head[:, 2:3], clusters[1] + head[:, 3:4]], axis=1)
    result = m(t64(x), ember.tensor(target))
    close(result.output, full[np.arange(6), target], rtol=1e-9)
    close(result.loss, -full[np.arange(6), target].mean(), rtol=1e-9)
    close(m.log_prob(t64(x)), full, rtol=1e-9)
    assert m.predict(t64(x)).tolist() == full.argmax(1).tolist()
    single = m(t64(x[1]), ember.tensor(target[1]))
    assert single.output.shape == ()
    close(single.output, full[1, target[1]], rtol=1e-9)
    result.loss.backward()
    assert m.head.weight.grad is not None and m.tail[1][0].weight.grad is not None
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values in range \[0, 10\] "
                                           "were found."):
        m(t64(x[:2]), ember.tensor([0, 10]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        m(t64(x), ember.tensor([[0]]))
    with pytest.raises(RuntimeError, match="Input and target should have the same size in the batch dimension."):
        m(t64(x), ember.tensor([0, 1]))


def test_nll_loss_2d():
    logp = F.log_softmax(t64(RNG.normal(size=(2, 3, 4, 4))), dim=1)
    target = ember.tensor(RNG.integers(0, 3, (2, 4, 4)))
    close(ember.nn.NLLLoss2d()(logp, target), ember.nn.NLLLoss()(logp, target))


# ---- autograd.Variable, utils.data.StackDataset, top-level switches -------------------------------


def test_variable():
    from ember.autograd import Variable

    x = t64([1.0, 2.0])
    v = Variable(x, requires_grad=True)
    assert v is not x and v.requires_grad and not x.requires_grad and v.is_leaf
    assert v.data_ptr() == x.data_ptr()
    assert isinstance(x, Variable) and not isinstance([1], Variable)
    y = (t64([1.0], requires_grad=True) * 2)
    assert Variable(y).grad_fn is None
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])
    with pytest.raises(RuntimeError, match=r"torch.autograd.variable\(...\) is deprecated"):
        ember.autograd.variable(1.0)


def test_stack_dataset():
    from ember.utils.data import DataLoader, StackDataset, TensorDataset

    images = TensorDataset(ember.arange(4.0))
    labels = [10, 11, 12, 13]
    pairs = StackDataset(images, labels)
    assert len(pairs) == 4 and pairs[2][0][0].item() == 2.0 and pairs[2][1] == 12
    named = StackDataset(image=images, label=labels)
    assert named[1]["label"] == 11 and named[1]["image"][0].item() == 1.0
    assert [s["label"] for s in named.__getitems__([3, 0])] == [13, 10]
    batch = next(iter(DataLoader(named, batch_size=2)))
    assert batch["label"].tolist() == [10, 11]
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(images, label=labels)
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(images, labels[:3])


def test_asarray_and_switches():
    a = np.arange(3.0)
    t = ember.asarray(a)
    t[0] = 9.0
    assert a[0] == 9.0  # shares the array's memory
    assert ember.asarray(a, copy=True).data_ptr() != ember.asarray(a).data_ptr()
    assert ember.asarray(a, dtype=ember.float32).dtype == ember.float32
    x = ember.ones(2)
    assert ember.asarray(x) is x and ember.asarray(x, copy=True) is not x
    assert ember.asarray([1, 2]).dtype == ember.int64 and ember.asarray(3.5).item() == 3.5
    assert ember.asarray([1.0], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype 'Double'."):
        ember.asarray(x, dtype=ember.float64, copy=False)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence into a tensor."):
        ember.asarray([1, 2], copy=False)
    assert not ember.is_inference(x)
    with ember.inference_mode():
        assert ember.is_inference(ember.ones(1))
    assert not ember.is_anomaly_enabled()
    ember.set_anomaly_enabled(True, check_nan=False)
    try:
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    finally:
        ember.set_anomaly_enabled(False)
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    ember.set_default_device(None)
    with pytest.raises(RuntimeError, match="Ember runs on CPU only"):
        ember.set_default_device("cuda")


# ---- nextafter, polygamma -------------------------------------------------------------------------


@pytest.mark.parametrize("np_dtype, dtype, bits", [(np.float64, ember.float64, np.uint64),
                                                   (np.float32, ember.float32, np.uint32)])
def test_nextafter_bit_exact(np_dtype, dtype, bits):
    fi = np.finfo(np_dtype)
    special = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, fi.tiny, -fi.tiny, fi.tiny * fi.eps, fi.max, -fi.max, np.inf,
               -np.inf, np.nan, fi.tiny * 4, fi.tiny / 8]
    x = np.concatenate([np.array(special), RNG.normal(size=40) * 10.0 ** RNG.integers(-30, 30, 40)]).astype(np_dtype)
    for target in (np.inf, -np.inf, 0.0, 1.0, np.nan):
        y = np.full_like(x, target)
        got = ember.nextafter(ember.tensor(x), ember.tensor(y)).numpy()
        with np.errstate(over="ignore"):
            want = np.nextafter(x, y)
        assert got.dtype == np_dtype
        same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (target, x[~same], got[~same], want[~same])
    m = x[:12].reshape(3, 4)
    want = np.nextafter(m.T, np_dtype(1.0))
    assert (ember.tensor(np.ascontiguousarray(m)).t().nextafter(ember.tensor(1.0, dtype=dtype)).numpy() == want).all()
    z = ember.tensor(np.array([1.0, 2.0], dtype=np_dtype))
    assert z.nextafter_(ember.tensor(np.array([0.0], dtype=np_dtype))) is z
    assert (z.numpy() == np.nextafter(np.array([1.0, 2.0], dtype=np_dtype), np_dtype(0))).all()
    assert ember.nextafter(ember.zeros(0, dtype=dtype), ember.ones(1, dtype=dtype)).shape == (0,)
    s = ember.nextafter(ember.tensor(1.0, dtype=dtype), ember.tensor(2.0, dtype=dtype))
    assert s.shape == () and s.item() == np.nextafter(np_dtype(1), np_dtype(2))
    with pytest.raises(RuntimeError, match="\"nextafter_cpu\" not implemented for 'Long'"):
        ember.nextafter(ember.tensor([1]), ember.tensor([2]))


def _polygamma_ref(n, x):
    """(-1)^(n+1) n! sum_k (x + k)^-(n+1): 100000 terms and the integral tail."""
    k = np.arange(100000.0)
    out = []
    for v in np.ravel(x):
        if v <= 0 and v == np.floor(v):  # a pole
            out.append((-1) ** (n + 1) * np.inf)
            continue
        tail = v + k[-1] + 1
        total = np.sum((v + k) ** -(n + 1.0)) + tail ** -n / n + 0.5 * tail ** -(n + 1.0) + (n + 1) / 12 * tail ** -(
            n + 2.0)
        out.append((-1) ** (n + 1) * math.factorial(n) * total)
    return np.array(out).reshape(np.shape(x))


def test_polygamma():
    x = np.array([[0.1, 0.5, 1.0, 2.5], [7.3, 30.0, -0.5, -1.5], [1e-3, 200.0, 3.0, -2.0]])
    for n in (1, 2, 3, 6):
        want = _polygamma_ref(n, x)
        for label, t in layouts(x):
            got = ember.polygamma(n, t)
            # Negative x sums terms of both signs, so both sides lose a few digits to cancellation.
            close(got, want, rtol=1e-10, err_msg=f"{n} {label}")
    euler = 0.5772156649015329  # digamma's closed forms at 1, 1/2, 5/2 and 3
    close(ember.polygamma(0, t64([1.0, 0.5, 2.5, 3.0])),
          [-euler, -euler - 2 * math.log(2), -euler - 2 * math.log(2) + 2 + 2 / 3, -euler + 1.5], rtol=1e-12)
    close(t64(x[0]).polygamma(2), _polygamma_ref(2, x[0]), rtol=1e-11)
    y = t64(x[0])
    assert y.polygamma_(1) is y
    close(y, _polygamma_ref(1, x[0]), rtol=1e-11)
    close(ember.polygamma(1, t64(0.25)), _polygamma_ref(1, 0.25), rtol=1e-11)
    assert ember.polygamma(1, ember.zeros(0)).shape == (0,)
    assert ember.polygamma(1, ember.tensor([1, 2])).dtype == ember.float32
    f32 = ember.polygamma(2, ember.tensor([0.5], dtype=ember.float32))
    assert f32.dtype == ember.float32
    close(f32, _polygamma_ref(2, np.array([np.float32(0.5)])), rtol=1e-6)
    g = t64([0.3, 1.7, 4.0], requires_grad=True)
    assert gradcheck(lambda t: ember.polygamma(1, t), (g,))
    assert gradcheck(lambda t: ember.polygamma(3, t), (g,))
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n."):
        ember.polygamma(-1, t64([1.0]))


# ---- vmap through the composites ------------------------------------------------------------------


def test_vmap_through_composites():
    x = t64(RNG.uniform(0.5, 1.5, (3, 4)))
    cases = {
        "addr": lambda t: ember.addr(ember.zeros(4, 4, dtype=ember.float64), t, t, alpha=2),
        "put": lambda t: t.put(ember.tensor([0, 3]), t64([1.0, 2.0]), accumulate=True),
        "vander": lambda t: ember.vander(t, 3),
        "trapezoid": lambda t: ember.trapezoid(t, dx=0.5),
        "cumulative_trapezoid": ember.cumulative_trapezoid,
        "select_scatter": lambda t: ember.select_scatter(t, t64(7.0), 0, 1),
        "nextafter": lambda t: ember.nextafter(t, t64(0.0)),
        "ldexp": lambda t: ember.ldexp(t, ember.tensor(3)),
        "isposinf": ember.isposinf,
        "sum_to_size": lambda t: t.reshape(2, 2).sum_to_size(1, 2),
        "logit_": lambda t: (t * 0.5).logit_(),
        "rsub": lambda t: ember.rsub(t, 1.0, alpha=3),
    }
    for name, fn in cases.items():
        batched = ember.vmap(fn)(x)
        looped = ember.stack([fn(x[i]) for i in range(3)])
        close(batched, looped.numpy(), err_msg=name)


# ---- legacy Tensor methods and small names --------------------------------------------------------


def test_resize_and_set():
    x = t64(np.arange(6.0))
    ptr = x.data_ptr()
    assert x.resize_(2, 2) is x and x.shape == (2, 2) and x.data_ptr() == ptr  # shrinking keeps the memory
    close(x, [[0.0, 1.0], [2.0, 3.0]])
    x.resize_((3, 3))
    assert x.shape == (3, 3)
    close(x.reshape(-1)[:4], [0.0, 1.0, 2.0, 3.0])
    y = t64(np.arange(6.0).reshape(2, 3)).t()  # not contiguous: the row-major elements are kept
    y.resize_(4)
    close(y, [0.0, 3.0, 1.0, 4.0])
    z = ember.ones(2, 3)
    z.resize_as_(ember.zeros(3))
    assert z.shape == (3,)
    assert ember.resize_as_(ember.ones(1), ember.zeros(2, 2)).shape == (2, 2)
    assert ember.ones(2).resize_(0).shape == (0,)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        t64([1.0], requires_grad=True).resize_(2)
    with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1"):
        ember.ones(2).resize_(-1)
    src = t64(np.arange(4.0)).view(2, 2)
    s = t64([9.0])
    assert s.set_(src) is s and s.is_set_to(src) and s.shape == (2, 2)
    s[0, 0] = 5.0
    assert src[0, 0].item() == 5.0
    assert not s.is_set_to(src.t())
    assert s.set_().shape == (0,)
    with pytest.raises(RuntimeError, match="Could not set tensor of type"):
        ember.ones(2).set_(t64([1.0]))
    part = t64([0.0]).set_(src, 1, (2,), (2,))  # explicit geometry over src's storage
    assert part.tolist() == [1.0, 3.0] and part.storage_offset() == 1


def test_module_load_meta_typename():
    a = ember.zeros(2)
    got = a.module_load(ember.ones(2))
    assert got.data_ptr() == a.data_ptr() and a.tolist() == [1.0, 1.0]
    b = ember.full([2], 3.0, requires_grad=True)
    assigned = a.module_load(b, assign=True)
    assert not assigned.requires_grad and assigned.data_ptr() == b.data_ptr()
    assert not a.is_meta
    assert ember.typename(ember.ones(1)) == "ember.FloatTensor"
    assert ember.typename(ember.ones(1, dtype=ember.int64)) == "ember.LongTensor"
    assert ember.typename(3) == "int" and ember.typename(ember.nn.Linear) == "ember.nn.modules.linear.Linear"
    before = ember.get_default_dtype()
    try:
        ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.get_default_dtype() == ember.float64
        ember.set_default_tensor_type("torch.FloatTensor")
        assert ember.get_default_dtype() == ember.float32
        with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
            ember.set_default_tensor_type(ember.LongTensor)
        with pytest.raises(TypeError, match="invalid type: 'torch.Foo'"):
            ember.set_default_tensor_type("torch.Foo")
    finally:
        ember.set_default_dtype(before)
    capsule = ember.to_dlpack(t64([1.0, 2.0]))
    assert ember.from_dlpack(capsule).tolist() == [1.0, 2.0]
    assert ember.version.cuda is None and ember.version.__version__ == ember.__version__
    import ember.random as er

    state = ember.get_rng_state()
    with er.fork_rng():
        inside = ember.rand(3)
    assert ember.rand(3).tolist() == inside.tolist()
    ember.set_rng_state(state)


def test_aten_grid_and_rnn_cells():
    x = t64(RNG.normal(size=(1, 2, 4, 5)))
    grid = t64(RNG.uniform(-1, 1, (1, 3, 3, 2)))
    for mode, name in enumerate(("bilinear", "nearest", "bicubic")):
        for pad, pname in enumerate(("zeros", "border", "reflection")):
            close(ember.grid_sampler(x, grid, mode, pad, False), F.grid_sample(x, grid, name, pname, False))
    close(ember.grid_sampler_2d(x, grid, 0, 0, True), F.grid_sample(x, grid, align_corners=True))
    theta = t64(RNG.normal(size=(1, 2, 3)))
    close(ember.affine_grid_generator(theta, [1, 2, 4, 5], False), F.affine_grid(theta, [1, 2, 4, 5], False))
    with pytest.raises(RuntimeError, match="expected interpolation_mode to be Bilinear, Nearest or Bicubic"):
        ember.grid_sampler(x, grid, 3, 0, False)
    with pytest.raises(RuntimeError, match="grid_sampler_2d\\(\\): expected 4D input"):
        ember.grid_sampler_2d(x[0], grid, 0, 0, False)

    def sig(v):
        return 1 / (1 + np.exp(-v))

    inp, h, c = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 4)), RNG.normal(size=(2, 4))
    w_ih, w_hh, b_ih, b_hh = (RNG.normal(size=s) for s in ((16, 3), (16, 4), (16,), (16,)))
    gates = inp @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, g, o = np.split(gates, 4, axis=1)
    c_new = sig(f) * c + sig(i) * np.tanh(g)
    hy, cy = ember.lstm_cell(t64(inp), (t64(h), t64(c)), t64(w_ih), t64(w_hh), t64(b_ih), t64(b_hh))
    close(hy, sig(o) * np.tanh(c_new))
    close(cy, c_new)
    w_ih3, w_hh3, b3 = RNG.normal(size=(12, 3)), RNG.normal(size=(12, 4)), RNG.normal(size=12)
    a = inp @ w_ih3.T + b3
    b = h @ w_hh3.T
    r = sig(a[:, :4] + b[:, :4])
    z = sig(a[:, 4:8] + b[:, 4:8])
    n = np.tanh(a[:, 8:] + r * b[:, 8:])
    close(ember.gru_cell(t64(inp), t64(h), t64(w_ih3), t64(w_hh3), t64(b3)), (1 - z) * n + z * h)
    w4, u4 = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 4))
    close(ember.rnn_tanh_cell(t64(inp), t64(h), t64(w4), t64(u4)), np.tanh(inp @ w4.T + h @ u4.T))
    close(ember.rnn_relu_cell(t64(inp), t64(h), t64(w4), t64(u4)), np.maximum(inp @ w4.T + h @ u4.T, 0))
    args = (t64(inp, True), t64(h, True), t64(c, True), t64(w_ih, True), t64(w_hh, True))
    assert gradcheck(lambda x_, h_, c_, wi, wh: ember.lstm_cell(x_, (h_, c_), wi, wh)[0], args)
    with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states, but got 1"):
        ember.lstm_cell(t64(inp), (t64(h),), t64(w_ih), t64(w_hh))


def test_legacy_contiguous_format():
    x = noncontig(RNG.normal(size=(2, 3)))
    assert x.contiguous(memory_format=ember.legacy_contiguous_format).is_contiguous()
    assert ember.clone(x, memory_format=ember.legacy_contiguous_format).is_contiguous()
    close(F.native_channel_shuffle(t64(np.arange(4.0).reshape(1, 4, 1)), 2), [[[0.0], [2.0], [1.0], [3.0]]])


# ---- func helpers and linalg additions ------------------------------------------------------------


def test_func_helpers():
    from ember.func import (
        debug_unwrap,
        functional_call,
        functionalize,
        linearize,
        replace_all_batch_norm_modules_,
        stack_module_state,
        vmap,
    )

    models = [ember.nn.Linear(3, 2).double() for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].is_leaf and params["weight"].requires_grad
    x = t64(RNG.normal(size=(5, 3)))
    out = vmap(lambda p, b: functional_call(models[0], (p, b), (x,)))(params, buffers)
    for i, m in enumerate(models):
        close(out[i], m(x).detach().numpy())
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="Expected all models to be of the same class"):
        stack_module_state([ember.nn.Linear(1, 1), ember.nn.Identity()])
    net = ember.nn.Sequential(ember.nn.BatchNorm1d(3), ember.nn.Linear(3, 1))
    assert replace_all_batch_norm_modules_(net) is net
    assert net[0].running_mean is None and not net[0].track_running_stats
    primal = t64([0.1, 0.7])
    value, jvp_fn = linearize(lambda t: t.sin() * t, primal)
    close(value, np.sin([0.1, 0.7]) * [0.1, 0.7])
    tangent = np.array([1.0, -2.0])
    close(jvp_fn(t64(tangent)), (np.cos([0.1, 0.7]) * [0.1, 0.7] + np.sin([0.1, 0.7])) * tangent)
    with pytest.raises(RuntimeError, match="expected 1 tangents"):
        jvp_fn(t64(tangent), t64(tangent))

    def mutating(t):
        y = t.clone()
        y.add_(1)
        return y * 2

    close(functionalize(mutating)(t64([1.0, 2.0])), [4.0, 6.0])
    with pytest.raises(RuntimeError, match="received invalid argument for remove=everything"):
        functionalize(mutating, remove="everything")
    assert debug_unwrap(x) is x


def test_linalg_additions():
    a = RNG.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    inverse, info = ember.linalg.inv_ex(t64(a))
    close(inverse, np.linalg.inv(a), rtol=1e-9)
    assert info.tolist() == [0, 0]
    singular = ember.linalg.inv_ex(ember.zeros(2, 2, dtype=ember.float64))
    assert singular.info.item() == 1
    with pytest.raises(ember.linalg.LinAlgError, match="linalg.inv_ex: The diagonal element 1 is zero"):
        ember.linalg.inv_ex(ember.zeros(2, 2), check_errors=True)
    with pytest.raises(ember.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 1 is zero"):
        ember.linalg.inv_ex(ember.stack([ember.eye(2), ember.zeros(2, 2)]), check_errors=True)
    b = RNG.normal(size=(2, 3))
    result, info = ember.linalg.solve_ex(t64(a), t64(b))
    close(result, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-9)
    bm = RNG.normal(size=(2, 3, 2))
    close(ember.linalg.solve_ex(t64(a), t64(bm)).result, np.linalg.solve(a, bm), rtol=1e-9)
    left = ember.linalg.solve_ex(t64(a), t64(bm.transpose(0, 2, 1)), left=False).result
    close(left, np.swapaxes(np.linalg.solve(np.swapaxes(a, 1, 2), bm), 1, 2), rtol=1e-9)
    t4 = RNG.normal(size=(4, 2, 2)) + np.eye(4).reshape(4, 2, 2) * 3
    close(ember.linalg.tensorinv(t64(t4), ind=1), np.linalg.tensorinv(t4, ind=1), rtol=1e-9)
    t6 = RNG.normal(size=(2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3
    rhs = RNG.normal(size=(2, 3))
    close(ember.linalg.tensorsolve(t64(t6), t64(rhs)), np.linalg.tensorsolve(t6, rhs), rtol=1e-9)
    t6b = np.moveaxis(t6, 2, 0).copy()
    close(ember.linalg.tensorsolve(t64(t6b), t64(rhs), dims=(0,)), np.linalg.tensorsolve(t6b, rhs, axes=(0,)),
          rtol=1e-9)
    with pytest.raises(RuntimeError, match="Expected a strictly positive integer for 'ind', but got 0"):
        ember.linalg.tensorinv(t64(t4), ind=0)
    with pytest.raises(RuntimeError, match=r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), but got "
                                           "3 != 4"):
        ember.linalg.tensorinv(ember.ones(4, 3), ind=1)
    v = RNG.normal(size=(2, 3))
    close(ember.linalg.vander(t64(v)), np.stack([np.vander(r, increasing=True) for r in v]))
    close(ember.linalg.vander(t64(v[0]), N=5), np.vander(v[0], 5, increasing=True))
    assert ember.linalg.vander(ember.tensor([2, 3])).tolist() == [[1, 2], [1, 3]]
    with pytest.raises(RuntimeError, match="N must be greater than 1."):
        ember.linalg.vander(t64([1.0, 2.0]), N=1)
    assert gradcheck(lambda m: ember.linalg.inv_ex(m).inverse, (t64(a[0], requires_grad=True),))


# ---- gradient, resize, ember.testing --------------------------------------------------------------


def test_gradient():
    f = RNG.normal(size=(4, 6))
    for edge in (1, 2):
        got = ember.gradient(t64(f), edge_order=edge)
        want = np.gradient(f, edge_order=edge)
        for g, w in zip(got, want, strict=True):
            close(g, w)
        got = ember.gradient(noncontig(f), spacing=[2.0, 0.5], edge_order=edge)
        for g, w in zip(got, np.gradient(f, 2.0, 0.5, edge_order=edge), strict=True):
            close(g, w)
        coords = np.cumsum(RNG.uniform(0.5, 2, 6))
        (g,) = ember.gradient(t64(f), spacing=(t64(coords),), dim=1, edge_order=edge)
        close(g, np.gradient(f, coords, axis=1, edge_order=edge), rtol=1e-9)
    (g,) = ember.gradient(t64(f[0]), spacing=3.0)
    close(g, np.gradient(f[0], 3.0))
    got = ember.gradient(ember.tensor([1, 2, 4]))
    assert got[0].dtype == ember.float32 and got[0].tolist() == [1.0, 1.5, 2.0]
    (g,) = ember.gradient(t64(f), dim=-1)
    close(g, np.gradient(f, axis=1))
    assert gradcheck(lambda t: ember.gradient(t, edge_order=2)[1], (t64(f, requires_grad=True),))
    with pytest.raises(RuntimeError, match="torch.gradient only supports edge_order=1 and edge_order=2."):
        ember.gradient(t64(f), edge_order=3)
    with pytest.raises(RuntimeError, match=r"expected each dimension size to be at least edge_order\+1"):
        ember.gradient(ember.ones(1))
    with pytest.raises(RuntimeError, match="a list of length equal to 'self.dim\\(\\) = 2', since dim argument was not "
                                           "given, but got a list of length 1"):
        ember.gradient(ember.ones(2, 3), spacing=[2.0])
    with pytest.raises(RuntimeError, match="coordinates along dim 0 to have 3 elements, one per sample, but got 2"):
        ember.gradient(ember.ones(3), spacing=(ember.tensor([0.0, 1.0]),))


def test_deprecated_resize():
    x = t64(np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.t().resize(3, 2)
    close(y, np.arange(6.0).reshape(2, 3).T.reshape(3, 2))
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert x.resize_as(ember.zeros(6)).shape == (6,)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="autograd's resize can only change the shape"):
        x.resize(4)


def test_testing_assert_close():
    from ember.testing import assert_allclose, assert_close, make_tensor

    assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-6]))
    assert_close(t64([1.0]), t64([1.0 + 1e-8]))
    assert_close(ember.tensor([float("nan")]), ember.tensor([float("nan")]), equal_nan=True)
    assert_close(ember.tensor([float("inf")]), ember.tensor([float("inf")]))
    assert_close(1.0, 1.0 + 1e-9)
    assert_close([ember.ones(2), {"a": 3}], [ember.ones(2), {"a": 3}])
    assert_close(np.ones(2), np.ones(2))
    assert_close(ember.ones(2, 2), ember.ones(2, 2).t())
    assert_close(ember.ones(2, dtype=ember.float64), ember.ones(2), check_dtype=False)
    assert_close(ember.zeros(0), ember.zeros(0))
    with pytest.raises(AssertionError, match=r"Tensor-likes are not close!\n\nMismatched elements: 1 / 3 \(33.3%\)\n"
                                             r"Greatest absolute difference: 0.5 at index \(1,\) \(up to 1e-05 allowed\)"
                                             r"\nGreatest relative difference: 0.2000000029802322\d* at index \(1,\) "
                                             r"\(up to 1.3e-06 allowed\)"):
        assert_close(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 2.5, 3.0]))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):
        assert_close(ember.tensor([1, 2]), ember.tensor([1, 3]))
    with pytest.raises(AssertionError, match="The values for attribute 'shape' do not match"):
        assert_close(ember.ones(2), ember.ones(3))
    with pytest.raises(AssertionError, match="The values for attribute 'dtype' do not match: ember.float32 != "
                                             "ember.float64."):
        assert_close(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(AssertionError, match=r"The values for attribute 'stride\(\)' do not match"):
        assert_close(ember.ones(2, 2), ember.ones(2, 2).t(), check_stride=True)
    with pytest.raises(AssertionError, match=r"The failure occurred for item \[1\]\['a'\]"):
        assert_close([1, {"a": ember.ones(1)}], [1, {"a": ember.zeros(1)}])
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(ember.ones(1), ember.zeros(1), msg="custom")
    with pytest.raises(AssertionError, match="^Scalars are not close!"):
        assert_close(1.0, 1.1)
    with pytest.raises(AssertionError, match="nan at index"):
        assert_close(ember.tensor([float("nan")]), ember.tensor([float("nan")]))
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."):
        assert_close(ember.ones(1), ember.ones(1), rtol=1e-3)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        assert_close(ember.ones(2), [1.0, 1.0])
    with pytest.warns(FutureWarning):
        assert_allclose(ember.ones(2), [1.0, 1.0])
    t = make_tensor(3, 4, dtype=ember.int64, low=-2, high=3)
    assert t.shape == (3, 4) and t.dtype == ember.int64
    assert -2 <= ember.amin(t).item() and ember.amax(t).item() < 3
    f = make_tensor((5, 6), dtype=ember.float64, noncontiguous=True, exclude_zero=True, requires_grad=True)
    assert not f.is_contiguous() and f.requires_grad and f.shape == (5, 6)
    assert (np.abs(f.detach().numpy()) <= 9).all()
    assert make_tensor(2, dtype=ember.bool).dtype == ember.bool


# ---- geqrf / orgqr / ormqr, conv_tbc, low-rank SVD ------------------------------------------------


def _householder_q(a, tau):
    """Q = H_1 ... H_k from geqrf's compact form, built with NumPy."""
    m = a.shape[0]
    q = np.eye(m)
    for j in range(len(tau)):
        v = np.zeros(m)
        v[j] = 1.0
        v[j + 1:] = a[j + 1:, j]
        q = q @ (np.eye(m) - tau[j] * np.outer(v, v))
    return q


def test_geqrf_orgqr_ormqr():
    for shape in ((5, 3), (3, 5), (4, 4)):
        A = RNG.normal(size=shape)
        for label, x in layouts(A):
            a, tau = ember.geqrf(x)
            an, taun = a.numpy(), tau.numpy()
            q = _householder_q(an, taun)
            r = np.triu(an)
            close(q[:, :shape[0]] @ r, A, rtol=1e-10, atol=1e-12, err_msg=f"{shape} {label}")
            close(q.T @ q, np.eye(shape[0]), atol=1e-12)
            k = min(shape)
            close(ember.orgqr(a[:, :k] if shape[1] > shape[0] else a, tau), q[:, :min(shape[1], k)], atol=1e-12)
            C = RNG.normal(size=(shape[0], 2))
            close(ember.ormqr(a, tau, t64(C)), q @ C, atol=1e-12)
            close(a.ormqr(tau, t64(C), transpose=True), q.T @ C, atol=1e-12)
            close(ember.ormqr(a, tau, t64(C.T), left=False), C.T @ q, atol=1e-12)
    batch = RNG.normal(size=(2, 4, 3))
    a, tau = ember.geqrf(t64(batch))
    for i in range(2):
        close(_householder_q(a[i].numpy(), tau[i].numpy())[:, :3] @ np.triu(a[i].numpy())[:3], batch[i], atol=1e-12)
    zero_col = np.array([[0.0, 1.0], [0.0, 2.0]])
    a, tau = ember.geqrf(t64(zero_col))
    close(_householder_q(a.numpy(), tau.numpy()) @ np.triu(a.numpy()), zero_col, atol=1e-12)
    with pytest.raises(RuntimeError, match="torch.geqrf: input must have at least 2 dimensions."):
        ember.geqrf(ember.ones(3))
    with pytest.raises(RuntimeError, match="other.shape\\[-2\\] must be equal to input.shape\\[-2\\]"):
        ember.ormqr(*ember.geqrf(t64(RNG.normal(size=(4, 3)))), ember.ones(3, 2, dtype=ember.float64))


def test_conv_tbc():
    x = RNG.normal(size=(7, 2, 3))  # (time, batch, in)
    w = RNG.normal(size=(3, 3, 4))  # (kernel, in, out)
    b = RNG.normal(size=4)
    pad = 1
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    want = np.stack([np.einsum("kbi,kio->bo", xp[t:t + 3], w) for t in range(xp.shape[0] - 2)]) + b
    close(ember.conv_tbc(t64(x), t64(w), t64(b), pad), want, rtol=1e-10)
    close(F.conv_tbc(t64(x), t64(w), t64(b)), want[1:-1], rtol=1e-10)
    args = (t64(x, True), t64(w, True), t64(b, True))
    assert gradcheck(lambda *t: ember.conv_tbc(*t, 1), args)
    with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not == dim 1 in the weight tensor"):
        ember.conv_tbc(t64(x), t64(w[:, :2]), t64(b))
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == {"bilinear": 0, "nearest": 1, "bicubic": 2}
    assert F.GRID_SAMPLE_PADDING_MODES == {"zeros": 0, "border": 1, "reflection": 2}


def test_svd_pca_lowrank():
    ember.manual_seed(3)
    low = RNG.normal(size=(40, 3)) @ RNG.normal(size=(3, 30))
    U, S, V = ember.svd_lowrank(t64(low), q=5)
    assert U.shape == (40, 5) and S.shape == (5,) and V.shape == (30, 5)
    close(U @ ember.diag(S) @ V.t(), low, atol=1e-10)
    close(S[:3], np.linalg.svd(low, compute_uv=False)[:3], rtol=1e-9)
    centered = low - low.mean(axis=0)
    U, S, V = ember.pca_lowrank(t64(low), q=4)
    close(S[:3], np.linalg.svd(centered, compute_uv=False)[:3], rtol=1e-9)
    U, S, V = ember.pca_lowrank(t64(low), q=3, center=False)
    close(S, np.linalg.svd(low, compute_uv=False)[:3], rtol=1e-9)
    with pytest.raises(ValueError, match=r"q\(=50\) must be non-negative integer and not greater than min\(m, n\)=30"):
        ember.svd_lowrank(t64(low), q=50)


# ---- histogramdd, frombuffer, CrossMapLRN2d, Container --------------------------------------------


def test_histogramdd():
    pts = RNG.normal(size=(200, 2))
    w = RNG.uniform(size=200)
    h = ember.histogramdd(t64(pts), bins=[4, 5])
    want, edges = np.histogramdd(pts, bins=[4, 5])
    close(h.hist, want)
    for got_edges, want_edges in zip(h.bin_edges, edges, strict=True):
        close(got_edges, want_edges, rtol=1e-12)
    h = ember.histogramdd(t64(pts), bins=3, range=[-1.0, 1.0, -2.0, 2.0], weight=t64(w), density=True)
    want, _ = np.histogramdd(pts, bins=3, range=[(-1, 1), (-2, 2)], weights=w, density=True)
    close(h.hist, want, rtol=1e-10)
    e0, e1 = np.array([-3.0, 0.0, 0.5, 3.0]), np.array([-1.0, 1.0])
    h = ember.histogramdd(t64(pts), bins=[t64(e0), t64(e1)])
    close(h.hist, np.histogramdd(pts, bins=[e0, e1])[0])
    batch = ember.histogramdd(t64(pts.reshape(2, 100, 2)), bins=2)
    close(batch.hist, np.histogramdd(pts, bins=2)[0])
    edge = t64([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5], [0.5, 2.0]])
    assert ember.histogramdd(edge, bins=[2, 3]).hist.tolist() == [[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    with pytest.raises(RuntimeError, match="input tensor should have at least 2 dimensions"):
        ember.histogramdd(ember.ones(3), bins=2)
    with pytest.raises(RuntimeError, match="The size of bins must be equal to the innermost dimension of the input."):
        ember.histogramdd(edge, bins=[2])
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        ember.histogramdd(ember.ones(3, 2, dtype=ember.int64), bins=2)


def test_frombuffer():
    data = bytearray(np.array([1.0, 2.0, 3.0], dtype=np.float32).tobytes())
    t = ember.frombuffer(data, dtype=ember.float32)
    assert t.tolist() == [1.0, 2.0, 3.0]
    t[0] = 7.0  # shares the buffer's memory
    assert np.frombuffer(data, dtype=np.float32)[0] == 7.0
    assert ember.frombuffer(data, dtype=ember.float32, count=1, offset=4).tolist() == [2.0]
    with pytest.raises(ValueError, match="must be less than buffer length"):
        ember.frombuffer(data, dtype=ember.float32, offset=12)
    with pytest.raises(ValueError, match="must be a multiple of element size \\(8\\)"):
        ember.frombuffer(data, dtype=ember.float64)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        ember.frombuffer(data, dtype=ember.float32, count=4)


def test_cross_map_lrn2d():
    x = RNG.normal(size=(2, 6, 3, 3))
    for size in (2, 3, 5):
        module = ember.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2.0)
        pre = (size - 1) // 2 + 1
        want = np.empty_like(x)
        for c in range(6):
            window = set(range(0, min(c + pre - 1, 5) + 1)) - set(range(1, c - pre + 1))  # PyTorch's recurrence
            s = sum(x[:, j] ** 2 for j in window)
            want[:, c] = x[:, c] * (2.0 + 0.5 / size * s) ** -0.7
        close(module(t64(x)), want, rtol=1e-12)
    assert gradcheck(ember.nn.CrossMapLRN2d(3), (t64(x[:1, :4, :2, :2], requires_grad=True),))
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        ember.nn.CrossMapLRN2d(3)(ember.ones(2, 3, 4))


def test_container():
    with pytest.warns(FutureWarning, match="nn.Container is deprecated"):
        c = ember.nn.Container(a=ember.nn.Linear(2, 1), b=ember.nn.ReLU())
    assert [n for n, _ in c.named_children()] == ["a", "b"]
    assert len(list(c.parameters())) == 2


# ---- optim.Adafactor ------------------------------------------------------------------------------


def _adafactor_ref(params, grads_fn, steps, lr, beta2_decay=-0.8, eps1=None, eps2=1e-3, d=1.0, wd=0.0):
    """Adafactor in NumPy float64: factored second moments for matrices, full for vectors."""
    eps1 = np.finfo(np.float64).eps if eps1 is None else eps1
    state = [None] * len(params)
    for t in range(1, steps + 1):
        grads = grads_fn(params)
        for i, (p, g) in enumerate(zip(params, grads, strict=True)):
            weight = t ** beta2_decay
            alpha = max(eps2, np.sqrt(np.mean(p ** 2))) * min(lr, 1 / np.sqrt(t))
            p *= 1 - lr * wd
            if g.ndim > 1:
                if state[i] is None:
                    state[i] = [np.zeros(g.shape[:-1] + (1,)), np.zeros(g.shape[:-2] + (1, g.shape[-1]))]
                row, col = state[i]
                row += weight * ((g ** 2).mean(-1, keepdims=True) - row)
                col += weight * ((g ** 2).mean(-2, keepdims=True) - col)
                est = row @ col / np.maximum(row.mean(-2, keepdims=True), eps1)
            else:
                if state[i] is None:
                    state[i] = np.zeros_like(g)
                state[i] += weight * (g ** 2 - state[i])
                est = state[i].copy()
            update = g / np.sqrt(np.maximum(est, eps1 * eps1))
            p -= alpha / max(1.0, np.sqrt(np.mean(update ** 2)) / d) * update
    return params


def test_adafactor():
    W, b, X = RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(5, 3))

    def grads_fn(ps):
        w, bias = ps
        r = X @ w + bias
        return [2 * X.T @ r, 2 * r.sum(0)]

    want = _adafactor_ref([W.copy(), b.copy()], grads_fn, 6, lr=0.05, wd=0.1)
    w, bias = t64(W, requires_grad=True), t64(b, requires_grad=True)
    opt = ember.optim.Adafactor([w, bias], lr=0.05, weight_decay=0.1)
    for _ in range(6):
        opt.zero_grad()
        ((t64(X) @ w + bias) ** 2).sum().backward()
        opt.step()
    close(w, want[0], rtol=1e-10)
    close(bias, want[1], rtol=1e-10)
    assert set(opt.state[w]) == {"step", "row_var", "col_var"} and opt.state[w]["step"].item() == 6.0
    m = t64(W, requires_grad=True)
    opt = ember.optim.Adafactor([m], lr=0.1, maximize=True, eps=(1e-20, 1e-2), d=2.0)
    m.grad = t64(-np.ones((3, 4)))
    opt.step()
    want = _adafactor_ref([W.copy()], lambda ps: [np.ones((3, 4))], 1, lr=0.1, eps1=1e-20, eps2=1e-2, d=2.0)
    close(m, want[0], rtol=1e-10)
    with pytest.raises(ValueError, match="beta2_decay should be <= 0 but is: 0.5"):
        ember.optim.Adafactor([m], beta2_decay=0.5)
    with pytest.raises(ValueError, match="Clipping threshold d should be >= 1 but is: 0.5"):
        ember.optim.Adafactor([m], d=0.5)
    z = ember.zeros(2, dtype=ember.complex64, requires_grad=True)
    z.grad = ember.ones(2, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        ember.optim.Adafactor([z]).step()


# ---- nn.attention ---------------------------------------------------------------------------------


def test_sdpa_kernel():
    from ember.nn.attention import SDPBackend, sdpa_kernel

    q = t64(RNG.normal(size=(1, 2, 4, 8)))
    want = F.scaled_dot_product_attention(q, q, q)
    for backends in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        with sdpa_kernel(backends):
            close(F.scaled_dot_product_attention(q, q, q), want.numpy())
    message = "No viable backend for scaled_dot_product_attention was found"
    for backends in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, []):
        with sdpa_kernel(backends), pytest.raises(RuntimeError, match=message):
            F.scaled_dot_product_attention(q, q, q)
    close(F.scaled_dot_product_attention(q, q, q), want.numpy())  # restored on exit
    assert str(SDPBackend.MATH) == "SDPBackend.MATH" and int(SDPBackend.FLASH_ATTENTION) == 1
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"), sdpa_kernel("math"):
        pass


# ---- igamma / igammac -----------------------------------------------------------------------------


def _lower_gamma_ref(a, x):
    """P(a, x) = int_0^x t^(a-1) e^-t dt / Gamma(a) by Gauss-Legendre quadrature on 50 pieces
    (for a < 1 after u = t^a, which removes the singularity at 0)."""
    nodes, weights = np.polynomial.legendre.leggauss(64)
    if a < 1:
        upper, integrand, factor = x ** a, (lambda u: np.exp(-u ** (1 / a))), 1 / a
    else:
        upper, integrand, factor = x, (lambda t: t ** (a - 1) * np.exp(-t)), 1.0
    edges = np.linspace(0, upper, 51)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        total += half * np.sum(weights * integrand(mid + half * nodes))
    return factor * total / math.gamma(a)


def test_igamma_igammac():
    a_values = np.array([0.3, 0.5, 1.0, 2.5, 7.0, 20.0])
    x_values = np.array([0.01, 0.5, 1.0, 3.0, 10.0, 25.0])
    a, x = np.meshgrid(a_values, x_values, indexing="ij")
    want = np.vectorize(_lower_gamma_ref)(a, x)
    for label, (ta, tx) in {"contiguous": (t64(a), t64(x)), "transposed": (noncontig(a), noncontig(x))}.items():
        close(ember.igamma(ta, tx), want, rtol=1e-11, atol=1e-14, err_msg=label)
        # 1 - P of the quadrature is good to ~1e-11 absolutely, so small Q are checked to that
        close(ember.igammac(ta, tx), 1 - want, rtol=1e-11, atol=2e-11, err_msg=label)
    close(ember.igamma(t64(a_values)[:, None], t64(x_values)), want, rtol=1e-11, atol=1e-14)  # broadcast
    close(t64(2.5).igamma(t64(3.0)), _lower_gamma_ref(2.5, 3.0), rtol=1e-11)
    assert ember.igamma(ember.zeros(0, dtype=ember.float64), t64(1.0)).shape == (0,)
    specials_a = t64([0.0, 0.0, 1.0, 2.0, -1.0, np.inf, np.inf, 3.0, np.nan])
    specials_x = t64([0.0, 1.0, 0.0, np.inf, 1.0, 1.0, np.inf, -1.0, 1.0])
    got = ember.igamma(specials_a, specials_x).numpy()
    np.testing.assert_equal(got, [np.nan, 1.0, 0.0, 1.0, np.nan, 0.0, np.nan, np.nan, np.nan])
    got = ember.igammac(specials_a, specials_x).numpy()
    np.testing.assert_equal(got, [np.nan, 0.0, 1.0, 0.0, np.nan, 1.0, np.nan, np.nan, np.nan])
    f32 = ember.igamma(ember.tensor([2.0]), ember.tensor([1.5]))
    assert f32.dtype == ember.float32
    close(f32, _lower_gamma_ref(2.0, 1.5), rtol=1e-6)
    y = t64([2.0, 3.0])
    assert y.igamma_(t64([1.0, 4.0])) is y
    close(y, [_lower_gamma_ref(2.0, 1.0), _lower_gamma_ref(3.0, 4.0)], rtol=1e-11)
    xs = t64([0.7, 2.0, 9.0], requires_grad=True)
    assert gradcheck(lambda t: ember.igamma(t64([1.5, 2.5, 8.0]), t), (xs,))
    assert gradcheck(lambda t: ember.igammac(t64([1.5, 2.5, 8.0]), t), (xs,))
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented."):
        ember.igamma(t64([2.0], requires_grad=True), t64([1.0])).sum().backward()
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):
        ember.igamma(ember.tensor([1, 2]), ember.tensor([1, 2]))


def test_legacy_decompositions_fill_their_out_tuples():
    """torch.qr/svd/lu/triangular_solve(out=(...)) write every result into the given tensors and
    return them; column_stack(out=) writes too."""
    a = ember.tensor(np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]))
    q, r = ember.empty(3, 3, dtype=ember.float64), ember.empty(3, 3, dtype=ember.float64)
    got = ember.qr(a, out=(q, r))
    assert got.Q is q and got.R is r
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), rtol=1e-12, atol=1e-12)
    u, s, v = (ember.empty(3, 3, dtype=ember.float64), ember.empty(3, dtype=ember.float64),
               ember.empty(3, 3, dtype=ember.float64))
    assert ember.svd(a, out=(u, s, v)).S is s
    np.testing.assert_allclose((u @ ember.diag(s) @ v.t()).numpy(), a.numpy(), rtol=1e-12, atol=1e-12)
    lu_, piv = ember.empty(3, 3, dtype=ember.float64), ember.empty(3, dtype=ember.int32)
    ember.lu(a, out=(lu_, piv))
    want_lu, want_piv = ember.linalg.lu_factor(a)
    np.testing.assert_allclose(lu_.numpy(), want_lu.numpy())
    np.testing.assert_array_equal(piv.numpy(), want_piv.numpy())
    x, coeff = ember.empty(3, 1, dtype=ember.float64), ember.empty(3, 3, dtype=ember.float64)
    b = ember.ones(3, 1, dtype=ember.float64)
    ember.triangular_solve(b, a.triu(), out=(x, coeff))
    np.testing.assert_allclose(np.triu(a.numpy()) @ x.numpy(), b.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(coeff.numpy(), np.triu(a.numpy()))
    cols = ember.empty(3, 2, dtype=ember.float64)
    assert ember.column_stack([a[0], a[1]], out=cols) is cols
    np.testing.assert_array_equal(cols.numpy(), np.stack([a.numpy()[0], a.numpy()[1]], 1))
    with pytest.raises(TypeError, match=r"qr\(\): argument 'out' must be a tuple of 2 Tensors"):
        ember.qr(a, out=q)
