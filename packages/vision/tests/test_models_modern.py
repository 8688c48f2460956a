"""Classification models of the later families (EfficientNet, RegNet, ConvNeXt, ViT, Swin): parameter
counts and state-dict names equal torchvision's, forward on small inputs, one training step, and the
builders' options and errors. The shared checks are conftest.ModelChecks."""

from __future__ import annotations

import pytest

from embervision import models

# torchvision's documented parameter counts (its weight tables' "num_params") and a few state-dict
# entries of its checkpoints, name → shape.
SPECS = {
    "efficientnet_b0": (5288548, {"features.0.0.weight": (32, 3, 3, 3), "features.1.0.block.0.0.weight": (32, 1, 3, 3),
                                  "features.1.0.block.1.fc1.weight": (8, 32, 1, 1),
                                  "features.1.0.block.2.0.weight": (16, 32, 1, 1),
                                  "features.2.0.block.0.0.weight": (96, 16, 1, 1),
                                  "features.8.0.weight": (1280, 320, 1, 1), "classifier.1.weight": (1000, 1280)}),
    "efficientnet_b1": (7794184, {"classifier.1.weight": (1000, 1280)}),
    "efficientnet_b2": (9109994, {"classifier.1.weight": (1000, 1408)}),
    "efficientnet_b3": (12233232, {"classifier.1.weight": (1000, 1536)}),
    "efficientnet_b4": (19341616, {"classifier.1.weight": (1000, 1792)}),
    "efficientnet_b5": (30389784, {"classifier.1.weight": (1000, 2048)}),
    "efficientnet_b6": (43040704, {"classifier.1.weight": (1000, 2304)}),
    "efficientnet_b7": (66347960, {"features.0.0.weight": (64, 3, 3, 3), "classifier.1.weight": (1000, 2560)}),
    "efficientnet_v2_s": (21458488, {"features.0.0.weight": (24, 3, 3, 3),
                                     "features.1.0.block.0.0.weight": (24, 24, 3, 3),
                                     "features.2.0.block.0.0.weight": (96, 24, 3, 3),
                                     "features.2.0.block.1.0.weight": (48, 96, 1, 1),
                                     "features.4.0.block.2.fc1.weight": (16, 256, 1, 1),
                                     "features.7.0.weight": (1280, 256, 1, 1), "classifier.1.weight": (1000, 1280)}),
    "efficientnet_v2_m": (54139356, {"features.8.0.weight": (1280, 512, 1, 1)}),
    "efficientnet_v2_l": (118515272, {"features.0.0.weight": (32, 3, 3, 3)}),
    "regnet_y_400mf": (4344144, {"stem.0.weight": (32, 3, 3, 3), "stem.1.running_var": (32,),
                                 "trunk_output.block1.block1-0.proj.0.weight": (48, 32, 1, 1),
                                 "trunk_output.block1.block1-0.f.a.0.weight": (48, 32, 1, 1),
                                 "trunk_output.block1.block1-0.f.b.0.weight": (48, 8, 3, 3),
                                 "trunk_output.block1.block1-0.f.se.fc1.weight": (8, 48, 1, 1),
                                 "trunk_output.block1.block1-0.f.c.1.running_mean": (48,),
                                 "fc.weight": (1000, 440)}),
    "regnet_y_800mf": (6432512, {"fc.weight": (1000, 784)}),
    "regnet_y_1_6gf": (11202430, {"fc.weight": (1000, 888)}),
    "regnet_y_3_2gf": (19436338, {"fc.weight": (1000, 1512)}),
    "regnet_y_8gf": (39381472, {"fc.weight": (1000, 2016)}),
    "regnet_y_16gf": (83590140, {"trunk_output.block1.block1-0.f.b.0.weight": (224, 112, 3, 3),
                                 "fc.weight": (1000, 3024)}),
    "regnet_y_32gf": (145046770, {"fc.weight": (1000, 3712)}),
    "regnet_y_128gf": (644812894, {"fc.weight": (1000, 7392)}),
    "regnet_x_400mf": (5495976, {"trunk_output.block1.block1-0.f.b.0.weight": (32, 16, 3, 3),
                                 "fc.weight": (1000, 400)}),
    "regnet_x_800mf": (7259656, {"fc.weight": (1000, 672)}),
    "regnet_x_1_6gf": (9190136, {"fc.weight": (1000, 912)}),
    "regnet_x_3_2gf": (15296552, {"fc.weight": (1000, 1008)}),
    "regnet_x_8gf": (39572648, {"fc.weight": (1000, 1920)}),
    "regnet_x_16gf": (54278536, {"fc.weight": (1000, 2048)}),
    "regnet_x_32gf": (107811560, {"fc.weight": (1000, 2520)}),
}

