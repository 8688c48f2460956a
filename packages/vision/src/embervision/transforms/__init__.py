"""Transforms (torchvision.transforms): the v1 API here, joint image/box/mask transforms in ``v2``.

``transforms.functional`` is v1's functional API. The inference presets (``_presets``) are not
imported here; the models' weights load them.
"""

from . import functional
from .transforms import *  # noqa: F403
from .transforms import __all__ as _v1_all

__all__ = ["functional", *_v1_all]
