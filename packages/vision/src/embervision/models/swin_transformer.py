"""Swin Transformer T/S/B (Liu et al., 2021) and Swin Transformer V2 T/S/B (Liu et al., 2022)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
import ember.fx
from ember import nn
from ember.nn import functional as F

from ..ops.misc import MLP, Permute
from ..ops.stochastic_depth import StochasticDepth
from ._api import Weights, WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["SwinTransformer", "Swin_T_Weights", "Swin_S_Weights", "Swin_B_Weights", "Swin_V2_T_Weights",
           "Swin_V2_S_Weights", "Swin_V2_B_Weights", "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s",
           "swin_v2_b"]


def _patch_merging_pad(x: ember.Tensor) -> ember.Tensor:
    """[..., H, W, C] → [..., ceil(H/2), ceil(W/2), 4C]: each 2x2 neighbourhood's channels side by side."""
    h, w, _ = x.shape[-3:]
    x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
    x0 = x[..., 0::2, 0::2, :]
    x1 = x[..., 1::2, 0::2, :]
    x2 = x[..., 0::2, 1::2, :]
    x3 = x[..., 1::2, 1::2, :]
    return ember.cat([x0, x1, x2, x3], -1)


ember.fx.wrap("_patch_merging_pad")  # one node when traced: its shape arithmetic is not traceable


def _get_relative_position_bias(relative_position_bias_table: ember.Tensor, relative_position_index: ember.Tensor,
                                window_size: list[int]) -> ember.Tensor:
    n = window_size[0] * window_size[1]
    bias = relative_position_bias_table[relative_position_index]
    bias = bias.view(n, n, -1)
    return bias.permute(2, 0, 1).contiguous().unsqueeze(0)


ember.fx.wrap("_get_relative_position_bias")


class PatchMerging(nn.Module):
    """Halve the resolution and double the channels: concat 2x2 neighbours → LayerNorm → Linear."""

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm) -> None:
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.reduction(self.norm(_patch_merging_pad(x)))


class PatchMergingV2(nn.Module):
    """Swin V2's patch merging: the norm comes after the reduction."""

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm) -> None:
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.norm(self.reduction(_patch_merging_pad(x)))


