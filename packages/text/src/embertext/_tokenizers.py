"""The Python faces of the C++ tokenizers (embertext._C): torchtext's constructor arguments,
str/list dispatch, threads for batches, and pickling for DataLoader workers."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import ember
from ember import nn
from embertext import _C

PathLike = str | os.PathLike


def _read(path: PathLike, what: str) -> tuple[bytes, str]:
    """A local file's bytes and the name error messages use for it."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path (str or os.PathLike), but got {type(path).__name__}")
    text = os.fspath(path)
    if "://" in text:
        raise ValueError(
            f"{what} {text!r} is a URL; embertext reads local files only (download it first, "
            "e.g. with ember.hub.download_url_to_file)"
        )
    with open(text, "rb") as f:  # FileNotFoundError/IsADirectoryError name the path themselves
        return f.read(), f"{what} '{text}'"


def _check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, but got {type(value).__name__}")
    return value


class _NativeTokenizer(nn.Module):
    """forward(str) -> list; forward(list of str) -> list of lists, encoded on
    ``num_threads`` threads (default: ``ember.get_num_threads()`` at call time).

    IDs come back as ints; ``str_ids=True`` gives TorchText's strings instead."""

    _native: Any

    def __init__(self, return_tokens: bool, str_ids: bool, num_threads: int | None) -> None:
        super().__init__()
        self._return_tokens = _check_flag("return_tokens", return_tokens)
        self._str_ids = _check_flag("str_ids", str_ids)
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int)):
            raise TypeError(f"num_threads must be an int or None, but got {type(num_threads).__name__}")
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be at least 1, but got {num_threads}")
        self.num_threads = num_threads

    # The native object is rebuilt from the constructor's data when unpickled, so a tokenizer
    # crosses into DataLoader workers without its files.
    def _build(self) -> Any:
        raise NotImplementedError

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_native", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, "_native", self._build())

    def _threads(self) -> int:
        return self.num_threads if self.num_threads is not None else ember.get_num_threads()

    def _encode(self, text: str | bytes) -> list:
        ids = self._native.encode(text)
        return [str(i) for i in ids] if self._str_ids else ids

    def _tokenize(self, text: str | bytes) -> list[str]:
        return self._native.tokenize(text)

    def _batch(self, texts: Sequence) -> list[list]:
        if self._return_tokens:
            return self._native.tokenize_batch(texts, self._threads())
        out = self._native.encode_batch(texts, self._threads())
        return [[str(i) for i in row] for row in out] if self._str_ids else out

    def forward(self, input: Any) -> Any:
        if isinstance(input, (str, bytes)):
            return self._tokenize(input) if self._return_tokens else self._encode(input)
        if isinstance(input, (list, tuple)):
            return self._batch(input)
        raise TypeError(
            f"{type(self).__name__} expects a str or a list of str, but got {type(input).__name__}"
        )

    def encode_batch_arrays(self, texts: Sequence) -> tuple[ember.Tensor, ember.Tensor]:
        """(ids, offsets) as int64 tensors: text i's IDs are ``ids[offsets[i]:offsets[i + 1]]``."""
        ids, offsets = self._native.encode_batch_arrays(texts, self._threads())
        return ember.from_numpy(ids), ember.from_numpy(offsets)

    @property
    def vocab_size(self) -> int:
        return self._native.vocab_size

    def id_to_token(self, index: int) -> str:
        return self._native.id_to_token(index)

    def token_to_id(self, token: str) -> int | None:
        return self._native.token_to_id(token)


class BERTTokenizer(_NativeTokenizer):
    """BERT's tokenizer: basic tokenization (cleanup, CJK split, accents, lower-casing,
    punctuation) then WordPiece over ``vocab_path`` (a vocab.txt, one token per line).

    Args:
        vocab_path: local path of the vocab.txt.
        do_lower_case: lower-case the text (default True).
        strip_accents: strip accents; None (default) follows ``do_lower_case``.
        return_tokens: return token strings instead of IDs.
        never_split: whitespace-delimited words kept verbatim.
        str_ids: return IDs as strings, as TorchText does (default False: ints).
        num_threads: threads for a list of texts (default: ``ember.get_num_threads()``).
        unk_token, max_input_chars_per_word: WordPiece's unknown token and word-length limit.

    The IDs equal Hugging Face tokenizers' (BertNormalizer + BertPreTokenizer + WordPiece) for the
    same vocab; see the package README for the few documented differences.
    """

    def __init__(
        self,
        vocab_path: PathLike,
        do_lower_case: bool = True,
        strip_accents: bool | None = None,
        return_tokens: bool = False,
        never_split: Sequence[str] | None = None,
        *,
        str_ids: bool = False,
        num_threads: int | None = None,
        unk_token: str = "[UNK]",
        max_input_chars_per_word: int = 100,
    ) -> None:
        super().__init__(return_tokens, str_ids, num_threads)
        self._do_lower_case = _check_flag("do_lower_case", do_lower_case)
        if strip_accents is not None:
            _check_flag("strip_accents", strip_accents)
        self._strip_accents = strip_accents
        if isinstance(never_split, str):
            raise TypeError("never_split must be a list of tokens, not a single str")
        self._never_split = list(never_split or [])
        self._unk_token = unk_token
        if isinstance(max_input_chars_per_word, bool) or not isinstance(max_input_chars_per_word, int):
            raise TypeError("max_input_chars_per_word must be an int")
        if max_input_chars_per_word < 1:
            raise ValueError(f"max_input_chars_per_word must be positive, but got {max_input_chars_per_word}")
        self._max_chars = max_input_chars_per_word
        self._vocab_data, self._vocab_name = _read(vocab_path, "vocab file")
        self._vocab_path = os.fspath(vocab_path)
        object.__setattr__(self, "_native", self._build())

    def _build(self) -> Any:
        vocab = _C.parse_vocab(self._vocab_data, self._vocab_name)
        try:
            return _C.BertTokenizer(
                vocab,
                lower_case=self._do_lower_case,
                strip_accents=self._strip_accents,
                never_split=self._never_split,
                unk_token=self._unk_token,
                max_input_chars_per_word=self._max_chars,
            )
        except ValueError as error:
            raise ValueError(f"{self._vocab_name}: {error}") from None


