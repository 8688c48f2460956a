"""RNN, LSTM, GRU and their cells (torch.nn)."""

from __future__ import annotations

__all__: list[str] = []
