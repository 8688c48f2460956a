"""Speech models in the shape of ``torchaudio.models``; the CTC decoders are in ``decoder``."""
