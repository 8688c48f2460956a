"""Plain-Python references for the C++ tokenizers, written the obvious way (whole-string
normalization, Python's `re` running the actual GPT-2/CLIP regexes, the original BPE loop), and
a small BPE trainer that writes GPT-2-format files for the tests.

The character classes come from `unicodedata`, so they agree with the C++ tables exactly when
this Python's Unicode version is the one the tables were generated from
(`SAME_UNICODE`); tests that draw arbitrary characters skip otherwise."""

from __future__ import annotations

import collections
import functools
import json
import re
import unicodedata
from pathlib import Path

from embertext import _C

SAME_UNICODE = unicodedata.unidata_version == _C.unicode_version

WHITE_SPACE = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
               0x2028, 0x2029, 0x202F, 0x205F, 0x3000}
CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def is_ws(ch: str) -> bool:
    return ord(ch) in WHITE_SPACE


def is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs")


def is_punct(ch: str) -> bool:
    cp = ord(ch)
    return unicodedata.category(ch).startswith("P") or (0x21 <= cp <= 0x7E and not ch.isalnum())


def is_cjk(ch: str) -> bool:
    return any(lo <= ord(ch) <= hi for lo, hi in CJK)


# ---------------------------------------------------------------------------------------------
# BERT


def bert_words(text: str, lower: bool = True, strip: bool | None = None) -> list[str]:
    """Hugging Face's BertNormalizer then BertPreTokenizer, step by step on the whole string."""
    strip = lower if strip is None else strip
    text = "".join(" " if is_ws(c) else c for c in text if not (c in "\0\ufffd" or is_control(c)))
    text = "".join(f" {c} " if is_cjk(c) else c for c in text)
    if strip:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    if lower:
        text = "".join(c.lower() for c in text)  # one character at a time: no final sigma
    words, current = [], ""
    for c in text:
        if is_ws(c) or is_punct(c):
            if current:
                words.append(current)
            current = ""
            if is_punct(c):
                words.append(c)
        else:
            current += c
    if current:
        words.append(current)
    return words


def wordpiece(word: str, vocab: dict[str, int], unk: str = "[UNK]", max_chars: int = 100) -> list[int]:
    if len(word) > max_chars:
        return [vocab[unk]]
    out, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                out.append(vocab[piece])
                start = end
                break
        else:
            return [vocab[unk]]
    return out


def bert_encode(text: str, vocab: dict[str, int], **options) -> list[int]:
    return [i for w in bert_words(text, **options) for i in wordpiece(w, vocab)]


# ---------------------------------------------------------------------------------------------
# Byte-level BPE


def bytes_to_unicode() -> dict[int, str]:
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_CHARS = bytes_to_unicode()


def _ranges(predicate) -> str:
    """A regex character-class body for the code points where predicate(ch) holds."""
    parts, start = [], None
    for cp in range(0x110001):
        ok = cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF and predicate(chr(cp))
        if ok and start is None:
            start = cp
        elif not ok and start is not None:
            end = cp - 1
            parts.append(re.escape(chr(start)) if start == end else f"{re.escape(chr(start))}-{re.escape(chr(end))}")
            start = None
    return "".join(parts)


@functools.cache
def _classes() -> tuple[str, str, str]:
    letters = _ranges(lambda c: unicodedata.category(c)[0] == "L")
    numbers = _ranges(lambda c: unicodedata.category(c)[0] == "N")
    space = _ranges(is_ws)
    return letters, numbers, space


@functools.cache
def gpt2_regex() -> re.Pattern:
    L, N, S = _classes()
    return re.compile(
        rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+|[{S}]+(?![^{S}])|[{S}]+"
    )


@functools.cache
def clip_regex() -> re.Pattern:
    L, N, S = _classes()
    return re.compile(
        rf"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[{L}]+|[{N}]|[^{S}{L}{N}]+", re.IGNORECASE
    )


