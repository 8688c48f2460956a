"""Optical flow models (RAFT), in the shape of torchvision.models.optical_flow."""

from .raft import *  # noqa: F403
