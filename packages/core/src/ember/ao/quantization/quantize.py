"""Eager-mode post-training quantization (torch.ao.quantization.quantize): prepare attaches
observers, a calibration run feeds them, convert swaps each float module for its quantized twin;
quantize_dynamic swaps Linear and recurrent layers for dynamically quantized ones in one step.

The module mappings are PyTorch's defaults for what Ember quantizes: Linear, Conv1d/2d/3d, their
fused ReLU forms, ConvTranspose1d/2d/3d (weights per tensor only, as in PyTorch: propagate_qconfig_
refuses a per-channel weight observer for them), ReLU6, Hardswish, Dropout, FloatFunctional,
Embedding, EmbeddingBag, BatchNorm2d/3d and the fused BNReLU2d/3d, the QAT Linear/Conv2d/Conv3d, the
fused QAT modules of ember.ao.nn.intrinsic.qat (ConvBn / ConvBnReLU fold their BatchNorm into the
quantized conv) and the stubs (static); Linear, LSTM, GRU, LSTMCell, GRUCell, RNNCell, Embedding and
EmbeddingBag (dynamic; quantize_dynamic's default qconfig_spec takes the first six for qint8 and
float16, the tables for quint8, as PyTorch's). Layers PyTorch also maps that Ember has no quantized
kernel for (the other norms, the dynamic convs and LinearReLU) stay float.
"""

from __future__ import annotations

import copy

from ...nn import modules as _nn
from ..nn import intrinsic as nni
from ..nn import qat as nnqat
from ..nn import quantizable as nnqa
from ..nn import quantized as nnq
from ..nn.intrinsic import qat as nniqat
from ..nn.intrinsic import quantized as nniq
from ..nn.quantized import dynamic as nnqd
from .fake_quantize import (
    default_fixed_qparams_range_0to1_fake_quant,
    default_fixed_qparams_range_neg1to1_fake_quant,
)
from .qconfig import (  # noqa: F401
    _assert_valid_qconfig,
    default_dynamic_qconfig,
    float16_dynamic_qconfig,
    float_qparams_weight_only_qconfig,
    float_qparams_weight_only_qconfig_4bit,
    per_channel_dynamic_qconfig,
)
from .stubs import DeQuantStub, QuantStub

DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = {
    QuantStub: nnq.Quantize, DeQuantStub: nnq.DeQuantize,
    _nn.Linear: nnq.Linear, _nn.Conv1d: nnq.Conv1d, _nn.Conv2d: nnq.Conv2d, _nn.Conv3d: nnq.Conv3d,
    _nn.ReLU6: nnq.ReLU6, _nn.Hardswish: nnq.Hardswish, _nn.Dropout: nnq.Dropout,
    nnq.FloatFunctional: nnq.QFunctional, _nn.Embedding: nnq.Embedding, _nn.EmbeddingBag: nnq.EmbeddingBag,
    _nn.BatchNorm2d: nnq.BatchNorm2d, _nn.BatchNorm3d: nnq.BatchNorm3d,
    _nn.ELU: nnq.ELU, _nn.LeakyReLU: nnq.LeakyReLU, _nn.PReLU: nnq.PReLU, _nn.LayerNorm: nnq.LayerNorm,
    _nn.GroupNorm: nnq.GroupNorm, _nn.InstanceNorm1d: nnq.InstanceNorm1d, _nn.InstanceNorm2d: nnq.InstanceNorm2d,
    _nn.InstanceNorm3d: nnq.InstanceNorm3d,
    _nn.ConvTranspose1d: nnq.ConvTranspose1d, _nn.ConvTranspose2d: nnq.ConvTranspose2d,
    _nn.ConvTranspose3d: nnq.ConvTranspose3d,
    nni.LinearReLU: nniq.LinearReLU, nni.ConvReLU1d: nniq.ConvReLU1d, nni.ConvReLU2d: nniq.ConvReLU2d,
    nni.ConvReLU3d: nniq.ConvReLU3d, nni.BNReLU2d: nniq.BNReLU2d, nni.BNReLU3d: nniq.BNReLU3d,
    # the QAT modules (a BatchNorm folded into the weight first); PyTorch's list, without the 1d
    # ConvReLU / Conv, which its (and so this) QAT mapping never makes
    nniqat.ConvBn1d: nnq.Conv1d, nniqat.ConvBn2d: nnq.Conv2d, nniqat.ConvBn3d: nnq.Conv3d,
    nniqat.ConvBnReLU1d: nniq.ConvReLU1d, nniqat.ConvBnReLU2d: nniq.ConvReLU2d, nniqat.ConvBnReLU3d: nniq.ConvReLU3d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d, nniqat.ConvReLU3d: nniq.ConvReLU3d, nniqat.LinearReLU: nniq.LinearReLU,
    nniqat.LinearBn1d: nnq.Linear,
    nnqat.Linear: nnq.Linear, nnqat.Conv2d: nnq.Conv2d, nnqat.Conv3d: nnq.Conv3d,
}
# PyTorch's DEFAULT_QAT_MODULE_MAPPINGS: what prepare_qat swaps for its QAT form (nn.Conv1d and the
# fused ConvReLU1d are not in it: they train unquantized-weight and convert as post-training ones)
DEFAULT_QAT_MODULE_MAPPINGS = {
    _nn.Conv2d: nnqat.Conv2d, _nn.Conv3d: nnqat.Conv3d, _nn.Linear: nnqat.Linear,
    nni.ConvBn1d: nniqat.ConvBn1d, nni.ConvBn2d: nniqat.ConvBn2d, nni.ConvBn3d: nniqat.ConvBn3d,
    nni.ConvBnReLU1d: nniqat.ConvBnReLU1d, nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvBnReLU3d: nniqat.ConvBnReLU3d, nni.ConvReLU2d: nniqat.ConvReLU2d, nni.ConvReLU3d: nniqat.ConvReLU3d,
    nni.LinearReLU: nniqat.LinearReLU, nni.LinearBn1d: nniqat.LinearBn1d,
}
# (nn.MultiheadAttention's out_proj is a NonDynamicallyQuantizableLinear precisely to stay out of this)
DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = {_nn.Linear: nnqd.Linear, _nn.LSTM: nnqd.LSTM, _nn.GRU: nnqd.GRU,
                                         _nn.LSTMCell: nnqd.LSTMCell, _nn.RNNCell: nnqd.RNNCell,
                                         _nn.GRUCell: nnqd.GRUCell, _nn.Embedding: nnq.Embedding,
                                         _nn.EmbeddingBag: nnq.EmbeddingBag}


# PyTorch's DEFAULT_MODULE_TO_ACT_POST_PROCESS: what prepare / prepare_qat put after these modules when
# they are training and have a qconfig, in place of the qconfig's activation (whatever it is, even
# outside the propagation list): fake quantization with the output parameters the quantized
# kernels fix for them, so training sees the rounding inference will do.
DEFAULT_MODULE_TO_ACT_POST_PROCESS = {
    _nn.Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    _nn.Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    _nn.Softmax: default_fixed_qparams_range_0to1_fake_quant,
    _nn.Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}


def _get_special_act_post_process(module):
    """The fixed-parameter fake quantizer constructor for module's type, or None."""
    return DEFAULT_MODULE_TO_ACT_POST_PROCESS.get(type(module))


def _has_special_act_post_process(module) -> bool:
    return module.training and type(module) in DEFAULT_MODULE_TO_ACT_POST_PROCESS


# PyTorch's get_default_custom_config_dict: prepare swaps nn.LSTM / nn.MultiheadAttention for their
# observed (quantizable) forms, convert the observed ones for the quantized LSTM / MultiheadAttention
# (give a module qconfig None before prepare to keep it float).
_DEFAULT_CUSTOM_CONFIG_DICT = {
    "float_to_observed_custom_module_class": {_nn.LSTM: nnqa.LSTM, _nn.MultiheadAttention: nnqa.MultiheadAttention},
    "observed_to_quantized_custom_module_class": {nnqa.LSTM: nnq.LSTM, nnqa.MultiheadAttention: nnq.MultiheadAttention},
}


