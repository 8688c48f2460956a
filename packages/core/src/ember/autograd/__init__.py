"""Reverse-mode automatic differentiation (torch.autograd's API over Ember's C++ engine).

The engine and the per-op backward nodes live in native/ (ember/autograd.h, generated from the
op declarations); this module gives the Python entry points: backward, grad, grad modes and
gradcheck. docs/dev/autograd.md explains how the engine works.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from .. import _C


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _make_grads(outputs: tuple, grad_outputs: tuple) -> list:
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _C.ones_like(out)
        elif not isinstance(g, _C.Tensor):
            raise TypeError(f"gradients must be Tensors or None, but got {type(g).__name__}")
        grads.append(g)
    return grads


# The backward() calls under way, innermost last: None when every leaf accumulates into .grad, else
# the list of `inputs`. A backward that makes a sparse gradient for a dense leaf hands it straight
# to .grad when that leaf is accumulating (Note [sparse .grad] in ember/sparse/__init__.py);
# autograd.grad() is not listed, so there it returns a dense gradient instead.
_GRAD_SINKS: list = []


def _accumulates_into_grad(t) -> bool:
    if not _GRAD_SINKS:
        return False
    wanted = _GRAD_SINKS[-1]
    return wanted is None or any(t is w for w in wanted)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulates d(tensors)/d(leaf) into each leaf's .grad (only `inputs`' when given)."""
    outputs = _as_tuple(tensors)
    grads = _make_grads(outputs, _as_tuple(grad_tensors))
    keep = create_graph if retain_graph is None else retain_graph
    wanted = list(_as_tuple(inputs))
    if inputs is not None and not wanted:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _GRAD_SINKS.append(wanted or None)
    try:
        if not wanted:
            _C._run_backward(list(outputs), grads, keep, create_graph, [], True)
            return
        # backward(inputs=...): gradients reach only these tensors, accumulated into their .grad
        received = _C._run_backward(list(outputs), grads, keep, create_graph, wanted, False)
    finally:
        _GRAD_SINKS.pop()
    for tensor, g in zip(wanted, received, strict=True):
        if g is not None:
            g = g if create_graph else g.detach().clone()
            tensor.grad = g if tensor.grad is None else g + tensor.grad  # dense + a sparse .grad works too


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False) -> tuple:
    """The gradients of `outputs` with respect to `inputs` (a tuple), leaving .grad untouched."""
    outs = _as_tuple(outputs)
    if is_grads_batched:  # dim 0 of every grad_output is a batch: one vmapped backward
        return _batched_grad(outs, _as_tuple(inputs), _as_tuple(grad_outputs), retain_graph, create_graph,
                             allow_unused, materialize_grads)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("grad requires at least one input")
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True")
    keep = create_graph if retain_graph is None else retain_graph
    result = _C._run_backward(list(outs), _make_grads(outs, _as_tuple(grad_outputs)), keep, create_graph,
                              list(ins), False)
    for i, g in enumerate(result):
        if g is None:
            if materialize_grads:
                result[i] = _C.zeros_like(ins[i])
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
    return tuple(result)


def _batched_grad(outs: tuple, ins: tuple, grad_outputs: tuple, retain_graph, create_graph, allow_unused,
                  materialize_grads) -> tuple:
    from ..func import vmap

    if len(grad_outputs) != len(outs) or any(g is None for g in grad_outputs):
        raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the "
                           "batch dimension. The sizes of the remaining dimensions are expected to match the shape of "
                           "corresponding output, but a grad_output was None or missing.")
    for i, (o, g) in enumerate(zip(outs, grad_outputs, strict=True)):
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(f"If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                               f"the batch dimension. The sizes of the remaining dimensions are expected to match the "
                               f"shape of corresponding output, but a mismatch was detected: grad_output[{i}] has a "
                               f"shape of {list(g.shape)} and output[{i}] has a shape of {list(o.shape)}.")
    size = grad_outputs[0].shape[0] if grad_outputs else 0
    if size == 0:  # nothing to map over: empty results of the inputs' shapes
        return tuple(_C.zeros([0] + list(x.shape), dtype=x.dtype) for x in ins)

    unused: list = []

    def one(*gs):
        result = grad(outs, ins, gs, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
        unused[:] = [r is None for r in result]
        return tuple(_C.zeros_like(x) if r is None else r for r, x in zip(result, ins, strict=True))

    results = vmap(one)(*grad_outputs)  # batching sits below autograd: one backward for the whole batch
    allow = materialize_grads if allow_unused is None else allow_unused
    if any(unused) and not (allow or materialize_grads):
        raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                           "Set allow_unused=True if this is the desired behavior.")
    return tuple(None if was_unused and not materialize_grads else r
                 for r, was_unused in zip(results, unused, strict=True))


