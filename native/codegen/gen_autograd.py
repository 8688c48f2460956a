"""The autograd half of the generator: for every declared op, a wrapper ember::autograd::<op>
that calls the op and records its backward node, and (for ops with derivative formulas in
declarations.DERIVATIVES) the node class itself. Used by gen_ops.py.

A formula is a C++ expression, evaluated inside namespace ember::autograd (so the ops it calls
record graphs too, which makes create_graph=True work). It may use `grad` (the gradient of the
output), the op's arguments by name (tensors are saved for backward), `result` (the output) and
`<arg>_sizes` (an input's shape, saved instead of the tensor).
"""

from __future__ import annotations

import re

DIFF_TENSOR = ("Tensor", "Tensor?")


def camel(name: str) -> str:
    """add -> AddBackward0, index_put_ -> IndexPutBackward1 (the in-place form), as PyTorch names them."""
    return "".join(part.capitalize() for part in name.strip("_").split("_")) + ("Backward1" if name.endswith("_")
                                                                                else "Backward0")


def value_type(cpp_param: str) -> str:
    t = cpp_param.strip()
    if t.startswith("const "):
        t = t[len("const "):]
    return t.rstrip("&").strip()


def qualify(formula: str, op_names: set[str]) -> str:
    """Calls to ops become ember::autograd:: calls (unqualified, argument-dependent lookup would
    also find the ember:: op of the same name and the call would be ambiguous)."""
    names = sorted(op_names, key=len, reverse=True)
    return re.sub(r"(?<![\w:.])(" + "|".join(map(re.escape, names)) + r")\(", r"autograd::\1(", formula)


def uses(formulas: dict[str, str], word: str) -> bool:
    return any(re.search(rf"\b{re.escape(word)}\b", f) for f in formulas.values())


JVP_KEYS = ("result",)

# Note [view replay] (ember/autograd.h): the view ops whose results record how to remake them from
# their base while view replay is on.
VIEW_REPLAY_OPS = {"view", "reshape", "flatten", "unflatten", "permute", "transpose", "t", "expand", "broadcast_to",
                   "squeeze", "unsqueeze", "narrow", "select", "slice", "as_strided", "movedim", "diagonal",
                   "unfold", "real", "imag", "view_as_real", "view_as_complex", "unbind", "split", "chunk",
                   "tensor_split"}
# Note [view creation] (ember/autograd.h): the view ops with several results, whose views may not
# be written in place while autograd tracks their base.
MULTI_OUTPUT_VIEW_OPS = {"unbind", "split", "chunk", "tensor_split"}


def in_place_lines(name: str, has_out: bool, by_name: bool, unsupported: str) -> list[str]:
    """`in_place`: the op writes self (out=self, or a name ending in _); another out= raises."""
    if not has_out:
        return [f"  const bool in_place = {'true' if by_name else 'false'};", "  (void)in_place;"]
    return ["  const bool in_place = out.has_value() && out->is_same(self);",
            f'  EMBER_CHECK(!out.has_value() || in_place, Error, "[{name}] functions with out=... arguments '
            f"don't support {unsupported}.\");", "  (void)in_place;"]


def generate(name: str, args: list[dict], rets: list[str], cpp_param: dict, cpp_return: str,
             derivatives: dict | None, nondifferentiable: bool, op_names: set[str], kernel: str,
             autocast: str | None = None) -> str:
    """The definitions (for autograd_ops.cpp) of ember::autograd::<name>: its backward node, the
    reverse-mode wrapper (<name>_reverse, which computes the op by calling `kernel`) and the public
    wrapper that adds forward mode."""
    derivatives = derivatives or {}
    vjps = {k: v for k, v in derivatives.items() if k not in JVP_KEYS}
    jvp = derivatives.get("result")
    if vjps and jvp is None:
        raise SystemExit(f"gen_ops: {name} declares reverse-mode derivatives but no JVP ('result')")
    replay = generate_view_replay(name, args, rets, cpp_param, cpp_return)
    return (generate_reverse(name, args, rets, cpp_param, cpp_return, vjps, nondifferentiable, op_names, kernel)
            + replay + generate_forward(name, args, rets, cpp_param, cpp_return, vjps, jvp, nondifferentiable,
                                        op_names, autocast, "_replayable" if replay else "_reverse"))


