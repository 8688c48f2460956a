"""Dynamically quantized modules (torch.ao.nn.quantized.dynamic): float in, float out, the weight
stored quantized; each call quantizes the input over its own range (reduce_range, as PyTorch's x86
backend) and runs the integer kernel. float16 weights are rounded to float16 and computed in
float32.

The recurrent modules (LSTM, GRU, LSTMCell, GRUCell, RNNCell) compute as PyTorch's CPU build does
(aten/src/ATen/native/RNN.cpp with QuantizedCellParamsDynamic): every gate matmul is one dynamic
quantized linear (reduce_range) carrying its float bias; a layer first projects its whole input
(all time steps of a padded batch, or all rows of a PackedSequence's data) through W_ih in one
call, so the input's quantization range spans the sequence, then steps through time with one W_hh
call per step. A cell projects its input on each call. LSTM: gates = (W_hh h) + (W_ih x), chunked
i, f, g, o; c' = sigmoid(f) c + sigmoid(i) tanh(g); h' = sigmoid(o) tanh(c'). GRU, each
projection chunked r, z, n: r = sigmoid(h_r + x_r), z = sigmoid(h_z + x_z), n = tanh(x_n + h_n r),
h' = (h - n) z + n.

State dicts: PyTorch keeps packed weights in TorchScript objects (a layer's
`_all_weight_values.<k>.param`, a cell's `_packed_weight_ih` / `_packed_weight_hh`) that only
PyTorch can unpickle. Ember keeps the same keys holding plain tensors, (w_ih, b_ih, w_hh, b_hh)
per layer and direction and (weight, bias) per cell projection, so its checkpoints round-trip
through ember.save / ember.load but do not cross to or from PyTorch's.

Beyond PyTorch's dynamic modules: unbatched input (a 2-d sequence, a 1-d cell input) and modules
without biases (bias=False, or from_float of a bias-free float module) work as in the float
modules, where PyTorch rejects both; from_float refuses an LSTM with projections (proj_size > 0),
which PyTorch would run without its projection.
"""

from __future__ import annotations

import numbers
import warnings

from .... import _C
from ....nn import functional as F
from ....nn.modules import rnn as _nn_rnn
from ....nn.modules.container import ModuleList
from ....nn.modules.module import Module
from . import modules as nnq


