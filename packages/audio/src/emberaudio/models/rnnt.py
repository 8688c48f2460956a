"""Recurrent neural network transducer (RNN-T), as torchaudio.models.RNNT.

``RNNT`` joins three networks: a transcriber (here an Emformer encoder with input projection,
time reduction, output projection and layer norm), a predictor (embedding, layer-normalized
LSTMs, projection) and a joiner (add, activation, linear to the vocabulary).
``emformer_rnnt_model`` builds one from torchaudio's keyword arguments and
``emformer_rnnt_base`` is the configuration of torchaudio's EMFORMER_RNNT_BASE_LIBRISPEECH.
Module names follow torchaudio, so its state dicts load unchanged.
"""

from __future__ import annotations

import ember
from ember import nn

from ._utils import _check_lengths
from .emformer import Emformer

__all__ = ["RNNT", "emformer_rnnt_base", "emformer_rnnt_model"]


class _TimeReduction(nn.Module):
    """Stacks ``stride`` consecutive frames into one (dropping the remainder frames)."""

    def __init__(self, stride: int) -> None:
        super().__init__()
        if stride <= 0:
            raise ValueError(f"time_reduction_stride must be positive, got {stride}")
        self.stride = stride

    def forward(self, input: ember.Tensor, lengths: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        B, T, D = input.shape
        T_out = T // self.stride
        output = input[:, :T_out * self.stride].reshape(B, T_out, D * self.stride).contiguous()
        return output, ember.div(lengths, self.stride, rounding_mode="trunc")


class _CustomLSTM(nn.Module):
    """LSTM layer with optional layer norm on the gates and the cell (time-major input)."""

    def __init__(self, input_dim: int, hidden_dim: int, layer_norm: bool = False,
                 layer_norm_epsilon: float = 1e-5) -> None:
        super().__init__()
        # With layer norm on the gates a bias would be redundant.
        self.x2g = nn.Linear(input_dim, 4 * hidden_dim, bias=not layer_norm)
        self.p2g = nn.Linear(hidden_dim, 4 * hidden_dim, bias=False)
        if layer_norm:
            self.c_norm = nn.LayerNorm(hidden_dim, eps=layer_norm_epsilon)
            self.g_norm = nn.LayerNorm(4 * hidden_dim, eps=layer_norm_epsilon)
        else:
            self.c_norm = nn.Identity()
            self.g_norm = nn.Identity()
        self.hidden_dim = hidden_dim

    def forward(self, input: ember.Tensor, state: list[ember.Tensor] | None):
        """input (T, B, D); state [h, c] each (B, hidden) or None. Returns (output, [h, c])."""
        if state is None:
            B = input.shape[1]
            h = ember.zeros(B, self.hidden_dim, device=input.device, dtype=input.dtype)
            c = ember.zeros(B, self.hidden_dim, device=input.device, dtype=input.dtype)
        else:
            h, c = state
        gated = self.x2g(input)
        outputs = []
        for t in range(input.shape[0]):
            gates = self.g_norm(gated[t] + self.p2g(h))
            i, f, g, o = gates.chunk(4, dim=1)
            c = self.c_norm(ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g))
            h = ember.sigmoid(o) * ember.tanh(c)
            outputs.append(h)
        if outputs:
            output = ember.stack(outputs, dim=0)
        else:
            output = ember.zeros(0, input.shape[1], self.hidden_dim, dtype=input.dtype,
                                 device=input.device)
        return output, [h, c]


