"""The quantized LSTM (torch.ao.nn.quantized.LSTM): an observed quantizable LSTM
(ember.ao.nn.quantizable.LSTM) after convert. Its cells' Linear layers are quantized Linear layers,
its FloatFunctionals QFunctionals with the calibrated output parameters, and its gates run the
quantized sigmoid and tanh (fixed output parameters); the layer stacks its quantized steps.

The flow is PyTorch's: prepare swaps nn.LSTM for the observed quantizable LSTM (the default
custom-module config), calibration feeds its observers, convert calls LSTM.from_observed. There is
no float -> quantized shortcut: from_float raises."""

from __future__ import annotations

from ..quantizable.rnn import LSTM as _QuantizableLSTM

__all__ = ["LSTM"]


class LSTM(_QuantizableLSTM):
    """A quantized LSTM (torch.ao.nn.quantized.LSTM): the quantizable LSTM's layers and forward,
    converted (module docstring). Weights are reached per layer, as in the quantizable LSTM:
    layers[i].layer_fw.cell.igates / hgates (quantized Linear layers)."""

    _FLOAT_MODULE = _QuantizableLSTM

    def _get_name(self) -> str:
        return "QuantizedLSTM"

    @classmethod
    def from_float(cls, *args, **kwargs):
        # The whole flow is float -> observed -> quantized; this class does observed -> quantized only
        raise NotImplementedError("It looks like you are trying to convert a non-observed LSTM module. Please, see "
                                  "the examples on quantizable LSTMs.")

    @classmethod
    def from_observed(cls, other):
        """The quantized twin of an observed (prepared and calibrated) quantizable LSTM: a converted
        copy, its qconfigs removed."""
        import ember  # ember.ao.quantization imports this package

        if not isinstance(other, cls._FLOAT_MODULE):
            raise AssertionError(f"Expected module type {cls._FLOAT_MODULE}, got {type(other)}")
        converted = ember.ao.quantization.convert(other, inplace=False, remove_qconfig=True)
        converted.__class__ = cls
        return converted
