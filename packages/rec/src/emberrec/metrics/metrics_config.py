"""Configuration of RecMetrics: tasks, compute modes and the ``MetricsConfig`` that
``generate_metric_module`` reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from emberrec.metrics.metrics_namespace import StrValueMixin


class RecMetricEnumBase(StrValueMixin, Enum):
    pass


class RecMetricEnum(RecMetricEnumBase):
    """The metrics ``generate_metric_module`` can build (MSE reports RMSE as well)."""

    NE = "ne"
    CTR = "ctr"
    AUC = "auc"
    CALIBRATION = "calibration"
    MSE = "mse"
    ACCURACY = "accuracy"


@dataclass(unsafe_hash=True, eq=True)
class RecTaskInfo:
    """One model task: its name in metric keys and the ``model_out`` keys of its tensors."""

    name: str = "DefaultTask"
    label_name: str = "label"
    prediction_name: str = "prediction"
    weight_name: str = "weight"


class RecComputeMode(Enum):
    """How a RecMetric holds several tasks.

    FUSED_TASKS_COMPUTATION keeps one state of shape ``(n_tasks, ...)`` and takes predictions for
    all tasks at once (a tensor ``(n_tasks, batch)`` or a dict with every task); UNFUSED keeps one
    computation per task and takes a dict keyed by task name.
    """

    FUSED_TASKS_COMPUTATION = 1
    UNFUSED_TASKS_COMPUTATION = 2


_DEFAULT_WINDOW_SIZE = 10_000_000
_DEFAULT_THROUGHPUT_WINDOW_SECONDS = 100


@dataclass
class RecMetricDef:
    """One RecMetric of a ``MetricsConfig``.

    Args:
        rec_tasks: the tasks of this metric; or
        rec_task_indices: indices into ``MetricsConfig.rec_tasks`` (give exactly one of the two).
        window_size: the global window in examples; each rank keeps ``ceil(window_size /
            world_size)``, which must be at least the batch size.
        arguments: extra keyword arguments for the metric (e.g. ``{"threshold": 0.7}`` for accuracy).
    """

    rec_tasks: list[RecTaskInfo] = field(default_factory=list)
    rec_task_indices: list[int] = field(default_factory=list)
    window_size: int = _DEFAULT_WINDOW_SIZE
    arguments: dict[str, Any] | None = None


class StateMetricEnum(StrValueMixin, Enum):
    OPTIMIZERS = "optimizers"
    MODEL_CONFIGURATOR = "model_configurator"


@dataclass
class ThroughputDef:
    window_size: int = _DEFAULT_THROUGHPUT_WINDOW_SECONDS


@dataclass
class MetricsConfig:
    """Everything ``generate_metric_module`` needs; the fields mirror ``RecMetricModule``'s
    arguments (see its docstring). ``fused_update_limit`` > 1 makes each RecMetric buffer that many
    ``update()`` calls and apply them at once."""

    rec_tasks: list[RecTaskInfo] = field(default_factory=list)
    rec_metrics: dict[RecMetricEnum, RecMetricDef] = field(default_factory=dict)
    throughput_metric: ThroughputDef | None = None
    rec_compute_mode: RecComputeMode = RecComputeMode.UNFUSED_TASKS_COMPUTATION
    fused_update_limit: int = 0
    state_metrics: list[StateMetricEnum] = field(default_factory=list)
    compute_interval_steps: int = 100
    min_compute_interval: float = 0.0
    max_compute_interval: float = float("inf")
    compute_on_all_ranks: bool = False
    should_validate_update: bool = False


DefaultTaskInfo = RecTaskInfo(name="DefaultTask", label_name="label", prediction_name="prediction", weight_name="weight")

DefaultMetricsConfig = MetricsConfig(
    rec_tasks=[DefaultTaskInfo],
    rec_metrics={RecMetricEnum.NE: RecMetricDef(rec_tasks=[DefaultTaskInfo], window_size=_DEFAULT_WINDOW_SIZE)},
    throughput_metric=ThroughputDef(),
    state_metrics=[],
)

# Every field spelled out so that nothing relies on a default by accident.
EmptyMetricsConfig = MetricsConfig(rec_tasks=[], rec_metrics={}, throughput_metric=None, state_metrics=[])
