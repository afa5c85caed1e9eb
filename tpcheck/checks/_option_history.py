"""What other releases made of an option: the last that took it, when a prefix grew ambiguous."""

from __future__ import annotations

from functools import lru_cache

from tpcheck.engines.flags import (
    Option,
    known_releases,
    load_table,
)


def keywords_of(engine: str, version: str) -> frozenset[str] | None:
    import json

    from tpcheck.engines.flags import OPTIONS_DIR

    key = (engine, version)
    if key not in _KEYWORDS:
        with open(f"{OPTIONS_DIR}/{engine}-{version}.json", encoding="utf-8") as fh:
            kws = json.load(fh).get("keywords")
        _KEYWORDS[key] = frozenset(kws) if kws is not None else None
    return _KEYWORDS[key]


_KEYWORDS: dict[tuple[str, str], frozenset[str] | None] = {}


def last_release_with(engine: str, version: str, name: str, *,
                      keyword: bool) -> tuple[str, Option] | None:
    """The newest release older than ``version`` that accepted ``name`` (exact), if any."""
    from tpcheck.engines.flags import version_key

    older = [r for r in known_releases(engine) if version_key(r) < version_key(version)]
    for rel in reversed(older):
        if keyword:
            kws = keywords_of(engine, rel)
            if kws is not None and name in kws:
                return rel, Option((name,), "str", "EngineArgs" if engine == "vllm" else "")
            continue
        opt = load_table(engine, rel).by_name.get(name)
        if opt is not None:
            return rel, opt
    return None


def older_than_all(engine: str, version: str) -> bool:
    from tpcheck.engines.flags import version_key

    return version_key(version.lstrip("vV")) < version_key(known_releases(engine)[0])


@lru_cache(maxsize=1024)
def next_release(engine: str, version: str) -> str | None:
    """The first known release after ``version`` (kept per version: each pinned deployment's
    option analysis asks it)."""
    from tpcheck.engines.flags import version_key

    newer = [r for r in known_releases(engine) if version_key(r) > version_key(version)]
    return newer[0] if newer else None


def ambiguous_since(engine: str, opt: str, version: str) -> str | None:
    """In which release the prefix stopped naming one option, when an older table knows."""
    from tpcheck.engines.flags import version_key

    older = [r for r in known_releases(engine) if version_key(r) < version_key(version)]
    newer_ambiguous = version
    for rel in reversed(older):
        names = load_table(engine, rel).by_name
        m = [n for n in names if n.startswith(opt)]
        if opt in names or len(m) == 1:
            one = opt if opt in names else m[0]
            return f"it named {one} in {engine} {rel}; ambiguous since {newer_ambiguous}"
        if len(m) > 1:
            newer_ambiguous = rel
    return None


__all__ = ["ambiguous_since", "keywords_of", "last_release_with", "next_release",
           "older_than_all"]
