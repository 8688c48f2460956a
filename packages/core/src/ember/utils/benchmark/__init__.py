"""ember.utils.benchmark (torch.utils.benchmark): timing a Python statement the way PyTorch's
Timer does, with Ember's thread count pinned while it runs, and Measurement summaries (median,
IQR) of the per-run times."""

from __future__ import annotations

import statistics
import timeit as _timeit

import ember

__all__ = ["Timer", "Measurement"]


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (NumPy's default method)."""
    if not sorted_values:
        return float("nan")
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _format_seconds(seconds: float) -> tuple[float, str]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return seconds / scale, unit
    return seconds / 1e-9, "ns"


class Measurement:
    """The result of timing: `raw_times[i]` seconds for `number_per_run` executions each;
    `times` are per execution."""

    def __init__(self, number_per_run: int, raw_times: list[float], task_spec: dict, metadata=None):
        if number_per_run <= 0:
            raise ValueError(f"Measurement: number_per_run must be positive, got {number_per_run}")
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata
        for field in ("stmt", "setup", "label", "sub_label", "description", "num_threads"):
            setattr(self, field, task_spec.get(field))

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return _quantile(sorted(self.times), 0.5)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times) if self.times else float("nan")

    @property
    def iqr(self) -> float:
        values = sorted(self.times)
        return _quantile(values, 0.75) - _quantile(values, 0.25)

    @property
    def has_warnings(self) -> bool:
        """Noisy (IQR over a tenth of the median) or too few measurements to judge."""
        return len(self.times) < 4 or self.iqr > 0.1 * self.median

    @property
    def title(self) -> str:
        parts = [p for p in (self.label, self.sub_label, self.description) if p]
        return ": ".join(parts) if parts else self.stmt

    @staticmethod
    def merge(measurements) -> list[Measurement]:
        """Measurements of the same task (same stmt, setup, labels and threads) joined into one."""
        groups: dict = {}
        for m in measurements:
            key = tuple(sorted((k, str(v)) for k, v in m.task_spec.items()))
            groups.setdefault(key, []).append(m)
        merged = []
        for group in groups.values():
            raw = [t * m.number_per_run for m in group for t in m.times]
            merged.append(Measurement(1, raw, group[0].task_spec, group[0].metadata))
        return merged

    def __repr__(self):
        median, unit = _format_seconds(self.median)
        scale = self.median / median if median else 1.0
        values = sorted(self.times)
        q1, q3 = _quantile(values, 0.25) / scale, _quantile(values, 0.75) / scale
        threads = f"{self.num_threads} thread{'s' if self.num_threads != 1 else ''}"
        lines = [f"<ember.utils.benchmark.Measurement object at {hex(id(self))}>", self.title]
        if self.title != self.stmt:
            lines.append(f"  {self.stmt}")
        if self.setup and self.setup != "pass":
            lines.append(f"  setup: {self.setup}")
        lines += [f"  Median: {median:.2f} {unit}", f"  IQR:    {self.iqr / scale:.2f} {unit} ({q1:.2f} to {q3:.2f})",
                  f"  {len(self.times)} measurement{'s' if len(self.times) != 1 else ''}, "
                  f"{self.number_per_run} runs per measurement, {threads}"]
        if self.has_warnings:
            lines.append("  WARNING: Interquartile range is {:.1f}% of the median measurement.".format(
                100 * self.iqr / self.median if self.median else float("inf")))
        return "\n".join(lines)


class Timer:
    """Times `stmt` after running `setup` once, in a namespace copied from `globals`, with
    ember.set_num_threads(num_threads) in force while timing (restored afterwards)."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=_timeit.default_timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1, language="python"):
        if language not in ("python", "py"):
            raise ValueError(f"Timer: only Python statements can be timed, got language={language!r}")
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise TypeError("Timer: stmt and setup must be strings of Python code")
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"Timer: num_threads must be a positive integer, got {num_threads!r}")
        namespace = dict(globals or {})
        if global_setup:
            exec(global_setup, namespace)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=namespace)
        self._task_spec = dict(stmt=stmt, setup=setup, global_setup=global_setup, label=label, sub_label=sub_label,
                               description=description, env=env, num_threads=num_threads)
        self._num_threads = num_threads
        self._clock = timer

    def _run(self, number: int) -> float:
        previous = ember.get_num_threads()
        ember.set_num_threads(self._num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            ember.set_num_threads(previous)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One measurement of `number` executions (after one untimed warm-up execution)."""
        if number < 1:
            raise ValueError(f"timeit: number must be positive, got {number}")
        self._run(1)
        return Measurement(number, [self._run(number)], self._task_spec)

    def _block_size(self, min_block_seconds: float) -> int:
        """Executions per block: doubled from 1 until a block lasts min_block_seconds."""
        number = 1
        while self._run(number) < min_block_seconds:
            number *= 2
            if number > 1 << 40:
                break
        return number

    def _measure(self, min_run_time: float, max_run_time: float | None, stop, callback) -> Measurement:
        number = self._block_size(min_run_time / 1000 if min_run_time > 0 else 1e-4)
        times: list[float] = []
        spent = 0.0
        while True:
            elapsed = self._run(number)
            times.append(elapsed)
            spent += elapsed
            if callback is not None:
                callback(number, elapsed)
            if spent >= min_run_time and stop(times):
                break
            if max_run_time is not None and spent >= max_run_time:
                break
        return Measurement(number, times, self._task_spec)

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of executions, each long enough for the timer's resolution, until
        min_run_time seconds have been spent; every block is one measurement."""
        return self._measure(min_run_time, None, lambda times: True, callback)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback=None) -> Measurement:
        """Like blocked_autorange, but goes on (up to max_run_time) until the IQR is within
        `threshold` of the median."""
        def settled(times):
            if len(times) < 4:
                return False
            m = Measurement(1, times, self._task_spec)
            return m.iqr / m.median <= threshold if m.median > 0 else True
        return self._measure(min_run_time, max_run_time, settled, callback)

    def autorange(self, callback=None) -> Measurement:
        """The standard library's rule: the smallest 1, 2, 5, 10, ... executions taking at least
        0.2 seconds, measured once."""
        number, elapsed = self._timer.autorange(callback)
        return Measurement(number, [elapsed], self._task_spec)
