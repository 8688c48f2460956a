"""LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, RMSNorm, LocalResponseNorm (torch.nn)."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from .batchnorm import _BatchNorm
from .module import Module

__all__ = ["CrossMapLRN2d", "LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm",
           "LocalResponseNorm"]


def _factory(device, dtype) -> dict:
    kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
    if device is not None:
        kwargs["device"] = device
    return kwargs


class LayerNorm(Module):
    """Normalizes over the trailing normalized_shape dims, with elementwise weight and bias."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        kwargs = _factory(device, dtype)
        if elementwise_affine:
            self.weight = Parameter(_C.ones(list(self.normalized_shape), **kwargs))
            if bias:
                self.bias = Parameter(_C.zeros(list(self.normalized_shape), **kwargs))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """x / RMS(x) over the trailing normalized_shape dims, times an elementwise weight."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_C.ones(list(self.normalized_shape), **_factory(device, dtype)))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            with no_grad():
                self.weight.fill_(1)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalizes groups of channels per sample, with a per-channel affine map."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            kwargs = _factory(device, dtype)
            self.weight = Parameter(_C.ones([num_channels], **kwargs))
            self.bias = Parameter(_C.zeros([num_channels], **kwargs))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.affine:
            with no_grad():
                self.weight.fill_(1)
                self.bias.zero_()

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(_BatchNorm):
    """BatchNorm's parameters and buffers, but affine=False and track_running_stats=False by
    default, and statistics per (sample, channel)."""

    _dims = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        spatial = self._dims
        if input.dim() not in (spatial + 1, spatial + 2):
            raise ValueError(f"expected {spatial + 1}D or {spatial + 2}D input (got {input.dim()}D input)")
        unbatched = input.dim() == spatial + 1
        x = _C.unsqueeze(input, 0) if unbatched else input
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), but got: "
                             f"{x.shape[1]}.")
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return _C.squeeze(out, [0]) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    _dims = 3


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Local response normalization across the channels of 4-D inputs, the legacy form
    (torch.nn.CrossMapLRN2d): x / (k + alpha / size * S)^beta, S a running sum of squares over
    channels computed by PyTorch's recurrence, reproduced exactly: channel c adds channel
    c + pre - 1 and, once c > pre, drops channel c - pre (pre = (size - 1) // 2 + 1), so channel 0
    stays in every later window, as in PyTorch."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        channels = input.shape[1]
        squares = input * input
        pre = int((self.size - 1) / 2 + 1)
        current = squares.narrow(1, 0, min(pre, channels)).sum(1)
        scales = [current]
        for c in range(1, channels):
            if c < channels - pre + 1:
                current = current + squares.select(1, c + pre - 1)
            if c > pre:
                current = current - squares.select(1, c - pre)
            scales.append(current)
        scale = _C.stack(scales, 1) * (self.alpha / self.size) + self.k
        return input * scale ** (-self.beta)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
