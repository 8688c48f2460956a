"""Issue 19: a pointwise op's facts are declared once, in native/ops/declarations.py.

gen_ops.py turns the `kernel=` declarations into the X-macro lists of ember/pointwise_ops.h,
from which the C++ builds the UnaryOp / BinaryOp enums, the names errors use, the complex
support the entry points and CPU kernels check, and the generated entry points. These tests
read the lists back as the compiled C++ expanded them (`_C._pointwise_kernels()`), compare them
with the declarations, and check that each fact is what the op does. The names ember exports
come from the generated bindings (`_C._generated_op_names()`), not from the tests' opdb.json.
"""

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import ember

DECLARATIONS = pathlib.Path(__file__).resolve().parents[1] / "native" / "ops" / "declarations.py"
FORMS = {
    "unary": {"float": "Float", "same": "Same", "integral": "Integral", "predicate": "Predicate"},
    "binary": {"float": "Float", "same": "Same", "float_only": "FloatOnly", "integral": "Integral",
               "compare": "Compare"},
}


def load_declarations():
    spec = importlib.util.spec_from_file_location("ember_test_declarations", DECLARATIONS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


pytestmark = pytest.mark.skipif(not DECLARATIONS.exists(), reason="needs the source tree's declarations.py")

ROWS = ember._C._pointwise_kernels()


def expected_rows():
    """(arity, Enum, name, Form, complex_ok, entry) per kernel declaration, worked out here from
    the declarations' fields (the enum is the CamelCase name; variants follow their op)."""
    rows = []
    for op in load_declarations().OPS:
        if op.kernel is None:
            assert not op.hand_written and not op.variants, op.name
            continue
        args = op.schema.split("(", 1)[1]
        arity = "binary" if args.startswith("Tensor self, Tensor other") else "unary"
        enum = "".join(word[:1].upper() + word[1:] for word in op.name.split("_"))
        rows.append((arity, enum, op.name, FORMS[arity][op.kernel], bool(op.test.get("complex")),
                     "HandWritten" if op.hand_written else "Generated"))
        rows += [(arity, variant, op.name, "Same", False, "HandWritten") for variant in op.variants]
    return sorted(rows, key=lambda row: row[0] == "binary")  # the unary list first, each in order


def test_generated_lists_agree_with_the_declarations():
    got = [tuple(row) for row in ROWS]
    want = expected_rows()
    assert got == want  # same entries, same order (the enum values)
    for arity in ("unary", "binary"):
        enums = [row[1] for row in got if row[0] == arity]
        assert len(enums) == len(set(enums)), f"{arity} enum names repeat"
        names = [row[2] for row in got if row[0] == arity and row[5] == "Generated"]
        assert len(names) == len(set(names)), f"{arity} entry points repeat"
    # the families the pointwise ops came from are all there
    names = {row[2] for row in got}
    assert {"exp", "neg", "abs", "isnan", "logical_not", "bitwise_not"} <= names
    assert {"add", "div", "hypot", "bitwise_and", "eq", "lt"} <= names


def test_every_aten_op_is_exported_from_the_generated_names():
    ops = load_declarations().OPS
    aten = [op.name for op in ops if "::" not in op.schema.split("(", 1)[0]]
    assert list(ember._C._generated_op_names()) == aten
    for name in aten:
        assert callable(getattr(ember, name)), name
    # fbgemm:: ops stay under ember.ops.fbgemm
    assert all(not hasattr(ember._C, op.name) for op in ops if op.schema.startswith("fbgemm::"))


def call(arity, name, x):
    fn = getattr(ember._C, name)
    return fn(x) if arity == "unary" else fn(x, x)


ENTRY_ROWS = [row for row in ROWS if row[1] not in ("DivTrunc", "DivFloor")]


@pytest.mark.parametrize("row", ENTRY_ROWS, ids=[f"{row[0]}-{row[2]}" for row in ENTRY_ROWS])
def test_complex_support_is_the_declared_one(row):
    arity, _, name, form, complex_ok, _ = row
    z = ember.tensor(np.array([1.0 + 2.0j, -0.5 + 0.25j]), dtype=ember.complex128)
    if form == "Integral":
        with pytest.raises(RuntimeError, match=rf"\[{name}\] expected integral or bool tensors, but got complex128"):
            call(arity, name, z)
    elif form == "FloatOnly":
        with pytest.raises(NotImplementedError, match=rf"\[{name}\] not implemented for dtype complex128"):
            call(arity, name, z)
    elif complex_ok:
        out = call(arity, name, z)
        assert out.shape == (2,)
    else:
        with pytest.raises(NotImplementedError, match=rf"\[{name}\] not implemented for complex dtype complex128"):
            call(arity, name, z)


@pytest.mark.parametrize("row", ENTRY_ROWS, ids=[f"{row[0]}-{row[2]}" for row in ENTRY_ROWS])
def test_result_dtype_follows_the_declared_form(row):
    arity, _, name, form, _, _ = row
    ints = ember.tensor([1, 2, 3], dtype=ember.int64)
    floats = ember.tensor([0.25, 0.5, 0.75], dtype=ember.float64)
    if form == "Integral":
        assert call(arity, name, ints).dtype == ember.int64
        with pytest.raises(RuntimeError, match=rf"\[{name}\] expected integral or bool tensors, but got float64"):
            call(arity, name, floats)
        return
    if form == "FloatOnly":
        with pytest.raises(NotImplementedError, match=rf"\[{name}\] not implemented for dtype int64"):
            call(arity, name, ints)
        assert call(arity, name, floats).dtype == ember.float64
        return
    want = {"Float": ember.get_default_dtype(), "Same": ember.int64, "Predicate": ember.bool,
            "Compare": ember.bool}[form]
    assert call(arity, name, ints).dtype == want
    float_want = ember.bool if form in ("Predicate", "Compare") else ember.float64
    assert call(arity, name, floats).dtype == float_want


def test_division_variants_are_real_only_and_named_div():
    z = ember.tensor(np.array([1.0 + 2.0j]), dtype=ember.complex128)
    for mode in ("trunc", "floor"):
        with pytest.raises(NotImplementedError, match=r"\[div\] not implemented for complex dtype complex128"):
            ember.div(z, z, rounding_mode=mode)
    with pytest.raises(NotImplementedError, match=r"\[div\] not implemented for complex dtype complex128"):
        ember.floor_divide(z, z)
    a = ember.tensor([7.0, -7.0], dtype=ember.float64)
    b = ember.tensor([2.0, 2.0], dtype=ember.float64)
    np.testing.assert_array_equal(ember.div(a, b, rounding_mode="trunc").numpy(), np.trunc(np.array([3.5, -3.5])))
    np.testing.assert_array_equal(ember.div(a, b, rounding_mode="floor").numpy(), np.floor(np.array([3.5, -3.5])))
    np.testing.assert_allclose(ember.div(z, z).numpy(), np.array([1.0 + 0.0j]), rtol=1e-15)
