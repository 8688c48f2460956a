"""ember.library: ops defined from Python (custom_op, Library), as torch.library.

Each test defines its ops in its own namespace: Ember's registry keeps an op for the life of the
process, so names cannot be reused between tests."""

from __future__ import annotations

import itertools
import typing
from collections.abc import Sequence

import numpy as np
import pytest

import ember
from ember.library import Library, OpCheckError, custom_op, infer_schema, opcheck
from ember.utils._python_dispatch import TorchDispatchMode

_counter = itertools.count()


def fresh(prefix: str = "t") -> str:
    """A namespace no other test used."""
    return f"emberlib_{prefix}{next(_counter)}"


# --- infer_schema ---------------------------------------------------------------------------------


def test_infer_schema_reads_every_supported_annotation():
    def f(x: ember.Tensor, y: ember.Tensor | None, xs: Sequence[ember.Tensor], n: int = 3,
          s: float = 1.5, flag: bool = False, name: str = "a", d: ember.dtype | None = None,
          dev: ember.device = None, sc: int | float | bool = 2, sizes: list[int] = None, *,
          k: int = 2) -> tuple[ember.Tensor, ember.Tensor]:
        raise AssertionError("never called")

    assert infer_schema(f, mutates_args=()) == (
        '(Tensor x, Tensor? y, Tensor[] xs, int n=3, float s=1.5, bool flag=False, str name="a", '
        "ScalarType? d=None, Device dev=None, Scalar sc=2, int[] sizes=None, *, int k=2) -> (Tensor, Tensor)")


def test_infer_schema_reads_typing_forms():
    scope = {"ember": ember, "typing": typing}
    exec(  # noqa: S102 - the test's own function, written with typing's Optional, Union and List
        "def f(x: typing.Optional[ember.Tensor], s: typing.Union[int, float, bool], n: typing.List[int],\n"
        "      ts: typing.List[typing.Optional[ember.Tensor]]) -> typing.List[ember.Tensor]: ...", scope)
    assert infer_schema(scope["f"], mutates_args=()) == "(Tensor? x, Scalar s, int[] n, Tensor?[] ts) -> Tensor[]"


def test_infer_schema_marks_mutated_arguments_and_names_the_op():
    def g(x: ember.Tensor, out: ember.Tensor, o2: ember.Tensor) -> None:
        raise AssertionError("never called")

    assert infer_schema(g, mutates_args={"out", "o2"}) == "(Tensor x, Tensor(a1!) out, Tensor(a2!) o2) -> ()"
    assert infer_schema(g, mutates_args=(), op_name="gg").startswith("gg(Tensor x")


@pytest.mark.parametrize(
    "source, mutates, message",
    [
        ("def f(x): ...", (), "Parameter x must have a type annotation"),
        ("def f(x: ember.Tensor): ...", (), "No return type annotation"),
        ("def f(x: dict) -> ember.Tensor: ...", (), "Parameter x has unsupported type"),
        ("def f(x: ember.Tensor, *rest: int) -> ember.Tensor: ...", (), "may not be *args"),
        ("def f(x: ember.Tensor, n: int) -> ember.Tensor: ...", ("n",), "only Tensors"),
        ("def f(x: ember.Tensor) -> ember.Tensor: ...", ("y",), "not a parameter"),
        ("def f(x: ember.Tensor, t: tuple = (1,)) -> ember.Tensor: ...", (), "unsupported"),
    ],
)
def test_infer_schema_rejects_what_a_schema_cannot_say(source, mutates, message):
    scope = {"ember": ember}
    exec(source, scope)  # noqa: S102 - the test's own function definitions
    with pytest.raises(ValueError, match=message.replace("*", r"\*")):
        infer_schema(scope["f"], mutates_args=mutates)


# --- custom_op ------------------------------------------------------------------------------------


def test_custom_op_is_a_registered_op_checked_against_a_float64_reference():
    ns = fresh()

    @custom_op(f"{ns}::cube_plus", mutates_args=())
    def cube_plus(x: ember.Tensor, y: ember.Tensor, *, alpha: float = 1.0) -> ember.Tensor:
        return x * x * x + alpha * y

    rng = np.random.default_rng(0)
    base = rng.standard_normal((4, 6))
    cases = {
        "contiguous": (base, base[0]),
        "non-contiguous": (base.T, base.T[::2][:1]),
        "broadcast": (base[:, :1], base[0]),
        "zero-size": (np.zeros((0, 6)), np.zeros(6)),
        "0-dim": (np.array(2.5), np.array(-1.0)),
    }
    for name, (a, b) in cases.items():
        out = getattr(ember.ops, ns).cube_plus(ember.from_numpy(a), ember.from_numpy(b), alpha=-0.5)
        np.testing.assert_allclose(out.numpy(), a**3 - 0.5 * b, rtol=1e-14, err_msg=name)
    assert cube_plus(ember.tensor(2.0), ember.tensor(1.0)).item() == 9.0
    assert getattr(ember.ops, ns).cube_plus is cube_plus._opoverload
    assert cube_plus._opoverload.schema == f"{ns}::cube_plus(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor"


