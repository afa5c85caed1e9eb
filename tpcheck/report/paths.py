"""Where a report says a file is: relative to the checkout, as code scanning and GitHub's
annotations resolve paths. One function for SARIF and the workflow commands, so the two outputs
of one run name a file the same way (``deploy/llama.sh``, never ``./deploy/llama.sh``)."""

from __future__ import annotations

import os
from pathlib import Path


def source_root(start: Path) -> Path:
    """The checkout that code scanning resolves URIs against: the enclosing git work tree, else
    ``start`` itself (the action runs in the checkout's root)."""
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


def relative_to_root(path: str, root: Path) -> str | None:
    """``path`` as a POSIX path relative to ``root``, or None when it lies outside it."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return None


def repository_path(path: str, root: Path) -> str:
    """The name an annotation gives ``path``: repository-relative inside ``root``, the
    absolute path outside it; ``-`` (stdin) as it is."""
    if path == "-":
        return path
    rel = relative_to_root(path, root)
    return rel if rel is not None else os.path.abspath(path)


def source_label(where: str) -> str:
    """A config's source as a report names it: ``catalog Qwen/Qwen3-32B`` for the bundled
    catalog (not the site-packages path it was read from), a path relative to the working
    folder when it lies inside it, else the location as resolved; ``where`` is
    ``"SOURCE: LOCATION"`` as the resolver says it."""
    source, sep, location = where.partition(": ")
    if not sep:
        return where
    # "PATH (model taken from ...)": the hint after the path is text, not part of it (a
    # `hf://org/name` in it must not be read as a path and lose a slash)
    location, paren, hint = location.partition(" (")
    tail = paren + hint
    if source == "catalog":
        folder = Path(location).parent.name
        if "--" in folder:
            return "catalog " + folder.replace("--", "/", 1) + tail
    rel = relative_to_root(location, Path.cwd())
    return f"{source}: {rel}{tail}" if rel is not None else where
