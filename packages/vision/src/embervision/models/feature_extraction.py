"""A model's intermediate values as its outputs, by symbolic tracing
(torchvision.models.feature_extraction).

``get_graph_node_names(model)`` lists the names of the values a model computes, in train and in
eval mode: a leaf module's output is named by its path (``layer1.0.conv1``), anything else by the
path of the module whose forward made it and the op (``layer1.0.add``), with ``_1``, ``_2`` for
repeats (``layer1.0.relu_1``). ``create_feature_extractor(model, return_nodes)`` returns a
``GraphModule`` computing only what the requested values need and returning them in a dict; a
module path names that module's last value. The module keeps one graph per mode and switches with
``train()``/``eval()``.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import ember
import ember.fx
from ember import nn
from ember.fx.graph_module import _copy_attr

__all__ = ["create_feature_extractor", "get_graph_node_names"]


class LeafModuleAwareTracer(ember.fx.Tracer):
    """A tracer that also keeps the given module types as leaves (one node each)."""

    def __init__(self, *args: Any, leaf_modules: list[type] | None = None, **kwargs: Any) -> None:
        self.leaf_modules = tuple(leaf_modules or ())
        super().__init__(*args, **kwargs)

    def is_leaf_module(self, m: nn.Module, module_qualname: str) -> bool:
        return isinstance(m, self.leaf_modules) or super().is_leaf_module(m, module_qualname)


class NodePathTracer(LeafModuleAwareTracer):
    """Records, for each node it makes, the name ``get_graph_node_names`` gives it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current_module_qualname = ""
        self.node_to_qualname: dict[ember.fx.Node, str] = {}
        self._seen: dict[str, int] = {}

    def call_module(self, m: nn.Module, forward: Any, args: tuple, kwargs: dict) -> Any:
        outer = self.current_module_qualname
        try:
            self.current_module_qualname = self.path_of_module(m)
            if not self.is_leaf_module(m, self.current_module_qualname):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", self.current_module_qualname, args, kwargs)
        finally:
            self.current_module_qualname = outer

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any = None, proxy_factory_fn: Any = None) -> Any:
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        self.node_to_qualname[proxy.node] = self._qualname(proxy.node)
        return proxy

    def _qualname(self, node: ember.fx.Node) -> str:
        if node.op == "call_module":
            base = self.current_module_qualname
        else:
            # the graph's own de-duplicating suffix goes: repeats are counted per qualified name
            op = re.sub(r"_\d+$", "", node.name)
            base = f"{self.current_module_qualname}.{op}" if self.current_module_qualname else op
        count = self._seen.get(base, 0)
        self._seen[base] = count + 1
        return base if count == 0 else f"{base}_{count}"


def _tracer_kwargs(tracer_kwargs: dict | None) -> dict:
    from .. import ops

    kwargs = {"autowrap_modules": (math, ops)}
    kwargs.update(tracer_kwargs or {})
    return kwargs


def _trace(model: nn.Module, training: bool, tracer_kwargs: dict | None,
           concrete_args: dict | None) -> tuple[ember.fx.Graph, dict]:
    was_training = model.training
    model.train(training)
    try:
        tracer = NodePathTracer(**_tracer_kwargs(tracer_kwargs))
        graph = tracer.trace(model, concrete_args=concrete_args)
    finally:
        model.train(was_training)
    return graph, tracer.node_to_qualname


def get_graph_node_names(model: nn.Module, tracer_kwargs: dict | None = None, suppress_diff_warning: bool = False,
                         concrete_args: dict | None = None) -> tuple[list[str], list[str]]:
    """The names of the values ``model`` computes in train mode and in eval mode, in order."""
    train_nodes = list(_trace(model, True, tracer_kwargs, concrete_args)[1].values())
    eval_nodes = list(_trace(model, False, tracer_kwargs, concrete_args)[1].values())
    if train_nodes != eval_nodes and not suppress_diff_warning:
        warnings.warn("NOTE: The nodes obtained by tracing the model in eval mode are a subsequence of those "
                      "obtained in train mode. When choosing nodes for feature extraction, you may need to "
                      "specify output nodes for train and eval mode separately.", stacklevel=2)
    return train_nodes, eval_nodes


class DualGraphModule(ember.fx.GraphModule):
    """A GraphModule with one graph for train mode and one for eval mode."""

    def __init__(self, root: nn.Module, train_graph: ember.fx.Graph, eval_graph: ember.fx.Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__(root, train_graph if root.training else eval_graph, class_name)
        for graph in (train_graph, eval_graph):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        self.train_graph = train_graph
        self.eval_graph = eval_graph

    def train(self, mode: bool = True) -> DualGraphModule:
        if mode is not self.training:
            self.graph = self.train_graph if mode else self.eval_graph
        return super().train(mode)


def _as_dict(nodes: list[str] | dict[str, str] | None) -> dict[str, str]:
    if nodes is None:
        return {}
    if isinstance(nodes, (list, tuple)):
        return {str(n): str(n) for n in nodes}
    if isinstance(nodes, dict):
        return {str(k): str(v) for k, v in nodes.items()}
    raise TypeError(f"return nodes must be a list or a dict of names, got {type(nodes).__name__}")


def create_feature_extractor(model: nn.Module, return_nodes: list[str] | dict[str, str] | None = None,
                             train_return_nodes: list[str] | dict[str, str] | None = None,
                             eval_return_nodes: list[str] | dict[str, str] | None = None,
                             tracer_kwargs: dict | None = None, suppress_diff_warning: bool = False,
                             concrete_args: dict | None = None) -> DualGraphModule:
    """A module returning ``{output name: value}`` for the requested nodes (names as
    ``get_graph_node_names`` gives them, or module paths for a module's last value); a dict maps
    node names to output names, a list keeps the node names."""
    if return_nodes is None and (train_return_nodes is None or eval_return_nodes is None):
        if train_return_nodes is None and eval_return_nodes is None:
            raise ValueError("Either `return_nodes` or `train_return_nodes` and `eval_return_nodes` together, "
                             "should be specified")
        raise ValueError("If any of `train_return_nodes` and `eval_return_nodes` are specified, then both should "
                         "be specified")
    if return_nodes is not None and (train_return_nodes is not None or eval_return_nodes is not None):
        raise ValueError("If `train_return_nodes` and `eval_return_nodes` are specified, then `return_nodes` "
                         "should not be specified")
    wanted = {True: _as_dict(return_nodes if return_nodes is not None else train_return_nodes),
              False: _as_dict(return_nodes if return_nodes is not None else eval_return_nodes)}
    graphs = {}
    for training in (True, False):
        graph, qualnames = _trace(model, training, tracer_kwargs, concrete_args)
        outputs = {}
        for query, out_name in wanted[training].items():
            found = None
            for node in reversed(list(graph.nodes)):  # a module path names its last value
                name = qualnames.get(node)
                if name is not None and (name == query or name.startswith(query + ".")):
                    found = node
                    break
            if found is None:
                raise ValueError(f"node: '{query}' is not present in model. Hint: use `get_graph_node_names` to make "
                                 "sure the `return_nodes` you specified are present. It may even be that you need "
                                 "to specify `train_return_nodes` and `eval_return_nodes` separately.")
            outputs[out_name] = found
        graph.erase_node(graph.output_node())
        graph.output(outputs)
        graph.eliminate_dead_code()
        graph.lint()
        graphs[training] = graph
    return DualGraphModule(model, graphs[True], graphs[False], class_name=type(model).__name__)
