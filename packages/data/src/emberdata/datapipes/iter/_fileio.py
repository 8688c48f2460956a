"""Files: StreamWrapper, FileLister, IoPathFileLister, FileOpener, Saver."""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from emberdata.datapipes._base import IterDataPipe, functional_datapipe
from emberdata.datapipes.iter._grouping import _check_callable


class StreamWrapper:
    """A file-like object that closes itself when garbage-collected
    (``torch.utils.data.datapipes.utils.common.StreamWrapper``).

    Pipes that open files, archive members or HTTP responses yield their streams wrapped in
    one, so a consumer that drops a stream does not leak the descriptor. Every other attribute
    is the wrapped stream's.
    """

    def __init__(self, file_obj: Any, parent_stream: StreamWrapper | None = None,
                 name: str | None = None) -> None:
        self.file_obj = file_obj
        self.parent_stream = parent_stream
        self.name = name
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "file_obj":
            raise AttributeError(name)
        return getattr(self.file_obj, name)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.file_obj.close()

    def autoclose(self) -> None:
        """Close as soon as the stream has been read to its end (by ``read()`` or iteration)."""
        self._autoclose = True

    def read(self, *args: Any, **kwargs: Any) -> Any:
        data = self.file_obj.read(*args, **kwargs)
        if getattr(self, "_autoclose", False) and not data:
            self.close()
        return data

    def __iter__(self) -> Iterator[Any]:
        yield from self.file_obj
        if getattr(self, "_autoclose", False):
            self.close()

    def __enter__(self) -> StreamWrapper:  # noqa: PYI034 (no typing.Self on 3.10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown nothing is left to tell
            self.close()

    def __repr__(self) -> str:
        label = f" {self.name}" if self.name else ""
        return f"StreamWrapper<{self.file_obj!r}{label}>"

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError(
            f"cannot pickle an open stream ({self!r}); open files in the process that reads them"
        )


def _masks(masks: str | list[str]) -> list[str]:
    if isinstance(masks, str):
        return [masks] if masks else []
    if isinstance(masks, list) and all(isinstance(m, str) for m in masks):
        return [m for m in masks if m]
    raise TypeError(f"masks expected a str or a list of str, but got {masks!r}")


def _match(name: str, masks: list[str]) -> bool:
    return not masks or any(fnmatch.fnmatch(name, mask) for mask in masks)


def _roots(root: str | Sequence[str] | IterDataPipe[str]) -> Iterable[str]:
    return [root] if isinstance(root, (str, os.PathLike)) else root


@functional_datapipe("list_files")
class FileLister(IterDataPipe[str]):
    """Yields the paths of the files under ``root`` whose names match ``masks`` (functional
    name: ``list_files``).

    Args:
        root: a directory or file path, a sequence of them, or a pipe yielding them
        masks: a Unix shell-style pattern or list of patterns (``"*.csv"``); ``""``: every file
        recursive: descend into subdirectories
        abspath: yield absolute paths
        non_deterministic: yield in the file system's order instead of sorted order
        length: the number of paths, if known (``-1``: unknown, no ``len``)

    A root that does not exist raises FileNotFoundError.
    """

    def __init__(
        self,
        root: str | Sequence[str] | IterDataPipe[str] = ".",
        masks: str | list[str] = "",
        *,
        recursive: bool = False,
        abspath: bool = False,
        non_deterministic: bool = False,
        length: int = -1,
    ) -> None:
        if not isinstance(root, (str, os.PathLike, IterDataPipe)) and not (
            isinstance(root, Sequence) and all(isinstance(r, (str, os.PathLike)) for r in root)
        ):
            raise TypeError(
                f"FileLister expected root to be a path, a sequence of paths or an IterDataPipe, "
                f"but got {type(root).__name__}"
            )
        self.datapipe = root
        self.masks = _masks(masks)
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic
        self.length = length

    def __iter__(self) -> Iterator[str]:
        for root in _roots(self.datapipe):
            yield from self._list(os.fspath(root))

    def _list(self, root: str) -> Iterator[str]:
        if os.path.isfile(root):
            if _match(os.path.basename(root), self.masks):
                yield os.path.abspath(root) if self.abspath else root
            return
        if not os.path.isdir(root):
            raise FileNotFoundError(f"FileLister: no such file or directory: {root!r}")
        for dirpath, dirnames, filenames in os.walk(root):
            if not self.non_deterministic:
                dirnames.sort()
                filenames.sort()
            for name in filenames:
                if _match(name, self.masks):
                    path = os.path.join(dirpath, name)
                    yield os.path.abspath(path) if self.abspath else path
            if not self.recursive:
                break

    def __len__(self) -> int:
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length


