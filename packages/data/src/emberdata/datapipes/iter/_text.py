"""Parsing streams: LineReader, ParagraphAggregator, CSVParser, CSVDictParser, JsonParser,
RoutedDecoder (with its handlers)."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from emberdata.datapipes._base import IterDataPipe, functional_datapipe
from emberdata.datapipes.iter._grouping import _check_callable, _check_int


def _decoded_lines(stream: Any, decode: bool, encoding: str, errors: str) -> Iterator[str | bytes]:
    for line in stream:
        if decode and isinstance(line, (bytes, bytearray)):
            line = line.decode(encoding, errors)
        yield line


def _strip_newline(line: str | bytes) -> str | bytes:
    if isinstance(line, str):
        return line.rstrip("\r\n")
    return line.rstrip(b"\r\n")


class _TextReader(IterDataPipe[Any]):
    """What the line and CSV readers share: skip_lines, decode, return_path."""

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[str, Any]],
        skip_lines: int,
        decode: bool,
        encoding: str,
        errors: str,
        return_path: bool,
    ) -> None:
        _check_int(self, "skip_lines", skip_lines, 0)
        self.source_datapipe = source_datapipe
        self.skip_lines = skip_lines
        self.decode = decode
        self.encoding = encoding
        self.errors = errors
        self.return_path = return_path

    def _lines(self, stream: Any) -> Iterator[str | bytes]:
        lines = _decoded_lines(stream, self.decode, self.encoding, self.errors)
        for _ in range(self.skip_lines):
            if next(lines, None) is None:
                return
        yield from lines

    def _records(self, stream: Any) -> Iterator[Any]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        for path, stream in self.source_datapipe:
            try:
                for record in self._records(stream):
                    yield (path, record) if self.return_path else record
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()


@functional_datapipe("readlines")
class LineReader(_TextReader):
    """Reads ``(path, stream)`` tuples line by line (functional name: ``readlines``).

    Yields ``(path, line)`` (``line`` alone without ``return_path``), the newline stripped
    unless ``strip_newline=False``, the first ``skip_lines`` lines skipped; ``decode=True``
    turns bytes into str with ``encoding`` and ``errors``. Each stream is closed once read.
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[str, Any]],
        *,
        skip_lines: int = 0,
        strip_newline: bool = True,
        decode: bool = False,
        encoding: str = "utf-8",
        errors: str = "ignore",
        return_path: bool = True,
    ) -> None:
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path)
        self.strip_newline = strip_newline

    def _records(self, stream: Any) -> Iterator[str | bytes]:
        for line in self._lines(stream):
            yield _strip_newline(line) if self.strip_newline else line


def _default_line_join(lines: list[str]) -> str:
    return "\n".join(lines)


@functional_datapipe("lines_to_paragraphs")
class ParagraphAggregator(IterDataPipe[tuple[str, str]]):
    """Joins ``(path, line)`` tuples into ``(path, paragraph)`` (functional name:
    ``lines_to_paragraphs``): a paragraph ends at a blank (or whitespace-only) line or at a
    new path, and its lines are joined by ``joiner`` (``"\\n".join`` by default).

    >>> lines = IterableWrapper([("f", "a"), ("f", "b"), ("f", ""), ("f", "c")])
    >>> list(lines.lines_to_paragraphs())
    [('f', 'a\\nb'), ('f', 'c')]
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[str, str]],
        joiner: Callable[[list[str]], str] = _default_line_join,
    ) -> None:
        _check_callable(self, "joiner", joiner)
        self.source_datapipe = source_datapipe
        self.joiner = joiner

    def __iter__(self) -> Iterator[tuple[str, str]]:
        buffer: list[str] = []
        current = None
        for path, line in self.source_datapipe:
            if path != current:
                if buffer:
                    yield current, self.joiner(buffer)  # type: ignore[misc]
                buffer, current = [], path
            if line.strip():
                buffer.append(line)
            elif buffer:
                yield path, self.joiner(buffer)
                buffer = []
        if buffer:
            yield current, self.joiner(buffer)  # type: ignore[misc]


@functional_datapipe("parse_csv")
class CSVParser(_TextReader):
    """Parses ``(path, stream)`` tuples as CSV and yields each row as a list (functional name:
    ``parse_csv``); ``as_tuple`` gives tuples, ``return_path`` ``(path, row)``.
    ``fmtparams`` go to :func:`csv.reader` (``delimiter``, ``quotechar``, ...).

    >>> import io
    >>> list(IterableWrapper([("f", io.StringIO("a,b\\n1,2\\n"))]).parse_csv(skip_lines=1))
    [['1', '2']]
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[str, Any]],
        *,
        skip_lines: int = 0,
        decode: bool = True,
        encoding: str = "utf-8",
        errors: str = "ignore",
        return_path: bool = False,
        as_tuple: bool = False,
        **fmtparams: Any,
    ) -> None:
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path)
        self.as_tuple = as_tuple
        self.fmtparams = fmtparams
        csv.reader([], **fmtparams)  # bad format parameters fail here, not mid-epoch

    def _records(self, stream: Any) -> Iterator[Any]:
        for row in csv.reader(self._lines(stream), **self.fmtparams):  # type: ignore[arg-type]
            yield tuple(row) if self.as_tuple else row


