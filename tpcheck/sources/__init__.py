"""Readers: files → Deployment records with spans. ``read_path`` picks the reader.

Readers are pure: no physics, no engine defaults; a field the file did not set is None.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

from tpcheck.sources.base import (
    MAX_BYTES,
    Deployment,
    ReadResult,
    SourceError,
    Span,
    keep_launches,
)
from tpcheck.sources.files import (
    NotRegular,
    TooBig,
    decode_utf8_sig,
    file_type,
    read_capped,
    read_upto,
)

__all__ = [
    "MAX_BYTES",
    "Deployment",
    "NotRegular",
    "ReadResult",
    "SourceError",
    "Span",
    "TooBig",
    "file_type",
    "iter_files",
    "read_capped",
    "read_path",
    "read_stdin",
]

YAML_EXT = (".yaml", ".yml")
SHELL_EXT = (".sh", ".bash")
PY_EXT = (".py",)
TPL_EXT = ".tpl"  # Helm and other Go templates: foo.yaml.tpl, _helpers.tpl, run.sh.tpl


# Formats a named file may be in that tpcheck does not read: one note, no exit code (as ruff
# says of a file it does not lint); a folder scan never picks them.
UNREAD_EXT = (".toml", ".ini", ".cfg", ".conf", ".lock", ".csv", ".tsv", ".xml", ".html",
              ".css", ".js", ".ts", ".go", ".rs", ".java", ".c", ".h", ".cc", ".cpp", ".rb",
              ".tf", ".hcl", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".zip", ".gz",
              ".tar", ".whl", ".ipynb")
PROSE_EXT = (".md", ".markdown", ".rst", ".txt")  # launch lines in notes: shell, never YAML
UNREAD_NOTE = "not a format tpcheck reads; skipped"


# Which reader a file's name asks for (a Dockerfile, a Makefile): here, where every file's
# kind is decided, so a YAML or shell lint imports no Dockerfile reader.
def is_dockerfile(name: str) -> bool:
    """``Dockerfile``, ``Dockerfile.cuda``, ``cuda.Dockerfile``, ``Containerfile``."""
    low = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return (low in ("dockerfile", "containerfile") or low.startswith(("dockerfile.",
            "containerfile.")) or low.endswith((".dockerfile", ".containerfile")))


def is_makefile(name: str) -> bool:
    low = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return low in ("makefile", "gnumakefile") or low.endswith(".mk")


def reader_kind(name: str, text: str) -> str:
    """'yaml' | 'shell' | 'python' | 'dockerfile' | 'makefile' | 'powershell' | 'unread' from
    the name, else
    the shebang, else the content.

    A template keeps the kind of the name under its ``.tpl`` (``run.sh.tpl`` is shell); a
    bare ``.tpl`` is a Helm template, YAML. Terraform's ``.tftpl`` and Slurm's ``.sbatch`` /
    ``.slurm`` are shell."""
    low = name.lower()
    if is_dockerfile(low):
        return "dockerfile"
    if is_makefile(low):
        return "makefile"
    if low.endswith(".ps1"):
        return "powershell"
    if low.endswith((".tftpl", ".sbatch", ".slurm", *PROSE_EXT)):
        return "shell"
    if low.endswith(UNREAD_EXT):
        return "unread"
    if low.endswith(TPL_EXT):
        inner = low[: -len(TPL_EXT)]
        return reader_kind(inner, text) if inner.endswith(SHELL_EXT + PY_EXT) else "yaml"
    if low.endswith(YAML_EXT):
        return "yaml"
    if low.endswith(SHELL_EXT):
        return "shell"
    if low.endswith(PY_EXT):
        return "python"
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        return "python" if "python" in first else "shell"
    head = text.lstrip()[:200]
    if head.startswith(("apiVersion:", "kind:", "---", "services:")) or (
        ":" in head.split("\n", 1)[0] and not head.startswith(("import ", "from "))
    ):
        return "yaml"
    if head.startswith(("import ", "from ")):
        return "python"
    return "shell"


def read_stdin(max_bytes: int = MAX_BYTES) -> str | bytes:
    """At most ``max_bytes`` + 1 of stdin, for ``read_path`` to refuse when over the cap.

    Read whole, 1 GB piped in took 2 GB of memory before the size check (issue 14 item 9).
    Bytes from a real stdin, so they are decoded as files are; text from a text-only stream.
    """
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # an io.StringIO put in place by an embedding program or a test
        return sys.stdin.read(max_bytes + 1)
    data: bytes = buffer.read(max_bytes + 1)
    return data


def read_path(path: str, text: str | bytes | None = None, *,
              stdin_filename: str | None = None, max_bytes: int = MAX_BYTES) -> ReadResult:
    """Read one file (or ``text`` standing for it) with the reader its name or content picks."""
    shown = stdin_filename if path == "-" and stdin_filename else path
    if text is None:
        got = _read_regular(path, shown, max_bytes)
        if isinstance(got, ReadResult):
            return got
        text = got
    if isinstance(text, bytes):  # a file's bytes, or stdin as read_stdin gives it
        if len(text) > max_bytes:
            what = "input" if path == "-" else "file"
            return _err(shown, f"{what} is over the {max_bytes}-byte limit; skipped",
                        skipped=True)
        data = text
        try:
            text = decode_utf8_sig(data)
        except UnicodeDecodeError as e:
            declared = _python_declared(shown, data)
            if declared is None:
                return _err(shown, f"not UTF-8 text (byte {e.start})")
            text = declared
    elif len(text) > max_bytes:
        return _err(shown, f"input is over the {max_bytes}-byte limit; skipped", skipped=True)
    elif not text.isascii():
        # Text handed in (stdin read with surrogateescape, an editor buffer) can hold lone
        # surrogates that no UTF-8 file can: the YAML and libcst readers cannot encode them.
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            line = text.count("\n", 0, e.start) + 1
            column = e.start - text.rfind("\n", 0, e.start)
            return ReadResult(shown, (), (SourceError(
                shown, line, column,
                f"not UTF-8 text (lone surrogate U+{ord(text[e.start]):04X})"),))
    return keep_launches(_read_text(shown, text, stdin=path == "-"))


def _python_declared(shown: str, data: bytes) -> str | None:
    """A Python file in the encoding its ``# -*- coding: latin-1 -*-`` line declares (PEP 263:
    Python itself runs it), or None: no declaration, an unknown codec, or bytes it refuses."""
    if not shown.endswith(PY_EXT):
        return None
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return None if encoding.startswith("utf-8") else data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


def _read_text(shown: str, text: str, *, stdin: bool = False) -> ReadResult:
    """The reader the name or content picks, on text that passed the size and encoding checks;
    every variable expansion in it counts against one budget (``words.Budget``), and past it
    the file says so in one line."""
    from tpcheck.sources.words import reading_file

    with reading_file() as budget:
        res = _read_kind(shown, text, stdin=stdin)
    if budget.first is None:
        return res
    path, line, column = budget.first
    return ReadResult(res.path, res.deployments,
                      (*res.errors, SourceError(path, line, column, budget.message())),
                      res.text, res.skipped)


def _read_kind(shown: str, text: str, *, stdin: bool) -> ReadResult:
    kind = reader_kind(shown, text)
    try:
        if kind == "unread":
            return ReadResult(shown, (), (), None, skipped=True,
                              notes=(SourceError(shown, 1, 1, UNREAD_NOTE),))
        if kind in ("dockerfile", "makefile", "powershell"):
            from tpcheck.sources import dockerfile

            read = {"dockerfile": dockerfile.read_dockerfile,
                    "makefile": dockerfile.read_makefile,
                    "powershell": dockerfile.read_powershell}[kind]
            return read(shown, text)
        if kind == "yaml":
            return _read_yaml_file(shown, text, stdin=stdin)
        if kind == "python":
            import warnings

            from tpcheck.sources.python_src import read_python

            # Parsing "\d" in a literal warns "<unknown>:1: invalid escape sequence" (a
            # SyntaxWarning shown by default from Python 3.12): a stray stderr line naming no file.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return read_python(shown, text)
        if shown.lower().endswith(".tftpl"):
            from tpcheck.sources.terraform import read_tftpl

            return read_tftpl(shown, text)
        if "{{" in text:
            from tpcheck.sources.helm import is_template

            if is_template(shown, text):
                return _read_shell_template(shown, text)
        from tpcheck.sources.shell import ShellTooLong, read_shell

        try:
            from tpcheck.sources.dockerfile import with_pins
            from tpcheck.sources.schedulers import with_slurm

            found = with_slurm(read_shell(shown, text), shown, text)
            return ReadResult(shown, with_pins(found, text, shown), (), text)
        except ShellTooLong as e:  # the launches before the limit are still checked
            return ReadResult(shown, tuple(e.found), (SourceError(shown, e.line, e.column,
                                                                  str(e)),), text)
    except RecursionError:
        return _err(shown, "nesting too deep to read")
    except (MemoryError, ValueError, ArithmeticError, LookupError, TypeError) as e:
        # A reader bug on odd input must not stop the other files: one line, and move on.
        if os.environ.get("TPCHECK_DEBUG"):
            raise
        return _err(shown, f"could not be read ({type(e).__name__}: {e}); please report")


def _templates_launch(path: str) -> bool:
    """Whether the chart beside this values.yaml has a template that reads as a launch.

    When none does (SGLang's LWS chart builds its command in _helpers.tpl and only
    ``include``s it), the values file is where the layout is read."""
    folder = os.path.dirname(os.path.abspath(path))
    templates = os.path.join(folder, "templates")
    if not (os.path.isfile(os.path.join(folder, "Chart.yaml")) and os.path.isdir(templates)):
        return False
    return any(read_path(p).deployments for p in iter_files([templates]))



def _read_yaml_file(shown: str, text: str, *, stdin: bool) -> ReadResult:
    """A YAML file, unless a chart's templates or a kustomization read it already."""
    if os.path.basename(shown) == "values.yaml" and _templates_launch(shown):
        # the chart's own values are read through its templates (read_template); read
        # here too, a launch in them would be reported twice
        return ReadResult(shown, (), (), text)
    from tpcheck.sources.files import is_kustomization, kustomization_beside, may_be_lone_patch
    from tpcheck.sources.yamlfile import read_yaml, read_yaml_docs

    if is_kustomization(shown):
        from tpcheck.sources.kustomize import read_kustomization

        return read_kustomization(shown, text)
    if stdin:
        return read_yaml(shown, text)
    if kustomization_beside(shown) is not None:
        from tpcheck.sources.kustomize import is_listed_patch

        if is_listed_patch(shown):
            return ReadResult(shown, (), (), text)  # read through its kustomization
    # composed once: the lone-patch note and the KServe pairing look at the reader's nodes
    result, docs = read_yaml_docs(shown, text)
    if may_be_lone_patch(result):
        from tpcheck.sources.kustomize import note_lone_patch

        result = note_lone_patch(shown, result, docs)
    if "ServingRuntime" in text or "InferenceService" in text:
        from tpcheck.sources.kserve import pair_kserve

        return pair_kserve(shown, text, result, docs)
    return result

