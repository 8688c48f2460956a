"""AlexNet (Krizhevsky, "One weird trick for parallelizing convolutional neural networks" variant)."""

from __future__ import annotations

from typing import Any

import ember
from ember import nn

from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["AlexNet", "AlexNet_Weights", "alexnet"]


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(
        "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth", 61100840,
        "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg", 56.522, 79.066,
        "These weights reproduce closely the results of the paper using a simplified training recipe.",
        min_size=(63, 63))
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", AlexNet_Weights.IMAGENET1K_V1))
def alexnet(*, weights: AlexNet_Weights | None = None, progress: bool = True, **kwargs: Any) -> AlexNet:
    """AlexNet (the single-GPU "one weird trick" variant). Inputs need at least 63x63 pixels."""
    weights = AlexNet_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = AlexNet(**kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
