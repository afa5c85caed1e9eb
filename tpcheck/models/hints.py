"""Hub ids guessed from what else a file says, for a model reference that does not resolve.

A manifest often names the model only as a local folder (``/models/Qwen3-32B``) that exists on
the serving host, or as an expression (``$(MODEL_PATH)``) beside ``--served-model-name org/name``.
These helpers turn such hints into a hub id; the Resolver then looks that id up as usual and
says which hint it used, so a wrong guess is visible. Matching is exact after normalisation
(case, the hub's ``Meta-Llama-3*`` → ``Llama-3*`` rename), never a substring: a folder that does
not spell a catalog name, or spells one held by several orgs, gives no hint.
"""

from __future__ import annotations

from functools import lru_cache

from tpcheck.deferred import lazy_re
from tpcheck.models import catalog

_SEPARATORS = lazy_re(r"[/\\]+")
_CACHE_PREFIX = "models--"  # huggingface_hub's cache folder: models--{org}--{name}
_REPO_PART = lazy_re(r"[A-Za-z0-9][\w.\-]*")


def _norm(name: str) -> str:
    """Lower-case; ``Meta-Llama-3.1-8B`` and ``Llama-3.1-8B`` are one model (the hub renamed the
    3.1 repos and some folders keep the old name, others the new)."""
    n = name.strip().lower()
    return n[len("meta-"):] if n.startswith("meta-llama-3") else n


@lru_cache(maxsize=1)
def _by_name() -> dict[str, frozenset[str]]:
    """Normalised name part (after ``org/``) → the catalog ids spelling it. Read at run time, so
    every catalog folder and alias counts."""
    names: dict[str, set[str]] = {}
    for model_id in catalog.known_ids():
        names.setdefault(_norm(model_id.rpartition("/")[2]), set()).add(model_id)
    return {k: frozenset(v) for k, v in names.items()}


def _by_folder_name(name: str) -> str | None:
    """The one catalog id whose name part is ``name``; None when none or several orgs hold it."""
    ids = _by_name().get(_norm(name), frozenset())
    orgs = {i.rpartition("/")[0].lower() for i in ids}
    return min(ids) if len(orgs) == 1 else None


def folder_hint(ref: str) -> tuple[str, str] | None:
    """(hub id, the folder text that named it) for a local path, tried in this order: a Hugging
    Face cache folder ``models--org--name`` anywhere in the path; a last component
    ``org--name`` that the catalog holds as ``org/name``; the last two components as an
    ``org/name`` the catalog holds; the last component as a catalog name part."""
    parts = [p for p in _SEPARATORS.split(ref.strip()) if p and p not in (".", "..", "~")]
    for part in reversed(parts):
        if part.startswith(_CACHE_PREFIX):
            org, sep, name = part[len(_CACHE_PREFIX):].partition("--")
            if sep and _REPO_PART.fullmatch(org) and _REPO_PART.fullmatch(name):
                return f"{org}/{name}", part
    if parts and "--" in parts[-1]:
        # ``org--name``: the layout of `tpcheck models pull` and of many bucket mirrors; only a
        # catalog id counts (``my--finetune`` is no hub id anyone could check)
        org, _, name = parts[-1].partition("--")
        entry = catalog.find(f"{org}/{name}") if org and name else None
        if entry is not None:
            return entry.model_id, parts[-1]
    if len(parts) >= 2:
        two = f"{parts[-2]}/{parts[-1]}"
        entry = catalog.find(two)
        if entry is not None:
            return entry.model_id, two
    if parts:
        found = _by_folder_name(parts[-1])
        if found is not None:
            return found, parts[-1]
    return None


def served_hint(served_name: str | None) -> str | None:
    """``--served-model-name`` when it is an ``org/name`` hub id (a bare alias such as ``qwen``
    names nothing the hub could answer for)."""
    if not served_name:
        return None
    name = served_name.strip()
    org, sep, rest = name.partition("/")
    if sep and _REPO_PART.fullmatch(org) and _REPO_PART.fullmatch(rest) and "--" not in name:
        return name
    return None
