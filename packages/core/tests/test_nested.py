"""ember.nested: strided-layout nested tensors (torch.nested). Each op is checked per component
against float64 NumPy on ragged components (one of them zero-length); gradients by gradcheck
through as_nested_tensor -> ops -> to_padded_tensor; the construction and op errors PyTorch 2.13
raises, with their messages."""

import math

import numpy as np
import pytest

import ember
import ember.nested.functional as NF
from ember import nested
from ember.autograd import gradcheck

SHAPES = [(2, 3), (0, 3), (4, 3)]


def _arrays(seed=0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _nt(arrays, **kw):
    return nested.nested_tensor([ember.tensor(a) for a in arrays], **kw)


def _check(out, refs, tol=1e-12):
    comps = out.unbind()
    assert len(comps) == len(refs)
    for c, r in zip(comps, refs, strict=True):
        assert tuple(c.shape) == r.shape
        np.testing.assert_allclose(c.detach().numpy(), r, rtol=tol, atol=tol)


# ---- construction ------------------------------------------------------------------------------
def test_construction_metadata():
    nt = _nt(_arrays())
    assert nt.is_nested and not ember.zeros(2).is_nested
    assert nt.dim() == 3 and nt.dtype == ember.float64 and nt.device == ember.device("cpu")
    assert nt.layout is ember.strided and nt.numel() == 18 and nt.is_leaf and not nt.requires_grad
    assert nt.size(0) == 3 and nt.size(2) == 3 and nt.size(-1) == 3
    with pytest.raises(RuntimeError, match="Given dimension 1 is irregular and does not have a size."):
        nt.size(1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        nt.size(3)
    with pytest.raises(RuntimeError):
        nt.shape  # noqa: B018
    with pytest.raises(RuntimeError, match="only be unbound along dimension 0"):
        nt.unbind(1)


def test_nested_tensor_copies_and_lists():
    a = ember.tensor([1.0, 2.0])
    nt = nested.nested_tensor([a, ember.tensor([3.0])])
    a.add_(10.0)
    _check(nt, [np.array([1.0, 2.0]), np.array([3.0])])
    assert nested.nested_tensor([[1, 2], [3]]).dtype == ember.int64
    assert nested.nested_tensor([a], dtype=ember.float64).dtype == ember.float64
    empty = nested.nested_tensor([])
    assert empty.dim() == 1 and empty.size(0) == 0 and empty.numel() == 0
    zero = _nt([np.zeros((0, 3)), np.zeros((0, 3))])
    assert zero.numel() == 0 and zero.size(2) == 3


def test_construction_errors():
    with pytest.raises(RuntimeError, match="must have the same dimension. Found dimension 1 for Tensor at index 1 "
                                           "and dimension 2 for Tensor at index 0."):
        nested.nested_tensor([ember.zeros(2, 3), ember.zeros(3)])
    with pytest.raises(RuntimeError, match="must have the same dtype. Found dtype ember.float64 for Tensor at index 1"):
        nested.nested_tensor([ember.zeros(2, 3), ember.zeros(3, 3, dtype=ember.float64)])
    with pytest.raises(RuntimeError, match="must have the same dimension"):
        nested.as_nested_tensor([ember.zeros(2, 3), ember.zeros(3)])
    with pytest.raises(TypeError, match="Only lists"):
        nested.nested_tensor(ember.zeros(2, 3))
    with pytest.raises(TypeError, match="Expected first argument to be a tensor or a list / tuple of tensors"):
        nested.as_nested_tensor(5)
    with pytest.raises(RuntimeError, match="Specified layout is unsupported for nested tensors"):
        nested.nested_tensor([ember.zeros(2)], layout=ember.sparse_coo)
    nt = _nt(_arrays())
    with pytest.raises(RuntimeError, match="We do not accept nested tensors as input to nested tensors"):
        nested.nested_tensor([nt])
    with pytest.raises(RuntimeError, match="Converting between nested tensor layouts is not supported"):
        nested.as_nested_tensor(nt)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        nested.nested_tensor([ember.tensor([1])], requires_grad=True)


def test_as_nested_tensor_from_dense_and_dtype_conversion():
    x = np.arange(24.0).reshape(2, 3, 4)
    nt = nested.as_nested_tensor(ember.tensor(x))
    _check(nt, [x[0], x[1]])
    mixed = nested.as_nested_tensor([ember.zeros(2), ember.zeros(1, dtype=ember.float64)], dtype=ember.float32)
    assert mixed.dtype == ember.float32


# ---- padding -----------------------------------------------------------------------------------
def test_to_padded_tensor_round_trip():
    arrays = _arrays()
    nt = _nt(arrays)
    padded = nested.to_padded_tensor(nt, -1.5)
    ref = np.full((3, 4, 3), -1.5)
    for i, a in enumerate(arrays):
        ref[i, :a.shape[0]] = a
    np.testing.assert_array_equal(padded.numpy(), ref)
    back = nested.as_nested_tensor([padded[i, :a.shape[0]] for i, a in enumerate(arrays)])
    _check(back, arrays, 0)
    np.testing.assert_array_equal(nt.to_padded_tensor(-1.5).numpy(), ref)
    big = nested.to_padded_tensor(nt, 0.0, output_size=(4, 5, 4))
    assert tuple(big.shape) == (4, 5, 4) and big.numpy()[3].sum() == 0
    np.testing.assert_array_equal(big.numpy()[:3, :4, :3], np.where(ref == -1.5, 0.0, ref))


def test_to_padded_tensor_ragged_last_and_ints():
    nt = nested.nested_tensor([ember.tensor([1, 2]), ember.tensor([3])])
    out = nested.to_padded_tensor(nt, 7)
    assert out.dtype == ember.int64
    np.testing.assert_array_equal(out.numpy(), [[1, 2], [3, 7]])
    assert tuple(nested.to_padded_tensor(nested.nested_tensor([]), 0.0).shape) == (0,)


def test_to_padded_tensor_errors():
    nt = _nt(_arrays())
    with pytest.raises(RuntimeError, match="Truncation is not supported"):
        nested.to_padded_tensor(nt, 0.0, output_size=(3, 2, 3))
    with pytest.raises(RuntimeError, match="Broadcasting is not supported"):
        nested.to_padded_tensor(nt, 0.0, output_size=(3, 5))
    with pytest.raises(RuntimeError, match="at least one constituent tensor should have non-zero numel"):
        nested.to_padded_tensor(_nt([np.zeros((0, 3)), np.zeros((0, 3))]), 0.0)


# ---- ops ---------------------------------------------------------------------------------------
def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) if x.size else x


UNARY = {
    "relu": lambda x: np.maximum(x, 0), "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "abs": np.abs,
    "neg": np.negative, "sgn": np.sign,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    arrays = _arrays(1)
    _check(getattr(_nt(arrays), name)(), [UNARY[name](a) for a in arrays])
    _check(nested.nested_aware(name, getattr(ember, name))(_nt(arrays)), [UNARY[name](a) for a in arrays])


def test_sqrt_and_activations():
    arrays = [np.abs(a) for a in _arrays(2)]
    _check(_nt(arrays).sqrt(), [np.sqrt(a) for a in arrays])
    _check(NF.gelu(_nt(arrays)), [_gelu(a) for a in arrays], 1e-10)
    _check(NF.silu(_nt(arrays)), [a / (1 + np.exp(-a)) for a in arrays], 1e-12)
    _check(-_nt(arrays), [-a for a in arrays])


def test_unsupported_ops_raise_not_implemented():
    nt = _nt(_arrays())
    for name in ("exp", "sigmoid", "log", "mean", "log_softmax"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(nt, name)()
    with pytest.raises(NotImplementedError, match="reshape"):
        nt.reshape(3, -1, 3)
    with pytest.raises(NotImplementedError, match="pow"):
        nt ** 2  # noqa: B018
    with pytest.raises(NotImplementedError, match="rsub"):
        1 - nt  # noqa: B018
    with pytest.raises(NotImplementedError, match="sum over all dims"):
        nt.sum()


def test_binary():
    a, b = _arrays(3), _arrays(4)
    x, y = _nt(a), _nt(b)
    _check(x + y, [p + q for p, q in zip(a, b, strict=True)])
    _check(x - y, [p - q for p, q in zip(a, b, strict=True)])
    _check(x * y, [p * q for p, q in zip(a, b, strict=True)])
    _check(x / y, [p / q for p, q in zip(a, b, strict=True)])
    _check(ember.nested.NestedTensor.add(x, y, alpha=2), [p + 2 * q for p, q in zip(a, b, strict=True)])
    _check(x + 1.5, [p + 1.5 for p in a])
    _check(2 * x, [2 * p for p in a])
    _check(x / 4, [p / 4 for p in a])
    _check(x - ember.tensor(2.0, dtype=ember.float64), [p - 2 for p in a])
    z = x.clone().add_(1.0)
    _check(z, [p + 1 for p in a])
    _check(x, a)
    i = nested.nested_tensor([ember.tensor([1, 2])]) * 2.5
    assert i.dtype == ember.float32


def test_binary_errors():
    x = _nt(_arrays())
    with pytest.raises(RuntimeError, match="add does not support broadcasting when given a NestedTensor"):
        x + _nt(_arrays(0, [(2, 3), (4, 3)]))
    with pytest.raises(RuntimeError, match="mul does not support broadcasting"):
        x * _nt(_arrays(0, [(2, 3), (1, 3), (4, 3)]))
    with pytest.raises(RuntimeError, match="Expected both self and other to be nested"):
        x + ember.zeros(3, dtype=ember.float64)


def test_matmul_bmm():
    a = _arrays(5)
    m = _arrays(6, [(3, 2), (3, 0), (3, 5)])
    _check(_nt(a) @ _nt(m), [p @ q for p, q in zip(a, m, strict=True)])
    _check(_nt(a).bmm(_nt(m)), [p @ q for p, q in zip(a, m, strict=True)])
    with pytest.raises(RuntimeError, match=r"0-th nested matrices in batch cannot be multiplied \(2x3 and 2x3\)"):
        _nt(a).bmm(_nt(a))
    with pytest.raises(RuntimeError, match="cannot be matrix multiplied"):
        _nt(a).matmul(_nt(a))
    with pytest.raises(RuntimeError, match="Expected both to be nested"):
        _nt(a).matmul(ember.zeros(3, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="only inputs with >= 3 dims"):
        nested.nested_tensor([ember.zeros(3)]).matmul(nested.nested_tensor([ember.zeros(3)]))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        nested.nested_tensor([ember.zeros(1, 2, 3)]).bmm(nested.nested_tensor([ember.zeros(1, 3, 2)]))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True)) if x.size else x
    return e / e.sum(axis=axis, keepdims=True) if x.size else x


def test_softmax_transpose_sum():
    a = _arrays(7)
    nt = _nt(a)
    _check(nt.softmax(-1), [_softmax(p) for p in a])
    _check(NF.softmax(nt, 2), [_softmax(p) for p in a])
    _check(nt.softmax(1), [_softmax(p, 0) for p in a])
    _check(nt.transpose(1, 2), [p.T for p in a])
    _check(nt.transpose(-1, -2), [p.T for p in a])
    _check(nt.sum(-1, keepdim=True), [p.sum(-1, keepdims=True) for p in a])
    ragged = nested.nested_tensor([ember.tensor([1.0, 2.0, 3.0]), ember.tensor([4.0])])
    _check(ragged.softmax(-1), [_softmax(np.array([1.0, 2.0, 3.0])), np.array([1.0])], 1e-6)
    with pytest.raises(RuntimeError, match="Cannot apply softmax across nested dimension 0"):
        nt.softmax(0)
    with pytest.raises(RuntimeError, match="Nested tensor dimension 0 cannot be transposed"):
        nt.transpose(0, 1)
    with pytest.raises(RuntimeError, match="always requires keepdim=True"):
        nt.sum(-1)
    with pytest.raises(RuntimeError, match="can only be reduced across the last dimension"):
        nt.sum(1, keepdim=True)
    with pytest.raises(RuntimeError, match="does not support dtype argument"):
        nt.sum(-1, keepdim=True, dtype=ember.float32)


def test_linear_layer_norm_dropout():
    a = _arrays(8)
    rng = np.random.default_rng(9)
    w, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    nt = _nt(a)
    _check(NF.linear(nt, ember.tensor(w), ember.tensor(b)), [p @ w.T + b for p in a])
    g, beta = rng.standard_normal(3), rng.standard_normal(3)

    def ln(x):
        if not x.size:
            return x
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + beta
    _check(NF.layer_norm(nt, (3,), ember.tensor(g), ember.tensor(beta)), [ln(p) for p in a], 1e-10)
    with pytest.raises(RuntimeError, match="Linear requires nested_tensor.dim == 3 and dense_matrix.dim == 2"):
        NF.linear(nt, ember.tensor(b))
    with pytest.raises(RuntimeError, match="Shape mismatch for NestedTensor Linear"):
        NF.linear(nt, ember.zeros(5, 4, dtype=ember.float64))
    with pytest.raises(ValueError, match="NestedTensor layer_norm requires weight and bias"):
        NF.layer_norm(nt, (3,))
    with pytest.raises(RuntimeError, match="normalized_shape extends into irregular dimensions"):
        NF.layer_norm(nt, (2, 3), ember.zeros(2, 3), ember.zeros(2, 3))
    with pytest.raises(RuntimeError, match="The shape at dimension 0 of normalized_shape doesn't match the input"):
        NF.layer_norm(nt, (4,), ember.zeros(4), ember.zeros(4))
    # dropout: each element is 0 or x / (1 - p); p=0 and eval mode leave the values
    out = NF.dropout(nt, 0.5)
    for c, p in zip(out.unbind(), a, strict=True):
        v = c.numpy()
        assert np.all(np.isclose(v, 0) | np.isclose(v, 2 * p))
    _check(NF.dropout(nt, 0.5, training=False), a)
    _check(NF.dropout(nt, 0.0), a)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        NF.dropout(nt, 1.5)


def test_narrow_and_masked_select():
    a = _arrays(10)
    nt = _nt(a)
    _check(nt.narrow(0, 1, 2), a[1:])
    _check(nested.narrow(nt, 0, 0, 2), a[:2])
    x = np.arange(30.0).reshape(3, 5, 2)
    _check(nested.narrow(ember.tensor(x), 0, 1, 2), [x[1], x[2]])
    with pytest.raises(RuntimeError, match="narrow\\(\\): only dim=0 supported for nested tensors, but got: 1"):
        nested.narrow(nt, 1, 0, 1)
    with pytest.raises(RuntimeError, match="start and length must be integers for the strided layout"):
        nested.narrow(nt, 0, ember.tensor([0]), 1)
    t = np.arange(12.0).reshape(3, 4)
    mask = (t % 3) == 0
    mask[1] = False
    out = nested.masked_select(ember.tensor(t), ember.tensor(mask))
    _check(out, [t[i][mask[i]] for i in range(3)])
    with pytest.raises(RuntimeError, match="expected BoolTensor for mask"):
        nested.masked_select(ember.tensor(t), ember.tensor(t))


# ---- conversions, autograd, repr ---------------------------------------------------------------
def test_to_detach_clone():
    a = _arrays(11)
    nt = _nt(a)
    f = nt.to(ember.float32)
    assert f.dtype == ember.float32
    _check(f.to(ember.float64), a, 1e-6)
    c = nt.clone()
    c.unbind()[0].zero_()
    _check(nt, a)
    x = ember.tensor(a[0], requires_grad=True)
    assert not nested.as_nested_tensor([x]).detach().requires_grad


def test_backward_reaches_components():
    a = _arrays(12)
    xs = [ember.tensor(p, requires_grad=True) for p in a]
    nt = nested.as_nested_tensor(xs)
    assert nt.requires_grad and not nt.is_leaf
    nested.to_padded_tensor((nt * 3.0).relu(), 0.0).sum().backward()
    for x, p in zip(xs, a, strict=True):
        np.testing.assert_array_equal(x.grad.numpy(), 3.0 * (p > 0))
    leaf = _nt(a, requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad
    (leaf * 2.0).backward(_nt([np.ones_like(p) for p in a]))
    _check(leaf.grad, [2.0 * np.ones_like(p) for p in a])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        leaf.backward()


def test_gradcheck_composed():
    rng = np.random.default_rng(13)
    x0, x1, x2 = (ember.tensor(rng.standard_normal(s), requires_grad=True) for s in SHAPES)
    w = ember.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    g = ember.tensor(rng.standard_normal(4), requires_grad=True)
    m = [ember.tensor(rng.standard_normal((4, 2))) for _ in SHAPES]

    def f(x0, x1, x2, w, g):
        nt = nested.as_nested_tensor([x0, x1, x2])
        h = NF.linear(nt, w).tanh() * 2.0 + NF.linear(nt.sin(), w)
        h = NF.layer_norm(h, (4,), g, ember.zeros(4, dtype=ember.float64)).softmax(-1)
        h = h.matmul(nested.as_nested_tensor(m)).transpose(1, 2) - 0.5
        return nested.to_padded_tensor(NF.gelu(h), 0.25), nested.to_padded_tensor(nt.sum(-1, keepdim=True), 1.0)

    assert gradcheck(f, (x0, x1, x2, w, g))


def test_repr():
    nt = nested.nested_tensor([ember.tensor([1.0, 2.0]), ember.tensor([3.0])])
    assert repr(nt) == "nested_tensor([\n  tensor([1., 2.]),\n  tensor([3.])\n])"
    assert str(nt) == repr(nt)
    rg = nested.nested_tensor([ember.tensor([1.0, 2.0])], requires_grad=True)
    assert repr(rg) == "nested_tensor([\n  tensor([1., 2.], requires_grad=True)\n], requires_grad=True)"
    assert repr(rg * 2).endswith("], grad_fn=<MulBackward0>)")
    f64 = nested.nested_tensor([ember.tensor([1.0])], dtype=ember.float64)
    assert repr(f64) == "nested_tensor([\n  tensor([1.], dtype=ember.float64)\n])"
    assert repr(nested.nested_tensor([])) == "nested_tensor([\n\n])"


def test_misc_protocols():
    nt = _nt(_arrays())
    with pytest.raises(RuntimeError):
        len(nt)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(nt)
    np.testing.assert_array_equal(nt[2].numpy(), _arrays()[2])
    with pytest.raises(NotImplementedError, match="indexing with slice"):
        nt[0:2]
    assert not hasattr(nt, "no_such_attribute")
    assert nested.nested_aware("relu", ember.relu)(nt).unbind()[0].shape == (2, 3)
    np.testing.assert_array_equal(nested.nested_aware("relu", ember.relu)(ember.tensor([-1.0, 2.0])).numpy(),
                                  [0.0, 2.0])
