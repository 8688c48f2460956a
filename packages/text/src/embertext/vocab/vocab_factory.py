"""vocab() and build_vocab_from_iterator(), as in torchtext.vocab."""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence

from embertext.vocab.vocab import Vocab


def _specials(specials: Sequence[str] | None) -> list[str]:
    if specials is None:
        return []
    if isinstance(specials, str):
        raise TypeError("specials must be a list of tokens, not a single str")
    out = list(specials)
    if len(set(out)) != len(out):
        raise ValueError(f"specials has duplicates: {out}")
    for s in out:
        if not isinstance(s, str):
            raise TypeError(f"specials must be str, but got {type(s).__name__}")
    return out


def _min_freq(min_freq: int) -> int:
    if isinstance(min_freq, bool) or not isinstance(min_freq, int):
        raise TypeError(f"min_freq must be an int, but got {type(min_freq).__name__}")
    if min_freq < 1:
        raise ValueError(f"min_freq must be at least 1, but got {min_freq}")
    return min_freq


def vocab(
    ordered_dict: Mapping[str, int],
    min_freq: int = 1,
    specials: Sequence[str] | None = None,
    special_first: bool = True,
) -> Vocab:
    """A Vocab of the tokens of ``ordered_dict`` (token -> frequency) with frequency at least
    ``min_freq``, in the mapping's order, plus ``specials`` first (or last)."""
    if not isinstance(ordered_dict, Mapping):
        raise TypeError(f"ordered_dict must be a mapping from tokens to frequencies, not {type(ordered_dict).__name__}")
    min_freq = _min_freq(min_freq)
    specials = _specials(specials)
    special_set = set(specials)
    tokens = [t for t, freq in ordered_dict.items() if freq >= min_freq and t not in special_set]
    return Vocab(specials + tokens if special_first else tokens + specials)


def build_vocab_from_iterator(
    iterator: Iterable[Iterable[str]],
    min_freq: int = 1,
    specials: Sequence[str] | None = None,
    special_first: bool = True,
    max_tokens: int | None = None,
) -> Vocab:
    """A Vocab from an iterator of token lists: tokens by descending frequency (ties in
    lexicographic order), at least ``min_freq`` times, at most ``max_tokens`` entries with the
    specials included."""
    min_freq = _min_freq(min_freq)
    specials = _specials(specials)
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise TypeError(f"max_tokens must be an int or None, but got {type(max_tokens).__name__}")
        if max_tokens <= len(specials):
            raise ValueError(
                f"max_tokens ({max_tokens}) must be larger than the number of special tokens ({len(specials)})"
            )
    counter: Counter[str] = Counter()
    for tokens in iterator:
        if isinstance(tokens, str):
            raise TypeError("the iterator must yield lists of tokens, but it yielded a str")
        counter.update(tokens)
    special_set = set(specials)
    ranked = sorted(((t, f) for t, f in counter.items() if t not in special_set), key=lambda x: (-x[1], x[0]))
    if max_tokens is not None:
        ranked = ranked[: max_tokens - len(specials)]
    return vocab(OrderedDict(ranked), min_freq=min_freq, specials=specials, special_first=special_first)
