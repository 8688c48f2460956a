"""ember.masked.MaskedTensor (PyTorch's MaskedTensor prototype): construction and its checks, the
repr, every supported unary, binary and reduction op against float64 NumPy masked arrays on
contiguous, transposed, zero-size and 0-d inputs, views and indexing, where/cat/stack, the mask
mismatch errors, autograd (gradcheck through get_data, no gradient where masked out) and the
errors for what PyTorch's prototype does not support."""

import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.masked import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor
from ember.masked import _tensor as T

RNG = np.random.default_rng(18)
X = RNG.uniform(0.2, 2.0, (4, 5)) * np.where(RNG.random((4, 5)) < 0.3, -1, 1)
MASK = RNG.random((4, 5)) < 0.6
MASK[1] = False  # a row with nothing left
MASK[:, 3] = False  # and a column
MASK[0, 0] = MASK[2, 1] = True


def _e(a, dtype=None):
    return ember.tensor(np.array(a), dtype=dtype)


def _np(t):
    return np.asarray(t.detach().cpu().numpy()) if isinstance(t, ember.Tensor) else np.asarray(t)


def _mt(x=X, m=MASK, dtype=ember.float64, **kw):
    return masked_tensor(_e(x, dtype), _e(m), **kw)


def _cases():
    """(name, MaskedTensor, data as float64 numpy, mask as numpy): contiguous, transposed (a
    non-contiguous view), zero-size and 0-d inputs."""
    yield "contiguous", _mt(), X, MASK
    t = as_masked_tensor(_e(X).t(), _e(MASK).t())
    assert not t.is_contiguous()
    yield "transposed", t, X.T, MASK.T
    yield "zero-size", _mt(np.zeros((0, 5)), np.zeros((0, 5), bool)), np.zeros((0, 5)), np.zeros((0, 5), bool)
    yield "0-d", _mt(np.array(1.5), np.array(True)), np.array(1.5), np.array(True)
    yield "0-d masked", _mt(np.array(1.5), np.array(False)), np.array(1.5), np.array(False)


CASES = list(_cases())
CASE_IDS = [c[0] for c in CASES]


def _check(out, ref, mask, rtol=1e-12, atol=1e-12):
    """`out` is a MaskedTensor with mask `mask` and, where that holds, the values of `ref`."""
    assert isinstance(out, MaskedTensor)
    got_mask = _np(out.get_mask())
    assert got_mask.dtype == np.bool_
    np.testing.assert_array_equal(got_mask, np.broadcast_to(mask, got_mask.shape))
    assert tuple(out.shape) == np.shape(ref)
    data = _np(out.get_data())
    np.testing.assert_allclose(np.where(mask, data, 0), np.where(mask, ref, 0), rtol=rtol, atol=atol)


# ---- construction ----------------------------------------------------------------------------

def test_masked_tensor_parts_and_metadata():
    mt = _mt()
    assert is_masked_tensor(mt) and not is_masked_tensor(_e(X))
    assert isinstance(mt, ember.masked.maskedtensor.MaskedTensor)
    assert mt.shape == ember.Size([4, 5]) and mt.size(1) == 5 and mt.dim() == mt.ndim == 2 and mt.numel() == 20
    assert mt.dtype == ember.float64 and mt.device == ember.device("cpu") and mt.layout == ember.strided
    assert not mt.is_sparse and not mt.is_sparse_coo() and not mt.is_sparse_csr()
    assert len(mt) == 4 and mt.is_floating_point() and not mt.requires_grad and mt.is_leaf
    np.testing.assert_array_equal(_np(mt.get_data()), X)
    np.testing.assert_array_equal(_np(mt.get_mask()), MASK)
    assert mt._masked_data is mt.get_data() and mt._masked_mask is mt.get_mask()
    np.testing.assert_array_equal(_np(mt.to_tensor(0)), np.where(MASK, X, 0))
    np.testing.assert_array_equal(_np(mt.to_tensor(math.nan)), np.where(MASK, X, np.nan))


def test_masked_tensor_copies_as_masked_tensor_does_not():
    data, mask = _e(X), _e(MASK)
    mt = masked_tensor(data, mask)
    data[0, 0] = 100.0
    mask[0, 0] = False
    assert _np(mt.get_data())[0, 0] == X[0, 0] and _np(mt.get_mask())[0, 0]
    leaf = _e(X).requires_grad_()
    kept = as_masked_tensor(leaf * 2, _e(MASK))
    assert kept.requires_grad and not kept.is_leaf and kept.grad_fn is not None
    copied = masked_tensor(leaf * 2, _e(MASK))
    assert not copied.requires_grad and copied.is_leaf
    assert masked_tensor(_e(X), _e(MASK), requires_grad=True).requires_grad
    direct = MaskedTensor(_e(X), _e(MASK), requires_grad=True)
    assert direct.requires_grad and direct.is_leaf


