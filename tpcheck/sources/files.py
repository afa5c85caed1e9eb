"""The one reader of every file tpcheck opens: inputs (through ``read_path``) and side files
(settings, topology, a chart's values.yaml, .gitignore, kustomize patches and bases, model
configs, SARIF's re-read). Regular files only, or a pipe where the caller allows one; opened
without blocking; a size cap counted while reading. Kept apart from the package's ``__init__``
so the readers that need it (helm, kustomize, ignores) import it without an import cycle.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from typing import TypeVar

    from tpcheck.sources.base import ReadResult

    _T = TypeVar("_T")


class NotRegular(OSError):
    """A FIFO, device, socket or folder where a file's bytes were wanted."""


class TooBig(OSError):
    """Past the cap: ``size`` from stat when it said so, else the bytes read before stopping."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


# Edited texts a ``--fix`` checks before it writes anything: absolute path -> bytes, read in
# place of the file's (``overlay``). Empty except inside ``tpcheck.fix``'s verification.
_OVERLAY: dict[str, bytes] = {}


@contextmanager
def overlay(texts: Mapping[str, bytes]) -> Iterator[None]:
    """Within the block every read of these files (inputs and side files alike) returns the
    given bytes: a fix is linted as the files would be after it, with nothing written."""
    saved = dict(_OVERLAY)
    _OVERLAY.update({os.path.abspath(k): v for k, v in texts.items()})
    try:
        yield
    finally:
        _OVERLAY.clear()
        _OVERLAY.update(saved)


def overlaid(path: str) -> bool:
    """Whether ``path`` is read from the overlay (a cache keyed on the file's stat must not
    answer for it)."""
    return bool(_OVERLAY) and os.path.abspath(path) in _OVERLAY


_BOM = b"\xef\xbb\xbf"


def decode_utf8_sig(data: bytes) -> str:
    """``data.decode("utf-8-sig")``: UTF-8, one leading byte-order mark dropped. Without a BOM
    that codec is plain UTF-8, which needs no codec lookup: the first "utf-8-sig" decode of a
    process imports ``encodings.utf_8_sig`` (~1 million instructions of a one-file lint). With
    one, the codec itself decodes (its error offsets count from after the BOM)."""
    if data[:3] == _BOM:
        return data.decode("utf-8-sig")
    return data.decode("utf-8")


# Bytes asked of the kernel at a time past what stat reported: a file that reports size 0
# (procfs) or grows while read costs chunks, not one allocation of the cap.
_CHUNK = 1 << 20


def read_upto(path: str, max_bytes: int, *, pipe_ok: bool) -> bytes:
    """At most ``max_bytes`` + 1 bytes of ``path``; NotRegular, TooBig or another OSError.

    Non-blocking open, then fstat on the open file (no stat-then-open race): opening a FIFO for
    reading waits for a writer, which hung the run forever on a FIFO named x.yaml (issue 14
    item 6) and on a chart's values.yaml or a .gitignore (issue 28 item 6). Only regular files
    are read, and a pipe where ``pipe_ok``. The cap is counted while reading, so /dev/zero
    behind a link, a file that grows, or one whose size stat does not know stop at the cap; a
    regular file that stat already puts past the cap is refused without reading."""
    if _OVERLAY:
        hit = _OVERLAY.get(os.path.abspath(path))
        if hit is not None:
            return hit[:max_bytes + 1]
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if pipe_ok and stat.S_ISFIFO(st.st_mode):
            os.set_blocking(fd, True)  # a writer that is there is waited for; none reads as EOF
        elif not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"not a regular file ({file_type(st.st_mode)})")
        elif st.st_size > max_bytes:
            raise TooBig(f"{st.st_size:,} bytes, over the {max_bytes:,}-byte limit",
                         st.st_size)
        want = max_bytes + 1
        # the first read asks for what stat reported (+1 to see a file that grew), not the cap
        size_hint = st.st_size + 1 if stat.S_ISREG(st.st_mode) and st.st_size else _CHUNK
        first = os.read(fd, min(want, size_hint))
        if stat.S_ISREG(st.st_mode) and st.st_size and len(first) < size_hint:
            return first  # short of size + 1: a regular file at its end, one read in all
        more = os.read(fd, min(want - len(first), _CHUNK)) if first and len(first) < want else b""
        if not more:
            return first  # the usual case: the whole file in one read, no copy
        buf = bytearray(first + more)
        while len(buf) < want:
            chunk = os.read(fd, min(want - len(buf), _CHUNK))
            if not chunk:
                break
            buf += chunk
        return bytes(buf)
    finally:
        os.close(fd)


def read_capped(path: str, max_bytes: int, *, pipe_ok: bool = False) -> bytes:
    """The one reader of every file tpcheck opens besides the inputs (which ``read_path`` reads
    the same way): settings, topology, values.yaml, .gitignore, kustomize patches and bases,
    model configs, SARIF's re-read. Its bytes, or an OSError whose text says why not: not a
    regular file (NotRegular: a FIFO, /dev/zero, a socket), over ``max_bytes`` (TooBig,
    counted while reading), or the system's error. A pipe is read only where ``pipe_ok`` (a path
    the user named: ``--topology <(ssh node nvidia-smi topo -m)``); opened without blocking, so
    a named FIFO nobody writes reads as empty instead of hanging."""
    data = read_upto(path, max_bytes, pipe_ok=pipe_ok)
    if len(data) > max_bytes:
        raise TooBig(f"over the {max_bytes:,}-byte limit", len(data))
    return data


def file_type(mode: int) -> str:
    """What a non-regular file is, in the words ``ls -l`` users know."""
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISDIR, "a folder"))
    return next((name for test, name in kinds if test(mode)), "a special file")


# Answers about the file system that hold for one run, which reads files that do not change
# under it (``given.run_over`` sets it); None outside a run, where each question is asked afresh
# (the editor between two lints).
RUN_MEMO: ContextVar[dict[object, object] | None] = ContextVar("tpcheck_run_memo", default=None)


def per_run(key: tuple[object, ...], answer: Callable[[], _T]) -> _T:
    """``answer()``, asked once per ``key`` within a run (RUN_MEMO); outside one, every time."""
    memo = RUN_MEMO.get()
    if memo is None:
        return answer()
    if key not in memo:
        memo[key] = answer()
    return memo[key]  # type: ignore[return-value]


def folder_stamp(folder: str, limit: int, also: frozenset[str] = frozenset()
                 ) -> tuple[tuple[str, int, int], ...]:
    """A folder's YAML files (and the names in ``also``) with their mtime and size, the first
    ``limit`` by name: the key of a folder index that a change to any of them renews. Within
    a run, once per folder: each KServe or LLMInferenceService file asks it, and scanning and
    sorting a folder of 100,000 manifests for each of them made a run's time grow with the
    square of the folder (issue 30)."""
    return per_run(("folder_stamp", folder, limit, also),
                   lambda: _folder_stamp(folder, limit, also))


def _folder_stamp(folder: str, limit: int, also: frozenset[str]
                  ) -> tuple[tuple[str, int, int], ...]:
    try:
        entries = sorted(os.scandir(folder or "."), key=lambda e: e.name)
    except OSError:
        return ()
    out: list[tuple[str, int, int]] = []
    for e in entries:
        if not e.name.endswith((".yaml", ".yml")) and e.name not in also:
            continue
        try:
            if e.is_file():
                st = e.stat()
                out.append((e.name, st.st_mtime_ns, st.st_size))
        except OSError:
            continue
        if len(out) >= limit:
            break
    return tuple(out)


# ---------------------------------------------------------------- kustomize, found
# Whether a YAML file is a kustomization, a patch one names, or a lone patch: questions every
# YAML file asks, answered here (no module of its own: each import costs a one-file lint
# ~0.4 million instructions) without importing the overlay build (``kustomize`` and its
# generators, nodes and patches, ~5 million), which loads only when a kustomization is read,
# one sits beside the file, or the file has a lone patch's look (``may_be_lone_patch``).

NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def is_kustomization(path: str) -> bool:
    return os.path.basename(path) in NAMES


def kustomization_beside(path: str) -> tuple[str, int, int] | None:
    """The kustomization file in ``path``'s folder (its path, mtime and size), if a regular
    file by one of kustomize's names is there: only then can ``path`` be a listed patch.
    Within a run, asked once per folder (``files.RUN_MEMO``): every YAML file asks, and three
    stat calls a file were 2% of reading a 1,000-manifest folder."""
    folder = os.path.dirname(os.path.abspath(path))
    return per_run(("kustomization_beside", folder), lambda: _beside(folder))


def _beside(folder: str) -> tuple[str, int, int] | None:
    for name in NAMES:
        kz = os.path.join(folder, name)
        try:
            st = os.stat(kz)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):  # a folder or a FIFO by that name: nothing to read
            continue
        return kz, st.st_mtime_ns, st.st_size
    return None


def may_be_lone_patch(result: ReadResult) -> bool:
    """Whether ``kustomize.note_lone_patch`` could change ``result``: only a deployment naming
    no image (its model unresolved) in a text without ``image:`` can be a lone patch."""
    text = result.text
    return bool(text) and text is not None and "image:" not in text and any(
        d.image is None and (d.model is None or "$" in d.model) for d in result.deployments)


# ---------------------------------------------------------------- what the run was given
# For a reader that must know whether the run reads a file on its own: a kustomization named
# alone (``tpcheck base/kustomization.yaml``) renders the resources beside it, which a folder
# run reads on their own (issue 33). Here, not in a module of its own: the linter sets it
# without importing any reader, and every module imported costs a one-file lint ~0.4 million
# instructions.

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
