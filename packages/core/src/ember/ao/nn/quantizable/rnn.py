"""The quantizable LSTM (torch.ao.nn.quantizable.LSTMCell / LSTM): nn.LSTM rebuilt from parts
that prepare can observe. One cell step, with the modules that own each result:

    gates = igates(x) + hgates(h)                  Linear, Linear, gates: FloatFunctional.add
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)   input/forget/cell/output_gate
    c' = f * c + i * g                             fgate_cx, igate_cgate: .mul; fgate_cx_igate_cgate: .add
    h' = o * tanh(c')                              ogate_cy: .mul

With split_gates, igates / hgates / gates are ModuleDicts of one Linear (FloatFunctional) per gate
(input, forget, cell, output). A layer runs the cell over the sequence; a bidirectional layer runs
a second one over the reversed sequence; LSTM stacks layers. The attribute names are PyTorch's,
so state dicts carry over (layers.0.layer_fw.cell.igates.weight, ...)."""

from __future__ import annotations

import numbers
import warnings

from .... import _C
from ...._quantized import quantize_per_tensor
from ....nn import modules as _nn
from ....nn.parameter import Parameter
from ..quantized.modules import FloatFunctional

__all__ = ["LSTM", "LSTMCell"]

_GATES = ("input", "forget", "cell", "output")


