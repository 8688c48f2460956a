"""embertext.vocab: Vocab, vocab() and build_vocab_from_iterator (torchtext.vocab)."""

from embertext.vocab.vocab import Vocab
from embertext.vocab.vocab_factory import build_vocab_from_iterator, vocab

__all__ = ["Vocab", "build_vocab_from_iterator", "vocab"]