class Linear(nnq.Linear):
    """y = x W^T + b for a float32 x, with W qint8 (or float16)."""

    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype=_C.qint8) -> None:
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        extra = f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._packed_params.dtype}"
        if self._packed_params.dtype == _C.qint8:
            extra += f", qscheme={self.weight().qscheme()}"
        return extra

    def forward(self, x):
        if self._packed_params.dtype == _C.float16:
            return F.linear(x, self.weight().float(), self.bias())
        if x.dtype != _C.float32:
            raise RuntimeError(f"DynamicQuantizedLinear: expected a float32 input, but got {x.dtype}")
        return _C._quantized_linear_dynamic(x, self.weight(), self.bias(), True)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The dynamically quantized twin of an nn.Linear (its qconfig's weight observer, else
        default_dynamic_qconfig's)."""
        if type(mod).__name__ != "Linear" or not hasattr(mod, "weight"):
            raise AssertionError(f"nn.quantized.dynamic.Linear.from_float only works for Linear, but got "
                                 f"{type(mod).__name__}")
        from ...quantization.qconfig import default_dynamic_qconfig

        qconfig = getattr(mod, "qconfig", None) or default_dynamic_qconfig
        observer = qconfig.weight()
        dtype = observer.dtype
        if dtype not in (_C.qint8, _C.float16):
            raise AssertionError(f"The only supported dtypes for dynamic quantized linear are qint8 and float16, got: "
                                 f"{dtype}")
        observer(mod.weight)
        weight = nnq._quantize_weight(mod.weight, observer) if dtype == _C.qint8 else mod.weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(weight, mod.bias)
        return qlinear


# ---- recurrent modules ----

_QINT8_NAMES = (_C.qint8, _C.int8, "qint8")
_FLOAT16_MAX = 65504.0


def _packed_sequence_type():
    from ....nn.utils.rnn import PackedSequence  # on use: nn.utils imports the nn modules

    return PackedSequence


def _apply_permutation(tensor, permutation, dim: int = 1):
    return tensor.index_select(dim, permutation)


class _PackedLinearWeight:
    """One projection (x W^T + b) as PyTorch packs it for its dynamic RNNs: a qint8 weight runs
    the dynamic quantized linear kernel with reduce_range; a float weight is saturated to the
    float16 range and rounded to float16 (as linear_prepack_fp16), then computed in float32."""

    def __init__(self, weight, bias) -> None:
        if weight.dtype == _C.qint8:
            if weight.dim() != 2:
                raise RuntimeError(f"a dynamic quantized RNN takes 2-d weights, but got a {weight.dim()}-d one")
            self.dtype, self.weight, self._float_weight = _C.qint8, weight, None
        elif weight.dtype in (_C.float16, _C.float32, _C.float64, _C.bfloat16):
            self.dtype = _C.float16
            self.weight = weight.detach().float().clamp(-_FLOAT16_MAX, _FLOAT16_MAX).to(_C.float16)
            self._float_weight = self.weight.float()
        else:
            raise RuntimeError(f"a dynamic quantized RNN takes qint8 or floating weights, but got {weight.dtype}")
        self.bias = None if bias is None else bias.detach().float()

    def __call__(self, x):
        if self._float_weight is not None:
            return F.linear(x, self._float_weight, self.bias)
        return _C._quantized_linear_dynamic(x, self.weight, self.bias, True)

    def state(self) -> tuple:
        return self.weight, self.bias


def _packed_from_state(value, key: str) -> _PackedLinearWeight:
    if isinstance(value, _PackedLinearWeight):
        return value
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise RuntimeError(f"{key}: expected a (weight, bias) pair, but got {type(value).__name__}")
    return _PackedLinearWeight(*value)


class _CellParams:
    """A layer and direction's input and hidden projections (PyTorch's CellParamsBase)."""

    def __init__(self, w_ih, b_ih, w_hh, b_hh) -> None:
        self.ih = _PackedLinearWeight(w_ih, b_ih)
        self.hh = _PackedLinearWeight(w_hh, b_hh)
        if self.ih.dtype != self.hh.dtype:
            raise RuntimeError(f"a dynamic quantized RNN layer's weights must share one dtype, but got {w_ih.dtype} "
                               f"and {w_hh.dtype}")

    @property
    def dtype(self):
        return self.ih.dtype

    def state(self) -> tuple:
        return self.ih.weight, self.ih.bias, self.hh.weight, self.hh.bias


class PackedParameter(Module):
    """Holds one layer and direction's weights as `param`; saved as `<prefix>param` =
    (w_ih, b_ih, w_hh, b_hh)."""

    def __init__(self, param) -> None:
        super().__init__()
        self.param = param

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "param"] = self.param.state()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        key = prefix + "param"
        if key in state_dict:
            value = state_dict[key]
            if isinstance(value, _CellParams):
                self.param = value
            elif isinstance(value, (tuple, list)) and len(value) == 4:
                self.param = _CellParams(*value)
            else:
                error_msgs.append(f"{key}: expected (w_ih, b_ih, w_hh, b_hh), but got {type(value).__name__} (a "
                                  "PyTorch checkpoint's packed RNN weights are TorchScript objects Ember cannot read)")
        elif strict:
            missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)


def _weight_observer_factory(mod):
    """The qconfig's weight observer constructor (default_dynamic_qconfig's without one) and its dtype."""
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    qconfig = mod.qconfig
    if qconfig is not None and qconfig.weight is not None:
        factory = qconfig.weight
    else:
        from ...quantization.qconfig import default_dynamic_qconfig

        factory = default_dynamic_qconfig.weight
    dtype = factory().dtype
    if dtype in _QINT8_NAMES:
        return factory, _C.qint8
    if dtype == _C.float16:
        return factory, _C.float16
    raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")


def _quantized_weight(weight, factory, dtype):
    """qint8: a fresh observer per weight (as PyTorch), its qparams quantize the weight; float16:
    the float weight (rounded when packed)."""
    if dtype != _C.qint8:
        return weight.detach().float()
    observer = factory()
    observer(weight)
    return nnq._quantize_weight(weight.float(), observer)


def _check_float32(name: str, what: str, t) -> None:
    if t.dtype != _C.float32:
        raise RuntimeError(f"{name}: expected a float32 {what}, but got {t.dtype}")


# One step each, from the precomputed input projection ig = W_ih x + b_ih (PyTorch's cells, CPU).

