"""QuantStub, DeQuantStub and QuantWrapper (torch.ao.quantization.stubs): where a float model's
quantized part begins and ends; convert replaces them with nnq.Quantize / nnq.DeQuantize."""

from __future__ import annotations

from ...nn.modules.module import Module


class _Identity(Module):
    """An observer slot that observes nothing (FloatFunctional's before prepare)."""

    def forward(self, x):
        return x


class _Stub(Module):
    def __init__(self, qconfig=None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub):
    """Identity before convert; its activation observer picks the quantization of the model's input."""


class DeQuantStub(_Stub):
    """Identity before convert; then the dequantization of the model's output."""


class QuantWrapper(Module):
    """module between a QuantStub and a DeQuantStub, sharing the module's qconfig."""

    def __init__(self, module) -> None:
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