def test_register_autograd_passes_float64_gradcheck_and_gradgradcheck():
    ns = fresh()

    @custom_op(f"{ns}::sin_mul", mutates_args=())
    def sin_mul(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return x.sin() * y

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * x.cos() * y if ctx.needs_input_grad[0] else None, grad * x.sin()

    sin_mul.register_autograd(backward, setup_context=setup_context)
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    y = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(sin_mul, (x, y))
    assert ember.autograd.gradgradcheck(sin_mul, (x, y))
    # the node is recorded only when a gradient is wanted
    assert sin_mul(x, y).grad_fn is not None
    with ember.no_grad():
        assert sin_mul(x, y).grad_fn is None
    assert sin_mul(x.detach(), y.detach()).grad_fn is None


def test_register_autograd_with_several_outputs_lists_and_keyword_only_inputs():
    ns = fresh()

    @custom_op(f"{ns}::split_scale", mutates_args=())
    def split_scale(xs: Sequence[ember.Tensor], *, scale: float) -> list[ember.Tensor]:
        return [x * scale for x in xs]

    seen = {}

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        seen["kw"] = dict(keyword_only_inputs)
        ctx.scale = keyword_only_inputs["scale"]

    split_scale.register_autograd(lambda ctx, grads: ([g * ctx.scale for g in grads],),
                                  setup_context=setup_context)
    a = ember.randn(3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    outs = split_scale([a, b], scale=3.0)
    assert isinstance(outs, list) and len(outs) == 2
    (outs[0].sum() + 2 * outs[1].sum()).backward()
    assert seen["kw"] == {"scale": 3.0}
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, 3.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full(2, 6.0))

    @custom_op(f"{ns}::minmax", mutates_args=())
    def minmax(x: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        return x.min(), x.max()

    def mm_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], *output)

    def mm_backward(ctx, g_min, g_max):
        x, lo, hi = ctx.saved_tensors
        return g_min * (x == lo) + g_max * (x == hi)

    minmax.register_autograd(mm_backward, setup_context=mm_setup)
    x = ember.tensor([3.0, -1.0, 7.0, 2.0], dtype=ember.float64, requires_grad=True)
    lo, hi = minmax(x)
    (lo * 2 + hi * 5).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 5.0, 0.0])


def test_vmap_runs_the_kernel_on_batched_tensors():
    ns = fresh()

    @custom_op(f"{ns}::col_sums", mutates_args=())
    def col_sums(x: ember.Tensor) -> ember.Tensor:
        return x.sum(0)

    x = ember.randn(4, 3, 5, dtype=ember.float64)
    np.testing.assert_allclose(ember.func.vmap(col_sums)(x).numpy(), x.numpy().sum(1), rtol=1e-14)