def bpe(symbols: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """GPT-2's loop: merge every occurrence of the best-ranked pair, left to right; repeat."""
    word = list(symbols)
    while len(word) > 1:
        pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        merged, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                merged.append(word[i] + word[i + 1])
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = merged
    return word


def gpt2_encode(text: str, encoder: dict[str, int], merges: list[tuple[str, str]],
                specials: tuple[str, ...] = ()) -> list[int]:
    ranks = {m: r for r, m in enumerate(merges)}
    pieces = re.split("(" + "|".join(map(re.escape, sorted(specials, key=len, reverse=True))) + ")", text) \
        if specials else [text]
    out = []
    for k, piece in enumerate(pieces):
        if specials and k % 2 == 1:
            out.append(encoder[piece])
            continue
        for token in gpt2_regex().findall(piece):
            symbols = [BYTE_CHARS[b] for b in token.encode("utf-8")]
            out.extend(encoder[s] for s in bpe(symbols, ranks))
    return out


def clip_encode(text: str, encoder: dict[str, int], merges: list[tuple[str, str]]) -> list[int]:
    ranks = {m: r for r, m in enumerate(merges)}
    text = "".join(c.lower() for c in text)
    out = []
    for token in clip_regex().findall(text):
        if token in ("<|startoftext|>", "<|endoftext|>"):
            out.append(encoder[token])
            continue
        symbols = [BYTE_CHARS[b] for b in token.encode("utf-8")]
        symbols[-1] += "</w>"
        out.extend(encoder[s] for s in bpe(symbols, ranks))
    return out


def train_bpe(corpus: str, num_merges: int, end_of_word: bool = False) -> list[tuple[str, str]]:
    """Merges learnt the usual way: count adjacent pairs over the pre-tokenized corpus, merge the
    most frequent (ties: the smallest pair), repeat."""
    pattern = clip_regex() if end_of_word else gpt2_regex()
    words = collections.Counter(pattern.findall(corpus.lower() if end_of_word else corpus))
    split = {}
    for w in words:
        symbols = [BYTE_CHARS[b] for b in w.encode("utf-8")]
        if end_of_word:
            symbols[-1] += "</w>"
        split[w] = symbols
    merges = []
    for _ in range(num_merges):
        pairs = collections.Counter()
        for w, n in words.items():
            s = split[w]
            for i in range(len(s) - 1):
                pairs[s[i], s[i + 1]] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        for w in words:
            split[w] = bpe(split[w], {best: 0})
    return merges


def write_gpt2_files(directory: Path, merges: list[tuple[str, str]]) -> tuple[Path, Path, dict[str, int]]:
    """encoder.json (the byte symbols, then one token per merge, then <|endoftext|>) and
    vocab.bpe in GPT-2's layout."""
    encoder: dict[str, int] = {}
    for b in range(256):
        encoder[BYTE_CHARS[b]] = len(encoder)
    for a, b in merges:
        encoder.setdefault(a + b, len(encoder))
    encoder["<|endoftext|>"] = len(encoder)
    enc_path, bpe_path = directory / "encoder.json", directory / "vocab.bpe"
    enc_path.write_text(json.dumps(encoder), encoding="utf-8")  # ASCII with \\u escapes, as GPT-2's
    bpe_path.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    return enc_path, bpe_path, encoder


# ---------------------------------------------------------------------------------------------
# Corpora


def mixed_corpus(seed: int, lines: int) -> list[str]:
    """Lines mixing English, accents, Greek/Cyrillic capitals, CJK, Hangul, emoji, long words,
    punctuation, contractions, digits, control characters and runs of assorted whitespace."""
    import random

    rng = random.Random(seed)
    english = ("the quick brown fox jumps over lazy dog it's we're they'll I'm you've she'd "
               "tokenization unbelievable running HELLO World Embers embedding").split()
    accented = "café naïve résumé Ångström façade jalapeño Zürich Straße ÉCOLE coöperate İstanbul".split()
    greek = "ΟΔΟΣ Σίσυφος ΑΘΗΝΑ Москва ПРИВЕТ Ελληνικά".split()
    cjk = ["中文", "日本語", "漢字テスト", "한국어", "ひらがな", "汉语词典", "豈更"]
    emoji = ["😀", "🎉", "👍🏽", "🚀🚀", "❤️", "👨‍👩‍👧", "🇫🇷"]
    punct = [",", ".", "!", "?", "...", "--", "(", ")", "«", "»", "“", "”", "¿", "¡", "#", "$", "%", "@",
             "&", "*", "~", "^", "<", ">", "|", "\\", "/", "'", '"', "''", "—", "…"]
    spaces = [" ", "  ", "   ", "\t", "\n", " \n ", "\u00a0", "\u3000", "\u2009", "\r\n", " \t "]
    odd = ["\u200b", "\x00", "\x07", "\ufeff", "e\u0301", "a\u0308\u0323", "\u0345", "ﬁ", "Ⅻ", "²", "½"]
    numbers = ["12", "3.14", "2024", "٣", "१२", "1,000,000"]
    out = []
    for _ in range(lines):
        parts = []
        for _ in range(rng.randint(1, 25)):
            kind = rng.random()
            if kind < 0.4:
                parts.append(rng.choice(english))
            elif kind < 0.5:
                parts.append(rng.choice(accented))
            elif kind < 0.56:
                parts.append(rng.choice(greek))
            elif kind < 0.64:
                parts.append(rng.choice(cjk))
            elif kind < 0.7:
                parts.append(rng.choice(emoji))
            elif kind < 0.8:
                parts.append(rng.choice(punct))
            elif kind < 0.85:
                parts.append(rng.choice(odd))
            elif kind < 0.9:
                parts.append(rng.choice(numbers))
            elif kind < 0.93:
                parts.append("".join(rng.choice("abcdefghij") for _ in range(rng.randint(90, 130))))
            else:
                parts.append(rng.choice(english) + rng.choice(punct) + rng.choice(english))
            parts.append(rng.choice(spaces) if rng.random() < 0.3 else " ")
        out.append("".join(parts))
    return out
