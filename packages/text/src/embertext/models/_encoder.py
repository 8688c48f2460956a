"""Transformer encoders for text on ember.nn: the RoBERTa/XLM-R encoder of torchtext and a BERT
encoder. Both stack ember.nn.TransformerEncoderLayer (post- or pre-norm, GELU, batch first) in an
ember.nn.TransformerEncoder with enable_nested_tensor, so inference in eval mode under
ember.no_grad takes the core's fast path: padded positions are dropped before the first layer
and never computed (check ``encoder.layers.why_not_fast_path == ""``)."""

from __future__ import annotations

from dataclasses import dataclass

import ember
from ember import nn


def _check_tokens(tokens: ember.Tensor, name: str) -> None:
    if not isinstance(tokens, ember.Tensor):
        raise TypeError(f"{name} expects a Tensor of token IDs, but got {type(tokens).__name__}")
    if tokens.dim() != 2:
        raise ValueError(f"{name} expects token IDs of shape (batch, length), but got {tuple(tokens.shape)}")
    if tokens.dtype not in (ember.int64, ember.int32):
        raise TypeError(f"{name} expects integer token IDs, but got {tokens.dtype}")


def _stack(d_model: int, nhead: int, ffn: int, dropout: float, layers: int, eps: float,
           norm_first: bool) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ffn, dropout=dropout, activation="gelu",
                                       layer_norm_eps=eps, batch_first=True, norm_first=norm_first)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=True)


class PositionalEmbedding(nn.Module):
    """Learned positions that skip padding, as fairseq/torchtext RoBERTa numbers them: the
    i-th real token gets position padding_idx + i, padding gets padding_idx."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx)
        self.padding_idx = padding_idx

    def forward(self, tokens: ember.Tensor) -> ember.Tensor:
        mask = tokens.ne(self.padding_idx).to(ember.int64)
        positions = ember.cumsum(mask, dim=1) * mask + self.padding_idx
        if int(positions.max()) >= self.embedding.num_embeddings:
            raise ValueError(f"sequence of {tokens.shape[1]} tokens is longer than the model's "
                             f"{self.embedding.num_embeddings - self.padding_idx - 1} positions")
        return self.embedding(positions)


@dataclass
class RobertaEncoderConf:
    """torchtext's RoBERTa/XLM-R encoder configuration (base sizes by default)."""

    vocab_size: int = 50265
    embedding_dim: int = 768
    ffn_dimension: int = 3072
    padding_idx: int = 1
    max_seq_len: int = 514
    num_attention_heads: int = 12
    num_encoder_layers: int = 12
    dropout: float = 0.1
    scaling: float | None = None
    normalize_before: bool = False


