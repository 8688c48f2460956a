"""Static structure of the `ember` package: its modules' imports point one way.

Rule: build the import graph of every module under src/ember with `ast` (imports at module
level and inside functions alike, since a lazy import that dodges a circle is still a circle;
only `if TYPE_CHECKING:` blocks are skipped). `from X import name` is an edge to X.name when
that is a module, else to X. Edges into the root package `ember` (the public namespace, which
imports everything by design, like `torch/__init__.py`) and into `ember._C` are not counted.
Any strongly connected component of more than one module is an import circle: a failure.

Second rule: only ember._tensor_methods assigns onto the Tensor class (`Tensor.x = ...`,
`setattr(Tensor, ...)`); the family modules list their methods in tensor_methods() tables.
"""

import ast
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
ROOT = "ember"
EXEMPT = {ROOT, ROOT + "._C"}


def _modules():
    """{dotted module name: path} for every .py file under src/ember."""
    mods = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _is_type_checking(node):
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree):
    """Every Import/ImportFrom node in the tree, except under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.If) and _is_type_checking(node):
            children = node.orelse
        stack.extend(children)


def import_graph():
    """{module: set of ember modules it imports}, exempt targets left out."""
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in mods else base)
        graph[name] = {
            t for t in targets if t in mods and t not in EXEMPT and t != name
        }
    return graph


def strongly_connected(graph):
    """Tarjan's algorithm (iterative): the list of components, each a sorted list."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        comp.append(member)
                        if member == node:
                            break
                    comps.append(sorted(comp))
    return comps


def _cycle(graph, comp):
    """One concrete circle through the component's first module, for the message."""
    members, start = set(comp), comp[0]
    paths, seen = {start: [start]}, {start}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    return paths[node] + [start]
                if child not in seen:
                    seen.add(child)
                    paths[child] = paths[node] + [child]
                    nxt.append(child)
        frontier = nxt
    return comp


def test_no_import_circle():
    graph = import_graph()
    assert len(graph) > 100  # the scan found the package
    circles = [c for c in strongly_connected(graph) if len(c) > 1]
    message = "\n".join(
        f"{len(c)} modules: {' -> '.join(_cycle(graph, c))}" for c in circles
    )
    assert not circles, "import circles in ember:\n" + message


def test_strongly_connected_reports_each_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    circles = sorted(c for c in strongly_connected(graph) if len(c) > 1)
    assert circles == [["a", "b", "c"], ["d", "e"]]
    assert _cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_graph_resolves_relative_and_submodule_imports():
    graph = import_graph()
    # `from . import forward_ad` in ember.autograd is an edge to the submodule.
    assert "ember.autograd.forward_ad" in graph["ember.autograd"]
    # `from ember import _C` and `import ember` are exempt, never edges.
    assert all(t not in EXEMPT for targets in graph.values() for t in targets)


# ---- Tensor's Python-defined methods have one home ------------------------------------------------

METHOD_HOME = ROOT + "._tensor_methods"


def _is_tensor_class(node):
    """`Tensor`, `_C.Tensor`, `ember.Tensor`, ...: the class itself (not a variable holding a tensor)."""
    return (isinstance(node, ast.Name) and node.id == "Tensor") or (
        isinstance(node, ast.Attribute) and node.attr == "Tensor"
    )


def tensor_assignments():
    """{module: [line, ...]} of every `Tensor.x = ...` and `setattr(Tensor, ...)` under src/ember."""
    found = {}
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            hit = any(isinstance(t, ast.Attribute) and _is_tensor_class(t.value) for t in targets)
            hit = hit or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("setattr", "delattr")
                and node.args
                and _is_tensor_class(node.args[0])
            )
            if hit:
                found.setdefault(name, []).append(node.lineno)
    return found


def test_tensor_methods_attached_in_one_module():
    """Family modules list their methods in tensor_methods(); only ember._tensor_methods attaches."""
    found = tensor_assignments()
    assert METHOD_HOME in found  # the scan sees the one home's setattr
    others = {name: lines for name, lines in found.items() if name != METHOD_HOME}
    assert not others, f"modules other than {METHOD_HOME} assign onto Tensor: {others}"
