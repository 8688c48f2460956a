"""NE, normalized entropy: the weighted cross entropy of the predictions over that of always
predicting the observed CTR (TorchRec's ``NEMetric``)."""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

STATES = ("cross_entropy_sum", "weighted_num_samples", "pos_labels", "neg_labels")


def compute_cross_entropy(labels: Tensor, predictions: Tensor, weights: Tensor, eta: float) -> Tensor:
    """Per example ``-w * (y * log2(p) + (1 - y) * log2(1 - p))``, p clamped to [eta, 1 - eta]."""
    predictions = predictions.double().clamp(eta, 1 - eta)
    return -weights * labels * ember.log2(predictions) - weights * (1.0 - labels) * ember.log2(1.0 - predictions)


def _compute_cross_entropy_norm(mean_label: Tensor, pos_labels: Tensor, neg_labels: Tensor, eta: float) -> Tensor:
    mean_label = mean_label.double().clamp(eta, 1 - eta)
    return -pos_labels * ember.log2(mean_label) - neg_labels * ember.log2(1.0 - mean_label)


def compute_ne(
    ce_sum: Tensor,
    weighted_num_samples: Tensor,
    pos_labels: Tensor,
    neg_labels: Tensor,
    eta: float,
    allow_missing_label_with_zero_weight: bool = False,
) -> Tensor:
    """``ce_sum / (-pos * log2(ctr) - neg * log2(1 - ctr))`` with ctr = pos / weighted_num_samples
    clamped to [eta, 1 - eta]. With no weight at all the value is NaN (0/0), as in TorchRec, unless
    ``allow_missing_label_with_zero_weight``, which reports eta instead."""
    if allow_missing_label_with_zero_weight and not bool(weighted_num_samples.all()):
        return ember.full(tuple(ce_sum.shape), eta, dtype=ember.float64)
    mean_label = pos_labels / weighted_num_samples
    return ce_sum / _compute_cross_entropy_norm(mean_label, pos_labels, neg_labels, eta)


def compute_logloss(ce_sum: Tensor, pos_labels: Tensor, neg_labels: Tensor, eta: float) -> Tensor:
    return ce_sum / (pos_labels + neg_labels).clamp(min=eta)


def get_ne_states(labels: Tensor, predictions: Tensor, weights: Tensor, eta: float) -> dict[str, Tensor]:
    return {
        "cross_entropy_sum": compute_cross_entropy(labels, predictions, weights, eta).sum(-1),
        "weighted_num_samples": weights.sum(-1),
        "pos_labels": (weights * labels).sum(-1),
        "neg_labels": (weights * (1.0 - labels)).sum(-1),
    }


class NEMetricComputation(RecMetricComputation):
    """NE over the lifetime and the window.

    Args:
        include_logloss: also report the weighted mean cross entropy (``logloss``).
        allow_missing_label_with_zero_weight: report eta instead of NaN when there is no weight.
    """

    def __init__(
        self, *args: Any, include_logloss: bool = False, allow_missing_label_with_zero_weight: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._include_logloss = include_logloss
        self._allow_missing_label_with_zero_weight = allow_missing_label_with_zero_weight
        for name in STATES:
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)
        self.eta = 1e-12

    def update(self, *, predictions: Tensor, labels: Tensor, weights: Tensor, **kwargs: Any) -> None:
        self._fold_states(get_ne_states(labels, predictions, weights, self.eta), predictions.shape[-1])

    def _compute(self) -> list[MetricComputationReport]:
        lifetime = [self._state(name) for name in STATES]
        window = [self.get_window_state(name) for name in STATES]
        allow = self._allow_missing_label_with_zero_weight
        reports = [
            MetricComputationReport(MetricName.NE, MetricPrefix.LIFETIME, compute_ne(*lifetime, self.eta, allow)),
            MetricComputationReport(MetricName.NE, MetricPrefix.WINDOW, compute_ne(*window, self.eta, allow)),
        ]
        if self._include_logloss:
            reports += [
                MetricComputationReport(
                    MetricName.LOG_LOSS, MetricPrefix.LIFETIME, compute_logloss(lifetime[0], *lifetime[2:], self.eta)
                ),
                MetricComputationReport(
                    MetricName.LOG_LOSS, MetricPrefix.WINDOW, compute_logloss(window[0], *window[2:], self.eta)
                ),
            ]
        return reports


class NEMetric(RecMetric):
    _namespace = MetricNamespace.NE
    _computation_class = NEMetricComputation
