#!/usr/bin/env python3
"""Compare Ember's public names with PyTorch's, namespace by namespace, and write
docs/compatibility-api.md: coverage per namespace (and the coverage of an earlier run, when
given), then every name still absent with the reason it is absent.

Run where both `ember` and `torch` import (the bench session's environment):

    python ci/api_coverage.py --json build/api-now.json [--before build/api-before.json] \
        [--baseline build/api-torch22.json] [--write docs/compatibility-api.md]

`--json` saves this run's name sets, so a later run can show them as "before". `--baseline` adds
the coverage of a run made against another PyTorch release (the porting issue's baseline, 2.2:
`--json` only, in an environment with that torch and the same Ember), and lists the names that
release has and this one lacks, with their reasons.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

# (PyTorch namespace, Ember namespace); "Tensor" compares the Tensor classes' attributes.
NAMESPACES = [
    ("torch", "ember"), ("torch.Tensor", "ember.Tensor"), ("torch.nn", "ember.nn"),
    ("torch.nn.functional", "ember.nn.functional"), ("torch.autograd", "ember.autograd"),
    ("torch.utils.data", "ember.utils.data"), ("torch.optim", "ember.optim"), ("torch.func", "ember.func"),
    ("torch.linalg", "ember.linalg"), ("torch.fft", "ember.fft"), ("torch.distributions", "ember.distributions"),
    ("torch.special", "ember.special"), ("torch.sparse", "ember.sparse"), ("torch.masked", "ember.masked"),
    ("torch.nn.init", "ember.nn.init"), ("torch.nn.utils", "ember.nn.utils"),
    ("torch.utils.checkpoint", "ember.utils.checkpoint"), ("torch.overrides", "ember.overrides"),
    ("torch.library", "ember.library"), ("torch.fx", "ember.fx"), ("torch.export", "ember.export"),
    ("torch.jit", "ember.jit"),
]

# Why a name is absent, first match wins (patterns over the lower-cased name).
REASONS = [
    (r"cuda|cudnn|mps|xpu|hip|mtia|nccl|xla|hpu|ipu|privateuse|vulkan|metal|pin_memory|is_pinned|maia|"
     r"^(record_stream|accelerator_?error|dataparallel|is_ort)$",
     "device-specific: Ember runs on CPU (ember.cuda answers truthfully)"),
    (r"^q[u]?int(8|32|4x2|2x4)storage$", "typed storage classes of the quantized dtypes: Ember's checkpoints read and write "
     "them, but ember has no such class (a quantized tensor's integers are its int_repr())"),
    (r"^choose_qparams_optimized$|^fbgemm_.*quantiz", "a backend library's private kernels"),
    (r"quant|qint|quint|^q_|int_repr|qparams|^qscheme$|^qat$|^intrinsic$",
     "quantized kernels Ember does not have (the legacy functional RNN cells, which take FBGEMM's packed "
     "weights): quantized tensors, Linear, Conv, pooling, batch norm, embedding tables, the dynamic LSTM/GRU and "
     "cells, the quantizable and static quantized LSTM/MultiheadAttention and eager-mode quantization are in "
     "(ember.ao)"),
    (r"^spsolve$|semi_?structured", "device-specific: PyTorch runs these only on CUDA (cuDSS, cuSPARSELt)"),
    (r"sparse|csr|csc|bsr|bsc|coo|to_dense|smm|sspaddmm|hspmm|spmm|saddmm|^(indices|values)(_copy)?$|"
     r"(crow|ccol|col|row)_indices|coalesce|^dense_dim$|^layout$|^strided$",
     "sparse tensors: Ember has COO and 2-D CSR/CSC/BSR/BSC (ember.sparse)"),
    (r"^hash_tensor$", "a dtype Ember does not have (hash_tensor answers in uint64)"),
    (r"tensormode$|^capture_logs$",
     "PyTorch's test helpers (torch.testing._internal.logging_tensor), left in torch.utils.checkpoint by an "
     "import, not API"),
    (r"^enable_reentrant_dispatch$",
     "re-entering autograd from inside __torch_dispatch__ (PyTorch's Python TLS snapshot): Ember's "
     "__torch_dispatch__ handlers run below autograd throughout"),
    (r"^redispatch_function$",
     "skipping one level of __torch_function__ dispatch (torch._C._skip_one_hop_torch_function): not in Ember"),
    (r"^to_padded_tensor$", "nested tensors: a method of ember.nested's NestedTensor, not of a dense tensor"),
    (r"^dimordims$", "a module or helper PyTorch's own source imports, not API (os, sys, math, typing, ...)"),
    (r"^index$", "first-class dimensions (functorch.dim): not in Ember"),
    (r"^(eig|symeig|lstsq|solve|matrix_rank|reinforce|volatile)$",
     "removed from PyTorch: there it raises or answers a constant, pointing to torch.linalg / torch.no_grad"),
    (r"^(fork|wait|parse_ir|parse_schema|parse_type_comment|merge_type_from_type_comment|unify_type_list|"
     r"import_ir_module.*)$", "TorchScript and C++ binding internals (torch.jit)"),
    (r"^get_default_nowrap_functions$", "__torch_function__ on property getters: Ember's Tensor properties do not "
     "dispatch under their own name (they reach the native ops they call)"),
    (r"nested", "nested tensors: PyTorch's nested-tensor internals (Ember has ember.nested's strided and jagged ones)"),
    (r"mkldnn|onednn|fbgemm|miopen|nnpack|mkl|xnnpack|cpp_|_cpu$", "a backend library's private kernels"),
    (r"^get_ctx$", "fake tensors and symbolic sizes: Ember has none (an ember.library fake implementation "
     "is run by opcheck on real inputs)"),
    (r"^get_kernel$", "a registered kernel as a callable, by dispatch key (PyTorch 2.9+): not in Ember"),
    (r"triton", "device-specific: Triton kernels run on GPUs"),
    (r"^device_types_t$", "a type alias of PyTorch's source, not API"),
    (r"^(dim|dims|dynamic_dim|dynamic_shapes|constraint|shapescollection|additionalinputs)$",
     "symbolic shapes: Ember exports with the example inputs' shapes"),
    (r"^(passresult|passmanager|passtype)$", "FX's pass infrastructure, left in torch.export by an import, not "
     "API (ember.fx.passes.infra has PassBase, PassResult and PassManager)"),
    (r"^(log|pytree|fx_pytree|compatibility)$",
     "a variable or module left in the namespace by PyTorch's own source (a loop variable, an import), not API"),
    (r"^(config|traceback)$", "graph capture and compilers (FX, export, torch.compile "
     "internals, symbolic shapes)"),
    (r"jit|script|onnx|export|fx|dynamo|inductor|compiler|symint|^sym|guard|library|ops$|^cond$|"
     r"^while_loop$|^classes$|^package$|^effecttype$",
     "graph capture and compilers (FX, export, torch.compile internals, symbolic shapes)"),
    (r"distributed|rpc|futures|monitor|syncbatchnorm|^batch_norm_(backward|elemt|gather|stats|update)",
     "distributed: issue 20"),
    (r"^(use_global_deps|use_rtld_global_with_libtorch|compiled_with_cxx11_abi|has_lapack|has_openmp|"
     r"has_spectral|has_mkl|get_file_path|classproperty|thread_safe_generator)$",
     "libtorch's build and loader details, not API"),
    (r"^(names|name|rename_?|refine_names|align_to|align_as|align_tensors|has_names)$",
     "named tensors (a PyTorch prototype)"),
    (r"^prepare_multiprocessing_environment$", "the file_system sharing strategy's manager daemon "
     "(torch_shm_manager): Ember has none (the process that made a shared file unlinks it)"),
    (r"vital", "PyTorch's internal telemetry (TorchVitals), not API"),
    (r"^(attr|candidate|obj|count|uid|utils|nameless_schema)$",
     "a variable or module left in the namespace by PyTorch's own source (a loop variable, an import), not API"),
    (r"^cpp$", "TorchScript and C++ binding internals (torch._C)"),
    (r"^last_executed_optimized_graph$", "TorchScript and C++ binding internals (torch.jit)"),
    (r"^set_module$", "a module or helper PyTorch's own source imports, not API (os, sys, math, typing, ...)"),
    (r"^windows$", "torch.signal.windows, left in torch's namespace by an import (ember.signal.windows has it)"),
    (r"autocast|^amp$|gradscaler", "autocast on CPU: issue 18, item 3"),
    (r"^uint(16|32|64)$|float8_e[45]m[23]fnuz|e8m0|float4|qscheme|^u?int[1-7]$|^bit$",
     "a dtype Ember does not have"),
]
NOT_YET = "not yet implemented (issue 18, item 1)"

# Reasons decided by what the missing object is rather than by its name (see `kind`).
KIND_REASONS = {
    "binding": "TorchScript and C++ binding internals (torch._C)",
    "script": "TorchScript and C++ binding internals (torch.jit)",
    "leak": "a module or helper PyTorch's own source imports, not API (os, sys, math, typing, ...)",
    "docs": "a docstring fragment, not API",
}
STDLIB_MODULES = ("typing", "typing_extensions", "collections", "builtins", "dataclasses", "enum", "abc", "functools",
                  "numpy", "weakref", "contextlib")


def module_of(obj: object) -> str:
    """The module an object comes from (a module's own name for a module)."""
    import types

    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    return module if isinstance(module, str) else ""


def kind(owner: object, name: str) -> str:
    """What a PyTorch name is, where that decides why Ember lacks it: "binding" (a pybind11 class,
    or a torch._C builtin that is not an ATen op), "script" (TorchScript's Python side), "leak"
    (a module or typing helper imported by PyTorch's source), "docs", else ""."""
    import types

    import torch

    obj = getattr(owner, name, None)
    module = module_of(obj)
    if isinstance(obj, types.ModuleType):
        return "" if module.startswith("torch.") else "leak"  # "torch" itself, re-imported, is a leak too
    if name == "TYPE_CHECKING" or module.split(".")[0] in STDLIB_MODULES:
        return "leak"
    if isinstance(obj, dict) and name.endswith(("_notes", "_args", "_common")):
        return "docs"
    if module.startswith("torch.utils._pytree"):
        return "leak"  # tree_map & co., imported by PyTorch's source
    if module.startswith(("torch.jit", "torch._jit_internal", "torch._C._jit", "torch.classes")):
        return "script"
    if obj is torch.Tensor and owner is not torch:
        return "leak"  # torch.Tensor re-imported into a submodule
    # pybind11 classes (TorchScript's types, Graph, FileCheck, ...) and torch._C's own classes.
    if type(obj).__name__ == "pybind11_type" or (type(obj).__module__ == "torch._C" and module.startswith("torch._C")):
        return "binding"
    if type(type(obj)).__name__ == "pybind11_type" and not isinstance(obj, (torch.dtype, torch.layout)):
        return "binding"  # an instance of a pybind11 class: an enum value such as AggregationType.SUM
    if module.startswith("torch._C") and isinstance(obj, type) and owner is not torch.Tensor:
        return "binding"
    return ""


def public_names(path: str) -> set[str]:
    module_name, _, attr = path.rpartition(".") if path.endswith(".Tensor") else (path, "", "")
    obj = importlib.import_module(module_name if attr else path)
    if attr:
        obj = getattr(obj, attr)
    return {n for n in dir(obj) if not n.startswith("_")}


def reason(name: str, module: str = "", what: str = "") -> str:
    lowered = name.lower()
    if re.search(REASONS[0][0], lowered):  # device-specific names first, whatever their object is
        return REASONS[0][1]
    if what in KIND_REASONS:
        return KIND_REASONS[what]
    if module.startswith(("torch.utils.data.datapipes", "torch.utils.data.graph")):
        return "DataPipes: deprecated in PyTorch, and dropped by torchdata"
    if module.startswith(("torch.jit", "torch._ops")):
        return "TorchScript and C++ binding internals (" + module.split(".")[1] + ")"
    lowered = name.lower()
    for pattern, why in REASONS:
        if re.search(pattern, lowered):
            return why
    return NOT_YET


def measure() -> dict:
    import torch

    out = {"torch": torch.__version__, "namespaces": {}}
    for theirs, ours in NAMESPACES:
        want = public_names(theirs)
        try:
            have = public_names(ours)
        except (ImportError, AttributeError):
            have = set()
        owner = importlib.import_module(theirs) if not theirs.endswith(".Tensor") else torch.Tensor
        modules = {n: module_of(getattr(owner, n, None)) for n in want - have}
        kinds = {n: kind(owner, n) for n in want - have}
        out["namespaces"][theirs] = {"torch": sorted(want), "present": sorted(want & have),
                                     "modules": {n: m for n, m in modules.items() if isinstance(m, str)},
                                     "kinds": {n: k for n, k in kinds.items() if k}}
    return out


def coverage_table(run: dict, before: dict | None = None) -> list[str]:
    lines = ["| namespace | PyTorch names | in Ember | coverage |" + (" before |" if before else ""),
             "|---|---:|---:|---:|" + ("---:|" if before else "")]
    for ns, sets in run["namespaces"].items():
        total, have = len(sets["torch"]), len(sets["present"])
        row = f"| `{ns}` | {total} | {have} | {100 * have / max(total, 1):.0f} % |"
        if before:
            old = before["namespaces"].get(ns)
            if old:
                kept = len(set(old["present"]) & set(sets["torch"]))
                row += f" {100 * kept / max(total, 1):.0f} % |"
            else:
                row += " — |"
        lines.append(row)
    return lines


def absent_lines(sets: dict, missing: list[str]) -> list[str]:
    by_reason: dict[str, list[str]] = {}
    for name in missing:
        why = reason(name, sets.get("modules", {}).get(name, ""), sets.get("kinds", {}).get(name, ""))
        by_reason.setdefault(why, []).append(name)
    return [f"- {why} ({len(by_reason[why])}): " + ", ".join(f"`{n}`" for n in by_reason[why])
            for why in sorted(by_reason, key=lambda w: (w == NOT_YET, w))]


def render(now: dict, before: dict | None, baseline: dict | None = None) -> str:
    lines = [
        "<!-- Generated by `python ci/api_coverage.py`; do not edit by hand. -->",
        "",
        "# API coverage against PyTorch",
        "",
        f"Public names of each PyTorch {now['torch']} namespace that Ember provides under the same "
        "name (a name counts when it exists; its behaviour is what Ember's tests check). "
        + ("The *before* column is the earlier run given with `--before`." if before else ""),
        "",
    ]
    lines += coverage_table(now, before)
    if baseline:
        lines += ["", f"Against PyTorch {baseline['torch']}, the release the porting issue measures against "
                  "(the same Ember, measured in an environment with that PyTorch):", ""]
        lines += coverage_table(baseline)
    lines += ["", "## Absent names and why", ""]
    for ns, sets in now["namespaces"].items():
        missing = sorted(set(sets["torch"]) - set(sets["present"]))
        if not missing:
            continue
        lines += [f"### `{ns}` ({len(missing)} absent)", ""]
        lines += absent_lines(sets, missing)
        lines.append("")
    if baseline:
        lines += [f"### Names of PyTorch {baseline['torch']} that {now['torch']} no longer has, absent in Ember", ""]
        for ns, sets in baseline["namespaces"].items():
            current = set(now["namespaces"].get(ns, {}).get("torch", []))
            missing = sorted(set(sets["torch"]) - set(sets["present"]) - current)
            if missing:
                lines += [f"`{ns}`:", "", *absent_lines(sets, missing), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="save this run's name sets here")
    parser.add_argument("--before", type=Path, help="an earlier --json file, shown as the before column")
    parser.add_argument("--baseline", type=Path, help="a --json run against another PyTorch release, shown too")
    parser.add_argument("--write", type=Path, help="write the Markdown page here (default: print it)")
    args = parser.parse_args(argv)
    now = measure()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    baseline = json.loads(args.baseline.read_text(encoding="utf-8")) if args.baseline else None
    page = render(now, before, baseline)
    if args.write:
        args.write.write_text(page + "\n", encoding="utf-8")
    else:
        sys.stdout.write(page + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
