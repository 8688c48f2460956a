"""Multi-layer perceptrons (TorchRec's ``torchrec.modules.mlp``)."""

from __future__ import annotations

from collections.abc import Callable

import ember
from ember import nn

Activation = str | nn.Module | Callable[[ember.Tensor], ember.Tensor] | type


class SwishLayerNorm(nn.Module):
    """``x * sigmoid(LayerNorm(x))`` over the last ``input_dims`` (TorchRec's ``modules.activation``)."""

    def __init__(self, input_dims: int | list[int], device: ember.device | str | None = None) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(input_dims, device=device)

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return input * ember.sigmoid(self.norm(input))


def _module_or_callable(activation: Activation) -> nn.Module | Callable[[ember.Tensor], ember.Tensor]:
    # A Module class (nn.ReLU) is built once per layer; an instance or a function is shared.
    if isinstance(activation, type):
        if not issubclass(activation, nn.Module):
            raise TypeError(f"an activation class must be an nn.Module, got {activation.__name__}")
        return activation()
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {activation!r}")
    return activation


class Perceptron(nn.Module):
    """One layer: ``activation(Linear(in_size, out_size)(x))``.

    >>> layer = Perceptron(in_size=3, out_size=4)
    >>> layer(ember.randn(2, 3)).shape
    (2, 4)
    """

    def __init__(
        self,
        in_size: int,
        out_size: int,
        bias: bool = True,
        activation: nn.Module | Callable[[ember.Tensor], ember.Tensor] = ember.relu,
        device: ember.device | str | None = None,
        dtype: ember.dtype = ember.float32,
    ) -> None:
        super().__init__()
        self._in_size = in_size
        self._out_size = out_size
        self._linear = nn.Linear(in_size, out_size, bias=bias, device=device, dtype=dtype)
        self._activation_fn = activation

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return self._activation_fn(self._linear(input))


class MLP(nn.Module):
    """A stack of :class:`Perceptron` layers of sizes ``layer_sizes``.

    ``activation`` is ``"relu"``, ``"sigmoid"``, ``"swish_layernorm"``, an ``nn.Module`` class
    (one instance per layer), a module instance or a tensor function. With
    ``activation_on_last=False`` the last layer is linear.

    >>> mlp = MLP(in_size=5, layer_sizes=[8, 4])
    >>> mlp(ember.randn(2, 5)).shape
    (2, 4)
    """

    def __init__(
        self,
        in_size: int,
        layer_sizes: list[int],
        bias: bool = True,
        activation: Activation = ember.relu,
        device: ember.device | str | None = None,
        dtype: ember.dtype = ember.float32,
        activation_on_last: bool = True,
    ) -> None:
        super().__init__()
        layer_sizes = list(layer_sizes)
        if not layer_sizes:
            raise ValueError("MLP needs at least one layer size, got []")
        for size in [in_size, *layer_sizes]:
            if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
                raise ValueError(f"MLP sizes must be positive ints, got in_size={in_size}, layer_sizes={layer_sizes}")
        # TorchRec asserts on an unknown activation name in a way that never fires; here it raises.
        if isinstance(activation, str) and activation not in ("relu", "sigmoid", "swish_layernorm"):
            raise ValueError(f"MLP activation names are 'relu', 'sigmoid' and 'swish_layernorm', got {activation!r}")
        layers = []
        for i, out_size in enumerate(layer_sizes):
            if not activation_on_last and i == len(layer_sizes) - 1:
                layer_activation = nn.Identity()
            elif activation == "relu":
                layer_activation = ember.relu
            elif activation == "sigmoid":
                layer_activation = ember.sigmoid
            elif activation == "swish_layernorm":
                layer_activation = SwishLayerNorm(out_size, device=device)
            else:
                layer_activation = _module_or_callable(activation)
            layers.append(Perceptron(layer_sizes[i - 1] if i > 0 else in_size, out_size, bias=bias,
                                     activation=layer_activation, device=device, dtype=dtype))
        self._mlp = nn.Sequential(*layers)

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return self._mlp(input)
