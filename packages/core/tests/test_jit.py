"""ember.jit: torch.jit as it behaves with TorchScript disabled (PYTORCH_JIT=0)."""
# ruff: noqa: UP006, UP007, UP035, UP045 - typing.List & co., as code written for TorchScript spells them

import subprocess
import sys
import textwrap
from typing import Dict, List, Optional, Tuple, Union

import pytest

import ember
from ember import nn


class Block(nn.Module):
    """Written as TorchVision-style model code is: annotations, a scripting branch, an ignored helper."""

    scale: ember.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = 2.0
        self.cache = ember.jit.Attribute([], List[ember.Tensor])

    @ember.jit.ignore
    def debug(self, x):
        return x.sum().item()

    @ember.jit.unused
    def unused_path(self, x):
        raise AssertionError("not called")

    @ember.jit.export
    def extra(self, x):
        return self.fc(x) * self.scale

    def forward(self, x):
        outs = ember.jit.annotate(List[ember.Tensor], [])
        if not ember.jit.is_scripting() and not ember.jit.is_tracing():
            outs.append(self.fc(x))
        return ember.cat(outs) * self.scale


def test_script_and_trace_return_the_object_and_calls_run_eagerly():
    ember.manual_seed(0)
    m = Block()
    x = ember.randn(2, 4)
    want = m(x)
    for wrapped in (ember.jit.script(m), ember.jit.trace(m, (x,)), ember.jit.trace_module(m, {"forward": (x,)})):
        assert wrapped is m
        assert ember.equal(wrapped(x), want)
    f = ember.jit.script(ember.nn.functional.relu)
    assert f is ember.nn.functional.relu
    assert ember.jit.trace(f, (x,)) is f
    assert list(m.state_dict()) == ["fc.weight", "fc.bias"]  # no wrapper, no renamed keys
    assert m.cache == [] and m.debug(x) == pytest.approx(float(x.sum()))
    assert ember.jit.script_method(m.extra) == m.extra


def test_annotations_mark_and_return_their_argument():
    def f():
        return 1

    assert ember.jit.export(f) is f and "export" in f._torchscript_modifier
    assert ember.jit.unused(f) is f and "unused" in f._torchscript_modifier
    assert ember.jit.ignore(f) is f and "ignore" in f._torchscript_modifier
    assert ember.jit.ignore(drop=True)(f) is f and "unused" in f._torchscript_modifier
    prop = property(lambda self: 1)
    assert ember.jit.unused(prop) is prop and "unused" in prop.fget._torchscript_modifier
    with pytest.raises(RuntimeError, match="Argument to @torch.jit.ignore must be a bool or a function"):
        ember.jit.ignore("yes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'dorp'"):
        ember.jit.ignore(dorp=True)

    class Iface:
        pass

    assert ember.jit.interface(Iface) is Iface and Iface.__torch_script_interface__
    with pytest.raises(RuntimeError, match="interface must be applied to a class"):
        ember.jit.interface(3)
    assert ember.jit.annotate(Optional[int], None) is None
    assert ember.jit.Final is __import__("typing").Final
    assert ember.jit.is_scripting() is False and ember.jit.is_tracing() is False
    g = ember.jit.script_if_tracing(lambda a, b=2: a * b)
    assert g(3) == 6 and g(3, b=3) == 9
    assert ember.jit._script_if_tracing is ember.jit.script_if_tracing


def test_isinstance_checks_containers_element_by_element():
    t = ember.ones(1)
    iso = ember.jit.isinstance
    assert iso([t, t], List[ember.Tensor]) and not iso([t, 1], List[ember.Tensor])
    assert not iso((t,), List[ember.Tensor]) and not iso(t, List[ember.Tensor])
    assert iso({"a": 1}, Dict[str, int]) and not iso({"a": 1.5}, Dict[str, int]) and not iso({1: 1}, Dict[str, int])
    assert iso((1, "a"), Tuple[int, str]) and not iso((1, 2), Tuple[int, str]) and not iso((1,), Tuple[int, str])
    assert iso((1, 2, 3), Tuple[int, ...])
    assert iso(None, Optional[int]) and iso(3, Optional[int]) and not iso("3", Optional[int])
    assert iso("3", Union[int, str]) and iso([[1], [2]], List[List[int]]) and not iso([[1], ["2"]], List[List[int]])
    assert iso(3, int) and not iso(3, str)
    assert iso([t], list[ember.Tensor]) and iso({"a": [1]}, dict[str, list[int]]) and not iso(1.5, int | None)
    with pytest.warns(UserWarning, match="inner type of a container is lost"):
        assert iso([], List[int])
    with pytest.raises(TypeError, match="is not a type"):
        iso(3, "int")


def test_fork_runs_at_once_and_wait_returns_the_value():
    calls = []

    def f(a, b=1):
        calls.append((a, b))
        return a + b

    fut = ember.jit.fork(f, 2, b=3)
    assert calls == [(2, 3)] and fut.done()  # ran before fork returned
    assert ember.jit.wait(fut) == 5 and isinstance(fut, ember.jit.Future)

    def boom():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        ember.jit.fork(boom)
    with pytest.raises(TypeError, match="ember.jit.wait expects a Future, got int"):
        ember.jit.wait(3)


def test_what_needs_torchscript_raises_clearly(tmp_path):
    m = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
        ember.jit.freeze(m)
    with pytest.raises(RuntimeError, match="optimize_for_inference expects a ScriptModule"):
        ember.jit.optimize_for_inference(m)
    with pytest.raises(NotImplementedError, match="TorchScript archives are not supported.*ember.save"):
        ember.jit.save(m, tmp_path / "m.pt")
    with pytest.raises(NotImplementedError, match="TorchScript archives cannot be loaded"):
        ember.jit.load(tmp_path / "m.pt")
    assert not isinstance(ember.jit.script(m), ember.jit.ScriptModule)
    with pytest.raises(TypeError, match="ScriptFunction cannot be created"):
        ember.jit.ScriptFunction()

    class Scripted(ember.jit.ScriptModule):  # an old-style ScriptModule subclass is a plain Module
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(2))

        @ember.jit.script_method
        def forward(self, x):
            return x * self.w

    s = Scripted()
    assert isinstance(s, nn.Module) and ember.equal(s(ember.ones(2)), ember.ones(2))
    assert issubclass(ember.jit.RecursiveScriptModule, ember.jit.ScriptModule)
    assert issubclass(ember.jit.Error, RuntimeError)


def test_a_torch_script_using_jit_runs_under_the_shim(tmp_path):
    script = tmp_path / "jit_script.py"
    script.write_text(textwrap.dedent('''
        from typing import List
        import torch

        @torch.jit.script
        def fused(x: torch.Tensor) -> torch.Tensor:
            return x * torch.sigmoid(x)

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(3, 2)

            def forward(self, x):
                parts = torch.jit.annotate(List[torch.Tensor], [])
                if not torch.jit.is_scripting():
                    parts.append(fused(self.fc(x)))
                return torch.stack(parts).sum(0)

        torch.manual_seed(0)
        m = torch.jit.script(M().eval())
        x = torch.randn(4, 3)
        fut = torch.jit.fork(m, x)
        print(type(m).__name__, tuple(torch.jit.wait(fut).shape), torch.jit.isinstance([x], List[torch.Tensor]))
    '''))
    out = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "M (4, 2) True"
