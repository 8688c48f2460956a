"""PowerSGD gradient compression for DDP (Vogels et al., 2019, https://arxiv.org/abs/1905.13727), with
error feedback and warm start, as PyTorch 1.8 released it (plus 1.10's min_compression_rate and
orthogonalization_epsilon).

Note [PowerSGD step]: a bucket's gradients (plus the error carried over from the previous step)
split into matrices worth compressing (each gradient of rank >= 2, seen as an n x m matrix M, when
(n + m) * r * min_compression_rate < n * m) and the rest (biases, norms, small matrices), which are
averaged uncompressed in one all-reduce. For each M, with Q (m x r) either random (the same seed on
every rank) or last step's (warm start):
    P = M Q; all-reduce P; orthonormalize P's columns; Q = M^T P; all-reduce Q; M ~ P Q^T / world.
Only P and Q travel: (n + m) r numbers instead of n m. batched_powerSGD_hook instead views the whole
bucket, zero-padded, as one square matrix (coarser, one pair of all-reduces per bucket in all). With error feedback, the difference between
this rank's input and the result it gets back is added to the next step's gradients, so what
compression drops is delayed, not lost.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

import ember
import ember.distributed as dist
from ember.futures import Future

from . import default_hooks

__all__ = ["PowerSGDState", "batched_powerSGD_hook", "powerSGD_hook"]

logger = logging.getLogger(__name__)


def _orthogonalize(matrix: ember.Tensor, epsilon: float = 0.0) -> None:
    """Gram-Schmidt on the columns of a tall, thin matrix, in place. epsilon > 0 guards the
    normalization against a column that vanished (a zero gradient); with 0 a zero column is NaN,
    as in PyTorch."""
    cols = matrix.shape[1]
    for i in range(cols):
        col = matrix[:, i:i + 1]
        col.div_(ember.linalg.vector_norm(col) + epsilon)
        if i + 1 < cols:
            rest = matrix[:, i + 1:]
            rest.sub_((col * rest).sum(dim=0, keepdim=True) * col)


def _should_compress(rows: int, cols: int, rank: int, min_compression_rate: float) -> tuple[bool, int, int]:
    """(worth compressing, elements uncompressed, elements compressed) for an rows x cols matrix."""
    uncompressed, compressed = rows * cols, (rows + cols) * rank
    return compressed * min_compression_rate < uncompressed, uncompressed, compressed


class PowerSGDState:
    """The hook's hyperparameters and its memory across steps (per bucket: the error, P and Q).

    matrix_approximation_rank r: the rank of the approximation (1-4 is usual; lower compresses
    more). start_powerSGD_iter: steps of plain all-reduce before compression starts (compressing
    the first, most sensitive steps costs accuracy). min_compression_rate: a matrix is compressed
    only if that saves at least this factor. use_error_feedback / warm_start: see Note [PowerSGD
    step]. orthogonalization_epsilon: added to each column norm before dividing. random_seed: seeds
    the Q initializations, identically on every rank."""

    __slots__ = ["process_group", "matrix_approximation_rank", "start_powerSGD_iter", "min_compression_rate",
                 "use_error_feedback", "warm_start", "orthogonalization_epsilon", "rng", "error_dict",
                 "p_memory_dict", "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency", "next_stats_report"]

    def __init__(self, process_group: Any, matrix_approximation_rank: int = 1, start_powerSGD_iter: int = 1_000,  # noqa: N803
                 min_compression_rate: float = 2, use_error_feedback: bool = True, warm_start: bool = True,
                 orthogonalization_epsilon: float = 0, random_seed: int = 0,
                 compression_stats_logging_frequency: int = 10_000) -> None:
        if isinstance(matrix_approximation_rank, bool) or not isinstance(matrix_approximation_rank, int) \
                or matrix_approximation_rank < 1:
            raise ValueError("PowerSGDState: expected matrix_approximation_rank to be an int >= 1, but got "
                             f"{matrix_approximation_rank!r}")
        if not isinstance(start_powerSGD_iter, int) or start_powerSGD_iter < 0:
            raise ValueError(f"PowerSGDState: expected start_powerSGD_iter to be an int >= 0, but got {start_powerSGD_iter!r}")
        # The buffers a bucket leaves behind (error, P, Q) must belong to a bucket layout that no
        # longer changes; PyTorch rebuilds buckets after the first step, so it asks for two plain steps.
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, "
                             "because PowerSGD can only be applied after the first two iterations in DDP.")
        if not min_compression_rate >= 0:
            raise ValueError(f"PowerSGDState: expected min_compression_rate >= 0, but got {min_compression_rate!r}")
        if not orthogonalization_epsilon >= 0:
            raise ValueError("PowerSGDState: expected orthogonalization_epsilon >= 0, but got "
                             f"{orthogonalization_epsilon!r}")
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        # Draws one seed per Q initialization: different projections from step to step, the same
        # ones on every rank.
        self.rng = np.random.RandomState(random_seed)
        self.error_dict: dict[int, ember.Tensor] = {}
        self.p_memory_dict: dict[int, ember.Tensor] = {}
        self.q_memory_dict: dict[int, ember.Tensor] = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0

    def maybe_increase_iter(self, bucket: dist.GradBucket) -> None:
        """Counts a step once its last bucket is reduced."""
        if bucket.is_last():
            self.iter += 1
            if self.iter == self.start_powerSGD_iter:
                logger.info("PowerSGD: compression starts after %d iterations", self.iter)

    def compression_stats(self) -> tuple[float, int, int]:
        """(compression rate, elements before compression, elements after), over every compressed step."""
        rate = (self.total_numel_before_compression / self.total_numel_after_compression
                if self.total_numel_after_compression > 0 else 0)
        return rate, self.total_numel_before_compression, self.total_numel_after_compression

    def _report(self, bucket: dist.GradBucket) -> None:
        if bucket.is_last() and self.iter >= self.next_stats_report:
            rate, before, after = self.compression_stats()
            logger.info("PowerSGD compression stats: iter %d, %d elements before compression, %d after, rate %g",
                        self.iter, before, after, rate)
            self.next_stats_report = self.iter + self.compression_stats_logging_frequency


def _flat_memory(memory: dict, index: int, numel: int, dtype: ember.dtype) -> tuple[ember.Tensor, bool]:
    """The bucket's P or Q memory, (re)allocated when missing or of another size; whether it is new."""
    t = memory.get(index)
    if t is None or t.numel() != numel or t.dtype != dtype:
        memory[index] = t = ember.empty(numel, dtype=dtype)
        return t, True
    return t, False


