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
    SpecAugment,
    SpectralCentroid,
    Spectrogram,
    Speed,
    SpeedPerturbation,
    TimeMasking,
    TimeStretch,
    Vad,
    Vol,
)

__all__ = [
    "AddNoise", "AmplitudeToDB", "ComputeDeltas", "Convolve", "Deemphasis", "FFTConvolve", "Fade",
    "FrequencyMasking", "GriffinLim", "InverseMelScale", "InverseSpectrogram", "LFCC", "MFCC", "MVDR",
    "MelScale", "MelSpectrogram", "PSD", "PitchShift", "Preemphasis", "RTFMVDR", "Resample",
    "SlidingWindowCmn", "SoudenMVDR", "SpecAugment", "SpectralCentroid", "Spectrogram", "Speed",
    "SpeedPerturbation", "TimeMasking", "TimeStretch", "Vad", "Vol",
]
