"""Two-tower retrieval (TorchRec's ``examples/retrieval``): towers, training task, FAISS index and
the retrieval module.

    query features ──query table──> pooled (B, D) ──query_proj MLP──────> q (B, E)
                                                                            │  logit = q · c
    candidate features ──candidate table──> pooled ──candidate_proj MLP──> c (B, E)

Training (:class:`TwoTowerTrainTask`) fits BCE-with-logits on ``q · c``; with
``in_batch_negatives=True`` every other candidate of the batch is a negative for each query (the
B x B logits ``Q C^T``, targets on the diagonal). Serving (:class:`TwoTowerRetrieval`) embeds all
candidates once into a ``faiss.IndexIVFPQ`` (ids = candidate ids), finds the k nearest
candidates of each query embedding and scores them exactly.

FAISS (``faiss-cpu``, the ``retrieval`` extra) is imported only when an index is built.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

import ember
from ember import nn
from emberrec.modules.mlp import MLP
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor

if TYPE_CHECKING:
    from emberrec.datasets.batch import Batch
    from emberrec.modules.embedding_modules import EmbeddingBagCollection


def get_index(embedding_dim: int, num_centroids: int, num_probe: int, num_subquantizers: int,
              bits_per_code: int, device: ember.device | str | None = None, *, metric: str = "l2") -> Any:
    """A ``faiss.IndexIVFPQ(IndexFlatL2(d), d, nlist, M, nbits)`` with ``nprobe`` set (untrained).

    ``embedding_dim`` must be a multiple of ``num_subquantizers`` (each subquantizer codes
    d / M dimensions), and ``num_probe`` at most ``num_centroids`` (the lists it can visit).
    Train it (``index.train(x)``, at least ``max(nlist, 2**nbits)`` vectors) before ``add``.
    faiss-cpu has no GPU index: a CUDA ``device`` is refused.

    Note [L2 index, dot-product towers]: the towers score ``q · c``, while an L2 index ranks by
    ``||q - c||^2 = ||q||^2 + ||c||^2 - 2 q · c``; the two agree only when candidate norms are
    alike. TorchRec builds the L2 index (the default here); ``metric="inner_product"`` (an
    addition) builds ``IndexIVFPQ(IndexFlatIP(d), ..., METRIC_INNER_PRODUCT)``, which ranks as
    the towers do.
    """
    if metric not in ("l2", "inner_product"):
        raise ValueError(f"metric must be 'l2' or 'inner_product', got {metric!r}")
    for name, value in (("embedding_dim", embedding_dim), ("num_centroids", num_centroids), ("num_probe", num_probe),
                        ("num_subquantizers", num_subquantizers), ("bits_per_code", bits_per_code)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if embedding_dim % num_subquantizers:
        raise ValueError(f"embedding_dim ({embedding_dim}) must be a multiple of num_subquantizers "
                         f"({num_subquantizers}): each subquantizer codes an equal slice of the vector")
    if num_probe > num_centroids:
        raise ValueError(f"num_probe ({num_probe}) must not exceed num_centroids ({num_centroids}), "
                         f"the number of inverted lists")
    if device is not None and ember.device(device).type != "cpu":
        raise ValueError(f"faiss-cpu builds CPU indexes only, got device {device}")
    import faiss

    if metric == "l2":
        quantizer = faiss.IndexFlatL2(embedding_dim)
        index = faiss.IndexIVFPQ(quantizer, embedding_dim, num_centroids, num_subquantizers, bits_per_code)
    else:
        quantizer = faiss.IndexFlatIP(embedding_dim)
        index = faiss.IndexIVFPQ(quantizer, embedding_dim, num_centroids, num_subquantizers, bits_per_code,
                                 faiss.METRIC_INNER_PRODUCT)
    index.nprobe = num_probe  # (faiss's wrapper keeps the quantizer alive with the index)
    return index


def _common_dim(*ebcs: EmbeddingBagCollection) -> int:
    dims = {config.name: config.embedding_dim for ebc in ebcs for config in ebc.embedding_bag_configs()}
    if len(set(dims.values())) != 1:
        raise ValueError(f"both towers' tables must have the same embedding_dim, got {dims}")
    return next(iter(dims.values()))


class TwoTower(nn.Module):
    """Query and candidate towers over one EmbeddingBagCollection of exactly two tables: the
    first table's features form the query, the second's the candidate; each tower is an MLP of
    ``layer_sizes`` over its pooled embeddings. ``forward(kjt)`` -> ``(query (B, E), candidate (B, E))``.
    """

    def __init__(self, embedding_bag_collection: EmbeddingBagCollection, layer_sizes: list[int],
                 device: ember.device | str | None = None, activation_on_last: bool = True) -> None:
        super().__init__()
        configs = embedding_bag_collection.embedding_bag_configs()
        if len(configs) != 2:
            raise ValueError(f"TwoTower expects two embedding tables (query, candidate), got {len(configs)}")
        embedding_dim = _common_dim(embedding_bag_collection)
        if any(len(config.feature_names) != 1 for config in configs):
            # The towers' input width is one table's D, so each table serves one feature.
            raise ValueError(f"each TwoTower table serves one feature, got "
                             f"{[config.feature_names for config in configs]}")
        self._feature_names_query: list[str] = list(configs[0].feature_names)
        self._candidate_feature_names: list[str] = list(configs[1].feature_names)
        self.ebc = embedding_bag_collection
        self.query_proj = MLP(in_size=embedding_dim, layer_sizes=layer_sizes, device=device,
                              activation_on_last=activation_on_last)
        self.candidate_proj = MLP(in_size=embedding_dim, layer_sizes=layer_sizes, device=device,
                                  activation_on_last=activation_on_last)

    def forward(self, kjt: KeyedJaggedTensor) -> tuple[ember.Tensor, ember.Tensor]:
        pooled = self.ebc(kjt)
        query = self.query_proj(ember.cat([pooled[f] for f in self._feature_names_query], dim=1))
        candidate = self.candidate_proj(ember.cat([pooled[f] for f in self._candidate_feature_names], dim=1))
        return query, candidate


class TwoTowerTrainTask(nn.Module):
    """``forward(batch)`` -> ``(loss, (loss, logits, labels))`` with ``logits = sum(q * c, 1)``.

    ``in_batch_negatives=False`` (TorchRec's task): BCE-with-logits of each pair against
    ``batch.labels``. ``in_batch_negatives=True``: BCE over the B x B logits ``Q C^T`` with target
    ``labels[i]`` on the diagonal and 0 elsewhere, so each query also learns to score the batch's
    other candidates low (a candidate repeated in the batch counts as a negative too). The
    returned logits are the diagonal either way.
    """

    def __init__(self, two_tower: TwoTower, in_batch_negatives: bool = False) -> None:
        super().__init__()
        self.two_tower = two_tower
        self.in_batch_negatives = in_batch_negatives
        self.loss_fn = nn.BCEWithLogitsLoss()

    def forward(self, batch: Batch) -> tuple[ember.Tensor, tuple[ember.Tensor, ember.Tensor, ember.Tensor]]:
        query, candidate = self.two_tower(batch.sparse_features)
        labels = batch.labels.float()
        if self.in_batch_negatives:
            all_logits = ember.matmul(query, candidate.t())  # (B, B)
            logits = ember.diagonal(all_logits)
            off_diagonal = 1.0 - ember.eye(len(labels))
            # The B - 1 negatives per query would drown its one pair: each side is averaged apart.
            negatives = nn.functional.binary_cross_entropy_with_logits(
                all_logits, ember.zeros_like(all_logits), weight=off_diagonal, reduction="sum")
            loss = self.loss_fn(logits, labels) + negatives / off_diagonal.sum().clamp(min=1.0)
        else:
            logits = (query * candidate).sum(dim=1)
            loss = self.loss_fn(logits, labels)
        return loss, (loss.detach(), logits.detach(), batch.labels.detach())


def convert_TwoTower_to_TwoTowerRetrieval(sd: OrderedDict[str, ember.Tensor], query_tables: list[str],
                                          candidate_tables: list[str]) -> OrderedDict[str, ember.Tensor]:
    """Renames a TwoTower state dict's tables for TwoTowerRetrieval (towers' MLPs keep their names
    once ``two_tower.`` is stripped, as a TwoTowerTrainTask's state dict has it)."""
    out: OrderedDict[str, ember.Tensor] = OrderedDict()
    renames = {f"two_tower.ebc.embedding_bags.{t}.weight": f"query_ebc.embedding_bags.{t}.weight" for t in query_tables}
    renames.update({f"two_tower.ebc.embedding_bags.{t}.weight": f"candidate_ebc.embedding_bags.{t}.weight"
                    for t in candidate_tables})
    for key, value in sd.items():
        if key in renames:
            out[renames[key]] = value
        elif key.startswith("two_tower.") and not key.startswith("two_tower.ebc."):
            out[key[len("two_tower."):]] = value
        else:
            out[key] = value
    return out


class TwoTowerRetrieval(nn.Module):
    """Top-k retrieval with trained towers and a FAISS index of candidate embeddings.

    ``faiss_index`` holds the candidate tower's output for every candidate id (id i at FAISS id
    i: add them in id order, or with ``add_with_ids``). ``forward(query_kjt)`` returns the exact
    scores ``q · c`` (B, k) of the k candidates FAISS finds nearest to each query (see Note
    [L2 index, dot-product towers] at :func:`get_index`), best
    first; :meth:`retrieve` also returns their ids (B, k), ``-1`` (score ``-inf``) where the index
    found fewer than k. (TorchRec's module multiplies the (B*k, E) candidates with the (B, E)
    queries directly, which only lines up for B = 1; here they are reshaped to (B, k, E).)
    """

    def __init__(self, faiss_index: Any, query_ebc: EmbeddingBagCollection, candidate_ebc: EmbeddingBagCollection,
                 layer_sizes: list[int], k: int, device: ember.device | str | None = None,
                 dtype: ember.dtype = ember.float32, activation_on_last: bool = True) -> None:
        super().__init__()
        self.embedding_dim: int = _common_dim(query_ebc, candidate_ebc)
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise ValueError(f"k must be a positive int, got {k!r}")
        self.candidate_feature_names: list[str] = list(candidate_ebc.embedding_bag_configs()[0].feature_names)
        self.query_ebc = query_ebc
        self.candidate_ebc = candidate_ebc
        self.query_proj = MLP(in_size=self.embedding_dim, layer_sizes=layer_sizes, device=device, dtype=dtype,
                              activation_on_last=activation_on_last)
        self.candidate_proj = MLP(in_size=self.embedding_dim, layer_sizes=layer_sizes, device=device, dtype=dtype,
                                  activation_on_last=activation_on_last)
        self.faiss_index = faiss_index
        self.k = k
        self.device = device

    def embed_candidates(self, candidate_ids: ember.Tensor) -> ember.Tensor:
        """The candidate tower's output (N, E) for ids (N,): what the FAISS index holds."""
        kjt = KeyedJaggedTensor.from_lengths_sync(
            keys=self.candidate_feature_names, values=candidate_ids.reshape(-1).long(),
            lengths=ember.ones(candidate_ids.numel(), dtype=ember.int32))
        return self.candidate_proj(self.candidate_ebc(kjt).values())

    def retrieve(self, query_kjt: KeyedJaggedTensor) -> tuple[ember.Tensor, ember.Tensor]:
        """``(scores (B, k), candidate ids (B, k))``, each row sorted by descending exact score."""
        if not self.faiss_index.is_trained or self.faiss_index.ntotal == 0:
            raise ValueError("the FAISS index is empty: train it and add the candidate embeddings first")
        batch_size = query_kjt.stride()
        query = self.query_proj(self.query_ebc(query_kjt).values())  # (B, E)
        _, found = self.faiss_index.search(np.ascontiguousarray(query.detach().numpy(), dtype=np.float32), self.k)
        ids = ember.from_numpy(found.astype(np.int64))  # (B, k), -1 where missing
        missing = ids < 0
        candidate = self.embed_candidates(ember.where(missing, ember.zeros_like(ids), ids))  # (B * k, E)
        candidate = candidate.reshape(batch_size, self.k, -1)
        scores = (query.unsqueeze(1) * candidate).sum(dim=2)  # (B, k)
        scores = ember.where(missing, ember.full_like(scores, float("-inf")), scores)
        scores, order = ember.sort(scores, dim=1, descending=True)
        return scores, ember.gather(ids, 1, order)

    def forward(self, query_kjt: KeyedJaggedTensor) -> ember.Tensor:
        return self.retrieve(query_kjt)[0]
