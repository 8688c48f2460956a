"""Observers (torch.ao.quantization.observer): modules that pass their input through unchanged while
recording its min/max, and derive the scale and zero_point a quantized module or a fake quantizer
uses.

The dtype is ember.quint8 / ember.qint8 as in PyTorch; ember.uint8 / ember.int8 and the strings
"quint8" / "qint8" are taken too (PyTorch's observers accept torch.uint8 / torch.int8 alike), and
ember.quint4x2 for 4-bit embedding tables. It picks the default range ([0, 255], [-128, 127] or
[0, 15], halved by reduce_range) and the symmetric zero point. Give quant_min and quant_max to
choose the range.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ... import _C
from ..._quantized import (
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from ..._tensor import tensor
from ...nn.modules.module import Module

_SIGNED = {"qint8": True, "quint8": False}  # the names; ember.qint8 / quint8 and int8 / uint8 too


def _is_signed(dtype: object) -> bool:
    if dtype in (_C.int8, _C.uint8, _C.qint8, _C.quint8, _C.quint4x2):
        return dtype in (_C.int8, _C.qint8)
    if dtype in _SIGNED:
        return _SIGNED[dtype]
    raise AssertionError(f"Default Observer only works for qint8, quint8 and quint4x2 data type (ember.qint8, "
                         f"ember.quint8, ember.quint4x2, ember.int8, ember.uint8, 'qint8' or 'quint8'), but got "
                         f"{dtype!r}")


def dtype_range(dtype: object) -> tuple:
    """(min, max) of the integer type the dtype stands for."""
    if dtype == _C.quint4x2:
        return 0, 15
    return (-128, 127) if _is_signed(dtype) else (0, 255)


def _is_symmetric(qscheme) -> bool:
    return qscheme in (per_tensor_symmetric, per_channel_symmetric)



def resize_to_saved(module, state_dict, prefix: str, names: tuple) -> None:
    """Give per-channel buffers the saved length before loading them: their length is the channel
    count of whatever was observed, which a fresh module does not know yet."""
    for name in names:
        if prefix + name in state_dict:
            getattr(module, name).resize_(state_dict[prefix + name].shape)

class _PartialWrapper(functools.partial):
    """What with_args returns: a constructor with some arguments bound, itself able to bind more."""

    def with_args(self, **kwargs):
        return _PartialWrapper(self.func, *self.args, **{**self.keywords, **kwargs})


def _with_args(cls, **kwargs) -> _PartialWrapper:
    """Cls.with_args(**kwargs): the constructor with those arguments bound (torch's with_args)."""
    return _PartialWrapper(cls, **kwargs)


class ObserverBase(Module):
    """The observers' base: dtype, qscheme and the quantization range (torch's UniformQuantizationObserverBase)."""

    with_args = classmethod(_with_args)

    def __init__(self, dtype=_C.quint8, qscheme=per_tensor_affine, reduce_range: bool = False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps: float = 1.1920928955078125e-07, is_dynamic: bool = False):
        super().__init__()
        if qscheme not in (per_tensor_affine, per_tensor_symmetric, per_channel_affine, per_channel_symmetric,
                           per_channel_affine_float_qparams):
            raise AssertionError("Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                                 "per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        self.dtype, self.qscheme, self.reduce_range, self.is_dynamic = dtype, qscheme, reduce_range, is_dynamic
        self._signed = _is_signed(dtype)
        self.factory_kwargs = dict(factory_kwargs or {})
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers. reduce_range will "
                          "be deprecated in a future release.", stacklevel=2)
        self.register_buffer("eps", tensor([eps], **self.factory_kwargs))
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise AssertionError("Used-specified quantization range must include 0.")
            if not quant_min < quant_max:
                raise AssertionError("qmin must be strictly less than qmax for user-specified quantization range.")
            if not 0 < quant_max - quant_min + 1 <= 256:
                raise AssertionError("quantization range should be positive and not exceed the maximum bit range "
                                     "(=256).")
            low, high = quant_min, quant_max
        else:
            low, high = dtype_range(dtype)
        self.quant_min, self.quant_max = (low // 2, high // 2) if reduce_range else (low, high)

    def _calculate_qparams(self, min_val, max_val) -> tuple:
        """(scale, zero_point) for observed min/max: 0-d statistics give one-element tensors.
        affine:    scale = (max(max, 0) - min(min, 0)) / (qmax - qmin), at least eps,
                   zero_point = clamp(qmin - round(min(min, 0) / scale)), int32
        symmetric: scale = max(-min(min, 0), max(max, 0)) / ((qmax - qmin) / 2), at least eps,
                   zero_point = 0 signed, else (qmin + qmax) // 2 for a custom range or 128, int64
        float_qparams: scale = (max - min) / (qmax - qmin), 1 where at most eps,
                   zero_point = -min / scale, float"""
        if not _min_max_valid(min_val, max_val):
            return tensor([1.0]), tensor([0])
        min_neg = _C.minimum(min_val, _C.zeros_like(min_val))
        max_pos = _C.maximum(max_val, _C.zeros_like(max_val))
        if self.qscheme == per_channel_affine_float_qparams:
            # the row's own range, zero not included: x = (q - zero_point) * scale with a float
            # zero_point = -min / scale (embedding tables, Note [quantized embedding bags])
            scale = (max_val - min_val) / float(self.quant_max - self.quant_min)
            scale = _C.where(scale > self.eps, scale, _C.ones_like(scale))
            return scale.reshape(-1), (-1 * min_val / scale).reshape(-1)
        if _is_symmetric(self.qscheme):
            max_pos = _C.maximum(-min_neg, max_pos)
            scale = _C.maximum(max_pos / (float(self.quant_max - self.quant_min) / 2), self.eps)
            middle = 0 if self._signed else (self.quant_min + self.quant_max) // 2 if self.has_customized_qrange else 128
            zero_point = _C.full(tuple(min_val.shape), middle, dtype=_C.int64)
        else:
            scale = _C.maximum((max_pos - min_neg) / float(self.quant_max - self.quant_min), self.eps)
            zero_point = self.quant_min - (min_neg / scale).round().to(_C.int32)
            zero_point = zero_point.clamp(self.quant_min, self.quant_max)
        return scale.reshape(-1), zero_point.reshape(-1)

    def calculate_qparams(self) -> tuple:
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self) -> None:
        self.min_val.copy_(tensor(float("inf")))
        self.max_val.copy_(tensor(float("-inf")))


def _min_max_valid(min_val, max_val) -> bool:
    """False, with PyTorch's warning, before anything was observed; min <= max asserted."""
    if min_val.numel() == 0 or max_val.numel() == 0 or (
            min_val.dim() == 0 and float(min_val) == float("inf") and float(max_val) == float("-inf")):
        warnings.warn("must run observer before calling calculate_qparams. Returning default values.", stacklevel=3)
        return False
    if not bool((min_val <= max_val).all()):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


class MinMaxObserver(ObserverBase):
    """Running min and max over every batch seen (torch.ao.quantization.MinMaxObserver)."""

    def __init__(self, dtype=_C.quint8, qscheme=per_tensor_affine, reduce_range: bool = False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps: float = 1.1920928955078125e-07, is_dynamic: bool = False):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        if qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise AssertionError(f"{type(self).__name__} takes a per-tensor qscheme, but got {qscheme!r}")
        if qscheme == per_tensor_symmetric and reduce_range and not self._signed:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")
        self.register_buffer("min_val", tensor(float("inf"), **self.factory_kwargs))
        self.register_buffer("max_val", tensor(float("-inf"), **self.factory_kwargs))

    def _update(self, lo, hi) -> None:
        self.min_val.copy_(_C.minimum(lo, self.min_val))
        self.max_val.copy_(_C.maximum(hi, self.max_val))

    def forward(self, x_orig):
        if x_orig.numel():
            x = x_orig.detach().to(self.min_val.dtype)
            self._update(x.amin(), x.amax())
        return x_orig


class MovingAverageMinMaxObserver(MinMaxObserver):
    """min/max as moving averages: the first batch's, then v <- v + averaging_constant * (batch's - v)."""

    def __init__(self, averaging_constant: float = 0.01, dtype=_C.quint8, qscheme=per_tensor_affine,
                 reduce_range: bool = False, quant_min=None, quant_max=None, eps: float = 1.1920928955078125e-07,
                 is_dynamic: bool = False, **kwargs):
        self.averaging_constant = averaging_constant
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)

    def _update(self, lo, hi) -> None:
        first = float(self.min_val) == float("inf") and float(self.max_val) == float("-inf")
        for buffer, current in ((self.min_val, lo), (self.max_val, hi)):
            buffer.copy_(current if first else buffer + self.averaging_constant * (current - buffer))


