"""Ember's jagged ops and row gathers beside fbgemm_gpu and PyTorch, in one process.

    python bench_fbgemm_jagged.py [--reps 15]

Rows: jagged_to_padded_dense and dense_to_jagged (2048 rows, lengths uniform in [0, 100], D=128,
float32) against torch.ops.fbgemm (target ratio <= 1.0); index_select_dim0 on a (1,000,000 x 128)
float32 table with 100,000 uniform indices against ember.index_select and torch.index_select
(target <= 0.8). Both sides run the same inputs (shared through NumPy), interleaved: each
repetition times Ember then the peer, and the printed ratio is the median of the per-repetition
ratios (Ember / peer; below 1 is faster). Rows whose peer is not importable are skipped, so the
script runs anywhere Ember does.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import ember

try:
    import torch
except ImportError:
    torch = None
try:
    import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)
except ImportError:
    fbgemm_gpu = None


def _time(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def median_ratio(ours: Callable[[], object], theirs: Callable[[], object], reps: int) -> tuple[float, float, float]:
    """(median seconds ours, median seconds theirs, median of the per-repetition ratios)."""
    ours(), theirs()
    once = max(_time(ours, 1), _time(theirs, 1), 1e-6)
    number = max(1, int(0.03 / once))
    a, b = [], []
    for _ in range(reps):
        a.append(_time(ours, number))
        b.append(_time(theirs, number))
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    threads = ember.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    F = ember.ops.fbgemm

    lengths = rng.integers(0, 101, 2048)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = rng.standard_normal((int(offsets[-1]), 128), dtype=np.float32)
    dense = rng.standard_normal((2048, 100, 128), dtype=np.float32)
    table = rng.standard_normal((1_000_000, 128), dtype=np.float32)
    idx = rng.integers(0, 1_000_000, 100_000)

    ev, eo, ed = ember.from_numpy(values), ember.from_numpy(offsets), ember.from_numpy(dense)
    et, ei = ember.from_numpy(table), ember.from_numpy(idx)
    rows: list[tuple[str, str, Callable, Callable]] = [
        ("index_select_dim0 1e6x128, 1e5 idx", "ember.index_select",
         lambda: F.index_select_dim0(et, ei), lambda: ember.index_select(et, 0, ei)),
    ]
    if torch is not None:
        tt, ti = torch.from_numpy(table), torch.from_numpy(idx)
        rows.append(("index_select_dim0 1e6x128, 1e5 idx", "torch.index_select",
                     lambda: F.index_select_dim0(et, ei), lambda: torch.index_select(tt, 0, ti)))
    if torch is not None and fbgemm_gpu is not None:
        tv, to, td = torch.from_numpy(values), torch.from_numpy(offsets), torch.from_numpy(dense)
        fb = torch.ops.fbgemm
        rows += [
            ("jagged_to_padded_dense B=2048 D=128", "fbgemm",
             lambda: F.jagged_to_padded_dense(ev, [eo], [100], 0.0),
             lambda: fb.jagged_to_padded_dense(tv, [to], [100], 0.0)),
            ("dense_to_jagged B=2048 D=128", "fbgemm",
             lambda: F.dense_to_jagged(ed, [eo]), lambda: fb.dense_to_jagged(td, [to])),
            ("index_select_dim0 1e6x128, 1e5 idx", "fbgemm",
             lambda: F.index_select_dim0(et, ei), lambda: fb.index_select_dim0(tt, ti)),
        ]
    else:
        print("torch or fbgemm_gpu not importable: the fbgemm rows are skipped")

    print(f"threads: {threads}; ratio = median over {args.reps} repetitions of ember / peer (below 1 is faster)")
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':{width}s} {'peer':>18s} {'ember':>10s} {'peer':>10s} {'ratio':>7s}")
    for name, peer, ours, theirs in rows:
        a, b, r = median_ratio(ours, theirs, args.reps)
        print(f"{name:{width}s} {peer:>18s} {a * 1e3:8.2f}ms {b * 1e3:8.2f}ms {r:7.2f}")


if __name__ == "__main__":
    main()
