"""AdaptiveLogSoftmaxWithLoss (torch.nn): the adaptive softmax of Grave et al., "Efficient softmax
approximation for GPUs". Frequent classes (below cutoffs[0]) are scored by a head layer that also
scores one entry per tail cluster; a rarer class's log-probability is its cluster's head
log-probability plus its log-probability within the cluster, from a low-rank tail projection."""

from __future__ import annotations

from collections import namedtuple

from ... import _C
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if (len(cutoffs) == 0 or cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        factory = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input_, target_):
        target_dim = target_.dim()
        if target_dim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        elif target_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_dim > 0
        input = input_ if batched else _C.unsqueeze(input_, 0)
        target = target_ if batched else _C.unsqueeze(target_, 0)
        batch = target.shape[0]
        output = _C.zeros([batch], dtype=input.dtype)
        gather = _C.zeros([batch], dtype=_C.int64)
        used = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            mask = _C.logical_and(_C.ge(target, low), _C.lt(target, high))
            rows = _C.nonzero(mask).reshape(-1)
            if rows.numel() == 0:
                continue
            if i == 0:  # shortlist classes: scored by the head directly
                gather = gather.index_copy(0, rows, target[mask].to(_C.int64))
            else:  # cluster i: the head scores the cluster, the tail the class within it
                relative = _C.sub(target[mask], low).to(_C.int64)
                cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
                local = _C.gather(cluster_logprob, 1, _C.unsqueeze(relative, 1)).reshape(-1)
                gather = gather.index_fill(0, rows, self.shortlist_size + i - 1)
                output = output.index_copy(0, rows, local)
            used += rows.numel()
        if used != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{_C.amin(target).item()}, {_C.amax(target).item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + _C.gather(head_logprob, 1, _C.unsqueeze(gather, 1)).reshape(-1)
        loss = (-output).mean()
        if not batched:
            output = _C.squeeze(output, [0])
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + _C.unsqueeze(head_logprob[:, self.shortlist_size + i], 1))
        return _C.cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of every class: [N, n_classes] (or [n_classes] for a 1-D input)."""
        if input.dim() not in (1, 2):
            raise RuntimeError(f"log_prob expects a 1D or 2D input, but found inputs with size {list(input.shape)}")
        batched = input.dim() == 2
        x = input if batched else _C.unsqueeze(input, 0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else _C.squeeze(out, [0])

    def predict(self, input):
        """The most likely class of each row (argmax of log_prob)."""
        return self.log_prob(input).argmax(dim=-1)
