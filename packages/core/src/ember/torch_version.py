"""ember.__version__ as a comparable string (torch.torch_version.TorchVersion).

It is a ``str``, so code that treats the version as text keeps working, and it compares by
PEP 440 order against another version string or a tuple of numbers::

    ember.__version__ >= (0, 2)        ember.__version__ < "1.0.0a1"
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion"]

# A PEP 440 public version with an optional local label (the "+cpu" of "2.2.0+cpu").
_PATTERN = re.compile(
    r"v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|alpha|b|beta|c|rc|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?P<post>-(?P<post_n1>\d+)|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?P<dev>[-_.]?dev[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?",
    re.IGNORECASE,
)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
_INF = float("inf")


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


def _key(text: str) -> tuple:
    """A tuple whose order is PEP 440's order of versions."""
    m = _PATTERN.fullmatch(text.strip())
    if m is None:
        raise InvalidVersion(f"Invalid version: {text!r}")
    release = [int(x) for x in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:  # 1.0 == 1.0.0
        release.pop()
    has_post, has_dev = m["post"] is not None, m["dev"] is not None
    # A dev release sorts before its pre-releases; a release without a pre-release after them.
    if m["pre_l"]:
        pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif has_dev and not has_post:
        pre = ("", -_INF)
    else:
        pre = ("~", _INF)  # "~" sorts after the letters a, b, rc
    post_key = int(m["post_n1"] or m["post_n2"] or 0) if has_post else -_INF
    dev_key = int(m["dev_n"] or 0) if has_dev else _INF
    local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower())
                  for p in re.split(r"[-_.]", m["local"])) if m["local"] else ()
    return int(m["epoch"] or 0), tuple(release), pre, post_key, dev_key, local


class TorchVersion(str):
    """A version string that also compares as a version, against a string or a tuple of numbers
    (``(0, 2)`` means ``"0.2"``). A string that is not a version compares as text."""

    __slots__ = ()

    def _other_key(self, other: Any) -> tuple:
        if isinstance(other, str):
            return _key(other)
        if isinstance(other, Iterable):
            return _key(".".join(str(item) for item in other))
        raise InvalidVersion(other)

    def _compare(self, other: Any, method: str) -> bool:
        try:
            mine, theirs = _key(self), self._other_key(other)
        except InvalidVersion:
            return getattr(str, method)(self, other)  # as PyTorch: a non-version compares as text
        return getattr(mine, method)(theirs)

    def __eq__(self, other: object) -> bool:
        return self._compare(other, "__eq__")

    def __ne__(self, other: object) -> bool:
        return not self._compare(other, "__eq__")

    def __lt__(self, other: object) -> bool:
        return self._compare(other, "__lt__")

    def __le__(self, other: object) -> bool:
        return self._compare(other, "__le__")

    def __gt__(self, other: object) -> bool:
        return self._compare(other, "__gt__")

    def __ge__(self, other: object) -> bool:
        return self._compare(other, "__ge__")

    __hash__ = str.__hash__


from ._C import __version__ as _internal_version  # noqa: E402

__version__ = TorchVersion(_internal_version)
