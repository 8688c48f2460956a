"""ember.ao (torch.ao): quantization-aware training's float half; see ember.ao.quantization."""

from . import nn, quantization

__all__ = ["nn", "quantization"]