class RobertaEncoder(nn.Module):
    """Token and position embeddings, a LayerNorm, dropout, and the transformer layers.

    forward(tokens) with tokens (batch, length) gives (batch, length, embedding_dim); padding
    (tokens equal to padding_idx) is masked out of attention, and skipped by the fast path."""

    def __init__(self, vocab_size: int, embedding_dim: int, ffn_dimension: int, padding_idx: int, max_seq_len: int,
                 num_attention_heads: int, num_encoder_layers: int, dropout: float = 0.1,
                 scaling: float | None = None, normalize_before: bool = False, freeze: bool = False) -> None:
        super().__init__()
        if embedding_dim % num_attention_heads:
            raise ValueError(f"embedding_dim {embedding_dim} is not divisible by num_attention_heads "
                             f"{num_attention_heads}")
        if scaling is not None and abs(scaling - (embedding_dim // num_attention_heads) ** -0.5) > 1e-12:
            raise ValueError("scaling other than 1/sqrt(head_dim) is not supported by the fused attention")
        self.padding_idx = padding_idx
        self.normalize_before = normalize_before
        self.token_embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=padding_idx)
        self.positional_embedding = PositionalEmbedding(max_seq_len, embedding_dim, padding_idx)
        self.embedding_layer_norm = nn.LayerNorm(embedding_dim)
        self.dropout = nn.Dropout(dropout)
        self.layers = _stack(embedding_dim, num_attention_heads, ffn_dimension, dropout, num_encoder_layers, 1e-5,
                             normalize_before)
        if freeze:
            for p in self.parameters():
                p.requires_grad_(False)

    def forward(self, tokens: ember.Tensor) -> ember.Tensor:
        _check_tokens(tokens, "RobertaEncoder")
        padding = tokens.eq(self.padding_idx)
        x = self.token_embedding(tokens) + self.positional_embedding(tokens)
        if not self.normalize_before:
            x = self.embedding_layer_norm(x)
        x = self.dropout(x)
        x = self.layers(x, src_key_padding_mask=padding)
        if self.normalize_before:
            x = self.embedding_layer_norm(x)
        return x


class RobertaClassificationHead(nn.Module):
    """The first token's features -> dropout -> dense -> activation -> dropout -> classes."""

    def __init__(self, num_classes: int, input_dim: int, inner_dim: int | None = None, dropout: float = 0.1,
                 activation=nn.ReLU) -> None:
        super().__init__()
        inner_dim = inner_dim or input_dim
        self.dense = nn.Linear(input_dim, inner_dim)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(inner_dim, num_classes)
        self.activation_fn = activation()

    def forward(self, features: ember.Tensor) -> ember.Tensor:
        x = self.dropout(features[:, 0, :])
        x = self.activation_fn(self.dense(x))
        return self.out_proj(self.dropout(x))


class RobertaModel(nn.Module):
    """A RobertaEncoder, optionally followed by a head: forward(tokens) gives the encoder's
    features, or the head's output on them."""

    def __init__(self, encoder_conf: RobertaEncoderConf, head: nn.Module | None = None,
                 freeze_encoder: bool = False) -> None:
        super().__init__()
        if not isinstance(encoder_conf, RobertaEncoderConf):
            raise TypeError(f"encoder_conf must be a RobertaEncoderConf, but got {type(encoder_conf).__name__}")
        self.encoder = RobertaEncoder(**vars(encoder_conf), freeze=freeze_encoder)
        self.head = head

    def forward(self, tokens: ember.Tensor) -> ember.Tensor:
        features = self.encoder(tokens)
        return features if self.head is None else self.head(features)


@dataclass
class BertEncoderConf:
    """A BERT encoder's sizes (bert-base by default; all-MiniLM-L6-v2 is 384/1536/12 heads/6 layers)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    intermediate_size: int = 3072
    num_attention_heads: int = 12
    num_hidden_layers: int = 12
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    dropout: float = 0.1
    pad_token_id: int = 0


class BertEncoder(nn.Module):
    """BERT: word + position + token-type embeddings, LayerNorm, then post-norm GELU layers.

    forward(input_ids, attention_mask=None, token_type_ids=None) gives the last hidden states
    (batch, length, hidden_size). attention_mask (1 real, 0 padding) defaults to input_ids !=
    pad_token_id; padded positions are masked (and skipped on the fast path)."""

    def __init__(self, conf: BertEncoderConf | None = None) -> None:
        super().__init__()
        conf = conf or BertEncoderConf()
        if not isinstance(conf, BertEncoderConf):
            raise TypeError(f"conf must be a BertEncoderConf, but got {type(conf).__name__}")
        if conf.hidden_size % conf.num_attention_heads:
            raise ValueError(f"hidden_size {conf.hidden_size} is not divisible by num_attention_heads "
                             f"{conf.num_attention_heads}")
        self.conf = conf
        self.word_embeddings = nn.Embedding(conf.vocab_size, conf.hidden_size, padding_idx=conf.pad_token_id)
        self.position_embeddings = nn.Embedding(conf.max_position_embeddings, conf.hidden_size)
        self.token_type_embeddings = nn.Embedding(conf.type_vocab_size, conf.hidden_size)
        self.embedding_layer_norm = nn.LayerNorm(conf.hidden_size, eps=conf.layer_norm_eps)
        self.dropout = nn.Dropout(conf.dropout)
        self.layers = _stack(conf.hidden_size, conf.num_attention_heads, conf.intermediate_size, conf.dropout,
                             conf.num_hidden_layers, conf.layer_norm_eps, norm_first=False)

    def forward(self, input_ids: ember.Tensor, attention_mask: ember.Tensor | None = None,
                token_type_ids: ember.Tensor | None = None) -> ember.Tensor:
        _check_tokens(input_ids, "BertEncoder")
        batch, length = input_ids.shape
        if length > self.conf.max_position_embeddings:
            raise ValueError(f"sequence of {length} tokens is longer than the model's "
                             f"{self.conf.max_position_embeddings} positions")
        if attention_mask is None:
            attention_mask = input_ids.ne(self.conf.pad_token_id)
        elif tuple(attention_mask.shape) != (batch, length):
            raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, expected {(batch, length)}")
        if token_type_ids is None:
            token_type_ids = ember.zeros(batch, length, dtype=ember.int64)
        positions = ember.arange(length, dtype=ember.int64).unsqueeze(0).expand(batch, length)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions) \
            + self.token_type_embeddings(token_type_ids)
        x = self.dropout(self.embedding_layer_norm(x))
        return self.layers(x, src_key_padding_mask=attention_mask.eq(0))


def mean_pooling(hidden: ember.Tensor, attention_mask: ember.Tensor) -> ember.Tensor:
    """The mean of each sequence's real-token states (sentence-transformers' pooling)."""
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
