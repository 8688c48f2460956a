"""``RecMetricModule``: the RecMetrics, throughput and state metrics of a trainer, updated from the
model output each step and computed every ``compute_interval_steps``; ``generate_metric_module``
builds one from a ``MetricsConfig``."""

from __future__ import annotations

import abc
import logging
import time
from typing import Any

import ember
import ember.nn as nn
from ember import Tensor
from emberrec.metrics.accuracy import AccuracyMetric
from emberrec.metrics.auc import AUCMetric
from emberrec.metrics.calibration import CalibrationMetric
from emberrec.metrics.ctr import CTRMetric
from emberrec.metrics.metrics_config import (
    MetricsConfig,
    RecMetricEnum,
    RecMetricEnumBase,
    RecTaskInfo,
    StateMetricEnum,
)
from emberrec.metrics.metrics_namespace import (
    MetricNamespace,
    compose_customized_metric_key,
    compose_metric_namespace,
)
from emberrec.metrics.model_utils import parse_task_model_outputs
from emberrec.metrics.mse import MSEMetric
from emberrec.metrics.ne import NEMetric
from emberrec.metrics.rec_metric import RecMetric, RecMetricList, _distributed
from emberrec.metrics.throughput import ThroughputMetric

logger: logging.Logger = logging.getLogger(__name__)

REC_METRICS_MAPPING: dict[RecMetricEnumBase, type[RecMetric]] = {
    RecMetricEnum.NE: NEMetric,
    RecMetricEnum.CTR: CTRMetric,
    RecMetricEnum.CALIBRATION: CalibrationMetric,
    RecMetricEnum.AUC: AUCMetric,
    RecMetricEnum.MSE: MSEMetric,
    RecMetricEnum.ACCURACY: AccuracyMetric,
}

# Label used for emitting model metrics to the corresponding trainer publishers.
MODEL_METRIC_LABEL: str = "model"

MEMORY_AVG_WARNING_PERCENTAGE = 20
MEMORY_AVG_WARNING_WARMUP = 100

MetricValue = Tensor | float


class StateMetric(abc.ABC):
    """Metrics a component (an optimizer, say) reports about its own state."""

    @abc.abstractmethod
    def get_metrics(self) -> dict[str, MetricValue]:
        pass


