"""Speech models in the shape of torchaudio.models: Emformer, RNN-T (model, factories and beam
search), Conformer, the Wav2Vec2 / HuBERT family, and the TTS models Tacotron2 and WaveRNN. The CTC
decoders are in ``emberaudio.models.decoder``."""

from .conformer import Conformer
from .emformer import Emformer
from .rnnt import RNNT, emformer_rnnt_base, emformer_rnnt_model
from .rnnt_decoder import Hypothesis, RNNTBeamSearch
from .tacotron2 import Tacotron2
from .wav2vec2 import (
                       HuBERTPretrainModel,
                       Wav2Vec2Model,
                       hubert_base,
                       hubert_large,
                       hubert_pretrain_base,
                       hubert_pretrain_large,
                       hubert_pretrain_model,
                       hubert_pretrain_xlarge,
                       hubert_xlarge,
                       wav2vec2_base,
                       wav2vec2_large,
                       wav2vec2_large_lv60k,
                       wav2vec2_model,
                       wavlm_base,
                       wavlm_large,
                       wavlm_model,
)
from .wavernn import MelResNet, ResBlock, Stretch2d, UpsampleNetwork, WaveRNN

__all__ = [
    "Conformer", "Emformer", "RNNT", "emformer_rnnt_base", "emformer_rnnt_model", "Hypothesis",
    "RNNTBeamSearch", "Wav2Vec2Model", "HuBERTPretrainModel", "wav2vec2_model", "wav2vec2_base",
    "wav2vec2_large", "wav2vec2_large_lv60k", "hubert_base", "hubert_large", "hubert_xlarge",
    "hubert_pretrain_model", "hubert_pretrain_base", "hubert_pretrain_large",
    "hubert_pretrain_xlarge", "wavlm_model", "wavlm_base", "wavlm_large", "Tacotron2", "WaveRNN",
    "ResBlock", "MelResNet", "Stretch2d", "UpsampleNetwork",
]