def generate_view_replay(name: str, args: list[dict], rets: list[str], cpp_param: dict, cpp_return: str) -> str:
    """<name>_replayable for a view op (Note [view replay]): <name>_reverse, then, with view replay
    on, the result records how to remake it from its base (this op on self remade). The results of
    a multi-output view op are marked as such (Note [view creation])."""
    if name not in VIEW_REPLAY_OPS:
        return ""
    if rets not in (["Tensor"], ["Tensor[]"]) or not args or args[0]["name"] != "self" or args[0]["type"] != "Tensor":
        raise SystemExit(f"gen_ops: {name} is in VIEW_REPLAY_OPS but is not a view op of self with one result")
    params = ", ".join(cpp_param[a["type"]] + " " + a["name"] for a in args)
    call = ", ".join(a["name"] for a in args)
    again = ", ".join(["view"] + [a["name"] for a in args[1:]])
    record = "record_view_fn" if rets == ["Tensor"] else "record_view_fns"
    if (name in MULTI_OUTPUT_VIEW_OPS) != (rets == ["Tensor[]"]):
        raise SystemExit(f"gen_ops: {name}: MULTI_OUTPUT_VIEW_OPS must list exactly the view ops returning Tensor[]")
    mark = "  mark_view_creation(result, ViewCreation::MultiOutput);\n" if name in MULTI_OUTPUT_VIEW_OPS else ""
    return (f"static {cpp_return} {name}_replayable({params}) {{\n"
            f"  auto result = {name}_reverse({call});\n{mark}"
            f"  if (ViewReplay::is_enabled())\n"
            f"    {record}(result, self, [=](const Tensor& view) {{ return autograd::{name}({again}); }});\n"
            f"  return result;\n}}\n")


AUTOCAST_POLICIES = {"lower_precision_fp": "LowerPrecisionFp", "fp32": "Fp32", "promote": "Promote"}


def autocast_prologue(name: str, args: list[dict], policy: str | None) -> str:
    """The lines that start ember::autograd::<name> of an op with an autocast policy (Note [autocast]
    in ember/autocast.h): cast the tensor arguments, then call the op again with autocast excluded."""
    if policy is None:
        return ""
    if policy not in AUTOCAST_POLICIES:
        raise SystemExit(f"gen_ops: {name}: autocast policy {policy!r} is not one of {sorted(AUTOCAST_POLICIES)}")
    cast = [a for a in args if a["type"] in ("Tensor", "Tensor?", "Tensor[]") and a["name"] != "out"]
    if not cast:
        raise SystemExit(f"gen_ops: {name}: an autocast policy needs tensor arguments")
    when = "autocast::active()" + (" && !out.has_value()" if any(a["name"] == "out" for a in args) else "")
    if policy == "promote":
        ptrs = ", ".join(f"{a['name']} ? &*{a['name']} : nullptr" if a["type"] == "Tensor?" else f"&{a['name']}"
                         for a in cast if a["type"] != "Tensor[]")
        lists = ", ".join(f"&{a['name']}" for a in cast if a["type"] == "Tensor[]")
        to = f"autocast::promote_dtype({{{ptrs}}}, {{{lists}}})"
    else:
        to = f"autocast::target_dtype(autocast::Policy::{AUTOCAST_POLICIES[policy]})"
    call = ", ".join(f"autocast::cast({a['name']}, to)" if a in cast else a["name"] for a in args)
    return (f"\n  if ({when}) {{\n    autocast::ExcludeGuard no_autocast;\n    const DType to = {to};\n"
            f"    return autograd::{name}({call});\n  }}")


