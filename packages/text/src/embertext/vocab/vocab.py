"""Vocab: a token <-> index mapping with an optional default index for unknown tokens."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ember import nn


def _check_token(token: object) -> str:
    if not isinstance(token, str):
        raise TypeError(f"tokens must be str, but got {type(token).__name__}")
    return token


def _check_index(index: object, what: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"{what} must be an int, but got {type(index).__name__}")
    return index


class Vocab(nn.Module):
    """Maps tokens to indices 0..len-1 and back.

    Looking up an unknown token raises RuntimeError (as TorchText) unless a default index is
    set with ``set_default_index``. Vocabs pickle, so they work inside DataLoader workers.
    """

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        super().__init__()
        self._itos: list[str] = []
        self._stoi: dict[str, int] = {}
        self._default_index: int | None = None
        for token in tokens:
            self.append_token(token)

    # -- size and membership
    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and token in self._stoi

    def __getitem__(self, token: str) -> int:
        index = self._stoi.get(_check_token(token))
        if index is not None:
            return index
        if self._default_index is None:
            raise RuntimeError(f"Token '{token}' not found and default index is not set")
        return self._default_index

    def forward(self, tokens: Sequence[str]) -> list[int]:
        """The indices of a list of tokens."""
        return self.lookup_indices(tokens)

    # -- the default index
    def set_default_index(self, index: int | None) -> None:
        """The index unknown tokens map to; None makes unknown tokens an error again."""
        if index is not None:
            _check_index(index, "index")
            if index < 0:
                raise ValueError(f"the default index must not be negative, but got {index}")
        self._default_index = index

    def get_default_index(self) -> int | None:
        return self._default_index

    # -- editing
    def insert_token(self, token: str, index: int) -> None:
        """Insert ``token`` at ``index``, shifting the tokens from there on up by one."""
        _check_token(token)
        _check_index(index, "index")
        if not 0 <= index <= len(self._itos):
            raise RuntimeError(f"Specified index {index} is out of bounds for vocab of size {len(self._itos)}")
        if token in self._stoi:
            raise RuntimeError(f"Token '{token}' already exists in the Vocab with index: {self._stoi[token]}")
        self._itos.insert(index, token)
        for i in range(index, len(self._itos)):
            self._stoi[self._itos[i]] = i

    def append_token(self, token: str) -> None:
        _check_token(token)
        if token in self._stoi:
            raise RuntimeError(f"Token '{token}' already exists in the Vocab with index: {self._stoi[token]}")
        self._stoi[token] = len(self._itos)
        self._itos.append(token)

    # -- lookups
    def lookup_token(self, index: int) -> str:
        _check_index(index, "index")
        if not 0 <= index < len(self._itos):
            raise RuntimeError(f"Specified index {index} is out of bounds for vocab of size {len(self._itos)}")
        return self._itos[index]

    def lookup_tokens(self, indices: Sequence[int]) -> list[str]:
        return [self.lookup_token(i) for i in indices]

    def lookup_indices(self, tokens: Sequence[str]) -> list[int]:
        if isinstance(tokens, str):
            raise TypeError("lookup_indices takes a list of tokens, not a single str")
        stoi = self._stoi
        out = []
        for token in tokens:
            index = stoi.get(token)
            if index is None:
                out.append(self[token])  # the error (or the default) for an unknown token
            else:
                out.append(index)
        return out

    def get_stoi(self) -> dict[str, int]:
        """A copy of the token -> index dictionary."""
        return dict(self._stoi)

    def get_itos(self) -> list[str]:
        """A copy of the index -> token list."""
        return list(self._itos)

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, default_index={self._default_index})"
