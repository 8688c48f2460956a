"""RAFT (Teed and Deng, "RAFT: Recurrent All-Pairs Field Transforms for Optical Flow"), large and small."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ...ops.misc import Conv2dNormActivation
from ...transforms._presets import OpticalFlow
from .._api import Weights, WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ._utils import grid_sample, make_coords_grid, upsample_flow

__all__ = ["RAFT", "raft_large", "raft_small", "Raft_Large_Weights", "Raft_Small_Weights"]


class ResidualBlock(nn.Module):
    """Two 3x3 conv-norm-ReLU layers with a (projected, when strided) shortcut. The convs keep their
    bias even with a norm layer, as the original RAFT weights have them."""

    def __init__(self, in_channels: int, out_channels: int, *, norm_layer: Callable[..., nn.Module] | None,
                 stride: int = 1, always_project: bool = False) -> None:
        super().__init__()
        self.convnormrelu1 = Conv2dNormActivation(in_channels, out_channels, norm_layer=norm_layer, kernel_size=3,
                                                  stride=stride, bias=True)
        self.convnormrelu2 = Conv2dNormActivation(out_channels, out_channels, norm_layer=norm_layer, kernel_size=3,
                                                  bias=True)
        if stride == 1 and not always_project:
            self.downsample = nn.Identity()
        else:
            self.downsample = Conv2dNormActivation(in_channels, out_channels, norm_layer=norm_layer, kernel_size=1,
                                                   stride=stride, bias=True, activation_layer=None)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        y = self.convnormrelu2(self.convnormrelu1(x))
        return self.relu(self.downsample(x) + y)


class BottleneckBlock(nn.Module):
    """1x1 → 3x3 (strided) → 1x1 conv-norm-ReLU at a quarter of the width, with a shortcut."""

    def __init__(self, in_channels: int, out_channels: int, *, norm_layer: Callable[..., nn.Module] | None,
                 stride: int = 1) -> None:
        super().__init__()
        self.convnormrelu1 = Conv2dNormActivation(in_channels, out_channels // 4, norm_layer=norm_layer, kernel_size=1,
                                                  bias=True)
        self.convnormrelu2 = Conv2dNormActivation(out_channels // 4, out_channels // 4, norm_layer=norm_layer,
                                                  kernel_size=3, stride=stride, bias=True)
        self.convnormrelu3 = Conv2dNormActivation(out_channels // 4, out_channels, norm_layer=norm_layer,
                                                  kernel_size=1, bias=True)
        self.relu = nn.ReLU(inplace=True)
        if stride == 1:
            self.downsample = nn.Identity()
        else:
            self.downsample = Conv2dNormActivation(in_channels, out_channels, norm_layer=norm_layer, kernel_size=1,
                                                   stride=stride, bias=True, activation_layer=None)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        y = self.convnormrelu3(self.convnormrelu2(self.convnormrelu1(x)))
        return self.relu(self.downsample(x) + y)


class FeatureEncoder(nn.Module):
    """A 7x7 stem and three stages of two blocks, then a 1x1 conv to layers[-1] channels; strides
    (2, 1, 2, 2) give 1/8 resolution."""

    def __init__(self, *, block: type[nn.Module] = ResidualBlock, layers: tuple[int, ...] = (64, 64, 96, 128, 256),
                 strides: tuple[int, ...] = (2, 1, 2, 2),
                 norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d) -> None:
        super().__init__()
        if len(layers) != 5:
            raise ValueError(f"The expected number of layers is 5, instead got {len(layers)}")
        self.convnormrelu = Conv2dNormActivation(3, layers[0], norm_layer=norm_layer, kernel_size=7,
                                                 stride=strides[0], bias=True)
        self.layer1 = self._make_2_blocks(block, layers[0], layers[1], norm_layer, strides[1])
        self.layer2 = self._make_2_blocks(block, layers[1], layers[2], norm_layer, strides[2])
        self.layer3 = self._make_2_blocks(block, layers[2], layers[3], norm_layer, strides[3])
        self.conv = nn.Conv2d(layers[3], layers[4], kernel_size=1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d, nn.GroupNorm)):
                if m.weight is not None:
                    nn.init.constant_(m.weight, 1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        self.output_dim = layers[-1]
        self.downsample_factor = 2 ** sum(1 for s in strides if s == 2)

    def _make_2_blocks(self, block, in_channels: int, out_channels: int, norm_layer,
                       first_stride: int) -> nn.Sequential:
        return nn.Sequential(block(in_channels, out_channels, norm_layer=norm_layer, stride=first_stride),
                             block(out_channels, out_channels, norm_layer=norm_layer, stride=1))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.convnormrelu(x)
        return self.conv(self.layer3(self.layer2(self.layer1(x))))


class MotionEncoder(nn.Module):
    """Encodes the correlation features and the current flow; outputs out_channels - 2 mixed channels
    with the flow appended."""

    def __init__(self, *, in_channels_corr: int, corr_layers: tuple[int, ...] = (256, 192),
                 flow_layers: tuple[int, ...] = (128, 64), out_channels: int = 128) -> None:
        super().__init__()
        if len(flow_layers) != 2:
            raise ValueError(f"The expected number of flow_layers is 2, instead got {len(flow_layers)}")
        if len(corr_layers) not in (1, 2):
            raise ValueError(f"The number of corr_layers should be 1 or 2, instead got {len(corr_layers)}")
        self.convcorr1 = Conv2dNormActivation(in_channels_corr, corr_layers[0], norm_layer=None, kernel_size=1)
        if len(corr_layers) == 2:
            self.convcorr2 = Conv2dNormActivation(corr_layers[0], corr_layers[1], norm_layer=None, kernel_size=3)
        else:
            self.convcorr2 = nn.Identity()
        self.convflow1 = Conv2dNormActivation(2, flow_layers[0], norm_layer=None, kernel_size=7)
        self.convflow2 = Conv2dNormActivation(flow_layers[0], flow_layers[1], norm_layer=None, kernel_size=3)
        self.conv = Conv2dNormActivation(corr_layers[-1] + flow_layers[-1], out_channels - 2, norm_layer=None,
                                         kernel_size=3)
        self.out_channels = out_channels

    def forward(self, flow: ember.Tensor, corr_features: ember.Tensor) -> ember.Tensor:
        corr = self.convcorr2(self.convcorr1(corr_features))
        flow_features = self.convflow2(self.convflow1(flow))
        corr_flow = self.conv(ember.cat([corr, flow_features], dim=1))
        return ember.cat([corr_flow, flow], dim=1)


class ConvGRU(nn.Module):
    """A GRU whose gates are convolutions over [hidden state, input]."""

    def __init__(self, *, input_size: int, hidden_size: int, kernel_size, padding) -> None:
        super().__init__()
        self.convz = nn.Conv2d(hidden_size + input_size, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convr = nn.Conv2d(hidden_size + input_size, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convq = nn.Conv2d(hidden_size + input_size, hidden_size, kernel_size=kernel_size, padding=padding)

    def forward(self, h: ember.Tensor, x: ember.Tensor) -> ember.Tensor:
        hx = ember.cat([h, x], dim=1)
        z = ember.sigmoid(self.convz(hx))
        r = ember.sigmoid(self.convr(hx))
        q = ember.tanh(self.convq(ember.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


def _pass_through_h(h: ember.Tensor, _: ember.Tensor) -> ember.Tensor:
    return h


class RecurrentBlock(nn.Module):
    """One or two ConvGRUs in sequence (large RAFT: a 1x5 then a 5x1 one)."""

    def __init__(self, *, input_size: int, hidden_size: int, kernel_size=((1, 5), (5, 1)),
                 padding=((0, 2), (2, 0))) -> None:
        super().__init__()
        if len(kernel_size) != len(padding):
            raise ValueError(f"kernel_size should have the same length as padding, instead got len(kernel_size) = "
                             f"{len(kernel_size)} and len(padding) = {len(padding)}")
        if len(kernel_size) not in (1, 2):
            raise ValueError(f"kernel_size should either 1 or 2, instead got {len(kernel_size)}")
        self.convgru1 = ConvGRU(input_size=input_size, hidden_size=hidden_size, kernel_size=kernel_size[0],
                                padding=padding[0])
        if len(kernel_size) == 2:
            self.convgru2 = ConvGRU(input_size=input_size, hidden_size=hidden_size, kernel_size=kernel_size[1],
                                    padding=padding[1])
        else:
            self.convgru2 = _pass_through_h
        self.hidden_size = hidden_size

    def forward(self, h: ember.Tensor, x: ember.Tensor) -> ember.Tensor:
        return self.convgru2(self.convgru1(h, x), x)


class FlowHead(nn.Module):
    """Two 3x3 convs from the hidden state to a flow update."""

    def __init__(self, *, in_channels: int, hidden_size: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, hidden_size, 3, padding=1)
        self.conv2 = nn.Conv2d(hidden_size, 2, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.conv2(self.relu(self.conv1(x)))


class UpdateBlock(nn.Module):
    """Motion encoder → recurrent block (input: context and motion features) → flow head."""

    def __init__(self, *, motion_encoder: MotionEncoder, recurrent_block: RecurrentBlock, flow_head: FlowHead) -> None:
        super().__init__()
        self.motion_encoder = motion_encoder
        self.recurrent_block = recurrent_block
        self.flow_head = flow_head
        self.hidden_state_size = recurrent_block.hidden_size

    def forward(self, hidden_state, context, corr_features, flow):
        motion_features = self.motion_encoder(flow, corr_features)
        hidden_state = self.recurrent_block(hidden_state, ember.cat([context, motion_features], dim=1))
        return hidden_state, self.flow_head(hidden_state)


class MaskPredictor(nn.Module):
    """The convex upsampling weights: 8 * 8 * 9 per coarse pixel (each of the 8x8 fine pixels mixes the
    coarse 3x3 neighbourhood), scaled by `multiplier` (0.25 in RAFT, to damp the gradients)."""

    def __init__(self, *, in_channels: int, hidden_size: int, multiplier: float = 0.25) -> None:
        super().__init__()
        self.convrelu = Conv2dNormActivation(in_channels, hidden_size, norm_layer=None, kernel_size=3)
        self.conv = nn.Conv2d(hidden_size, 8 * 8 * 9, 1, padding=0)
        self.multiplier = multiplier

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.multiplier * self.conv(self.convrelu(x))


class CorrBlock(nn.Module):
    """The correlation pyramid: all-pairs dot products of the two feature maps (divided by
    sqrt(channels)), average-pooled num_levels - 1 times over the second image's dims; indexing reads
    each pixel's (2 * radius + 1)² neighbourhood around its current match at every level."""

    def __init__(self, *, num_levels: int = 4, radius: int = 4) -> None:
        super().__init__()
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid: list[ember.Tensor] = []
        # The neighbourhood is a square of side 2 * radius + 1 (the L-inf ball) at each level.
        self.out_channels = num_levels * (2 * radius + 1) ** 2

    def build_pyramid(self, fmap1: ember.Tensor, fmap2: ember.Tensor) -> None:
        if tuple(fmap1.shape) != tuple(fmap2.shape):
            raise ValueError(f"Input feature maps should have the same shape, instead got {tuple(fmap1.shape)} "
                             f"(fmap1.shape) != {tuple(fmap2.shape)} (fmap2.shape)")
        # The last level must keep at least 2 values per side for the bilinear sampling.
        min_fmap_size = 2 * (2 ** (self.num_levels - 1))
        if any(size < min_fmap_size for size in fmap1.shape[-2:]):
            raise ValueError("Feature maps are too small to be down-sampled by the correlation pyramid. "
                             f"H and W of feature maps should be at least {min_fmap_size}; got: "
                             f"{tuple(fmap1.shape[-2:])}. Remember that input images to the model are downsampled "
                             f"by 8, so that means their dimensions should be at least 8 * {min_fmap_size} = "
                             f"{8 * min_fmap_size}.")
        corr_volume = self._compute_corr_volume(fmap1, fmap2)
        batch_size, h, w, num_channels, _, _ = corr_volume.shape
        corr_volume = corr_volume.reshape(batch_size * h * w, num_channels, h, w)
        self.corr_pyramid = [corr_volume]
        for _ in range(self.num_levels - 1):
            corr_volume = F.avg_pool2d(corr_volume, kernel_size=2, stride=2)
            self.corr_pyramid.append(corr_volume)

    def index_pyramid(self, centroids_coords: ember.Tensor) -> ember.Tensor:
        """centroids_coords [N, 2, h, w] (x, y in the second map's pixels) → [N, out_channels, h, w]."""
        side = 2 * self.radius + 1
        di = ember.linspace(-self.radius, self.radius, side)
        dj = ember.linspace(-self.radius, self.radius, side)
        # delta[a, b] = (di[a], dj[b]): the first neighbourhood index moves x (as torchvision orders
        # the channels, which the weights depend on).
        delta = ember.stack(list(ember.meshgrid(di, dj, indexing="ij")), dim=-1).reshape(1, side, side, 2)
        batch_size, _, h, w = centroids_coords.shape
        centroids = centroids_coords.permute(0, 2, 3, 1).reshape(batch_size * h * w, 1, 1, 2)
        indexed = []
        for corr_volume in self.corr_pyramid:
            sampled = grid_sample(corr_volume, centroids + delta, align_corners=True, mode="bilinear")
            indexed.append(sampled.reshape(batch_size, h, w, -1))
            centroids = centroids / 2
        corr_features = ember.cat(indexed, dim=-1).permute(0, 3, 1, 2).contiguous()
        expected = (batch_size, self.out_channels, h, w)
        if tuple(corr_features.shape) != expected:
            raise ValueError(f"Output shape of index pyramid is incorrect. Should be {expected}, got "
                             f"{tuple(corr_features.shape)}")
        return corr_features

    def _compute_corr_volume(self, fmap1: ember.Tensor, fmap2: ember.Tensor) -> ember.Tensor:
        batch_size, num_channels, h, w = fmap1.shape
        f1 = fmap1.reshape(batch_size, num_channels, h * w)
        f2 = fmap2.reshape(batch_size, num_channels, h * w)
        corr = ember.matmul(f1.transpose(1, 2), f2).reshape(batch_size, h, w, 1, h, w)
        return corr / (num_channels ** 0.5)