def powerSGD_hook(state: PowerSGDState, bucket: dist.GradBucket) -> Future:  # noqa: N802 - torch's name
    """Averages the bucket's gradients with PowerSGD compression (Note [PowerSGD step]); plain
    all-reduce for the first state.start_powerSGD_iter steps."""
    group = state.process_group
    world = dist.get_world_size(group)
    buffer = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default_hooks._allreduce_fut(group, buffer)

    index, dtype = bucket.index(), buffer.dtype
    if state.use_error_feedback:
        error = state.error_dict.get(index)
        if error is not None and error.numel() == buffer.numel():
            buffer.add_(error)
        else:
            state.error_dict[index] = ember.zeros_like(buffer)
        local = buffer.clone()  # this rank's input, to measure what the reduction dropped

    # Rank-0/1 tensors and matrices too small to gain from compression go uncompressed.
    uncompressed: list[ember.Tensor] = []
    matrices: list[tuple[ember.Tensor, int]] = []  # (view of the buffer as n x m, rank)
    for grad in bucket.gradients():
        if grad.dim() <= 1:
            uncompressed.append(grad)
            state.total_numel_before_compression += grad.numel()
            state.total_numel_after_compression += grad.numel()
            continue
        m = grad.view(grad.shape[0], -1)
        rank = min(m.shape[0], m.shape[1], state.matrix_approximation_rank)
        worth, before, after = _should_compress(m.shape[0], m.shape[1], rank, state.min_compression_rate)
        state.total_numel_before_compression += before
        if worth:
            matrices.append((m, rank))
            state.total_numel_after_compression += after
        else:
            uncompressed.append(grad)
            state.total_numel_after_compression += before

    # P and Q of every matrix live in one flat buffer each, so each is one all-reduce.
    p_numel = sum(m.shape[0] * r for m, r in matrices)
    q_numel = sum(m.shape[1] * r for m, r in matrices)
    p_flat, _ = _flat_memory(state.p_memory_dict, index, p_numel, dtype)
    q_flat, q_new = _flat_memory(state.q_memory_dict, index, q_numel, dtype)
    ps, qs, at_p, at_q = [], [], 0, 0
    for m, r in matrices:
        ps.append(p_flat[at_p:at_p + m.shape[0] * r].view(m.shape[0], r))
        qs.append(q_flat[at_q:at_q + m.shape[1] * r].view(m.shape[1], r))
        at_p += m.shape[0] * r
        at_q += m.shape[1] * r
    if q_new or not state.warm_start:
        gen = ember.Generator()
        gen.manual_seed(int(state.rng.randint(1_000_000_000)))
        for q in qs:
            q.copy_(ember.randn(q.shape, generator=gen, dtype=dtype))
            _orthogonalize(q, state.orthogonalization_epsilon)
    for (m, _), p, q in zip(matrices, ps, qs, strict=True):
        ember.matmul(m, q, out=p)

    if uncompressed:
        first = default_hooks._allreduce_fut(group, ember.cat([g.reshape(-1) for g in uncompressed]))
    else:
        first = Future()
        first.set_result(ember.empty(0, dtype=dtype))

    # Each stage runs when the previous all-reduce is done; the all-reduces it issues and waits on
    # run in order (Note [collectives from callbacks] in distributed_c10d.py).
    def unpack_and_reduce_ps(fut: Future) -> None:
        averaged, at = fut.value(), 0
        for g in uncompressed:
            g.copy_(averaged[at:at + g.numel()].view(g.shape))
            at += g.numel()
        if matrices:  # the same on every rank: the buckets are
            dist.all_reduce(p_flat, group=group, async_op=True).get_future().wait()

    def orthogonalize_and_reduce_qs(fut: Future) -> None:
        fut.value()  # raises if the previous stage failed
        for p in ps:
            _orthogonalize(p, state.orthogonalization_epsilon)
        for (m, _), p, q in zip(matrices, ps, qs, strict=True):
            ember.matmul(m.t(), p, out=q)
        if matrices:
            dist.all_reduce(q_flat, group=group, async_op=True).get_future().wait()

    def decompress(fut: Future) -> ember.Tensor:
        fut.value()
        for (m, _), p, q in zip(matrices, ps, qs, strict=True):
            m.copy_(ember.matmul(p, q.t()).div_(world))
        if state.use_error_feedback:
            state.error_dict[index] = local - buffer
        if not state.warm_start:
            state.p_memory_dict.pop(index, None)
            state.q_memory_dict.pop(index, None)
        state._report(bucket)
        state.maybe_increase_iter(bucket)
        return buffer

    return first.then(unpack_and_reduce_ps).then(orthogonalize_and_reduce_qs).then(decompress)


