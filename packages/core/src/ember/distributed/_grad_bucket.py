"""GradBucket: what a DDP communication hook is handed (torch.distributed.GradBucket's API)."""

from __future__ import annotations

import ember

__all__ = ["GradBucket"]


class GradBucket:
    """One DDP bucket during backward: its gradients flattened into one 1-D buffer (in parameter
    order), the parameters they belong to, and the bucket's index. A hook returns a Future whose
    value is the reduced buffer (a tensor of the buffer's size); DDP writes it back into .grad."""

    def __init__(self, index: int, buffer: ember.Tensor, parameters: list, is_last: bool) -> None:
        self._index = index
        self._buffer = buffer
        self._parameters = parameters
        self._is_last = is_last

    def index(self) -> int:
        return self._index

    def buffer(self) -> ember.Tensor:
        return self._buffer

    def set_buffer(self, buffer: ember.Tensor) -> None:
        """Replaces the buffer (a hook may reduce a copy, e.g. a compressed one)."""
        if not isinstance(buffer, ember.Tensor):
            raise TypeError(f"GradBucket.set_buffer: expected a tensor, but got {type(buffer).__name__}")
        if buffer.dim() != 1 or buffer.numel() != self._buffer.numel():
            raise ValueError(f"GradBucket.set_buffer: expected a 1-D tensor of {self._buffer.numel()} elements, "
                             f"but got shape {tuple(buffer.shape)}")
        self._buffer = buffer

    def is_last(self) -> bool:
        """Whether this is the last bucket to be reduced in the iteration."""
        return self._is_last

    def parameters(self) -> list:
        return list(self._parameters)

    def gradients(self) -> list:
        """One view of the buffer per parameter, shaped like it."""
        out, at = [], 0
        for p in self._parameters:
            out.append(self._buffer[at:at + p.numel()].view(p.shape))
            at += p.numel()
        return out

    # PyTorch 1.8/1.9's names, which hooks written for those releases call.
    get_index = index
    get_tensor = buffer
    set_tensor = set_buffer
    is_the_last_bucket_to_allreduce = is_last
    get_per_parameter_tensors = gradients
