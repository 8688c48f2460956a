"""The vmap half of the generator: for every op with tensor arguments, <op>_kernel, which the
autograd wrapper calls below itself: batched arguments go to <op>_batched, which runs the op's
batching rule (declarations.BATCHING) on the values or, for an op without one, a loop over the
batch (Note [fallback] in native/src/vmap/vmap.cpp). Used by gen_ops.py.

Rules, as declared:
  "pointwise"       every tensor argument broadcasts elementwise with the others;
  {arg: kind, ...}  `self` is the only batched argument; its dims (or shape) arguments move past
                    the batch dimension. Kinds: dim, new_dim (one past the rank, as unsqueeze),
                    dims, permutation (the batch stays first), reduce_dims (None or empty: every dim), dim? (None: the loop), shape,
                    squeeze; "min_rank": n needs a logical rank of at least n;
  "expand", "broadcast_to", "t", "cat", "stack", "index_add", "gather", "scatter",
  "take_along_dim", "masked_fill", "repeat", "tile", "roll", "fliplr", "flipud", "matmul"   rules of
  their own;
  "random_factory"  a random op with a size: one draw per batch element in randomness='different';
  "random"          any other random op: the loop, drawing as vmap's randomness says.
"""

from __future__ import annotations

TENSOR_TYPES = ("Tensor", "Tensor?", "Tensor[]", "Tensor?[]")
DIM_KINDS = ("dim", "new_dim", "dims", "permutation", "reduce_dims", "dim?", "squeeze")


def _wrap(rets: list[str], expr: str) -> list[str]:
    if rets == ["Tensor"]:
        return [f"    return vmap::wrap({expr}, level);"]
    if rets == ["Tensor[]"]:
        return [f"    std::vector<Tensor> r = {expr};", "    for (Tensor& t : r) t = vmap::wrap(t, level);",
                "    return r;"]
    return [f"    auto r = {expr};", "    return {" + ", ".join(f"vmap::wrap(std::get<{i}>(r), level)"
                                                          for i in range(len(rets))) + "};"]


def _dim_expr(name: str, arg: dict, kind: str) -> tuple[str, str | None]:
    """(the shifted argument, an extra condition for the rule to apply)."""
    n = arg["name"]
    if kind == "dim":
        return f'vmap::shift_dim({n}, rank, "{name}")', None
    if kind == "new_dim":
        return f'vmap::shift_dim({n}, rank + 1, "{name}")', None
    if kind == "dims":
        return f'vmap::shift_dims({n}, rank, "{name}")', None
    if kind == "permutation":  # the batch stays first
        return f'vmap::with_batch(vmap::shift_dims({n}, rank, "{name}"), 0)', None
    if kind == "reduce_dims":
        return f'vmap::reduce_dims({n}, rank, "{name}")', None
    if kind == "dim?":
        return f'vmap::shift_dim(*{n}, rank, "{name}")', f"{n}.has_value()"
    if kind == "squeeze":
        return f'vmap::squeeze_dims(self, {n}, "{name}")', None
    if kind == "shape":
        return f"vmap::with_batch({n}, self_p.size(0))", None
    raise SystemExit(f"gen_batching: unknown kind {kind!r} for {name}.{n}")


