"""Where ../shared is: beside the checkout (CI's layout), else the workplace's copy."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = next((p for p in (REPO.parent / "shared", Path("/work/shared")) if p.is_dir()),
              REPO.parent / "shared")
CORPUS = SHARED / "corpus" / "real"
SARIF_SCHEMA = SHARED / "schemas" / "sarif-schema-2.1.0.json"


@contextlib.contextmanager
def chdir(folder: Path) -> Iterator[None]:
    """``contextlib.chdir`` (3.11+) for the 3.10 the project supports."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def said(finding: dict[str, object]) -> str:
    """A JSON finding's headline and evidence as one text (what a search for a clause that
    moved from the headline into the evidence must find)."""
    parts = [str(finding["message"])]
    for key in ("evidence", "alternatives", "assumptions"):
        items = finding.get(key) or []
        assert isinstance(items, list)
        prefix = {"alternatives": "instead: ", "assumptions": "assumes: "}.get(key, "")
        parts += [prefix + str(i["text"]) for i in items if i.get("kind", "note") != "formula"]
    return "\n".join(parts)