class _GradModeContext:
    """A context manager that is also a decorator (as torch's grad-mode classes are)."""

    mode: bool

    def __enter__(self):
        self._prev = _C._is_grad_enabled()
        _C._set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _C._is_grad_enabled()
            _C._set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._set_grad_enabled(prev)
        return wrapper


class no_grad(_GradModeContext):
    """Ops inside record no graph (their results do not require grad)."""

    mode = False


class enable_grad(_GradModeContext):
    mode = True


class set_grad_enabled(_GradModeContext):
    """set_grad_enabled(False) switches recording off now, or for a `with` block, or (as a
    decorator) while a function runs."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev = _C._is_grad_enabled()
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)  # used as a decorator: only while fn runs
        return super().__call__(fn)


def is_grad_enabled() -> bool:
    return _C._is_grad_enabled()


def _flat_inputs(inputs) -> list:
    return [x for x in _as_tuple(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]


def _directions(t) -> tuple:
    """The real directions of one element: 1, and also 1j for a complex tensor."""
    return (1.0, 1j) if t.dtype.is_complex else (1.0,)


def _as_numpy(t, like=None):
    import numpy as np

    if t is None:
        return np.zeros(like.numel(), dtype=np.complex128 if like.dtype.is_complex else np.float64)
    t = t.detach()
    return np.array(t.to(_C.complex128 if t.dtype.is_complex else _C.float64).numpy()).reshape(-1)


def _numerical_columns(fn, inputs: Sequence, tensor, k: int, eps: float) -> list:
    """d outputs / d tensor.flat[k] along each real direction of that element, by central
    differences on copies (inputs stay untouched): one list of output vectors per direction."""
    def run(delta) -> list:
        args = []
        for x in inputs:
            if isinstance(x, _C.Tensor):
                y = x.detach().clone()
                if x is tensor:
                    flat = y.reshape(-1)
                    flat[k] = flat[k].item() + delta
                # as differentiable as the original: fn may itself differentiate (gradgradcheck)
                args.append(y.requires_grad_() if x.requires_grad else y)
            else:
                args.append(x)
        return [_as_numpy(o) for o in _as_tuple(fn(*args)) if isinstance(o, _C.Tensor)]
    columns = []
    for d in _directions(tensor):
        plus, minus = run(eps * d), run(-eps * d)
        columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)])
    return columns


def _forward_columns(fn, inputs: Sequence, tensor, k: int) -> list:
    """The same derivatives as _numerical_columns, by forward-mode AD (tangent = the direction)."""
    from . import forward_ad

    columns = []
    for d in _directions(tensor):
        with forward_ad.dual_level():
            args = []
            for x in inputs:
                if x is tensor:
                    tangent = _C.zeros_like(x).reshape(-1)
                    tangent[k] = d
                    x = forward_ad.make_dual(x, tangent.reshape(list(x.shape)))
                args.append(x)
            outs = [o for o in _as_tuple(fn(*args)) if isinstance(o, _C.Tensor)]
            columns.append([_as_numpy(forward_ad.unpack_dual(o).tangent, like=o) for o in outs])
    return columns


def _number(v):
    """A NumPy scalar as a plain Python number (real when it has no imaginary part)."""
    return complex(v) if complex(v).imag else float(complex(v).real)


def _fail(raise_exception: bool, message: str) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Compares the Jacobian from backward (and, with check_forward_ad, from forward mode) with
    central finite differences, for every output element and every input that requires grad.
    Inputs must be float64 or complex128. Complex numbers are checked as PyTorch defines their
    gradients (conjugate Wirtinger): each real direction of an input and each real part of an
    output separately. Every element is checked, so fast_mode only changes speed in PyTorch;
    Ember's backward is deterministic, so nondet_tol has nothing to allow for."""
    inputs = _as_tuple(inputs)
    diff_inputs = _flat_inputs(inputs)
    if not diff_inputs:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for x in diff_inputs:
        if x.dtype not in (_C.float64, _C.complex128):
            raise ValueError(f"[gradcheck] inputs must be float64 or complex128 (got {x.dtype}): finite "
                             f"differences need the precision")
    outputs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]
    numeric = {}  # (input number, element) -> per direction, d outputs / d that element

    def numerical(i: int, k: int) -> list:
        if (i, k) not in numeric:
            numeric[(i, k)] = _numerical_columns(func, inputs, diff_inputs[i], k, eps)
        return numeric[(i, k)]

    def close(got: float, expected: float) -> bool:
        return abs(got - expected) <= atol + rtol * abs(expected)

    for out_index, out in enumerate(outputs):
        if not check_backward_ad or not out.requires_grad:
            continue
        for j in range(out.numel()):
            for part in _directions(out):  # d Re(out[j]), then d Im(out[j]) by the seed 1j
                seed = _C.zeros_like(out).reshape(-1)
                seed[j] = part
                analytical = grad([out], diff_inputs, [seed.reshape(list(out.shape))], retain_graph=True,
                                  allow_unused=True)
                for i, (x, a) in enumerate(zip(diff_inputs, analytical, strict=True)):
                    if check_grad_dtypes and a is not None and a.dtype != x.dtype:
                        return _fail(raise_exception, f"Gradient has dtype mismatch for input {i}: got {a.dtype}, "
                                                      f"expected {x.dtype}")
                    a = _as_numpy(a, like=x)
                    for k in range(x.numel()):
                        for d, column in zip(_directions(x), numerical(i, k), strict=True):
                            got = a[k].real if d == 1.0 else a[k].imag
                            value = column[out_index][j]
                            expected = value.real if part == 1.0 else value.imag
                            if not close(got, expected):
                                return _fail(raise_exception, f"Jacobian mismatch for output {out_index} element {j}"
                                             f"{' (imaginary part)' if part != 1.0 else ''} with respect to input {i}"
                                             f" element {k}{' (imaginary direction)' if d != 1.0 else ''}: "
                                             f"analytical {float(got)!r}, numerical {float(expected)!r}")
    if check_batched_grad and check_backward_ad and not _batched_matches_loop(func, inputs, diff_inputs, outputs,
                                                                                 atol, rtol, raise_exception, False):
        return False
    if check_batched_forward_grad and not _batched_matches_loop(func, inputs, diff_inputs, outputs, atol, rtol,
                                                                raise_exception, True):
        return False
    if check_forward_ad:
        for i, x in enumerate(diff_inputs):
            for k in range(x.numel()):
                for d_index, column in enumerate(_forward_columns(func, inputs, x, k)):
                    for out_index, got_vec in enumerate(column):
                        expected_vec = numerical(i, k)[d_index][out_index]
                        for j, (got, expected) in enumerate(zip(got_vec, expected_vec, strict=True)):
                            if not (close(got.real, expected.real) and close(got.imag, expected.imag)):
                                return _fail(raise_exception, f"Jacobian computed with forward mode mismatch for "
                                             f"output {out_index} element {j} with respect to input {i} element "
                                             f"{k}: forward {_number(got)!r}, numerical {_number(expected)!r}")
    return True


