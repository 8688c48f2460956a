"""emberrec beside TorchRec (1.8, over PyTorch 2.13 and fbgemm_gpu 1.8's CPU build), in one
process, same inputs: EmbeddingBagCollection forward and forward+backward, the fused-optimizer
training step, and KeyedJaggedTensor construction, permute and split.

    python bench_rec.py [--threads 1,2] [--rows 100000]

Shapes: 8 tables of `rows` x 64 float32, batch 2048, pooling factor 20 (collections); 26 features,
batch 2048, lengths uniform in [0, 10] (KJT operations). Ratios are emberrec / TorchRec, the
median of per-repetition ratios of interleaved runs. Without TorchRec the script says so and
stops (nox -s bench installs it).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ember
import emberrec
from emberrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection

try:
    import torch
    import torchrec
    from torchrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection as TorchRecFusedEBC
except Exception as error:  # noqa: BLE001 - any import failure means no peer
    torch = torchrec = None
    MISSING = f"{type(error).__name__}: {error}"

TABLES, DIM, BATCH, POOL, FEATURES = 8, 64, 2048, 20, 26


def _per_call(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def side_by_side(ours, theirs, reps=7, seconds=0.25):
    """(ours s/call, theirs s/call, median ratio) over interleaved repetitions."""
    ours(), theirs()
    n_ours = max(1, int(seconds / _per_call(ours, 1)))
    n_theirs = max(1, int(seconds / _per_call(theirs, 1)))
    times = [(_per_call(ours, n_ours), _per_call(theirs, n_theirs)) for _ in range(reps)]
    return (statistics.median(a for a, _ in times), statistics.median(b for _, b in times),
            statistics.median(a / b for a, b in times))


def collections(rows, rng):
    """[(name, ours, theirs)] for the embedding collections."""
    keys = [f"f{t}" for t in range(TABLES)]
    values = rng.integers(0, rows, TABLES * BATCH * POOL)
    lengths = np.full(TABLES * BATCH, POOL)
    upstream = rng.standard_normal((BATCH, TABLES * DIM)).astype(np.float32)
    ours_kjt = emberrec.KeyedJaggedTensor.from_lengths_sync(keys, ember.from_numpy(values), ember.from_numpy(lengths))
    theirs_kjt = torchrec.KeyedJaggedTensor.from_lengths_sync(keys, torch.from_numpy(values), torch.from_numpy(lengths))
    ours_tables = [emberrec.EmbeddingBagConfig(num_embeddings=rows, embedding_dim=DIM, name=f"t{t}",
                                               feature_names=[keys[t]]) for t in range(TABLES)]
    theirs_tables = [torchrec.EmbeddingBagConfig(num_embeddings=rows, embedding_dim=DIM, name=f"t{t}",
                                                 feature_names=[keys[t]]) for t in range(TABLES)]
    ours_ebc = emberrec.EmbeddingBagCollection(ours_tables)
    theirs_ebc = torchrec.EmbeddingBagCollection(theirs_tables, device=torch.device("cpu"))
    theirs_ebc.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours_ebc.state_dict().items()})
    ours_grad, theirs_grad = ember.from_numpy(upstream), torch.from_numpy(upstream)

    def ours_forward():
        with ember.no_grad():
            return ours_ebc(ours_kjt).values()

    def theirs_forward():
        with torch.no_grad():
            return theirs_ebc(theirs_kjt).values()

    def ours_train():
        ours_ebc.zero_grad()
        ours_ebc(ours_kjt).values().backward(ours_grad)

    def theirs_train():
        theirs_ebc.zero_grad()
        theirs_ebc(theirs_kjt).values().backward(theirs_grad)

    out = [("EmbeddingBagCollection forward", ours_forward, theirs_forward),
           ("EmbeddingBagCollection forward+backward", ours_train, theirs_train)]
    ours_fused = FusedEmbeddingBagCollection(ours_tables, ember.optim.SGD, {"lr": 0.01})
    theirs_fused = TorchRecFusedEBC(theirs_tables, torch.optim.SGD, {"lr": 0.01}, device=torch.device("cpu"))
    out.append(("FusedEmbeddingBagCollection SGD step",
                lambda: ours_fused(ours_kjt).values().backward(ours_grad),
                lambda: theirs_fused(theirs_kjt).values().backward(theirs_grad)))
    return out


def kjt_operations(rng):
    keys = [f"feature_{i}" for i in range(FEATURES)]
    lengths = rng.integers(0, 11, FEATURES * BATCH)
    values = rng.integers(0, 1 << 20, int(lengths.sum()))
    ev, el = ember.from_numpy(values), ember.from_numpy(lengths)
    tv, tl = torch.from_numpy(values), torch.from_numpy(lengths)
    ours = emberrec.KeyedJaggedTensor.from_lengths_sync(keys, ev, el)
    theirs = torchrec.KeyedJaggedTensor.from_lengths_sync(keys, tv, tl)
    order = list(rng.permutation(FEATURES))
    segments = [7, 6, 13]
    return [
        ("KeyedJaggedTensor.from_lengths_sync", lambda: emberrec.KeyedJaggedTensor.from_lengths_sync(keys, ev, el),
         lambda: torchrec.KeyedJaggedTensor.from_lengths_sync(keys, tv, tl)),
        ("KeyedJaggedTensor.permute", lambda: ours.permute(order), lambda: theirs.permute(order)),
        ("KeyedJaggedTensor.split", lambda: ours.split(segments), lambda: theirs.split(segments)),
        # to_dict is cached on a KJT (in both): time it on a fresh one, as a collection's forward sees it
        ("KeyedJaggedTensor.from_lengths_sync+to_dict",
         lambda: emberrec.KeyedJaggedTensor.from_lengths_sync(keys, ev, el).to_dict(),
         lambda: torchrec.KeyedJaggedTensor.from_lengths_sync(keys, tv, tl).to_dict()),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    if torchrec is None:
        print(f"bench_rec: TorchRec is not importable here ({MISSING}); nox -s bench installs it. Skipped.")
        return 0
    rng = np.random.default_rng(0)
    print(f"emberrec {emberrec.__version__} on ember {ember.__version__}; torchrec (torch {torch.__version__}); "
          f"{TABLES} tables x {args.rows} x {DIM}, B {BATCH}, L {POOL}; KJT: {FEATURES} features, B {BATCH}")
    print(f"{'case':44s} {'thr':>3s} {'emberrec':>10s} {'torchrec':>10s} {'ratio':>6s}")
    cases = collections(args.rows, rng) + kjt_operations(rng)
    for threads in (int(t) for t in args.threads.split(",")):
        ember.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, ours, theirs in cases:
            a, b, ratio = side_by_side(ours, theirs)
            unit, scale = ("ms", 1e3) if b > 1e-3 else ("us", 1e6)
            print(f"{name:44s} {threads:3d} {a * scale:8.2f}{unit} {b * scale:8.2f}{unit} {ratio:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
