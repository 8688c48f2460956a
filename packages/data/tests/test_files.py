"""Files on disk: FileLister, IoPathFileLister, FileOpener, Saver, StreamWrapper, the text
parsers and decoders over real files, and HashChecker."""

import gc
import hashlib
import io
import json
import os
import pickle

import numpy as np
import pytest

from emberdata.datapipes.iter import (
    CSVParser,
    FileLister,
    FileOpener,
    HashChecker,
    IoPathFileLister,
    IterableWrapper,
    LineReader,
    LocalPathManager,
    StreamWrapper,
    basichandlers,
    extension_extract_fn,
    pickle_handler,
)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    files = {
        "b.csv": "x,y\n1,2\n3,4\n",
        "a.txt": "alpha\nbeta\n\ngamma\n",
        "c.json": json.dumps({"k": 1}),
        "sub/d.csv": "x,y\n5,6\n",
        "sub/deep/e.txt": "deep\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def rel(paths, root):
    return [os.path.relpath(p, root) for p in paths]


def test_file_lister_masks_recursion_and_order(tree):
    assert rel(FileLister(str(tree)), tree) == ["a.txt", "b.csv", "c.json"]
    assert rel(FileLister(str(tree), "*.csv", recursive=True), tree) == ["b.csv", "sub/d.csv"]
    assert rel(FileLister(str(tree), ["*.txt", "*.json"], recursive=True), tree) == [
        "a.txt", "c.json", os.path.join("sub", "deep", "e.txt")]
    single = FileLister(str(tree / "a.txt"))
    assert list(single) == [str(tree / "a.txt")]
    assert list(FileLister(str(tree / "a.txt"), "*.csv")) == []
    several = FileLister([str(tree / "sub"), str(tree / "a.txt")])
    assert rel(several, tree) == ["sub/d.csv", "a.txt"]
    from_pipe = IterableWrapper([str(tree / "sub")]).list_files(recursive=True)
    assert rel(from_pipe, tree) == ["sub/d.csv", "sub/deep/e.txt"]
    assert all(os.path.isabs(p) for p in FileLister(os.path.relpath(tree), abspath=True))
    assert sorted(FileLister(str(tree), non_deterministic=True)) == sorted(FileLister(str(tree)))


def test_file_lister_length_and_errors(tree):
    with pytest.raises(TypeError, match="^FileLister instance doesn't have valid length$"):
        len(FileLister(str(tree)))
    assert len(FileLister(str(tree), length=3)) == 3
    with pytest.raises(FileNotFoundError, match="FileLister: no such file or directory"):
        list(FileLister(str(tree / "missing")))
    with pytest.raises(TypeError, match="masks expected a str or a list of str, but got 3"):
        FileLister(str(tree), masks=3)
    with pytest.raises(TypeError, match="FileLister expected root to be a path"):
        FileLister(42)


def test_iopath_file_lister(tree):
    dp = IoPathFileLister(str(tree), masks="*.csv", pathmgr=LocalPathManager())
    assert list(dp) == [str(tree / "b.csv")]
    assert list(IoPathFileLister([str(tree / "a.txt")])) == [str(tree / "a.txt")]
    assert list(pickle.loads(pickle.dumps(dp))) == [str(tree / "b.csv")]
    with pytest.raises(FileNotFoundError, match="IoPathFileLister: no such file or directory"):
        list(IoPathFileLister(str(tree / "nope")))
    with pytest.raises(RuntimeError, match="registering a path handler needs iopath"):
        IoPathFileLister(str(tree), pathmgr=LocalPathManager(), handler=object())


def test_file_opener_modes(tree):
    dp = FileLister(str(tree), "*.txt").open_files()
    ((path, stream),) = list(dp)
    assert path == str(tree / "a.txt")
    assert isinstance(stream, StreamWrapper) and stream.read() == "alpha\nbeta\n\ngamma\n"
    ((_, binary),) = list(FileLister(str(tree), "*.txt").open_files(mode="b"))
    assert binary.read().startswith(b"alpha")
    assert len(FileOpener(IterableWrapper([str(tree / "a.txt")]))) == 1
    with pytest.raises(ValueError, match="Invalid mode 'w'"):
        FileOpener(IterableWrapper([]), mode="w")
    with pytest.raises(ValueError, match="binary mode doesn't take an encoding argument"):
        FileOpener(IterableWrapper([]), mode="b", encoding="utf-8")


def test_stream_wrapper_closes_and_refuses_pickling(tree):
    raw = open(tree / "a.txt")  # noqa: SIM115 (the wrapper owns it)
    wrapper = StreamWrapper(raw, name="a.txt")
    assert "a.txt" in repr(wrapper) and wrapper.readline() == "alpha\n"
    with pytest.raises(TypeError, match="cannot pickle an open stream"):
        pickle.dumps(wrapper)
    del wrapper
    gc.collect()
    assert raw.closed
    with StreamWrapper(io.BytesIO(b"xy")) as s:
        s.autoclose()
        assert s.read() == b"xy" and s.read() == b""
        assert s.closed


def test_readers_over_files(tree):
    lines = FileLister(str(tree), "a.txt").open_files().readlines()
    assert [line for _, line in lines] == ["alpha", "beta", "", "gamma"]
    paragraphs = FileLister(str(tree), "a.txt").open_files().readlines().lines_to_paragraphs()
    assert [p for _, p in paragraphs] == ["alpha\nbeta", "gamma"]
    raw = LineReader(FileLister(str(tree), "a.txt").open_files(mode="b"), strip_newline=False,
                     skip_lines=1, return_path=False)
    assert list(raw) == [b"beta\n", b"\n", b"gamma\n"]
    decoded = LineReader(FileLister(str(tree), "a.txt").open_files(mode="b"), decode=True,
                         return_path=False)
    assert list(decoded) == ["alpha", "beta", "", "gamma"]
    rows = FileLister(str(tree), "*.csv", recursive=True).open_files(mode="b").parse_csv(
        skip_lines=1, as_tuple=True, return_path=True)
    assert [(os.path.basename(p), r) for p, r in rows] == [
        ("b.csv", ("1", "2")), ("b.csv", ("3", "4")), ("d.csv", ("5", "6"))]
    dicts = FileLister(str(tree), "b.csv").open_files().parse_csv_as_dict()
    assert list(dicts) == [{"x": "1", "y": "2"}, {"x": "3", "y": "4"}]
    semicolon = IterableWrapper([("s", io.StringIO("a;b\n"))]).parse_csv(delimiter=";")
    assert list(semicolon) == [["a", "b"]]
    docs = FileLister(str(tree), "*.json").open_files().parse_json_files()
    assert [v for _, v in docs] == [{"k": 1}]


def test_reader_errors():
    with pytest.raises(ValueError, match="LineReader expected skip_lines >= 0, but got -1"):
        LineReader(IterableWrapper([]), skip_lines=-1)
    with pytest.raises(TypeError):
        CSVParser(IterableWrapper([]), delimiter=12)
    with pytest.raises(TypeError, match="ParagraphAggregator expected a callable joiner"):
        IterableWrapper([]).lines_to_paragraphs(joiner="\n")
    with pytest.raises(json.JSONDecodeError):
        list(IterableWrapper([("bad.json", io.StringIO("{"))]).parse_json_files())


def test_saver_writes_and_yields_paths(tmp_path):
    items = IterableWrapper([("x/one.txt", "1"), ("two.txt", "22")])
    dp = items.save_to_disk(filepath_fn=lambda name: str(tmp_path / name))
    paths = list(dp)
    assert paths == [str(tmp_path / "x" / "one.txt"), str(tmp_path / "two.txt")]
    assert [(tmp_path / p).read_text() for p in paths] == ["1", "22"]
    assert len(dp) == 2
    binary = IterableWrapper([(str(tmp_path / "b.bin"), b"\x00\x01")]).save_to_disk(mode="wb")
    assert list(binary) == [str(tmp_path / "b.bin")]
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError, match="Invalid mode 'r'"):
        items.save_to_disk(mode="r")


