"""Replacing every occurrence of a pattern in a GraphModule (torch.fx.subgraph_rewriter)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .graph import Graph
from .graph_module import GraphModule, _copy_attr
from .node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: the graph node the pattern's output matched, and every pattern
    node's counterpart."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _as_graph(fn: Callable | Graph | GraphModule) -> tuple[Graph, Any]:
    from ._symbolic_trace import symbolic_trace

    if isinstance(fn, Graph):
        return fn, None
    if isinstance(fn, GraphModule):
        return fn.graph, fn
    traced = symbolic_trace(fn)
    return traced.graph, traced


def _same_constant(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # a value whose == is not a plain truth (a tensor): only identity counts
        return a is b


class _Matcher:
    def __init__(self, pattern: Graph) -> None:
        outputs = pattern.output_node().args[0]
        if not isinstance(outputs, Node):
            raise ValueError("replace_pattern: the pattern must return exactly one value (a single node)")
        self.anchor = outputs
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        self.body = [n for n in pattern.nodes if n.op not in ("placeholder", "output")]

    def match(self, gn: Node) -> dict[Node, Node] | None:
        mapping: dict[Node, Node] = {}
        if not self._match_node(self.anchor, gn, mapping):
            return None
        inside = {mapping[pn] for pn in self.body}
        for pn in self.body:
            if pn is self.anchor:
                continue
            # an inner node whose value is read outside the match cannot be replaced
            if any(user not in inside for user in mapping[pn].users):
                return None
        return mapping

    def _match_node(self, pn: Node, gn: Any, mapping: dict[Node, Node]) -> bool:
        if not isinstance(gn, Node):
            return False
        if pn in mapping:
            return mapping[pn] is gn
        if pn.op == "placeholder":
            mapping[pn] = gn
            return True
        if pn.op != gn.op or gn.op in ("placeholder", "output"):
            return False
        if pn.target != gn.target and not (pn.op == "call_function" and pn.target is gn.target):
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        if gn in mapping.values():
            return False
        saved = dict(mapping)
        mapping[pn] = gn
        pairs = list(zip(pn.args, gn.args, strict=True)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
        if all(self._match_arg(pa, ga, mapping) for pa, ga in pairs):
            return True
        mapping.clear()
        mapping.update(saved)
        return False

    def _match_arg(self, pa: Any, ga: Any, mapping: dict[Node, Node]) -> bool:
        if isinstance(pa, Node):
            return self._match_node(pa, ga, mapping)
        if isinstance(pa, (tuple, list)):
            return isinstance(ga, (tuple, list)) and len(pa) == len(ga) and \
                all(self._match_arg(p, g, mapping) for p, g in zip(pa, ga, strict=True))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and set(pa) == set(ga) and all(self._match_arg(pa[k], ga[k], mapping)
                                                                       for k in pa)
        return not isinstance(ga, Node) and _same_constant(pa, ga)


def replace_pattern(gm: GraphModule, pattern: Callable | Graph | GraphModule,
                    replacement: Callable | Graph | GraphModule) -> list[Match]:
    """Finds every non-overlapping occurrence of ``pattern`` (a function or module, traced, or a
    Graph) in ``gm``'s graph and replaces it with ``replacement``, which takes the same inputs;
    recompiles ``gm`` and returns the matches. A pattern matches where the same ops read the same
    inputs (its placeholders match any node) and none of its inner values is read elsewhere."""
    if not isinstance(gm, GraphModule):
        raise TypeError(f"replace_pattern expects a GraphModule, got {type(gm).__name__}")
    pattern_graph, _ = _as_graph(pattern)
    replacement_graph, replacement_module = _as_graph(replacement)
    matcher = _Matcher(pattern_graph)
    replacement_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(replacement_inputs) != len(matcher.placeholders):
        raise ValueError(f"replace_pattern: the pattern takes {len(matcher.placeholders)} inputs but the "
                         f"replacement takes {len(replacement_inputs)}")

    graph = gm.graph
    matches: list[Match] = []
    taken: set[Node] = set()
    for gn in list(graph.nodes):
        mapping = matcher.match(gn)
        if mapping is None or any(mapping[pn] in taken for pn in matcher.body):
            continue
        taken.update(mapping[pn] for pn in matcher.body)
        matches.append(Match(anchor=gn, nodes_map=mapping))

    # an anchor replaced by an earlier match may be an input of a later one
    replaced: dict[Node, Any] = {}
    for match in matches:
        if replacement_module is not None:
            for node in replacement_graph.nodes:
                if node.op in ("get_attr", "call_module") and not _has_path(gm, node.target):
                    _copy_attr(replacement_module, gm, node.target)
        val_map: dict[Node, Any] = {}
        for rp, pp in zip(replacement_inputs, matcher.placeholders, strict=True):
            bound = match.nodes_map[pp]
            val_map[rp] = replaced.get(bound, bound)
        with graph.inserting_before(match.anchor):
            new_out = graph.graph_copy(replacement_graph, val_map)
        if not isinstance(new_out, Node):
            raise ValueError("replace_pattern: the replacement must return exactly one value (a single node)")
        match.anchor.replace_all_uses_with(new_out)
        replaced[match.anchor] = new_out
        for pn in reversed(matcher.body):
            gn = match.nodes_map[pn]
            if not gn.users and not gn._erased:
                graph.erase_node(gn)
    gm.recompile()
    return matches


def _has_path(module: Any, target: str) -> bool:
    for atom in target.split("."):
        if not hasattr(module, atom):
            return False
        module = getattr(module, atom)
    return True