@pytest.mark.parametrize("dtype", [ember.float16, ember.float32, ember.float64, ember.int8, ember.int16,
                                   ember.int32, ember.int64, ember.bool])
def test_supported_dtypes(dtype):
    mt = masked_tensor(ember.ones(3, dtype=dtype), _e(np.array([True, False, True])))
    assert mt.dtype == dtype


def test_construction_errors():
    data, mask = _e(X), _e(MASK)
    with pytest.raises(TypeError, match="^data must be a Tensor$"):
        masked_tensor(X.tolist(), mask)
    with pytest.raises(TypeError, match="^mask must be a Tensor$"):
        masked_tensor(data, MASK.tolist())
    with pytest.raises(TypeError, match=r"^mask must have dtype bool\.$"):
        masked_tensor(data, mask.int())
    with pytest.raises(ValueError, match=r"^data\.size\(\) must equal mask\.size\(\)$"):
        masked_tensor(data, mask[:2])
    with pytest.raises(ValueError, match=r"data\.size\(\) must equal mask\.size\(\)"):
        as_masked_tensor(data, mask.t())
    for bad in (ember.complex64, ember.complex128, ember.bfloat16, ember.uint8):
        with pytest.raises(TypeError, match=rf"^{bad} is not supported in MaskedTensor\.$"):
            masked_tensor(data.to(bad), mask)
    with pytest.raises(TypeError, match="^data and mask must have the same layout\\.$"):
        masked_tensor(data.to_sparse(), mask)
    with pytest.raises(TypeError, match="^data and mask must have the same layout\\.$"):
        masked_tensor(data, mask.to_sparse())
    with pytest.raises(NotImplementedError, match="sparse_coo data and mask is not supported"):
        masked_tensor(data.to_sparse(), mask.to_sparse())
    with pytest.raises(TypeError, match="is not supported in MaskedTensor"):
        _mt().to(ember.complex64)


# ---- repr ------------------------------------------------------------------------------------

def test_repr():
    d = _e(np.array([[1.0, 2, 3], [4, 5, 6]]), ember.float32)
    m = _e(np.array([[True, False, True], [False, False, True]]))
    assert repr(masked_tensor(d, m)) == (
        "MaskedTensor(\n  [\n    [  1.0000,       --,   3.0000],\n    [      --,       --,   6.0000]\n  ]\n)")
    assert str(masked_tensor(d, m)) == repr(masked_tensor(d, m))
    assert repr(masked_tensor(d[0], m[0])) == "MaskedTensor(\n  [  1.0000,       --,   3.0000]\n)"
    assert repr(masked_tensor(d.long(), m)) == (
        "MaskedTensor(\n  [\n    [1,       --, 3],\n    [      --,       --, 6]\n  ]\n)")
    assert repr(masked_tensor(d > 2, m)[0]) == "MaskedTensor(\n  [False,       --, True]\n)"
    assert repr(masked_tensor(ember.tensor(3.0), ember.tensor(True))) == "MaskedTensor(  3.0000, True)"
    assert repr(masked_tensor(ember.tensor(3.0), ember.tensor(False))) == "MaskedTensor(--, False)"
    assert repr(masked_tensor(ember.tensor(7), ember.tensor(True))) == "MaskedTensor(7, True)"
    assert repr(masked_tensor(ember.zeros(0, 3), ember.zeros(0, 3, dtype=ember.bool))) == (
        "MaskedTensor(\n  [\n  \n  ]\n)")
    assert repr(masked_tensor(ember.zeros(0), ember.zeros(0, dtype=ember.bool))) == "MaskedTensor(\n  []\n)"
    three = masked_tensor(ember.arange(8.0).reshape(2, 2, 2), ember.ones(2, 2, 2, dtype=ember.bool))
    assert repr(three).splitlines()[:4] == ["MaskedTensor(", "  [", "    [", "      [  0.0000,   1.0000],"]


# ---- unary ops -------------------------------------------------------------------------------

def _sinc(x):
    return np.sinc(x)


