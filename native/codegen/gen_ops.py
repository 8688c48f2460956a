"""Generates everything derived from native/ops/declarations.py (the one place ops are declared).

    python gen_ops.py OUT_DIR

writes into OUT_DIR:
  include/ember/ops.h     C++ declarations, in namespace ember
  ops_registry.cpp        registers each op as aten::<name> in the op registry (ember.ops.aten.*)
  ops_bindings.cpp        the pybind11 functions and Tensor methods (compiled into ember._C)
  ops.pyi                 type stubs for those functions
  opdb.json               one record per op for the op-database tests
  include/ember/pointwise_ops.h
                          the X-macro lists of the pointwise ops with kernels of their own
                          (declared with kernel=), read by src/ops/kernels.h (internal: not installed)

An op declared as `fbgemm::<name>(...)` (FBGEMM's recommendation kernels) is registered as
fbgemm::<name> (ember.ops.fbgemm.<name>) and gets no ember.<name> binding; its C++ declarations
and autograd wrappers go to their own files (include/ember/fbgemm_ops.h, fbgemm_ops.cpp), so
adding one recompiles those few files rather than everything that includes ops.h.

A file is rewritten only when its text changes, so an unchanged build stays incremental.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import gen_autograd
import gen_batching

HERE = Path(__file__).resolve().parent
DECLARATIONS = HERE.parent / "ops" / "declarations.py"

# schema type -> (C++ parameter type, C++ value type, Python annotation)
CPP_PARAM = {
    "Tensor": "const Tensor&", "Tensor?": "const std::optional<Tensor>&", "Tensor[]": "const std::vector<Tensor>&",
    "Tensor?[]": "const std::vector<std::optional<Tensor>>&",
    "int": "int64_t", "int?": "std::optional<int64_t>", "int[]": "const IntList&",
    "int[]?": "const std::optional<IntList>&", "float": "double", "float?": "std::optional<double>",
    "bool": "bool", "str": "const std::string&", "str?": "const std::optional<std::string>&",
    "Scalar": "const Scalar&", "Scalar?": "const std::optional<Scalar>&", "ScalarType": "DType",
    "ScalarType?": "std::optional<DType>", "Device": "Device", "Device?": "std::optional<Device>",
    "Generator?": "const std::shared_ptr<Generator>&",
}
CPP_RETURN = {"Tensor": "Tensor", "Tensor?": "std::optional<Tensor>", "Tensor[]": "std::vector<Tensor>",
              "int": "int64_t", "float": "double", "bool": "bool"}
PY_TYPE = {
    "Tensor": "Tensor", "Tensor?": "Tensor | None", "Tensor[]": "Sequence[Tensor]", "Tensor?[]": "Sequence[Tensor | None]",
    "int": "int",
    "int?": "int | None", "int[]": "int | Sequence[int]", "int[]?": "int | Sequence[int] | None",
    "float": "float", "float?": "float | None", "bool": "bool", "str": "str", "str?": "str | None",
    "Scalar": "Number", "Scalar?": "Number | None", "ScalarType": "dtype", "ScalarType?": "dtype | None",
    "Device": "device | str", "Device?": "device | str | None", "Generator?": "Generator | None",
}
PY_RETURN = {"Tensor": "Tensor", "Tensor?": "Tensor | None", "Tensor[]": "list[Tensor]", "int": "int", "float": "float", "bool": "bool"}


def load_declarations():
    spec = importlib.util.spec_from_file_location("declarations", DECLARATIONS)
    module = importlib.util.module_from_spec(spec)
    sys.modules["declarations"] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def load_ops():
    return load_declarations().OPS


ARG = re.compile(r"^(?P<type>[A-Za-z]+\??(?:\[\d*\])?\??)\s+(?P<name>\w+)(?:=(?P<default>.+))?$")


def split_top_level(text: str) -> list[str]:
    """Splits on commas outside brackets, so a default like [0, 1] stays whole."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def namespace(schema: str) -> str:
    """'fbgemm::name(...)' -> 'fbgemm'; an unqualified schema is aten's."""
    head = schema.split("(", 1)[0]
    ns = head.split("::", 1)[0] if "::" in head else "aten"
    if ns not in ("aten", "fbgemm"):
        raise SystemExit(f"gen_ops: {schema!r}: built-in ops live in aten or fbgemm, not {ns!r}")
    return ns


