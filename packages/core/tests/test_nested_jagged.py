"""ember.nested with layout=ember.jagged (PyTorch's jagged nested tensors, "NJT"). Every op is checked
per component against float64 NumPy on several ragged shapes (with zero-length components and a
one-component batch); gradients by gradcheck through construction -> ops -> to_padded_tensor; bad
input by the exception type and message."""

import importlib.util
import math
import pathlib
import pickle

import numpy as np
import pytest

import ember
import ember.nested.functional as NF
from ember import nested
from ember.autograd import gradcheck

# _check(out, refs): each component of `out` against its NumPy reference, as test_nested.py checks
# the strided layout (loaded by path: tests are no package)
_SPEC = importlib.util.spec_from_file_location("nested_strided_tests", pathlib.Path(__file__).with_name("test_nested.py"))
_STRIDED_TESTS = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_STRIDED_TESTS)
_check = _STRIDED_TESTS._check

SHAPE_SETS = [
    [(2, 3), (0, 3), (4, 3)],
    [(5, 3)],
    [(0, 3), (1, 3), (3, 3), (0, 3)],
]


def _arrays(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _njt(arrays, **kw):
    return nested.nested_tensor([ember.tensor(a) for a in arrays], layout=ember.jagged, **kw)


def _padded(refs, padding, length=None):
    length = max(r.shape[0] for r in refs) if length is None else length
    out = np.full((len(refs), length, *refs[0].shape[1:]), padding)
    for i, r in enumerate(refs):
        out[i, :min(length, len(r))] = r[:length]
    return out


def _softmax(x, axis):
    if x.shape[axis] == 0:
        return x.copy()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _holey():
    """Components [0:2], [3:3] and [5:6] of a 7-row values: a tensor with holes."""
    v = np.arange(14.0).reshape(7, 2) / 7.0
    nt = nested.nested_tensor_from_jagged(ember.tensor(v), ember.tensor([0, 3, 5, 6]), lengths=ember.tensor([2, 0, 1]))
    return nt, [v[0:2], v[3:3], v[5:6]]


# ---- the layout and construction -------------------------------------------------------------------
def test_layout_object():
    assert repr(ember.jagged) == "ember.jagged" and isinstance(ember.jagged, ember.layout)
    assert ember.jagged is not ember.strided and "jagged" in ember.__all__
    assert pickle.loads(pickle.dumps(ember.jagged)) is ember.jagged


@pytest.mark.parametrize("shapes", SHAPE_SETS)
def test_construction_metadata(shapes):
    arrays = _arrays(shapes)
    nt = _njt(arrays)
    n = len(shapes)
    assert nt.layout is ember.jagged and nt.is_nested and nt.dim() == nt.ndim == 3
    assert nt.dtype == ember.float64 and nt.device == ember.device("cpu") and nt.is_contiguous()
    j = nt.size(1)
    assert nt.shape == nt.size() == (n, j, 3) and nt.size(0) == len(nt) == n and nt.size(-1) == 3
    assert nt.numel() == sum(a.size for a in arrays)
    np.testing.assert_array_equal(nt.values().numpy(), np.concatenate(arrays))
    np.testing.assert_array_equal(nt.offsets().numpy(), np.cumsum([0] + [s[0] for s in shapes]))
    assert nt.offsets().dtype == ember.int64 and nt.lengths() is None
    _check(nt, arrays)
    np.testing.assert_array_equal(nt[-1].numpy(), arrays[-1])
    assert [tuple(c.shape) for c in nt] == shapes


def test_nested_int():
    a = _njt(_arrays(SHAPE_SETS[0]))
    b = _njt(_arrays(SHAPE_SETS[0], seed=1))
    c = _njt(_arrays([(1, 3), (0, 3), (4, 3)]))
    assert a.size(1) == b.size(1) and a.shape == b.shape and hash(a.size(1)) == hash(b.size(1))
    assert a.size(1) != c.size(1) and a.size(1) != 2 and a.size(1) != 6
    assert repr(a.size(1)).startswith("j") and repr(a.shape) == f"(3, {a.size(1)!r}, 3)"
    with pytest.raises(TypeError, match="has no single integer value"):
        int(a.size(1))
    with pytest.raises(TypeError, match="has no single integer value"):
        a.size(1) > 0  # noqa: B015 - the comparison is what raises
    with pytest.raises(TypeError, match="has no single integer value"):
        range(a.size(1))
    with pytest.raises(TypeError, match="not built directly"):
        nested.NestedInt()


def test_nested_tensor_copies_lists_and_ragged_dim():
    src = ember.tensor([[1.0, 2.0]])
    nt = nested.nested_tensor([src, [[3.0, 4.0], [5.0, 6.0]]], layout=ember.jagged, dtype=ember.float64)
    src.add_(10.0)
    _check(nt, [np.array([[1.0, 2.0]]), np.array([[3.0, 4.0], [5.0, 6.0]])])
    assert nt.dtype == ember.float64
    # the one dim whose sizes differ is the ragged one, here dim 2 of the nested tensor
    arrays = [np.ones((2, 3)), np.zeros((2, 0)), np.full((2, 1), 2.0)]
    wide = _njt(arrays)
    assert wide.shape == (3, 2, wide.size(2)) and tuple(wide.values().shape) == (2, 4)
    _check(wide, arrays)
    same = _njt([np.ones((2, 3)), np.ones((2, 3))])
    assert same.shape == (2, same.size(1), 3)
    leaf = _njt(_arrays(SHAPE_SETS[0]), requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad and leaf.grad is None
    ints = nested.nested_tensor([ember.tensor([1, 2]), ember.tensor([3])], layout=ember.jagged)
    assert ints.dtype == ember.int64 and ints.shape == (2, ints.size(1))


def test_construction_errors():
    with pytest.raises(RuntimeError, match="from an empty tensor list"):
        nested.nested_tensor([], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="from a list of zero-dim tensors"):
        nested.nested_tensor([ember.tensor(1.0), ember.tensor(2.0)], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="must have the same dimension"):
        nested.nested_tensor([ember.zeros(2, 3), ember.zeros(3)], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="must have the same dtype"):
        nested.as_nested_tensor([ember.zeros(2, 3), ember.zeros(1, 3, dtype=ember.float64)], layout=ember.jagged)
    with pytest.raises(RuntimeError, match=r"only allows for a single ragged dimension.*dims \[0, 1\] differ"):
        nested.nested_tensor([ember.zeros(2, 3), ember.zeros(3, 4)], layout=ember.jagged)
    nt = _njt(_arrays(SHAPE_SETS[0]))
    with pytest.raises(RuntimeError, match="We do not accept nested tensors as input to nested tensors"):
        nested.nested_tensor([nt], layout=ember.jagged)
    with pytest.raises(RuntimeError, match="Specified layout is unsupported for nested tensors"):
        nested.nested_tensor([ember.zeros(2)], layout=ember.sparse_csr)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        nested.nested_tensor([ember.tensor([1])], layout=ember.jagged, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Expected tensor argument to have dim\(\) > 1"):
        nested.as_nested_tensor(ember.zeros(3), layout=ember.jagged)
    with pytest.raises(TypeError, match="Only lists"):
        nested.nested_tensor((ember.zeros(2),), layout=ember.jagged)


def test_as_nested_tensor_keeps_autograd_and_converts():
    arrays = _arrays(SHAPE_SETS[0])
    xs = [ember.tensor(a, requires_grad=True) for a in arrays]
    nt = nested.as_nested_tensor(xs, layout=ember.jagged)
    assert not nt.is_leaf and nt.grad_fn is not None
    _check(nt, arrays)
    (nt * 3.0).to_padded_tensor(0.0).sum().backward()
    for x, a in zip(xs, arrays, strict=True):
        np.testing.assert_array_equal(x.grad.numpy(), np.full_like(a, 3.0))
    dense = np.arange(24.0).reshape(2, 3, 4)
    from_dense = nested.as_nested_tensor(ember.tensor(dense), layout=ember.jagged)
    _check(from_dense, [dense[0], dense[1]])
    assert nested.as_nested_tensor(nt, layout=ember.jagged) is nt
    assert nested.as_nested_tensor(nt, dtype=ember.float32, layout=ember.jagged).dtype == ember.float32
    mixed = nested.as_nested_tensor([ember.zeros(2, 1), ember.zeros(1, 1, dtype=ember.float64)], dtype=ember.float32,
                                    layout=ember.jagged)
    assert mixed.dtype == ember.float32
    # between layouts: PyTorch refuses as_nested_tensor(nt, layout=...); unbind() is the way, autograd kept
    strided = nested.as_nested_tensor(xs)
    with pytest.raises(RuntimeError, match="Converting between nested tensor layouts is not supported"):
        nested.as_nested_tensor(strided, layout=ember.jagged)
    with pytest.raises(RuntimeError, match="Converting between nested tensor layouts is not supported"):
        nested.as_nested_tensor(nt)
    to_jagged = nested.as_nested_tensor(list(strided.unbind()), layout=ember.jagged)
    _check(to_jagged, arrays)
    back = nested.as_nested_tensor(list(to_jagged.unbind()))
    assert back.layout is ember.strided
    _check(back, arrays)
    for x in xs:
        x.grad = None
    nested.to_padded_tensor(back, 0.0).sum().backward()
    np.testing.assert_array_equal(xs[0].grad.numpy(), np.ones_like(arrays[0]))


# ---- nested_tensor_from_jagged and narrow ------------------------------------------------------------
def test_nested_tensor_from_jagged():
    v = ember.tensor(np.arange(20.0).reshape(10, 2))
    nt = nested.nested_tensor_from_jagged(v, ember.tensor([0, 3, 3, 10]))
    assert nt.values() is v and nt.is_contiguous() and nt.shape == (3, nt.size(1), 2)
    _check(nt, [v.numpy()[0:3], v.numpy()[3:3], v.numpy()[3:10]])
    by_lengths = nested.nested_tensor_from_jagged(v, lengths=ember.tensor([3, 0, 7]))
    np.testing.assert_array_equal(by_lengths.offsets().numpy(), [0, 3, 3, 10])
    assert by_lengths.lengths() is None and by_lengths.size(1) == nt.size(1)
    small = nested.nested_tensor_from_jagged(v, ember.tensor([0, 10], dtype=ember.int32))
    assert small.offsets().dtype == ember.int32 and len(small) == 1
    holey, refs = _holey()
    assert not holey.is_contiguous() and holey.lengths().tolist() == [2, 0, 1]
    _check(holey, refs)
    packed = holey.contiguous()
    assert packed.is_contiguous() and packed.offsets().tolist() == [0, 2, 2, 3] and packed.size(1) == holey.size(1)
    _check(packed, refs)
    wide = nested.nested_tensor_from_jagged(ember.tensor(np.arange(20.0).reshape(2, 10)), ember.tensor([0, 4, 10]),
                                            jagged_dim=2)
    assert wide.shape == (2, 2, wide.size(2))
    _check(wide, [np.arange(20.0).reshape(2, 10)[:, :4], np.arange(20.0).reshape(2, 10)[:, 4:]])
    one_d = nested.nested_tensor_from_jagged(ember.arange(5.0), ember.tensor([0, 2, 5]))
    assert one_d.dim() == 2
    _check(one_d, [np.arange(2.0), np.arange(2.0, 5.0)])


@pytest.mark.parametrize("kwargs, error, message", [
    ({}, RuntimeError, "At least one of offsets or lengths is required"),
    ({"offsets": [1, 3, 10]}, RuntimeError, r"offsets must start at 0, but offsets\[0\] is 1"),
    ({"offsets": [0, 5, 3, 10]}, RuntimeError, r"non-decreasing, but offsets\[2\] = 3 < offsets\[1\] = 5"),
    ({"offsets": [0, 3, 8]}, RuntimeError, r"offsets\[-1\] is 8, but values has size 10 along jagged dim 0"),
    ({"offsets": [0, 3, 12]}, RuntimeError, r"offsets\[-1\] is 12, but values has size 10"),
    ({"offsets": [0]}, RuntimeError, "offsets needs at least 2 entries"),
    ({"offsets": [0.0, 10.0]}, TypeError, "offsets must be an integer tensor, but got ember.float32"),
    ({"offsets": [[0, 10]]}, RuntimeError, "offsets must be 1-D, but got 2-D"),
    ({"offsets": [0, 3, 10], "jagged_dim": 0}, ValueError, "Expected jagged_dim >=1, but got 0"),
    ({"offsets": [0, 3, 10], "jagged_dim": 3}, ValueError, r"Expected jagged_dim <= values.dim\(\) \(2\), but got 3"),
    ({"lengths": [3, 4]}, RuntimeError, "must be >= 0, at least one, and sum to values' size 10"),
    ({"lengths": ember.zeros(0, dtype=ember.int64)}, RuntimeError, r"lengths \[\] must be >= 0, at least one"),
    ({"offsets": [0, 3, 10], "lengths": [3]}, RuntimeError, r"one entry per component \(len\(offsets\) - 1 = 2\)"),
    ({"offsets": [0, 3, 10], "lengths": [3, 8]}, RuntimeError, r"component 1 \(offset 3, length 8\) lies outside"),
    ({"offsets": [0, 3, 10], "lengths": [-1, 2]}, RuntimeError, r"component 0 \(offset 0, length -1\) lies outside"),
])
def test_nested_tensor_from_jagged_errors(kwargs, error, message):
    kwargs = {k: ember.tensor(x) if isinstance(x, list) else x for k, x in kwargs.items()}
    with pytest.raises(error, match=message):
        nested.nested_tensor_from_jagged(ember.zeros(10, 2), **kwargs)


def test_nested_tensor_from_jagged_type_errors():
    with pytest.raises(TypeError, match="expected values to be a Tensor, but got list"):
        nested.nested_tensor_from_jagged([1.0, 2.0], ember.tensor([0, 2]))
    with pytest.raises(TypeError, match="expected offsets to be a Tensor, but got list"):
        nested.nested_tensor_from_jagged(ember.zeros(2), [0, 2])


def test_narrow():
    x = np.arange(24.0).reshape(3, 4, 2)
    dense = ember.tensor(x, requires_grad=True)
    nt = nested.narrow(dense, 1, ember.tensor([0, 1, 2]), ember.tensor([2, 3, 0]), layout=ember.jagged)
    assert not nt.is_contiguous() and nt.lengths().tolist() == [2, 3, 0]
    np.testing.assert_array_equal(nt.offsets().numpy(), [0, 5, 10, 10])
    _check(nt, [x[0, 0:2], x[1, 1:4], x[2, 2:2]])
    nt.to_padded_tensor(0.0).sum().backward()
    expected = np.zeros_like(x)
    expected[0, 0:2] = expected[1, 1:4] = 1.0
    np.testing.assert_array_equal(dense.grad.numpy(), expected)
    same = nested.narrow(ember.tensor(x), 1, 1, 2, layout=ember.jagged)
    _check(same, [x[i, 1:3] for i in range(3)])
    np.testing.assert_allclose(same.sum(1).numpy(), x[:, 1:3].sum(1))
    with pytest.raises(RuntimeError, match="jagged layout only supports dim=1"):
        nested.narrow(ember.tensor(x), 0, 0, 1, layout=ember.jagged)
    with pytest.raises(IndexError, match=r"component 2: start \(2\) \+ length \(3\) exceeds dimension size \(4\)"):
        nested.narrow(ember.tensor(x), 1, ember.tensor([0, 1, 2]), 3, layout=ember.jagged)
    with pytest.raises(RuntimeError, match="start must be an int or a 1-D integer tensor of 3 entries"):
        nested.narrow(ember.tensor(x), 1, ember.tensor([0, 1]), 1, layout=ember.jagged)
    with pytest.raises(RuntimeError, match="the jagged layout narrows a dense tensor"):
        nested.narrow(nt, 1, 0, 1, layout=ember.jagged)


# ---- padding -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", SHAPE_SETS)
def test_to_padded_tensor(shapes):
    arrays = _arrays(shapes)
    nt = _njt(arrays)
    np.testing.assert_array_equal(nt.to_padded_tensor(-1.0).numpy(), _padded(arrays, -1.0))
    longest = max(s[0] for s in shapes)
    grown = nested.to_padded_tensor(nt, 0.5, (len(shapes), longest + 2, 3))
    np.testing.assert_array_equal(grown.numpy(), _padded(arrays, 0.5, longest + 2))
    cut = nested.to_padded_tensor(nt, 0.0, [len(shapes), 1, 3])  # truncation, as PyTorch's jagged layout does
    np.testing.assert_array_equal(cut.numpy(), _padded(arrays, 0.0, 1))


def test_to_padded_tensor_holes_transposed_empty_and_errors():
    holey, refs = _holey()
    np.testing.assert_array_equal(holey.to_padded_tensor(9.0).numpy(), _padded(refs, 9.0))
    arrays = _arrays([(2, 3, 4), (1, 3, 4)])
    t = _njt(arrays).transpose(1, 2)
    assert t.to_padded_tensor(0.0).shape == (2, 3, 2, 4)
    np.testing.assert_array_equal(t.to_padded_tensor(0.0).numpy(), _padded(arrays, 0.0).transpose(0, 2, 1, 3))
    empty = _njt([np.zeros((0, 3)), np.zeros((0, 3))])
    assert empty.to_padded_tensor(1.0).shape == (2, 0, 3)
    nt = _njt(_arrays(SHAPE_SETS[0]))
    with pytest.raises(RuntimeError, match=r"output_size\[2\] is 5, but the nested tensor's size there is 3"):
        nt.to_padded_tensor(0.0, (3, 4, 5))
    with pytest.raises(RuntimeError, match="Length of output_size does not match NestedTensor dims"):
        nt.to_padded_tensor(0.0, (3, 4))
    with pytest.raises(RuntimeError, match="to_padded_tensor: expected a nested tensor"):
        nested.to_padded_tensor(ember.zeros(2), 0.0)


# ---- elementwise -------------------------------------------------------------------------------------
def _erf(x):
    return np.vectorize(math.erf, otypes=[float])(x)


UNARY = {
    "relu": lambda x: np.maximum(x, 0), "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "abs": np.abs, "neg": np.negative,
    "sqrt": np.sqrt, "sgn": np.sign, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "exp": np.exp, "expm1": np.expm1,
    "exp2": np.exp2, "log": np.log, "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "asinh": np.arcsinh, "rsqrt": lambda x: 1 / np.sqrt(x), "square": np.square,
    "reciprocal": lambda x: 1 / x, "erf": _erf, "erfc": lambda x: 1 - _erf(x), "floor": np.floor, "ceil": np.ceil,
    "round": np.round, "trunc": np.trunc, "frac": lambda x: x - np.trunc(x), "sign": np.sign,
    "sinc": lambda x: np.sinc(x), "positive": lambda x: x,
}
# inputs moved into each op's domain
DOMAIN = {**dict.fromkeys(("sqrt", "log", "log1p", "log2", "log10", "rsqrt"), lambda x: np.abs(x) + 0.5),
          "asin": np.tanh, "acos": np.tanh}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shapes", SHAPE_SETS)
def test_unary(name, shapes):
    arrays = [DOMAIN.get(name, lambda x: x)(a * 2) for a in _arrays(shapes)]
    out = getattr(_njt(arrays), name)()
    assert out.layout is ember.jagged
    _check(out, [UNARY[name](a) for a in arrays], tol=1e-10)


def test_predicates_and_comparisons():
    arrays = [np.array([[1.0, np.nan], [np.inf, -2.0]]), np.zeros((0, 2)), np.array([[3.0, -np.inf]])]
    nt = _njt(arrays)
    _check(nt.isnan(), [np.isnan(a) for a in arrays])
    _check(nt.isinf(), [np.isinf(a) for a in arrays])
    _check(nt.isfinite(), [np.isfinite(a) for a in arrays])
    _check(nt.signbit(), [np.signbit(a) for a in arrays])
    _check(nt.logical_not(), [np.logical_not(a) for a in arrays])
    ints = nested.nested_tensor([ember.tensor([1, 2]), ember.tensor([3])], layout=ember.jagged)
    _check(ints.bitwise_not(), [np.array([-2, -3]), np.array([-4])])
    a = _arrays(SHAPE_SETS[0])
    b = _arrays(SHAPE_SETS[0], seed=1)
    x, y = _njt(a), _njt(b)
    for op, ref in ((x > y, np.greater), (x >= y, np.greater_equal), (x < y, np.less), (x <= y, np.less_equal),
                    (x == y, np.equal), (x != y, np.not_equal)):
        assert op.dtype == ember.bool
        _check(op, [ref(p, q) for p, q in zip(a, b, strict=True)])
    _check(x.maximum(y), [np.maximum(p, q) for p, q in zip(a, b, strict=True)])
    _check(x.minimum(y), [np.minimum(p, q) for p, q in zip(a, b, strict=True)])
    _check(x.clamp(-0.5, 0.5), [np.clip(p, -0.5, 0.5) for p in a])


@pytest.mark.parametrize("shapes", SHAPE_SETS)
def test_binary(shapes):
    a, b = _arrays(shapes), _arrays(shapes, seed=1)
    x, y = _njt(a), _njt(b)  # built separately: equal component lengths are enough
    pairs = list(zip(a, b, strict=True))
    _check(x + y, [p + q for p, q in pairs])
    _check(x.sub(y, alpha=2), [p - 2 * q for p, q in pairs])
    _check(x * y, [p * q for p, q in pairs])
    _check(x / (y.abs() + 1), [p / (np.abs(q) + 1) for p, q in pairs])
    _check(x.add(2.0, alpha=3), [p + 6.0 for p in a])
    _check(1.0 - x, [1.0 - p for p in a])
    _check(2.0 / (x.abs() + 1), [2.0 / (np.abs(p) + 1) for p in a])
    _check(x ** 2, [p ** 2 for p in a])
    _check(2.0 ** x, [2.0 ** p for p in a], tol=1e-10)
    _check(x.abs().pow(y), [np.abs(p) ** q for p, q in pairs], tol=1e-10)
    _check(x * ember.tensor(3.0, dtype=ember.float64), [3 * p for p in a])
    _check(-x, [-p for p in a])
    # a dense operand broadcasts over the regular trailing dims, with size 1 at the ragged dim
    w = np.array([1.0, -2.0, 0.5])
    _check(x + ember.tensor(w), [p + w for p in a])
    _check(ember.tensor(w) - x, [w - p for p in a])
    _check(x * ember.tensor(w.reshape(1, 1, 3)), [p * w for p in a])
    per_batch = np.arange(len(shapes) * 3.0).reshape(len(shapes), 1, 3)
    _check(x + ember.tensor(per_batch), [p + per_batch[i] for i, p in enumerate(a)])
    per_item = np.arange(len(shapes) * 1.0).reshape(len(shapes), 1, 1)
    _check(x * ember.tensor(per_item), [p * per_item[i] for i, p in enumerate(a)])
    _check(x + ember.tensor(np.ones((1, 1))), [p + 1 for p in a])
    # regular dims broadcast between two nested tensors too
    narrow_y = _njt([q[:, :1] for q in b])
    _check(x * narrow_y, [p * q[:, :1] for p, q in pairs])
    z = x.clone()
    z.add_(y)
    z.mul_(2.0)
    _check(z, [2 * (p + q) for p, q in pairs])


def test_binary_with_holes_and_transposed():
    holey, refs = _holey()
    packed = _njt([r + 1 for r in refs])
    _check(holey + packed, [2 * r + 1 for r in refs])
    _check(packed - holey, [np.ones_like(r) for r in refs])
    _check(holey * holey, [r * r for r in refs])
    assert (holey * 2).lengths() is holey.lengths()
    per_batch = np.array([[[1.0, 2.0]], [[3.0, 4.0]], [[5.0, 6.0]]])
    _check(holey + ember.tensor(per_batch), [r + per_batch[i] for i, r in enumerate(refs)])
    arrays = _arrays([(2, 3, 4), (0, 3, 4), (1, 3, 4)])
    t = _njt(arrays).transpose(1, 2)
    refs_t = [a.transpose(1, 0, 2) for a in arrays]
    _check(t + t, [2 * r for r in refs_t])
    head_scale = np.array([1.0, 2.0, 3.0]).reshape(3, 1, 1)
    _check(t * ember.tensor(head_scale), [r * head_scale for r in refs_t])
    per_batch = np.arange(36.0).reshape(3, 3, 1, 4)  # one (H, 1, D) row per component
    _check(t - ember.tensor(per_batch), [r - per_batch[i] for i, r in enumerate(refs_t)])


def test_binary_errors():
    x = _njt(_arrays(SHAPE_SETS[0]))
    other = _njt(_arrays([(1, 3), (1, 3), (4, 3)]))
    with pytest.raises(RuntimeError, match=r"cannot call binary pointwise function add with inputs of shapes "
                                           r"\(3, j\d+, 3\) and \(3, j\d+, 3\)"):
        x + other
    with pytest.raises(RuntimeError, match="cannot call binary pointwise function mul"):
        x * _njt(_arrays(SHAPE_SETS[1]))
    four = _njt(_arrays([(2, 3, 4), (0, 3, 4), (4, 3, 4)]))
    with pytest.raises(RuntimeError, match="cannot call binary pointwise function sub"):
        four.transpose(1, 2) - four
    with pytest.raises(RuntimeError, match="must have size 1 at the ragged dim 1"):
        x + ember.zeros(3, 5, 3, dtype=ember.float64)
    with pytest.raises(NotImplementedError, match="a dense tensor of more dims"):
        x + ember.zeros(1, 1, 1, 3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="dim 0 must have size 1 or the batch size 3, but got 2"):
        x + ember.zeros(2, 1, 3, dtype=ember.float64)
    strided = nested.nested_tensor([ember.zeros(2, 3)])
    with pytest.raises(RuntimeError, match="expected nested tensors of one layout, but got a strided and a jagged"):
        x + strided
    with pytest.raises(RuntimeError, match="expected nested tensors of one layout"):
        strided * x


# ---- products, activations and normalization --------------------------------------------------------
@pytest.mark.parametrize("shapes", SHAPE_SETS)
def test_linear_and_matmul(shapes):
    a = _arrays(shapes)
    rng = np.random.default_rng(5)
    w, bias = rng.standard_normal((4, 3)), rng.standard_normal(4)
    x = _njt(a)
    _check(NF.linear(x, ember.tensor(w), ember.tensor(bias)), [p @ w.T + bias for p in a])
    _check(NF.linear(x, ember.tensor(w)), [p @ w.T for p in a])
    _check(x @ ember.tensor(w.T), [p @ w.T for p in a])
    _check(x.matmul(ember.tensor(w.T)).relu(), [np.maximum(p @ w.T, 0) for p in a])


def test_linear_matmul_errors_and_transposed():
    arrays = _arrays([(2, 3, 4), (1, 3, 4)])
    t = _njt(arrays).transpose(1, 2)
    w = np.arange(8.0).reshape(4, 2)
    _check(t @ ember.tensor(w), [a.transpose(1, 0, 2) @ w for a in arrays])
    x = _njt(_arrays(SHAPE_SETS[0]))
    last = x.transpose(1, 2)
    with pytest.raises(RuntimeError, match=r"matmul\(\): not supported between inputs of shapes \(3, 3, j\d+\) and "
                                           r"\(2, 2\)"):
        last @ ember.zeros(2, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=r"matmul\(\): not supported between inputs of shapes .* and \(2, 3, 5\)"):
        x @ ember.zeros(2, 3, 5, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=r"linear\(\): the last dim of the nested tensor of shape .* is ragged"):
        NF.linear(last, ember.zeros(2, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"linear\(\): expected weight of shape \(out_features, 3\), but got \(4, 2\)"):
        NF.linear(x, ember.zeros(4, 2, dtype=ember.float64))


def test_activations_and_dropout():
    arrays = _arrays(SHAPE_SETS[0])
    x = _njt(arrays)
    _check(NF.relu(x), [np.maximum(a, 0) for a in arrays])
    _check(NF.gelu(x), [a * 0.5 * (1 + _erf(a / math.sqrt(2))) for a in arrays])
    tanh_gelu = [0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))) for a in arrays]
    _check(NF.gelu(x, approximate="tanh"), tanh_gelu, tol=1e-10)
    _check(NF.silu(x), [a / (1 + np.exp(-a)) for a in arrays])
    _check(NF.sigmoid(x), [1 / (1 + np.exp(-a)) for a in arrays])
    _check(NF.tanh(x), [np.tanh(a) for a in arrays])
    _check(NF.dropout(x, 0.0), arrays)
    _check(NF.dropout(x, 1.0), [np.zeros_like(a) for a in arrays])
    assert NF.dropout(x, 0.5, training=False) is x
    half = NF.dropout(x, 0.5)
    for c, a in zip(half.unbind(), arrays, strict=True):
        kept = c.numpy() != 0
        np.testing.assert_allclose(c.numpy()[kept], 2 * a[kept], rtol=1e-12)
    y = x.clone()
    NF.relu(y, inplace=True)
    _check(y, [np.maximum(a, 0) for a in arrays])
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        NF.dropout(x, 1.5)


def test_layer_norm():
    arrays = _arrays([(2, 4), (0, 4), (3, 4)])
    x = _njt(arrays)
    g, b = np.array([1.0, 2.0, 0.5, -1.0]), np.array([0.0, 0.1, 0.2, 0.3])

    def ref(a, eps=1e-5):
        return (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + eps)

    _check(NF.layer_norm(x, (4,), ember.tensor(g), ember.tensor(b)), [ref(a) * g + b for a in arrays], tol=1e-10)
    _check(NF.layer_norm(x, 4), [ref(a) for a in arrays], tol=1e-10)
    _check(NF.layer_norm(x.unsqueeze(-1), [4, 1], eps=1e-3),
           [((a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-3))[..., None] for a in arrays],
           tol=1e-10)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\]"):
        NF.layer_norm(x, (3,))
    with pytest.raises(RuntimeError, match="must cover only regular dims after the ragged one"):
        NF.layer_norm(x, (2, 4))
    with pytest.raises(TypeError, match="expected a NestedTensor input"):
        NF.layer_norm(ember.zeros(2, 4), (4,))


