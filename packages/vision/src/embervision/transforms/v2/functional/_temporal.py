"""uniform_temporal_subsample: evenly spaced frames of a video ``[..., T, C, H, W]``."""

from __future__ import annotations

from typing import Any

import ember

from ... import _tv_tensors as tvt
from ._utils import _dispatch, _register_kernel_internal


def uniform_temporal_subsample(inpt: Any, num_samples: int) -> Any:
    return _dispatch(uniform_temporal_subsample, inpt, num_samples=num_samples)


def uniform_temporal_subsample_video(video: ember.Tensor, num_samples: int) -> ember.Tensor:
    # Frame indices: linspace over [0, T - 1], truncated (as torchvision's .long()).
    t_max = video.shape[-4] - 1
    indices = ember.linspace(0, t_max, num_samples).long()
    return video.index_select(-4, indices)


for _t in (ember.Tensor, tvt.Video):
    _register_kernel_internal(uniform_temporal_subsample, _t)(uniform_temporal_subsample_video)
