"""ember.nn.functional (torch.nn.functional): the functions the layers call.

linear, batch_norm, the convolutions, pooling and the losses are written with Ember's registered
ops (matmul, einsum, unfold, mean, var, log_softmax, ...), so they differentiate in every mode and
batch under vmap through those ops' derivatives and batching rules. Fused kernels for them belong
to the neural-network kernels of issue "Core runtime II"; until then these compositions are the
implementation. The activations are the registered ops.

Each family has a module of its own, and the helpers they share live in _functional_utils; this
module only gathers their names, as torch.nn.functional's namespace. The dependency points one
way: the family modules never import this one.
"""

from __future__ import annotations

from . import (
    _activation,
    _attention,
    _conv,
    _distance,
    _dropout,
    _embedding,
    _functional_more,
    _grouped_mm,
    _linear,
    _linear_cross_entropy,
    _loss,
    _normalization,
    _padding,
    _pooling,
    _resampling,
    grad,  # noqa: F401 - F.grad is nn.grad, as in PyTorch
)
from ._activation import *  # noqa: F403
from ._attention import *  # noqa: F403
from ._conv import *  # noqa: F403
from ._ctc_loss import ctc_loss
from ._distance import *  # noqa: F403
from ._dropout import *  # noqa: F403
from ._embedding import *  # noqa: F403
from ._functional_more import *  # noqa: F403
from ._grouped_mm import *  # noqa: F403
from ._linear import *  # noqa: F403
from ._linear_cross_entropy import *  # noqa: F403
from ._loss import *  # noqa: F403
from ._normalization import *  # noqa: F403
from ._padding import *  # noqa: F403
from ._pooling import *  # noqa: F403
from ._resampling import *  # noqa: F403

__all__ = [
    *_linear.__all__,
    *_linear_cross_entropy.__all__,
    *_activation.__all__,
    *_dropout.__all__,
    *_conv.__all__,
    *_pooling.__all__,
    *_normalization.__all__,
    *_embedding.__all__,
    *_distance.__all__,
    *_loss.__all__,
    *_attention.__all__,
    *_padding.__all__,
    *_resampling.__all__,
    *_functional_more.__all__,
    *_grouped_mm.__all__,
    "ctc_loss",
]

# torch.nn.functional re-exports these helpers of the __torch_function__ protocol
from ..overrides import (  # noqa: E402, F401
    handle_torch_function,
    has_torch_function,
    has_torch_function_unary,
    has_torch_function_variadic,
)
