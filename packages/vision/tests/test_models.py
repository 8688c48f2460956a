"""Classification models: parameter counts and state-dict names equal torchvision's, forward on
small inputs, one training step, and the builders' options and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from embervision import models

# torchvision's documented parameter counts (its weight tables' "num_params", which its docs print)
# and a few state-dict entries of its checkpoints, name → shape.
SPECS = {
    "resnet18": (11689512, {"conv1.weight": (64, 3, 7, 7), "bn1.running_mean": (64,),
                            "layer1.0.conv1.weight": (64, 64, 3, 3), "layer2.0.downsample.0.weight": (128, 64, 1, 1),
                            "layer2.0.downsample.1.num_batches_tracked": (), "layer4.1.bn2.weight": (512,),
                            "fc.weight": (1000, 512), "fc.bias": (1000,)}),
    "resnet34": (21797672, {"layer3.5.conv2.weight": (256, 256, 3, 3), "fc.weight": (1000, 512)}),
    "resnet50": (25557032, {"layer1.0.conv1.weight": (64, 64, 1, 1), "layer1.0.conv3.weight": (256, 64, 1, 1),
                            "layer1.0.downsample.0.weight": (256, 64, 1, 1), "layer4.2.bn3.running_var": (2048,),
                            "fc.weight": (1000, 2048)}),
    "resnet101": (44549160, {"layer3.22.conv2.weight": (256, 256, 3, 3), "layer4.2.conv3.weight": (2048, 512, 1, 1)}),
    "resnet152": (60192808, {"layer2.7.conv1.weight": (128, 512, 1, 1), "layer3.35.bn3.weight": (1024,)}),
    "resnext50_32x4d": (25028904, {"layer1.0.conv1.weight": (128, 64, 1, 1), "layer1.0.conv2.weight": (128, 4, 3, 3),
                                   "layer4.0.conv2.weight": (1024, 32, 3, 3)}),
    "resnext101_32x8d": (88791336, {"layer1.0.conv2.weight": (256, 8, 3, 3),
                                    "layer3.22.conv3.weight": (1024, 1024, 1, 1)}),
    "resnext101_64x4d": (83455272, {"layer1.0.conv2.weight": (256, 4, 3, 3), "layer3.22.bn2.running_var": (1024,)}),
    "wide_resnet50_2": (68883240, {"layer1.0.conv2.weight": (128, 128, 3, 3),
                                   "layer4.0.conv1.weight": (1024, 1024, 1, 1)}),
    "wide_resnet101_2": (126886696, {"layer3.22.conv2.weight": (512, 512, 3, 3)}),
    "mobilenet_v2": (3504872, {"features.0.0.weight": (32, 3, 3, 3), "features.1.conv.0.0.weight": (32, 1, 3, 3),
                               "features.1.conv.1.weight": (16, 32, 1, 1), "features.1.conv.2.running_mean": (16,),
                               "features.2.conv.0.0.weight": (96, 16, 1, 1), "features.17.conv.2.weight": (320, 960, 1, 1),
                               "features.17.conv.3.weight": (320,),
                               "features.18.0.weight": (1280, 320, 1, 1), "classifier.1.weight": (1000, 1280)}),
    "mobilenet_v3_large": (5483032, {"features.0.0.weight": (16, 3, 3, 3), "features.1.block.0.0.weight": (16, 1, 3, 3),
                                     "features.4.block.2.fc1.weight": (24, 72, 1, 1),
                                     "features.4.block.2.fc2.bias": (72,), "features.16.0.weight": (960, 160, 1, 1),
                                     "classifier.0.weight": (1280, 960), "classifier.3.weight": (1000, 1280)}),
    "mobilenet_v3_small": (2542856, {"features.1.block.1.fc1.weight": (8, 16, 1, 1),
                                     "features.12.0.weight": (576, 96, 1, 1), "classifier.0.weight": (1024, 576)}),
    "alexnet": (61100840, {"features.0.weight": (64, 3, 11, 11), "features.10.weight": (256, 256, 3, 3),
                           "classifier.1.weight": (4096, 9216), "classifier.6.weight": (1000, 4096)}),
    "vgg11": (132863336, {"features.0.weight": (64, 3, 3, 3), "features.18.weight": (512, 512, 3, 3),
                          "classifier.0.weight": (4096, 25088), "classifier.6.bias": (1000,)}),
    "vgg11_bn": (132868840, {"features.25.weight": (512, 512, 3, 3), "features.26.running_var": (512,)}),
    "vgg13": (133047848, {"features.22.weight": (512, 512, 3, 3)}),
    "vgg13_bn": (133053736, {"features.31.weight": (512, 512, 3, 3), "features.32.running_mean": (512,)}),
    "vgg16": (138357544, {"features.28.weight": (512, 512, 3, 3), "classifier.3.weight": (4096, 4096)}),
    "vgg16_bn": (138365992, {"features.40.weight": (512, 512, 3, 3), "features.41.running_var": (512,)}),
    "vgg19": (143667240, {"features.34.weight": (512, 512, 3, 3)}),
    "vgg19_bn": (143678248, {"features.49.weight": (512, 512, 3, 3), "features.50.running_mean": (512,)}),
    "squeezenet1_0": (1248424, {"features.0.weight": (96, 3, 7, 7), "features.3.squeeze.weight": (16, 96, 1, 1),
                                "features.12.expand3x3.weight": (256, 64, 3, 3),
                                "classifier.1.weight": (1000, 512, 1, 1)}),
    "shufflenet_v2_x0_5": (1366792, {"stage4.0.branch2.0.weight": (96, 96, 1, 1), "fc.weight": (1000, 1024)}),
    "shufflenet_v2_x1_0": (2278604, {"conv1.0.weight": (24, 3, 3, 3), "stage2.0.branch1.0.weight": (24, 1, 3, 3),
                                     "stage2.0.branch1.2.weight": (58, 24, 1, 1),
                                     "stage2.1.branch2.0.weight": (58, 58, 1, 1),
                                     "conv5.0.weight": (1024, 464, 1, 1), "fc.weight": (1000, 1024)}),
    "shufflenet_v2_x1_5": (3503624, {"conv5.0.weight": (1024, 704, 1, 1)}),
    "shufflenet_v2_x2_0": (7393996, {"conv5.0.weight": (2048, 976, 1, 1), "fc.weight": (1000, 2048)}),
    "mnasnet0_5": (2218512, {"layers.0.weight": (16, 3, 3, 3), "layers.14.weight": (1280, 160, 1, 1)}),
    "mnasnet0_75": (3170208, {"layers.0.weight": (24, 3, 3, 3)}),
    "mnasnet1_0": (4383312, {"layers.0.weight": (32, 3, 3, 3), "layers.8.0.layers.0.weight": (48, 16, 1, 1),
                             "layers.14.weight": (1280, 320, 1, 1), "layers.15.running_mean": (1280,),
                             "classifier.1.weight": (1000, 1280)}),
    "mnasnet1_3": (6282256, {"layers.0.weight": (40, 3, 3, 3), "layers.14.weight": (1280, 416, 1, 1)}),
    "densenet121": (7978856, {"features.conv0.weight": (64, 3, 7, 7),
                              "features.denseblock1.denselayer1.norm1.weight": (64,),
                              "features.denseblock1.denselayer1.conv1.weight": (128, 64, 1, 1),
                              "features.denseblock1.denselayer6.conv2.weight": (32, 128, 3, 3),
                              "features.transition1.conv.weight": (128, 256, 1, 1),
                              "features.norm5.running_var": (1024,), "classifier.weight": (1000, 1024)}),
    "densenet161": (28681000, {"features.conv0.weight": (96, 3, 7, 7), "classifier.weight": (1000, 2208)}),
    "densenet169": (14149480, {"classifier.weight": (1000, 1664)}),
    "densenet201": (20013928, {"classifier.weight": (1000, 1920)}),
    "googlenet": (6624904, {"conv1.conv.weight": (64, 3, 7, 7), "conv1.bn.running_var": (64,),
                            "inception3a.branch1.conv.weight": (64, 192, 1, 1),
                            "inception3a.branch2.1.conv.weight": (128, 96, 3, 3),
                            "inception3a.branch3.1.conv.weight": (32, 16, 3, 3),
                            "inception3a.branch4.1.conv.weight": (32, 192, 1, 1),
                            "inception5b.branch1.bn.weight": (384,), "fc.weight": (1000, 1024)}),
    "inception_v3": (27161264, {"Conv2d_1a_3x3.conv.weight": (32, 3, 3, 3),
                                "Mixed_5b.branch5x5_2.conv.weight": (64, 48, 5, 5),
                                "Mixed_6b.branch7x7_2.conv.weight": (128, 128, 1, 7),
                                "Mixed_7c.branch3x3dbl_3b.conv.weight": (384, 384, 3, 1),
                                "AuxLogits.conv1.conv.weight": (768, 128, 5, 5), "AuxLogits.fc.weight": (1000, 768),
                                "fc.weight": (1000, 2048)}),
    "squeezenet1_1": (1235496, {"features.0.weight": (64, 3, 3, 3), "features.12.expand1x1.weight": (256, 64, 1, 1),
                                "classifier.1.bias": (1000,)}),
}

# The families of test_models_modern.py.
MODERN = ["efficientnet_*", "regnet_*", "convnext_*", "vit_*", "swin_*"]


def test_every_classic_model_has_a_spec():
    assert sorted(SPECS) == models.list_models(module=models, exclude=MODERN)


# torchvision documents GoogLeNet's count without its (not pretrained) auxiliary heads, Inception v3's
# with its own; init_weights=True only silences their FutureWarning about the initialization.
BUILD_KWARGS = {"googlenet": {"aux_logits": False, "init_weights": True}, "inception_v3": {"init_weights": True}}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_parameter_count_state_dict_and_forward(name, cheap_init, model_checks):
    num_params, keys = SPECS[name]
    model_checks.count_keys_forward(name, num_params, keys, **BUILD_KWARGS.get(name, {}))


TRAINED = {"resnet18": {}, "resnext50_32x4d": {}, "mobilenet_v2": {}, "mobilenet_v3_large": {},
           "mobilenet_v3_small": {}, "squeezenet1_0": {}, "squeezenet1_1": {}, "shufflenet_v2_x0_5": {},
           "mnasnet0_5": {}, "densenet121": {}, "googlenet": {"aux_logits": False, "init_weights": True}}


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_forward_and_one_training_step(name, model_checks):
    model_checks.train_step(name, **TRAINED[name])


def test_resnet_options(cheap_init):
    m = models.resnet50(zero_init_residual=True)
    assert all(float(b.bn3.weight.abs().sum()) == 0 for layer in (m.layer1, m.layer4) for b in layer)
    # Dilation instead of stride in the last two stages: output stride 8 instead of 32.
    d = models.resnet50(replace_stride_with_dilation=[False, True, True])
    feats = nn.Sequential(*list(d.children())[:-2]).eval()
    with ember.no_grad():
        assert tuple(feats(ember.rand(1, 3, 64, 64)).shape) == (1, 2048, 8, 8)
    assert d.layer4[1].conv2.dilation == (4, 4)
    with pytest.raises(ValueError, match="replace_stride_with_dilation should be None or a 3-element tuple, got"):
        models.resnet50(replace_stride_with_dilation=[True])
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1 and base_width=64"):
        models.resnet18(groups=2)
    with pytest.raises(NotImplementedError, match="Dilation > 1 not supported in BasicBlock"):
        models.resnet18(replace_stride_with_dilation=[False, False, True])


def test_mobilenet_v3_width_mult_reduced_tail_and_dilated(cheap_init):
    base = models.mobilenet_v3_large()
    # Channels scale and round to multiples of 8.
    narrow = models.mobilenet_v3_large(width_mult=0.75)
    assert narrow.features[0][0].out_channels == 16 and narrow.features[2].block[0][0].out_channels == 48
    assert narrow.classifier[0].out_features == 960
    # reduced_tail halves the last stage and the classifier's hidden layer.
    tail = models.mobilenet_v3_large(reduced_tail=True)
    assert tail.features[-1][0].in_channels == 80 and tail.classifier[0].in_features == 480
    assert tail.classifier[0].out_features == 640
    assert sum(p.numel() for p in tail.parameters()) < sum(p.numel() for p in base.parameters())
    # dilated keeps the last stage at output stride 16, with the same parameters.
    dilated = models.mobilenet_v3_small(dilated=True).eval()
    small = models.mobilenet_v3_small().eval()
    assert sum(p.numel() for p in dilated.parameters()) == sum(p.numel() for p in small.parameters())
    with ember.no_grad():
        x = ember.rand(1, 3, 64, 64)
        assert tuple(dilated.features(x).shape) == (1, 576, 4, 4)
        assert tuple(small.features(x).shape) == (1, 576, 2, 2)
    assert dilated.features[9].block[1][0].dilation == (2, 2)


def test_mobilenet_errors():
    from embervision.models.mobilenetv2 import InvertedResidual
    from embervision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf

    with pytest.raises(ValueError, match="inverted_residual_setting should be non-empty or a 4-element list, got"):
        models.mobilenet_v2(inverted_residual_setting=[[1, 16, 1]])
    with pytest.raises(ValueError, match="stride should be 1 or 2 instead of 3"):
        InvertedResidual(8, 8, 3, 6)
    with pytest.raises(ValueError, match="The inverted_residual_setting should not be empty"):
        MobileNetV3([], 1280)
    with pytest.raises(TypeError, match=r"The inverted_residual_setting should be List\[InvertedResidualConfig\]"):
        MobileNetV3([[16, 3, 16, 16]], 1280)
    with pytest.raises(ValueError, match="Unsupported model type mobilenet_v3_medium"):
        _mobilenet_v3_conf("mobilenet_v3_medium")


def test_squeezenet_and_vgg_options(cheap_init):
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 1_2: 1_0 or 1_1 expected"):
        models.SqueezeNet("1_2")
    vgg = models.vgg11(num_classes=3, dropout=0.0, init_weights=False)
    assert vgg.classifier[6].out_features == 3 and vgg.classifier[2].p == 0.0
    # The SSD feature weights of VGG-16 have no categories: they leave num_classes alone.
    assert models.VGG16_Weights.IMAGENET1K_FEATURES.meta["categories"] is None
    assert models.VGG16_Weights.IMAGENET1K_FEATURES.transforms().std == [1.0 / 255.0] * 3


def test_models_refuse_inputs_below_their_minimum_size(cheap_init):
    model = models.alexnet().eval()
    with ember.no_grad(), pytest.raises(RuntimeError):
        model(ember.rand(1, 3, 40, 40))  # below min_size (63) the last max pool has no window left


def test_googlenet_and_inception_auxiliary_outputs_and_input_transform(cheap_init):
    from embervision.models.googlenet import GoogLeNetOutputs
    from embervision.models.inception import InceptionOutputs

    g = models.googlenet(num_classes=5, init_weights=True)
    # The documented count, with 5 classes, plus two auxiliary heads (1x1 conv to 128 + BN, 2048→1024→5).
    aux = [c_in * 128 + 2 * 128 + 2048 * 1024 + 1024 + 1024 * 5 + 5 for c_in in (512, 528)]
    assert sum(p.numel() for p in g.parameters()) == 6624904 - 1024 * 995 - 995 + sum(aux)
    x = ember.rand(2, 3, 64, 64)
    out = g.train()(x)
    assert isinstance(out, GoogLeNetOutputs)
    assert [tuple(t.shape) for t in out] == [(2, 5), (2, 5), (2, 5)]
    with ember.no_grad():
        assert tuple(g.eval()(x).shape) == (2, 5)
    # Inception v3's auxiliary head takes Mixed_6e's 17x17 map (299-pixel inputs, too slow here): the
    # head alone on such a map, and the wiring with a stand-in head on a 75-pixel input.
    from embervision.models.inception import InceptionAux
    assert tuple(InceptionAux(768, 4)(ember.rand(2, 768, 17, 17)).shape) == (2, 4)
    inc = models.inception_v3(num_classes=4, init_weights=True)
    seen = []

    class StandIn(ember.nn.Module):
        def forward(self, x):
            seen.append(tuple(x.shape))
            return ember.zeros(x.shape[0], 4)

    inc.AuxLogits = StandIn()
    out = inc.train()(ember.rand(2, 3, 75, 75))
    assert isinstance(out, InceptionOutputs) and tuple(out.aux_logits.shape) == (2, 4) and seen == [(2, 768, 3, 3)]
    with ember.no_grad():
        assert isinstance(inc.eval()(ember.rand(1, 3, 75, 75)), ember.Tensor) and len(seen) == 1
    no_aux = models.inception_v3(aux_logits=False, init_weights=True)
    assert no_aux.AuxLogits is None and isinstance(no_aux.train()(ember.rand(2, 3, 75, 75)), ember.Tensor)
    # transform_input maps ImageNet-normalized inputs to the port's (x - 0.5) / 0.5 normalization.
    t = models.googlenet(transform_input=True, aux_logits=False, init_weights=True)
    x = ember.rand(1, 3, 4, 4, dtype=ember.float64)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    expected = (x.numpy() * std[:, None, None] + mean[:, None, None] - 0.5) / 0.5
    np.testing.assert_allclose(t._transform_input(x).numpy(), expected, rtol=1e-12, atol=1e-12)
    with pytest.warns(FutureWarning, match="The default weight initialization of GoogleNet will be changed"):
        models.googlenet(aux_logits=False)
    with pytest.raises(ValueError, match="blocks length should be 3 instead of 2"):
        models.GoogLeNet(blocks=[None, None], init_weights=True)
    with pytest.raises(ValueError, match="length of inception_blocks should be 7 instead of 1"):
        models.Inception3(inception_blocks=[None], init_weights=True)


def test_shufflenet_mnasnet_densenet_errors():
    from embervision.models.mnasnet import _InvertedResidual, _round_to_multiple_of, _stack
    from embervision.models.shufflenetv2 import InvertedResidual, channel_shuffle

    with pytest.raises(ValueError, match="expected stages_repeats as list of 3 positive ints"):
        models.ShuffleNetV2([4, 8], [24, 48, 96, 192, 1024])
    with pytest.raises(ValueError, match="expected stages_out_channels as list of 5 positive ints"):
        models.ShuffleNetV2([4, 8, 4], [24, 48, 96, 192])
    with pytest.raises(ValueError, match="illegal stride value"):
        InvertedResidual(24, 24, 4)
    with pytest.raises(ValueError, match="Invalid combination of stride 1, inp 24 and oup 48 values"):
        InvertedResidual(24, 48, 1)
    # channel_shuffle interleaves the two halves: [a0 a1 b0 b1] → [a0 b0 a1 b1].
    x = ember.arange(4, dtype=ember.float32).reshape(1, 4, 1, 1)
    assert channel_shuffle(x, 2).flatten().tolist() == [0.0, 2.0, 1.0, 3.0]
    with pytest.raises(ValueError, match="alpha should be greater than 0.0 instead of 0.0"):
        models.MNASNet(0.0)
    with pytest.raises(ValueError, match="stride should be 1 or 2 instead of 3"):
        _InvertedResidual(8, 8, 3, 3, 2)
    with pytest.raises(ValueError, match="kernel_size should be 3 or 5 instead of 7"):
        _InvertedResidual(8, 8, 7, 1, 2)
    with pytest.raises(ValueError, match="repeats should be >= 1, instead got 0"):
        _stack(8, 8, 3, 1, 2, 0, 0.1)
    assert (_round_to_multiple_of(83, 8), _round_to_multiple_of(84, 8)) == (80, 88)
    with pytest.raises(ValueError, match="round_up_bias should be greater than 0.0 and smaller than 1.0"):
        _round_to_multiple_of(83, 8, 1.0)
    with pytest.raises(NotImplementedError, match="memory_efficient=True needs activation checkpointing"):
        models.densenet121(memory_efficient=True)
    # drop_rate adds dropout after every dense layer in training only.
    net = models.DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8, bn_size=2, drop_rate=0.5,
                          num_classes=3)
    x = ember.rand(2, 3, 32, 32)
    with ember.no_grad():
        assert ember.equal(net.eval()(x), net(x))
        ember.manual_seed(0)
        a = net.train()(x)
        ember.manual_seed(1)
        assert not ember.equal(a, net(x))
