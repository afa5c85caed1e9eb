"""What the running command was given, for a reader that must know whether the run reads a
file on its own: a kustomization named alone (``tpcheck base/kustomization.yaml``) renders the
resources beside it, which a folder run reads on their own (issue 33). A leaf module: the linter
sets it without importing any reader."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# (files, folders), absolute; None: a reader called on its own (the editor, a test)
_GIVEN: ContextVar[tuple[frozenset[str], tuple[str, ...]] | None] = ContextVar(
    "tpcheck_given_paths", default=None)
# answers about the file system that hold for one run (files do not change while it reads
# them); None outside a run, where every question is asked afresh (the editor between lints)
_RUN_MEMO: ContextVar[dict[object, object] | None] = ContextVar("tpcheck_run_memo", default=None)


def given_paths() -> tuple[frozenset[str], tuple[str, ...]] | None:
    """(files, folders) the run was given, or None outside a run."""
    return _GIVEN.get()


def run_memo() -> dict[object, object] | None:
    """The running command's memo of file-system answers, or None outside a run."""
    return _RUN_MEMO.get()


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
    memo = _RUN_MEMO.set({})
    try:
        yield
    finally:
        _RUN_MEMO.reset(memo)
        _GIVEN.reset(token)