def parse(schema: str) -> tuple[str, list[dict], list[str]]:
    """'[ns::]name(args) -> ret' -> (name, [{type, name, default, kwarg_only}], [return types])."""
    name, rest = schema.split("(", 1)
    name = name.split("::")[-1]
    args_text, ret = rest.rsplit(") -> ", 1)
    args, kwarg_only = [], False
    for piece in filter(None, (p.strip() for p in split_top_level(args_text))):
        if piece == "*":
            kwarg_only = True
            continue
        m = ARG.match(piece)
        if not m:
            raise SystemExit(f"gen_ops: cannot parse argument {piece!r} of {schema!r}")
        t = re.sub(r"\[\d+\]", "[]", m["type"])
        args.append({"type": t, "name": m["name"], "default": m["default"], "kwarg_only": kwarg_only})
    rets = [r.strip() for r in ret.strip("()").split(",")] if ret != "()" else []
    return name, args, rets


def cpp_default(arg: dict) -> str:
    d, t = arg["default"], arg["type"]
    if d is None:
        return ""
    if d == "None":
        return " = nullptr" if t == "Generator?" else " = std::nullopt"
    if t.startswith("int[]"):
        return " = IntList{" + d.strip("[]") + "}"
    if t == "bool":
        return " = " + d.lower()
    if t.startswith("str"):
        return ' = std::string("' + d.strip("'\"") + '")'
    return " = " + d


def py_default(arg: dict) -> str:
    d, t = arg["default"], arg["type"]
    if d is None:
        return ""
    if d == "None":
        return "py::none()"
    if t.startswith("int[]"):
        return "IntListArg{IntList{" + d.strip("[]") + "}}"
    if t == "bool":
        return d.lower()
    if t.startswith("str"):
        return 'std::string("' + d.strip("'\"") + '")'
    if t.startswith("Scalar"):
        return "Scalar(" + (d if "." in d or "e" in d else f"int64_t({d})") + ")"
    return d


def cpp_return(rets: list[str]) -> str:
    if len(rets) == 1:
        return CPP_RETURN[rets[0]]
    return "std::tuple<" + ", ".join(CPP_RETURN[r] for r in rets) + ">"


# Binding parameter types that differ from the C++ ones: Tensor arguments after the first also
# take Python numbers (wrapped 0-dim tensors), the way PyTorch accepts x + 2; int[] also takes a
# lone int, as PyTorch's IntArrayRef does.
# Tensor arguments load through TensorIn (tensors only) so that a Tensor subclass overriding
# __torch_function__ reaches its override (Note [__torch_function__] in op_binding_support.h).
BINDING_PARAM = {"int[]": "IntListArg", "int[]?": "std::optional<IntListArg>", "Tensor": "const TensorIn&",
                 "Tensor?": "const std::optional<TensorIn>&", "Tensor[]": "const std::vector<TensorItemIn>&",
                 "Tensor?[]": "const std::vector<std::optional<TensorItemIn>>&"}


def binding_param(arg: dict, first: bool) -> str:
    if arg["type"] == "Tensor" and not first:
        return "TensorArg " + arg["name"]
    return BINDING_PARAM.get(arg["type"], CPP_PARAM[arg["type"]]) + " " + arg["name"]


def binding_value(arg: dict, first: bool) -> str:
    if arg["type"] == "Tensor" and not first:
        return arg["name"] + ".tensor"
    if arg["type"] in BINDING_PARAM:
        return f"unwrap({arg['name']})"
    return arg["name"]


def returns_self(params: str, call: str) -> str:
    """A binding of an in-place method: runs `call` without the GIL and returns self's own Python
    object (so x.add_(1) is x, as in PyTorch)."""
    return (f"[]({params}) {{ const Tensor& self = self_obj.tensor; "
            f"{{ py::gil_scoped_release no_gil; {call}; }} return self_obj.obj; }}")


def method_def(name: str, lam: str, py_args: list[str]) -> str:
    return f'  def_overridable(tensor, "{name}", ' + ", ".join([lam, *py_args]) + ");"


UNARY_FORMS = {"float": "Float", "same": "Same", "integral": "Integral", "predicate": "Predicate"}
BINARY_FORMS = {"float": "Float", "same": "Same", "float_only": "FloatOnly", "integral": "Integral",
                "compare": "Compare"}