def _read_shell_template(path: str, text: str) -> ReadResult:
    """A shell script kept as a template (``run.sh.tpl``, a chart's ``files/``): read with
    its actions neutralised, so a ``{{ .Values.tp }}`` is a value or unresolved, not a word."""
    from tpcheck.sources.helm import chart_root, chart_values, render, values_problem
    from tpcheck.sources.shell import read_shell_text

    root = chart_root(path)
    values, values_error = chart_values(root)
    r = render(path, text, values, root, values_error)
    if isinstance(r, SourceError):
        return ReadResult(path, (), (r,), text)
    problem = values_problem(root, values_error)
    from tpcheck.sources.yamlfile import restored

    note = "Go template: actions set aside" + (
        f"; {r.unresolved} action(s) left unresolved" if r.unresolved else "")
    found = [restored(d, r.restore, note, r.origin_spans) for d in read_shell_text(r.text, path)]
    return ReadResult(path, tuple(found), () if problem is None else (problem,), text)


def _read_regular(path: str, shown: str, max_bytes: int) -> bytes | ReadResult:
    """The bytes of a regular file, at most ``max_bytes`` + 1 of them (``read_path`` refuses
    more), or the error: ``read_capped``'s reading, in the words of a skipped input."""
    try:
        return read_upto(path, max_bytes, pipe_ok=False)
    except NotRegular as e:
        return _err(shown, f"{e}; skipped", skipped=True)
    except TooBig as e:
        return _err(shown, f"file is {e.size} bytes, over the {max_bytes}-byte limit; skipped",
                    skipped=True)
    except OSError as e:
        return _err(shown, f"cannot read: {e.strerror or e}")


