"""What the collections over table-batched embeddings (fused and quantized) share: tables held
outside the module's parameters that still go in and out of its state_dict under
EmbeddingBagCollection's names, and the split of a KJT into the features of each TBE."""

from __future__ import annotations

from collections.abc import Sequence

import ember
from ember import nn
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor


def features_by_group(features: KeyedJaggedTensor, group_features: Sequence[Sequence[str]]) -> list[KeyedJaggedTensor]:
    """One KJT per TBE with that TBE's features in its order (one permute, then views)."""
    if not isinstance(features, KeyedJaggedTensor):
        raise TypeError(f"expected a KeyedJaggedTensor, got {type(features).__name__}")
    index = features._key_indices()
    missing = [f for names in group_features for f in names if f not in index]
    if missing:
        raise KeyError(f"the KeyedJaggedTensor lacks features {missing} (it has {features.keys()})")
    if features.variable_stride_per_key():
        raise NotImplementedError("a variable batch per key is not implemented for table-batched collections")
    order = [index[f] for names in group_features for f in names]
    grouped = features.permute(order) if order != list(range(len(features.keys()))) else features
    return grouped.split([len(names) for names in group_features])


class TablesInStateDict(nn.Module):
    """A module whose `_state_tables()` (name → tensor view) joins its state_dict; loading copies
    into those views in place."""

    def _state_tables(self) -> dict[str, ember.Tensor]:
        raise NotImplementedError

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for key, table in self._state_tables().items():
            destination[prefix + key] = table

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)
        tables = self._state_tables()
        for key, table in tables.items():
            if prefix + key not in state_dict:
                if strict:
                    missing_keys.append(prefix + key)
                continue
            value = state_dict[prefix + key]
            if tuple(value.shape) != tuple(table.shape) or value.dtype != table.dtype:
                error_msgs.append(f"size mismatch for {prefix + key}: copying a param with shape "
                                  f"{list(value.shape)} ({value.dtype}) from checkpoint, the shape in current model "
                                  f"is {list(table.shape)} ({table.dtype}).")
                continue
            with ember.no_grad():
                table.copy_(value)
        if strict:
            ours = {prefix + key for key in tables}
            unexpected_keys += [k for k in state_dict if k.startswith(prefix) and k not in ours
                                and k[len(prefix):].split(".", 1)[0] not in self._modules]
