"""What a written model reference is: a hub id, a path, or an expression left to fill in."""

from __future__ import annotations

import os
from collections.abc import Mapping

from tpcheck.models import hints

_TRUE = {"1", "ON", "YES", "TRUE"}
# Both tests below are patterns asked with str methods (the tests hold them equal); compiling
# the two was ~1 million instructions of a one-file lint.
# $(VAR) (k8s), ${VAR} / $VAR (shell, compose), {{ ... }} / {% ... %} (helm, jinja): searched
EXPRESSION = r"\$\(|\$\{|\$[A-Za-z_]|\{\{|\{%"
# Hub ids: "name" or "org/name"; letters, digits, "-", "_", "."; no "--" or ".." (the hub's
# rule): matched in full
REPO_ID = r"[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?"
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_ID_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def is_offline_env(environ: Mapping[str, str] | None = None) -> bool:
    """The same switch huggingface_hub reads, read now rather than at its import."""
    env = os.environ if environ is None else environ
    value = env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in _TRUE


def is_expression(model: str) -> bool:
    """True for references a template engine or shell was meant to fill in."""
    if not model.strip() or "$(" in model or "${" in model or "{{" in model or "{%" in model:
        return True
    i = model.find("$")
    while i >= 0:  # $VAR
        if model[i + 1:i + 2] in _NAME_START:
            return True
        i = model.find("$", i + 1)
    return False


def is_repo_id(model: str) -> bool:
    return (
        len(model) <= 96
        and _is_id(model)
        and "--" not in model
        and ".." not in model
    )


def _is_id(model: str) -> bool:
    """``re.fullmatch(REPO_ID, model)``: one or two ``/``-parts, each an ASCII letter or digit
    and then word characters (``\\w``: ``str.isalnum`` or ``_``), dots and dashes."""
    parts = model.split("/")
    return len(parts) <= 2 and all(
        p[:1] in _ID_START and all(c.isalnum() or c in "_.-" for c in p[1:]) for p in parts)


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