class LSTMCell(_nn.Module):
    """A quantizable LSTM cell (torch.ao.nn.quantizable.LSTMCell): nn.LSTMCell's arithmetic through
    observable modules (module docstring)."""

    _FLOAT_MODULE = _nn.LSTMCell

    def __init__(self, input_dim: int, hidden_dim: int, bias: bool = True, device=None, dtype=None, *,
                 split_gates: bool = False) -> None:
        super().__init__()
        kwargs = {"device": device, "dtype": dtype}
        self.input_size = input_dim
        self.hidden_size = hidden_dim
        self.bias = bias
        self.split_gates = split_gates
        if not split_gates:
            self.igates = _nn.Linear(input_dim, 4 * hidden_dim, bias=bias, **kwargs)
            self.hgates = _nn.Linear(hidden_dim, 4 * hidden_dim, bias=bias, **kwargs)
            self.gates = FloatFunctional()
        else:
            self.igates = _nn.ModuleDict({g: _nn.Linear(input_dim, hidden_dim, bias=bias, **kwargs) for g in _GATES})
            self.hgates = _nn.ModuleDict({g: _nn.Linear(hidden_dim, hidden_dim, bias=bias, **kwargs) for g in _GATES})
            self.gates = _nn.ModuleDict({g: FloatFunctional() for g in _GATES})
        self.input_gate = _nn.Sigmoid()
        self.forget_gate = _nn.Sigmoid()
        self.cell_gate = _nn.Tanh()
        self.output_gate = _nn.Sigmoid()
        self.fgate_cx = FloatFunctional()
        self.igate_cgate = FloatFunctional()
        self.fgate_cx_igate_cgate = FloatFunctional()
        self.ogate_cy = FloatFunctional()
        self.initial_hidden_state_qparams: tuple[float, int] = (1.0, 0)
        self.initial_cell_state_qparams: tuple[float, int] = (1.0, 0)
        self.hidden_state_dtype = _C.quint8
        self.cell_state_dtype = _C.quint8

    def forward(self, x, hidden=None):
        if hidden is None or hidden[0] is None or hidden[1] is None:
            hidden = self.initialize_hidden(x.shape[0], x.is_quantized)
        hx, cx = hidden
        if not self.split_gates:
            gates = self.gates.add(self.igates(x), self.hgates(hx))
            input_gate, forget_gate, cell_gate, out_gate = gates.chunk(4, 1)
        else:
            gate = {g: self.gates[g].add(self.igates[g](x), self.hgates[g](hx)) for g in _GATES}
            input_gate, forget_gate, cell_gate, out_gate = (gate[g] for g in _GATES)
        input_gate = self.input_gate(input_gate)
        forget_gate = self.forget_gate(forget_gate)
        cell_gate = self.cell_gate(cell_gate)
        out_gate = self.output_gate(out_gate)
        fgate_cx = self.fgate_cx.mul(forget_gate, cx)
        igate_cgate = self.igate_cgate.mul(input_gate, cell_gate)
        cy = self.fgate_cx_igate_cgate.add(fgate_cx, igate_cgate)
        hy = self.ogate_cy.mul(out_gate, _C.tanh(cy))
        return hy, cy

    def initialize_hidden(self, batch_size: int, is_quantized: bool = False):
        """Zero (h, c) of [batch_size, hidden_size]; quantized with the initial state parameters
        when the input is quantized."""
        h = _C.zeros([batch_size, self.hidden_size])
        c = _C.zeros([batch_size, self.hidden_size])
        if is_quantized:
            h_scale, h_zp = self.initial_hidden_state_qparams
            c_scale, c_zp = self.initial_cell_state_qparams
            h = quantize_per_tensor(h, h_scale, h_zp, self.hidden_state_dtype)
            c = quantize_per_tensor(c, c_scale, c_zp, self.cell_state_dtype)
        return h, c

    def _get_name(self) -> str:
        return "QuantizableLSTMCell"

    @classmethod
    def from_params(cls, wi, wh, bi=None, bh=None, split_gates: bool = False):
        """A cell holding these weights ([4 * hidden, input], [4 * hidden, hidden]) and biases, in
        nn.LSTM's gate order (input, forget, cell, output)."""
        if (bi is None) != (bh is None):
            raise AssertionError("bi and bh must both be None or both have values")
        cell = cls(wi.shape[1], wh.shape[1], bias=bi is not None, split_gates=split_gates)
        if not split_gates:
            cell.igates.weight = Parameter(wi)
            cell.hgates.weight = Parameter(wh)
            if bi is not None:
                cell.igates.bias = Parameter(bi)
                cell.hgates.bias = Parameter(bh)
            return cell
        for w, b, linears in ((wi, bi, cell.igates), (wh, bh, cell.hgates)):
            for i, g in enumerate(_GATES):
                rows = slice(i * cell.hidden_size, (i + 1) * cell.hidden_size)
                linears[g].weight = Parameter(w[rows])
                if b is not None:
                    linears[g].bias = Parameter(b[rows])
        return cell

    @classmethod
    def from_float(cls, other, use_precomputed_fake_quant: bool = False, split_gates: bool = False):
        """The observable twin of an nn.LSTMCell that has a qconfig (not yet prepared: the
        qconfig is set on it and its Linear layers for prepare to observe)."""
        if type(other) is not cls._FLOAT_MODULE:
            raise AssertionError(f"Expected module type {cls._FLOAT_MODULE.__name__}, got {type(other).__name__}")
        if not hasattr(other, "qconfig"):
            raise AssertionError("The float module must have 'qconfig'")
        observed = cls.from_params(other.weight_ih, other.weight_hh, other.bias_ih, other.bias_hh,
                                   split_gates=split_gates)
        observed.qconfig = other.qconfig
        observed.igates.qconfig = other.qconfig
        observed.hgates.qconfig = other.qconfig
        if split_gates:
            for linear in (*observed.igates.values(), *observed.hgates.values()):
                linear.qconfig = other.qconfig
        return observed


class _LSTMSingleLayer(_nn.Module):
    """One direction of one layer: the cell run over a [T, N, input] sequence."""

    def __init__(self, input_dim: int, hidden_dim: int, bias: bool = True, device=None, dtype=None, *,
                 split_gates: bool = False) -> None:
        super().__init__()
        self.cell = LSTMCell(input_dim, hidden_dim, bias=bias, split_gates=split_gates, device=device, dtype=dtype)

    def forward(self, x, hidden=None):
        result = []
        for i in range(x.shape[0]):
            hidden = self.cell(x[i], hidden)
            result.append(hidden[0])
        return _C.stack(result, 0), hidden

    @classmethod
    def from_params(cls, *args, **kwargs):
        cell = LSTMCell.from_params(*args, **kwargs)
        layer = cls(cell.input_size, cell.hidden_size, cell.bias, split_gates=cell.split_gates)
        layer.cell = cell
        return layer


