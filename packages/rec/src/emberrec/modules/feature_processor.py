"""Feature processors (TorchRec's ``torchrec.modules.feature_processor``): position-weighted features.

A position-weighted feature gets a learnable weight per position in its bag: the i-th id of every
bag is weighted by ``position_weights[feature][i]``. A weighted EmbeddingBagCollection
(``is_weighted=True``) then pools ``sum_i w_i * E[id_i]``, so the model learns how much earlier
and later ids count::

    feature f, lengths [2, 0, 3]   values [a, b, | c, d, e]
    positions                      [0, 1,    | 0, 1, 2]
    weights                        [p0, p1,  | p0, p1, p2]      p = position_weights["f"]

Positions come from the offsets; a bag longer than the feature's ``max_feature_lengths`` entry
raises ValueError naming the feature (TorchRec fails inside ``gather``).
"""

from __future__ import annotations

import abc

import ember
from ember import nn
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor


def _check_lengths(max_feature_lengths: dict[str, int]) -> None:
    for key, length in max_feature_lengths.items():
        if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
            raise ValueError(f"max_feature_lengths[{key!r}] must be a positive int, got {length!r}")


def _position_weights(key: str, position_weight: ember.Tensor, offsets: ember.Tensor,
                      num_values: int) -> ember.Tensor:
    positions = ember.ops.fbgemm.offsets_range(offsets.long(), num_values)
    if num_values and int(positions.max()) >= position_weight.shape[0]:
        raise ValueError(f"feature {key!r} has a bag of {int(positions.max()) + 1} ids, longer than its "
                         f"max_feature_length {position_weight.shape[0]}")
    return ember.gather(position_weight, 0, positions)


class BaseFeatureProcessor(nn.Module):
    """Processes a dict of per-feature JaggedTensors."""

    @abc.abstractmethod
    def forward(self, features: dict[str, JaggedTensor]) -> dict[str, JaggedTensor]:
        ...


class PositionWeightedModule(BaseFeatureProcessor):
    """Position weights for the features in ``max_feature_lengths`` (each a vector of that
    length, initialised to 1); ``forward`` weights those features of a dict of JaggedTensors and
    leaves the others as they are (the dict is updated in place and returned, as in TorchRec)."""

    def __init__(self, max_feature_lengths: dict[str, int], device: ember.device | str | None = None) -> None:
        super().__init__()
        _check_lengths(max_feature_lengths)
        self.max_feature_lengths = dict(max_feature_lengths)
        self.position_weights = nn.ParameterDict(
            {key: nn.Parameter(ember.empty(length, device=device)) for key, length in max_feature_lengths.items()})
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with ember.no_grad():
            for weight in self.position_weights.values():
                weight.fill_(1.0)

    def forward(self, features: dict[str, JaggedTensor]) -> dict[str, JaggedTensor]:
        weighted = {}
        for key, position_weight in self.position_weights.items():
            if key not in features:
                raise ValueError(f"position-weighted feature {key!r} is missing from the input "
                                 f"(it has {sorted(features)})")
            jt = features[key]
            weights = _position_weights(key, position_weight, jt.offsets(), jt.values().numel())
            weighted[key] = JaggedTensor(values=jt.values(), lengths=jt.lengths(), offsets=jt.offsets(), weights=weights)
        features.update(weighted)
        return features


class BaseGroupedFeatureProcessor(nn.Module):
    """Processes a KeyedJaggedTensor as a whole."""

    @abc.abstractmethod
    def forward(self, features: KeyedJaggedTensor) -> KeyedJaggedTensor:
        ...


class PositionWeightedProcessor(BaseGroupedFeatureProcessor):
    """Position weights over a KeyedJaggedTensor: returns a KJT of the input's features that are in
    ``max_feature_lengths`` (in the input's key order), weighted by position; any weights the
    input carried are replaced. An input with none of those features comes back unchanged.

    >>> from emberrec import KeyedJaggedTensor
    >>> fp = PositionWeightedProcessor({"f": 3})
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(keys=["f"], values=ember.tensor([7, 8, 9]), lengths=ember.tensor([2, 1]))
    >>> fp(kjt).weights().tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, max_feature_lengths: dict[str, int], device: ember.device | str | None = None) -> None:
        super().__init__()
        _check_lengths(max_feature_lengths)
        self.max_feature_lengths = dict(max_feature_lengths)
        self.position_weights = nn.ParameterDict(
            {key: nn.Parameter(ember.ones(length, device=device)) for key, length in max_feature_lengths.items()})

    def forward(self, features: KeyedJaggedTensor) -> KeyedJaggedTensor:
        keys = [key for key in features.keys() if key in self.max_feature_lengths]
        if not keys:
            return features
        by_key = features.to_dict()
        values, lengths, weights = [], [], []
        for key in keys:
            jt = by_key[key]
            values.append(jt.values())
            lengths.append(jt.lengths())
            weights.append(_position_weights(key, self.position_weights[key], jt.offsets(), jt.values().numel()))
        # A variable batch per key keeps each kept key's batch sizes and the inverse indices.
        vbe = features.variable_stride_per_key()
        index = features._key_indices()
        return KeyedJaggedTensor.from_lengths_sync(
            keys=keys, values=ember.cat(values), lengths=ember.cat(lengths), weights=ember.cat(weights),
            stride=None if vbe else features.stride(),
            stride_per_key_per_rank=[features.stride_per_key_per_rank()[index[k]] for k in keys] if vbe else None,
            inverse_indices=features.inverse_indices_or_none())
