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


@lru_cache(maxsize=1)
def _index() -> dict[str, CatalogEntry]:
    index: dict[str, CatalogEntry] = {}
    if not CATALOG_DIR.is_dir():
        return index
    for folder in sorted(CATALOG_DIR.iterdir()):
        if not (folder / "config.json").is_file():
            continue
        model_id = folder.name.replace("--", "/", 1)
        entry = CatalogEntry(model_id, folder)
        index[model_id.lower()] = entry
        aliases = folder / "ALIASES"
        if aliases.is_file():
            for line in aliases.read_text(encoding="utf-8").splitlines():
                alias = line.split("#", 1)[0].strip()
                if alias:
                    index.setdefault(alias.lower(), CatalogEntry(alias, folder))
    return index


@lru_cache(maxsize=1)
def _folders() -> dict[str, str]:
    """Lower-cased hub id -> folder name, from one directory listing (no per-folder stat)."""
    try:
        names = os.listdir(CATALOG_DIR)
    except OSError:
        return {}
    return {n.replace("--", "/", 1).lower(): n for n in names if "--" in n}


def find(model_id: str) -> CatalogEntry | None:
    """The entry for ``model_id`` (exact hub id or a listed alias, case-insensitive)."""
    key = model_id.strip().lower()
    name = _folders().get(key)
    if name is not None and (CATALOG_DIR / name / "config.json").is_file():
        # The common case, a canonical id, without reading every folder's ALIASES.
        return CatalogEntry(name.replace("--", "/", 1), CATALOG_DIR / name)
    return _index().get(key)


def all_ids() -> list[str]:
    """Canonical ids (folder names), without aliases."""
    return sorted({e.folder.name.replace("--", "/", 1) for e in _index().values()})
