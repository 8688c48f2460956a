"""Building blocks shared by the models, as torchvision.ops.misc."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Sequence
from typing import Any

import ember
from ember import nn

__all__ = ["FrozenBatchNorm2d", "Conv2dNormActivation", "Conv3dNormActivation", "SqueezeExcitation", "MLP",
           "Permute"]


# Note [in-place activations]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torchvision builds its activations and dropouts with inplace=True to save memory. In ember only
# ReLU's in-place form keeps its backward working (the others save the input they overwrite, so
# backward fails with a version-counter error), so the blocks here pass inplace=True to ReLU alone
# and build the others out of place: same values, one more buffer.
def _inplace_for(layer: Callable[..., nn.Module], inplace: bool) -> bool:
    return bool(inplace) and layer is nn.ReLU


def _make_ntuple(x: Any, n: int) -> tuple:
    if isinstance(x, collections.abc.Iterable):
        return tuple(x)
    return (x,) * n


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d whose statistics and affine parameters are fixed buffers (no gradients, no updates):
    y = (x - running_mean) / sqrt(running_var + eps) * weight + bias, over [N, C, H, W]."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", ember.ones(num_features))
        self.register_buffer("bias", ember.zeros(num_features))
        self.register_buffer("running_mean", ember.zeros(num_features))
        self.register_buffer("running_var", ember.ones(num_features))

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        # A BatchNorm2d checkpoint has a counter this module has no use for.
        state_dict.pop(prefix + "num_batches_tracked", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


class ConvNormActivation(nn.Sequential):
    """conv → norm → activation as one Sequential (children "0", "1", "2", which checkpoints name).

    padding=None keeps the spatial size at stride 1 ((kernel_size - 1) // 2 * dilation per dim);
    bias=None gives the conv a bias only when there is no norm layer.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, ...] = 3,
                 stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] | str | None = None,
                 groups: int = 1, norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | tuple[int, ...] = 1, inplace: bool | None = True, bias: bool | None = None,
                 conv_layer: Callable[..., nn.Module] = nn.Conv2d) -> None:
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                n = len(kernel_size) if isinstance(kernel_size, Sequence) else len(dilation)
                kernel_size = _make_ntuple(kernel_size, n)
                dilation = _make_ntuple(dilation, n)
                padding = tuple((kernel_size[i] - 1) // 2 * dilation[i] for i in range(n))
        if bias is None:
            bias = norm_layer is None
        layers = [conv_layer(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                             groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            params = {} if inplace is None else {"inplace": _inplace_for(activation_layer, inplace)}
            layers.append(activation_layer(**params))
        super().__init__(*layers)
        self.out_channels = out_channels


class Conv2dNormActivation(ConvNormActivation):
    """Conv2d → norm (BatchNorm2d) → activation (ReLU); see ConvNormActivation."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int] = 3,
                 stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] | str | None = None,
                 groups: int = 1, norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | tuple[int, int] = 1, inplace: bool | None = True, bias: bool | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv2d)


class Conv3dNormActivation(ConvNormActivation):
    """Conv3d → norm (BatchNorm3d) → activation (ReLU); see ConvNormActivation."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int, int] = 3,
                 stride: int | tuple[int, int, int] = 1, padding: int | tuple[int, int, int] | str | None = None,
                 groups: int = 1, norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm3d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | tuple[int, int, int] = 1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv3d)


class SqueezeExcitation(nn.Module):
    """Squeeze-and-Excitation (Hu et al.): scale each channel of x by
    scale_activation(fc2(activation(fc1(avgpool(x))))), fc1/fc2 being 1×1 convolutions."""

    def __init__(self, input_channels: int, squeeze_channels: int,
                 activation: Callable[..., nn.Module] = nn.ReLU,
                 scale_activation: Callable[..., nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: ember.Tensor) -> ember.Tensor:
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return self._scale(input) * input


class MLP(nn.Sequential):
    """Linear layers of widths `hidden_channels`, each but the last followed by norm (optional),
    activation and dropout; the last by dropout only."""

    def __init__(self, in_channels: int, hidden_channels: list[int],
                 norm_layer: Callable[..., nn.Module] | None = None,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU, inplace: bool | None = None,
                 bias: bool = True, dropout: float = 0.0) -> None:
        if len(hidden_channels) == 0:
            raise ValueError("hidden_channels must name at least one layer width, but got []")
        # Note [in-place activations]: only ReLU runs in place; dropout never does.
        act_params = {} if inplace is None else {"inplace": _inplace_for(activation_layer, inplace)}
        drop_params = {} if inplace is None else {"inplace": False}
        layers: list[nn.Module] = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            if activation_layer is not None:
                layers.append(activation_layer(**act_params))
            layers.append(nn.Dropout(dropout, **drop_params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **drop_params))
        super().__init__(*layers)


class Permute(nn.Module):
    """x.permute(dims) as a module (e.g. NCHW → NHWC inside a Sequential)."""

    def __init__(self, dims: list[int]):
        super().__init__()
        self.dims = dims

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return ember.permute(x, self.dims)
