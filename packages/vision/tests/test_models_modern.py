"""Classification models of the later families (EfficientNet, RegNet, ConvNeXt, ViT, Swin): parameter
counts and state-dict names equal torchvision's, forward on small inputs, one training step, and the
builders' options and errors. The shared checks are conftest.ModelChecks."""

from __future__ import annotations

import pytest

import ember
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
    "convnext_tiny": (28589128, {"features.0.0.weight": (96, 3, 4, 4), "features.0.1.weight": (96,),
                                 "features.1.0.layer_scale": (96, 1, 1), "features.1.0.block.0.weight": (96, 1, 7, 7),
                                 "features.1.0.block.3.weight": (384, 96), "features.2.0.weight": (96,),
                                 "features.2.1.weight": (192, 96, 2, 2), "classifier.0.weight": (768,),
                                 "classifier.2.weight": (1000, 768)}),
    "convnext_small": (50223688, {"features.5.26.layer_scale": (384, 1, 1)}),
    "convnext_base": (88591464, {"classifier.2.weight": (1000, 1024)}),
    "convnext_large": (197767336, {"classifier.2.weight": (1000, 1536)}),
    "vit_b_16": (86567656, {"class_token": (1, 1, 768), "conv_proj.weight": (768, 3, 16, 16),
                            "encoder.pos_embedding": (1, 197, 768),
                            "encoder.layers.encoder_layer_0.ln_1.weight": (768,),
                            "encoder.layers.encoder_layer_0.self_attention.in_proj_weight": (2304, 768),
                            "encoder.layers.encoder_layer_0.self_attention.out_proj.bias": (768,),
                            "encoder.layers.encoder_layer_11.mlp.3.weight": (768, 3072),
                            "encoder.ln.weight": (768,), "heads.head.weight": (1000, 768)}),
    "vit_b_32": (88224232, {"encoder.pos_embedding": (1, 50, 768), "conv_proj.weight": (768, 3, 32, 32)}),
    "vit_l_16": (304326632, {"encoder.layers.encoder_layer_23.mlp.0.weight": (4096, 1024)}),
    "vit_l_32": (306535400, {"conv_proj.weight": (1024, 3, 32, 32)}),
    "vit_h_14": (633470440, {"encoder.pos_embedding": (1, 1370, 1280)}),
    "swin_t": (28288354, {"features.0.0.weight": (96, 3, 4, 4), "features.0.2.weight": (96,),
                          "features.1.0.attn.relative_position_bias_table": (169, 3),
                          "features.1.0.attn.relative_position_index": (2401,),
                          "features.1.0.attn.qkv.weight": (288, 96), "features.1.1.mlp.0.weight": (384, 96),
                          "features.2.reduction.weight": (192, 384), "features.2.norm.weight": (384,),
                          "norm.weight": (768,), "head.weight": (1000, 768)}),
    "swin_s": (49606258, {"features.5.17.mlp.0.weight": (1536, 384)}),
    "swin_b": (87768224, {"head.weight": (1000, 1024)}),
    "swin_v2_t": (28351570, {"features.1.0.attn.logit_scale": (3, 1, 1), "features.1.0.attn.cpb_mlp.0.weight": (512, 2),
                             "features.1.0.attn.relative_coords_table": (1, 15, 15, 2),
                             "features.1.0.attn.relative_position_index": (4096,),
                             "features.2.norm.weight": (192,), "head.weight": (1000, 768)}),
    "swin_v2_s": (49737442, {"features.5.17.attn.cpb_mlp.2.weight": (12, 512)}),
    "swin_v2_b": (87930848, {"head.weight": (1000, 1024)}),
}

FAMILIES = ["efficientnet_*", "regnet_*", "convnext_*", "vit_*", "swin_*"]

# The forward runs for one model of each code path (block type, norm settings, attention variant);
# their wider or deeper siblings (same code, other widths and depths: counts and keys check those)
# are built and counted only, their forward costing seconds here (up to 645M parameters, ViT-L/H's
# fixed 224+ pixel inputs, Swin's padded windows).
FORWARD = {"efficientnet_b0", "efficientnet_b5", "efficientnet_v2_s", "regnet_y_400mf", "regnet_x_400mf",
           "regnet_y_16gf", "convnext_tiny", "vit_b_32", "swin_t", "swin_v2_t"}
# ViT takes exactly its image_size; a 32-pixel ViT (same weights but the position embedding) runs
# the forward. vit_h_14's documented count is that of its default (SWAG, 518-pixel) weights.
BUILD_KWARGS = {"vit_h_14": {"image_size": 518}}
FORWARD_KWARGS = {"vit_b_32": {"image_size": 32}}
SIDE = {"vit_b_32": 32, "swin_t": 64, "swin_v2_t": 64}


