"""Inference rewrites of traced models (torch.fx.experimental.optimization): folding BatchNorm
into the convolution or Linear before it, and removing Dropout.

PyTorch's MKL-DNN passes of this module (``optimize_for_inference``, ``modules_to_mkldnn``) are not
here: Ember has no MKL-DNN layout.
"""

from __future__ import annotations

import copy
from typing import Any

from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from .._symbolic_trace import symbolic_trace
from ..graph_module import GraphModule
from ..node import Node

__all__ = ["fuse", "matches_module_pattern", "remove_dropout", "replace_node_module"]

_FUSABLE = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d),
            (nn.Linear, nn.BatchNorm1d)]


def matches_module_pattern(pattern: tuple[type, type], node: Node, modules: dict[str, Any]) -> bool:
    """Whether ``node`` calls a module of type ``pattern[1]`` directly on the output of a call of
    a module of type ``pattern[0]`` (exact types, as PyTorch compares them)."""
    if len(node.args) == 0:
        return False
    for expected, current in zip(pattern, (node.args[0], node), strict=True):
        if not isinstance(current, Node) or current.op != "call_module" or not isinstance(current.target, str):
            return False
        if current.target not in modules or type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node: Node, modules: dict[str, Any], new_module: nn.Module) -> None:
    """Installs ``new_module`` where ``node``'s target module was (in ``modules`` and its parent)."""
    if not isinstance(node.target, str):
        raise TypeError(f"replace_node_module: node {node.name} has no module path as its target")
    parent, _, name = node.target.rpartition(".")
    modules[node.target] = new_module
    setattr(modules[parent], name, new_module)


def fuse(model: nn.Module, inplace: bool = False, no_trace: bool = False) -> GraphModule:
    """``model`` with every BatchNorm (tracking running statistics, in eval mode) that directly
    follows a convolution or Linear whose output nothing else reads folded into that layer's weight
    and bias. Traces ``model`` unless it is a GraphModule (or ``no_trace``); copies it first unless
    ``inplace``."""
    if not inplace:
        model = copy.deepcopy(model)
    traced = model if no_trace or isinstance(model, GraphModule) else symbolic_trace(model)
    modules = dict(traced.named_modules())
    graph = copy.deepcopy(traced.graph)
    for pattern in _FUSABLE:
        for node in list(graph.nodes):
            if not matches_module_pattern(pattern, node, modules):
                continue
            if len(node.args[0].users) > 1:  # the layer's own output is read elsewhere too
                continue
            layer, bn = modules[node.args[0].target], modules[node.target]
            if not bn.track_running_stats:
                continue
            fused = fuse_linear_bn_eval(layer, bn) if pattern[0] is nn.Linear else fuse_conv_bn_eval(layer, bn)
            replace_node_module(node.args[0], modules, fused)
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    return GraphModule(traced, graph)


def remove_dropout(model: nn.Module) -> GraphModule:
    """``model`` traced with its Dropout calls removed (each reads through to its input)."""
    traced = model if isinstance(model, GraphModule) else symbolic_trace(model)
    modules = dict(traced.named_modules())
    graph = copy.deepcopy(traced.graph)
    for node in list(graph.nodes):
        if node.op == "call_module" and isinstance(modules.get(node.target), nn.Dropout):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    return GraphModule(traced, graph)