class PerChannelMinMaxObserver(ObserverBase):
    """min/max per slice along ch_axis (torch.ao.quantization.PerChannelMinMaxObserver); the buffers
    start empty and take the channel count from the first batch."""

    def __init__(self, ch_axis: int = 0, dtype=_C.quint8, qscheme=per_channel_affine, reduce_range: bool = False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps: float = 1.1920928955078125e-07,
                 is_dynamic: bool = False):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        if qscheme not in (per_channel_affine, per_channel_symmetric, per_channel_affine_float_qparams):
            raise AssertionError(f"{type(self).__name__} takes a per-channel qscheme, but got {qscheme!r}")
        self.ch_axis = ch_axis
        self.register_buffer("min_val", tensor([], **self.factory_kwargs))
        self.register_buffer("max_val", tensor([], **self.factory_kwargs))

    def _combine(self, old, current, pick):
        return pick(old, current)

    def forward(self, x_orig):
        if not x_orig.numel():
            return x_orig
        rows = x_orig.detach().movedim(self.ch_axis, 0).to(self.min_val.dtype)
        rows = rows.reshape(rows.shape[0], -1)
        lo, hi = rows.amin(1), rows.amax(1)
        if self.min_val.numel():
            lo = self._combine(self.min_val, lo, _C.minimum)
            hi = self._combine(self.max_val, hi, _C.maximum)
        for buffer, value in ((self.min_val, lo), (self.max_val, hi)):
            buffer.resize_(value.shape)
            buffer.copy_(value)
        return x_orig

    def reset_min_max_vals(self) -> None:
        self.min_val.resize_(0)
        self.max_val.resize_(0)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        resize_to_saved(self, state_dict, prefix, ("min_val", "max_val"))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel min/max as moving averages (the first batch's, then v <- v + c * (batch's - v))."""

    def __init__(self, averaging_constant: float = 0.01, ch_axis: int = 0, dtype=_C.quint8,
                 qscheme=per_channel_affine, reduce_range: bool = False, quant_min=None, quant_max=None,
                 eps: float = 1.1920928955078125e-07, is_dynamic: bool = False, **kwargs):
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _combine(self, old, current, pick):
        return old + self.averaging_constant * (current - old)


class FixedQParamsObserver(ObserverBase):
    """Observes nothing and always gives the same scale and zero_point (one-element float32 and
    int32 buffers), as torch.ao.quantization.FixedQParamsObserver: the output parameters of
    functions whose range is known in advance (sigmoid: [0, 1), tanh: [-1, 1)). Per tensor only.
    Its only state is the two buffers (no eps, no min/max), as PyTorch's, and quant_min /
    quant_max are taken as given."""

    def __init__(self, scale, zero_point, dtype=_C.quint8, qscheme=per_tensor_affine, quant_min: int = 0,
                 quant_max: int = 255, is_dynamic: bool = False, **kwargs) -> None:
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic quantization")
        if kwargs:
            raise TypeError(f"ObserverBase.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        Module.__init__(self)  # not the min/max observers' state: only the fixed parameters
        self.dtype, self.is_dynamic = dtype, is_dynamic
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("scale", tensor([scale], dtype=_C.float32))
        self.register_buffer("zero_point", tensor([zero_point], dtype=_C.int32))
        self.qscheme = qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self) -> tuple:
        return self.scale, self.zero_point

    def extra_repr(self) -> str:
        return ""


class PlaceholderObserver(Module):
    """Observes nothing: it carries the dtype (and is_dynamic) a dynamic qconfig's activation needs."""

    with_args = classmethod(_with_args)

    def __init__(self, dtype=_C.float32, custom_op_name: str = "", compute_dtype=None, quant_min=None, quant_max=None,
                 qscheme=None, eps=None, is_dynamic: bool = False) -> None:
        super().__init__()
        self.dtype, self.custom_op_name, self.is_dynamic = dtype, custom_op_name, is_dynamic
        self.quant_min, self.quant_max = quant_min, quant_max
        self.qscheme = per_tensor_affine if qscheme is None else qscheme
        self.eps = eps

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002 - as PyTorch