class RAFT(nn.Module):
    """RAFT: features of both images (1/8 resolution), their correlation pyramid, and num_flow_updates
    recurrent refinements of the flow from image1 to image2. forward returns the list of all
    updates' flows, each [N, 2, H, W] at full resolution (the last is the final estimate). H and W
    must be multiples of 8."""

    def __init__(self, *, feature_encoder: nn.Module, context_encoder: nn.Module, corr_block: CorrBlock,
                 update_block: UpdateBlock, mask_predictor: nn.Module | None = None) -> None:
        super().__init__()
        self.feature_encoder = feature_encoder
        self.context_encoder = context_encoder
        self.corr_block = corr_block
        self.update_block = update_block
        self.mask_predictor = mask_predictor
        if not hasattr(self.update_block, "hidden_state_size"):
            raise ValueError("The update_block parameter should expose a 'hidden_state_size' attribute.")

    def forward(self, image1: ember.Tensor, image2: ember.Tensor, num_flow_updates: int = 12) -> list[ember.Tensor]:
        batch_size, _, h, w = image1.shape
        if (h, w) != tuple(image2.shape[-2:]):
            raise ValueError(f"input images should have the same shape, instead got ({h}, {w}) != "
                             f"{tuple(image2.shape[-2:])}")
        if h % 8 != 0 or w % 8 != 0:
            raise ValueError(f"input image H and W should be divisible by 8, instead got {h} (h) and {w} (w)")
        fmaps = self.feature_encoder(ember.cat([image1, image2], dim=0))
        fmap1, fmap2 = ember.chunk(fmaps, chunks=2, dim=0)
        if tuple(fmap1.shape[-2:]) != (h // 8, w // 8):
            raise ValueError("The feature encoder should downsample H and W by 8")
        self.corr_block.build_pyramid(fmap1, fmap2)
        context_out = self.context_encoder(image1)
        if tuple(context_out.shape[-2:]) != (h // 8, w // 8):
            raise ValueError("The context encoder should downsample H and W by 8")
        # The context encoder's output splits into the recurrent units' initial hidden state and the
        # context proper, as in the paper.
        hidden_state_size = self.update_block.hidden_state_size
        out_channels_context = context_out.shape[1] - hidden_state_size
        if out_channels_context <= 0:
            raise ValueError(f"The context encoder outputs {context_out.shape[1]} channels, but it should have at "
                             f"strictly more than hidden_state={hidden_state_size} channels")
        hidden_state, context = ember.split(context_out, [hidden_state_size, out_channels_context], dim=1)
        hidden_state = ember.tanh(hidden_state)
        context = F.relu(context)
        coords0 = make_coords_grid(batch_size, h // 8, w // 8)
        coords1 = make_coords_grid(batch_size, h // 8, w // 8)
        flow_predictions = []
        for _ in range(num_flow_updates):
            coords1 = coords1.detach()  # no gradient through the correlation lookup (see the paper)
            corr_features = self.corr_block.index_pyramid(centroids_coords=coords1)
            flow = coords1 - coords0
            hidden_state, delta_flow = self.update_block(hidden_state, context, corr_features, flow)
            coords1 = coords1 + delta_flow
            up_mask = None if self.mask_predictor is None else self.mask_predictor(hidden_state)
            flow_predictions.append(upsample_flow(flow=(coords1 - coords0), up_mask=up_mask))
        return flow_predictions


_COMMON_META = {"min_size": (128, 128)}
_RAFT_URL = "https://download.pytorch.org/models/"
_PORTED = "https://github.com/princeton-vl/RAFT"
_RECIPE = "https://github.com/pytorch/vision/tree/main/references/optical_flow"
_DOCS_CT_PORTED = """These weights were ported from the original paper. They
            are trained on :class:`~torchvision.datasets.FlyingChairs` +
            :class:`~torchvision.datasets.FlyingThings3D`."""
_DOCS_CT = """These weights were trained from scratch on
            :class:`~torchvision.datasets.FlyingChairs` +
            :class:`~torchvision.datasets.FlyingThings3D`."""
_DOCS_SKHT = """The Sintel fine-tuning step is a combination of :class:`~torchvision.datasets.Sintel`,
                :class:`~torchvision.datasets.KittiFlow`, :class:`~torchvision.datasets.HD1K`, and
                :class:`~torchvision.datasets.FlyingThings3D` (clean pass)."""


def _flow_weights(file: str, num_params: int, recipe: str, metrics: dict, ops: float, file_size: float,
                  docs: str) -> Weights:
    return Weights(url=_RAFT_URL + file, transforms=OpticalFlow,
                   meta={**_COMMON_META, "num_params": num_params, "recipe": recipe, "_metrics": metrics,
                         "_ops": ops, "_file_size": file_size, "_docs": docs})


def _sintel_kitti_train(clean: float, final: float, per_image_epe: float, fl_all: float) -> dict:
    return {"Sintel-Train-Cleanpass": {"epe": clean}, "Sintel-Train-Finalpass": {"epe": final},
            "Kitti-Train": {"per_image_epe": per_image_epe, "fl_all": fl_all}}


class Raft_Large_Weights(WeightsEnum):
    """epe: end-point error (pixels) averaged over all pixels; per_image_epe: averaged per image first
    (Kitti's "Fl-epe"); fl_all: the Kitti share of pixels with epe >= 3 px and >= 5% of the flow norm."""

    C_T_V1 = _flow_weights("raft_large_C_T_V1-22a6c225.pth", 5257536, _PORTED,
                           _sintel_kitti_train(1.4411, 2.7894, 5.0172, 17.4506), 211.007, 20.129, _DOCS_CT_PORTED)
    C_T_V2 = _flow_weights("raft_large_C_T_V2-1bb1363a.pth", 5257536, _RECIPE,
                           _sintel_kitti_train(1.3822, 2.7161, 4.5118, 16.0679), 211.007, 20.129, _DOCS_CT)
    C_T_SKHT_V1 = _flow_weights(
        "raft_large_C_T_SKHT_V1-0b8c9e55.pth", 5257536, _PORTED,
        {"Sintel-Test-Cleanpass": {"epe": 1.94}, "Sintel-Test-Finalpass": {"epe": 3.18}}, 211.007, 20.129,
        "These weights were ported from the original paper. They are trained on FlyingChairs + FlyingThings3D and "
        "fine-tuned on Sintel. " + _DOCS_SKHT)
    C_T_SKHT_V2 = _flow_weights(
        "raft_large_C_T_SKHT_V2-ff5fadd5.pth", 5257536, _RECIPE,
        {"Sintel-Test-Cleanpass": {"epe": 1.819}, "Sintel-Test-Finalpass": {"epe": 3.067}}, 211.007, 20.129,
        "These weights were trained from scratch. They are pre-trained on FlyingChairs + FlyingThings3D and then "
        "fine-tuned on Sintel. " + _DOCS_SKHT)
    C_T_SKHT_K_V1 = _flow_weights(
        "raft_large_C_T_SKHT_K_V1-4a6a5039.pth", 5257536, _PORTED, {"Kitti-Test": {"fl_all": 5.10}}, 211.007, 20.129,
        "These weights were ported from the original paper. They are pre-trained on FlyingChairs + "
        "FlyingThings3D, fine-tuned on Sintel, and then fine-tuned on KittiFlow.")
    C_T_SKHT_K_V2 = _flow_weights(
        "raft_large_C_T_SKHT_K_V2-b5c70766.pth", 5257536, _RECIPE, {"Kitti-Test": {"fl_all": 5.19}}, 211.007, 20.129,
        "These weights were trained from scratch. They are pre-trained on FlyingChairs + FlyingThings3D, "
        "fine-tuned on Sintel, and then fine-tuned on KittiFlow.")
    DEFAULT = C_T_SKHT_V2


class Raft_Small_Weights(WeightsEnum):
    """Metrics as Raft_Large_Weights."""

    C_T_V1 = _flow_weights("raft_small_C_T_V1-ad48884c.pth", 990162, _PORTED,
                           _sintel_kitti_train(2.1231, 3.2790, 7.6557, 25.2801), 47.655, 3.821, _DOCS_CT_PORTED)
    C_T_V2 = _flow_weights("raft_small_C_T_V2-01064c6d.pth", 990162, _RECIPE,
                           _sintel_kitti_train(1.9901, 3.2831, 7.5978, 25.2369), 47.655, 3.821, _DOCS_CT)
    DEFAULT = C_T_V2


def _raft(*, weights: WeightsEnum | None = None, progress: bool = False, feature_encoder_layers,
          feature_encoder_block, feature_encoder_norm_layer, context_encoder_layers, context_encoder_block,
          context_encoder_norm_layer, corr_block_num_levels, corr_block_radius, motion_encoder_corr_layers,
          motion_encoder_flow_layers, motion_encoder_out_channels, recurrent_block_hidden_state_size,
          recurrent_block_kernel_size, recurrent_block_padding, flow_head_hidden_size, use_mask_predictor,
          **kwargs: Any) -> RAFT:
    # Any component may come ready-made through kwargs (feature_encoder=..., update_block=..., ...).
    feature_encoder = kwargs.pop("feature_encoder", None) or FeatureEncoder(
        block=feature_encoder_block, layers=feature_encoder_layers, norm_layer=feature_encoder_norm_layer)
    context_encoder = kwargs.pop("context_encoder", None) or FeatureEncoder(
        block=context_encoder_block, layers=context_encoder_layers, norm_layer=context_encoder_norm_layer)
    corr_block = kwargs.pop("corr_block", None) or CorrBlock(num_levels=corr_block_num_levels,
                                                             radius=corr_block_radius)
    update_block = kwargs.pop("update_block", None)
    if update_block is None:
        motion_encoder = MotionEncoder(in_channels_corr=corr_block.out_channels, corr_layers=motion_encoder_corr_layers,
                                       flow_layers=motion_encoder_flow_layers, out_channels=motion_encoder_out_channels)
        # The context encoder's channels beyond the hidden state are the context (see RAFT.forward).
        out_channels_context = context_encoder_layers[-1] - recurrent_block_hidden_state_size
        recurrent_block = RecurrentBlock(input_size=motion_encoder.out_channels + out_channels_context,
                                         hidden_size=recurrent_block_hidden_state_size,
                                         kernel_size=recurrent_block_kernel_size, padding=recurrent_block_padding)
        flow_head = FlowHead(in_channels=recurrent_block_hidden_state_size, hidden_size=flow_head_hidden_size)
        update_block = UpdateBlock(motion_encoder=motion_encoder, recurrent_block=recurrent_block, flow_head=flow_head)
    mask_predictor = kwargs.pop("mask_predictor", None)
    if mask_predictor is None and use_mask_predictor:
        mask_predictor = MaskPredictor(in_channels=recurrent_block_hidden_state_size, hidden_size=256,
                                       multiplier=0.25)
    model = RAFT(feature_encoder=feature_encoder, context_encoder=context_encoder, corr_block=corr_block,
                 update_block=update_block, mask_predictor=mask_predictor, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", Raft_Large_Weights.C_T_SKHT_V2))
def raft_large(*, weights: Raft_Large_Weights | None = None, progress: bool = True, **kwargs: Any) -> RAFT:
    """RAFT (large): residual encoders (instance norm for the features, batch norm for the context),
    a 4-level radius-4 correlation pyramid, two separable ConvGRUs and convex upsampling. kwargs go to
    RAFT (or replace a component: feature_encoder, context_encoder, corr_block, update_block,
    mask_predictor)."""
    weights = Raft_Large_Weights.verify(weights)
    return _raft(weights=weights, progress=progress, feature_encoder_layers=(64, 64, 96, 128, 256),
                 feature_encoder_block=ResidualBlock, feature_encoder_norm_layer=nn.InstanceNorm2d,
                 context_encoder_layers=(64, 64, 96, 128, 256), context_encoder_block=ResidualBlock,
                 context_encoder_norm_layer=nn.BatchNorm2d, corr_block_num_levels=4, corr_block_radius=4,
                 motion_encoder_corr_layers=(256, 192), motion_encoder_flow_layers=(128, 64),
                 motion_encoder_out_channels=128, recurrent_block_hidden_state_size=128,
                 recurrent_block_kernel_size=((1, 5), (5, 1)), recurrent_block_padding=((0, 2), (2, 0)),
                 flow_head_hidden_size=256, use_mask_predictor=True, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Raft_Small_Weights.C_T_V2))
def raft_small(*, weights: Raft_Small_Weights | None = None, progress: bool = True, **kwargs: Any) -> RAFT:
    """RAFT (small): bottleneck encoders (no norm in the context encoder), a radius-3 pyramid, one 3x3
    ConvGRU and bilinear upsampling; arguments as raft_large."""
    weights = Raft_Small_Weights.verify(weights)
    return _raft(weights=weights, progress=progress, feature_encoder_layers=(32, 32, 64, 96, 128),
                 feature_encoder_block=BottleneckBlock, feature_encoder_norm_layer=nn.InstanceNorm2d,
                 context_encoder_layers=(32, 32, 64, 96, 160), context_encoder_block=BottleneckBlock,
                 context_encoder_norm_layer=None, corr_block_num_levels=4, corr_block_radius=3,
                 motion_encoder_corr_layers=(96,), motion_encoder_flow_layers=(64, 32),
                 motion_encoder_out_channels=82, recurrent_block_hidden_state_size=96,
                 recurrent_block_kernel_size=(3,), recurrent_block_padding=(1,), flow_head_hidden_size=128,
                 use_mask_predictor=False, **kwargs)
