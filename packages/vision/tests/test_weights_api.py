"""The multi-weight API: weight enums, the registry, legacy arguments, downloads through ember.hub
from a local HTTP server, and the ImageClassification preset against float64 NumPy references."""

from __future__ import annotations

import hashlib
import http.server
import math
import os
import threading
import warnings
from functools import partial

import numpy as np
import pytest

import ember
from ember import hub
from embervision import models
from embervision.models import _api
from embervision.models._meta import _IMAGENET_CATEGORIES
from embervision.models._utils import _ovewrite_named_param, _ovewrite_value_param, handle_legacy_interface
from embervision.models.resnet import ResNet50_Weights
from embervision.models.squeezenet import SqueezeNet1_1_Weights
from embervision.transforms._presets import (
    ImageClassification,
    ObjectDetection,
    OpticalFlow,
    SemanticSegmentation,
)

# ---------------------------------------------------------------------------------------------
# Weights, WeightsEnum


def test_default_is_an_alias_of_the_recommended_weights():
    assert ResNet50_Weights.DEFAULT is ResNet50_Weights.IMAGENET1K_V2
    assert list(ResNet50_Weights) == [ResNet50_Weights.IMAGENET1K_V1, ResNet50_Weights.IMAGENET1K_V2]
    assert repr(ResNet50_Weights.DEFAULT) == "ResNet50_Weights.IMAGENET1K_V2"


def test_verify_accepts_members_names_and_qualified_names():
    v2 = ResNet50_Weights.IMAGENET1K_V2
    assert ResNet50_Weights.verify(None) is None
    assert ResNet50_Weights.verify(v2) is v2
    assert ResNet50_Weights.verify("IMAGENET1K_V2") is v2
    assert ResNet50_Weights.verify("ResNet50_Weights.IMAGENET1K_V2") is v2
    assert ResNet50_Weights.verify("DEFAULT") is v2


def test_verify_rejects_another_models_enum_and_unknown_names():
    with pytest.raises(TypeError, match=r"^Invalid Weight class provided; expected ResNet50_Weights but received "
                                        r"SqueezeNet1_1_Weights\.$"):
        ResNet50_Weights.verify(SqueezeNet1_1_Weights.IMAGENET1K_V1)
    with pytest.raises(TypeError, match="expected ResNet50_Weights but received int"):
        ResNet50_Weights.verify(3)
    with pytest.raises(KeyError, match="Unknown weights 'IMAGENET1K_V9' for ResNet50_Weights"):
        ResNet50_Weights.verify("IMAGENET1K_V9")
    with pytest.raises(TypeError, match="expected ResNet50_Weights but received SqueezeNet1_1_Weights"):
        models.resnet50(weights=SqueezeNet1_1_Weights.DEFAULT)


def test_weights_attributes_and_meta():
    v1, v2 = ResNet50_Weights.IMAGENET1K_V1, ResNet50_Weights.IMAGENET1K_V2
    assert v2.url == "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"
    assert v1.url == "https://download.pytorch.org/models/resnet50-0676ba61.pth"
    assert v2.meta["categories"] is _IMAGENET_CATEGORIES and len(_IMAGENET_CATEGORIES) == 1000
    assert len(set(_IMAGENET_CATEGORIES)) == 1000
    assert _IMAGENET_CATEGORIES[0] == "tench" and _IMAGENET_CATEGORIES[-1] == "toilet tissue"
    assert v1.meta["_metrics"]["ImageNet-1K"] == {"acc@1": 76.130, "acc@5": 92.862}
    assert v2.meta["_metrics"]["ImageNet-1K"] == {"acc@1": 80.858, "acc@5": 95.434}
    assert v2.meta["num_params"] == 25557032 and v2.meta["min_size"] == (1, 1)
    assert v2.meta["recipe"].startswith("https://github.com/pytorch/vision/")
    # V1 evaluates at resize 256 / crop 224, V2 at resize 232.
    t1, t2 = v1.transforms(), v2.transforms()
    assert isinstance(t2, ImageClassification)
    assert (t1.resize_size, t1.crop_size) == ([256], [224])
    assert (t2.resize_size, t2.crop_size) == ([232], [224])
    assert v1.value != v2.value and v2.value == ResNet50_Weights.DEFAULT.value


