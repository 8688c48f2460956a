"""Fused linear modules for quantization-aware training (torch.ao.nn.intrinsic.qat): LinearBn1d
trains a Linear with the BatchNorm1d after it folded into the fake-quantized weight (the same
forward as ConvBn's, see conv_fused); LinearReLU is qat.Linear with a relu after it.

Unlike PyTorch, whose LinearBn1d constructor replaces the Linear's initialized bias with an
uninitialized one, LinearBn1d keeps nn.Linear's bias initialization (the random draws are the
same as PyTorch's)."""

from __future__ import annotations

from ..... import _C
from .....nn import functional as F
from .....nn import modules as nn
from .....nn.utils.fusion import fuse_linear_bn_weights
from ... import qat as nnqat
from ...intrinsic import modules as nni
from .conv_fused import _FoldedBn, _QuantizedAsLayer

__all__ = ["LinearBn1d", "LinearReLU"]


class LinearBn1d(_QuantizedAsLayer, _FoldedBn, nn.Linear, nni._FusedModule):
    """Linear + BatchNorm1d for quantization-aware training: y = bn(linear(x, fq(W s)) / s + b),
    s = bn.weight / sqrt(bn.running_var + eps)."""

    _FLOAT_MODULE = nni.LinearBn1d

    def __init__(self, in_features: int, out_features: int, bias: bool = True, eps: float = 1e-05,
                 momentum: float = 0.1, freeze_bn: bool = False, qconfig=None) -> None:
        nn.Linear.__init__(self, in_features, out_features, bias)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = nn.BatchNorm1d(out_features, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()


    def forward(self, input):
        if self.bn.running_var is None:
            raise AssertionError("self.bn.running_var must not be None")
        running_std = _C.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape([-1, 1]))
        if self.bias is not None:
            zero_bias = _C.zeros_like(self.bias)
        else:
            zero_bias = _C.zeros(self.out_features, device=scaled_weight.device)
        linear_out = F.linear(input, scaled_weight, zero_bias)
        linear_out_orig = linear_out / scale_factor.reshape([1, -1])
        if self.bias is not None:
            linear_out_orig = linear_out_orig + self.bias.reshape([1, -1])
        return self.bn(linear_out_orig)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The QAT module of a float nni.LinearBn1d that has a .qconfig, sharing its Linear's weight
        and bias and its BatchNorm's parameters and statistics."""
        if type(mod) is not nni.LinearBn1d:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for {nni.LinearBn1d.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid config")
        linear, bn = mod[0], mod[1]
        qat = cls(linear.in_features, linear.out_features, linear.bias is not None, bn.eps, bn.momentum, False,
                  mod.qconfig)
        qat.weight, qat.bias = linear.weight, linear.bias
        qat.bn.weight, qat.bn.bias = bn.weight, bn.bias
        qat.bn.running_mean, qat.bn.running_var = bn.running_mean, bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat

    def to_float(self):
        """nn.Linear with the BatchNorm folded in (its running statistics)."""
        linear = nn.Linear(self.in_features, self.out_features)
        if self.bn.running_var is None or self.bn.running_mean is None:
            raise AssertionError("self.bn.running_var and self.bn.running_mean must not be None")
        linear.weight, linear.bias = fuse_linear_bn_weights(self.weight, self.bias, self.bn.running_mean,
                                                            self.bn.running_var, self.bn.eps, self.bn.weight,
                                                            self.bn.bias)
        linear.train(self.training)
        return linear


class LinearReLU(_QuantizedAsLayer, nnqat.Linear, nni._FusedModule):
    """qat.Linear followed by a relu (from nni.LinearReLU)."""

    _FLOAT_MODULE = nni.LinearReLU
    _FLOAT_RELU_MODULE = nn.ReLU

    def __init__(self, in_features: int, out_features: int, bias: bool = True, qconfig=None) -> None:
        super().__init__(in_features, out_features, bias, qconfig)

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

