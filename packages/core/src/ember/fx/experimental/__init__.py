"""FX tools beyond symbolic tracing (torch.fx.experimental): ``proxy_tensor.make_fx`` records the
ops a function runs below autograd."""

from . import proxy_tensor

__all__ = ["proxy_tensor"]