def test_an_op_without_a_backward_raises_when_backward_reaches_it():
    ns = fresh()

    @custom_op(f"{ns}::no_formula", mutates_args=())
    def no_formula(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    x = ember.ones(3, requires_grad=True)
    y = no_formula(x)
    assert y.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative for '.*no_formula' is not implemented"):
        y.sum().backward()


def test_backward_returning_the_wrong_number_of_gradients_raises():
    ns = fresh()

    @custom_op(f"{ns}::two_in", mutates_args=())
    def two_in(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return x + y

    two_in.register_autograd(lambda ctx, g: g)
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned 1 gradients, expected one per positional input \\(2\\)"):
        two_in(x, x).sum().backward()


def test_mutated_arguments_are_written_and_the_op_returns_nothing():
    ns = fresh()

    @custom_op(f"{ns}::fill_sq", mutates_args={"out"})
    def fill_sq(x: ember.Tensor, out: ember.Tensor) -> None:
        out.copy_(x * x)

    out = ember.zeros(3)
    version = out._version
    assert fill_sq(ember.tensor([1.0, 2.0, 3.0]), out) is None
    np.testing.assert_array_equal(out.numpy(), [1.0, 4.0, 9.0])
    assert out._version > version
    assert opcheck(fill_sq, (ember.randn(3), ember.zeros(3)), test_utils="test_schema") == {"test_schema": "SUCCESS"}


def test_register_kernel_replaces_the_kernel_of_a_device_type():
    ns = fresh()

    @custom_op(f"{ns}::twice", mutates_args=())
    def twice(x: ember.Tensor) -> ember.Tensor:
        return x * 2

    @twice.register_kernel("cpu")
    def _(x):
        return x + x + 1

    assert twice(ember.tensor([1.0])).item() == 3.0

    @custom_op(f"{ns}::gpu_only", mutates_args=(), device_types="cuda")
    def gpu_only(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    with pytest.raises(NotImplementedError, match="no kernel for device type 'cpu'"):
        gpu_only(ember.ones(1))
    with pytest.raises(ValueError, match="device type 'tpu' is not in Ember"):
        twice.register_kernel("tpu", lambda x: x)


def test_errors_of_a_python_kernel_reach_the_caller_with_their_type():
    ns = fresh()

    @custom_op(f"{ns}::checked", mutates_args=())
    def checked(x: ember.Tensor) -> ember.Tensor:
        if x.dim() != 1:
            raise ValueError("checked: expected a 1-d tensor")
        return x.clone()

    with pytest.raises(ValueError, match="expected a 1-d tensor"):
        checked(ember.ones(2, 2))

    @custom_op(f"{ns}::liar", mutates_args=())
    def liar(x: ember.Tensor) -> ember.Tensor:
        return 3

    with pytest.raises(TypeError, match=f"\\[{ns}::liar\\] expected what its CPU kernel returned"):
        liar(ember.ones(1))
    with pytest.raises(TypeError, match="expected argument 'x' to be Tensor"):
        checked("not a tensor")


def test_custom_op_name_errors():
    with pytest.raises(ValueError, match="expected 'namespace::name'"):
        custom_op("no_namespace", mutates_args=())
    ns = fresh()

    def f(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    custom_op(f"{ns}::f", f, mutates_args=())
    with pytest.raises(ValueError, match=f"{ns}::f"):
        custom_op(f"{ns}::f", f, mutates_args=())


# --- Library --------------------------------------------------------------------------------------


def test_library_define_and_impl_per_key():
    ns = fresh()
    lib = Library(ns, "DEF")
    assert lib.define("scale(Tensor x, float a=2.0) -> Tensor") == "scale"
    lib.impl("scale", lambda x, a: x * a, "CPU")
    op = getattr(ember.ops, ns).scale
    np.testing.assert_array_equal(op(ember.ones(2)).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(op(ember.ones(2), a=-1.5).numpy(), [-1.5, -1.5])
    assert op.has_kernel("CPU") and not op.has_kernel("Autograd")
    with pytest.raises(ValueError, match="already"):
        lib.impl("scale", lambda x, a: x, "CPU")
    with pytest.raises(ValueError, match="already"):  # an overload name reaches the same op
        lib.impl(f"{ns}::scale.default", lambda x, a: x, "CPU")
    with pytest.raises(RuntimeError, match="Only a single DEF library"):
        Library(ns, "DEF")
    frag = Library(ns, "FRAGMENT")
    frag.define("shift(Tensor x) -> Tensor")
    frag.impl("shift", lambda x: x + 1, "CompositeExplicitAutograd")
    assert getattr(ember.ops, ns).shift.has_kernel("CUDA")


def test_composite_implicit_kernels_are_differentiated_through_their_ops():
    ns = fresh()
    lib = Library(ns, "DEF")
    lib.define("softsign(Tensor x) -> Tensor")
    lib.impl("softsign", lambda x: x / (1 + x.abs()))  # no key: CompositeImplicitAutograd
    op = getattr(ember.ops, ns).softsign
    x = ember.randn(5, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(op, (x,))
    assert opcheck(op, (x,)) == {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
                                 "test_faketensor": "SUCCESS"}


def test_autograd_key_kernel_and_fallthrough():
    ns = fresh()
    lib = Library(ns, "DEF")
    lib.define("double(Tensor x) -> Tensor")
    lib.impl("double", lambda x: x * 2, "CPU")
    lib.impl("double", ember.library.fallthrough_kernel, "Autograd")
    y = getattr(ember.ops, ns).double(ember.ones(2, requires_grad=True))
    assert not y.requires_grad  # a fallthrough Autograd key: the op takes no part in autograd
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0])


def test_library_errors():
    with pytest.raises(ValueError, match="Unsupported kind"):
        Library(fresh(), "DEFINE")
    with pytest.raises(ValueError, match="expected a namespace name"):
        Library("bad-name", "DEF")
    ns = fresh()
    lib = Library(ns, "DEF")
    with pytest.raises(ValueError, match=r"\[schema\] expected"):
        lib.define("broken(Tensor x -> Tensor")
    with pytest.raises(ValueError, match=r"\[schema\]"):
        lib.define("layout_arg(Tensor x, Layout l) -> Tensor")
    lib.define("once(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="once"):
        lib.define("once(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="dispatch key 'Python' is not in Ember"):
        lib.impl("once", lambda x: x, "Python")
    with pytest.raises(ValueError, match="expected a defined op"):
        lib.impl("never_defined", lambda x: x, "CPU")
    with pytest.raises(TypeError, match="callable"):
        lib.impl("once", 3, "CPU")
    with pytest.raises(RuntimeError, match="IMPL library"):
        Library(ns, "IMPL").define("other(Tensor x) -> Tensor")


def test_schema_alias_annotations_and_symint_are_read():
    ns = fresh()
    lib = Library(ns, "DEF")
    lib.define("add_into(Tensor x, Tensor(a!) out, SymInt times=1) -> ()")
    assert getattr(ember.ops, ns).add_into.schema == f"{ns}::add_into(Tensor x, Tensor out, int times=1) -> ()"
    assert ember.library._INFO[f"{ns}::add_into"].mutated == {"out"}


def test_function_forms_define_impl_and_register_fake():
    ns = fresh()
    ember.library.define(f"{ns}::neg2", "(Tensor x) -> Tensor")

    @ember.library.impl(f"{ns}::neg2", "cpu")
    def _(x):
        return -2 * x

    @ember.library.register_fake(f"{ns}::neg2")
    def _(x):
        return ember.empty_like(x)

    op = getattr(ember.ops, ns).neg2
    assert op(ember.ones(1)).item() == -2.0
    assert opcheck(op, (ember.ones(3),))["test_faketensor"] == "SUCCESS"
    assert ember.library.impl_abstract is ember.library.register_fake


# --- opcheck --------------------------------------------------------------------------------------


def test_opcheck_finds_an_undeclared_mutation_an_alias_and_a_wrong_fake():
    ns = fresh()

    @custom_op(f"{ns}::sneaky", mutates_args=())
    def sneaky(x: ember.Tensor) -> ember.Tensor:
        x.add_(1)
        return x.clone()

    with pytest.raises(OpCheckError, match="mutated argument 'x'"):
        opcheck(sneaky, (ember.randn(3),), test_utils="test_schema")

    @custom_op(f"{ns}::aliasing", mutates_args=())
    def aliasing(x: ember.Tensor) -> ember.Tensor:
        return x.view(-1)

    with pytest.raises(OpCheckError, match="aliases an input"):
        opcheck(aliasing, (ember.randn(2, 2),), test_utils="test_schema")

    @custom_op(f"{ns}::row_sums", mutates_args=())
    def row_sums(x: ember.Tensor) -> ember.Tensor:
        return x.sum(1)

    row_sums.register_fake(lambda x: ember.empty(x.shape[1]))
    with pytest.raises(OpCheckError, match="has shape"):
        opcheck(row_sums, (ember.randn(2, 3),), test_utils="test_faketensor")
    result = opcheck(row_sums, (ember.randn(2, 3, requires_grad=True),), raise_exception=False)
    assert isinstance(result["test_faketensor"], OpCheckError)
    assert isinstance(result["test_autograd_registration"], OpCheckError)
    assert result["test_schema"] == "SUCCESS"
    with pytest.raises(ValueError, match="test_aot_dispatch_dynamic"):
        opcheck(row_sums, (ember.randn(2, 3),), test_utils="test_aot_dispatch_dynamic")


def test_opcheck_leaves_the_callers_inputs_alone():
    ns = fresh()

    @custom_op(f"{ns}::bump", mutates_args={"x"})
    def bump(x: ember.Tensor) -> None:
        x.add_(1)

    x = ember.zeros(3)
    assert opcheck(bump, (x,), test_utils="test_schema") == {"test_schema": "SUCCESS"}
    np.testing.assert_array_equal(x.numpy(), np.zeros(3))


# --- dispatch modes -------------------------------------------------------------------------------


def test_dispatch_modes_see_custom_ops_and_register_torch_dispatch_takes_them():
    ns = fresh()

    @custom_op(f"{ns}::plus_one", mutates_args=())
    def plus_one(x: ember.Tensor) -> ember.Tensor:
        return x + 1

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    zero = ember.zeros(1)
    with Recorder() as rec:
        out = plus_one(zero)
    assert out.item() == 1.0
    assert rec.seen == [f"{ns}.plus_one"]  # its kernel's own ops run with the mode off the stack

    class Quiet(Recorder):
        pass

    @plus_one.register_torch_dispatch(Recorder)
    def _(mode, func, types, args, kwargs):
        mode.seen.append("rule")
        return args[0] + 10

    with Quiet() as quiet:  # a subclass of the registered class takes the rule too
        out = plus_one(zero)
    assert out.item() == 10.0
    assert quiet.seen == ["rule"]


def test_torch_library_code_runs_through_the_import_shim():
    from ember.compat import torch_shim

    ns = fresh("shim")
    source = f'''
import torch

@torch.library.custom_op("{ns}::mysin", mutates_args=())
def mysin(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x)

@mysin.register_fake
def _(x):
    return torch.empty_like(x)

def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)

def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos()

torch.library.register_autograd("{ns}::mysin", backward, setup_context=setup_context)
x = torch.randn(4, dtype=torch.float64, requires_grad=True)
ok = torch.autograd.gradcheck(mysin, (x,))
checks = torch.library.opcheck(mysin, (x,))
value = torch.ops.{ns}.mysin(torch.zeros(2))
'''
    torch_shim.install()
    try:
        scope = {}
        exec(compile(source, "user_script.py", "exec"), scope)  # noqa: S102 - the test's own script
    finally:
        torch_shim.uninstall()
    assert scope["ok"]
    assert set(scope["checks"].values()) == {"SUCCESS"}
    np.testing.assert_array_equal(scope["value"].numpy(), [0.0, 0.0])


# --- register_autocast ---------------------------------------------------------------------------


def test_register_autocast_casts_inputs_and_runs_the_op_with_autocast_off():
    ns = fresh("autocast")

    @custom_op(f"{ns}::mm_sum", mutates_args=())
    def mm_sum(x: ember.Tensor, ys: Sequence[ember.Tensor], n: ember.Tensor) -> ember.Tensor:
        # mm would run in bfloat16 if autocast were still on inside
        return ember.mm(x, ys[0]) + ys[1] + n.to(x.dtype)

    ember.library.register_autocast(f"{ns}::mm_sum", "cpu", ember.float16)
    op = getattr(ember.ops, ns).mm_sum
    rng = np.random.default_rng(0)
    a, b, c = (ember.from_numpy(rng.normal(size=(3, 3)).astype(np.float32)) for _ in range(3))
    n = ember.tensor([1, 2, 3])
    plain = op(a, [b, c], n)
    assert plain.dtype == ember.float32  # outside autocast: untouched
    with ember.autocast("cpu", dtype=ember.bfloat16):
        got = op(a, [b, c], n)
        assert ember.is_autocast_enabled("cpu")  # back on after the op
        doubles = mm_sum(a.double(), [b.double(), c.double()], n)
    assert got.dtype == ember.float16 and doubles.dtype == ember.float64  # float64 is never cast
    want = (a.half().float() @ b.half().float() + c.half().float() + n.float()).numpy()
    np.testing.assert_allclose(got.float().numpy(), want, rtol=2e-3, atol=2e-3)
    # a rule for CUDA never applies to Ember's CPU tensors; registering again replaces the dtype
    mm_sum.register_autocast("cuda", ember.bfloat16)
    mm_sum.register_autocast("cpu", ember.bfloat16)
    with ember.autocast("cpu"):
        assert mm_sum(a, [b, c], n).dtype == ember.bfloat16


def test_register_autocast_with_autograd_and_bad_arguments():
    ns = fresh("autocast")

    @custom_op(f"{ns}::twice", mutates_args=())
    def twice(x: ember.Tensor) -> ember.Tensor:
        return x * 2

    twice.register_autograd(lambda ctx, g: g * 2)
    twice.register_autocast("cpu", ember.bfloat16)
    leaf = ember.ones(3, requires_grad=True)
    with ember.autocast("cpu"):
        out = twice(leaf)
    assert out.dtype == ember.bfloat16 and out.requires_grad
    out.float().sum().backward()
    assert leaf.grad.dtype == ember.float32 and leaf.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="Device type 'meta' does not support autocast"):
        twice.register_autocast("meta", ember.float16)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.library.register_autocast(f"{ns}::twice", 3, ember.float16)
    with pytest.raises(ValueError, match="got unexpected type for op"):
        ember.library.register_autocast(5, "cpu", ember.float16)
    with pytest.raises(ValueError, match="expected a defined op"):
        ember.library.register_autocast(f"{ns}::missing", "cpu", ember.float16)
    with pytest.raises(TypeError, match="cast_inputs must be a floating dtype"):
        twice.register_autocast("cpu", ember.int32)


# --- register_vmap -------------------------------------------------------------------------------


def test_register_vmap_rule_gets_the_batch_dims_and_its_outputs_are_rebatched():
    ns = fresh("vmap")

    @custom_op(f"{ns}::scale_add", mutates_args=())
    def scale_add(x: ember.Tensor, ys: Sequence[ember.Tensor], k: float) -> ember.Tensor:
        return x * k + ys[0]

    calls = []

    @scale_add.register_vmap
    def rule(info, in_dims, x, ys, k):
        calls.append((info.batch_size, info.randomness, in_dims, tuple(x.shape), [tuple(y.shape) for y in ys]))
        x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x.unsqueeze(0)
        y = ys[0].movedim(in_dims[1][0], 0) if in_dims[1][0] is not None else ys[0].unsqueeze(0)
        return x * k + y, 0

    x, y = ember.arange(6.0).reshape(2, 3), ember.ones(3)
    assert scale_add(x, [y], 2.0).tolist() == (x * 2 + 1).tolist() and calls == []  # no vmap: the kernel
    out = ember.vmap(lambda a: scale_add(a, [y], 2.0))(x)
    assert out.tolist() == (x * 2 + 1).tolist()
    assert calls == [(2, "error", (0, [None], None), (2, 3), [(3,)])]
    out = ember.vmap(lambda a, b: scale_add(a, [b], 3.0), in_dims=(1, 0))(x.t().contiguous(), ember.ones(2, 3))
    assert out.tolist() == (x * 3 + 1).tolist()
    assert calls[-1] == (2, "error", (1, [0], None), (3, 2), [(2, 3)])  # the batch dim stays where it was
    # nested vmap: the rule runs at the innermost level, the outer level batches the ops it calls
    out = ember.vmap(ember.vmap(lambda a: scale_add(a, [y], 1.0)), randomness="same")(ember.ones(2, 2, 3))
    assert out.shape == (2, 2, 3) and out.tolist() == [[[2.0] * 3] * 2] * 2 and len(calls) == 3


def test_register_vmap_outputs_gradients_and_errors():
    ns = fresh("vmap")

    @custom_op(f"{ns}::pair", mutates_args=())
    def pair(x: ember.Tensor, w: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        return x * w, w.clone()

    # w is not batched: its copy is the same for every element (out_dim None, expanded)
    ember.library.register_vmap(f"{ns}::pair", lambda info, in_dims, x, w: ((x * w, w.clone()), (in_dims[0], None)))
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    w = ember.tensor([10.0, 100.0])
    prod, copies = ember.vmap(lambda a: pair(a, w))(x)
    assert prod.tolist() == [[10.0, 200.0], [30.0, 400.0], [50.0, 600.0]]
    assert copies.tolist() == [[10.0, 100.0]] * 3
    prod.sum().backward()  # through the rule's own ops
    assert x.grad.tolist() == [[10.0, 100.0]] * 3

    @custom_op(f"{ns}::bad", mutates_args=())
    def bad(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    bad.register_vmap(lambda info, in_dims, x: x)
    with pytest.raises(RuntimeError, match="the vmap rule of .*::bad must return a tuple \\(outputs, out_dims\\)"):
        ember.vmap(bad)(ember.ones(2, 3))
    bad.register_vmap(lambda info, in_dims, x: ((x, x), (0, 0, 0)))
    with pytest.raises(RuntimeError, match="returned 2 outputs but 3 out_dims"):
        ember.vmap(bad)(ember.ones(2, 3))
    with pytest.raises(ValueError, match="got unexpected type for op"):
        ember.library.register_vmap(3.5, lambda *a: a)
    with pytest.raises(ValueError, match="expected a defined op"):
        ember.library.register_vmap(f"{ns}::missing", lambda *a: a)
