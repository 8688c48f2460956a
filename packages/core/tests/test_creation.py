"""Factory ops, their dtype inference and their errors."""

import numpy as np
import pytest

import ember


def test_zeros_ones_full_eye():
    assert ember.zeros(2, 3).tolist() == [[0.0] * 3] * 2 and ember.zeros(2, 3).dtype == ember.float32
    assert ember.ones((2,), dtype=ember.int8).tolist() == [1, 1]
    assert ember.full((2,), 7).dtype == ember.int64 and ember.full((2,), 1.5).dtype == ember.float32
    assert ember.full((1,), True).dtype == ember.bool and ember.full((1,), 1j).dtype == ember.complex64
    np.testing.assert_array_equal(ember.eye(3, 4).numpy(), np.eye(3, 4, dtype=np.float32))
    assert ember.zeros(0, 5).shape == (0, 5) and ember.zeros([]).shape == ()


def test_like_forms_keep_dtype():
    x = ember.tensor([[1, 2]], dtype=ember.int16)
    assert ember.zeros_like(x).dtype == ember.int16 and ember.ones_like(x).tolist() == [[1, 1]]
    assert ember.full_like(x, 3.7).tolist() == [[3, 3]]
    assert ember.empty_like(x, dtype=ember.float64).dtype == ember.float64


@pytest.mark.parametrize(
    "args, kwargs, expected",
    [
        ((5,), {}, np.arange(5)),
        ((1, 4, 0.5), {}, np.arange(1, 4, 0.5, dtype=np.float32)),
        ((10, 0, -3), {}, np.arange(10, 0, -3)),
        ((0, 1, 0.1), {"dtype": ember.float64}, np.arange(0, 1, 0.1)),
        ((3,), {"dtype": ember.float32}, np.arange(3, dtype=np.float32)),
    ],
)
def test_arange(args, kwargs, expected):
    out = ember.arange(*args, **kwargs)
    assert out.dtype == {np.dtype(np.int64): ember.int64, np.dtype(np.float32): ember.float32,
                         np.dtype(np.float64): ember.float64}[expected.dtype]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_linspace_is_symmetric_and_exact_at_ends():
    out = ember.linspace(-1, 1, 7, dtype=ember.float64).numpy()
    np.testing.assert_allclose(out, np.linspace(-1, 1, 7), rtol=0, atol=1e-15)
    assert out[0] == -1 and out[-1] == 1
    assert ember.linspace(0, 1, 1).tolist() == [0.0] and ember.linspace(0, 1, 0).shape == (0,)


def test_linspace_rounds_as_pytorch():
    # float32: the step in float32, each value start + step * i (from the nearer end) rounded once
    n, start, end = 4097, np.float32(-4.49411726), np.float32(3.94554973)
    i = np.arange(n)
    step = (end - start) / np.float32(n - 1)
    ref = np.where(i < n // 2, start + np.float64(step) * i, end - np.float64(step) * (n - 1 - i)).astype(np.float32)
    np.testing.assert_array_equal(ember.linspace(float(start), float(end), n).numpy(), ref)
    # float16: every operation rounded to float16
    h = np.float16
    s16, e16 = h(-3.0), h(7.0)
    step16 = (e16 - s16) / h(1000)
    i = np.arange(1001)
    ref16 = np.where(i < 500, s16 + (step16 * i.astype(h)).astype(h), e16 - (step16 * (1000 - i).astype(h)).astype(h))
    np.testing.assert_array_equal(ember.linspace(-3.0, 7.0, 1001, dtype=ember.float16).float().numpy(),
                                  ref16.astype(np.float32))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ember.arange(0, 5, 0), r"step must be nonzero"),
        (lambda: ember.arange(5, 0, 1), r"upper bound and larger bound inconsistent with step sign"),
        (lambda: ember.linspace(0, 1, -1), r"number of steps must be non-negative"),
        (lambda: ember.eye(-1), r"n must be greater or equal to 0, got -1"),
        (lambda: ember.zeros(-2), r"non-negative sizes"),
    ],
)
def test_creation_errors(call, message):
    with pytest.raises((RuntimeError, ValueError), match=message):
        call()


def test_absent_backend_names_the_op():
    if not ember._C._has_backend("cuda"):
        with pytest.raises(NotImplementedError, match=r"\[zeros\] not implemented for cuda"):
            ember.zeros(2, device="cuda")


def test_fill_and_zero_in_place():
    t = ember.ones(2, 2)
    t.fill_(3)
    assert t.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    t.t().zero_()
    assert t.tolist() == [[0.0, 0.0], [0.0, 0.0]]
