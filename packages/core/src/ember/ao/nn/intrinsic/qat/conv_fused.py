"""Fused convolution modules for quantization-aware training (torch.ao.nn.intrinsic.qat):
ConvBn1d/2d/3d and ConvBnReLU1d/2d/3d train a convolution with the BatchNorm after it folded
into the fake-quantized weight; ConvReLU1d/2d/3d are the QAT convolutions with a relu after them.

The ConvBn forward (PyTorch's approximate one): with s = bn.weight / sqrt(bn.running_var + eps),
the convolution runs with the fake-quantized weight W * s and no bias, its output is divided by
s again and the conv bias added, and the module's BatchNorm normalizes that, with the batch's
statistics (updating its running ones) while the BN statistics are not frozen, with the running
statistics once freeze_bn_stats() is called. Setting `_enable_slow_path_for_better_numerical_stability`
chooses PyTorch's two-convolution form instead (arXiv:1806.08342), which also handles
bn.weight == 0.

convert quantizes these modules as the plain convolution the BatchNorm folds into, with this
module's weight fake quantizer (run once more on the folded weight, as PyTorch's from_float does)
and output observer: `module[0]` is that folded convolution, the first part of the module as
ember.ao.nn.quantized's from_float reads a fused module (PyTorch's would be the BatchNorm child).
"""

from __future__ import annotations

import math

from ..... import _C
from .....nn import functional as F
from .....nn import init
from .....nn import modules as nn
from .....nn.parameter import Parameter
from .....nn.utils.fusion import fuse_conv_bn_weights
from ... import qat as nnqat
from ...intrinsic import modules as nni

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "ConvReLU1d",
           "ConvReLU2d", "ConvReLU3d", "freeze_bn_stats", "update_bn_stats"]


class _QuantizedAsLayer:
    """What convert reads of a fused QAT module: index 0 is the float layer it quantizes (the
    BatchNorm folded in), carrying this module's qconfig and weight fake quantizer."""

    def _layer_to_quantize(self):
        import ember

        state = ember.get_rng_state()  # building the float layer initializes weights it then replaces
        try:
            layer = self.to_float()
        finally:
            ember.set_rng_state(state)
        if isinstance(layer, nni._FusedModule):
            layer = layer._modules["0"]
        layer.qconfig = self.qconfig
        layer.weight_fake_quant = self.weight_fake_quant
        return layer

    def __getitem__(self, idx):
        if isinstance(idx, int) and idx == 0:
            return self._layer_to_quantize()
        return super().__getitem__(idx)


class _FoldedBn:
    """The BatchNorm switches of a module that folds a BatchNorm (`self.bn`) into its weight while
    training: ConvBnNd and LinearBn1d."""

    def reset_running_stats(self) -> None:
        self.bn.reset_running_stats()

    def reset_bn_parameters(self) -> None:
        """Reset the BatchNorm's statistics, draw its weight uniform in [0, 1), zero its bias."""
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)

    def update_bn_stats(self):
        """Let the BatchNorm train: batch statistics, running statistics updated."""
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        """Freeze the BatchNorm: running statistics used and no longer updated."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def train(self, mode: bool = True):
        """Set the training mode; a frozen BatchNorm stays in eval mode."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self


