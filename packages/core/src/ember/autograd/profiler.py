"""torch.autograd.profiler: the older profiling API, over the op recorder of ember.profiler.

`profile` records the op calls between __enter__ and __exit__ (no schedule, no steps) and then
answers from `function_events`, an EventList. Ember records CPU op calls only: asking for CUDA
events warns and records the CPU ones, as PyTorch does on a machine without a GPU."""

from __future__ import annotations

import warnings

from .. import profiler as _profiler
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "kineto_available"]


def kineto_available() -> bool:
    """Whether the Kineto tracing library is built in: never in Ember, whose recorder is its own."""
    return False


class profile:
    """Records op calls while the context is open; `enabled=False` makes it a no-op context.

        with ember.autograd.profiler.profile(record_shapes=True) as prof:
            model(x)
        print(prof.key_averages().table(sort_by="self_cpu_time_total"))
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self.function_events: EventList | None = None
        self.entered = False
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.use_cpu = use_cpu
        if not enabled:
            return
        if not use_cpu:
            # PyTorch records device-only events through Kineto; Ember has neither.
            raise ValueError("profile(use_cpu=False) records device events only, and Ember has no device to "
                             "record")
        if use_cuda or (use_device is not None and use_device != "cpu"):
            device = "CUDA" if use_cuda else use_device
            warnings.warn(f"{device} is not available, disabling {device} profiling", stacklevel=2)
        self._recorder = _profiler.profile(record_shapes=record_shapes, profile_memory=profile_memory,
                                           with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._recorder.start()
        return self

    def __exit__(self, *exc) -> bool:
        if not self.enabled:
            return False
        self._recorder.stop()
        self.function_events = self._recorder.events()
        return False

    def __repr__(self) -> str:
        return "<unfinished torch.autograd.profile>" if self.function_events is None else repr(self.function_events)

    def __str__(self) -> str:
        return "<unfinished torch.autograd.profile>" if self.function_events is None else str(self.function_events)

    def _finished(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header=None,
              top_level_events_only: bool = False) -> str:
        return self._finished().table(sort_by=sort_by, row_limit=row_limit,
                                      max_name_column_width=max_name_column_width, header=header,
                                      top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        self._finished().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        events = self._finished()
        if not self.with_stack:
            raise ValueError("export_stacks needs profile(with_stack=True)")
        _profiler._export_stacks(events, path, metric)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        self._finished()
        return self._recorder.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        return self._finished().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The summed self time of every recorded event, in microseconds."""
        return self._finished().self_cpu_time_total
