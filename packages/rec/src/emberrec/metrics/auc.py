"""AUC, the area under the ROC curve: an exact window AUC and a binned lifetime AUC, both in bounded
memory.

Note [AUC ties and bounded memory]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Weights: an example adds ``w * y`` to the positives and ``w * (1 - y)`` to the negatives (soft labels
split their weight). Ties: examples with equal scores form one group, and a positive and a negative
in the same group count as half an ordered pair::

    AUC = sum over groups g, by descending score, of  neg_g * (pos_above_g + pos_g / 2)  / (P * N)

which is the trapezoid under the ROC curve through the group boundaries. It does not depend on the
order of the examples, so the value is deterministic (TorchRec integrates over an arbitrary order of
tied scores). With no positive or no negative weight (P * N == 0) the AUC is 0.5, no signal.

Window AUC is exact over the window: each rank keeps its last ``ceil(window_size / world_size)``
examples per task (float64 prediction, label and weight: 24 bytes per example), as TorchRec keeps
its window. Lifetime AUC (which TorchRec 0.6 does not have: it would need every prediction ever
seen) comes from two fixed histograms per task, the positive and the negative weight in
``lifetime_bins`` (default 2**16) equal-width score bins over [0, 1]; bin ``b`` holds scores in
``[b / B, (b + 1) / B)`` and 1.0 falls in the last bin. Scores in one bin count as ties, so the
lifetime AUC is the exact AUC of the scores rounded down to a multiple of 1/B, within
``sum_b pos_b * neg_b / (2 * P * N)`` of the exact AUC: the histograms take 2 * B * 8 bytes (1 MiB
at 2**16) per task, however many updates arrive. Predictions must be in [0, 1] (probabilities);
anything else, NaN included, raises ValueError.
"""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

PREDICTIONS = "predictions"
LABELS = "labels"
WEIGHTS = "weights"
POS_HISTOGRAM = "lifetime_pos_histogram"
NEG_HISTOGRAM = "lifetime_neg_histogram"
DEFAULT_LIFETIME_BINS = 2**16


def _grouped_auc(pos: Tensor, neg: Tensor) -> Tensor:
    """AUC from per-group positive and negative weights ``(..., G)``, groups by descending score
    (Note [AUC ties and bounded memory])."""
    # Each class's weights as fractions of its total first: products of raw weights underflow when
    # the weights are tiny (two 1e-200 weights, or one subnormal halved for a tie), and would give 0.
    pos_total, neg_total = pos.sum(-1, keepdim=True), neg.sum(-1, keepdim=True)
    empty = ((pos_total == 0) | (neg_total == 0)).squeeze(-1)
    pos = pos / ember.where(pos_total == 0, 1.0, pos_total)
    neg = neg / ember.where(neg_total == 0, 1.0, neg_total)
    above = ember.cumsum(pos, dim=-1) - pos
    area = (neg * (above + 0.5 * pos)).sum(-1)
    return ember.where(empty, 0.5, area).double()


def compute_auc(n_tasks: int, predictions: Tensor, labels: Tensor, weights: Tensor) -> Tensor:
    """Exact AUC per task of ``(n_tasks, n_examples)`` tensors, tied scores counted half."""
    aucs = []
    for p, y, w in zip(predictions, labels, weights, strict=True):
        if p.numel() == 0:
            aucs.append(ember.tensor(0.5, dtype=ember.float64, device=p.device))
            continue
        order = ember.argsort(p, descending=True)
        p, y, w = p[order], y[order].double(), w[order].double()
        # The last example of each run of equal scores closes a group.
        ends = ember.ones(p.shape[0], dtype=ember.bool, device=p.device)
        ends[:-1] = p[:-1] != p[1:]
        zero = ember.zeros(1, dtype=ember.float64, device=p.device)
        pos = ember.diff(ember.cumsum(w * y, dim=0)[ends], prepend=zero)
        neg = ember.diff(ember.cumsum(w * (1.0 - y), dim=0)[ends], prepend=zero)
        aucs.append(_grouped_auc(pos, neg))
    return ember.stack(aucs)


def compute_binned_auc(pos_histogram: Tensor, neg_histogram: Tensor) -> Tensor:
    """AUC per task from ``(n_tasks, bins)`` histograms over ascending score bins."""
    return _grouped_auc(pos_histogram.flip(-1), neg_histogram.flip(-1))


class AUCMetricComputation(RecMetricComputation):
    """Window and lifetime AUC (Note [AUC ties and bounded memory]).

    Args:
        lifetime_bins: score bins of the lifetime histograms (default 2**16); 0 turns lifetime AUC off.
    """

    def __init__(self, *args: Any, lifetime_bins: int = DEFAULT_LIFETIME_BINS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if lifetime_bins < 0 or lifetime_bins == 1:
            raise ValueError(f"lifetime_bins must be 0 (off) or at least 2, got {lifetime_bins}")
        self._lifetime_bins = lifetime_bins
        for name in (PREDICTIONS, LABELS, WEIGHTS):
            self._add_state(
                name, ember.zeros((self._n_tasks, 0), dtype=ember.float64), add_window_state=False,
                dist_reduce_fx="cat",
            )
        if lifetime_bins:
            for name in (POS_HISTOGRAM, NEG_HISTOGRAM):
                self._add_state(
                    name, ember.zeros((self._n_tasks, lifetime_bins), dtype=ember.float64), add_window_state=False
                )

    def validate(self, predictions: Tensor, labels: Tensor, weights: Tensor) -> None:
        if predictions.numel() and not bool(((predictions >= 0) & (predictions <= 1)).all()):
            outside = predictions[~((predictions >= 0) & (predictions <= 1))]
            raise ValueError(
                f"AUC expects predictions in [0, 1] (probabilities), got {outside.reshape(-1)[0].item()}"
            )

    def update(self, *, predictions: Tensor, labels: Tensor, weights: Tensor, **kwargs: Any) -> None:
        predictions, labels, weights = predictions.double(), labels.double(), weights.double()
        # Keep the newest window_size examples.
        for name, new in ((PREDICTIONS, predictions), (LABELS, labels), (WEIGHTS, weights)):
            kept = ember.cat([getattr(self, name), new], dim=-1)
            setattr(self, name, kept[:, max(kept.shape[-1] - self._window_size, 0):].contiguous())
        if self._lifetime_bins:
            bins = self._lifetime_bins
            index = (predictions * bins).floor().long().clamp(0, bins - 1)
            index = index + ember.arange(self._n_tasks, device=index.device).reshape(-1, 1) * bins
            size = self._n_tasks * bins
            for name, mass in ((POS_HISTOGRAM, weights * labels), (NEG_HISTOGRAM, weights * (1.0 - labels))):
                counts = ember.bincount(index.reshape(-1), weights=mass.reshape(-1), minlength=size)
                getattr(self, name).add_(counts.reshape(self._n_tasks, bins))

    def _compute(self) -> list[MetricComputationReport]:
        window = compute_auc(
            self._n_tasks, self._state(PREDICTIONS), self._state(LABELS), self._state(WEIGHTS)
        )
        reports = [MetricComputationReport(MetricName.AUC, MetricPrefix.WINDOW, window)]
        if self._lifetime_bins:
            lifetime = compute_binned_auc(self._state(POS_HISTOGRAM), self._state(NEG_HISTOGRAM))
            reports.insert(0, MetricComputationReport(MetricName.AUC, MetricPrefix.LIFETIME, lifetime))
        return reports


class AUCMetric(RecMetric):
    _namespace = MetricNamespace.AUC
    _computation_class = AUCMetricComputation
