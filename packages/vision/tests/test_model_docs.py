"""docs/vision/models.md is generated from the installed embervision's weights enums
(packages/vision/tools/gen_model_docs.py); a stale page fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "packages" / "vision" / "tools" / "gen_model_docs.py"


def _tool():
    spec = importlib.util.spec_from_file_location("gen_model_docs", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not TOOL.exists(), reason="the repository's tools and docs are not beside these tests")
def test_the_model_page_is_current():
    assert _tool().main(["--check"]) == 0, "run: python packages/vision/tools/gen_model_docs.py"


@pytest.mark.skipif(not TOOL.exists(), reason="the repository's tools are not beside these tests")
def test_the_page_lists_every_builder_with_its_default(tmp_path):
    from embervision import models

    page = tmp_path / "models.md"
    assert _tool().main(["--page", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    for name in models.list_models():
        assert f"| `{name}` |" in text, name
    assert "| `resnet50` | **`ResNet50_Weights.IMAGENET1K_V2`** | ImageNet-1K: acc@1 80.858, acc@5 95.434 | 25,557,032 |" in text