def batched_powerSGD_hook(state: PowerSGDState, bucket: dist.GradBucket) -> Future:  # noqa: N802 - torch's name
    """PowerSGD on the whole bucket at once: its gradients, zero-padded to s * s elements with
    s = ceil(sqrt(numel)), form one s x s matrix (Note [PowerSGD step]; min_compression_rate does not
    apply). Cheaper to run than powerSGD_hook, usually less accurate at the same rank."""
    group = state.process_group
    world = dist.get_world_size(group)
    buffer = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default_hooks._allreduce_fut(group, buffer)

    index, dtype, numel = bucket.index(), buffer.dtype, buffer.numel()
    side = math.isqrt(numel - 1) + 1 if numel > 0 else 0
    rank = min(side, state.matrix_approximation_rank)
    padded = ember.zeros(side * side, dtype=dtype)
    padded[:numel].copy_(buffer)
    if state.use_error_feedback:
        error = state.error_dict.get(index)
        if error is not None and error.numel() == padded.numel():
            padded.add_(error)
        else:
            state.error_dict[index] = ember.zeros_like(padded)
        local = padded.clone()
    state.total_numel_before_compression += side * side
    state.total_numel_after_compression += 2 * side * rank
    matrix = padded.view(side, side)
    p_flat, _ = _flat_memory(state.p_memory_dict, index, side * rank, dtype)
    q_flat, q_new = _flat_memory(state.q_memory_dict, index, side * rank, dtype)
    p, q = p_flat.view(side, rank), q_flat.view(side, rank)
    if q_new or not state.warm_start:
        gen = ember.Generator()
        gen.manual_seed(int(state.rng.randint(1_000_000_000)))
        q.copy_(ember.randn(q.shape, generator=gen, dtype=dtype))
        _orthogonalize(q, state.orthogonalization_epsilon)
    ember.matmul(matrix, q, out=p)

    def orthogonalize_and_reduce_q(fut: Future) -> None:
        fut.value()
        _orthogonalize(p, state.orthogonalization_epsilon)
        ember.matmul(matrix.t(), p, out=q)
        dist.all_reduce(q_flat, group=group, async_op=True).get_future().wait()

    def decompress(fut: Future) -> ember.Tensor:
        fut.value()
        matrix.copy_(ember.matmul(p, q.t()).div_(world))
        if state.use_error_feedback:
            state.error_dict[index] = local - padded
        if not state.warm_start:
            state.p_memory_dict.pop(index, None)
            state.q_memory_dict.pop(index, None)
        buffer.copy_(padded[:numel])
        state._report(bucket)
        state.maybe_increase_iter(bucket)
        return buffer

    first = dist.all_reduce(p_flat, group=group, async_op=True).get_future()
    return first.then(orthogonalize_and_reduce_q).then(decompress)
