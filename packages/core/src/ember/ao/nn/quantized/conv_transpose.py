"""Quantized transposed convolutions (torch.ao.nn.quantized.ConvTranspose1d/2d/3d): quint8 in and
out, a qint8 weight quantized per tensor, a float bias.

Note [transposed convolution as a convolution]: a transposed convolution with stride s, padding p,
output padding op and dilation d is the ordinary convolution (stride 1, dilation d) of the input
spread out by s - each input position i placed at i * s, the positions between holding the input's
zero point - padded with d * (k - 1) - p zero points before and d * (k - 1) - p + op after (cropped
where that is negative), by the weight with its in/out channels swapped within each group and its
taps reversed. Every term of every sum is the same product (x - x_zp) * (w - w_zp) as in the
transposed form, the inserted zero points adding exact zeros, so the native quantized convolution
(_C._quantized_conv, Note [integer GEMM through float BLAS]) computes the same int32 sums FBGEMM's
transposed convolution does and requantizes them as FBGEMM does: the integers equal PyTorch 2.13's
with the fbgemm engine bit for bit (tests/test_quantized_conv_transpose_torch_parity.py).

PyTorch's own limits are kept: weights quantized per channel are refused ("Per Channel Quantization
is currently disabled for transposed conv", in set_weight_bias as in its prepacking), padding_mode
must be 'zeros', and no ReLU fusion exists. State dicts carry PyTorch's keys (weight in the float
module's [in_channels, out_channels / groups, *kernel] layout, bias, scale, zero_point).
"""

from __future__ import annotations

from .... import _C
from ...._quantized import per_tensor_affine, per_tensor_symmetric
from ....nn import modules as _nn
from ....nn.modules.module import Module
from ....nn.modules.utils import _ntuple
from .modules import _ConvNd, _quantize_weight


def _scalar_type(dtype) -> str:
    """A quantized dtype as PyTorch's messages name it (QUInt8, QInt8, QInt32)."""
    return {_C.quint8: "QUInt8", _C.qint8: "QInt8", _C.qint32: "QInt32"}.get(dtype, str(dtype))


def _spread(ints, stride, before, after, zero_point: int):
    """The integers of an (N, C, *in) input with each position i moved to i * stride, the gaps and
    `before` / `after` extra positions per spatial dim holding zero_point; a negative count crops."""
    spread = [(size - 1) * s + 1 for size, s in zip(ints.shape[2:], stride, strict=True)]
    sizes = [max(b, 0) + length + max(a, 0) for b, length, a in zip(before, spread, after, strict=True)]
    out = _C.full([*ints.shape[:2], *sizes], zero_point, dtype=ints.dtype)
    places = tuple(slice(max(b, 0), max(b, 0) + length, s) for b, length, s in zip(before, spread, stride, strict=True))
    out[(slice(None), slice(None), *places)] = ints
    crops = tuple(slice(max(-b, 0), size - max(-a, 0)) for b, size, a in zip(before, sizes, after, strict=True))
    if any(c.start or c.stop != size for c, size in zip(crops, sizes, strict=True)):
        out = out[(slice(None), slice(None), *crops)]
    return out.contiguous()


