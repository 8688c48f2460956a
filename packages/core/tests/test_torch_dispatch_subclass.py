"""__torch_dispatch__ on tensor subclasses (ember/_python_tensor.py, Note [Python tensors]): wrapper
subclasses made by Tensor._make_wrapper_subclass, storage-sharing ones made by Tensor._make_subclass,
their place after autograd and after modes, and their errors. Values are checked against float64
NumPy references."""

import numpy as np
import pytest

import ember
from ember.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass
from ember.utils._pytree import tree_map

F64 = ember.float64


class Wrapped(ember.Tensor):
    """A wrapper subclass: its data is the plain tensor `elem`; every op it reaches is logged."""

    log: list = []
    __torch_function__ = ember._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, elem, requires_grad=False):
        return ember.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(), dtype=elem.dtype,
                                                   device=elem.device, requires_grad=requires_grad)

    def __init__(self, elem, requires_grad=False):
        self.elem = elem

    def __tensor_flatten__(self):
        return ["elem"], None

    @staticmethod
    def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
        return Wrapped(inner["elem"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.log.append(str(func))

        def unwrap(x):
            return x.elem if isinstance(x, Wrapped) else x

        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda x: Wrapped(x) if isinstance(x, ember.Tensor) else x, out)


def _np(t):
    return (t.elem if isinstance(t, Wrapped) else t).detach().numpy()


@pytest.fixture(autouse=True)
def _clear_log():
    Wrapped.log.clear()


def test_wrapper_keeps_type_attributes_and_geometry():
    elem = ember.tensor(np.arange(6.0).reshape(2, 3), dtype=F64)
    x = Wrapped(elem)
    assert type(x) is Wrapped and x.shape == (2, 3) and x.dtype == F64 and x.stride() == (3, 1)
    assert x.elem is elem
    y = x + 1
    assert type(y) is Wrapped and Wrapped.log == ["aten.add"]
    np.testing.assert_allclose(_np(y), np.arange(6.0).reshape(2, 3) + 1)
    assert is_traceable_wrapper_subclass(x) and not is_traceable_wrapper_subclass(elem)


def test_non_contiguous_broadcast_zero_size_and_zero_dim():
    a = np.random.default_rng(0).standard_normal((3, 4))
    x = Wrapped(ember.tensor(a, dtype=F64).t())  # non-contiguous inner tensor and wrapper strides
    assert x.stride() == (1, 4)
    b = Wrapped(ember.tensor(a[0], dtype=F64).reshape(4, 1))
    np.testing.assert_allclose(_np(x * b), a.T * a[0].reshape(4, 1))  # broadcast
    z = Wrapped(ember.zeros(0, 3, dtype=F64))
    assert (z.exp()).shape == (0, 3)
    s = Wrapped(ember.tensor(2.0, dtype=F64))
    np.testing.assert_allclose(_np(s.sin()), np.sin(2.0))
    assert s.dim() == 0


def test_mixed_plain_and_wrapped_arguments_and_ops_by_name():
    x = Wrapped(ember.tensor([1.0, 2.0], dtype=F64))
    plain = ember.tensor([10.0, 20.0], dtype=F64)
    np.testing.assert_allclose(_np(plain - x), [9.0, 18.0])
    np.testing.assert_allclose(_np(ember.ops.aten.mul(x, plain)), [10.0, 40.0])
    assert Wrapped.log == ["aten.sub", "aten.mul"]


def test_autograd_runs_above_the_subclass():
    a = np.array([0.5, -1.0, 2.0])
    x = Wrapped(ember.tensor(a, dtype=F64), requires_grad=True)
    loss = (x * x).sin().sum()
    assert type(loss) is Wrapped and loss.grad_fn is not None
    loss.backward()
    assert type(x.grad) is Wrapped
    np.testing.assert_allclose(_np(x.grad), np.cos(a * a) * 2 * a)
    assert "aten.cos" in Wrapped.log or "aten.mul" in Wrapped.log  # the backward's ops reached it too


def test_reading_a_wrapper_s_data_raises_and_repr_shows_geometry():
    x = Wrapped(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't have storage"):
        x.numpy()
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't have storage"):
        x.tolist()
    assert repr(x) == "Wrapped(size=(2, 3), dtype=ember.float32, device=cpu)"


def test_item_reaches_the_subclass_and_modes_as_local_scalar_dense():
    x = Wrapped(ember.tensor(2.5, dtype=ember.float64))
    assert x.item() == 2.5 and float(x) == 2.5 and bool(x) is True
    assert int(Wrapped(ember.tensor([7]))) == 7
    assert Wrapped.log == ["aten._local_scalar_dense"] * 4
    with pytest.raises(RuntimeError, match="a Tensor with 3 elements cannot be converted to Scalar"):
        Wrapped(ember.ones(3)).item()
    seen = []

    class Recording(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    plain = ember.tensor([4.0])
    with Recording():
        assert plain.item() == 4.0
    assert seen == [ember.ops.aten._local_scalar_dense]
    assert plain.item() == 4.0 and len(seen) == 1  # without a mode, item() reads the value directly


def test_modes_come_before_subclasses():
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(("mode", str(func), tuple(t.__name__ for t in types)))
            return func(*args, **(kwargs or {}))

    x = Wrapped(ember.tensor([1.0, 2.0]))
    with Log():
        y = x.neg()
    assert seen == [("mode", "aten.neg", ("Wrapped",))] and Wrapped.log == ["aten.neg"]
    np.testing.assert_allclose(_np(y), [-1.0, -2.0])


def test_not_implemented_falls_through_to_the_next_class_then_raises():
    class Refuses(Wrapped):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    r = Refuses(ember.ones(2))
    assert type(r) is Refuses
    with pytest.raises(TypeError, match="Multiple dispatch failed for 'aten.add'.*Refuses"):
        r + 1
    # Refuses goes first (a subclass before its base), then Wrapped runs the op
    out = r + Wrapped(ember.ones(2))
    np.testing.assert_allclose(_np(out), [2.0, 2.0])


def test_make_subclass_shares_memory_and_can_run_kernels():
    class Counted(ember.Tensor):
        calls = 0

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            cls.calls += 1
            with ember._C._DisableTorchDispatch():
                out = func(*args, **(kwargs or {}))
            return tree_map(lambda t: ember.Tensor._make_subclass(cls, t) if isinstance(t, ember.Tensor) else t, out)

    base = ember.tensor([1.0, 2.0, 3.0], dtype=F64)
    c = ember.Tensor._make_subclass(Counted, base)
    assert type(c) is Counted and c.data_ptr() == base.data_ptr()
    d = c * 2
    assert type(d) is Counted and Counted.calls == 1
    np.testing.assert_allclose(d.numpy(), [2.0, 4.0, 6.0])
    plain = c.as_subclass(ember.Tensor)  # the same memory, not dispatching any more
    assert type(plain) is ember.Tensor and type(plain + 1) is ember.Tensor and Counted.calls == 1
    with pytest.raises(TypeError, match="subclass of Tensor"):
        ember.Tensor._make_subclass(int, base)


def test_make_subclass_without_torch_dispatch_is_an_ordinary_subclass():
    class Plain(ember.Tensor):
        pass

    p = ember.Tensor._make_subclass(Plain, ember.ones(2), True)
    assert type(p) is Plain and p.requires_grad and not ember._C._is_python_tensor(p)


def test_custom_ops_reach_the_subclass():
    @ember.library.custom_op("pysub_test::scale", mutates_args=())
    def scale(x: ember.Tensor, k: float) -> ember.Tensor:
        return x * k

    x = Wrapped(ember.tensor([1.0, 2.0], dtype=F64))
    out = scale(x, 3.0)
    assert type(out) is Wrapped and "pysub_test.scale" in Wrapped.log
    np.testing.assert_allclose(_np(out), [3.0, 6.0])


def test_make_wrapper_subclass_bad_input():
    with pytest.raises(ValueError, match="negative size"):
        ember.Tensor._make_wrapper_subclass(Wrapped, (2, -1))
    with pytest.raises(ValueError, match="expected 2 strides"):
        ember.Tensor._make_wrapper_subclass(Wrapped, (2, 3), strides=(1,))
    with pytest.raises(TypeError, match="subclass of Tensor"):
        ember.Tensor._make_wrapper_subclass(object, (2,))
    with pytest.raises(NotImplementedError, match="only the strided layout"):
        ember.Tensor._make_wrapper_subclass(Wrapped, (2,), layout=ember.sparse_coo)
    with pytest.raises(NotImplementedError, match="dispatch_sizes_strides_policy"):
        ember.Tensor._make_wrapper_subclass(Wrapped, (2,), dispatch_sizes_strides_policy="sizes")


def test_channels_last_wrapper_strides():
    w = ember.Tensor._make_wrapper_subclass(Wrapped, (2, 3, 4, 5), memory_format=ember.channels_last)
    assert w.stride() == ember.empty(2, 3, 4, 5).contiguous(memory_format=ember.channels_last).stride()


def test_subclass_keeping_the_default_torch_function():
    class Doubler(ember.Tensor):
        """A wrapper whose ops run on 2 * its inner tensor; it keeps Tensor.__torch_function__."""

        @staticmethod
        def __new__(cls, elem):
            return ember.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)

        def __init__(self, elem):
            self.elem = elem

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            out = func(*tree_map(lambda x: 2 * x.elem if isinstance(x, Doubler) else x, args), **(kwargs or {}))
            return Doubler(out)

    d = Doubler(ember.tensor([1.0, 3.0], dtype=F64))
    out = ember.add(d, 1)
    assert type(out) is Doubler
    np.testing.assert_allclose(out.elem.numpy(), [3.0, 7.0])


def test_no_dispatch_switches_off_modes_and_subclasses():
    from ember.utils._mode_utils import all_same_mode, no_dispatch

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    base = ember.tensor([1.0, 2.0], dtype=F64)
    with Log():
        with no_dispatch():
            out = base * 3
        base.neg()
    assert seen == ["aten.neg"]
    np.testing.assert_allclose(out.numpy(), [3.0, 6.0])
    x = Wrapped(ember.ones(2))
    with no_dispatch(), pytest.raises(RuntimeError, match="Cannot access data pointer"):
        x + 1  # the kernel runs on the wrapper, which has no memory
    assert Wrapped.log == [] and all_same_mode([seen, seen])


def test_identity_while_alive_and_attributes_after():
    import gc

    leaf = Wrapped(ember.tensor([1.0, 2.0], dtype=F64), requires_grad=True)
    x = leaf * 1  # a non-leaf wrapper that mul saves below
    (x * 2).sum().backward(retain_graph=True)
    g = leaf.grad
    assert leaf.grad is g  # the live object comes back, as in PyTorch
    y = (x * x).sum()      # saves x; its attributes are recorded as it goes in
    del x
    gc.collect()
    y.backward()           # backward gets x back as a new Wrapped that still has its elem
    np.testing.assert_allclose(_np(leaf.grad), [2.0 + 2.0, 2.0 + 4.0])