def get_default_custom_config_dict() -> dict:
    """The custom-module config prepare and convert take when given none (module comment above)."""
    return _DEFAULT_CUSTOM_CONFIG_DICT


def get_default_static_quant_module_mappings() -> dict:
    return dict(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qat_module_mappings() -> dict:
    """The float -> QAT module mapping prepare_qat uses by default (DEFAULT_QAT_MODULE_MAPPINGS)."""
    return dict(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_dynamic_quant_module_mappings() -> dict:
    return dict(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list() -> set:
    """The module types a qconfig reaches (and prepare observes)."""
    return set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS) | {DeQuantStub}


def _qconfig_for(module, name: str, qconfig_dict: dict, parent_qconfig):
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(name, qconfig)
    return getattr(module, "qconfig", qconfig)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None) -> None:
    """Give every submodule the qconfig of its nearest configured ancestor, or the one
    qconfig_dict names for its type or qualified name; sets `.qconfig` in place."""
    qconfig_dict = qconfig_dict or {}

    def walk(mod, name: str, parent_qconfig) -> None:
        qconfig = _qconfig_for(mod, name, qconfig_dict, parent_qconfig)
        _assert_valid_qconfig(qconfig, mod)
        mod.qconfig = qconfig
        for child_name, child in mod.named_children():
            walk(child, f"{name}.{child_name}" if name else child_name, qconfig)

    walk(module, "", None)


def _observer_hook(module, input, output):
    return module.activation_post_process(output)


def _has_children(module) -> bool:
    return any(True for _ in module.children())


def _returns_tuples(module_or_class) -> bool:
    """Observed custom modules whose output is not one tensor (PyTorch's no_observer_set: the
    quantizable LSTM and MultiheadAttention, which mark themselves, as a user's observed class can)."""
    return getattr(module_or_class, "_output_is_not_one_tensor", False)


def _insert_output_observer(module, special_act_post_process=None) -> None:
    constructor = module.qconfig.activation if special_act_post_process is None else special_act_post_process
    module.add_module("activation_post_process", constructor())
    module._observer_hook_handle = module.register_forward_hook(_observer_hook)


def add_observer_(module, qconfig_propagation_list=None, non_leaf_module_list=None, device=None,
                  custom_module_class_mapping=None) -> None:
    """Attach `activation_post_process = qconfig.activation()` to each quantizable module with a
    qconfig, run on its output by a forward hook (FloatFunctional observes through its own slot).
    A training nn.Sigmoid, nn.Hardsigmoid, nn.Softmax or nn.Tanh with a qconfig gets the
    fixed-parameter fake quantizer DEFAULT_MODULE_TO_ACT_POST_PROCESS names instead (PyTorch's
    special activation post process), whether or not its type is in the propagation list.
    A child whose type custom_module_class_mapping names is replaced by that class's
    from_float(child) (which observes its own insides), with an output observer unless it is a
    quantizable LSTM or MultiheadAttention."""
    if qconfig_propagation_list is None:
        qconfig_propagation_list = get_default_qconfig_propagation_list()
    custom_module_class_mapping = custom_module_class_mapping or {}
    for name, child in list(module.named_children()):
        if _has_special_act_post_process(child) and not isinstance(child, (nnq.FloatFunctional, nnq.QFunctional)) \
                and not (non_leaf_module_list is not None and type(child) in non_leaf_module_list):
            if getattr(child, "qconfig", None) is not None:
                _insert_output_observer(child, _get_special_act_post_process(child))
        elif type(child) in custom_module_class_mapping and getattr(child, "qconfig", None) is not None:
            observed_class = custom_module_class_mapping[type(child)]
            observed = observed_class.from_float(child)
            if getattr(observed, "qconfig", None) is None:
                observed.qconfig = child.qconfig
            setattr(module, name, observed)
            if not _returns_tuples(observed_class):
                _insert_output_observer(observed)
        elif isinstance(child, (nnq.FloatFunctional, nnq.QFunctional)):
            if getattr(child, "qconfig", None) is not None:
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, nni._FusedModule) or not _has_children(child) or (
                non_leaf_module_list is not None and type(child) in non_leaf_module_list):
            if getattr(child, "qconfig", None) is not None and type(child) in qconfig_propagation_list \
                    and not isinstance(child, DeQuantStub):
                _insert_output_observer(child)
        else:
            add_observer_(child, qconfig_propagation_list, non_leaf_module_list, device, custom_module_class_mapping)


