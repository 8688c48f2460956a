"""Variable-length sequence helpers for the recurrent layers (torch.nn.utils.rnn).

A PackedSequence stores a batch of sequences time-major with the padding removed: the sequences
are sorted by decreasing length, ``data`` holds step 0 of every sequence, then step 1 of every
sequence still running, and so on, and ``batch_sizes[t]`` says how many rows step t has. Packing
and padding are each one ``index_select`` (plus a padding row for the padded direction), so
gradients flow through them with index_select's derivative and no per-step copies.
"""

from __future__ import annotations

from collections import namedtuple

from ... import _C
from ..._tensor import tensor as _tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _index(values, device=None):
    """An int64 index tensor from a Python list."""
    return _tensor(list(values), dtype=_C.int64, device=device)


def invert_permutation(permutation):
    """The permutation q with q[p[i]] = i (None stays None)."""
    if permutation is None:
        return None
    # argsort of a permutation is its inverse.
    return _C.argsort(permutation)


_PackedSequenceBase = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """Holds the data and the per-step batch sizes of a packed batch of sequences.

    Build one with pack_padded_sequence or pack_sequence rather than by hand. ``sorted_indices``
    maps positions in the packed (length-sorted) batch to the original batch positions, and
    ``unsorted_indices`` is its inverse; both are None when the input was already sorted.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PackedSequence((data, batch_sizes)) is accepted as PyTorch accepts it.
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """Moves/casts ``data`` like Tensor.to; the index tensors follow data's device only
        (batch_sizes stays on the CPU). Returns self when data is unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data or (data.dtype == self.data.dtype and data.device == self.data.device):
            return self
        device = data.device
        sorted_indices = None if self.sorted_indices is None else self.sorted_indices.to(device)
        unsorted_indices = None if self.unsorted_indices is None else self.unsorted_indices.to(device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):
        return self.to(dtype=_C.float32)

    def half(self):
        return self.to(dtype=_C.float16)

    def long(self):
        return self.to(dtype=_C.int64)

    def int(self):
        return self.to(dtype=_C.int32)

    def short(self):
        return self.to(dtype=_C.int16)

    def char(self):
        return self.to(dtype=_C.int8)

    def byte(self):
        return self.to(dtype=_C.uint8)


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch ``input`` of shape (T, B, *) (or (B, T, *) with batch_first) whose
    sequence b has ``lengths[b]`` valid steps. With enforce_sorted=True the lengths must be in
    decreasing order; otherwise the batch is sorted here and the permutation is recorded in the
    result's sorted_indices / unsorted_indices."""
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    sorted_indices = None
    if not enforce_sorted:
        order = sorted(range(len(lengths)), key=lambda b: -lengths[b])  # stable, as a stable descending sort
        lengths = [lengths[b] for b in order]
        sorted_indices = _index(order, input.device)
        if input.dim() > batch_dim and input.shape[batch_dim] == len(order):
            input = input.index_select(batch_dim, sorted_indices)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if input.dim() < 2:
        raise RuntimeError(f"pack_padded_sequence: expected input with at least 2 dimensions (time and batch), but "
                           f"got {input.dim()}-D input")
    batch_size, total = input.shape[batch_dim], input.shape[1 - batch_dim]
    if len(lengths) != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch_size})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if any(lengths[b] < lengths[b + 1] for b in range(batch_size - 1)):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
                           "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lengths[0] > total:
        raise RuntimeError(f"pack_padded_sequence: a length of {lengths[0]} exceeds the padded sequence length "
                           f"{total} of the input")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    # Row (t, b) of the flattened input sits at t * B + b (time-major) or b * T + t (batch-first).
    rows = [(b * total + t) if batch_first else (t * batch_size + b)
            for t, bs in enumerate(batch_sizes) for b in range(bs)]
    flat = input.reshape([batch_size * total, *input.shape[2:]])
    data = flat.index_select(0, _index(rows, input.device))
    return PackedSequence(data, _index(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: returns (padded, lengths) with padded of shape
    (T, B, *) (or (B, T, *)), T = total_length or the longest length, in the original batch
    order; lengths is an int64 CPU tensor."""
    data, batch_sizes = sequence.data, [int(v) for v in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    batch_size = batch_sizes[0] if batch_sizes else 0
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(batch_size)]
    offsets = [0]
    for bs in batch_sizes:
        offsets.append(offsets[-1] + bs)
    pad_row = data.shape[0]  # index of the padding row appended below
    if batch_first:
        rows = [offsets[t] + b if t < lengths[b] else pad_row for b in range(batch_size) for t in range(max_seq_length)]
        shape = [batch_size, max_seq_length]
    else:
        rows = [offsets[t] + b if t < lengths[b] else pad_row for t in range(max_seq_length) for b in range(batch_size)]
        shape = [max_seq_length, batch_size]
    feature = list(data.shape[1:])
    padding = _C.full([1, *feature], padding_value, dtype=data.dtype, device=data.device)
    padded = _C.cat([data, padding], 0).index_select(0, _index(rows, data.device)).reshape(shape + feature)
    lengths_t = _index(lengths)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths_t = lengths_t.index_select(0, sequence.unsorted_indices.to("cpu"))
    return padded, lengths_t


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shape (L_i, *) into (T, B, *) (or (B, T, *)), T = max L_i, filling
    the missing steps with padding_value on the right (or on the left)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = list(sequences[0].shape[1:])
    for s in sequences:
        if s.dim() == 0:
            raise RuntimeError("pad_sequence: every sequence must have at least one dimension (its length)")
        if list(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: all sequences must have the same trailing dimensions, but got "
                               f"{trailing} and {list(s.shape[1:])}")
    lengths = [s.shape[0] for s in sequences]
    total, batch = max(lengths), len(sequences)
    starts = [0]
    for n in lengths:
        starts.append(starts[-1] + n)
    pad_row = starts[-1]

    def row(b, t):
        # Step t of the padded output reads step t (right) or t - (T - L_b) (left) of sequence b.
        k = t if padding_side == "right" else t - (total - lengths[b])
        return starts[b] + k if 0 <= k < lengths[b] else pad_row

    if batch_first:
        rows = [row(b, t) for b in range(batch) for t in range(total)]
        shape = [batch, total]
    else:
        rows = [row(b, t) for t in range(total) for b in range(batch)]
        shape = [total, batch]
    first = sequences[0]
    padding = _C.full([1, *trailing], padding_value, dtype=first.dtype, device=first.device)
    stacked = _C.cat([*sequences, padding], 0)
    return stacked.index_select(0, _index(rows, first.device)).reshape(shape + trailing)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Splits a right-padded batch back into a list of tensors of shape (lengths[b], *)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths), strict=False)]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of tensors of shape (L_i, *); with enforce_sorted=True the L_i must decrease."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Inverse of pack_sequence: the list of the original tensors, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
