"""TorchDispatchMode (ember.utils._python_dispatch): per-op interception below autograd."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember.utils._python_dispatch import (
    TorchDispatchMode,
    _disable_current_modes,
    _get_current_dispatch_mode,
    _get_current_dispatch_mode_stack,
    _pop_mode,
)

aten = ember.ops.aten


class Recorder(TorchDispatchMode):
    """Runs every op unchanged and keeps (func, args, kwargs, types, mode seen inside)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.calls.append((func, args, kwargs, types, _get_current_dispatch_mode()))
        return func(*args, **kwargs)

    def names(self):
        return [str(c[0]) for c in self.calls]


def test_forward_and_backward_ops_are_seen_and_results_unchanged():
    ember.manual_seed(0)
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, 5, dtype=ember.float64)
    (x @ w + 1).relu().sum().backward()
    expected = x.grad.clone()
    x.grad = None
    with Recorder() as mode:
        y = (x @ w + 1).relu().sum()
        y.backward()
    names = mode.names()
    assert names[:4] == ["aten.matmul", "aten.add", "aten.relu", "aten.sum"]
    assert names.count("aten.matmul") == 2  # forward, and the backward's grad @ w.T
    assert y.grad_fn is not None  # autograd recorded the call above the mode
    np.testing.assert_array_equal(x.grad.numpy(), expected.numpy())
    func, args, kwargs, types, inside = mode.calls[0]
    assert func is aten.matmul and func.overloadpacket is aten.matmul and func.default is aten.matmul
    assert func.__name__ == "matmul" and func.namespace == "aten" and "matmul(" in func._schema
    assert args[0].shape == (3, 4) and args[1].shape == (4, 5) and kwargs == {}
    assert types == (ember.Tensor,)
    assert inside is None  # the mode is off the stack while its handler runs


def test_handler_runs_below_autograd():
    x = ember.randn(4, requires_grad=True)
    inner = []

    class Probe(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            inner.append((out.grad_fn, out.requires_grad, ember.is_grad_enabled(), (args[0] * 2).grad_fn))
            return out

    with Probe():
        y = x.exp()
    assert y.grad_fn is not None and y.requires_grad
    assert inner == [(None, False, True, None)]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-6)


