"""RNN, LSTM, GRU and their single-step cells (torch.nn.RNN / LSTM / GRU / RNNCell / LSTMCell /
GRUCell).

The layers are compositions of registered ops, so autograd, dtype conversion and state dicts
work as for any other module. Per layer and direction the input projection of every time step is
one matmul against the stacked gate weights (W_ih, rows ordered i,f,g,o for the LSTM and r,z,n for
the GRU); each step then does one matmul of the whole active batch against W_hh. Padded input is
run as a packed batch whose every step has the full batch, so packed and padded input share one
loop: at step t only the first batch_sizes[t] sequences (the longest ones) are advanced.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _packed_sequence_type():
    # Imported on use: nn.utils imports the layer modules' package, so a top-level import could cycle.
    from ..utils.rnn import PackedSequence
    return PackedSequence


# ---- one time step; xp is the input projection x W_ih^T + b_ih (plus b_hh where it can be folded) ----

def _rnn_step(xp, h, w_hh_t, b_hh, relu: bool):
    pre = xp + h.matmul(w_hh_t)
    if b_hh is not None:
        pre = pre + b_hh
    return pre.relu() if relu else pre.tanh()


def _lstm_step(xp, h, c, w_hh_t, b_hh, w_hr_t):
    gates = xp + h.matmul(w_hh_t)
    if b_hh is not None:
        gates = gates + b_hh
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr_t is not None:
        h = h.matmul(w_hr_t)
    return h, c


def _gru_step(xp, h, w_hh_t, b_hh):
    # b_hh stays inside the step: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
    hp = h.matmul(w_hh_t)
    if b_hh is not None:
        hp = hp + b_hh
    size = h.shape[1]
    x_rz, x_n = xp.split([2 * size, size], 1)
    h_rz, h_n = hp.split([2 * size, size], 1)
    r, z = (x_rz + h_rz).sigmoid().chunk(2, 1)
    n = (x_n + r * h_n).tanh()
    return n + z * (h - n)  # (1 - z) * n + z * h


def _check_cell_input(input, hx, input_size: int, hidden_size: int, label: int) -> None:
    if input.shape[1] != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {input_size}")
    if hx is not None:
        if input.shape[0] != hx.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} batch size "
                               f"{hx.shape[0]}")
        if hx.shape[1] != hidden_size:
            raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.shape[1]}, expected "
                               f"{hidden_size}")


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU. ``mode`` is one of 'LSTM', 'GRU', 'RNN_TANH',
    'RNN_RELU'. Parameters are registered per layer and direction in PyTorch's order and names:
    weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, weight_hr_l{k} (proj_size > 0),
    with the suffix ``_reverse`` for the backward direction."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        factory = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            factory["device"] = device
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", [gate_size, layer_input]), ("weight_hh", [gate_size, real_hidden])]
                if bias:
                    shapes += [("bias_ih", [gate_size]), ("bias_hh", [gate_size])]
                if proj_size > 0:
                    shapes.append(("weight_hr", [proj_size, hidden_size]))
                names = []
                for stem, shape in shapes:
                    setattr(self, stem + suffix, Parameter(_C.zeros(shape, **factory)))
                    names.append(stem + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        """The parameters in _flat_weights_names order (looked up afresh, so .to()/.double() and
        reassignment are always reflected)."""
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Kept for API compatibility: the weights are separate tensors used directly, there is no
        fused weight buffer to compact (PyTorch's is also a no-op off cuDNN)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---- argument checks (PyTorch's messages) ----

    def check_input(self, input, batch_sizes) -> None:
        weight_dtype = getattr(self, self._flat_weights_names[0]).dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"input must have the type {weight_dtype}, got type {input.dtype}")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        if self.mode == "LSTM":
            self.check_hidden_size(hidden[0], expected, "Expected hidden[0] size {}, got {}")
            cell = (expected[0], expected[1], self.hidden_size)
            self.check_hidden_size(hidden[1], cell, "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(hidden, expected)

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        if self.mode == "LSTM":
            return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)
        return hx.index_select(1, permutation)

    # ---- forward ----

    def forward(self, input, hx=None):
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        lstm = self.mode == "LSTM"
        packed_type = _packed_sequence_type()
        batch_sizes = sorted_indices = unsorted_indices = None
        is_batched = True
        batch_dim = 0 if self.batch_first else 1
        if lstm and hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}")
        if isinstance(input, packed_type):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            batch = int(batch_sizes[0])
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 + ("instead" if name != "RNN" else "tensor instead"))
            is_batched = input.dim() == 3
            if lstm and hx is not None:
                dims = (hx[0].dim(), hx[1].dim())
                want = 3 if is_batched else 2
                if dims != (want, want):
                    kind = "batched 3-D" if is_batched else "unbatched 2-D"
                    raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                       f"({dims[0]}-D, {dims[1]}-D) tensors")
            elif hx is not None:
                want = 3 if is_batched else 2
                if hx.dim() != want:
                    kind = "batched 3-D" if is_batched else "unbatched 2-D"
                    raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1)) if lstm else hx.unsqueeze(1)
            batch = input.shape[batch_dim]
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            zeros = {"dtype": input.dtype, "device": input.device}
            h0 = _C.zeros([self.num_layers * directions, batch, real_hidden], **zeros)
            hx = (h0, _C.zeros([self.num_layers * directions, batch, self.hidden_size], **zeros)) if lstm else h0
            self.check_input(input, batch_sizes)
        else:
            self.check_forward_args(input, hx, batch_sizes)
            hx = self.permute_hidden(hx, sorted_indices)

        if batch_sizes is not None:
            data, steps = input, [int(v) for v in batch_sizes.tolist()]
        else:
            time_major = input.transpose(0, 1) if self.batch_first else input
            steps = [batch] * time_major.shape[0]
            data = time_major.reshape([time_major.shape[0] * batch, self.input_size])
        out, h_n, c_n = self._run(data, steps, hx, batch)

        if batch_sizes is not None:
            output = packed_type(out, batch_sizes, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = h_n.index_select(1, unsorted_indices)
                c_n = c_n.index_select(1, unsorted_indices) if lstm else None
        else:
            output = out.reshape([len(steps), batch, out.shape[-1]])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not is_batched:
                output = output.squeeze(batch_dim)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if lstm else None
        return (output, (h_n, c_n)) if lstm else (output, h_n)

    def _run(self, data, steps: list[int], hx, batch: int):
        """Runs every layer and direction over time-major packed ``data`` (rows of step t are the
        first steps[t] sequences). Returns (output data, h_n, c_n or None)."""
        weights = [{n[:n.index("_l")]: getattr(self, n) for n in names} for names in self._all_weights]
        return _run_layers(self.mode, data, steps, hx, weights, self.num_layers, 2 if self.bidirectional else 1,
                           self.dropout, self.training)


def _run_layers(mode: str, data, steps: list[int], hx, weights: list[dict], num_layers: int, directions: int,
                dropout: float, train: bool):
    """The stacked recurrence shared by the layers and by ember.lstm / gru / rnn_tanh / rnn_relu.
    ``weights[layer * directions + direction]`` maps weight_ih, weight_hh and, where present,
    bias_ih, bias_hh, weight_hr to tensors; ``hx`` is h_0 (or (h_0, c_0) for the LSTM), each
    [num_layers * directions, batch, size]. Dropout (probability ``dropout``, when ``train``) is
    applied to every layer's output but the last's."""
    lstm = mode == "LSTM"
    h0s = list(hx[0].unbind(0)) if lstm else list(hx.unbind(0))
    c0s = list(hx[1].unbind(0)) if lstm else [None] * len(h0s)
    h_finals, c_finals = [], []
    real_hidden = h0s[0].shape[-1]
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            k = layer * directions + direction
            out, h, c = _direction(mode, data, steps, h0s[k], c0s[k], weights[k], direction == 1, real_hidden)
            outputs.append(out)
            h_finals.append(h)
            c_finals.append(c)
        data = outputs[0] if directions == 1 else _C.cat(outputs, 1)
        if dropout > 0 and train and layer < num_layers - 1:
            data = F.dropout(data, dropout, True)
    h_n = _C.stack(h_finals, 0)
    c_n = _C.stack(c_finals, 0) if lstm else None
    return data, h_n, c_n


def _direction(mode: str, data, steps: list[int], h0, c0, w: dict, reverse: bool, out_size: int):
    # Biases that sit outside the nonlinearity's inner products fold into the input projection.
    w_ih, w_hh, b_ih, b_hh, w_hr = (w["weight_ih"], w["weight_hh"], w.get("bias_ih"), w.get("bias_hh"),
                                    w.get("weight_hr"))
    xp = data.matmul(w_ih.t())
    if b_ih is not None:
        if mode == "GRU":
            xp = xp + b_ih
        else:
            xp = xp + (b_ih + b_hh)
            b_hh = None
    w_hh_t = w_hh.t()
    w_hr_t = w_hr.t() if w_hr is not None else None
    lstm = mode == "LSTM"

    def step(x, h, c):
        if lstm:
            return _lstm_step(x, h, c, w_hh_t, b_hh, w_hr_t)
        if mode == "GRU":
            return _gru_step(x, h, w_hh_t, b_hh), None
        return _rnn_step(x, h, w_hh_t, b_hh, mode == "RNN_RELU"), None

    if not steps:  # an empty sequence leaves the state as given
        return _C.zeros([0, out_size], dtype=data.dtype, device=data.device), h0, c0
    return _over_time(xp.split(steps, 0), steps, h0, c0, lstm, step, reverse)


def _over_time(xs, steps: list[int], h0, c0, lstm: bool, step, reverse: bool):
    """One direction of a layer over time-major packed rows: xs[t] holds the first steps[t]
    sequences' projected inputs; step(x, h, c) -> (h, c). Returns (the outputs' rows, h_n, c_n)."""
    outs = [None] * len(steps)
    if not reverse:
        # Sequences finish in order from the back of the batch; their final states are set aside.
        done_h, done_c = [], []
        h, c, active = h0, c0, h0.shape[0]
        for t, size in enumerate(steps):
            if size < active:
                done_h.append(h[size:active])
                h = h[:size]
                if lstm:
                    done_c.append(c[size:active])
                    c = c[:size]
                active = size
            h, c = step(xs[t], h, c)
            outs[t] = h
        if done_h:
            h = _C.cat([h, *reversed(done_h)], 0)
            c = _C.cat([c, *reversed(done_c)], 0) if lstm else None
    else:
        # Backwards in time the batch only grows; sequences join with their initial state.
        active = steps[-1]
        h = h0 if active == h0.shape[0] else h0[:active]
        c = (c0 if active == c0.shape[0] else c0[:active]) if lstm else None
        for t in range(len(steps) - 1, -1, -1):
            size = steps[t]
            if size > active:
                h = _C.cat([h, h0[active:size]], 0)
                if lstm:
                    c = _C.cat([c, c0[active:size]], 0)
                active = size
            h, c = step(xs[t], h, c)
            outs[t] = h
    return _C.cat(outs, 0), h, c


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act = tanh or relu."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o (stacked in that order in W_ih / W_hh),
    c_t = f * c_{t-1} + i * g, h_t = o * tanh(c_t), projected by W_hr when proj_size > 0.
    forward(input, (h_0, c_0)) returns (output, (h_n, c_n))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit: gates r, z, n (stacked in that order),
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h_t = (1 - z) * n + z * h_{t-1}."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


# ---- cells ------------------------------------------------------------------------------------


class RNNCellBase(Module):
    """weight_ih (num_chunks * hidden_size, input_size), weight_hh (num_chunks * hidden_size,
    hidden_size) and, with bias, bias_ih / bias_hh; all start uniform in +-1/sqrt(hidden_size)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        factory = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            factory["device"] = device
        self.weight_ih = Parameter(_C.zeros([num_chunks * hidden_size, input_size], **factory))
        self.weight_hh = Parameter(_C.zeros([num_chunks * hidden_size, hidden_size], **factory))
        if bias:
            self.bias_ih = Parameter(_C.zeros([num_chunks * hidden_size], **factory))
            self.bias_hh = Parameter(_C.zeros([num_chunks * hidden_size], **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name: str, input, hx, hidden_name: str = "hidden"):
        """Validates ranks and adds the batch dim to unbatched input; returns (input, hx, batched)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {hidden_name} to be 1D or 2D, got {hx.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _C.zeros([input.shape[0], self.hidden_size], dtype=input.dtype, device=input.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        return input, hx, batched

    def _project(self, input):
        xp = input.matmul(self.weight_ih.t())
        return xp if self.bias_ih is None else xp + self.bias_ih


class RNNCell(RNNCellBase):
    """One Elman step: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare("RNNCell", input, hx)
        _check_cell_input(input, hx, self.input_size, self.hidden_size, 0)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h = _rnn_step(self._project(input), hx, self.weight_hh.t(), self.bias_hh, self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; forward(input, (h, c)) returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise TypeError(f"LSTMCell: hx must be a tuple (h, c) of two tensors, got {type(hx).__name__}")
            for k in (0, 1):
                if hx[k].dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{k}] to be 1D or 2D, got {hx[k].dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = _C.zeros([input.shape[0], self.hidden_size], dtype=input.dtype, device=input.device)
            h, c = zeros, zeros
        else:
            h, c = (hx[0], hx[1]) if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        _check_cell_input(input, h, self.input_size, self.hidden_size, 0)
        _check_cell_input(input, c, self.input_size, self.hidden_size, 1)
        h, c = _lstm_step(self._project(input), h, c, self.weight_hh.t(), self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: r, z = sigmoid(...), n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
    h' = (1 - z) * n + z * h."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, batched = self._prepare("GRUCell", input, hx)
        _check_cell_input(input, hx, self.input_size, self.hidden_size, 0)
        h = _gru_step(self._project(input), hx, self.weight_hh.t(), self.bias_hh)
        return h if batched else h.squeeze(0)
