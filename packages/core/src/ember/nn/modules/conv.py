"""Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch.nn), over the functional convolutions.

padding_mode other than 'zeros' pads the input with F.pad first and convolves unpadded, as
PyTorch does; weights start kaiming_uniform_(a=sqrt(5)) with the bias uniform in +-1/sqrt(fan_in).
"""

from __future__ import annotations

import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    _n: int = 0
    transposed: bool = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding, dilation, groups: int,
                 bias: bool, padding_mode: str, output_padding=0, device=None, dtype=None) -> None:
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
            if self.transposed:
                raise ValueError(f"padding={padding!r} is not supported for transposed convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got padding_mode="
                             f"'{padding_mode}'")
        if self.transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.output_padding = _tuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's (last_before, last_after, ...) widths for the non-zeros padding modes
        if padding == "same":
            widths = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size), strict=True):
                total = d * (k - 1)
                widths += [total // 2, total - total // 2]
            self._reversed_padding_repeated_twice = widths
        elif padding == "valid":
            self._reversed_padding_repeated_twice = [0, 0] * n
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        shape = [in_channels, out_channels // groups] if self.transposed else [out_channels, in_channels // groups]
        self.weight = Parameter(_C.zeros(shape + list(self.kernel_size), **kwargs))
        if bias:
            self.bias = Parameter(_C.zeros([out_channels], **kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._n
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._n - 1]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over [N, C_in, L] (or unbatched [C_in, L]) inputs."""

    _n = 1


class Conv2d(_Conv):
    """2-D convolution over [N, C_in, H, W] (or unbatched [C_in, H, W]) inputs."""

    _n = 2


class Conv3d(_Conv):
    """3-D convolution over [N, C_in, D, H, W] (or unbatched) inputs."""

    _n = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def _output_padding(self, input, output_size) -> tuple:
        """The output_padding that makes the output `output_size` (which may include N and C)."""
        if output_size is None:
            return self.output_padding
        n = self._n
        sizes = [int(s) for s in output_size]
        if len(sizes) == n + 2 or (len(sizes) == n + 1 and input.dim() == n + 1):
            sizes = sizes[-n:]
        if len(sizes) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or {n + 2} "
                             f"elements (got {len(sizes)})")
        spatial = input.shape[-n:]
        padding = []
        for i in range(n):
            smallest = ((spatial[i] - 1) * self.stride[i] - 2 * self.padding[i]
                        + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            largest = smallest + self.stride[i] - 1
            if not smallest <= sizes[i] <= largest:
                raise ValueError(f"requested an output size of {sizes}, but valid sizes range from {smallest} to "
                                 f"{largest} (for an input of {list(spatial)})")
            padding.append(sizes[i] - smallest)
        return tuple(padding)

    def forward(self, input, output_size=None):
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._n - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                    self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """The transpose (gradient) of Conv1d: [N, C_in, L] -> [N, C_out, L_out]."""

    _n = 1


class ConvTranspose2d(_ConvTranspose):
    """The transpose (gradient) of Conv2d."""

    _n = 2


class ConvTranspose3d(_ConvTranspose):
    """The transpose (gradient) of Conv3d."""

    _n = 3