UNARY = [  # (name, args, numpy reference, input transform so the op is defined)
    ("abs", (), np.abs, None), ("absolute", (), np.abs, None), ("neg", (), np.negative, None),
    ("negative", (), np.negative, None), ("positive", (), np.positive, None), ("exp", (), np.exp, None),
    ("exp2", (), np.exp2, None), ("expm1", (), np.expm1, None), ("log", (), np.log, np.abs),
    ("log2", (), np.log2, np.abs), ("log10", (), np.log10, np.abs), ("log1p", (), np.log1p, np.abs),
    ("sqrt", (), np.sqrt, np.abs), ("rsqrt", (), lambda x: 1 / np.sqrt(x), np.abs),
    ("sin", (), np.sin, None), ("cos", (), np.cos, None), ("tan", (), np.tan, None), ("sinh", (), np.sinh, None),
    ("cosh", (), np.cosh, None), ("tanh", (), np.tanh, None), ("asin", (), np.arcsin, lambda x: x / 2.5),
    ("arcsin", (), np.arcsin, lambda x: x / 2.5), ("acos", (), np.arccos, lambda x: x / 2.5),
    ("arccos", (), np.arccos, lambda x: x / 2.5), ("atan", (), np.arctan, None), ("arctan", (), np.arctan, None),
    ("asinh", (), np.arcsinh, None), ("arcsinh", (), np.arcsinh, None),
    ("acosh", (), np.arccosh, lambda x: np.abs(x) + 1), ("arccosh", (), np.arccosh, lambda x: np.abs(x) + 1),
    ("atanh", (), np.arctanh, lambda x: x / 2.5), ("arctanh", (), np.arctanh, lambda x: x / 2.5),
    ("sigmoid", (), lambda x: 1 / (1 + np.exp(-x)), None), ("square", (), np.square, None),
    ("reciprocal", (), np.reciprocal, None), ("ceil", (), np.ceil, None), ("floor", (), np.floor, None),
    ("trunc", (), np.trunc, None), ("fix", (), np.trunc, None), ("round", (), np.round, lambda x: x * 3),
    ("frac", (), lambda x: x - np.trunc(x), None), ("sign", (), np.sign, None), ("sgn", (), np.sign, None),
    ("deg2rad", (), np.deg2rad, None), ("rad2deg", (), np.rad2deg, None), ("sinc", (), _sinc, None),
    ("erf", (), np.vectorize(math.erf, otypes=[float]), None), ("erfc", (), np.vectorize(math.erfc, otypes=[float]), None),
    ("lgamma", (), np.vectorize(math.lgamma, otypes=[float]), np.abs), ("i0", (), np.i0, None),
    ("clamp", (-0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), None),
    ("clip", (-0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), None),
    ("pow", (2,), np.square, None), ("pow", (0.5,), np.sqrt, np.abs),
    ("logit", (), lambda x: np.log(x / (1 - x)), lambda x: np.abs(x) / 2.5),
    ("nan_to_num", (), lambda x: x, None), ("conj_physical", (), lambda x: x, None),
    ("angle", (), lambda x: np.where(x < 0, np.pi, 0.0), None),
]
UNARY_IDS = [f"{n}{a}" for n, a, _, _ in UNARY]


