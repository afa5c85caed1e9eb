"""Every file tpcheck writes into a project goes through here (``models pull`` today, a
``--fix`` tomorrow): the write stays inside the project.

A checked-out tree is not trusted: a pull request can commit ``.tpcheck`` or a pulled model's
``config.json`` as a symlink to ``~/.bashrc``, and a write that follows it overwrites a file far
from the project (issue 28 item 1). So a path is walked from the project root one component at a
time, each folder opened with ``O_NOFOLLOW`` relative to the one above (no component is looked
up by name twice, so no link swapped in between is followed either); a link anywhere below the
root, or a folder that is not one, is refused with one line naming it. The bytes go to a new
temporary file in the real folder (``O_CREAT | O_EXCL | O_NOFOLLOW``), are fsynced, and replace
the target by a rename, which replaces a name and never writes through it: a reader
sees the old file or the new one, never half of it.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
# dir_fd is POSIX; elsewhere each component is checked with lstat before it is used.
# (os.rename with dir fds is renameat(2): on POSIX it replaces the target as os.replace does.)
_FD_RELATIVE = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd


class WriteRefused(Exception):
    """A write that would leave the project or could not be made: one line naming the path."""


def _parts(rel: str | PurePosixPath) -> tuple[str, ...]:
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise WriteRefused(f"{rel}: not a path inside the project")
    return parts


def _refuse_kind(path: Path, st: os.stat_result, want_dir: bool) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise WriteRefused(f"{path}: is a symbolic link; tpcheck writes only inside the project "
                           "and never through a link (remove it and run again)")
    if want_dir and not stat.S_ISDIR(st.st_mode):
        raise WriteRefused(f"{path}: is not a folder; nothing written")
    if not want_dir and not stat.S_ISREG(st.st_mode):
        raise WriteRefused(f"{path}: is not a regular file; nothing written")


def _lstat(path: Path, name: str, dir_fd: int | None) -> os.stat_result | None:
    try:
        if dir_fd is not None:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return os.lstat(path)
    except FileNotFoundError:
        return None


def check(root: Path, rel: str | PurePosixPath) -> None:
    """Raise WriteRefused when writing ``root/rel`` would pass through a link, or a component
    is of the wrong kind; missing components are fine (they would be created). Writes nothing:
    the check a command makes for every path before it fetches or writes anything."""
    parts = _parts(rel)
    here = root
    for i, name in enumerate(parts):
        here = here / name
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return
        except OSError as e:
            raise WriteRefused(f"{here}: {e.strerror or e}") from None
        _refuse_kind(here, st, want_dir=i < len(parts) - 1)


@contextmanager
def _folder(root: Path, parts: Sequence[str], create: bool) -> Iterator[int | None]:
    """An fd on ``root/parts...`` reached without following links (None where dir_fd is not
    supported: then each component was lstat-checked), the folders made when ``create``."""
    if not _FD_RELATIVE:
        here = root
        for name in parts:
            here = here / name
            st = _lstat(here, name, None)
            if st is None and create:
                os.mkdir(here)
                st = os.lstat(here)
            if st is None:
                raise FileNotFoundError(errno.ENOENT, "no such folder", str(here))
            _refuse_kind(here, st, want_dir=True)
        yield None
        return
    fd = os.open(root, _DIR_FLAGS)
    try:
        here = root
        for name in parts:
            here = here / name
            try:
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o777, dir_fd=fd)
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    st = _lstat(here, name, fd)
                    if st is not None:
                        _refuse_kind(here, st, want_dir=True)
                raise
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def write_bytes(root: Path, rel: str | PurePosixPath, data: bytes) -> None:
    """``root/rel`` holds ``data``: folders made as needed, through a temporary file in the
    real folder, fsynced, renamed over the old file (whose permission bits it keeps).
    Raises WriteRefused (one line naming the path) and writes nothing through a link."""
    parts = _parts(rel)
    target = root.joinpath(*parts)
    try:
        with _folder(root, parts[:-1], create=True) as dfd:
            _replace(target, parts[-1], data, dfd)
    except WriteRefused:
        raise
    except OSError as e:
        raise WriteRefused(f"{target}: cannot write: {e.strerror or e}") from None


def _replace(target: Path, name: str, data: bytes, dfd: int | None) -> None:
    old = _lstat(target, name, dfd)
    if old is not None:
        _refuse_kind(target, old, want_dir=False)
    mode = stat.S_IMODE(old.st_mode) if old is not None else None
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = (os.open(tmp, flags, 0o666, dir_fd=dfd) if dfd is not None
          else os.open(target.with_name(tmp), flags, 0o666))
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if dfd is not None:
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            os.fsync(dfd)
        else:
            os.replace(target.with_name(tmp), target)
    except BaseException:
        try:
            if dfd is not None:
                os.unlink(tmp, dir_fd=dfd)
            else:
                os.unlink(target.with_name(tmp))
        except OSError:
            pass
        raise


def remove(root: Path, rel: str | PurePosixPath) -> None:
    """Remove ``root/rel`` if it is there (a link is removed itself, never its target); a link
    on the way to it is refused like a write."""
    parts = _parts(rel)
    target = root.joinpath(*parts)
    try:
        with _folder(root, parts[:-1], create=False) as dfd:
            if dfd is not None:
                os.unlink(parts[-1], dir_fd=dfd)
            else:
                os.unlink(target)
    except FileNotFoundError:
        return
    except WriteRefused:
        raise
    except OSError as e:
        raise WriteRefused(f"{target}: cannot remove: {e.strerror or e}") from None
