"""Modules over emberaudio.functional in the shape of torchaudio.transforms. Windows, filterbanks,
DCT matrices and resampling kernels are computed once in ``__init__`` and registered as buffers
under torchaudio's names, so state_dict keys match."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import ember
from ember import nn

from .. import functional as AF
from ..functional import functional as _fn
from ..functional.functional import _exp_base

__all__ = [
    "AddNoise", "AmplitudeToDB", "ComputeDeltas", "Convolve", "Deemphasis", "FFTConvolve", "Fade",
    "FrequencyMasking", "GriffinLim", "InverseMelScale", "InverseSpectrogram", "LFCC", "Loudness", "MFCC",
    "MelScale", "MelSpectrogram", "MuLawDecoding", "MuLawEncoding", "PitchShift", "Preemphasis", "Resample",
    "SlidingWindowCmn", "SpecAugment", "SpectralCentroid", "Spectrogram", "Speed", "SpeedPerturbation",
    "TimeMasking", "TimeStretch", "Vad", "Vol",
]


def _window(window_fn: Callable, win_length: int, wkwargs: dict | None) -> ember.Tensor:
    return window_fn(win_length) if wkwargs is None else window_fn(win_length, **wkwargs)


class Spectrogram(nn.Module):
    """(..., time) → (..., n_fft // 2 + 1, frames); power=None gives the complex STFT."""

    def __init__(self, n_fft: int = 400, win_length: int | None = None, hop_length: int | None = None, pad: int = 0,
                 window_fn: Callable = ember.hann_window, power: float | None = 2.0, normalized=False,
                 wkwargs: dict | None = None, center: bool = True, pad_mode: str = "reflect",
                 onesided: bool = True, return_complex: bool | None = None) -> None:
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided
        if return_complex is not None:
            warnings.warn("`return_complex` argument is now deprecated and is not effective. "
                          "`emberaudio.transforms.Spectrogram(power=None)` always returns a tensor with complex dtype. "
                          "Please remove the argument in the function call.", stacklevel=2)

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        return AF.spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length, self.win_length,
                              self.power, self.normalized, self.center, self.pad_mode, self.onesided)


class InverseSpectrogram(nn.Module):
    """Complex (..., freq, frames) → (..., time)."""

    def __init__(self, n_fft: int = 400, win_length: int | None = None, hop_length: int | None = None, pad: int = 0,
                 window_fn: Callable = ember.hann_window, normalized=False, wkwargs: dict | None = None,
                 center: bool = True, pad_mode: str = "reflect", onesided: bool = True) -> None:
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad = pad
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided

    def forward(self, spectrogram: ember.Tensor, length: int | None = None) -> ember.Tensor:
        return AF.inverse_spectrogram(spectrogram, length, self.pad, self.window, self.n_fft, self.hop_length,
                                      self.win_length, self.normalized, self.center, self.pad_mode, self.onesided)


class GriffinLim(nn.Module):
    """Waveform from a magnitude spectrogram by fast Griffin-Lim (random initial phase by default)."""

    def __init__(self, n_fft: int = 400, n_iter: int = 32, win_length: int | None = None,
                 hop_length: int | None = None, window_fn: Callable = ember.hann_window, power: float = 2.0,
                 wkwargs: dict | None = None, momentum: float = 0.99, length: int | None = None,
                 rand_init: bool = True) -> None:
        super().__init__()
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in the range [0, 1). Found: {momentum}")
        self.n_fft = n_fft
        self.n_iter = n_iter
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.length = length
        self.power = power
        self.momentum = momentum
        self.rand_init = rand_init

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        return AF.griffinlim(specgram, self.window, self.n_fft, self.hop_length, self.win_length, self.power,
                             self.n_iter, self.momentum, self.length, self.rand_init)