def shifted_window_attention(input: ember.Tensor, qkv_weight: ember.Tensor, proj_weight: ember.Tensor,
                             relative_position_bias: ember.Tensor, window_size: list[int], num_heads: int,
                             shift_size: list[int], attention_dropout: float = 0.0, dropout: float = 0.0,
                             qkv_bias: ember.Tensor | None = None, proj_bias: ember.Tensor | None = None,
                             logit_scale: ember.Tensor | None = None, training: bool = True) -> ember.Tensor:
    """Window multi-head self-attention over [B, H, W, C], the windows cyclically shifted by shift_size.

    The map is zero-padded to whole windows; with a shift, a mask keeps tokens that the roll brought
    together from distant parts of the image from attending to each other. logit_scale selects Swin
    V2's scaled cosine attention.
    """
    b, h, w, c = input.shape
    pad_r = (window_size[1] - w % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - h % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_h, pad_w, _ = x.shape

    shift_size = list(shift_size)
    # A window as large as the map sees everything: no shift.
    if window_size[0] >= pad_h:
        shift_size[0] = 0
    if window_size[1] >= pad_w:
        shift_size[1] = 0
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))

    # Partition into windows: [B * nW, Wh * Ww, C].
    num_windows = (pad_h // window_size[0]) * (pad_w // window_size[1])
    x = x.reshape(b, pad_h // window_size[0], window_size[0], pad_w // window_size[1], window_size[1], c)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b * num_windows, window_size[0] * window_size[1], c)

    if logit_scale is not None and qkv_bias is not None:
        # Swin V2 has no key bias.
        length = qkv_bias.numel() // 3
        qkv_bias = ember.cat([qkv_bias[:length], ember.zeros_like(qkv_bias[length:2 * length]),
                              qkv_bias[2 * length:]])
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.shape[0], x.shape[1], 3, num_heads, c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * ember.clamp(logit_scale, max=math.log(100.0)).exp()
    else:
        q = q * (c // num_heads) ** -0.5
        attn = q.matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias

    if sum(shift_size) > 0:
        # Label the regions the roll stitched together; tokens of different regions get -100.
        attn_mask = x.new_zeros((pad_h, pad_w))
        h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
        w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
        count = 0
        for hs in h_slices:
            for ws in w_slices:
                attn_mask[hs[0]:hs[1], ws[0]:ws[1]] = count
                count += 1
        attn_mask = attn_mask.view(pad_h // window_size[0], window_size[0], pad_w // window_size[1], window_size[1])
        attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(num_windows, window_size[0] * window_size[1])
        attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        attn = attn.view(x.shape[0] // num_windows, num_windows, num_heads, x.shape[1], x.shape[1])
        attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.shape[1], x.shape[1])

    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout, training=training)
    x = attn.matmul(v).transpose(1, 2).reshape(x.shape[0], x.shape[1], c)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout, training=training)

    # Reverse the windows, the shift and the padding.
    x = x.view(b, pad_h // window_size[0], pad_w // window_size[1], window_size[0], window_size[1], c)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b, pad_h, pad_w, c)
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :h, :w, :].contiguous()


ember.fx.wrap("shifted_window_attention")  # its padding and shift depend on the map's size


class ShiftedWindowAttention(nn.Module):
    """Window attention with a learned relative position bias table ((2Wh-1)(2Ww-1) × heads)."""

    def __init__(self, dim: int, window_size: list[int], shift_size: list[int], num_heads: int,
                 qkv_bias: bool = True, proj_bias: bool = True, attention_dropout: float = 0.0,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size = window_size
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self) -> None:
        self.relative_position_bias_table = nn.Parameter(
            ember.zeros((2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1), self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self) -> None:
        # For each pair of tokens of a window, the table row of their offset (dy, dx).
        coords_h = ember.arange(self.window_size[0])
        coords_w = ember.arange(self.window_size[1])
        coords = ember.stack(ember.meshgrid(coords_h, coords_w, indexing="ij"))
        coords_flatten = ember.flatten(coords, 1)
        relative = (coords_flatten[:, :, None] - coords_flatten[:, None, :]).permute(1, 2, 0)
        dy = (relative[:, :, 0] + self.window_size[0] - 1) * (2 * self.window_size[1] - 1)
        dx = relative[:, :, 1] + self.window_size[1] - 1
        self.register_buffer("relative_position_index", (dy + dx).flatten())

    def get_relative_position_bias(self) -> ember.Tensor:
        return _get_relative_position_bias(self.relative_position_bias_table, self.relative_position_index,
                                           self.window_size)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return shifted_window_attention(x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(),
                                        self.window_size, self.num_heads, shift_size=self.shift_size,
                                        attention_dropout=self.attention_dropout, dropout=self.dropout,
                                        qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, training=self.training)


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """Swin V2: scaled cosine attention and a continuous position bias from a small MLP over
    log-spaced relative coordinates."""

    def __init__(self, dim: int, window_size: list[int], shift_size: list[int], num_heads: int,
                 qkv_bias: bool = True, proj_bias: bool = True, attention_dropout: float = 0.0,
                 dropout: float = 0.0) -> None:
        super().__init__(dim, window_size, shift_size, num_heads, qkv_bias=qkv_bias, proj_bias=proj_bias,
                         attention_dropout=attention_dropout, dropout=dropout)
        self.logit_scale = nn.Parameter(ember.log(10 * ember.ones((num_heads, 1, 1))))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True),
                                     nn.Linear(512, num_heads, bias=False))
        if qkv_bias:
            length = self.qkv.bias.numel() // 3
            with ember.no_grad():
                self.qkv.bias[length:2 * length].zero_()

    def define_relative_position_bias_table(self) -> None:
        rel_h = ember.arange(-(self.window_size[0] - 1), self.window_size[0], dtype=ember.float32)
        rel_w = ember.arange(-(self.window_size[1] - 1), self.window_size[1], dtype=ember.float32)
        table = ember.stack(ember.meshgrid(rel_h, rel_w, indexing="ij")).permute(1, 2, 0).unsqueeze(0)
        # Normalized to [-8, 8], then log-spaced.
        scale = ember.tensor([8.0 / (self.window_size[0] - 1), 8.0 / (self.window_size[1] - 1)])
        table = table * scale
        table = ember.sign(table) * ember.log2(ember.abs(table) + 1.0) / 3.0
        self.register_buffer("relative_coords_table", table.contiguous())

    def get_relative_position_bias(self) -> ember.Tensor:
        bias = _get_relative_position_bias(self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads),
                                           self.relative_position_index, self.window_size)
        return 16 * ember.sigmoid(bias)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return shifted_window_attention(x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(),
                                        self.window_size, self.num_heads, shift_size=self.shift_size,
                                        attention_dropout=self.attention_dropout, dropout=self.dropout,
                                        qkv_bias=self.qkv.bias, proj_bias=self.proj.bias,
                                        logit_scale=self.logit_scale, training=self.training)


