"""Throughput: examples trained per second over all ranks, lifetime and over a time window."""

from __future__ import annotations

import logging
import math
import time
from collections import deque

import ember
import ember.nn as nn
from ember import Tensor
from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix, compose_metric_key

MAX_WINDOW_TS: int = 2 * 60 * 60  # 2 hours

logger: logging.Logger = logging.getLogger(__name__)


class ThroughputMetric(nn.Module):
    """Examples per second: every ``update()`` is one step of ``batch_size * world_size`` examples.

    The first ``warmup_steps`` steps are not timed. After them, lifetime throughput is the examples
    since warmup over the time since warmup, and window throughput the examples of the steps in the
    last ``window_seconds`` over their time. ``compute()`` always reports
    ``throughput-throughput|total_examples`` and, once a step after warmup has taken time, also
    ``throughput-throughput|lifetime_throughput`` and ``throughput-throughput|window_throughput``.

    ``state_dict()`` holds the example counts and the time after warmup; timing restarts (with a
    new warmup) after loading, since the time between the checkpoint and the restart is no step.

    Example::

        throughput = ThroughputMetric(batch_size=128, world_size=4, window_seconds=100, warmup_steps=100)
    """

    _namespace = MetricNamespace.THROUGHPUT
    _metric_name = MetricName.THROUGHPUT

    def __init__(self, *, batch_size: int, world_size: int, window_seconds: int, warmup_steps: int = 100) -> None:
        super().__init__()
        if window_seconds < 1:
            raise ValueError("window_seconds must be at least 1 to give window throughput the minimum time window")
        if warmup_steps < 1:
            raise ValueError("warmup_steps must be at least 1 to give throughput a reasonable begin time.")
        if window_seconds > MAX_WINDOW_TS:
            logger.warning(
                f"window_seconds is greater than {MAX_WINDOW_TS}, capping to {MAX_WINDOW_TS} to make sure "
                "window_qps is not staled"
            )
            window_seconds = MAX_WINDOW_TS
        self._batch_examples = batch_size * world_size
        self._window_seconds = window_seconds
        self._warmup_steps = warmup_steps
        self.register_buffer("total_examples", ember.tensor(0, dtype=ember.int64))
        self.register_buffer("warmup_examples", ember.tensor(0, dtype=ember.int64))
        self.register_buffer("time_lapse_after_warmup", ember.tensor(0, dtype=ember.float64))
        self._window_time_lapse_buffer: deque[float] = deque(maxlen=MAX_WINDOW_TS)
        self._window_time_lapse = 0.0
        self._previous_ts = 0.0
        self._steps = 0
        name = str(self._namespace)
        self._lifetime_throughput_key = compose_metric_key(self._namespace, name, self._metric_name, MetricPrefix.LIFETIME)
        self._window_throughput_key = compose_metric_key(self._namespace, name, self._metric_name, MetricPrefix.WINDOW)
        self._total_examples_key = compose_metric_key(self._namespace, name, MetricName.TOTAL_EXAMPLES)

    def _check_window(self) -> None:
        while self._window_time_lapse > self._window_seconds:
            self._window_time_lapse -= self._window_time_lapse_buffer.popleft()

    def update(self) -> None:
        ts = time.monotonic()
        self._steps += 1
        self.total_examples += self._batch_examples
        if self._steps <= self._warmup_steps:
            self.warmup_examples += self._batch_examples
            if self._steps == self._warmup_steps:
                self._previous_ts = ts
        else:
            time_lapse = ts - self._previous_ts
            self.time_lapse_after_warmup += time_lapse
            self._window_time_lapse += time_lapse
            self._window_time_lapse_buffer.append(time_lapse)
            self._check_window()
            self._previous_ts = ts

    def compute(self) -> dict[str, Tensor]:
        out = {self._total_examples_key: self.total_examples.clone()}
        lapse = float(self.time_lapse_after_warmup.item())
        if self._steps > self._warmup_steps and not math.isclose(lapse, 0):
            lifetime = float((self.total_examples - self.warmup_examples).item()) / lapse
            window = 0.0
            if not math.isclose(self._window_time_lapse, 0):
                window = len(self._window_time_lapse_buffer) * self._batch_examples / self._window_time_lapse
            if not math.isclose(lifetime, 0):
                out[self._lifetime_throughput_key] = ember.tensor(lifetime, dtype=ember.float64)
                out[self._window_throughput_key] = ember.tensor(window, dtype=ember.float64)
        return out
