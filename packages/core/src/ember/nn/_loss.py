"""The losses of torch.nn.functional (ctc_loss has a file of its own, _ctc_loss.py), and the
legacy size_average / reduce handling they share."""

from __future__ import annotations

from .. import _C
from .._autocast_policy import autocast_policy
from ._distance import cosine_similarity, pairwise_distance

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss", "multi_margin_loss"]


# ---- losses ------------------------------------------------------------------------------------

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(size_average, reduce, reduction: str) -> str:
    """The legacy size_average / reduce flags, as PyTorch maps them."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        return "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _check_same_size(name: str, input, target) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the input size "
                         f"({list(input.shape)}) is deprecated. Please ensure they have the same size.")


@autocast_policy("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce((input - target) ** 2, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_C.abs(input - target), _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (beta = 0: L1)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = _C.abs(input - target)
    loss = d if beta == 0 else _C.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| <= delta, delta (|d| - 0.5 delta) elsewhere."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = _C.abs(input - target)
    return _reduce(_C.where(d <= delta, 0.5 * d * d, delta * (d - 0.5 * delta)), _reduction(None, None, reduction))


_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}  # nll_loss_forward's int argument


@autocast_policy("fp32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n], ...] (times weight[target]) for log-probabilities over dim 1 (or dim 0
    for one unbatched sample); 'mean' divides by the summed weights of the targets not ignored."""
    reduction = _reduction(size_average, reduce, reduction)
    # the native op checks the shapes, the target dtype and every class index (Note [nll layouts])
    loss, _ = _C.nll_loss_forward(input, target, weight, _REDUCTION_CODES[reduction], ignore_index)
    return loss


@autocast_policy("fp32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 unbatched) and nll_loss for class indices; for class
    probabilities (a floating target of input's shape), -sum(target * log_softmax). label_smoothing
    mixes the target with the uniform distribution, as PyTorch does."""
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    logp = _C.log_softmax(input, class_dim, None)
    classes = input.shape[class_dim]
    wshape = [1] * input.dim()
    wshape[class_dim] = classes
    if target.dtype.is_floating_point:  # class probabilities
        _check_same_size("cross_entropy", input, target)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        per_class = logp * target if weight is None else logp * target * _C.reshape(weight, wshape)
        loss = -per_class.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // classes if input.numel() else 1)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    # the smoothing term: -sum over classes of (weight *) logp, over the targets not ignored
    keep = _C.ne(target, ignore_index)
    terms = logp if weight is None else logp * _C.reshape(weight, wshape)
    smooth = -terms.sum(class_dim) * keep.to(logp.dtype)
    if reduction == "mean":
        if weight is None:
            denominator = keep.to(logp.dtype).sum()
        else:
            safe = _C.where(keep, target, _C.zeros_like(target))
            denominator = (_C.reshape(_C.index_select(weight, 0, _C.reshape(safe, [-1])), list(safe.shape))
                           * keep.to(logp.dtype)).sum()
        smooth = smooth.sum() / denominator
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + label_smoothing / classes * smooth


@autocast_policy("fp32")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(target log(input) + (1 - target) log(1 - input)), the logs clamped at -100 as PyTorch."""
    _check_same_size("binary_cross_entropy", input, target)
    if input.numel() and (float(input.min().item()) < 0 or float(input.max().item()) > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_p = _C.clamp(_C.log(input), -100.0, None)
    log_q = _C.clamp(_C.log(1 - input), -100.0, None)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy of sigmoid(input), computed stably: (1 - t) x + (1 + (pw - 1) t) softplus(-x)."""
    _check_same_size("binary_cross_entropy_with_logits", input, target)
    softplus_neg = _C.softplus(-input, 1.0, 20.0)
    if pos_weight is None:
        loss = (1 - target) * input + softplus_neg
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input) pointwise (input: log-probabilities); 'batchmean' divides the
    sum by the batch size."""
    loss = _C.exp(target) * (target - input) if log_target else _xlogy(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def _xlogy(t):
    """t log t with 0 log 0 = 0."""
    return _C.where(t > 0, t * _C.log(_C.where(t > 0, t, _C.ones_like(t))), _C.zeros_like(t))


@autocast_policy("fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    loss = _C.exp(input) - target * input if log_input else input - target * _C.log(input + eps)
    if full:  # Stirling's term for target > 1
        stirling = target * _C.log(_C.where(target > 1, target, _C.ones_like(target))) - target \
            + 0.5 * _C.log(2 * 3.141592653589793 * _C.where(target > 1, target, _C.ones_like(target)))
        loss = loss + _C.where(target > 1, stirling, _C.zeros_like(stirling))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log max(var, eps) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi when full)."""
    if var.dim() == input.dim() - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = _C.unsqueeze(var, -1)
    if var.numel() and float(var.min().item()) < 0:
        raise ValueError("var has negative entry/entries")
    var = _C.clamp(var, eps, None) if eps else var
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * 1.8378770664093453  # log(2 pi)
    return _reduce(loss, _reduction(None, None, reduction))


@autocast_policy("fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_C.relu(-target * (input1 - input2) + margin), _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    loss = _C.where(target == 1, input, _C.zeros_like(input)) + \
        _C.where(target == -1, _C.relu(margin - input), _C.zeros_like(input))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_C.softplus(-target * input, 1.0, 20.0), _reduction(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    loss = -(target * _C.logsigmoid(input) + (1 - target) * _C.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(input.dim() - 1)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-12)
    loss = _C.where(target == 1, 1 - cos, _C.relu(cos - margin))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _C.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_C.relu(d_pos - d_neg + margin), _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """sum over classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y]) / classes."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else _C.unsqueeze(input, 0)
    y = target if target.dim() == 1 else _C.unsqueeze(target, 0)
    picked = _C.gather(x, 1, _C.unsqueeze(y, 1))
    margins = _C.relu(margin - picked + x) ** p
    others = _C.ne(_C.unsqueeze(y, 1), _C.arange(0, x.shape[1], 1, dtype=_C.int64)).to(x.dtype)
    loss = (margins * others)
    if weight is not None:
        loss = loss * _C.unsqueeze(_C.index_select(weight, 0, y), 1)
    loss = loss.sum(1) / x.shape[1]
    if input.dim() == 1:
        loss = _C.squeeze(loss, [0])
    return _reduce(loss, _reduction(size_average, reduce, reduction))
