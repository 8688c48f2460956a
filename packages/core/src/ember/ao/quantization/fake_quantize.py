"""FakeQuantize modules (torch.ao.quantization.fake_quantize): an observer that tracks the input's
range, and fake quantization with the qparams it derives, each switchable on and off."""

from __future__ import annotations

from ... import _C
from ..._C import fake_quantize_per_channel_affine
from ..._fake_quant import (
    fake_quantize_per_tensor_affine,
    fused_moving_avg_obs_fake_quant,
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from ..._tensor import tensor
from ...nn.modules.module import Module
from .observer import (
    FixedQParamsObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    _is_symmetric,
    _with_args,
    default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer,
    dtype_range,
    resize_to_saved,
)


class FakeQuantizeBase(Module):
    """The switches: fake_quant_enabled and observer_enabled, one-element buffers (1 on, 0 off)."""

    with_args = classmethod(_with_args)
    _switch_dtype = _C.uint8

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fake_quant_enabled", tensor([1], dtype=self._switch_dtype))
        self.register_buffer("observer_enabled", tensor([1], dtype=self._switch_dtype))

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self) -> None:
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self) -> None:
        self.enable_observer(False)


class FakeQuantize(FakeQuantizeBase):
    """Observes x (when enabled), copies the observer's qparams into the scale and zero_point buffers,
    and returns x fake-quantized with them (when enabled), as torch.ao.quantization.FakeQuantize.
    observer is a class or with_args partial; observer_kwargs go to it."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None, is_dynamic: bool = False,
                 **observer_kwargs) -> None:
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", getattr(observer, "keywords", {}).get("dtype", _C.quint8))
            low, high = dtype_range(dtype)
            if quant_min < low:
                raise AssertionError("quant_min out of bound")
            if quant_max > high:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        self.activation_post_process = observer(is_dynamic=is_dynamic, **observer_kwargs)
        post = self.activation_post_process
        self.quant_min, self.quant_max, self.is_dynamic = post.quant_min, post.quant_max, is_dynamic
        self.dtype, self.qscheme = post.dtype, post.qscheme
        self.ch_axis = getattr(post, "ch_axis", -1)
        self.is_per_channel = self.qscheme in (per_channel_affine, per_channel_symmetric)
        self.register_buffer("scale", tensor([1.0], dtype=_C.float32))
        self.register_buffer("zero_point", tensor([0], dtype=_C.int32))

    def calculate_qparams(self) -> tuple:
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.calculate_qparams()
            if self.scale.shape != scale.shape:
                self.scale.resize_(scale.shape)
                self.zero_point.resize_(zero_point.shape)
            self.scale.copy_(scale)
            self.zero_point.copy_(zero_point)
        if int(self.fake_quant_enabled[0]) == 1:
            if self.is_per_channel:
                return fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis, self.quant_min,
                                                        self.quant_max)
            return fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, self.quant_min, self.quant_max)
        return X

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"quant_min={self.quant_min}, quant_max={self.quant_max}, dtype={self.dtype}, "
                f"qscheme={self.qscheme}, ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        resize_to_saved(self, state_dict, prefix, ("scale", "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with parameters fixed in advance (torch.ao.quantization.FixedQParamsFakeQuantize):
    observer builds a FixedQParamsObserver, whose scale and zero_point buffers this module's are
    (the same tensors: the state dict holds them under both names, and loading either sets both).
    The output is clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point, times
    scale; the gradient passes through where x is inside the range and is 0 outside. prepare and
    prepare_qat put one after a training nn.Sigmoid, nn.Hardsigmoid, nn.Softmax (scale 1/256,
    zero_point 0) or nn.Tanh (scale 2/256, zero_point 128). Per tensor only."""

    def __init__(self, observer) -> None:
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{type(self).__name__}'s observer must be a {FixedQParamsObserver.__name__}")
        self._observer_ctr = observer
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point
        if self.qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise AssertionError("Only per tensor quantization is supported FixedQParamsFakeQuantize module, got "
                                 f"qscheme:{self.qscheme}")

    def calculate_qparams(self) -> tuple:
        return self.scale, self.zero_point

    def extra_repr(self) -> str:
        post = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}, quant_min={post.quant_min}, "
                f"quant_max={post.quant_max}, qscheme={self.qscheme}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """FakeQuantize over a moving-average observer in one op (ember.fused_moving_avg_obs_fake_quant),
    as torch.ao.quantization.FusedMovingAvgObsFakeQuantize. Its qparams come from the fused op's
    formula (see ember._fake_quant.choose_qparams_fused), which differs slightly from the observer's
    calculate_qparams for symmetric schemes, as in PyTorch."""

    _switch_dtype = _C.int64

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min: int = 0, quant_max: int = 255,
                 **observer_kwargs) -> None:
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with MovingAverageMinMaxObserver")
        self.is_symmetric_quant = _is_symmetric(self.activation_post_process.qscheme)

    def forward(self, X):
        post = self.activation_post_process
        return fused_moving_avg_obs_fake_quant(X, self.observer_enabled, self.fake_quant_enabled, post.min_val,
                                               post.max_val, self.scale, self.zero_point, post.averaging_constant,
                                               post.quant_min, post.quant_max, self.ch_axis, self.is_per_channel,
                                               self.is_symmetric_quant)


default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
# PyTorch's older names for the same two
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