def generate_reverse(name: str, args: list[dict], rets: list[str], cpp_param: dict, cpp_return: str,
                     derivatives: dict, nondifferentiable: bool, op_names: set[str], raw: str) -> str:
    params = ", ".join(cpp_param[a["type"]] + " " + a["name"] for a in args)
    head = f"static {cpp_return} {name}_reverse({params}) {{"
    if not rets or any(r not in ("Tensor", "Tensor[]") for r in rets):
        return f"{head}\n  return {raw};\n}}\n"
    raw = f"fresh_result({raw})"  # Note [fresh versions]

    tensors = [a for a in args if a["type"] in DIFF_TENSOR and a["name"] != "out"]
    lists = [a for a in args if a["type"] == "Tensor[]"]
    has_out = any(a["name"] == "out" for a in args)
    has_self = any(a["name"] == "self" and a["type"] == "Tensor" for a in args)
    by_name = name.endswith("_") and has_self
    ptrs = ", ".join(f"{a['name']} ? &*{a['name']} : nullptr" if a["type"] == "Tensor?" else f"&{a['name']}"
                     for a in tensors)
    inputs = ", ".join(f"{a['name']}.value_or(Tensor())" if a["type"] == "Tensor?" else a["name"] for a in tensors)
    body = [head, f"  bool needed = any_requires_grad({{{ptrs}}});"]
    for a in lists:
        body.append(f"  for (const Tensor& t : {a['name']}) needed = needed || any_requires_grad({{&t}});")
    # Nothing requires grad: still, a write into a view made under no_grad of memory whose base
    # requires grad raises, and a view made here knows its base (Note [in-place on views]).
    fast = []
    if has_self and (by_name or has_out) and not nondifferentiable:
        when = "" if by_name else "if (out.has_value() && out->is_same(self)) "
        fast.append(f'    {when}check_inplace("{name}", self);')
    if tensors and not by_name and not nondifferentiable and rets in (["Tensor"], ["Tensor[]"]):
        outs = "{&r}" if rets == ["Tensor"] else "r"
        only = "if (!out.has_value()) " if has_out else ""
        fast += [f"    auto r = {raw};", f"    {only}note_views({outs}, {{{ptrs}}});", "    return r;"]
    elif fast:
        fast.append(f"    return {raw};")
    body.append("  if (!needed) {\n" + "\n".join(fast) + "\n  }" if fast else f"  if (!needed) return {raw};")
    if nondifferentiable:
        body.append(f"  return {raw};")
        return "\n".join(body) + "\n}\n"
    body += in_place_lines(name, has_out, by_name, "automatic differentiation, but one of the arguments requires grad")
    if has_self:
        body.append(f'  if (in_place) check_inplace("{name}", self, true);')
    rebase = "rebase_history(self, node)" if has_self else "(void)0"
    history = f"  if (in_place) {rebase}; else set_history({{&result}}, node, inputs);"
    all_inputs = f"std::vector<Tensor> inputs{{{inputs}}};"
    body.append("  " + all_inputs)
    for a in lists:
        body.append(f"  inputs.insert(inputs.end(), {a['name']}.begin(), {a['name']}.end());")

    list_formula = bool(derivatives) and any(a["name"] in derivatives for a in lists)
    tuple_ret = len(rets) > 1 and all(r == "Tensor" for r in rets)
    if not derivatives or not (rets in (["Tensor"], ["Tensor[]"]) or tuple_ret) or (list_formula and tensors):
        body.append(f'  auto node = not_implemented("{name}");')
        if rets == ["Tensor"]:
            body += [f"  Tensor result = {raw};",
                     history, "  return result;"]
        elif rets == ["Tensor[]"]:
            body += [f"  std::vector<Tensor> result = {raw};", "  std::vector<Tensor*> outs;",
                     "  for (Tensor& r : result) outs.push_back(&r);", "  set_history(outs, node, inputs);",
                     "  return result;"]
        else:
            body += [f"  auto result = {raw};",
                     "  set_history({" + ", ".join(f"&std::get<{i}>(result)" for i in range(len(rets)))
                     + "}, node, inputs);", "  return result;"]
        return "\n".join(body) + "\n}\n"

    # Note [grouped derivatives]: a key "input, weight, bias" names inputs whose gradients one
    # formula returns together (a vector in that order), as derivatives.yaml's multi-input entries;
    # the formula sees `output_mask`, which of them are needed.
    groups = {key: [n.strip() for n in key.split(",")] for key in derivatives if "," in key}
    named = {n for key, names in groups.items() for n in names} | {k for k in derivatives if "," not in k}
    unknown = named - {a["name"] for a in tensors} - {a["name"] for a in lists}
    if unknown:
        raise SystemExit(f"gen_ops: derivatives of {name} name non-tensor or unknown inputs {sorted(unknown)}")
    cls = camel(name)
    members, saves, unpacks, releases = [], [], [], []
    for a in args:
        if a["name"] == "out":
            continue
        if a["type"] in DIFF_TENSOR and uses(derivatives, a["name"]):
            members.append(f"  SavedVariable {a['name']}_;")
            # an in-place op overwrites self: keep a copy of the value the formula needs, recorded
            # (a clone of self's old history) so that create_graph differentiates through it too
            src = (f"(in_place ? [&] {{ forward_ad::PauseGuard p; return autograd::clone({a['name']}); }}() : "
                   f"{a['name']})") if a["name"] == "self" else a["name"]
            src = f"{a['name']}.value_or(Tensor())" if a["type"] == "Tensor?" else src
            saves.append(f"  node->{a['name']}_ = SavedVariable({src}, false);")
            unpacks.append(f"    const Tensor {a['name']} = {a['name']}_.unpack(owner);")
            releases.append(f"{a['name']}_.reset();")
        elif a["type"] == "Tensor[]" and a["name"] not in derivatives and uses(derivatives, a["name"]):
            # a list the formulas read but do not differentiate (FBGEMM's jagged offsets): kept as is
            members.append(f"  std::vector<Tensor> {a['name']};")
            saves.append(f"  node->{a['name']} = {a['name']};")
            releases.append(f"{a['name']}.clear();")
        elif a["type"] not in DIFF_TENSOR and a["type"] != "Tensor[]" and uses(derivatives, a["name"]):
            members.append(f"  {value_type(cpp_param[a['type']])} {a['name']};")
            saves.append(f"  node->{a['name']} = {a['name']};")
        if a["type"] in DIFF_TENSOR and uses(derivatives, a["name"] + "_sizes"):
            members.append(f"  IntList {a['name']}_sizes;")
            saves.append(f"  node->{a['name']}_sizes = {a['name']}.sizes();")
        if a["type"] == "Tensor[]" and uses(derivatives, a["name"] + "_sizes"):
            members.append(f"  std::vector<IntList> {a['name']}_sizes;")
            saves.append(f"  for (const Tensor& t : {a['name']}) node->{a['name']}_sizes.push_back(t.sizes());")
    if uses(derivatives, "result"):
        members.append("  SavedVariable result_;")
        unpacks.append("    const Tensor result = result_.unpack(owner);")
        releases.append("result_.reset();")
    saved_results = [i for i in range(len(rets)) if tuple_ret and uses(derivatives, f"result{i}")]
    for i in saved_results:  # (values, indices) outputs: formulas name them result0, result1
        members.append(f"  SavedVariable result{i}_;")
        unpacks.append(f"    const Tensor result{i} = result{i}_.unpack(owner);")
        releases.append(f"result{i}_.reset();")
    lines = [f"struct {cls} final : Node {{", f'  std::string name() const override {{ return "{cls}"; }}', *members,
             f"  void release_variables() override {{ {' '.join(releases)} }}",
             "  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {",
             "    const Tensor grad = grads.at(0);", "    const std::shared_ptr<Node> owner = shared_from_this();",
             *unpacks]
    if list_formula:  # one Tensor[] input (cat, stack): the formula gives one gradient per element
        (arg,) = lists
        lines.append(f"    return {qualify(derivatives[arg['name']], op_names)};")
    else:
        lines.append(f"    std::vector<Tensor> out({len(tensors)});")
    for i, a in enumerate(tensors):
        if a["name"] in derivatives:
            formula = qualify(derivatives[a["name"]], op_names)
            lines.append(f"    if (should_compute_output({i})) out[{i}] = {formula};")
    position = {a["name"]: i for i, a in enumerate(tensors)}
    for key, names in groups.items():
        idx = [position[n] for n in names]
        wanted = " || ".join(f"should_compute_output({i})" for i in idx)
        mask = ", ".join(f"should_compute_output({i})" for i in idx)
        lines += [f"    if ({wanted}) {{", f"      const std::array<bool, {len(idx)}> output_mask{{{mask}}};",
                  f"      const std::vector<Tensor> r = {qualify(derivatives[key], op_names)};"]
        lines += [f"      if (should_compute_output({i})) out[{i}] = r.at({k});" for k, i in enumerate(idx)]
        lines.append("    }")
    if not list_formula:
        lines.append("    return out;")
    lines += ["  }", "};", ""]
    body += [f"  auto node = std::make_shared<{cls}>();", f"  collect_edges(*node, {{{ptrs}}});"]
    if list_formula:
        body.append(f"  for (const Tensor& t : {lists[0]['name']}) collect_edges(*node, {{&t}});")
    body += saves
    if rets == ["Tensor[]"]:  # split, chunk, unbind: the formula combines `grads`, one per output
        body += [f"  std::vector<Tensor> result = {raw};", "  std::vector<Tensor*> outs;",
                 "  for (Tensor& r : result) outs.push_back(&r);", "  set_history(outs, node, inputs);"]
    elif tuple_ret:  # integer outputs (indices) get no history
        body += [f"  auto result = {raw};",
                 "  set_history({" + ", ".join(f"&std::get<{i}>(result)" for i in range(len(rets)))
                 + "}, node, inputs);"]
        body += [f"  node->result{i}_ = SavedVariable(std::get<{i}>(result), true);" for i in saved_results]
    else:
        body += [f"  Tensor result = {raw};", history]
    if uses(derivatives, "result"):
        body.append("  node->result_ = SavedVariable(result, true);")
    body.append("  return result;")
    return "\n".join(lines) + "\n".join(body) + "\n}\n"