class RecMetricModule(nn.Module):
    r"""A trainer's metrics: RecMetrics computed from the model output (labels, predictions,
    weights), a time-based ``ThroughputMetric``, and ``StateMetric``\ s of model components.

    Args:
        batch_size: the batch size of this trainer.
        world_size: the number of trainers.
        rec_tasks: the tasks; ``update(model_out)`` reads each task's ``label_name``,
            ``prediction_name`` and ``weight_name`` from ``model_out``.
        rec_metrics: the RecMetrics.
        throughput_metric: the throughput metric, updated once per ``update()``.
        state_metrics: {namespace: StateMetric}.
        compute_interval_steps: ``should_compute()`` is true every this many batches.
        min_compute_interval, max_compute_interval: seconds; when either is set, the second
            ``compute()`` re-derives ``compute_interval_steps`` from the measured step time so that
            computes land inside the interval.
        memory_usage_limit_mb: ``compute()`` logs a warning when the metric states exceed it.

    ``state_dict()`` holds every metric state (lifetime, window and AUC buffers, throughput counts);
    loading it into a module built the same way gives the same ``compute()``.
    """

    def __init__(
        self,
        batch_size: int,
        world_size: int,
        rec_tasks: list[RecTaskInfo] | None = None,
        rec_metrics: RecMetricList | None = None,
        throughput_metric: ThroughputMetric | None = None,
        state_metrics: dict[str, StateMetric] | None = None,
        compute_interval_steps: int = 100,
        min_compute_interval: float = 0.0,
        max_compute_interval: float = float("inf"),
        memory_usage_limit_mb: float = 512,
    ) -> None:
        super().__init__()
        if compute_interval_steps < 1:
            raise ValueError(f"compute_interval_steps must be at least 1, got {compute_interval_steps}")
        self.rec_tasks = rec_tasks if rec_tasks else []
        self.rec_metrics = rec_metrics if rec_metrics else RecMetricList([])
        self.throughput_metric = throughput_metric
        self.state_metrics = state_metrics if state_metrics else {}
        self.trained_batches: int = 0
        self.batch_size = batch_size
        self.world_size = world_size
        self.memory_usage_limit_mb = memory_usage_limit_mb
        self.memory_usage_mb_avg = 0.0
        self.oom_count = 0
        self.compute_count = 0
        self.compute_interval_steps = compute_interval_steps
        self.min_compute_interval = min_compute_interval
        self.max_compute_interval = max_compute_interval
        if self.min_compute_interval == 0.0 and self.max_compute_interval == float("inf"):
            self.min_compute_interval = -1.0
            self.max_compute_interval = -1.0
        else:
            if self.max_compute_interval <= 0.0:
                raise ValueError("Max compute interval should not be smaller than 0.0.")
            if self.min_compute_interval < 0.0:
                raise ValueError("Min compute interval should not be smaller than 0.0.")
        self.register_buffer("_compute_interval_steps", ember.zeros(1, dtype=ember.int32), persistent=False)
        self.last_compute_time = -1.0

    def get_memory_usage(self) -> int:
        """Bytes held by the RecMetrics' state tensors."""
        total: dict[int, int] = {}
        for metric in self.rec_metrics.rec_metrics:
            total.update({id(t): size for t, size in metric.get_memory_usage().items()})
        return sum(total.values())

    def check_memory_usage(self, compute_count: int) -> None:
        memory_usage_mb = self.get_memory_usage() / (10**6)
        if memory_usage_mb > self.memory_usage_limit_mb:
            self.oom_count += 1
            logger.warning(
                f"MetricModule is using {memory_usage_mb}MB. This is larger than the limit "
                f"{self.memory_usage_limit_mb}MB. This is the {self.oom_count}th OOM."
            )
        if (
            compute_count > MEMORY_AVG_WARNING_WARMUP
            and memory_usage_mb > self.memory_usage_mb_avg * ((100 + MEMORY_AVG_WARNING_PERCENTAGE) / 100)
        ):
            logger.warning(
                f"MetricsModule is using more than {MEMORY_AVG_WARNING_PERCENTAGE}% of the average memory "
                f"usage. Current usage: {memory_usage_mb}MB."
            )
        self.memory_usage_mb_avg = (self.memory_usage_mb_avg * (compute_count - 1) + memory_usage_mb) / compute_count

    def _update_rec_metrics(self, model_out: dict[str, Tensor], **kwargs: Any) -> None:
        """Parse ``model_out`` per task and update the RecMetrics; override for other formats."""
        if self.rec_metrics and self.rec_tasks:
            labels, predictions, weights, required_inputs = parse_task_model_outputs(
                self.rec_tasks, model_out, self.get_required_inputs()
            )
            if required_inputs:
                kwargs["required_inputs"] = required_inputs
            self.rec_metrics.update(predictions=predictions, labels=labels, weights=weights, **kwargs)

    def update(self, model_out: dict[str, Tensor], **kwargs: Any) -> None:
        """Fold one batch's model output into the metrics; call it after each forward."""
        self._update_rec_metrics(model_out, **kwargs)
        if self.throughput_metric:
            self.throughput_metric.update()
        self.trained_batches += 1

    def _adjust_compute_interval(self) -> None:
        """Derive compute_interval_steps from the time between the first two compute() calls."""
        if self.last_compute_time > 0 and self.min_compute_interval >= 0:
            now = time.time()
            interval = now - self.last_compute_time
            if not (self.max_compute_interval >= interval >= self.min_compute_interval):
                per_step_time = interval / self.compute_interval_steps
                if self.max_compute_interval == float("inf"):
                    # Step times vary: aim a second past the minimum.
                    steps = (self.min_compute_interval + 1.0) / per_step_time
                elif self.min_compute_interval == 0.0:
                    offset = 0.0 if self.max_compute_interval <= 1.0 else 1.0
                    steps = (self.max_compute_interval - offset) / per_step_time
                else:
                    steps = (self.max_compute_interval + self.min_compute_interval) / 2 / per_step_time
                self._compute_interval_steps[0] = max(1, int(steps))
                dist = _distributed()
                if dist is not None and self.world_size > 1:
                    # Every rank must compute at the same step.
                    dist.all_reduce(self._compute_interval_steps, op=dist.ReduceOp.MAX)
                self.compute_interval_steps = int(self._compute_interval_steps.item())
            self.min_compute_interval = -1.0
            self.max_compute_interval = -1.0
        self.last_compute_time = time.time()

    def should_compute(self) -> bool:
        return self.trained_batches % self.compute_interval_steps == 0

    def compute(self) -> dict[str, MetricValue]:
        """The global metric values; every rank must call it (the RecMetrics reduce across ranks)."""
        self.compute_count += 1
        self.check_memory_usage(self.compute_count)
        out: dict[str, MetricValue] = {}
        if self.rec_metrics:
            self._adjust_compute_interval()
            out.update(self.rec_metrics.compute())
        if self.throughput_metric:
            out.update(self.throughput_metric.compute())
        for namespace, component in self.state_metrics.items():
            out.update(
                {
                    compose_customized_metric_key(namespace, name): value
                    for name, value in component.get_metrics().items()
                }
            )
        return out

    def local_compute(self) -> dict[str, MetricValue]:
        """This rank's RecMetric values alone (for debugging)."""
        return dict(self.rec_metrics.local_compute()) if self.rec_metrics else {}

    def sync(self) -> None:
        self.rec_metrics.sync()

    def unsync(self) -> None:
        self.rec_metrics.unsync()

    def reset(self) -> None:
        self.rec_metrics.reset()

    def get_required_inputs(self) -> list[str] | None:
        return self.rec_metrics.get_required_inputs()