class NoopObserver(PlaceholderObserver):
    """Observes nothing (a float16 weight's observer)."""

    def __init__(self, dtype=_C.float16, custom_op_name: str = "") -> None:
        super().__init__(dtype=dtype, custom_op_name=custom_op_name)


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=_C.qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(dtype=_C.qint8,
                                                                         qscheme=per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(dtype=_C.quint8, quant_min=0, quant_max=255,
                                                               is_dynamic=True)
default_placeholder_observer = PlaceholderObserver
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(dtype=_C.quint8,
                                                                    qscheme=per_channel_affine_float_qparams,
                                                                    ch_axis=0)
default_float_qparams_observer_4bit = PerChannelMinMaxObserver.with_args(dtype=_C.quint4x2,
                                                                         qscheme=per_channel_affine_float_qparams,
                                                                         ch_axis=0)


# the output parameters of tanh (range [-1, 1)) and sigmoid (range [0, 1)) on quint8
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=_C.quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=_C.quint8, quant_min=0, quant_max=255)
# PyTorch's older names for the same two
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer


class HistogramObserver(ObserverBase):
    """A running histogram of the values seen (torch.ao.quantization.HistogramObserver): the range
    is chosen by searching which outer bins to drop for the least L2 quantization error, then
    turned into scale and zero_point as MinMaxObserver does. What PyTorch's x86 default qconfig
    observes activations with.

    Each batch is binned over the union of the old and new ranges; when the range grows, the old
    histogram is spread onto the new bins by splitting each old bin into upsample_rate pieces and
    assigning each piece by its midpoint. The search (Note [histogram search] below) follows
    PyTorch's in float32, so the chosen range matches PyTorch's up to the rounding of float sums."""

    def __init__(self, bins: int = 2048, dtype=_C.quint8, qscheme=per_tensor_affine, reduce_range: bool = False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps: float = 1.1920928955078125e-07,
                 is_dynamic: bool = False, **kwargs) -> None:
        if qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise NotImplementedError("HistogramObserver's qscheme only support torch.per_tensor_symmetric and "
                                      "torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        self.bins = bins
        self.register_buffer("histogram", _C.zeros(bins))
        self.register_buffer("min_val", tensor(float("inf")))
        self.register_buffer("max_val", tensor(float("-inf")))
        self.dst_nbins = 256  # the 8-bit dtype's codes
        self.upsample_rate = 16

    def _spread(self, old, old_min: float, old_max: float, new_min, new_max):
        """The old histogram on the bins of [new_min, new_max]: each old bin split into
        upsample_rate equal pieces, each piece counted in the new bin holding its midpoint."""
        pieces = _C.repeat_interleave(old, self.upsample_rate) / self.upsample_rate
        n = self.bins * self.upsample_rate
        width = (old_max - old_min) / n
        midpoints = _C.linspace(old_min, old_max, n + 1)[:-1] + 0.5 * width
        edges = _C.linspace(float(new_min), float(new_max), self.bins + 1)
        slot = (_C.bucketize(midpoints, edges, right=True) - 1).clamp(0, self.bins - 1)
        return _C.bincount(slot, weights=pieces, minlength=self.bins).to(_C.float32)

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(_C.float32)
        lo, hi = x.amin(), x.amax()
        if float(lo) == float("-inf") or float(hi) == float("inf"):
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != float("inf")]
            if x.numel() == 0:
                return x_orig
            lo, hi = x.amin(), x.amax()
        if float(self.min_val) == float("inf") or float(self.max_val) == float("-inf"):
            self.min_val.copy_(lo)
            self.max_val.copy_(hi)
            self.histogram.copy_(_C.histc(x, self.bins, float(lo), float(hi)))
            return x_orig
        old_min, old_max = float(self.min_val), float(self.max_val)
        new_min, new_max = _C.minimum(self.min_val, lo), _C.maximum(self.max_val, hi)
        update = _C.histc(x, self.bins, float(new_min), float(new_max))
        if float(new_min) == old_min and float(new_max) == old_max:
            self.histogram.copy_(self.histogram + update)
            return x_orig
        if old_min == old_max:  # every value seen so far was one number: it goes to its one bin
            old = _C.histc(self.min_val.reshape(1), self.bins, float(new_min), float(new_max)) * self.histogram.sum()
        else:
            old = self._spread(self.histogram, old_min, old_max, new_min, new_max)
        self.histogram.copy_(update + old)
        self.min_val.copy_(new_min)
        self.max_val.copy_(new_max)
        return x_orig

    # Note [histogram search]: dropping outer bins. Starting from the whole range, each step moves
    # whichever end (by a cumulative-mass step of 1e-5) drops fewer bins, and keeps the move while
    # the L2 error of quantizing the histogram onto 256 levels over the kept range does not grow.
    # The error of a source bin is that of values spread uniformly over it, against the centers
    # of the destination bins it overlaps (density * (end^3 - begin^3) / 3 per piece).
    def _quantization_error(self, hist, start: int, end: int, width: float) -> float:
        f = np.float32
        dst_width = width * (end - start + 1) / self.dst_nbins
        if dst_width == 0.0:
            return 0.0
        begin = (np.arange(self.bins) - start).astype(f) * f(width)
        finish = begin + f(width)
        dst_begin = np.clip(np.floor(begin / f(dst_width)), 0, self.dst_nbins - 1).astype(f)
        dst_end = np.clip(np.floor(finish / f(dst_width)), 0, self.dst_nbins - 1).astype(f)
        density = hist / f(width)
        half = f(dst_width / 2)

        def l2(a, b):
            return density * ((b * b * b - a * a * a) / f(3))

        norm = l2(begin - (dst_begin + f(0.5)) * f(dst_width), np.full(self.bins, half, f))
        norm = norm + (dst_end - dst_begin - f(1)) * l2(-half, half)
        norm = norm + l2(np.full(self.bins, -half, f), finish - (dst_end * f(dst_width) + half))
        return float(norm.astype(f).sum(dtype=f))

    def _search(self) -> tuple:
        hist = np.asarray(self.histogram.tolist(), np.float32)
        width = (float(self.max_val) - float(self.min_val)) / self.bins
        total = float(hist.sum(dtype=np.float32))
        cumulative = np.cumsum(hist, dtype=np.float32)
        alpha, beta, start, end, best = 0.0, 1.0, 0, self.bins - 1, float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + 1e-5, beta - 1e-5
            left, right = start, end
            while left < end and cumulative[left] < np.float32(next_alpha * total):
                left += 1
            while right > start and cumulative[right] > np.float32(next_beta * total):
                right -= 1
            new_start, new_end = start, end
            if left - start > end - right:
                new_start, alpha = left, next_alpha
            else:
                new_end, beta = right, next_beta
            if new_start == start and new_end == end:
                continue
            error = self._quantization_error(hist, new_start, new_end, width)
            if error > best:
                break
            best, start, end = error, new_start, new_end
        bin_width = (self.max_val - self.min_val) / self.bins
        return self.min_val + bin_width * start, self.min_val + bin_width * (end + 1)

    def calculate_qparams(self) -> tuple:
        if float(self.min_val) == float("inf") and float(self.max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning default scale and zero "
                          "point ", stacklevel=2)
            return tensor([1.0]), tensor([0])
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the number of bins supplied "
                                 "while making this observer")
        return self._calculate_qparams(*self._search())

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"
