"""Jagged inputs and pooled outputs (TorchRec's ``torchrec.sparse.jagged_tensor``).

A JaggedTensor is a batch of variable-length rows stored flat::

    rows        [10, 11]  []  [12]  [13, 14, 15]
    values      [10, 11, 12, 13, 14, 15]
    lengths     [2, 0, 1, 3]
    offsets     [0, 2, 2, 3, 6]          (len(lengths) + 1 entries; offsets[-1] == len(values))

A KeyedJaggedTensor holds one jagged batch per key (feature), feature-major: all of the first
key's rows, then all of the second's::

    keys        ["f0", "f1"]                      stride (batch size) 3
    rows        f0: [a0, a1]  []  [a2]             f1: [b0]  [b1]  [b2, b3, b4]
    values      [a0, a1, a2, b0, b1, b2, b3, b4]
    lengths     [2, 0, 1,   1, 1, 3]               (key-major: len(keys) * stride entries)
    offsets     [0, 2, 2, 3, 4, 5, 8]
    length_per_key [3, 5]     offset_per_key [0, 3, 8]

With a variable batch per key (VBE), ``stride_per_key_per_rank[k]`` lists key k's batch size on
each rank; key k then has sum(stride_per_key_per_rank[k]) lengths, and ``inverse_indices``
(keys, [len(keys), B] tensor) maps each of the B output samples back to a row of its key.

A KeyedTensor holds pooled outputs side by side: ``values`` is [B, sum(length_per_key)] with key
k's columns at offset_per_key[k] (key_dim=1).

Unlike TorchRec, every constructor checks the cheap invariants (lengths non-negative and summing
to the number of values, offsets starting at 0 and never decreasing, keys unique, weights as long
as values) and names the key at fault; an invalid batch is an error at construction, never a
wrong lookup later.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import ember
from ember import Tensor

_INDEX_DTYPES = (ember.int32, ember.int64)


def _check_index_tensor(tensor: Tensor, what: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what} must be an ember.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in _INDEX_DTYPES:
        raise TypeError(f"{what} must be int32 or int64, got {tensor.dtype}")
    if tensor.dim() != 1:
        raise ValueError(f"{what} must be 1-D, got shape {tuple(tensor.shape)}")


def _cumsum(lengths: Tensor) -> Tensor:
    """Offsets of `lengths`: [0, l0, l0+l1, ...] in the dtype of `lengths`."""
    return ember.ops.fbgemm.asynchronous_complete_cumsum(lengths)


def _diff(offsets: Tensor) -> Tensor:
    return offsets[1:] - offsets[:-1]


def _segment_owner(position: int, segment_sizes: Sequence[int], keys: Sequence[str]) -> str:
    """The key whose block of `segment_sizes` holds entry `position`."""
    end = 0
    for key, size in zip(keys, segment_sizes, strict=True):
        end += size
        if position < end:
            return key
    return keys[-1]


def _validate(values: Tensor, weights: Tensor | None, lengths: Tensor | None, offsets: Tensor | None,
              keys: Sequence[str] | None = None, segment_sizes: Sequence[int] | None = None) -> list[int] | None:
    """The invariants of a jagged batch; errors name the key (when `keys` is given, each owning
    `segment_sizes[k]` consecutive lengths). Returns the number of values of each key when the
    lengths were given with `keys` (found on the way). The checks read the index tensors through NumPy views
    (no copy): a pass over the lengths costs microseconds, not a kernel launch per check."""
    if not isinstance(values, Tensor):
        raise TypeError(f"values must be an ember.Tensor, got {type(values).__name__}")
    if values.dim() == 0:
        raise ValueError("values must have at least one dimension (one entry per index)")
    n = values.shape[0]

    def where(position: int) -> str:
        if keys is None:
            return f"row {position}"
        return f"key {_segment_owner(position, segment_sizes, keys)!r}"

    if weights is not None:
        if not isinstance(weights, Tensor):
            raise TypeError(f"weights must be an ember.Tensor or None, got {type(weights).__name__}")
        if weights.shape[0:1] != values.shape[0:1]:
            raise ValueError(f"weights has {weights.shape[0] if weights.dim() else 0} entries but values has {n}")
    if lengths is None and offsets is None:
        raise ValueError("give lengths or offsets")
    if lengths is not None:
        _check_index_tensor(lengths, "lengths")
        counts = lengths.numpy()
        if counts.size and counts.min() < 0:
            i = int(np.argmax(counts < 0))
            raise ValueError(f"lengths has a negative entry {int(counts[i])} at position {i} ({where(i)})")
        per_segment = None
        if segment_sizes is not None and len(set(segment_sizes)) == 1 and segment_sizes[0] > 0:
            per_segment = counts.reshape(len(segment_sizes), segment_sizes[0]).sum(1)  # one pass
        elif segment_sizes is not None:
            running = np.concatenate([[0], np.cumsum(counts)])
            per_segment = np.diff(running[np.concatenate([[0], np.cumsum(segment_sizes, dtype=np.int64)])])
        total = int(per_segment.sum()) if per_segment is not None else int(counts.sum())
        if total != n:
            raise ValueError(f"lengths sum to {total} but values has {n} entries")
    if offsets is not None:
        _check_index_tensor(offsets, "offsets")
        bounds = offsets.numpy()
        if bounds.size == 0:
            raise ValueError("offsets needs at least one entry (offsets[0] == 0)")
        if bounds[0] != 0:
            raise ValueError(f"offsets must start at 0, got {int(bounds[0])}")
        steps = np.diff(bounds)
        if steps.size and steps.min() < 0:
            i = int(np.argmax(steps < 0))
            raise ValueError(f"offsets decrease at position {i + 1} ({where(i)}): "
                             f"{int(bounds[i])} then {int(bounds[i + 1])}")
        if bounds[-1] != n:
            raise ValueError(f"offsets end at {int(bounds[-1])} but values has {n} entries")
        if lengths is not None and (bounds.size != lengths.numel() + 1 or not np.array_equal(steps, lengths.numpy())):
            raise ValueError("lengths and offsets disagree (offsets must be the running sum of lengths)")
    if lengths is not None and segment_sizes is not None:
        return [int(x) for x in per_segment]
    return None


class _Jagged:
    """The accessors JaggedTensor and KeyedJaggedTensor share: flat values, optional weights, and
    lengths or offsets (each derived from the other on first use)."""

    _values: Tensor
    _weights: Tensor | None
    _lengths: Tensor | None
    _offsets: Tensor | None

    def values(self) -> Tensor:
        return self._values

    def weights(self) -> Tensor:
        if self._weights is None:
            raise ValueError(f"this {type(self).__name__} has no weights")
        return self._weights

    def weights_or_none(self) -> Tensor | None:
        return self._weights

    def lengths(self) -> Tensor:
        if self._lengths is None:
            self._lengths = _diff(self._offsets)
        return self._lengths

    def lengths_or_none(self) -> Tensor | None:
        return self._lengths

    def offsets(self) -> Tensor:
        if self._offsets is None:
            self._offsets = _cumsum(self._lengths)
        return self._offsets

    def offsets_or_none(self) -> Tensor | None:
        return self._offsets


class JaggedTensor(_Jagged):
    """Variable-length rows of one feature: ``values`` with ``lengths`` and/or ``offsets`` and
    optional per-value ``weights`` (layout in the module docstring)."""

    def __init__(self, values: Tensor, weights: Tensor | None = None, lengths: Tensor | None = None,
                 offsets: Tensor | None = None, *, _trusted: bool = False) -> None:
        # _trusted: built by this module from an already checked batch (a key of a KJT), so the
        # checks, which read the lengths back, are skipped.
        if not _trusted:
            _validate(values, weights, lengths, offsets)
        self._values = values
        self._weights = weights
        self._lengths = lengths
        self._offsets = offsets

    @staticmethod
    def empty(is_weighted: bool = False, device=None, values_dtype=None, weights_dtype=None,
              lengths_dtype=ember.int32) -> JaggedTensor:
        values = ember.empty(0, dtype=values_dtype or ember.float32, device=device)
        weights = ember.empty(0, dtype=weights_dtype or ember.float32, device=device) if is_weighted else None
        return JaggedTensor(values, weights, lengths=ember.empty(0, dtype=lengths_dtype, device=device))

    @staticmethod
    def from_dense_lengths(values: Tensor, lengths: Tensor, weights: Tensor | None = None) -> JaggedTensor:
        """Row i is values[i, :lengths[i]] (and so for weights)."""
        _check_index_tensor(lengths, "lengths")
        if values.dim() < 2 or values.shape[0] != lengths.shape[0]:
            raise ValueError(f"values must be [B, N, ...] with B == len(lengths) = {lengths.shape[0]}, "
                             f"got shape {tuple(values.shape)}")
        if lengths.numel() and (int(lengths.min().item()) < 0 or int(lengths.max().item()) > values.shape[1]):
            raise ValueError(f"lengths must lie in [0, {values.shape[1]}], got {lengths.tolist()}")
        mask = ember.arange(values.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        return JaggedTensor(values[mask], None if weights is None else weights[mask], lengths=lengths)

    @staticmethod
    def from_dense(values: Sequence[Tensor], weights: Sequence[Tensor] | None = None) -> JaggedTensor:
        """One row per tensor of `values` (each [L_i] or [L_i, D])."""
        if len(values) == 0:
            raise ValueError("from_dense needs at least one row")
        if weights is not None and len(weights) != len(values):
            raise ValueError(f"{len(weights)} weight rows for {len(values)} value rows")
        lengths = ember.tensor([row.shape[0] for row in values], dtype=ember.int32)
        return JaggedTensor(ember.cat(list(values)), None if weights is None else ember.cat(list(weights)),
                            lengths=lengths)

    def __len__(self) -> int:
        return self.lengths().shape[0]

    def to_dense(self) -> list[Tensor]:
        """The rows, as views of values."""
        return list(ember.split(self._values, self.lengths().tolist()))

    def to_dense_weights(self) -> list[Tensor] | None:
        return None if self._weights is None else list(ember.split(self._weights, self.lengths().tolist()))

    def _padded(self, source: Tensor, desired_length: int | None, padding_value: float) -> Tensor:
        lengths = self.lengths()
        if desired_length is None:
            desired_length = int(lengths.max().item()) if lengths.numel() else 0
        if desired_length < 0:
            raise ValueError(f"desired_length must be >= 0, got {desired_length}")
        flat = source.dim() == 1
        rows = source.unsqueeze(1) if flat else source
        dense = ember.ops.fbgemm.jagged_to_padded_dense(rows, [self.offsets().to(ember.int64)], [desired_length],
                                                         float(padding_value))
        return dense.squeeze(2) if flat else dense

    def to_padded_dense(self, desired_length: int | None = None, padding_value: float = 0.0) -> Tensor:
        """[B, desired_length, ...]: rows truncated or padded with `padding_value` (default
        length: the longest row)."""
        return self._padded(self._values, desired_length, padding_value)

    def to_padded_dense_weights(self, desired_length: int | None = None, padding_value: float = 0.0) -> Tensor | None:
        return None if self._weights is None else self._padded(self._weights, desired_length, padding_value)

    def to(self, device, non_blocking: bool = False) -> JaggedTensor:
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return JaggedTensor(move(self._values), move(self._weights), move(self._lengths), move(self._offsets))

    def __repr__(self) -> str:
        rows = [row.tolist() for row in self.to_dense()]
        weights = "" if self._weights is None else f", weights={self._weights.tolist()}"
        return f"JaggedTensor({rows}{weights})"


class KeyedJaggedTensor(_Jagged):
    """A jagged batch per key, feature-major (layout in the module docstring)."""

    def __init__(self, keys: Sequence[str], values: Tensor, weights: Tensor | None = None,
                 lengths: Tensor | None = None, offsets: Tensor | None = None, stride: int | None = None,
                 stride_per_key_per_rank: Sequence[Sequence[int]] | None = None,
                 length_per_key: Sequence[int] | None = None, offset_per_key: Sequence[int] | None = None,
                 index_per_key: dict[str, int] | None = None,
                 inverse_indices: tuple[Sequence[str], Tensor] | None = None) -> None:
        keys = list(keys)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError(f"keys must be strings, got {keys!r}")
        seen: set[str] = set()
        for key in keys:
            if key in seen:
                raise ValueError(f"key {key!r} appears twice in keys {keys}")
            seen.add(key)
        n_lengths = (lengths.shape[0] if lengths is not None and lengths.dim() == 1
                     else offsets.shape[0] - 1 if offsets is not None and offsets.dim() == 1 and offsets.numel() else 0)
        if stride_per_key_per_rank is not None:
            stride_per_key_per_rank = [list(map(int, per_rank)) for per_rank in stride_per_key_per_rank]
            if len(stride_per_key_per_rank) != len(keys):
                raise ValueError(f"stride_per_key_per_rank has {len(stride_per_key_per_rank)} entries for "
                                 f"{len(keys)} keys")
            for key, per_rank in zip(keys, stride_per_key_per_rank, strict=True):
                if any(s < 0 for s in per_rank):
                    raise ValueError(f"key {key!r}: negative batch size in stride_per_key_per_rank {per_rank}")
            stride_per_key = [sum(per_rank) for per_rank in stride_per_key_per_rank]
            stride = max(stride_per_key, default=0) if stride is None else stride
        else:
            if stride is None:
                if keys and n_lengths % len(keys):
                    raise ValueError(f"{n_lengths} lengths do not split evenly over {len(keys)} keys; "
                                     f"give stride_per_key_per_rank for a variable batch per key")
                stride = n_lengths // len(keys) if keys else 0
            stride_per_key = [stride] * len(keys)
        if sum(stride_per_key) != n_lengths:
            raise ValueError(f"{len(keys)} keys with batch sizes {stride_per_key} need {sum(stride_per_key)} "
                             f"lengths, got {n_lengths}")
        counted = _validate(values, weights, lengths, offsets, keys, stride_per_key)
        if length_per_key is None:
            length_per_key = counted
        self._keys = keys
        self._values = values
        self._weights = weights
        self._lengths = lengths
        self._offsets = offsets
        self._stride = int(stride)
        self._stride_per_key = stride_per_key
        self._stride_per_key_per_rank = stride_per_key_per_rank
        self._variable_stride = stride_per_key_per_rank is not None
        self._length_per_key = None if length_per_key is None else list(length_per_key)
        self._offset_per_key = None if offset_per_key is None else list(offset_per_key)
        self._index_per_key = index_per_key
        if inverse_indices is not None:
            inverse_keys, inverse = inverse_indices
            _check_index_tensor(inverse.flatten(), "inverse_indices")
            if inverse.dim() != 2 or inverse.shape[0] != len(inverse_keys):
                raise ValueError(f"inverse_indices must be [len(keys), batch], got shape {tuple(inverse.shape)}")
            inverse_indices = (list(inverse_keys), inverse)
        self._inverse_indices = inverse_indices
        self._jt_dict: dict[str, JaggedTensor] | None = None

    # -- construction ---------------------------------------------------------------------------

    @staticmethod
    def from_offsets_sync(keys: Sequence[str], values: Tensor, offsets: Tensor, weights: Tensor | None = None,
                          stride: int | None = None) -> KeyedJaggedTensor:
        return KeyedJaggedTensor(keys, values, weights, offsets=offsets, stride=stride).sync()

    @staticmethod
    def from_lengths_sync(keys: Sequence[str], values: Tensor, lengths: Tensor, weights: Tensor | None = None,
                          stride: int | None = None, stride_per_key_per_rank: Sequence[Sequence[int]] | None = None,
                          inverse_indices: tuple[Sequence[str], Tensor] | None = None) -> KeyedJaggedTensor:
        return KeyedJaggedTensor(keys, values, weights, lengths=lengths, stride=stride,
                                 stride_per_key_per_rank=stride_per_key_per_rank,
                                 inverse_indices=inverse_indices).sync()

    @staticmethod
    def from_jt_dict(jt_dict: dict[str, JaggedTensor]) -> KeyedJaggedTensor:
        """Keys in dict order; every JaggedTensor must have the same number of rows."""
        if not jt_dict:
            raise ValueError("from_jt_dict needs at least one key")
        keys = list(jt_dict)
        strides = {key: len(jt) for key, jt in jt_dict.items()}
        if len(set(strides.values())) > 1:
            raise ValueError(f"every JaggedTensor needs the same number of rows, got {strides}")
        weighted = {key: jt.weights_or_none() is not None for key, jt in jt_dict.items()}
        if len(set(weighted.values())) > 1:
            raise ValueError(f"either every JaggedTensor has weights or none has, got {weighted}")
        jts = list(jt_dict.values())
        weights = ember.cat([jt.weights() for jt in jts]) if jts[0].weights_or_none() is not None else None
        return KeyedJaggedTensor(keys, ember.cat([jt.values() for jt in jts]), weights,
                                 lengths=ember.cat([jt.lengths().to(ember.int64) for jt in jts]),
                                 stride=len(jts[0])).sync()

    @staticmethod
    def empty(is_weighted: bool = False, device=None, values_dtype=None, weights_dtype=None,
              lengths_dtype=ember.int32) -> KeyedJaggedTensor:
        weights = ember.empty(0, dtype=weights_dtype or ember.float32, device=device) if is_weighted else None
        return KeyedJaggedTensor([], ember.empty(0, dtype=values_dtype or ember.int64, device=device), weights,
                                 lengths=ember.empty(0, dtype=lengths_dtype, device=device), stride=0)

    @staticmethod
    def empty_like(kjt: KeyedJaggedTensor) -> KeyedJaggedTensor:
        weights = kjt.weights_or_none()
        return KeyedJaggedTensor([], kjt.values()[:0], None if weights is None else weights[:0],
                                 lengths=kjt.lengths()[:0], stride=kjt.stride())

    @staticmethod
    def concat(kjt_list: Sequence[KeyedJaggedTensor]) -> KeyedJaggedTensor:
        """The keys of every KJT, in order, side by side (batch sizes may differ per key only
        when the inputs have a variable batch)."""
        if not kjt_list:
            raise ValueError("concat needs at least one KeyedJaggedTensor")
        weighted = {kjt.weights_or_none() is not None for kjt in kjt_list}
        if len(weighted) > 1:
            raise ValueError("cannot concat weighted and unweighted KeyedJaggedTensors")
        keys = [key for kjt in kjt_list for key in kjt.keys()]
        variable = any(kjt.variable_stride_per_key() for kjt in kjt_list)
        strides = {kjt.stride() for kjt in kjt_list if kjt.keys()}
        if not variable and len(strides) > 1:
            raise ValueError(f"cannot concat KeyedJaggedTensors with batch sizes {sorted(strides)} "
                             f"(give them stride_per_key_per_rank for a variable batch)")
        per_rank = ([r for kjt in kjt_list for r in kjt.stride_per_key_per_rank()] if variable else None)
        return KeyedJaggedTensor(
            keys, ember.cat([kjt.values() for kjt in kjt_list]),
            ember.cat([kjt.weights() for kjt in kjt_list]) if True in weighted else None,
            lengths=ember.cat([kjt.lengths().to(ember.int64) for kjt in kjt_list]),
            stride=None if variable else (strides.pop() if strides else 0), stride_per_key_per_rank=per_rank,
        ).sync()

    # -- accessors ------------------------------------------------------------------------------

    def sync(self) -> KeyedJaggedTensor:
        self.length_per_key()
        self.offset_per_key()
        return self

    def unsync(self) -> KeyedJaggedTensor:
        self._length_per_key = None
        self._offset_per_key = None
        return self

    def keys(self) -> list[str]:
        return self._keys

    def device(self):
        return self._values.device

    def stride(self) -> int:
        return self._stride

    def stride_per_key(self) -> list[int]:
        return self._stride_per_key

    def stride_per_key_per_rank(self) -> list[list[int]]:
        return self._stride_per_key_per_rank if self._variable_stride else [[s] for s in self._stride_per_key]

    def variable_stride_per_key(self) -> bool:
        return self._variable_stride

    def inverse_indices(self) -> tuple[list[str], Tensor]:
        if self._inverse_indices is None:
            raise ValueError("this KeyedJaggedTensor has no inverse_indices")
        return self._inverse_indices

    def inverse_indices_or_none(self) -> tuple[list[str], Tensor] | None:
        return self._inverse_indices

    def _key_indices(self) -> dict[str, int]:
        if self._index_per_key is None:
            self._index_per_key = {key: i for i, key in enumerate(self._keys)}
        return self._index_per_key

    index_per_key = _key_indices

    def lengths_offset_per_key(self) -> list[int]:
        """Where each key's block of lengths starts (and, last, the number of lengths)."""
        out = [0]
        for s in self._stride_per_key:
            out.append(out[-1] + s)
        return out

    def length_per_key(self) -> list[int]:
        """The number of values of each key."""
        if self._length_per_key is None:
            if self._lengths is not None:
                counts = self._lengths.numpy()
                if self._variable_stride:
                    running = np.concatenate([[0], np.cumsum(counts)])[self.lengths_offset_per_key()]
                    sums = np.diff(running)
                else:
                    sums = counts.reshape(len(self._keys), self._stride).sum(1)
                self._length_per_key = [int(x) for x in sums]
            else:
                ends = self._offsets.numpy()[self.lengths_offset_per_key()]
                self._length_per_key = [int(b - a) for a, b in zip(ends[:-1], ends[1:], strict=True)]
        return self._length_per_key

    def length_per_key_or_none(self) -> list[int] | None:
        return self._length_per_key

    def offset_per_key(self) -> list[int]:
        if self._offset_per_key is None:
            out = [0]
            for n in self.length_per_key():
                out.append(out[-1] + n)
            self._offset_per_key = out
        return self._offset_per_key

    def offset_per_key_or_none(self) -> list[int] | None:
        return self._offset_per_key

    # -- reshaping ------------------------------------------------------------------------------

    @classmethod
    def _assemble(cls, keys: list[str], values: Tensor, weights: Tensor | None, lengths: Tensor, stride: int,
                  stride_per_key: list[int], stride_per_key_per_rank: list[list[int]] | None,
                  length_per_key: list[int], inverse_indices=None) -> KeyedJaggedTensor:
        """A KJT from parts of a checked one (split, permute): no checks, no bookkeeping to redo."""
        kjt = cls.__new__(cls)
        kjt._keys, kjt._values, kjt._weights, kjt._lengths, kjt._offsets = keys, values, weights, lengths, None
        kjt._stride, kjt._stride_per_key = stride, stride_per_key
        kjt._stride_per_key_per_rank = stride_per_key_per_rank
        kjt._variable_stride = stride_per_key_per_rank is not None
        kjt._length_per_key, kjt._offset_per_key, kjt._index_per_key = length_per_key, None, None
        kjt._inverse_indices, kjt._jt_dict = inverse_indices, None
        return kjt

    def split(self, segments: Sequence[int]) -> list[KeyedJaggedTensor]:
        """Consecutive groups of keys, `segments[i]` keys in the i-th (views, no copy)."""
        if any(s < 0 for s in segments) or sum(segments) != len(self._keys):
            raise ValueError(f"segments {list(segments)} must be non-negative and sum to the {len(self._keys)} keys")
        bounds = [0]
        for size in segments:
            bounds.append(bounds[-1] + size)
        per_key, strides = self.length_per_key(), self._stride_per_key
        value_sizes = [sum(per_key[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        values = ember.split(self._values, value_sizes)
        weights = [None] * len(segments) if self._weights is None else ember.split(self._weights, value_sizes)
        lengths = ember.split(self.lengths(), [sum(strides[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
        per_rank = self._stride_per_key_per_rank
        return [KeyedJaggedTensor._assemble(self._keys[a:b], v, w, n, self._stride, strides[a:b],
                                            per_rank[a:b] if per_rank is not None else None, per_key[a:b])
                for a, b, v, w, n in zip(bounds[:-1], bounds[1:], values, weights, lengths, strict=True)]

    def permute(self, indices: Sequence[int], indices_tensor: Tensor | None = None) -> KeyedJaggedTensor:
        """Keys in the order `indices` (a key may be left out, not repeated: keys are unique)."""
        n = len(self._keys)
        for i in indices:
            if not -n <= i < n:
                raise IndexError(f"permute index {i} out of range for {n} keys")
        indices = [i % n for i in indices]
        keys = [self._keys[i] for i in indices]
        if len(set(keys)) != len(keys):
            repeated = next(k for k in keys if keys.count(k) > 1)
            raise ValueError(f"permute {list(indices)} repeats key {repeated!r}; the keys of a KeyedJaggedTensor "
                             f"are unique")
        length_per_key = self.length_per_key()
        permuted_total = sum(length_per_key[i] for i in indices)
        if not self._variable_stride:
            permute = ember.tensor(indices, dtype=ember.int32) if indices_tensor is None else indices_tensor
            lengths, values, weights = ember.ops.fbgemm.permute_2D_sparse_data(
                permute, self.lengths().view(n, self._stride), self._values, self._weights, permuted_total)
            return KeyedJaggedTensor._assemble(keys, values, weights, lengths.view(-1), self._stride,
                                               [self._stride] * len(keys), None, [length_per_key[i] for i in indices])
        # A variable batch per key: gather the permuted keys' lengths one segment at a time.
        bounds = self.lengths_offset_per_key()
        segments = ember.cat([ember.arange(bounds[i], bounds[i + 1]) for i in indices]) if indices else \
            ember.empty(0, dtype=ember.int64)
        lengths, values, weights = ember.ops.fbgemm.permute_1D_sparse_data(
            segments.to(ember.int32), self.lengths(), self._values, self._weights, permuted_total)
        per_rank = [self._stride_per_key_per_rank[i] for i in indices]
        return KeyedJaggedTensor._assemble(keys, values, weights, lengths, self._stride,
                                           [self._stride_per_key[i] for i in indices], per_rank,
                                           [length_per_key[i] for i in indices], self._inverse_indices)

    def flatten_lengths(self) -> KeyedJaggedTensor:
        return KeyedJaggedTensor(self._keys, self._values, self._weights, lengths=self.lengths().view(-1),
                                 stride=None if self._variable_stride else self._stride,
                                 stride_per_key_per_rank=self._stride_per_key_per_rank,
                                 length_per_key=self._length_per_key)

    def __getitem__(self, key: str) -> JaggedTensor:
        index = self._key_indices().get(key)
        if index is None:
            raise KeyError(f"key {key!r} is not one of {self._keys}")
        bounds, value_bounds = self.lengths_offset_per_key(), self.offset_per_key()
        lo, hi = value_bounds[index], value_bounds[index + 1]
        return JaggedTensor(self._values[lo:hi], None if self._weights is None else self._weights[lo:hi],
                            lengths=self.lengths()[bounds[index]:bounds[index + 1]], _trusted=True)

    def to_dict(self) -> dict[str, JaggedTensor]:
        """{key: JaggedTensor}, views of this KJT's tensors (built once, then cached)."""
        if self._jt_dict is None:
            values = ember.split(self._values, self.length_per_key())
            lengths = ember.split(self.lengths(), self._stride_per_key)
            weights = [None] * len(self._keys) if self._weights is None else \
                ember.split(self._weights, self.length_per_key())
            self._jt_dict = {key: JaggedTensor(v, w, lengths=n, _trusted=True)
                             for key, v, w, n in zip(self._keys, values, weights, lengths, strict=True)}
        return self._jt_dict

    def to(self, device, non_blocking: bool = False, dtype=None) -> KeyedJaggedTensor:
        """On `device`; `dtype` (if given) converts the weights, as TorchRec's."""
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        weights = move(self._weights)
        if weights is not None and dtype is not None:
            weights = weights.to(dtype)
        inverse = None if self._inverse_indices is None else (self._inverse_indices[0],
                                                              move(self._inverse_indices[1]))
        return KeyedJaggedTensor(self._keys, move(self._values), weights, move(self._lengths), move(self._offsets),
                                 stride=None if self._variable_stride else self._stride,
                                 stride_per_key_per_rank=self._stride_per_key_per_rank,
                                 length_per_key=self._length_per_key, offset_per_key=self._offset_per_key,
                                 inverse_indices=inverse)

    def pin_memory(self) -> KeyedJaggedTensor:
        return self  # CPU memory needs no pinning here

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        if not self._keys:
            return "KeyedJaggedTensor()"
        parts = [f"{key!r}: {self[key]!r}" for key in self._keys]
        return "KeyedJaggedTensor({" + ", ".join(parts) + "})"


class KeyedTensor:
    """Pooled outputs of several keys side by side along `key_dim` (layout in the module
    docstring)."""

    def __init__(self, keys: Sequence[str], length_per_key: Sequence[int], values: Tensor, key_dim: int = 1,
                 offset_per_key: Sequence[int] | None = None, index_per_key: dict[str, int] | None = None) -> None:
        keys = list(keys)
        if len(set(keys)) != len(keys):
            raise ValueError(f"keys repeat a name: {keys}")
        if len(length_per_key) != len(keys):
            raise ValueError(f"{len(length_per_key)} lengths for {len(keys)} keys")
        if not -values.dim() <= key_dim < values.dim():
            raise ValueError(f"key_dim {key_dim} out of range for a {values.dim()}-D values tensor")
        key_dim %= values.dim()
        if sum(length_per_key) != values.shape[key_dim]:
            raise ValueError(f"length_per_key sums to {sum(length_per_key)} but values has "
                             f"{values.shape[key_dim]} entries along key_dim {key_dim}")
        self._keys = keys
        self._length_per_key = list(length_per_key)
        self._values = values
        self._key_dim = key_dim
        self._offset_per_key = None if offset_per_key is None else list(offset_per_key)
        self._index_per_key = index_per_key

    @staticmethod
    def from_tensor_list(keys: Sequence[str], tensors: Sequence[Tensor], key_dim: int = 1,
                         cat_dim: int = 1) -> KeyedTensor:
        if len(keys) != len(tensors):
            raise ValueError(f"{len(keys)} keys for {len(tensors)} tensors")
        return KeyedTensor(keys, [t.shape[key_dim] for t in tensors], ember.cat(list(tensors), cat_dim), key_dim)

    def keys(self) -> list[str]:
        return self._keys

    def values(self) -> Tensor:
        return self._values

    def key_dim(self) -> int:
        return self._key_dim

    def length_per_key(self) -> list[int]:
        return self._length_per_key

    def offset_per_key(self) -> list[int]:
        if self._offset_per_key is None:
            out = [0]
            for n in self._length_per_key:
                out.append(out[-1] + n)
            self._offset_per_key = out
        return self._offset_per_key

    def _key_indices(self) -> dict[str, int]:
        if self._index_per_key is None:
            self._index_per_key = {key: i for i, key in enumerate(self._keys)}
        return self._index_per_key

    def __getitem__(self, key: str) -> Tensor:
        index = self._key_indices().get(key)
        if index is None:
            raise KeyError(f"key {key!r} is not one of {self._keys}")
        start = self.offset_per_key()[index]
        return self._values.narrow(self._key_dim, start, self._length_per_key[index])

    def to_dict(self) -> dict[str, Tensor]:
        return dict(zip(self._keys, ember.split(self._values, self._length_per_key, self._key_dim), strict=True))

    @staticmethod
    def _grouped(keyed_tensors: Sequence[KeyedTensor], groups: Sequence[Sequence[str]]) -> list[Tensor]:
        if not keyed_tensors:
            raise ValueError("regroup needs at least one KeyedTensor")
        key_dim = keyed_tensors[0].key_dim()
        if any(kt.key_dim() != key_dim for kt in keyed_tensors):
            raise ValueError("every KeyedTensor must have the same key_dim")
        where: dict[str, Tensor] = {}
        for kt in keyed_tensors:
            for key, piece in kt.to_dict().items():
                if key in where:
                    raise ValueError(f"key {key!r} is in more than one KeyedTensor")
                where[key] = piece
        out = []
        for group in groups:
            missing = [key for key in group if key not in where]
            if missing:
                raise KeyError(f"keys {missing} are in none of the KeyedTensors")
            out.append(ember.cat([where[key] for key in group], key_dim))
        return out

    @staticmethod
    def regroup(keyed_tensors: Sequence[KeyedTensor], groups: Sequence[Sequence[str]]) -> list[Tensor]:
        """One tensor per group: the group's keys' columns side by side, in the group's order."""
        return KeyedTensor._grouped(keyed_tensors, groups)

    @staticmethod
    def regroup_as_dict(keyed_tensors: Sequence[KeyedTensor], groups: Sequence[Sequence[str]],
                        keys: Sequence[str]) -> dict[str, Tensor]:
        if len(groups) != len(keys):
            raise ValueError(f"{len(groups)} groups for {len(keys)} names")
        return dict(zip(keys, KeyedTensor._grouped(keyed_tensors, groups), strict=True))

    def to(self, device, non_blocking: bool = False) -> KeyedTensor:
        return KeyedTensor(self._keys, self._length_per_key, self._values.to(device), self._key_dim,
                           self._offset_per_key, self._index_per_key)

    def __repr__(self) -> str:
        return "KeyedTensor({" + ", ".join(f"{k!r}: {v.tolist()}" for k, v in self.to_dict().items()) + "})"
