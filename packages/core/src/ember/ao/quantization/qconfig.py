"""QConfig (torch.ao.quantization.QConfig) and the default QAT fake quantizers that need no
quantized dtype: int8 / uint8 stand for qint8 / quint8 (see ember.ao.quantization.observer)."""

from __future__ import annotations

from collections import namedtuple

from ... import _C
from ..._fake_quant import per_channel_symmetric, per_tensor_affine, per_tensor_symmetric
from ...nn.modules.module import Module
from .fake_quantize import FakeQuantize, FusedMovingAvgObsFakeQuantize
from .observer import MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to fake-quantize a module's activations and weights: two constructors (classes or
    with_args partials), called once per module that gets the qconfig."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class instead. Use "
                             "MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


default_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                            dtype=_C.uint8, qscheme=per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128,
                                                   quant_max=127, dtype=_C.int8, qscheme=per_tensor_symmetric,
                                                   reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=_C.int8,
    qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=_C.uint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=_C.int8,
    qscheme=per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=_C.int8,
    qscheme=per_channel_symmetric)

default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
