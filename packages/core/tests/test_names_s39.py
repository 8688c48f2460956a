"""More of PyTorch's public surface (issue 18, item 1): Tensor.grad_dtype (the dtype the engine
casts a leaf's gradients to), torch.autograd.enforce_grad_layout_policy (whether a stolen first
gradient must follow the leaf's layout), torch.slice_inverse and torch.FatalError."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import enforce_grad_layout_policy, gradcheck


def t64(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# ---- Tensor.grad_dtype ----------------------------------------------------------------------------


def test_grad_dtype_defaults_to_the_tensor_dtype():
    assert ember.zeros(2).grad_dtype == ember.float32
    assert ember.zeros(2, dtype=ember.float64, requires_grad=True).grad_dtype == ember.float64


def test_grad_dtype_casts_incoming_gradients():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.grad_dtype = ember.float64
    assert x.grad_dtype == ember.float64
    (x * x).sum().backward()
    assert x.grad.dtype == ember.float64
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    (x * 3).sum().backward()  # accumulates in grad_dtype
    assert x.grad.dtype == ember.float64
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 7.0])


def test_grad_dtype_wider_than_a_half_leaf():
    # A float16 weight with a float32 gradient: the cast of the gradient happens once, at the leaf.
    h = ember.tensor([1.0, 2.0], dtype=ember.float16, requires_grad=True)
    h.grad_dtype = ember.float32
    (h.float() * 3).sum().backward()
    assert h.grad.dtype == ember.float32
    np.testing.assert_array_equal(h.grad.numpy(), [3.0, 3.0])


def test_grad_dtype_none_allows_any_dtype():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.grad_dtype = None
    assert x.grad_dtype is None
    x.grad = ember.zeros(2, dtype=ember.float16)  # allowed now
    assert x.grad.dtype == ember.float16
    (x * x).sum().backward()  # a float32 gradient accumulated into the float16 one
    assert x.grad.dtype == ember.float16
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_grad_dtype_applies_through_several_paths_and_hooks():
    x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x.grad_dtype = ember.float64
    seen = []
    x.register_hook(lambda g: seen.append(g.dtype))
    (x.exp().sum() + (x * 2).sum()).backward()
    assert x.grad.dtype == ember.float64
    np.testing.assert_allclose(x.grad.numpy(), np.exp(np.float32([1.0, -2.0, 3.0])) + 2, rtol=1e-6)
    assert seen and all(d == ember.float64 for d in seen)


def test_grad_dtype_set_before_requires_grad():
    n = ember.tensor([1.0, 2.0])
    n.grad_dtype = ember.float64
    n.requires_grad_()
    (n * 1).sum().backward()
    assert n.grad.dtype == ember.float64


def test_grad_dtype_errors():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"grad_dtype can only be accessed on leaf tensors"):
        _ = y.grad_dtype
    with pytest.raises(RuntimeError, match=r"grad_dtype can only be set on leaf tensors"):
        y.grad_dtype = ember.float16
    with pytest.raises(TypeError, match=r"grad_dtype must be an ember.dtype or None, but got str"):
        x.grad_dtype = "float"
    x.grad = ember.zeros(2)
    with pytest.raises(RuntimeError, match=r"cannot set grad_dtype to float16 because there is already a "
                                           r"gradient of dtype float32"):
        x.grad_dtype = ember.float16
    x.grad_dtype = ember.float32  # the same dtype as the existing gradient is fine
    x.grad = None
    x.grad_dtype = ember.float64
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of dtype float32 to a tensor with grad_dtype "
                                           r"float64"):
        x.grad = ember.zeros(2)
    with pytest.raises(RuntimeError, match=r"gradient of size \[3\] to a tensor of size \[2\]"):
        x.grad = ember.zeros(3, dtype=ember.float64)


def test_grad_setter_checks_the_default_dtype():
    z = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"gradient of dtype float16 to a tensor with grad_dtype float32"):
        z.grad = ember.zeros(2, dtype=ember.float16)


def test_grad_dtype_applies_to_autograd_grad_too():
    # As in PyTorch: the gradient autograd.grad captures for a leaf is the one .grad would get.
    x = t64([0.5, -1.5, 2.0], requires_grad=True)
    x.grad_dtype = ember.float32
    (g,) = ember.autograd.grad((x * x).sum(), x)
    assert g.dtype == ember.float32
    np.testing.assert_array_equal(g.numpy(), [1.0, -3.0, 4.0])
    assert x.grad is None
    assert gradcheck(lambda t: (t * t).sum(), (t64([0.5, -1.5], requires_grad=True),))


# ---- enforce_grad_layout_policy ---------------------------------------------------------------------


def _transposed_grad_step(p):
    # The gradient reaching p is the transpose of a fresh contiguous tensor nobody else holds.
    (p.t() * ember.arange(6.0).reshape(3, 2)).sum().backward()


def test_layout_policy_on_copies_the_gradient_into_the_leaf_layout():
    p = ember.zeros(2, 3, requires_grad=True)
    assert ember._C._is_grad_layout_enforcement_enabled()
    _transposed_grad_step(p)
    assert p.grad.is_contiguous()
    np.testing.assert_array_equal(p.grad.numpy(), np.arange(6.0).reshape(3, 2).T)


def test_layout_policy_off_steals_the_gradient_as_laid_out():
    p = ember.zeros(2, 3, requires_grad=True)
    with enforce_grad_layout_policy(False):
        assert not ember._C._is_grad_layout_enforcement_enabled()
        _transposed_grad_step(p)
    assert ember._C._is_grad_layout_enforcement_enabled()
    assert p.grad.stride() == (1, 2)
    np.testing.assert_array_equal(p.grad.numpy(), np.arange(6.0).reshape(3, 2).T)
    _transposed_grad_step(p)  # later gradients accumulate into it in place
    np.testing.assert_array_equal(p.grad.numpy(), 2 * np.arange(6.0).reshape(3, 2).T)


def test_layout_policy_off_never_steals_an_overlapping_gradient():
    # sum's gradient is an expanded scalar: stealing it would make .grad a stride-0 alias, which
    # the next backward could not accumulate into (PyTorch 2.13 steals it, then raises there).
    p = ember.zeros(2, 3, requires_grad=True)
    with enforce_grad_layout_policy(False):
        p.sum().backward()
        p.sum().backward()
    assert p.grad.stride() == (3, 1)
    np.testing.assert_array_equal(p.grad.numpy(), np.full((2, 3), 2.0))


def test_layout_policy_as_call_decorator_and_clone():
    enforce_grad_layout_policy(False)
    assert not ember._C._is_grad_layout_enforcement_enabled()
    enforce_grad_layout_policy(True)
    assert ember._C._is_grad_layout_enforcement_enabled()

    @enforce_grad_layout_policy(False)
    def step():
        return ember._C._is_grad_layout_enforcement_enabled()

    assert ember._C._is_grad_layout_enforcement_enabled()
    assert step() is False
    assert ember._C._is_grad_layout_enforcement_enabled()
    ctx = enforce_grad_layout_policy(False)
    other = ctx.clone()
    assert other.mode is False
    other.__exit__(None, None, None)
    ctx.__exit__(None, None, None)
    assert ember._C._is_grad_layout_enforcement_enabled()


def test_layout_policy_is_thread_local():
    import threading

    seen = []
    with enforce_grad_layout_policy(False):
        thread = threading.Thread(target=lambda: seen.append(ember._C._is_grad_layout_enforcement_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]


# ---- slice_inverse --------------------------------------------------------------------------------


def test_slice_inverse_views_the_slice_memory_with_the_base_geometry():
    base = ember.arange(12.0).reshape(3, 4)
    part = base[:, 1:3]
    back = ember.slice_inverse(part, base, 1, 1, 3)
    assert back.shape == (3, 4) and back.stride() == (4, 1)
    assert back.data_ptr() == base.data_ptr()
    np.testing.assert_array_equal(back.numpy(), np.arange(12.0).reshape(3, 4))
    assert part.slice_inverse(base, dim=1, start=1, end=3).shape == (3, 4)
    # a base laid out otherwise (transposed) gives that layout over the same memory
    t = ember.arange(12.0).reshape(4, 3).t()
    again = ember.slice_inverse(t[1:], t, 0, 1)
    assert again.stride() == t.stride()
    np.testing.assert_array_equal(again.numpy(), t.numpy())


def test_slice_inverse_zero_size_and_0d():
    base = ember.zeros(0, 3)
    assert ember.slice_inverse(base[:, :1], base, 1, 0, 1).shape == (0, 3)
    s = ember.tensor(5.0)
    assert ember.slice_inverse(s, s).item() == 5.0


def test_slice_inverse_gradient():
    def f(x):
        return ember.slice_inverse(x[:, 1:], x, 1, 1) * 2

    assert gradcheck(f, (t64(np.arange(6.0).reshape(2, 3), requires_grad=True),))
    # As in PyTorch: the slice gets the gradient's slice, src the rest.
    base = t64(np.arange(12.0).reshape(3, 4), requires_grad=True)
    part = base.detach()[:, 1:3].requires_grad_()
    weights = np.arange(12.0).reshape(3, 4) + 1
    (ember.slice_inverse(part, base, 1, 1, 3) * t64(weights)).sum().backward()
    np.testing.assert_array_equal(part.grad.numpy(), weights[:, 1:3])
    want = weights.copy()
    want[:, 1:3] = 0
    np.testing.assert_array_equal(base.grad.numpy(), want)


def test_slice_inverse_errors():
    with pytest.raises(RuntimeError, match=r"\[as_strided\] expected the view to fit in its storage"):
        ember.slice_inverse(ember.zeros(2), ember.zeros(10, 10))
    with pytest.raises(TypeError, match=r"argument 'src' must be Tensor, not list"):
        ember.slice_inverse(ember.zeros(2), [1, 2])


# ---- FatalError -----------------------------------------------------------------------------------


def test_fatal_error_is_an_exception_type():
    assert issubclass(ember.FatalError, Exception)
    with pytest.raises(ember.FatalError, match="boom"):
        raise ember.FatalError("boom")
