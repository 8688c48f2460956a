"""Ember's inference TBE beside fbgemm_gpu's IntNBitTableBatchedEmbeddingBagsCodegen, in one process.

    python bench_tbe_inference.py [--rows 1000000] [--tables 8] [--dim 128] [--batch 2048]
                                  [--pooling-factor 20] [--types int8,int4] [--reps 15] [--threads N]

Both modules get the same tables (one random byte buffer in FBGEMM's layout, copied into each, with
valid fp16 scales and biases) and the same int32 indices; pooled SUM forward, FP16 output, default
bounds checks (WARNING) on both sides. Each repetition times a few Ember calls then a few FBGEMM
calls; the printed ratio is the median of the per-repetition ratios (Ember / FBGEMM; below 1 is
faster). The outputs are checked equal first. Needs torch and fbgemm_gpu (exits 0 without them).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ember
from ember.tbe import EmbeddingLocation, IntNBitTableBatchedEmbeddingBagsCodegen, SparseType

try:
    import fbgemm_gpu  # noqa: F401
    import torch
    from fbgemm_gpu.split_embedding_configs import SparseType as FbSparseType
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation as FbLocation
    from fbgemm_gpu.split_table_batched_embeddings_ops_inference import (
        IntNBitTableBatchedEmbeddingBagsCodegen as FbIntNBit,
    )
except ImportError:
    torch = None


def _timed(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def run_case(ty: str, args, rng) -> None:
    T, D, rows, B, L = args.tables, args.dim, args.rows, args.batch, args.pooling_factor
    specs = [(f"t{t}", rows, D, SparseType(ty), EmbeddingLocation.HOST) for t in range(T)]
    ours = IntNBitTableBatchedEmbeddingBagsCodegen(specs, output_dtype=SparseType.FP16)
    theirs = FbIntNBit([(n, r, d, FbSparseType(ty), FbLocation.HOST) for n, r, d, _, _ in specs], device="cpu",
                       output_dtype=FbSparseType.FP16)
    ours.initialize_weights()
    theirs.initialize_weights()
    buf = theirs.weights_host.numpy()  # shares memory with FBGEMM's buffer
    assert buf.size == ours.host_size
    buf[:] = rng.integers(0, 256, buf.size, dtype=np.uint8)
    row_bytes = ours.split_embedding_weights(split_scale_shifts=False)[0][0].shape[1]
    sb = np.array([0.01, -0.5], np.float16).view(np.uint8)
    for off in ours.weights_physical_offsets:  # valid scale and bias at each row's front
        buf[off:off + rows * row_bytes].reshape(rows, row_bytes)[:, :4] = sb
    ours.weights_host.copy_(ember.from_numpy(buf))

    indices = rng.integers(0, rows, T * B * L).astype(np.int32)
    offsets = np.arange(0, T * B * L + 1, L).astype(np.int32)
    ei, eo = ember.from_numpy(indices), ember.from_numpy(offsets)
    ti, to = torch.from_numpy(indices), torch.from_numpy(offsets)

    def run_ours():
        return ours(ei, eo)

    def run_theirs():
        return theirs(ti, to)

    np.testing.assert_array_equal(run_ours().float().numpy(), run_theirs().float().numpy())
    calls = max(1, int(0.2 / max(_timed(run_theirs, 1), 1e-6)))
    ratios, te, tt = [], [], []
    for _ in range(args.reps):
        e = _timed(run_ours, calls)
        f = _timed(run_theirs, calls)
        te.append(e)
        tt.append(f)
        ratios.append(e / f)
    print(f"{ty:5s} T={T} rows={rows} D={D} B={B} L={L}: ember {statistics.median(te) * 1e3:8.2f} ms  "
          f"fbgemm {statistics.median(tt) * 1e3:8.2f} ms  ratio {statistics.median(ratios):5.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--tables", type=int, default=8)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--pooling-factor", type=int, default=20)
    p.add_argument("--types", default="int8,int4")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--threads", type=int, default=0, help="threads for both libraries (0: their default)")
    args = p.parse_args()
    if torch is None:
        print("bench_tbe_inference: torch and fbgemm_gpu are not importable; nothing to compare")
        return
    if args.threads:
        torch.set_num_threads(args.threads)
        ember.set_num_threads(args.threads)
    print(f"threads: ember {ember.get_num_threads()}, torch {torch.get_num_threads()}")
    rng = np.random.default_rng(0)
    for ty in args.types.split(","):
        run_case(ty.strip(), args, rng)


if __name__ == "__main__":
    main()
