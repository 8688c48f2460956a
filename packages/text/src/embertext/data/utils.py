"""get_tokenizer and ngrams_iterator, as in torchtext.data.utils."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from embertext._regex import basic_english_normalize, split_tokenizer

# Tokenizers TorchText loads from other libraries; embertext depends on none of them.
_EXTERNAL = {
    "spacy": "spaCy (pip install spacy)",
    "moses": "SacreMoses (pip install sacremoses)",
    "toktok": "NLTK (pip install nltk)",
    "revtok": "revtok (pip install revtok)",
    "subword": "revtok (pip install revtok)",
}


def get_tokenizer(tokenizer: str | Callable | None, language: str = "en") -> Callable[[str], list[str]]:
    """A function from a line of text to its tokens.

    ``None`` gives ``str.split``; ``"basic_english"`` lower-cases and splits off punctuation
    (English only); a callable is returned as is. Every returned function pickles, so it works
    inside DataLoader workers.
    """
    if tokenizer is None:
        return split_tokenizer
    if tokenizer == "basic_english":
        if language != "en":
            raise ValueError(f"basic_english normalization is only available for English ('en'), not {language!r}")
        return basic_english_normalize
    if callable(tokenizer):
        return tokenizer
    if isinstance(tokenizer, str) and tokenizer in _EXTERNAL:
        raise ValueError(
            f"the {tokenizer!r} tokenizer comes from {_EXTERNAL[tokenizer]}, which embertext does not "
            "bundle; pass its tokenize function to get_tokenizer instead"
        )
    raise ValueError(
        f"unknown tokenizer {tokenizer!r}: use None, 'basic_english', or a callable from str to list of str"
    )


def ngrams_iterator(token_list: Iterable[str], ngrams: int) -> Iterator[str]:
    """Each token, then each run of 2..ngrams consecutive tokens joined by spaces.

    >>> list(ngrams_iterator(["here", "we", "are"], 2))
    ['here', 'we', 'are', 'here we', 'we are']
    """
    if isinstance(ngrams, bool) or not isinstance(ngrams, int) or ngrams < 1:
        raise ValueError(f"ngrams must be a positive int, but got {ngrams!r}")
    tokens = list(token_list)
    yield from tokens
    for n in range(2, ngrams + 1):
        for i in range(len(tokens) - n + 1):
            yield " ".join(tokens[i : i + n])
