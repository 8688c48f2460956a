"""Recording the shape, dtype and layout of every value a graph computes (torch.fx.passes.shape_prop)."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor (no data): ``node.meta['tensor_meta']``."""

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result: Any) -> TensorMetadata:
    import ember

    memory_format = None
    for candidate in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
        if result.is_contiguous(memory_format=candidate):
            memory_format = candidate
            break
    qparams: dict = {}
    if result.is_quantized:  # PyTorch's record of a quantized value's parameters
        qparams["qscheme"] = qscheme = result.qscheme()
        if qscheme in (ember.per_tensor_affine, ember.per_tensor_symmetric):
            qparams["scale"], qparams["zero_point"] = result.q_scale(), result.q_zero_point()
        else:
            qparams["scale"] = result.q_per_channel_scales().tolist()
            qparams["zero_point"] = result.q_per_channel_zero_points().tolist()
            qparams["axis"] = result.q_per_channel_axis()
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), memory_format,
                          result.is_quantized, qparams)


class ShapeProp(Interpreter):
    """Runs the graph on example inputs and stores, for every node whose value holds tensors,
    ``node.meta['tensor_meta']`` (a TensorMetadata, or the same structure of them) and
    ``node.meta['type']``."""

    def run_node(self, n: Node) -> Any:
        import ember

        result = super().run_node(n)
        found = False

        def extract(obj: Any) -> Any:
            nonlocal found
            if isinstance(obj, ember.Tensor):
                found = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Runs the graph on ``args``, recording metadata; returns the graph's output."""
        return super().run(*args)
