"""The bundled offline catalog: config.json files of popular models, keyed by hub id.

Each entry is a folder ``catalog/<org>--<name>/`` holding ``config.json`` and ``SOURCE`` (where the
file was taken from). An optional ``ALIASES`` file lists other hub ids with the same shape, one a
line; aliases are never guessed from a name.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from tpcheck.record import record

CATALOG_DIR = Path(__file__).with_name("catalog")


@record
class CatalogEntry:
    model_id: str
    folder: Path

    @property
    def config_path(self) -> Path:
        return self.folder / "config.json"


def _hub_id(folder_name: str) -> str:
    """``org--name`` → ``org/name``: the one rule from a catalog folder to its hub id."""
    return folder_name.replace("--", "/", 1)


@lru_cache(maxsize=1)
def _folders() -> dict[str, str]:
    """Lower-cased hub id -> folder name, from one directory listing (no per-folder stat)."""
    try:
        names = os.listdir(CATALOG_DIR)
    except OSError:
        return {}
    return {_hub_id(n).lower(): n for n in sorted(names) if "--" in n}


@lru_cache(maxsize=1)
def _index() -> dict[str, CatalogEntry]:
    """Every folder with a config.json under its hub id, which wins over any alias of another
    folder; then the ids each ALIASES file lists."""
    index: dict[str, CatalogEntry] = {}
    for key, name in _folders().items():
        folder = CATALOG_DIR / name
        if not (folder / "config.json").is_file():
            continue
        entry = CatalogEntry(_hub_id(name), folder)
        index[key] = entry
        aliases = folder / "ALIASES"
        if aliases.is_file():
            for line in aliases.read_text(encoding="utf-8").splitlines():
                alias = line.split("#", 1)[0].strip()
                if alias:
                    index.setdefault(alias.lower(), CatalogEntry(alias, folder))
    return index


def find(model_id: str) -> CatalogEntry | None:
    """The entry for ``model_id`` (exact hub id or a listed alias, case-insensitive)."""
    return _find(model_id.strip().lower())


@lru_cache(maxsize=4096)
def _find(key: str) -> CatalogEntry | None:
    """``find`` by its lower-cased id, kept like the listing it reads (``_folders``): the
    bundled catalog does not change under a process, and a run asks it for every model id it
    looks up (a stat and two records each)."""
    name = _folders().get(key)
    if name is not None and (CATALOG_DIR / name / "config.json").is_file():
        # The common case, a canonical id, without reading every folder's ALIASES.
        return CatalogEntry(_hub_id(name), CATALOG_DIR / name)
    return _index().get(key)


def all_ids() -> list[str]:
    """Canonical ids (folder names), without aliases."""
    return sorted({_hub_id(e.folder.name) for e in _index().values()})


def known_ids() -> list[str]:
    """Every id the catalog answers for: canonical ids and the aliases their ALIASES list."""
    return sorted({e.model_id for e in _index().values()})