def _batched_matches_loop(func, inputs, diff_inputs, outputs, atol, rtol, raise_exception, forward) -> bool:
    """check_batched_grad / check_batched_forward_grad: vector-Jacobian (or Jacobian-vector)
    products of a batch of random vectors under vmap equal the products taken one at a time."""
    from ..func import jvp, vmap

    gen = _C.Generator()
    gen.manual_seed(0)
    batch = 3
    if forward:
        positions = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]

        def of_diff(*xs):
            args = list(inputs)
            for p, x in zip(positions, xs, strict=True):
                args[p] = x
            return tuple(o for o in _as_tuple(func(*args)) if isinstance(o, _C.Tensor))

        primals = tuple(x.detach() for x in diff_inputs)
        vectors = [_random_direction([batch] + list(x.shape), x.dtype, gen) for x in diff_inputs]
        batched = vmap(lambda *ts: jvp(of_diff, primals, ts)[1])(*vectors)
        singles = [jvp(of_diff, primals, tuple(v[b] for v in vectors))[1] for b in range(batch)]
        kind = "forward"
    else:
        outs = [o for o in outputs if o.requires_grad]
        if not outs:
            return True
        vectors = [_random_direction([batch] + list(o.shape), o.dtype, gen) for o in outs]
        batched = grad(outs, diff_inputs, vectors, retain_graph=True, allow_unused=True, materialize_grads=True,
                       is_grads_batched=True)
        singles = [grad(outs, diff_inputs, [v[b] for v in vectors], retain_graph=True, allow_unused=True,
                        materialize_grads=True) for b in range(batch)]
        kind = ""
    for b, single in enumerate(singles):
        for i, (got, want) in enumerate(zip(batched, single, strict=True)):
            g, w = _as_numpy(got[b]), _as_numpy(want)
            if not all(abs(x - y) <= atol + rtol * abs(y) for x, y in zip(g, w, strict=True)):
                return _fail(raise_exception, f"While computing batched {kind + ' ' if kind else ''}gradients, got: "
                             f"{got[b]}\nExpected: {want}\n(batch element {b}, {'output' if forward else 'input'} {i}: "
                             f"vmap of the {'Jacobian-vector' if forward else 'vector-Jacobian'} products disagrees "
                             f"with taking them one at a time)")
    return True