_SPECIAL_TOKENS_ATTRIBUTES = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
    "additional_special_tokens",
)


class GPT2BPETokenizer(_NativeTokenizer):
    """GPT-2's byte-level BPE: the GPT-2 pre-tokenizer regex, the byte alphabet, and the merges
    of ``vocab_bpe_path`` applied by rank, with IDs from ``encoder_json_path``.

    The IDs equal Hugging Face tokenizers' (ByteLevel + BPE) for the same files.
    """

    SPECIAL_TOKENS_ATTRIBUTES = list(_SPECIAL_TOKENS_ATTRIBUTES)

    def __init__(
        self,
        encoder_json_path: PathLike,
        vocab_bpe_path: PathLike,
        return_tokens: bool = False,
        *,
        str_ids: bool = False,
        num_threads: int | None = None,
    ) -> None:
        super().__init__(return_tokens, str_ids, num_threads)
        self._encoder_data, self._encoder_name = _read(encoder_json_path, "encoder file")
        self._merges_data, self._merges_name = _read(vocab_bpe_path, "merges file")
        self._special: list[str] = []
        object.__setattr__(self, "_native", self._build())

    def _build(self) -> Any:
        encoder = _C.parse_encoder_json(self._encoder_data, self._encoder_name)
        merges = _C.parse_merges(self._merges_data, self._merges_name)
        try:
            native = _C.GPT2BPETokenizer(encoder, merges)
        except ValueError as error:
            raise ValueError(f"{self._encoder_name} with {self._merges_name}: {error}") from None
        if self._special:
            native.add_special_tokens(self._special)
        return native

    def add_special_tokens(self, special_tokens_dict: Mapping[str, str | Sequence[str]]) -> int:
        """Add special tokens (matched verbatim, never split); returns how many were new to the
        vocabulary. Keys are those of ``SPECIAL_TOKENS_ATTRIBUTES``."""
        if not isinstance(special_tokens_dict, Mapping):
            raise TypeError("special_tokens_dict must be a mapping")
        tokens: list[str] = []
        for key, value in special_tokens_dict.items():
            if key not in _SPECIAL_TOKENS_ATTRIBUTES:
                raise ValueError(f"Key '{key}' is not in the special token list: {list(_SPECIAL_TOKENS_ATTRIBUTES)}")
            values = [value] if isinstance(value, str) else list(value)
            if key != "additional_special_tokens" and len(values) != 1:
                raise ValueError(f"'{key}' takes one token, but got {values!r}")
            for token in values:
                if not isinstance(token, str) or not token:
                    raise ValueError(f"special tokens must be non-empty strings, but got {token!r}")
                tokens.append(token)
        added = self._native.add_special_tokens(tokens)
        self._special.extend(t for t in tokens if t not in self._special)
        return added

    def decode(self, tokens: Sequence[int | str]) -> str:
        """The text of a list of token IDs (ints, or TorchText's strings)."""
        return self._native.decode([int(t) for t in tokens])


class CLIPTokenizer(_NativeTokenizer):
    """CLIP's tokenizer: lower-cased text, CLIP's pre-tokenizer, byte-level BPE with "</w>" at
    each word's end.

    Args:
        merges_path: the merges file.
        encoder_json_path: optional encoder.json; when given it fixes the IDs and the number of
            merges used (its size - 514). Without it the vocabulary is built from the merges.
        num_merges: how many merges to read (without an encoder).
        return_tokens: return token strings instead of IDs.
    """

    def __init__(
        self,
        merges_path: PathLike,
        encoder_json_path: PathLike | None = None,
        num_merges: int | None = None,
        return_tokens: bool = False,
        *,
        str_ids: bool = False,
        num_threads: int | None = None,
    ) -> None:
        super().__init__(return_tokens, str_ids, num_threads)
        if num_merges is not None and (isinstance(num_merges, bool) or not isinstance(num_merges, int)):
            raise TypeError(f"num_merges must be an int or None, but got {type(num_merges).__name__}")
        if num_merges is not None and num_merges < 0:
            raise ValueError(f"num_merges must not be negative, but got {num_merges}")
        self._num_merges = num_merges
        self._merges_data, self._merges_name = _read(merges_path, "merges file")
        self._encoder = _read(encoder_json_path, "encoder file") if encoder_json_path is not None else None
        object.__setattr__(self, "_native", self._build())

    def _build(self) -> Any:
        encoder = _C.parse_encoder_json(*self._encoder) if self._encoder is not None else None
        max_merges = None if encoder is not None else self._num_merges
        merges = _C.parse_merges(self._merges_data, self._merges_name, max_merges)
        try:
            return _C.CLIPTokenizer(merges, encoder)
        except ValueError as error:
            raise ValueError(f"{self._merges_name}: {error}") from None

    def decode(self, tokens: Sequence[int | str]) -> str:
        return self._native.decode([int(t) for t in tokens])
