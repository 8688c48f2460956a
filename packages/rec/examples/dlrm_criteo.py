"""Train DLRM on a generated Criteo-format TSV file and report held-out AUC and time per step.

The file comes from ``emberrec.datasets.synthetic.generate_criteo_tsv``: Criteo's layout (label,
13 integer counts, 26 hex categoricals, empty fields) with a planted click model, so a model that
learns gets an AUC clearly above 0.5 (computed exactly by emberrec.metrics); the click model's own
probabilities give the best AUC any model can reach on the held-out rows ("oracle").

    PYTHONPATH=packages/rec/src python packages/rec/examples/dlrm_criteo.py --rows 50000

Rows are read through ``criteo_kaggle`` (an emberdata pipe), split 90/10 by row index
(``idx_split_train_val``) and batched into ``Batch`` es by ``criteo_batches``. Dense and embedding
parameters are trained together by one ember.optim optimizer (Adagrad by default): the
EmbeddingBagCollection's tables are ordinary parameters.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig
from emberrec.datasets.criteo import DEFAULT_CAT_NAMES, DEFAULT_INT_NAMES, criteo_batches, criteo_kaggle
from emberrec.datasets.synthetic import generate_criteo_tsv
from emberrec.datasets.utils import idx_split_train_val
from emberrec.metrics.auc import compute_auc
from emberrec.models.dlrm import DLRM, DLRM_DCN, DLRMTrain


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Exact AUC (ties count half) by emberrec.metrics' sort-based computation."""
    scores = ember.from_numpy(np.asarray(scores, dtype=np.float64))[None]
    labels = ember.from_numpy(np.asarray(labels, dtype=np.float64))[None]
    return float(compute_auc(1, scores, labels, ember.ones(*labels.shape, dtype=ember.float64))[0])


def build_model(embedding_dim: int, num_embeddings: int, dcn: bool) -> DLRMTrain:
    tables = [EmbeddingBagConfig(name=f"t_{name}", embedding_dim=embedding_dim, num_embeddings=num_embeddings,
                                 feature_names=[name]) for name in DEFAULT_CAT_NAMES]
    ebc = EmbeddingBagCollection(tables=tables)
    common = dict(embedding_bag_collection=ebc, dense_in_features=len(DEFAULT_INT_NAMES),
                  dense_arch_layer_sizes=[32, embedding_dim], over_arch_layer_sizes=[32, 16, 1])
    model = DLRM_DCN(**common, dcn_num_layers=2, dcn_low_rank_dim=8) if dcn else DLRM(**common)
    return DLRMTrain(model)


def evaluate(train_model: DLRMTrain, batches) -> tuple[float, float]:
    """(AUC, mean loss) over ``batches``."""
    train_model.eval()
    scores, labels, losses = [], [], []
    with ember.no_grad():
        for batch in batches:
            loss, (_, logits, batch_labels) = train_model(batch)
            scores.append(logits.numpy().copy())
            labels.append(batch_labels.numpy().copy())
            losses.append(float(loss))
    train_model.train()
    return roc_auc(np.concatenate(scores), np.concatenate(labels)), float(np.mean(losses))


def train(path: str, *, batch_size: int = 256, epochs: int = 1, embedding_dim: int = 16,
          num_embeddings: int = 2000, lr: float = 0.05, optimizer: str = "adagrad", dcn: bool = False,
          seed: int = 0, log_every: int = 0) -> dict[str, float]:
    """Trains on 90% of the rows of ``path`` and evaluates on the other 10%."""
    ember.manual_seed(seed)
    hashes = [num_embeddings] * len(DEFAULT_CAT_NAMES)
    train_rows, val_rows = idx_split_train_val(criteo_kaggle(path), 0.9)
    # Rows are parsed once: a pass over the file costs more than a training step on it.
    train_batches = list(criteo_batches(train_rows, batch_size, hashes))
    val_batches = list(criteo_batches(val_rows, 4096, hashes))
    model = build_model(embedding_dim, num_embeddings, dcn)
    optim_cls = {"adagrad": ember.optim.Adagrad, "sgd": ember.optim.SGD}[optimizer]
    opt = optim_cls(model.parameters(), lr=lr)
    step_times = []
    for epoch in range(epochs):
        for batch in train_batches:
            start = time.perf_counter()
            opt.zero_grad()
            loss, _ = model(batch)
            loss.backward()
            opt.step()
            step_times.append(time.perf_counter() - start)
            if log_every and len(step_times) % log_every == 0:
                print(f"epoch {epoch} step {len(step_times)}: loss {float(loss):.4f}")
    auc, val_loss = evaluate(model, val_batches)
    # The median resists the stalls of a shared machine; the mean is what a run costs.
    return {"auc": auc, "val_loss": val_loss, "steps": len(step_times),
            "ms_per_step": 1000.0 * float(np.mean(step_times)), "median_ms_per_step": 1000.0 * float(np.median(step_times)),
            "train_rows": sum(len(b.labels) for b in train_batches), "val_rows": sum(len(b.labels) for b in val_batches)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--embedding-dim", type=int, default=16)
    parser.add_argument("--num-embeddings", type=int, default=2000, help="hash size of every categorical")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--optimizer", choices=["adagrad", "sgd"], default="adagrad")
    parser.add_argument("--dcn", action="store_true", help="DLRM_DCN (a low-rank cross net interaction)")
    parser.add_argument("--threads", type=int, default=0, help="ember threads (0: ember's default)")
    parser.add_argument("--data", default="", help="an existing Criteo-format file instead of a generated one")
    args = parser.parse_args()
    if args.threads:
        ember.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.data or os.path.join(tmp, "criteo_synthetic.tsv")
        oracle = None
        if not args.data:
            probability = generate_criteo_tsv(path, args.rows, seed=0)
            with open(path) as rows:
                labels = np.array([int(line.split("\t", 1)[0]) for line in rows])
            held_out = np.arange(args.rows) % 100 >= 90  # the rows idx_split_train_val(…, 0.9) holds out
            oracle = roc_auc(probability[held_out], labels[held_out])
        result = train(path, batch_size=args.batch_size, epochs=args.epochs, embedding_dim=args.embedding_dim,
                       num_embeddings=args.num_embeddings, lr=args.lr, optimizer=args.optimizer, dcn=args.dcn,
                       log_every=100)
    model_name = "DLRM_DCN" if args.dcn else "DLRM"
    print(f"{model_name}: {result['train_rows']} train rows, {result['val_rows']} held out, {result['steps']} steps "
          f"of batch {args.batch_size}, {ember.get_num_threads()} threads")
    print(f"held-out AUC {result['auc']:.4f} (loss {result['val_loss']:.4f})"
          + (f"; the click model's own AUC on those rows {oracle:.4f}" if oracle is not None else ""))
    print(f"time per training step: median {result['median_ms_per_step']:.2f} ms, mean {result['ms_per_step']:.2f} ms")


if __name__ == "__main__":
    main()
