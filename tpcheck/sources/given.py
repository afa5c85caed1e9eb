"""What the running command was given, for a reader that must know whether the run reads a
file on its own: a kustomization named alone (``tpcheck base/kustomization.yaml``) renders the
resources beside it, which a folder run reads on their own (issue 33). A leaf module: the linter
sets it without importing any reader."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tpcheck.sources.files import RUN_MEMO

# (files, folders), absolute; None: a reader called on its own (the editor, a test)
_GIVEN: ContextVar[tuple[frozenset[str], tuple[str, ...]] | None] = ContextVar(
    "tpcheck_given_paths", default=None)


def given_paths() -> tuple[frozenset[str], tuple[str, ...]] | None:
    """(files, folders) the run was given, or None outside a run."""
    return _GIVEN.get()


@contextmanager
def run_over(paths: Iterable[str]) -> Iterator[None]:
    """Within the block, readers know which files the run reads on its own (the outermost
    command's paths win: a linter run per settings file inside it sees the whole run)."""
    if _GIVEN.get() is not None:
        yield
        return
    files: set[str] = set()
    dirs: list[str] = []
    for p in paths:
        if p == "-":
            continue
        a = os.path.abspath(p)
        if os.path.isdir(a):
            dirs.append(a)
        else:
            files.add(a)
    token = _GIVEN.set((frozenset(files), tuple(dirs)))
    memo = RUN_MEMO.set({})  # the run's file-system answers (files.folder_stamp)
    try:
        yield
    finally:
        RUN_MEMO.reset(memo)
        _GIVEN.reset(token)
