"""CTR: the weighted fraction of positive labels, ``sum(w * y) / sum(w)`` (0 with no weight)."""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

CTR_NUM = "ctr_num"
CTR_DENOM = "ctr_denom"


def compute_ctr(ctr_num: Tensor, ctr_denom: Tensor) -> Tensor:
    return ember.where(ctr_denom == 0.0, 0.0, ctr_num / ctr_denom).double()


def get_ctr_states(labels: Tensor, predictions: Tensor, weights: Tensor) -> dict[str, Tensor]:
    return {CTR_NUM: (labels * weights).sum(-1), CTR_DENOM: weights.sum(-1)}


class CTRMetricComputation(RecMetricComputation):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (CTR_NUM, CTR_DENOM):
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)

    def update(self, *, predictions: Tensor, labels: Tensor, weights: Tensor, **kwargs: Any) -> None:
        self._fold_states(get_ctr_states(labels, predictions, weights), predictions.shape[-1])

    def _compute(self) -> list[MetricComputationReport]:
        return [
            MetricComputationReport(
                MetricName.CTR, MetricPrefix.LIFETIME, compute_ctr(self._state(CTR_NUM), self._state(CTR_DENOM))
            ),
            MetricComputationReport(
                MetricName.CTR,
                MetricPrefix.WINDOW,
                compute_ctr(self.get_window_state(CTR_NUM), self.get_window_state(CTR_DENOM)),
            ),
        ]


class CTRMetric(RecMetric):
    _namespace = MetricNamespace.CTR
    _computation_class = CTRMetricComputation
