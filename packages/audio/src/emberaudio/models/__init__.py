"""Speech models in the shape of torchaudio.models: Emformer, RNN-T (model, factories and beam
search), Conformer, and the Wav2Vec2 / HuBERT family."""

from .emformer import Emformer

__all__ = ["Emformer"]
