"""emberaudio.transforms: torchaudio.transforms' modules on ember (spectral features, resampling,
augmentation, beamforming, the RNN-T loss)."""

from ._multi_channel import MVDR, PSD, RTFMVDR, SoudenMVDR
from ._rnnt import RNNTLoss
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
    Loudness,
    MelScale,
    MelSpectrogram,
    MuLawDecoding,
    MuLawEncoding,
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
    "RNNTLoss",
    "AddNoise", "AmplitudeToDB", "ComputeDeltas", "Convolve", "Deemphasis", "FFTConvolve", "Fade",
    "FrequencyMasking", "GriffinLim", "InverseMelScale", "InverseSpectrogram", "LFCC", "Loudness", "MFCC",
    "MVDR", "MelScale", "MelSpectrogram", "MuLawDecoding", "MuLawEncoding", "PSD", "PitchShift",
    "Preemphasis", "RTFMVDR", "Resample", "SlidingWindowCmn", "SoudenMVDR", "SpecAugment", "SpectralCentroid",
    "Spectrogram", "Speed", "SpeedPerturbation", "TimeMasking", "TimeStretch", "Vad", "Vol",
]
