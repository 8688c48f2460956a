"""RegexTokenizer and the basic_english normalizer: regex replacements, then a split."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ember import nn


def _compile(patterns_list: Sequence) -> list[tuple[re.Pattern, str]]:
    if isinstance(patterns_list, (str, bytes)) or not isinstance(patterns_list, Sequence):
        raise TypeError("patterns_list must be a list of (pattern, replacement) pairs")
    compiled = []
    for i, pair in enumerate(patterns_list):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"patterns_list[{i}] must be a (pattern, replacement) pair, but got {pair!r}")
        pattern, replacement = pair
        if not isinstance(pattern, str) or not isinstance(replacement, str):
            raise TypeError(f"patterns_list[{i}]: pattern and replacement must be str")
        try:
            compiled.append((re.compile(pattern), replacement))
        except re.error as error:
            raise ValueError(f"patterns_list[{i}]: invalid regex {pattern!r}: {error}") from None
    return compiled


class RegexTokenizer(nn.Module):
    """Applies each (pattern, replacement) of ``patterns_list`` in order (every match replaced),
    then splits the result at spaces, dropping empty pieces.

    As in TorchText, only ' ' separates tokens; add ``(r"\\s+", " ")`` to split at any
    whitespace. Patterns use Python's ``re`` syntax (TorchText used RE2's, a near subset)."""

    def __init__(self, patterns_list: Sequence) -> None:
        super().__init__()
        self._pairs = [(p.pattern, r) for p, r in _compile(patterns_list)]
        self._compiled = _compile(self._pairs)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_compiled", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._compiled = _compile(self._pairs)

    def forward(self, line: str) -> list[str]:
        if not isinstance(line, str):
            raise TypeError(f"RegexTokenizer expects a str, but got {type(line).__name__}")
        for pattern, replacement in self._compiled:
            line = pattern.sub(replacement, line)
        return [token for token in line.split(" ") if token]


# TorchText's basic_english rules: quotes and the listed punctuation become their own tokens
# (apostrophes padded, double quotes dropped), <br /> and ; : become spaces.
_BASIC_ENGLISH = [
    (re.compile(r"'"), " '  "),
    (re.compile(r'"'), ""),
    (re.compile(r"\."), " . "),
    (re.compile(r"<br \/>"), " "),
    (re.compile(r","), " , "),
    (re.compile(r"\("), " ( "),
    (re.compile(r"\)"), " ) "),
    (re.compile(r"!"), " ! "),
    (re.compile(r"\?"), " ? "),
    (re.compile(r";"), " "),
    (re.compile(r":"), " "),
    (re.compile(r"\s+"), " "),
]


def basic_english_normalize(line: str) -> list[str]:
    """Lower-case ``line``, apply the basic_english rules, split at whitespace."""
    if not isinstance(line, str):
        raise TypeError(f"basic_english expects a str, but got {type(line).__name__}")
    line = line.lower()
    for pattern, replacement in _BASIC_ENGLISH:
        line = pattern.sub(replacement, line)
    return line.split()


def split_tokenizer(line: str) -> list[str]:
    """str.split(): the tokenizer get_tokenizer(None) returns."""
    return line.split()