class _ConvTransposeNd(_ConvNd):
    _FLOAT_MODULE = None  # each subclass's: ember.nn.ConvTranspose1d/2d/3d

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        Module.__init__(self)
        if out_channels <= 0:
            raise ValueError(f"out_channels must be greater than 0, got {out_channels}")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        n = _ntuple(self._n)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.padding, self.dilation = n(kernel_size), n(stride), n(padding), n(dilation)
        self.transposed, self.output_padding = True, n(output_padding)
        self.padding_mode = padding_mode
        weight = _C._make_per_tensor_quantized_tensor(
            _C.zeros([in_channels, out_channels // groups, *self.kernel_size], dtype=_C.int8), 1.0, 0)
        self.set_weight_bias(weight, _C.zeros(out_channels, dtype=_C.float32) if bias else None)
        self.scale = 1.0
        self.zero_point = 0

    def set_weight_bias(self, w, b) -> None:
        """Takes a qint8 weight [in_channels, out_channels / groups, *kernel] quantized per tensor
        and a float bias of out_channels values (or None), as PyTorch's prepacking does."""
        if not w.is_quantized:
            raise NotImplementedError(f"Could not run 'quantized::conv_transpose{self._n}d_prepack' with a "
                                      f"non-quantized weight ({w.dtype}): quantize it to qint8 first")
        if w.dtype != _C.qint8:
            raise RuntimeError(f"expected scalar type QInt8 but found {_scalar_type(w.dtype)}")
        if w.dim() != self._n + 2:
            raise RuntimeError(f"Weights are expected to have {self._n + 2} dimensions")
        if w.qscheme() not in (per_tensor_affine, per_tensor_symmetric):
            raise RuntimeError("Per Channel Quantization is currently disabled for transposed conv")
        out_channels = w.shape[1] * self.groups
        if b is not None and (b.dim() != 1 or b.shape[0] != out_channels):
            raise RuntimeError(f"bias should have K elements: {out_channels}")
        self._weight, self._bias = w, None if b is None else b.detach().float()
        # Note [transposed convolution as a convolution]: [O, C / groups, *kernel], taps reversed
        g = self.groups
        ints = w.int_repr()
        cg, og, kernel = ints.shape[0] // g, ints.shape[1], list(ints.shape[2:])
        swapped = ints.reshape([g, cg, og, *kernel]).transpose(1, 2).reshape([g * og, cg, *kernel])
        flipped = swapped.flip(list(range(2, 2 + self._n))).contiguous()
        self._conv_weight = _C._make_per_tensor_quantized_tensor(flipped, w.q_scale(), w.q_zero_point())

    def _input_padding(self, kernel_size, dilation, padding) -> list[int]:
        """The padding of the equivalent direct convolution: dilation * (kernel - 1) - padding."""
        return [d * (k - 1) - p for k, d, p in zip(kernel_size, dilation, padding, strict=True)]

    def forward(self, input):
        op = f"quantized::conv_transpose{self._n}d"
        if input.dim() != self._n + 2:
            raise ValueError(f"Input shape must be `(N, C, {', '.join('L' if self._n == 1 else 'HW' if self._n == 2 else 'DHW')})`!")
        if not input.is_quantized:
            raise NotImplementedError(f"Could not run '{op}' with a non-quantized input ({input.dtype}): put an "
                                      "ember.ao.quantization.QuantStub before the quantized part of the model")
        if input.dtype != _C.quint8:
            raise RuntimeError(f"{op}: Expected activation data type QUInt8 but got {_scalar_type(input.dtype)}")
        if input.qscheme() not in (per_tensor_affine, per_tensor_symmetric):
            raise RuntimeError(f"{op}: expected an input quantized per tensor, but got {input.qscheme()}")
        if input.shape[1] != self._weight.shape[0]:
            raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(self._weight.shape)}, expected "
                               f"input {list(input.shape)} to have {self._weight.shape[0]} channels, but got "
                               f"{input.shape[1]} channels instead")
        before = self._input_padding(self.kernel_size, self.dilation, self.padding)
        after = [b + op_ for b, op_ in zip(before, self.output_padding, strict=True)]
        out_size = [(size - 1) * s - 2 * p + d * (k - 1) + o + 1 for size, s, p, d, k, o in
                    zip(input.shape[2:], self.stride, self.padding, self.dilation, self.kernel_size,
                        self.output_padding, strict=True)]
        if any(size < 1 for size in input.shape[2:]) or any(size < 1 for size in out_size):
            raise RuntimeError(f"{op}: input spatial size {list(input.shape[2:])} gives output size {out_size}, "
                               "which is too small")
        x_scale, x_zero_point = input.q_scale(), input.q_zero_point()
        spread = _spread(input.int_repr(), self.stride, before, after, x_zero_point)
        xq = _C._make_per_tensor_quantized_tensor(spread, x_scale, x_zero_point)
        return _C._quantized_conv(xq, self._conv_weight, self._bias, [1] * self._n, [0] * self._n,
                                  list(self.dilation), self.groups, float(self.scale), int(self.zero_point), False)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The quantized twin of an nn.ConvTranspose with a qconfig (prepared and calibrated for its
        output's scale and zero point; without an activation observer, those stay 1.0 and 0)."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f" nnq.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined.")
        observer = mod.qconfig.weight()
        observer(mod.weight)
        if observer.dtype != _C.qint8:
            raise AssertionError(f"Weight observer must have a dtype of qint8, got {observer.dtype}")
        qconv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding, mod.output_padding,
                    mod.groups, mod.bias is not None, mod.dilation, mod.padding_mode)
        qconv.set_weight_bias(_quantize_weight(mod.weight.float(), observer), mod.bias)
        post = getattr(mod, "activation_post_process", None)
        if post is None or getattr(post, "dtype", None) == _C.float32:
            return qconv  # weight-only: no output parameters observed
        scale, zero_point = post.calculate_qparams()
        qconv.scale, qconv.zero_point = float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0])
        return qconv


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1
    _FLOAT_MODULE = _nn.ConvTranspose1d

    def _get_name(self) -> str:
        return "QuantizedConvTranspose1d"


class ConvTranspose2d(_ConvTransposeNd):
    _n = 2
    _FLOAT_MODULE = _nn.ConvTranspose2d

    def _get_name(self) -> str:
        return "QuantizedConvTranspose2d"


class ConvTranspose3d(_ConvTransposeNd):
    _n = 3
    _FLOAT_MODULE = _nn.ConvTranspose3d

    def _get_name(self) -> str:
        return "QuantizedConvTranspose3d"

