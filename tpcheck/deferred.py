"""Importing a library without the standard modules it imports for features tpcheck's command
line never reaches.

A one-file lint is a process of its own (pre-commit, an editor's save hook), so what its imports
cost is most of what it costs. Some imports serve a feature that run does not use: click imports
``inspect`` (``ast``, ``dis``, ``tokenize``: ~36 million instructions, as much as a bare
interpreter's start) for help pages and progress bars, and ``threading`` for one class;
``pathlib`` imports ``urllib.parse`` (and with it ``ipaddress``) for ``Path.as_uri``. While such
a library imports, each of those modules is a ``DeferredModule`` in ``sys.modules``, carrying the
few names the library takes at import time (``from threading import local``): an exact stand-in
(``_thread._local`` is what ``threading.local`` is) or a function that calls the real one. The
library keeps the stand-in, whose first other attribute lookup imports the real module; the
stand-in leaves ``sys.modules`` as soon as the library is imported, so every later import gets
the real module. ``tests/test_imports.py`` checks what a lint loads and that the deferred
features still work.
"""

from __future__ import annotations

import sys
from types import ModuleType

TYPE_CHECKING = False  # typing's constant without importing typing (readers import this too)
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any


class DeferredModule(ModuleType):
    """A module that imports its real namesake on the first attribute it is asked for."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system's probes (__path__, __spec__ ...)
            raise AttributeError(name)
        return getattr(real(self.__name__, self), name)


def _load(name: str) -> ModuleType:
    """Each module that may be deferred, imported by a plain import statement (no dynamic
    import in the package: tests/test_hostile.py)."""
    if name == "inspect":
        import inspect

        return inspect
    if name == "threading":
        import threading

        return threading
    if name == "urllib.parse":
        import urllib.parse

        return urllib.parse
    if name == "platform":
        import platform

        return platform
    if name == "datetime":
        import datetime

        return datetime
    if name == "gettext":
        import gettext

        return gettext
    if name == "base64":
        import base64

        return base64
    if name == "binascii":
        import binascii

        return binascii
    raise ImportError(f"{name} is not a module tpcheck defers")


DEFERRABLE = ("inspect", "threading", "urllib.parse", "platform", "datetime",
              "gettext", "base64", "binascii")

# Windows' own modules, which ``ntpath`` (imported by ``pathlib`` on every system) tries six
# times: each failed import searches every folder of sys.path (~2 million instructions in all).
# Off Windows they cannot exist, so while pathlib imports each is None in ``sys.modules``, the
# import system's documented "not found": the import fails at once, as it would have failed.
ABSENT = ("nt", "_winapi") if sys.platform != "win32" else ()


def real(name: str, stand_in: ModuleType | None = None) -> ModuleType:
    """The module ``name`` itself, imported now if only a stand-in was there."""
    if isinstance(sys.modules.get(name), DeferredModule):
        del sys.modules[name]
    found = _load(name)
    if stand_in is not None:  # its later lookups skip __getattr__
        stand_in.__dict__.update({k: v for k, v in found.__dict__.items()
                                  if k not in stand_in.__dict__})
    return found


def calling_real(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` when first called and calls its ``name``."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(real(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def platform_system() -> str:
    """``platform.system()`` without importing ``platform`` (~9 million instructions, for
    ``uuid``'s one call at import): ``os.uname()``'s system name, which ``platform.uname`` keeps
    as it is except when empty or one it renames (Microsoft, OpenVMS); those go to the real
    one."""
    import os

    name = os.uname().sysname if hasattr(os, "uname") else ""
    if name in ("", "Microsoft", "OpenVMS"):
        found: str = real("platform").system()
        return found
    return name


_CATALOGS: list[bool] = []  # whether Python's own locale folder exists, looked at once


def _translated() -> bool:
    """Whether ``gettext`` could translate click's messages: only when the real module is
    loaded (someone may have bound a domain) or Python's ``share/locale`` folder exists, where
    ``gettext.find`` looks for a catalog. Otherwise every lookup ends in ``NullTranslations``,
    which returns the message as given."""
    if type(sys.modules.get("gettext")) is ModuleType:
        return True
    if not _CATALOGS:
        import os

        _CATALOGS.append(os.path.isdir(os.path.join(sys.base_prefix, "share", "locale")))
    return _CATALOGS[0]


def gettext(message: str) -> str:
    """``gettext.gettext`` (click wraps every message and help text in it, ~40 us a call, and
    the module imports ``locale``): the message itself when no catalog can exist."""
    if _translated():
        done: str = real("gettext").gettext(message)
        return done
    return message


def ngettext(singular: str, plural: str, n: int) -> str:
    """``gettext.ngettext``, likewise: ``NullTranslations``' choice when no catalog can exist."""
    if _translated():
        done: str = real("gettext").ngettext(singular, plural, n)
        return done
    return singular if n == 1 else plural


def import_deferring(library: str, load: Callable[[], object],
                     stand_ins: dict[str, dict[str, object]],
                     absent: tuple[str, ...] = ()) -> None:
    """Import ``library`` (``load`` does, with an import statement) while each module named in
    ``stand_ins`` (one of DEFERRABLE, not imported yet) is a stand-in carrying those names, and
    each named in ``absent`` (one of ABSENT here, not imported yet) is None in ``sys.modules``
    (see ABSENT)."""
    if library in sys.modules:
        return
    placed = []
    marked = [name for name in absent if name not in sys.modules]
    for name in marked:
        if name not in ABSENT:
            raise ValueError(f"{name} is not a module tpcheck marks absent")
        sys.modules[name] = None  # type: ignore[assignment]
    for name, names in stand_ins.items():
        if name not in DEFERRABLE:
            raise ValueError(f"{name} is not a module tpcheck defers")
        if name not in sys.modules:
            module = DeferredModule(name)
            module.__dict__.update(names)
            sys.modules[name] = module
            placed.append(module)
    try:
        load()
    finally:
        for module in placed:
            if sys.modules.get(module.__name__) is module:
                del sys.modules[module.__name__]
        for name in marked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


class LazyPattern:
    """``re.compile(source, flags)``, compiled on the first attribute asked for. A module's
    patterns are compiled when it is imported, each ~0.1-1.3 million instructions in ``re``'s
    pure-Python compiler, and a one-file lint imports ~50 of them, most for inputs it is not
    reading (a Makefile's assignments, a Dockerfile's instructions). After the first use the
    real pattern's methods sit in the instance, so later calls cost what a pattern's do."""

    def __init__(self, source: str, flags: int = 0,
                 compile_now: Callable[[str, int], re.Pattern[str]] | None = None) -> None:
        self._source = source
        self._flags = flags
        self._compile = compile_now  # re.compile itself, when it is a stand-in meanwhile

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        compile_now = self._compile
        if compile_now is None:
            import re

            compile_now = re.compile
        p = compile_now(self._source, self._flags)
        self.__dict__.update({k: getattr(p, k) for k in _PATTERN_ATTRS})
        return getattr(p, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self._source!r}, {self._flags})"


_PATTERN_ATTRS = ("match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer",
                  "scanner", "pattern", "flags", "groups", "groupindex")


def lazy_re(source: str, flags: int = 0) -> re.Pattern[str]:
    """A module-level pattern that costs nothing until it is used (``LazyPattern``)."""
    lazy: Any = LazyPattern(source, flags)
    return lazy  # type: ignore[no-any-return]


def import_deferring_patterns(library: str, load: Callable[[], object]) -> None:
    """Import ``library`` (``load`` does, with an import statement) while ``re.compile`` hands
    out LazyPatterns, compiled (by the real ``re.compile``) on their first use: for a library
    whose module-level patterns serve only paths a lint never takes (``tpcheck.jsonlib``)."""
    if library in sys.modules:
        return
    import re

    compile_now = re.compile

    def later(source: str, flags: int = 0) -> Any:
        return LazyPattern(source, flags, compile_now)

    re.compile = later  # type: ignore[assignment]
    try:
        load()
    finally:
        re.compile = compile_now
