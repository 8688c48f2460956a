"""The quantized MultiheadAttention (torch.ao.nn.quantized.MultiheadAttention): the quantizable
MultiheadAttention (ember.ao.nn.quantizable) converted. Its projections are quantized Linear
layers, the query scaling a QFunctional.mul_scalar, the stubs Quantize / DeQuantize; the attention
itself (bmm, masks, softmax) still runs in float between them, and the returned weights are
quantized (quant_attn_output_weights), averaged over the heads by the quantized mean.

The flow is PyTorch's: prepare swaps nn.MultiheadAttention for the observed quantizable one (the
default custom-module config), calibration feeds its observers, convert calls from_observed. There
is no float -> quantized shortcut: from_float raises."""

from __future__ import annotations

from .... import _C
from ..quantizable.activation import MultiheadAttention as _QuantizableMultiheadAttention

__all__ = ["MultiheadAttention"]


class MultiheadAttention(_QuantizableMultiheadAttention):
    """A quantized MultiheadAttention (module docstring): the quantizable module's forward over
    quantized tensors. bias_k / bias_v (add_bias_kv) are quantized ember.quint8 tensors held as
    plain attributes, so, as in PyTorch, they are not in the state dict; in_proj_weight and
    in_proj_bias are removed (the weights live in linear_Q/K/V)."""

    _FLOAT_MODULE = _QuantizableMultiheadAttention

    def _get_name(self) -> str:
        return "QuantizedMultiheadAttention"

    @classmethod
    def from_float(cls, other):
        # The whole flow is float -> observed -> quantized; this class does observed -> quantized only
        raise NotImplementedError("It looks like you are trying to convert a non-observed MHA module. Please, see the "
                                  "examples on quantizable MHAs.")

    @classmethod
    def from_observed(cls, other):
        """The quantized twin of an observed (prepared and calibrated) quantizable MultiheadAttention:
        a converted copy, its qconfigs removed. bias_k is quantized over its own range (ember.quint8,
        PyTorch's _choose_qparams_per_tensor); bias_v, as PyTorch does, with the parameters chosen
        over the quantized bias_k's values, not its own."""
        import ember  # ember.ao.quantization imports this package

        if not isinstance(other, cls._FLOAT_MODULE):
            raise AssertionError(f"Expected module type {cls._FLOAT_MODULE}, got {type(other)}")
        converted = ember.ao.quantization.convert(other, mapping=None, inplace=False, remove_qconfig=True,
                                                  convert_custom_config_dict=None)
        converted.__class__ = cls
        bias_k = None
        if converted.bias_k is not None:
            bias_k = _C.quantize_per_tensor_dynamic(converted._parameters.pop("bias_k").detach(), _C.quint8, False)
            converted.bias_k = bias_k
        if converted.bias_v is not None:
            bias_v = converted._parameters.pop("bias_v").detach()
            if bias_k is None:  # PyTorch reads bias_k's range here; nn.MultiheadAttention sets both or neither
                raise AssertionError("bias_k and bias_v must both be set or both be None")
            chosen = _C.quantize_per_tensor_dynamic(bias_k.dequantize(), _C.quint8, False)
            converted.bias_v = _C.quantize_per_tensor(bias_v, chosen.q_scale(), chosen.q_zero_point(), _C.quint8)
        del converted.in_proj_weight
        del converted.in_proj_bias
        return converted
