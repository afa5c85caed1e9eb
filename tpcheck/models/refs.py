"""What a written model reference is: a hub id, a path, or an expression left to fill in."""

from __future__ import annotations

import os
from collections.abc import Mapping

from tpcheck.deferred import lazy_re
from tpcheck.models import hints

_TRUE = {"1", "ON", "YES", "TRUE"}
# $(VAR) (k8s), ${VAR} / $VAR (shell, compose), {{ ... }} / {% ... %} (helm, jinja)
_EXPRESSION = lazy_re(r"\$\(|\$\{|\$[A-Za-z_]|\{\{|\{%")
# Hub ids: "name" or "org/name"; letters, digits, "-", "_", "."; no "--" or ".." (the hub's rule).
_REPO_ID = lazy_re(r"[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?")


def is_offline_env(environ: Mapping[str, str] | None = None) -> bool:
    """The same switch huggingface_hub reads, read now rather than at its import."""
    env = os.environ if environ is None else environ
    value = env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in _TRUE


def is_expression(model: str) -> bool:
    """True for references a template engine or shell was meant to fill in."""
    return not model.strip() or _EXPRESSION.search(model) is not None


def is_repo_id(model: str) -> bool:
    return (
        len(model) <= 96
        and _REPO_ID.fullmatch(model) is not None
        and "--" not in model
        and ".." not in model
    )


def looks_like_path(ref: str) -> bool:
    return ref.startswith(("/", ".", "~", "\\")) or ref.endswith(".json") or not is_repo_id(ref)


def file_hint(value: str, origin: str) -> list[tuple[str, str]]:
    """(hub id, how it was found) for one hint a file gives: a hub id as it stands, else the
    folder names of a path (``s3://bucket/models/Qwen3-8B``), as for ``--model``."""
    ref = value.strip()
    if not ref:
        return []
    if "/" not in ref and not is_expression(ref):
        # a bare name (a label): the one catalog id whose name part it spells exactly, as a
        # folder's name would; else the name as written (the hub has a few ids with no org)
        named = hints.folder_hint(ref)
        return [(named[0] if named is not None else ref, f"model taken from {origin}")]
    if not looks_like_path(ref):
        return [(ref, f"model taken from {origin}")]
    # an expression earlier in the path (s3://${bucket}/...) does not hide the folder's name
    folder = hints.folder_hint(ref.split("://", 1)[-1])
    if folder is None:
        return []
    return [(folder[0], f"model taken from the folder name `{folder[1]}` in {origin}")]