# ---- softmax and reductions --------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", SHAPE_SETS)
def test_softmax_log_softmax(shapes):
    a = _arrays(shapes)
    x = _njt(a)
    _check(x.softmax(-1), [_softmax(p, -1) for p in a])
    _check(NF.softmax(x, dim=1), [_softmax(p, 0) for p in a])
    _check(NF.log_softmax(x, -1), [np.log(_softmax(p, -1)) for p in a])
    _check(x.log_softmax(1), [np.log(_softmax(p, 0)) for p in a])
    assert x.softmax(1).size(1) == x.size(1)


def test_softmax_holes_transposed_and_errors():
    holey, refs = _holey()
    _check(holey.softmax(1), [_softmax(r, 0) for r in refs])
    arrays = _arrays([(2, 3, 4), (0, 3, 4), (1, 3, 4)])
    t = _njt(arrays).transpose(1, 2)
    _check(t.softmax(2), [_softmax(a.transpose(1, 0, 2), 1) for a in arrays])
    _check(t.softmax(1), [_softmax(a.transpose(1, 0, 2), 0) for a in arrays])
    x = _njt(_arrays(SHAPE_SETS[0]))
    with pytest.raises(RuntimeError, match="softmax\\(\\): not supported when reducing across the batch dimension"):
        x.softmax(0)
    with pytest.raises(RuntimeError, match="log_softmax\\(\\): not supported when reducing across the batch"):
        x.log_softmax(-3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.softmax(3)


@pytest.mark.parametrize("shapes", SHAPE_SETS)
def test_sum_mean(shapes):
    a = _arrays(shapes)
    x = _njt(a)
    _check(x.sum(-1), [p.sum(-1) for p in a])
    _check(x.mean(2, keepdim=True), [p.mean(-1, keepdims=True) for p in a])
    assert x.sum(-1).shape == (len(a), x.size(1))
    # over the ragged dim: dense, a zero-length component sums to 0 and averages to nan (as in PyTorch)
    np.testing.assert_allclose(x.sum(1).numpy(), np.stack([p.sum(0) for p in a]), rtol=1e-12, atol=1e-12)
    with np.errstate(invalid="ignore"):
        means = np.stack([p.mean(0) if len(p) else np.full(3, np.nan) for p in a])
    np.testing.assert_allclose(x.mean(1).numpy(), means, rtol=1e-12, atol=1e-12)
    assert x.sum(1, keepdim=True).shape == (len(a), 1, 3)
    np.testing.assert_allclose(x.sum((1, 2)).numpy(), [p.sum() for p in a], rtol=1e-12, atol=1e-12)
    every = np.concatenate(a)
    np.testing.assert_allclose(x.sum((0, 1)).numpy(), every.sum(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.mean([0, 1]).numpy(), every.mean(0), rtol=1e-12)
    assert x.sum((0, 1), keepdim=True).shape == (1, 1, 3)
    np.testing.assert_allclose(x.sum().item(), every.sum(), rtol=1e-12)
    np.testing.assert_allclose(x.mean().item(), every.mean(), rtol=1e-12)
    assert x.float().sum(-1, dtype=ember.float64).dtype == ember.float64


def test_reductions_holes_transposed_and_errors():
    holey, refs = _holey()
    np.testing.assert_allclose(holey.sum(1).numpy(), np.stack([r.sum(0) for r in refs]))
    np.testing.assert_allclose(holey.sum().item(), sum(r.sum() for r in refs))
    _check(holey.sum(-1), [r.sum(-1) for r in refs])
    arrays = _arrays([(2, 3, 4), (1, 3, 4)])
    t = _njt(arrays).transpose(1, 2)  # (B, 3, j, 4)
    heads = t.sum(1)
    assert heads.shape == (2, t.size(2), 4)
    _check(heads, [a.sum(1) for a in arrays])
    np.testing.assert_allclose(t.mean(2).numpy(), np.stack([a.mean(0) for a in arrays]), rtol=1e-12)
    x = _njt(_arrays(SHAPE_SETS[0]))
    with pytest.raises(RuntimeError, match="reducing along the batch dimension but not the ragged dimension"):
        x.sum(0)
    with pytest.raises(RuntimeError, match="reducing along the batch dimension but not the ragged dimension"):
        x.mean((0, 2))


# ---- dims --------------------------------------------------------------------------------------------
def test_transpose_unsqueeze_squeeze():
    arrays = _arrays([(2, 3, 4), (0, 3, 4), (5, 3, 4)])
    x = _njt(arrays)
    t = x.transpose(1, 2)
    assert t.shape == (3, 3, x.size(1), 4) and not t.is_contiguous() and t.transpose(1, 2).is_contiguous()
    _check(t, [a.transpose(1, 0, 2) for a in arrays])
    _check(x.transpose(-1, -2), [a.transpose(0, 2, 1) for a in arrays])
    _check(t.transpose(2, 1), arrays)
    u = x.unsqueeze(1)
    assert u.shape == (3, 1, x.size(1), 3, 4)
    _check(u, [a[None] for a in arrays])
    _check(x.unsqueeze(-1), [a[..., None] for a in arrays])
    _check(u.squeeze(1), arrays)
    _check(x.unsqueeze(3).squeeze(-2), arrays)
    _check(x.squeeze(2), arrays)  # size 3: unchanged
    with pytest.raises(ValueError, match="Transpose is not supported on the batch dimension for jagged NT"):
        x.transpose(0, 1)
    with pytest.raises(RuntimeError, match="unsqueeze\\(\\): not supported for NestedTensor on dim=0"):
        x.unsqueeze(0)
    with pytest.raises(RuntimeError, match="squeeze\\(\\): not supported for NestedTensor on dim=0"):
        x.squeeze(0)
    with pytest.raises(RuntimeError, match="squeeze\\(\\): not supported for NestedTensor on ragged dim"):
        x.squeeze(1)
    with pytest.raises(NotImplementedError, match="needs dim="):
        x.squeeze()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.unsqueeze(5)


def test_chunk_split():
    arrays = _arrays([(2, 5), (0, 5), (3, 5)])
    x = _njt(arrays)
    parts = x.chunk(3, -1)
    assert [p.shape for p in parts] == [(3, x.size(1), 2), (3, x.size(1), 2), (3, x.size(1), 1)]
    for p, lo, hi in zip(parts, (0, 2, 4), (2, 4, 5), strict=True):
        _check(p, [a[:, lo:hi] for a in arrays])
    a_, b_ = x.split([1, 4], 2)
    _check(a_, [a[:, :1] for a in arrays])
    _check(b_, [a[:, 1:] for a in arrays])
    _check(x.split(2, -1)[2], [a[:, 4:] for a in arrays])
    first, second = x.chunk(2, 0)  # along the batch: components 0-1 and 2
    _check(first, arrays[:2])
    _check(second, arrays[2:])
    assert first.is_contiguous() and first.offsets().tolist() == [0, 2, 2] and second.offsets().tolist() == [0, 3]
    none, every = x.split([0, 3], 0)
    _check(every, arrays)
    assert len(none) == 0 and none.to_padded_tensor(0.0).shape == (0, 0, 5)
    holey, refs = _holey()
    tail = holey.split(1, 0)[2]
    assert not tail.is_contiguous()
    _check(tail, refs[2:])
    with pytest.raises(RuntimeError, match="chunk\\(\\): not supported for NestedTensor on ragged dim"):
        x.chunk(2, 1)
    with pytest.raises(RuntimeError, match="split\\(\\): not supported for NestedTensor on ragged dim"):
        x.split(1, 1)
    with pytest.raises(RuntimeError, match=r"split_sizes to sum exactly to 3 \(the batch size\)"):
        x.split([1, 1], 0)


# ---- attention ---------------------------------------------------------------------------------------
def _attention_ref(q, k, v, causal=False, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(0, 2, 1) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    return _softmax(s, -1) @ v


@pytest.mark.parametrize("lengths", [[3, 0, 5], [4]])
@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention(lengths, causal):
    heads, d = 2, 4
    q, k, v = ([_arrays([(n, heads, d) for n in lengths], seed=s)] for s in (1, 2, 3))
    q, k, v = q[0], k[0], v[0]
    nq, nk, nv = (_njt(a).transpose(1, 2) for a in (q, k, v))
    out = NF.scaled_dot_product_attention(nq, nk, nv, is_causal=causal)
    assert out.shape == nq.shape
    refs = [_attention_ref(a.transpose(1, 0, 2), b.transpose(1, 0, 2), c.transpose(1, 0, 2), causal)
            for a, b, c in zip(q, k, v, strict=True)]
    _check(out, refs, tol=1e-10)
    _check(out.transpose(1, 2), [r.transpose(1, 0, 2) for r in refs], tol=1e-10)


def test_scaled_dot_product_attention_cross_scale_dropout():
    q = _arrays([(2, 2, 4), (3, 2, 4)], seed=1)
    kv = _arrays([(5, 2, 4), (1, 2, 4)], seed=2)
    nq, nkv = _njt(q).transpose(1, 2), _njt(kv).transpose(1, 2)
    out = NF.scaled_dot_product_attention(nq, nkv, nkv, scale=0.3)
    _check(out, [_attention_ref(a.transpose(1, 0, 2), b.transpose(1, 0, 2), b.transpose(1, 0, 2), scale=0.3)
                 for a, b in zip(q, kv, strict=True)], tol=1e-10)
    causal = NF.scaled_dot_product_attention(nq, nkv, nkv, is_causal=True)
    _check(causal, [_attention_ref(a.transpose(1, 0, 2), b.transpose(1, 0, 2), b.transpose(1, 0, 2), True)
                    for a, b in zip(q, kv, strict=True)], tol=1e-10)
    # dropout runs per component: the same seed gives the dense per-component results
    ember.manual_seed(7)
    dropped = NF.scaled_dot_product_attention(nq, nkv, nkv, dropout_p=0.5)
    ember.manual_seed(7)
    dense = [ember.nn.functional.scaled_dot_product_attention(a.unsqueeze(0), b.unsqueeze(0), b.unsqueeze(0),
                                                              dropout_p=0.5).squeeze(0)
             for a, b in zip(nq.unbind(), nkv.unbind(), strict=True)]
    _check(dropped, [t.numpy() for t in dense])


def test_scaled_dot_product_attention_errors():
    x = _njt(_arrays([(2, 2, 4), (3, 2, 4)]))
    q = x.transpose(1, 2)
    with pytest.raises(ValueError, match="attn_mask is not supported with nested tensors"):
        NF.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(1, 1, dtype=ember.bool))
    with pytest.raises(ValueError, match="Expected query, key, and value to be nested tensors, but got query.is_nested: "
                                         "False, key.is_nested: True, value.is_nested: True instead."):
        NF.scaled_dot_product_attention(ember.zeros(2, 2, 3, 4), q, q)
    with pytest.raises(RuntimeError, match=r"expected query of shape \(B, H, j, D\) with the ragged dim 2"):
        NF.scaled_dot_product_attention(x, x, x)
    other = _njt(_arrays([(2, 2, 4)])).transpose(1, 2)
    with pytest.raises(RuntimeError, match="need the same batch size, but got 2, 1 and 1"):
        NF.scaled_dot_product_attention(q, other, other)
    longer = _njt(_arrays([(4, 2, 4), (3, 2, 4)])).transpose(1, 2)
    with pytest.raises(RuntimeError, match="key and value need the same ragged size"):
        NF.scaled_dot_product_attention(q, q, longer)
    strided = nested.nested_tensor([ember.zeros(2, 3, 4)])
    with pytest.raises(NotImplementedError, match="jagged-layout nested tensors only"):
        NF.scaled_dot_product_attention(strided, strided, strided)


# ---- conversions and autograd ------------------------------------------------------------------------
def test_to_detach_clone_contiguous():
    arrays = _arrays(SHAPE_SETS[0])
    x = _njt(arrays, requires_grad=True)
    f32 = x.to(ember.float32)
    assert f32.dtype == ember.float32 and f32.values().dtype == ember.float32 and f32.size(1) == x.size(1)
    assert x.float().double().dtype == ember.float64
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    c = x.clone()
    assert c.requires_grad and not c.is_leaf and c.values() is not x.values()
    _check(c, arrays)
    assert x.contiguous().is_contiguous()
    with pytest.raises(NotImplementedError, match="cumprod is not implemented for nested tensors"):
        x.cumprod(1)
    with pytest.raises(AttributeError, match="'JaggedNestedTensor' object has no attribute 'no_such_attribute'"):
        x.no_such_attribute  # noqa: B018 - the lookup is what raises


def test_backward_and_grad():
    arrays = _arrays(SHAPE_SETS[0])
    leaf = _njt(arrays, requires_grad=True)
    (leaf * 2.0).to_padded_tensor(0.0).sum().backward()
    assert leaf.grad.layout is ember.jagged
    _check(leaf.grad, [np.full_like(a, 2.0) for a in arrays])
    values = ember.tensor(np.concatenate(arrays), requires_grad=True)
    nt = nested.nested_tensor_from_jagged(values, ember.tensor([0, 2, 2, 6]))
    (nt * nt).backward(_njt([np.ones_like(a) for a in arrays]))
    np.testing.assert_allclose(values.grad.numpy(), 2 * np.concatenate(arrays))
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (nt * 2).backward()
    with pytest.raises(RuntimeError, match="gradient must be a nested tensor of the same structure as self"):
        (nt * 2).backward(_njt(_arrays(SHAPE_SETS[1])))


def test_gradcheck_pointwise_linear_norm_softmax():
    rng = np.random.default_rng(11)
    x0, x1, x2 = (ember.tensor(rng.standard_normal(s), requires_grad=True) for s in SHAPE_SETS[0])
    w = ember.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    g = ember.tensor(rng.standard_normal(4), requires_grad=True)
    scale = ember.tensor(rng.standard_normal((3, 1, 4)), requires_grad=True)

    def f(x0, x1, x2, w, g, scale):
        nt = nested.as_nested_tensor([x0, x1, x2], layout=ember.jagged)
        h = NF.gelu(NF.linear(nt, w)) + NF.silu(nt @ w.t()).sigmoid() * scale
        h = NF.layer_norm(h, (4,), g).softmax(1).log_softmax(-1) - 0.5
        h = 1.0 - h.tanh() ** 2 / (h.exp() + 1.0)
        return h.to_padded_tensor(0.0), nested.to_padded_tensor(NF.relu(nt) * nt.sum(-1, keepdim=True), 1.0)

    assert gradcheck(f, (x0, x1, x2, w, g, scale))


def test_gradcheck_reductions_and_dims():
    rng = np.random.default_rng(12)
    values = ember.tensor(rng.standard_normal((6, 4)), requires_grad=True)
    dense = ember.tensor(rng.standard_normal((3, 5, 4)), requires_grad=True)

    def f(values, dense):
        nt = nested.nested_tensor_from_jagged(values, ember.tensor([0, 2, 2, 6]))
        a, b = nt.chunk(2, -1)
        parts = (a * b).unsqueeze(-1).squeeze(-1).transpose(1, 2)  # (B, 2, j)
        cut = nested.narrow(dense, 1, ember.tensor([0, 2, 1]), ember.tensor([3, 0, 4]), layout=ember.jagged)
        return (nt.sum(1), nt.mean(-1).to_padded_tensor(0.0), nt.sum((0, 1)), parts.sum(2), nt.sum(),
                nested.to_padded_tensor(cut.exp(), 0.0, (3, 2, 4)), cut.softmax(1).sum(1))

    assert gradcheck(f, (values, dense))


def test_gradcheck_attention():
    rng = np.random.default_rng(13)
    lengths = [3, 0, 2]
    q, k, v = (ember.tensor(rng.standard_normal((5, 2, 4)), requires_grad=True) for _ in range(3))
    offsets = ember.tensor(np.cumsum([0] + lengths))

    def f(q, k, v):
        nq, nk, nv = (nested.nested_tensor_from_jagged(t, offsets).transpose(1, 2) for t in (q, k, v))
        plain = NF.scaled_dot_product_attention(nq, nk, nv)
        causal = NF.scaled_dot_product_attention(nq, nk, nv, is_causal=True)
        return (plain + causal).transpose(1, 2).to_padded_tensor(0.0)

    assert gradcheck(f, (q, k, v))


def test_repr():
    nt = nested.nested_tensor([ember.tensor([1.0, 2.0]), ember.tensor([3.0])], layout=ember.jagged)
    j = repr(nt.size(1))
    assert repr(nt) == f"NestedTensor(size=(2, {j}), offsets=tensor([0, 2, 3]), contiguous=True)" == str(nt)
    rg = nested.nested_tensor([ember.tensor([1.0, 2.0])], layout=ember.jagged, requires_grad=True)
    assert repr(rg).endswith(", requires_grad=True, contiguous=True)")
    assert repr(rg * 2).endswith(", grad_fn=<MulBackward0>, contiguous=True)")
    holey, _ = _holey()
    assert repr(holey) == (f"NestedTensor(size=(3, {holey.size(1)!r}, 2), offsets=tensor([0, 3, 5, 6]), "
                           "lengths=tensor([2, 0, 1]), contiguous=False)")


def test_misc_protocols():
    x = _njt(_arrays(SHAPE_SETS[0]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    with pytest.raises(RuntimeError, match="unbind\\(\\): only supported for NestedTensor on dim=0"):
        x.unbind(1)
    with pytest.raises(NotImplementedError, match="indexing with slice"):
        x[0:2]
    with pytest.raises(IndexError, match="Dimension out of range"):
        x[3]
    assert nested.nested_aware("relu", ember.relu)(x).layout is ember.jagged
    with pytest.raises(TypeError, match="build a nested tensor with ember.nested"):
        nested.JaggedNestedTensor()