class AmplitudeToDB(nn.Module):
    """Power (stype="power") or amplitude ("magnitude") to decibels, ref 1, amin 1e-10."""

    def __init__(self, stype: str = "power", top_db: float | None = None) -> None:
        super().__init__()
        # torchaudio takes any stype but "power" as magnitude (its own example says "amplitude");
        # both names are accepted here and a typo is an error
        if stype not in ("power", "magnitude", "amplitude"):
            raise ValueError(f'stype must be "power" or "magnitude" (or "amplitude"), but got {stype!r}')
        if top_db is not None and top_db < 0:
            raise ValueError("top_db must be positive value")
        self.stype = stype
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return AF.amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)


class MelScale(nn.Module):
    """(..., n_stft, time) → (..., n_mels, time) by the triangular filterbank ``fb`` (n_stft, n_mels)."""

    def __init__(self, n_mels: int = 128, sample_rate: int = 16000, f_min: float = 0.0, f_max: float | None = None,
                 n_stft: int = 201, norm: str | None = None, mel_scale: str = "htk") -> None:
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        self.norm = norm
        self.mel_scale = mel_scale
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        self.register_buffer("fb", AF.melscale_fbanks(n_stft, self.f_min, self.f_max, n_mels, sample_rate, norm,
                                                      mel_scale))

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        return ember.matmul(specgram.transpose(-1, -2), self.fb.to(specgram.dtype)).transpose(-1, -2)


_LSTSQ_DRIVERS = ["gels", "gelsy", "gelsd", "gelss"]


class InverseMelScale(nn.Module):
    """Linear spectrogram from a mel one: relu of the least-squares solution of fbᵀ·X = mel."""

    def __init__(self, n_stft: int, n_mels: int = 128, sample_rate: int = 16000, f_min: float = 0.0,
                 f_max: float | None = None, norm: str | None = None, mel_scale: str = "htk",
                 driver: str = "gels") -> None:
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        if driver not in _LSTSQ_DRIVERS:
            raise ValueError(f'driver must be one of ["gels", "gelsy", "gelsd", "gelss"]. Found {driver}.')
        self.driver = driver
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        self.register_buffer("fb", AF.melscale_fbanks(n_stft, self.f_min, self.f_max, n_mels, sample_rate, norm,
                                                      mel_scale))

    def forward(self, melspec: ember.Tensor) -> ember.Tensor:
        shape = melspec.shape
        if melspec.dim() < 2 or shape[-2] != self.n_mels:
            raise ValueError(f"Expected an input with {self.n_mels} mel bins. Found: {tuple(shape)}")
        mel = melspec.reshape(-1, shape[-2], shape[-1])
        fb = self.fb.to(mel.dtype).transpose(-1, -2).unsqueeze(0)
        spec = ember.relu(ember.linalg.lstsq(fb, mel, driver=self.driver).solution)
        return spec.reshape(*shape[:-2], self.fb.shape[0], shape[-1])


