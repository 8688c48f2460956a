"""ember.ao.quantization: the float half of torch.ao.quantization that quantization-aware training
uses (observers, fake quantizers, QConfig). Ember has no quantized dtypes, so prepare/convert,
quantized modules and quantized tensors are not here; see observer.py for the dtype stand-ins."""

from ..._fake_quant import (
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from .fake_quantize import FakeQuantize, FakeQuantizeBase, FusedMovingAvgObsFakeQuantize
from .observer import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
)
from .qconfig import (
    QConfig,
    default_fake_quant,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_weight_fake_quant,
    default_qat_qconfig,
    default_weight_fake_quant,
)

__all__ = [
    "FakeQuantize", "FakeQuantizeBase", "FusedMovingAvgObsFakeQuantize", "MinMaxObserver",
    "MovingAverageMinMaxObserver", "MovingAveragePerChannelMinMaxObserver", "ObserverBase",
    "PerChannelMinMaxObserver", "QConfig", "default_fake_quant", "default_fused_act_fake_quant",
    "default_fused_per_channel_wt_fake_quant", "default_fused_wt_fake_quant",
    "default_per_channel_weight_fake_quant", "default_qat_qconfig", "default_weight_fake_quant",
    "per_channel_affine", "per_channel_symmetric", "per_tensor_affine", "per_tensor_symmetric",
]
