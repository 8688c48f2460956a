"""The torch.nn.functional entries PyTorch 2.13 runs on a strided nested tensor, taking one
(ember.nn.functional's own functions take only ember.Tensor: Ember has no __torch_function__)."""

from ._tensor import dropout, gelu, layer_norm, linear, relu, silu, softmax, tanh

__all__ = ["dropout", "gelu", "layer_norm", "linear", "relu", "silu", "softmax", "tanh"]
