"""ember.linalg beside NumPy (and PyTorch's CPU build when importable), in one process: one large
matrix and batches of small ones per decomposition. Times are the best of several runs.

    python bench_linalg.py [--threads N] [--only SUBSTR]

ratio = Ember time / peer time (lower is better; 1.00 is parity). NumPy's OpenBLAS reads its
thread count at import, so --threads (default 1) is applied to all three libraries before any
is loaded.
"""

from __future__ import annotations

import argparse
import os

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--only", default="", help="run the cases whose name contains this")
ARGS, _ = parser.parse_known_args()  # (nox -s bench passes the same arguments to every script)
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
from timing import best_of  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:  # a peer of `nox -s bench` only
    torch = None


def cases(rng):
    """(name, ember_fn, numpy_fn, torch_fn or None) rows; each fn takes no arguments."""
    LA = ember.linalg
    tl = torch.linalg if torch is not None else None
    rows = []

    def add(name, arrays, ours, numpy_fn, torch_fn):
        """The three functions take the same operands: `arrays` in each library's tensors."""
        e = [ember.from_numpy(x) for x in arrays]
        p = [torch.from_numpy(x) for x in arrays] if torch is not None else None
        rows.append((name, lambda: ours(*e), lambda: numpy_fn(*arrays), (lambda: torch_fn(*p)) if p else None))

    for shape, label in (((512, 512), "512x512"), ((256, 8, 8), "256 x 8x8"), ((256, 32, 32), "256 x 32x32"),
                         ((256, 3, 3), "256 x 3x3")):
        a = rng.standard_normal(shape)
        n = shape[-1]
        sym = a + np.swapaxes(a, -1, -2)
        spd = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
        upper = np.triu(a) + n * np.eye(n)
        b = rng.standard_normal(shape[:-1] + (1,))
        rhs = rng.standard_normal(shape[:-1] + (n,))
        add(f"svd {label}", [a], LA.svd, np.linalg.svd, lambda t: tl.svd(t))
        add(f"svdvals {label}", [a], LA.svdvals, lambda x: np.linalg.svd(x, compute_uv=False), lambda t: tl.svdvals(t))
        add(f"eigh {label}", [sym], LA.eigh, np.linalg.eigh, lambda t: tl.eigh(t))
        add(f"eigvalsh {label}", [sym], LA.eigvalsh, np.linalg.eigvalsh, lambda t: tl.eigvalsh(t))
        add(f"qr {label}", [a], LA.qr, np.linalg.qr, lambda t: tl.qr(t))
        add(f"eig {label}", [a], LA.eig, np.linalg.eig, lambda t: tl.eig(t))
        add(f"solve {label}", [a, b], LA.solve, np.linalg.solve, lambda t, r: tl.solve(t, r))
        add(f"inv {label}", [a], LA.inv, np.linalg.inv, lambda t: tl.inv(t))
        add(f"det {label}", [a], LA.det, np.linalg.det, lambda t: tl.det(t))
        add(f"cholesky {label}", [spd], LA.cholesky, np.linalg.cholesky, lambda t: tl.cholesky(t))
        add(f"lu_factor {label}", [a], LA.lu_factor, np.linalg.det, lambda t: tl.lu_factor(t))  # (NumPy: det's getrf)
        add(f"solve_triangular {label}", [upper, rhs], lambda t, r: LA.solve_triangular(t, r, upper=True),
            np.linalg.solve,  # (NumPy has no triangular solver: gesv)
            lambda t, r: tl.solve_triangular(t, r, upper=True))
    return rows


def main() -> None:
    ember.set_num_threads(ARGS.threads)
    if torch is not None:
        torch.set_num_threads(ARGS.threads)
    rows = [r for r in cases(np.random.default_rng(0)) if ARGS.only in r[0]]
    width = max(len(r[0]) for r in rows)
    head = f"{'linalg, float64, ' + str(ARGS.threads) + ' thread(s)':{width}s} {'ember':>11s} {'numpy':>11s} {'e/np':>6s}"
    print(head + (f" {'torch':>11s} {'e/torch':>7s}" if torch is not None else "  (PyTorch not installed)"))
    for name, ours, numpy_fn, torch_fn in rows:
        e, p = best_of(ours, 5), best_of(numpy_fn, 5)
        line = f"{name:{width}s} {e * 1e6:10.1f}us {p * 1e6:10.1f}us {e / p:6.2f}"
        if torch_fn is not None:
            q = best_of(torch_fn, 5)
            line += f" {q * 1e6:10.1f}us {e / q:7.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
