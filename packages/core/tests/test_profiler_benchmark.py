"""ember.profiler (op events, nesting, shapes, memory, stacks, schedules, tables, Chrome traces)
and ember.utils.benchmark (Timer and Measurement statistics)."""

import json
import statistics

import numpy as np
import pytest

import ember
from ember.profiler import ProfilerAction, profile, record_function, schedule
from ember.utils.benchmark import Measurement, Timer


def _names(prof):
    return [e.name for e in prof.events()]


def test_every_dispatched_op_is_recorded_with_shapes_and_nesting():
    x = ember.randn(8, 5, requires_grad=True)
    w = ember.randn(5, 3)
    with profile(record_shapes=True) as prof:
        with record_function("forward"):
            y = ember.matmul(x, w).relu()
            loss = y.sum()
        loss.backward()
    names = _names(prof)
    for op in ("matmul", "relu", "sum", "forward"):
        assert op in names
    mm = next(e for e in prof.events() if e.name == "matmul")
    assert mm.input_shapes == [[8, 5], [5, 3]]
    assert mm.cpu_parent is not None and mm.cpu_parent.name == "forward"
    forward = next(e for e in prof.events() if e.name == "forward")
    assert forward.is_user_annotation and forward.cpu_parent is None
    assert {c.name for c in forward.cpu_children} >= {"matmul", "relu", "sum"}
    # Self time is total time less the children's; times are non-negative microseconds.
    assert forward.self_cpu_time_total == pytest.approx(
        forward.cpu_time_total - sum(c.cpu_time_total for c in forward.cpu_children))
    assert all(e.cpu_time_total >= 0 for e in prof.events())
    # The backward pass ran ops too (the matmul gradient).
    assert names.count("matmul") >= 2
    # Nothing is recorded once the profile has ended.
    ember.matmul(x, w)
    assert _names(prof) == names


def test_key_averages_table_and_sorting():
    a = ember.randn(16, 16)
    with profile(record_shapes=True, profile_memory=True) as prof:
        for _ in range(3):
            ember.matmul(a, a)
        ember.add(a, a)
        ember.add(a[:2], a[:2])
    averages = prof.key_averages()
    mm = next(e for e in averages if e.key == "matmul")
    assert mm.count == 3
    assert mm.cpu_time == pytest.approx(mm.cpu_time_total / 3)
    assert mm.cpu_memory_usage == 3 * 16 * 16 * 4  # three float32 16x16 results, still alive or not
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert sorted(e.input_shapes for e in by_shape if e.key == "add") == [[[2, 16], [2, 16]], [[16, 16], [16, 16]]]
    table = averages.table(sort_by="count", row_limit=10)
    lines = table.splitlines()
    assert lines[1].split()[:3] == ["Name", "Self", "CPU"] and "# of Calls" in lines[1] and "CPU Mem" in lines[1]
    assert lines[3].split()[0] == "matmul"  # most calls first
    assert table.rstrip().splitlines()[-1].startswith("Self CPU time total:")
    assert "Input Shapes" in by_shape.table()
    with pytest.raises(ValueError, match="sort_by must be one of"):
        averages.table(sort_by="gpu_time")
    with pytest.raises(ValueError, match="needs profile\\(with_stack=True\\)"):
        prof.key_averages(group_by_stack_n=2)


def test_stacks_point_at_the_calling_line(tmp_path):
    a = ember.ones(3)
    with profile(with_stack=True) as prof:
        ember.exp(a)  # the op under test
    event = next(e for e in prof.events() if e.name == "exp")
    assert any(frame.endswith("test_stacks_point_at_the_calling_line") and "test_profiler_benchmark.py" in frame
               for frame in event.stack)
    assert prof.key_averages(group_by_stack_n=1)[0].stack


def test_chrome_trace(tmp_path):
    a = ember.ones(4, 4)
    with profile(record_shapes=True) as prof:
        with record_function("block"):
            ember.mul(a, a)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    by_name = {e["name"]: e for e in trace}
    assert by_name["mul"]["ph"] == "X" and by_name["mul"]["cat"] == "cpu_op"
    assert by_name["block"]["cat"] == "user_annotation"
    assert by_name["mul"]["args"]["Input Dims"] == [[4, 4], [4, 4]]
    outer, inner = by_name["block"], by_name["mul"]
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3