def jvp_expression(name: str, args: list[dict], vjps: dict, jvp: str, op_names: set[str]) -> str:
    """The C++ expression of the result's tangent. `auto_linear`: the op applied to the inputs'
    tangents; `auto_element_wise`: the sum over inputs of conj(vjp(grad := conj(tangent))), valid
    for ops whose VJP is elementwise in grad (PyTorch's two shortcuts); otherwise a formula over
    `<input>_t`, the arguments and `result`."""
    if jvp == "auto_linear":
        parts = []
        for a in args:
            if a["name"] == "out":
                parts.append("std::nullopt")
            elif a["name"] in vjps and a["type"] == "Tensor?":
                parts.append(f"({a['name']} ? std::optional<Tensor>({a['name']}_t) : std::nullopt)")
            elif a["name"] in vjps:
                parts.append(a["name"] + "_t")
            else:
                parts.append(a["name"])
        return f"autograd::{name.rstrip('_')}({', '.join(parts)})"
    if jvp == "auto_element_wise":
        terms = []
        for a in args:
            if a["name"] in vjps:
                t = a["name"] + "_t"
                vjp = re.sub(r"\bgrad\b", f"conj({t})", vjps[a["name"]])
                terms.append(f"({t}.defined() ? conj({vjp}) : Tensor())")
        expr = terms[0]
        for term in terms[1:]:
            expr = f"add_tangents({expr}, {term})"
        return qualify(expr, op_names)
    # the JVP runs with the inputs at hand: `<input>_sizes` is just their shape
    return qualify(re.sub(r"\b(\w+)_sizes\b", r"\1.sizes()", jvp), op_names)


