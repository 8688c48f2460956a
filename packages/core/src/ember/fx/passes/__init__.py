"""Graph passes (torch.fx.passes): ``shape_prop.ShapeProp`` records each node's tensor shape;
``infra`` is the pass infrastructure (PassBase, PassResult, PassManager)."""

from . import infra, shape_prop

__all__ = ["infra", "shape_prop"]
