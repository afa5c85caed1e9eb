"""``tpcheck inspect PATH...``: what the readers extracted, before any rule runs."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from tpcheck import UsageError
from tpcheck.commands import base
from tpcheck.oneline import one_line
from tpcheck.sources import iter_files, read_path, read_stdin
from tpcheck.sources.base import Deployment, ReadResult, SourceError

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from pathlib import Path

    from tpcheck.engines.release import Release
    from tpcheck.lint import Linter

INSPECT_KEYS = (
    "path", "line", "engine", "model", "tensor_parallel_size", "pipeline_parallel_size",
    "data_parallel_size", "max_num_seqs", "max_model_len", "gpu_memory_utilization",
    "kv_cache_dtype", "gpus_requested", "gpu",
)

DESCRIPTION = """\
Show each engine launch found in PATH..., the value and position of every field, and where
the model's config.json came from (the same resolver the rules use).

Exit 0; 2 when a folder could not be listed, no file could be read, or the command line is
wrong."""


def deployment_json(d: Deployment) -> dict[str, object]:
    """DESIGN.md's inspect shape, plus ``spans`` (field → span) and the rest of what was read."""
    out: dict[str, object] = {
        "path": d.path,
        "line": d.span.line,
        "engine": d.engine,
        "model": d.model,
        "tensor_parallel_size": d.tensor_parallel_size,
        "pipeline_parallel_size": d.pipeline_parallel_size,
        "data_parallel_size": d.data_parallel_size,
        "max_num_seqs": d.max_num_seqs,
        "max_model_len": d.max_model_len,
        "gpu_memory_utilization": d.gpu_memory_utilization,
        "kv_cache_dtype": d.kv_cache_dtype,
        "gpus_requested": d.gpus_requested,
        "gpu": d.gpu_product,
    }
    out["spans"] = {k: s.to_json() for k, s in sorted(d.spans.items())}
    out["unresolved"] = dict(d.unresolved)
    out["image"] = d.image
    out["engine_version"] = d.engine_version
    out["enable_expert_parallel"] = d.enable_expert_parallel
    out["enable_dp_attention"] = d.enable_dp_attention
    out["attn_dp_size"] = d.attn_dp_size
    out["group_size"] = d.group_size
    out["pd_role"] = d.pd_role
    out["notes"] = list(d.notes)
    return out


class _ModelSources:
    """The lint run's resolvers, so inspect says what the rules will see for each model: one
    linter per settings file, each file under the settings lint would use for it
    (``settings_file_for``), so a sub-folder's ``offline = true`` or models table applies."""

    def __init__(self, offline: bool | None, model_config: str | None,
                 stdin_filename: str | None, engine_version: str | None = None) -> None:
        from pathlib import Path

        from tpcheck.settings import find_settings_file

        self.offline, self.model_config = offline, model_config
        self.engine_version = engine_version
        self.stdin_filename = stdin_filename
        self._linters: dict[Path | None, Linter | SourceError] = {}
        self._nearest: dict[str, Path | None] = {}
        self._by_path: dict[str, Path | None] = {}
        here = self._linter(find_settings_file(Path.cwd()))
        if isinstance(here, SourceError):  # the current folder's: a usage error, as in lint
            raise UsageError(f"{here.path}: {here.message}")

    def _linter(self, sfile: Path | None) -> Linter | SourceError:
        from tpcheck.checks import UnknownRule
        from tpcheck.lint import Linter
        from tpcheck.settings import SettingsError, load_settings

        hit = self._linters.get(sfile)
        if hit is None:
            try:
                settings = load_settings(sfile).with_flags(offline=self.offline,
                                                           model_config=self.model_config,
                                                           engine_version=self.engine_version)
                hit = Linter(settings)  # checks rule options and per-file-ignores too
            except (SettingsError, UnknownRule) as e:  # UnknownRule is a KeyError: quoted
                text = str(e).strip("'\"")
                if sfile is None:  # no settings file: a flag's error, for the whole run
                    raise UsageError(text) from None
                hit = SourceError(str(sfile), 1, 1, text.removeprefix(f"{sfile}: "))
            self._linters[sfile] = hit
        return hit

    def add(self, path: str) -> SourceError | None:
        """Note the settings ``path`` is read under; the error when that file is broken."""
        from tpcheck.lint import settings_file_for

        sfile = settings_file_for(path, self.stdin_filename, self._nearest)
        self._by_path[self.stdin_filename if path == "-" and self.stdin_filename else path] = sfile
        got = self._linter(sfile)
        return got if isinstance(got, SourceError) else None

    def resolve(self, d: Deployment) -> tuple[str | None, str | None]:
        linter = self._linters.get(self._by_path.get(d.path))
        if linter is None or isinstance(linter, SourceError):
            return None, "not resolved: the settings file that governs this file is broken"
        _, problem, source = linter.shape_for(d)
        return source, problem

    def json(self, d: Deployment) -> dict[str, object]:
        source, problem = self.resolve(d)
        rel = self.release(d)
        return {"model_config": source, "model_problem": problem,
                "release": {"version": rel.version, "source": rel.source, "pinned": rel.pinned,
                            "option_table": rel.table_version}}

    def release(self, d: Deployment) -> Release:
        """The release the rules will check this deployment against (lint's order)."""
        from tpcheck.engines.release import resolve

        linter = self._linters.get(self._by_path.get(d.path))
        s = linter.settings if linter is not None and not isinstance(linter, SourceError) else None
        return resolve(d.engine, image=d.image, image_version=d.engine_version,
                       setting=s.engine_version if s else self.engine_version,
                       setting_from=s.engine_version_from if s else None,
                       version_from=d.engine_version_from)

    def text(self, d: Deployment) -> str:
        source, problem = self.resolve(d)
        if source:
            from tpcheck.report.paths import source_label

            return source_label(source)  # catalog Qwen/Qwen3-8B, not the site-packages path
        return f"not found: {problem}" if problem else "none named here (see the note)"

    def predicted(self, d: Deployment) -> tuple[str, ...] | str:
        """The start-up lines the engine would log for this launch (issue 32), or why there
        are none: the physics' prediction in the engine's own words, to diff against a pod
        log."""
        from tpcheck.checks.context import CheckContext
        from tpcheck.physics.plan import engine_log_lines

        linter = self._linters.get(self._by_path.get(d.path))
        if linter is None or isinstance(linter, SourceError):
            return "no model"
        shape, _problem, _source = linter.shape_for(d)
        gpu, origin = linter.gpu_for(d)
        if shape is None:
            return "no model"
        if gpu is None:
            return "no GPU known (the manifest names none; set gpu in the settings)"
        ctx = CheckContext(d, shape=shape, settings=linter.settings, gpu=gpu, gpu_origin=origin)
        if any(k in d.unresolved for k in ("tensor_parallel_size", "pipeline_parallel_size")):
            return "layout unresolved"
        ev = ctx.evaluation
        lines = engine_log_lines(ev, d.engine)
        if not lines:
            return ev.fit_reason() or "the engine does not start"
        return tuple(f"{x} ({gpu.key}, t={ev.tp})" if i == 0 else x
                     for i, x in enumerate(lines))