def _random_direction(shape, dtype, gen):
    """Standard-normal entries of `dtype`; a complex dtype gets independent real and imaginary parts."""
    if dtype in (_C.complex64, _C.complex128):
        real = _C.float32 if dtype == _C.complex64 else _C.float64
        return _C.complex(_C.randn(shape, generator=gen, dtype=real), _C.randn(shape, generator=gen, dtype=real))
    return _C.randn(shape, generator=gen, dtype=dtype)


class GradcheckError(RuntimeError):
    """gradcheck found an analytical gradient that disagrees with finite differences."""


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True) -> bool:
    """gradcheck of the backward pass itself: the vector-Jacobian product of `func` (built with
    create_graph=True) is checked as a function of the inputs."""
    inputs = _as_tuple(inputs)
    diff_positions = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]
    outputs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor) and o.requires_grad]
    if grad_outputs is None:  # fixed random directions, so the check is of a fixed function
        gen = _C.Generator()
        gen.manual_seed(0)
        grad_outputs = [_random_direction(list(o.shape), o.dtype, gen) for o in outputs]

    def vjp(*args):
        outs = [o for o in _as_tuple(func(*args)) if isinstance(o, _C.Tensor) and o.requires_grad]
        diff = [args[i] for i in diff_positions]
        return grad(outs, diff, list(grad_outputs), create_graph=True, allow_unused=True, materialize_grads=True)

    return gradcheck(vjp, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)


from . import forward_ad, functional  # noqa: E402
from .anomaly_mode import (  # noqa: E402
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .function import Function, FunctionCtx, once_differentiable  # noqa: E402
from .grad_mode import inference_mode, is_inference_mode_enabled  # noqa: E402

__all__ = ["Variable", "variable", "forward_ad", "functional", "Function", "FunctionCtx", "once_differentiable", "gradgradcheck", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "gradcheck",
           "GradcheckError", "inference_mode", "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

from ._variable import Variable  # noqa: E402


def variable(*args, **kwargs):
    """Removed in PyTorch, which keeps the name to say so: raises, pointing to ember.tensor."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")
