"""The names PyTorch scripts reach first (issue 18, item 1): Tensor.data, legacy constructors and
typed tensor classes, Tensor.type/new_*/__format__/fill_(tensor), size=, *_like factories,
predicates, aliases, isclose/allclose/equal."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

# ---- Tensor.data --------------------------------------------------------------------------


def test_data_shares_memory_without_history():
    w = ember.ones(3, requires_grad=True)
    d = w.data
    assert not d.requires_grad and d.grad_fn is None
    d.mul_(2.0)  # the SGD idiom: p.data.add_(...) writes the parameter
    assert w.detach().tolist() == [2.0, 2.0, 2.0]
    assert w.requires_grad


def test_writes_through_data_are_invisible_to_autograd():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    w.data.add_(1.0)  # through .data: no version bump, so backward does not complain
    y.backward()
    assert w.grad.tolist() == [4.0, 6.0]  # 2 * w, with w as it is now (PyTorch's behaviour)


def test_in_place_on_a_saved_tensor_through_detach_still_raises():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    w.detach().add_(1.0)  # detach shares the version counter
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_data_setter_replaces_memory_shape_and_dtype_keeping_identity():
    w = ember.nn.Parameter(ember.zeros(2, 2))
    before = id(w)
    w.data = ember.arange(6, dtype=ember.float64).reshape(3, 2)
    assert id(w) == before and isinstance(w, ember.nn.Parameter) and w.requires_grad
    assert w.shape == (3, 2) and w.dtype == ember.float64
    assert w.detach().tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    w.sum().backward()
    assert w.grad.shape == (3, 2)


def test_data_setter_rejects_non_tensors():
    w = ember.zeros(2)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        w.data = 5


def test_hand_written_sgd_on_data_trains():
    ember.manual_seed(0)
    x = ember.randn(64, 3)
    true_w = ember.tensor([[1.5], [-2.0], [0.5]])
    y = x @ true_w
    w = ember.zeros(3, 1, requires_grad=True)
    for _ in range(200):
        loss = ((x @ w - y) ** 2).mean()
        w.grad = None
        loss.backward()
        w.data -= 0.1 * w.grad.data
    np.testing.assert_allclose(w.detach().numpy(), true_w.numpy(), atol=1e-3)


# ---- legacy constructors and typed classes ------------------------------------------------


def test_tensor_constructor_forms():
    t = ember.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype == ember.float32
    assert ember.Tensor([1, 2]).tolist() == [1.0, 2.0] and ember.Tensor([1, 2]).dtype == ember.float32
    assert ember.Tensor().shape == (0,)
    src = ember.ones(2)
    alias = ember.Tensor(src)
    alias.add_(1.0)
    assert src.tolist() == [2.0, 2.0]  # shares memory, as torch.Tensor(tensor) does


def test_tensor_constructor_follows_the_default_dtype():
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.Tensor(2).dtype == ember.float64
        assert ember.tensor([1.5]).dtype == ember.float64
        assert ember.tensor([1j]).dtype == ember.complex128
        assert ember.empty(2).dtype == ember.float64
    finally:
        ember.set_default_dtype(old)
    assert ember.tensor([1.5]).dtype == ember.float32 and ember.tensor([1j]).dtype == ember.complex64


@pytest.mark.parametrize(("cls", "dtype"), [
    (ember.FloatTensor, ember.float32), (ember.DoubleTensor, ember.float64), (ember.HalfTensor, ember.float16),
    (ember.BFloat16Tensor, ember.bfloat16), (ember.ByteTensor, ember.uint8), (ember.CharTensor, ember.int8),
    (ember.ShortTensor, ember.int16), (ember.IntTensor, ember.int32), (ember.LongTensor, ember.int64),
    (ember.BoolTensor, ember.bool)])
def test_typed_classes(cls, dtype):
    assert cls(2, 3).dtype == dtype and cls(2, 3).shape == (2, 3)
    made = cls([1, 0, 1])
    assert made.dtype == dtype and made.tolist() == ember.tensor([1, 0, 1], dtype=dtype).tolist()
    assert isinstance(made, cls) and isinstance(made, ember.Tensor)
    assert not isinstance(ember.zeros(1, dtype=ember.complex64), cls)
    assert made.type() == f"ember.{cls.__name__}"
    assert ember.zeros(2).type(cls).dtype == dtype


def test_legacy_constructor_errors():
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[2, -1\]"):
        ember.FloatTensor(2, -1)
    with pytest.raises(TypeError, match=r"expected ember.float32 \(got ember.int64\)"):
        ember.FloatTensor(ember.zeros(2, dtype=ember.int64))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.LongTensor("abc")
    with pytest.raises(TypeError, match="unexpected keyword argument 'pin'"):
        ember.LongTensor(2, pin=True)


# ---- Tensor.type, new_*, __format__, fill_ -------------------------------------------------


def test_type_conversions():
    x = ember.tensor([1.7, -2.2])
    assert x.type() == "ember.FloatTensor"
    assert x.type(ember.float64).dtype == ember.float64
    assert x.type("torch.LongTensor").tolist() == [1, -2]
    assert x.type("ember.IntTensor").dtype == ember.int32
    assert x.type(ember.float32) is x
    with pytest.raises(ValueError, match="invalid type: 'ember.NopeTensor'"):
        x.type("ember.NopeTensor")
    with pytest.raises(AssertionError, match="Ember not compiled with CUDA enabled"):
        x.type("torch.cuda.FloatTensor")
    with pytest.raises(TypeError, match="no legacy tensor type for dtype ember.complex64"):
        ember.zeros(1, dtype=ember.complex64).type()


def test_new_factories_take_self_dtype():
    x = ember.zeros(2, dtype=ember.float64)
    for made, value in ((x.new_zeros(2, 3), 0.0), (x.new_ones((2, 3)), 1.0), (x.new_full((2, 3), 7), 7.0)):
        assert made.shape == (2, 3) and made.dtype == ember.float64
        assert made.tolist() == [[value] * 3] * 2
    assert x.new_empty(4).shape == (4,) and x.new_empty(size=(1, 2)).shape == (1, 2)
    assert x.new_zeros(3, dtype=ember.int32).dtype == ember.int32
    assert x.new_ones(2, requires_grad=True).requires_grad
    source = ember.tensor([1, 2])
    copied = x.new_tensor(source)
    assert copied.dtype == ember.float64 and copied.tolist() == [1.0, 2.0]
    copied.add_(1)
    assert source.tolist() == [1, 2]  # a copy, never shared
    assert x.new_tensor([[1, 2]]).dtype == ember.float64


def test_format_of_zero_dim_tensors():
    assert f"{ember.tensor(3.14159):.2f}" == "3.14"
    assert f"{ember.tensor(7):>4d}" == "   7"
    assert format(ember.tensor(2.5)) == "2.5"
    assert format(ember.tensor([1.0, 2.0])) == str(ember.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="unsupported format string"):
        format(ember.tensor([1.0, 2.0]), ".2f")


def test_fill_with_a_zero_dim_tensor():
    x = ember.zeros(3)
    assert x.fill_(ember.tensor(2.5)) is x and x.tolist() == [2.5, 2.5, 2.5]
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 "
                                           "dimensions."):
        x.fill_(ember.ones(1))


# ---- factories: size=, *_like --------------------------------------------------------------


def test_size_keyword():
    assert ember.zeros(size=(2, 3)).shape == (2, 3)
    assert ember.ones(size=[4]).shape == (4,)
    assert ember.empty(size=(1, 2), dtype=ember.int64).dtype == ember.int64
    assert ember.full(size=(2,), fill_value=3.0).tolist() == [3.0, 3.0]
    assert ember.rand(size=(3,)).shape == (3,) and ember.randn(size=(2, 2)).shape == (2, 2)
    r = ember.randint(0, 10, size=(50,))
    assert r.shape == (50,) and 0 <= int(r.min()) and int(r.max()) < 10
    assert ember.randint(5, size=(4,)).shape == (4,)
    assert ember.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
        ember.zeros(2, size=(3,))


def test_like_factories():
    x = ember.zeros(3, 4, dtype=ember.float64)
    for fn in (ember.rand_like, ember.randn_like):
        y = fn(x)
        assert y.shape == (3, 4) and y.dtype == ember.float64
    assert float(ember.rand_like(x).min()) >= 0.0 and float(ember.rand_like(x).max()) < 1.0
    r = ember.randint_like(x, 3, 7)
    assert r.dtype == ember.float64 and 3 <= float(r.min()) and float(r.max()) < 7
    assert float(ember.randint_like(x, 2).max()) < 2
    assert ember.randn_like(x, dtype=ember.float32).dtype == ember.float32
    with pytest.raises(TypeError, match=r"randn_like\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        ember.randn_like([1.0])


# ---- predicates and aliases ---------------------------------------------------------------


def test_predicates():
    assert ember.is_tensor(ember.zeros(1)) and ember.is_tensor(ember.nn.Parameter(ember.zeros(1)))
    assert not ember.is_tensor([1.0]) and not ember.is_tensor(np.zeros(1))
    assert ember.is_floating_point(ember.zeros(1)) and not ember.is_floating_point(ember.zeros(1, dtype=ember.int64))
    assert ember.is_complex(ember.zeros(1, dtype=ember.complex64)) and not ember.is_complex(ember.zeros(1))
    assert ember.numel(ember.zeros(2, 3)) == 6 and ember.numel(ember.tensor(1.0)) == 1
    assert ember.is_nonzero(ember.tensor([1.5])) and not ember.is_nonzero(ember.tensor(0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        ember.is_nonzero(ember.ones(2))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        ember.is_nonzero(ember.ones(0))
    with pytest.raises(TypeError, match=r"numel\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        ember.numel(3)


@pytest.mark.parametrize(("alias", "op"), [
    ("absolute", "abs"), ("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"), ("arccosh", "acosh"),
    ("arcsinh", "asinh"), ("arctanh", "atanh"), ("arctan2", "atan2"), ("multiply", "mul"), ("divide", "div"),
    ("subtract", "sub"), ("negative", "neg"), ("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"),
    ("less_equal", "le"), ("not_equal", "ne"), ("fix", "trunc"), ("moveaxis", "movedim"),
    ("swapaxes", "transpose"), ("swapdims", "transpose"), ("concatenate", "cat"), ("ger", "outer")])
def test_aliases_are_the_same_op(alias, op):
    assert getattr(ember, alias) is getattr(ember, op)


def test_alias_methods_and_results():
    x = ember.tensor([[-1.5, 2.0], [0.25, -4.0]])
    np.testing.assert_array_equal(x.absolute().numpy(), np.abs(x.numpy()))
    np.testing.assert_array_equal(x.multiply(x).numpy(), x.numpy() ** 2)
    assert x.swapaxes(0, 1).tolist() == x.t().tolist() and ember.moveaxis(x, 0, 1).tolist() == x.t().tolist()
    y = x.clone()
    assert y.negative_() is y and y.tolist() == (-x).tolist()
    np.testing.assert_array_equal(ember.greater(x, 0).numpy(), x.numpy() > 0)


# ---- isclose / allclose / equal: checked against NumPy in float64 ---------------------------


def _cases():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5))
    b = a + rng.standard_normal((4, 5)) * 1e-6
    b[0, 0] = a[0, 0] + 1.0
    a[1, 1] = b[1, 1] = np.nan
    a[2, 2] = b[2, 2] = np.inf
    a[3, 3], b[3, 3] = np.inf, -np.inf
    return a, b


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "broadcast", "empty", "0-dim"])
def test_isclose_matches_numpy(layout, equal_nan):
    a, b = _cases()
    if layout == "transposed":
        a, b = a.T, b.T
    elif layout == "broadcast":
        b = b[:1]
    elif layout == "empty":
        a, b = a[:0], b[:0]
    elif layout == "0-dim":
        a, b = np.array(a[0, 1]), np.array(b[0, 1])
    ta, tb = ember.tensor(a), ember.tensor(b)
    if layout == "transposed":
        ta, tb = ember.tensor(a.T).t(), ember.tensor(b.T).t()
        assert not ta.is_contiguous()
    for rtol, atol in ((1e-5, 1e-8), (0.0, 0.0), (1e-3, 0.5)):
        got = ember.isclose(ta, tb, rtol=rtol, atol=atol, equal_nan=equal_nan)
        want = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        assert got.dtype == ember.bool
        np.testing.assert_array_equal(got.numpy(), want)
        assert ember.allclose(ta, tb, rtol, atol, equal_nan) == bool(np.all(want))


def test_isclose_float32_and_integers():
    a = ember.tensor([1.0, 2.0, 3.0])
    assert ember.isclose(a, a + 1e-7).all() and not ember.isclose(a, a + 1e-3).all()
    i = ember.tensor([1, 2, 3])
    assert ember.isclose(i, ember.tensor([1, 2, 4])).tolist() == [True, True, False]
    assert ember.isclose(i, ember.tensor([1, 2, 4]), rtol=0.0, atol=1.0).tolist() == [True, True, True]
    assert ember.allclose(ember.tensor([True]), ember.tensor([True]))


def test_isclose_errors():
    with pytest.raises(RuntimeError, match="ember.float32 did not match ember.float64"):
        ember.isclose(ember.zeros(1), ember.zeros(1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        ember.isclose(ember.zeros(1), ember.zeros(1), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero, but got -0.5"):
        ember.allclose(ember.zeros(1), ember.zeros(1), atol=-0.5)
    with pytest.raises(TypeError, match=r"isclose\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        ember.isclose(ember.zeros(1), 1.0)


def test_equal():
    a = ember.tensor([[1.0, 2.0]])
    assert ember.equal(a, a.clone()) and not ember.equal(a, a.t())
    assert not ember.equal(a, ember.tensor([[1.0, 2.5]]))
    assert not ember.equal(ember.tensor([float("nan")]), ember.tensor([float("nan")]))
    assert ember.equal(ember.zeros(0), ember.zeros(0))
    with pytest.raises(TypeError, match=r"equal\(\): argument 'input' \(position 1\) must be Tensor"):
        ember.equal([1.0], a)


# ---- clamp_min / clamp_max / argwhere --------------------------------------------------------


def test_clamp_min_max_match_numpy_and_gradcheck():
    x = ember.tensor([[-2.0, 0.5], [3.0, -0.1]], dtype=ember.float64)
    np.testing.assert_array_equal(ember.clamp_min(x, 0.0).numpy(), np.maximum(x.numpy(), 0.0))
    np.testing.assert_array_equal(ember.clamp_max(x.t(), 1.0).numpy(), np.minimum(x.numpy().T, 1.0))
    assert ember.clamp_min(ember.tensor(-1.0), 0.5).item() == 0.5
    assert ember.clamp_max(ember.zeros(0), 1.0).shape == (0,)
    xr = x.detach().requires_grad_()
    assert gradcheck(lambda t: ember.clamp_min(t, 0.0), (xr,))
    assert gradcheck(lambda t: ember.clamp_max(t, 1.0), (xr,))


def test_argwhere():
    x = ember.tensor([[0, 1], [2, 0]])
    assert ember.argwhere(x).tolist() == [[0, 1], [1, 0]]
    np.testing.assert_array_equal(ember.argwhere(x.t()).numpy(), np.argwhere(x.numpy().T))
    assert ember.argwhere(ember.tensor(3)).shape == (1, 0)
    assert ember.argwhere(ember.zeros(0, 2)).shape == (0, 2)


# ---- declared ops tested by hand (the op database samples square ... lcm) -------------------


def test_signbit_reads_the_bit():
    x = ember.tensor([-1.5, -0.0, 0.0, 2.0, float("nan"), -float("nan"), -float("inf")])
    np.testing.assert_array_equal(ember.signbit(x).numpy(), np.signbit(x.numpy()))
    for dtype in (ember.float16, ember.bfloat16, ember.float64):
        np.testing.assert_array_equal(ember.signbit(x.to(dtype)).numpy(), np.signbit(x.numpy()))
    assert ember.signbit(ember.tensor([-3, 0, 4])).tolist() == [True, False, False]
    assert ember.signbit(ember.tensor([True, False])).tolist() == [False, False]
    assert ember.signbit(x.reshape(7, 1).t()).shape == (1, 7) and ember.signbit(ember.tensor(-0.0)).item()
    assert ember.signbit(ember.zeros(0)).shape == (0,)
    with pytest.raises(NotImplementedError, match=r"\[signbit\] not implemented for complex dtype"):
        ember.signbit(ember.zeros(1, dtype=ember.complex64))


def test_copysign_takes_the_sign_of_zeros_and_nans():
    a = ember.tensor([1.0, 2.0, 3.0, 4.0])
    b = ember.tensor([-0.0, float("nan"), -float("nan"), -1.0])
    np.testing.assert_array_equal(ember.copysign(a, b).numpy(), np.copysign(a.numpy(), b.numpy()))
    assert ember.copysign(ember.tensor([1, -2]), ember.tensor([-1, 1])).dtype == ember.float32


@pytest.mark.parametrize("dtype", [ember.int8, ember.uint8, ember.int16, ember.int32, ember.int64])
def test_shifts_match_numpy_for_in_range_shifts(dtype):
    info = np.iinfo(ember.zeros(1, dtype=dtype).numpy().dtype)
    rng = np.random.default_rng(1)
    a = rng.integers(info.min, info.max, size=(3, 5), endpoint=True).astype(info.dtype)
    b = rng.integers(0, info.bits, size=(3, 5)).astype(info.dtype)
    ta, tb = ember.tensor(a), ember.tensor(b)
    np.testing.assert_array_equal((ta << tb).numpy(), np.left_shift(a, b))
    np.testing.assert_array_equal((ta >> tb).numpy(), np.right_shift(a, b))
    np.testing.assert_array_equal(ember.bitwise_left_shift(ta.t(), tb.t()).numpy(), np.left_shift(a.T, b.T))
    np.testing.assert_array_equal((ta >> 1).numpy(), np.right_shift(a, 1))  # broadcast Python number
    np.testing.assert_array_equal((ta[:, :1] << tb[:1]).numpy(), np.left_shift(a[:, :1], b[:1]))


def test_shifts_out_of_range_follow_pytorch():
    assert (ember.tensor([5, -5]) >> 70).tolist() == [0, -1]
    assert (ember.tensor([5]) << -1).tolist() == [0] and (ember.tensor([5]) >> -1).tolist() == [0]
    assert (ember.tensor([1, -1], dtype=ember.int8) << 9).tolist() == [0, 0]
    assert (ember.tensor([3], dtype=ember.uint8) << 7).tolist() == [128]
    assert (ember.tensor([100], dtype=ember.int8) << 1).tolist() == [-56]
    assert (1 << ember.tensor([3])).tolist() == [8] and (64 >> ember.tensor([2])).tolist() == [16]
    x = ember.tensor([1, 2])
    x <<= 2
    assert x.tolist() == [4, 8]
    assert ember.bitwise_right_shift(ember.tensor(-8), ember.tensor(1)).item() == -4
    with pytest.raises(NotImplementedError, match=r"\[bitwise_left_shift\] not implemented for float32"):
        ember.tensor([1.0]) << 1
    with pytest.raises(NotImplementedError, match=r"\[bitwise_right_shift\] not implemented for bool"):
        ember.tensor([True]) >> ember.tensor([True])


def test_trace():
    m = np.arange(12.0).reshape(3, 4)
    assert ember.trace(ember.tensor(m)).item() == np.trace(m)
    assert ember.trace(ember.tensor(m).t()).item() == np.trace(m.T)
    assert ember.trace(ember.arange(6).reshape(2, 3)).item() == 4
    assert ember.trace(ember.arange(6, dtype=ember.int8).reshape(2, 3)).dtype == ember.int64
    assert ember.trace(ember.zeros(0, 3)).item() == 0.0
    with pytest.raises(RuntimeError, match=r"\[trace\] expected a matrix, but got tensor with dim 1"):
        ember.trace(ember.ones(3))
    with pytest.raises(NotImplementedError, match=r"\[trace\] not implemented for 'Bool'"):
        ember.trace(ember.ones(2, 2, dtype=ember.bool))
    x = ember.tensor(np.random.default_rng(2).standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(ember.trace, (x,), check_forward_ad=True)


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_diag_both_ways(k):
    v = np.array([1.0, -2.0, 3.5])
    np.testing.assert_array_equal(ember.diag(ember.tensor(v), k).numpy(), np.diag(v, k))
    m = np.arange(20.0).reshape(4, 5)
    np.testing.assert_array_equal(ember.diag(ember.tensor(m), k).numpy(), np.diag(m, k))
    np.testing.assert_array_equal(ember.tensor(m).t().diag(k).numpy(), np.diag(m.T, k))
    np.testing.assert_array_equal(ember.diagflat(ember.tensor(m[:2, :2]), k).numpy(), np.diagflat(m[:2, :2], k))
    xv = ember.tensor(v, requires_grad=True)
    xm = ember.tensor(m, requires_grad=True)
    assert gradcheck(lambda t: ember.diag(t, k), (xv,), check_forward_ad=True)
    assert gradcheck(lambda t: ember.diag(t, k), (xm,), check_forward_ad=True)
    assert gradcheck(lambda t: ember.diagflat(t, k), (xm,), check_forward_ad=True)


def test_diag_edges_and_errors():
    assert ember.diag(ember.zeros(0)).shape == (0, 0)
    assert ember.diagflat(ember.tensor(5.0)).tolist() == [[5.0]]
    d = ember.diag(ember.ones(2))
    d.add_(1)  # a new tensor, not a view of the input
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        ember.diag(ember.ones(2, 2, 2))


def test_diag_embed():
    x = np.arange(6.0).reshape(2, 3)
    got = ember.diag_embed(ember.tensor(x))
    want = np.zeros((2, 3, 3))
    for i in range(2):
        want[i] = np.diag(x[i])
    np.testing.assert_array_equal(got.numpy(), want)
    got = ember.diag_embed(ember.tensor(x), offset=1, dim1=0, dim2=2)
    assert got.shape == (4, 2, 4)
    for i in range(2):
        np.testing.assert_array_equal(got[:, i, :].numpy(), np.diag(x[i], 1))
    xr = ember.tensor(x, requires_grad=True)
    assert gradcheck(lambda t: ember.diag_embed(t, -1, 0, 2), (xr,), check_forward_ad=True)
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, -2"):
        ember.diag_embed(ember.tensor(x), 0, 1, -2)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        ember.diag_embed(ember.tensor(x), 0, 0, 3)


def test_new_in_place_forms():
    x = ember.tensor([0.5, -1.0], dtype=ember.float64)
    for name in ("square", "deg2rad", "rad2deg", "sinc"):
        y = x.clone()
        assert getattr(y, name + "_")() is y
        np.testing.assert_allclose(y.numpy(), getattr(ember, name)(x).numpy())


def test_method_forms_of_the_new_functions():
    x = ember.tensor([[-1.0, 2.0], [0.0, 3.0]])
    assert x.isclose(x + 1e-9).all() and x.allclose(x.clone()) and x.equal(x.clone())
    assert x.argwhere().tolist() == [[0, 0], [0, 1], [1, 1]]
    assert x.clamp_min(0.0).tolist() == [[0.0, 2.0], [0.0, 3.0]]
    assert x.clamp_max(1.0).tolist() == [[-1.0, 1.0], [0.0, 1.0]]
    y = x.clone()
    assert y.clamp_min_(0.5) is y and y.tolist() == [[0.5, 2.0], [0.5, 3.0]]
    assert y.clamp_max_(1.0) is y and y.tolist() == [[0.5, 1.0], [0.5, 1.0]]
    assert ember.tensor([2.0]).is_nonzero()


def test_new_ops_reject_unsupported_dtypes():
    c = ember.zeros(2, dtype=ember.complex64)
    for name in ("logaddexp", "logaddexp2", "xlogy", "copysign"):
        with pytest.raises(NotImplementedError, match=rf"\[{name}\] not implemented for complex dtype"):
            getattr(ember, name)(c, c)
    for name in ("deg2rad", "rad2deg"):
        with pytest.raises(NotImplementedError, match=rf"\[{name}\] not implemented for complex dtype"):
            getattr(ember, name)(c)
    for name in ("gcd", "lcm"):
        with pytest.raises(NotImplementedError, match=rf"\[{name}\] not implemented for float32 \(it takes integer"):
            getattr(ember, name)(ember.ones(2), ember.ones(2))
    with pytest.raises(RuntimeError, match=r"\[square\] result type float32 can't be cast to the desired output type int64"):
        ember.square(ember.ones(2), out=ember.zeros(2, dtype=ember.int64))
