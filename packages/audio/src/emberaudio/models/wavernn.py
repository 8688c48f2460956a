"""WaveRNN vocoder (Kalchbrenner et al., 2018, after fatchord/WaveRNN), as torchaudio.models.

Holds ``ResBlock``, ``MelResNet``, ``Stretch2d``, ``UpsampleNetwork`` and ``WaveRNN``, with
torchaudio's names, arguments and state-dict keys. WaveRNN predicts, for every sample, a
categorical distribution over ``n_classes`` quantised amplitudes (e.g. mu-law classes);
``infer`` samples from it one step at a time.
"""

from __future__ import annotations

import math

import ember
from ember import nn
from ember.nn import functional as F

from ._utils import _check_lengths

__all__ = ["ResBlock", "MelResNet", "Stretch2d", "UpsampleNetwork", "WaveRNN"]


def _shape(x) -> object:
    return tuple(x.shape) if isinstance(x, ember.Tensor) else type(x).__name__


class ResBlock(nn.Module):
    r"""Residual block of two bias-free 1x1 convolutions with batch norm.

    Args:
        n_freq (int): channels. (Default: ``128``)
    """

    def __init__(self, n_freq: int = 128) -> None:
        super().__init__()
        self.resblock_model = nn.Sequential(
            nn.Conv1d(in_channels=n_freq, out_channels=n_freq, kernel_size=1, bias=False),
            nn.BatchNorm1d(n_freq),
            nn.ReLU(inplace=True),
            nn.Conv1d(in_channels=n_freq, out_channels=n_freq, kernel_size=1, bias=False),
            nn.BatchNorm1d(n_freq),
        )

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        """(n_batch, n_freq, n_time) -> same shape."""
        return self.resblock_model(specgram) + specgram


class MelResNet(nn.Module):
    r"""A convolution (no padding) followed by ``n_res_block`` ResBlocks and a 1x1 projection.

    Args:
        n_res_block (int): ResBlocks. (Default: ``10``)
        n_freq (int): input bins. (Default: ``128``)
        n_hidden (int): hidden channels. (Default: ``128``)
        n_output (int): output channels. (Default: ``128``)
        kernel_size (int): kernel size of the first convolution. (Default: ``5``)
    """

    def __init__(self, n_res_block: int = 10, n_freq: int = 128, n_hidden: int = 128,
                 n_output: int = 128, kernel_size: int = 5) -> None:
        super().__init__()
        self.melresnet_model = nn.Sequential(
            nn.Conv1d(in_channels=n_freq, out_channels=n_hidden, kernel_size=kernel_size,
                      bias=False),
            nn.BatchNorm1d(n_hidden),
            nn.ReLU(inplace=True),
            *[ResBlock(n_hidden) for _ in range(n_res_block)],
            nn.Conv1d(in_channels=n_hidden, out_channels=n_output, kernel_size=1),
        )

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        """(n_batch, n_freq, n_time) -> (n_batch, n_output, n_time - kernel_size + 1)."""
        return self.melresnet_model(specgram)


class Stretch2d(nn.Module):
    r"""Repeats every element ``freq_scale`` times along dim -2 and ``time_scale`` times along -1.

    Args:
        time_scale (int): time repetitions.
        freq_scale (int): frequency repetitions.
    """

    def __init__(self, time_scale: int, freq_scale: int) -> None:
        super().__init__()
        if time_scale < 1 or freq_scale < 1:
            raise ValueError(f"time_scale and freq_scale must be at least 1, got {time_scale} "
                             f"and {freq_scale}")
        self.freq_scale = freq_scale
        self.time_scale = time_scale

    def forward(self, specgram: ember.Tensor) -> ember.Tensor:
        """(..., n_freq, n_time) -> (..., n_freq * freq_scale, n_time * time_scale)."""
        if not isinstance(specgram, ember.Tensor) or specgram.dim() < 2:
            raise ValueError(f"specgram must have at least 2 dimensions, got {_shape(specgram)}")
        return specgram.repeat_interleave(self.freq_scale, -2).repeat_interleave(self.time_scale, -1)