def camel(name: str) -> str:
    """'bitwise_not' -> 'BitwiseNot': the UnaryOp / BinaryOp enumerator of an op."""
    return "".join(part.capitalize() for part in name.split("_"))


def pointwise_header(ops) -> str:
    """EMBER_FORALL_UNARY_OPS(_) / EMBER_FORALL_BINARY_OPS(_): one entry per op declared with
    kernel= (and per variant), _(Enum, name, Form, complex_ok, Entry), Entry being Generated
    (pointwise.cpp defines the op from the entry) or HandWritten."""
    lists = {"unary": [], "binary": []}
    for op in ops:
        if op.kernel is None:
            if op.hand_written or op.variants:
                raise SystemExit(f"gen_ops: {op.name}: hand_written/variants need a pointwise kernel=")
            continue
        name, args, rets = parse(op.schema)
        arity = "binary" if len(args) > 1 and args[1]["type"] == "Tensor" else "unary"
        forms = BINARY_FORMS if arity == "binary" else UNARY_FORMS
        if op.kernel not in forms:
            raise SystemExit(f"gen_ops: {name}: kernel={op.kernel!r} is not a {arity} form ({sorted(forms)})")
        complex_ok = bool(op.test.get("complex"))
        if complex_ok and op.kernel == "integral":
            raise SystemExit(f"gen_ops: {name}: an integral op cannot take complex inputs")
        standard = [a["name"] for a in args] == (["self", "other", "out"] if arity == "binary" else ["self", "out"])
        if not (standard or op.hand_written):
            raise SystemExit(f"gen_ops: {name}: only (self[, other], *, out) ops get a generated entry point; "
                             "declare it hand_written=True")
        entry = "HandWritten" if op.hand_written else "Generated"
        lists[arity].append((camel(name), name, forms[op.kernel], complex_ok, entry))
        # variants: more kernels of the same op, real inputs only, reached from its hand-written body
        lists[arity] += [(variant, name, "Same", False, "HandWritten") for variant in op.variants]
    lines = ["#pragma once",
             "// Generated by native/codegen/gen_ops.py from native/ops/declarations.py (kernel=): the pointwise",
             "// ops with kernels of their own, _(Enum, name, Form, complex_ok, Entry). Internal to libember",
             "// (src/ops/kernels.h); not installed.", ""]
    for arity, entries in lists.items():
        enums = [e[0] for e in entries]
        if len(set(enums)) != len(enums):
            raise SystemExit(f"gen_ops: two {arity} pointwise kernels share an enum name")
        lines.append(f"#define EMBER_FORALL_{arity.upper()}_OPS(_) \\")
        body = [f"  _({e}, {n}, {f}, {'true' if c else 'false'}, {g})" for e, n, f, c, g in entries]
        lines += [line + " \\" for line in body[:-1]] + [body[-1], ""]
    return "\n".join(lines)


def quantized_branch(name: str, args: list[dict], quantized: bool | str) -> str:
    """The C++ statement an op's entry runs first for quantized tensors (Note [quantized tensors]
    in ember/quantizer.h): route them to ember::quantized::<kernel> (quantized="<kernel>"), let
    them through (quantized=True), or turn them away (False)."""
    names = ", ".join(a["name"] for a in args)
    if quantized is True:
        return ""
    if quantized:
        return f"if (quantized::any_quantized({names})) return quantized::{quantized}({names});"
    return f'quantized::check_unquantized("{name}"{"".join(", " + a["name"] for a in args)});'


def backend_entry(name: str, ns: str, args: list[dict], ret: str, quantized: bool | str) -> tuple[str, str]:
    """<name>_backend: the op below autograd and vmap, where an entered dispatch mode or a Python
    tensor's subclass takes the call instead of the kernel (Notes [dispatch modes] and [Python
    tensors] in ember/dispatch_mode.h), and where an op not declared for quantized tensors turns
    them away (Note [quantized tensors] in ember/quantizer.h); and its call."""
    params = ", ".join(CPP_PARAM[a["type"]] + " " + a["name"] for a in args)
    call = ", ".join(a["name"] for a in args)
    boxed = ", ".join(["op"] + [a["name"] for a in args])
    branch = quantized_branch(name, args, quantized)
    check = f"  {branch}\n" if branch else ""
    return (f"static {ret} {name}_backend({params}) {{\n"
            f"  if (dispatch_mode::active() || dispatch_mode::python_arguments({call})) {{\n"
            f'    static const Operator& op = dispatch_mode::registered("{ns}::{name}");\n'
            f"    return dispatch_mode::redirect<{ret}>({boxed});\n"
            f"  }}\n{check}  return ember::{name}({call});\n}}\n"), f"{name}_backend({call})"


