"""The plain DDP communication hooks: all-reduce (what DDP does without a hook) and all-reduce of a
float16 / bfloat16 copy (half the bytes on the wire, the cast's precision). The state of each is the
process group (None: the default group)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
import ember.distributed as dist
from ember.futures import Future

__all__ = ["allreduce_hook", "bf16_compress_hook", "bf16_compress_wrapper", "fp16_compress_hook",
           "fp16_compress_wrapper"]


def _allreduce_fut(process_group: Any, tensor: ember.Tensor) -> Future:
    """Averages `tensor` in place over the group; the Future's value is `tensor`.

    Each rank divides before the sum (as PyTorch's reducer does): the sum of already-scaled values
    cannot overflow a narrow dtype that the unscaled values would."""
    tensor.div_(dist.get_world_size(process_group))
    work = dist.all_reduce(tensor, group=process_group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group: Any, bucket: dist.GradBucket) -> Future:
    """All-reduces the bucket's gradients and averages them: DDP's own behaviour without a hook."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype: ember.dtype, process_group: Any, bucket: dist.GradBucket) -> Future:
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(dist.get_world_size(process_group))
    work = dist.all_reduce(compressed, group=process_group, async_op=True)

    def decompress(fut: Future) -> ember.Tensor:
        buffer.copy_(fut.value()[0])  # back to the gradients' dtype, in the bucket's own buffer
        return buffer

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group: Any, bucket: dist.GradBucket) -> Future:
    """All-reduces a float16 copy of the gradients (each rank's share divided first) and writes the
    average back in the gradients' dtype."""
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group: Any, bucket: dist.GradBucket) -> Future:
    """fp16_compress_hook with bfloat16: float32's range, 8 bits of mantissa."""
    return _compress_hook(ember.bfloat16, process_group, bucket)


def _compress_wrapper(dtype: ember.dtype, hook: Callable[[Any, dist.GradBucket], Future]) -> Callable:
    def wrapped(state: Any, bucket: dist.GradBucket) -> Future:
        original = bucket.buffer()
        bucket.set_buffer(original.to(dtype))
        fut = hook(state, bucket)

        def decompress(fut: Future) -> ember.Tensor:
            value = fut.value()
            original.copy_(value[0] if isinstance(value, (list, tuple)) else value)
            return original

        return fut.then(decompress)

    wrapped.__name__ = f"{_dtype_name(dtype)}_compress_wrapper({getattr(hook, '__name__', 'hook')})"
    return wrapped


def _dtype_name(dtype: ember.dtype) -> str:
    return "fp16" if dtype == ember.float16 else "bf16"


def fp16_compress_wrapper(hook: Callable[[Any, dist.GradBucket], Future]) -> Callable:
    """Runs `hook` on a float16 copy of the bucket (e.g. powerSGD_hook, whose P and Q then travel
    in float16) and writes its result back in the gradients' dtype."""
    return _compress_wrapper(ember.float16, hook)


def bf16_compress_wrapper(hook: Callable[[Any, dist.GradBucket], Future]) -> Callable:
    """fp16_compress_wrapper with bfloat16."""
    return _compress_wrapper(ember.bfloat16, hook)