class UpsampleNetwork(nn.Module):
    r"""Upsamples a spectrogram by ``prod(upsample_scales)`` in time: a MelResNet branch
    (stretched) and a stretch + moving-average convolution branch, both cropped to
    ``(n_time - kernel_size + 1) * total_scale`` frames.

    Args:
        upsample_scales (list of int): per-stage scales.
        n_res_block (int): ResBlocks. (Default: ``10``)
        n_freq (int): input bins. (Default: ``128``)
        n_hidden (int): hidden channels of the MelResNet. (Default: ``128``)
        n_output (int): output channels of the MelResNet. (Default: ``128``)
        kernel_size (int): odd kernel size of the MelResNet's first convolution. (Default: ``5``)
    """

    def __init__(self, upsample_scales: list[int], n_res_block: int = 10, n_freq: int = 128,
                 n_hidden: int = 128, n_output: int = 128, kernel_size: int = 5) -> None:
        super().__init__()
        if kernel_size < 1 or kernel_size % 2 != 1:
            # The two branches only line up when the crop (kernel_size - 1) splits evenly.
            raise ValueError(f"kernel_size must be a positive odd number, got {kernel_size}")
        if len(upsample_scales) == 0 or any(int(s) < 1 for s in upsample_scales):
            raise ValueError(f"upsample_scales must be a non-empty list of positive integers, "
                             f"got {list(upsample_scales)}")
        total_scale = 1
        for scale in upsample_scales:
            total_scale *= int(scale)
        self.total_scale: int = total_scale
        self.indent = (kernel_size - 1) // 2 * total_scale
        self.resnet = MelResNet(n_res_block, n_freq, n_hidden, n_output, kernel_size)
        self.resnet_stretch = Stretch2d(total_scale, 1)

        layers = []
        for scale in upsample_scales:
            scale = int(scale)
            conv = nn.Conv2d(in_channels=1, out_channels=1, kernel_size=(1, scale * 2 + 1),
                             padding=(0, scale), bias=False)
            # A moving average over the repeated frames: linear interpolation at start.
            nn.init.constant_(conv.weight, 1.0 / (scale * 2 + 1))
            layers += [Stretch2d(scale, 1), conv]
        self.upsample_layers = nn.Sequential(*layers)

    def forward(self, specgram: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        """specgram (n_batch, n_freq, n_time) -> upsampled spectrogram
        (n_batch, n_freq, (n_time - kernel_size + 1) * total_scale) and MelResNet features
        (n_batch, n_output, same)."""
        n_freq = self.resnet.melresnet_model[0].in_channels
        kernel_size = self.resnet.melresnet_model[0].kernel_size[0]
        if not isinstance(specgram, ember.Tensor) or specgram.dim() != 3 or specgram.shape[1] != n_freq:
            raise ValueError(f"specgram must have shape (n_batch, {n_freq}, n_time), got "
                             f"{_shape(specgram)}")
        if specgram.shape[2] < kernel_size:
            raise ValueError(f"specgram must have at least kernel_size ({kernel_size}) frames, "
                             f"got {specgram.shape[2]}")
        resnet_output = self.resnet_stretch(self.resnet(specgram).unsqueeze(1)).squeeze(1)
        upsampled = self.upsample_layers(specgram.unsqueeze(1)).squeeze(1)
        # Crop what the MelResNet's unpadded convolution dropped at both ends.
        upsampled = upsampled[:, :, self.indent:upsampled.shape[2] - self.indent]
        return upsampled, resnet_output


class WaveRNN(nn.Module):
    r"""WaveRNN vocoder, as ``torchaudio.models.WaveRNN``. The product of ``upsample_scales``
    must equal ``hop_length``.

    Args:
        upsample_scales (list of int): upsampling scales.
        n_classes (int): output classes (quantisation levels).
        hop_length (int): samples per spectrogram frame.
        n_res_block (int): ResBlocks. (Default: ``10``)
        n_rnn (int): GRU dimension. (Default: ``512``)
        n_fc (int): fully connected dimension. (Default: ``512``)
        kernel_size (int): odd kernel size of the MelResNet's first convolution. (Default: ``5``)
        n_freq (int): spectrogram bins. (Default: ``128``)
        n_hidden (int): MelResNet hidden channels. (Default: ``128``)
        n_output (int): MelResNet output channels. (Default: ``128``)
    """

    def __init__(self, upsample_scales: list[int], n_classes: int, hop_length: int,
                 n_res_block: int = 10, n_rnn: int = 512, n_fc: int = 512, kernel_size: int = 5,
                 n_freq: int = 128, n_hidden: int = 128, n_output: int = 128) -> None:
        super().__init__()
        if n_classes < 2:
            raise ValueError(f"n_classes must be at least 2, got {n_classes}")
        total_scale = 1
        for scale in upsample_scales:
            total_scale *= int(scale)
        if total_scale != hop_length:
            raise ValueError(f"Expected: total_scale == hop_length, but found {total_scale} != "
                             f"{hop_length}")
        self.kernel_size = kernel_size
        self._pad = (kernel_size - 1 if kernel_size % 2 else kernel_size) // 2
        self.n_rnn = n_rnn
        self.n_aux = n_output // 4
        self.hop_length = hop_length
        self.n_classes = n_classes
        self.n_bits: int = int(math.log2(n_classes))

        self.upsample = UpsampleNetwork(upsample_scales, n_res_block, n_freq, n_hidden, n_output,
                                        kernel_size)
        self.fc = nn.Linear(n_freq + self.n_aux + 1, n_rnn)
        self.rnn1 = nn.GRU(n_rnn, n_rnn, batch_first=True)
        self.rnn2 = nn.GRU(n_rnn + self.n_aux, n_rnn, batch_first=True)
        self.relu1 = nn.ReLU(inplace=True)
        self.relu2 = nn.ReLU(inplace=True)
        self.fc1 = nn.Linear(n_rnn + self.n_aux, n_fc)
        self.fc2 = nn.Linear(n_fc + self.n_aux, n_fc)
        self.fc3 = nn.Linear(n_fc, self.n_classes)

    def _aux_split(self, aux: ember.Tensor, dim: int) -> list[ember.Tensor]:
        """The four n_aux-wide slices of the MelResNet features that condition each stage."""
        return [aux.narrow(dim, self.n_aux * i, self.n_aux) for i in range(4)]

    def forward(self, waveform: ember.Tensor, specgram: ember.Tensor) -> ember.Tensor:
        r"""Teacher-forced logits.

        Args:
            waveform (Tensor): (n_batch, 1, (n_time - kernel_size + 1) * hop_length), the
                previous sample at every position.
            specgram (Tensor): (n_batch, 1, n_freq, n_time).

        Returns:
            Tensor: (n_batch, 1, (n_time - kernel_size + 1) * hop_length, n_classes).
        """
        if not isinstance(waveform, ember.Tensor) or waveform.dim() != 3:
            raise ValueError(f"waveform must have shape (n_batch, 1, n_samples), got "
                             f"{_shape(waveform)}")
        if not isinstance(specgram, ember.Tensor) or specgram.dim() != 4:
            raise ValueError(f"specgram must have shape (n_batch, 1, n_freq, n_time), got "
                             f"{_shape(specgram)}")
        if waveform.size(1) != 1:
            raise ValueError("Require the input channel of waveform is 1")
        if specgram.size(1) != 1:
            raise ValueError("Require the input channel of specgram is 1")
        if waveform.shape[0] != specgram.shape[0]:
            raise ValueError(f"waveform and specgram batch sizes differ: {waveform.shape[0]} != "
                             f"{specgram.shape[0]}")
        if specgram.shape[3] < self.kernel_size:
            raise ValueError(f"specgram must have at least kernel_size ({self.kernel_size}) "
                             f"frames, got {specgram.shape[3]}")
        n_samples = (specgram.shape[3] - self.kernel_size + 1) * self.hop_length
        if waveform.shape[2] != n_samples:
            raise ValueError(f"waveform must have (n_time - kernel_size + 1) * hop_length = "
                             f"{n_samples} samples, got {waveform.shape[2]}")
        waveform, specgram = waveform.squeeze(1), specgram.squeeze(1)
        B = waveform.shape[0]
        h1 = ember.zeros(1, B, self.n_rnn, dtype=waveform.dtype, device=waveform.device)
        h2 = ember.zeros(1, B, self.n_rnn, dtype=waveform.dtype, device=waveform.device)

        specgram, aux = self.upsample(specgram)
        specgram, aux = specgram.transpose(1, 2), aux.transpose(1, 2)
        a1, a2, a3, a4 = self._aux_split(aux, 2)

        x = self.fc(ember.cat([waveform.unsqueeze(-1), specgram, a1], dim=-1))
        res = x
        x, _ = self.rnn1(x, h1)
        x = x + res
        res = x
        x, _ = self.rnn2(ember.cat([x, a2], dim=-1), h2)
        x = x + res
        x = self.relu1(self.fc1(ember.cat([x, a3], dim=-1)))
        x = self.relu2(self.fc2(ember.cat([x, a4], dim=-1)))
        return self.fc3(x).unsqueeze(1)

    def infer(self, specgram: ember.Tensor, lengths: ember.Tensor | None = None
              ) -> tuple[ember.Tensor, ember.Tensor | None]:
        r"""Autoregressive synthesis by sampling each sample's class from the softmax
        (multinomial sampling; the network is assumed trained with cross entropy).

        Args:
            specgram (Tensor): (n_batch, n_freq, n_time).
            lengths (Tensor or None): (n_batch,) valid frames per item. (Default: ``None``)

        Returns:
            (Tensor, Tensor or None): waveform (n_batch, 1, n_time * hop_length), each sample
            the class ``c`` mapped to ``2 c / (2 ** n_bits - 1) - 1``; and the valid lengths in
            samples (``lengths * hop_length``) when ``lengths`` is given.
        """
        if not isinstance(specgram, ember.Tensor) or specgram.dim() != 3:
            raise ValueError(f"specgram must have shape (n_batch, n_freq, n_time), got "
                             f"{_shape(specgram)}")
        if lengths is not None:
            _check_lengths(lengths, specgram.shape[0], specgram.shape[2], "frames in specgram")
            lengths = lengths * self.upsample.total_scale
        if specgram.shape[0] == 0 or specgram.shape[2] == 0:
            shape = (specgram.shape[0], 1, specgram.shape[2] * self.hop_length)
            return ember.zeros(shape, dtype=specgram.dtype, device=specgram.device), lengths
        device, dtype = specgram.device, specgram.dtype

        # 'Same' padding, so every input frame yields hop_length samples.
        specgram, aux = self.upsample(F.pad(specgram, (self._pad, self._pad)))
        B, _, n_samples = specgram.shape
        aux_split = self._aux_split(aux, 1)
        h1 = ember.zeros((1, B, self.n_rnn), device=device, dtype=dtype)
        h2 = ember.zeros((1, B, self.n_rnn), device=device, dtype=dtype)
        x = ember.zeros((B, 1), device=device, dtype=dtype)
        output: list[ember.Tensor] = []
        with ember.no_grad():
            for i in range(n_samples):
                a1, a2, a3, a4 = [a[:, :, i] for a in aux_split]
                x = self.fc(ember.cat([x, specgram[:, :, i], a1], dim=1))
                _, h1 = self.rnn1(x.unsqueeze(1), h1)
                x = x + h1[0]
                _, h2 = self.rnn2(ember.cat([x, a2], dim=1).unsqueeze(1), h2)
                x = x + h2[0]
                x = F.relu(self.fc1(ember.cat([x, a3], dim=1)))
                x = F.relu(self.fc2(ember.cat([x, a4], dim=1)))
                posterior = F.softmax(self.fc3(x), dim=1)
                label = ember.multinomial(posterior, 1).to(dtype)
                # Class c in [0, 2**n_bits - 1] -> amplitude in [-1, 1].
                x = 2 * label / (2 ** self.n_bits - 1.0) - 1.0
                output.append(x)
        return ember.stack(output).permute(1, 2, 0), lengths
