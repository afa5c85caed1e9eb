"""The newest release of each engine tpcheck has read, and the lenient version parser.

A leaf module: the option tables (``flags``), the defaults and the ``Release`` object all read
the newest release from here, the one place it is written.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The newest release of each engine whose option table, defaults and memory rules were read.
NEWEST: dict[str, str] = {"vllm": "0.33.0", "sglang": "0.5.23"}


_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@lru_cache(maxsize=1024)
def parse_version(v: str | None) -> tuple[int, ...] | None:
    """``v0.6.4``, ``0.9.1.dev705+g01``, ``vllm/vllm-openai:v0.8.5`` → (0, 6, 4); junk → None.

    Kept per string (up to 1,024): the release tables ask the same few versions ~40 times a
    deployment."""
    if not v:
        return None
    m = _VERSION.search(v)
    return None if not m else tuple(int(x) for x in m.groups() if x is not None)
