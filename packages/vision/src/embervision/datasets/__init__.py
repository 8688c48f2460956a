"""Datasets in the shape of torchvision.datasets: the same class names, constructor arguments and
items, read from the files the datasets ship (IDX, pickled batches through a data-only unpickler,
MATLAB v5, XML, JSON, image folders) with strict parsers; downloads go through `ember.hub` with
the published checksums, archives are extracted safely. Images come back as uint8 ``[C, H, W]``
ember tensors (torchvision gives PIL images); files of a compressed image format decode through
`embervision.io.read_image`, or through the `loader` a dataset is given."""

from .cifar import CIFAR10, CIFAR100
from .flowers102 import Flowers102
from .folder import DatasetFolder, ImageFolder
from .mnist import EMNIST, KMNIST, MNIST, QMNIST, FashionMNIST
from .stanford_cars import StanfordCars
from .svhn import SVHN
from .vision import StandardTransform, VisionDataset

__all__ = [
    "CIFAR10", "CIFAR100", "DatasetFolder", "EMNIST", "FashionMNIST", "Flowers102", "ImageFolder", "KMNIST",
    "MNIST", "QMNIST", "SVHN", "StandardTransform", "StanfordCars", "VisionDataset",
]
