"""ember.profiler (torch.profiler): which ops ran, for how long, on what shapes.

While a `profile` records, libember stamps every op call (and every `record_function` scope)
with its start, end, nesting depth and thread, and on request its input shapes, the net CPU
memory it allocated and the Python stack that called it. `schedule` decides per `step()` whether
to record; `key_averages().table()` summarises and `export_chrome_trace` writes a trace that
chrome://tracing and Perfetto open."""

from __future__ import annotations

import enum
import functools
import json
import threading
import warnings

from .. import _C

__all__ = ["ProfilerActivity", "ProfilerAction", "schedule", "profile", "record_function", "FunctionEvent",
           "FunctionEventAvg", "EventList", "tensorboard_trace_handler", "supported_activities", "kineto_available"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


def supported_activities() -> set:
    """The activities this profiler can record: the CPU's (the ops and record_function spans)."""
    return {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """Whether PyTorch's Kineto tracer is built in: no, Ember's profiler is its own."""
    return False


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0):
    """The per-step plan of a profile: after skip_first steps, cycles of `wait` idle steps,
    `warmup` steps whose events are thrown away and `active` recorded steps, the last of which
    hands the trace to on_trace_ready; `repeat` cycles (0: until the profile ends)."""
    for name, value, least in (("wait", wait, 0), ("warmup", warmup, 0), ("active", active, 1),
                               ("repeat", repeat, 0), ("skip_first", skip_first, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"schedule: {name} must be an integer >= {least}, got {value!r}")
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat and step // cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if phase == cycle - 1 else ProfilerAction.RECORD

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class FunctionEvent:
    """One recorded op call or user scope. Times are in microseconds, as in PyTorch."""

    def __init__(self, id, name, start_ns, end_ns, thread, depth, user_scope, input_shapes, cpu_memory_usage,
                 stack):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.depth = depth
        self.is_user_annotation = user_scope
        self.input_shapes = [list(s) for s in input_shapes]
        self.cpu_memory_usage = cpu_memory_usage
        self.stack = list(stack)
        self.time_range = (start_ns / 1000.0, end_ns / 1000.0)
        self.cpu_parent = None
        self.cpu_children = []
        self.count = 1

    @property
    def cpu_time_total(self) -> float:
        return self.time_range[1] - self.time_range[0]

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us "
                f"self_cpu_time={self.self_cpu_time_total:.3f}us thread={self.thread} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (one name, or one name and input shapes) added together."""

    def __init__(self, key, input_shapes=None, stack=None):
        self.key = key
        self.input_shapes = input_shapes
        self.stack = stack or []
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.is_user_annotation = False

    def add(self, event: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Adds one event, or another average with all its calls."""
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        self.is_user_annotation = event.is_user_annotation
        return self

    __iadd__ = add

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us count={self.count} input_shapes={self.input_shapes}>")


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "cpu_memory_usage", "self_cpu_memory_usage",
              "count")


def _format_time(us: float) -> str:
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} b"


def _percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole > 0 else "0.00%"


class EventList(list):
    """A list of FunctionEvents (or their averages) that can summarise itself."""

    def __init__(self, events=(), profile_memory=False, with_shapes=False):
        super().__init__(events)
        self._profile_memory = profile_memory
        self._with_shapes = with_shapes

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def __str__(self) -> str:
        return self.table()

    def total_average(self) -> FunctionEventAvg:
        """All events added into one average, keyed "Total"."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        groups: dict = {}
        for e in self:
            key = (e.name,)
            if group_by_input_shape:
                key += (str(e.input_shapes),)
            if group_by_stack_n:
                key += tuple(e.stack[:group_by_stack_n])
            if key not in groups:
                groups[key] = FunctionEventAvg(e.name, e.input_shapes if group_by_input_shape else None,
                                               e.stack[:group_by_stack_n] if group_by_stack_n else None)
            groups[key].add(e)
        return EventList(groups.values(), self._profile_memory, group_by_input_shape)

    def table(self, sort_by=None, row_limit: int = 100, max_name_column_width: int = 55, header=None,
              top_level_events_only: bool = False) -> str:
        """A text table, one row per entry: self and total CPU time with their share of the whole,
        the average, memory (when profiled), the call count and the shapes (when grouped by them)."""
        if sort_by is not None and sort_by not in _SORT_KEYS:
            raise ValueError(f"table: sort_by must be one of {_SORT_KEYS}, got {sort_by!r}")
        rows = [e for e in self if not top_level_events_only or getattr(e, "cpu_parent", None) is None]
        if sort_by is not None:
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total = self.self_cpu_time_total
        columns = [("Name", lambda e: e.key[:max_name_column_width]),
                   ("Self CPU %", lambda e: _percent(e.self_cpu_time_total, total)),
                   ("Self CPU", lambda e: _format_time(e.self_cpu_time_total)),
                   ("CPU total %", lambda e: _percent(e.cpu_time_total, total)),
                   ("CPU total", lambda e: _format_time(e.cpu_time_total)),
                   ("CPU time avg", lambda e: _format_time(e.cpu_time_total / max(e.count, 1)))]
        if self._profile_memory:
            columns += [("CPU Mem", lambda e: _format_memory(e.cpu_memory_usage)),
                        ("Self CPU Mem", lambda e: _format_memory(e.self_cpu_memory_usage))]
        columns.append(("# of Calls", lambda e: str(e.count)))
        if self._with_shapes:
            columns.append(("Input Shapes", lambda e: str(e.input_shapes)))
        cells = [[fn(e) for _, fn in columns] for e in rows]
        widths = [max([len(title)] + [len(r[i]) for r in cells]) for i, (title, _) in enumerate(columns)]
        rule = "  ".join("-" * w for w in widths)
        line = lambda values: "  ".join(v.ljust(w) if i == 0 else v.rjust(w)  # noqa: E731
                                        for i, (v, w) in enumerate(zip(values, widths, strict=True)))
        out = ([header] if header else []) + [rule, line([t for t, _ in columns]), rule]
        out += [line(r) for r in cells]
        out += [rule, f"Self CPU time total: {_format_time(total)}", ""]
        return "\n".join(out)

    def export_chrome_trace(self, path: str) -> None:
        """The events as a Chrome trace ("X" complete events, microsecond timestamps)."""
        trace = []
        for e in self:
            args = {}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if e.stack:
                args["Call stack"] = ";".join(e.stack)
            trace.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "name": e.name,
                          "pid": 0, "tid": e.thread, "ts": e.time_range[0], "dur": e.cpu_time_total, "args": args})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


_STACK_METRICS = ("self_cpu_time_total",)


def _export_stacks(events, path: str, metric: str) -> None:
    """One line per event with a recorded Python stack and a positive metric: the frames outermost
    first, joined by ";", then the value in whole microseconds (the folded format flamegraph.pl and
    speedscope read). Ember records CPU time only, so the device metrics are not offered."""
    if metric not in _STACK_METRICS:
        raise ValueError(f"metric should be one of: {list(_STACK_METRICS)}")
    clean = str.maketrans(" ;\t\n", "____")  # the separators of the folded format
    with open(path, "w") as f:
        for e in events:
            value = int(getattr(e, metric))
            if e.stack and value > 0:
                f.write(";".join(frame.translate(clean) for frame in reversed(e.stack)) + f" {value}\n")


def _build_events(raw: list, stop_ns: int, profile_memory: bool, with_shapes: bool) -> EventList:
    events = [FunctionEvent(i, name, start, end if end >= 0 else stop_ns, thread, depth, user, shapes, nbytes,
                            stack)
              for i, (name, start, end, thread, depth, user, shapes, nbytes, stack) in enumerate(raw)]
    # Parents: on each thread, the innermost event still open when an event starts.
    open_events: dict = {}
    for e in sorted(events, key=lambda e: (e.thread, e.time_range[0], e.depth)):
        stack = open_events.setdefault(e.thread, [])
        while stack and stack[-1].depth >= e.depth:
            stack.pop()
        if stack:
            e.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(e)
        stack.append(e)
    return EventList(events, profile_memory, with_shapes)


_session_lock = threading.Lock()


class profile:
    """Records op calls between __enter__ and __exit__ (or start()/stop()), following `schedule`
    across step() calls when one is given."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, acc_events=False, use_cuda=None):
        activities = set(activities) if activities is not None else {ProfilerActivity.CPU}
        unknown = [a for a in activities if not isinstance(a, ProfilerActivity)]
        if unknown:
            raise TypeError(f"profile: activities must be ProfilerActivity members, got {unknown}")
        if ProfilerActivity.CUDA in activities or use_cuda:
            warnings.warn("ember.profiler records CPU op calls only; the CUDA activity is ignored", stacklevel=2)
        if with_flops or with_modules:
            warnings.warn("ember.profiler does not count flops or attribute ops to modules; "
                          "with_flops/with_modules are ignored", stacklevel=2)
        self.activities = activities
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.acc_events = acc_events
        self.step_num = 0
        self._action = ProfilerAction.NONE
        self._recording = False
        self._events = EventList((), profile_memory, record_shapes)

    # -- recording on and off --------------------------------------------------------------------
    def _begin(self) -> None:
        _C._profiler_start(self.record_shapes, self.profile_memory, self.with_stack)
        self._recording = True

    def _end(self, keep: bool) -> None:
        stop_ns = _C._profiler_now_ns()
        raw = _C._profiler_stop()
        self._recording = False
        if keep:
            fresh = _build_events(raw, stop_ns, self.profile_memory, self.record_shapes)
            if self.acc_events:
                fresh = EventList(list(self._events) + list(fresh), self.profile_memory, self.record_shapes)
            self._events = fresh

    def _save(self) -> None:
        self._end(keep=True)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _enter_action(self, new: ProfilerAction) -> None:
        """Moves from the current action to `new`, at a step boundary."""
        old, self._action = self._action, new
        if old == ProfilerAction.RECORD_AND_SAVE:
            self._save()
        elif old == ProfilerAction.RECORD and new in (ProfilerAction.NONE, ProfilerAction.WARMUP):
            self._save()  # an active span cut short by the schedule still delivers its trace
        elif old == ProfilerAction.WARMUP and new != ProfilerAction.WARMUP:
            self._end(keep=False)  # warm-up events are thrown away
        if new != ProfilerAction.NONE and not self._recording:
            self._begin()

    def start(self) -> None:
        if not _session_lock.acquire(blocking=False):
            raise RuntimeError("profile: another profile is already recording")
        try:
            self._enter_action(self.schedule(self.step_num))
        except BaseException:
            _session_lock.release()
            raise

    def stop(self) -> None:
        if self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._save()
        elif self._recording:
            self._end(keep=False)
        self._action = ProfilerAction.NONE
        _session_lock.release()

    def step(self) -> None:
        """Marks the end of a training step: the schedule's action for the next step takes over."""
        self.step_num += 1
        self._enter_action(self.schedule(self.step_num))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- results ---------------------------------------------------------------------------------
    def events(self) -> EventList:
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        if group_by_input_shape and not self.record_shapes:
            raise ValueError("key_averages(group_by_input_shape=True) needs profile(record_shapes=True)")
        if group_by_stack_n and not self.with_stack:
            raise ValueError("key_averages(group_by_stack_n=...) needs profile(with_stack=True)")
        return self._events.key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        self._events.export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        if not self.with_stack:
            raise ValueError("export_stacks needs profile(with_stack=True)")
        _export_stacks(self._events, path, metric)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """An on_trace_ready that writes each trace as <dir>/<worker>.<step>.pt.trace.json[.gz]."""
    import gzip
    import os
    import socket

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{prof.step_num}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(path)

    return handler


class record_function:
    """Marks a span of user code, which then appears in the profile as its own event around the
    ops it ran. Usable as a context manager or a decorator."""

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a str, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._scope = None

    def __enter__(self):
        self._scope = _C._RecordScope(self.name)
        return self

    def __exit__(self, *exc):
        self._scope = None  # the C++ scope closes when its last reference goes
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped
