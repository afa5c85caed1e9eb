"""What each engine release accepts, defaults and refuses; here, the newest release of each
engine tpcheck has read and the lenient version parser.

The option tables (``flags``), the defaults and the ``Release`` object all read the newest
release from here, the one place it is written (every engines module imports its package
anyway, so this costs no module of its own).
"""

from __future__ import annotations

from functools import lru_cache

from tpcheck.deferred import lazy_re

# The newest release of each engine whose option table, defaults and memory rules were read.
NEWEST: dict[str, str] = {"vllm": "0.33.0", "sglang": "0.5.23"}


_VERSION = lazy_re(r"(\d+)\.(\d+)(?:\.(\d+))?")  # compiled for a version a release is not


@lru_cache(maxsize=1024)
def parse_version(v: str | None) -> tuple[int, ...] | None:
    """``v0.6.4``, ``0.9.1.dev705+g01``, ``vllm/vllm-openai:v0.8.5`` → (0, 6, 4); junk → None.

    Kept per string (up to 1,024): the release tables ask the same few versions ~40 times a
    deployment."""
    if not v:
        return None
    parts = (v[1:] if v[0] in "vV" else v).split(".")
    if len(parts) > 1 and all(p.isascii() and p.isdigit() for p in parts):
        return tuple(int(p) for p in parts[:3])  # 0.8.5, v0.33.0: the pattern's first match
    m = _VERSION.search(v)
    return None if not m else tuple(int(x) for x in m.groups() if x is not None)
