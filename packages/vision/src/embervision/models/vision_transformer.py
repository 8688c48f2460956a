"""Vision Transformer B/16, B/32, L/16, L/32, H/14 (Dosovitskiy et al., "An Image is Worth 16x16 Words")."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import ember
from ember import nn

from ..ops.misc import MLP, Conv2dNormActivation
from ._api import Weights, WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["VisionTransformer", "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_L_16_Weights", "ViT_L_32_Weights",
           "ViT_H_14_Weights", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"]


class ConvStemConfig(NamedTuple):
    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Callable[..., nn.Module] = nn.BatchNorm2d
    activation_layer: Callable[..., nn.Module] = nn.ReLU


class MLPBlock(MLP):
    """The transformer's MLP: Linear → GELU → Dropout → Linear → Dropout (children 0, 1, 2, 3, 4)."""

    # Version 2 names the linears "0" and "3"; version 1 checkpoints call them "linear_1"/"linear_2".
    _version = 2

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for i in range(2):
                for kind in ("weight", "bias"):
                    old_key = f"{prefix}linear_{i + 1}.{kind}"
                    if old_key in state_dict:
                        state_dict[f"{prefix}{3 * i}.{kind}"] = state_dict.pop(old_key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: x + attention(LN(x)), then + MLP(LN(.))."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float,
                 norm_layer: Callable[..., nn.Module] = partial(nn.LayerNorm, eps=1e-6)) -> None:  # noqa: B008
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout,
                                                    batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        ember._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Learned position embedding, the encoder blocks, a final LayerNorm."""

    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                 dropout: float, attention_dropout: float,
                 norm_layer: Callable[..., nn.Module] = partial(nn.LayerNorm, eps=1e-6)) -> None:  # noqa: B008
        super().__init__()
        # Initialized as BERT's.
        self.pos_embedding = nn.Parameter(ember.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                        norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        ember._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        input = input + self.pos_embedding
        return self.ln(self.layers(self.dropout(input)))


class VisionTransformer(nn.Module):
    """ViT: image_size must be a multiple of patch_size, and inputs must be exactly image_size square."""

    def __init__(self, image_size: int, patch_size: int, num_layers: int, num_heads: int, hidden_dim: int,
                 mlp_dim: int, dropout: float = 0.0, attention_dropout: float = 0.0, num_classes: int = 1000,
                 representation_size: int | None = None,
                 norm_layer: Callable[..., nn.Module] = partial(nn.LayerNorm, eps=1e-6),  # noqa: B008
                 conv_stem_configs: list[ConvStemConfig] | None = None) -> None:
        super().__init__()
        if image_size % patch_size != 0:
            raise ValueError(f"Input shape indivisible by patch size! (image_size {image_size}, patch_size "
                             f"{patch_size})")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer

        if conv_stem_configs is not None:
            # A convolutional stem instead of the patchify conv ("Early Convolutions Help Transformers See Better").
            seq_proj = nn.Sequential()
            prev_channels = 3
            for i, cfg in enumerate(conv_stem_configs):
                seq_proj.add_module(f"conv_bn_relu_{i}", Conv2dNormActivation(
                    in_channels=prev_channels, out_channels=cfg.out_channels, kernel_size=cfg.kernel_size,
                    stride=cfg.stride, norm_layer=cfg.norm_layer, activation_layer=cfg.activation_layer))
                prev_channels = cfg.out_channels
            seq_proj.add_module("conv_last", nn.Conv2d(in_channels=prev_channels, out_channels=hidden_dim,
                                                       kernel_size=1))
            self.conv_proj: nn.Module = seq_proj
        else:
            self.conv_proj = nn.Conv2d(in_channels=3, out_channels=hidden_dim, kernel_size=patch_size,
                                       stride=patch_size)

        seq_length = (image_size // patch_size) ** 2
        # The class token adds one position.
        self.class_token = nn.Parameter(ember.zeros(1, 1, hidden_dim))
        seq_length += 1
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                               norm_layer)
        self.seq_length = seq_length

        heads_layers: OrderedDict[str, nn.Module] = OrderedDict()
        if representation_size is None:
            heads_layers["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads_layers["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads_layers["act"] = nn.Tanh()
            heads_layers["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads_layers)

        if isinstance(self.conv_proj, nn.Conv2d):
            fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            if self.conv_proj.bias is not None:
                nn.init.zeros_(self.conv_proj.bias)
        elif isinstance(getattr(self.conv_proj, "conv_last", None), nn.Conv2d):
            conv_last = self.conv_proj.conv_last
            nn.init.normal_(conv_last.weight, mean=0.0, std=math.sqrt(2.0 / conv_last.out_channels))
            if conv_last.bias is not None:
                nn.init.zeros_(conv_last.bias)
        if hasattr(self.heads, "pre_logits") and isinstance(self.heads.pre_logits, nn.Linear):
            fan_in = self.heads.pre_logits.in_features
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.heads.pre_logits.bias)
        if isinstance(self.heads.head, nn.Linear):
            nn.init.zeros_(self.heads.head.weight)
            nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x: ember.Tensor) -> ember.Tensor:
        """[N, 3, H, W] → [N, (H/p)*(W/p), hidden_dim] patch embeddings."""
        n, c, h, w = x.shape
        p = self.patch_size
        # ember._assert, as TorchVision's torch._assert: symbolic tracing records the checks
        ember._assert(h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!")
        ember._assert(w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!")
        n_h, n_w = h // p, w // p
        x = self.conv_proj(x)
        x = x.reshape(n, self.hidden_dim, n_h * n_w)
        return x.permute(0, 2, 1)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self._process_input(x)
        n = x.shape[0]
        batch_class_token = self.class_token.expand(n, -1, -1)
        x = ember.cat([batch_class_token, x], dim=1)
        x = self.encoder(x)
        # The class token's output classifies, as in BERT.
        return self.heads(x[:, 0])


def _vision_transformer(patch_size: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                        weights: WeightsEnum | None, progress: bool, **kwargs: Any) -> VisionTransformer:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
        # The position embedding fixes the input size the weights were trained at.
        _ovewrite_named_param(kwargs, "image_size", weights.meta["min_size"][0])
    image_size = kwargs.pop("image_size", 224)
    model = VisionTransformer(image_size=image_size, patch_size=patch_size, num_layers=num_layers,
                              num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_URL = "https://download.pytorch.org/models/"
_REF = "https://github.com/pytorch/vision/tree/main/references/classification#"
_DEIT_DOCS = """
    These weights were trained from scratch by using a modified version of `DeIT
    <https://arxiv.org/abs/2012.12877>`_'s training recipe.