@pytest.mark.parametrize("name", models.list_models())
def test_every_registered_model_has_a_complete_weights_table(name):
    enum = models.get_model_weights(name)
    assert issubclass(enum, models.WeightsEnum) and "DEFAULT" in enum.__members__
    for w in enum:
        # A file name carrying at least 8 hex digits of the SHA-256, as ember.hub's check needs.
        assert w.url.startswith("https://download.pytorch.org/models/")
        assert hub.HASH_REGEX.search(os.path.basename(w.url)).group(1).__len__() >= 8
        # Optical flow weights have no categories (as torchvision's); each task has its preset.
        task = models.get_model_builder(name).__module__.split(".")[2]
        keys = ("num_params", "min_size", "recipe", "_metrics", "_docs") + (() if task == "optical_flow" else
                                                                             ("categories",))
        for key in keys:
            assert key in w.meta, (w, key)
        preset = {"detection": ObjectDetection, "segmentation": SemanticSegmentation,
                  "optical_flow": OpticalFlow}.get(task, ImageClassification)
        assert isinstance(w.transforms(), preset)


# ---------------------------------------------------------------------------------------------
# Registry


def test_get_weight():
    assert models.get_weight("ResNet50_Weights.IMAGENET1K_V1") is ResNet50_Weights.IMAGENET1K_V1
    assert models.get_weight("ResNet50_Weights.DEFAULT") is ResNet50_Weights.IMAGENET1K_V2
    with pytest.raises(ValueError, match=r"^Invalid weight name provided: 'IMAGENET1K_V1'\.$"):
        models.get_weight("IMAGENET1K_V1")
    with pytest.raises(ValueError, match="The weight enum 'NoSuch_Weights' for the specific method couldn't be"):
        models.get_weight("NoSuch_Weights.IMAGENET1K_V1")


def test_every_weights_entry_is_found_by_its_full_name():
    for name in models.list_models():
        enum = models.get_model_weights(name)
        for member in enum:
            assert models.get_weight(f"{enum.__name__}.{member._name_}") is member


def test_get_model_weights_by_builder_or_name():
    assert models.get_model_weights("resnet50") is ResNet50_Weights
    assert models.get_model_weights(models.resnet50) is ResNet50_Weights
    assert models.get_model_weights("SqueezeNet1_1") is SqueezeNet1_1_Weights
    with pytest.raises(ValueError, match="Unknown model nosuchnet"):
        models.get_model_weights("nosuchnet")
    with pytest.raises(ValueError, match="The method is missing the 'weights' argument."):
        models.get_model_weights(lambda num_classes=3: None)

    def untyped(*, weights=None):
        return None

    with pytest.raises(ValueError, match="The WeightsEnum class for the specific method couldn't be retrieved."):
        models.get_model_weights(untyped)


def test_get_model_passes_the_config_and_is_case_insensitive():
    m = models.get_model("SqueezeNet1_1", num_classes=7)
    assert isinstance(m, models.SqueezeNet) and m.classifier[1].out_channels == 7
    with pytest.raises(ValueError, match="^Unknown model nosuchnet$"):
        models.get_model("NoSuchNet")


def test_list_models_module_include_exclude():
    names = models.list_models()
    assert names == sorted(names) and {"resnet50", "mobilenet_v3_small", "vgg16_bn"} <= set(names)
    # The subpackages' builders (detection, segmentation, optical_flow) are listed under their module.
    from embervision.models import detection, optical_flow, segmentation
    by_module = [models.list_models(module=m) for m in (models, detection, segmentation, optical_flow)]
    assert sorted(n for names_ in by_module for n in names_) == names
    assert "resnet50" in by_module[0] and "fasterrcnn_resnet50_fpn" in by_module[1]
    assert models.list_models(include="resnet*") == ["resnet101", "resnet152", "resnet18", "resnet34", "resnet50"]
    assert models.list_models(include=["vgg1?", "alex*"], exclude="vgg16") == ["alexnet", "vgg11", "vgg13", "vgg19"]
    assert models.list_models(exclude="*") == []
    import embervision
    assert models.list_models(module=embervision) == []


