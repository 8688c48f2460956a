"""ember.autograd.graph.allow_mutation_on_saved_tensors and the rule it rests on: a tensor saved
through saved-tensor hooks has no version check (as in PyTorch). Expected gradients are float64
formulas of the values the tensors had when saved."""

import numpy as np
import pytest

import ember
from ember.autograd import graph

F64 = ember.float64


def _leaf():
    return ember.tensor([0.5, 1.0, 2.0], dtype=F64, requires_grad=True)


def _square_sum_then(write):
    """d/da of sum((a * 1) ** 2) = 2a, with `write` modifying a * 1 after it was saved."""
    a = _leaf()
    with graph.allow_mutation_on_saved_tensors():
        b = a * 1
        out = (b ** 2).sum()
        write(b)
        out.backward()
    return a, b


def test_in_place_write_after_save_backward_reads_saved_values():
    a, b = _square_sum_then(lambda b: b.mul_(3))
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy())
    np.testing.assert_allclose(b.detach().numpy(), 3 * a.detach().numpy())  # the write itself happened


@pytest.mark.parametrize("how", ["view", "out", "data", "copy_", "index_put", "fill_"])
def test_every_kind_of_write_is_seen(how):
    def write(b):
        with ember.no_grad():
            if how == "view":
                b[1:].mul_(5)
            elif how == "out":
                ember.mul(b.detach(), 7, out=b)
            elif how == "data":
                b.data.add_(1)
            elif how == "copy_":
                b.copy_(ember.zeros(3, dtype=F64))
            elif how == "index_put":
                b[ember.tensor([0, 2])] = 9.0
            else:
                b.fill_(-1.0)

    a, _ = _square_sum_then(write)
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy())


def test_non_contiguous_and_zero_dim_saved_tensors():
    a = ember.tensor(np.arange(6.0).reshape(2, 3), dtype=F64, requires_grad=True)
    s = ember.tensor(1.5, dtype=F64, requires_grad=True)
    with graph.allow_mutation_on_saved_tensors():
        t = (a * 1).t()  # saved by sin as a transposed view
        z = s * 1        # 0-dim
        out = t.sin().sum() + (z * z)
        with ember.no_grad():
            t.zero_()
            z.fill_(4.0)
        out.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.cos(np.arange(6.0).reshape(2, 3)))
    np.testing.assert_allclose(s.grad.item(), 3.0)


def test_zero_size_saved_tensor():
    a = ember.zeros(0, 3, dtype=F64, requires_grad=True)
    with graph.allow_mutation_on_saved_tensors():
        b = a * 1
        out = (b * b).sum()
        b.add_(1)
        out.backward()
    assert a.grad.shape == (0, 3)


def test_function_save_for_backward():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * grad * x ** 2

    a = _leaf()
    with graph.allow_mutation_on_saved_tensors():
        b = a * 1
        y = Cube.apply(b)
        with ember.no_grad():
            b.sub_(10)
        y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 3 * a.detach().numpy() ** 2)


def test_one_copy_for_a_view_saved_twice():
    a = _leaf()
    with graph.allow_mutation_on_saved_tensors() as ctx:
        b = a * 1
        out = (b * b).sum() + b.exp().sum()  # mul saves b twice, exp saves its output
        assert len(ctx.by_storage[ember._C._storage_id(b)]) == 1
        b.mul_(2)
        out.backward()
    x = a.detach().numpy()
    np.testing.assert_allclose(a.grad.numpy(), 2 * x + np.exp(x))


def test_backward_outside_the_context_raises():
    a = _leaf()
    with graph.allow_mutation_on_saved_tensors():
        out = ((a * 1) ** 2).sum()
    with pytest.raises(RuntimeError, match="outside of the 'allow_mutation_on_saved_tensors' context"):
        out.backward()


def test_contexts_cannot_be_nested():
    with graph.allow_mutation_on_saved_tensors():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with graph.allow_mutation_on_saved_tensors():
                pass
    assert graph._mutation_context is None  # the failed attempt left nothing behind
    with graph.allow_mutation_on_saved_tensors() as ctx:
        assert graph._mutation_context is ctx


def test_writes_outside_the_context_are_not_intercepted():
    a = _leaf()
    with graph.allow_mutation_on_saved_tensors() as ctx:
        b = a * 1
        out = (b ** 2).sum()
        out.backward()
    assert not ctx.by_storage and not ctx.active
    assert ember._C._set_write_hook(None) is False  # no hook is left on this thread


def test_hooks_mean_no_version_check_as_in_pytorch():
    # what a pack hook keeps is what backward reads: here the very tensor, written afterwards
    x = ember.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t, lambda p: p):
        w = x * 1
        y = w.sin()
    with ember.no_grad():
        w.add_(1)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(np.array([2.0, 3.0])))
    # without hooks the write is still caught
    w = x * 1
    y = w.sin()
    with ember.no_grad():
        w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
