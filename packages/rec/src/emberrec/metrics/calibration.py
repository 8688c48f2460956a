"""Calibration: predicted over observed positives, ``sum(w * p) / sum(w * y)`` (0 when the
denominator is not positive)."""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

CALIBRATION_NUM = "calibration_num"
CALIBRATION_DENOM = "calibration_denom"


def compute_calibration(calibration_num: Tensor, calibration_denom: Tensor) -> Tensor:
    return ember.where(calibration_denom <= 0.0, 0.0, calibration_num / calibration_denom).double()


def get_calibration_states(labels: Tensor, predictions: Tensor, weights: Tensor) -> dict[str, Tensor]:
    return {CALIBRATION_NUM: (predictions * weights).sum(-1), CALIBRATION_DENOM: (labels * weights).sum(-1)}


class CalibrationMetricComputation(RecMetricComputation):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (CALIBRATION_NUM, CALIBRATION_DENOM):
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)

    def update(self, *, predictions: Tensor, labels: Tensor, weights: Tensor, **kwargs: Any) -> None:
        self._fold_states(get_calibration_states(labels, predictions, weights), predictions.shape[-1])

    def _compute(self) -> list[MetricComputationReport]:
        return [
            MetricComputationReport(
                MetricName.CALIBRATION,
                MetricPrefix.LIFETIME,
                compute_calibration(self._state(CALIBRATION_NUM), self._state(CALIBRATION_DENOM)),
            ),
            MetricComputationReport(
                MetricName.CALIBRATION,
                MetricPrefix.WINDOW,
                compute_calibration(self.get_window_state(CALIBRATION_NUM), self.get_window_state(CALIBRATION_DENOM)),
            ),
        ]


class CalibrationMetric(RecMetric):
    _namespace = MetricNamespace.CALIBRATION
    _computation_class = CalibrationMetricComputation
