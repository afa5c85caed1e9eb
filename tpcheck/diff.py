"""``tpcheck diff [REV] [PATH...]``: what a change does to each deployment's layout, seats and
speed, REV's files against the work tree, only what changed.

REV is read with git's plumbing (``rev-parse``, ``ls-tree``, ``cat-file --batch``) into memory,
never checked out. Its blobs are then laid out in a private temporary folder outside the
repository, so that every reader sees REV's side files too (a chart's values.yaml, kustomize
bases and patches, a pulled model's config.json, the settings file), and the folder is removed
when the comparison is done. Nothing in the repository is written; git runs only plumbing
commands, which run no hooks, with ``core.fsmonitor`` off, so nothing the repository names runs.

The figures are the rules' own: ``Linter.context_for`` gives the context every rule sees, its
``evaluation`` the pool and seats, and the decode step at the batch the deployment admits is
asked as TP201 asks it. Nothing here re-derives physics.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from tpcheck import UsageError
from tpcheck.checks.base import Finding
from tpcheck.lint import MAX_GROUP, Linter, settings_file_for
from tpcheck.oneline import one_line
from tpcheck.record import fields, record, replace
from tpcheck.result import LintResult
from tpcheck.sources import iter_files, read_path
from tpcheck.sources.base import Deployment, SourceError

# Variables that would point git at another repository than the folder's own (set while a git
# hook runs, e.g. under pre-commit): dropped, so the repository is the one the paths are in.
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
            "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX")
_BLOB_MODES = (b"100644", b"100755")  # regular files; links (120000) and submodules are skipped


@record
class Figures:
    """One deployment's layout and capacity on one side of the comparison (None: unknown)."""

    line: int
    engine: str
    model: str | None
    tp: int
    pp: int
    dp: int  # whole replicas of the TP × PP group
    gpus: int  # t·p·replicas
    gpu: str | None = None  # the catalog key the figures use
    context: int | None = None  # tokens per sequence the seats are counted at
    kv_cache_dtype: str | None = None  # as written (None: the engine's auto)
    max_num_seqs: int | None = None  # the scheduler's limit, as set or the release's default
    refusals: tuple[str, ...] = ()  # what the engine refuses in the layout (legality kinds)
    starts: bool | None = None  # False: refused, or the weights leave no KV pool
    seats_per_replica: int | None = None
    seats: int | None = None  # sequences of ``context`` tokens, all replicas together
    pool_bytes: float | None = None  # KV pool per GPU
    kv_tokens: int | None = None  # tokens the pool holds per GPU
    tokens_per_second: float | None = None  # decode, all replicas, at the batch admitted
    speed_basis: str | None = None  # "calibrated" or "floor" (the weight-read floor)
    problem: str | None = None  # why capacity figures are missing

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


@record
class Change:
    field: str
    before: object
    after: object


@record
class DeploymentDiff:
    status: str  # "changed", "added" or "removed"
    before: Figures | None
    after: Figures | None
    changes: tuple[Change, ...] = ()

    @property
    def line(self) -> int:
        side = self.after or self.before
        assert side is not None
        return side.line


@record
class FileDiff:
    path: str  # relative to the repository's top folder, /-separated
    status: str  # "changed", "added" or "removed"
    deployments: tuple[DeploymentDiff, ...] = ()
    new: tuple[Finding, ...] = ()
    resolved: tuple[Finding, ...] = ()
    several: bool = False  # more than one deployment on a side: label each with its line


@record
class DiffResult:
    rev: str
    commit: str
    files: tuple[FileDiff, ...]
    compared: int  # files read on either side
    errors: tuple[SourceError, ...] = ()


@record
class _Side:
    deployments: tuple[Figures, ...]
    findings: tuple[Finding, ...]


# ---- git -------------------------------------------------------------------------------------