class _EmformerEncoder(nn.Module):
    """RNN-T transcriber: linear, time reduction, Emformer, linear, layer norm."""

    def __init__(self, *, input_dim: int, output_dim: int, segment_length: int,
                 right_context_length: int, time_reduction_input_dim: int,
                 time_reduction_stride: int, transformer_num_heads: int, transformer_ffn_dim: int,
                 transformer_num_layers: int, transformer_left_context_length: int,
                 transformer_dropout: float = 0.0, transformer_activation: str = "relu",
                 transformer_max_memory_size: int = 0,
                 transformer_weight_init_scale_strategy: str | None = "depthwise",
                 transformer_tanh_on_mem: bool = False) -> None:
        super().__init__()
        self.input_dim = input_dim
        self.input_linear = nn.Linear(input_dim, time_reduction_input_dim, bias=False)
        self.time_reduction = _TimeReduction(time_reduction_stride)
        transformer_input_dim = time_reduction_input_dim * time_reduction_stride
        self.transformer = Emformer(
            transformer_input_dim, transformer_num_heads, transformer_ffn_dim,
            transformer_num_layers, segment_length // time_reduction_stride,
            dropout=transformer_dropout, activation=transformer_activation,
            left_context_length=transformer_left_context_length,
            right_context_length=right_context_length // time_reduction_stride,
            max_memory_size=transformer_max_memory_size,
            weight_init_scale_strategy=transformer_weight_init_scale_strategy,
            tanh_on_mem=transformer_tanh_on_mem)
        self.output_linear = nn.Linear(transformer_input_dim, output_dim)
        self.layer_norm = nn.LayerNorm(output_dim)

    def _check(self, input: ember.Tensor, lengths: ember.Tensor) -> None:
        if not isinstance(input, ember.Tensor) or input.dim() != 3 or input.shape[2] != self.input_dim:
            got = tuple(input.shape) if isinstance(input, ember.Tensor) else type(input).__name__
            raise ValueError(f"sources must have shape (batch, frames, {self.input_dim}), got {got}")
        _check_lengths(lengths, input.shape[0], input.shape[1], "source frames")

    def forward(self, input: ember.Tensor, lengths: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        self._check(input, lengths)
        x, lengths = self.time_reduction(self.input_linear(input), lengths)
        x, lengths = self.transformer(x, lengths)
        return self.layer_norm(self.output_linear(x)), lengths

    def infer(self, input: ember.Tensor, lengths: ember.Tensor,
              states: list[list[ember.Tensor]] | None):
        self._check(input, lengths)
        x, lengths = self.time_reduction(self.input_linear(input), lengths)
        x, lengths, states = self.transformer.infer(x, lengths, states)
        return self.layer_norm(self.output_linear(x)), lengths, states


class _Predictor(nn.Module):
    """RNN-T prediction network: embedding, layer norm, LSTMs, linear, layer norm."""

    def __init__(self, num_symbols: int, output_dim: int, symbol_embedding_dim: int,
                 num_lstm_layers: int, lstm_hidden_dim: int, lstm_layer_norm: bool = False,
                 lstm_layer_norm_epsilon: float = 1e-5, lstm_dropout: float = 0.0) -> None:
        super().__init__()
        self.num_symbols = num_symbols
        self.embedding = nn.Embedding(num_symbols, symbol_embedding_dim)
        self.input_layer_norm = nn.LayerNorm(symbol_embedding_dim)
        self.lstm_layers = nn.ModuleList([
            _CustomLSTM(symbol_embedding_dim if i == 0 else lstm_hidden_dim, lstm_hidden_dim,
                        layer_norm=lstm_layer_norm, layer_norm_epsilon=lstm_layer_norm_epsilon)
            for i in range(num_lstm_layers)
        ])
        self.dropout = nn.Dropout(p=lstm_dropout)
        self.linear = nn.Linear(lstm_hidden_dim, output_dim)
        self.output_layer_norm = nn.LayerNorm(output_dim)
        self.lstm_dropout = lstm_dropout

    def forward(self, input: ember.Tensor, lengths: ember.Tensor,
                state: list[list[ember.Tensor]] | None = None):
        """input (B, U) token ids. Returns (output (B, U, output_dim), lengths, state)."""
        if not isinstance(input, ember.Tensor) or input.dim() != 2:
            got = tuple(input.shape) if isinstance(input, ember.Tensor) else type(input).__name__
            raise ValueError(f"targets must have shape (batch, tokens), got {got}")
        if input.dtype.is_floating_point or input.dtype.is_complex:
            raise TypeError(f"targets must be an integer tensor, got {input.dtype}")
        if input.numel() and (int(input.min().item()) < 0 or int(input.max().item()) >= self.num_symbols):
            raise ValueError(f"targets must lie in [0, {self.num_symbols}), got values in "
                             f"[{int(input.min().item())}, {int(input.max().item())}]")
        _check_lengths(lengths, input.shape[0], input.shape[1], "target tokens")
        if state is not None and len(state) != len(self.lstm_layers):
            raise ValueError(f"state must hold one [h, c] per LSTM layer ({len(self.lstm_layers)}), "
                             f"got {len(state)}")
        x = self.input_layer_norm(self.embedding(input.permute(1, 0)))
        new_state: list[list[ember.Tensor]] = []
        for i, lstm in enumerate(self.lstm_layers):
            x, layer_state = lstm(x, None if state is None else state[i])
            x = self.dropout(x)
            new_state.append(layer_state)
        x = self.output_layer_norm(self.linear(x))
        return x.permute(1, 0, 2), lengths, new_state


class _Joiner(nn.Module):
    """RNN-T joint network: broadcast-add the encodings, activation, linear."""

    def __init__(self, input_dim: int, output_dim: int, activation: str = "relu") -> None:
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim, bias=True)
        if activation == "relu":
            self.activation = nn.ReLU()
        elif activation == "tanh":
            self.activation = nn.Tanh()
        else:
            raise ValueError(f"Unsupported activation {activation}")

    def forward(self, source_encodings: ember.Tensor, source_lengths: ember.Tensor,
                target_encodings: ember.Tensor, target_lengths: ember.Tensor):
        """(B, T, D) and (B, U, D) -> ((B, T, U, output_dim), source_lengths, target_lengths)."""
        if source_encodings.dim() != 3 or target_encodings.dim() != 3:
            raise ValueError("source_encodings and target_encodings must be 3-D (batch, length, dim), "
                             f"got {source_encodings.dim()} and {target_encodings.dim()} dims")
        joint = source_encodings.unsqueeze(2) + target_encodings.unsqueeze(1)
        return self.linear(self.activation(joint)), source_lengths, target_lengths