def generate(ops, derivatives: dict | None = None, nondifferentiable: set | None = None,
             batching: dict | None = None) -> dict[str, str]:
    derivatives = derivatives or {}
    batching = batching or {}
    nondifferentiable = nondifferentiable or set()
    unknown = (set(derivatives) | set(nondifferentiable) | set(batching)) - {parse(op.schema)[0] for op in ops}
    if unknown:
        raise SystemExit(f"gen_ops: derivatives or batching rules declared for unknown ops {sorted(unknown)}")
    autograd_decls, autograd_defs = [], []
    fb_header, fb_autograd_decls, fb_autograd_defs, fb_registry_body = [], [], [], []
    op_names = {parse(op.schema)[0] for op in ops}
    if len(op_names) != len(ops):
        raise SystemExit("gen_ops: two ops share a name (C++ names are not namespaced)")
    header = ["#pragma once", "// Generated by native/codegen/gen_ops.py from native/ops/declarations.py.",
              "#include <optional>", "#include <string>", "#include <tuple>", "#include <vector>", "",
              '#include "ember/export.h"', '#include "ember/generator.h"', '#include "ember/scalar.h"',
              '#include "ember/tensor.h"', "",
              "namespace ember {", ""]
    registry = ["// Generated by native/codegen/gen_ops.py: every built-in op as aten::<name>.",
                '#include "ember/library.h"', '#include "ember/ops.h"', '#include "ember/quantizer.h"',
                '#include "ops/quantization/quantized.h"', "",
                "namespace ember {",
                "namespace {", ""]
    registry_body = []
    bindings = ["// Generated by native/codegen/gen_ops.py: Python bindings of the built-in ops.",
                "#include <string>", "#include <tuple>", "#include <vector>", "",
                '#include "ember/pointwise_ops.h"', '#include "op_binding_support.h"', "",
                "namespace ember::python {", "",
                "void bind_generated_ops(py::module_& m, py::class_<Tensor>& tensor) {"]
    stubs = ["# Generated by native/codegen/gen_ops.py.", "from collections.abc import Sequence",
             "from numbers import Number", "", "from ember import Generator, Tensor, device, dtype", ""]
    records = []
    for op in ops:
        name, args, rets = parse(op.schema)
        ns = namespace(op.schema)
        aten = ns == "aten"
        ret = cpp_return(rets)
        params = ", ".join(CPP_PARAM[a["type"]] + " " + a["name"] + cpp_default(a) for a in args)
        (header if aten else fb_header).append(f"EMBER_API {ret} {name}({params});")
        backend_def, raw = backend_entry(name, ns, args, ret, op.quantized)
        batching_defs, kernel = gen_batching.generate(name, args, rets, CPP_PARAM, ret, batching.get(name), raw)
        definition = backend_def + batching_defs + gen_autograd.generate(name, args, rets, CPP_PARAM, ret, derivatives.get(name),
                                                           name in nondifferentiable, op_names, kernel,
                                                           op.autocast)
        (autograd_decls if aten else fb_autograd_decls).append(f"EMBER_API {ret} {name}({params});")
        (autograd_defs if aten else fb_autograd_defs).append(definition)
        no_default = ", ".join(CPP_PARAM[a["type"]] for a in args)
        body = registry_body if aten else fb_registry_body
        body.append(f'  m.def("{op.schema}");')
        for key, space in (("CPU", "ember"), ("CUDA", "ember"), ("Autograd", "ember::autograd")):
            if key == "CPU" and op.quantized is not True:  # called by name, quantized tensors take the same path
                typed = ", ".join(CPP_PARAM[a["type"]] + " " + a["name"] for a in args)
                names = ", ".join(a["name"] for a in args)
                body.append(f'  m.impl("{name}", DispatchKey::CPU, +[]({typed}) -> {ret} {{ '
                            f'{quantized_branch(name, args, op.quantized)} return ember::{name}({names}); }});')
                continue
            body.append(
                f'  m.impl("{name}", DispatchKey::{key}, static_cast<{ret} (*)({no_default})>(&{space}::{name}));')
        if not aten:  # reached as ember.ops.<ns>.<name> only
            records.append({"name": name, "namespace": ns, "schema": op.schema, "method": False, "inplace": False,
                            "derivatives": sorted(set(derivatives.get(name, {})) - {"result"}),
                            "forward": "result" in derivatives.get(name, {}), "batching": None,
                            **{k: list(v) if isinstance(v, tuple) else v for k, v in op.test.items()}})
            continue
        # Python: module function (first argument named `input`, as torch.* does) and method.
        call = ", ".join(binding_value(a, i == 0) for i, a in enumerate(args))
        lam_params = ", ".join(binding_param(a, i == 0) for i, a in enumerate(args))
        py_args = []
        for i, a in enumerate(args):
            if a["kwarg_only"] and (i == 0 or not args[i - 1]["kwarg_only"]):
                py_args.append("py::kw_only()")
            pyname = "input" if i == 0 and a["name"] == "self" else a["name"]
            default = py_default(a)
            py_args.append(f'py::arg("{pyname}")' + (".none(true)" if a["type"].endswith("?") else "")
                           + (f" = {default}" if default else ""))
        guard = "py::call_guard<py::gil_scoped_release>()"
        result = f"ember::autograd::{name}({call})"
        if rets == ["Tensor[]"]:  # a tuple, as PyTorch's bindings return
            result = f"TensorTuple{{{result}}}"
        lam = f"[]({lam_params}) {{ return {result}; }}"
        bindings.append(f'  def_overridable(m, "{name}", {lam}, {", ".join(py_args + [guard])});')
        if op.method and args and args[0]["type"] == "Tensor":
            method_args = [py_args[j] for j in range(len(py_args)) if not py_args[j].startswith('py::arg("input")')]
            if name.endswith("_"):  # mutates self: returns the very Python object, as x.fill_(0) is x
                rest_params = ", ".join(["SelfObject self_obj"] + [binding_param(a, False) for a in args[1:]])
                bindings.append(method_def(name, returns_self(rest_params, f"ember::autograd::{name}({call})"), method_args))
            else:
                bindings.append(method_def(name, lam, method_args + [guard]))
        if op.inplace:
            assert any(a["name"] == "out" for a in args), f"{name}: in-place needs an out= argument"
            rest = [a for a in args[1:] if a["name"] != "out"]
            lam_params_ip = ", ".join(["Tensor self"] + [binding_param(a, False) for a in rest])
            call_ip = ", ".join(["self"] + [binding_value(a, False) if a["name"] != "out" else "self"
                                            for a in args[1:]])
            ip_args = [p for p in py_args[1:] if 'py::arg("out")' not in p]
            if ip_args and ip_args[-1] == "py::kw_only()":
                ip_args.pop()
            lam_params_ip = lam_params_ip.replace("Tensor self", "SelfObject self_obj", 1)
            bindings.append(method_def(name + "_", returns_self(lam_params_ip, f"ember::autograd::{name}({call_ip})"), ip_args))
        sig = []
        for i, a in enumerate(args):
            if a["kwarg_only"] and (i == 0 or not args[i - 1]["kwarg_only"]):
                sig.append("*")
            pyname = "input" if i == 0 and a["name"] == "self" else a["name"]
            sig.append(f"{pyname}: {PY_TYPE[a['type']]}" + (" = ..." if a["default"] is not None else ""))
        py_ret = PY_RETURN[rets[0]] if len(rets) == 1 else "tuple[" + ", ".join(PY_RETURN[r] for r in rets) + "]"
        if rets == ["Tensor[]"]:
            py_ret = "tuple[Tensor, ...]"
        stubs.append(f"def {name}({', '.join(sig)}) -> {py_ret}: ...")
        records.append({"name": name, "namespace": ns, "schema": op.schema, "method": op.method, "inplace": op.inplace,
                        "derivatives": sorted(set(derivatives.get(name, {})) - {"result"}),
                        "forward": "result" in derivatives.get(name, {}), "autocast": op.autocast,
                        "batching": (batching[name] if isinstance(batching.get(name), str) else
                                     "dims" if name in batching else None),
                        **{k: list(v) if isinstance(v, tuple) else v for k, v in op.test.items()}})
    header += ["", "// The same ops, recording autograd history (generated from declarations.DERIVATIVES).",
               "namespace autograd {", *autograd_decls, "}  // namespace autograd", "", "}  // namespace ember", ""]
    autograd_includes = ['#include "ember/autocast.h"', '#include "ember/autograd.h"', '#include "ember/dispatch_mode.h"',
                         '#include "ember/error.h"', '#include "ember/ops.h"',
                         '#include "ember/profiler.h"', '#include "ember/quantizer.h"', '#include "ops/quantization/quantized.h"',
                         '#include "autograd/formulas.h"',
                         '#include "autograd/formulas_linalg.h"', '#include "autograd/formulas_fft.h"',
                         '#include "autograd/formulas_norm.h"', '#include "autograd/formulas_conv.h"',
                         '#include "autograd/formulas_embedding.h"', '#include "autograd/formulas_select.h"',
                         '#include "vmap/batching.h"']
    autograd_cpp = ["// Generated by native/codegen/gen_ops.py: autograd wrappers and backward nodes.",
                    *autograd_includes, "", "namespace ember::autograd {", "", *autograd_defs,
                    "}  // namespace ember::autograd", ""]
    fb_header = ["#pragma once", "// Generated by native/codegen/gen_ops.py: the fbgemm:: ops of declarations.py.",
                 '#include "ember/ops.h"', "", "namespace ember {", "", *fb_header, "",
                 "namespace autograd {", *fb_autograd_decls, "}  // namespace autograd", "",
                 "}  // namespace ember", ""]
    fb_cpp = ["// Generated by native/codegen/gen_ops.py: the fbgemm:: ops' autograd wrappers and registry.",
              *autograd_includes, '#include "ember/fbgemm_ops.h"', '#include "ember/library.h"',
              '#include "autograd/formulas_fbgemm.h"', "",
              "namespace ember::autograd {", "", *fb_autograd_defs, "}  // namespace ember::autograd", "",
              "namespace ember {", "", "EMBER_LIBRARY(fbgemm, m) {", *fb_registry_body, "}", "",
              "}  // namespace ember", ""]
    registry += ["}  // namespace", "", "EMBER_LIBRARY(aten, m) {", *registry_body, "}", "",
                 "}  // namespace ember", ""]
    # The aten ops ember/__init__.py exports as ember.<name>, in declaration order.
    exported = ", ".join(f'"{r["name"]}"' for r in records if r["namespace"] == "aten")
    bindings += ["  m.def(\"_generated_op_names\", [] {",
                 f"    return std::vector<std::string>{{{exported}}};",
                 "  });",
                 "  // The pointwise kernels' facts as C++ sees them (ember/pointwise_ops.h), for the tests.",
                 "  m.def(\"_pointwise_kernels\", [] {",
                 "    std::vector<std::tuple<std::string, std::string, std::string, std::string, bool, std::string>> rows;",
                 "#define EMBER_UNARY_ROW(e, n, f, c, g) rows.emplace_back(\"unary\", #e, #n, #f, c, #g);",
                 "#define EMBER_BINARY_ROW(e, n, f, c, g) rows.emplace_back(\"binary\", #e, #n, #f, c, #g);",
                 "    EMBER_FORALL_UNARY_OPS(EMBER_UNARY_ROW)",
                 "    EMBER_FORALL_BINARY_OPS(EMBER_BINARY_ROW)",
                 "#undef EMBER_UNARY_ROW",
                 "#undef EMBER_BINARY_ROW",
                 "    return rows;",
                 "  });",
                 "}", "", "}  // namespace ember::python", ""]
    return {
        "include/ember/ops.h": "\n".join(header),
        "ops_registry.cpp": "\n".join(registry),
        "autograd_ops.cpp": "\n".join(autograd_cpp),
        "include/ember/fbgemm_ops.h": "\n".join(fb_header),
        "fbgemm_ops.cpp": "\n".join(fb_cpp),
        "ops_bindings.cpp": "\n".join(bindings),
        "ops.pyi": "\n".join(stubs) + "\n",
        "opdb.json": json.dumps(records, indent=1) + "\n",
        "include/ember/pointwise_ops.h": pointwise_header(ops),
    }


def main() -> None:
    out = Path(sys.argv[1])
    module = load_declarations()
    for rel, text in generate(module.OPS, getattr(module, "DERIVATIVES", {}),
                              getattr(module, "NONDIFFERENTIABLE", set()), getattr(module, "BATCHING", {})).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


if __name__ == "__main__":
    main()
