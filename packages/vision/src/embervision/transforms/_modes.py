"""InterpolationMode, shared by transforms v1 and v2."""

from enum import Enum


class InterpolationMode(Enum):
    """How resampling kernels interpolate; ``NEAREST`` is PyTorch's legacy nearest (floor of the
    scaled coordinate), ``NEAREST_EXACT`` the pixel-center-aligned one. BOX, HAMMING and LANCZOS are
    PIL-only modes (no PIL here), so they are absent."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


_FROM_INT = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC}


def _check_interpolation(interpolation: object) -> InterpolationMode:
    # torchvision accepts the PIL integer constants too (0 nearest, 2 bilinear, 3 bicubic).
    if isinstance(interpolation, InterpolationMode):
        return interpolation
    if isinstance(interpolation, int) and not isinstance(interpolation, bool) and interpolation in _FROM_INT:
        return _FROM_INT[interpolation]
    raise ValueError(f"Argument interpolation should be an InterpolationMode or a corresponding Pillow integer "
                     f"constant (0, 2, 3), but got {interpolation!r}.")
