"""embertext.models: RoBERTa/XLM-R (torchtext's RobertaModel, heads and bundles) and a BERT
encoder, on ember.nn's Transformer fast path; converters from the public safetensors layout."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import ember
from ember import nn
from embertext.models._convert import (
    bert_conf_from_state_dict,
    bert_state_dict_from_hf,
    roberta_state_dict_from_hf,
)
from embertext.models._encoder import (
    BertEncoder,
    BertEncoderConf,
    PositionalEmbedding,
    RobertaClassificationHead,
    RobertaEncoder,
    RobertaEncoderConf,
    RobertaModel,
    mean_pooling,
)


def _checkpoint_dir() -> str:
    return os.path.join(ember.hub.get_dir(), "checkpoints")


@dataclass
class RobertaBundle:
    """A RoBERTa/XLM-R architecture with where its weights and tokenizer files are found.

    Ember does not download. ``get_model()`` reads ``checkpoint`` (a safetensors file, in
    Ember's layout or Hugging Face's ``model.safetensors`` layout), by default
    ``<ember.hub.get_dir()>/checkpoints/<checkpoint_name>``. ``transform()`` builds the text
    pipeline from local tokenizer files the same way."""

    _encoder_conf: RobertaEncoderConf
    checkpoint_name: str
    tokenizer: str  # "gpt2-bpe" or "sentencepiece"

    @property
    def encoderConf(self) -> RobertaEncoderConf:  # noqa: N802 (torchtext's name)
        return replace(self._encoder_conf)

    def build_model(self, head: nn.Module | None = None, freeze_encoder: bool = False) -> RobertaModel:
        return RobertaModel(self.encoderConf, head, freeze_encoder)

    def get_model(self, head: nn.Module | None = None, load_weights: bool = True, freeze_encoder: bool = False,
                  *, checkpoint: str | os.PathLike | None = None, strict: bool = True) -> RobertaModel:
        model = self.build_model(head, freeze_encoder)
        if not load_weights:
            return model
        path = os.fspath(checkpoint) if checkpoint is not None else os.path.join(_checkpoint_dir(), self.checkpoint_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"no weights at {path!r}: Ember does not download. Save the encoder's weights there as "
                "safetensors (Ember's or Hugging Face's layout), or pass checkpoint=, or load_weights=False.")
        tensors = ember.load(path)
        state = roberta_state_dict_from_hf(tensors) if any(
            k.startswith(("roberta.", "embeddings.")) for k in tensors) else dict(tensors)
        if head is None:
            state = {k: v for k, v in state.items() if not k.startswith("head.")}
        missing, unexpected = model.load_state_dict(state, strict=False)
        if head is not None:
            missing = [k for k in missing if not k.startswith("head.")]  # a new head starts untrained
        if strict and (missing or unexpected):
            raise RuntimeError(f"{path!r} does not fit {type(self).__name__}: missing {missing[:5]}, "
                               f"unexpected {unexpected[:5]}")
        return model

    def transform(self, encoder_json_path: str | os.PathLike | None = None,
                  vocab_bpe_path: str | os.PathLike | None = None) -> Any:
        """RoBERTa's input pipeline: GPT-2 BPE with the model's vocabulary (Hugging Face's
        vocab.json/merges.txt give model IDs directly), truncated to 254 tokens, between <s> (0)
        and </s> (2)."""
        from embertext import transforms as T

        if self.tokenizer != "gpt2-bpe":
            raise NotImplementedError(
                "XLM-R tokenizes with a SentencePiece model, and embertext has no SentencePiece tokenizer "
                "(it would need the sentencepiece library); tokenize elsewhere and feed the model token IDs")
        encoder_json_path = encoder_json_path or os.path.join(_checkpoint_dir(), "roberta.vocab.json")
        vocab_bpe_path = vocab_bpe_path or os.path.join(_checkpoint_dir(), "roberta.merges.txt")
        return T.Sequential(
            T.GPT2BPETokenizer(encoder_json_path, vocab_bpe_path),
            T.Truncate(254),
            T.AddToken(token=0, begin=True),
            T.AddToken(token=2, begin=False),
        )


ROBERTA_BASE_ENCODER = RobertaBundle(RobertaEncoderConf(vocab_size=50265), "roberta.base.encoder.safetensors",
                                     "gpt2-bpe")
ROBERTA_LARGE_ENCODER = RobertaBundle(
    RobertaEncoderConf(vocab_size=50265, embedding_dim=1024, ffn_dimension=4096, num_attention_heads=16,
                       num_encoder_layers=24), "roberta.large.encoder.safetensors", "gpt2-bpe")
XLMR_BASE_ENCODER = RobertaBundle(RobertaEncoderConf(vocab_size=250002), "xlmr.base.encoder.safetensors",
                                  "sentencepiece")
XLMR_LARGE_ENCODER = RobertaBundle(
    RobertaEncoderConf(vocab_size=250002, embedding_dim=1024, ffn_dimension=4096, num_attention_heads=16,
                       num_encoder_layers=24), "xlmr.large.encoder.safetensors", "sentencepiece")


def load_bert(checkpoint: str | os.PathLike, num_attention_heads: int, **conf_overrides) -> BertEncoder:
    """A BertEncoder with the weights of a Hugging Face BERT ``model.safetensors``."""
    state = bert_state_dict_from_hf(checkpoint)
    model = BertEncoder(bert_conf_from_state_dict(state, num_attention_heads, **conf_overrides))
    model.load_state_dict(state)
    return model


__all__ = [
    "ROBERTA_BASE_ENCODER",
    "ROBERTA_LARGE_ENCODER",
    "XLMR_BASE_ENCODER",
    "XLMR_LARGE_ENCODER",
    "BertEncoder",
    "BertEncoderConf",
    "PositionalEmbedding",
    "RobertaBundle",
    "RobertaClassificationHead",
    "RobertaEncoder",
    "RobertaEncoderConf",
    "RobertaModel",
    "bert_state_dict_from_hf",
    "load_bert",
    "mean_pooling",
    "roberta_state_dict_from_hf",
]
