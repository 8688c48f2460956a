"""gradcheck and gradgradcheck (torch.autograd.gradcheck): analytical derivatives from backward
(and forward mode) against central finite differences. ember.autograd re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import _C
from ._engine import _as_tuple, grad


class GradcheckError(RuntimeError):
    """gradcheck found an analytical gradient that disagrees with finite differences."""


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


def _unravel(k: int, shape: tuple) -> tuple:
    """The index of row-major element k of a tensor of this shape."""
    at = []
    for size in reversed(shape):
        k, i = divmod(k, size)
        at.append(i)
    return tuple(reversed(at))


def _numerical_columns(fn, inputs: Sequence, tensor, k: int, eps: float) -> list:
    """d outputs / d tensor.flat[k] along each real direction of that element, by central
    differences on copies (inputs stay untouched): one list of output vectors per direction."""
    def run(delta) -> list:
        args = []
        for x in inputs:
            if isinstance(x, _C.Tensor):
                y = x.detach().clone()
                if x is tensor:  # by index, not through reshape(-1): that copies a channels-last clone
                    at = _unravel(k, tuple(y.shape))
                    y[at] = y[at].item() + delta
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
