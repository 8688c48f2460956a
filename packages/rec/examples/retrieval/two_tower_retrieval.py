"""Two-tower retrieval end to end on a planted problem: train the towers with in-batch negatives,
index every item's embedding in a FAISS IndexIVFPQ, retrieve the top 10 items of every user, and
report recall@10 of the planted true items, with an inner-product index and with TorchRec's L2
index (which ranks by distance, not by the towers' dot product: it can miss where candidate norms
differ).

The planted problem: items fall into ``groups`` groups (item i in group i % groups), every user
belongs to one group at random, and a user's true items are its group's items. Training sees
only (user, one true item) pairs; the other pairs of a batch are its negatives.

    PYTHONPATH=packages/rec/src python packages/rec/examples/retrieval/two_tower_retrieval.py

(As TorchRec's examples/retrieval: two_tower_train.py, then two_tower_retrieval.py.)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
from emberrec.datasets.utils import Batch
from emberrec.models.two_tower import (
    TwoTower,
    TwoTowerRetrieval,
    TwoTowerTrainTask,
    convert_TwoTower_to_TwoTowerRetrieval,
    get_index,
)


def run(num_users: int = 2000, num_items: int = 1000, groups: int = 100, embedding_dim: int = 16,
        layer_sizes: tuple[int, ...] = (16,), batch_size: int = 128, steps: int = 600, lr: float = 0.3,
        k: int = 10, num_centroids: int = 16, num_probe: int = 8, num_subquantizers: int = 4,
        bits_per_code: int = 8, metrics: tuple[str, ...] = ("inner_product", "l2"), seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    ember.manual_seed(seed)
    user_group = rng.integers(0, groups, num_users)
    items_of_group = [np.arange(g, num_items, groups) for g in range(groups)]

    # Train: one table per tower, linear towers (activation_on_last=False: a ReLU on the last
    # layer would keep every logit >= 0, so no pair could be scored as a negative).
    tables = [EmbeddingBagConfig(name="t_user", embedding_dim=embedding_dim, num_embeddings=num_users,
                                 feature_names=["user"]),
              EmbeddingBagConfig(name="t_item", embedding_dim=embedding_dim, num_embeddings=num_items,
                                 feature_names=["item"])]
    task = TwoTowerTrainTask(TwoTower(EmbeddingBagCollection(tables), list(layer_sizes), activation_on_last=False),
                             in_batch_negatives=True)
    opt = ember.optim.Adagrad(task.parameters(), lr=lr)
    start = time.perf_counter()
    for _ in range(steps):
        users = rng.integers(0, num_users, batch_size)
        items = np.array([rng.choice(items_of_group[user_group[u]]) for u in users])
        kjt = KeyedJaggedTensor.from_lengths_sync(
            keys=["user", "item"], values=ember.from_numpy(np.concatenate([users, items])),
            lengths=ember.ones(2 * batch_size, dtype=ember.int32))
        batch = Batch(dense_features=ember.zeros(batch_size, 0), sparse_features=kjt,
                      labels=ember.ones(batch_size, dtype=ember.int64))
        opt.zero_grad()
        loss, _ = task(batch)
        loss.backward()
        opt.step()
    train_seconds = time.perf_counter() - start

    recalls = {metric: recall_at_k(task, tables, metric, user_group, items_of_group, k=k,
                                   num_centroids=num_centroids, num_probe=num_probe,
                                   num_subquantizers=num_subquantizers, bits_per_code=bits_per_code,
                                   layer_sizes=layer_sizes)
               for metric in metrics}
    return {"recall": recalls, "final_loss": float(loss), "train_seconds": train_seconds,
            "ms_per_step": 1000.0 * train_seconds / steps}


def recall_at_k(task: TwoTowerTrainTask, tables: list[EmbeddingBagConfig], metric: str, user_group: np.ndarray,
                items_of_group: list[np.ndarray], *, k: int, num_centroids: int, num_probe: int,
                num_subquantizers: int, bits_per_code: int, layer_sizes: tuple[int, ...]) -> float:
    """Moves the trained towers into a TwoTowerRetrieval over a fresh index of every item and
    returns the mean recall@k of the users' planted items."""
    num_users, num_items = tables[0].num_embeddings, tables[1].num_embeddings
    retrieval = TwoTowerRetrieval(
        get_index(layer_sizes[-1], num_centroids, num_probe, num_subquantizers, bits_per_code, metric=metric),
        query_ebc=EmbeddingBagCollection([tables[0]]), candidate_ebc=EmbeddingBagCollection([tables[1]]),
        layer_sizes=list(layer_sizes), k=k, activation_on_last=False)
    retrieval.load_state_dict(convert_TwoTower_to_TwoTowerRetrieval(task.state_dict(), [tables[0].name],
                                                                     [tables[1].name]))
    retrieval.eval()
    with ember.no_grad():
        item_embeddings = retrieval.embed_candidates(ember.arange(num_items)).numpy().astype(np.float32)
        retrieval.faiss_index.train(item_embeddings)
        retrieval.faiss_index.add(item_embeddings)  # FAISS id i = item i
        queries = KeyedJaggedTensor.from_lengths_sync(keys=[tables[0].feature_names[0]], values=ember.arange(num_users),
                                                      lengths=ember.ones(num_users, dtype=ember.int32))
        _, found = retrieval.retrieve(queries)
    found = found.numpy()
    hits = [np.isin(found[u], items_of_group[user_group[u]]).sum() / min(k, len(items_of_group[user_group[u]]))
            for u in range(num_users)]
    return float(np.mean(hits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = run(num_users=args.users, num_items=args.items, groups=args.groups, steps=args.steps, seed=args.seed)
    print(f"{args.users} users, {args.items} items in {args.groups} planted groups; {args.steps} steps, "
          f"final training loss {result['final_loss']:.4f}, {result['ms_per_step']:.2f} ms per step")
    for metric, recall in result["recall"].items():
        print(f"IndexIVFPQ ({metric}): recall@10 {recall:.4f}")
    # The towers score q . c; an L2 index ranks by ||q - c||, which agrees only where candidate
    # norms are alike (Note [L2 index, dot-product towers] in emberrec/models/two_tower.py).


if __name__ == "__main__":
    main()