def _cell(v: object) -> str:
    return "-" if v is None else str(v)


@click.command("inspect", cls=base.Command, help=DESCRIPTION)
@base.paths_argument()
@base.format_option("text", "json")
@base.option("-v", "--verbose", is_flag=True, help="Also list files with no engine launch.")
@base.stdin_filename_option
@base.offline_option
@base.model_config_option
@base.option("--engine-version", type=base.Release(), metavar="VERSION",
             help="Engine release the rules check against when no image pins one.")
def command(**params: Any) -> int:
    return run(base.parsed(params))


def run(args: base.Args) -> int:
    paths: list[str] = list(args.paths)
    fmt: str = args.fmt
    verbose: bool = args.verbose
    stdin_filename: str | None = args.stdin_filename
    models = _ModelSources(args.offline, args.model_config, stdin_filename, args.engine_version)
    results: list[ReadResult] = []
    walk_errors: list[SourceError] = []
    from tpcheck.sources.files import run_over

    with run_over(paths):
        for p in iter_files(paths, walk_errors):
            problem = models.add(p)
            if problem is not None and problem not in walk_errors:
                walk_errors.append(problem)  # its files are still shown, models not resolved
            text = read_stdin() if p == "-" else None
            results.append(read_path(p, text, stdin_filename=stdin_filename))
    errors = walk_errors + [e for r in results for e in r.errors]
    for e in errors:
        print(one_line(str(e)), file=sys.stderr)
    deployments = [d for r in results for d in r.deployments]
    if fmt == "json":
        def predicted(d: Deployment) -> dict[str, object]:
            got = models.predicted(d)
            return ({"predicted_log": list(got)} if isinstance(got, tuple)
                    else {"predicted_log": None, "predicted_problem": got})

        print(json.dumps({
            "deployments": [{**deployment_json(d), **models.json(d), **predicted(d)}
                            for d in deployments],
            "errors": [e.to_json() for e in errors],
        }, indent=2))
    else:
        for r in results:
            if not r.deployments:
                if verbose and not r.errors:
                    print(one_line(f"{r.path}: no engine launch"))
                continue
            for d in r.deployments:
                tp = d.spans.get("tensor_parallel_size")
                where = f"{d.path}:{d.span.line}"
                print(one_line(
                    f"{where}: {d.engine} model={_cell(d.model)} tp={_cell(d.tensor_parallel_size)}"
                    f" pp={_cell(d.pipeline_parallel_size)} dp={_cell(d.data_parallel_size)}"
                    f" max_num_seqs={_cell(d.max_num_seqs)} max_model_len={_cell(d.max_model_len)}"
                    f" gpus={_cell(d.gpus_requested)} gpu={_cell(d.gpu_product)}"
                    + (f" (tp at {tp.line}:{tp.column})" if tp else "")
                ))
                print(one_line(f"    config: {models.text(d)}"))
                print(one_line(f"    release: {models.release(d)}"))
                got = models.predicted(d)
                if isinstance(got, tuple):
                    for x in got:
                        print(one_line(f"    predicted: {x}"))
                else:
                    print(one_line(f"    predicted: none ({got})"))
                for name, expr in sorted(d.unresolved.items()):
                    print(one_line(f"    {name}: unresolved {expr}"))
                for note in d.notes:
                    print(one_line(f"    note: {note}"))
    if walk_errors or (errors and not deployments and all(r.errors for r in results)):
        return 2  # a folder went unread, or nothing could be read
    return 0