def test_routed_decoder_handlers(tmp_path):
    np.save(tmp_path / "arr.npy", np.arange(3))
    files = {"t.txt": b"hello", "n.index": b"42", "j.json": b"[1, 2]", "raw.bin": b"\x00"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    dp = FileLister(str(tmp_path)).open_files(mode="b").routed_decode()
    decoded = {os.path.basename(p): v for p, v in dp}
    assert decoded["t.txt"] == "hello" and decoded["n.index"] == 42 and decoded["j.json"] == [1, 2]
    assert decoded["raw.bin"] == b"\x00"
    assert decoded["arr.npy"].tolist() == [0, 1, 2]
    assert basichandlers("pickle", pickle.dumps(1)) is None  # never unpickled by default
    pickled = IterableWrapper([("p.pickle", pickle.dumps({"a": 1}))]).routed_decode(pickle_handler)
    assert list(pickled) == [("p.pickle", {"a": 1})]
    upper = IterableWrapper([("t.txt", b"hi")]).routed_decode()
    upper.add_handler(lambda key, data: data.decode().upper() if key == "txt" else None)
    assert list(upper) == [("t.txt", "HI")]
    assert extension_extract_fn("a/b.tar.GZ") == "gz"
    with pytest.raises(TypeError, match="Decoder expected a callable handler"):
        IterableWrapper([]).routed_decode("txt")


def test_hash_checker(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"payload")
    sha = hashlib.sha256(b"payload").hexdigest()
    md5 = hashlib.md5(b"payload").hexdigest()
    path = str(tmp_path / "f.bin")
    ((_, stream),) = list(FileOpener(IterableWrapper([path]), mode="b").check_hash({path: sha}))
    assert stream.read() == b"payload"  # rewound after hashing
    ((_, s2),) = list(FileOpener(IterableWrapper([path]), mode="b").check_hash({path: md5}, "md5"))
    assert s2.read() == b"payload"

    class OneWay(io.RawIOBase):
        def __init__(self):
            self.data = io.BytesIO(b"payload")

        def readable(self):
            return True

        def read(self, n=-1):
            return self.data.read(n)

    ((_, copy),) = list(HashChecker(IterableWrapper([("s", OneWay())]), {"s": sha}))
    assert copy.read() == b"payload"
    with pytest.raises(RuntimeError, match="The sha256 hash .* does not match the expected 00"):
        list(FileOpener(IterableWrapper([path]), mode="b").check_hash({path: "00"}))
    with pytest.raises(RuntimeError, match="Unspecified hash for file"):
        list(FileOpener(IterableWrapper([path]), mode="b").check_hash({}))
    with pytest.raises(ValueError, match="Invalid hash_type 'sha1' requested"):
        HashChecker(IterableWrapper([]), {}, "sha1")
