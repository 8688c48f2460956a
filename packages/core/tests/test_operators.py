"""The Tensor operators (Note [C-level operators], csrc/tensor_py.cpp): each equals its op with a
tensor or a Python number on either side; an operand of any other type makes the operator answer
NotImplemented, so the other operand's reflected method runs or Python raises its TypeError; a
number that does not fit the op raises the op's error; operators record autograd history."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(4)

FLOAT_OPS = [(operator.add, np.add), (operator.sub, np.subtract), (operator.mul, np.multiply),
             (operator.truediv, np.true_divide), (operator.floordiv, np.floor_divide), (operator.mod, np.mod),
             (operator.pow, np.power), (operator.eq, np.equal), (operator.ne, np.not_equal),
             (operator.lt, np.less), (operator.le, np.less_equal), (operator.gt, np.greater),
             (operator.ge, np.greater_equal)]
INT_OPS = [(operator.and_, np.bitwise_and), (operator.or_, np.bitwise_or), (operator.xor, np.bitwise_xor),
           (operator.lshift, np.left_shift), (operator.rshift, np.right_shift)]


@pytest.mark.parametrize("py_op,np_op", FLOAT_OPS, ids=lambda f: getattr(f, "__name__", ""))
def test_float_operators_match_numpy(py_op, np_op):
    a = RNG.uniform(0.5, 2.0, (3, 4))
    b = RNG.uniform(0.5, 2.0, (4,))  # broadcast
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    np.testing.assert_allclose(py_op(ta, tb).numpy(), np_op(a, b), rtol=1e-12)
    np.testing.assert_allclose(py_op(ta, 1.5).numpy(), np_op(a, 1.5), rtol=1e-12)
    np.testing.assert_allclose(py_op(1.5, ta).numpy(), np_op(1.5, a), rtol=1e-12)  # the reflected form
    np.testing.assert_allclose(py_op(ta[:, ::2], 2).numpy(), np_op(a[:, ::2], 2), rtol=1e-12)
    assert py_op(ember.from_numpy(a[:0]), 2).shape == (0, 4)
    np.testing.assert_allclose(py_op(ember.tensor(1.25, dtype=ember.float64), 3).numpy(), np_op(1.25, 3.0))


@pytest.mark.parametrize("py_op,np_op", INT_OPS, ids=lambda f: getattr(f, "__name__", ""))
def test_integer_operators_match_numpy(py_op, np_op):
    a, b = RNG.integers(0, 60, (3, 4)), RNG.integers(0, 5, (4,))
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    np.testing.assert_array_equal(py_op(ta, tb).numpy(), np_op(a, b))
    np.testing.assert_array_equal(py_op(ta, 3).numpy(), np_op(a, 3))
    np.testing.assert_array_equal(py_op(3, ta).numpy(), np_op(3, a))
    np.testing.assert_array_equal(py_op(ta, True).numpy(), np_op(a, 1))  # a bool number ranks lowest
    bools = np.array([True, False, True])
    np.testing.assert_array_equal(py_op(ember.from_numpy(bools), 2).numpy(), np_op(bools.astype(np.int64), 2))


class Other:
    def __radd__(self, other):
        return "radd"

    def __rlt__(self, other):  # not a Python protocol: `<` falls back to __gt__
        return "never"

    def __gt__(self, other):
        return "gt"


def test_other_types_get_notimplemented():
    t = ember.ones(2)
    assert t + Other() == "radd"  # Tensor.__add__ answered NotImplemented
    assert (t < Other()) == "gt"  # the reflection of <
    assert t.__sub__("x") is NotImplemented
    assert t.__rsub__(ember.ones(2)) is NotImplemented  # tensor - tensor runs the left one's __sub__
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for -: '\S*Tensor' and 'str'"):
        t - "x"
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*\* or pow\(\): 'list' and '\S*Tensor'"):
        [1] ** t
    assert (t == None) is False and (t != None) is True  # noqa: E711 - identity fallback
    assert (t == "a") is False
    assert len({t, ember.ones(2)}) == 2  # tensors still hash by identity


def test_numbers_out_of_range_raise_the_ops_error():
    with pytest.raises(ValueError, match="fits in int64"):
        ember.ones(2) + 2**70
    with pytest.raises(ValueError, match="fits in int64"):
        2**70 - ember.ones(2)


def test_operators_record_autograd_and_take_subclasses():
    w = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    y = (3 - w) * w + w / 2 + 2 ** w
    assert type(y) is ember.Tensor
    y.sum().backward()
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(w.grad.numpy(), 3 - 2 * x + 0.5 + np.log(2) * 2**x, rtol=1e-6)