def test_register_model_refuses_a_taken_name(monkeypatch):
    monkeypatch.setattr(_api, "BUILTIN_MODELS", dict(_api.BUILTIN_MODELS))

    @_api.register_model("my_tiny_net")
    def build(*, weights: SqueezeNet1_1_Weights | None = None):
        return "built"

    assert models.get_model("my_tiny_net") == "built"
    assert models.get_model_weights("my_tiny_net") is SqueezeNet1_1_Weights
    with pytest.raises(ValueError, match="An entry is already registered under the name 'resnet50'."):
        _api.register_model("resnet50")(build)


# ---------------------------------------------------------------------------------------------
# Builder argument rules


def test_ovewrite_named_param():
    kwargs = {}
    _ovewrite_named_param(kwargs, "num_classes", 1000)
    assert kwargs == {"num_classes": 1000}
    _ovewrite_named_param(kwargs, "num_classes", 1000)
    with pytest.raises(ValueError, match=r"^The parameter 'num_classes' expected value 10 but got 1000 instead\.$"):
        _ovewrite_named_param(kwargs, "num_classes", 10)
    assert _ovewrite_value_param("aux_logits", None, True) is True
    with pytest.raises(ValueError, match="The parameter 'aux_logits' expected value True but got False instead."):
        _ovewrite_value_param("aux_logits", False, True)


def test_weights_force_num_classes_before_any_download():
    # The conflict is raised before the checkpoint is fetched (the URL is unreachable here).
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 1000 but got 10 instead."):
        models.resnet18(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="The parameter 'groups' expected value 32 but got 8 instead."):
        models.resnext50_32x4d(groups=8)


def test_legacy_pretrained_false_warns_and_builds_without_weights():
    with pytest.warns(UserWarning) as record:
        m = models.squeezenet1_1(pretrained=False, num_classes=5)
    messages = [str(r.message) for r in record]
    assert messages == [
        "The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future, please use "
        "'weights' instead.",
        "Arguments other than a weight enum or `None` for 'weights' are deprecated since 0.13 and may be removed "
        "in the future. The current behavior is equivalent to passing `weights=None`.",
    ]
    assert m.classifier[1].out_channels == 5


def test_legacy_positional_arguments_warn_and_map():
    with pytest.warns(UserWarning) as record:
        m = models.squeezenet1_1(False, False, num_classes=3)
    assert str(record[0].message) == (
        "Using 'weights' and 'progress' as positional parameter(s) is deprecated since 0.13 and may be removed in "
        "the future. Please use keyword parameter(s) instead.")
    assert "equivalent to passing `weights=None`" in str(record[1].message)
    assert m.classifier[1].out_channels == 3
    # A positional weights enum is the new-style value, passed on with the positional warning only.
    with pytest.warns(UserWarning, match="Using 'weights' as positional parameter"), \
            pytest.raises(ValueError, match="expected value 1000 but got 3"):
        models.squeezenet1_1(SqueezeNet1_1_Weights.DEFAULT, num_classes=3)
    from embervision.models._utils import kwonly_to_pos_or_kw

    def f(a, b=1):
        return a

    with pytest.raises(TypeError, match="Found no keyword-only parameter on function 'f'"):
        kwonly_to_pos_or_kw(f)


