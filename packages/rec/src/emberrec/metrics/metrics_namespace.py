"""Metric names, namespaces and the keys RecMetrics report under.

A key reads ``f"{namespace}-{task_name}|{prefix}{metric_name}"``, for example
``ne-DefaultTask|window_ne``: the namespace names the metric class, the task is user defined, the
prefix says ``lifetime_`` or ``window_`` (or nothing, as for ``total_examples``).
"""

from __future__ import annotations

from enum import Enum


class StrValueMixin:
    def __str__(self) -> str:
        return self.value  # type: ignore[attr-defined]


class MetricNameBase(StrValueMixin, Enum):
    pass


class MetricName(MetricNameBase):
    DEFAULT = ""

    NE = "ne"
    LOG_LOSS = "logloss"
    THROUGHPUT = "throughput"
    TOTAL_EXAMPLES = "total_examples"
    CTR = "ctr"
    CALIBRATION = "calibration"
    MSE = "mse"
    RMSE = "rmse"
    AUC = "auc"
    ACCURACY = "accuracy"


class MetricNamespaceBase(StrValueMixin, Enum):
    pass


class MetricNamespace(MetricNamespaceBase):
    DEFAULT = ""

    NE = "ne"
    THROUGHPUT = "throughput"
    CTR = "ctr"
    CALIBRATION = "calibration"
    MSE = "mse"
    AUC = "auc"
    ACCURACY = "accuracy"

    OPTIMIZERS = "optimizers"
    MODEL_CONFIGURATOR = "model_configurator"


class MetricPrefix(StrValueMixin, Enum):
    DEFAULT = ""
    LIFETIME = "lifetime_"
    WINDOW = "window_"


def task_wildcard_metrics_pattern(
    namespace: MetricNamespaceBase,
    metric_name: MetricNameBase,
    metric_prefix: MetricPrefix = MetricPrefix.DEFAULT,
) -> str:
    """A regular expression matching one metric's key for every task."""
    return rf"{namespace}-.+\|{metric_prefix}{metric_name}"


def compose_metric_namespace(namespace: MetricNamespaceBase, task_name: str) -> str:
    return f"{namespace}-{task_name}"


def compose_customized_metric_key(namespace: str, metric_name: str, description: str | None = None) -> str:
    """The key from free-form parts; state metrics, whose names are not known here, use it."""
    return f"{namespace}|{metric_name}{description or ''}"


def compose_metric_key(
    namespace: MetricNamespaceBase,
    task_name: str,
    metric_name: MetricNameBase,
    metric_prefix: MetricPrefix = MetricPrefix.DEFAULT,
    description: str | None = None,
) -> str:
    return compose_customized_metric_key(
        compose_metric_namespace(namespace, task_name), f"{metric_prefix}{metric_name}", description
    )