def test_every_model_of_these_families_has_a_spec():
    assert sorted(SPECS) == models.list_models(include=FAMILIES)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_parameter_count_state_dict_and_forward(name, request, model_checks):
    num_params, keys = SPECS[name]
    request.getfixturevalue("cheap_init" if name in FORWARD else "no_init")
    model_checks.count_keys_forward(name, num_params, keys, forward=name in FORWARD, side=SIDE.get(name),
                                    forward_kwargs=FORWARD_KWARGS.get(name), **BUILD_KWARGS.get(name, {}))


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


def _tiny(kind):
    """Small members of the transformer families (same code, few channels) for the training step."""
    from embervision.models.convnext import CNBlockConfig, ConvNeXt
    from embervision.models.swin_transformer import PatchMergingV2, SwinTransformer, SwinTransformerBlockV2
    from embervision.models.vision_transformer import VisionTransformer

    if kind == "convnext":
        # layer_scale 0.1, not 1e-6: with the default, one float32 SGD step cannot move the block weights.
        return ConvNeXt([CNBlockConfig(16, 32, 2), CNBlockConfig(32, None, 2)], layer_scale=0.1, num_classes=10)
    if kind == "vit":
        return VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                                 num_classes=10)
    # 64 pixels / patch 4 = 16x16 tokens over 4x4 windows: the shifted blocks use the attention mask.
    common = dict(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                  stochastic_depth_prob=0.0, num_classes=10)
    if kind == "swin":
        return SwinTransformer(**common)
    return SwinTransformer(**common, block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)


@pytest.mark.parametrize("kind", ["convnext", "vit", "swin", "swin_v2"])
def test_transformer_families_train(kind, model_checks):
    ember.manual_seed(0)
    model = _tiny(kind)
    if kind == "vit":
        # The classifier head starts at zero: only it gets a gradient until it moves.
        with ember.no_grad():
            model.heads.head.weight.normal_(std=0.02)
    model_checks.train_step(model)


def test_swin_window_attention_matches_a_plain_reference():
    """Unshifted window attention on a map of exactly one window is plain multi-head attention with
    the relative position bias added to the logits."""
    import numpy as np

    from embervision.models.swin_transformer import ShiftedWindowAttention

    ember.manual_seed(0)
    attn = ShiftedWindowAttention(8, [3, 3], [0, 0], num_heads=2).double().eval()
    x = ember.randn(1, 3, 3, 8, dtype=ember.float64)
    out = attn(x).detach().numpy()
    tokens = x.numpy().reshape(9, 8)
    qkv = tokens @ attn.qkv.weight.detach().numpy().T + attn.qkv.bias.detach().numpy()
    q, k, v = (qkv[:, i * 8:(i + 1) * 8].reshape(9, 2, 4).transpose(1, 0, 2) for i in range(3))
    bias = attn.get_relative_position_bias().detach().numpy()[0]
    logits = q @ k.transpose(0, 2, 1) / 2.0 + bias
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    heads = (weights @ v).transpose(1, 0, 2).reshape(9, 8)
    ref = heads @ attn.proj.weight.detach().numpy().T + attn.proj.bias.detach().numpy()
    np.testing.assert_allclose(out.reshape(9, 8), ref, rtol=1e-10, atol=1e-12)
    # The bias of a token pair depends only on their offset: (0,0)→(1,1) equals (1,1)→(2,2).
    assert bias[0, 0, 4] == bias[0, 4, 8]


def test_transformer_builders_errors(cheap_init):
    from embervision.models.convnext import ConvNeXt
    from embervision.models.swin_transformer import ShiftedWindowAttention
    from embervision.models.vision_transformer import VisionTransformer

    with pytest.raises(ValueError, match="The block_setting should not be empty"):
        ConvNeXt([])
    with pytest.raises(TypeError, match=r"The block_setting should be List\[CNBlockConfig\]"):
        ConvNeXt([[96, 192, 3]])
    with pytest.raises(ValueError, match="Input shape indivisible by patch size!"):
        VisionTransformer(image_size=30, patch_size=16, num_layers=1, num_heads=1, hidden_dim=8, mlp_dim=8)
    vit = VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=1, hidden_dim=8, mlp_dim=8)
    with pytest.raises(AssertionError, match="Wrong image height! Expected 32 but got 48!"):  # torch._assert
        vit(ember.rand(1, 3, 48, 32))
    with pytest.raises(ValueError, match="window_size and shift_size must be of length 2"):
        ShiftedWindowAttention(8, [7], [0, 0], 2)
    # With weights, ViT's image_size is the weights' (and a conflict is refused before any download).
    with pytest.raises(ValueError, match="The parameter 'image_size' expected value 384 but got 224 instead."):
        models.vit_b_16(weights="IMAGENET1K_SWAG_E2E_V1", image_size=224)
    with pytest.raises(ValueError, match="No weights available for model swin_t"):
        models.swin_t(pretrained=True)