class Repository:
    """The git work tree holding ``start``, asked through plumbing only."""

    def __init__(self, start: str) -> None:
        git = shutil.which("git")
        if git is None:
            raise UsageError("git is not installed; tpcheck diff reads the revision with git")
        self.exe = git
        self.env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV}
        self.start = start
        top = self.git("rev-parse", "--show-toplevel", what="a git work tree")
        self.top = os.path.realpath(os.fsdecode(top.strip()))

    def git(self, *args: str, stdin: bytes | None = None, what: str = "") -> bytes:
        try:
            p = subprocess.run([self.exe, "-c", "core.fsmonitor=false", "-C", self.start, *args],
                               input=stdin, capture_output=True, env=self.env, timeout=300,
                               check=False)
        except (OSError, subprocess.SubprocessError) as e:
            raise UsageError(f"git {args[0]} failed: {e}") from None
        if p.returncode != 0:
            said = os.fsdecode(p.stderr).strip().splitlines()
            why = said[-1] if said else f"exit {p.returncode}"
            if what:
                raise UsageError(f"{self.start!r} is not in {what} ({one_line(why)})")
            raise UsageError(f"git {args[0]}: {one_line(why)}")
        return p.stdout

    def commit(self, rev: str) -> str | None:
        """The commit ``rev`` names, or None when it names none."""
        if rev.startswith("-"):
            return None
        try:
            out = self.git("rev-parse", "--verify", "--quiet", "--end-of-options",
                           f"{rev}^{{commit}}")
        except UsageError:
            return None
        return os.fsdecode(out.strip()) or None

    def lay_out(self, commit: str, dest: str, max_bytes: int) -> None:
        """Every regular file of ``commit`` under ``dest``; one over ``max_bytes`` as a sparse
        file of its size, which the readers refuse as they refuse it in the work tree."""
        listing = self.git("ls-tree", "-r", "-z", "-l", "--full-tree", commit)
        small: list[tuple[str, bytes]] = []
        for entry in listing.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            fields = meta.split()
            if len(fields) != 4 or fields[0] not in _BLOB_MODES or fields[1] != b"blob":
                continue
            rel = os.fsdecode(name)
            parts = rel.split("/")
            if any(p in ("", ".", "..", ".git") for p in parts):
                continue  # no name git itself writes; never one that leaves ``dest``
            size = int(fields[3])
            if size > max_bytes:
                with open(_place(dest, rel), "wb") as fh:
                    fh.truncate(size)
                continue
            small.append((rel, fields[2]))
        if not small:
            return
        data = self.git("cat-file", "--batch", stdin=b"".join(sha + b"\n" for _, sha in small))
        pos = 0
        for rel, _ in small:
            eol = data.index(b"\n", pos)
            size = int(data[pos:eol].split()[2])
            with open(_place(dest, rel), "wb") as fh:
                fh.write(data[eol + 1: eol + 1 + size])
            pos = eol + 1 + size + 1  # the blob, then the newline cat-file adds


