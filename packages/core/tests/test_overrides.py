"""The __torch_function__ protocol (ember.overrides, as torch.overrides): Tensor subclasses keep
their type through ops, overrides on subclasses and on stand-in types, modes, the switches that
turn it off, and the helpers Python-level code dispatches with."""

import threading
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import overrides
from ember.overrides import BaseTorchFunctionMode, TorchFunctionMode


class Sub(ember.Tensor):
    pass


class Recorder(ember.Tensor):
    """Records each call it takes, then runs it as ember.Tensor would."""

    calls: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append((func, types, args, kwargs))
        return super().__torch_function__(func, types, args, kwargs)


class Duck:
    """Not a tensor: stands in for one through __torch_function__ alone."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return ("duck", func, types)


class Refuses(ember.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


class Logging(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.__name__)
        return func(*args, **(kwargs or {}))


@pytest.fixture(autouse=True)
def _reset_recorder():
    Recorder.calls = []


def base():
    return ember.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])


def test_subclass_keeps_its_type_through_functions_methods_and_operators():
    x = base()
    s = x.as_subclass(Sub)
    results = [ember.add(s, 1), s.add(1), s + 1, 1 + s, 2 - s, s * x, x * s, s.exp(), F.relu(s),
               ember.cat([x, s]), ember.where(x > 0, s, x), s.sum(), s[0], ember.matmul(s, s.T)]
    for r in results:
        assert type(r) is Sub
    np.testing.assert_array_equal((s + 1).numpy(), (x + 1).numpy())
    np.testing.assert_array_equal(ember.cat([x, s]).numpy(), ember.cat([x, x]).numpy())


def test_tuple_results_and_in_place_methods():
    s = base().as_subclass(Sub)
    values, indices = ember.max(s, dim=1)
    assert type(values) is Sub and type(indices) is Sub
    np.testing.assert_array_equal(values.numpy(), [3.0, 5.0])
    out = s.add_(1)
    assert out is s  # in place: the very object, as in PyTorch
    np.testing.assert_array_equal(s.numpy(), base().numpy() + 1)
    parts = ember.split(s, 1)
    assert len(parts) == 2 and all(type(p) is Sub for p in parts)


def test_subclass_results_keep_the_autograd_graph():
    x = base().requires_grad_()
    s = x.as_subclass(Sub)
    y = (s * s).sum()
    assert type(y) is Sub
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * base().numpy())


def test_override_sees_the_public_function_types_and_arguments():
    x = base()
    r = x.as_subclass(Recorder)
    ember.add(r, x, alpha=2)
    r.mul(3)
    r + x
    F.relu(r)
    funcs = [c[0] for c in Recorder.calls]
    assert funcs[0] is ember.add and funcs[1] is ember.Tensor.mul
    assert funcs[2] is ember.Tensor.add and funcs[3] is F.relu  # x + y hands Tensor.add, as PyTorch
    func, types, args, kwargs = Recorder.calls[0]
    assert types == (Recorder,) and args[0] is r and args[1] is x and kwargs == {"alpha": 2}


def test_operators_hand_pytorchs_function():
    r = base().as_subclass(Recorder)
    expected = {"r * 2": "mul", "2 * r": "mul", "1 - r": "__rsub__", "r / 2": "div", "2 / r": "__rtruediv__",
                "r // 2": "__floordiv__", "r % 2": "remainder", "2 ** r": "__rpow__", "r == 1": "__eq__",
                "r != 1": "ne", "r < 1": "lt", "r >= 1": "ge"}
    for text, name in expected.items():
        Recorder.calls = []
        eval(text, {"r": r})
        assert Recorder.calls[0][0] is getattr(ember.Tensor, name), text


def test_stand_in_types_take_functions_methods_and_operators():
    x = base()
    d = Duck()
    tag, func, types = ember.add(d, x)
    assert tag == "duck" and func is ember.add and types == (Duck,)
    assert ember.add(x, d)[1] is ember.add
    assert (x + d)[1] is ember.Tensor.add
    assert F.relu(d)[1] is F.relu
    assert ember.cat([x, d])[1] is ember.cat  # inside a list argument too
    assert ember.linalg.vector_norm(d)[0] == "duck"


def test_subclasses_come_before_their_bases_then_left_to_right():
    order = []

    class A(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("A")
            return NotImplemented

    class B(A):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("B")
            return NotImplemented

    class C(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("C")
            return "C answered"

    x = base()
    with pytest.raises(TypeError, match=r"no implementation found for 'ember.add' on types that implement "
                                        r"__torch_function__"):
        ember.add(x.as_subclass(A), x.as_subclass(B))
    assert order == ["B", "A"]
    order.clear()
    assert ember.add(x.as_subclass(A), x.as_subclass(C)) == "C answered"
    assert order == ["A", "C"]


def test_every_override_refusing_is_a_type_error():
    x = base().as_subclass(Refuses)
    with pytest.raises(TypeError, match=r"no implementation found for 'ember.Tensor.exp' on types that implement "
                                        r"__torch_function__: \[<class '.*Refuses'>\]"):
        x.exp()


def test_parameter_and_disabled_subclasses_give_plain_tensors():
    p = ember.nn.Parameter(base())
    assert type(p * 2) is ember.Tensor and type(F.relu(p)) is ember.Tensor

    class Opted(ember.Tensor):
        __torch_function__ = ember._C._disabled_torch_function_impl

    assert type(base().as_subclass(Opted).exp()) is ember.Tensor
    assert not overrides.has_torch_function_unary(p)


def test_bad_arguments_still_raise_the_bindings_type_error():
    x = base()
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ember.add(x, "one")
    with pytest.raises(TypeError, match="unsupported operand"):
        x + "one"
    assert (x == None) is False  # noqa: E711 - NotImplemented still reaches Python's fallback
    # arguments that need converting (an int for a float parameter, a NumPy integer) still convert
    np.testing.assert_allclose(F.softplus(x, beta=1, threshold=20).numpy(), F.softplus(x).numpy())


def test_disable_torch_function_subclass():
    s = base().as_subclass(Sub)
    with ember._C.DisableTorchFunctionSubclass():
        assert type(s + 1) is ember.Tensor and type(F.relu(s)) is ember.Tensor
        assert not ember._C._is_torch_function_enabled()
        with Logging() as mode:  # modes still run
            ember.neg(s)
        assert mode.seen == ["neg"]
    assert ember._C._is_torch_function_enabled() and type(s + 1) is Sub
    with pytest.raises(ValueError, match="boom"):
        with ember._C.DisableTorchFunctionSubclass():
            raise ValueError("boom")
    assert ember._C._is_torch_function_enabled()


def test_disable_torch_function_turns_off_modes_too():
    s = base().as_subclass(Sub)
    with Logging() as mode, ember._C.DisableTorchFunction():
        y = ember.neg(s)
        assert ember._C._is_torch_function_all_disabled()
    assert type(y) is ember.Tensor and mode.seen == []
    assert ember._C._get_torch_function_state() == 0


def test_mode_sees_factories_ops_methods_and_operators():
    x = base()
    with Logging() as mode:
        y = ember.zeros(2, 3) + 1
        z = x.exp().sum()
        w = F.gelu(x)
    assert mode.seen == ["zeros", "add", "exp", "sum", "gelu"]
    np.testing.assert_array_equal(y.numpy(), np.ones((2, 3)))
    np.testing.assert_allclose(z.item(), np.exp(base().numpy()).sum(), rtol=1e-6)
    assert w.shape == (2, 3)
    assert ember.overrides._len_torch_function_stack() == 0


def test_modes_nest_innermost_first_and_leave_the_stack_while_handling():
    outer, inner = Logging(), Logging()
    x = base()
    with outer, inner:
        ember.neg(x)
        assert overrides._get_current_function_mode() is inner
    # the inner mode's func(...) call reached the outer mode
    assert inner.seen == ["neg"] and outer.seen == ["neg"]


def test_mode_can_replace_results_and_refuse():
    class Constant(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is ember.add:
                return "replaced"
            return NotImplemented

    x = base()
    with Constant():
        assert ember.add(x, 1) == "replaced"
        with pytest.raises(TypeError, match="no implementation found for 'ember.neg'.* nor in mode"):
            ember.neg(x)


def test_base_mode_passes_calls_through_and_modes_are_per_thread():
    seen_in_thread = []
    x = base()
    with BaseTorchFunctionMode(), Logging() as mode:
        y = ember.neg(x)

        def other():
            seen_in_thread.append(overrides._len_torch_function_stack())
            ember.neg(x)

        t = threading.Thread(target=other)
        t.start()
        t.join()
    np.testing.assert_array_equal(y.numpy(), -base().numpy())
    assert mode.seen == ["neg"] and seen_in_thread == [0]


def test_has_torch_function_helpers():
    x = base()
    s = x.as_subclass(Sub)
    assert not overrides.has_torch_function((x, 1, "a"))
    assert overrides.has_torch_function((x, s))
    assert overrides.has_torch_function([Duck()])
    assert overrides.has_torch_function_unary(s) and not overrides.has_torch_function_unary(x)
    assert overrides.has_torch_function_variadic(x, s) and not overrides.has_torch_function_variadic(x, x)
    with Logging():
        assert overrides.has_torch_function_unary(x)  # a mode takes every call
    assert F.has_torch_function is overrides.has_torch_function
    assert ember.autograd.handle_torch_function is overrides.handle_torch_function


def test_python_functions_dispatch_with_handle_and_wrap_torch_function():
    def scaled(t, factor=2.0):
        if overrides.has_torch_function_unary(t):
            return overrides.handle_torch_function(scaled, (t,), t, factor=factor)
        return t * factor

    assert scaled(Duck())[1] is scaled

    def named(t, public_api=1, relevant_args=2):  # keyword names of handle_torch_function's own parameters
        return overrides.handle_torch_function(named, (t,), t, public_api=public_api, relevant_args=relevant_args)

    assert named(Duck())[1] is named
    assert type(scaled(base().as_subclass(Sub))) is Sub

    @overrides.wrap_torch_function(lambda a, b: (a, b))
    def combine(a, b):
        return a - b

    assert combine(Duck(), 1)[1] is combine
    np.testing.assert_array_equal(combine(base(), 1).numpy(), base().numpy() - 1)


def test_introspection_helpers():
    table = overrides.get_overridable_functions()
    assert ember.add in table[ember] and ember.Tensor.add in table[ember.Tensor]
    assert F.relu in table[F] and ember.Tensor.__add__ in table[ember.Tensor]
    ignored = overrides.get_ignored_functions()
    assert ember.is_tensor in ignored and ember.add not in ignored
    testing = overrides.get_testing_overrides()
    assert testing[ember.add](1, 2, alpha=3) == -1
    assert overrides.resolve_name(ember.add) == "ember.add"
    assert overrides.resolve_name(ember.Tensor.add) == "ember.Tensor.add"
    assert overrides.resolve_name(F.relu) == "ember.nn.functional.relu"
    assert overrides.is_tensor_like(base()) and overrides.is_tensor_like(Duck())
    assert not overrides.is_tensor_like(np.zeros(2)) and not overrides.is_tensor_like(1.0)
    assert overrides.is_tensor_method_or_property(ember.Tensor.add)
    assert not overrides.is_tensor_method_or_property(ember.add)


def test_plain_method_override_is_deprecated():
    class Plain(ember.Tensor):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return "plain"

    x = base().as_subclass(Plain)
    with pytest.warns(DeprecationWarning, match="plain method is deprecated"):
        assert ember.neg(x) == "plain"


def test_bad_state_and_empty_stack_raise():
    with pytest.raises(ValueError, match=r"\[_set_torch_function_state\] expected 0, 1 or 2, but got 5"):
        ember._C._set_torch_function_state(5)
    with pytest.raises(RuntimeError, match="Trying to pop from an empty mode stack"):
        overrides._pop_mode()
    with pytest.warns(UserWarning, match="no longer necessary"):
        assert isinstance(Logging.push(), Logging)


def test_push_warning_does_not_enter():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Logging.push()
    assert overrides._len_torch_function_stack() == 0


def test_wrapped_python_functions_behave_like_functions():
    import copy
    import inspect
    import pickle

    relu = F.relu
    assert relu._ember_overridable and relu.__name__ == "relu" and relu.__module__ == "ember.nn.functional"
    assert "input" in inspect.signature(relu).parameters
    assert pickle.loads(pickle.dumps(relu)) is relu and copy.deepcopy(relu) is relu
    assert ember.concat is ember.cat  # an alias stays one function

    class Holder:
        act = relu  # binds like a function

    np.testing.assert_array_equal(Holder().act.__self__.__class__.__name__, "Holder")
    with pytest.raises(TypeError, match="expected a callable"):
        ember._C._OverridableFunction(3)
