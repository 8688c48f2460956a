"""In-place writes through views (Note [in-place on views] in native/src/autograd/engine.cpp): the
base's history becomes CopySlices, the written view and its stale siblings are regenerated as
as_strided of the base, and gradients match finite differences (gradcheck, float64); in forward
mode the written view's tangent reaches its base and stale views reread theirs from the base
(Note [tangents of views])."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def f64(values, requires_grad=False):
    return ember.tensor(values, dtype=ember.float64, requires_grad=requires_grad)


def test_write_through_a_slice_of_a_non_leaf():
    a = f64([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = a * 2.0
    v = b[1:3]
    v.mul_(f64([3.0, 5.0]))
    assert b.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert b.tolist() == [2.0, 12.0, 30.0, 8.0]
    b.sum().backward()
    assert a.grad.tolist() == [2.0, 6.0, 10.0, 2.0]


def test_setitem_with_a_differentiable_value_gives_the_base_history():
    w = f64([2.0, 3.0], requires_grad=True)
    x = ember.zeros(3, dtype=ember.float64)
    x[0:2] = w * 2.0
    assert x.requires_grad and x.grad_fn.name() == "CopySlices"
    (x * x).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 8.0 * w.detach().numpy())
    w.grad = None
    y = ember.zeros(2, 3, dtype=ember.float64)
    y[1] = w[0]  # select view, broadcast copy
    y[:, 0] = w  # a strided column
    (y * f64([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    # y = [[w0, 0, 0], [w1, w0, w0]]
    np.testing.assert_allclose(w.grad.numpy(), [1.0 + 5.0 + 6.0, 4.0])


def test_setitem_with_tensor_indices():
    w = f64([2.0, 3.0], requires_grad=True)
    x = ember.zeros(4, dtype=ember.float64)
    x[ember.tensor([3, 1])] = w
    (x * f64([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert w.grad.tolist() == [4.0, 2.0]


def _write_slice(a, c):
    b = a * 1.5
    b[1:3].mul_(c)
    return b


def _write_chain_of_views(a, c):
    b = a.reshape(3, 4) * 1.0
    row = b[1]  # a view of b
    row[1:3].add_(c * c)  # a view of a view: the base is still b
    return b.exp()


def _write_transposed(a, c):
    b = a.reshape(3, 4) + 0.0
    b.t()[2].copy_(c * 2.0)  # column 2 of b: a strided view
    return b


def _sibling_view_sees_the_write(a, c):
    b = a * 2.0
    u = b[0:2]  # taken before the write: regenerated from the base afterwards
    b[1:3].mul_(c)
    return u * u, b


def _base_written_after_view(a, c):
    b = a * 2.0
    v = b[1:3]
    b.mul_(a)  # the write goes through the base; v sees it
    return v * c


def _row_written(a, c):
    # (unbind's rows may not be written while b is tracked: Note [view creation])
    b = a.reshape(3, 4) * 1.0
    b.select(0, 1).mul_(c.sum())
    return b, b[0]


@pytest.mark.parametrize("fn, c_shape", [
    (_write_slice, [2]), (_write_chain_of_views, [2]), (_write_transposed, [3]),
    (_sibling_view_sees_the_write, [2]), (_base_written_after_view, [2]), (_row_written, [2]),
])
def test_gradcheck_through_in_place_view_writes(fn, c_shape):
    gen = ember.Generator()
    gen.manual_seed(1)
    n = 12 if fn in (_write_chain_of_views, _write_transposed, _row_written) else 4
    a = ember.randn([n], generator=gen, dtype=ember.float64).requires_grad_()
    c = ember.randn(c_shape, generator=gen, dtype=ember.float64).requires_grad_()
    assert gradcheck(fn, (a, c), check_forward_ad=True)  # forward mode: Note [tangents of views]
    assert gradgradcheck(fn, (a, c))


def test_write_matches_out_of_place_computation():
    a = f64([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    b = a * a
    b[:, 1].add_(a[:, 0])  # column write on a non-contiguous view
    b.sin().sum().backward()
    got = a.grad.numpy().copy()
    an = np.array([[1.0, -2.0], [3.0, 0.5]])
    # out of place: b = a^2 with column 1 += a[:, 0]
    bn = an ** 2
    bn[:, 1] += an[:, 0]
    cos = np.cos(bn)
    expected = 2 * an * cos
    expected[:, 0] += cos[:, 1]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_view_tracking_errors():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\[mul\] a view of a leaf Variable that requires grad is being used in "
                                           r"an in-place operation\."):
        x[0:2].mul_(2.0)
    b = x * 2.0
    with ember.no_grad():
        v = b[0:2]
    with pytest.raises(RuntimeError, match=r"A view was created in no_grad mode and is being modified inplace with "
                                           r"grad mode enabled"):
        v.mul_(2.0)
    with ember.no_grad():
        v.mul_(2.0)  # both in no_grad: allowed, untracked
    z = ember.tensor([1 + 2j, 3 - 1j], dtype=ember.complex128, requires_grad=True) * 1.0
    with pytest.raises(NotImplementedError, match=r"view whose dtype differs from its base"):
        ember.view_as_real(z).mul_(2.0)


def test_views_without_grad_are_untouched():
    x = ember.zeros(4, dtype=ember.float64)
    v = x[1:3]
    v.add_(1.0)
    assert not x.requires_grad and x.grad_fn is None and x.tolist() == [0.0, 1.0, 1.0, 0.0]
    alias = x[...]
    assert alias.tolist() == x.tolist()
    w = f64([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    h = w * 1.0
    h[...].mul_(3.0)  # x[...] is a view keeping history, as in PyTorch
    h.sum().backward()
    assert w.grad.tolist() == [3.0] * 4
