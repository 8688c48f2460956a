"""The bounded CPU caching allocator (Note [caching CPU allocator]) and ember.cpu's API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import ember

MiB = 1 << 20
KEYS = {"allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
        "reserved_bytes.all.peak", "cached_bytes.all.current", "cache_limit_bytes", "num_cache_hits",
        "num_cache_misses", "num_cache_evictions", "num_alloc_retries"}


@pytest.fixture
def limit():
    before = ember.cpu.get_cache_limit()
    yield
    ember.cpu.set_cache_limit(before)
    ember.cpu.empty_cache()


def test_memory_stats_keys_and_accounting(limit):
    ember.cpu.empty_cache()
    stats = ember.cpu.memory_stats()
    assert set(stats) == KEYS and all(isinstance(v, int) for v in stats.values())
    assert stats["cached_bytes.all.current"] == 0
    base = ember.cpu.memory_allocated()
    a = ember.empty(4 * MiB // 4)  # 4 MiB of float32
    s = ember.cpu.memory_stats()
    assert s["allocated_bytes.all.current"] - base == 4 * MiB
    assert s["reserved_bytes.all.current"] >= s["allocated_bytes.all.current"]
    assert ember.cpu.max_memory_allocated() >= base + 4 * MiB
    del a
    s = ember.cpu.memory_stats()
    assert s["allocated_bytes.all.current"] == base
    assert s["cached_bytes.all.current"] == 4 * MiB  # kept for reuse
    hits = s["num_cache_hits"]
    b = ember.empty(4 * MiB // 4)
    assert ember.cpu.memory_stats()["num_cache_hits"] == hits + 1
    del b
    ember.cpu.empty_cache()
    assert ember.cpu.memory_stats()["cached_bytes.all.current"] == 0
    ember.cpu.reset_peak_memory_stats()
    assert ember.cpu.max_memory_allocated() == ember.cpu.memory_allocated()


def test_three_hundred_sizes_stay_under_the_bound(limit):
    bound = 16 * MiB
    ember.cpu.set_cache_limit(bound)
    assert ember.cpu.get_cache_limit() == bound
    evictions = ember.cpu.memory_stats()["num_cache_evictions"]
    for i in range(300):
        t = ember.empty(MiB // 4 + i * 17_000)  # 1 MiB .. ~20 MiB, 300 different sizes
        del t
        assert ember.cpu.memory_stats()["cached_bytes.all.current"] <= bound
    s = ember.cpu.memory_stats()
    assert 0 < s["cached_bytes.all.current"] <= bound
    assert s["num_cache_evictions"] > evictions  # the oldest blocks made room
    # a block larger than the whole bound is not cached at all
    big = ember.empty(2 * bound // 4)
    del big
    assert ember.cpu.memory_stats()["cached_bytes.all.current"] <= bound


def test_lowering_the_limit_releases_now_and_zero_turns_caching_off(limit):
    ember.cpu.set_cache_limit(64 * MiB)
    tensors = [ember.empty(2 * MiB // 4) for _ in range(4)]
    del tensors
    assert ember.cpu.memory_stats()["cached_bytes.all.current"] == 8 * MiB
    ember.cpu.set_cache_limit(3 * MiB)
    assert ember.cpu.memory_stats()["cached_bytes.all.current"] == 2 * MiB
    ember.cpu.set_cache_limit(0)
    x = ember.empty(2 * MiB // 4)
    del x
    assert ember.cpu.memory_stats()["cached_bytes.all.current"] == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "1G", True])
def test_set_cache_limit_rejects_bad_values(bad):
    with pytest.raises(ValueError, match=r"\[set_cache_limit\] expected a non-negative int number of bytes"):
        ember.cpu.set_cache_limit(bad)


@pytest.mark.parametrize("value, expected", [("3M", 3 * MiB), ("65536", 65536), ("2g", 2 << 30), ("1 KB", 1024)])
def test_the_environment_sets_the_default_limit(value, expected):
    code = "import ember; print(ember.cpu.get_cache_limit())"
    env = {**os.environ, "EMBER_CPU_CACHE_LIMIT": value}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout) == expected


@pytest.mark.parametrize("value", ["lots", "-5", "5T"])
def test_an_unreadable_environment_value_warns_and_keeps_the_default(value):
    code = "import ember; print(ember.cpu.get_cache_limit())"
    env = {**os.environ, "EMBER_CPU_CACHE_LIMIT": value}
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert int(out.stdout) == min(physical // 32, 1 << 30)
    assert f"RuntimeWarning: EMBER_CPU_CACHE_LIMIT='{value}' is not a number of bytes" in out.stderr


def test_default_limit_is_a_small_fraction_of_memory():
    env = {k: v for k, v in os.environ.items() if k != "EMBER_CPU_CACHE_LIMIT"}
    code = "import ember; print(ember.cpu.get_cache_limit())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert int(out.stdout) == min(physical // 32, 1 << 30)


@pytest.mark.skipif("ASAN_OPTIONS" in os.environ, reason="ASan aborts on an impossible allocation")
def test_a_failed_allocation_empties_the_cache_and_retries(limit):
    ember.cpu.set_cache_limit(64 * MiB)
    x = ember.empty(4 * MiB // 4)
    del x
    retries = ember.cpu.memory_stats()["num_alloc_retries"]
    with pytest.raises(ember.OutOfMemoryError, match=r"\[allocator\] expected to allocate \d+ bytes on cpu, but "
                                                     r"the system is out of memory") as caught:
        ember.empty(1 << 58, dtype=ember.uint8)  # 256 PiB: more than any machine can map
    # a RuntimeError, as torch.OutOfMemoryError is; torch.cuda's name is the same class
    assert isinstance(caught.value, RuntimeError) and ember.cuda.OutOfMemoryError is ember.OutOfMemoryError
    s = ember.cpu.memory_stats()
    assert s["num_alloc_retries"] == retries + 1
    assert s["cached_bytes.all.current"] == 0  # released before the second try


def test_cpu_namespace_basics():
    assert ember.cpu.is_available() and ember.cpu.device_count() == 1 and ember.cpu.current_device() == "cpu"
    ember.cpu.synchronize()


@pytest.mark.forks_workers
def test_fork_while_another_thread_holds_the_allocator_lock():
    # Note [allocator across fork]: a thread holds the allocator's lock (with the GIL released)
    # when the main thread forks. The fork waits for the lock, so the child gets an unlocked copy
    # and can allocate; without the fork handlers the child hangs on its first tensor.
    holder = threading.Thread(target=ember._C._hold_cpu_allocator_lock, args=(0.3,))
    holder.start()
    time.sleep(0.05)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if ember.ones(1 << 16).sum().item() == 1 << 16 else 1)
    holder.join()
    deadline = time.monotonic() + 20
    while (status := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung on its first tensor")
        time.sleep(0.005)
    assert os.waitstatus_to_exitcode(status[1]) == 0
