"""QConfigMapping (torch.ao.quantization.QConfigMapping): which QConfig FX graph mode quantization
(ember.ao.quantization.quantize_fx) gives each op of a traced model, and PyTorch's default mappings.

Precedence, lowest to highest, as PyTorch's: the global qconfig, then the one set for the op's
object type (a module class, a function such as ember.add, or a method name such as "reshape"),
then the first matching module name regex (in the order they were set), then the module name (the
nearest configured enclosing module), then (module name, object type, index of the call within
that module)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ... import _C
from ...nn import functional as F
from ...nn import modules as _nn
from .fake_quantize import FixedQParamsFakeQuantize
from .observer import (
    MinMaxObserver,
    NoopObserver,
    ObserverBase,
    default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer,
    default_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from .qconfig import QConfig, default_weight_fake_quant, get_default_qat_qconfig, get_default_qconfig

__all__ = [
    "QConfigMapping",
    "ReuseInputObserver",
    "default_reuse_input_qconfig",
    "get_default_qat_qconfig_mapping",
    "get_default_qconfig_mapping",
]


class ReuseInputObserver(ObserverBase):
    """Observes nothing itself: the op's output takes its input's observer (PyTorch's
    ReuseInputObserver; the default mappings give it to "reshape")."""

    def __init__(self) -> None:
        super().__init__(_C.quint8, is_dynamic=False)

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise AssertionError("calculate_qparams should not be called for ReuseInputObserver")


default_reuse_input_qconfig = QConfig(activation=ReuseInputObserver, weight=NoopObserver)
# PyTorch's default_quint8_weight_qconfig (nn.PReLU in the default mappings)
_default_quint8_weight_qconfig = QConfig(activation=default_observer, weight=MinMaxObserver)

_GLOBAL_DICT_KEY = ""
_OBJECT_TYPE_DICT_KEY = "object_type"
_MODULE_NAME_REGEX_DICT_KEY = "module_name_regex"
_MODULE_NAME_DICT_KEY = "module_name"
_MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY = "module_name_object_type_order"

_QCONFIG_STYLE_ORDER = [
    "global_qconfig",
    "object_type_qconfigs",
    "module_name_regex_qconfigs",
    "module_name_qconfigs",
    "module_name_object_type_order_qconfigs",
]


def _fixed_qparams_ops() -> dict:
    from ... import sigmoid, tanh

    zero_one, neg_one_one = (
        default_fixed_qparams_range_0to1_observer,
        default_fixed_qparams_range_neg1to1_observer,
    )
    return {
        _nn.Hardsigmoid: zero_one,
        F.hardsigmoid: zero_one,
        "hardsigmoid": zero_one,
        "hardsigmoid_": zero_one,
        _nn.Sigmoid: zero_one,
        sigmoid: zero_one,
        "sigmoid": zero_one,
        "sigmoid_": zero_one,
        _nn.Softmax: zero_one,
        _nn.Tanh: neg_one_one,
        tanh: neg_one_one,
        "tanh": neg_one_one,
        "tanh_": neg_one_one,
    }


class QConfigMapping:
    """Mapping from a model's ops to QConfigs (None keeps an op float), built with chained calls:

    QConfigMapping().set_global(qconfig).set_object_type(nn.Linear, qconfig1)
        .set_module_name_regex("foo.*", qconfig2).set_module_name("sub", None)
        .set_module_name_object_type_order("sub", ember.add, 0, qconfig3)
    """

    def __init__(self) -> None:
        self.global_qconfig = None
        self.object_type_qconfigs: OrderedDict = OrderedDict()
        self.module_name_regex_qconfigs: OrderedDict = OrderedDict()
        self.module_name_qconfigs: OrderedDict = OrderedDict()
        self.module_name_object_type_order_qconfigs: OrderedDict = OrderedDict()

    def set_global(self, global_qconfig) -> QConfigMapping:
        """The qconfig of every op nothing more specific configures."""
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type, qconfig) -> QConfigMapping:
        """The qconfig of a module class, a function or a method name (set again: replaced)."""
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name_regex(self, module_name_regex: str, qconfig) -> QConfigMapping:
        """The qconfig of the modules whose qualified name matches (re.match) the regex; the first
        regex set that matches wins, so set the more specific ones first."""
        self.module_name_regex_qconfigs[module_name_regex] = qconfig
        return self

    def set_module_name(self, module_name: str, qconfig) -> QConfigMapping:
        """The qconfig of a module (and everything inside it) by qualified name."""
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def set_module_name_object_type_order(
        self, module_name: str, object_type, index: int, qconfig
    ) -> QConfigMapping:
        """The qconfig of the index-th call of object_type directly inside module module_name."""
        self.module_name_object_type_order_qconfigs[(module_name, object_type, index)] = qconfig
        return self

    def __repr__(self) -> str:
        out = type(self).__name__ + " ("
        for style in _QCONFIG_STYLE_ORDER:
            out += f"\n {style}"
            qconfigs = getattr(self, style)
            if isinstance(qconfigs, OrderedDict) and qconfigs:
                for key, qconfig in qconfigs.items():
                    out += f"\n  {key}: {qconfig}"
            else:
                out += f"\n  {qconfigs}"
        return out + "\n)"

    def to_dict(self) -> dict[str, Any]:
        """{"": global, "object_type": [(type, qconfig)], "module_name_regex": [...], "module_name":
        [...], "module_name_object_type_order": [(name, type, index, qconfig)]}."""
        return {
            _GLOBAL_DICT_KEY: self.global_qconfig,
            _OBJECT_TYPE_DICT_KEY: list(self.object_type_qconfigs.items()),
            _MODULE_NAME_REGEX_DICT_KEY: list(self.module_name_regex_qconfigs.items()),
            _MODULE_NAME_DICT_KEY: list(self.module_name_qconfigs.items()),
            _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY: [
                (*k, v) for k, v in self.module_name_object_type_order_qconfigs.items()
            ],
        }

    @classmethod
    def from_dict(cls, qconfig_dict: dict[str, Any]) -> QConfigMapping:
        """The mapping a to_dict-style dictionary describes (every key optional)."""
        conf = cls()
        if _GLOBAL_DICT_KEY in qconfig_dict:
            conf.set_global(qconfig_dict[_GLOBAL_DICT_KEY])
        for object_type, qconfig in qconfig_dict.get(_OBJECT_TYPE_DICT_KEY, []):
            conf.set_object_type(object_type, qconfig)
        for regex, qconfig in qconfig_dict.get(_MODULE_NAME_REGEX_DICT_KEY, []):
            conf.set_module_name_regex(regex, qconfig)
        for name, qconfig in qconfig_dict.get(_MODULE_NAME_DICT_KEY, []):
            conf.set_module_name(name, qconfig)
        for name, object_type, index, qconfig in qconfig_dict.get(
            _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY, []
        ):
            conf.set_module_name_object_type_order(name, object_type, index, qconfig)
        return conf


def _get_default_qconfig_mapping(is_qat: bool, backend: str, version: int) -> QConfigMapping:
    qconfig = get_default_qat_qconfig(backend, version) if is_qat else get_default_qconfig(backend, version)
    default_weight = default_weight_fake_quant if is_qat else default_weight_observer
    # per-channel weights are not supported for transposed convolutions on x86/fbgemm
    qconfig_transpose = (
        QConfig(activation=qconfig.activation, weight=default_weight)
        if backend in ("fbgemm", "x86")
        else qconfig
    )
    qconfig_layernorm = QConfig(activation=qconfig.activation, weight=default_placeholder_observer)
    mapping = (
        QConfigMapping()
        .set_global(qconfig)
        .set_object_type("reshape", default_reuse_input_qconfig)
        .set_object_type(_nn.ConvTranspose1d, qconfig_transpose)
        .set_object_type(_nn.ConvTranspose2d, qconfig_transpose)
        .set_object_type(_nn.ConvTranspose3d, qconfig_transpose)
        .set_object_type(F.conv_transpose1d, qconfig_transpose)
        .set_object_type(F.conv_transpose2d, qconfig_transpose)
        .set_object_type(F.conv_transpose3d, qconfig_transpose)
        .set_object_type(F.layer_norm, qconfig_layernorm)
        .set_object_type(_nn.LayerNorm, qconfig_layernorm)
        .set_object_type(_nn.PReLU, _default_quint8_weight_qconfig)
    )
    by_observer: dict = {}
    for op, observer in _fixed_qparams_ops().items():
        if observer not in by_observer:
            activation = FixedQParamsFakeQuantize.with_args(observer=observer) if is_qat else observer
            by_observer[observer] = QConfig(activation=activation, weight=default_weight)
        mapping.set_object_type(op, by_observer[observer])
    return mapping


def get_default_qconfig_mapping(backend: str = "x86", version: int = 0) -> QConfigMapping:
    """PyTorch's post-training QConfigMapping for a backend ("x86", "fbgemm", "qnnpack", "onednn"):
    get_default_qconfig(backend) globally, the input's observer reused by "reshape", per-tensor
    weights for transposed convolutions, fixed output parameters for sigmoid, tanh, hardsigmoid
    and softmax."""
    return _get_default_qconfig_mapping(False, backend, version)


def get_default_qat_qconfig_mapping(backend: str = "x86", version: int = 1) -> QConfigMapping:
    """PyTorch's quantization-aware-training QConfigMapping for a backend (as above, with fake
    quantizers)."""
    return _get_default_qconfig_mapping(True, backend, version)
