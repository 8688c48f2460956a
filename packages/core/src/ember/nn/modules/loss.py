"""Loss modules (torch.nn's names, constructor arguments and forward signatures), each calling
nn.functional with the options it was built with; class weights are buffers, as in PyTorch."""

from __future__ import annotations

from .. import functional as F
from .._loss import _reduction
from .linear import Linear
from .module import Module

__all__ = ["NLLLoss2d", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss", "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "HuberLoss",
           "SmoothL1Loss", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss", "MarginRankingLoss",
           "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
           "TripletMarginLoss", "MultiMarginLoss", "CTCLoss", "LinearCrossEntropyLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        # As PyTorch: the legacy flags are mapped now, `reduction` itself is checked when called.
        legacy = size_average is not None or reduce is not None
        self.reduction = _reduction(size_average, reduce, reduction) if legacy else reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of the logits of a built-in Linear(in_features, num_classes * prod(out_features))
    (F.linear_cross_entropy); its weight is stored flat and viewed as [C, *out_features, in]."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (), bias: bool = False,
                 device=None, dtype=None, reduction: str = "mean", weight=None, ignore_index=None,
                 label_smoothing: float = 0.0, options=None) -> None:
        super().__init__(weight, None, None, reduction)
        self.in_features, self.num_classes, self.out_features = in_features, num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        width = num_classes
        for d in self.out_features:
            width *= d
        self.linear = Linear(in_features, width, bias=bias, device=device, dtype=dtype)

    def forward(self, input, target):
        w = self.linear.weight.reshape(self.num_classes, *self.out_features, self.in_features)
        b = None if self.linear.bias is None else self.linear.bias.reshape(self.num_classes, *self.out_features)
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, num_classes={self.num_classes}, out_features={self.out_features}, "
                f"bias={self.linear.bias is not None}, reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class _MarginLoss(_Loss):
    _default_margin = 0.0

    def __init__(self, margin: float | None = None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = type(self)._default_margin if margin is None else margin


class MarginRankingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    _default_margin = 1.0

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False, size_average=None,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet loss with a distance function of the caller's choosing (pairwise_distance when
    None), as torch.nn.TripletMarginWithDistanceLoss."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else F.pairwise_distance
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name for image-shaped inputs (torch.nn.NLLLoss2d, deprecated there)."""