class _LSTMLayer(_nn.Module):
    """One layer, forward (layer_fw) and with bidirectional also backward (layer_bw)."""

    def __init__(self, input_dim: int, hidden_dim: int, bias: bool = True, batch_first: bool = False,
                 bidirectional: bool = False, device=None, dtype=None, *, split_gates: bool = False) -> None:
        super().__init__()
        self.batch_first = batch_first
        self.bidirectional = bidirectional
        kwargs = {"device": device, "dtype": dtype, "split_gates": split_gates}
        self.layer_fw = _LSTMSingleLayer(input_dim, hidden_dim, bias=bias, **kwargs)
        if bidirectional:
            self.layer_bw = _LSTMSingleLayer(input_dim, hidden_dim, bias=bias, **kwargs)

    def forward(self, x, hidden=None):
        if self.batch_first:
            x = x.transpose(0, 1)
        hx, cx = (None, None) if hidden is None else hidden
        hidden_bw = None
        if self.bidirectional:
            hx_bw = None if hx is None else hx[1]
            cx_bw = None if cx is None else cx[1]
            hx = None if hx is None else hx[0]
            cx = None if cx is None else cx[0]
            if hx_bw is not None and cx_bw is not None:
                hidden_bw = (hx_bw, cx_bw)
        hidden_fw = None if hx is None and cx is None else (hx, cx)
        result, hidden_fw = self.layer_fw(x, hidden_fw)
        if self.bidirectional:
            result_bw, hidden_bw = self.layer_bw(x.flip(0), hidden_bw)
            result = _C.cat([result, result_bw.flip(0)], result.dim() - 1)
            h = _C.stack([hidden_fw[0], hidden_bw[0]], 0)
            c = _C.stack([hidden_fw[1], hidden_bw[1]], 0)
        else:
            h, c = hidden_fw
        if self.batch_first:
            result = result.transpose(0, 1)
        return result, (h, c)

    @classmethod
    def from_float(cls, other, layer_idx: int = 0, qconfig=None, **kwargs):
        """Layer layer_idx of an nn.LSTM (there is no float twin of a layer; this mirrors prepare)."""
        if not hasattr(other, "qconfig") and qconfig is None:
            raise AssertionError("other must have qconfig or qconfig must be provided")
        split_gates = kwargs.get("split_gates", False)
        layer = cls(kwargs.get("input_size", other.input_size), kwargs.get("hidden_size", other.hidden_size),
                    kwargs.get("bias", other.bias), kwargs.get("batch_first", other.batch_first),
                    kwargs.get("bidirectional", other.bidirectional), split_gates=split_gates)
        layer.qconfig = getattr(other, "qconfig", qconfig)
        for suffix, attr in (("", "layer_fw"), ("_reverse", "layer_bw")):
            if suffix and not other.bidirectional:
                break
            weights = [getattr(other, f"{kind}_l{layer_idx}{suffix}", None)
                       for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            setattr(layer, attr, _LSTMSingleLayer.from_params(*weights, split_gates=split_gates))
        return layer


class LSTM(_nn.Module):
    """A quantizable LSTM (torch.ao.nn.quantizable.LSTM): nn.LSTM's constructor and forward
    (sequence-first or batch_first 3-D input, optional (h0, c0)), made of _LSTMLayer layers whose
    cells prepare can observe. Dropout is ignored, with PyTorch's warning; proj_size is not taken
    (from_float refuses a projected nn.LSTM, whose projection PyTorch's would drop). Layers after a
    bidirectional one take 2 * hidden_size inputs, as nn.LSTM's do."""

    _output_is_not_one_tensor = True  # prepare puts no output observer on it (ao.quantization.quantize)

    _FLOAT_MODULE = _nn.LSTM

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, split_gates: bool = False) -> None:
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.training = False  # eval by default, as PyTorch's: train explicitly
        if dropout > 0:
            warnings.warn("dropout option for quantizable LSTM is ignored. If you are training, please, use nn.LSTM "
                          "version followed by `prepare` step.", stacklevel=2)
            if num_layers == 1:
                warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                              f"expects num_layers greater than 1, but got dropout={dropout} and "
                              f"num_layers={num_layers}", stacklevel=2)
        kwargs = {"batch_first": False, "bidirectional": bidirectional, "device": device, "dtype": dtype,
                  "split_gates": split_gates}
        # a layer after a bidirectional one reads both directions' outputs (PyTorch's constructor
        # gives it hidden_size inputs, which only from_float's weights correct)
        layer_input = hidden_size * (2 if bidirectional else 1)
        self.layers = _nn.ModuleList([_LSTMLayer(input_size if i == 0 else layer_input, hidden_size, bias, **kwargs)
                                      for i in range(num_layers)])

    def forward(self, x, hidden=None):
        if x.dim() != 3:
            raise ValueError(f"quantizable LSTM: expected a 3-D input (sequence, batch, features; batch first with "
                             f"batch_first=True), but got {x.dim()} dimensions")
        if self.batch_first:
            x = x.transpose(0, 1)
        batch = x.shape[1]
        directions = 2 if self.bidirectional else 1
        if hidden is None:
            zeros = _C.zeros([directions, batch, self.hidden_size])
            if directions == 1:
                zeros = zeros.squeeze(0)
            if x.is_quantized:
                zeros = quantize_per_tensor(zeros, 1.0, 0, x.dtype)
            states = [(zeros, zeros)] * self.num_layers
        elif isinstance(hidden[0], _C.Tensor):
            hx = hidden[0].reshape(self.num_layers, directions, batch, self.hidden_size)
            cx = hidden[1].reshape(self.num_layers, directions, batch, self.hidden_size)
            states = [(hx[i].squeeze(0), cx[i].squeeze(0)) for i in range(self.num_layers)]
        else:
            states = hidden
        hs, cs = [], []
        for layer, state in zip(self.layers, states, strict=True):
            x, (h, c) = layer(x, state)
            hs.append(h)
            cs.append(c)
        h, c = _C.stack(hs), _C.stack(cs)
        h = h.reshape(-1, h.shape[-2], h.shape[-1])
        c = c.reshape(-1, c.shape[-2], c.shape[-1])
        if self.batch_first:
            x = x.transpose(0, 1)
        return x, (h, c)

    def _get_name(self) -> str:
        return "QuantizableLSTM"

    @classmethod
    def from_float(cls, other, qconfig=None, split_gates: bool = False):
        """The observed twin of an nn.LSTM with a qconfig: its weights in the cells, then prepared, so
        every intermediate result has its observer. An LSTM in eval mode is prepared for calibration
        (prepare); a training one for quantization-aware training (prepare_qat, as PyTorch's): its
        gate Linear layers become ember.ao.nn.qat.Linear (weights fake-quantized), every
        intermediate result gets the qconfig's fake quantizer, and the gates' sigmoid and tanh
        outputs the fixed-parameter one (FixedQParamsFakeQuantize: scale 1/256, zero point 0 and
        2/256, 128). The result is training or not as other is."""
        import ember  # ember.ao.quantization imports this package (its default custom config)

        if not isinstance(other, cls._FLOAT_MODULE):
            raise AssertionError(f"Expected module type {cls._FLOAT_MODULE.__name__}, got {type(other).__name__}")
        if not hasattr(other, "qconfig") and not qconfig:
            raise AssertionError("other must have qconfig or qconfig must be provided")
        if getattr(other, "proj_size", 0):
            raise NotImplementedError(f"quantizable LSTM has no projection (proj_size={other.proj_size})")
        observed = cls(other.input_size, other.hidden_size, other.num_layers, other.bias, other.batch_first,
                       other.dropout, other.bidirectional, split_gates=split_gates)
        observed.qconfig = getattr(other, "qconfig", qconfig)
        for idx in range(other.num_layers):
            observed.layers[idx] = _LSTMLayer.from_float(other, idx, qconfig, batch_first=False,
                                                         split_gates=split_gates)
        if other.training:
            observed.train()
            return ember.ao.quantization.prepare_qat(observed, inplace=True)
        observed.eval()
        return ember.ao.quantization.prepare(observed, inplace=True)

    @classmethod
    def from_observed(cls, other):
        raise NotImplementedError("It looks like you are trying to convert a non-quantizable LSTM module. Please, see "
                                  "the examples on quantizable LSTMs.")
