"""Reading URLs: HttpReader and OnlineReader (HTTP(S), and Google Drive share links)."""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Iterator
from http.cookiejar import CookieJar
from typing import Any

from emberdata.datapipes._base import IterDataPipe, functional_datapipe
from emberdata.datapipes.iter._fileio import StreamWrapper

_GDRIVE_DOWNLOAD = "https://drive.google.com/uc?export=download&id={id}"


def _check_options(owner: object, timeout: object, kwargs: dict[str, Any]) -> dict[str, str]:
    name = type(owner).__name__
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        raise ValueError(f"{name} expected a positive timeout in seconds or None, got {timeout!r}")
    unknown = set(kwargs) - {"headers"}
    if unknown:
        raise TypeError(f"{name} got unexpected keyword arguments {sorted(unknown)}; it takes "
                        "`headers` (a dict of request headers)")
    headers = kwargs.get("headers") or {}
    if not isinstance(headers, dict):
        raise TypeError(f"{name} expected a dict of headers, got {type(headers).__name__}")
    return headers


def _open(owner: object, url: str, timeout: float | None, headers: dict[str, str],
          opener: urllib.request.OpenerDirector | None = None) -> Any:
    """The response of GET ``url``, or a clear ConnectionError / TimeoutError / RuntimeError."""
    name = type(owner).__name__
    scheme = urllib.parse.urlparse(url).scheme
    if scheme not in ("http", "https"):
        raise ValueError(f"{name} reads http:// and https:// URLs, but got {url!r}")
    request = urllib.request.Request(url, headers=headers)
    open_ = opener.open if opener is not None else urllib.request.urlopen
    try:
        return open_(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        raise RuntimeError(
            f"{name} could not get {url!r}: HTTP {error.code} {error.reason}"
        ) from error
    except TimeoutError as error:
        raise TimeoutError(f"{name} timed out after {timeout} s getting {url!r}") from error
    except urllib.error.URLError as error:
        if isinstance(error.reason, (TimeoutError, socket.timeout)):
            raise TimeoutError(f"{name} timed out after {timeout} s getting {url!r}") from error
        raise ConnectionError(f"{name} could not connect to {url!r}: {error.reason}") from error


class _UrlReader(IterDataPipe[tuple[str, StreamWrapper]]):
    _waits_with_timeout = True  # dataloader2.adapter.CacheTimeout sets `timeout`

    def __init__(
        self,
        source_datapipe: IterDataPipe[str],
        timeout: float | None,
        skip_on_error: bool,
        kwargs: dict[str, Any],
    ) -> None:
        self.headers = _check_options(self, timeout, kwargs)
        self.source_datapipe = source_datapipe
        self.timeout = timeout
        self.skip_on_error = skip_on_error

    def _get(self, url: str) -> Any:
        return _open(self, url, self.timeout, self.headers)

    def __iter__(self) -> Iterator[tuple[str, StreamWrapper]]:
        for url in self.source_datapipe:
            try:
                response = self._get(url)
            except (RuntimeError, ConnectionError, TimeoutError) as error:
                if not self.skip_on_error:
                    raise
                warnings.warn(f"{error}; skipped", UserWarning, stacklevel=2)
                continue
            yield url, StreamWrapper(response, name=url)

    def __len__(self) -> int:
        return self._source_len(self.source_datapipe)


@functional_datapipe("read_from_http")
class HttpReader(_UrlReader):
    """GETs each HTTP(S) URL and yields ``(url, stream)`` (functional name:
    ``read_from_http``).

    Args:
        source_datapipe: a pipe of URLs
        timeout: seconds to wait for the connection and for each read (None: no limit)
        skip_on_error: warn and skip a URL that fails instead of raising
        headers: request headers (the one keyword torchdata's ``requests`` options reduce to)

    A failure raises RuntimeError (an HTTP error status), TimeoutError or ConnectionError,
    naming the URL. Other schemes (``file://``, ``ftp://``) raise ValueError.
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[str],
        timeout: float | None = None,
        skip_on_error: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(source_datapipe, timeout, skip_on_error, kwargs)


def gdrive_file_id(url: str) -> str | None:
    """The file id of a Google Drive share link (``.../file/d/<id>/...`` or ``...?id=<id>``),
    or None for other URLs."""
    parts = urllib.parse.urlparse(url)
    if parts.hostname not in ("drive.google.com", "docs.google.com"):
        return None
    match = re.search(r"/d/([\w-]+)", parts.path)
    if match:
        return match.group(1)
    ids = urllib.parse.parse_qs(parts.query).get("id")
    return ids[0] if ids else None


@functional_datapipe("read_from_remote")
class OnlineReader(_UrlReader):
    """Like :class:`HttpReader`, and a Google Drive share link is fetched as its file
    (functional name: ``read_from_remote``): the link becomes a direct download, and the
    "file too large to scan" confirmation page is answered with its token."""

    def __init__(
        self,
        source_datapipe: IterDataPipe[str],
        *,
        timeout: float | None = None,
        skip_on_error: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(source_datapipe, timeout, skip_on_error, kwargs)

    def _get(self, url: str) -> Any:
        file_id = gdrive_file_id(url)
        if file_id is None:
            return _open(self, url, self.timeout, self.headers)
        # Drive answers large files with an HTML page holding a confirm token (in a cookie or in
        # the page); a second request with it gets the file.
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        download = _GDRIVE_DOWNLOAD.format(id=file_id)
        response = _open(self, download, self.timeout, self.headers, opener)
        if "text/html" not in response.headers.get("Content-Type", ""):
            return response
        page = response.read(1 << 20).decode("utf-8", "replace")
        response.close()
        token = re.search(r"confirm=([\w-]+)", page)
        if token is None:
            raise RuntimeError(
                f"OnlineReader could not get Google Drive file {file_id!r}: it answered with a "
                "page and no download confirmation (quota exceeded or not shared?)"
            )
        return _open(self, f"{download}&confirm={token.group(1)}", self.timeout, self.headers,
                     opener)