class LocalPathManager:
    """The local file system behind the iopath ``PathManager`` interface (``ls``, ``isfile``,
    ``isdir``, ``open``), used by IoPathFileLister when iopath is not installed."""

    def ls(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def open(self, path: str, mode: str = "r", **kwargs: Any) -> Any:
        return open(path, mode, **kwargs)

    def register_handler(self, handler: Any, allow_override: bool = False) -> None:
        raise RuntimeError(
            "IoPathFileLister: registering a path handler needs iopath (pip install iopath)"
        )


def _default_path_manager() -> Any:
    try:
        from iopath.common.file_io import PathManager
    except ImportError:
        return LocalPathManager()
    return PathManager()


@functional_datapipe("list_files_by_iopath")
class IoPathFileLister(IterDataPipe[str]):
    """Lists the files in ``root`` through an iopath ``PathManager`` (functional name:
    ``list_files_by_iopath``): local paths, and any scheme a registered ``handler`` serves.

    A root that is a file is yielded itself; a directory's entries (not recursive) whose names
    match ``masks`` are yielded joined to it. Without ``pathmgr``, iopath's PathManager is used
    when iopath is installed, and :class:`LocalPathManager` otherwise (torchdata requires
    iopath).
    """

    def __init__(
        self,
        root: str | Sequence[str] | IterDataPipe[str],
        masks: str | list[str] = "",
        *,
        pathmgr: Any = None,
        handler: Any = None,
    ) -> None:
        self.datapipe = root
        self.masks = _masks(masks)
        self.pathmgr = _default_path_manager() if pathmgr is None else pathmgr
        if handler is not None:
            self.register_handler(handler, allow_override=True)

    def register_handler(self, handler: Any, allow_override: bool = False) -> None:
        self.pathmgr.register_handler(handler, allow_override=allow_override)

    def __iter__(self) -> Iterator[str]:
        for root in _roots(self.datapipe):
            root = os.fspath(root)
            if self.pathmgr.isfile(root):
                yield root
            elif self.pathmgr.isdir(root):
                for name in self.pathmgr.ls(root):
                    if _match(name, self.masks):
                        yield os.path.join(root, name)
            else:
                raise FileNotFoundError(f"IoPathFileLister: no such file or directory: {root!r}")


@functional_datapipe("open_files")
class FileOpener(IterDataPipe[tuple[str, StreamWrapper]]):
    """Opens each path and yields ``(path, stream)`` (functional name: ``open_files``).

    Args:
        datapipe: a pipe of paths
        mode: ``"r"``/``"t"``/``"rt"`` (text) or ``"b"``/``"rb"`` (binary)
        encoding: the text encoding (text mode only)
        length: the number of paths, if known (``-1``: the source's length)
    """

    def __init__(
        self,
        datapipe: IterDataPipe[str],
        mode: str = "r",
        encoding: str | None = None,
        length: int = -1,
    ) -> None:
        if mode not in ("b", "t", "rb", "rt", "r"):
            raise ValueError(f"Invalid mode {mode!r}: FileOpener reads with b, t, rb, rt or r")
        mode = {"b": "rb", "t": "rt"}.get(mode, mode)
        if "b" in mode and encoding is not None:
            raise ValueError("binary mode doesn't take an encoding argument")
        self.datapipe = datapipe
        self.mode = mode
        self.encoding = encoding
        self.length = length

    def __iter__(self) -> Iterator[tuple[str, StreamWrapper]]:
        for path in self.datapipe:
            stream = open(path, self.mode, encoding=self.encoding)  # noqa: SIM115
            yield path, StreamWrapper(stream, name=os.fspath(path))

    def __len__(self) -> int:
        if self.length != -1:
            return self.length
        return self._source_len(self.datapipe)


@functional_datapipe("save_to_disk")
class Saver(IterDataPipe[str]):
    """Writes each ``(metadata, data)`` to ``filepath_fn(metadata)`` (or to ``metadata``
    itself) and yields the path (functional name: ``save_to_disk``). Missing directories are
    created; ``mode`` is ``"w"`` for str data and ``"wb"`` for bytes."""

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[Any, str | bytes]],
        mode: str = "w",
        filepath_fn: Callable[[Any], str] | None = None,
    ) -> None:
        if mode not in ("w", "wb", "a", "ab", "x", "xb"):
            raise ValueError(f"Invalid mode {mode!r}: Saver writes with w, wb, a, ab, x or xb")
        if filepath_fn is not None:
            _check_callable(self, "filepath_fn", filepath_fn)
        self.source_datapipe = source_datapipe
        self.mode = mode
        self.filepath_fn = filepath_fn

    def __iter__(self) -> Iterator[str]:
        for metadata, data in self.source_datapipe:
            path = metadata if self.filepath_fn is None else self.filepath_fn(metadata)
            path = os.fspath(path)
            directory = os.path.dirname(path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            with open(path, self.mode) as f:
                f.write(data)
            yield path

    def __len__(self) -> int:
        return self._source_len(self.source_datapipe)