def generate_forward(name: str, args: list[dict], rets: list[str], cpp_param: dict, cpp_return: str,
                     vjps: dict, jvp: str | None, nondifferentiable: bool, op_names: set[str],
                     autocast: str | None = None, reverse_suffix: str = "_reverse") -> str:
    """ember::autograd::<name>: without tangents it is <name>_reverse; with them it also computes
    the result's tangent (formulas run paused, on primals, but still record reverse-mode graphs)."""
    params = ", ".join(cpp_param[a["type"]] + " " + a["name"] for a in args)
    call = ", ".join(a["name"] for a in args)
    reverse = f"{name}{reverse_suffix}({call})"
    tensors = [a for a in args if a["type"] in DIFF_TENSOR and a["name"] != "out"]
    ptrs = ", ".join(f"{a['name']} ? &*{a['name']} : nullptr" if a["type"] == "Tensor?" else f"&{a['name']}"
                     for a in tensors)
    # Every call of a built-in op passes here first, so this is where ember.profiler sees it.
    head = (f'{cpp_return} {name}({params}) {{{autocast_prologue(name, args, autocast)}\n'
            f'  profiler::RecordScope record_scope("{name}", {{{ptrs}}});')

    lists = [a for a in args if a["type"] == "Tensor[]"]
    differentiable_rets = rets and all(r in ("Tensor", "Tensor[]") for r in rets)
    if not (tensors or lists) or not differentiable_rets:
        return f"{head}\n  return {reverse};\n}}\n"
    check = " || ".join([f"forward_ad::any_tangent({{{ptrs}}})"] * bool(tensors)
                        + [f"forward_ad::any_tangent({a['name']})" for a in lists])
    body = [head, f"  if (!({check})) return {reverse};"]
    has_out = any(a["name"] == "out" for a in args)
    has_self = any(a["name"] == "self" and a["type"] == "Tensor" for a in args)
    body += in_place_lines(name, has_out, name.endswith("_") and has_self,
                           "forward-mode automatic differentiation, but one of the arguments has a tangent")
    target = "(in_place ? self : result)" if has_self else "result"
    outputs = ("std::get<0>(result)" if len(rets) > 1 else "result")
    if nondifferentiable:
        body += [f"  auto result = {reverse};", "  if (in_place) forward_ad::set_tangent(self, Tensor());" * has_self,
                 "  return result;"]
        return "\n".join(body) + "\n}\n"
    if jvp is None:
        # a floating result would need a tangent the op cannot compute; integer and bool ones need none
        floating = ("for (const Tensor& r : result) if (is_floating_point(r.dtype()) || is_complex(r.dtype())) "
                    f"forward_ad::not_implemented(\"{name}\");" if rets == ["Tensor[]"] else
                    f"if (is_floating_point({outputs}.dtype()) || is_complex({outputs}.dtype())) "
                    f"forward_ad::not_implemented(\"{name}\");")
        body += [f"  auto result = {reverse};", "  " + floating, "  return result;"]
        return "\n".join(body) + "\n}\n"
    lazy = jvp == "auto_element_wise"  # only inputs that carry a tangent contribute
    get = "forward_ad::tangent" if lazy else "forward_ad::tangent_or_zeros"
    fn_params = [cpp_param[a["type"]] + " " + a["name"] for a in args]
    fn_args = [a["name"] for a in args]
    for a in tensors:
        fn_params.append(f"const Tensor& {a['name']}_t")
        if a["type"] == "Tensor?":
            body.append(f"  const Tensor {a['name']}_t = {a['name']} ? {get}(*{a['name']}) : Tensor();")
        else:
            body.append(f"  const Tensor {a['name']}_t = {get}({a['name']});")
        fn_args.append(a["name"] + "_t")
    for a in lists:
        fn_params.append(f"const std::vector<Tensor>& {a['name']}_t")
        body.append(f"  const std::vector<Tensor> {a['name']}_t = forward_ad::tangents_or_zeros({a['name']});")
        fn_args.append(a["name"] + "_t")
    if len(rets) > 1:
        fn_params += [f"const Tensor& result{i}" for i in range(len(rets))]
        fn_args += [f"std::get<{i}>(result)" for i in range(len(rets))]
    else:
        fn_params.append(("const std::vector<Tensor>& " if rets == ["Tensor[]"] else "const Tensor& ") + "result")
        fn_args.append("result")
    expr = jvp_expression(name, args, vjps, jvp, op_names)
    # A tuple-returning op may give every output's tangent as a brace list "{t0, t1}"; otherwise
    # its formula gives output 0's.
    per_output = len(rets) > 1 and jvp.lstrip().startswith("{")
    fn_ret = "std::vector<Tensor>" if rets == ["Tensor[]"] or per_output else "Tensor"
    fn = [f"static {fn_ret} {name}_result_tangent({', '.join(fn_params)}) {{", f"  return {expr};", "}"]
    if has_self and re.search(r"\bself\b", expr):  # an in-place op overwrites self: the formula needs its old value
        body.append("  const Tensor self_before = in_place ? [&] { forward_ad::PauseGuard p; return autograd::clone(self); }()"
                    " : self;")
        fn_args[[a["name"] for a in args].index("self")] = "self_before"
        for a in tensors:  # x.mul_(x): the other operand is self too, and needs its old value as well
            if a["name"] != "self" and re.search(rf"\b{a['name']}\b", expr):
                i = [b["name"] for b in args].index(a["name"])
                n = a["name"]
                if a["type"] == "Tensor?":
                    fn_args[i] = f"(in_place && {n} && {n}->is_same(self) ? std::optional<Tensor>(self_before) : {n})"
                else:
                    fn_args[i] = f"(in_place && {n}.is_same(self) ? self_before : {n})"
    body += [f"  auto result = {reverse};", "  forward_ad::PauseGuard pause;"]
    if rets == ["Tensor[]"]:
        body += [f"  const std::vector<Tensor> tangents = {name}_result_tangent({', '.join(fn_args)});",
                 "  for (size_t i = 0; i < result.size(); ++i) forward_ad::set_tangent(result[i], tangents.at(i));"]
    elif per_output:
        body.append(f"  const std::vector<Tensor> tangents = {name}_result_tangent({', '.join(fn_args)});")
        body += [f"  forward_ad::set_tangent(std::get<{i}>(result), tangents.at({i}));" for i in range(len(rets))]
    else:
        written = ", in_place" if has_self and len(rets) == 1 and "in_place" in target else ""
        body.append(f"  forward_ad::set_tangent({target if len(rets) == 1 else outputs}, "
                    f"{name}_result_tangent({', '.join(fn_args)}){written});")
    body.append("  return result;")
    return "\n".join(fn) + "\n" + "\n".join(body) + "\n}\n"
