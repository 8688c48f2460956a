"""Transformer, TransformerEncoder(Layer) and TransformerDecoder(Layer) (torch.nn's names,
arguments, submodule names and state-dict keys). In eval mode without autograd the encoder
layers take the fused path of nn/_fast_path.py; `why_not_fast_path` on a layer or encoder says
why its last call did not."""

from __future__ import annotations

import copy
import warnings

from ... import _C
from .. import _fast_path, init
from .. import functional as F
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _relu_or_gelu(activation) -> int:
    """1 for ReLU, 2 for (exact) GELU, 0 otherwise: the activations the fused path knows."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or (isinstance(activation, GELU) and activation.approximate == "none"):
        return 2
    return 0


def _causal_mask(size: int, dtype=None):
    return _C.triu(_C.full([size, size], float("-inf"), dtype=dtype or _C.get_default_dtype()), 1)


def _detect_is_causal(mask, is_causal, size=None) -> bool:
    """is_causal, or (when None) whether `mask` is exactly the square causal mask."""
    if is_causal is None and mask is not None:
        size = size if size is not None else mask.shape[-2]
        if tuple(mask.shape[-2:]) != (size, size):
            return False
        causal = _C.logical_not(_C.tril(_C.ones([size, size], dtype=_C.bool))) if mask.dtype == _C.bool \
            else _causal_mask(size, mask.dtype)
        return bool(_C.all(_C.eq(mask, causal)))
    return bool(is_causal)


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and LayerNorm (after the
    block, or before it with norm_first)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None) -> None:
        super().__init__()
        kwargs = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **kwargs)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kwargs)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kwargs)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kwargs)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kwargs)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation_fn(activation)
        self.activation_relu_or_gelu = _relu_or_gelu(self.activation)
        self.why_not_fast_path = "forward has not run"

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        reason = _fast_path.layer_reason(self, src, src_mask, src_key_padding_mask)
        self.why_not_fast_path = reason
        if not reason:
            return _fast_path.run_layer(self, src, src_key_padding_mask)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, then a feed-forward block, each
    with a residual and LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None) -> None:
        super().__init__()
        kwargs = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **kwargs)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kwargs)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kwargs)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kwargs)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kwargs)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kwargs)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kwargs)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer, then an optional norm. With
    enable_nested_tensor and a src_key_padding_mask, inference runs on the real tokens only."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check  # packing keeps any padding pattern, so no alignment is required
        why = self._nested_structure_reason(encoder_layer)
        self.use_nested_tensor = enable_nested_tensor and not why
        self.why_not_sparsity_fast_path = why
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why}",
                          stacklevel=2)
        self.why_not_fast_path = "forward has not run"

    def _nested_structure_reason(self, layer) -> str:
        if not isinstance(layer, TransformerEncoderLayer):
            return f"{type(layer).__name__} is not a TransformerEncoderLayer"
        if self.num_layers == 0:
            return "num_layers is 0"
        if self.norm is not None and not (isinstance(self.norm, LayerNorm) and self.norm.elementwise_affine
                                          and self.norm.bias is not None):
            return "norm is not a LayerNorm with weight and bias"
        return _fast_path.structure_reason(layer)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        if src_key_padding_mask is not None and src_key_padding_mask.dtype != _C.bool \
                and not src_key_padding_mask.is_floating_point():
            raise AssertionError("only bool and floating types of src_key_padding_mask are supported")
        reason = self._nested_reason(src, mask, src_key_padding_mask)
        self.why_not_fast_path = reason
        if not reason:
            return _fast_path.run_encoder(self, src, src_key_padding_mask)
        first = self.layers[0] if self.num_layers else None
        length = src.shape[1 if first is not None and first.self_attn.batch_first and src.dim() == 3 else 0]
        is_causal = _detect_is_causal(mask, is_causal, length)
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        return out if self.norm is None else self.norm(out)

    def _nested_reason(self, src, mask, key_padding_mask) -> str:
        if not self.use_nested_tensor:
            return f"use_nested_tensor is False: {self.why_not_sparsity_fast_path or 'enable_nested_tensor is False'}"
        if key_padding_mask is None:
            return "src_key_padding_mask was None"
        for layer in self.layers:
            reason = _fast_path.layer_reason(layer, src, mask, key_padding_mask)
            if reason:
                return reason
        return ""


class TransformerDecoder(Module):
    """num_layers deep copies of decoder_layer, then an optional norm."""

    def __init__(self, decoder_layer, num_layers, norm=None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        first = self.layers[0] if self.num_layers else None
        length = tgt.shape[1 if first is not None and first.self_attn.batch_first and tgt.dim() == 3 else 0]
        tgt_is_causal = _detect_is_causal(tgt_mask, tgt_is_causal, length)
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """An encoder-decoder transformer ("Attention Is All You Need"): src -> encoder -> memory;
    tgt and memory -> decoder -> output [T, N, d_model] ([N, T, d_model] with batch_first)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None) -> None:
        super().__init__()
        kwargs = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **kwargs)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kwargs),
                                              enable_nested_tensor=False)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **kwargs)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kwargs))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batched = src.dim() == 3
        if not self.batch_first and src.shape[1] != tgt.shape[1] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.shape[0] != tgt.shape[0] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """[sz, sz] float mask: -inf above the diagonal (future positions), 0 elsewhere."""
        return _causal_mask(sz, dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