FAMILIES = ["efficientnet_*", "regnet_*", "convnext_*", "vit_*", "swin_*"]

# Models of more than 500M parameters: built and counted, but their forward (seconds of compute on
# this machine) is left to their smaller siblings, which run the same code.
GIANT = {"regnet_y_128gf"}


def test_every_model_of_these_families_has_a_spec():
    assert sorted(SPECS) == models.list_models(include=FAMILIES)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_parameter_count_state_dict_and_forward(name, cheap_init, model_checks):
    num_params, keys = SPECS[name]
    model_checks.count_keys_forward(name, num_params, keys, forward=name not in GIANT)


# Stochastic depth is off so that every block gets a gradient from a batch of two.
TRAINED = {"efficientnet_b0": {"stochastic_depth_prob": 0.0}, "efficientnet_v2_s": {"stochastic_depth_prob": 0.0},
           "regnet_y_400mf": {}, "regnet_x_400mf": {}}


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_forward_and_one_training_step(name, model_checks):
    model_checks.train_step(name, **TRAINED[name])


def test_efficientnet_options_and_errors(cheap_init):
    from embervision.models.efficientnet import EfficientNet, MBConvConfig, _efficientnet_conf

    m = models.efficientnet_b0(dropout=0.5, stochastic_depth_prob=0.3, num_classes=3)
    assert m.classifier[0].p == 0.5 and m.classifier[1].out_features == 3
    # Stochastic depth grows linearly with the block index: 0 for the first, up to p * 15/16.
    probs = [b.stochastic_depth.p for stage in m.features[1:-1] for b in stage]
    assert probs[0] == 0.0 and probs[-1] == pytest.approx(0.3 * 15 / 16)
    # B5-B7 use TensorFlow's batch-norm settings, V2 eps 1e-3.
    assert models.efficientnet_b5().features[0][1].eps == 0.001
    assert models.efficientnet_b5().features[0][1].momentum == 0.01
    assert models.efficientnet_v2_s().features[0][1].eps == 1e-3
    with pytest.raises(ValueError, match="The inverted_residual_setting should not be empty"):
        EfficientNet([], 0.2)
    with pytest.raises(TypeError, match=r"The inverted_residual_setting should be List\[MBConvConfig\]"):
        EfficientNet([[1, 3, 1, 32, 16, 1]], 0.2)
    with pytest.raises(ValueError, match="illegal stride value"):
        EfficientNet([MBConvConfig(1, 3, 3, 32, 16, 1)], 0.2)
    with pytest.raises(ValueError, match="Unsupported model type efficientnet_v3"):
        _efficientnet_conf("efficientnet_v3")


def test_regnet_block_params():
    from embervision.models.regnet import BlockParams

    # RegNetY-400MF: the stage table of the paper.
    params = BlockParams.from_init_params(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25)
    assert params.depths == [1, 3, 6, 6]
    assert params.widths == [48, 104, 208, 440]
    assert params.group_widths == [8, 8, 8, 8] and params.strides == [2, 2, 2, 2]
    for bad in (dict(w_a=-1.0), dict(w_0=0), dict(w_m=1.0), dict(w_0=50)):
        args = dict(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8) | bad
        with pytest.raises(ValueError, match="^Invalid RegNet settings$"):
            BlockParams.from_init_params(**args)
    with pytest.raises(ValueError, match="No weights available for model regnet_y_128gf"):
        models.regnet_y_128gf(pretrained=True)
    assert models.get_model_weights("regnet_y_128gf") is models.RegNet_Y_128GF_Weights
    swag = models.RegNet_Y_16GF_Weights.IMAGENET1K_SWAG_E2E_V1
    assert swag.transforms().crop_size == [384] and swag.transforms().interpolation == "bicubic"
    assert swag.meta["license"] == "https://github.com/facebookresearch/SWAG/blob/main/LICENSE"