@functional_datapipe("parse_csv_as_dict")
class CSVDictParser(_TextReader):
    """Parses ``(path, stream)`` tuples as CSV with a header row and yields each row as a dict
    (functional name: ``parse_csv_as_dict``). ``fmtparams`` go to :class:`csv.DictReader`.

    >>> import io
    >>> list(IterableWrapper([("f", io.StringIO("a,b\\n1,2\\n"))]).parse_csv_as_dict())
    [{'a': '1', 'b': '2'}]
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[str, Any]],
        *,
        skip_lines: int = 0,
        decode: bool = True,
        encoding: str = "utf-8",
        errors: str = "ignore",
        return_path: bool = False,
        **fmtparams: Any,
    ) -> None:
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path)
        self.fmtparams = fmtparams
        csv.DictReader([], **fmtparams)

    def _records(self, stream: Any) -> Iterator[dict[str, str]]:
        yield from csv.DictReader(self._lines(stream), **self.fmtparams)  # type: ignore[arg-type]


@functional_datapipe("parse_json_files")
class JsonParser(IterDataPipe[tuple[str, Any]]):
    """Parses each ``(path, stream)`` as one JSON document and yields ``(path, value)``
    (functional name: ``parse_json_files``); ``kwargs`` go to :func:`json.loads`."""

    def __init__(self, source_datapipe: IterDataPipe[tuple[str, Any]], **kwargs: Any) -> None:
        self.source_datapipe = source_datapipe
        self.kwargs = kwargs

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for path, stream in self.source_datapipe:
            try:
                data = stream.read() if hasattr(stream, "read") else stream
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            yield path, json.loads(data, **self.kwargs)

    def __len__(self) -> int:
        return self._source_len(self.source_datapipe)


# --- decoders --------------------------------------------------------------------------------


def extension_extract_fn(pathname: str) -> str:
    """The routing key of a path: its extension, lower-case, without the dot (``"a/b.JSON"``
    gives ``"json"``; ``"a/b.tar.gz"`` gives ``"gz"``)."""
    return os.path.splitext(pathname)[1].lstrip(".").lower()


_TEXT = {"txt", "text", "transcript"}
_INT = {"cls", "cls2", "class", "count", "index", "inx", "id"}
_JSON = {"json", "jsn"}


def basichandlers(extension: str, data: bytes) -> Any:
    """Text (``txt``, ``text``, ``transcript``) to str, ``cls``/``index``/``id``-like to int,
    ``json``/``jsn`` to the parsed value, ``npy`` to a NumPy array (``allow_pickle=False``),
    ``pt``/``pth`` to ``ember.load`` (``weights_only=True``); anything else: None.

    Unlike torchdata's, ``pickle``/``pyd`` are not decoded here: unpickling runs arbitrary code.
    Pass :func:`pickle_handler` to RoutedDecoder for data you trust.
    """
    if extension in _TEXT:
        return data.decode("utf-8")
    if extension in _INT:
        return int(data)
    if extension in _JSON:
        return json.loads(data)
    if extension == "npy":
        import numpy as np

        return np.load(io.BytesIO(data), allow_pickle=False)
    if extension in ("pt", "pth"):
        import ember

        return ember.load(io.BytesIO(data))
    return None


def pickle_handler(extension: str, data: bytes) -> Any:
    """Unpickles ``pickle``/``pyd`` data. Only for trusted data: unpickling runs code."""
    if extension in ("pickle", "pyd"):
        import pickle

        return pickle.loads(data)
    return None


class Decoder:
    """Decodes ``(key, data)`` with the first handler that returns something other than None;
    data no handler takes is returned unchanged."""

    def __init__(self, *handlers: Callable[[str, bytes], Any],
                 key_fn: Callable[[str], str] = extension_extract_fn) -> None:
        for handler in handlers:
            _check_callable(self, "handler", handler)
        _check_callable(self, "key_fn", key_fn)
        self.handlers = list(handlers)
        self.key_fn = key_fn

    def add_handler(self, *handlers: Callable[[str, bytes], Any]) -> None:
        self.handlers = list(handlers) + self.handlers  # the newest are tried first

    def __call__(self, pathname: str, data: Any) -> Any:
        if hasattr(data, "read"):
            stream = data
            try:
                data = stream.read()
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        key = self.key_fn(pathname)
        for handler in self.handlers:
            result = handler(key, data)
            if result is not None:
                return result
        return data


@functional_datapipe("routed_decode")
class RoutedDecoder(IterDataPipe[tuple[str, Any]]):
    """Decodes ``(path, data_or_stream)`` tuples by the path's key (its extension, by
    default) and yields ``(path, decoded)`` (functional name: ``routed_decode``).

    Handlers are ``handler(key, data_bytes)`` functions returning the decoded value, or None to
    pass; the first to answer wins. With no handlers, :func:`basichandlers` is used.
    ``add_handler`` puts more in front.
    """

    def __init__(
        self,
        datapipe: IterDataPipe[tuple[str, Any]],
        *handlers: Callable[[str, bytes], Any],
        key_fn: Callable[[str], str] = extension_extract_fn,
    ) -> None:
        self.datapipe = datapipe
        self.decoder = Decoder(*(handlers or (basichandlers,)), key_fn=key_fn)

    def add_handler(self, *handlers: Callable[[str, bytes], Any]) -> None:
        self.decoder.add_handler(*handlers)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for path, data in self.datapipe:
            yield path, self.decoder(path, data)

    def __len__(self) -> int:
        return self._source_len(self.datapipe)
