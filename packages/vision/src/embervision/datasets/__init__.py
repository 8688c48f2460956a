"""Datasets in the shape of torchvision.datasets: the same class names, constructor arguments and
items, read from the files the datasets ship (IDX, pickled batches through a data-only unpickler,
MATLAB v5, XML, JSON, image folders) with strict parsers; downloads go through `ember.hub` with
the published checksums, archives are extracted safely. Images come back as uint8 ``[C, H, W]``
ember tensors (torchvision gives PIL images); files of a compressed image format decode through
`embervision.io.read_image`, or through the `loader` a dataset is given."""

from ._dataset_wrapper import wrap_dataset_for_transforms_v2
from ._optical_flow import HD1K, FlyingChairs, FlyingThings3D, KittiFlow, Sintel
from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .coco import CocoCaptions, CocoDetection
from .dtd import DTD
from .fgvc_aircraft import FGVCAircraft
from .flowers102 import Flowers102
from .folder import DatasetFolder, ImageFolder
from .food101 import Food101
from .kitti import Kitti
from .mnist import EMNIST, KMNIST, MNIST, QMNIST, FashionMNIST
from .oxford_iiit_pet import OxfordIIITPet
from .places365 import Places365
from .stanford_cars import StanfordCars
from .stl10 import STL10
from .svhn import SVHN
from .vision import StandardTransform, VisionDataset
from .voc import VOCDetection, VOCSegmentation

__all__ = [
    "CIFAR10", "CIFAR100", "CelebA", "CocoCaptions", "CocoDetection", "DTD", "DatasetFolder", "EMNIST",
    "FGVCAircraft", "FashionMNIST", "Flowers102", "FlyingChairs", "FlyingThings3D", "Food101", "HD1K",
    "ImageFolder", "KMNIST", "Kitti", "KittiFlow", "MNIST", "OxfordIIITPet", "Places365", "QMNIST", "STL10", "SVHN",
    "Sintel", "StandardTransform", "StanfordCars", "VOCDetection", "VOCSegmentation", "VisionDataset",
    "wrap_dataset_for_transforms_v2",
]
