"""The native core's layers only point down: core < dispatch < ops (with their CPU/CUDA kernels
in backend/) < autograd and vmap (the transforms, which call each other: a batched gradient runs
backward under vmap, and vmap's batched tensors carry gradients). A file may include headers of
its own layer or a lower one, and code below the transforms never calls into them (no
`autograd::`, `forward_ad::` or `vmap::`): the dispatcher reaches autograd only through the hooks
autograd registers (Note [autograd hooks] in ember/op_registry.h)."""

import re
from pathlib import Path

NATIVE = Path(__file__).resolve().parents[1] / "native"
RANK = {"core": 0, "dispatch": 1, "ops": 2, "backend": 2, "autograd": 3, "vmap": 3}

# The layer of each public header: where it is implemented.
HEADER_LAYER = {
    "allocator": "core", "device": "core", "dispatch_stub": "core", "dtype": "core", "error": "core",
    "export": "core", "generator": "core", "parallel": "core", "profiler": "core", "promotion": "core",
    "quantizer": "core", "scalar": "core", "scalar_types": "core", "tensor": "core", "version": "core", "writable": "core",
    "autocast": "dispatch", "dispatch_mode": "dispatch", "ivalue": "dispatch", "library": "dispatch", "op_registry": "dispatch",
    "schema": "dispatch",
    "linalg": "ops", "ops": "ops", "fbgemm_ops": "ops",  # ops.h, fbgemm_ops.h, pointwise_ops.h are generated
    "pointwise_ops": "ops",
    "autograd": "autograd", "derivatives": "autograd", "vmap": "vmap",
    "ember": None,  # the umbrella header, for extensions only
}
INCLUDE = re.compile(r'#include "([\w/]+)\.h"')
CALLS_UP = re.compile(r"\b(autograd|forward_ad|vmap)::")


def _layer_of_include(path: str, including: Path) -> str | None:
    head, _, rest = path.partition("/")
    if head == "ember":
        return HEADER_LAYER[rest]
    if not rest:  # a header beside the including file
        return _layer_of_file(including)
    return head


def _layer_of_file(f: Path) -> str | None:
    rel = f.relative_to(NATIVE)
    if rel.parts[0] == "src":
        return rel.parts[1]
    return HEADER_LAYER[f.stem]


def _sources():
    yield from sorted((NATIVE / "include" / "ember").glob("*.h"))
    for f in sorted((NATIVE / "src").rglob("*")):
        if f.suffix in {".h", ".cpp", ".cu"}:
            yield f


def _code(f: Path) -> str:
    """The file without its comments (which may name the layers above)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read_text(), flags=re.S)


def test_every_public_header_has_a_layer():
    headers = {f.stem for f in (NATIVE / "include" / "ember").glob("*.h")}
    assert headers - HEADER_LAYER.keys() == set(), "give each new header its layer in HEADER_LAYER"


def test_includes_point_down():
    upward = []
    for f in _sources():
        layer = _layer_of_file(f)
        if layer is None:
            continue
        for path in INCLUDE.findall(_code(f)):
            target = _layer_of_include(path, f)
            if target is not None and RANK[target] > RANK[layer]:
                upward.append(f"{f.relative_to(NATIVE)} ({layer}) includes {path}.h ({target})")
    assert not upward, "\n".join(upward)


def test_code_below_the_transforms_does_not_call_them():
    calls = []
    for f in _sources():
        layer = _layer_of_file(f)
        if layer is None or RANK[layer] >= RANK["autograd"]:
            continue
        for m in CALLS_UP.finditer(_code(f)):
            calls.append(f"{f.relative_to(NATIVE)} ({layer}) calls {m.group(0)}")
    assert not calls, "\n".join(calls)


def test_the_checks_see_the_tree():
    # guards the checks above against passing on an empty or moved tree
    files = list(_sources())
    assert len(files) > 100
    assert {_layer_of_file(f) for f in files} >= set(RANK)
