"""Complex numbers: dtype-changing views and the ops composed on them, against NumPy."""

import numpy as np
import pytest

import ember

Z = np.array([[1 + 2j, -3.5 + 0j], [0j, -1 - 1j]], dtype=np.complex64)


def test_view_as_real_and_back_share_memory():
    z = ember.from_numpy(Z.copy())
    r = ember.view_as_real(z)
    np.testing.assert_array_equal(r.numpy(), Z.view(np.float32).reshape(2, 2, 2))
    r[0, 0, 1] = 9.0
    assert z.numpy()[0, 0] == 1 + 9j
    back = ember.view_as_complex(r)
    assert back.dtype == ember.complex64 and back.data_ptr() == z.data_ptr()
    now = z.numpy().copy()  # after the write above
    t = ember.view_as_real(z.t())  # strides double, offset doubles
    assert t.stride() == (2, 4, 1)
    np.testing.assert_array_equal(t.numpy(), np.stack([now.T.real, now.T.imag], -1))
    np.testing.assert_array_equal(ember.view_as_real(z[1:]).numpy(), np.stack([now[1:].real, now[1:].imag], -1))


def test_real_imag_conj_angle_sgn_polar_complex():
    z = ember.from_numpy(Z.copy())
    np.testing.assert_array_equal(z.real.numpy(), Z.real)
    np.testing.assert_array_equal(z.imag.numpy(), Z.imag)
    z.imag.fill_(0.5)
    assert (z.numpy().imag == 0.5).all()
    z = ember.from_numpy(Z.copy())
    np.testing.assert_array_equal(ember.conj(z).numpy(), np.conj(Z))
    np.testing.assert_array_equal(z.conj_physical().numpy(), np.conj(Z))
    np.testing.assert_allclose(ember.angle(z).numpy(), np.angle(Z), rtol=1e-6)
    np.testing.assert_allclose(ember.sgn(z).numpy(), np.where(Z == 0, 0, Z / np.where(Z == 0, 1, np.abs(Z))), rtol=1e-6)
    r, i = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    np.testing.assert_array_equal(ember.complex(ember.tensor(r, dtype=ember.float64),
                                                ember.tensor(i, dtype=ember.float64)).numpy(), r + 1j * i)
    rho, theta = np.array([2.0, 1.0]), np.array([0.3, -2.0])
    np.testing.assert_allclose(ember.polar(ember.tensor(rho, dtype=ember.float64),
                                           ember.tensor(theta, dtype=ember.float64)).numpy(), rho * np.exp(1j * theta))
    assert ember.angle(ember.tensor([-2.0, 0.0, 3.0])).tolist() == [np.float32(np.pi), 0.0, 0.0]
    assert ember.real(ember.tensor([1.0])).tolist() == [1.0]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ember.view_as_real(ember.zeros(2)), r"only supported for complex tensors"),
        (lambda: ember.view_as_complex(ember.zeros(3)), r"last dimension of size 2"),
        (lambda: ember.view_as_complex(ember.zeros(2, 2).t()), r"last dimension with stride 1"),
        (lambda: ember.view_as_complex(ember.zeros(4)[1:3]), r"storage_offset divisible by 2"),
        (lambda: ember.view_as_complex(ember.zeros(3, 2, dtype=ember.int64)), r"only supported for half, float and double"),
        (lambda: ember.imag(ember.zeros(2)), r"imag is not implemented for tensors with non-complex dtypes"),
        (lambda: ember.complex(ember.tensor([1]), ember.tensor([2])), r"Expected both inputs to be Half, Float or Double"),
    ],
)
def test_complex_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_conj_is_materialized_so_no_conj_bit():
    z = ember.tensor([1 + 2j, -3j])
    c = z.conj()
    assert c.tolist() == [1 - 2j, 3j] and c.data_ptr() != z.data_ptr()
    assert not c.is_conj() and not ember.is_conj(c) and ember.resolve_conj(c) is c and c.resolve_neg() is c
    r = ember.ones(2)
    assert r.conj().data_ptr() == r.data_ptr()  # real: conj is the tensor itself, as in PyTorch
