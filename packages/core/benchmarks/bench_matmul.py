"""Matrix products: Ember beside NumPy (its BLAS) in one process, printing time ratios.

ratio = Ember time / NumPy time (lower is better; 1.00 is parity). NumPy's BLAS and Ember both
use their default thread counts (printed by the NumPy build info is not; Ember's is).
"""

from __future__ import annotations

import numpy as np
from timing import print_ratios

import ember


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for n in (64, 256, 1024):
        for dtype in (np.float32, np.float64):
            a = rng.standard_normal((n, n)).astype(dtype)
            b = rng.standard_normal((n, n)).astype(dtype)
            x, y = ember.from_numpy(a), ember.from_numpy(b)
            rows.append((f"mm {n}x{n} {np.dtype(dtype).name}", lambda x=x, y=y: ember.mm(x, y), lambda a=a, b=b: a @ b))
    a = rng.standard_normal((64, 128, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64, 128)).astype(np.float32)
    x, y = ember.from_numpy(a), ember.from_numpy(b)
    rows.append(("bmm 64 x (128x64 @ 64x128) float32", lambda: ember.bmm(x, y), lambda: np.matmul(a, b)))
    w = rng.standard_normal((512, 256)).astype(np.float32)
    inp = rng.standard_normal((4096, 256)).astype(np.float32)
    tw, ti = ember.from_numpy(w), ember.from_numpy(inp)
    rows.append(("linear-shaped 4096x256 @ (512x256)^T float32", lambda: ember.matmul(ti, tw.t()), lambda: inp @ w.T))
    print(f"ember threads: {ember.get_num_threads()}, cpu capability: {ember._C._cpu_capability()}")
    print_ratios(rows)


if __name__ == "__main__":
    main()
