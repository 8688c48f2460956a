"""ember.utils._packages: the core-range check that pure-Python domain packages run at import."""

import pytest

import ember
from ember.utils._packages import check_supported_core, in_range, release_tuple


@pytest.mark.parametrize("version, want", [("0.2", (0, 2, 0)), ("v1.2.3", (1, 2, 3)), ("0.2.1.dev3", (0, 2, 1)),
                                           ("0.2.1+cpu", (0, 2, 1)), ("3", (3, 0, 0))])
def test_release_tuple(version, want):
    assert release_tuple(version) == want


def test_release_tuple_refuses_text():
    with pytest.raises(ValueError, match="cannot read a release number from version 'abc'"):
        release_tuple("abc")


@pytest.mark.parametrize("version, ok", [("0.2.0", False), ("0.2.1", True), ("0.2.9.dev1", True), ("0.3.0", False),
                                         ("junk", False)])
def test_in_range(version, ok):
    assert in_range(version, (">=0.2.1", "<0.3")) is ok


def test_check_supported_core_names_both_versions(monkeypatch):
    monkeypatch.setattr(ember, "__version__", "0.1.0")
    with pytest.raises(ImportError, match=r"embersomething 9.9 supports ember >=0.2,<0.3, but ember 0.1.0 is "
                                          r"installed. Install a matching pair"):
        check_supported_core("embersomething", "9.9", (">=0.2", "<0.3"))
    monkeypatch.setattr(ember, "__version__", "0.2.5")
    check_supported_core("embersomething", "9.9", (">=0.2", "<0.3"))
