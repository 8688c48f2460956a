#!/usr/bin/env python3
"""Generate native/src/unicode_tables.inc: the Unicode data the tokenizers need, from Python's
`unicodedata`, so the C++ library needs no ICU/utf8proc.

    python native/tools/gen_unicode_tables.py            # rewrite the table
    python native/tools/gen_unicode_tables.py --check    # exit 1 if the committed table differs

The table is committed (the C++ library must build without Python) and records the Unicode
version it was made from; `--check` only compares when the running Python has that version.

Layout (see Note [unicode tables] in native/src/unicode.cpp):
  kFlagRuns      (start, flags) runs over all code points; a run ends where the next begins
  kLowerPairs    (code point, simple lowercase) for every code point whose lowercase is 1 char
  kDecompIndex   (code point, offset, length) into kDecompPool: full canonical decomposition
                 (NFD of the single char), Hangul syllables excluded (computed arithmetically)
  kCccRuns       (start, canonical combining class) runs, only where the class is nonzero
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "unicode_tables.inc"

# Flag bits; native/src/unicode.h declares the same values.
LETTER = 1 << 0  # general category L*
NUMBER = 1 << 1  # general category N*
WHITESPACE = 1 << 2  # the White_Space property
PUNCT = 1 << 3  # BERT punctuation: category P*, or any ASCII non-alphanumeric graphic char
CONTROL = 1 << 4  # Cc, Cf, Co, Cs, except \t \n \r (which are whitespace to BERT)
MARK_NONSPACING = 1 << 5  # Mn: what accent stripping drops after NFD
CJK = 1 << 6  # the CJK ideograph blocks BERT splits into single characters
HAS_LOWER = 1 << 7  # lowercase differs from the character
HAS_DECOMP = 1 << 8  # NFD differs from the character (Hangul syllables included)
NONSTARTER = 1 << 9  # canonical combining class != 0

# White_Space (PropList.txt). unicodedata has no property accessor, and str.isspace() differs
# (it also takes U+001C..U+001F); this list has not changed since Unicode 6.
WHITE_SPACE = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
               0x2028, 0x2029, 0x202F, 0x205F, 0x3000}

# Hugging Face tokenizers' BERT normalizer ranges (its 2B920 start differs from Google BERT's
# 2B820; we follow the implementation whose IDs we match).
CJK_RANGES = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
ASCII_PUNCT = {c for c in range(0x21, 0x7F) if not chr(c).isalnum()}


def flags_of(cp: int) -> int:
    ch = chr(cp)
    cat = unicodedata.category(ch)
    f = 0
    if cat[0] == "L":
        f |= LETTER
    if cat[0] == "N":
        f |= NUMBER
    if cp in WHITE_SPACE:
        f |= WHITESPACE
    if cat[0] == "P" or cp in ASCII_PUNCT:
        f |= PUNCT
    if cat in ("Cc", "Cf", "Co", "Cs") and cp not in (0x09, 0x0A, 0x0D):
        f |= CONTROL
    if cat == "Mn":
        f |= MARK_NONSPACING
    if any(lo <= cp <= hi for lo, hi in CJK_RANGES):
        f |= CJK
    if 0xD800 <= cp <= 0xDFFF:
        return f  # surrogates never reach the tokenizers (they are not valid UTF-8)
    if ch.lower() != ch:
        f |= HAS_LOWER
    if unicodedata.normalize("NFD", ch) != ch:
        f |= HAS_DECOMP
    if unicodedata.combining(ch):
        f |= NONSTARTER
    return f


def build() -> str:
    runs, prev = [], None
    lower, decomp, ccc_runs, prev_ccc = [], [], [], 0
    for cp in range(0x110000):
        f = flags_of(cp)
        if f != prev:
            runs.append((cp, f))
            prev = f
        ccc = unicodedata.combining(chr(cp))
        if ccc != prev_ccc:
            ccc_runs.append((cp, ccc))
            prev_ccc = ccc
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        low = ch.lower()
        if low != ch:
            if len(low) == 1:
                lower.append((cp, ord(low)))
            elif cp != 0x130:
                raise SystemExit(f"U+{cp:04X} lowercases to {len(low)} chars; only U+0130 may")
        if not HANGUL_FIRST <= cp <= HANGUL_LAST:
            nfd = unicodedata.normalize("NFD", ch)
            if nfd != ch:
                decomp.append((cp, [ord(c) for c in nfd]))
    # The tokenizers split words at whitespace and punctuation before looking at combining
    # classes; that is only exact if those characters are starters that do not lowercase into
    # another class. Check it instead of assuming it.
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        f = flags_of(cp)
        if f & (WHITESPACE | PUNCT | CJK) and unicodedata.combining(chr(cp)):
            raise SystemExit(f"U+{cp:04X} splits words but is a non-starter")
        low = chr(cp).lower()
        if f & HAS_LOWER and len(low) == 1 and (flags_of(ord(low)) ^ f) & (WHITESPACE | PUNCT | CJK):
            raise SystemExit(f"U+{cp:04X} changes class when lowercased")

    pool: list[int] = []
    index = []
    for cp, seq in decomp:
        index.append((cp, len(pool), len(seq)))
        pool.extend(seq)

    def rows(items, per_line, fmt):
        out = []
        for i in range(0, len(items), per_line):
            out.append("    " + " ".join(fmt(x) for x in items[i : i + per_line]))
        return "\n".join(out)

    version = unicodedata.unidata_version
    parts = [
        "// Generated by native/tools/gen_unicode_tables.py from Python's unicodedata. Do not edit.",
        f"// Unicode {version}.",
        f'#define EMBERTEXT_UNICODE_VERSION "{version}"',
        "",
        f"static const uint32_t kFlagRuns[{len(runs)}][2] = {{",
        rows(runs, 6, lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}}},"),
        "};",
        "",
        f"static const uint32_t kLowerPairs[{len(lower)}][2] = {{",
        rows(lower, 6, lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}}},"),
        "};",
        "",
        f"static const uint32_t kDecompIndex[{len(index)}][3] = {{",
        rows(index, 5, lambda r: f"{{0x{r[0]:X}, {r[1]}, {r[2]}}},"),
        "};",
        "",
        f"static const uint32_t kDecompPool[{len(pool)}] = {{",
        rows(pool, 10, lambda c: f"0x{c:X},"),
        "};",
        "",
        f"static const uint32_t kCccRuns[{len(ccc_runs)}][2] = {{",
        rows(ccc_runs, 6, lambda r: f"{{0x{r[0]:X}, {r[1]}}},"),
        "};",
        "",
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = build()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if f'"{unicodedata.unidata_version}"' not in current:
            print(f"{args.out.name} was made from another Unicode version than this Python's "
                  f"{unicodedata.unidata_version}; not compared")
            return 0
        if current != text:
            print(f"{args.out} is stale: run {Path(__file__).name}")
            return 1
        print(f"{args.out.name}: up to date (Unicode {unicodedata.unidata_version})")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} (Unicode {unicodedata.unidata_version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
