"""linear_cross_entropy (torch.nn.functional, PyTorch 2.13) and its chunking options: the cross
entropy of class logits that are a linear map of the input, optionally computed a block of batch
rows at a time so that the [batch, classes] logits never exist whole (an LLM's vocabulary head)."""

from __future__ import annotations

import dataclasses
import math
import warnings

from .. import _C
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ._linear import linear
from ._loss import _reduction, cross_entropy

__all__ = ["linear_cross_entropy"]

_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Opts linear_cross_entropy into its chunked path (torch.nn.LinearCrossEntropyOptions).

    - ``batch_chunk_size``: batch rows per chunk (None: decided by ``chunking_method``, or one chunk).
    - ``chunking_method``: ``"aspect_ratio"`` sizes a chunk's [rows, classes] logits like the
      [batch, in_features] input, ``"aspect_ratio:N"`` makes it N times smaller, ``"auto"`` is
      ``"aspect_ratio"`` for float16/bfloat16 input and ``"aspect_ratio:2"`` otherwise (PyTorch's CPU
      picks), None uses ``batch_chunk_size``.
    - ``acc_dtype``: the dtype the chunks are computed in (None: float32 for float16/bfloat16 input,
      else the input's dtype).
    - ``acc_policy``: validated as PyTorch's; on CPU every policy computes the logits, the softmax
      and all three gradients in ``acc_dtype`` (PyTorch's ``"accurate"``; its cheaper policies only
      differ on CUDA or in low-precision matmuls).
    - ``allow_retain_graph``: the scalar reductions compute their gradients in the forward and scale
      them in place in the backward, so a second backward raises RuntimeError; True keeps them.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: _C.dtype | None = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            _aspect_factor(self.chunking_method)
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and not isinstance(self.batch_chunk_size, bool)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
            raise ValueError("acc_dtype must be one of {None, ember.float16, ember.bfloat16, ember.float32, "
                             f"ember.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             "automatically.")

    def _chunk_rows(self, rows: int, in_features: int, classes: int, low_precision: bool) -> int:
        method = self.chunking_method
        if method == "auto":
            if self.batch_chunk_size is not None:
                return self.batch_chunk_size
            method = "aspect_ratio" if low_precision else "aspect_ratio:2"
        if method is None:
            return self.batch_chunk_size or max(rows, 1)
        # logits chunk [size, classes] about as large as the input [rows, in_features], / factor
        per_input = -(-classes // max(in_features, 1))
        size = max(1, 1 << max(0, math.ceil(math.log2(max(1, -(-rows // max(per_input, 1)))))))
        size = max(1, size // _aspect_factor(method))
        if self.batch_chunk_size is not None and self.batch_chunk_size != size:
            raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ({method!r}) give "
                             f"different chunk sizes ({self.batch_chunk_size} vs {size}); pass only one.")
        return size


LinearCrossEntropyOptions.__module__ = "ember.nn"


def _aspect_factor(method: str) -> int:
    name, sep, factor = method.partition(":")
    factor = factor if sep else "1"
    if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
        raise ValueError(f"invalid chunking_method: {method!r}")
    return int(factor)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...): input [N, in] or [in];
    linear_weight [C, d_1, ..., d_K, in] for C classes over K extra target dims; ignore_index None
    means -100. With ``options`` (LinearCrossEntropyOptions), class-index targets, no label
    smoothing and K = 0 are computed a chunk of rows at a time; other calls warn and take the
    reference path."""
    reduction = _reduction(None, None, reduction)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2 or input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    ignore = -100 if ignore_index is None else ignore_index
    out_features = tuple(linear_weight.shape[1:-1])
    if options is not None:
        bias_shape = None if linear_bias is None else tuple(linear_bias.shape)
        if (label_smoothing == 0 and target.dtype == _C.int64 and not out_features
                and (bias_shape is None or len(bias_shape) == 1)):
            return _chunked(input, linear_weight, linear_bias, target, weight, reduction, ignore, options)
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                      "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, linear_bias.shape={bias_shape}.", stacklevel=2)
    flat = linear_weight.reshape(linear_weight.shape[0] * math.prod(out_features), linear_weight.shape[-1])
    logits = linear(input, flat)
    logits = logits.reshape(*input.shape[:-1], linear_weight.shape[0], *out_features)
    if linear_bias is not None:
        logits = logits + linear_bias
    return cross_entropy(logits, target, weight, ignore_index=ignore, reduction=reduction,
                         label_smoothing=label_smoothing)


def _chunked(input, linear_weight, linear_bias, target, weight, reduction, ignore, options):
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.reshape(1, -1), target.reshape(1)
    if target.dim() != 1 or target.shape[0] != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 0}).")
    classes = linear_weight.shape[0]
    if linear_bias is not None and tuple(linear_bias.shape) != (classes,):
        raise RuntimeError(f"linear_bias must have shape ({classes},), got {tuple(linear_bias.shape)}")
    if weight is not None and tuple(weight.shape) != (classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")
    low = input.dtype in (_C.float16, _C.bfloat16)
    acc = options.acc_dtype or (_C.float32 if low else input.dtype)
    rows = options._chunk_rows(input.shape[0], input.shape[1], classes, low)
    loss = _ChunkedLinearCrossEntropy.apply(input, linear_weight, linear_bias, target, weight, reduction, ignore,
                                            rows, acc, options.allow_retain_graph)
    return loss.reshape(()) if unbatched and reduction == "none" else loss


def _in_acc(acc, *tensors):
    """The tensors in dtype acc (None stays None): converted once per call, not per chunk."""
    return tuple(None if t is None else t.to(acc) for t in tensors)


def _chunk_terms(xs, w, b, t, class_weight, ignore):
    """For rows xs [n, in] (all operands already in the computing dtype): the per-row loss terms and
    the gradient of their sum with respect to the logits ([n, C], each row scaled by its class
    weight, zero where ignored)."""
    acc = xs.dtype
    logits = linear(xs, w, b)
    classes = logits.shape[1]
    keep = _C.ne(t, ignore)
    bad = _C.logical_and(keep, _C.logical_or(_C.lt(t, 0), _C.ge(t, classes)))
    if bad.any().item():
        raise IndexError(f"[linear_cross_entropy] Target {int(t[bad][0].item())} is out of bounds.")
    safe = _C.where(keep, t, _C.zeros_like(t))
    scale = keep.to(acc)
    if class_weight is not None:
        scale = scale * _C.index_select(class_weight, 0, safe)
    lse = logits.logsumexp(1)
    picked = logits.gather(1, safe.reshape(-1, 1)).reshape(-1)
    grad = (logits - lse.reshape(-1, 1)).exp()  # the softmax, less one at the target
    grad.scatter_add_(1, safe.reshape(-1, 1), _C.full_like(picked.reshape(-1, 1), -1.0))
    return (lse - picked) * scale, grad * scale.reshape(-1, 1), scale


class _ChunkedLinearCrossEntropy(Function):
    @staticmethod
    def forward(ctx, x, w, b, t, class_weight, reduction, ignore, rows, acc, keep_buffers):
        ctx.reduction, ctx.ignore, ctx.rows, ctx.acc, ctx.keep_buffers = reduction, ignore, rows, acc, keep_buffers
        ctx.dtypes = (x.dtype, w.dtype, None if b is None else b.dtype)
        ctx.used = False
        n = x.shape[0]
        with no_grad():
            wa, ba, cwa = _in_acc(acc, w, b, class_weight)
            if reduction == "none":
                parts = [_chunk_terms(x[r:r + rows].to(acc), wa, ba, t[r:r + rows], cwa, ignore)[0]
                         for r in range(0, n, rows)]
                ctx.save_for_backward(x, w, b, t, class_weight)
                loss = _C.cat(parts, 0) if parts else x.new_zeros(0, dtype=acc)
                return loss.to(x.dtype)
            total, count = x.new_zeros((), dtype=acc), x.new_zeros((), dtype=acc)
            gx, gw = x.new_zeros(x.shape, dtype=acc), x.new_zeros(w.shape, dtype=acc)
            gb = None if b is None else x.new_zeros(b.shape, dtype=acc)
            for r in range(0, n, rows):
                xs = x[r:r + rows].to(acc)
                terms, grad, scale = _chunk_terms(xs, wa, ba, t[r:r + rows], cwa, ignore)
                total = total + terms.sum()
                count = count + scale.sum()
                gx[r:r + rows] = _C.matmul(grad, wa)
                gw.add_(_C.matmul(grad.t(), xs))
                if gb is not None:
                    gb.add_(grad.sum(0))
            if reduction == "mean":  # the weighted mean: nan when no row counts, with zero gradients
                total = total / count  # (as the reference path's; PyTorch's chunked path gives nan ones)
                if count.item() != 0:
                    for g in (gx, gw, gb):
                        if g is not None:
                            g.div_(count)
        ctx.grads = (gx, gw, gb)
        return total.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.reduction == "none":
            return _ChunkedLinearCrossEntropy._backward_rows(ctx, grad_out)
        if ctx.used and not ctx.keep_buffers:
            raise RuntimeError("linear_cross_entropy chunked backward called twice; retain_graph=True / double "
                               "backward are not supported.")
        ctx.used = True
        scale = grad_out.to(ctx.acc)
        out = []
        for g, needed, dtype in zip(ctx.grads, ctx.needs_input_grad[:3], ctx.dtypes, strict=True):
            if g is None or not needed:
                out.append(None)
            else:  # in place unless the buffers must survive for another backward
                out.append((g * scale if ctx.keep_buffers else g.mul_(scale)).to(dtype))
        if not ctx.keep_buffers:
            ctx.grads = (None, None, None)
        return (*out, None, None, None, None, None, None, None)

    @staticmethod
    def _backward_rows(ctx, grad_out):
        x, w, b, t, class_weight = ctx.saved_tensors
        acc, rows = ctx.acc, ctx.rows
        gx, gw = x.new_zeros(x.shape, dtype=acc), x.new_zeros(w.shape, dtype=acc)
        gb = None if b is None else x.new_zeros(b.shape, dtype=acc)
        go = grad_out.to(acc)
        wa, ba, cwa = _in_acc(acc, w, b, class_weight)
        for r in range(0, x.shape[0], rows):
            xs = x[r:r + rows].to(acc)
            _, grad, _ = _chunk_terms(xs, wa, ba, t[r:r + rows], cwa, ctx.ignore)
            grad = grad * go[r:r + rows].reshape(-1, 1)
            gx[r:r + rows] = _C.matmul(grad, wa)
            gw.add_(_C.matmul(grad.t(), xs))
            if gb is not None:
                gb.add_(grad.sum(0))
        grads = [g.to(dtype) if g is not None and needed else None
                 for g, needed, dtype in zip((gx, gw, gb), ctx.needs_input_grad[:3], ctx.dtypes, strict=True)]
        return (*grads, None, None, None, None, None, None, None)
