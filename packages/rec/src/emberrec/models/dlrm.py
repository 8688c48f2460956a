"""DLRM (TorchRec's ``torchrec.models.dlrm``).

"Deep Learning Recommendation Model for Personalization and Recommendation Systems"
(https://arxiv.org/abs/1906.00091). Notation: B batch size, F sparse features, D their common
embedding dimension.

    dense_features (B, in) ──DenseArch──> (B, D) ─┐
                                                  ├─ InteractionArch ─> (B, D + F + C(F, 2)) ─ OverArch ─> logits
    sparse_features KJT ──SparseArch──> (B, F, D) ┘
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import ember
from ember import nn
from emberrec.modules.crossnet import LowRankCrossNet
from emberrec.modules.mlp import MLP

if TYPE_CHECKING:
    from emberrec.datasets.batch import Batch
    from emberrec.modules.embedding_modules import EmbeddingBagCollection
    from emberrec.sparse.jagged_tensor import KeyedJaggedTensor


def choose(n: int, k: int) -> int:
    """``C(n, k)``, 0 outside ``0 <= k <= n``."""
    return math.comb(n, k) if 0 <= k <= n else 0


def _embedding_dim(embedding_bag_collection: EmbeddingBagCollection) -> int:
    """The common embedding dimension D; ValueError when there are no tables or they differ."""
    configs = embedding_bag_collection.embedding_bag_configs()
    if not configs:
        raise ValueError("DLRM needs at least one embedding bag table, got an empty EmbeddingBagCollection")
    dims = {config.name: config.embedding_dim for config in configs}
    if len(set(dims.values())) != 1:
        raise ValueError(f"all EmbeddingBagConfigs of a DLRM must have the same embedding_dim, got {dims}")
    return configs[0].embedding_dim


class SparseArch(nn.Module):
    """Pooled embedding lookups of every sparse feature: KJT -> (B, F, D).

    Features come out in the order of the collection's configs and their ``feature_names``.
    """

    def __init__(self, embedding_bag_collection: EmbeddingBagCollection) -> None:
        super().__init__()
        self.embedding_bag_collection = embedding_bag_collection
        self.D: int = _embedding_dim(embedding_bag_collection)
        self._sparse_feature_names: list[str] = [
            name for config in embedding_bag_collection.embedding_bag_configs() for name in config.feature_names
        ]
        self.F: int = len(self._sparse_feature_names)

    def forward(self, features: KeyedJaggedTensor) -> ember.Tensor:
        pooled = self.embedding_bag_collection(features)
        if list(pooled.keys()) == self._sparse_feature_names:
            values = pooled.values()  # already (B, F * D) in feature order: no copy
        else:
            by_key = pooled.to_dict()
            values = ember.cat([by_key[name] for name in self._sparse_feature_names], dim=1)
        return values.reshape(-1, self.F, self.D)

    @property
    def sparse_feature_names(self) -> list[str]:
        return self._sparse_feature_names


class DenseArch(nn.Module):
    """An MLP with ReLU after every layer, dense features (B, in_features) -> (B, layer_sizes[-1])."""

    def __init__(self, in_features: int, layer_sizes: list[int], device: ember.device | str | None = None) -> None:
        super().__init__()
        self.model = MLP(in_features, layer_sizes, bias=True, activation="relu", device=device)

    def forward(self, features: ember.Tensor) -> ember.Tensor:
        return self.model(features)


def _combined(dense_features: ember.Tensor, sparse_features: ember.Tensor) -> ember.Tensor:
    if dense_features.dim() != 2 or sparse_features.dim() != 3 or sparse_features.shape[0] != dense_features.shape[0] \
            or sparse_features.shape[2] != dense_features.shape[1]:
        raise ValueError(f"interaction expects dense (B, D) and sparse (B, F, D) features, got "
                         f"{tuple(dense_features.shape)} and {tuple(sparse_features.shape)}")
    return ember.cat((dense_features.unsqueeze(1), sparse_features), dim=1)  # (B, F + 1, D)


class InteractionArch(nn.Module):
    """Pairwise dot products of [dense; sparse features], concatenated with dense.

    With ``x = [dense; s_1; ...; s_F]`` (B, F + 1, D), returns ``[dense, (x_i . x_j) for i < j]``:
    (B, D + C(F + 1, 2)) = (B, D + F + C(F, 2)), the pairs in row-major upper-triangle order.
    """

    def __init__(self, num_sparse_features: int) -> None:
        super().__init__()
        self.F: int = num_sparse_features
        self.register_buffer("triu_indices", ember.triu_indices(self.F + 1, self.F + 1, offset=1), persistent=False)

    def forward(self, dense_features: ember.Tensor, sparse_features: ember.Tensor) -> ember.Tensor:
        if self.F <= 0:
            return dense_features
        combined = _combined(dense_features, sparse_features)
        if combined.shape[1] != self.F + 1:
            raise ValueError(f"InteractionArch was built for {self.F} sparse features, got {combined.shape[1] - 1}")
        interactions = ember.bmm(combined, combined.transpose(1, 2))  # (B, F + 1, F + 1)
        flat = interactions[:, self.triu_indices[0], self.triu_indices[1]]
        return ember.cat((dense_features, flat), dim=1)


class InteractionDCNArch(nn.Module):
    """Deep & Cross Network v2 over the flattened [dense; sparse features]: (B, (F + 1) * D)."""

    def __init__(self, num_sparse_features: int, crossnet: nn.Module) -> None:
        super().__init__()
        self.F: int = num_sparse_features
        self.crossnet = crossnet

    def forward(self, dense_features: ember.Tensor, sparse_features: ember.Tensor) -> ember.Tensor:
        if self.F <= 0:
            return dense_features
        combined = _combined(dense_features, sparse_features)
        return self.crossnet(combined.reshape(combined.shape[0], -1))


class InteractionProjectionArch(nn.Module):
    """Projected interaction: two MLP branches over the flattened [dense; sparse] (B, (F + 1) * D)
    give Y (B, F1 * D) and Z (B, D * F2); returns ``[dense, flatten(Y (B, F1, D) @ Z (B, D, F2))]``,
    (B, D + F1 * F2)."""

    def __init__(self, num_sparse_features: int, interaction_branch1: nn.Module,
                 interaction_branch2: nn.Module) -> None:
        super().__init__()
        self.F: int = num_sparse_features
        self.interaction_branch1 = interaction_branch1
        self.interaction_branch2 = interaction_branch2

    def forward(self, dense_features: ember.Tensor, sparse_features: ember.Tensor) -> ember.Tensor:
        if self.F <= 0:
            return dense_features
        combined = _combined(dense_features, sparse_features)
        B, D = dense_features.shape
        flat = combined.reshape(B, -1)
        branch1 = self.interaction_branch1(flat).reshape(B, -1, D)
        branch2 = self.interaction_branch2(flat).reshape(B, D, -1)
        return ember.cat((dense_features, ember.bmm(branch1, branch2).reshape(B, -1)), dim=1)


class OverArch(nn.Module):
    """ReLU MLP over ``layer_sizes[:-1]`` then a plain Linear to ``layer_sizes[-1]`` (the logits)."""

    def __init__(self, in_features: int, layer_sizes: list[int], device: ember.device | str | None = None) -> None:
        super().__init__()
        if len(layer_sizes) <= 1:
            raise ValueError(f"OverArch must have multiple layers, got layer_sizes={list(layer_sizes)}")
        self.model = nn.Sequential(
            MLP(in_features, layer_sizes[:-1], bias=True, activation="relu", device=device),
            nn.Linear(layer_sizes[-2], layer_sizes[-1], bias=True, device=device),
        )

    def forward(self, features: ember.Tensor) -> ember.Tensor:
        return self.model(features)


class DLRM(nn.Module):
    """DLRM: dense arch, sparse arch, dot interaction, over arch.

    All tables need the same ``embedding_dim`` D, and ``dense_arch_layer_sizes[-1]`` must be D
    (ValueError otherwise). ``over_arch_layer_sizes`` excludes the interaction's width, which is
    ``D + F + C(F, 2)``.

    >>> from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    >>> D = 8
    >>> ebc = EmbeddingBagCollection(tables=[
    ...     EmbeddingBagConfig(name="t1", embedding_dim=D, num_embeddings=100, feature_names=["f1"]),
    ...     EmbeddingBagConfig(name="t2", embedding_dim=D, num_embeddings=100, feature_names=["f2"])])
    >>> model = DLRM(ebc, dense_in_features=10, dense_arch_layer_sizes=[20, D], over_arch_layer_sizes=[5, 1])
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(
    ...     keys=["f1", "f2"], values=ember.tensor([1, 2, 4, 5, 4, 3]), lengths=ember.tensor([2, 1, 1, 2]))
    >>> model(dense_features=ember.rand(2, 10), sparse_features=kjt).shape
    (2, 1)
    """

    def __init__(
        self,
        embedding_bag_collection: EmbeddingBagCollection,
        dense_in_features: int,
        dense_arch_layer_sizes: list[int],
        over_arch_layer_sizes: list[int],
        dense_device: ember.device | str | None = None,
    ) -> None:
        super().__init__()
        embedding_dim = _embedding_dim(embedding_bag_collection)
        if not dense_arch_layer_sizes or dense_arch_layer_sizes[-1] != embedding_dim:
            raise ValueError(
                f"embedding_bag_collection dimension ({embedding_dim}) and final dense arch layer size "
                f"({dense_arch_layer_sizes[-1] if dense_arch_layer_sizes else None}) must match."
            )
        self.sparse_arch = SparseArch(embedding_bag_collection)
        num_sparse_features = len(self.sparse_arch.sparse_feature_names)
        self.dense_arch = DenseArch(dense_in_features, dense_arch_layer_sizes, device=dense_device)
        self.inter_arch: nn.Module = InteractionArch(num_sparse_features=num_sparse_features)
        over_in_features = embedding_dim + choose(num_sparse_features, 2) + num_sparse_features
        self.over_arch = OverArch(over_in_features, over_arch_layer_sizes, device=dense_device)

    def forward(self, dense_features: ember.Tensor, sparse_features: KeyedJaggedTensor) -> ember.Tensor:
        embedded_dense = self.dense_arch(dense_features)
        embedded_sparse = self.sparse_arch(sparse_features)
        concatenated_dense = self.inter_arch(dense_features=embedded_dense, sparse_features=embedded_sparse)
        return self.over_arch(concatenated_dense)


class DLRM_Projection(DLRM):
    """DLRM whose interaction is :class:`InteractionProjectionArch`: the final sizes of both branch
    MLPs (``interaction_branch{1,2}_layer_sizes[-1]``) must be multiples of D (ValueError)."""

    def __init__(
        self,
        embedding_bag_collection: EmbeddingBagCollection,
        dense_in_features: int,
        dense_arch_layer_sizes: list[int],
        over_arch_layer_sizes: list[int],
        interaction_branch1_layer_sizes: list[int],
        interaction_branch2_layer_sizes: list[int],
        dense_device: ember.device | str | None = None,
    ) -> None:
        super().__init__(embedding_bag_collection, dense_in_features, dense_arch_layer_sizes,
                         over_arch_layer_sizes, dense_device)
        embedding_dim = self.sparse_arch.D
        num_sparse_features = self.sparse_arch.F
        projected = []
        for which, sizes in (("branch1", interaction_branch1_layer_sizes), ("branch2", interaction_branch2_layer_sizes)):
            if not sizes or sizes[-1] % embedding_dim:
                raise ValueError(f"Final interaction {which} layer size ({sizes[-1] if sizes else None}) is not a "
                                 f"multiple of embedding size ({embedding_dim})")
            projected.append(sizes[-1] // embedding_dim)
        in_features = (num_sparse_features + 1) * embedding_dim
        self.inter_arch = InteractionProjectionArch(
            num_sparse_features=num_sparse_features,
            interaction_branch1=DenseArch(in_features, interaction_branch1_layer_sizes, device=dense_device),
            interaction_branch2=DenseArch(in_features, interaction_branch2_layer_sizes, device=dense_device),
        )
        self.over_arch = OverArch(embedding_dim + projected[0] * projected[1], over_arch_layer_sizes,
                                  device=dense_device)


class DLRM_DCN(DLRM):
    """DLRM whose interaction is a low-rank DCN v2 cross net over (F + 1) * D inputs."""

    def __init__(
        self,
        embedding_bag_collection: EmbeddingBagCollection,
        dense_in_features: int,
        dense_arch_layer_sizes: list[int],
        over_arch_layer_sizes: list[int],
        dcn_num_layers: int,
        dcn_low_rank_dim: int,
        dense_device: ember.device | str | None = None,
    ) -> None:
        super().__init__(embedding_bag_collection, dense_in_features, dense_arch_layer_sizes,
                         over_arch_layer_sizes, dense_device)
        embedding_dim = self.sparse_arch.D
        num_sparse_features = self.sparse_arch.F
        crossnet = LowRankCrossNet(in_features=(num_sparse_features + 1) * embedding_dim,
                                   num_layers=dcn_num_layers, low_rank=dcn_low_rank_dim)
        self.inter_arch = InteractionDCNArch(num_sparse_features=num_sparse_features, crossnet=crossnet)
        self.over_arch = OverArch((num_sparse_features + 1) * embedding_dim, over_arch_layer_sizes,
                                  device=dense_device)


class DLRMTrain(nn.Module):
    """Wraps a DLRM for training: ``forward(batch)`` -> ``(loss, (loss, logits, labels))``.

    The loss is BCEWithLogits of the squeezed logits against ``batch.labels`` as floats; the
    tuple's tensors are detached.
    """

    def __init__(self, dlrm_module: DLRM) -> None:
        super().__init__()
        self.model = dlrm_module
        self.loss_fn = nn.BCEWithLogitsLoss()

    def forward(self, batch: Batch) -> tuple[ember.Tensor, tuple[ember.Tensor, ember.Tensor, ember.Tensor]]:
        logits = self.model(batch.dense_features, batch.sparse_features).squeeze(-1)
        loss = self.loss_fn(logits, batch.labels.float())
        return loss, (loss.detach(), logits.detach(), batch.labels.detach())
