"""Tacotron2 (Shen et al., 2018), as torchaudio.models.Tacotron2.

The model holds a symbol embedding, a convolutional + bidirectional-LSTM encoder, an
autoregressive decoder with location-sensitive attention (prenet, attention LSTM, decoder LSTM,
mel projection and stop gate) and a convolutional postnet. Module names follow torchaudio, so
its state dicts (and so the TACOTRON2 bundles' checkpoints) load unchanged.
"""

from __future__ import annotations

import warnings

import ember
from ember import nn
from ember.nn import functional as F
from ember.nn.utils import rnn as rnn_utils

from ._utils import _check_lengths

__all__ = ["Tacotron2"]

# Note [Tacotron2 behaviours kept from torchaudio]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# * The prenet's dropout (p=0.5) is applied in eval mode too: the original model relies on it
#   for variety at inference, and torchaudio keeps it.
# * Padded tokens go through the encoder convolutions like valid ones (torchaudio documents zero
#   padding), so a padded item's encoding near its end depends on the padding token; the LSTM
#   and the attention mask ignore padded positions. Encoder outputs and alignments span
#   max(token_lengths) positions.
# * infer() counts a frame into an item's length until (and including) the step whose stop gate
#   probability exceeds gate_threshold; items keep being decoded until all have stopped.


def _linear(in_dim: int, out_dim: int, bias: bool = True, w_init_gain: str = "linear") -> nn.Linear:
    """Linear layer with Xavier-uniform weights, as the reference implementation initialises."""
    layer = nn.Linear(in_dim, out_dim, bias=bias)
    nn.init.xavier_uniform_(layer.weight, gain=nn.init.calculate_gain(w_init_gain))
    return layer


