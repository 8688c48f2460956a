"""Accuracy: the weighted fraction of examples with ``(p >= threshold) == y`` (0 with no weight)."""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

THRESHOLD = "threshold"


def compute_accuracy(accuracy_sum: Tensor, weighted_num_samples: Tensor) -> Tensor:
    return ember.where(weighted_num_samples == 0.0, 0.0, accuracy_sum / weighted_num_samples).double()


def compute_accuracy_sum(labels: Tensor, predictions: Tensor, weights: Tensor, threshold: float = 0.5) -> Tensor:
    correct = (predictions.double() >= threshold).double() == labels
    return (weights * correct.double()).sum(-1)


def get_accuracy_states(
    labels: Tensor, predictions: Tensor, weights: Tensor, threshold: float = 0.5
) -> dict[str, Tensor]:
    return {
        "accuracy_sum": compute_accuracy_sum(labels, predictions, weights, threshold),
        "weighted_num_samples": weights.sum(-1),
    }


class AccuracyMetricComputation(RecMetricComputation):
    """Accuracy over the lifetime and the window.

    Args:
        threshold: a prediction at or above it counts as positive (default 0.5).
    """

    def __init__(self, *args: Any, threshold: float = 0.5, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._threshold = threshold
        for name in ("accuracy_sum", "weighted_num_samples"):
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)

    def update(self, *, predictions: Tensor, labels: Tensor, weights: Tensor, **kwargs: Any) -> None:
        states = get_accuracy_states(labels, predictions, weights, self._threshold)
        self._fold_states(states, predictions.shape[-1])

    def _compute(self) -> list[MetricComputationReport]:
        return [
            MetricComputationReport(
                MetricName.ACCURACY,
                MetricPrefix.LIFETIME,
                compute_accuracy(self._state("accuracy_sum"), self._state("weighted_num_samples")),
            ),
            MetricComputationReport(
                MetricName.ACCURACY,
                MetricPrefix.WINDOW,
                compute_accuracy(self.get_window_state("accuracy_sum"), self.get_window_state("weighted_num_samples")),
            ),
        ]


class AccuracyMetric(RecMetric):
    _namespace = MetricNamespace.ACCURACY
    _computation_class = AccuracyMetricComputation