def test_a_mode_can_replace_an_op():
    class AddIsSub(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is aten.add:
                return aten.sub(*args, **(kwargs or {}))
            return func(*args, **(kwargs or {}))

    a, b = ember.tensor([5.0, 7.0]), ember.tensor([1.0, 2.0])
    with AddIsSub():
        assert (a + b).tolist() == [4.0, 5.0]
        assert a.mul(b).tolist() == [5.0, 14.0]
    assert (a + b).tolist() == [6.0, 9.0]


def test_defaults_are_left_out_and_keyword_only_arguments_come_by_keyword():
    a, b = ember.ones(2), ember.ones(2)
    with Recorder() as mode:
        ember.add(a, b)
        ember.add(a, b, alpha=3)
        ember.sum(ember.ones(2, 3), dim=1)
        ember.sum(ember.ones(2, 3), dim=1, keepdim=True)
    (_, args0, kw0, _, _), (_, args1, kw1, _, _) = mode.calls[:2]
    assert len(args0) == 2 and kw0 == {}
    assert len(args1) == 2 and kw1 == {"alpha": 3}
    sums = [c for c in mode.calls if c[0] is aten.sum]
    assert [len(c[1]) + len(c[2]) for c in sums] == [2, 3]
    assert sums[1][1][2:] + tuple(sums[1][2].values()) == (True,)


def test_factories_registry_calls_and_in_place_ops_are_seen():
    x = ember.zeros(3)
    with Recorder() as mode:
        ember.zeros(2)
        aten.add(x, x)
        x.add_(1)
    names = mode.names()
    assert names[0] == "aten.zeros" and names[1] == "aten.add" and names[2] == "aten.add"
    assert mode.calls[2][2]["out"] is not None  # an in-place form reaches the mode as out=self
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_modes_nest_innermost_first():
    order = []

    class Tag(TorchDispatchMode):
        def __init__(self, tag):
            super().__init__()
            self.tag = tag

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            order.append((self.tag, [type(m).__name__ for m in _get_current_dispatch_mode_stack()]))
            return func(*args, **(kwargs or {}))

    with Tag("outer") as outer, Tag("inner"):
        assert _get_current_dispatch_mode_stack()[0] is outer
        ember.ones(1).neg()
    # each op: the inner mode first (the outer one still on the stack), then the outer one alone
    assert order == [("inner", ["Tag"]), ("outer", []), ("inner", ["Tag"]), ("outer", [])]
    assert _get_current_dispatch_mode() is None


def test_forward_ad_vmap_and_autocast_go_through_a_mode():
    import ember.autograd.forward_ad as fwAD
    from ember.func import vmap

    x = ember.randn(3, dtype=ember.float64)
    t = ember.randn(3, dtype=ember.float64)
    with Recorder() as mode:
        with fwAD.dual_level():
            out = fwAD.unpack_dual(fwAD.make_dual(x, t).sin())
        batched = vmap(lambda r: r.cos() * 2)(ember.arange(6.0).reshape(2, 3))
        with ember.autocast("cpu", dtype=ember.bfloat16):
            product = ember.ones(2, 2) @ ember.ones(2, 2)
    np.testing.assert_allclose(out.tangent.numpy(), (t * x.cos()).numpy(), rtol=1e-12)
    np.testing.assert_allclose(batched.numpy(), (ember.arange(6.0).reshape(2, 3).cos() * 2).numpy(), rtol=1e-6)
    assert product.dtype == ember.bfloat16
    matmuls = [c for c in mode.calls if c[0] is aten.matmul]
    assert [a.dtype for a in matmuls[-1][1]] == [ember.bfloat16, ember.bfloat16]  # seen after the casts
    assert "aten.sin" in mode.names() and "aten.cos" in mode.names()


def test_modes_belong_to_their_thread():
    seen_elsewhere = []

    def work():
        seen_elsewhere.append(_get_current_dispatch_mode())
        ember.ones(2).exp()

    with Recorder() as mode:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert seen_elsewhere == [None]
    assert "aten.exp" not in mode.names()


def test_disable_current_modes():
    with Recorder() as mode:
        with _disable_current_modes() as modes:
            assert modes == [mode] and _get_current_dispatch_mode() is None
            ember.ones(2).exp()
        assert _get_current_dispatch_mode() is mode
    assert mode.calls == []


def test_errors():
    class Declines(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return NotImplemented

    class Raises(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise KeyError("from the handler")

    class WrongType(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return "not a tensor"

    class WrongCount(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return out[0] if isinstance(out, tuple) else out

    x = ember.ones(3)
    with pytest.raises(TypeError, match=r"Multiple dispatch failed for 'aten.neg': Declines.__torch_dispatch__ "
                                        r"returned NotImplemented"):
        with Declines():
            x.neg()
    with pytest.raises(KeyError, match="from the handler"):
        with Raises():
            x.neg()
    with pytest.raises(TypeError, match=r"\[aten::neg\] expected what __torch_dispatch__ returned to be Tensor, but got str"):
        with WrongType():
            x.neg()
    with pytest.raises(TypeError, match=r"\[aten::sort\] expected what __torch_dispatch__ returned to be a tuple of 2 values"):
        with WrongCount():
            ember.sort(ember.ones(3))
    with pytest.raises(NotImplementedError, match="does not override __torch_dispatch__"):
        with TorchDispatchMode():
            x.neg()
    with pytest.raises(ValueError, match="_dispatch_key must be None"):
        TorchDispatchMode(_dispatch_key="CPU")
    with pytest.raises(RuntimeError, match="Trying to pop from an empty mode stack"):
        _pop_mode()
    assert _get_current_dispatch_mode() is None
    assert x.neg().tolist() == [-1.0, -1.0, -1.0]  # nothing left behind by the failures


def test_ops_are_one_object_each():
    assert aten.mm is ember.ops.aten.mm
    assert str(aten.mm) == "aten.mm" and aten.mm.overloads() == ["default"]
    assert aten.mm.name == "aten::mm" and aten.mm.has_kernel("CPU")
    np.testing.assert_array_equal(aten.mm(ember.eye(2), ember.ones(2, 2)).numpy(), np.ones((2, 2)))


def test_ops_by_name_take_numbers_for_tensors_after_the_first():
    # as torch.ops.aten.add.Tensor(x, 1): a wrapped number, lowest in type promotion
    x = ember.tensor([1, 2], dtype=ember.int32)
    assert aten.add(x, 1).dtype == ember.int32 and aten.add(x, 1).tolist() == [2, 3]
    assert aten.mul(x, 2.5).dtype == ember.float32 and aten.mul(x, 2.5).tolist() == [2.5, 5.0]
    assert aten.mul(x, other=True).tolist() == [1, 2]
    assert aten.add(ember.ones(2, dtype=ember.float64), 1j).dtype == ember.complex128
    with pytest.raises(TypeError, match=r"\[aten::sin\] expected argument 'self' to be Tensor, but got float"):
        aten.sin(1.0)
    with pytest.raises(TypeError, match=r"\[aten::add\] expected argument 'other' to be Tensor, but got str"):
        aten.add(x, "1")
    with pytest.raises(ValueError, match="fits in int64"):
        aten.add(x, 2**70)


# ---- selective activation checkpointing, built on the modes ----------------------------------

def _sac_problem():
    ember.manual_seed(3)
    x = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    w1 = ember.randn(6, 6, dtype=ember.float64, requires_grad=True)
    w2 = ember.randn(6, 3, dtype=ember.float64, requires_grad=True)

    def block(x, w1, w2):
        return ((x @ w1).sin() @ w2).tanh()

    return block, (x, w1, w2)


def _grads(fn, inputs):
    for t in inputs:
        t.grad = None
    fn(*inputs).pow(2).sum().backward()
    return [t.grad.clone() for t in inputs]


def test_selective_checkpoint_keeps_the_listed_ops_and_reruns_the_rest():
    from ember.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    block, inputs = _sac_problem()
    expected = _grads(block, inputs)

    def sac(*a):
        return checkpoint(block, *a, use_reentrant=False,
                          context_fn=lambda: create_selective_checkpoint_contexts([aten.matmul]))

    with Recorder() as outer:
        got = _grads(sac, inputs)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    names = [n for n in outer.names() if n != "aten.detach"]  # the kept outputs' aliases
    # forward: matmul, sin, matmul, tanh; the rerun runs sin and tanh again but not the matmuls
    forward = names[:4]
    assert forward == ["aten.matmul", "aten.sin", "aten.matmul", "aten.tanh"]
    assert names.count("aten.sin") == 2 and names.count("aten.tanh") == 2
    plain = Recorder()
    with plain:
        _grads(lambda *a: checkpoint(block, *a, use_reentrant=False), inputs)
    # forward 2 + backward 4 (each matmul's two input gradients); plain checkpointing reruns 2 more
    assert names.count("aten.matmul") == 6
    assert plain.names().count("aten.matmul") == 8


def test_selective_checkpoint_policy_function():
    from ember.utils.checkpoint import (
        CheckpointPolicy,
        SelectiveCheckpointContext,
        checkpoint,
        create_selective_checkpoint_contexts,
    )

    block, inputs = _sac_problem()
    expected = _grads(block, inputs)
    asked = []

    def policy(ctx, func, *args, **kwargs):
        assert isinstance(ctx, SelectiveCheckpointContext)
        asked.append((ctx.is_recompute, str(func)))
        if func is aten.sin:
            return CheckpointPolicy.PREFER_SAVE
        return func is aten.tanh  # a bool: True saves

    got = _grads(lambda *a: checkpoint(block, *a, use_reentrant=False,
                                       context_fn=lambda: create_selective_checkpoint_contexts(policy)), inputs)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    assert asked[:4] == [(False, "aten.matmul"), (False, "aten.sin"), (False, "aten.matmul"), (False, "aten.tanh")]
    assert (True, "aten.sin") in asked and (True, "aten.matmul") in asked


def test_selective_checkpoint_kept_output_written_to():
    from ember.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    def run(allow):
        x = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
        w = ember.randn(3, 3, dtype=ember.float64)
        def f(a):
            z = a @ w
            return z, z.exp()

        z, e = checkpoint(f, x, use_reentrant=False,
                          context_fn=lambda: create_selective_checkpoint_contexts([aten.matmul], allow))
        z.detach().mul_(2)  # writes the kept matmul output (autograd saved none of z)
        e.sum().backward()
        return x.grad

    with pytest.raises(RuntimeError, match="Tensor cached during selective activation checkpoint has been mutated"):
        run(False)
    assert run(True).shape == (3, 3)


def test_selective_checkpoint_errors():
    from ember.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload but got mm"):
        create_selective_checkpoint_contexts(["mm"])
    with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list of ops"):
        create_selective_checkpoint_contexts(3)
    x = ember.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="must return a CheckpointPolicy or a bool, but got str"):
        checkpoint(lambda a: a.sin(), x, use_reentrant=False,
                   context_fn=lambda: create_selective_checkpoint_contexts(lambda ctx, f, *a, **k: "save"))
    y = checkpoint(lambda a: a.sin().cos(), x, use_reentrant=False,
                   context_fn=lambda: create_selective_checkpoint_contexts([aten.sin]))
    y.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="Trying to backward an extra time"):
        y.sum().backward()
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported when use_reentrant=False"):
        checkpoint(lambda a: a.sin(), x, use_reentrant=True,
                   context_fn=lambda: create_selective_checkpoint_contexts([aten.sin]))


def test_an_output_the_op_was_not_asked_for_is_none():
    grad_out, image, weight = ember.ones(1, 3, 4, 4), ember.ones(1, 2, 6, 6), ember.ones(3, 2, 3, 3)
    out = aten.convolution_backward(grad_out, image, weight, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                    input_grad=False)
    assert out[0] is None and out[1].shape == (3, 2, 3, 3) and out[2].shape == (3,)
    np.testing.assert_array_equal(out[1].numpy(), np.full((3, 2, 3, 3), 16.0))
    # through a mode: the backward of a convolution whose input needs no gradient
    ember.manual_seed(1)
    conv = ember.nn.Conv2d(2, 3, 3).double()
    x = ember.randn(1, 2, 6, 6, dtype=ember.float64)
    conv(x).sum().backward()
    expected = conv.weight.grad.clone()
    conv.weight.grad = None
    with Recorder() as mode:
        conv(x).sum().backward()
    assert "aten.convolution_backward" in mode.names()
    np.testing.assert_array_equal(conv.weight.grad.numpy(), expected.numpy())


def test_test_files_pass_through_a_mode(tmp_path):
    """The op database, autograd (gradcheck, complex), forward AD, vmap, linalg, FFT, functional,
    layer, indexing, convolution and factory tests, each test run inside a mode that hands every
    op back: the arguments and results of every op the tests reach survive the trip to Python."""
    import os
    import pathlib
    import re
    import subprocess
    import sys

    here = pathlib.Path(__file__).parent
    files = ["test_opdb.py", "test_autograd.py", "test_forward_ad.py", "test_vmap.py", "test_linalg.py", "test_fft.py",
             "test_nn_functional.py", "test_nn_layers.py", "test_indexing.py", "test_convolution.py",
             "test_creation.py", "test_composites.py"]
    run = subprocess.run([sys.executable, "-m", "pytest", *[str(here / f) for f in files], "-q", "-p", "no:cacheprovider",
                          "--import-mode=importlib", "-p", "no:warnings", "-p", "dispatch_passthrough"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")])})
    assert run.returncode == 0, run.stdout[-3000:]
    calls = int(re.search(r"ops through the mode: (\d+)", run.stdout).group(1))
    assert calls > 100_000


def test_complex_scalars_reach_a_mode_and_ops_called_by_name():
    x = ember.zeros(2, dtype=ember.complex64)
    assert aten.fill_(x, 1 + 2j).tolist() == [1 + 2j, 1 + 2j]  # a complex Scalar by name
    with Recorder() as mode:
        y = ember.full((2,), 1 - 1j)
    full = [c for c in mode.calls if c[0] is aten.full][0]
    assert full[1][1] == 1 - 1j and isinstance(full[1][1], complex)
    assert y.tolist() == [1 - 1j, 1 - 1j]