def _lstm_step(ig, h, c, hh: _PackedLinearWeight):
    gates = hh(h) + ig
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def _gru_step(ig, h, hh: _PackedLinearWeight):
    i_r, i_z, i_n = ig.chunk(3, 1)
    h_r, h_z, h_n = hh(h).chunk(3, 1)
    r = (h_r + i_r).sigmoid()
    z = (h_z + i_z).sigmoid()
    n = (i_n + h_n * r).tanh()
    return (h - n) * z + n


def _simple_step(ig, h, hh: _PackedLinearWeight, relu: bool):
    pre = hh(h) + ig
    return pre.relu() if relu else pre.tanh()


def _run_direction(mode: str, data, steps: list[int], h0, c0, params: _CellParams, reverse: bool):
    """One layer in one direction over time-major packed rows (step t: the first steps[t]
    sequences). The input projection of every row is one call, as PyTorch does on CPU for padded
    and packed input alike."""
    lstm = mode == "LSTM"
    xs = params.ih(data).split(steps, 0)
    hh = params.hh

    def step(x, h, c):
        if lstm:
            return _lstm_step(x, h, c, hh)
        return _gru_step(x, h, hh), None

    return _nn_rnn._over_time(xs, steps, h0, c0, lstm, step, reverse)


class RNNBase(Module):
    """The dynamically quantized LSTM and GRU (torch.ao.nn.quantized.dynamic.RNNBase): one
    PackedParameter per layer and direction in `_all_weight_values`."""

    _FLOAT_MODULE = None  # set below: nn.RNNBase
    _version = 2

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype=_C.qint8) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.dtype = dtype
        self.version = 2
        self.training = False
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if dtype not in (_C.qint8, _C.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        directions = 2 if bidirectional else 1
        values = []
        for layer in range(num_layers):
            for _ in range(directions):
                layer_input_size = input_size if layer == 0 else hidden_size * directions
                w_ih = _C.randn([gate_size, layer_input_size])
                w_hh = _C.randn([gate_size, hidden_size])
                b_ih = _C.randn([gate_size]) if bias else None
                b_hh = _C.randn([gate_size]) if bias else None
                if dtype == _C.qint8:
                    w_ih = _C.quantize_per_tensor(w_ih, 0.1, 0, _C.qint8)
                    w_hh = _C.quantize_per_tensor(w_hh, 0.1, 0, _C.qint8)
                values.append(PackedParameter(_CellParams(w_ih, b_ih, w_hh, b_hh)))
        self._all_weight_values = ModuleList(values)

    @property
    def dtype(self):
        """The weights' dtype (qint8 or float16), which loading a state dict may change."""
        values = self._modules.get("_all_weight_values")
        return values[0].param.dtype if values is not None and len(values) else self._dtype

    @dtype.setter
    def dtype(self, value) -> None:
        self._dtype = value

    def _get_name(self) -> str:
        return "DynamicQuantizedRNN"

    extra_repr = _nn_rnn.RNNBase.extra_repr  # proj_size 0: never printed

    def __repr__(self) -> str:  # the packed weights' ModuleList stays hidden, as in PyTorch
        return f"{self._get_name()}({self.extra_repr()})"

    # ---- argument checks (PyTorch's messages) ----

    def check_input(self, input, batch_sizes) -> None:
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    # nn.RNNBase's own checks and hidden-state permutation (no projections here: proj_size 0)
    proj_size = 0
    get_expected_hidden_size = _nn_rnn.RNNBase.get_expected_hidden_size
    check_hidden_size = _nn_rnn.RNNBase.check_hidden_size
    check_forward_args = _nn_rnn.RNNBase.check_forward_args
    permute_hidden = _nn_rnn.RNNBase.permute_hidden

    # ---- forward ----

    def forward(self, input, hx=None):
        name = self._get_name()
        lstm = self.mode == "LSTM"
        packed_type = _packed_sequence_type()
        batch_sizes = sorted_indices = unsorted_indices = None
        batched = True
        if lstm and hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"{name}: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}")
        if isinstance(input, packed_type):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch = int(batch_sizes[0])
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead")
            batched = input.dim() == 3
            if not batched:
                if hx is not None:
                    dims = [t.dim() for t in (hx if lstm else (hx,))]
                    if any(d != 2 for d in dims):
                        raise RuntimeError(f"{name}: for unbatched 2-D input, hx should also be 2-D but got "
                                           f"{', '.join(f'{d}-D' for d in dims)}")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1)) if lstm else hx.unsqueeze(1)
                input = input.unsqueeze(0 if self.batch_first else 1)
            max_batch = input.shape[0] if self.batch_first else input.shape[1]
        _check_float32(name, "input", input)
        directions = 2 if self.bidirectional else 1
        if hx is None:
            zeros = _C.zeros([self.num_layers * directions, max_batch, self.hidden_size], dtype=input.dtype)
            hx = (zeros, zeros) if lstm else zeros
        else:
            for t in (hx if lstm else (hx,)):
                _check_float32(name, "hidden state", t)
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)

        if batch_sizes is not None:
            data, steps = input, [int(v) for v in batch_sizes.tolist()]
        else:
            seq = input.transpose(0, 1) if self.batch_first else input
            if seq.shape[0] == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            steps = [max_batch] * seq.shape[0]
            data = seq.reshape([seq.shape[0] * max_batch, self.input_size])
        h0s = list(hx[0].unbind(0)) if lstm else list(hx.unbind(0))
        c0s = list(hx[1].unbind(0)) if lstm else [None] * len(h0s)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                out, h, c = _run_direction(self.mode, data, steps, h0s[k], c0s[k], self._all_weight_values[k].param,
                                           direction == 1)
                outputs.append(out)
                h_n.append(h)
                c_n.append(c)
            data = outputs[0] if directions == 1 else _C.cat(outputs, 1)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout, True)
        h_n = _C.stack(h_n, 0)
        c_n = _C.stack(c_n, 0) if lstm else None

        if batch_sizes is not None:
            output = packed_type(data, batch_sizes, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = _apply_permutation(h_n, unsorted_indices)
                c_n = _apply_permutation(c_n, unsorted_indices) if lstm else None
        else:
            output = data.reshape([len(steps), max_batch, data.shape[-1]])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(0 if self.batch_first else 1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if lstm else None
        return (output, (h_n, c_n)) if lstm else (output, h_n)

    # ---- weights ----

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        self.version = local_metadata.get("version", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def _names(self):
        for layer in range(self.num_layers):
            for direction in range(2 if self.bidirectional else 1):
                yield f"l{layer}" + ("_reverse" if direction == 1 else "")

    def set_weight_bias(self, weight_bias_dict) -> None:
        """Replace the weights from {weight_ih_l0: qint8 or float weight, bias_ih_l0: float bias, ...}
        (or the nested {"weight": ..., "bias": ...} that _weight_bias returns)."""
        if set(weight_bias_dict) == {"weight", "bias"}:
            weight_bias_dict = {**weight_bias_dict["weight"], **weight_bias_dict["bias"]}
        values = []
        for key in self._names():
            values.append(PackedParameter(_CellParams(
                weight_bias_dict[f"weight_ih_{key}"], weight_bias_dict.get(f"bias_ih_{key}"),
                weight_bias_dict[f"weight_hh_{key}"], weight_bias_dict.get(f"bias_hh_{key}"))))
        self._all_weight_values = ModuleList(values)

    def _weight_bias(self) -> dict:
        out = {"weight": {}, "bias": {}}
        for key, packed in zip(self._names(), self._all_weight_values, strict=True):
            w_ih, b_ih, w_hh, b_hh = packed.param.state()
            out["weight"][f"weight_ih_{key}"], out["weight"][f"weight_hh_{key}"] = w_ih, w_hh
            out["bias"][f"bias_ih_{key}"], out["bias"][f"bias_hh_{key}"] = b_ih, b_hh
        return out

    def get_weight(self) -> dict:
        return self._weight_bias()["weight"]

    def get_bias(self) -> dict:
        return self._weight_bias()["bias"]

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The dynamically quantized twin of an nn.LSTM or nn.GRU: every weight quantized by a fresh
        observer from the qconfig (default_dynamic_qconfig's without one), or kept as float16."""
        from ....nn.modules import rnn as _rnn

        if type(mod) not in (_rnn.LSTM, _rnn.GRU):
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for nn.LSTM and nn.GRU")
        factory, dtype = _weight_observer_factory(mod)
        if getattr(mod, "proj_size", 0):
            raise RuntimeError("quantized LSTM with projections is not supported")
        kind = LSTM if mod.mode == "LSTM" else GRU
        qmod = kind(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first, mod.dropout,
                    mod.bidirectional, dtype)
        values = []
        for key in qmod._names():
            weights = [_quantized_weight(getattr(mod, f"weight_{ihhh}_{key}"), factory, dtype) for ihhh in ("ih", "hh")]
            biases = [getattr(mod, f"bias_{ihhh}_{key}") if mod.bias else None for ihhh in ("ih", "hh")]
            values.append(PackedParameter(_CellParams(weights[0], biases[0], weights[1], biases[1])))
        qmod._all_weight_values = ModuleList(values)
        return qmod


class LSTM(RNNBase):
    """Dynamically quantized nn.LSTM: forward(input, (h_0, c_0)=None) -> output, (h_n, c_n); input a
    float32 tensor (seq, batch, input_size) (batch first with batch_first=True) or a PackedSequence."""

    _FLOAT_MODULE = None  # set below: nn.LSTM

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTM"


class GRU(RNNBase):
    """Dynamically quantized nn.GRU: forward(input, h_0=None) -> output, h_n (n = tanh(W_in x + b_in
    + r (W_hn h + b_hn)), as nn.GRU)."""

    _FLOAT_MODULE = None  # set below: nn.GRU

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("GRU", *args, **kwargs)

    def _get_name(self) -> str:
        return "DynamicQuantizedGRU"


class RNNCellBase(Module):
    """The dynamically quantized cells (torch.ao.nn.quantized.dynamic.RNNCellBase): the input and
    hidden projections in `_packed_weight_ih` / `_packed_weight_hh`, each saved as (weight, bias)."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, num_chunks: int = 4,
                 dtype=_C.qint8) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_dtype = dtype
        if dtype not in (_C.qint8, _C.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        b_ih = _C.randn([num_chunks * hidden_size]) if bias else None
        b_hh = _C.randn([num_chunks * hidden_size]) if bias else None
        w_ih = _C.randn([num_chunks * hidden_size, input_size])
        w_hh = _C.randn([num_chunks * hidden_size, hidden_size])
        if dtype == _C.qint8:
            w_ih = _C.quantize_per_tensor(w_ih, 1.0, 0, _C.qint8)
            w_hh = _C.quantize_per_tensor(w_hh, 1.0, 0, _C.qint8)
        self._packed_weight_ih = _PackedLinearWeight(w_ih, b_ih)
        self._packed_weight_hh = _PackedLinearWeight(w_hh, b_hh)

    @property
    def bias_ih(self):
        return self._packed_weight_ih.bias

    @property
    def bias_hh(self):
        return self._packed_weight_hh.bias

    def _get_name(self) -> str:
        return "DynamicQuantizedRNNBase"

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def check_forward_input(self, input) -> None:
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]}, expected {self.input_size}")

    def check_forward_hidden(self, input, hx, hidden_label: str = "") -> None:
        if input.shape[0] != hx.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{hidden_label} batch size "
                               f"{hx.shape[0]}")
        if hx.shape[1] != self.hidden_size:
            raise RuntimeError(f"hidden{hidden_label} has inconsistent hidden_size: got {hx.shape[1]}, expected "
                               f"{self.hidden_size}")

    def _prepare(self, input, hx, labels: tuple):
        """Checks dtypes and shapes, adds the batch dim to unbatched input; returns (input, hiddens,
        batched) with hiddens a list (zeros where hx is None)."""
        name = self._get_name()
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        _check_float32(name, "input", input)
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        self.check_forward_input(input)
        if hx is None:
            zeros = _C.zeros([input.shape[0], self.hidden_size], dtype=input.dtype)
            return input, [zeros] * len(labels), batched
        hiddens = list(hx) if len(labels) == 2 else [hx]
        for t, label in zip(hiddens, labels, strict=True):
            if t.dim() != (2 if batched else 1):
                kind = "batched 2-D" if batched else "unbatched 1-D"
                raise RuntimeError(f"{name}: for {kind} input, hidden{label} should be {2 if batched else 1}-D, but "
                                   f"got {t.dim()}-D")
            _check_float32(name, "hidden state", t)
        hiddens = [t if batched else t.unsqueeze(0) for t in hiddens]
        for t, label in zip(hiddens, labels, strict=True):
            self.check_forward_hidden(input, t, label)
        return input, hiddens, batched

    def _weight_bias(self) -> dict:
        return {"weight": {"weight_ih": self._packed_weight_ih.weight, "weight_hh": self._packed_weight_hh.weight},
                "bias": {"bias_ih": self._packed_weight_ih.bias, "bias_hh": self._packed_weight_hh.bias}}

    def get_weight(self) -> dict:
        return self._weight_bias()["weight"]

    def get_bias(self) -> dict:
        return self._weight_bias()["bias"]

    def set_weight_bias(self, weight_bias_dict) -> None:
        weight, bias = weight_bias_dict["weight"], weight_bias_dict["bias"]
        self._packed_weight_ih = _PackedLinearWeight(weight["weight_ih"], bias["bias_ih"])
        self._packed_weight_hh = _PackedLinearWeight(weight["weight_hh"], bias["bias_hh"])
        self.weight_dtype = self._packed_weight_ih.dtype

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "_packed_weight_ih"] = self._packed_weight_ih.state()
        destination[prefix + "_packed_weight_hh"] = self._packed_weight_hh.state()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for name in ("_packed_weight_ih", "_packed_weight_hh"):
            key = prefix + name
            if key in state_dict:
                try:
                    setattr(self, name, _packed_from_state(state_dict[key], key))
                except RuntimeError as e:
                    error_msgs.append(str(e))
            elif strict:
                missing_keys.append(key)
        self.weight_dtype = self._packed_weight_ih.dtype
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The dynamically quantized twin of an nn.LSTMCell, nn.GRUCell or nn.RNNCell."""
        from ....nn.modules import rnn as _rnn

        if type(mod) not in (_rnn.LSTMCell, _rnn.GRUCell, _rnn.RNNCell):
            raise AssertionError("nn.quantized.dynamic.RNNCellBase.from_float only works for nn.LSTMCell, nn.GRUCell "
                                 "and nn.RNNCell")
        factory, dtype = _weight_observer_factory(mod)
        if type(mod) is _rnn.LSTMCell:
            qcell = LSTMCell(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype)
        elif type(mod) is _rnn.GRUCell:
            qcell = GRUCell(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype)
        else:
            qcell = RNNCell(mod.input_size, mod.hidden_size, bias=mod.bias, nonlinearity=mod.nonlinearity, dtype=dtype)
        qcell._packed_weight_ih = _PackedLinearWeight(_quantized_weight(mod.weight_ih, factory, dtype), mod.bias_ih)
        qcell._packed_weight_hh = _PackedLinearWeight(_quantized_weight(mod.weight_hh, factory, dtype), mod.bias_hh)
        return qcell


class RNNCell(RNNCellBase):
    """Dynamically quantized nn.RNNCell: h' = act(W_hh h + b_hh + W_ih x + b_ih), act tanh or relu."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 dtype=_C.qint8) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def _get_name(self) -> str:
        return "DynamicQuantizedRNNCell"

    def forward(self, input, hx=None):
        input, (h,), batched = self._prepare(input, hx, ("",))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h = _simple_step(self._packed_weight_ih(input), h, self._packed_weight_hh, self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """Dynamically quantized nn.LSTMCell: forward(input, (h, c)=None) -> (h', c')."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, num_chunks=4, **kwargs)

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTMCell"

    def forward(self, input, hx=None):
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"{self._get_name()}: hx must be a tuple (h, c) of two tensors, got {type(hx).__name__}")
        input, (h, c), batched = self._prepare(input, hx, ("[0]", "[1]"))
        h, c = _lstm_step(self._packed_weight_ih(input), h, c, self._packed_weight_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """Dynamically quantized nn.GRUCell: forward(input, h=None) -> h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=_C.qint8) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, dtype=dtype)

    def _get_name(self) -> str:
        return "DynamicQuantizedGRUCell"

    def forward(self, input, hx=None):
        input, (h,), batched = self._prepare(input, hx, ("",))
        h = _gru_step(self._packed_weight_ih(input), h, self._packed_weight_hh)
        return h if batched else h.squeeze(0)


def _set_float_modules() -> None:
    from ....nn.modules import rnn as _rnn

    RNNBase._FLOAT_MODULE, LSTM._FLOAT_MODULE, GRU._FLOAT_MODULE = _rnn.RNNBase, _rnn.LSTM, _rnn.GRU


_set_float_modules()

__all__ = ["Linear", "LSTM", "GRU", "LSTMCell", "RNNCell", "GRUCell"]
