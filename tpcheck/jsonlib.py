"""json, imported once for the lint path's modules without compiling the four patterns only its
pure-Python halves use: ``py_make_scanner``'s number, ``py_encode_basestring``'s and
``py_encode_basestring_ascii``'s escapes, and an unused UTF-8 test (~1.4 million instructions
of a one-file lint). The C accelerator ``_json`` does that work; without it each pattern is
compiled on its first use (``tpcheck.deferred.import_deferring_patterns``). The two patterns
json's own functions bind at import (whitespace, string chunks) are compiled then, as before.

The modules a lint imports take json from here: ``from tpcheck.jsonlib import json``.
"""

from __future__ import annotations

from tpcheck.deferred import import_deferring_patterns


def _json() -> None:
    import json  # noqa: F401 - imported for what it leaves in sys.modules


import_deferring_patterns("json", _json)

import json  # noqa: E402 - after the deferring, which is the point

__all__ = ["json"]
