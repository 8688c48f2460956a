"""The core README's Python examples run as written (all but the first, which loads a compiled
extension that test_custom_op.py builds and checks)."""

import pathlib
import re

import ember

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_python_examples_run():
    blocks = _blocks()
    assert len(blocks) >= 3 and "load_library" in blocks[0]
    for i, block in enumerate(blocks[1:]):
        namespace = {"ember": ember}
        exec(compile(block, f"README.md example {i + 2}", "exec"), namespace)  # noqa: S102 - our own README
        if "Scaled" in namespace:  # the __torch_dispatch__ example: 2 * 1 + 1, kept halved
            y = namespace["y"]
            assert type(y) is namespace["Scaled"] and y.elem.tolist() == [1.5, 1.5, 1.5]
        if "gm" in namespace:  # the ember.fx example: the edited graph calls gelu
            gm = namespace["gm"]
            assert "ember.nn.functional.gelu(lin)" in gm.code
            x = ember.randn(2, 4)
            assert ember.allclose(gm(x), ember.nn.functional.gelu(gm.lin(x)) * 2)
