"""ember.ao.quantization (torch.ao.quantization): eager-mode quantization. Post-training static
(fuse_modules, prepare, calibrate, convert, or quantize), dynamic (quantize_dynamic) and
quantization-aware training (prepare_qat, then convert), with the observers, fake quantizers and
QConfigs they use. The quantized modules are in ember.ao.nn.quantized."""

from ..._quantized import (
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from . import quantize_fx
from .fake_quantize import (
    FakeQuantize,
    FakeQuantizeBase,
    FixedQParamsFakeQuantize,
    FusedMovingAvgObsFakeQuantize,
    default_affine_fixed_qparams_fake_quant,
    default_fixed_qparams_range_0to1_fake_quant,
    default_fixed_qparams_range_neg1to1_fake_quant,
    default_symmetric_fixed_qparams_fake_quant,
)
from .fuse_modules import fuse_known_modules, fuse_modules, fuse_modules_qat
from .observer import (
    FixedQParamsObserver,
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    NoopObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    default_affine_fixed_qparams_observer,
    default_dynamic_quant_observer,
    default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer,
    default_float_qparams_observer,
    default_float_qparams_observer_4bit,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_symmetric_fixed_qparams_observer,
    default_weight_observer,
)
from .qconfig import (
    QConfig,
    default_debug_qconfig,
    default_dynamic_qconfig,
    default_fake_quant,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_qconfig,
    default_per_channel_weight_fake_quant,
    default_qat_qconfig,
    default_qconfig,
    default_weight_fake_quant,
    float16_dynamic_qconfig,
    float16_static_qconfig,
    float_qparams_weight_only_qconfig,
    float_qparams_weight_only_qconfig_4bit,
    get_default_qat_qconfig,
    get_default_qconfig,
    per_channel_dynamic_qconfig,
)
from .qconfig_mapping import (
    QConfigMapping,
    ReuseInputObserver,
    default_reuse_input_qconfig,
    get_default_qat_qconfig_mapping,
    get_default_qconfig_mapping,
)
from .quantize import (
    DEFAULT_QAT_MODULE_MAPPINGS,
    add_observer_,
    convert,
    get_default_custom_config_dict,
    get_default_dynamic_quant_module_mappings,
    get_default_qat_module_mappings,
    get_default_qconfig_propagation_list,
    get_default_static_quant_module_mappings,
    prepare,
    prepare_qat,
    propagate_qconfig_,
    quantize,
    quantize_dynamic,
    swap_module,
)
from .quantize_fx import convert_fx, fuse_fx, prepare_fx, prepare_qat_fx
from .stubs import DeQuantStub, QuantStub, QuantWrapper

__all__ = [
    "DeQuantStub", "FakeQuantize", "HistogramObserver", "get_default_qat_qconfig", "get_default_qconfig", "FakeQuantizeBase", "FusedMovingAvgObsFakeQuantize", "MinMaxObserver",
    "MovingAverageMinMaxObserver", "MovingAveragePerChannelMinMaxObserver", "NoopObserver", "ObserverBase",
    "PerChannelMinMaxObserver", "PlaceholderObserver", "QConfig", "QuantStub", "QuantWrapper", "add_observer_",
    "convert", "default_debug_qconfig", "default_dynamic_qconfig", "default_dynamic_quant_observer",
    "default_fake_quant", "default_float_qparams_observer", "default_float_qparams_observer_4bit", "default_fused_act_fake_quant",
    "default_fused_per_channel_wt_fake_quant", "default_fused_wt_fake_quant", "default_observer",
    "default_per_channel_qconfig", "default_per_channel_weight_fake_quant", "default_per_channel_weight_observer",
    "default_placeholder_observer", "FixedQParamsFakeQuantize", "FixedQParamsObserver",
    "default_affine_fixed_qparams_fake_quant", "default_affine_fixed_qparams_observer",
    "default_fixed_qparams_range_0to1_fake_quant", "default_fixed_qparams_range_0to1_observer",
    "default_fixed_qparams_range_neg1to1_fake_quant", "default_fixed_qparams_range_neg1to1_observer",
    "default_symmetric_fixed_qparams_fake_quant", "default_symmetric_fixed_qparams_observer",
    "default_qat_qconfig", "default_qconfig", "default_weight_fake_quant", "default_weight_observer",
    "float16_dynamic_qconfig", "float16_static_qconfig", "float_qparams_weight_only_qconfig", "float_qparams_weight_only_qconfig_4bit", "fuse_known_modules", "fuse_modules",
    "fuse_modules_qat", "get_default_qat_module_mappings", "DEFAULT_QAT_MODULE_MAPPINGS",
    "get_default_custom_config_dict", "get_default_dynamic_quant_module_mappings",
    "get_default_qconfig_propagation_list",
    "get_default_static_quant_module_mappings", "per_channel_affine", "per_channel_affine_float_qparams", "per_channel_dynamic_qconfig",
    "per_channel_symmetric", "per_tensor_affine", "per_tensor_symmetric", "prepare", "prepare_qat",
    "propagate_qconfig_", "quantize", "quantize_dynamic", "swap_module",
    "QConfigMapping", "ReuseInputObserver", "default_reuse_input_qconfig", "get_default_qat_qconfig_mapping",
    "get_default_qconfig_mapping", "quantize_fx", "convert_fx", "fuse_fx", "prepare_fx", "prepare_qat_fx",
]
