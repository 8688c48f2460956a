"""FX tools beyond symbolic tracing (torch.fx.experimental): ``proxy_tensor.make_fx`` records the
ops a function runs below autograd; ``optimization.fuse`` folds BatchNorm into the layer before it."""

from . import optimization, proxy_tensor

__all__ = ["optimization", "proxy_tensor"]