class MelSpectrogram(nn.Module):
    """Spectrogram followed by MelScale: (..., time) → (..., n_mels, frames)."""

    def __init__(self, sample_rate: int = 16000, n_fft: int = 400, win_length: int | None = None,
                 hop_length: int | None = None, f_min: float = 0.0, f_max: float | None = None, pad: int = 0,
                 n_mels: int = 128, window_fn: Callable = ember.hann_window, power: float = 2.0,
                 normalized: bool = False, wkwargs: dict | None = None, center: bool = True,
                 pad_mode: str = "reflect", onesided: bool | None = None, norm: str | None = None,
                 mel_scale: str = "htk") -> None:
        super().__init__()
        if onesided is not None:
            warnings.warn("Argument 'onesided' has been deprecated and has no influence on the behavior of this "
                          "module.", stacklevel=2)
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.n_mels = n_mels
        self.f_max = f_max
        self.f_min = f_min
        self.spectrogram = Spectrogram(n_fft=n_fft, win_length=self.win_length, hop_length=self.hop_length,
                                       pad=pad, window_fn=window_fn, power=power, normalized=normalized,
                                       wkwargs=wkwargs, center=center, pad_mode=pad_mode, onesided=True)
        self.mel_scale = MelScale(n_mels, sample_rate, f_min, f_max, n_fft // 2 + 1, norm, mel_scale)

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        return self.mel_scale(self.spectrogram(waveform))


class MFCC(nn.Module):
    """Mel-frequency cepstral coefficients: DCT-II of the log (dB, top_db 80) mel spectrogram."""

    def __init__(self, sample_rate: int = 16000, n_mfcc: int = 40, dct_type: int = 2, norm: str = "ortho",
                 log_mels: bool = False, melkwargs: dict | None = None) -> None:
        super().__init__()
        if dct_type != 2:
            raise ValueError(f"DCT type not supported: {dct_type}")
        self.sample_rate = sample_rate
        self.n_mfcc = n_mfcc
        self.dct_type = dct_type
        self.norm = norm
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.MelSpectrogram = MelSpectrogram(sample_rate=sample_rate, **(melkwargs or {}))
        if n_mfcc > self.MelSpectrogram.n_mels:
            raise ValueError("Cannot select more MFCC coefficients than # mel bins")
        self.register_buffer("dct_mat", AF.create_dct(n_mfcc, self.MelSpectrogram.n_mels, norm))
        self.log_mels = log_mels

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        mel = self.MelSpectrogram(waveform)
        mel = ember.log(mel + 1e-6) if self.log_mels else self.amplitude_to_DB(mel)
        return ember.matmul(mel.transpose(-1, -2), self.dct_mat.to(mel.dtype)).transpose(-1, -2)


class LFCC(nn.Module):
    """Linear-frequency cepstral coefficients: DCT-II of the log linear-filterbank spectrogram."""

    def __init__(self, sample_rate: int = 16000, n_filter: int = 128, f_min: float = 0.0, f_max: float | None = None,
                 n_lfcc: int = 40, dct_type: int = 2, norm: str = "ortho", log_lf: bool = False,
                 speckwargs: dict | None = None) -> None:
        super().__init__()
        if dct_type != 2:
            raise ValueError(f"DCT type not supported: {dct_type}")
        self.sample_rate = sample_rate
        self.f_min = f_min
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.n_filter = n_filter
        self.n_lfcc = n_lfcc
        self.dct_type = dct_type
        self.norm = norm
        self.log_lf = log_lf
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.Spectrogram = Spectrogram(**(speckwargs or {}))
        if n_lfcc > self.Spectrogram.n_fft:
            raise ValueError("Cannot select more LFCC coefficients than # fft bins")
        self.register_buffer("filter_mat", AF.linear_fbanks(self.Spectrogram.n_fft // 2 + 1, self.f_min, self.f_max,
                                                            n_filter, sample_rate))
        self.register_buffer("dct_mat", AF.create_dct(n_lfcc, n_filter, norm))

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        spec = self.Spectrogram(waveform)
        spec = ember.matmul(spec.transpose(-1, -2), self.filter_mat.to(spec.dtype)).transpose(-1, -2)
        spec = ember.log(spec + 1e-6) if self.log_lf else self.amplitude_to_DB(spec)
        return ember.matmul(spec.transpose(-1, -2), self.dct_mat.to(spec.dtype)).transpose(-1, -2)


class Resample(nn.Module):
    """Sinc resampling with the kernel computed once (buffer ``kernel``, float32 unless ``dtype``)."""

    def __init__(self, orig_freq: int = 16000, new_freq: int = 16000, resampling_method: str = "sinc_interp_hann",
                 lowpass_filter_width: int = 6, rolloff: float = 0.99, beta: float | None = None, *,
                 dtype: ember.dtype | None = None) -> None:
        super().__init__()
        if orig_freq <= 0 or new_freq <= 0:
            raise ValueError("Original frequency and desired frequecy should be positive")
        self.orig_freq = orig_freq
        self.new_freq = new_freq
        self.gcd = math.gcd(int(orig_freq), int(new_freq))
        self.resampling_method = resampling_method
        self.lowpass_filter_width = lowpass_filter_width
        self.rolloff = rolloff
        self.beta = beta
        if orig_freq != new_freq:
            kernel, self.width = _fn._sinc_resample_kernel(orig_freq, new_freq, self.gcd, lowpass_filter_width,
                                                           rolloff, resampling_method, beta, dtype)
            self.register_buffer("kernel", kernel)

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        if self.orig_freq == self.new_freq:
            return waveform
        return _fn._apply_sinc_resample_kernel(waveform, self.orig_freq, self.new_freq, self.gcd, self.kernel,
                                               self.width)


class ComputeDeltas(nn.Module):
    def __init__(self, win_length: int = 5, mode: str = "replicate") -> None:
        super().__init__()
        self.win_length = win_length
        self.mode = mode

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        return AF.compute_deltas(specgram, win_length=self.win_length, mode=self.mode)


class TimeStretch(nn.Module):
    """Phase-vocoder speed change of complex spectrograms (buffer ``phase_advance`` (n_freq, 1))."""

    def __init__(self, hop_length: int | None = None, n_freq: int = 201, fixed_rate: float | None = None) -> None:
        super().__init__()
        self.fixed_rate = fixed_rate
        n_fft = (n_freq - 1) * 2
        hop_length = hop_length if hop_length is not None else n_fft // 2
        self.register_buffer("phase_advance", ember.linspace(0, math.pi * hop_length, n_freq).unsqueeze(-1))

    def forward(self, complex_specgrams: ember.Tensor, overriding_rate: float | None = None) -> ember.Tensor:
        # a real input raises TypeError (torchaudio only warns and returns meaningless values)
        rate = self.fixed_rate if overriding_rate is None else overriding_rate
        if rate is None:
            raise ValueError("If no fixed_rate is specified, must pass a valid rate to the forward method.")
        real = ember.float64 if complex_specgrams.dtype == ember.complex128 else ember.float32
        return AF.phase_vocoder(complex_specgrams, rate, self.phase_advance.to(real))


_FADE_SHAPES = ("linear", "exponential", "logarithmic", "quarter_sine", "half_sine")


class Fade(nn.Module):
    """Fade in over the first fade_in_len samples and out over the last fade_out_len."""

    def __init__(self, fade_in_len: int = 0, fade_out_len: int = 0, fade_shape: str = "linear") -> None:
        super().__init__()
        if fade_shape not in _FADE_SHAPES:
            raise ValueError(f"fade_shape must be one of {list(_FADE_SHAPES)}, but got {fade_shape!r}")
        if fade_in_len < 0 or fade_out_len < 0:
            raise ValueError(f"Fade: expected non-negative lengths, but got {fade_in_len} and {fade_out_len}")
        self.fade_in_len = fade_in_len
        self.fade_out_len = fade_out_len
        self.fade_shape = fade_shape

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        length = waveform.shape[-1]
        if self.fade_in_len > length or self.fade_out_len > length:
            raise ValueError(f"Fade: fade lengths ({self.fade_in_len}, {self.fade_out_len}) exceed the waveform "
                             f"length {length}")
        return (self._fade_in(length, waveform.dtype, waveform.device)
                * self._fade_out(length, waveform.dtype, waveform.device) * waveform)

    def _fade_in(self, length: int, dtype, device) -> ember.Tensor:
        f = ember.linspace(0, 1, self.fade_in_len, dtype=dtype, device=device)
        shape = self.fade_shape
        if shape == "exponential":
            f = _exp_base(2.0, f - 1) * f
        elif shape == "logarithmic":
            f = ember.log10(0.1 + f) + 1
        elif shape == "quarter_sine":
            f = ember.sin(f * math.pi / 2)
        elif shape == "half_sine":
            f = ember.sin(f * math.pi - math.pi / 2) / 2 + 0.5
        return ember.clamp(ember.cat([f, ember.ones(length - self.fade_in_len, dtype=dtype, device=device)]), 0, 1)

    def _fade_out(self, length: int, dtype, device) -> ember.Tensor:
        f = ember.linspace(0, 1, self.fade_out_len, dtype=dtype, device=device)
        shape = self.fade_shape
        if shape == "linear":
            f = 1 - f
        elif shape == "exponential":
            f = _exp_base(2.0, -f) * (1 - f)
        elif shape == "logarithmic":
            f = ember.log10(1.1 - f) + 1
        elif shape == "quarter_sine":
            f = ember.sin(f * math.pi / 2 + math.pi / 2)
        else:
            f = ember.sin(f * math.pi + math.pi / 2) / 2 + 0.5
        return ember.clamp(ember.cat([ember.ones(length - self.fade_out_len, dtype=dtype, device=device), f]), 0, 1)


class Vol(nn.Module):
    """Scale by an amplitude ratio, a power ratio or decibels, then clamp to [-1, 1]."""

    def __init__(self, gain: float, gain_type: str = "amplitude") -> None:
        super().__init__()
        if gain_type not in ("amplitude", "power", "db"):
            raise ValueError("Gain type must be one of 'amplitude', 'power' or 'db'")
        if gain_type in ("amplitude", "power") and gain < 0:
            raise ValueError("If gain_type = amplitude or power, gain must be positive.")
        self.gain = gain
        self.gain_type = gain_type

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        if self.gain_type == "amplitude":
            waveform = waveform * self.gain
        elif self.gain_type == "db":
            waveform = AF.gain(waveform, self.gain)
        else:
            waveform = AF.gain(waveform, 10 * math.log10(self.gain))
        return ember.clamp(waveform, -1, 1)


class _AxisMasking(nn.Module):
    def __init__(self, mask_param: int, axis: int, iid_masks: bool, p: float = 1.0) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
        self.mask_param = mask_param
        self.axis = axis
        self.iid_masks = iid_masks
        self.p = p

    def forward(self, specgram: ember.Tensor, mask_value: float = 0.0) -> ember.Tensor:
        # axis 1 = freq, 2 = time of a (channel, freq, time) spectrogram, shifted for extra leading dims
        axis = self.axis + specgram.dim() - 3
        if self.iid_masks:
            return AF.mask_along_axis_iid(specgram, self.mask_param, mask_value, axis, p=self.p)
        return AF.mask_along_axis(specgram, self.mask_param, mask_value, axis, p=self.p)


class FrequencyMasking(_AxisMasking):
    """SpecAugment frequency mask of width U[0, freq_mask_param); iid_masks: one per example/channel."""

    def __init__(self, freq_mask_param: int, iid_masks: bool = False) -> None:
        super().__init__(freq_mask_param, 1, iid_masks)


class TimeMasking(_AxisMasking):
    """SpecAugment time mask of width U[0, min(time_mask_param, p·frames))."""

    def __init__(self, time_mask_param: int, iid_masks: bool = False, p: float = 1.0) -> None:
        super().__init__(time_mask_param, 2, iid_masks, p)


class SpecAugment(nn.Module):
    """n_time_masks time masks then n_freq_masks frequency masks (iid per example for 3+-D input when
    ``iid_masks``), filled with 0 (``zero_masking``) or the input's mean."""

    def __init__(self, n_time_masks: int, time_mask_param: int, n_freq_masks: int, freq_mask_param: int,
                 iid_masks: bool = True, p: float = 1.0, zero_masking: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
        self.n_time_masks = n_time_masks
        self.time_mask_param = time_mask_param
        self.n_freq_masks = n_freq_masks
        self.freq_mask_param = freq_mask_param
        self.iid_masks = iid_masks
        self.p = p
        self.zero_masking = zero_masking

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        mask_value = 0.0 if self.zero_masking else specgram.mean()
        time_dim = specgram.dim() - 1
        mask = AF.mask_along_axis_iid if specgram.dim() > 2 and self.iid_masks else AF.mask_along_axis
        for _ in range(self.n_time_masks):
            specgram = mask(specgram, self.time_mask_param, mask_value, time_dim, p=self.p)
        for _ in range(self.n_freq_masks):
            specgram = mask(specgram, self.freq_mask_param, mask_value, time_dim - 1, p=self.p)
        return specgram


class SlidingWindowCmn(nn.Module):
    def __init__(self, cmn_window: int = 600, min_cmn_window: int = 100, center: bool = False,
                 norm_vars: bool = False) -> None:
        super().__init__()
        self.cmn_window = cmn_window
        self.min_cmn_window = min_cmn_window
        self.center = center
        self.norm_vars = norm_vars

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        return AF.sliding_window_cmn(specgram, self.cmn_window, self.min_cmn_window, self.center, self.norm_vars)


class SpectralCentroid(nn.Module):
    """Per-frame spectral centroid (Hz) of (..., time) → (..., frames)."""

    def __init__(self, sample_rate: int, n_fft: int = 400, win_length: int | None = None,
                 hop_length: int | None = None, pad: int = 0, window_fn: Callable = ember.hann_window,
                 wkwargs: dict | None = None) -> None:
        super().__init__()
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad = pad

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        return AF.spectral_centroid(waveform, self.sample_rate, self.pad, self.window, self.n_fft, self.hop_length,
                                    self.win_length)


class PitchShift(nn.Module):
    """Pitch shift by n_steps / bins_per_octave octaves; the resampling kernel is built once.

    torchaudio makes ``kernel`` a lazily initialised parameter; here it is a buffer built in
    ``__init__`` (state_dict keys ``window`` and ``kernel`` either way).
    """

    def __init__(self, sample_rate: int, n_steps: int, bins_per_octave: int = 12, n_fft: int = 512,
                 win_length: int | None = None, hop_length: int | None = None,
                 window_fn: Callable = ember.hann_window, wkwargs: dict | None = None) -> None:
        super().__init__()
        if bins_per_octave == 0:
            raise ValueError("pitch_shift: bins_per_octave must be non-zero")
        self.n_steps = n_steps
        self.bins_per_octave = bins_per_octave
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 4
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        rate = 2.0 ** (-float(n_steps) / bins_per_octave)
        self.orig_freq = int(sample_rate / rate)
        self.gcd = math.gcd(self.orig_freq, sample_rate)
        self.width = 0
        if self.orig_freq != sample_rate:
            kernel, self.width = _fn._sinc_resample_kernel(self.orig_freq, sample_rate, self.gcd, 6, 0.99,
                                                           "sinc_interp_hann", None)
            self.register_buffer("kernel", kernel)

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        stretched = _fn._stretch_waveform(waveform, self.n_steps, self.bins_per_octave, self.n_fft, self.win_length,
                                          self.hop_length, self.window)
        if self.orig_freq != self.sample_rate:
            stretched = _fn._apply_sinc_resample_kernel(stretched, self.orig_freq, self.sample_rate, self.gcd,
                                                        self.kernel, self.width)
        return _fn._fix_waveform_shape(stretched, waveform.shape)


class Speed(nn.Module):
    """Speed change by ``factor`` (a Resample from factor·orig_freq to orig_freq); forward returns
    (waveform, lengths or None)."""

    def __init__(self, orig_freq: int, factor: float) -> None:
        super().__init__()
        if factor <= 0:
            raise ValueError(f"speed: expected factor > 0, but got {factor}")
        self.orig_freq = orig_freq
        self.factor = factor
        source = int(factor * orig_freq)
        target = int(orig_freq)
        gcd = math.gcd(source, target)
        self.source_sample_rate, self.target_sample_rate = source // gcd, target // gcd
        self.resampler = Resample(orig_freq=self.source_sample_rate, new_freq=self.target_sample_rate)

    def forward(self, waveform: ember.Tensor, lengths: ember.Tensor | None = None):
        out_lengths = None
        if lengths is not None:
            out_lengths = ember.ceil(lengths * self.target_sample_rate / self.source_sample_rate).to(lengths.dtype)
        return self.resampler(waveform), out_lengths


class SpeedPerturbation(nn.Module):
    """Speed change by a factor drawn uniformly from ``factors`` on each call (one Speed per factor)."""

    def __init__(self, orig_freq: int, factors) -> None:
        super().__init__()
        if len(factors) == 0:
            raise ValueError("SpeedPerturbation: expected at least one factor")
        self.speeders = nn.ModuleList([Speed(orig_freq=orig_freq, factor=factor) for factor in factors])

    def forward(self, waveform: ember.Tensor, lengths: ember.Tensor | None = None):
        idx = int(ember.randint(len(self.speeders), (1,)))
        return self.speeders[idx](waveform, lengths)


class MuLawEncoding(nn.Module):
    def __init__(self, quantization_channels: int = 256) -> None:
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return AF.mu_law_encoding(x, self.quantization_channels)


class MuLawDecoding(nn.Module):
    def __init__(self, quantization_channels: int = 256) -> None:
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x_mu: ember.Tensor) -> ember.Tensor:
        return AF.mu_law_decoding(x_mu, self.quantization_channels)


class Loudness(nn.Module):
    """ITU-R BS.1770-4 integrated loudness (LKFS) of (..., channels, time)."""

    def __init__(self, sample_rate: int) -> None:
        super().__init__()
        self.sample_rate = sample_rate

    def forward(self, wavefrom: ember.Tensor) -> ember.Tensor:   # (sic) torchaudio's argument name
        return AF.loudness(wavefrom, self.sample_rate)


class AddNoise(nn.Module):
    def forward(self, waveform: ember.Tensor, noise: ember.Tensor, snr: ember.Tensor,
                lengths: ember.Tensor | None = None) -> ember.Tensor:
        return AF.add_noise(waveform, noise, snr, lengths)


class _ConvolveBase(nn.Module):
    def __init__(self, mode: str = "full") -> None:
        super().__init__()
        if mode not in _fn._CONV_MODES:
            raise ValueError(f"Unrecognized mode value '{mode}'. Please specify one of {_fn._CONV_MODES}.")
        self.mode = mode


class Convolve(_ConvolveBase):
    def forward(self, x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return AF.convolve(x, y, mode=self.mode)


class FFTConvolve(_ConvolveBase):
    def forward(self, x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return AF.fftconvolve(x, y, mode=self.mode)


class Preemphasis(nn.Module):
    def __init__(self, coeff: float = 0.97) -> None:
        super().__init__()
        self.coeff = coeff

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        return AF.preemphasis(waveform, coeff=self.coeff)


class Deemphasis(nn.Module):
    def __init__(self, coeff: float = 0.97) -> None:
        super().__init__()
        self.coeff = coeff

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        return AF.deemphasis(waveform, coeff=self.coeff)


class Vad(nn.Module):
    """SoX's voice-activity trimmer as a module; see emberaudio.functional.vad."""

    def __init__(self, sample_rate: int, trigger_level: float = 7.0, trigger_time: float = 0.25,
                 search_time: float = 1.0, allowed_gap: float = 0.25, pre_trigger_time: float = 0.0,
                 boot_time: float = 0.35, noise_up_time: float = 0.1, noise_down_time: float = 0.01,
                 noise_reduction_amount: float = 1.35, measure_freq: float = 20.0,
                 measure_duration: float | None = None, measure_smooth_time: float = 0.4,
                 hp_filter_freq: float = 50.0, lp_filter_freq: float = 6000.0, hp_lifter_freq: float = 150.0,
                 lp_lifter_freq: float = 2000.0) -> None:
        super().__init__()
        self.sample_rate = sample_rate
        self.trigger_level = trigger_level
        self.trigger_time = trigger_time
        self.search_time = search_time
        self.allowed_gap = allowed_gap
        self.pre_trigger_time = pre_trigger_time
        self.boot_time = boot_time
        self.noise_up_time = noise_up_time
        self.noise_down_time = noise_down_time
        self.noise_reduction_amount = noise_reduction_amount
        self.measure_freq = measure_freq
        self.measure_duration = measure_duration
        self.measure_smooth_time = measure_smooth_time
        self.hp_filter_freq = hp_filter_freq
        self.lp_filter_freq = lp_filter_freq
        self.hp_lifter_freq = hp_lifter_freq
        self.lp_lifter_freq = lp_lifter_freq

    def forward(self, waveform: ember.Tensor) -> ember.Tensor:
        return AF.vad(waveform, self.sample_rate, self.trigger_level, self.trigger_time, self.search_time,
                      self.allowed_gap, self.pre_trigger_time, self.boot_time, self.noise_up_time,
                      self.noise_down_time, self.noise_reduction_amount, self.measure_freq, self.measure_duration,
                      self.measure_smooth_time, self.hp_filter_freq, self.lp_filter_freq, self.hp_lifter_freq,
                      self.lp_lifter_freq)