def _err(path: str, message: str, *, skipped: bool = False) -> ReadResult:
    return ReadResult(path, (), (SourceError(path, 1, 1, message),), skipped=skipped)


def iter_files(paths: Iterable[str], errors: list[SourceError] | None = None) -> Iterator[str]:
    """Files to read: as given, and inside folders the YAML, shell and Python files.

    Hidden folders are skipped, what git ignores is skipped (``sources.ignores``: git's own
    listing in a work tree, the .gitignore files outside one), and symlinks are never followed
    (so a link cannot lead the walk out of the tree). A folder that cannot be listed is an
    error in ``errors`` (its files went unchecked: that must not pass).
    """
    paths = list(paths)
    if len(paths) <= 1:  # one walk never yields a file twice
        for p in paths:
            yield from ([p] if p == "-" or not os.path.isdir(p) else _walk(p, errors))
        return
    seen: set[str] = set()  # `tpcheck a.yaml a.yaml`, `tpcheck deploy deploy/a.yaml`: once each
    for p in paths:
        for f in ([p] if p == "-" or not os.path.isdir(p) else _walk(p, errors)):
            key = f if f == "-" else os.path.normpath(f)
            if key not in seen:
                seen.add(key)
                yield f


def _walk(top: str, errors: list[SourceError] | None = None) -> Iterator[str]:
    """Depth first, names sorted, a folder's files before its sub-folders (os.walk's order).

    ``os.scandir`` entries know from the directory listing whether they are links or folders,
    so a 1,000-file tree costs no stat per file."""
    from tpcheck.sources.ignores import for_folder

    exts = (*YAML_EXT, *SHELL_EXT, *PY_EXT, TPL_EXT)
    rules = for_folder(top)
    stack = [(top, "")]  # (folder, its path relative to top, "/"-separated)
    while stack:
        root, rel = stack.pop()
        try:
            with os.scandir(root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if errors is not None:
                errors.append(SourceError(root, 1, 1, f"cannot list folder: {exc.strerror or exc}; "
                                                      "the files in it were not checked"))
            continue
        problem = rules.enter(root, rel)
        if problem is not None and errors is not None:
            errors.append(SourceError(os.path.join(root, ".gitignore"), 1, 1, problem))
        subdirs: list[tuple[str, str]] = []
        for e in entries:
            name = e.name
            if name.startswith(".") or e.is_symlink():
                continue
            sub = f"{rel}/{name}" if rel else name
            if e.is_dir(follow_symlinks=False):
                if rules.keep_dir(sub):
                    subdirs.append((e.path, sub))
            elif ((name.lower().endswith(exts) and _scanned_template(name))
                  or _is_build_file(name)) and rules.keep_file(sub):
                yield e.path
        stack.extend(reversed(subdirs))


def _scanned_template(name: str) -> bool:
    """A ``.tpl`` a folder scan reads: Helm's (``_helpers.tpl``, ``deploy.tpl``) or one of
    the kinds tpcheck reads (``x.yaml.tpl``, ``run.sh.tpl``); not ``nginx.conf.tpl``."""
    low = name.lower()
    if not low.endswith(TPL_EXT):
        return True
    inner = low[: -len(TPL_EXT)]
    return "." not in inner.lstrip("._") or inner.endswith((*YAML_EXT, *SHELL_EXT, *PY_EXT))


def _is_build_file(name: str) -> bool:
    """Dockerfiles, Makefiles, Slurm batch files, Terraform templates and PowerShell scripts,
    which a folder scan reads as shell too."""
    return (is_dockerfile(name) or is_makefile(name)
            or name.lower().endswith((".tftpl", ".sbatch", ".slurm", ".ps1")))