class _ConvBnNd(_QuantizedAsLayer, _FoldedBn):
    """The shared ConvBn parts; each ConvBnNd also derives from nn.ConvNd and nni._FusedModule."""

    _version = 2
    _FLOAT_MODULE: type
    _FLOAT_CONV_MODULE: type
    _FLOAT_BN_MODULE: type
    _FLOAT_RELU_MODULE = None
    _FUSED_FLOAT_MODULE = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias=None, padding_mode: str = "zeros", eps: float = 1e-05,
                 momentum: float = 0.1, freeze_bn: bool = False, qconfig=None) -> None:
        # the convolution without a bias: its weight initialized as nn.ConvNd's
        self._FLOAT_CONV_MODULE.__init__(self, in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, dilation=dilation, groups=groups, bias=False,
                                         padding_mode=padding_mode)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = self._FLOAT_BN_MODULE(out_channels, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        if bias:
            self.bias = Parameter(_C.zeros([out_channels], dtype=self.weight.dtype))  # drawn below
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        # after reset_bn_parameters, which resets the same BatchNorm
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()
        self._enable_slow_path_for_better_numerical_stability = False

    def reset_bn_parameters(self) -> None:
        """The BatchNorm's reset (_FoldedBn), and the conv bias drawn uniform in +-1/sqrt(fan_in)
        (PyTorch's initialization)."""
        super().reset_bn_parameters()
        if self.bias is not None:
            fan_in = init._fan_in_and_fan_out(self.weight)[0]
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def _shapes(self) -> tuple[list, list]:
        n = self.weight.dim()
        return [-1] + [1] * (n - 1), [1, -1] + [1] * (n - 2)

    def _forward(self, input):
        if self._enable_slow_path_for_better_numerical_stability:
            return self._forward_slow(input)
        return self._forward_approximate(input)

    def _forward_approximate(self, input):
        if self.bn.running_var is None:
            raise AssertionError("self.bn.running_var must not be None")
        weight_shape, bias_shape = self._shapes()
        running_std = _C.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        # the conv bias is added after un-scaling
        if self.bias is not None:
            zero_bias = _C.zeros_like(self.bias, dtype=input.dtype)
        else:
            zero_bias = _C.zeros(self.out_channels, device=scaled_weight.device, dtype=input.dtype)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        return self.bn(conv_orig)

    def _forward_slow(self, input):
        """Z = conv(X, fq(gamma W / running_std)) * (running_std / std) + beta - gamma mean / std with
        the batch's mean and std of the bias-free conv output while the BatchNorm trains (its running
        statistics updated from a float convolution first), the running ones otherwise."""
        from .....autograd.grad_mode import no_grad

        if self.bn.running_var is None:
            raise AssertionError("self.bn.running_var must not be None")
        if self.bn.running_mean is None:
            raise AssertionError("self.bn.running_mean must not be None")
        weight_shape, bias_shape = self._shapes()
        zero_bias = _C.zeros(self.out_channels, device=self.weight.device, dtype=input.dtype)
        if self.bn.training:
            conv_out = self._conv_forward(input, self.weight, zero_bias)
            with no_grad():
                self.bn(conv_out if self.bias is None else conv_out + self.bias.reshape(bias_shape))
        running_std = _C.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        conv_bn = self._conv_forward(input, scaled_weight, zero_bias)
        if self.bn.training:
            dims = [0] + list(range(2, self.weight.dim()))
            batch_mean = conv_out.mean(dims)
            batch_var = _C.square(conv_out - batch_mean.reshape(bias_shape)).mean(dims)
            batch_std = _C.sqrt(batch_var + self.bn.eps)
            conv_bn = conv_bn * (running_std / batch_std).reshape(bias_shape)
            fused_mean, fused_std = batch_mean, batch_std
        else:
            fused_mean = self.bn.running_mean - (self.bias if self.bias is not None else 0)
            fused_std = running_std
        conv_bn = conv_bn + (self.bn.bias - self.bn.weight * fused_mean / fused_std).reshape(bias_shape)
        if self.bias is not None:  # the conv bias takes part in the graph (as PyTorch's, for DDP)
            conv_bn = conv_bn + (self.bias - self.bias).reshape(bias_shape)
        return conv_bn

    def forward(self, input):
        return self._forward(input)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # version 1 kept the BatchNorm's tensors on the module itself (gamma, beta, running_*)
        version = local_metadata.get("version", None)
        if version is None or version == 1:
            for new, old in (("bn.weight", "gamma"), ("bn.bias", "beta"), ("bn.running_mean", "running_mean"),
                             ("bn.running_var", "running_var"), ("bn.num_batches_tracked", "num_batches_tracked")):
                if prefix + old in state_dict:
                    state_dict[prefix + new] = state_dict.pop(prefix + old)
                elif prefix + new not in state_dict and strict:
                    missing_keys.append(prefix + new)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The QAT module of a float nni.ConvBn / ConvBnReLU that has a .qconfig, sharing its
        conv's weight and bias and its BatchNorm's parameters and statistics."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                  conv.groups, conv.bias is not None, conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat.weight, qat.bias = conv.weight, conv.bias
        qat.bn.weight, qat.bn.bias = bn.weight, bn.bias
        qat.bn.running_mean, qat.bn.running_var = bn.running_mean, bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat

    def to_float(self):
        """The float convolution with the BatchNorm folded in (its running statistics), wrapped with
        a ReLU as nni.ConvReLU for ConvBnReLU; detached copies, in this module's training mode."""
        conv = self._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size, self.stride,
                                       self.padding, self.dilation, self.groups, self.bias is not None,
                                       self.padding_mode)
        conv.weight = Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = Parameter(self.bias.detach())
        if self.bn.running_var is None or self.bn.running_mean is None:
            raise AssertionError("self.bn.running_var and self.bn.running_mean must not be None")
        conv.weight, conv.bias = fuse_conv_bn_weights(conv.weight, conv.bias, self.bn.running_mean,
                                                      self.bn.running_var, self.bn.eps, self.bn.weight, self.bn.bias)
        if self._FLOAT_RELU_MODULE is None:
            conv.train(self.training)
            return conv
        fused = self._FUSED_FLOAT_MODULE(conv, self._FLOAT_RELU_MODULE())
        fused.train(self.training)
        return fused


