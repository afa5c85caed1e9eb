"""PyYAML, imported once for every reader, without compiling the regular expressions it
compiles at import.

``yaml.reader.Reader.NON_PRINTABLE`` is compiled when PyYAML is imported: a character class
over the whole of Unicode that ``re``'s pure-Python compiler expands code point by code point,
about 57 million instructions (1.5 times a bare ``python -c pass``) in every process. Only the
pure-Python reader uses it, and tpcheck composes with libyaml's ``CSafeLoader`` when PyYAML has
it. The constructor's timestamp pattern (~8 ms) serves a timestamp value alone, and the
resolver's eight implicit-tag patterns (~9 million instructions) serve tag resolution, which
tpcheck's node loader turns off (``tpcheck.sources.yamlctx``). So while PyYAML imports,
``re.compile`` hands out stand-ins that compile their pattern on first use (a loader that
resolves or reads in Python then pays, once); ``re`` is itself again before any other code runs.

While PyYAML imports, ``datetime`` is a stand-in too (``tpcheck.deferred``).

Every tpcheck module takes ``yaml`` from here (``from tpcheck.sources.pyyaml import yaml``).
"""

from __future__ import annotations

import _datetime  # type: ignore[import-not-found]  # (no stub: the C half of datetime)
import re

from tpcheck.deferred import import_deferring

TYPE_CHECKING = False  # typing's constant without importing typing (the library lint path)
if TYPE_CHECKING:
    from typing import Any

# yaml/reader.py's pattern, the costliest (tests compile it afresh: a real pattern then)
NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"


class DeferredPattern:
    """Stands in for ``re.compile(source, flags)`` until an attribute is asked for."""

    def __init__(self, source: Any, flags: int = 0) -> None:
        self.source = source
        self.flags = flags
        self.pattern: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if self.pattern is None:
            self.pattern = re.compile(self.source, self.flags)
        return getattr(self.pattern, name)


def _yaml() -> None:
    compile_now = re.compile
    re.compile = DeferredPattern  # type: ignore[assignment]
    try:
        import yaml  # noqa: F401 - imported for what it leaves in sys.modules
    finally:
        re.compile = compile_now


# PyYAML's representer registers datetime.date and datetime.datetime at import; the module
# datetime.py itself (~6.6 million instructions, pure Python before its C accelerator replaces
# it) only serves a timestamp value, which composing never builds. Its classes are _datetime's.
# base64 (and struct) serves a !!binary value alone, inside the functions that build one, and
# binascii (an extension module to load, ~0.6 million instructions) its error, caught there.
import_deferring("yaml", _yaml, {"datetime": {"date": _datetime.date,
                                              "datetime": _datetime.datetime},
                                 "base64": {}, "binascii": {}})

import yaml  # noqa: E402 - after the deferring, which is the point
from yaml.reader import ReaderError  # noqa: E402

__all__ = ["ReaderError", "yaml"]