def rule_lines(name: str, args: list[dict], rets: list[str], rule) -> list[str]:
    """The body of the rule: `if (it applies) { ...; return ...; }` (else the loop follows)."""
    call_args = {a["name"]: a["name"] for a in args}
    tensors = [a for a in args if a["type"] in ("Tensor", "Tensor?") and a["name"] != "out"]
    if rule == "pointwise":
        plain = [a["name"] for a in tensors if a["type"] == "Tensor"]
        ptrs = ", ".join(f"&{n}" for n in plain)
        lines = [f"  if (vmap::pointwise_promotes_alike({{{ptrs}}}, level)) {{",
                 f"    const int64_t rank = std::max<int64_t>({{{', '.join(n + '.dim()' for n in plain)}}});"]
        for a in tensors:
            lines.append(f"    const auto {a['name']}_p = vmap::aligned({a['name']}, level, rank);")
            call_args[a["name"]] = a["name"] + "_p"
        if "out" in call_args:
            call_args["out"] = "(in_place ? std::optional<Tensor>(self_p) : std::nullopt)"
        call = f"autograd::{name}({', '.join(call_args[a['name']] for a in args)})"
        if name.endswith("_") or "out" in call_args:
            lines += [f"    auto r = {call};", "    if (in_place) return self;", "    return vmap::wrap(r, level);"]
        else:
            lines += _wrap(rets, call)
        return lines + ["  }"]
    if rule in ("expand", "broadcast_to"):
        return [f"  return vmap::wrap(vmap::expand_value(self, level, size, {'true' if rule == 'broadcast_to' else 'false'}),"
                " level);"]
    if rule == "t":
        return ["  if (self.dim() < 2) return vmap::wrap(vmap::front(self, level), level);",
                "  return vmap::wrap(autograd::transpose(vmap::front(self, level), 1, 2), level);"]
    if rule == "index_add":  # index_add / index_copy: self and source batched alike, one shared index
        rest = ", ".join(a["name"] for a in args[4:])
        return ["  if (!vmap::batched_at(index, level) && self.dim() > 0 && source.dim() == self.dim()) {",
                "    const std::vector<Tensor> p = vmap::fronts({self, source}, level);",
                f'    return vmap::wrap(autograd::{name}(p[0], vmap::shift_dim(dim, self.dim(), "{name}"), index, p[1]'
                + (f", {rest}" if rest else "") + "), level);", "  }"]
    if rule in ("gather", "scatter"):  # self, index (and src) batched alike, of one logical rank
        tensors = [a["name"] for a in args if a["type"] == "Tensor"]
        same = " && ".join(f"{n}.dim() == self.dim()" for n in tensors[1:])
        rest = ", ".join(a["name"] for a in args if a["type"] != "Tensor" and a["name"] != "dim")
        call = [f"p[{i}]" for i in range(len(tensors))]
        call.insert(1, f'vmap::shift_dim(dim, self.dim(), "{name}")')
        return [f"  if (self.dim() > 0 && {same}) {{",
                f"    const std::vector<Tensor> p = vmap::fronts({{{', '.join(tensors)}}}, level);",
                f"    return vmap::wrap(autograd::{name}({', '.join(call + ([rest] if rest else []))}), level);", "  }"]
    if rule == "take_along_dim":
        return ["  if (dim.has_value() && self.dim() > 0 && indices.dim() == self.dim()) {",
                "    const std::vector<Tensor> p = vmap::fronts({self, indices}, level);",
                '    return vmap::wrap(autograd::take_along_dim(p[0], p[1], vmap::shift_dim(*dim, self.dim(), '
                '"take_along_dim")), level);', "  }"]
    if rule == "masked_fill":  # the mask broadcasts against self from the right, as logically
        return ["  if (mask.dim() <= self.dim()) {",
                "    const Tensor s = vmap::fronts({self, mask}, level)[0];",
                "    return vmap::wrap(autograd::masked_fill(s, vmap::aligned(mask, level, self.dim()), value), level);",
                "  }"]
    if rule in ("repeat", "tile"):
        if rule == "tile":  # tile pads its dims to self's rank: always applies
            return ["  return vmap::wrap(vmap::repeat_value(self, level, dims), level);"]
        return ["  if (repeats.size() >= static_cast<size_t>(self.dim())) return vmap::wrap(vmap::repeat_value(self, "
                "level, repeats), level);"]
    if rule == "roll":  # no dims: the flattened tensor rolls
        return ['  if (!dims.empty() && self.dim() > 0) return vmap::wrap(autograd::roll(vmap::front(self, level), '
                'shifts, vmap::shift_dims(dims, self.dim(), "roll")), level);',
                "  if (dims.empty() && shifts.size() == 1) {",
                "    const Tensor v = vmap::front(self, level);",
                "    const Tensor flat = autograd::reshape(v, IntList{v.size(0), -1});",
                "    return vmap::wrap(autograd::reshape(autograd::roll(flat, shifts, IntList{1}), v.sizes()), level);",
                "  }"]
    if rule in ("fliplr", "flipud"):
        rank, dim = (2, 2) if rule == "fliplr" else (1, 1)
        return [f"  if (self.dim() >= {rank}) return vmap::wrap(autograd::flip(vmap::front(self, level), IntList{{{dim}}}), "
                "level);"]
    if rule == "matmul":  # both operands' logical ranks as the op needs (else the loop raises its error)
        a, b = [x["name"] for x in args if x["type"] == "Tensor"]
        ranks = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1)}.get(name)
        cond = f"{a}.dim() == {ranks[0]} && {b}.dim() == {ranks[1]}" if ranks else f"{a}.dim() > 0 && {b}.dim() > 0"
        if name == "bmm":
            cond += f" && {a}.size(0) == {b}.size(0)"
        return [f"  if ({cond}) return vmap::wrap(vmap::matmul_value({a}, {b}, level), level);"]
    if rule in ("cat", "stack"):
        extra = " + 1" if rule == "stack" else ""
        min_rank = 0 if rule == "stack" else 1
        return [f"  if (!tensors.empty() && vmap::same_rank(tensors) && tensors[0].dim() >= {min_rank}) {{",
                "    const int64_t rank = tensors[0].dim();",
                f'    return vmap::wrap(autograd::{name}(vmap::fronts(tensors, level), vmap::shift_dim(dim, rank{extra}, "{name}")),'
                " level);", "  }"]
    if not isinstance(rule, dict):
        raise SystemExit(f"gen_batching: unknown rule {rule!r} for {name}")
    by_name = {a["name"]: a for a in args}
    conds = [f"!vmap::batched_at({a['name']}, level)" for a in args
             if a["type"] in TENSOR_TYPES and a["name"] != "self"]
    if rule.get("min_rank"):
        conds.append(f"self.dim() >= {rule['min_rank']}")
    reduction = "reduce_dims" in rule.values()
    if any(k in DIM_KINDS and k not in ("new_dim", "reduce_dims") for k in rule.values()):
        conds.append("self.dim() > 0")
    for arg, kind in rule.items():
        if arg == "min_rank":
            continue
        if arg not in by_name:
            raise SystemExit(f"gen_batching: {name} has no argument {arg!r}")
        call_args[arg], cond = _dim_expr(name, by_name[arg], kind)
        if cond:
            conds.append(cond)
    call_args["self"] = "self_p"
    call = f"autograd::{name}({', '.join(call_args[a['name']] for a in args)})"
    if reduction:  # a 0-dim logical input is reduced as one of size 1
        value, call = "vmap::reduction_input(self, level)", f"vmap::reduction_result({call}, rank)"
    else:
        value = "vmap::front(self, level)"
    body = ["    const int64_t rank = self.dim();", "    (void)rank;", f"    const Tensor self_p = {value};",
            *_wrap(rets, call)]
    if not conds:  # always applies: no loop after it
        return [line[2:] for line in body]
    return [f"  if ({' && '.join(conds)}) {{", *body, "  }"]


