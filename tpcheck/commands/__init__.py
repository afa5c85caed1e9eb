"""The sub-commands (``tpcheck.cli.COMMANDS`` names their modules).

Importing this package imports click and pathlib without what a lint never uses
(``tpcheck.deferred`` says how): click's ``inspect`` and ``threading``, pathlib's
``urllib.parse``.
"""

from __future__ import annotations

import _thread

from tpcheck.deferred import calling_real, import_deferring, real


def cleandoc(doc: str) -> str:
    """``inspect.cleandoc``, which click applies to every option's help as the option is built:
    on one line without a tab it is ``lstrip``; anything else goes to the real one."""
    if "\n" not in doc and "\t" not in doc:
        return doc.lstrip()
    done: str = real("inspect").cleandoc(doc)
    return done


import_deferring("click", {"inspect": {"cleandoc": cleandoc},
                           "threading": {"local": _thread._local}})  # what threading.local is
import_deferring("pathlib", {"urllib.parse": {
    "quote_from_bytes": calling_real("urllib.parse", "quote_from_bytes")}})
