"""emberaudio.functional: torchaudio.functional's signal processing on ember tensors (spectral
functions, filtering, beamforming), and the native RNN-T loss
and CTC forced alignment."""

from ._alignment import TokenSpan, forced_align, merge_tokens
from ._beamforming import apply_beamforming, mvdr_weights_rtf, mvdr_weights_souden, psd, rtf_evd, rtf_power
from ._rnnt import rnnt_loss
from .filtering import (
    allpass_biquad,
    band_biquad,
    bandpass_biquad,
    bandreject_biquad,
    bass_biquad,
    biquad,
    contrast,
    dcshift,
    deemph_biquad,
    dither,
    equalizer_biquad,
    filtfilt,
    gain,
    highpass_biquad,
    lfilter,
    lowpass_biquad,
    riaa_biquad,
    treble_biquad,
    vad,
)
from .functional import (
    DB_to_amplitude,
    add_noise,
    amplitude_to_DB,
    compute_deltas,
    convolve,
    create_dct,
    deemphasis,
    detect_pitch_frequency,
    edit_distance,
    fftconvolve,
    griffinlim,
    inverse_spectrogram,
    linear_fbanks,
    loudness,
    mask_along_axis,
    mask_along_axis_iid,
    melscale_fbanks,
    mu_law_decoding,
    mu_law_encoding,
    phase_vocoder,
    pitch_shift,
    preemphasis,
    resample,
    sliding_window_cmn,
    spectral_centroid,
    spectrogram,
    speed,
)

__all__ = [
    "TokenSpan", "forced_align", "merge_tokens", "rnnt_loss",
    "DB_to_amplitude", "add_noise", "allpass_biquad", "amplitude_to_DB", "apply_beamforming", "band_biquad",
    "bandpass_biquad", "bandreject_biquad", "bass_biquad", "biquad", "compute_deltas", "contrast", "convolve",
    "create_dct", "dcshift", "deemph_biquad", "deemphasis", "detect_pitch_frequency", "dither",
    "edit_distance", "equalizer_biquad", "fftconvolve", "filtfilt", "gain", "griffinlim", "highpass_biquad",
    "inverse_spectrogram", "lfilter", "linear_fbanks", "loudness", "lowpass_biquad", "mask_along_axis",
    "mask_along_axis_iid", "melscale_fbanks", "mu_law_decoding", "mu_law_encoding", "mvdr_weights_rtf",
    "mvdr_weights_souden", "phase_vocoder", "pitch_shift", "preemphasis", "psd", "resample", "riaa_biquad",
    "rtf_evd", "rtf_power", "sliding_window_cmn", "spectral_centroid", "spectrogram", "speed",
    "treble_biquad", "vad",
]