class RNNT(nn.Module):
    r"""Recurrent neural network transducer, as ``torchaudio.models.RNNT``.

    Build one with :func:`emformer_rnnt_model` or :func:`emformer_rnnt_base`.

    Args:
        transcriber (nn.Module): transcription network (``forward`` and ``infer``).
        predictor (nn.Module): prediction network.
        joiner (nn.Module): joint network.
    """

    def __init__(self, transcriber: nn.Module, predictor: nn.Module, joiner: nn.Module) -> None:
        super().__init__()
        self.transcriber = transcriber
        self.predictor = predictor
        self.joiner = joiner

    def forward(self, sources: ember.Tensor, source_lengths: ember.Tensor, targets: ember.Tensor,
                target_lengths: ember.Tensor,
                predictor_state: list[list[ember.Tensor]] | None = None):
        r"""Training pass.

        Args:
            sources (Tensor): (B, T, D) frames right-padded with right context.
            source_lengths (Tensor): (B,) valid frames.
            targets (Tensor): (B, U) token ids (usually blank-prepended).
            target_lengths (Tensor): (B,) valid tokens.
            predictor_state (list of lists of Tensor or None): predictor state to start from.

        Returns:
            (Tensor, Tensor, Tensor, List[List[Tensor]]): joint output (B, T', U, num_symbols),
            source lengths, target lengths and the predictor state.
        """
        src, src_len = self.transcriber(input=sources, lengths=source_lengths)
        tgt, tgt_len, predictor_state = self.predictor(input=targets, lengths=target_lengths,
                                                       state=predictor_state)
        output, src_len, tgt_len = self.joiner(source_encodings=src, source_lengths=src_len,
                                               target_encodings=tgt, target_lengths=tgt_len)
        return output, src_len, tgt_len, predictor_state

    def transcribe_streaming(self, sources: ember.Tensor, source_lengths: ember.Tensor,
                             state: list[list[ember.Tensor]] | None):
        """Transcriber on one segment plus right context; returns (encodings, lengths, state)."""
        return self.transcriber.infer(sources, source_lengths, state)

    def transcribe(self, sources: ember.Tensor, source_lengths: ember.Tensor):
        """Transcriber on whole utterances; returns (encodings, lengths)."""
        return self.transcriber(sources, source_lengths)

    def predict(self, targets: ember.Tensor, target_lengths: ember.Tensor,
                state: list[list[ember.Tensor]] | None):
        """Predictor on token ids; returns (encodings, lengths, state)."""
        return self.predictor(input=targets, lengths=target_lengths, state=state)

    def join(self, source_encodings: ember.Tensor, source_lengths: ember.Tensor,
             target_encodings: ember.Tensor, target_lengths: ember.Tensor):
        """Joiner; returns (joint output (B, T, U, num_symbols), source lengths, target lengths)."""
        return self.joiner(source_encodings=source_encodings, source_lengths=source_lengths,
                           target_encodings=target_encodings, target_lengths=target_lengths)


