"""PyTorch's module for ChannelShuffle (nn.modules.channelshuffle), where pickles of whole models
name it; Ember defines it in pixelshuffle.py."""

from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]

ChannelShuffle.__module__ = __name__