"""
_NEW_DOCS = """
    These weights were trained from scratch by using a modified version of TorchVision's
    `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
"""
_SWAG_E2E_DOCS = """
    These weights are learnt via transfer learning by end-to-end fine-tuning the original
    `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.
"""
_SWAG_LINEAR_DOCS = """
    These weights are composed of the original frozen `SWAG <https://arxiv.org/abs/2201.08371>`_ trunk
    weights and a linear classifier learnt on top of them trained on ImageNet-1K data.
"""
_SWAG_LICENSE = "https://github.com/facebookresearch/SWAG/blob/main/LICENSE"


def _v1(file: str, num_params: int, recipe: str, acc1: float, acc5: float, docs: str, resize: int = 256) -> Weights:
    return _imagenet_weights(_URL + file, num_params, _REF + recipe, acc1, acc5, docs, resize_size=resize,
                             min_size=(224, 224))


def _swag(file: str, num_params: int, acc1: float, acc5: float, size: int) -> Weights:
    # End-to-end fine-tuned at `size`, or (size 224) a linear classifier on the frozen trunk.
    linear = size == 224
    return _imagenet_weights(
        _URL + file, num_params,
        "https://github.com/pytorch/vision/pull/5793" if linear else "https://github.com/facebookresearch/SWAG",
        acc1, acc5, _SWAG_LINEAR_DOCS if linear else _SWAG_E2E_DOCS, crop_size=size, resize_size=size,
        interpolation="bicubic", min_size=(size, size), license=_SWAG_LICENSE)


class ViT_B_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vit_b_16-c867db91.pth", 86567656, "vit_b_16", 81.072, 95.318, _DEIT_DOCS)
    IMAGENET1K_SWAG_E2E_V1 = _swag("vit_b_16_swag-9ac1b537.pth", 86859496, 85.304, 97.650, 384)
    IMAGENET1K_SWAG_LINEAR_V1 = _swag("vit_b_16_lc_swag-4e70ced5.pth", 86567656, 81.886, 96.180, 224)
    DEFAULT = IMAGENET1K_V1


class ViT_B_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vit_b_32-d86f8d99.pth", 88224232, "vit_b_32", 75.912, 92.466, _DEIT_DOCS)
    DEFAULT = IMAGENET1K_V1


class ViT_L_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vit_l_16-852ce7e3.pth", 304326632, "vit_l_16", 79.662, 94.638, _NEW_DOCS, resize=242)
    IMAGENET1K_SWAG_E2E_V1 = _swag("vit_l_16_swag-4f3808c9.pth", 305174504, 88.064, 98.512, 512)
    IMAGENET1K_SWAG_LINEAR_V1 = _swag("vit_l_16_lc_swag-4d563306.pth", 304326632, 85.146, 97.422, 224)
    DEFAULT = IMAGENET1K_V1


class ViT_L_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vit_l_32-c7638314.pth", 306535400, "vit_l_32", 76.972, 93.07, _DEIT_DOCS)
    DEFAULT = IMAGENET1K_V1


class ViT_H_14_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = _swag("vit_h_14_swag-80465313.pth", 633470440, 88.552, 98.694, 518)
    IMAGENET1K_SWAG_LINEAR_V1 = _swag("vit_h_14_lc_swag-c1eb923e.pth", 632045800, 85.708, 97.730, 224)
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_B_16_Weights.IMAGENET1K_V1))
def vit_b_16(*, weights: ViT_B_16_Weights | None = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-B/16; kwargs go to VisionTransformer (image_size defaults to 224, or the weights' size)."""
    return _vision_transformer(16, 12, 12, 768, 3072, ViT_B_16_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_B_32_Weights.IMAGENET1K_V1))
def vit_b_32(*, weights: ViT_B_32_Weights | None = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-B/32."""
    return _vision_transformer(32, 12, 12, 768, 3072, ViT_B_32_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_L_16_Weights.IMAGENET1K_V1))
def vit_l_16(*, weights: ViT_L_16_Weights | None = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-L/16."""
    return _vision_transformer(16, 24, 16, 1024, 4096, ViT_L_16_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_L_32_Weights.IMAGENET1K_V1))
def vit_l_32(*, weights: ViT_L_32_Weights | None = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-L/32."""
    return _vision_transformer(32, 24, 16, 1024, 4096, ViT_L_32_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def vit_h_14(*, weights: ViT_H_14_Weights | None = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-H/14 (only SWAG weights; no legacy pretrained=True)."""
    return _vision_transformer(14, 32, 16, 1280, 5120, ViT_H_14_Weights.verify(weights), progress, **kwargs)
