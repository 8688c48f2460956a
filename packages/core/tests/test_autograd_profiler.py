"""ember.autograd.profiler (torch.autograd.profiler's older API) and the EventList additions it
shares with ember.profiler: total_average, export_stacks, str()."""

import warnings

import pytest

import ember
from ember.autograd import profiler, profiler_legacy, profiler_util


def _train_step():
    x = ember.randn(6, 4, requires_grad=True)
    w = ember.randn(4, 3)
    with profiler.record_function("my_forward"):
        loss = ember.matmul(x, w).relu().sum()
    loss.backward()


def test_profile_records_ops_and_answers_after_exit():
    with profiler.profile(record_shapes=True) as prof:
        _train_step()
    events = prof.function_events
    assert isinstance(events, profiler_util.EventList)
    names = [e.name for e in events]
    assert {"matmul", "relu", "sum", "my_forward"} <= set(names)
    mm = next(e for e in events if e.name == "matmul")
    assert mm.input_shapes == [[6, 4], [4, 3]] and mm.cpu_parent.name == "my_forward"
    averages = prof.key_averages()
    assert {a.key for a in averages} == set(names)
    assert sum(a.count for a in averages) == len(events)
    # total_average adds every event: its totals are the sums, its key "Total".
    total = prof.total_average()
    assert total.key == "Total" and total.count == len(events)
    assert total.self_cpu_time_total == pytest.approx(prof.self_cpu_time_total)
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in events))
    # The table, str() and the per-shape grouping.
    table = prof.table(sort_by="self_cpu_time_total", row_limit=3)
    assert "Self CPU time total" in table and len(table.splitlines()) == 3 + 3 + 2  # header, 3 rows, total
    assert str(prof) == events.table() == str(events)
    shaped = prof.key_averages(group_by_input_shape=True)
    assert any(a.key == "matmul" and a.input_shapes == [[6, 4], [4, 3]] for a in shaped)


def test_averages_of_averages_add_their_counts():
    with profiler.profile() as prof:
        for _ in range(3):
            ember.ones(2).add(1)
    adds = [a for a in prof.key_averages() if a.key == "add"]
    assert len(adds) == 1 and adds[0].count == 3
    combined = profiler_util.FunctionEventAvg("sum of two")
    combined += adds[0]
    combined += adds[0]
    assert combined.count == 6
    assert combined.cpu_time_total == pytest.approx(2 * adds[0].cpu_time_total)
    assert combined.cpu_time == pytest.approx(adds[0].cpu_time)


def test_unfinished_disabled_and_reentered_profiles():
    prof = profiler.profile()
    assert repr(prof) == str(prof) == "<unfinished torch.autograd.profile>"
    for ask in (prof.key_averages, prof.total_average, prof.table, lambda: prof.self_cpu_time_total):
        with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
            ask()
    with prof:
        with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
            prof.__enter__()
    assert prof.function_events is not None
    off = profiler.profile(enabled=False)
    with off:
        ember.ones(3).sum()
    assert off.function_events is None
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.key_averages()


def test_device_options_on_a_cpu_only_build():
    with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
        prof = profiler.profile(use_cuda=True)
    with prof:
        ember.ones(2).neg()
    assert "neg" in [e.name for e in prof.function_events]  # the CPU events are still recorded
    with pytest.warns(UserWarning, match="mps is not available, disabling mps profiling"):
        profiler.profile(use_device="mps")
    with pytest.raises(ValueError, match="use_cpu=False"):
        profiler.profile(use_cpu=False)
    assert profiler.kineto_available() is False and ember.autograd.kineto_available is profiler.kineto_available


def test_export_stacks_writes_folded_stacks(tmp_path):
    def inner():
        return ember.ones(64, 64) @ ember.ones(64, 64)

    def outer():
        return inner()

    with profiler.profile(with_stack=True) as prof:
        outer()
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    lines = path.read_text().splitlines()
    matmul = [line for line in lines if "inner" in line]
    assert matmul, lines
    frames, value = matmul[0].rsplit(" ", 1)
    assert int(value) > 0 and " " not in frames
    names = frames.split(";")
    # outermost first: outer's frame comes before inner's
    assert [i for i, f in enumerate(names) if f.endswith("outer")] < [i for i, f in enumerate(names)
                                                                        if f.endswith("inner")]
    with pytest.raises(ValueError, match=r"metric should be one of: \['self_cpu_time_total'\]"):
        prof.export_stacks(str(path), "self_cuda_time_total")
    with profiler.profile() as plain:
        outer()
    with pytest.raises(ValueError, match="with_stack=True"):
        plain.export_stacks(str(path))
    # ember.profiler's profile writes the same format
    with ember.profiler.profile(with_stack=True) as new_api:
        outer()
    new_api.export_stacks(str(path))
    assert any("outer" in line for line in path.read_text().splitlines())


def test_legacy_profile_and_chrome_trace(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with profiler_legacy.profile(record_shapes=True) as prof:
            ember.ones(3).exp()
    assert "exp" in [e.name for e in prof.function_events]
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    assert '"exp"' in path.read_text()
