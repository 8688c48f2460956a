"""Collectives that autograd sees through (TorchRec's ``torchrec.distributed.comm_ops``): the
pooled-embedding all-to-all (backward: the reverse all-to-all) and reduce-scatter (backward: an
all-gather), over ``ember.distributed``. Splits may differ per rank."""

from __future__ import annotations

import ember
import ember.distributed as dist
from ember.autograd import Function


def all_to_all_flat(values: ember.Tensor, send_sizes: list[int], recv_sizes: list[int], group=None) -> ember.Tensor:
    """Rank r sends values[sum(send_sizes[:j]) : ...][send_sizes[j] entries] to rank j and
    receives recv_sizes[j] entries from it, in rank order (1-D, no autograd)."""
    out = ember.empty(sum(recv_sizes), dtype=values.dtype)
    dist.all_to_all_single(out, values.contiguous(), output_split_sizes=list(recv_sizes),
                           input_split_sizes=list(send_sizes), group=group)
    return out


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, values, send_sizes, recv_sizes, group):
        ctx.sizes, ctx.group = (send_sizes, recv_sizes), group
        return all_to_all_flat(values, send_sizes, recv_sizes, group)

    @staticmethod
    def backward(ctx, grad):
        send_sizes, recv_sizes = ctx.sizes
        return all_to_all_flat(grad, recv_sizes, send_sizes, ctx.group), None, None, None


def all_to_all_pooled(values: ember.Tensor, send_sizes: list[int], recv_sizes: list[int], group=None) -> ember.Tensor:
    """A differentiable all_to_all_flat (pooled embeddings, flattened)."""
    return _AllToAll.apply(values, list(send_sizes), list(recv_sizes), group)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, stacked, rows_per_rank, group):
        """stacked: [sum(rows_per_rank), D]; rank r gets the sum over ranks of its block."""
        ctx.rows, ctx.group = rows_per_rank, group
        blocks = list(ember.split(stacked.contiguous(), rows_per_rank))
        out = ember.empty(rows_per_rank[dist.get_rank(group)], stacked.shape[1], dtype=stacked.dtype)
        dist.reduce_scatter(out, [b.contiguous() for b in blocks], group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        width = grad.shape[1]
        gathered = [ember.empty(n, width, dtype=grad.dtype) for n in ctx.rows]
        dist.all_gather(gathered, grad.contiguous(), group=ctx.group)
        return ember.cat(gathered, 0), None, None


def reduce_scatter_pooled(stacked: ember.Tensor, rows_per_rank: list[int], group=None) -> ember.Tensor:
    """A differentiable reduce-scatter of row blocks (rank r's block: rows_per_rank[r] rows)."""
    return _ReduceScatter.apply(stacked, list(rows_per_rank), group)