def _conv1d(in_channels: int, out_channels: int, kernel_size: int, bias: bool = True,
            w_init_gain: str = "linear") -> nn.Conv1d:
    """'Same' 1-D convolution (odd kernel) with Xavier-uniform weights."""
    if kernel_size < 1 or kernel_size % 2 != 1:
        raise ValueError(f"kernel_size must be a positive odd number, got {kernel_size}")
    conv = nn.Conv1d(in_channels, out_channels, kernel_size=kernel_size, stride=1,
                     padding=(kernel_size - 1) // 2, dilation=1, bias=bias)
    nn.init.xavier_uniform_(conv.weight, gain=nn.init.calculate_gain(w_init_gain))
    return conv


def _padding_mask(lengths: ember.Tensor, width: int) -> ember.Tensor:
    """(B, width) bool, True where the position is at or past the item's length."""
    return ember.arange(width, device=lengths.device).unsqueeze(0) >= lengths.unsqueeze(1)


class _LocationLayer(nn.Module):
    """Convolves the previous and cumulative attention weights and projects the features."""

    def __init__(self, attention_n_filter: int, attention_kernel_size: int,
                 attention_hidden_dim: int) -> None:
        super().__init__()
        self.location_conv = _conv1d(2, attention_n_filter, attention_kernel_size, bias=False)
        self.location_dense = _linear(attention_n_filter, attention_hidden_dim, bias=False,
                                      w_init_gain="tanh")

    def forward(self, attention_weights_cat: ember.Tensor) -> ember.Tensor:
        """(B, 2, T_in) -> (B, T_in, attention_hidden_dim)."""
        return self.location_dense(self.location_conv(attention_weights_cat).transpose(1, 2))


class _Attention(nn.Module):
    """Location-sensitive additive attention: e = v^T tanh(W q + U f + V m)."""

    def __init__(self, attention_rnn_dim: int, encoder_embedding_dim: int,
                 attention_hidden_dim: int, attention_location_n_filter: int,
                 attention_location_kernel_size: int) -> None:
        super().__init__()
        self.query_layer = _linear(attention_rnn_dim, attention_hidden_dim, bias=False,
                                   w_init_gain="tanh")
        self.memory_layer = _linear(encoder_embedding_dim, attention_hidden_dim, bias=False,
                                    w_init_gain="tanh")
        self.v = _linear(attention_hidden_dim, 1, bias=False)
        self.location_layer = _LocationLayer(attention_location_n_filter,
                                             attention_location_kernel_size, attention_hidden_dim)
        self.score_mask_value = -float("inf")

    def _get_alignment_energies(self, query: ember.Tensor, processed_memory: ember.Tensor,
                                attention_weights_cat: ember.Tensor) -> ember.Tensor:
        """Unnormalised scores (B, T_in)."""
        processed_query = self.query_layer(query.unsqueeze(1))
        location = self.location_layer(attention_weights_cat)
        return self.v(ember.tanh(processed_query + location + processed_memory)).squeeze(2)

    def forward(self, attention_hidden_state: ember.Tensor, memory: ember.Tensor,
                processed_memory: ember.Tensor, attention_weights_cat: ember.Tensor,
                mask: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        """Returns the context (B, encoder_embedding_dim) and the weights (B, T_in); ``mask``
        (B, T_in) is True on padded positions."""
        energies = self._get_alignment_energies(attention_hidden_state, processed_memory,
                                                attention_weights_cat)
        weights = F.softmax(energies.masked_fill(mask, self.score_mask_value), dim=1)
        context = ember.bmm(weights.unsqueeze(1), memory).squeeze(1)
        return context, weights


class _Prenet(nn.Module):
    """Bias-free linear layers, each followed by ReLU and always-on dropout (p=0.5)."""

    def __init__(self, in_dim: int, out_sizes: list[int]) -> None:
        super().__init__()
        in_sizes = [in_dim] + list(out_sizes[:-1])
        self.layers = nn.ModuleList([_linear(i, o, bias=False) for i, o in zip(in_sizes, out_sizes, strict=False)])

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        for linear in self.layers:
            # Note [Tacotron2 behaviours kept from torchaudio]: dropout in eval mode too.
            x = F.dropout(F.relu(linear(x)), p=0.5, training=True)
        return x


class _Postnet(nn.Module):
    """Convolution + batch norm blocks (tanh on all but the last) predicting a mel residual."""

    def __init__(self, n_mels: int, postnet_embedding_dim: int, postnet_kernel_size: int,
                 postnet_n_convolution: int) -> None:
        super().__init__()
        self.convolutions = nn.ModuleList()
        for i in range(postnet_n_convolution):
            last = i == postnet_n_convolution - 1
            in_channels = n_mels if i == 0 else postnet_embedding_dim
            out_channels = n_mels if last else postnet_embedding_dim
            self.convolutions.append(nn.Sequential(
                _conv1d(in_channels, out_channels, postnet_kernel_size,
                        w_init_gain="linear" if last else "tanh"),
                nn.BatchNorm1d(out_channels),
            ))
        self.n_convs = len(self.convolutions)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        """(B, n_mels, T) -> (B, n_mels, T)."""
        for i, conv in enumerate(self.convolutions):
            x = conv(x)
            if i < self.n_convs - 1:
                x = ember.tanh(x)
            x = F.dropout(x, 0.5, training=self.training)
        return x


class _Encoder(nn.Module):
    """Convolution + batch norm + ReLU blocks, then a bidirectional LSTM over valid tokens."""

    def __init__(self, encoder_embedding_dim: int, encoder_n_convolution: int,
                 encoder_kernel_size: int) -> None:
        super().__init__()
        self.convolutions = nn.ModuleList([
            nn.Sequential(
                _conv1d(encoder_embedding_dim, encoder_embedding_dim, encoder_kernel_size,
                        w_init_gain="relu"),
                nn.BatchNorm1d(encoder_embedding_dim),
            )
            for _ in range(encoder_n_convolution)
        ])
        self.lstm = nn.LSTM(encoder_embedding_dim, encoder_embedding_dim // 2, 1, batch_first=True,
                            bidirectional=True)

    def forward(self, x: ember.Tensor, input_lengths: ember.Tensor) -> ember.Tensor:
        """x (B, encoder_embedding_dim, T); returns (B, max(input_lengths), encoder_embedding_dim)
        with zeros past each item's length."""
        for conv in self.convolutions:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)
        packed = rnn_utils.pack_padded_sequence(x.transpose(1, 2), input_lengths.cpu(),
                                                batch_first=True, enforce_sorted=False)
        outputs, _ = self.lstm(packed)
        outputs, _ = rnn_utils.pad_packed_sequence(outputs, batch_first=True)
        return outputs


class _Decoder(nn.Module):
    """Autoregressive decoder with location-sensitive attention."""

    def __init__(self, n_mels: int, n_frames_per_step: int, encoder_embedding_dim: int,
                 decoder_rnn_dim: int, decoder_max_step: int, decoder_dropout: float,
                 decoder_early_stopping: bool, attention_rnn_dim: int, attention_hidden_dim: int,
                 attention_location_n_filter: int, attention_location_kernel_size: int,
                 attention_dropout: float, prenet_dim: int, gate_threshold: float) -> None:
        super().__init__()
        self.n_mels = n_mels
        self.n_frames_per_step = n_frames_per_step
        self.encoder_embedding_dim = encoder_embedding_dim
        self.attention_rnn_dim = attention_rnn_dim
        self.decoder_rnn_dim = decoder_rnn_dim
        self.prenet_dim = prenet_dim
        self.decoder_max_step = decoder_max_step
        self.gate_threshold = gate_threshold
        self.attention_dropout = attention_dropout
        self.decoder_dropout = decoder_dropout
        self.decoder_early_stopping = decoder_early_stopping

        step_dim = n_mels * n_frames_per_step
        self.prenet = _Prenet(step_dim, [prenet_dim, prenet_dim])
        self.attention_rnn = nn.LSTMCell(prenet_dim + encoder_embedding_dim, attention_rnn_dim)
        self.attention_layer = _Attention(attention_rnn_dim, encoder_embedding_dim,
                                          attention_hidden_dim, attention_location_n_filter,
                                          attention_location_kernel_size)
        self.decoder_rnn = nn.LSTMCell(attention_rnn_dim + encoder_embedding_dim, decoder_rnn_dim,
                                       True)
        self.linear_projection = _linear(decoder_rnn_dim + encoder_embedding_dim, step_dim)
        self.gate_layer = _linear(decoder_rnn_dim + encoder_embedding_dim, 1, bias=True,
                                  w_init_gain="sigmoid")

    def _initial_state(self, memory: ember.Tensor) -> list[ember.Tensor]:
        """Zero LSTM states, attention weights and context."""
        B, T_in = memory.shape[0], memory.shape[1]

        def zeros(*shape):
            return ember.zeros(*shape, dtype=memory.dtype, device=memory.device)

        return [zeros(B, self.attention_rnn_dim), zeros(B, self.attention_rnn_dim),
                zeros(B, self.decoder_rnn_dim), zeros(B, self.decoder_rnn_dim),
                zeros(B, T_in), zeros(B, T_in), zeros(B, self.encoder_embedding_dim)]

    def decode(self, decoder_input, attention_hidden, attention_cell, decoder_hidden, decoder_cell,
               attention_weights, attention_weights_cum, attention_context, memory,
               processed_memory, mask):
        """One decoder step from a prenet output (B, prenet_dim). Returns the mel frame(s)
        (B, n_mels * n_frames_per_step), the gate logit (B, 1) and the updated state (attention
        hidden/cell, decoder hidden/cell, attention weights, cumulative weights, context)."""
        cell_input = ember.cat((decoder_input, attention_context), -1)
        attention_hidden, attention_cell = self.attention_rnn(cell_input,
                                                              (attention_hidden, attention_cell))
        attention_hidden = F.dropout(attention_hidden, self.attention_dropout, self.training)

        weights_cat = ember.stack((attention_weights, attention_weights_cum), dim=1)
        attention_context, attention_weights = self.attention_layer(
            attention_hidden, memory, processed_memory, weights_cat, mask)
        attention_weights_cum = attention_weights_cum + attention_weights

        decoder_hidden, decoder_cell = self.decoder_rnn(
            ember.cat((attention_hidden, attention_context), -1), (decoder_hidden, decoder_cell))
        decoder_hidden = F.dropout(decoder_hidden, self.decoder_dropout, self.training)

        hidden_context = ember.cat((decoder_hidden, attention_context), dim=1)
        return (self.linear_projection(hidden_context), self.gate_layer(hidden_context),
                attention_hidden, attention_cell, decoder_hidden, decoder_cell,
                attention_weights, attention_weights_cum, attention_context)

    def _to_frames(self, steps: ember.Tensor) -> ember.Tensor:
        """(n_steps, B, n_mels * r) -> (B, n_mels, n_steps * r)."""
        B = steps.shape[1]
        return steps.transpose(0, 1).reshape(B, -1, self.n_mels).transpose(1, 2)

    def forward(self, memory: ember.Tensor, mel_specgram_truth: ember.Tensor,
                memory_lengths: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor, ember.Tensor]:
        """Teacher forcing: step s reads the ground-truth frames of step s - 1 (zeros first).
        Returns mels (B, n_mels, T_out), gate logits (B, T_out / r), alignments
        (B, T_out / r, T_in)."""
        B, _, T_out = mel_specgram_truth.shape
        r = self.n_frames_per_step
        # (B, n_mels, T_out) -> (n_steps, B, n_mels * r), with the all-zero "go" step first.
        truth = mel_specgram_truth.transpose(1, 2).reshape(B, T_out // r, -1).transpose(0, 1)
        go = ember.zeros(1, B, self.n_mels * r, dtype=memory.dtype, device=memory.device)
        inputs = self.prenet(ember.cat((go, truth), dim=0))

        mask = _padding_mask(memory_lengths, memory.shape[1])
        state = self._initial_state(memory)
        processed_memory = self.attention_layer.memory_layer(memory)
        mels, gates, alignments = [], [], []
        for step in range(T_out // r):
            mel, gate, *state = self.decode(inputs[step], *state, memory, processed_memory, mask)
            mels.append(mel)
            gates.append(gate.squeeze(1))
            alignments.append(state[4])
        return (self._to_frames(ember.stack(mels)), ember.stack(gates, dim=1),
                ember.stack(alignments, dim=1))

    def infer(self, memory: ember.Tensor, memory_lengths: ember.Tensor
              ) -> tuple[ember.Tensor, ember.Tensor, ember.Tensor, ember.Tensor]:
        """Autoregressive decoding. Returns mels (B, n_mels, n_steps * r), lengths (B,) int32 in
        frames, gate logits (B, n_steps) and alignments (B, n_steps, T_in)."""
        B = memory.shape[0]
        r = self.n_frames_per_step
        decoder_input = ember.zeros(B, self.n_mels * r, dtype=memory.dtype, device=memory.device)
        mask = _padding_mask(memory_lengths, memory.shape[1])
        state = self._initial_state(memory)
        processed_memory = self.attention_layer.memory_layer(memory)

        n_steps = ember.zeros(B, dtype=ember.int32, device=memory.device)
        finished = ember.zeros(B, dtype=ember.bool, device=memory.device)
        mels, gates, alignments = [], [], []
        for _ in range(self.decoder_max_step):
            mel, gate, *state = self.decode(self.prenet(decoder_input), *state, memory,
                                            processed_memory, mask)
            mels.append(mel)
            gates.append(gate.squeeze(1))
            alignments.append(state[4])
            # The step on which the gate fires still counts (Note [Tacotron2 behaviours ...]).
            n_steps = n_steps + (~finished).to(ember.int32)
            finished = finished | (ember.sigmoid(gate.squeeze(1)) > self.gate_threshold)
            if self.decoder_early_stopping and bool(finished.all()):
                break
            decoder_input = mel
        if len(mels) == self.decoder_max_step:
            warnings.warn("Reached max decoder steps. The generated spectrogram might not cover "
                          "the whole transcript.", stacklevel=2)
        return (self._to_frames(ember.stack(mels)), n_steps * r, ember.stack(gates, dim=1),
                ember.stack(alignments, dim=1))


class Tacotron2(nn.Module):
    r"""Tacotron2 text-to-mel model, as ``torchaudio.models.Tacotron2``.

    Args:
        mask_padding (bool): zero the predicted mels (and saturate the gate) past
            ``mel_specgram_lengths`` in :meth:`forward`. (Default: ``False``)
        n_mels (int): mel bins. (Default: ``80``)
        n_symbol (int): input symbols. (Default: ``148``)
        n_frames_per_step (int): mel frames predicted per decoder step. (Default: ``1``)
        symbol_embedding_dim (int): symbol embedding dimension. (Default: ``512``)
        encoder_embedding_dim (int): encoder dimension. (Default: ``512``)
        encoder_n_convolution (int): encoder convolutions. (Default: ``3``)
        encoder_kernel_size (int): odd encoder kernel size. (Default: ``5``)
        decoder_rnn_dim (int): decoder LSTM units. (Default: ``1024``)
        decoder_max_step (int): most decoder steps in :meth:`infer`. (Default: ``2000``)
        decoder_dropout (float): dropout on the decoder LSTM output. (Default: ``0.1``)
        decoder_early_stopping (bool): stop :meth:`infer` once every item's gate has fired.
            (Default: ``True``)
        attention_rnn_dim (int): attention LSTM units. (Default: ``1024``)
        attention_hidden_dim (int): attention hidden dimension. (Default: ``128``)
        attention_location_n_filter (int): location filters. (Default: ``32``)
        attention_location_kernel_size (int): odd location kernel size. (Default: ``31``)
        attention_dropout (float): dropout on the attention LSTM output. (Default: ``0.1``)
        prenet_dim (int): prenet units. (Default: ``256``)
        postnet_n_convolution (int): postnet convolutions. (Default: ``5``)
        postnet_kernel_size (int): odd postnet kernel size. (Default: ``5``)
        postnet_embedding_dim (int): postnet channels. (Default: ``512``)
        gate_threshold (float): stop probability threshold. (Default: ``0.5``)
    """

    def __init__(self, mask_padding: bool = False, n_mels: int = 80, n_symbol: int = 148,
                 n_frames_per_step: int = 1, symbol_embedding_dim: int = 512,
                 encoder_embedding_dim: int = 512, encoder_n_convolution: int = 3,
                 encoder_kernel_size: int = 5, decoder_rnn_dim: int = 1024,
                 decoder_max_step: int = 2000, decoder_dropout: float = 0.1,
                 decoder_early_stopping: bool = True, attention_rnn_dim: int = 1024,
                 attention_hidden_dim: int = 128, attention_location_n_filter: int = 32,
                 attention_location_kernel_size: int = 31, attention_dropout: float = 0.1,
                 prenet_dim: int = 256, postnet_n_convolution: int = 5,
                 postnet_kernel_size: int = 5, postnet_embedding_dim: int = 512,
                 gate_threshold: float = 0.5) -> None:
        super().__init__()
        if symbol_embedding_dim != encoder_embedding_dim:
            # The embedding feeds the encoder's first convolution directly.
            raise ValueError(f"symbol_embedding_dim ({symbol_embedding_dim}) must equal "
                             f"encoder_embedding_dim ({encoder_embedding_dim})")
        if encoder_embedding_dim % 2 != 0:
            raise ValueError(f"encoder_embedding_dim must be even (two LSTM directions), got "
                             f"{encoder_embedding_dim}")
        if n_frames_per_step < 1:
            raise ValueError(f"n_frames_per_step must be at least 1, got {n_frames_per_step}")
        if postnet_n_convolution < 1:
            raise ValueError(f"postnet_n_convolution must be at least 1, got {postnet_n_convolution}")
        self.mask_padding = mask_padding
        self.n_mels = n_mels
        self.n_symbol = n_symbol
        self.n_frames_per_step = n_frames_per_step
        self.embedding = nn.Embedding(n_symbol, symbol_embedding_dim)
        nn.init.xavier_uniform_(self.embedding.weight)
        self.encoder = _Encoder(encoder_embedding_dim, encoder_n_convolution, encoder_kernel_size)
        self.decoder = _Decoder(n_mels, n_frames_per_step, encoder_embedding_dim, decoder_rnn_dim,
                                decoder_max_step, decoder_dropout, decoder_early_stopping,
                                attention_rnn_dim, attention_hidden_dim,
                                attention_location_n_filter, attention_location_kernel_size,
                                attention_dropout, prenet_dim, gate_threshold)
        self.postnet = _Postnet(n_mels, postnet_embedding_dim, postnet_kernel_size,
                                postnet_n_convolution)

    def _check_tokens(self, tokens: ember.Tensor, lengths: ember.Tensor | None, name: str) -> None:
        if not isinstance(tokens, ember.Tensor) or tokens.dim() != 2:
            got = tuple(tokens.shape) if isinstance(tokens, ember.Tensor) else type(tokens).__name__
            raise ValueError(f"tokens must have shape (n_batch, n_tokens), got {got}")
        if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == ember.bool:
            raise TypeError(f"tokens must be an integer tensor, got {tokens.dtype}")
        if tokens.numel() and (int(tokens.min().item()) < 0
                               or int(tokens.max().item()) >= self.n_symbol):
            raise ValueError(f"tokens must lie in [0, {self.n_symbol}) (n_symbol)")
        if lengths is not None:
            _check_lengths(lengths, tokens.shape[0], tokens.shape[1], f"{name} in tokens")
            if tokens.shape[0] and int(lengths.min().item()) < 1:
                # An item with no token has nothing to attend to.
                raise ValueError(f"{name} must be at least 1, got {lengths.tolist()}")
        if tokens.shape[0] == 0 or tokens.shape[1] == 0:
            raise ValueError(f"tokens must hold at least one item and one token, got "
                             f"{tuple(tokens.shape)}")

    def forward(self, tokens: ember.Tensor, token_lengths: ember.Tensor,
                mel_specgram: ember.Tensor, mel_specgram_lengths: ember.Tensor
                ) -> tuple[ember.Tensor, ember.Tensor, ember.Tensor, ember.Tensor]:
        r"""Teacher-forced pass (training).

        Args:
            tokens (Tensor): (n_batch, max of token_lengths), zero-padded symbols.
            token_lengths (Tensor): (n_batch,), valid tokens per item, at least 1.
            mel_specgram (Tensor): (n_batch, n_mels, T_out) target mels, T_out a multiple of
                n_frames_per_step.
            mel_specgram_lengths (Tensor): (n_batch,), valid frames per item.

        Returns:
            (Tensor, Tensor, Tensor, Tensor): mels before the postnet (n_batch, n_mels, T_out),
            mels after it (same shape), gate logits (n_batch, T_out / n_frames_per_step) and
            alignments (n_batch, T_out / n_frames_per_step, max of token_lengths).
        """
        self._check_tokens(tokens, token_lengths, "token_lengths")
        B = tokens.shape[0]
        if (not isinstance(mel_specgram, ember.Tensor) or mel_specgram.dim() != 3
                or mel_specgram.shape[0] != B or mel_specgram.shape[1] != self.n_mels):
            got = tuple(mel_specgram.shape) if isinstance(mel_specgram, ember.Tensor) else \
                type(mel_specgram).__name__
            raise ValueError(f"mel_specgram must have shape ({B}, {self.n_mels}, n_frames), got {got}")
        T_out = mel_specgram.shape[2]
        r = self.n_frames_per_step
        if T_out == 0 or T_out % r != 0:
            raise ValueError(f"mel_specgram's frames ({T_out}) must be a positive multiple of "
                             f"n_frames_per_step ({r})")
        _check_lengths(mel_specgram_lengths, B, T_out, "frames in mel_specgram")

        embedded = self.embedding(tokens).transpose(1, 2)
        memory = self.encoder(embedded, token_lengths)
        mel, gate_outputs, alignments = self.decoder(memory, mel_specgram.to(memory.dtype),
                                                     memory_lengths=token_lengths)
        mel_postnet = mel + self.postnet(mel)
        if self.mask_padding:
            frame_mask = _padding_mask(mel_specgram_lengths, T_out).unsqueeze(1)
            mel = mel.masked_fill(frame_mask, 0.0)
            mel_postnet = mel_postnet.masked_fill(frame_mask, 0.0)
            # A step is padding when its first frame is; its gate logit says "stop" firmly.
            step_mask = _padding_mask(mel_specgram_lengths, T_out)[:, ::r]
            gate_outputs = gate_outputs.masked_fill(step_mask, 1e3)
        return mel, mel_postnet, gate_outputs, alignments

    def infer(self, tokens: ember.Tensor, lengths: ember.Tensor | None = None
              ) -> tuple[ember.Tensor, ember.Tensor, ember.Tensor]:
        r"""Autoregressive synthesis; stops when every item's gate fires (with
        ``decoder_early_stopping``) or after ``decoder_max_step`` steps (with a warning).

        Args:
            tokens (Tensor): (n_batch, max of lengths), zero-padded symbols.
            lengths (Tensor or None): (n_batch,) valid tokens per item; None: all are valid.

        Returns:
            (Tensor, Tensor, Tensor): mels after the postnet (n_batch, n_mels, T), their valid
            lengths (n_batch,) int32, and alignments (n_batch, T / n_frames_per_step, max of
            lengths).
        """
        self._check_tokens(tokens, lengths, "lengths")
        n_batch, n_tokens = tokens.shape
        if lengths is None:
            lengths = ember.full((n_batch,), n_tokens, dtype=ember.int64, device=tokens.device)
        embedded = self.embedding(tokens).transpose(1, 2)
        memory = self.encoder(embedded, lengths)
        mel, mel_lengths, _, alignments = self.decoder.infer(memory, lengths)
        return mel + self.postnet(mel), mel_lengths, alignments
