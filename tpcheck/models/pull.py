"""`tpcheck models pull` and `tpcheck models list`: a project's model configs, committed.

``pull(paths)`` reads the files with the usual readers, takes every hub id their deployments
name (as written, else the first hint that gives one: env values, Python defaults, storageUri,
folder names, ``--served-model-name`` — the order the resolver tries them in), fetches each
config.json (and hf_quant_config.json when the repo has one) through the resolver's own HF cache
and hub path (HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE honoured there), stores the files verbatim
under ``<project>/.tpcheck/models/<org>--<name>/`` with the commit in ``REVISION``, and maps
``"org/name" = ".tpcheck/models/org--name"`` in ``[tool.tpcheck.models]`` of the project's
``.tpcheck.toml`` or ``pyproject.toml``. Committed, those make every later run resolve the same
bytes offline. A reference that is itself a guess keeps its hint in the findings; only the hub
id is mapped.

The settings file is edited as text: only the models table's entries are added or replaced,
every other byte stays (CRLF line ends, a leading BOM, comments); the result is parsed with
tomllib and must equal the old settings with the new entries, or nothing is written.

Every path pull writes (the settings file, ``.tpcheck/models/<org--name>/`` and its files) is
checked before anything is fetched and written through ``tpcheck.safewrite``: a symlink at any
component under the project (committed in a pull request, say) is refused with one line and
nothing is written, instead of overwriting whatever file the link names.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from tpcheck import safewrite
from tpcheck.deferred import lazy_re
from tpcheck.models import catalog, hints
from tpcheck.models.resolve import (
    MAX_CONFIG_BYTES,
    QUANT_NAME,
    ResolveError,
    Resolver,
    file_hint,
    is_expression,
    looks_like_path,
)
from tpcheck.record import field, record
from tpcheck.sources.base import Deployment, SourceError

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

MODELS_DIR = Path(".tpcheck") / "models"
REVISION_FILE = "REVISION"
CONFIG_NAME = "config.json"


class PullError(Exception):
    """The project's settings cannot be edited safely: one line, nothing written."""


@record
class Wanted:
    """A hub id the files name, and where (``path:line``, and the hint when one was used)."""

    model_id: str
    named_at: tuple[str, ...]


@record
class Pulled:
    model_id: str
    revision: str | None  # the commit the config came from (None: not in a cache snapshot)
    fetched_from: str  # hf-cache or hub
    folder: str  # relative to the project root, as mapped