def test_legacy_interface_maps_pretrained_true_to_the_legacy_weights():
    seen = {}

    @handle_legacy_interface(weights=("pretrained", ResNet50_Weights.IMAGENET1K_V1))
    def builder(*, weights=None, progress=True):
        seen["weights"] = weights

    with pytest.warns(UserWarning) as record:
        builder(pretrained=True)
    assert seen["weights"] is ResNet50_Weights.IMAGENET1K_V1
    assert str(record[1].message).endswith(
        "The current behavior is equivalent to passing `weights=ResNet50_Weights.IMAGENET1K_V1`. You can also use "
        "`weights=ResNet50_Weights.DEFAULT` to get the most up-to-date weights.")
    # weights=True is the legacy flag under the new name: one warning, same mapping.
    with pytest.warns(UserWarning) as record:
        builder(weights=True)
    assert len(record) == 1 and seen["weights"] is ResNet50_Weights.IMAGENET1K_V1
    # New-style values pass untouched and silently.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        builder(weights="DEFAULT")
        assert seen["weights"] == "DEFAULT"
        builder(weights=None)
        assert seen["weights"] is None

    @handle_legacy_interface(weights=("pretrained", None))
    def no_weights(*, weights=None):
        return weights

    with pytest.raises(ValueError, match="No weights available for model no_weights"):
        no_weights(pretrained=True)


# ---------------------------------------------------------------------------------------------
# Downloads: a local HTTP server serves a generated checkpoint


class _Server:
    """A static file server on 127.0.0.1 in a thread, counting the GET requests it answers."""

    def __init__(self, root):
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self):
                server.requests += 1
                super().do_GET()

            def log_message(self, *args):
                pass

        self.requests = 0
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def served_squeezenet(tmp_path, monkeypatch):
    """SqueezeNet1_1_Weights.DEFAULT pointed at a checkpoint of a fresh squeezenet1_1, saved with
    ember.save under a torchvision-style name carrying its SHA-256 prefix; ember.hub's cache in tmp."""
    ember.manual_seed(0)
    source = models.squeezenet1_1()
    state = source.state_dict()
    serve_dir = tmp_path / "serve"
    serve_dir.mkdir()
    raw = serve_dir / "raw.pth"
    ember.save(state, raw)
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    name = f"squeezenet1_1-{digest[:8]}.pth"
    raw.rename(serve_dir / name)

    server = _Server(serve_dir)
    monkeypatch.setattr(SqueezeNet1_1_Weights.IMAGENET1K_V1.value, "url", server.url + name)
    monkeypatch.setattr(hub, "_hub_dir", None)
    hub.set_dir(tmp_path / "hub")
    yield {"state": state, "server": server, "name": name, "served": serve_dir / name,
           "cached": tmp_path / "hub" / "checkpoints" / name}
    server.close()


def _same_state(model, state):
    got = model.state_dict()
    assert list(got) == list(state)
    return all(ember.equal(got[k], state[k]) for k in state)


def test_weights_download_into_the_hub_cache_and_load(served_squeezenet):
    s = served_squeezenet
    model = models.get_model("squeezenet1_1", weights="DEFAULT", progress=False)
    assert _same_state(model, s["state"])
    assert s["cached"].is_file() and s["server"].requests == 1
    # The second build reads the verified cache: no new request.
    model2 = models.squeezenet1_1(weights=SqueezeNet1_1_Weights.IMAGENET1K_V1, progress=False)
    assert _same_state(model2, s["state"]) and s["server"].requests == 1
    # The loaded model classifies into the 1000 categories of the weights.
    out = model2.eval()(ember.rand(1, 3, 32, 32))
    assert tuple(out.shape) == (1, 1000)


def test_legacy_pretrained_true_downloads_the_legacy_weights(served_squeezenet):
    with pytest.warns(UserWarning, match="deprecated since 0.13"):
        model = models.squeezenet1_1(pretrained=True, progress=False)
    assert _same_state(model, served_squeezenet["state"])


def test_get_state_dict_takes_hub_arguments(served_squeezenet, tmp_path):
    state = SqueezeNet1_1_Weights.DEFAULT.get_state_dict(progress=False, check_hash=True,
                                                        model_dir=str(tmp_path / "elsewhere"))
    assert (tmp_path / "elsewhere" / served_squeezenet["name"]).is_file()
    assert set(state) == set(served_squeezenet["state"])


