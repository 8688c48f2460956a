"""ember.nn.utils: gradient clipping, parameter/vector conversion, stateless.functional_call,
parametrizations (weight_norm, spectral_norm), rnn (packed sequences), conv/linear + batch-norm
fusion, pruning (prune), the hook-based weight_norm / spectral_norm, skip_init and the conv weight
memory-format conversions."""

from ..modules import utils as _modules_utils  # noqa: F401 - binds ember.nn.modules.utils, as torch's import does
from . import memory_format, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["stateless", "rnn", "parametrize", "parametrizations", "prune", "memory_format", "clip_grad_norm",
           "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format", "spectral_norm", "remove_spectral_norm", "weight_norm",
           "remove_weight_norm"]