def _remove_observers(module) -> None:
    """The output observers (hooks and activation_post_process children) of modules convert left in
    place (a Sigmoid's fixed-parameter fake quantizer, say), as PyTorch's convert removes them."""
    for child in list(module.modules()):
        handle = child.__dict__.pop("_observer_hook_handle", None)
        if handle is not None:
            handle.remove()
            child._modules.pop("activation_post_process", None)


def prepare(model, inplace: bool = False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """The model with observers on every quantizable module that has a qconfig (set `model.qconfig`
    first); run calibration data through it, then convert. prepare_custom_config_dict's
    "float_to_observed_custom_module_class" ({float type: observed type}) swaps those modules for
    their observed forms; without a config, get_default_custom_config_dict()'s (PyTorch's): nn.LSTM
    and nn.MultiheadAttention become ember.ao.nn.quantizable.LSTM / MultiheadAttention."""
    if not inplace:
        model = copy.deepcopy(model)
    if prepare_custom_config_dict is None:
        prepare_custom_config_dict = get_default_custom_config_dict()
    custom_module_class_mapping = prepare_custom_config_dict.get("float_to_observed_custom_module_class", {})
    propagate_qconfig_(model)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        import warnings

        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct configuration "
                      "through `qconfig_dict` or by assigning the `.qconfig` attribute directly on submodules",
                      stacklevel=2)
    add_observer_(model, allow_list, observer_non_leaf_module_list,
                  custom_module_class_mapping=custom_module_class_mapping)
    return model


