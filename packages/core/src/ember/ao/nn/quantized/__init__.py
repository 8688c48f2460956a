"""ember.ao.nn.quantized (torch.ao.nn.quantized): modules over quantized tensors (the LSTM and the
MultiheadAttention among them, converted from observed quantizable ones); the dynamically quantized
ones in .dynamic."""

from . import dynamic, functional
from .activation import MultiheadAttention
from .batchnorm import BatchNorm2d, BatchNorm3d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .embedding_ops import Embedding, EmbeddingBag, EmbeddingPackedParams
from .modules import (
    Conv1d,
    Conv2d,
    Conv3d,
    DeQuantize,
    Dropout,
    FloatFunctional,
    FXFloatFunctional,
    Hardswish,
    Linear,
    QFunctional,
    Quantize,
    ReLU6,
)
from .more_modules import ELU, LeakyReLU, PReLU, Sigmoid, Softmax
from .normalization import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm
from .rnn import LSTM

__all__ = ["BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "DeQuantize", "Dropout", "ELU", "Embedding",
           "EmbeddingBag", "EmbeddingPackedParams", "FXFloatFunctional", "FloatFunctional", "GroupNorm", "Hardswish",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LSTM", "LayerNorm", "LeakyReLU", "Linear",
           "MultiheadAttention", "PReLU", "QFunctional", "Quantize", "ReLU6", "Sigmoid", "Softmax", "dynamic",
           "functional"]
