"""Wav2Vec2Model and HuBERTPretrainModel with torchaudio's builders (wav2vec2_model,
wav2vec2_base/large/large_lv60k, hubert_base/large/xlarge, hubert_pretrain_model/base/large/
xlarge, wavlm_model/base/large). Configurations, argument names and defaults are torchaudio's."""

from __future__ import annotations

import math

import ember
from ember import nn

from .._utils import _check_lengths
from . import components

__all__ = [
    "Wav2Vec2Model", "HuBERTPretrainModel", "wav2vec2_model", "wav2vec2_base", "wav2vec2_large",
    "wav2vec2_large_lv60k", "hubert_base", "hubert_large", "hubert_xlarge",
    "hubert_pretrain_model", "hubert_pretrain_base", "hubert_pretrain_large",
    "hubert_pretrain_xlarge", "wavlm_model", "wavlm_base", "wavlm_large",
]

_DEFAULT_CONV_LAYERS = [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2


def _check_waveforms(waveforms: ember.Tensor, lengths: ember.Tensor | None) -> None:
    if not isinstance(waveforms, ember.Tensor) or waveforms.ndim != 2:
        got = list(waveforms.shape) if isinstance(waveforms, ember.Tensor) else type(waveforms).__name__
        raise ValueError(f"Expected the input Tensor to be 2D (batch, time). Found: {got}")
    if lengths is not None:
        _check_lengths(lengths, waveforms.shape[0], waveforms.shape[1], "waveform samples")


class Wav2Vec2Model(nn.Module):
    r"""wav2vec 2.0 / HuBERT acoustic model, as ``torchaudio.models.Wav2Vec2Model``.

    Build one with :func:`wav2vec2_model` or a named builder.

    Args:
        feature_extractor (nn.Module): waveforms -> frame features.
        encoder (nn.Module): frame features -> contextual features.
        aux (nn.Module or None): optional head applied to the encoder output.
    """

    def __init__(self, feature_extractor: nn.Module, encoder: nn.Module,
                 aux: nn.Module | None = None):
        super().__init__()
        self.feature_extractor = feature_extractor
        self.encoder = encoder
        self.aux = aux

    def extract_features(self, waveforms: ember.Tensor, lengths: ember.Tensor | None = None,
                         num_layers: int | None = None) -> tuple[list[ember.Tensor], ember.Tensor | None]:
        r"""Outputs of the transformer layers (the first ``num_layers``, or all).

        Args:
            waveforms (Tensor): (batch, samples).
            lengths (Tensor or None): (batch,) valid samples; None: all valid.
            num_layers (int or None): stop after this many layers.

        Returns:
            (List[Tensor], Tensor or None): one (batch, frames, dim) tensor per layer and the
            valid frame counts (None when ``lengths`` is None).
        """
        _check_waveforms(waveforms, lengths)
        x, lengths = self.feature_extractor(waveforms, lengths)
        return self.encoder.extract_features(x, lengths, num_layers), lengths

    def forward(self, waveforms: ember.Tensor, lengths: ember.Tensor | None = None):
        r"""Encoder output (through ``aux`` when present) and valid frame counts.

        Args:
            waveforms (Tensor): (batch, samples).
            lengths (Tensor or None): (batch,) valid samples; None: all valid.

        Returns:
            (Tensor, Tensor or None): (batch, frames, dim or aux_num_out) and (batch,) lengths.
        """
        _check_waveforms(waveforms, lengths)
        x, lengths = self.feature_extractor(waveforms, lengths)
        x = self.encoder(x, lengths)
        if self.aux is not None:
            x = self.aux(x)
        return x, lengths


class HuBERTPretrainModel(nn.Module):
    r"""HuBERT pre-training model, as ``torchaudio.models.HuBERTPretrainModel``.

    Args:
        wav2vec2 (Wav2Vec2Model): the encoder.
        mask_generator (nn.Module): masks random spans of the projected features.
        logit_generator (nn.Module): scores masked and unmasked frames against label embeddings.
        feature_grad_mult (float or None): scales the feature extractor's gradients (in (0, 1)).
    """

    def __init__(self, wav2vec2: Wav2Vec2Model, mask_generator: nn.Module,
                 logit_generator: nn.Module, feature_grad_mult: float | None):
        super().__init__()
        self.wav2vec2 = wav2vec2
        self.mask_generator = mask_generator
        self.logit_generator = logit_generator
        if feature_grad_mult is not None and not 0.0 < feature_grad_mult < 1.0:
            raise ValueError("The value of `feature_grad_mult` must be ``None``or between (0, 1). "
                             f"Found {feature_grad_mult}")
        self.feature_grad_mult = feature_grad_mult

    def forward(self, waveforms: ember.Tensor, labels: ember.Tensor,
                audio_lengths: ember.Tensor | None = None):
        r"""Masked-prediction logits.

        Args:
            waveforms (Tensor): (batch, samples).
            labels (Tensor): (batch, frames) frame labels (cluster ids).
            audio_lengths (Tensor or None): (batch,) valid samples.

        Returns:
            (Tensor, Tensor, Tensor): logits of masked frames (masked, num_classes + 1), of
            unmasked valid frames (unmasked, num_classes + 1) — column 0 is the target — and the
            mean squared feature value (for the feature penalty).
        """
        _check_waveforms(waveforms, audio_lengths)
        x, lengths = self.wav2vec2.feature_extractor(waveforms, audio_lengths)
        if self.feature_grad_mult is not None and self.feature_grad_mult < 1.0:
            x = components.GradMultiply.apply(x, self.feature_grad_mult)
        features_pen = x.float().pow(2).mean()
        padding_mask = None if lengths is None else components._get_padding_mask(x, lengths)
        x, attention_mask = self.wav2vec2.encoder._preprocess(x, lengths)
        x, mask = self.mask_generator(x, padding_mask)
        x = self.wav2vec2.encoder.transformer(x, attention_mask=attention_mask)
        if labels.ndim != 2 or x.shape[1] != labels.shape[1]:
            raise ValueError("The length of label must match that of HuBERT model output")
        if mask is None:
            mask = ember.zeros(x.shape[0], x.shape[1], dtype=ember.bool, device=x.device)
        if padding_mask is not None:
            mask_m = ~padding_mask & mask
            mask_u = ~padding_mask & ~mask_m
        else:
            mask_m = mask
            mask_u = ~mask_m
        logit_m, logit_u = self.logit_generator(x, labels, mask_m, mask_u)
        return logit_m, logit_u, features_pen


def wav2vec2_model(extractor_mode: str,
                   extractor_conv_layer_config: list[tuple[int, int, int]] | None,
                   extractor_conv_bias: bool, encoder_embed_dim: int,
                   encoder_projection_dropout: float, encoder_pos_conv_kernel: int,
                   encoder_pos_conv_groups: int, encoder_num_layers: int, encoder_num_heads: int,
                   encoder_attention_dropout: float, encoder_ff_interm_features: int,
                   encoder_ff_interm_dropout: float, encoder_dropout: float,
                   encoder_layer_norm_first: bool, encoder_layer_drop: float,
                   aux_num_out: int | None) -> Wav2Vec2Model:
    r"""Builds a custom :class:`Wav2Vec2Model` (arguments as ``torchaudio.models.wav2vec2_model``).

    ``extractor_conv_layer_config`` None means ``[(512, 10, 5)] + [(512, 3, 2)] * 4 +
    [(512, 2, 2)] * 2``; ``aux_num_out`` adds a final linear layer.
    """
    if extractor_conv_layer_config is None:
        extractor_conv_layer_config = _DEFAULT_CONV_LAYERS
    feature_extractor = components._get_feature_extractor(
        extractor_mode, extractor_conv_layer_config, extractor_conv_bias)
    encoder = components._get_encoder(
        in_features=extractor_conv_layer_config[-1][0], embed_dim=encoder_embed_dim,
        dropout_input=encoder_projection_dropout, pos_conv_kernel=encoder_pos_conv_kernel,
        pos_conv_groups=encoder_pos_conv_groups, num_layers=encoder_num_layers,
        num_heads=encoder_num_heads, attention_dropout=encoder_attention_dropout,
        ff_interm_features=encoder_ff_interm_features, ff_interm_dropout=encoder_ff_interm_dropout,
        dropout=encoder_dropout, layer_norm_first=encoder_layer_norm_first,
        layer_drop=encoder_layer_drop)
    aux = None
    if aux_num_out is not None:
        aux = nn.Linear(in_features=encoder_embed_dim, out_features=aux_num_out)
    return Wav2Vec2Model(feature_extractor, encoder, aux)


def _build(mode, bias, dim, layers, heads, ffn, norm_first, dropouts, aux_num_out):
    proj, att, ff, drop, layer_drop = dropouts
    return wav2vec2_model(
        extractor_mode=mode, extractor_conv_layer_config=None, extractor_conv_bias=bias,
        encoder_embed_dim=dim, encoder_projection_dropout=proj, encoder_pos_conv_kernel=128,
        encoder_pos_conv_groups=16, encoder_num_layers=layers, encoder_num_heads=heads,
        encoder_attention_dropout=att, encoder_ff_interm_features=ffn,
        encoder_ff_interm_dropout=ff, encoder_dropout=drop, encoder_layer_norm_first=norm_first,
        encoder_layer_drop=layer_drop, aux_num_out=aux_num_out)


def wav2vec2_base(encoder_projection_dropout: float = 0.1, encoder_attention_dropout: float = 0.1,
                  encoder_ff_interm_dropout: float = 0.1, encoder_dropout: float = 0.1,
                  encoder_layer_drop: float = 0.1, aux_num_out: int | None = None) -> Wav2Vec2Model:
    """wav2vec 2.0 "base": 12 layers of 768, group-norm extractor."""
    return _build("group_norm", False, 768, 12, 12, 3072, False,
                  (encoder_projection_dropout, encoder_attention_dropout, encoder_ff_interm_dropout,
                   encoder_dropout, encoder_layer_drop), aux_num_out)


def wav2vec2_large(encoder_projection_dropout: float = 0.1, encoder_attention_dropout: float = 0.1,
                   encoder_ff_interm_dropout: float = 0.1, encoder_dropout: float = 0.1,
                   encoder_layer_drop: float = 0.1, aux_num_out: int | None = None) -> Wav2Vec2Model:
    """wav2vec 2.0 "large": 24 layers of 1024, group-norm extractor."""
    return _build("group_norm", False, 1024, 24, 16, 4096, False,
                  (encoder_projection_dropout, encoder_attention_dropout, encoder_ff_interm_dropout,
                   encoder_dropout, encoder_layer_drop), aux_num_out)


def wav2vec2_large_lv60k(encoder_projection_dropout: float = 0.1,
                         encoder_attention_dropout: float = 0.0,
                         encoder_ff_interm_dropout: float = 0.1, encoder_dropout: float = 0.0,
                         encoder_layer_drop: float = 0.1,
                         aux_num_out: int | None = None) -> Wav2Vec2Model:
    """wav2vec 2.0 "large lv-60k": 24 layers of 1024, layer-norm extractor with bias, pre-norm."""
    return _build("layer_norm", True, 1024, 24, 16, 4096, True,
                  (encoder_projection_dropout, encoder_attention_dropout, encoder_ff_interm_dropout,
                   encoder_dropout, encoder_layer_drop), aux_num_out)


def hubert_base(encoder_projection_dropout: float = 0.1, encoder_attention_dropout: float = 0.1,
                encoder_ff_interm_dropout: float = 0.0, encoder_dropout: float = 0.1,
                encoder_layer_drop: float = 0.05, aux_num_out: int | None = None) -> Wav2Vec2Model:
    """HuBERT "base": 12 layers of 768, group-norm extractor."""
    return _build("group_norm", False, 768, 12, 12, 3072, False,
                  (encoder_projection_dropout, encoder_attention_dropout, encoder_ff_interm_dropout,
                   encoder_dropout, encoder_layer_drop), aux_num_out)


def hubert_large(encoder_projection_dropout: float = 0.0, encoder_attention_dropout: float = 0.0,
                 encoder_ff_interm_dropout: float = 0.0, encoder_dropout: float = 0.0,
                 encoder_layer_drop: float = 0.0, aux_num_out: int | None = None) -> Wav2Vec2Model:
    """HuBERT "large": 24 layers of 1024, layer-norm extractor, pre-norm."""
    return _build("layer_norm", False, 1024, 24, 16, 4096, True,
                  (encoder_projection_dropout, encoder_attention_dropout, encoder_ff_interm_dropout,
                   encoder_dropout, encoder_layer_drop), aux_num_out)


def hubert_xlarge(encoder_projection_dropout: float = 0.0, encoder_attention_dropout: float = 0.0,
                  encoder_ff_interm_dropout: float = 0.0, encoder_dropout: float = 0.0,
                  encoder_layer_drop: float = 0.0, aux_num_out: int | None = None) -> Wav2Vec2Model:
    """HuBERT "extra large": 48 layers of 1280, layer-norm extractor, pre-norm."""
    return _build("layer_norm", False, 1280, 48, 16, 5120, True,
                  (encoder_projection_dropout, encoder_attention_dropout, encoder_ff_interm_dropout,
                   encoder_dropout, encoder_layer_drop), aux_num_out)


def _init_hubert_pretrain_model(module: nn.Module) -> None:
    # Pre-training initialization (fairseq's): Kaiming convs, small positional conv, scaled
    # attention projections, N(0, 0.02) linears in the transformer.
    if isinstance(module, components.ConvLayerBlock):
        nn.init.kaiming_normal_(module.conv.weight)
    elif isinstance(module, components.ConvolutionalPositionalEmbedding):
        std = math.sqrt(4.0 / (module.embed_dim * module.kernel_size))
        with ember.no_grad():
            weight = ember.empty_like(module.conv.weight)
            nn.init.normal_(weight, mean=0.0, std=std)
            module.conv.weight = weight  # through the weight-norm parametrization
        nn.init.constant_(module.conv.bias, 0.0)
    elif isinstance(module, components.SelfAttention):
        for proj in (module.k_proj, module.v_proj, module.q_proj):
            nn.init.xavier_uniform_(proj.weight, gain=1 / math.sqrt(2))
        nn.init.xavier_uniform_(module.out_proj.weight)
        nn.init.constant_(module.out_proj.bias, 0.0)
    elif isinstance(module, components.Transformer):
        for sub in module.modules():
            if isinstance(sub, nn.Linear):
                nn.init.normal_(sub.weight, mean=0.0, std=0.02)
                if sub.bias is not None:
                    nn.init.zeros_(sub.bias)


def hubert_pretrain_model(extractor_mode: str,
                          extractor_conv_layer_config: list[tuple[int, int, int]] | None,
                          extractor_conv_bias: bool, encoder_embed_dim: int,
                          encoder_projection_dropout: float, encoder_pos_conv_kernel: int,
                          encoder_pos_conv_groups: int, encoder_num_layers: int,
                          encoder_num_heads: int, encoder_attention_dropout: float,
                          encoder_ff_interm_features: int, encoder_ff_interm_dropout: float,
                          encoder_dropout: float, encoder_layer_norm_first: bool,
                          encoder_layer_drop: float, mask_prob: float, mask_selection: str,
                          mask_other: float, mask_length: int, no_mask_overlap: bool,
                          mask_min_space: int, mask_channel_prob: float,
                          mask_channel_selection: str, mask_channel_other: float,
                          mask_channel_length: int, no_mask_channel_overlap: bool,
                          mask_channel_min_space: int, skip_masked: bool, skip_nomask: bool,
                          num_classes: int, final_dim: int,
                          feature_grad_mult: float | None) -> HuBERTPretrainModel:
    r"""Builds a custom :class:`HuBERTPretrainModel` (arguments as torchaudio's)."""
    wav2vec2 = wav2vec2_model(
        extractor_mode, extractor_conv_layer_config, extractor_conv_bias, encoder_embed_dim,
        encoder_projection_dropout, encoder_pos_conv_kernel, encoder_pos_conv_groups,
        encoder_num_layers, encoder_num_heads, encoder_attention_dropout,
        encoder_ff_interm_features, encoder_ff_interm_dropout, encoder_dropout,
        encoder_layer_norm_first, encoder_layer_drop, aux_num_out=None)
    mask_generator = components.MaskGenerator(
        encoder_embed_dim, mask_prob, mask_selection, mask_other, mask_length, no_mask_overlap,
        mask_min_space, mask_channel_prob, mask_channel_selection, mask_channel_other,
        mask_channel_length, no_mask_channel_overlap, mask_channel_min_space)
    logit_generator = components.LogitGenerator(encoder_embed_dim, num_classes, final_dim,
                                                skip_masked, skip_nomask)
    model = HuBERTPretrainModel(wav2vec2, mask_generator, logit_generator, feature_grad_mult)
    model.apply(_init_hubert_pretrain_model)
    return model


def _build_pretrain(mode, dim, layers, heads, ffn, norm_first, dropouts, mask_prob,
                    mask_channel_prob, mask_channel_length, feature_grad_mult, num_classes,
                    final_dim):
    proj, att, ff, drop, layer_drop = dropouts
    return hubert_pretrain_model(
        extractor_mode=mode, extractor_conv_layer_config=None, extractor_conv_bias=False,
        encoder_embed_dim=dim, encoder_projection_dropout=proj, encoder_pos_conv_kernel=128,
        encoder_pos_conv_groups=16, encoder_num_layers=layers, encoder_num_heads=heads,
        encoder_attention_dropout=att, encoder_ff_interm_features=ffn,
        encoder_ff_interm_dropout=ff, encoder_dropout=drop, encoder_layer_norm_first=norm_first,
        encoder_layer_drop=layer_drop, mask_prob=mask_prob, mask_selection="static",
        mask_other=0.0, mask_length=10, no_mask_overlap=False, mask_min_space=1,
        mask_channel_prob=mask_channel_prob, mask_channel_selection="static",
        mask_channel_other=0.0, mask_channel_length=mask_channel_length,
        no_mask_channel_overlap=False, mask_channel_min_space=1, skip_masked=False,
        skip_nomask=False, num_classes=num_classes, final_dim=final_dim,
        feature_grad_mult=feature_grad_mult)


def hubert_pretrain_base(encoder_projection_dropout: float = 0.1,
                         encoder_attention_dropout: float = 0.1,
                         encoder_ff_interm_dropout: float = 0.0, encoder_dropout: float = 0.1,
                         encoder_layer_drop: float = 0.05, mask_prob: float = 0.8,
                         mask_channel_prob: float = 0.0, mask_channel_length: int = 10,
                         feature_grad_mult: float | None = 0.1,
                         num_classes: int = 100) -> HuBERTPretrainModel:
    """HuBERT "base" for pre-training (final_dim 256)."""
    return _build_pretrain("group_norm", 768, 12, 12, 3072, False,
                           (encoder_projection_dropout, encoder_attention_dropout,
                            encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop),
                           mask_prob, mask_channel_prob, mask_channel_length, feature_grad_mult,
                           num_classes, 256)


def hubert_pretrain_large(encoder_projection_dropout: float = 0.0,
                          encoder_attention_dropout: float = 0.0,
                          encoder_ff_interm_dropout: float = 0.0, encoder_dropout: float = 0.0,
                          encoder_layer_drop: float = 0.0, mask_prob: float = 0.8,
                          mask_channel_prob: float = 0.0, mask_channel_length: int = 10,
                          feature_grad_mult: float | None = None) -> HuBERTPretrainModel:
    """HuBERT "large" for pre-training (500 classes, final_dim 768)."""
    return _build_pretrain("layer_norm", 1024, 24, 16, 4096, True,
                           (encoder_projection_dropout, encoder_attention_dropout,
                            encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop),
                           mask_prob, mask_channel_prob, mask_channel_length, feature_grad_mult,
                           500, 768)


def hubert_pretrain_xlarge(encoder_projection_dropout: float = 0.0,
                           encoder_attention_dropout: float = 0.0,
                           encoder_ff_interm_dropout: float = 0.0, encoder_dropout: float = 0.0,
                           encoder_layer_drop: float = 0.0, mask_prob: float = 0.8,
                           mask_channel_prob: float = 0.0, mask_channel_length: int = 10,
                           feature_grad_mult: float | None = None) -> HuBERTPretrainModel:
    """HuBERT "extra large" for pre-training (500 classes, final_dim 1024)."""
    return _build_pretrain("layer_norm", 1280, 48, 16, 5120, True,
                           (encoder_projection_dropout, encoder_attention_dropout,
                            encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop),
                           mask_prob, mask_channel_prob, mask_channel_length, feature_grad_mult,
                           500, 1024)


def wavlm_model(extractor_mode: str,
                extractor_conv_layer_config: list[tuple[int, int, int]] | None,
                extractor_conv_bias: bool, encoder_embed_dim: int,
                encoder_projection_dropout: float, encoder_pos_conv_kernel: int,
                encoder_pos_conv_groups: int, encoder_num_layers: int, encoder_num_heads: int,
                encoder_num_buckets: int, encoder_max_distance: int,
                encoder_attention_dropout: float, encoder_ff_interm_features: int,
                encoder_ff_interm_dropout: float, encoder_dropout: float,
                encoder_layer_norm_first: bool, encoder_layer_drop: float,
                aux_num_out: int | None) -> Wav2Vec2Model:
    r"""Builds a custom WavLM :class:`Wav2Vec2Model` (arguments as ``torchaudio.models.wavlm_model``:
    those of :func:`wav2vec2_model` plus the relative-position ``encoder_num_buckets`` and
    ``encoder_max_distance``)."""
    if extractor_conv_layer_config is None:
        extractor_conv_layer_config = _DEFAULT_CONV_LAYERS
    feature_extractor = components._get_feature_extractor(
        extractor_mode, extractor_conv_layer_config, extractor_conv_bias)
    encoder = components._get_wavlm_encoder(
        in_features=extractor_conv_layer_config[-1][0], embed_dim=encoder_embed_dim,
        dropout_input=encoder_projection_dropout, pos_conv_kernel=encoder_pos_conv_kernel,
        pos_conv_groups=encoder_pos_conv_groups, num_layers=encoder_num_layers,
        num_heads=encoder_num_heads, num_buckets=encoder_num_buckets,
        max_distance=encoder_max_distance, attention_dropout=encoder_attention_dropout,
        ff_interm_features=encoder_ff_interm_features, ff_interm_dropout=encoder_ff_interm_dropout,
        dropout=encoder_dropout, layer_norm_first=encoder_layer_norm_first,
        layer_drop=encoder_layer_drop)
    aux = None
    if aux_num_out is not None:
        aux = nn.Linear(in_features=encoder_embed_dim, out_features=aux_num_out)
    return Wav2Vec2Model(feature_extractor, encoder, aux)


def wavlm_base(encoder_projection_dropout: float = 0.1, encoder_attention_dropout: float = 0.1,
               encoder_ff_interm_dropout: float = 0.1, encoder_dropout: float = 0.1,
               encoder_layer_drop: float = 0.1, aux_num_out: int | None = None) -> Wav2Vec2Model:
    """WavLM "base": 12 layers of 768, group-norm extractor, 320 buckets up to distance 800."""
    return wavlm_model(
        extractor_mode="group_norm", extractor_conv_layer_config=None, extractor_conv_bias=False,
        encoder_embed_dim=768, encoder_projection_dropout=encoder_projection_dropout,
        encoder_pos_conv_kernel=128, encoder_pos_conv_groups=16, encoder_num_layers=12,
        encoder_num_heads=12, encoder_num_buckets=320, encoder_max_distance=800,
        encoder_attention_dropout=encoder_attention_dropout, encoder_ff_interm_features=3072,
        encoder_ff_interm_dropout=encoder_ff_interm_dropout, encoder_dropout=encoder_dropout,
        encoder_layer_norm_first=False, encoder_layer_drop=encoder_layer_drop,
        aux_num_out=aux_num_out)


def wavlm_large(encoder_projection_dropout: float = 0.1, encoder_attention_dropout: float = 0.1,
                encoder_ff_interm_dropout: float = 0.0, encoder_dropout: float = 0.1,
                encoder_layer_drop: float = 0.1, aux_num_out: int | None = None) -> Wav2Vec2Model:
    """WavLM "large": 24 layers of 1024, layer-norm extractor, pre-norm."""
    return wavlm_model(
        extractor_mode="layer_norm", extractor_conv_layer_config=None, extractor_conv_bias=False,
        encoder_embed_dim=1024, encoder_projection_dropout=encoder_projection_dropout,
        encoder_pos_conv_kernel=128, encoder_pos_conv_groups=16, encoder_num_layers=24,
        encoder_num_heads=16, encoder_num_buckets=320, encoder_max_distance=800,
        encoder_attention_dropout=encoder_attention_dropout, encoder_ff_interm_features=4096,
        encoder_ff_interm_dropout=encoder_ff_interm_dropout, encoder_dropout=encoder_dropout,
        encoder_layer_norm_first=True, encoder_layer_drop=encoder_layer_drop,
        aux_num_out=aux_num_out)
