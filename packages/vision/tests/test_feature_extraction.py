"""models.feature_extraction and FX tracing of the model zoo: the traced models and the extracted
features equal the eager ones (values taken with forward hooks), node names as TorchVision gives
them, and the argument errors."""

import pytest

import ember
import ember.fx
from embervision import models
from embervision.models.feature_extraction import create_feature_extractor, get_graph_node_names

# TorchVision 0.17.2's get_graph_node_names(resnet18()), first block
RESNET18_HEAD = ["x", "conv1", "bn1", "relu", "maxpool", "layer1.0.conv1", "layer1.0.bn1", "layer1.0.relu",
                 "layer1.0.conv2", "layer1.0.bn2", "layer1.0.add", "layer1.0.relu_1", "layer1.1.conv1"]


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "vit_b_16", "swin_t", "convnext_tiny"])
def test_models_trace_to_the_same_outputs(name):
    ember.manual_seed(0)
    kwargs = {"image_size": 32} if name == "vit_b_16" else {}
    model = getattr(models, name)(**kwargs).eval()
    x = ember.randn(1, 3, 32, 32)
    traced = ember.fx.symbolic_trace(model)
    assert ember.allclose(traced(x), model(x), rtol=0, atol=0)


def test_node_names_follow_torchvision():
    train, evaluation = get_graph_node_names(models.resnet18())
    assert train[:len(RESNET18_HEAD)] == RESNET18_HEAD
    assert train[-3:] == ["avgpool", "flatten", "fc"] and len(train) == 70 and train == evaluation


def test_feature_extractor_returns_the_requested_values():
    ember.manual_seed(0)
    model = models.resnet18().eval()
    x = ember.randn(2, 3, 64, 64)
    seen = {}
    hooks = [getattr(model, n).register_forward_hook(lambda m, i, o, n=n: seen.__setitem__(n, o))
             for n in ("layer1", "layer4", "fc")]
    model(x)
    for h in hooks:
        h.remove()
    extractor = create_feature_extractor(model, {"layer1": "low", "layer4": "high", "fc": "logits",
                                                 "layer2.0.add": "add"})
    out = extractor(x)
    assert list(out) == ["low", "high", "logits", "add"]
    for key, module in (("low", "layer1"), ("high", "layer4"), ("logits", "fc")):
        assert ember.equal(out[key], seen[module])
    assert out["add"].shape == (2, 128, 8, 8)
    # only what the outputs need is kept
    as_list = create_feature_extractor(model, ["layer1"])
    assert "layer2" not in as_list.code and list(as_list(x)) == ["layer1"]


def test_feature_extractor_switches_graphs_with_the_mode():
    class Noisy(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            if self.training:
                y = y * 2
            return y.relu()

    model = Noisy()
    with pytest.warns(UserWarning, match="subsequence of those obtained in train mode"):
        train, evaluation = get_graph_node_names(model)
    assert train == ["x", "lin", "mul", "relu"] and evaluation == ["x", "lin", "relu"]
    extractor = create_feature_extractor(model, train_return_nodes=["mul"], eval_return_nodes=["lin"])
    x = ember.randn(3, 4)
    extractor.train()
    assert ember.allclose(extractor(x)["mul"], model.lin(x) * 2)
    extractor.eval()
    assert ember.equal(extractor(x)["lin"], model.lin(x))


def test_feature_extractor_errors():
    model = models.resnet18()
    with pytest.raises(ValueError, match="Either `return_nodes` or `train_return_nodes` and `eval_return_nodes`"):
        create_feature_extractor(model)
    with pytest.raises(ValueError, match="then both should be specified"):
        create_feature_extractor(model, train_return_nodes=["fc"])
    with pytest.raises(ValueError, match="then `return_nodes` should not be specified"):
        create_feature_extractor(model, ["fc"], train_return_nodes=["fc"], eval_return_nodes=["fc"])
    with pytest.raises(ValueError, match="node: 'layer9' is not present in model"):
        create_feature_extractor(model, ["layer9"])
    with pytest.raises(TypeError, match="must be a list or a dict"):
        create_feature_extractor(model, "fc")