class SwinTransformerBlock(nn.Module):
    """Pre-norm block: x + SD(attn(LN(x))), then + SD(MLP(LN(.)))."""

    def __init__(self, dim: int, num_heads: int, window_size: list[int], shift_size: list[int],
                 mlp_ratio: float = 4.0, dropout: float = 0.0, attention_dropout: float = 0.0,
                 stochastic_depth_prob: float = 0.0, norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
                 attn_layer: Callable[..., nn.Module] = ShiftedWindowAttention) -> None:
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(dim, window_size, shift_size, num_heads, attention_dropout=attention_dropout,
                               dropout=dropout)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformerBlockV2(SwinTransformerBlock):
    """Swin V2's res-post-norm block: the norms follow the attention and the MLP."""

    def __init__(self, dim: int, num_heads: int, window_size: list[int], shift_size: list[int],
                 mlp_ratio: float = 4.0, dropout: float = 0.0, attention_dropout: float = 0.0,
                 stochastic_depth_prob: float = 0.0, norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
                 attn_layer: Callable[..., nn.Module] = ShiftedWindowAttentionV2) -> None:
        super().__init__(dim, num_heads, window_size, shift_size, mlp_ratio=mlp_ratio, dropout=dropout,
                         attention_dropout=attention_dropout, stochastic_depth_prob=stochastic_depth_prob,
                         norm_layer=norm_layer, attn_layer=attn_layer)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        return x + self.stochastic_depth(self.norm2(self.mlp(x)))


class SwinTransformer(nn.Module):
    """Patch embedding, stages of (shifted) window blocks with patch merging between them, and a
    linear head over the averaged last stage. Any input size works: windows pad the map."""

    def __init__(self, patch_size: list[int], embed_dim: int, depths: list[int], num_heads: list[int],
                 window_size: list[int], mlp_ratio: float = 4.0, dropout: float = 0.0, attention_dropout: float = 0.0,
                 stochastic_depth_prob: float = 0.1, num_classes: int = 1000,
                 norm_layer: Callable[..., nn.Module] | None = None, block: Callable[..., nn.Module] | None = None,
                 downsample_layer: Callable[..., nn.Module] = PatchMerging) -> None:
        super().__init__()
        self.num_classes = num_classes
        if block is None:
            block = SwinTransformerBlock
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-5)

        layers: list[nn.Module] = [nn.Sequential(
            nn.Conv2d(3, embed_dim, kernel_size=(patch_size[0], patch_size[1]), stride=(patch_size[0], patch_size[1])),
            Permute([0, 2, 3, 1]),
            norm_layer(embed_dim),
        )]
        total_stage_blocks = sum(depths)
        stage_block_id = 0
        for i_stage in range(len(depths)):
            stage: list[nn.Module] = []
            dim = embed_dim * 2 ** i_stage
            for i_layer in range(depths[i_stage]):
                sd_prob = stochastic_depth_prob * float(stage_block_id) / (total_stage_blocks - 1)
                # Every other block shifts its windows by half a window.
                stage.append(block(dim, num_heads[i_stage], window_size=window_size,
                                   shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                                   mlp_ratio=mlp_ratio, dropout=dropout, attention_dropout=attention_dropout,
                                   stochastic_depth_prob=sd_prob, norm_layer=norm_layer))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
            if i_stage < (len(depths) - 1):
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)

        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])  # B H W C → B C H W
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.norm(self.features(x))
        x = self.flatten(self.avgpool(self.permute(x)))
        return self.head(x)


