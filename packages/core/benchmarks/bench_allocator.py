"""The CPU allocator under many small allocations: what its lock costs (Note [caching CPU
allocator]), on 1 and 2 threads, with PyTorch's CPU allocator beside it when torch is importable.

    python bench_allocator.py [--threads 1,2] [--calls 200000]

Every Ember allocation takes the allocator's mutex twice (its statistics on allocate and on free),
and a cached block (1 MiB or more) twice more (the cache lookup, the return to the cache). The
cases are loops of calls that each allocate and free one buffer: `empty` (nearly nothing but the
allocation), a tiny `add` (the typical small-op loop) and a `add` whose output is a cached 1 MiB
block. Ember's ops and PyTorch's release the GIL while they run, so two threads contend on the
allocator for real. Printed per case and thread count: nanoseconds per call (wall time / calls
per thread) for each library and their ratio, and Ember's scaling from 1 to 2 threads against
PyTorch's, which is where a contended lock would show.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable

import numpy as np

import ember

try:
    import torch
except ImportError:  # `nox -s bench` installs it; elsewhere Ember's rows print alone
    torch = None


def per_call_ns(fn: Callable[[], object], threads: int, calls: int, repeat: int = 5) -> float:
    """Median over `repeat` runs of wall time / calls, every thread making `calls` calls at once."""
    times = []
    for _ in range(repeat):
        start = threading.Barrier(threads + 1)

        def work(start: threading.Barrier = start) -> None:
            start.wait()
            for _ in range(calls):
                fn()

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for t in pool:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in pool:
            t.join()
        times.append((time.perf_counter() - t0) / calls * 1e9)
    return statistics.median(times)


def cases(lib) -> dict[str, Callable[[], object]]:
    small = lib.from_numpy(np.ones(16, dtype=np.float32))
    big = lib.from_numpy(np.ones(1 << 18, dtype=np.float32))  # 1 MiB: a cached block in Ember
    return {
        "empty(16) alloc+free": lambda: lib.empty(16),
        "add, 16 floats": lambda: lib.add(small, small),
        "add, 1 MiB output (cached)": lambda: lib.add(big, big),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    thread_counts = [int(n) for n in args.threads.split(",")]
    ember.set_num_threads(1)  # one intra-op thread: the threads here are the callers
    libs = {"ember": cases(ember)}
    if torch is not None:
        torch.set_num_threads(1)
        libs["torch"] = cases(torch)
    else:
        print("PyTorch is not importable: Ember's rows only")
    print(f"{'case':28s} {'threads':>7s} " + " ".join(f"{name + ' ns/call':>15s}" for name in libs)
          + (f" {'ratio':>7s}" if torch is not None else ""))
    results: dict[tuple[str, str, int], float] = {}
    for case in libs["ember"]:
        big = "MiB" in case
        calls = args.calls // 20 if big else args.calls
        for threads in thread_counts:
            row = []
            for name, fns in libs.items():
                fns[case]()  # warm: the first call fills Ember's cache
                results[name, case, threads] = per_call_ns(fns[case], threads, calls)
                row.append(results[name, case, threads])
            ratio = f" {row[0] / row[1]:7.2f}" if len(row) == 2 else ""
            print(f"{case:28s} {threads:7d} " + " ".join(f"{v:15.0f}" for v in row) + ratio)
    if len(thread_counts) > 1:
        lo, hi = thread_counts[0], thread_counts[-1]
        print(f"\nper-call time, {hi} threads / {lo} thread (1.0 = no slowdown from sharing):")
        for case in libs["ember"]:
            print(f"  {case:28s} " + "  ".join(
                f"{name} {results[name, case, hi] / results[name, case, lo]:.2f}" for name in libs))
    stats = ember.cpu.memory_stats()
    print(f"\nEmber's cache: {stats['num_cache_hits']} hits, {stats['num_cache_misses']} misses")


if __name__ == "__main__":
    main()