def test_a_tampered_download_fails_the_hash_check_and_leaves_no_file(served_squeezenet):
    s = served_squeezenet
    data = bytearray(s["served"].read_bytes())
    data[-1] ^= 0xFF
    s["served"].write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="invalid hash value"):
        models.squeezenet1_1(weights="DEFAULT", progress=False)
    assert not s["cached"].exists()
    assert os.listdir(s["cached"].parent) == []


def test_a_tampered_cached_file_fails_the_hash_check(served_squeezenet):
    s = served_squeezenet
    models.squeezenet1_1(weights="DEFAULT", progress=False)
    with open(s["cached"], "ab") as f:
        f.write(b"\0")
    with pytest.raises(RuntimeError, match="invalid hash value .* it changed after it was downloaded"):
        models.squeezenet1_1(weights="DEFAULT", progress=False)


def test_weights_with_wrong_architecture_do_not_load(served_squeezenet, monkeypatch):
    # The served SqueezeNet 1.1 checkpoint under SqueezeNet 1.0's enum: load_state_dict refuses it.
    from embervision.models.squeezenet import SqueezeNet1_0_Weights
    monkeypatch.setattr(SqueezeNet1_0_Weights.IMAGENET1K_V1.value, "url", SqueezeNet1_1_Weights.DEFAULT.url)
    with pytest.raises(RuntimeError, match="size mismatch"):
        models.squeezenet1_0(weights="DEFAULT", progress=False)


# ---------------------------------------------------------------------------------------------
# ImageClassification preset


def _linear_weights(n_in, n_out):
    """Rows of 1-D bilinear (align_corners=False, no antialias) interpolation weights, float64."""
    w = np.zeros((n_out, n_in))
    scale = n_in / n_out
    for i in range(n_out):
        src = max((i + 0.5) * scale - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        frac = src - i0
        w[i, i0] += 1 - frac
        w[i, i1] += frac
    return w


def _reference(img, resize, crop, mean, std):
    """NumPy float64 reference of the preset for upscaling (where antialias changes nothing)."""
    h, w = img.shape[-2:]
    nh, nw = (int(resize * h / w), resize) if w <= h else (resize, int(resize * w / h))
    x = np.einsum("oh,...hw,pw->...op", _linear_weights(h, nh), img.astype(np.float64), _linear_weights(w, nw))
    if img.dtype == np.uint8:
        x = np.clip(np.round(x), 0, 255) / 255.0
    top, left = int(round((nh - crop) / 2.0)), int(round((nw - crop) / 2.0))
    x = x[..., top:top + crop, left:left + crop]
    return (x - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
def test_preset_matches_a_float64_reference(dtype):
    rng = np.random.default_rng(0)
    img = rng.random((2, 3, 9, 13)) if dtype != np.uint8 else rng.integers(0, 256, (2, 3, 9, 13))
    img = img.astype(dtype)
    preset = ImageClassification(crop_size=12, resize_size=14)
    out = preset(ember.from_numpy(img))
    assert tuple(out.shape) == (2, 3, 12, 12)
    assert out.dtype == (ember.float64 if dtype == np.float64 else ember.float32)
    ref = _reference(img, 14, 12, preset.mean, preset.std)
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol)


def test_preset_downscale_without_antialias_is_plain_bilinear_sampling():
    rng = np.random.default_rng(2)
    img = rng.random((1, 3, 30, 20))
    preset = ImageClassification(crop_size=10, resize_size=10, antialias=False)
    ref = _reference(img, 10, 10, preset.mean, preset.std)  # 30x20 → 15x10, center 10x10
    np.testing.assert_allclose(preset(ember.from_numpy(img)).numpy(), ref, rtol=1e-12, atol=1e-12)
    # With antialias (the default) the same downscale averages more pixels: another result.
    smooth = ImageClassification(crop_size=10, resize_size=10)(ember.from_numpy(img)).numpy()
    assert np.abs(smooth - ref).max() > 1e-3


def test_preset_on_non_contiguous_and_unbatched_images():
    rng = np.random.default_rng(1)
    hwc = rng.random((10, 12, 3)).astype(np.float32)
    chw = ember.from_numpy(hwc).permute(2, 0, 1)  # a non-contiguous [C, H, W] view
    assert not chw.is_contiguous()
    preset = ImageClassification(crop_size=8, resize_size=10, mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 1.0))
    out = preset(chw)
    ref = _reference(hwc.transpose(2, 0, 1), 10, 8, preset.mean, preset.std)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_preset_downscale_keeps_aspect_ratio_and_nearest_picks_pixels():
    img = ember.arange(2 * 40 * 60, dtype=ember.float32).reshape(2, 1, 40, 60) / 4800
    preset = ImageClassification(crop_size=20, resize_size=20, mean=(0.0,), std=(1.0,), interpolation="nearest")
    out = preset(img)
    # 40x60 → 20x30 (every other pixel), then the central 20x20 (columns 5..24).
    ref = img.numpy()[..., ::2, ::2][..., :, 5:25]
    np.testing.assert_array_equal(out.numpy(), ref)
    # Antialiased bilinear averages: a constant image stays constant.
    flat = ImageClassification(crop_size=7, resize_size=9, mean=(0.0,) * 3, std=(1.0,) * 3)
    np.testing.assert_allclose(flat(ember.full((3, 50, 70), 0.25)).numpy(), np.full((3, 7, 7), 0.25), atol=1e-6)


