"""The tokenizer library is usable from C++ through CMake, without Python: a small program
(tests/cpp_consumer) is built against the installed wheel's EmberText CMake package and must
print the IDs the Python API gives."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import _reference as ref
import pytest

import embertext
from embertext.transforms import BERTTokenizer, GPT2BPETokenizer

SOURCE = Path(__file__).resolve().parent / "cpp_consumer"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is required to build the C++ consumer (the tests-text session installs it)")
    return path


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    cmake = _tool("cmake")
    build = tmp_path_factory.mktemp("consumer")
    configure = [cmake, "-S", str(SOURCE), "-B", str(build), f"-DCMAKE_PREFIX_PATH={embertext.cmake_prefix_path}",
                 "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    for command in (configure, [cmake, "--build", str(build)]):
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    return build / "tokenize"


def _run(program: Path, args: list[str], lines: list[str]) -> subprocess.CompletedProcess:
    # No Python in this process: a plain executable with the library's rpath.
    return subprocess.run([str(program), *args], input="\n".join(lines).encode(), capture_output=True)


def test_cpp_program_gives_the_python_ids(program, tiny_vocab_path, gpt2_files):
    lines = [line.replace("\n", " ").replace("\r", " ") for line in ref.mixed_corpus(seed=1, lines=100)]
    done = _run(program, ["bert", str(tiny_vocab_path)], lines)
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode().splitlines()
    assert out[-1] == f"embertext {embertext.__version__}"
    tok = BERTTokenizer(tiny_vocab_path)
    assert [list(map(int, row.split())) for row in out[:-1]] == tok(lines)

    enc, bpe, *_ = gpt2_files
    done = _run(program, ["gpt2", str(enc), str(bpe)], lines)
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode().splitlines()
    assert [list(map(int, row.split())) for row in out[:-1]] == GPT2BPETokenizer(enc, bpe)(lines)


def test_cpp_program_gets_clear_errors(program, tmp_path, tiny_vocab_path):
    done = subprocess.run([str(program), "bert", str(tiny_vocab_path)], input=b"ok\nbad \xff\n", capture_output=True)
    assert done.returncode == 1
    assert b"error: invalid UTF-8 at byte 4: invalid start byte" in done.stderr
    (tmp_path / "v.txt").write_text("hello\n")
    done = _run(program, ["bert", str(tmp_path / "v.txt")], [])
    assert done.returncode == 1
    assert b"the vocabulary has no unknown token '[UNK]'" in done.stderr
