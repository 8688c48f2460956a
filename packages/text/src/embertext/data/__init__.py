"""embertext.data: tokenizer lookup and small text utilities (torchtext.data)."""

from embertext.data.utils import get_tokenizer, ngrams_iterator

__all__ = ["get_tokenizer", "ngrams_iterator"]
