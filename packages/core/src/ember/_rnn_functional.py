"""The whole-sequence recurrent functions of torch's top level: lstm, gru, rnn_tanh, rnn_relu.

Each has PyTorch's two overloads:

    lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)

the second for a packed sequence's data and batch_sizes. ``params`` is the flat weight list
nn.LSTM / GRU / RNN keep (``_flat_weights``): per layer and direction w_ih, w_hh, then b_ih, b_hh
when has_biases, then w_hr for an LSTM with projections (recognized, as in PyTorch, by h_0 and
c_0 having different sizes). lstm returns (output, h_n, c_n); the others (output, h_n). They run
the recurrence of ember.nn's layers (nn/modules/rnn.py).
"""

from __future__ import annotations

from . import _C
from .nn.modules.rnn import _GATES, _run_layers

__all__ = ["gru", "lstm", "rnn_relu", "rnn_tanh"]


def _group_weights(name: str, params, has_biases: bool, num_layers: int, directions: int, projections: bool) -> list:
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if has_biases else []) + (
        ["weight_hr"] if projections else [])
    params = list(params)
    want = num_layers * directions * len(names)
    if len(params) != want:
        raise RuntimeError(f"{name}: expected {want} weights ({num_layers} layer(s) x {directions} direction(s) x "
                           f"{len(names)}: {', '.join(names)}), but got {len(params)}")
    return [dict(zip(names, params[k:k + len(names)], strict=True)) for k in range(0, want, len(names))]


def _check_shapes(name: str, mode: str, data, hx, weights: list[dict], batch: int, num_layers: int,
                  directions: int) -> None:
    states = hx if mode == "LSTM" else (hx,)
    for state in states:
        if state.dim() != 3 or state.shape[0] != num_layers * directions or state.shape[1] != batch:
            raise RuntimeError(f"{name}: expected hidden state of shape [{num_layers * directions}, {batch}, *], "
                               f"but got {list(state.shape)}")
    hidden = states[-1].shape[2]  # c_0's size for an LSTM: the cell's hidden size before projection
    width = data.shape[-1]
    for layer in range(num_layers):
        for direction in range(directions):
            w = weights[layer * directions + direction]
            if w["weight_ih"].dim() != 2 or tuple(w["weight_ih"].shape) != (_GATES[mode] * hidden, width):
                raise RuntimeError(f"{name}: weight_ih of layer {layer} has shape {list(w['weight_ih'].shape)}, but "
                                   f"the input of size {width} and hidden size {hidden} need "
                                   f"{[_GATES[mode] * hidden, width]}")
        width = states[0].shape[2] * directions


def _recurrence(name: str, mode: str, first, second, rest: tuple):
    """Dispatches the two overloads, checks the arguments and runs the stacked recurrence."""
    packed = not isinstance(second, (list, tuple)) if mode == "LSTM" else isinstance(rest[0], _C.Tensor)
    if packed:
        if len(rest) != 7:
            raise TypeError(f"{name}(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, "
                            f"bidirectional): expected 9 arguments, got {len(rest) + 2}")
        data, batch_sizes, (hx, params, has_biases, num_layers, dropout, train, bidirectional) = first, second, rest
        batch_first = False
    else:
        if len(rest) != 7:
            raise TypeError(f"{name}(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
                            f"batch_first): expected 9 arguments, got {len(rest) + 2}")
        data, hx, (params, has_biases, num_layers, dropout, train, bidirectional, batch_first) = first, second, rest
    if mode == "LSTM":
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        hx = tuple(hx)
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
        raise RuntimeError(f"{name}: num_layers must be a positive int, but got {num_layers!r}")
    directions = 2 if bidirectional else 1
    projections = mode == "LSTM" and hx[0].dim() == 3 and hx[1].dim() == 3 and hx[0].shape[2] != hx[1].shape[2]
    weights = _group_weights(name, params, has_biases, num_layers, directions, projections)

    if packed:
        if data.dim() != 2:
            raise RuntimeError(f"{name}: packed input data must be 2-D [sum of lengths, features], but got "
                               f"{data.dim()}-D")
        steps = [int(v) for v in batch_sizes.tolist()]
        if sum(steps) != data.shape[0] or any(b < a for a, b in zip(steps[1:], steps, strict=False)):
            raise RuntimeError(f"{name}: batch_sizes must be non-increasing and sum to the data's {data.shape[0]} "
                               f"rows, but got {steps}")
        batch = steps[0] if steps else 0
        _check_shapes(name, mode, data, hx, weights, batch, num_layers, directions)
        out, h_n, c_n = _run_layers(mode, data, steps, hx, weights, num_layers, directions, dropout, train)
    else:
        if data.dim() != 3:
            raise RuntimeError(f"{name}: input must be 3-D [seq, batch, features] (batch first when batch_first), "
                               f"but got {data.dim()}-D")
        time_major = data.transpose(0, 1) if batch_first else data
        length, batch = time_major.shape[0], time_major.shape[1]
        _check_shapes(name, mode, data, hx, weights, batch, num_layers, directions)
        rows = time_major.reshape([length * batch, time_major.shape[2]])
        out, h_n, c_n = _run_layers(mode, rows, [batch] * length, hx, weights, num_layers, directions, dropout, train)
        out = out.reshape([length, batch, out.shape[-1]])
        if batch_first:
            out = out.transpose(0, 1)
    return (out, h_n, c_n) if mode == "LSTM" else (out, h_n)


def lstm(input, hx, params, *args):
    """A stacked LSTM over a whole sequence (torch.lstm); see the module docstring for the two
    overloads. Returns (output, h_n, c_n)."""
    return _recurrence("lstm", "LSTM", input, hx, (params, *args))


def gru(input, hx, params, *args):
    """A stacked GRU over a whole sequence (torch.gru). Returns (output, h_n)."""
    return _recurrence("gru", "GRU", input, hx, (params, *args))


def rnn_tanh(input, hx, params, *args):
    """A stacked Elman RNN with tanh over a whole sequence (torch.rnn_tanh). Returns (output, h_n)."""
    return _recurrence("rnn_tanh", "RNN_TANH", input, hx, (params, *args))


def rnn_relu(input, hx, params, *args):
    """A stacked Elman RNN with ReLU over a whole sequence (torch.rnn_relu). Returns (output, h_n)."""
    return _recurrence("rnn_relu", "RNN_RELU", input, hx, (params, *args))
