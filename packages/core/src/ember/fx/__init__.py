"""FX: capturing a program as a graph of operations, editing it, and turning it back into code
(torch.fx).

``symbolic_trace(module)`` runs ``forward`` on Proxies and returns a ``GraphModule``: a Module
whose ``graph`` lists the recorded ``Node``s and whose ``code`` is the Python generated from it.
A pass edits the graph (``Graph.inserting_after``, ``Node.replace_all_uses_with``,
``Graph.eliminate_dead_code``, ``replace_pattern``) and calls ``recompile()``; ``Interpreter``
runs a graph node by node and ``Transformer`` rebuilds one. ``Node.normalized_arguments``
(``operator_schemas``) matches a call's arguments to its target's signature; ``tensor_type`` has
the gradual types ``TensorType`` and ``Dyn``.

Where Ember differs from PyTorch: a dead-code pass keeps in-place calls (a method or function whose
name ends in one underscore), which PyTorch removes when nothing reads their result;
``replace_pattern`` takes patterns with one output; ``experimental.proxy_tensor.make_fx`` traces
on real tensors only; ``split_module``, graph drawing and symbolic shapes are not here. FX graph
mode quantization is ember.ao.quantization.quantize_fx.
"""

from . import (
    experimental,
    graph,
    graph_module,
    immutable_collections,
    interpreter,
    node,
    operator_schemas,
    passes,
    proxy,
    subgraph_rewriter,
    tensor_type,
)
from ._symbolic_trace import PH, PHBase, ProxyableClassMeta, Tracer, symbolic_trace, wrap
from .graph import CodeGen, Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__all__ = ["CodeGen", "Graph", "GraphModule", "Interpreter", "Node", "PH", "PHBase", "Proxy", "ProxyableClassMeta",
           "PythonCode", "TraceError", "Tracer", "Transformer", "experimental", "graph", "graph_module", "has_side_effect",
           "immutable_collections", "interpreter", "map_arg", "node", "operator_schemas", "passes", "proxy",
           "replace_pattern", "subgraph_rewriter", "symbolic_trace", "tensor_type", "wrap"]
