"""Text transforms (torchtext.transforms): tokenizers, vocab lookup, truncation, special tokens,
padding, tensors. All are ember.nn Modules that pickle, so they run in emberdata pipes and in
DataLoader workers."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import ember
from ember import nn
from embertext import functional as F
from embertext._regex import RegexTokenizer
from embertext._tokenizers import BERTTokenizer, CLIPTokenizer, GPT2BPETokenizer
from embertext.vocab import Vocab

__all__ = [
    "AddToken",
    "BERTTokenizer",
    "CLIPTokenizer",
    "GPT2BPETokenizer",
    "LabelToIndex",
    "PadTransform",
    "RegexTokenizer",
    "Sequential",
    "StrToIntTransform",
    "ToTensor",
    "Truncate",
    "VocabTransform",
]


class VocabTransform(nn.Module):
    """Tokens to indices through ``vocab``, for a list of tokens or a batch of lists."""

    def __init__(self, vocab: Vocab) -> None:
        super().__init__()
        if not isinstance(vocab, Vocab):
            raise TypeError(f"VocabTransform needs an embertext.vocab.Vocab, but got {type(vocab).__name__}")
        self.vocab = vocab

    def forward(self, input: Any) -> Any:
        if isinstance(input, (list, tuple)):
            if len(input) > 0 and isinstance(input[0], (list, tuple)):
                return [self.vocab.lookup_indices(tokens) for tokens in input]
            return self.vocab.lookup_indices(input)
        raise TypeError(f"VocabTransform expects a list of tokens or of token lists, but got {type(input).__name__}")


class ToTensor(nn.Module):
    """IDs to a tensor; a batch is padded with ``padding_value`` to its longest row."""

    def __init__(self, padding_value: int | None = None, dtype: ember.dtype = ember.long) -> None:
        super().__init__()
        self.padding_value = padding_value
        self.dtype = dtype

    def forward(self, input: Any) -> ember.Tensor:
        return F.to_tensor(input, padding_value=self.padding_value, dtype=self.dtype)


class LabelToIndex(nn.Module):
    """Label names to indices, from ``label_names`` or a file with one label per line."""

    def __init__(
        self,
        label_names: Sequence[str] | None = None,
        label_path: str | os.PathLike | None = None,
        sort_names: bool = False,
    ) -> None:
        super().__init__()
        if not label_names and not label_path:
            raise ValueError("LabelToIndex needs label_names or label_path")
        if label_names and label_path:
            raise ValueError("label_names and label_path are mutually exclusive")
        if label_path:
            with open(label_path, encoding="utf-8") as f:
                names = [line.strip() for line in f if line.strip()]
        else:
            if isinstance(label_names, str):
                raise TypeError("label_names must be a list of names, not a single str")
            names = list(label_names)
        if sort_names:
            names = sorted(names)
        if len(set(names)) != len(names):
            raise ValueError(f"label names must be unique, but got {names}")
        self._label_vocab = Vocab(names)
        self._label_names = names

    def forward(self, input: Any) -> Any:
        if isinstance(input, str):
            return self._label_vocab[input]
        if isinstance(input, (list, tuple)):
            return self._label_vocab.lookup_indices(input)
        raise TypeError(f"LabelToIndex expects a label or a list of labels, but got {type(input).__name__}")

    @property
    def label_names(self) -> list[str]:
        return list(self._label_names)


class Truncate(nn.Module):
    """Cut each sequence to at most ``max_seq_len`` items."""

    def __init__(self, max_seq_len: int) -> None:
        super().__init__()
        F.truncate([], max_seq_len)  # validates max_seq_len now rather than at the first call
        self.max_seq_len = max_seq_len

    def forward(self, input: Any) -> Any:
        return F.truncate(input, self.max_seq_len)


class AddToken(nn.Module):
    """Add ``token`` at the beginning (``begin=True``) or end of each sequence."""

    def __init__(self, token: int | str, begin: bool = True) -> None:
        super().__init__()
        self.token = token
        self.begin = begin

    def forward(self, input: Any) -> Any:
        return F.add_token(input, self.token, self.begin)


class PadTransform(nn.Module):
    """Pad the last dimension of a tensor with ``pad_value`` up to ``max_length`` (longer
    tensors are left as they are)."""

    def __init__(self, max_length: int, pad_value: int) -> None:
        super().__init__()
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 0:
            raise ValueError(f"max_length must be a non-negative int, but got {max_length!r}")
        self.max_length = max_length
        self.pad_value = float(pad_value)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        if not isinstance(x, ember.Tensor):
            raise TypeError(f"PadTransform expects a Tensor, but got {type(x).__name__}")
        length = x.size(-1)
        if length < self.max_length:
            x = nn.functional.pad(x, (0, self.max_length - length), value=self.pad_value)
        return x


class StrToIntTransform(nn.Module):
    """String IDs to ints (a sequence or a batch)."""

    def forward(self, input: Any) -> Any:
        return F.str_to_int(input)


class Sequential(nn.Sequential):
    """Transforms applied in order."""

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input
