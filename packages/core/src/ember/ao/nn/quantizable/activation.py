"""The quantizable MultiheadAttention (torch.ao.nn.quantizable.MultiheadAttention): the projections
as separate Linear layers (linear_Q, linear_K, linear_V, out_proj) and the query scaling as a
FloatFunctional, so prepare observes each; the attention itself runs in float between DeQuantStubs
(dequant_q/k/v) and QuantStubs (quant_attn_output, quant_attn_output_weights):

    q, k, v = linear_Q(query), linear_K(key), linear_V(value)
    q = q_scaling_product.mul_scalar(q, head_dim ** -0.5)
    weights = softmax(dequant_q(q) @ dequant_k(k)^T + masks)       per head, in float
    output = out_proj(quant_attn_output(weights @ dequant_v(v)))
"""

from __future__ import annotations

import warnings

from .... import _C
from ....autograd.grad_mode import no_grad
from ....nn import functional as F
from ....nn import modules as _nn
from ....nn.parameter import Parameter
from ..quantized.modules import FloatFunctional

__all__ = ["MultiheadAttention"]


class MultiheadAttention(_nn.MultiheadAttention):
    """nn.MultiheadAttention's constructor and forward through observable parts (module docstring).
    is_causal is refused, as PyTorch's quantizable module refuses it."""

    _output_is_not_one_tensor = True  # prepare puts no output observer on it (ao.quantization.quantize)

    _FLOAT_MODULE = _nn.MultiheadAttention

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None) -> None:
        from ...quantization.stubs import DeQuantStub, QuantStub

        super().__init__(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim, batch_first,
                         device=device, dtype=dtype)
        kwargs = {"device": device, "dtype": dtype}
        self.linear_Q = _nn.Linear(self.embed_dim, self.embed_dim, bias=bias, **kwargs)
        self.linear_K = _nn.Linear(self.kdim, self.embed_dim, bias=bias, **kwargs)
        self.linear_V = _nn.Linear(self.vdim, self.embed_dim, bias=bias, **kwargs)
        self.out_proj = _nn.Linear(self.embed_dim, self.embed_dim, bias=bias, **kwargs)
        self.q_scaling_product = FloatFunctional()
        self.quant_attn_output = QuantStub()
        self.quant_attn_output_weights = QuantStub()
        self.dequant_q = DeQuantStub()
        self.dequant_k = DeQuantStub()
        self.dequant_v = DeQuantStub()

    def _get_name(self) -> str:
        return "QuantizableMultiheadAttention"

    @classmethod
    def from_float(cls, other):
        """The observed twin of an nn.MultiheadAttention with a qconfig: its packed or separate
        projection weights split into linear_Q/K/V, then prepared (observers attached)."""
        import ember  # ember.ao.quantization imports this package (its default custom config)

        if type(other) is not cls._FLOAT_MODULE:
            raise AssertionError(f"Expected type {cls._FLOAT_MODULE.__name__}, got {type(other).__name__}")
        if not hasattr(other, "qconfig"):
            raise AssertionError("The float module must have 'qconfig'")
        observed = cls(other.embed_dim, other.num_heads, other.dropout, other.in_proj_bias is not None,
                       other.bias_k is not None, other.add_zero_attn, other.kdim, other.vdim, other.batch_first)
        observed.bias_k = other.bias_k
        observed.bias_v = other.bias_v
        observed.qconfig = other.qconfig
        observed.out_proj.weight = other.out_proj.weight
        observed.out_proj.bias = other.out_proj.bias
        e = other.embed_dim
        if other._qkv_same_embed_dim:
            weights = [other.in_proj_weight[i * e:(i + 1) * e, :] for i in range(3)]
        else:
            weights = [other.q_proj_weight, other.k_proj_weight, other.v_proj_weight]
        for i, linear in enumerate((observed.linear_Q, observed.linear_K, observed.linear_V)):
            linear.weight = Parameter(weights[i], weights[i].requires_grad)
            if other.in_proj_bias is None:
                linear.bias = None
            else:
                bias = other.in_proj_bias[i * e:(i + 1) * e]
                linear.bias = Parameter(bias, other.in_proj_bias.requires_grad)
        observed.eval()
        return ember.ao.quantization.prepare(observed, inplace=True)

    @classmethod
    def from_observed(cls, other):
        raise NotImplementedError("It looks like you are trying to prepare an MHA module. Please, see the examples on "
                                  "quantizable MHAs.")

    def dequantize(self):
        """The float nn.MultiheadAttention this module computes: its projections (float Linear layers,
        or quantized ones read back through dequantize()) packed as nn.MultiheadAttention keeps them."""

        def weight_bias(linear):
            if callable(getattr(linear, "weight", None)):  # a quantized Linear: weight() and bias()
                w, b = linear.weight().dequantize(), linear.bias()
            else:
                w, b = linear.weight, linear.bias
            return w.detach(), None if b is None else b.detach()

        bias = weight_bias(self.linear_Q)[1] is not None
        # nn.MultiheadAttention itself, also for the quantized subclass (whose _FLOAT_MODULE is this class)
        fp = _nn.MultiheadAttention(self.embed_dim, self.num_heads, self.dropout, bias, self.bias_k is not None,
                                    self.add_zero_attn, self.kdim, self.vdim, self.batch_first)
        with no_grad():
            if self.bias_k is not None:
                fp.bias_k = Parameter(_dequantized(self.bias_k).detach())
                fp.bias_v = Parameter(_dequantized(self.bias_v).detach())
            w, b = weight_bias(self.out_proj)
            fp.out_proj.weight = Parameter(w)
            if b is not None:
                fp.out_proj.bias = Parameter(b)
            e = self.embed_dim
            names = ("q_proj_weight", "k_proj_weight", "v_proj_weight")
            for i, linear in enumerate((self.linear_Q, self.linear_K, self.linear_V)):
                w, b = weight_bias(linear)
                if fp._qkv_same_embed_dim:
                    fp.in_proj_weight[i * e:(i + 1) * e, :] = w
                else:
                    setattr(fp, names[i], Parameter(w))
                if fp.in_proj_bias is not None:
                    fp.in_proj_bias[i * e:(i + 1) * e] = b
        return fp

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        """(attn_output, attn_output_weights) as nn.MultiheadAttention.forward (3-D inputs); the
        weights [N, L, S] averaged over heads, [N, H, L, S] otherwise, None without need_weights."""
        if attn_mask is not None and is_causal:
            raise AssertionError("Only allow causal mask or attn_mask")
        if is_causal:
            raise AssertionError("causal mask not supported by AO MHA module")
        if self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        tgt_len, bsz, embed_dim = query.shape
        if embed_dim != self.embed_dim:
            raise AssertionError(f"embed_dim mismatch: {self.embed_dim} != {embed_dim}")
        if key.shape[0] != value.shape[0] or key.shape[1] != value.shape[1]:
            raise AssertionError(f"key and value size mismatch: key.size()={tuple(key.shape)}, "
                                 f"value.size()={tuple(value.shape)}")
        heads = self.num_heads
        head_dim = self.embed_dim // heads
        q = self.q_scaling_product.mul_scalar(self.linear_Q(query), float(head_dim) ** -0.5)
        k = self.linear_K(key)
        v = self.linear_V(value)
        attn_mask = self._check_attn_mask(attn_mask, tgt_len, key.shape[0], bsz)
        if key_padding_mask is not None and key_padding_mask.dtype == _C.uint8:
            warnings.warn("Byte tensor for `key_padding_mask` in `nn.MultiheadAttention` is deprecated. Use bool "
                          "tensor instead.", stacklevel=2)
            key_padding_mask = key_padding_mask.to(_C.bool)
        if (self.bias_k is None) != (self.bias_v is None):
            raise AssertionError("bias_k and bias_v must both be set or both be None")
        if self.bias_k is not None:
            k = _C.cat([k, self.bias_k.repeat(1, bsz, 1)])
            v = _C.cat([v, self.bias_v.repeat(1, bsz, 1)])
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        q = q.contiguous().reshape(tgt_len, bsz * heads, head_dim).transpose(0, 1)
        k = k.contiguous().reshape(-1, bsz * heads, head_dim).transpose(0, 1)
        v = v.contiguous().reshape(-1, bsz * heads, head_dim).transpose(0, 1)
        src_len = k.shape[1]
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"key_padding_mask must have shape {(bsz, src_len)}, got "
                                 f"{tuple(key_padding_mask.shape)}")
        if self.add_zero_attn:
            src_len += 1
            k = _C.cat([k, _zeros_like_column(k)], 1)
            v = _C.cat([v, _zeros_like_column(v)], 1)
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        q, k, v = self.dequant_q(q), self.dequant_k(k), self.dequant_v(v)
        weights = _C.bmm(q, k.transpose(1, 2))
        if attn_mask is not None:
            weights = weights.masked_fill(attn_mask, float("-inf")) if attn_mask.dtype == _C.bool \
                else weights + attn_mask
        if key_padding_mask is not None:
            weights = weights.reshape(bsz, heads, tgt_len, src_len)
            weights = weights.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2), float("-inf"))
            weights = weights.reshape(bsz * heads, tgt_len, src_len)
        weights = F.softmax(weights, dim=-1)
        weights = F.dropout(weights, p=self.dropout, training=self.training)
        out = _C.bmm(weights, v)
        out = out.transpose(0, 1).contiguous().reshape(tgt_len, bsz, self.embed_dim)
        out = self.out_proj(self.quant_attn_output(out))
        if self.batch_first:
            out = out.transpose(0, 1)
        weights = self.quant_attn_output_weights(weights)
        if not need_weights:
            return out, None
        weights = weights.reshape(bsz, heads, tgt_len, src_len)
        return out, weights.mean(dim=1) if average_attn_weights else weights

    def _check_attn_mask(self, attn_mask, tgt_len: int, src_len: int, bsz: int):
        if attn_mask is None:
            return None
        if attn_mask.dtype == _C.uint8:
            warnings.warn("Byte tensor for `attn_mask` in `nn.MultiheadAttention` is deprecated. Use bool tensor "
                          "instead.", stacklevel=3)
            attn_mask = attn_mask.to(_C.bool)
        if not attn_mask.is_floating_point() and attn_mask.dtype != _C.bool:
            raise AssertionError(f"Only float and bool types are supported for attn_mask, not {attn_mask.dtype}")
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError("The size of the 2D attn_mask is not correct.")
            return attn_mask.unsqueeze(0)
        if attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * self.num_heads, tgt_len, src_len):
                raise RuntimeError("The size of the 3D attn_mask is not correct.")
            return attn_mask
        raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _dequantized(t):
    return t.dequantize() if t.is_quantized else t


def _zeros_like_column(t):
    """[B, 1, D] zeros to append along dim 1 (add_zero_attn), quantized as t is."""
    from ...._quantized import quantize_per_tensor

    zeros = _C.zeros([t.shape[0], 1, *t.shape[2:]])
    return quantize_per_tensor(zeros, t.q_scale(), t.q_zero_point(), t.dtype) if t.is_quantized else zeros
