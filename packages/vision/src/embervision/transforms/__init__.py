"""Transforms (torchvision.transforms): ``v2`` (joint image/box/mask transforms) and the v1 API."""
