"""Quantized BatchNorm2d / BatchNorm3d (torch.ao.nn.quantized): inference batch norm of a quint8
input with the running statistics, the result quantized with the observed scale and zero point
(ember.quantized_batch_norm, PyTorch's arithmetic). Like PyTorch's, they are nn.BatchNorm
subclasses whose state dict adds the `scale` and `zero_point` buffers. The fused BNReLU2d/3d
(ember.ao.nn.intrinsic.quantized) set `_relu`: PyTorch's batch_norm_relu kernels take the
clamped integers' maximum with the output zero point, which this does to the batch norm's result."""

from __future__ import annotations

from .... import _C
from ...._quantized_functional import quantized_batch_norm
from ...._tensor import tensor
from ....autograd.grad_mode import no_grad
from ....nn.modules.batchnorm import _BatchNorm as _FloatBatchNorm
from .modules import _activation_qparams, _is_fused

__all__ = ["BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(_FloatBatchNorm):
    _dims = 0
    _relu = False

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, True, True, device=device, dtype=dtype)
        self.register_buffer("scale", tensor(1.0))
        self.register_buffer("zero_point", tensor(0))

    def _check_input_dim(self, input) -> None:
        if input.dim() != self._dims:
            layout = "(N, C, H, W)" if self._dims == 4 else "(N, C, D, H, W)"
            raise ValueError(f"Input shape must be `{layout}`!")

    def forward(self, input):
        self._check_input_dim(input)
        out = quantized_batch_norm(input, self.weight, self.bias, self.running_mean, self.running_var, self.eps,
                                   float(self.scale), int(self.zero_point))
        if not self._relu:
            return out
        zero_point = out.q_zero_point()
        return _C._make_per_tensor_quantized_tensor(out.int_repr().clamp_min(zero_point), out.q_scale(), zero_point)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The quantized twin of a prepared and calibrated nn.BatchNorm2d/3d (or fused BNReLU2d/3d,
        observed after its relu): its running statistics and affine parameters, the output
        parameters its observer chose."""
        scale, zero_point = _activation_qparams(mod)
        bn = mod[0] if _is_fused(mod) else mod
        kind = f"BatchNorm{cls._dims - 2}d"
        if type(bn).__name__ != kind or not hasattr(bn, "running_mean"):
            raise AssertionError(f"{cls.__name__}.from_float only works for {kind}"
                                 f"{' (fused with ReLU)' if cls._relu else ''}, but got {type(mod).__name__}")
        if cls._relu != _is_fused(mod):
            want = f"a fused BNReLU{cls._dims - 2}d" if cls._relu else f"a plain {kind}"
            raise AssertionError(f"{cls.__name__}.from_float expects {want}, but got {type(mod).__name__}")
        mod = bn
        new = cls(mod.num_features, mod.eps)
        with no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                if getattr(mod, name) is not None:
                    getattr(new, name).copy_(getattr(mod, name).detach())
        new.scale.fill_(scale)
        new.zero_point.fill_(zero_point)
        return new


class BatchNorm2d(_BatchNorm):
    _dims = 4

    def _get_name(self) -> str:
        return "QuantizedBatchNorm2d"


class BatchNorm3d(_BatchNorm):
    _dims = 5

    def _get_name(self) -> str:
        return "QuantizedBatchNorm3d"
