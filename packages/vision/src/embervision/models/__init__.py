"""Model architectures with the multi-weight API, in the shape of torchvision.models.

Each builder (``resnet50(*, weights=None, progress=True, **kwargs)``) has a weights enum
(``ResNet50_Weights``) and is registered for ``get_model("resnet50", weights="DEFAULT")``. The
subpackages ``detection``, ``segmentation`` and ``optical_flow`` hold the other tasks' models.
"""

from . import detection, feature_extraction, optical_flow, segmentation  # noqa: F401
from ._api import (  # noqa: F401
    Weights,
    WeightsEnum,
    get_model,
    get_model_builder,
    get_model_weights,
    get_weight,
    list_models,
)
from .alexnet import *  # noqa: F403
from .convnext import *  # noqa: F403
from .densenet import *  # noqa: F403
from .efficientnet import *  # noqa: F403
from .googlenet import *  # noqa: F403
from .inception import *  # noqa: F403
from .mnasnet import *  # noqa: F403
from .mobilenetv2 import *  # noqa: F403
from .mobilenetv3 import *  # noqa: F403
from .regnet import *  # noqa: F403
from .resnet import *  # noqa: F403
from .shufflenetv2 import *  # noqa: F403
from .squeezenet import *  # noqa: F403
from .swin_transformer import *  # noqa: F403
from .vgg import *  # noqa: F403
from .vision_transformer import *  # noqa: F403
