"""QConfig (torch.ao.quantization.QConfig): how a module's activations and weights are observed,
and PyTorch's preset configurations for static, dynamic and quantization-aware training.

get_default_qconfig(backend) / get_default_qat_qconfig(backend) give PyTorch's per-backend
choices ("x86", "fbgemm", "qnnpack", "onednn"); Ember's kernels compute as FBGEMM does for all of
them (x86 integer arithmetic), so the backend only picks the observers and reduce_range."""

from __future__ import annotations

from collections import namedtuple

from ... import _C
from ..._fake_quant import per_channel_symmetric, per_tensor_affine, per_tensor_symmetric
from ...nn.modules.module import Module
from .fake_quantize import FakeQuantize, FusedMovingAvgObsFakeQuantize
from .observer import (
    HistogramObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    NoopObserver,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_float_qparams_observer_4bit,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)


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
                                            dtype=_C.quint8, qscheme=per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128,
                                                   quant_max=127, dtype=_C.qint8, qscheme=per_tensor_symmetric,
                                                   reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=_C.qint8,
    qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=_C.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=_C.qint8,
    qscheme=per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=_C.qint8,
    qscheme=per_channel_symmetric)

default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float16_dynamic_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=_C.float16, is_dynamic=True),
                                  weight=PlaceholderObserver.with_args(dtype=_C.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=_C.float16),
                                 weight=PlaceholderObserver.with_args(dtype=_C.float16))
# embedding tables: weights quantized per row with float qparams, no activation quantization
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = QConfig(activation=default_placeholder_observer,
                                                 weight=default_float_qparams_observer_4bit)
default_debug_qconfig = QConfig(weight=default_weight_observer, activation=NoopObserver.with_args(dtype=_C.float32))

_BACKENDS = ("fbgemm", "x86", "qnnpack", "onednn")


def _assert_valid_qconfig(qconfig, mod) -> None:
    """PyTorch's check as propagate_qconfig_ hands a module its qconfig: a transposed convolution
    takes no per-channel weight observer (its quantized kernels quantize the weight per tensor)."""
    if qconfig is None or qconfig.weight is None:
        return
    from ...nn import modules as _nn

    if isinstance(mod, (_nn.ConvTranspose1d, _nn.ConvTranspose2d, _nn.ConvTranspose3d)) and isinstance(
            qconfig.weight(), PerChannelMinMaxObserver):  # MovingAveragePerChannelMinMaxObserver included
        raise AssertionError("Per channel weight observer is not supported yet for ConvTranspose{n}d.")


def _check_backend(backend: str) -> None:
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {list(_BACKENDS)}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """PyTorch's post-training qconfig for a backend: histogram-observed activations (reduce_range
    for x86/fbgemm), per-channel symmetric weights (per tensor for qnnpack)."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not supported. Version number "
                             "must be 0")
    weight = default_weight_observer if backend == "qnnpack" else default_per_channel_weight_observer
    return QConfig(activation=HistogramObserver.with_args(reduce_range=backend in ("x86", "fbgemm")), weight=weight)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """PyTorch's quantization-aware-training qconfig for a backend: moving-average min/max fake
    quantizers (fused with the observer for version 1), per-channel weights except for qnnpack."""
    _check_backend(backend)
    if version not in (0, 1):
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not supported. Version number "
                             "must be 0 or 1")
    fused = version == 1
    activation = (FusedMovingAvgObsFakeQuantize if fused else FakeQuantize).with_args(
        observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
        **({} if backend == "onednn" else {"reduce_range": backend in ("x86", "fbgemm")}))
    if backend == "qnnpack":
        weight = default_fused_wt_fake_quant if fused else default_weight_fake_quant
    else:
        weight = default_fused_per_channel_wt_fake_quant if fused else default_per_channel_weight_fake_quant
    return QConfig(activation=activation, weight=weight)
