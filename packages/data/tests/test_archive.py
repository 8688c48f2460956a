"""TarArchiveLoader, ZipArchiveLoader and Decompressor, with crafted hostile archives
(Note [archive safety])."""

import bz2
import gzip
import io
import lzma
import stat
import tarfile
import zipfile

import pytest

from emberdata.datapipes.iter import (
    CompressionType,
    Decompressor,
    IterableWrapper,
    TarArchiveLoader,
    UnsafeArchiveError,
)


def make_tar(members, mode="w"):
    """members: list of (TarInfo-like dict, bytes or None)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for spec, data in members:
            info = tarfile.TarInfo(spec["name"])
            info.type = spec.get("type", tarfile.REGTYPE)
            info.linkname = spec.get("linkname", "")
            if data is not None:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            else:
                archive.addfile(info)
    buffer.seek(0)
    return buffer


def make_zip(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            if mode is not None:
                info.create_system = 3
                info.external_attr = mode << 16
            archive.writestr(info, data)
    buffer.seek(0)
    return buffer


def read_all(dp):
    return {name: stream.read() for name, stream in dp}


GOOD_TAR = [({"name": "docs/a.txt"}, b"A"), ({"name": "docs", "type": tarfile.DIRTYPE}, None),
            ({"name": "b.bin"}, b"\x00\x01")]


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_tar_loader_reads_regular_members(mode):
    archive = make_tar(GOOD_TAR, mode)
    dp = IterableWrapper([("data/x.tar", archive)]).load_from_tar()
    assert read_all(dp) == {"data/x.tar/docs/a.txt": b"A", "data/x.tar/b.bin": b"\x00\x01"}


def test_tar_loader_stream_mode_and_length():
    dp = TarArchiveLoader(IterableWrapper([("x.tar", make_tar(GOOD_TAR))]), mode="r|*", length=2)
    assert read_all(dp) == {"x.tar/docs/a.txt": b"A", "x.tar/b.bin": b"\x00\x01"}
    assert len(dp) == 2
    with pytest.raises(TypeError, match="^TarArchiveLoader instance doesn't have valid length$"):
        len(IterableWrapper([]).load_from_tar())


HOSTILE_TAR = [
    ({"name": "../escape.txt"}, b"x", r"escapes the archive root"),
    ({"name": "a/../../escape.txt"}, b"x", r"escapes the archive root"),
    ({"name": "/etc/passwd"}, b"x", r"has an absolute path"),
    ({"name": "link", "type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}, None,
     r"is a link \(to '/etc/passwd'\)"),
    ({"name": "hard", "type": tarfile.LNKTYPE, "linkname": "a.txt"}, None, r"is a link"),
    ({"name": "dev", "type": tarfile.CHRTYPE}, None, r"is a device"),
    ({"name": "blk", "type": tarfile.BLKTYPE}, None, r"is a device"),
    ({"name": "pipe", "type": tarfile.FIFOTYPE}, None, r"is a FIFO"),
]


@pytest.mark.parametrize(("spec", "data", "message"), HOSTILE_TAR,
                         ids=[s["name"] for s, _, _ in HOSTILE_TAR])
def test_tar_loader_refuses_hostile_members(spec, data, message):
    archive = make_tar([({"name": "ok.txt"}, b"fine"), (spec, data)])
    dp = IterableWrapper([("evil.tar", archive)]).load_from_tar()
    with pytest.raises(UnsafeArchiveError, match=f"member '.*' of 'evil.tar' {message}"):
        read_all(dp)
    archive.seek(0)
    skipping = IterableWrapper([("evil.tar", archive)]).load_from_tar(skip_unsafe=True)
    with pytest.warns(UserWarning, match="skipped"):
        members = read_all(skipping)
    assert members == {"evil.tar/ok.txt": b"fine"}


def test_tar_loader_size_caps():
    archive = make_tar([({"name": "small"}, b"12"), ({"name": "big"}, b"x" * 100)])
    dp = IterableWrapper([("t.tar", archive)]).load_from_tar(max_member_size=50)
    with pytest.raises(UnsafeArchiveError, match="'big' of 't.tar' is 100 bytes, over max_member_size=50"):
        read_all(dp)
    archive.seek(0)
    total = IterableWrapper([("t.tar", archive)]).load_from_tar(max_total_size=60)
    with pytest.raises(UnsafeArchiveError, match="past max_total_size=60 \\(102 bytes\\)"):
        read_all(total)
    with pytest.raises(ValueError, match="TarArchiveLoader expected max_member_size >= 0"):
        IterableWrapper([]).load_from_tar(max_member_size=-1)


def test_tar_loader_bad_mode_and_corrupt_archive():
    with pytest.raises(ValueError, match="TarArchiveLoader reads archives: mode must be"):
        IterableWrapper([]).load_from_tar(mode="w")
    with pytest.raises(tarfile.TarError, match="Unable to extract files from corrupted tarfile"):
        list(IterableWrapper([("bad.tar", io.BytesIO(b"not a tar" * 100))]).load_from_tar())


def test_zip_loader_reads_members():
    archive = make_zip([("a.txt", b"A", None), ("dir/", b"", None), ("dir/b.txt", b"B", 0o100644)])
    dp = IterableWrapper([("z.zip", archive)]).load_from_zip()
    assert read_all(dp) == {"z.zip/a.txt": b"A", "z.zip/dir/b.txt": b"B"}


HOSTILE_ZIP = [
    ("../escape.txt", None, "escapes the archive root"),
    ("/abs.txt", None, "has an absolute path"),
    ("C:\\windows\\x.txt", None, "has an absolute path"),
    ("dir\\..\\..\\x.txt", None, "escapes the archive root"),
    ("link", stat.S_IFLNK | 0o777, "is a symbolic link"),
    ("dev", stat.S_IFCHR | 0o600, "is a device"),
    ("fifo", stat.S_IFIFO | 0o600, "is a FIFO or socket"),
]


@pytest.mark.parametrize(("name", "mode", "message"), HOSTILE_ZIP, ids=[n for n, _, _ in HOSTILE_ZIP])
def test_zip_loader_refuses_hostile_members(name, mode, message):
    archive = make_zip([("ok.txt", b"fine", None), (name, b"x", mode)])
    with pytest.raises(UnsafeArchiveError, match=message):
        read_all(IterableWrapper([("evil.zip", archive)]).load_from_zip())
    archive.seek(0)
    dp = IterableWrapper([("evil.zip", archive)]).load_from_zip(skip_unsafe=True)
    with pytest.warns(UserWarning, match="skipped"):
        members = read_all(dp)
    assert members == {"evil.zip/ok.txt": b"fine"}


def test_zip_loader_size_cap_and_corrupt_archive():
    bomb = make_zip([("zeros", b"\x00" * 10_000, None)])
    with pytest.raises(UnsafeArchiveError, match="is 10000 bytes, over max_member_size=1000"):
        read_all(IterableWrapper([("b.zip", bomb)]).load_from_zip(max_member_size=1000))
    with pytest.raises(zipfile.BadZipFile, match="corrupted zipfile stream 'bad.zip'"):
        list(IterableWrapper([("bad.zip", io.BytesIO(b"nope"))]).load_from_zip())


@pytest.mark.parametrize(
    ("suffix", "compress", "file_type"),
    [(".gz", gzip.compress, "gzip"), (".bz2", bz2.compress, "bz2"), (".xz", lzma.compress, "xz"),
     (".gz", gzip.compress, CompressionType.GZIP), (".xz", lzma.compress, "lzma")],
)
def test_decompressor_streams(suffix, compress, file_type):
    payload = b"line 1\nline 2\n"
    inferred = IterableWrapper([("f.txt" + suffix, io.BytesIO(compress(payload)))]).decompress()
    ((path, stream),) = list(inferred)
    assert path == "f.txt" and stream.read() == payload
    explicit = Decompressor(IterableWrapper([("f.txt" + suffix, io.BytesIO(compress(payload)))]),
                            file_type=file_type)
    ((_, stream),) = list(explicit)
    assert list(stream) == [b"line 1\n", b"line 2\n"]
    assert len(explicit) == 1


def test_decompressor_archives_and_tgz():
    ((path, archive),) = list(IterableWrapper([("x.tar", make_tar(GOOD_TAR))]).decompress())
    assert path == "x" and isinstance(archive, tarfile.TarFile)
    zipped = make_zip([("a", b"A", None)])
    ((path, archive),) = list(IterableWrapper([("x.zip", zipped)]).decompress())
    assert path == "x" and archive.read("a") == b"A"
    tgz = make_tar(GOOD_TAR, "w:gz")
    ((path, stream),) = list(IterableWrapper([("x.tgz", tgz)]).decompress())
    assert path == "x.tar"
    with tarfile.open(fileobj=stream, mode="r|") as inner:
        assert inner.getnames() == ["docs/a.txt", "docs", "b.bin"]


def test_decompressor_caps_a_bomb():
    bomb = gzip.compress(b"\x00" * 1_000_000)  # ~1 KB that inflates to 1 MB
    dp = IterableWrapper([("b.gz", io.BytesIO(bomb))]).decompress(max_size=100_000)
    ((_, stream),) = list(dp)
    with pytest.raises(UnsafeArchiveError, match="decompresses to more than max_size=100000 bytes"):
        stream.read()


def test_decompressor_errors():
    with pytest.raises(ValueError, match="Decompressor: unknown file_type 'rar'"):
        IterableWrapper([]).decompress("rar")
    with pytest.raises(TypeError, match="Decompressor expected a str or CompressionType"):
        IterableWrapper([]).decompress(3)
    with pytest.raises(ValueError, match="cannot tell the compression of 'f.dat'"):
        list(IterableWrapper([("f.dat", io.BytesIO(b""))]).decompress())
