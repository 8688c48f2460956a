"""Dynamically quantized modules (torch.ao.nn.quantized.dynamic): float in, float out, the weight
stored quantized; each call quantizes the input over its own range (reduce_range, as PyTorch's x86
backend) and runs the integer kernel. float16 weights are rounded to float16 and computed in
float32."""

from __future__ import annotations

from .... import _C
from ....nn import functional as F
from . import modules as nnq


class Linear(nnq.Linear):
    """y = x W^T + b for a float32 x, with W qint8 (or float16)."""

    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype=_C.qint8) -> None:
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        extra = f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._packed_params.dtype}"
        if self._packed_params.dtype == _C.qint8:
            extra += f", qscheme={self.weight().qscheme()}"
        return extra

    def forward(self, x):
        if self._packed_params.dtype == _C.float16:
            return F.linear(x, self.weight().float(), self.bias())
        if x.dtype != _C.float32:
            raise RuntimeError(f"DynamicQuantizedLinear: expected a float32 input, but got {x.dtype}")
        return _C._quantized_linear_dynamic(x, self.weight(), self.bias(), True)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The dynamically quantized twin of an nn.Linear (its qconfig's weight observer, else
        default_dynamic_qconfig's)."""
        if type(mod).__name__ != "Linear" or not hasattr(mod, "weight"):
            raise AssertionError(f"nn.quantized.dynamic.Linear.from_float only works for Linear, but got "
                                 f"{type(mod).__name__}")
        from ...quantization.qconfig import default_dynamic_qconfig

        qconfig = getattr(mod, "qconfig", None) or default_dynamic_qconfig
        observer = qconfig.weight()
        dtype = observer.dtype
        if dtype not in (_C.qint8, _C.float16):
            raise AssertionError(f"The only supported dtypes for dynamic quantized linear are qint8 and float16, got: "
                                 f"{dtype}")
        observer(mod.weight)
        weight = nnq._quantize_weight(mod.weight, observer) if dtype == _C.qint8 else mod.weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(weight, mod.bias)
        return qlinear


__all__ = ["Linear"]
