"""Which reader a file's name asks for (a Dockerfile, a Makefile), kept apart from the readers.

Every file's kind is decided by these predicates, so they live where deciding costs nothing:
a YAML or shell lint then imports no Dockerfile reader (its patterns, its JSON-array handling).
"""

from __future__ import annotations


def is_dockerfile(name: str) -> bool:
    """``Dockerfile``, ``Dockerfile.cuda``, ``cuda.Dockerfile``, ``Containerfile``."""
    low = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return (low in ("dockerfile", "containerfile") or low.startswith(("dockerfile.",
            "containerfile.")) or low.endswith((".dockerfile", ".containerfile")))


def is_makefile(name: str) -> bool:
    low = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return low in ("makefile", "gnumakefile") or low.endswith(".mk")
