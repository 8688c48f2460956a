"""The torch.nn.functional entries PyTorch 2.13 runs on a nested tensor, taking one of either
layout (ember.nn.functional's own functions take only ember.Tensor: NestedTensor does not define __torch_function__).
scaled_dot_product_attention takes jagged-layout ones."""

from ._jagged import scaled_dot_product_attention
from ._tensor import dropout, gelu, layer_norm, linear, log_softmax, relu, sigmoid, silu, softmax, tanh

__all__ = ["dropout", "gelu", "layer_norm", "linear", "log_softmax", "relu", "scaled_dot_product_attention", "sigmoid",
           "silu", "softmax", "tanh"]
