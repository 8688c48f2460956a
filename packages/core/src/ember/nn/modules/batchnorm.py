"""BatchNorm1d/2d/3d (torch.nn.BatchNorm*): per-channel normalization over the batch, with running
statistics (momentum=None: a cumulative average) when track_running_stats."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(Module):
    _version = 2
    _input_dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        if affine:
            self.weight = Parameter(_C.ones([num_features], **kwargs))
            self.bias = Parameter(_C.zeros([num_features], **kwargs))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros([num_features], **kwargs))
            self.register_buffer("running_var", _C.ones([num_features], **kwargs))
            self.register_buffer("num_batches_tracked", _C.zeros([], dtype=_C.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            with no_grad():
                self.weight.fill_(1)
                self.bias.zero_()

    def _check_input_dim(self, input) -> None:
        if input.dim() not in self._input_dims:
            expected = " or ".join(f"{d}D" for d in self._input_dims)
            raise ValueError(f"expected {expected} input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        # the running statistics are updated only while training with track_running_stats
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # Version 1 checkpoints predate num_batches_tracked: start it at 0 rather than report it missing.
        key = prefix + "num_batches_tracked"
        if local_metadata.get("version", 1) < 2 and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                else _C.zeros([], dtype=_C.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _input_dims = (4,)


class BatchNorm3d(_BatchNorm):
    _input_dims = (5,)
