"""ember.hub: downloads from a local HTTP server on 127.0.0.1 into a cache, verified and atomic."""

import hashlib
import http.server
import io
import os
import pickle
import threading

import numpy as np
import pytest

import ember
from ember import hub


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list = []
    lie_about_length = False

    def do_GET(self):
        _Handler.requests.append(self.path)
        if _Handler.lie_about_length:  # announces more bytes than it sends: a cut-off download
            body = b"x" * 10
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    _Handler.requests, _Handler.lie_about_length = [], False
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: _Handler(*a, directory=str(served)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _checkpoint(folder, stem, state):
    buf = io.BytesIO()
    ember.save(state, buf)
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    name = f"{stem}-{digest[:10]}.pt"
    (folder / name).write_bytes(data)
    return name, digest


def test_downloads_once_into_the_cache_and_loads(server, tmp_path):
    served, base = server
    state = {"weight": ember.randn(3, 2), "bias": ember.arange(3.0)}
    name, _ = _checkpoint(served, "tiny", state)
    cache = tmp_path / "cache"
    first = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), check_hash=True, progress=False)
    np.testing.assert_array_equal(first["weight"].numpy(), state["weight"].numpy())
    assert (cache / name).read_bytes() == (served / name).read_bytes()
    assert os.listdir(cache) == [name]  # no temporary file left behind
    again = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), check_hash=True, progress=False)
    np.testing.assert_array_equal(again["bias"].numpy(), state["bias"].numpy())
    assert _Handler.requests == [f"/{name}"]  # the second call read the cache


def test_default_directory_follows_ember_home(server, tmp_path, monkeypatch):
    served, base = server
    name, _ = _checkpoint(served, "home", {"x": ember.ones(2)})
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "ember_home"))
    monkeypatch.setattr(hub, "_hub_dir", None)
    assert hub.get_dir() == str(tmp_path / "ember_home" / "hub")
    hub.load_state_dict_from_url(f"{base}/{name}", progress=False, file_name="renamed.pt")
    assert (tmp_path / "ember_home" / "hub" / "checkpoints" / "renamed.pt").exists()
    hub.set_dir(tmp_path / "elsewhere")
    assert hub.get_dir() == str(tmp_path / "elsewhere")


def test_a_wrong_hash_raises_and_leaves_no_file(server, tmp_path):
    served, base = server
    name, digest = _checkpoint(served, "good", {"x": ember.ones(2)})
    wrong = f"bad-{'0' * 10 if digest[:10] != '0' * 10 else '1' * 10}.pt"
    (served / wrong).write_bytes((served / name).read_bytes())
    cache = tmp_path / "cache"
    with pytest.raises(RuntimeError, match=rf'invalid hash value \(expected "{wrong[4:14]}", got "{digest}"\)'):
        hub.load_state_dict_from_url(f"{base}/{wrong}", model_dir=str(cache), check_hash=True, progress=False)
    assert os.listdir(cache) == []
    with pytest.raises(ValueError, match=r"check_hash=True needs a file name like"):
        hub.load_state_dict_from_url(f"{base}/plain.pt", model_dir=str(cache), check_hash=True)
    with pytest.raises(ValueError, match=r"cannot name a cache file"):
        hub.load_state_dict_from_url(f"{base}/", model_dir=str(cache))


def test_a_cached_file_is_hashed_again_on_every_checked_load(server, tmp_path):
    served, base = server
    state = {"weight": ember.ones(2)}
    name, digest = _checkpoint(served, "cached", state)
    cache = tmp_path / "cache"
    hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), check_hash=True, progress=False)
    # someone swaps the cached file for another valid checkpoint
    other = io.BytesIO()
    ember.save({"weight": ember.full((2,), 666.0)}, other)
    (cache / name).write_bytes(other.getvalue())
    got = hashlib.sha256(other.getvalue()).hexdigest()
    with pytest.raises(RuntimeError, match=rf'invalid hash value \(expected "{digest[:10]}", got "{got}"\) for the '
                                           rf"cached file .*{name}: it changed after it was downloaded"):
        hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), check_hash=True, progress=False)
    assert _Handler.requests == [f"/{name}"]  # no silent re-download either
    # without a hash to check the cache is trusted, as torch.hub does
    assert hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), progress=False)["weight"].tolist() == \
        [666.0, 666.0]
    (cache / name).unlink()
    again = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), check_hash=True, progress=False)
    assert again["weight"].tolist() == [1.0, 1.0]


def test_hub_loads_are_weights_only(server, tmp_path):
    served, base = server
    buf = io.BytesIO()
    ember.save(ember.nn.Linear(2, 2), buf)
    (served / "model.pt").write_bytes(buf.getvalue())
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL ember\.nn\.modules\.linear\.Linear"):
        hub.load_state_dict_from_url(f"{base}/model.pt", model_dir=str(tmp_path / "c"), progress=False)
    model = hub.load_state_dict_from_url(f"{base}/model.pt", model_dir=str(tmp_path / "c"), progress=False,
                                         weights_only=False)
    assert isinstance(model, ember.nn.Linear)


def test_a_cut_off_download_raises_and_leaves_no_file(server, tmp_path):
    _, base = server
    _Handler.lie_about_length = True
    (tmp_path / "dl").mkdir()
    target = tmp_path / "dl" / "out.bin"
    with pytest.raises(RuntimeError, match=r"download of .*/anything stopped after 10 of 100 bytes"):
        hub.download_url_to_file(f"{base}/anything", target, progress=False)
    assert os.listdir(tmp_path / "dl") == []


def test_file_urls_and_the_progress_bar(tmp_path, monkeypatch):
    source = tmp_path / "src"
    source.mkdir()
    name, _ = _checkpoint(source, "local", {"x": ember.arange(4)})
    url = (source / name).as_uri()

    class _Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    out = hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "cache"), check_hash=True)
    assert out["x"].tolist() == [0, 1, 2, 3]
    text = terminal.getvalue()
    assert f'Downloading: "{url}"' in text and "100.0% |" + "#" * 30 + "|" in text

    quiet = io.StringIO()  # not a terminal: no bar even with progress=True
    monkeypatch.setattr("sys.stderr", quiet)
    hub.download_url_to_file(url, tmp_path / "copy", progress=True)
    assert "#" not in quiet.getvalue()
    assert (tmp_path / "copy").read_bytes() == (source / name).read_bytes()
