"""Converters from the public safetensors layout (Hugging Face's BERT and RoBERTa checkpoints,
``model.safetensors``) to the state dicts of BertEncoder and RobertaModel. Files are read with
ember.load, which never executes anything in them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import ember

_LAYER = re.compile(r"^encoder\.layer\.(\d+)\.(.+)$")

# Per-layer names: public layout -> ours (inside layers.layers.<i>.)
_LAYER_NAMES = {
    "attention.output.dense.weight": "self_attn.out_proj.weight",
    "attention.output.dense.bias": "self_attn.out_proj.bias",
    "attention.output.LayerNorm.weight": "norm1.weight",
    "attention.output.LayerNorm.bias": "norm1.bias",
    "intermediate.dense.weight": "linear1.weight",
    "intermediate.dense.bias": "linear1.bias",
    "output.dense.weight": "linear2.weight",
    "output.dense.bias": "linear2.bias",
    "output.LayerNorm.weight": "norm2.weight",
    "output.LayerNorm.bias": "norm2.bias",
}
_QKV = ("query", "key", "value")


def _tensors(source: Mapping[str, ember.Tensor] | str | os.PathLike) -> dict[str, ember.Tensor]:
    if isinstance(source, (str, os.PathLike)):
        loaded = ember.load(os.fspath(source))
        if not isinstance(loaded, Mapping):
            raise ValueError(f"{os.fspath(source)!r} does not hold a dict of tensors")
        source = loaded
    out = {}
    for k, v in source.items():
        # TF-era checkpoints call LayerNorm's parameters gamma and beta.
        out[k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")] = v
    return out


def _strip_prefix(tensors: dict[str, ember.Tensor], prefix: str) -> dict[str, ember.Tensor]:
    if any(k.startswith(prefix) for k in tensors):
        return {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in tensors.items()}
    return tensors


def _layers(tensors: dict[str, ember.Tensor], target: str) -> tuple[dict[str, ember.Tensor], set[str]]:
    """The encoder layers' tensors under our names (Q, K and V stacked into in_proj)."""
    out: dict[str, ember.Tensor] = {}
    used: set[str] = set()
    indices = sorted({int(m.group(1)) for k in tensors if (m := _LAYER.match(k))})
    for i in indices:
        src, dst = f"encoder.layer.{i}.", f"{target}.layers.{i}."
        for kind in ("weight", "bias"):
            names = [f"{src}attention.self.{p}.{kind}" for p in _QKV]
            missing = [n for n in names if n not in tensors]
            if missing:
                raise ValueError(f"the checkpoint lacks {missing[0]!r}")
            out[f"{dst}self_attn.in_proj_{kind}"] = ember.cat([tensors[n] for n in names], 0)
            used.update(names)
        for theirs, ours in _LAYER_NAMES.items():
            name = src + theirs
            if name not in tensors:
                raise ValueError(f"the checkpoint lacks {name!r}")
            out[dst + ours] = tensors[name]
            used.add(name)
    if not indices:
        raise ValueError("the checkpoint has no encoder.layer.<i>.* tensors: not a BERT/RoBERTa layout")
    return out, used


def _take(tensors: dict[str, ember.Tensor], name: str, used: set[str]) -> ember.Tensor:
    if name not in tensors:
        raise ValueError(f"the checkpoint lacks {name!r}")
    used.add(name)
    return tensors[name]


def bert_state_dict_from_hf(source: Mapping[str, ember.Tensor] | str | os.PathLike) -> dict[str, ember.Tensor]:
    """A BertEncoder state dict from a Hugging Face BERT checkpoint (a path to its
    model.safetensors, or the tensors). A leading ``bert.`` is dropped; the pooler and any
    task heads are left out."""
    tensors = _strip_prefix(_tensors(source), "bert.")
    out, used = _layers(tensors, "layers")
    out["word_embeddings.weight"] = _take(tensors, "embeddings.word_embeddings.weight", used)
    out["position_embeddings.weight"] = _take(tensors, "embeddings.position_embeddings.weight", used)
    out["token_type_embeddings.weight"] = _take(tensors, "embeddings.token_type_embeddings.weight", used)
    out["embedding_layer_norm.weight"] = _take(tensors, "embeddings.LayerNorm.weight", used)
    out["embedding_layer_norm.bias"] = _take(tensors, "embeddings.LayerNorm.bias", used)
    return out


def bert_conf_from_state_dict(state: Mapping[str, ember.Tensor], num_attention_heads: int, **overrides):
    """The BertEncoderConf that fits a converted state dict (head count is not in the tensors)."""
    from embertext.models._encoder import BertEncoderConf

    vocab, hidden = state["word_embeddings.weight"].shape
    layers = len({k.split(".")[2] for k in state if k.startswith("layers.layers.")})
    return BertEncoderConf(
        vocab_size=vocab, hidden_size=hidden,
        intermediate_size=state["layers.layers.0.linear1.weight"].shape[0],
        num_attention_heads=num_attention_heads, num_hidden_layers=layers,
        max_position_embeddings=state["position_embeddings.weight"].shape[0],
        type_vocab_size=state["token_type_embeddings.weight"].shape[0], **overrides)


def roberta_state_dict_from_hf(source: Mapping[str, ember.Tensor] | str | os.PathLike) -> dict[str, ember.Tensor]:
    """A RobertaModel state dict from a Hugging Face RoBERTa/XLM-R checkpoint. Their single
    token-type embedding is added to every position embedding (each token gets exactly one of
    each, so the sum is unchanged); a ``classifier.*`` head becomes ``head.*``."""
    tensors = _strip_prefix(_strip_prefix(_tensors(source), "roberta."), "model.")
    layers, used = _layers(tensors, "encoder.layers")
    out = {k: v for k, v in layers.items()}
    out["encoder.token_embedding.weight"] = _take(tensors, "embeddings.word_embeddings.weight", used)
    positions = _take(tensors, "embeddings.position_embeddings.weight", used)
    if "embeddings.token_type_embeddings.weight" in tensors:
        token_type = _take(tensors, "embeddings.token_type_embeddings.weight", used)
        if token_type.shape[0] != 1:
            raise ValueError(f"RoBERTa checkpoints have 1 token type, this one has {token_type.shape[0]}")
        positions = positions + token_type[0]
    out["encoder.positional_embedding.embedding.weight"] = positions
    out["encoder.embedding_layer_norm.weight"] = _take(tensors, "embeddings.LayerNorm.weight", used)
    out["encoder.embedding_layer_norm.bias"] = _take(tensors, "embeddings.LayerNorm.bias", used)
    for theirs, ours in (("classifier.dense", "head.dense"), ("classifier.out_proj", "head.out_proj")):
        for kind in ("weight", "bias"):
            if f"{theirs}.{kind}" in tensors:
                out[f"{ours}.{kind}"] = _take(tensors, f"{theirs}.{kind}", used)
    return out
