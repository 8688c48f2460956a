"""Graph passes (torch.fx.passes): ``shape_prop.ShapeProp`` records each node's tensor shape."""

from . import shape_prop

__all__ = ["shape_prop"]