def test_schedule_actions():
    plan = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2)
    got = [plan(i) for i in range(11)]
    N, W, R, S = ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE
    assert got == [N, N, W, R, S, N, W, R, S, N, N]
    with pytest.raises(ValueError, match="active must be an integer >= 1"):
        schedule(wait=0, warmup=0, active=0)


def test_profile_follows_the_schedule_across_steps():
    traces = []

    def ready(prof):
        traces.append(sorted({int(n.split("_")[1]) for n in _names(prof) if n.startswith("step_")}))

    with profile(schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=ready) as prof:
        for step in range(9):
            with record_function(f"step_{step}"):
                ember.ones(2).sum()
            prof.step()
    # Cycles of 4 steps: step 0 waits, step 1 warms up (thrown away), steps 2-3 are saved; ...
    # the ninth step (8) only waits, so nothing more is saved when the profile ends.
    assert traces == [[2, 3], [6, 7]]


def test_profile_without_schedule_saves_once_at_exit_and_rejects_nesting():
    calls = []
    with profile(on_trace_ready=calls.append) as prof:
        ember.ones(1)
        with pytest.raises(RuntimeError, match="another profile is already recording"):
            profile().start()
    assert calls == [prof] and "ones" in _names(prof)
    with pytest.raises(TypeError, match="activities must be ProfilerActivity members"):
        profile(activities=["cpu"])
    with pytest.raises(TypeError, match="name must be a str"):
        record_function(3)


def test_record_function_as_decorator():
    @record_function("helper")
    def helper(t):
        return t * 2

    with profile() as prof:
        helper(ember.ones(2))
    helper_event = next(e for e in prof.events() if e.name == "helper")
    assert [c.name for c in helper_event.cpu_children] == ["mul"]


# ---- ember.utils.benchmark -------------------------------------------------------------------

def test_measurement_statistics_match_numpy():
    raw = [0.9, 1.2, 1.0, 3.0, 1.1, 0.95, 1.05]
    m = Measurement(10, raw, dict(stmt="f()", num_threads=1))
    per_run = np.array(raw) / 10
    assert m.times == pytest.approx(list(per_run))
    assert m.median == pytest.approx(np.median(per_run))
    assert m.mean == pytest.approx(per_run.mean())
    assert m.iqr == pytest.approx(np.percentile(per_run, 75) - np.percentile(per_run, 25))
    text = repr(m)
    assert "Median: 105.00 ms" in text and "7 measurements, 10 runs per measurement, 1 thread" in text
    merged = Measurement.merge([m, Measurement(5, [0.5], dict(stmt="f()", num_threads=1))])
    assert len(merged) == 1 and len(merged[0].times) == 8
    with pytest.raises(ValueError, match="number_per_run must be positive"):
        Measurement(0, [1.0], {})


def test_timer_runs_the_statement_in_its_namespace_with_pinned_threads():
    counter = {"n": 0}
    seen_threads = []

    def work():
        counter["n"] += 1
        seen_threads.append(ember.get_num_threads())

    before = ember.get_num_threads()
    m = Timer("work()", globals={"work": work}, num_threads=1, label="count").timeit(25)
    assert counter["n"] == 26  # one warm-up call, then 25 timed
    assert m.number_per_run == 25 and len(m.times) == 1 and m.times[0] > 0
    assert set(seen_threads) == {1} and ember.get_num_threads() == before
    blocked = Timer("x.sum()", setup="x = ember.ones(100)", globals={"ember": ember}).blocked_autorange(
        min_run_time=0.05)
    assert sum(blocked.raw_times) >= 0.05 and blocked.number_per_run >= 1
    assert statistics.median(blocked.times) == pytest.approx(blocked.median)
    adaptive = Timer("pass").adaptive_autorange(threshold=0.5, max_run_time=0.5)
    assert len(adaptive.times) >= 1
    with pytest.raises(ValueError, match="num_threads must be a positive integer"):
        Timer("pass", num_threads=0)
    with pytest.raises(ValueError, match="only Python statements"):
        Timer("pass", language="c++")
    with pytest.raises(NameError):
        Timer("undefined_name").timeit(1)


def test_autograd_has_the_profilers_activity_enum():
    # torch.autograd.ProfilerActivity is torch.profiler's
    assert ember.autograd.ProfilerActivity is ember.profiler.ProfilerActivity
    assert [a.name for a in ember.autograd.ProfilerActivity] == ["CPU", "CUDA"]
