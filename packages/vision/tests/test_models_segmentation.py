"""Segmentation models: torchvision's parameter counts and state-dict names, forward shapes on small
inputs, a training step, the builders' argument rules, and the SemanticSegmentation/ObjectDetection
presets against NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from embervision import models
from embervision.models import segmentation
from embervision.models._utils import IntermediateLayerGetter
from embervision.transforms._presets import ObjectDetection, SemanticSegmentation

# torchvision's documented parameter counts (with the auxiliary head, as the weights have it) and a
# few state-dict entries of its checkpoints.
SPECS = {
    "fcn_resnet50": (35322218, {"backbone.conv1.weight": (64, 3, 7, 7),
                                "backbone.layer4.2.conv3.weight": (2048, 512, 1, 1),
                                "classifier.0.weight": (512, 2048, 3, 3), "classifier.1.running_var": (512,),
                                "classifier.4.weight": (21, 512, 1, 1), "classifier.4.bias": (21,),
                                "aux_classifier.0.weight": (256, 1024, 3, 3),
                                "aux_classifier.4.weight": (21, 256, 1, 1)}),
    "fcn_resnet101": (54314346, {"backbone.layer3.22.conv2.weight": (256, 256, 3, 3)}),
    "deeplabv3_resnet50": (42004074, {"classifier.0.convs.0.0.weight": (256, 2048, 1, 1),
                                      "classifier.0.convs.1.0.weight": (256, 2048, 3, 3),
                                      "classifier.0.convs.3.1.running_mean": (256,),
                                      "classifier.0.convs.4.1.weight": (256, 2048, 1, 1),
                                      "classifier.0.project.0.weight": (256, 1280, 1, 1),
                                      "classifier.1.weight": (256, 256, 3, 3), "classifier.4.weight": (21, 256, 1, 1),
                                      "aux_classifier.0.weight": (256, 1024, 3, 3)}),
    "deeplabv3_resnet101": (60996202, {"backbone.layer3.22.bn3.weight": (1024,)}),
    "deeplabv3_mobilenet_v3_large": (11029328, {"backbone.0.0.weight": (16, 3, 3, 3),
                                                "backbone.16.0.weight": (960, 160, 1, 1),
                                                "classifier.0.convs.0.0.weight": (256, 960, 1, 1),
                                                "aux_classifier.0.weight": (10, 40, 3, 3),
                                                "aux_classifier.4.weight": (21, 10, 1, 1)}),
    "lraspp_mobilenet_v3_large": (3221538, {"backbone.16.0.weight": (960, 160, 1, 1),
                                            "classifier.cbr.0.weight": (128, 960, 1, 1),
                                            "classifier.cbr.1.running_var": (128,),
                                            "classifier.scale.1.weight": (128, 960, 1, 1),
                                            "classifier.low_classifier.weight": (21, 40, 1, 1),
                                            "classifier.low_classifier.bias": (21,),
                                            "classifier.high_classifier.weight": (21, 128, 1, 1)}),
}


def test_registry():
    assert models.list_models(module=segmentation) == sorted(SPECS)
    assert models.get_model_weights("fcn_resnet50") is segmentation.FCN_ResNet50_Weights
    w = models.get_weight("DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1")
    assert w is segmentation.DeepLabV3_ResNet50_Weights.DEFAULT
    assert w.url == "https://download.pytorch.org/models/deeplabv3_resnet50_coco-cd0a2569.pth"
    assert w.meta["categories"][0] == "__background__" and len(w.meta["categories"]) == 21
    assert w.meta["_metrics"]["COCO-val2017-VOC-labels"] == {"miou": 66.4, "pixel_acc": 92.4}
    assert (w.meta["_ops"], w.meta["_file_size"]) == (178.722, 160.515)
    assert isinstance(w.transforms(), SemanticSegmentation) and w.transforms().resize_size == [520]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_num_params_and_keys(name, no_init):
    num_params, keys = SPECS[name]
    kwargs = {} if name.startswith("lraspp") else {"aux_loss": True}
    model = models.get_model(name, weights_backbone=None, **kwargs)
    assert sum(p.numel() for p in model.parameters()) == num_params
    assert models.get_model_weights(name).DEFAULT.meta["num_params"] == num_params
    state = model.state_dict()
    for key, shape in keys.items():
        assert tuple(state[key].shape) == shape, key


@pytest.mark.parametrize("name", ["fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large",
                                  "lraspp_mobilenet_v3_large"])
def test_forward_eval(name, cheap_init):
    aux = not name.startswith("lraspp")
    kwargs = {"aux_loss": True} if aux else {}
    model = models.get_model(name, weights_backbone=None, num_classes=5, **kwargs).eval()
    x = ember.rand(2, 3, 40, 56)
    with ember.no_grad():
        out = model(x)
    assert list(out) == (["out", "aux"] if aux else ["out"])
    for value in out.values():
        assert tuple(value.shape) == (2, 5, 40, 56)
        assert bool(ember.isfinite(value).all())
    with ember.no_grad():
        assert ember.equal(model(x)["out"], out["out"])  # eval mode is deterministic (no dropout)


def test_no_aux_by_default(no_init):
    model = segmentation.fcn_resnet50(weights_backbone=None)
    assert model.aux_classifier is None
    assert not any(k.startswith("aux_classifier") for k in model.state_dict())


def test_train_step_reaches_backbone(cheap_init):
    ember.manual_seed(0)
    model = segmentation.deeplabv3_mobilenet_v3_large(weights_backbone=None, num_classes=3, aux_loss=True).train()
    x = ember.rand(2, 3, 32, 48)
    target = ember.randint(0, 3, (2, 32, 48))
    out = model(x)
    loss = F.cross_entropy(out["out"], target) + 0.5 * F.cross_entropy(out["aux"], target)
    assert bool(ember.isfinite(loss))
    loss.backward()
    first = model.backbone["0"][0].weight
    assert first.grad is not None and float(first.grad.abs().sum()) > 0
    assert model.aux_classifier[0].weight.grad is not None


def test_builder_rules():
    with pytest.raises(NotImplementedError, match="This model does not use auxiliary loss"):
        segmentation.lraspp_mobilenet_v3_large(weights_backbone=None, aux_loss=True)
    # The weights fix 21 classes and the auxiliary head; a conflict is an error before any download.
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 21 but got 5 instead."):
        segmentation.fcn_resnet50(weights="DEFAULT", num_classes=5)
    with pytest.raises(ValueError, match="The parameter 'aux_loss' expected value True but got False instead."):
        segmentation.deeplabv3_resnet50(weights="DEFAULT", aux_loss=False)
    with pytest.raises(TypeError, match="Invalid Weight class provided"):
        segmentation.fcn_resnet50(weights=segmentation.FCN_ResNet101_Weights.DEFAULT)


def test_intermediate_layer_getter():
    body = nn.Sequential(nn.Conv2d(1, 2, 1), nn.ReLU(), nn.Conv2d(2, 3, 1), nn.ReLU())
    getter = IntermediateLayerGetter(body, {"0": "a", "2": "b"})
    assert list(getter.keys()) == ["0", "1", "2"]  # the trailing ReLU is dropped
    x = ember.randn(1, 1, 4, 4)
    out = getter(x)
    assert list(out) == ["a", "b"]
    assert ember.allclose(out["b"], body[2](body[1](body[0](x))))
    with pytest.raises(ValueError, match="return_layers are not present in model"):
        IntermediateLayerGetter(body, {"9": "x"})


def test_semantic_segmentation_preset():
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (3, 8, 12), dtype=np.uint8)
    preset = SemanticSegmentation(resize_size=None)
    got = preset(ember.from_numpy(img)).numpy()
    mean = np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
    np.testing.assert_allclose(got, (img.astype(np.float64) / 255 - mean) / std, rtol=1e-5, atol=1e-5)
    # resize_size sets the shorter side; the longer keeps the ratio (int(size * long / short)).
    out = SemanticSegmentation(resize_size=4)(ember.rand(2, 3, 8, 13))
    assert tuple(out.shape) == (2, 3, 4, 6) and out.dtype == ember.float32
    # A constant image stays constant through the resize.
    const = SemanticSegmentation(resize_size=5, mean=(0.0,), std=(1.0,))(ember.full((1, 9, 7), 0.25))
    np.testing.assert_allclose(const.numpy(), 0.25, rtol=1e-6)
    with pytest.raises(ValueError, match="std evaluated to zero"):
        SemanticSegmentation(resize_size=1, std=(1.0, 0.0, 1.0))
    with pytest.raises(TypeError, match="img should be Tensor Image"):
        preset(img)


def test_object_detection_preset():
    img = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.uint8)
    got = ObjectDetection()(ember.from_numpy(img))
    assert got.dtype == ember.float32
    np.testing.assert_allclose(got.numpy(), img / 255.0, rtol=1e-6)
    x = ember.rand(3, 4, 4, dtype=ember.float64)
    assert ember.equal(ObjectDetection()(x), x)
    with pytest.raises(ValueError, match="Expected tensor to be a tensor image"):
        ObjectDetection()(ember.rand(4, 4))
