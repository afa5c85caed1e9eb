"""The sub-commands (``tpcheck.cli.COMMANDS`` names their modules).

Importing this package imports click and pathlib without what a lint never uses
(``tpcheck.deferred`` says how): click's ``inspect`` and ``threading``, pathlib's
``urllib.parse``, and on Linux or macOS pathlib's failing imports of Windows' own modules.
"""

from __future__ import annotations

import _datetime  # type: ignore[import-not-found]  # (no stub: the C half of datetime)
import _thread

from tpcheck.deferred import (
    ABSENT,
    calling_real,
    gettext,
    import_deferring,
    import_deferring_patterns,
    ngettext,
    platform_system,
    real,
)


def cleandoc(doc: str) -> str:
    """``inspect.cleandoc``, which click applies to every option's help as the option is built:
    on one line without a tab it is ``lstrip``; anything else goes to the real one."""
    if "\n" not in doc and "\t" not in doc:
        return doc.lstrip()
    done: str = real("inspect").cleandoc(doc)
    return done


def _click() -> None:
    # its one module-level pattern (click._compat's ANSI escapes) compiled on first use
    import_deferring_patterns("click", _import_click)


def _import_click() -> None:
    import click  # noqa: F401 - imported for what it leaves in sys.modules


def _pathlib() -> None:
    import pathlib  # noqa: F401


import_deferring("click", _click, {
    "inspect": {"cleandoc": cleandoc},
    "threading": {"local": _thread._local},  # what threading.local is
    "platform": {"system": platform_system},  # for uuid (click.UUID): one call at import
    "datetime": {"datetime": _datetime.datetime},  # the class datetime.py re-exports
    "gettext": {"gettext": gettext, "ngettext": ngettext},  # help texts, messages
})
import_deferring("pathlib", _pathlib, {"urllib.parse": {
    "quote_from_bytes": calling_real("urllib.parse", "quote_from_bytes")}}, absent=ABSENT)
