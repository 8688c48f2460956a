"""The v1 module path of the automatic augmentation policies (torchvision.transforms.autoaugment)."""

from .v2._auto_augment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide

__all__ = ["AugMix", "AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide"]
