"""ember.ao.nn.quantizable (torch.ao.nn.quantizable): the observed forms of modules whose float
versions cannot be observed, rebuilt from Linear layers and FloatFunctional ops so that prepare
can attach an observer to every intermediate result: LSTMCell, LSTM and MultiheadAttention.

prepare swaps them in when `prepare_custom_config_dict` names them:

    config = {"float_to_observed_custom_module_class": {nn.LSTM: quantizable.LSTM}}
    prepared = ember.ao.quantization.prepare(model, prepare_custom_config_dict=config)

PyTorch's next step, `observed_to_quantized_custom_module_class` to torch.ao.nn.quantized.LSTM /
MultiheadAttention, is not in Ember: the quantized LSTM needs sigmoid, tanh, stack and flip of
quantized tensors, and the quantized attention the mean of quantized weights, which Ember's
quantized tensors do not have. convert says so when it meets one of these observed modules."""

from .activation import MultiheadAttention
from .rnn import LSTM, LSTMCell

__all__ = ["LSTM", "LSTMCell", "MultiheadAttention"]
