"""MultiheadAttention (torch.nn.MultiheadAttention): parameters, initialization, repr and
masks as PyTorch's; in eval mode without autograd, self-attention takes the fused inference
path of nn/_fast_path.py, and `why_not_fast_path` says why a call did not."""

from __future__ import annotations

from ... import _C
from .. import _fast_path, init
from .. import functional as F
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention from query [L, N, E] to key/value [S, N, kdim/vdim] over num_heads heads of
    embed_dim // num_heads features ([N, L, E] with batch_first)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_C.zeros([3 * embed_dim, embed_dim], **kwargs))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(_C.zeros([embed_dim, embed_dim], **kwargs))
            self.k_proj_weight = Parameter(_C.zeros([embed_dim, self.kdim], **kwargs))
            self.v_proj_weight = Parameter(_C.zeros([embed_dim, self.vdim], **kwargs))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_C.zeros([3 * embed_dim], **kwargs))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kwargs)
        if add_bias_kv:
            self.bias_k = Parameter(_C.zeros([1, 1, embed_dim], **kwargs))
            self.bias_v = Parameter(_C.zeros([1, 1, embed_dim], **kwargs))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self.why_not_fast_path = "forward has not run"
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """(output, weights): weights [N, L, S] (head-averaged) or [N, H, L, S] when
        need_weights, else None. Masks: bool (True = may not attend) or additive float."""
        reason = _fast_path.attention_reason(self, query, key, value, need_weights, attn_mask, key_padding_mask)
        self.why_not_fast_path = reason
        if not reason:
            return _fast_path.self_attention(self, query, key_padding_mask), None
        if self.batch_first and query.dim() == 3:
            query, key, value = (_C.transpose(t, 0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and query.dim() == 3:
            out = _C.transpose(out, 0, 1)
        return out, weights


# PyTorch defines MultiheadAttention in nn.modules.activation, and pickles of whole models name
# it there: the class lives under that name too, so such pickles resolve in both libraries.
from . import activation as _activation  # noqa: E402 - after the class it aliases

MultiheadAttention.__module__ = _activation.__name__
_activation.MultiheadAttention = MultiheadAttention
