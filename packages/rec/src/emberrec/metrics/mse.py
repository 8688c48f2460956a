"""MSE and RMSE: ``sum(w * (y - p)^2) / sum(w)`` and its square root (0 with no weight). One
``MSEMetric`` reports both, as in TorchRec."""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

ERROR_SUM = "error_sum"
WEIGHTED_NUM_SAMPLES = "weighted_num_samples"


def compute_mse(error_sum: Tensor, weighted_num_samples: Tensor) -> Tensor:
    return ember.where(weighted_num_samples == 0.0, 0.0, error_sum / weighted_num_samples).double()


def compute_rmse(error_sum: Tensor, weighted_num_samples: Tensor) -> Tensor:
    return ember.sqrt(compute_mse(error_sum, weighted_num_samples))


def compute_error_sum(labels: Tensor, predictions: Tensor, weights: Tensor) -> Tensor:
    return (weights * ember.square(labels - predictions.double())).sum(-1)


def get_mse_states(labels: Tensor, predictions: Tensor, weights: Tensor) -> dict[str, Tensor]:
    return {ERROR_SUM: compute_error_sum(labels, predictions, weights), WEIGHTED_NUM_SAMPLES: weights.sum(-1)}


class MSEMetricComputation(RecMetricComputation):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (ERROR_SUM, WEIGHTED_NUM_SAMPLES):
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)

    def update(self, *, predictions: Tensor, labels: Tensor, weights: Tensor, **kwargs: Any) -> None:
        self._fold_states(get_mse_states(labels, predictions, weights), predictions.shape[-1])

    def _compute(self) -> list[MetricComputationReport]:
        lifetime = (self._state(ERROR_SUM), self._state(WEIGHTED_NUM_SAMPLES))
        window = (self.get_window_state(ERROR_SUM), self.get_window_state(WEIGHTED_NUM_SAMPLES))
        return [
            MetricComputationReport(MetricName.MSE, MetricPrefix.LIFETIME, compute_mse(*lifetime)),
            MetricComputationReport(MetricName.RMSE, MetricPrefix.LIFETIME, compute_rmse(*lifetime)),
            MetricComputationReport(MetricName.MSE, MetricPrefix.WINDOW, compute_mse(*window)),
            MetricComputationReport(MetricName.RMSE, MetricPrefix.WINDOW, compute_rmse(*window)),
        ]


class MSEMetric(RecMetric):
    _namespace = MetricNamespace.MSE
    _computation_class = MSEMetricComputation
