"""Ember's table-batched embeddings (ember.tbe) beside PyTorch's EmbeddingBag and fbgemm_gpu's
CPU TBE, in one process, on issue 17's shapes: 8 tables of 1,000,000 x 128 float32, batch 2048,
pooling factor 20, uniform random rows.

    python bench_tbe.py [--threads 1,2] [--rows 1000000]

Rows: pooled SUM forward (vs EmbeddingBag, one per table, and vs FBGEMM), and a training step,
forward + backward with the optimizer fused (vs FBGEMM), for EXACT_SGD and EXACT_ROWWISE_ADAGRAD.
Ratios are Ember / peer, the median of per-repetition ratios of interleaved runs (timing.py's
method, as bench_vs_torch.py). Without torch or fbgemm_gpu their rows print why and are skipped.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ember
from ember import tbe

try:
    import torch
except ImportError:
    torch = None
try:
    import fbgemm_gpu  # noqa: F401 - registers torch.ops.fbgemm
    from fbgemm_gpu.split_embedding_configs import EmbOptimType as FbOptim
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation as FbLocation
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import ComputeDevice as FbCompute
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        SplitTableBatchedEmbeddingBagsCodegen as FbTBE,
    )
except Exception:  # noqa: BLE001 - any import failure means no FBGEMM peer
    FbTBE = None

TABLES, DIM, BATCH, POOL = 8, 128, 2048, 20


def _time(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def interleaved(ours, theirs, reps=7, seconds=0.3):
    ours(), theirs()
    once_a, once_b = _time(ours, 1), _time(theirs, 1)
    na, nb = max(1, int(seconds / once_a)), max(1, int(seconds / once_b))
    a, b, r = [], [], []
    for _ in range(reps):
        ta, tb = _time(ours, na), _time(theirs, nb)
        a.append(ta), b.append(tb), r.append(ta / tb)
    return statistics.median(a), statistics.median(b), statistics.median(r)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    if torch is None:
        print("bench_tbe: PyTorch is not installed here (nox -s bench installs it); skipped")
        return 0
    rows, threads = args.rows, [int(t) for t in args.threads.split(",")]
    rng = np.random.default_rng(0)
    indices = rng.integers(0, rows, TABLES * BATCH * POOL)
    offsets = np.arange(0, TABLES * BATCH * POOL + 1, POOL)
    grad = rng.standard_normal((BATCH, TABLES * DIM)).astype(np.float32)
    specs = [(rows, DIM, tbe.EmbeddingLocation.HOST, tbe.ComputeDevice.CPU)] * TABLES
    print(f"ember {ember.__version__} ({ember._C._cpu_capability()}); torch {torch.__version__}; "
          f"{TABLES} tables x {rows} x {DIM}, B {BATCH}, L {POOL}")
    print(f"{'case':52s} {'thr':>3s} {'ember':>10s} {'peer':>10s} {'ratio':>6s}")

    def row(name, t, ours, theirs):
        a, b, ratio = interleaved(ours, theirs)
        print(f"{name:52s} {t:3d} {a * 1e3:8.2f}ms {b * 1e3:8.2f}ms {ratio:6.2f}", flush=True)

    e_idx, e_off, e_grad = ember.from_numpy(indices), ember.from_numpy(offsets), ember.from_numpy(grad)
    forward, torch_forward = _embedding_bag_pair(specs, rows, indices, offsets, e_idx, e_off)
    for t in threads:
        ember.set_num_threads(t), torch.set_num_threads(t)
        row("pooled SUM forward vs EmbeddingBag", t, forward, torch_forward)
    del forward, torch_forward
    if FbTBE is None:
        print("  fbgemm_gpu not importable here: its rows are skipped")
        return 0
    f_idx, f_off, f_grad = torch.from_numpy(indices), torch.from_numpy(offsets), torch.from_numpy(grad)
    for optimizer in ("EXACT_SGD", "EXACT_ROWWISE_ADAGRAD"):
        ours = tbe.SplitTableBatchedEmbeddingBagsCodegen(specs, optimizer=getattr(tbe.EmbOptimType, optimizer),
                                                         learning_rate=0.01)
        peer = FbTBE([(rows, DIM, FbLocation.HOST, FbCompute.CPU)] * TABLES, optimizer=getattr(FbOptim, optimizer),
                     learning_rate=0.01)
        # real values in every page of both (an untouched zero page would be read from cache)
        ours.init_embedding_weights_uniform(-0.01, 0.01)
        peer.init_embedding_weights_uniform(-0.01, 0.01)
        calls = _tbe_calls(ours, e_idx, e_off, e_grad, ember) + _tbe_calls(peer, f_idx, f_off, f_grad, torch)
        for t in threads:
            ember.set_num_threads(t), torch.set_num_threads(t)
            if optimizer == "EXACT_SGD":
                row("pooled SUM forward vs FBGEMM TBE", t, calls[0], calls[2])
            row(f"training step {optimizer} vs FBGEMM TBE", t, calls[1], calls[3])
        del ours, peer, calls
    return 0


def _embedding_bag_pair(specs, rows, indices, offsets, e_idx, e_off):
    """Ember's TBE forward and PyTorch's EmbeddingBags (one per table, in PyTorch's own memory, as
    a PyTorch user has them: Ember's buffer gets huge pages from its allocator, PyTorch's do not)."""
    ours = tbe.SplitTableBatchedEmbeddingBagsCodegen(specs)
    ours.init_embedding_weights_uniform(-0.01, 0.01)
    bags = [torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(table.numpy()).clone(), mode="sum", freeze=True)
            for table in ours.split_embedding_weights()]
    t_idx = [torch.from_numpy(indices[t * BATCH * POOL:(t + 1) * BATCH * POOL]) for t in range(TABLES)]
    t_off = torch.from_numpy(offsets[:BATCH])

    def forward():
        with ember.no_grad():
            return ours(e_idx, e_off)

    def torch_forward():
        with torch.no_grad():
            return torch.cat([bag(i, t_off) for bag, i in zip(bags, t_idx, strict=True)], dim=1)

    return forward, torch_forward


def _tbe_calls(module, idx, off, grad, lib):
    """[forward without grad, forward + fused backward] of one TBE module."""
    def forward():
        with lib.no_grad():
            return module(idx, off)

    def step():
        module(idx, off).backward(grad)

    return [forward, step]


if __name__ == "__main__":
    raise SystemExit(main())