def _generate_rec_metrics(
    metrics_config: MetricsConfig, world_size: int, my_rank: int, batch_size: int, process_group: Any = None
) -> RecMetricList:
    rec_metrics = []
    for metric_enum, metric_def in metrics_config.rec_metrics.items():
        if metric_enum not in REC_METRICS_MAPPING:
            raise ValueError(f"unknown RecMetric {metric_enum!r}; emberrec has {sorted(map(str, REC_METRICS_MAPPING))}")
        kwargs: dict[str, Any] = dict(metric_def.arguments or {})
        if metric_def.rec_tasks and metric_def.rec_task_indices:
            raise ValueError("Only one of RecMetricDef.rec_tasks and RecMetricDef.rec_task_indices should be specified.")
        if metric_def.rec_tasks:
            rec_tasks = metric_def.rec_tasks
        elif metric_def.rec_task_indices:
            rec_tasks = [metrics_config.rec_tasks[idx] for idx in metric_def.rec_task_indices]
        else:
            raise ValueError(
                "One of RecMetricDef.rec_tasks and RecMetricDef.rec_task_indices should be a non-empty list"
            )
        rec_metrics.append(
            REC_METRICS_MAPPING[metric_enum](
                world_size=world_size,
                my_rank=my_rank,
                batch_size=batch_size,
                tasks=rec_tasks,
                compute_mode=metrics_config.rec_compute_mode,
                window_size=metric_def.window_size,
                fused_update_limit=metrics_config.fused_update_limit,
                compute_on_all_ranks=metrics_config.compute_on_all_ranks,
                should_validate_update=metrics_config.should_validate_update,
                process_group=process_group,
                **kwargs,
            )
        )
    return RecMetricList(rec_metrics)


STATE_METRICS_NAMESPACE_MAPPING: dict[StateMetricEnum, MetricNamespace] = {
    StateMetricEnum.OPTIMIZERS: MetricNamespace.OPTIMIZERS,
    StateMetricEnum.MODEL_CONFIGURATOR: MetricNamespace.MODEL_CONFIGURATOR,
}


def _generate_state_metrics(
    metrics_config: MetricsConfig, state_metrics_mapping: dict[StateMetricEnum, StateMetric]
) -> dict[str, StateMetric]:
    state_metrics: dict[str, StateMetric] = {}
    for metric_enum in metrics_config.state_metrics:
        namespace = STATE_METRICS_NAMESPACE_MAPPING.get(metric_enum)
        if namespace is None:
            raise ValueError(f"Unknown StateMetrics {metric_enum}")
        if metric_enum not in state_metrics_mapping:
            raise ValueError(f"state_metrics_mapping has no StateMetric for {metric_enum}, which the config enables")
        state_metrics[compose_metric_namespace(namespace, str(namespace))] = state_metrics_mapping[metric_enum]
    return state_metrics


def generate_metric_module(
    metric_class: type[RecMetricModule],
    metrics_config: MetricsConfig,
    batch_size: int,
    world_size: int,
    my_rank: int,
    state_metrics_mapping: dict[StateMetricEnum, StateMetric],
    device: Any,
    process_group: Any = None,
) -> RecMetricModule:
    """Build a ``metric_class`` (usually ``RecMetricModule``) from ``metrics_config`` on ``device``."""
    rec_metrics = _generate_rec_metrics(metrics_config, world_size, my_rank, batch_size, process_group)
    throughput_metric = None
    if metrics_config.throughput_metric:
        throughput_metric = ThroughputMetric(
            batch_size=batch_size, world_size=world_size, window_seconds=metrics_config.throughput_metric.window_size
        )
    metrics = metric_class(
        batch_size=batch_size,
        world_size=world_size,
        rec_tasks=metrics_config.rec_tasks,
        rec_metrics=rec_metrics,
        throughput_metric=throughput_metric,
        state_metrics=_generate_state_metrics(metrics_config, state_metrics_mapping),
        compute_interval_steps=metrics_config.compute_interval_steps,
        min_compute_interval=metrics_config.min_compute_interval,
        max_compute_interval=metrics_config.max_compute_interval,
    )
    metrics.to(device)
    return metrics