class ConvBn1d(_ConvBnNd, nn.Conv1d, nni._FusedModule):
    """Conv1d + BatchNorm1d for quantization-aware training (module docstring)."""

    _FLOAT_MODULE = nni.ConvBn1d
    _FLOAT_CONV_MODULE = nn.Conv1d
    _FLOAT_BN_MODULE = nn.BatchNorm1d


class ConvBnReLU1d(ConvBn1d):
    """Conv1d + BatchNorm1d + ReLU for quantization-aware training."""

    _FLOAT_MODULE = nni.ConvBnReLU1d
    _FLOAT_RELU_MODULE = nn.ReLU
    _FUSED_FLOAT_MODULE = nni.ConvReLU1d

    def forward(self, input):
        return F.relu(self._forward(input))


class ConvBn2d(_ConvBnNd, nn.Conv2d, nni._FusedModule):
    """Conv2d + BatchNorm2d for quantization-aware training (module docstring)."""

    _FLOAT_MODULE = nni.ConvBn2d
    _FLOAT_CONV_MODULE = nn.Conv2d
    _FLOAT_BN_MODULE = nn.BatchNorm2d


class ConvBnReLU2d(ConvBn2d):
    """Conv2d + BatchNorm2d + ReLU for quantization-aware training."""

    _FLOAT_MODULE = nni.ConvBnReLU2d
    _FLOAT_RELU_MODULE = nn.ReLU
    _FUSED_FLOAT_MODULE = nni.ConvReLU2d

    def forward(self, input):
        return F.relu(self._forward(input))


class ConvBn3d(_ConvBnNd, nn.Conv3d, nni._FusedModule):
    """Conv3d + BatchNorm3d for quantization-aware training (module docstring)."""

    _FLOAT_MODULE = nni.ConvBn3d
    _FLOAT_CONV_MODULE = nn.Conv3d
    _FLOAT_BN_MODULE = nn.BatchNorm3d


class ConvBnReLU3d(ConvBn3d):
    """Conv3d + BatchNorm3d + ReLU for quantization-aware training."""

    _FLOAT_MODULE = nni.ConvBnReLU3d
    _FLOAT_RELU_MODULE = nn.ReLU
    _FUSED_FLOAT_MODULE = nni.ConvReLU3d

    def forward(self, input):
        return F.relu(self._forward(input))


class _ConvReLU(_QuantizedAsLayer):
    _FLOAT_RELU_MODULE = nn.ReLU

    def forward(self, input):
        return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))


class ConvReLU1d(_ConvReLU, nnqat.Conv1d, nni._FusedModule):
    """qat.Conv1d followed by a relu (from nni.ConvReLU1d)."""

    _FLOAT_MODULE = nni.ConvReLU1d


class ConvReLU2d(_ConvReLU, nnqat.Conv2d, nni._FusedModule):
    """qat.Conv2d followed by a relu (from nni.ConvReLU2d)."""

    _FLOAT_MODULE = nni.ConvReLU2d


class ConvReLU3d(_ConvReLU, nnqat.Conv3d, nni._FusedModule):
    """qat.Conv3d followed by a relu (from nni.ConvReLU3d)."""

    _FLOAT_MODULE = nni.ConvReLU3d


_CONV_BN = (ConvBn1d, ConvBn2d, ConvBn3d, ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d)


def update_bn_stats(mod) -> None:
    """mod.update_bn_stats() if mod is a QAT ConvBn / ConvBnReLU (for model.apply)."""
    if type(mod) in _CONV_BN:
        mod.update_bn_stats()


def freeze_bn_stats(mod) -> None:
    """mod.freeze_bn_stats() if mod is a QAT ConvBn / ConvBnReLU (for model.apply)."""
    if type(mod) in _CONV_BN:
        mod.freeze_bn_stats()