def _place(dest: str, rel: str) -> str:
    path = os.path.join(dest, *rel.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


# ---- one side --------------------------------------------------------------------------------

def figures(linter: Linter, d: Deployment) -> Figures:
    """The deployment's layout and the capacity the rules compute for it."""
    from tpcheck.checks._nodes import step_nodes
    from tpcheck.physics import step

    ctx = linter.context_for(d)
    model = d.model if d.model is not None else d.unresolved.get("model")
    sizes = (ctx.tp, ctx.pp, ctx.dp_replicas)
    base = Figures(line=d.span.line, engine=d.engine, model=model, tp=ctx.tp, pp=ctx.pp,
                   dp=ctx.dp_replicas, gpus=ctx.tp * ctx.pp * ctx.dp_replicas,
                   gpu=ctx.gpu.key if ctx.gpu is not None else None,
                   kv_cache_dtype=d.kv_cache_dtype, max_num_seqs=d.max_num_seqs)
    if any(s < 1 or s > MAX_GROUP for s in sizes):
        return replace(base, problem="a parallel size no engine accepts")
    unresolved = [k for k in ("tensor_parallel_size", "pipeline_parallel_size",
                              "data_parallel_size") if k in d.unresolved]
    if unresolved:
        return replace(base, problem=f"{unresolved[0].replace('_', '-')} is an expression "
                                     f"({d.unresolved[unresolved[0]]})")
    if ctx.shape is None:
        return replace(base, problem=ctx.model_problem or "the model was not resolved")
    try:
        ev = ctx.evaluation
        context = ctx.context[0]
    except (ValueError, ArithmeticError) as e:
        return replace(base, problem=one_line(str(e)))
    refusals = tuple(sorted({r.kind for r in ev.refusals}))
    out = replace(base, context=context, refusals=refusals)
    if refusals:
        return replace(out, starts=False)
    if ev.fits is None or ev.seats is None or ev.pool is None or ev.tokens is None:
        return out  # no GPU known: the layout only
    if not ev.fits:
        return replace(out, starts=False, seats_per_replica=0, seats=0,
                       pool_bytes=ev.pool.result, kv_tokens=0)
    seats = max(0, int(ev.seats.result))
    out = replace(out, starts=True, seats_per_replica=seats, seats=seats * ctx.dp_replicas,
                  pool_bytes=ev.pool.result, kv_tokens=int(ev.tokens.result))
    limit = ev.max_num_seqs
    if limit is not None:
        out = replace(out, max_num_seqs=int(limit.result))
    batch = min(seats, int(limit.result)) if limit is not None else 0
    if batch <= 0:
        return out
    try:
        at = ctx.evaluate_at(ctx.tp, batch=batch, **step_nodes(ctx))
    except (ValueError, ArithmeticError):
        return out  # the capacity stands; the step could not be priced
    if at.step is None:
        return out
    speed = step.tokens_per_second(batch, at.step, ctx.dp_replicas)
    return replace(out, tokens_per_second=speed.result,
                   speed_basis="calibrated" if at.step.calibrated else "floor")


def _figures_or_problem(linter: Linter, d: Deployment) -> Figures:
    """``figures``, or the deployment's layout with the internal error that stopped them (one
    odd deployment must not end the comparison, as one rule's failure does not end a lint)."""
    try:
        return figures(linter, d)
    except Exception as e:
        if os.environ.get("TPCHECK_DEBUG"):
            raise
        return Figures(line=d.span.line, engine=d.engine, model=d.model,
                       tp=d.tensor_parallel_size or 1, pp=d.pipeline_parallel_size or 1,
                       dp=d.data_parallel_size or 1, gpus=0,
                       problem=f"internal error: {type(e).__name__}: {one_line(str(e))}")


def read_side(paths: Iterable[str], linter_for: Callable[[Path | None], Linter],
              key_of: Callable[[str], str], settings_for: Callable[[str], Path | None],
              moved: tuple[str, str] | None = None) -> tuple[dict[str, _Side], list[SourceError]]:
    """Each file under ``paths`` linted as ``tpcheck PATH`` would, with its deployments'
    figures, keyed by ``key_of`` (its path in the repository). ``moved``: (the folder REV was
    laid out in, the repository's), so a headline naming a path names the repository's."""
    errors: list[SourceError] = []
    out: dict[str, _Side] = {}
    from tpcheck.sources.files import run_over

    paths = list(paths)
    with run_over(paths):
        for p in iter_files(paths, errors):
            sfile = settings_for(p)
            try:
                linter = linter_for(sfile)
            except UsageError as e:
                if sfile is None:
                    raise
                errors.append(SourceError(str(sfile), 1, 1, str(e).removeprefix(f"{sfile}: ")))
                continue
            rr = read_path(p, max_bytes=linter.settings.max_file_size)
            result = LintResult()
            linter.lint_read(rr, result)
            errors.extend(e for e in result.errors if e not in errors)
            key = key_of(p)
            found = tuple(_relocated(f, key_of, moved) for f in result.findings)
            figs = tuple(_figures_or_problem(linter, d) for d in rr.deployments)
            if moved:  # a problem naming a file (a malformed config.json) names the repository's
                figs = tuple(replace(x, problem=x.problem.replace(*moved)) if x.problem else x
                             for x in figs)
            out[key] = _Side(figs, found)
    return out, errors


def _relocated(f: Finding, key_of: Callable[[str], str],
               moved: tuple[str, str] | None) -> Finding:
    """``f`` with its spans named from the repository's top folder."""
    related = tuple((replace(sp, path=key_of(sp.path)), text) for sp, text in f.related)
    message = f.message.replace(*moved) if moved else f.message
    return replace(f, span=replace(f.span, path=key_of(f.span.path)), related=related,
                   message=message)


# ---- the comparison --------------------------------------------------------------------------

COMPARED = ("engine", "model", "gpu", "tp", "pp", "dp", "gpus", "context", "kv_cache_dtype",
            "max_num_seqs", "refusals", "starts", "seats", "kv_tokens", "tokens_per_second",
            "problem")


def speed_shown(v: float) -> str:
    """Decode tokens/s as the reports print them: a change below this precision is none."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def changes(a: Figures, b: Figures) -> tuple[Change, ...]:
    out = []
    for name in COMPARED:
        x, y = getattr(a, name), getattr(b, name)
        if (name == "tokens_per_second" and x is not None and y is not None
                and speed_shown(x) == speed_shown(y)):
            continue
        if x != y:
            out.append(Change(name, x, y))
    return tuple(out)


def pair(before: tuple[Figures, ...], after: tuple[Figures, ...]
         ) -> list[tuple[Figures | None, Figures | None]]:
    """Deployments of one file matched across the sides: in order when the counts agree, else
    by engine and model first, then in order; the rest were added or removed."""
    if len(before) == len(after):
        return list(zip(before, after, strict=True))
    left = list(before)
    matched: list[tuple[Figures | None, Figures | None]] = []
    unmatched: list[Figures] = []
    for b in after:
        hit = next((a for a in left if (a.engine, a.model) == (b.engine, b.model)), None)
        if hit is None:
            unmatched.append(b)
        else:
            left.remove(hit)
            matched.append((hit, b))
    for a, b in zip(list(left), list(unmatched), strict=False):
        left.remove(a)
        unmatched.remove(b)
        matched.append((a, b))
    matched += [(None, b) for b in unmatched] + [(a, None) for a in left]
    return matched


def _finding_key(f: Finding) -> tuple[str, str]:
    return f.code, one_line(f.message)


def _only_in(these: tuple[Finding, ...], those: tuple[Finding, ...]) -> tuple[Finding, ...]:
    left = Counter(_finding_key(f) for f in those)
    out = []
    for f in these:
        k = _finding_key(f)
        if left[k]:
            left[k] -= 1
        else:
            out.append(f)
    return tuple(out)


def compare_file(path: str, before: _Side | None, after: _Side | None) -> FileDiff | None:
    """What changed in one file, or None when nothing did."""
    b_dep = before.deployments if before else ()
    a_dep = after.deployments if after else ()
    deps = []
    for x, y in pair(b_dep, a_dep):
        if x is None:
            deps.append(DeploymentDiff("added", None, y))
        elif y is None:
            deps.append(DeploymentDiff("removed", x, None))
        else:
            ch = changes(x, y)
            if ch:
                deps.append(DeploymentDiff("changed", x, y, ch))
    new = _only_in(after.findings if after else (), before.findings if before else ())
    resolved = _only_in(before.findings if before else (), after.findings if after else ())
    if not deps and not new and not resolved:
        return None
    status = "added" if before is None else "removed" if after is None else "changed"
    deps.sort(key=lambda d: d.line)
    return FileDiff(path, status, tuple(deps), new, resolved,
                    several=max(len(b_dep), len(a_dep)) > 1)


def diff(rev: str, paths: list[str], linter_for: Callable[[Path | None], Linter], *,
         max_bytes: int = 5 * 1024 * 1024) -> DiffResult:
    """REV against the work tree for every deployment under ``paths`` (default: the whole
    repository holding the current folder). ``linter_for`` builds the linter for a settings
    file, as the lint does. The repository is the one holding the first path."""
    start = "."
    if paths:
        start = next((p if os.path.isdir(p) else os.path.dirname(p) or "." for p in paths
                      if os.path.lexists(p) or os.path.isdir(os.path.dirname(p) or ".")), ".")
    repo = Repository(start)
    commit = repo.commit(rev)
    if commit is None:
        raise UsageError(f"{rev!r} names no commit in {repo.top}")
    top = repo.top
    given = paths or [top]
    outside = [p for p in given if not _inside(_real(p), top)]
    if outside:
        raise UsageError(f"{outside[0]!r} is outside the repository {top}")
    rels = [Path(os.path.relpath(_real(p), top)).as_posix() for p in given]
    scratch = os.path.realpath(tempfile.mkdtemp(prefix="tpcheck-diff-"))
    try:
        root = os.path.join(scratch, "tree")
        os.mkdir(root)
        repo.lay_out(commit, root, max_bytes)

        def key_now(p: str) -> str:
            return _key(p, top)

        def key_then(p: str) -> str:
            return _key(p, root) if _inside(os.path.abspath(p), root) else p

        def settings_then(p: str) -> Path | None:
            # REV's own settings; above its tree, what lies above the repository
            found = settings_file_for(p)
            if found is not None and _inside(str(found), root):
                return found
            return settings_file_for(os.path.join(os.path.dirname(top), "x"))

        then_paths = [os.path.join(root, *r.split("/")) for r in rels]
        missing = [p for p, t in zip(given, then_paths, strict=True)
                   if not os.path.lexists(p) and not os.path.lexists(t)]
        if missing:
            raise UsageError(f"{missing[0]!r}: no such file or folder in the work tree or at "
                             f"{rev}")
        now, now_errors = read_side([p for p in given if os.path.lexists(p)], linter_for,
                                    key_now, settings_file_for)
        then, then_errors = read_side([t for t in then_paths if os.path.lexists(t)],
                                      linter_for, key_then, settings_then, (root, top))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    errors = [replace(e, path=key_now(e.path)) for e in now_errors]
    for e in then_errors:
        moved = replace(e, path=key_then(e.path), message=e.message.replace(root, top))
        if moved not in errors:
            errors.append(replace(moved, message=f"at {rev}: {moved.message}"))
    files = []
    for path in sorted(set(now) | set(then)):
        fd = compare_file(path, then.get(path), now.get(path))
        if fd is not None:
            files.append(fd)
    return DiffResult(rev, commit, tuple(files), len(set(now) | set(then)), tuple(errors))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _real(p: str) -> str:
    """``p`` absolute with its folders' links resolved, not its own (the walk skips links)."""
    absolute = os.path.abspath(p)
    if absolute == os.sep:
        return absolute
    return os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))


def _key(p: str, top: str) -> str:
    absolute = _real(p)
    if absolute == top:
        return "."
    if not _inside(absolute, top):
        return p
    return Path(os.path.relpath(absolute, top)).as_posix()