def test_preset_pads_images_smaller_than_the_crop():
    preset = ImageClassification(crop_size=6, resize_size=3, mean=(0.0,), std=(1.0,))
    out = preset(ember.ones(1, 3, 3))
    expected = np.zeros((1, 6, 6), dtype=np.float32)
    expected[:, 1:4, 1:4] = 1.0
    np.testing.assert_array_equal(out.numpy(), expected)


def test_preset_repr_and_describe():
    preset = ResNet50_Weights.IMAGENET1K_V2.transforms()
    assert repr(preset) == ("ImageClassification(\n    crop_size=[224]\n    resize_size=[232]\n"
                            "    mean=[0.485, 0.456, 0.406]\n    std=[0.229, 0.224, 0.225]\n"
                            "    interpolation=bilinear\n)")
    assert "resize_size=[232]" in preset.describe() and "crop_size=[224]" in preset.describe()


def test_preset_rejects_bad_input():
    preset = ImageClassification(crop_size=4, resize_size=4)
    with pytest.raises(TypeError, match="img should be Tensor Image. Got <class 'numpy.ndarray'>"):
        preset(np.zeros((3, 4, 4)))
    with pytest.raises(ValueError, match=r"Expected tensor to be a tensor image of size \(..., C, H, W\). Got \(4, 4\)"):
        preset(ember.zeros(4, 4))
    with pytest.raises(TypeError, match="Expected a uint8 or floating point image, but got ember.int32"):
        preset(ember.zeros(3, 4, 4, dtype=ember.int32))
    with pytest.raises(ValueError, match="the image has 4 channels but mean and std have 3 values"):
        preset(ember.zeros(4, 4, 4))
    with pytest.raises(ValueError, match="interpolation must be one of"):
        ImageClassification(crop_size=4, interpolation="lanczos")
    with pytest.raises(ValueError, match="std evaluated to zero"):
        ImageClassification(crop_size=4, std=(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="mean and std must have one value per channel"):
        ImageClassification(crop_size=4, mean=(0.5, 0.5), std=(1.0,))
    with pytest.raises(ValueError, match="crop_size and resize_size must be positive"):
        ImageClassification(crop_size=0)


def test_preset_accepts_an_interpolation_enum_member():
    import enum

    class InterpolationMode(enum.Enum):
        BICUBIC = "bicubic"

    preset = ImageClassification(crop_size=5, resize_size=6, interpolation=InterpolationMode.BICUBIC)
    img = (ember.rand(3, 20, 20) * 255).to(ember.uint8)
    out = partial(preset)(img)
    assert tuple(out.shape) == (3, 5, 5) and bool(ember.isfinite(out).all())


# ---------------------------------------------------------------------------------------------
# Older checkpoint layouts the builders still load


def test_densenet_loads_checkpoints_with_the_dotted_layer_names(monkeypatch):
    import re

    from embervision.models.densenet import DenseNet121_Weights

    ember.manual_seed(0)
    source = models.densenet121()
    state = source.state_dict()
    # The original (LuaTorch-ported) checkpoints say "denselayer1.norm.1.weight" where the modules are
    # now "norm1", and predate BatchNorm's num_batches_tracked.
    dotted = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))([12])\.(.*)$")
    legacy = {(f"{m.group(1)}.{m.group(2)}.{m.group(3)}" if (m := dotted.match(k)) else k): v
              for k, v in state.items() if not k.endswith("num_batches_tracked")}
    assert "features.denseblock1.denselayer1.norm.1.weight" in legacy
    monkeypatch.setattr(DenseNet121_Weights, "get_state_dict", lambda self, *args, **kwargs: dict(legacy))
    model = models.densenet121(weights="DEFAULT")
    loaded = model.state_dict()
    assert all(ember.equal(loaded[k], v) for k, v in state.items() if not k.endswith("num_batches_tracked"))


