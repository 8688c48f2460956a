"""emberaudio.transforms: torchaudio.transforms' modules on ember (spectral features, resampling,
augmentation, beamforming)."""

from ._multi_channel import MVDR, PSD, RTFMVDR, SoudenMVDR
from ._transforms import (
    LFCC,
    MFCC,
    AddNoise,
    AmplitudeToDB,
    ComputeDeltas,
    Convolve,
    Deemphasis,
    Fade,
    FFTConvolve,
    FrequencyMasking,
    GriffinLim,
    InverseMelScale,
    InverseSpectrogram,
    MelScale,
    MelSpectrogram,
    PitchShift,
    Preemphasis,
    Resample,
    SlidingWindowCmn,
    SpectralCentroid,
    Spectrogram,
    Speed,
    TimeMasking,
    TimeStretch,
    Vad,
    Vol,
)

__all__ = [
    "LFCC", "MFCC", "MVDR", "PSD", "RTFMVDR", "AddNoise", "AmplitudeToDB", "ComputeDeltas", "Convolve", "Deemphasis",
    "FFTConvolve", "Fade", "FrequencyMasking", "GriffinLim", "InverseMelScale", "InverseSpectrogram", "MelScale",
    "MelSpectrogram", "PitchShift", "Preemphasis", "Resample", "SlidingWindowCmn", "SoudenMVDR",
    "SpectralCentroid", "Spectrogram", "Speed", "TimeMasking", "TimeStretch", "Vad", "Vol",
]
