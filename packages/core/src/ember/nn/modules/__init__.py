from . import (  # noqa: F401 - channelshuffle, instancenorm: PyTorch's module paths for pickles
               activation,
               adaptive,
               attention,
               channelshuffle,
               conv,
               distance,
               dropout,
               fold,
               fractional_pooling,
               instancenorm,
               lazy,
               loss,
               normalization,
               padding,
               pixelshuffle,
               pooling,
               rnn,
               sparse,
               transformer,
               upsampling,
)
from .activation import *  # noqa: F403 - each module file lists its classes in __all__
from .adaptive import *  # noqa: F403
from .attention import *  # noqa: F403
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .container import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import Flatten, Unflatten
from .fold import *  # noqa: F403
from .fractional_pooling import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import Bilinear, Identity, LazyLinear, Linear
from .loss import *  # noqa: F403
from .module import Module
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403

__all__ = ["Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity", "Linear",
           "Bilinear", "LazyLinear",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Flatten", "Unflatten",
           *activation.__all__, *dropout.__all__, *loss.__all__, *normalization.__all__,
           *conv.__all__, *pooling.__all__, *padding.__all__,
           *sparse.__all__, *upsampling.__all__, *pixelshuffle.__all__,
           *distance.__all__, *fold.__all__, *rnn.__all__,
           *attention.__all__, *transformer.__all__, *lazy.__all__,
           *adaptive.__all__, *fractional_pooling.__all__]
