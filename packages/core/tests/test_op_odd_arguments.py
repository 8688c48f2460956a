"""Every op of the op database (ember/opdb.json; aten and fbgemm), called with odd tensors in each of its Tensor
arguments in turn (Python numbers, 0-d, one-element, empty, transposed, 3-d, int64 and bool
tensors), returns or raises a Python exception: it never crashes nor reads out of bounds. A 0-d src
once made scatter read past its strides; under `nox -s sanitize` the calls run with ASan too.

The calls run in a child process that prints each op before calling it, so a crash names the op."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import warnings

import pytest

import ember

RECORDS = json.loads((pathlib.Path(ember.__file__).parent / "opdb.json").read_text())
# A Python exception is the only allowed failure; these are the types the ops raise.
ERRORS = (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError)
SKIP = set(sys.argv[1].split(",")) if __name__ == "__main__" and len(sys.argv) > 1 else set()


def split_args(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "[(" and 1 or (ch in "])" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return [p for p in (*parts, current.strip()) if p]


def parse(schema: str) -> list[dict]:
    """[{type, name, default, kwarg_only}] of a schema's arguments."""
    args_text = schema.split("(", 1)[1].rsplit(") -> ", 1)[0]
    args, kwarg_only = [], False
    for piece in split_args(args_text):
        if piece == "*":
            kwarg_only = True
            continue
        decl, _, default = piece.partition("=")
        typ, name = decl.rsplit(" ", 1)
        args.append({"type": typ, "name": name, "default": default or None, "kwarg_only": kwarg_only})
    return args


def odd_tensors():
    return [2.0, 1, ember.tensor(1.5), ember.tensor(1), ember.randn(1), ember.randn(0), ember.randn(0, 4),
            ember.randn(4, 3).t(), ember.randn(3, 1), ember.randn(2, 3, 4), ember.tensor([5, -7]), ember.tensor(True)]


def nominal(arg: dict):
    """A plain value for an argument (None: leave it to its default; ... : no value can be made)."""
    typ, name = arg["type"], arg["name"]
    if typ.startswith("Tensor[]"):
        return [ember.randn(3, 4), ember.randn(3, 4)]
    if typ.startswith("Tensor"):
        if any(k in name for k in ("index", "indices", "offsets", "target", "lengths")):
            return ember.tensor([[0, 1, 2, 0], [1, 0, 2, 1], [0, 0, 1, 2]])
        return ember.randn(3, 4) > 0 if "mask" in name else ember.randn(3, 4)
    if arg["default"] is not None:
        return None
    for prefix, value in (("int[]", [0]), ("SymInt[]", [0]), ("int", 1), ("SymInt", 1), ("float", 0.5),
                          ("bool", False), ("Scalar", 1.0), ("str", "sum"), ("ScalarType", ember.float32)):
        if typ.startswith(prefix):
            return value
    return ...


def run_every_call() -> None:
    """The child: calls every op with every odd tensor in every Tensor position; prints how many
    calls it made and how many raised."""
    warnings.simplefilter("ignore")
    calls = refused = 0
    for record in RECORDS:
        space = ember._C if record["namespace"] == "aten" else getattr(ember.ops, record["namespace"])
        fn = getattr(space, record["name"], None)
        if fn is None or record["name"] in SKIP:
            continue
        args = parse(record["schema"])
        values = [nominal(a) for a in args]
        if any(v is ... for v in values):
            continue
        for i, arg in enumerate(args):
            if not arg["type"].startswith("Tensor") or arg["type"].startswith("Tensor[]") or arg["name"] == "out":
                continue
            for odd in odd_tensors():
                pos, kw = [], {}
                for a, v in zip(args, values[:i] + [odd] + values[i + 1:], strict=True):
                    if v is None or a["name"] == "out":
                        continue
                    # after an argument left to its default, the others go by name
                    if a["kwarg_only"] or len(pos) < args.index(a):
                        kw[a["name"]] = v
                    else:
                        pos.append(v)
                print(record["name"], arg["name"], repr(odd)[:40].replace("\n", " "), flush=True)
                calls += 1
                try:
                    out = fn(*pos, **kw)
                    # read every element of the result
                    for r in out if isinstance(out, (tuple, list)) else (out,):
                        if isinstance(r, ember.Tensor) and not r.is_quantized:
                            r.to(ember.float64).sum().item() if r.dtype != ember.bool else r.any().item()
                except ERRORS:
                    refused += 1
    print("CALLS", calls, "REFUSED", refused, flush=True)


def test_every_op_survives_odd_tensor_arguments():
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=600)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, (f"the child stopped with {done.returncode} after calling: "
                                  f"{lines[-1] if lines else '(nothing)'}\n{done.stderr[-3000:]}")
    assert lines[-1].startswith("CALLS ")
    _, calls, _, refused = lines[-1].split()
    # the enumeration reached the ops, and both computed results and refused arguments
    assert int(calls) > 5000 and 1000 < int(refused) < int(calls) - 1000


def test_a_tensor_that_is_no_index_for_an_int_argument_is_a_type_error_and_leaves_nothing_pending():
    # __index__ raising used to leave its error pending, so the next call failed with SystemError
    offsets_range = ember.ops.fbgemm.offsets_range
    for bad in (ember.randn(3), ember.randn(())):
        with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
            offsets_range(ember.tensor([0, 2]), bad)
        assert offsets_range(ember.tensor([0, 2]), 3).tolist() == [0, 1, 0]
    assert offsets_range(ember.tensor([0, 2]), ember.tensor(3)).tolist() == [0, 1, 0]


if __name__ == "__main__":
    run_every_call()