def test_vit_loads_version_1_mlp_names():
    from embervision.models.vision_transformer import VisionTransformer

    def build():
        return VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=8, mlp_dim=16)

    ember.manual_seed(0)
    state = build().state_dict()
    old = type(state)()
    old._metadata = state._metadata
    for k, v in state.items():
        old[k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2.")] = v
    for i in range(2):
        old._metadata[f"encoder.layers.encoder_layer_{i}.mlp"]["version"] = 1
    assert "encoder.layers.encoder_layer_1.mlp.linear_2.bias" in old
    model = build()
    model.load_state_dict(old)
    assert _same_state(model, state)


def test_mnasnet_loads_version_1_checkpoints_with_their_fixed_stem():
    from embervision.models.mnasnet import _BN_MOMENTUM, MNASNet, _stack

    ember.manual_seed(0)
    # A version-1 MNASNet 0.5: the stem of width 32/16 (that of alpha 1.0) and a first stack from 16.
    state = MNASNet(0.5).state_dict()
    stem = {k: v for k, v in MNASNet(1.0).state_dict().items() if int(k.split(".")[1]) < 8}
    first = {f"layers.8.{k}": v for k, v in _stack(16, 16, 3, 2, 3, 3, _BN_MOMENTUM).state_dict().items()}
    old = type(state)((k, v) for k, v in state.items() if int(k.split(".")[1]) > 8 if k.startswith("layers."))
    old.update(stem)
    old.update(first)
    old.update((k, v) for k, v in state.items() if k.startswith("classifier."))
    old._metadata = state._metadata
    old._metadata[""]["version"] = 1

    model = MNASNet(0.5)
    with pytest.warns(UserWarning, match="A new version of MNASNet model has been implemented"):
        model.load_state_dict(old)
    assert model.layers[0].out_channels == 32 and model.layers[8][0].layers[0].in_channels == 16
    assert _same_state(model, {k: old[k] for k in model.state_dict()})
    # The patched model is version 1 and saves as such.
    assert model.state_dict()._metadata[""]["version"] == 1
    with pytest.raises(ValueError, match="version shluld be set to 1 or 2 instead of 3"):
        old._metadata[""]["version"] = 3
        MNASNet(0.5).load_state_dict(old)


def test_intermediate_layer_getter():
    from embervision.models._utils import IntermediateLayerGetter

    body = IntermediateLayerGetter(models.resnet18(), {"layer1": "feat1", "layer3": "feat2"})
    assert list(body.keys())[-1] == "layer3"  # what follows the last requested layer is dropped
    with ember.no_grad():
        out = body.eval()(ember.rand(1, 3, 64, 64))
    assert [(k, tuple(v.shape)) for k, v in out.items()] == [("feat1", (1, 64, 16, 16)), ("feat2", (1, 256, 4, 4))]
    with pytest.raises(ValueError, match="return_layers are not present in model"):
        IntermediateLayerGetter(models.resnet18(), {"layer9": "x"})