def _swin_transformer(patch_size: list[int], embed_dim: int, depths: list[int], num_heads: list[int],
                      window_size: list[int], stochastic_depth_prob: float, weights: WeightsEnum | None,
                      progress: bool, **kwargs: Any) -> SwinTransformer:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = SwinTransformer(patch_size=patch_size, embed_dim=embed_dim, depths=depths, num_heads=num_heads,
                            window_size=window_size, stochastic_depth_prob=stochastic_depth_prob, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_DOCS = "These weights reproduce closely the results of the paper using a similar training recipe."
_REF = "https://github.com/pytorch/vision/tree/main/references/classification#"


def _entry(file: str, num_params: int, acc1: float, acc5: float, crop: int, resize: int, v2: bool) -> Weights:
    return _imagenet_weights("https://download.pytorch.org/models/" + file, num_params,
                             _REF + ("swintransformer-v2" if v2 else "swintransformer"), acc1, acc5, _DOCS,
                             crop_size=crop, resize_size=resize, interpolation="bicubic", min_size=(crop, crop))


class Swin_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("swin_t-704ceda3.pth", 28288354, 81.474, 95.776, 224, 232, v2=False)
    DEFAULT = IMAGENET1K_V1


class Swin_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("swin_s-5e29d889.pth", 49606258, 83.196, 96.360, 224, 246, v2=False)
    DEFAULT = IMAGENET1K_V1


class Swin_B_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("swin_b-68c6b09e.pth", 87768224, 83.582, 96.640, 224, 238, v2=False)
    DEFAULT = IMAGENET1K_V1


class Swin_V2_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("swin_v2_t-b137f0e2.pth", 28351570, 82.072, 96.132, 256, 260, v2=True)
    DEFAULT = IMAGENET1K_V1


class Swin_V2_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("swin_v2_s-637d8ceb.pth", 49737442, 83.712, 96.816, 256, 260, v2=True)
    DEFAULT = IMAGENET1K_V1


class Swin_V2_B_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("swin_v2_b-781e5279.pth", 87930848, 84.112, 96.864, 256, 272, v2=True)
    DEFAULT = IMAGENET1K_V1


_V2 = {"block": SwinTransformerBlockV2, "downsample_layer": PatchMergingV2}


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def swin_t(*, weights: Swin_T_Weights | None = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin-T; kwargs go to SwinTransformer (stochastic_depth_prob defaults to 0.2)."""
    weights = Swin_T_Weights.verify(weights)
    return _swin_transformer([4, 4], 96, [2, 2, 6, 2], [3, 6, 12, 24], [7, 7], kwargs.pop("stochastic_depth_prob", 0.2),
                             weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def swin_s(*, weights: Swin_S_Weights | None = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin-S (stochastic_depth_prob 0.3)."""
    weights = Swin_S_Weights.verify(weights)
    return _swin_transformer([4, 4], 96, [2, 2, 18, 2], [3, 6, 12, 24], [7, 7],
                             kwargs.pop("stochastic_depth_prob", 0.3), weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def swin_b(*, weights: Swin_B_Weights | None = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin-B (stochastic_depth_prob 0.5)."""
    weights = Swin_B_Weights.verify(weights)
    return _swin_transformer([4, 4], 128, [2, 2, 18, 2], [4, 8, 16, 32], [7, 7],
                             kwargs.pop("stochastic_depth_prob", 0.5), weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def swin_v2_t(*, weights: Swin_V2_T_Weights | None = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin V2-T (8x8 windows, stochastic_depth_prob 0.2)."""
    weights = Swin_V2_T_Weights.verify(weights)
    return _swin_transformer([4, 4], 96, [2, 2, 6, 2], [3, 6, 12, 24], [8, 8], kwargs.pop("stochastic_depth_prob", 0.2),
                             weights, progress, **_V2, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def swin_v2_s(*, weights: Swin_V2_S_Weights | None = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin V2-S (stochastic_depth_prob 0.3)."""
    weights = Swin_V2_S_Weights.verify(weights)
    return _swin_transformer([4, 4], 96, [2, 2, 18, 2], [3, 6, 12, 24], [8, 8],
                             kwargs.pop("stochastic_depth_prob", 0.3), weights, progress, **_V2, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", None))
def swin_v2_b(*, weights: Swin_V2_B_Weights | None = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin V2-B (stochastic_depth_prob 0.5)."""
    weights = Swin_V2_B_Weights.verify(weights)
    return _swin_transformer([4, 4], 128, [2, 2, 18, 2], [4, 8, 16, 32], [8, 8],
                             kwargs.pop("stochastic_depth_prob", 0.5), weights, progress, **_V2, **kwargs)
