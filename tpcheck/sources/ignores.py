"""Which files a folder walk skips: git's own answer inside a work tree, the folder's
``.gitignore`` files (read with pathspec) outside one.

Only the folder walk asks; a file named on the command line is always read. Inside a work tree
``git ls-files --cached --others --exclude-standard`` lists what git does not ignore (tracked
files, and untracked ones no ``.gitignore``, ``.git/info/exclude`` or global excludes name), so
negation, anchored patterns and nested ignore files mean exactly what they mean to git. Outside
one (an unpacked tarball, a folder in /tmp) each ``.gitignore`` met on the way down is applied
with git's precedence: the deepest file that has a say decides.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

# Variables that would point git at another repository than the folder's own (a git hook sets
# them); the walk asks about the repository the folder is in.
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


class GitListing:
    """Inside a git work tree: the files ``git ls-files`` lists, and the folders holding them."""

    def __init__(self, files: set[str]) -> None:
        self.files = files
        self.dirs = {f[:i] for f in files for i, c in enumerate(f) if c == "/"}

    def enter(self, folder: str, rel: str) -> str | None:
        """Nothing to read: git has answered for the whole folder."""
        return None

    def keep_dir(self, rel: str) -> bool:
        return rel in self.dirs

    def keep_file(self, rel: str) -> bool:
        return rel in self.files


class GitignoreFiles:
    """Outside a work tree: every ``.gitignore`` met on the way down, the deepest deciding."""

    def __init__(self) -> None:
        self.specs: dict[str, GitIgnoreSpec] = {}  # folder, relative to the walked top -> rules

    def enter(self, folder: str, rel: str) -> str | None:
        """Read ``folder/.gitignore`` (if any) before the folder's entries are judged; the
        reason when one is there but cannot be read (the walk goes on without its rules).

        Read as every side file is: a FIFO hung the walk, a link to /dev/zero ended the run in
        a MemoryError, a sparse 1 GB file took a minute (issue 28 item 6)."""
        from tpcheck.sources.base import MAX_BYTES
        from tpcheck.sources.files import read_capped

        path = os.path.join(folder, ".gitignore")
        try:
            lines = read_capped(path, MAX_BYTES).decode("utf-8", "replace").splitlines()
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
                return None  # none there (or a path too long to name one: the folder says so)
            why = e.strerror or e
            return f"cannot read .gitignore: {why}; its patterns were not applied"
        from pathspec import GitIgnoreSpec

        self.specs[rel] = GitIgnoreSpec.from_lines(lines)
        return None

    def _ignored(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        for i in range(len(parts) - 1, -1, -1):  # the deepest .gitignore first
            spec = self.specs.get("/".join(parts[:i]))
            if spec is None:
                continue
            verdict = spec.check_file("/".join(parts[i:]) + ("/" if is_dir else "")).include
            if verdict is not None:  # True: an ignore pattern matched last; False: a "!" one
                return verdict
        return False

    def keep_dir(self, rel: str) -> bool:
        return not self._ignored(rel, True)

    def keep_file(self, rel: str) -> bool:
        return not self._ignored(rel, False)


def for_folder(top: str) -> GitListing | GitignoreFiles:
    """The rules for walking ``top``: git's listing in a work tree, else the .gitignore files
    (also in a work tree whose .gitignore git itself would hang on or read for seconds: each
    bad one is then one error line from ``GitignoreFiles.enter``)."""
    files = None if _gitignore_git_cannot_read(top) else git_listing(top)
    return GitignoreFiles() if files is None else GitListing(files)


# Folders looked at for a .gitignore git cannot read safely before git is asked; past this
# many (a vendored tree), git is asked anyway.
MAX_PRESCAN_FOLDERS = 2000


def _gitignore_git_cannot_read(top: str) -> bool:
    """Whether a ``.gitignore`` under ``top`` is a FIFO, device or socket, or over the input
    cap: git opens a FIFO .gitignore and waits for a writer forever, and reads a sparse 1 GB
    one whole (seconds). Links are fine (git refuses to follow them). One scandir per folder,
    the entries' own types, no stat except of a .gitignore."""
    from tpcheck.sources.base import MAX_BYTES

    stack, seen = [top], 0
    while stack and seen < MAX_PRESCAN_FOLDERS:
        folder = stack.pop()
        seen += 1
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.name == ".gitignore":
                        if e.is_symlink():
                            continue
                        if not e.is_file(follow_symlinks=False) and not e.is_dir(
                                follow_symlinks=False):
                            return True
                        try:
                            if e.stat(follow_symlinks=False).st_size > MAX_BYTES:
                                return True
                        except OSError:
                            continue
                    elif e.name != ".git" and e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return False


def git_listing(top: str) -> set[str] | None:
    """Paths under ``top`` (relative, ``/``-separated) that git does not ignore; None when
    ``top`` is in no work tree or git cannot be run.

    ``core.fsmonitor`` is switched off: a repository's own config could otherwise name a
    program for git to run, and tpcheck runs nothing a checked-out tree chooses."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV}
    try:
        p = subprocess.run(
            [git, "-c", "core.fsmonitor=false", "-C", top, "ls-files", "--cached", "--others",
             "--exclude-standard", "-z"],
            capture_output=True, env=env, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:  # not a work tree (or no permission to read it)
        return None
    return {os.fsdecode(name) for name in p.stdout.split(b"\0") if name}