@pytest.mark.parametrize("name,args,ref,pre", UNARY, ids=UNARY_IDS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_unary(name, args, ref, pre, case):
    _, mt, x, m = case
    if pre is not None:
        mt = as_masked_tensor(_e(pre(x)), mt.get_mask())
        x = pre(x)
    with np.errstate(all="ignore"):
        want = ref(x)
    _check(getattr(mt, name)(*args), want, m, rtol=1e-10)
    _check(T.module_functions()[name](mt, *args), want, m, rtol=1e-10)
    if f"{name}_" in T.INPLACE_UNARY_NAMES:
        copy = mt.clone()
        assert getattr(copy, f"{name}_")(*args) is copy
        _check(copy, want, m, rtol=1e-10)


def test_unary_bool_results_and_integers():
    mt = _mt(np.array([1.0, np.nan, -2.0]), np.array([True, True, False]))
    _check(mt.isnan(), np.array([False, True, False]), np.array([True, True, False]))
    _check(mt.signbit(), np.array([False, False, True]), np.array([True, True, False]))
    ints = masked_tensor(ember.tensor([1, 2, 3]), ember.tensor([True, False, True]))
    _check(ints.bitwise_not(), np.array([-2, -3, -4]), np.array([True, False, True]))
    _check(~ints, np.array([-2, -3, -4]), np.array([True, False, True]))
    _check(-ints, np.array([-1, -2, -3]), np.array([True, False, True]))
    _check(abs(-ints), np.array([1, 2, 3]), np.array([True, False, True]))
    _check(+ints, np.array([1, 2, 3]), np.array([True, False, True]))
    _check(mt ** 2, np.array([1.0, np.nan, 4.0]), np.array([True, True, False]))


def test_unary_rejects_tensor_arguments():
    mt = _mt()
    with pytest.raises(TypeError, match="unary ops do not support additional Tensor arguments"):
        mt.clamp(min=ember.tensor(0.0))
    with pytest.raises(TypeError, match="unary ops do not support additional Tensor arguments"):
        mt.pow(mt)
    with pytest.raises(TypeError, match="unary ops do not support additional Tensor arguments"):
        2 ** mt


# ---- binary ops ------------------------------------------------------------------------------

BINARY = [
    ("add", np.add), ("sub", np.subtract), ("subtract", np.subtract), ("mul", np.multiply),
    ("multiply", np.multiply), ("div", np.divide), ("divide", np.divide), ("true_divide", np.divide),
    ("floor_divide", np.floor_divide), ("remainder", np.mod), ("fmod", np.fmod), ("atan2", np.arctan2),
    ("arctan2", np.arctan2), ("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2),
    ("maximum", np.maximum), ("minimum", np.minimum), ("fmax", np.fmax), ("fmin", np.fmin),
    ("nextafter", np.nextafter), ("eq", np.equal), ("ne", np.not_equal), ("not_equal", np.not_equal),
    ("lt", np.less), ("less", np.less), ("le", np.less_equal), ("less_equal", np.less_equal),
    ("gt", np.greater), ("greater", np.greater), ("ge", np.greater_equal), ("greater_equal", np.greater_equal),
]
Y = RNG.uniform(0.2, 2.0, X.shape)


@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_binary(name, ref, case):
    _, mt, x, m = case
    y = Y if x.shape == Y.shape else Y.T if x.shape == Y.T.shape else np.full(x.shape, 0.7)
    other = as_masked_tensor(_e(y), mt.get_mask().clone())  # an equal mask, another tensor
    with np.errstate(all="ignore"):
        _check(getattr(mt, name)(other), ref(x, y), m)
        _check(getattr(mt, name)(0.7), ref(x, 0.7), m)
        _check(getattr(mt, name)(_e(y)), ref(x, y), m)
        fn = T.module_functions()[name]
        _check(fn(mt, other), ref(x, y), m)
        _check(fn(_e(y), mt), ref(y, x), m)
        if f"{name}_" in T.INPLACE_BINARY_NAMES:
            copy = mt.clone()
            assert getattr(copy, f"{name}_")(other) is copy
            _check(copy, ref(x, y).astype(x.dtype), m)


def test_binary_operators_and_promotion():
    mt, x = _mt(), X
    for got, want in [(mt + 1, x + 1), (1 + mt, 1 + x), (mt - 1, x - 1), (1 - mt, 1 - x), (mt * 2, x * 2),
                      (2 * mt, 2 * x), (mt / 2, x / 2), (2 / mt, 2 / x), (mt // 0.5, x // 0.5),
                      (3 // mt, 3 // x), (mt % 0.5, x % 0.5), (3 % mt, 3 % x), (mt + mt, 2 * x),
                      (_e(Y) - mt, Y - x), (mt > 0, x > 0), (mt == mt, x == x), (mt != 0.5, x != 0.5),
                      (mt <= 0, x <= 0), (mt >= 0, x >= 0), (mt < 0, x < 0)]:
        _check(got, want, MASK)
    ints = masked_tensor(ember.tensor([6, 5, 3]), ember.tensor([True, True, False]))
    for got, want in [(ints & 3, [2, 1, 3]), (ints | 1, [7, 5, 3]), (ints ^ 1, [7, 4, 2]), (ints << 1, [12, 10, 6]),
                      (ints >> 1, [3, 2, 1])]:
        _check(got, np.array(want), np.array([True, True, False]))
    assert (ints / 2).dtype == ember.float32 and (ints + 1.5).dtype == ember.float32
    assert (mt.float() + mt.float().double()).dtype == ember.float64
    assert (mt > 0).dtype == ember.bool


def test_inplace_operators():
    mt = _mt()
    before = mt
    mt += 1
    mt *= 2
    mt -= 0.5
    mt /= 4
    assert mt is before
    _check(mt, ((X + 1) * 2 - 0.5) / 4, MASK)
    mt.add_(mt)
    _check(mt, ((X + 1) * 2 - 0.5) / 2, MASK)


def test_binary_mask_mismatch():
    mt = _mt()
    other = _mt(X, ~MASK)
    message = r"^Input masks must match\. If you need support for this, please open an issue on Github\.$"
    with pytest.raises(ValueError, match=message):
        mt + other
    with pytest.raises(ValueError, match=message):
        mt.mul(other)
    with pytest.raises(ValueError, match=message):
        mt.add_(other)
    with pytest.raises(ValueError, match=message):
        mt > other  # noqa: B015
    with pytest.raises(ValueError, match=message):
        mt + _mt(X[:2], MASK[:2])
    with pytest.raises(ValueError, match=message):
        mt + ember.ones(3, 4, 5, dtype=ember.float64)  # a plain operand that broadcasts the result
    with pytest.raises(ValueError, match=message):
        T.module_functions()["maximum"](mt, other)


# ---- reductions ------------------------------------------------------------------------------

def _reduce_ref(name, x, m, dim, keepdim):
    """(values, mask) of a masked reduction over `dim` (None: all), as NumPy computes them."""
    axis = None if dim is None else (tuple(dim) if isinstance(dim, tuple) else dim)
    a = np.ma.array(x, mask=~m)
    count = m.sum(axis=axis, keepdims=keepdim)
    out_mask = count > 0
    with np.errstate(all="ignore"):
        if name in ("sum", "prod", "mean"):
            vals = getattr(np.ma, name)(a, axis=axis, keepdims=keepdim)
        elif name in ("amax", "amin"):
            vals = (np.ma.max if name == "amax" else np.ma.min)(a, axis=axis, keepdims=keepdim)
        elif name in ("argmax", "argmin"):
            if axis is None:
                vals = getattr(np.ma, name)(a.ravel()) if m.any() else 0
                vals = np.reshape(vals, (1,) * x.ndim) if keepdim else np.asarray(vals)
            else:
                vals = getattr(np.ma, name)(a, axis=axis, keepdims=keepdim)
            vals = np.asarray(vals, dtype=x.dtype)
        elif name in ("var", "std"):
            mean = np.where(m, x, 0).sum(axis=axis, keepdims=True) / np.maximum(m.sum(axis=axis, keepdims=True), 1)
            sq = np.where(m, (x - mean) ** 2, 0).sum(axis=axis, keepdims=keepdim)
            vals = np.where(count > 1, sq / np.maximum(count - 1, 1), np.nan)
            vals = np.sqrt(vals) if name == "std" else vals
        elif name == "norm":
            vals = np.sqrt((np.where(m, x, 0) ** 2).sum(axis=axis, keepdims=keepdim))
        elif name == "all":
            vals = np.where(m, x != 0, True).all(axis=axis, keepdims=keepdim)
        vals = np.ma.getdata(vals)
    return np.asarray(vals).reshape(np.shape(out_mask)), out_mask


REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "all", "norm", "var", "std"]
MULTI_DIM = ("sum", "mean", "prod", "amax", "amin", "all", "norm", "var", "std")


def _dims_for(x, name):
    dims = [None]
    if x.ndim:
        dims += list(range(x.ndim)) + [-1]
        if name in MULTI_DIM and x.ndim > 1:
            dims.append((0, 1))
    return dims


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_reductions(name, case):
    label, mt, x, m = case
    for dim in _dims_for(x, name):
        for keepdim in (False, True):
            if name in ("amax", "amin", "argmax", "argmin") and x.size == 0:
                # (ember.amax refuses an empty reduction, as PyTorch does; a non-empty dim is fine)
                if dim is None or (np.ndim(dim) == 0 and x.shape[dim] == 0) or isinstance(dim, tuple):
                    with pytest.raises((IndexError, RuntimeError)):
                        getattr(mt, name)(dim, keepdim=keepdim)
                    continue
            want, want_mask = _reduce_ref(name, x, m, dim, keepdim)
            if dim is None and not keepdim:
                got = getattr(mt, name)()
            else:
                got = getattr(mt, name)(dim=dim, keepdim=keepdim)
            _check(got, want, want_mask, rtol=1e-10)
            if name in ("argmax", "argmin"):
                assert got.dtype == mt.dtype  # PyTorch answers in the data's dtype
            if name == "all":
                assert got.dtype == ember.bool
            if dim is not None and not keepdim and name != "norm":
                _check(T.module_functions()[name](mt, dim), want, want_mask, rtol=1e-10)


def test_reductions_fully_masked():
    mt = _mt(X, np.zeros_like(MASK))
    for name, identity in [("sum", 0.0), ("prod", 1.0), ("amax", -np.inf), ("amin", np.inf), ("mean", np.nan)]:
        out = getattr(mt, name)()
        assert out.shape == () and not bool(out.get_mask())
        np.testing.assert_array_equal(_np(out.get_data()), identity)
        rows = getattr(mt, name)(1)
        np.testing.assert_array_equal(_np(rows.get_mask()), np.zeros(4, bool))
        np.testing.assert_array_equal(_np(rows.get_data()), np.full(4, identity))
    assert repr(mt.sum()) == "MaskedTensor(--, False)"
    # the row of MASK with nothing left is masked out of a reduction along dim 1
    assert not _np(_mt().sum(1).get_mask())[1] and not _np(_mt().amax(0).get_mask())[3]


def test_reduction_options():
    mt = _mt(dtype=ember.float32)
    assert mt.sum(1, dtype=ember.float64).dtype == ember.float64
    assert mt.mean(dtype=ember.float64).dtype == ember.float64
    ints = masked_tensor(ember.tensor([[1, 2, 3]]), ember.tensor([[True, True, False]]))
    _check(ints.sum(1), np.array([3]), np.array([True]))
    _check(ints.prod(1), np.array([2]), np.array([True]))
    assert ints.sum().dtype == ember.int64
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        ints.mean()
    biased, want = _mt().var(1, correction=0), np.ma.array(X, mask=~MASK).var(axis=1)
    _check(biased, np.ma.getdata(want), MASK.any(1))
    _check(_mt().std(unbiased=False), np.ma.array(X, mask=~MASK).std(), np.array(True))
    _check(_mt().norm(1, 0), np.abs(np.where(MASK, X, 0)).sum(0), MASK.any(0))
    with pytest.raises(TypeError, match="norm"):
        _mt().norm("nuc")
    with pytest.raises(IndexError):
        _mt().sum(5)
    _check(_mt().sum([]), np.where(MASK, X, 0).sum(), np.array(True))  # dim=[]: every dim, as ember.sum
    _check(_mt().all([]), np.where(MASK, X != 0, True).all(), np.array(True))


def test_softmax():
    for _label, mt, x, m in CASES:
        for dim in range(-x.ndim, x.ndim) if x.ndim else [0]:
            with np.errstate(all="ignore"):
                e = np.where(m, np.exp(x - np.where(m, x, -np.inf).max(axis=dim, keepdims=True, initial=-np.inf)), 0)
                want = e / e.sum(axis=dim, keepdims=True)
            _check(mt.softmax(dim), want, m)
            _check(T.module_functions()["softmax"](mt, dim), want, m)
    assert _mt(dtype=ember.float32).softmax(1, dtype=ember.float64).dtype == ember.float64
    # a slice with nothing unmasked is NaN underneath, masked out on top
    assert np.isnan(_np(_mt().softmax(1).get_data())[1]).all()


def test_masked_functions_take_a_masked_tensor():
    mt = _mt()
    np.testing.assert_allclose(_np(ember.masked.sum(mt, 1)), np.where(MASK, X, 0).sum(1))
    np.testing.assert_allclose(_np(ember.masked.amax(mt)), X[MASK].max())
    narrowed = MASK & (X > 0)
    np.testing.assert_allclose(_np(ember.masked.sum(mt, 1, mask=_e(X > 0))), np.where(narrowed, X, 0).sum(1))
    np.testing.assert_allclose(_np(ember.masked.softmax(mt, 0))[:, 0], _np(mt.softmax(0).to_tensor(0))[:, 0])
    got = ember.masked.logaddexp(mt, mt)
    np.testing.assert_allclose(_np(got), np.where(MASK, X + math.log(2), -np.inf))


# ---- views, indexing, where, cat, stack ------------------------------------------------------

def test_views_and_indexing():
    mt, x, m = _mt(), X, MASK
    for got, want, want_mask in [
        (mt.view(20), x.reshape(20), m.reshape(20)), (mt.view(2, -1), x.reshape(2, 10), m.reshape(2, 10)),
        (mt.reshape(5, 4), x.reshape(5, 4), m.reshape(5, 4)), (mt.t(), x.T, m.T), (mt.mT, x.T, m.T),
        (mt.transpose(0, 1), x.T, m.T), (mt.t().reshape(20), x.T.reshape(20), m.T.reshape(20)),
        (mt.flatten(), x.ravel(), m.ravel()), (mt.select(1, 2), x[:, 2], m[:, 2]),
        (mt.select(0, -1), x[-1], m[-1]), (mt.narrow(1, 1, 3), x[:, 1:4], m[:, 1:4]),
        (mt.unsqueeze(0), x[None], m[None]), (mt.expand(2, 4, 5), np.broadcast_to(x, (2, 4, 5)),
                                               np.broadcast_to(m, (2, 4, 5))),
        (mt.unfold(1, 2, 2), np.stack([x[:, 0:2], x[:, 2:4]], 1), np.stack([m[:, 0:2], m[:, 2:4]], 1)),
        (mt[0], x[0], m[0]), (mt[:, 1:], x[:, 1:], m[:, 1:]), (mt[1, 2], x[1, 2], m[1, 2]),
        (mt[None, ..., 0], x[None, ..., 0], m[None, ..., 0]), (mt[::2, ::-1] if False else mt[::2], x[::2], m[::2]),
        (mt[ember.tensor([3, 0])], x[[3, 0]], m[[3, 0]]), (mt[_e(m)], x[m], np.ones(m.sum(), bool)),
        (mt.contiguous(), x, m), (mt.t().contiguous(), x.T, m.T), (mt.clone(), x, m),
    ]:
        _check(got, want, want_mask)
    assert mt.t().contiguous().is_contiguous() and not mt.t().is_contiguous()
    parts = mt.split(2)
    assert len(parts) == 2
    _check(parts[1], x[2:], m[2:])
    parts = mt.split([1, 4], 1)
    _check(parts[1], x[:, 1:], m[:, 1:])
    with pytest.raises(TypeError, match="view\\(dtype\\)"):
        mt.view(ember.float32)
    with pytest.raises(TypeError, match="MaskedTensor"):
        mt[mt > 0]


def test_where_cat_stack():
    mt, other = _mt(), _mt(Y, ~MASK)
    cond = _e(X > 0)
    c = X > 0
    where = T.module_functions()["where"]
    _check(where(cond, mt, other), np.where(c, X, Y), np.where(c, MASK, ~MASK))
    _check(where(cond, mt, 0.0), np.where(c, X, 0.0), np.where(c, MASK, True))
    _check(where(cond, 0.0, mt), np.where(c, 0.0, X), np.where(c, True, MASK))
    _check(where(cond, mt, _e(Y)), np.where(c, X, Y), np.where(c, MASK, True))
    _check(where(ember.tensor(True), mt, mt), X, MASK)
    _check(mt.where(cond, other), np.where(c, X, Y), np.where(c, MASK, ~MASK))
    np.testing.assert_array_equal(_np(where(cond, _e(X), 0.0)), np.where(c, X, 0.0))  # no MaskedTensor: plain
    with pytest.raises(TypeError, match="condition must be a bool Tensor, not a MaskedTensor"):
        where(mt > 0, mt, mt)
    _check(T.module_functions()["cat"]([mt, other]), np.concatenate([X, Y]), np.concatenate([MASK, ~MASK]))
    _check(T.module_functions()["cat"]([mt, other], 1), np.concatenate([X, Y], 1), np.concatenate([MASK, ~MASK], 1))
    _check(T.module_functions()["stack"]([mt, other]), np.stack([X, Y]), np.stack([MASK, ~MASK]))
    with pytest.raises(TypeError, match="cat\\(\\): expected every tensor to be a MaskedTensor, but got Tensor"):
        T.module_functions()["cat"]([mt, _e(X)])


def test_masked_aware_wrapper():
    wrapped = T.masked_aware("sum", ember.sum)
    _check(wrapped(_mt(), 1), np.where(MASK, X, 0).sum(1), MASK.any(1))
    np.testing.assert_allclose(_np(wrapped(_e(X), 1)), X.sum(1))  # a plain call goes to ember.sum
    cat = T.masked_aware("cat", ember.cat)
    _check(cat([_mt(), _mt()]), np.concatenate([X, X]), np.concatenate([MASK, MASK]))
    assert cat([_e(X), _e(X)]).shape == (8, 5)
    assert set(T.REDUCE_NAMES) <= set(T.module_functions())


# ---- conversions and autograd ----------------------------------------------------------------

def test_to_and_type_conversions():
    mt = _mt()
    for got, dtype in [(mt.to(ember.float32), ember.float32), (mt.float(), ember.float32),
                       (mt.double(), ember.float64), (mt.half(), ember.float16), (mt.int(), ember.int32),
                       (mt.long(), ember.int64), (mt.short(), ember.int16), (mt.char(), ember.int8),
                       (mt.bool(), ember.bool), (mt.to("cpu"), ember.float64), (mt.cpu(), ember.float64)]:
        assert got.dtype == dtype
        np.testing.assert_array_equal(_np(got.get_mask()), MASK)
        np.testing.assert_array_equal(_np(got.get_data()), X.astype(_np(ember.zeros(1, dtype=dtype)).dtype))
    with pytest.raises(TypeError, match="ember.bfloat16 is not supported in MaskedTensor"):
        mt.bfloat16()


def test_autograd_gradient_is_masked():
    mt = _mt(requires_grad=True)
    assert mt.grad is None
    (mt.exp() * 2).sum().backward()
    grad = mt.grad
    assert isinstance(grad, MaskedTensor)
    np.testing.assert_array_equal(_np(grad.get_mask()), MASK)
    np.testing.assert_allclose(_np(grad.get_data()), np.where(MASK, 2 * np.exp(X), 0))  # nothing where masked
    mt.grad = None
    assert mt.grad is None
    # backward straight through get_data still leaves nothing where masked out
    mt.get_data().sum().backward()
    np.testing.assert_array_equal(_np(mt.grad.get_data()), MASK.astype(float))


def test_autograd_backward_gradients_and_detach():
    mt = _mt()
    assert mt.requires_grad_() is mt and mt.requires_grad and mt.is_leaf
    out = mt * 3
    assert not out.is_leaf and out.grad_fn is not None
    out.backward(masked_tensor(_e(np.full(X.shape, 2.0)), _e(MASK)))
    np.testing.assert_allclose(_np(mt.grad.get_data()), np.where(MASK, 6.0, 0.0))
    mt.grad = None
    mt.sum(1).backward(_e(np.ones(4)))
    np.testing.assert_allclose(_np(mt.grad.get_data()), MASK.astype(float))
    detached = mt.detach()
    assert not detached.requires_grad and not (detached * 2).requires_grad
    with pytest.raises(RuntimeError):
        (mt * 2).backward()  # not a scalar
    assert mt.to(ember.float32).requires_grad


def test_autograd_reductions_reach_unmasked_only():
    for name in ("sum", "mean", "amax", "amin", "prod", "norm", "var", "std"):
        mt = _mt(requires_grad=True)
        out = getattr(mt, name)(1)
        out.to_tensor(0).sum().backward()
        g = _np(mt.grad.get_data())
        assert np.all(g[~MASK] == 0), name
        assert np.isfinite(g).all(), name
    mt = _mt(requires_grad=True)
    mt.softmax(1).to_tensor(0).pow(2).sum().backward()
    assert np.all(_np(mt.grad.get_data())[~MASK] == 0) and np.isfinite(_np(mt.grad.get_data())).all()


@pytest.mark.parametrize("fn", [
    lambda m: m.exp().sum(1),
    lambda m: (m * m + 1).mean(0),
    lambda m: m.amax(1),
    lambda m: m.prod(0),
    lambda m: m.var(1, correction=0),
    lambda m: m.norm(dim=0),
    lambda m: m.softmax(1),
    lambda m: m.sin().t().reshape(20),
    lambda m: T.where(_e(X > 0), m, m.cos()),
], ids=["exp-sum", "mul-mean", "amax", "prod", "var", "norm", "softmax", "sin-t-reshape", "where"])
def test_gradcheck(fn):
    mask = _e(MASK)

    def through(x):
        out = fn(as_masked_tensor(x, mask))
        return out.to_tensor(0)

    x = _e(X).requires_grad_()
    assert gradcheck(through, (x,), eps=1e-6, atol=1e-6)


# ---- what PyTorch's prototype does not support -----------------------------------------------

@pytest.mark.parametrize("name", ["any", "relu", "max", "min", "median", "log_softmax", "logsumexp", "permute",
                                  "squeeze", "flip", "matmul", "masked_fill", "cumsum", "new_zeros", "unbind"])
def test_unsupported_ops_name_themselves(name):
    with pytest.raises(TypeError, match=f"^MaskedTensor does not support {name}: "):
        getattr(_mt(), name)
    with pytest.raises(AttributeError):
        _mt().not_a_tensor_method  # noqa: B018


def test_unsupported_conversions_and_iteration():
    mt = _mt()
    with pytest.raises(RuntimeError, match="tolist"):
        mt.tolist()
    with pytest.raises(RuntimeError, match="numpy"):
        mt.numpy()
    with pytest.raises(TypeError, match="iteration"):
        list(mt)
    with pytest.raises(TypeError, match="0-d"):
        len(_mt(np.array(1.0), np.array(True)))
    scalar = _mt(np.array(2.5), np.array(True))
    assert scalar.item() == 2.5 and float(scalar) == 2.5 and bool(scalar)


def test_namespace_functions_take_a_masked_tensor():
    # ember.sum(mt) & co. as torch.sum(mt): the wrapped namespace functions route a MaskedTensor to
    # its implementation and leave every other call to the plain function.
    mt = masked_tensor(_e(X), _e(MASK))
    got = ember.sum(mt, 1)
    assert is_masked_tensor(got)
    want = np.where(MASK, X, 0).sum(1)
    np.testing.assert_allclose(got.get_data().numpy()[MASK.any(1)], want[MASK.any(1)], rtol=1e-12)
    np.testing.assert_array_equal(got.get_mask().numpy(), MASK.any(1))
    assert is_masked_tensor(ember.cat([mt, mt])) and ember.cat([mt, mt]).shape == (8, 5)
    assert is_masked_tensor(ember.stack([mt, mt], 0)) and is_masked_tensor(ember.where(_e(MASK), mt, mt))
    assert set(T.NAMESPACE_FUNCTIONS) <= {n for n in dir(ember)}
    assert ember.sum.__wrapped__ is not None
    np.testing.assert_allclose(ember.sum(_e(X)).item(), X.sum(), rtol=1e-12)  # plain calls unchanged
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ember.sum("not a tensor")
