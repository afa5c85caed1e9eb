"""PyYAML, imported once for every reader, without compiling the regular expression that costs
more than the rest of the package (nor the next costliest).

``yaml.reader.Reader.NON_PRINTABLE`` is compiled when PyYAML is imported: a character class
over the whole of Unicode that ``re``'s pure-Python compiler expands code point by code point,
about 57 million instructions (1.5 times a bare ``python -c pass``) in every process. Only the
pure-Python reader uses it (the constructor's timestamp pattern, ~8 ms more, only a timestamp
value does), and tpcheck composes with libyaml's ``CSafeLoader`` when PyYAML has
it. So each pattern is handed to PyYAML as a stand-in that compiles it on first use (the
fallback loader then pays, once). The stand-in goes through ``re``'s own cache, which
``re.compile`` consults first; when this Python's cache does not answer as expected (a probe
checks), nothing is seeded and the import is PyYAML's ordinary one.

While PyYAML imports, ``datetime`` is a stand-in too (``tpcheck.deferred``).

Every tpcheck module takes ``yaml`` from here (``from tpcheck.sources.pyyaml import yaml``).
"""

from __future__ import annotations

import _datetime  # type: ignore[import-not-found]  # (no stub: the C half of datetime)
import re
import sys

from tpcheck.deferred import import_deferring

TYPE_CHECKING = False  # typing's constant without importing typing (the library lint path)
if TYPE_CHECKING:
    from typing import Any

# yaml/reader.py's and yaml/constructor.py's patterns, character for character (another PyYAML's
# are simply not found in the cache and compiled as usual): the reader's NON_PRINTABLE, and the
# constructor's timestamp_regexp (re.X, 8 ms), which only constructing a timestamp value uses.
NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"
TIMESTAMP = r'''^(?P<year>[0-9][0-9][0-9][0-9])
                -(?P<month>[0-9][0-9]?)
                -(?P<day>[0-9][0-9]?)
                (?:(?:[Tt]|[ \t]+)
                (?P<hour>[0-9][0-9]?)
                :(?P<minute>[0-9][0-9])
                :(?P<second>[0-9][0-9])
                (?:\.(?P<fraction>[0-9]*))?
                (?:[ \t]*(?P<tz>Z|(?P<tz_sign>[-+])(?P<tz_hour>[0-9][0-9]?)
                (?::(?P<tz_minute>[0-9][0-9]))?))?)?$'''
DEFERRED = ((NON_PRINTABLE, 0), (TIMESTAMP, int(re.X)))


class DeferredPattern:
    """Stands in for ``re.compile(source)`` until an attribute is asked for."""

    def __init__(self, source: str, flags: int) -> None:
        self.source = source
        self.flags = flags
        self.pattern: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self.pattern is None:
            _forget(self)
            self.pattern = re.compile(self.source, self.flags)
        return getattr(self.pattern, name)


def _caches() -> list[dict[Any, Any]]:
    return [c for c in (getattr(re, "_cache", None), getattr(re, "_cache2", None))
            if isinstance(c, dict)]


def _forget(value: object) -> None:
    """Drop ``value`` from re's caches (``re.compile`` may have moved it between them)."""
    for cache in _caches():
        for key in [k for k, v in cache.items() if v is value]:
            del cache[key]


def _seeded(stand_ins: list[DeferredPattern]) -> bool:
    """Put each stand-in where ``re.compile(source, flags)`` looks first, if this Python's re
    does."""
    caches = _caches()
    if not caches:
        return False
    probe = "(?:tpcheck's probe of re's cache)"
    marker = object()
    caches[0][(str, probe, 0)] = marker
    try:
        works = re.compile(probe) is marker
    except Exception:
        works = False
    _forget(marker)
    if works:
        for p in stand_ins:
            caches[0][(str, p.source, p.flags)] = p
    return works


_STAND_INS = [DeferredPattern(source, flags) for source, flags in DEFERRED]
_SEEDED = "yaml" not in sys.modules and _seeded(_STAND_INS)



def _yaml() -> None:
    import yaml  # noqa: F401 - imported for what it leaves in sys.modules


# PyYAML's representer registers datetime.date and datetime.datetime at import; the module
# datetime.py itself (~6.6 million instructions, pure Python before its C accelerator replaces
# it) only serves a timestamp value, which composing never builds. Its classes are _datetime's.
# base64 (and struct) serves a !!binary value alone, inside the functions that build one.
import_deferring("yaml", _yaml, {"datetime": {"date": _datetime.date,
                                              "datetime": _datetime.datetime},
                                 "base64": {}})

import yaml  # noqa: E402 - after the seeding, which is the point
from yaml.reader import ReaderError  # noqa: E402

if _SEEDED:
    for _p in _STAND_INS:
        _forget(_p)  # later re.compile calls of that text get a real pattern

__all__ = ["ReaderError", "yaml"]
