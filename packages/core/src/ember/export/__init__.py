"""ember.export (torch.export): a module's forward as a graph of registered ops with its
parameters, buffers and constants lifted to inputs, and a file format for it.

``export(module, args, kwargs=None)`` runs ``forward`` once on the example inputs (through
``ember.fx.experimental.proxy_tensor``'s recording) and returns an ``ExportedProgram``: its
``graph_module`` takes every parameter (``p_<name>``), buffer (``b_<name>``), lifted constant
(``c_<name>``) and user input, as ``graph_signature`` lists; ``module()`` gives back an
``nn.Module`` that takes the user's inputs. ``save``/``load`` write and read a program as plain
data: loading one runs no code, and resolves only registered ops (``ember.ops.<ns>.<op>``) and
``operator.getitem``. ``unflatten(ep)`` rebuilds the original module hierarchy, each submodule
running its part of the graph (``nn_module_stack`` on each node, ``module_call_graph``).

Where Ember differs from PyTorch: shapes are those of the example inputs (``dynamic_shapes`` and
``Dim`` raise NotImplementedError: Ember has no symbolic shapes); control flow is taken as the
example inputs take it; in-place writes stay in the graph, as in PyTorch 2.13's training IR; the
file format is Ember's own, not PyTorch's ``.pt2`` archive.
"""

from __future__ import annotations

from . import decomp_utils, graph_signature
from .decomp_utils import CustomDecompTable
from .exported_program import (
    DEFAULT_PICKLE_PROTOCOL,
    ExportedProgram,
    ModuleCallEntry,
    ModuleCallSignature,
    default_decompositions,
    export,
    load,
    register_dataclass,
    save,
)
from .graph_signature import ExportGraphSignature
from .unflatten import FlatArgsAdapter, UnflattenedModule, unflatten

__all__ = ["DEFAULT_PICKLE_PROTOCOL", "CustomDecompTable", "ExportGraphSignature", "ExportedProgram", "FlatArgsAdapter",
           "ModuleCallEntry", "ModuleCallSignature", "UnflattenedModule", "decomp_utils", "default_decompositions",
           "export", "graph_signature", "load", "register_dataclass", "save", "unflatten"]
