"""docs/examples/vision_classify_detect.py runs end to end with small settings: the ImageFolder
of PNGs is read through the default loader, the small ResNet learns the four shapes, and the
MobileNetV3 FasterRCNN's detections are drawn into a PNG that decodes to the scene with red
box outlines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "vision_classify_detect.py"


@pytest.mark.skipif(not EXAMPLE.exists(), reason="the repository's docs/examples are not beside these tests")
def test_example_trains_and_draws_detections(tmp_path, capsys):
    from embervision import io

    spec = importlib.util.spec_from_file_location("vision_classify_detect", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    accuracy, png = module.main(["--epochs", "6", "--per-class", "80", "--detector-steps", "2",
                                 "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "held-out accuracy" in out and "FasterRCNN (MobileNetV3-Large 320 FPN)" in out
    assert accuracy > 0.6  # four classes: chance is 0.25
    assert png == tmp_path / "detections.png"
    drawn = io.read_image(str(png)).numpy()
    scene = io.read_image(str(tmp_path / "street.jpg")).numpy()
    assert drawn.shape == scene.shape == (3, 240, 320)
    red = (drawn[0] == 255) & (drawn[1] == 0) & (drawn[2] == 0)
    assert red.sum() > 100  # three box outlines, 3 pixels wide
    # away from the outlines the PNG holds the decoded scene unchanged
    untouched = ~red & (np.abs(drawn.astype(int) - scene.astype(int)).max(0) > 0)
    assert untouched.sum() < 0.05 * red.size
