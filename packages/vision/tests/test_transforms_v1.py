"""transforms v1 API, and the v2 crops/erasing it shares."""

import numpy as np
import pytest

import ember
from embervision import transforms as T
from embervision import tv_tensors
from embervision.transforms import functional as TF
from embervision.transforms import v2


def test_to_tensor():
    arr = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    out = T.ToTensor()(arr)
    assert out.dtype == ember.float32 and out.shape == (3, 2, 4)
    np.testing.assert_allclose(out.numpy(), arr.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert TF.to_tensor(np.zeros((2, 3), dtype=np.float64)).shape == (1, 2, 3)
    assert TF.to_tensor(np.zeros((2, 3), dtype=np.float64)).dtype == ember.float64  # non-uint8 kept
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        TF.to_tensor([1, 2])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 4 dimensions."):
        TF.to_tensor(np.zeros((1, 2, 3, 4)))


def test_v1_pipeline_and_functional():
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 256, size=(12, 16, 3)).astype(np.uint8)
    pipeline = T.Compose([T.ToTensor(), T.Resize(8, antialias=True), T.CenterCrop(6),
                          T.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])])
    out = pipeline(arr)
    x = TF.to_tensor(arr)
    expected = TF.normalize(TF.center_crop(TF.resize(x, 8), [6, 6]), [0.5] * 3, [0.25] * 3)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert out.shape == (3, 6, 6)
    assert TF.get_image_size(x) == [16, 12] and TF.get_image_num_channels(x) == 3
    ember.manual_seed(0)
    aug = T.Compose([T.RandomResizedCrop(8), T.RandomHorizontalFlip(), T.ColorJitter(0.2, 0.2, 0.2),
                     T.RandomRotation(10), T.RandomErasing(p=1.0)])
    assert aug(x).shape == (3, 8, 8)


def test_five_and_ten_crop():
    a = np.arange(2 * 6 * 7, dtype=np.float32).reshape(2, 6, 7)
    x = ember.tensor(a)
    tl, tr, bl, br, center = TF.five_crop(x, [2, 3])
    np.testing.assert_array_equal(tl.numpy(), a[:, :2, :3])
    np.testing.assert_array_equal(tr.numpy(), a[:, :2, 4:])
    np.testing.assert_array_equal(bl.numpy(), a[:, 4:, :3])
    np.testing.assert_array_equal(br.numpy(), a[:, 4:, 4:])
    np.testing.assert_array_equal(center.numpy(), a[:, 2:4, 2:5])
    ten = TF.ten_crop(x, 2, vertical_flip=True)
    assert len(ten) == 10
    np.testing.assert_array_equal(ten[5].numpy(), a[:, ::-1][:, :2, :2])
    crops = v2.TenCrop(3)(tv_tensors.Image(x))
    assert all(type(c) is tv_tensors.Image for c in crops)
    with pytest.raises(ValueError, match=r"Requested crop size \[7, 3\] is bigger than input size \(6, 7\)"):
        TF.five_crop(x, [7, 3])
    with pytest.raises(TypeError, match="BoundingBoxes'es and Mask's are not supported by FiveCrop"):
        v2.FiveCrop(2)(tv_tensors.Image(x), tv_tensors.Mask(ember.zeros((6, 7))))


def test_erase_and_random_erasing():
    x = ember.ones((3, 5, 6))
    out = TF.erase(x, 1, 2, 2, 3, ember.tensor([0.0, 2.0, 3.0])[:, None, None])
    expected = np.ones((3, 5, 6))
    expected[:, 1:3, 2:5] = np.array([0.0, 2.0, 3.0])[:, None, None]
    np.testing.assert_array_equal(out.numpy(), expected)
    assert x.sum().item() == 90  # not in place by default
    ember.manual_seed(1)
    img = tv_tensors.Image(ember.ones((3, 20, 20)))
    erased = v2.RandomErasing(p=1.0, value=0)(img)
    zeros = erased.numpy() == 0
    ys, xs = np.nonzero(zeros[0])
    assert zeros.sum() > 0 and zeros[:, ys.min():ys.max() + 1, xs.min():xs.max() + 1].all()  # one rectangle
    with pytest.raises(ValueError, match="If value is str, it should be 'random'"):
        v2.RandomErasing(value="noise")
    with pytest.raises(ValueError, match="Scale should be between 0 and 1"):
        v2.RandomErasing(scale=(0.5, 2.0))
    with pytest.raises(ValueError, match="it should have either a single value or 3"):
        v2.RandomErasing(p=1.0, value=[1, 2])(img)
    with pytest.warns(UserWarning, match="passing through inputs of type tv_tensors.Mask"):
        v2.RandomErasing(p=1.0)(img, tv_tensors.Mask(ember.zeros((20, 20))))


def test_linear_transformation():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(12, 12))
    mean = rng.normal(size=12)
    x = rng.normal(size=(2, 3, 2, 2))
    out = T.LinearTransformation(ember.tensor(m), ember.tensor(mean))(ember.tensor(x))
    np.testing.assert_allclose(out.numpy(), ((x.reshape(2, 12) - mean) @ m).reshape(x.shape), rtol=1e-12)
    with pytest.raises(ValueError, match="transformation_matrix should be square"):
        T.LinearTransformation(ember.zeros((3, 4)), ember.zeros(3))
    with pytest.raises(ValueError, match="Input tensor and transformation matrix have incompatible shape"):
        T.LinearTransformation(ember.eye(5), ember.zeros(5))(ember.zeros((1, 2, 2)))


def test_presets_not_imported_eagerly():
    import os
    import subprocess
    import sys

    code = "import sys, embervision.transforms; print('embervision.transforms._presets' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"