@record
class PullResult:
    settings_file: str
    pulled: tuple[Pulled, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()  # (hub id, one-line reason)
    skipped: tuple[str, ...] = ()  # "path:line: why no hub id"
    errors: tuple[SourceError, ...] = field(default_factory=tuple)


# ---- what the files name ---------------------------------------------------------------------

def hub_candidates(d: Deployment, mappings: Mapping[str, str] | None = None
                   ) -> list[tuple[str, str]]:
    """(hub id, how it was found) for one deployment, in the resolver's order: the hub id a
    ``[tool.tpcheck.models]`` mapping gives the reference (none when it maps to a path); the
    reference when it is a hub id; else the file's hints, the path's folder names, the served
    name."""
    ref = (d.model or d.unresolved.get("model") or "").strip()
    target = (mappings or {}).get(ref)
    if target is not None:
        target = target.strip()
        mapped_id = not looks_like_path(target) and not target.startswith(
            MODELS_DIR.as_posix())
        return [(target, f"mapped from {ref!r}")] if mapped_id else []
    if ref and not is_expression(ref) and not looks_like_path(ref):
        return [(ref, "as written")]
    out: list[tuple[str, str]] = []
    for h in d.model_hints:
        out.extend(file_hint(h.value, h.origin))
    if ref and looks_like_path(ref) and not is_expression(ref):
        folder = hints.folder_hint(ref)
        if folder is not None:
            out.append((folder[0], f"model taken from the folder name `{folder[1]}`"))
    served = hints.served_hint(d.served_model_name)
    if served is not None:
        out.append((served, f"model taken from --served-model-name `{served}`"))
    return out


def collect(paths: Sequence[str], mappings: Mapping[str, str] | None = None
            ) -> tuple[list[Wanted], list[str], list[SourceError]]:
    """(hub ids in first-seen order, deployments that name none, read errors)."""
    from tpcheck.sources import iter_files, read_path

    wanted: dict[str, list[str]] = {}
    skipped: list[str] = []
    errors: list[SourceError] = []
    for path in iter_files(list(paths), errors):
        result = read_path(path)
        errors.extend(result.errors)
        for d in result.deployments:
            where = f"{d.path}:{d.span.line}"
            cands = hub_candidates(d, mappings)
            if not cands:
                ref = d.model or d.unresolved.get("model")
                if ref is not None and mappings and ref.strip() in mappings:
                    continue  # mapped to a local config by hand: nothing to fetch
                skipped.append(f"{where}: model {ref!r} names no hub id; map it by hand"
                               if ref else f"{where}: the deployment names no model")
                continue
            hub_id, how = cands[0]
            named = where if how == "as written" else f"{where} ({how})"
            wanted.setdefault(hub_id, []).append(named)
    return [Wanted(k, tuple(v)) for k, v in wanted.items()], skipped, errors


# ---- fetching and storing --------------------------------------------------------------------

def folder_name(model_id: str) -> str:
    """``org/name`` → ``org--name`` (the catalog's and huggingface_hub's spelling)."""
    return model_id.replace("/", "--", 1)


def _revision_of(location: str) -> str | None:
    """The commit of a cache snapshot path ``.../snapshots/<commit>/config.json``."""
    p = Path(location)
    return p.parent.name if p.parent.parent.name == "snapshots" else None


def _files_of(model_id: str) -> tuple[str, ...]:
    """The paths, relative to the project, that pulling ``model_id`` may write or remove."""
    rel = (MODELS_DIR / folder_name(model_id)).as_posix()
    return tuple(f"{rel}/{name}" for name in (CONFIG_NAME, QUANT_NAME, REVISION_FILE))


def _cached_bytes(path: str) -> bytes:
    """A file of the HF cache, read as every side file is (regular, capped)."""
    from tpcheck.sources.files import read_capped

    return read_capped(path, MAX_CONFIG_BYTES)


def store(project: Path, model_id: str, resolver: Resolver) -> Pulled:
    """Fetch ``model_id`` and copy its files verbatim under ``project/.tpcheck/models``."""
    r = resolver.fetch(model_id)
    rel = MODELS_DIR / folder_name(model_id)
    config, quant_file, revision_file = _files_of(model_id)
    safewrite.write_bytes(project, config, _cached_bytes(r.location))
    quant = Path(r.location).with_name(QUANT_NAME)
    if r.quant_config is not None and quant.is_file():
        safewrite.write_bytes(project, quant_file, _cached_bytes(str(quant)))
    else:
        safewrite.remove(project, quant_file)  # a re-pull of a repo that dropped it
    revision = _revision_of(r.location)
    safewrite.write_bytes(project, revision_file, f"{revision or 'unknown'}\n".encode())
    return Pulled(model_id, revision, r.source, rel.as_posix())


def pull(paths: Sequence[str], *, cwd: Path | None = None, offline: bool | None = None,
         timeout: float | None = None) -> PullResult:
    """Pull every model ``paths`` name into the project of ``cwd`` (see the module docstring).
    Raises PullError when the settings file cannot be edited safely (before any download)."""
    from tpcheck.settings import SettingsError, find_settings_file, load_settings

    here = (cwd or Path.cwd()).resolve()
    found = find_settings_file(here)
    try:
        settings = load_settings(found)
    except SettingsError as e:
        raise PullError(str(e)) from None
    target = found if found is not None else _new_settings_file(here)
    project = target.parent
    _check_editable(target)  # fail before fetching anything
    wanted, skipped, errors = collect(paths, settings.models)
    try:  # every path this run may write, before anything is fetched or written
        for w in wanted:
            for rel in _files_of(w.model_id):
                safewrite.check(project, rel)
    except safewrite.WriteRefused as e:
        raise PullError(str(e)) from None
    resolver = Resolver(offline=offline or settings.offline or None,
                        timeout=timeout or settings.hub_timeout, use_catalog=False,
                        cwd=str(project))
    pulled: list[Pulled] = []
    failed: list[tuple[str, str]] = []
    for w in wanted:
        mapped = settings.models.get(w.model_id)
        if mapped is not None and not mapped.replace("\\", "/").startswith(MODELS_DIR.as_posix()):
            skipped.append(f"{w.model_id}: mapped by hand to {mapped!r} in {target.name}; "
                           "left alone")
            continue
        try:
            pulled.append(store(project, w.model_id, resolver))
        except ResolveError as e:
            failed.append((w.model_id, e.message))
        except safewrite.WriteRefused as e:
            failed.append((w.model_id, str(e)))
        except OSError as e:  # the HF cache file went away or grew between fetch and copy
            failed.append((w.model_id, f"cannot copy {e.filename or 'the cached file'}: "
                                       f"{e.strerror or e}"))
    if pulled:
        write_mapping(target, {p.model_id: p.folder for p in pulled})
    return PullResult(str(target), tuple(pulled), tuple(failed), tuple(skipped), tuple(errors))


def _new_settings_file(here: Path) -> Path:
    """No settings yet: the folder's pyproject.toml gains the table, else a new .tpcheck.toml."""
    py = here / "pyproject.toml"
    return py if py.is_file() else here / ".tpcheck.toml"


# ---- editing the settings file ---------------------------------------------------------------

_HEADER = lazy_re(r"^[ \t]*\[[ \t]*(?P<name>[^\[\]#]+?)[ \t]*\][ \t]*(?:#.*)?$")
_ARRAY_HEADER = lazy_re(r"^[ \t]*\[\[")
_KEY = lazy_re(r"""^[ \t]*(?P<key>"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)[ \t]*=""")


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    return tomllib


def _table_name(path: Path, data: Mapping[str, Any]) -> tuple[str, ...]:
    """Where the models table lives: [tool.tpcheck.models] in pyproject.toml (and in a
    .tpcheck.toml that uses a [tool.tpcheck] table), else [models] at a .tpcheck.toml's top."""
    if path.name == "pyproject.toml" or "tool" in data:
        return ("tool", "tpcheck", "models")
    return ("models",)


_BOM = "\ufeff"


def _read(path: Path) -> str:
    """The settings file's text exactly as stored: no newline translation (a CRLF file stays
    CRLF), a leading BOM kept (lint reads such files; ``_without_bom`` sets it aside to parse)."""
    from tpcheck.settings import MAX_SETTINGS_BYTES
    from tpcheck.sources.files import read_capped

    try:
        if not path.exists():
            return ""
        return read_capped(str(path), MAX_SETTINGS_BYTES).decode("utf-8")
    except OSError as e:
        raise PullError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise PullError(f"{path}: not UTF-8 text (byte {e.start})") from None


def _without_bom(text: str) -> tuple[str, str]:
    return (_BOM, text[1:]) if text.startswith(_BOM) else ("", text)


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = _toml().loads(text)
    except _toml().TOMLDecodeError as e:
        raise PullError(f"{path}: invalid TOML: {e}") from None
    return data


def _check_editable(path: Path) -> None:
    """Fail before anything is fetched: no link in the way, a dry run of the edit, and a
    folder the new file can be written in."""
    try:
        safewrite.check(path.parent, path.name)
    except safewrite.WriteRefused as e:
        raise PullError(str(e)) from None
    edit_mapping(path, _read(path), {"tpcheck/dry-run": MODELS_DIR.as_posix()})
    # the new text replaces the file by a rename, which a read-only file would not stop
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise PullError(f"{path}: cannot write: permission denied")


def _dig(data: Mapping[str, Any], keys: Iterable[str]) -> Any:
    node: Any = data
    for k in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(k)
    return node


def _key_of(token: str) -> str | None:
    """The key a ``key =`` token spells (bare, "basic" or 'literal'), read by tomllib."""
    try:
        parsed = _toml().loads(f"{token} = 0")
    except _toml().TOMLDecodeError:
        return None
    (key,) = parsed
    return str(key)


def _entry(key: str, value: str) -> str:
    # JSON's string escapes are a subset of TOML's basic strings'
    return f"{json.dumps(key, ensure_ascii=False)} = {json.dumps(value, ensure_ascii=False)}"


def edit_mapping(path: Path, text: str, entries: Mapping[str, str]) -> str:
    """``text`` with ``entries`` set in the models table: a key's line replaced where the table
    has it, new keys appended after the table's last entry, a missing table appended at the end.
    Raises PullError when the result does not parse to the old settings plus the entries.
    A leading BOM is kept; new lines end as the file's first line does (CRLF stays CRLF)."""
    bom, text = _without_bom(text)
    first_eol = re.search(r"\r?\n", text)
    file_eol = first_eol.group() if first_eol else "\n"
    before = _parse(path, text)
    table = _table_name(path, before)
    header = ".".join(table)
    lines = text.splitlines(keepends=True)
    start = None
    for i, line in enumerate(lines):
        m = _HEADER.match(line.rstrip("\r\n"))
        if m and ".".join(p.strip().strip("\"'") for p in m["name"].split(".")) == header:
            start = i
            break
    todo = dict(entries)
    if start is None:
        tail = "".join(f"{_entry(k, v)}{file_eol}" for k, v in todo.items())
        sep = "" if not text or text.endswith("\n") else file_eol
        blank = file_eol if text.strip() else ""
        new_text = f"{text}{sep}{blank}[{header}]{file_eol}{tail}"
    else:
        end = len(lines)
        for j in range(start + 1, len(lines)):
            if _HEADER.match(lines[j].rstrip("\r\n")) or _ARRAY_HEADER.match(lines[j]):
                end = j
                break
        last = start
        for j in range(start + 1, end):
            m = _KEY.match(lines[j])
            if m is None:
                if lines[j].strip() and not lines[j].lstrip().startswith("#"):
                    last = j  # a continuation line of a value: keep new entries after it
                continue
            last = j
            key = _key_of(m["key"])
            if key is not None and key in todo:
                eol = "\r\n" if lines[j].endswith("\r\n") else "\n"
                lines[j] = _entry(key, todo.pop(key)) + eol
        if todo:
            eol = "\r\n" if lines[start].endswith("\r\n") else "\n"
            if not lines[last].endswith(("\n", "\r")):
                lines[last] += eol
            lines.insert(last + 1, "".join(f"{_entry(k, v)}{eol}" for k, v in todo.items()))
        new_text = "".join(lines)
    after = _parse_checked(path, new_text)
    expected = json.loads(json.dumps(before, default=str))
    node = expected
    for k in table:
        node = node.setdefault(k, {})
    if not isinstance(node, dict):
        raise PullError(f"{path}: {header} is not a table; add the mapping by hand")
    node.update(entries)
    if json.loads(json.dumps(after, default=str)) != expected:
        raise PullError(f"{path}: the {header} table is written in a way tpcheck cannot edit "
                        "safely; add the mapping by hand")
    return bom + new_text


def _parse_checked(path: Path, text: str) -> dict[str, Any]:
    try:
        return _parse(path, text)
    except PullError:
        raise PullError(f"{path}: its models table is written in a way tpcheck cannot edit "
                        "safely (an inline or dotted table?); add the mapping by hand") from None


def write_mapping(path: Path, entries: Mapping[str, str]) -> None:
    text = _read(path)
    new_text = edit_mapping(path, text, entries)
    if new_text != text:
        try:
            safewrite.write_bytes(path.parent, path.name, new_text.encode("utf-8"))
        except safewrite.WriteRefused as e:
            raise PullError(str(e)) from None


# ---- listing ---------------------------------------------------------------------------------

def pulled_models(project: Path) -> list[dict[str, str | None]]:
    """The project's pulled models: every ``.tpcheck/models/<org--name>/`` with a config.json."""
    from tpcheck.sources.files import read_capped

    base = project / MODELS_DIR
    out: list[dict[str, str | None]] = []
    try:
        names = sorted(p.name for p in base.iterdir() if (p / CONFIG_NAME).is_file())
    except OSError:
        return out
    for name in names:
        try:
            rev = read_capped(str(base / name / REVISION_FILE), 1024).decode().strip() or None
        except (OSError, UnicodeDecodeError):  # a FIFO or /dev/zero committed as REVISION
            rev = None
        out.append({"id": name.replace("--", "/", 1), "source": "pulled",
                    "revision": None if rev == "unknown" else rev})
    return out


def list_models(cwd: Path | None = None) -> list[dict[str, str | None]]:
    """The project's pulled models (from the settings file's folder, else ``cwd``), then the
    bundled catalog; ``[{"id", "source", "revision"}]``. The catalog keeps no revision."""
    from tpcheck.settings import find_settings_file

    here = (cwd or Path.cwd()).resolve()
    found = find_settings_file(here)
    project = found.parent if found is not None else here
    rows = pulled_models(project)
    rows.extend({"id": i, "source": "catalog", "revision": None} for i in catalog.all_ids())
    return rows