def prepare_qat(model, mapping=None, inplace: bool = False):
    """The model with QAT modules in place of float ones (mapping, default
    get_default_qat_module_mappings(): nn.Linear / Conv2d / Conv3d become ember.ao.nn.qat's, the
    fused ConvBn / ConvBnReLU / ConvReLU / LinearReLU / LinearBn1d of fuse_modules_qat become
    ember.ao.nn.intrinsic.qat's) and observers (the qconfig's fake quantizers) attached, a fixed-parameter fake quantizer after each Sigmoid,
    Hardsigmoid, Softmax and Tanh (DEFAULT_MODULE_TO_ACT_POST_PROCESS), and nn.LSTM made the
    quantizable LSTM prepared the same way (the default custom config); train it, then .eval() and
    convert."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if not inplace:
        model = copy.deepcopy(model)
    mapping = get_default_qat_module_mappings() if mapping is None else mapping
    propagate_qconfig_(model)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    # a QAT module holds its weight's fake quantizer as a child: observed as a leaf all the same
    prepare(model, inplace=True, observer_non_leaf_module_list=set(mapping.values()))
    return model


def swap_module(mod, mapping: dict, custom_module_class_mapping=None, use_precomputed_fake_quant: bool = False):
    """mod's quantized twin from mapping (its type's from_float), or from custom_module_class_mapping
    (its type's from_observed), keeping its forward hooks other than the observer's; mod itself
    when it has no qconfig or no twin."""
    custom_module_class_mapping = custom_module_class_mapping or {}
    if getattr(mod, "qconfig", None) is None:
        return mod
    if type(mod) in custom_module_class_mapping:
        new = custom_module_class_mapping[type(mod)].from_observed(mod)
    elif type(mod) in mapping:
        new = mapping[type(mod)].from_float(mod)
    else:
        return mod
    for pre_hook in mod._forward_pre_hooks.values():
        new.register_forward_pre_hook(pre_hook)
    observer_handle = getattr(mod, "_observer_hook_handle", None)
    for hook_id, hook in mod._forward_hooks.items():
        if observer_handle is None or hook_id != observer_handle.id:
            new.register_forward_hook(hook)
    return new


def convert(module, mapping=None, inplace: bool = False, remove_qconfig: bool = True,
            is_reference: bool = False, convert_custom_config_dict=None, use_precomputed_fake_quant: bool = False):
    """Swap every prepared module for its quantized twin (mapping defaults to the static one);
    convert_custom_config_dict's "observed_to_quantized_custom_module_class" ({observed type:
    quantized type}) converts observed custom modules with the quantized type's from_observed;
    without a config, get_default_custom_config_dict()'s: the observed quantizable LSTM and
    MultiheadAttention become ember.ao.nn.quantized.LSTM / MultiheadAttention. An observed module
    the config does not name whose output is not one tensor (a quantizable LSTM or
    MultiheadAttention under a custom config that leaves it out, or a user's observed class so
    marked) raises NotImplementedError, where PyTorch would leave it observed."""
    if is_reference:
        raise NotImplementedError("reference quantized modules (is_reference=True) are not in Ember")
    if not inplace:
        module = copy.deepcopy(module)
    mapping = get_default_static_quant_module_mappings() if mapping is None else mapping
    if convert_custom_config_dict is None:
        convert_custom_config_dict = get_default_custom_config_dict()
    custom = convert_custom_config_dict.get("observed_to_quantized_custom_module_class", {})

    def swap(mod) -> None:
        for name, child in list(mod.named_children()):
            if _returns_tuples(child) and type(child) not in custom \
                    and getattr(child, "qconfig", None) is not None:
                raise NotImplementedError(
                    f"convert: no quantized form is named for an observed {child._get_name()}: add "
                    f"{{{type(child).__name__}: <quantized class>}} to convert_custom_config_dict's "
                    f"\"observed_to_quantized_custom_module_class\" (the default config has the quantizable LSTM "
                    f"and MultiheadAttention), or give the module qconfig None before prepare to keep it float")
            if not isinstance(child, nni._FusedModule) and type(child) not in mapping and type(child) not in custom:
                swap(child)
            mod._modules[name] = swap_module(child, mapping, custom)

    swap(module)
    if remove_qconfig:
        _remove_observers(module)
        for mod in module.modules():
            mod.__dict__.pop("qconfig", None)
    return module


def quantize(model, run_fn, run_args, mapping=None, inplace: bool = False):
    """prepare, run_fn(model, *run_args) to calibrate, convert: post-training static quantization."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_dynamic(model, qconfig_spec=None, dtype=None, mapping=None, inplace: bool = False):
    """The model with its Linear, LSTM, GRU, LSTMCell, GRUCell and RNNCell layers dynamically
    quantized (qint8 weights; float16 with dtype=ember.float16), or with dtype=ember.quint8 its
    Embedding and EmbeddingBag tables quantized per row (dtype=ember.quint4x2: its EmbeddingBag
    tables, 4 bits per value, as PyTorch's default). qconfig_spec: a set of module types, or
    {type or qualified name: qconfig}."""
    from ... import _C

    dtype = _C.qint8 if dtype is None else dtype
    default = {_C.qint8: default_dynamic_qconfig, _C.float16: float16_dynamic_qconfig,
               _C.quint8: float_qparams_weight_only_qconfig,
               _C.quint4x2: float_qparams_weight_only_qconfig_4bit}.get(dtype)
    if qconfig_spec is None:
        if default is None:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. Provide full "
                             "qconfig please")
        tables = {_C.quint8: (_nn.Embedding, _nn.EmbeddingBag), _C.quint4x2: (_nn.EmbeddingBag,)}
        if dtype in tables:
            qconfig_spec = dict.fromkeys(tables[dtype], default)
        else:
            qconfig_spec = {kind: default for kind in DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS
                            if kind not in (_nn.Embedding, _nn.EmbeddingBag)}
    elif isinstance(qconfig_spec, set):
        if default is None:
            raise RuntimeError(f"Unknown dtype specified for quantize_dynamic: {dtype}")
        qconfig_spec = dict.fromkeys(qconfig_spec, default)
    mapping = get_default_dynamic_quant_module_mappings() if mapping is None else mapping
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
