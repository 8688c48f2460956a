"""ember.ao.nn.quantizable (torch.ao.nn.quantizable): the observed forms of modules whose float
versions cannot be observed, rebuilt from Linear layers and FloatFunctional ops so that prepare
can attach an observer to every intermediate result: LSTMCell, LSTM and MultiheadAttention.

prepare swaps nn.LSTM and nn.MultiheadAttention for them by default (PyTorch's
get_default_custom_config_dict; a `prepare_custom_config_dict` replaces that config), and convert
turns an observed LSTM into ember.ao.nn.quantized.LSTM, whose gates run the quantized sigmoid and
tanh, and an observed MultiheadAttention into ember.ao.nn.quantized.MultiheadAttention, whose
averaged attention weights are a quantized mean."""

from .activation import MultiheadAttention
from .rnn import LSTM, LSTMCell

__all__ = ["LSTM", "LSTMCell", "MultiheadAttention"]
