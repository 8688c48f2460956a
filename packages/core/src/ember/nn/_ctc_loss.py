"""Connectionist temporal classification loss (Graves et al., 2006): -log of the total
probability of every frame-level alignment that collapses to the target.

The forward recursion runs over the target extended with blanks (b, l1, b, l2, ..., b), in log
space, vectorised over the batch and the extended positions and looped over time, so autograd
differentiates it. Unreachable states hold a large negative number rather than -inf: exp of it
underflows to exactly 0, and no 0/0 appears in the gradient of log-sum-exp."""

from __future__ import annotations

import numbers

from .. import _C
from .._autocast_policy import autocast_policy
from .._tensor import tensor

# Far below any reachable log-probability, yet finite in float32.
_UNREACHABLE = -1e30


def _lengths(value, name: str, batch: int) -> list[int]:
    if isinstance(value, _C.Tensor):
        if value.dim() > 1:
            raise RuntimeError(f"ctc_loss: {name} must be 0-D or 1-D, got {value.dim()}-D")
        value = value.reshape([-1]).tolist()
    elif isinstance(value, numbers.Integral):
        value = [value]
    value = [int(v) for v in value]
    if len(value) != batch:
        raise RuntimeError(f"ctc_loss: {name} must have one entry per batch element ({batch}), got {len(value)}")
    if any(v < 0 for v in value):
        raise RuntimeError(f"ctc_loss: {name} must be non-negative, got {value}")
    return value


def _log_add(*terms):
    top = terms[0]
    for t in terms[1:]:
        top = _C.maximum(top, t)
    top = top.detach()
    return top + _C.log(sum(_C.exp(t - top) for t in terms))


@autocast_policy("fp32")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """log_probs: (T, N, C) log-softmax outputs (or (T, C) for one sequence); targets: (N, S)
    padded or 1-D concatenated labels; input_lengths, target_lengths: per sequence."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss: log_probs must be 2-D (T, C) or 3-D (T, N, C), got {log_probs.dim()}-D")
    unbatched = log_probs.dim() == 2
    lp = _C.unsqueeze(log_probs, 1) if unbatched else log_probs
    steps, batch, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError(f"ctc_loss: blank must be in [0, {classes}), got {blank}")
    if targets.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"ctc_loss: targets must be an integer tensor, got {targets.dtype}")
    in_len = _lengths(input_lengths, "input_lengths", batch)
    tgt_len = _lengths(target_lengths, "target_lengths", batch)
    if any(n > steps for n in in_len):
        raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {max(in_len)}")
    labels = targets.to(_C.int64)
    if unbatched and labels.dim() == 1 and labels.shape[0] >= tgt_len[0]:
        labels = _C.unsqueeze(labels, 0)
    longest = max(tgt_len, default=0)
    if labels.dim() == 2:
        if labels.shape[0] != batch or labels.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{labels.shape[1] if labels.dim() == 2 else 0} (targets of shape "
                               f"{list(labels.shape)} for a batch of {batch})")
        rows = [labels[n, :tgt_len[n]].tolist() for n in range(batch)]
    elif labels.dim() == 1:
        if labels.shape[0] < sum(tgt_len):
            raise RuntimeError(f"Expected tensor to have size at least {sum(tgt_len)} at dimension 0, but got size "
                               f"{labels.shape[0]}")
        flat, rows, start = labels.tolist(), [], 0
        for n in tgt_len:
            rows.append(flat[start:start + n])
            start += n
    else:
        raise RuntimeError(f"ctc_loss: targets must be 1-D or 2-D, got {labels.dim()}-D")
    for row in rows:
        bad = [v for v in row if not 0 <= v < classes or v == blank]
        if bad:
            raise RuntimeError(f"ctc_loss: target labels must be in [0, {classes}) and differ from blank={blank}, "
                               f"got {bad[0]}")

    work = lp if lp.dtype in (_C.float32, _C.float64) else lp.to(_C.float32)  # half: float32 inside
    width = 2 * longest + 1
    extended = [[blank] * width for _ in range(batch)]
    skip_ok = [[False] * width for _ in range(batch)]
    for n, row in enumerate(rows):
        for i, label in enumerate(row):
            extended[n][2 * i + 1] = label
            # l' may jump over a blank between two different labels.
            skip_ok[n][2 * i + 1] = i > 0 and row[i - 1] != label
    ext = tensor(extended, dtype=_C.int64)
    skip = tensor(skip_ok, dtype=_C.bool)
    emissions = _C.gather(work, 2, _C.expand(_C.unsqueeze(ext, 0), [steps, batch, width]))  # (T, N, width)
    unreachable = _C.full([batch, width], _UNREACHABLE, dtype=work.dtype)
    start_mask = tensor([[s < 2 for s in range(width)]] * batch, dtype=_C.bool)
    alpha = _C.where(start_mask, emissions[0], unreachable) if steps > 0 else unreachable
    pad1 = _C.full([batch, 1], _UNREACHABLE, dtype=work.dtype)
    pad2 = _C.full([batch, 2], _UNREACHABLE, dtype=work.dtype)
    running = tensor([[n > 0] for n in in_len], dtype=_C.bool)
    if steps > 0:
        alpha = _C.where(running, alpha, unreachable)
    for t in range(1, steps):
        stay = alpha
        step = _C.cat([pad1, alpha[:, :-1]], 1)
        jump = _C.where(skip, _C.cat([pad2, alpha[:, :-2]], 1), unreachable)
        advanced = _log_add(stay, step, jump) + emissions[t]
        active = tensor([[t < n] for n in in_len], dtype=_C.bool)
        alpha = _C.where(active, advanced, alpha)
    last = tensor([[2 * n, max(2 * n - 1, 0)] for n in tgt_len], dtype=_C.int64)
    ends = _C.gather(alpha, 1, last)
    # With an empty target there is one end state; the second gathered value repeats it.
    single = tensor([[False, n == 0] for n in tgt_len], dtype=_C.bool)
    ends = _C.where(single, _C.full([batch, 2], _UNREACHABLE, dtype=work.dtype), ends)
    nll = -_log_add(ends[:, 0], ends[:, 1])
    impossible = _C.ge(nll, -_UNREACHABLE / 2)
    if zero_infinity:
        nll = _C.where(impossible, _C.zeros_like(nll), nll)
    else:
        nll = _C.where(impossible, _C.full_like(nll, float("inf")), nll)
    nll = nll.to(log_probs.dtype)
    if reduction == "none":
        return nll[0] if unbatched else nll
    if reduction == "sum":
        return nll.sum()
    per_label = tensor([max(n, 1) for n in tgt_len], dtype=nll.dtype)
    return (nll / per_label).mean()