def generate(name: str, args: list[dict], rets: list[str], cpp_param: dict, cpp_return: str, rule,
             raw: str) -> tuple[str, str]:
    """(C++ definitions of <name>_batched and <name>_kernel, the call the autograd layer makes);
    `raw` is the call of the op below batching."""
    call = ", ".join(a["name"] for a in args)
    tensor_args = [a for a in args if a["type"] in TENSOR_TYPES]
    random = rule in ("random", "random_factory")
    if not tensor_args and not random:
        return "", raw
    if len(rets) > 1 and "Tensor[]" in rets:
        # (values, offsets) of FBGEMM's jagged composites: no stacking of a mixed tuple; their bodies
        # call ops that batch themselves (Note [jagged composites] in src/ops/fbgemm/jagged.cpp)
        return "", raw
    params = ", ".join(cpp_param[a["type"]] + " " + a["name"] for a in args)
    names = ", ".join(a["name"] for a in tensor_args)
    batched_test = f"vmap::max_level({names}) > 0" if tensor_args else "false"
    if random:
        batched_test += " || (vmap::current_level() > 0 && !vmap::in_rule())"
    kernel = (f"static {cpp_return} {name}_kernel({params}) {{\n"
              f"  if ({batched_test}) return {name}_batched({call});\n  return {raw};\n}}\n")
    body = [f"static {cpp_return} {name}_batched({params}) {{"]
    if rule == "random_factory":
        sized = ", ".join("full" if a["name"] == "size" else a["name"] for a in args)
        body += ["  vmap::RuleGuard guard;",
                 f"  return vmap::random_factory(size, [&](const IntList& full) {{ return autograd::{name}({sized}); }});",
                 "}"]
        return "\n".join(body) + "\n" + kernel, f"{name}_kernel({call})"
    has_out = any(a["name"] == "out" for a in args)
    by_name = name.endswith("_") and any(a["name"] == "self" for a in args)
    body.append(f"  int64_t level = vmap::max_level({names});" if tensor_args else "  int64_t level = 0;")
    body.append("  vmap::RuleGuard guard;")
    if has_out:
        body += ["  const bool in_place = out.has_value() && out->is_same(self);",
                 f'  if (out.has_value() && !in_place) vmap::out_in_vmap("{name}");']
    else:
        body += [f"  const bool in_place = {'true' if by_name else 'false'};", "  (void)in_place;"]
    gen = "nullptr"
    size = f"vmap::batch_size(level, {names})"
    if random:
        gen = "(generator ? generator.get() : &Generator::default_generator())"
        body += ["  vmap::check_random_allowed();",
                 "  int64_t size = 0;",
                 "  if (level == 0) {  // nothing batched: each element of the innermost level draws",
                 "    level = vmap::current_level();",
                 f"    if (vmap::randomness_of(level) == vmap::Randomness::Same) return autograd::{name}({call});",
                 '    EMBER_CHECK(!in_place, Error, "vmap: Cannot ask for different inplace randomness on an unbatched '
                 'tensor. This will appear like same randomness.");',
                 "    size = vmap::batch_size_of(level);",
                 f"  }} else {{\n    size = {size};\n  }}" if tensor_args else "  }"]
        size = "size"
    if (has_out or by_name) and any(a["name"] == "self" and a["type"] == "Tensor" for a in args):
        body.append(f'  if (in_place && !vmap::batched_at(self, level)) vmap::unbatched_inplace("{name}");')
    if rule is not None and not random:
        body += rule_lines(name, args, rets, rule)
        if body[-1].startswith("  return "):  # the rule always applies
            return "\n".join(body + ["}"]) + "\n" + kernel, f"{name}_kernel({call})"
    slices = ", ".join(f"s({a['name']})" for a in args)
    body += [f'  return vmap::fallback<{cpp_return}>("{name}", level, in_place ? &self : nullptr, {gen}, {size},'
             if any(a["name"] == "self" and a["type"] == "Tensor" for a in args) else
             f'  return vmap::fallback<{cpp_return}>("{name}", level, nullptr, {gen}, {size},',
             f"                                   [&](vmap::Slicer& s) {{ return autograd::{name}({slices}); }});",
             "}"]
    return "\n".join(body) + "\n" + kernel, f"{name}_kernel({call})"
