"""HttpReader and OnlineReader against a local HTTP server on 127.0.0.1 (no other network)."""

import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from emberdata.dataloader2.adapter import CacheTimeout
from emberdata.datapipes.iter import HttpReader, IterableWrapper, OnlineReader, _online
from emberdata.datapipes.iter._online import gdrive_file_id


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status, body, content_type="application/octet-stream"):
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left, as the timeout test wants

    def do_GET(self):
        parts = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(parts.query)
        if parts.path == "/data.txt":
            self._send(200, b"hello\nworld\n", "text/plain")
        elif parts.path == "/echo-header":
            self._send(200, self.headers.get("X-Token", "").encode())
        elif parts.path == "/slow":
            time.sleep(1.5)
            self._send(200, b"late")
        elif parts.path == "/uc":  # a Google Drive stand-in: first a confirmation page
            if query.get("confirm") == ["TOKEN42"]:
                self._send(200, b"big file " + query["id"][0].encode())
            else:
                page = b'<html><a href="/uc?export=download&amp;confirm=TOKEN42&amp;id=x">go</a>'
                self._send(200, page, "text/html; charset=utf-8")
        elif parts.path == "/uc-quota":
            self._send(200, b"<html>quota exceeded</html>", "text/html")
        else:
            self._send(404, b"no such thing")


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_http_reader_reads_urls(server):
    dp = IterableWrapper([f"{server}/data.txt"]).read_from_http(timeout=5)
    ((url, stream),) = list(dp)
    assert url.endswith("/data.txt") and stream.read() == b"hello\nworld\n"
    lines = IterableWrapper([f"{server}/data.txt"]).read_from_http().readlines(decode=True)
    assert [line for _, line in lines] == ["hello", "world"]
    headers = HttpReader(IterableWrapper([f"{server}/echo-header"]), headers={"X-Token": "t0k"})
    assert [s.read() for _, s in headers] == [b"t0k"]
    assert len(dp) == 1


def test_http_reader_errors(server):
    with pytest.raises(RuntimeError, match=r"HttpReader could not get '.*/missing': HTTP 404"):
        list(IterableWrapper([f"{server}/missing"]).read_from_http())
    with pytest.raises(TimeoutError, match=r"HttpReader timed out after 0.3 s getting '.*/slow'"):
        list(IterableWrapper([f"{server}/slow"]).read_from_http(timeout=0.3))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(ConnectionError, match="HttpReader could not connect to"):
        list(IterableWrapper([f"http://127.0.0.1:{closed}/x"]).read_from_http(timeout=2))
    with pytest.raises(ValueError, match="HttpReader reads http:// and https:// URLs, but got 'file:///etc/passwd'"):
        list(IterableWrapper(["file:///etc/passwd"]).read_from_http())
    with pytest.raises(ValueError, match="HttpReader expected a positive timeout"):
        HttpReader(IterableWrapper([]), timeout=0)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['verify'\]"):
        HttpReader(IterableWrapper([]), verify=False)


def test_http_reader_skip_on_error(server):
    urls = [f"{server}/missing", f"{server}/data.txt"]
    dp = IterableWrapper(urls).read_from_http(skip_on_error=True)
    with pytest.warns(UserWarning, match="HTTP 404 Not Found; skipped"):
        out = [(u, s.read()) for u, s in dp]
    assert out == [(urls[1], b"hello\nworld\n")]


def test_cache_timeout_adapter_sets_reader_timeouts(server):
    dp = IterableWrapper([f"{server}/slow"]).read_from_http().map(lambda x: x)
    CacheTimeout(0.3)(dp)
    with pytest.raises(TimeoutError, match="timed out after 0.3 s"):
        list(dp)
    with pytest.raises(ValueError, match="CacheTimeout expected a positive timeout"):
        CacheTimeout(-1)


def test_online_reader_http_and_google_drive(server, monkeypatch):
    plain = IterableWrapper([f"{server}/data.txt"]).read_from_remote(timeout=5)
    assert [s.read() for _, s in plain] == [b"hello\nworld\n"]
    monkeypatch.setattr(_online, "_GDRIVE_DOWNLOAD", server + "/uc?export=download&id={id}")
    share = "https://drive.google.com/file/d/FILE123/view?usp=sharing"
    ((url, stream),) = list(OnlineReader(IterableWrapper([share]), timeout=5))
    assert url == share and stream.read() == b"big file FILE123"
    monkeypatch.setattr(_online, "_GDRIVE_DOWNLOAD", server + "/uc-quota?id={id}")
    with pytest.raises(RuntimeError, match="could not get Google Drive file 'FILE123'"):
        list(OnlineReader(IterableWrapper([share]), timeout=5))


def test_gdrive_file_id():
    assert gdrive_file_id("https://drive.google.com/file/d/abc-DEF_1/view") == "abc-DEF_1"
    assert gdrive_file_id("https://drive.google.com/open?id=xyz") == "xyz"
    assert gdrive_file_id("https://example.com/file/d/abc") is None
