"""Speech models in the shape of torchaudio.models: Emformer, RNN-T (model, factories and beam
search), Conformer, and the Wav2Vec2 / HuBERT family."""

from .conformer import Conformer
from .emformer import Emformer
from .rnnt import RNNT, emformer_rnnt_base, emformer_rnnt_model
from .rnnt_decoder import Hypothesis, RNNTBeamSearch

__all__ = ["Conformer", "Emformer", "RNNT", "emformer_rnnt_base", "emformer_rnnt_model", "Hypothesis",
           "RNNTBeamSearch"]