def emformer_rnnt_model(*, input_dim: int, encoding_dim: int, num_symbols: int,
                        segment_length: int, right_context_length: int,
                        time_reduction_input_dim: int, time_reduction_stride: int,
                        transformer_num_heads: int, transformer_ffn_dim: int,
                        transformer_num_layers: int, transformer_dropout: float,
                        transformer_activation: str, transformer_left_context_length: int,
                        transformer_max_memory_size: int,
                        transformer_weight_init_scale_strategy: str | None,
                        transformer_tanh_on_mem: bool, symbol_embedding_dim: int,
                        num_lstm_layers: int, lstm_layer_norm: bool,
                        lstm_layer_norm_epsilon: float, lstm_dropout: float) -> RNNT:
    r"""Builds an Emformer RNN-T (keyword arguments as ``torchaudio.models.emformer_rnnt_model``).

    ``transcribe`` expects whole utterances followed by ``right_context_length`` frames;
    ``transcribe_streaming`` expects chunks of ``segment_length + right_context_length`` frames.
    """
    encoder = _EmformerEncoder(
        input_dim=input_dim, output_dim=encoding_dim, segment_length=segment_length,
        right_context_length=right_context_length,
        time_reduction_input_dim=time_reduction_input_dim,
        time_reduction_stride=time_reduction_stride, transformer_num_heads=transformer_num_heads,
        transformer_ffn_dim=transformer_ffn_dim, transformer_num_layers=transformer_num_layers,
        transformer_dropout=transformer_dropout, transformer_activation=transformer_activation,
        transformer_left_context_length=transformer_left_context_length,
        transformer_max_memory_size=transformer_max_memory_size,
        transformer_weight_init_scale_strategy=transformer_weight_init_scale_strategy,
        transformer_tanh_on_mem=transformer_tanh_on_mem)
    predictor = _Predictor(num_symbols, encoding_dim, symbol_embedding_dim=symbol_embedding_dim,
                           num_lstm_layers=num_lstm_layers, lstm_hidden_dim=symbol_embedding_dim,
                           lstm_layer_norm=lstm_layer_norm,
                           lstm_layer_norm_epsilon=lstm_layer_norm_epsilon,
                           lstm_dropout=lstm_dropout)
    joiner = _Joiner(encoding_dim, num_symbols)
    return RNNT(encoder, predictor, joiner)


def emformer_rnnt_base(num_symbols: int) -> RNNT:
    r"""The base Emformer RNN-T (torchaudio's EMFORMER_RNNT_BASE_LIBRISPEECH architecture)."""
    return emformer_rnnt_model(
        input_dim=80, encoding_dim=1024, num_symbols=num_symbols, segment_length=16,
        right_context_length=4, time_reduction_input_dim=128, time_reduction_stride=4,
        transformer_num_heads=8, transformer_ffn_dim=2048, transformer_num_layers=20,
        transformer_dropout=0.1, transformer_activation="gelu",
        transformer_left_context_length=30, transformer_max_memory_size=0,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
        symbol_embedding_dim=512, num_lstm_layers=3, lstm_layer_norm=True,
        lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.3)
