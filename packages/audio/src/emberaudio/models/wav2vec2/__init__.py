"""Wav2Vec2 and HuBERT models and builders (torchaudio.models.wav2vec2)."""

from .model import (
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

__all__ = [
    "Wav2Vec2Model", "HuBERTPretrainModel", "wav2vec2_model", "wav2vec2_base", "wav2vec2_large",
    "wav2vec2_large_lv60k", "hubert_base", "hubert_large", "hubert_xlarge",
    "hubert_pretrain_model", "hubert_pretrain_base", "hubert_pretrain_large",
    "hubert_pretrain_xlarge", "wavlm_model", "wavlm_base", "wavlm_large",
]
