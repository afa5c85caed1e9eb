"""The lint run: files → deployments → model shapes → rules → suppressed findings.

One run shares one Resolver (one lookup per distinct model) and one shape per config, so a
thousand manifests naming the same model parse its config.json once. A file that cannot be read,
or a rule that fails on odd input, becomes a one-line error; the other files are still checked.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping

from tpcheck import UsageError
from tpcheck.checks import Rule, UnknownRule, rule_options, selected
from tpcheck.checks._options import refused as refused_value
from tpcheck.checks._options import root_cause
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.hardware.gpus import GPU, find_gpu
from tpcheck.lint_nearest import finding_order, run_with_nearest_settings, settings_file_for
from tpcheck.lint_values import (
    MAX_GROUP,
    PHYSICS_NAMES,
    absurd_size,
    below_minimum,
    is_tpu,
    one_per_span,
    physics_refusal,
)
from tpcheck.models.shape import ModelShape
from tpcheck.physics.plan import Memo
from tpcheck.record import replace
from tpcheck.result import LintResult
from tpcheck.settings import Settings
from tpcheck.sources import iter_files, read_path
from tpcheck.sources.base import (
    MAX_BYTES,
    RECOVERED_NOTE,
    RUNTIME_NOTE,
    Deployment,
    ReadResult,
    SourceError,
)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

    from tpcheck.lint_ignores import Suppression
    from tpcheck.sources.base import ModelHint

    # (model, revision, the file's folder); then the served name and the file's other hints
    PlainKey = tuple[str, str | None, str | None]
    ResolveKey = tuple[str, str | None, str | None, str | None, tuple[ModelHint, ...]]
    RuleFunction = Callable[[CheckContext, Rule], Iterator[Finding]]

# `nvidia-smi topo -m` prints a few KiB even on a 72-GPU NVL rack; 1 MiB bounds what is read.
MAX_TOPOLOGY_BYTES = 1024 * 1024


class Linter:
    """One run's shared state: rules, resolver, shape cache, GPU and topology."""

    def __init__(self, settings: Settings, *, gpu_flag: str | None = None,
                 report_unused_ignores: bool = False, gpu_from: str = "--gpu") -> None:
        """``gpu_from`` names where ``gpu_flag`` came from in messages (the editor's
        ``tpcheck.gpu`` setting, not the command line's flag, in the Language Server)."""
        from tpcheck.models.resolve import Resolver

        if settings.rules:  # checked once, normalised: rules read them by their own spelling
            settings = replace(settings, rules=rule_options(settings.rules,
                                                            settings.source or "settings"))
        self.settings = settings
        self.rules: list[Rule] = selected(settings.select, settings.ignore)
        # The option rules by the outcome they report (rows of checks.registry): the bad-value
        # one also reports values below the engine's minimum and values the physics refuses,
        # and those of a misspelt, ambiguous or refused option are root causes (see below).
        self._rule_rows: tuple[list[Rule], list[tuple[Rule, frozenset[str]]]] | None = None
        self._functions: dict[str, RuleFunction] = {}  # by code, imported when first run
        self.by_outcome: dict[str, Rule] = {
            o: r for r in self.rules if (o := r.param("outcome")) is not None}
        for pattern, codes in settings.per_file_ignores.items():
            try:
                selected((), codes)  # the same codes and prefixes --ignore accepts
            except UnknownRule as e:
                problem = str(e).strip("'\"")
                raise UnknownRule(f"{settings.source or 'settings'}: per-file-ignores "
                                  f"{pattern!r}: {problem}") from None
        self.resolver = Resolver(model_config=settings.model_config, mappings=settings.models,
                                 offline=settings.offline or None, timeout=settings.hub_timeout,
                                 base_dir=settings.root)
        self.shapes: dict[tuple[str, str], ModelShape | str] = {}
        # resolutions by what decides them (_resolution): a reference that resolves as
        # written by PlainKey, the others (hinted, or errors) with the hints in the key
        self._resolved: dict[PlainKey, Any] = {}
        self._hinted: dict[ResolveKey, Any] = {}
        # parsed shapes (or ConfigError texts) by (config read, no quant config, quant assumed)
        self._parsed: dict[tuple[str, bool, object], ModelShape | str] = {}
        self._evaluations = Memo()
        self._suppressions: dict[str, list[Suppression]] = {}
        self.gpu_flag: GPU | None = None
        self.gpu_from = gpu_from
        self.gpu_setting: GPU | None = None
        if gpu_flag:
            self.gpu_flag = _gpu_or_error(gpu_flag, gpu_from)
        elif settings.gpu:
            self.gpu_setting = _gpu_or_error(settings.gpu, "[tool.tpcheck] gpu")
        self.topology: object | None = None
        self.topology_error: SourceError | None = None
        if settings.topology:
            self._load_topology(settings.topology)
        self.report_unused = report_unused_ignores

    def _load_topology(self, path: str) -> None:
        from tpcheck.hardware.topology import TopologyError, parse_topology
        from tpcheck.sources.files import read_capped

        try:  # `nvidia-smi topo -m` is a few KiB; /dev/zero would never end, a pipe is fine
            text = read_capped(path, MAX_TOPOLOGY_BYTES, pipe_ok=True).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = getattr(e, "strerror", None) or e
            self.topology_error = SourceError(path, 1, 1, f"cannot read topology: {why}")
            return
        try:
            self.topology = parse_topology(text, path)
        except TopologyError as e:
            # its text already says "PATH:LINE: problem": placed at that line, said once
            placed = re.match(rf"{re.escape(path)}:(\d+): (.*)", str(e), re.S)
            line, problem = (int(placed[1]), placed[2]) if placed else (1, str(e))
            self.topology_error = SourceError(path, line, 1, problem)

    # ---- model and GPU for one deployment ---------------------------------------------------
    def shape_for(self, d: Deployment) -> tuple[ModelShape | None, str | None, str | None]:
        """(shape, problem, source) — problem is TP000's text when the config was not found."""
        from tpcheck.models.config import ConfigError, parse_config
        from tpcheck.models.resolve import ResolveError

        model = d.model if d.model is not None else d.unresolved.get("model")
        if not model and not d.model_hints:
            if RECOVERED_NOTE in d.notes:
                return None, None, None  # the parse error already speaks for this file
            return None, "the deployment names no model", None
        model = model or ""  # no reference, only hints (KServe storageUri): they are tried
        r_or_e = self._resolution(d, model)
        if r_or_e is None:
            pkey = self._plain_key(d, model)
            try:
                r_or_e = self.resolver.resolve_hinted(
                    model, served_name=d.served_model_name, revision=d.revision,
                    base_dir=pkey[2], file_hints=[(h.value, h.origin) for h in d.model_hints])
            except ResolveError as e:
                r_or_e = e
            except (OSError, RuntimeError, ValueError, RecursionError) as e:
                # A name the OS or pathlib refuses must cost this deployment, not the run.
                r_or_e = ResolveError("not-found", f"the model name cannot be looked up "
                                                   f"({type(e).__name__}: {e})")
            if isinstance(r_or_e, ResolveError):
                # kept for the run: without its traceback, whose frames would pin this file's
                # read result (every word's positions) for as long as the cache lives
                r_or_e.__traceback__ = r_or_e.__context__ = r_or_e.__cause__ = None
            if isinstance(r_or_e, ResolveError) or r_or_e.hint is not None:
                self._hinted[_hinted_key(pkey, d)] = r_or_e
            else:  # it resolved as written: no hint is asked, whatever the file's hints
                self._resolved[pkey] = r_or_e
        if isinstance(r_or_e, ResolveError):
            if RUNTIME_NOTE in d.notes:  # a KServe runtime alone: the model is not its to name
                return None, None, None
            return None, str(r_or_e), None
        r = r_or_e
        key = (r.location, model)
        cached = self.shapes.get(key)
        if cached is None:
            # One parse per config read (and quantization assumed): the model's name is the
            # only field another name changes (a config's errors name its path).
            pkey2 = (r.location, r.quant_config is None, r.assumed_quant)
            parsed = self._parsed.get(pkey2)
            if parsed is None:
                try:
                    parsed = parse_config(r.config, name=model, path=r.location,
                                          quant_cfg=r.quant_config)
                    if r.assumed_quant is not None:  # a repack: its base's shape, its name's
                        parsed = replace(parsed, quant=r.assumed_quant)  # quantization
                except ConfigError as e:
                    parsed = str(e)
                self._parsed[pkey2] = parsed
            cached = parsed if isinstance(parsed, str) or parsed.name == model else replace(
                parsed, name=model)
            self.shapes[key] = cached
        if isinstance(cached, str):
            return None, cached, None
        hint = f" ({r.hint})" if r.hint else ""
        return cached, None, f"{r.source}: {r.location}{hint}"

    @staticmethod
    def _plain_key(d: Deployment, model: str) -> PlainKey:
        """(model, revision, the file's folder): what decides a reference that resolves as
        written, since the file's hints are asked only when it does not. The folder is where a
        relative model path is looked for."""
        base = (os.path.dirname(d.path) or ".") if d.path not in ("-", "") else None
        return (model, d.revision, base)

    def _resolution(self, d: Deployment, model: str) -> Any:
        """The run's Resolution or ResolveError for ``d``, None before it was looked up: kept
        by (model, revision, folder) when the reference resolved as written, else with the
        served name and the file's other hints too, which can change the answer (a repository
        names the same few models in hundreds of files, and each lookup probes the file
        system)."""
        pkey = self._plain_key(d, model)
        hit = self._resolved.get(pkey)
        if hit is None and self._hinted:
            hit = self._hinted.get(_hinted_key(pkey, d))
        return hit

    def model_hint(self, d: Deployment) -> str | None:
        """After ``shape_for``: the hint that named ``d``'s model (folder name, served name),
        None when the reference resolved as written."""
        model = d.model if d.model is not None else d.unresolved.get("model")
        if not model and not d.model_hints:
            return None
        return getattr(self._resolution(d, model or ""), "hint", None)

    def model_fix(self, d: Deployment) -> str | None:
        """After ``shape_for``: TP000's fix when a config.json was found, or its path given, but
        it cannot be used (malformed JSON, not a model config, a --model-config or mapping path
        that does not exist): which file and what to change there. None when no config was
        found, where the advice to find one (pull, --model-config, a mapping) applies."""
        from tpcheck.models.resolve import ResolveError

        model = d.model if d.model is not None else d.unresolved.get("model")
        if not model and not d.model_hints:
            return None
        hit = self._resolution(d, model or "")
        if isinstance(hit, ResolveError):
            if hit.kind not in ("bad-json", "not-found") or not hit.tried:
                return None
            origin = hit.tried[-1]
            if hit.kind == "not-found":  # only a path the user gave is theirs to correct
                if origin.startswith("--model-config "):
                    why = ("it names " + hit.message.split("not a regular file (", 1)[1]
                           .split(")", 1)[0] if "not a regular file (" in hit.message
                           else "the path given does not exist")
                    return ("point --model-config at the model's config.json (or the folder "
                            f"holding it): {why}")
                if origin.startswith("mapping "):
                    return (f"correct the [tool.tpcheck.models] mapping of {model!r}: it names "
                            "a path with no config.json")
                return None
            from tpcheck.lint_config_fix import problem_file  # a config that cannot be used

            problem, file = hit.message, problem_file(hit.message)
        elif hit is not None:
            parsed = self.shapes.get((hit.location, model or ""))
            if not isinstance(parsed, str):
                return None  # parsed: a shape, no problem
            problem, origin, file = parsed, hit.source, hit.location
        else:
            return None
        from tpcheck.lint_config_fix import unusable_config_fix

        return unusable_config_fix(problem, file, origin, model or "")

    def gpu_for(self, d: Deployment) -> tuple[GPU | None, str]:
        """The manifest's own GPU wins (it is where the pod lands); --gpu, then the settings,
        stand in for manifests that name none. A TPU manifest has no GPU."""
        if is_tpu(d):
            return None, f"manifest ({d.gpu_product}: not a GPU)"
        if d.gpu_product:
            g = find_gpu(d.gpu_product)
            if g is None:
                from tpcheck.hardware.machines import find_machine, machine_gpu

                m = find_machine(d.gpu_product)
                g = machine_gpu(m) if m is not None else None
            if g is not None:
                return g, f"manifest ({d.gpu_product})"
        if self.gpu_flag is not None:
            return self.gpu_flag, self.gpu_from
        if self.gpu_setting is not None:
            return self.gpu_setting, "[tool.tpcheck] gpu"
        return None, ""

    def context_for(self, d: Deployment) -> CheckContext:
        """What the rules see for ``d`` (model shape, GPU, settings, this run's evaluations):
        for a caller that wants the same figures as the rules (``tpcheck diff``)."""
        shape, problem, source = self.shape_for(d)
        gpu, origin = self.gpu_for(d)
        return CheckContext(d, shape=shape, settings=self.settings, gpu=gpu, gpu_origin=origin,
                            model_problem=problem, model_source=source, topology=self.topology,
                            evaluations=self._evaluations)

    # ---- one file ---------------------------------------------------------------------------
    def lint_read(self, rr: ReadResult, out: LintResult) -> None:
        if not rr.skipped:  # a FIFO or a file over the cap was never read: not "1 file read"
            out.files += 1
        # a side file's error (a chart's values.yaml every template reads) is said once
        out.errors.extend(e for e in rr.errors if e.path == rr.path or e not in out.errors)
        out.notes.extend(rr.notes)
        # the suppression and group modules load only for a file that needs them: a comment
        # naming tpcheck (inline_suppressions' own first test), a group of several pods
        sups: list[Suppression] = []
        if rr.text and "tpcheck" in rr.text:
            from tpcheck.lint_ignores import inline_suppressions

            sups = inline_suppressions(rr.text)
        used: set[int] = set()
        file_ignores = self._file_ignores(rr.path)
        linted = [(d, self.lint_deployment(d, out)) for d in rr.deployments]
        out.deployments += len(linted)
        if any((d.group_size or 0) > 1 for d, _ in linted):
            from tpcheck.lint_groups import merge_groups

            linted = merge_groups(linted)
        for d, found in linted:
            for f in found:
                if f.code.startswith(file_ignores):
                    out.suppressed += 1
                    continue
                if any(f.code in codes for codes in d.ignores.values()):
                    out.suppressed += 1
                    continue
                if f.span.path != rr.path:
                    # read through a kustomize overlay: the comment is looked for in the file
                    # that wrote the value (a base, a patch)
                    from tpcheck.lint_ignores import suppressed_by

                    if suppressed_by(f, self._other_suppressions(f.span.path),
                                      f.span.line) is not None:
                        out.suppressed += 1
                        continue
                    out.findings.append(f)
                    continue
                if not sups:
                    out.findings.append(f)
                    continue
                from tpcheck.lint_ignores import suppressed_by

                hit = suppressed_by(f, sups, d.span.line)
                if hit is not None:
                    used.add(hit.line)
                    out.suppressed += 1
                    continue
                out.findings.append(f)
        if self.report_unused:
            lines = (rr.text or "").splitlines()
            for s in sups:
                if s.line not in used:
                    out.unused_ignores.append((rr.path, s.line, lines[s.line - 1].strip()))

    def _other_suppressions(self, path: str) -> list[Suppression]:
        """Inline suppressions of a file a finding points into other than the one read."""
        hit = self._suppressions.get(path)
        if hit is None:
            from tpcheck.lint_ignores import inline_suppressions
            from tpcheck.sources.files import decode_utf8_sig, read_capped

            try:  # a base or patch the overlay read, through the one side-file reader
                hit = inline_suppressions(decode_utf8_sig(read_capped(path, MAX_BYTES)))
            except (OSError, UnicodeDecodeError):
                hit = []
            self._suppressions[path] = hit
        return hit

    def lint_deployment(self, d: Deployment, out: LintResult) -> list[Finding]:
        absurd = absurd_size(d)
        if absurd is not None:
            out.errors.append(absurd)
            return []
        shape, problem, source = self.shape_for(d)
        gpu, origin = self.gpu_for(d)
        ctx = CheckContext(d, shape=shape, settings=self.settings, gpu=gpu, gpu_origin=origin,
                           model_problem=problem, model_source=source,
                           model_fix=self.model_fix(d) if problem else None,
                           model_hint=self.model_hint(d) if shape is not None else None,
                           topology=self.topology,
                           evaluations=self._evaluations)
        found: list[Finding] = []
        late: list[Finding] = []  # after the rules: TP003 from the table words it better
        bad_value = self.by_outcome.get("bad_value")
        below = below_minimum(d)
        tp_unknown = "tensor_parallel_size" in d.unresolved
        tpu = is_tpu(d)  # GPU memory and link physics do not apply to a TPU slice
        physics = shape is not None and not tp_unknown and not tpu
        if below:
            # A size or limit the engine refuses: TP003 says so (issue 17: the manifest's
            # mistake, not tpcheck's input error). Only the command-line rules run on such a
            # launch; the layout rules would compute with a value no engine accepts (issue 18).
            # Each bad value is its own finding (issue 28: an unknown --kv-cache-dtype beside
            # --gpu-memory-utilization 90 vanished): the names the physics refuses are looked
            # at with the refused sizes at the engine's defaults.
            late.extend(self._below_findings(d, ctx, below, bad_value, physics))
            return one_per_span(self._command_line_findings(ctx), late)
        cause = root_cause(d) if self.by_outcome else None
        if cause is not None and cause[0].outcome in self.by_outcome:
            # Root cause first: an option the capacity figures rest on is misspelt, ambiguous or
            # refused (``--tensor-parallel-sise 8``). Its finding says so; the capacity rules
            # would compute with the engine's default in its place (t = 1), so they stay silent.
            found = self._command_line_findings(ctx)
            # the names the physics refuses are bad values of their own (issue 28)
            late = self._below_findings(d, ctx, [], bad_value, physics)
            return one_per_span(found, late)
        if physics:
            refusals = self._refusals(d, ctx, bad_value)
            if isinstance(refusals, SourceError):
                out.errors.append(refusals)
                return []
            # The manifest's values, not tpcheck's input, are wrong: say so (TP003) and check
            # the rest as the engine's defaults would run it (issue 17).
            refused_findings, d, ctx = refusals
            late.extend(refused_findings)
        unresolved = d.unresolved.keys()  # usually empty: then no rule is skipped for it
        # What this launch lacks of what rules need (checks.registry): a rule that needs one
        # is skipped, asked once per rule as one set operation.
        s = ctx.shape  # (the rules' own: after a refused value, ctx is the defaults')
        missing = {need for need, lacking in (
            ("gpu_physics", tpu),
            ("shape", shape is None),
            ("known_tp", tp_unknown),  # t is an expression tpcheck cannot evaluate
            ("topology", ctx.topology is None),  # no nvidia-smi matrix to place the group on
            ("model_problem", s is not None or ctx.model_problem is None),
            ("latent_cache", s is None or not s.latent_cache),
            ("experts", s is not None and s.moe is None),
        ) if lacking}
        rows = self._rows()  # (first: a new rules list also clears the functions)
        functions = self._functions
        for rule, needs in rows:
            if not missing.isdisjoint(needs):
                continue
            if unresolved and not unresolved.isdisjoint(rule.depends_on):
                continue  # a value the rule's figures need is an expression: no guessed finding
            check = functions.get(rule.code)
            if check is None:  # its module loads the first time a launch asks it
                check = functions[rule.code] = rule.function
            try:
                found.extend(check(ctx, rule))
            except Exception as e:
                out.errors.append(SourceError(
                    d.path, d.span.line, d.span.column,
                    f"internal error in {rule.code}: {type(e).__name__}: {e} "
                    "(rerun with --debug)"))
                if os.environ.get("TPCHECK_DEBUG"):
                    raise
        return one_per_span(found, late)

    def _rows(self) -> list[tuple[Rule, frozenset[str]]]:
        """Each selected rule with what it needs, read once per run rather than per deployment
        (20 rules × every launch); rebuilt, with the functions, when ``rules`` is replaced."""
        rows = self._rule_rows
        if rows is None or rows[0] is not self.rules:
            rows = self._rule_rows = (self.rules, [(r, r.needs) for r in self.rules])
            self._functions = {}
        return rows[1]

    def _command_line_findings(self, ctx: CheckContext) -> list[Finding]:
        """The rules that read only the command line, for a launch whose layout the other rules
        would compute with a value the engine refuses or a default in a misspelt value's place."""
        found: list[Finding] = []
        for rule in self.rules:
            if "valid_layout" not in rule.needs:
                found.extend(rule.check(ctx))
        return found

    def _below_findings(self, d: Deployment, ctx: CheckContext,
                        below: list[tuple[str, str, str]], bad_value: Any,
                        physics: bool) -> list[Finding]:
        """A TP003 for each value below what the engine accepts and, where the physics applies
        (``physics``), for each name it refuses, looked at with those values at the defaults."""
        out: list[Finding] = []
        for name, head, detail in below:
            if bad_value is not None:
                out.append(ctx.finding(
                    bad_value, head, notes=(detail, "the layout rules were not run"),
                    span=d.span_of(name), fix="give it a value the engine accepts"))
        if physics:
            probe = replace(d, **{name: None for name, _, _ in below})
            refusals = self._refusals(probe, ctx, bad_value)
            if not isinstance(refusals, SourceError):
                out.extend(refusals[0])
        return out

    def _refusals(self, d: Deployment, ctx: CheckContext, bad_value: Any
                  ) -> tuple[list[Finding], Deployment, CheckContext] | SourceError:
        """A TP003 for each value the shared physics refuses (--quantization, --dtype,
        --kv-cache-dtype: each its own finding, not only the first), with the deployment and
        context that run the rules at the engine's defaults for them; or the one error for a
        deployment the physics cannot evaluate."""
        out: list[Finding] = []
        for _ in range(len(PHYSICS_NAMES)):
            refused = physics_refusal(d, ctx)
            if refused is None or isinstance(refused, SourceError):
                return refused or (out, d, ctx)
            name, message = refused
            if bad_value is not None:
                out.append(refused_value(ctx, bad_value, name, message))
            d = replace(d, **{name: None})
            ctx = CheckContext(d, shape=ctx.shape, settings=self.settings, gpu=ctx.gpu,
                               gpu_origin=ctx.gpu_origin, model_problem=ctx.model_problem,
                               model_source=ctx.model_source, model_fix=ctx.model_fix,
                               model_hint=ctx.model_hint, topology=self.topology,
                               evaluations=self._evaluations)
        refused = physics_refusal(d, ctx)
        return refused if isinstance(refused, SourceError) else (out, d, ctx)

    def _file_ignores(self, path: str) -> tuple[str, ...]:
        """Codes and prefixes (``TP2``) ignored for ``path``; ``ALL`` ignores every code."""
        pfi: Mapping[str, tuple[str, ...]] = self.settings.per_file_ignores
        if not pfi:
            return ()
        rel = path
        if self.settings.root:
            try:
                rel = os.path.relpath(path, self.settings.root)
            except ValueError:
                rel = path
        codes: set[str] = set()
        for pat, cs in pfi.items():
            if fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(path, pat):
                codes.update(cs)
        return ("TP",) if "ALL" in codes else tuple(codes)

    def run(self, paths: Iterable[str], *, stdin_text: str | bytes | None = None,
            stdin_filename: str | None = None) -> LintResult:
        out = LintResult()
        if self.topology_error is not None:
            out.errors.append(self.topology_error)
        from tpcheck.sources.files import run_over

        paths = list(paths)
        with run_over(paths):
            for p in iter_files(paths, out.errors):
                self.lint_path(p, out, stdin_text=stdin_text, stdin_filename=stdin_filename)
        out.findings.sort(key=finding_order)
        return out

    def lint_path(self, p: str, out: LintResult, *, stdin_text: str | bytes | None = None,
                  stdin_filename: str | None = None) -> None:
        """Read and check one file (``-``: ``stdin_text``) into ``out``."""
        if p == "-":
            rr = read_path("-", stdin_text or "", stdin_filename=stdin_filename or "stdin",
                           max_bytes=self.settings.max_file_size)
        else:
            rr = read_path(p, max_bytes=self.settings.max_file_size)
        self.lint_read(rr, out)


def _hinted_key(pkey: PlainKey, d: Deployment) -> ResolveKey:
    """``pkey`` with what else can decide a reference that does not resolve as written: the
    served name and the file's other model hints."""
    return (pkey[0], pkey[1], pkey[2], d.served_model_name, d.model_hints)


def _gpu_or_error(name: str, where: str) -> GPU:
    g = find_gpu(name)
    if g is None:
        from tpcheck.hardware.gpus import gpu_names

        raise UsageError(f"{where}: unknown GPU {name!r}; known: {', '.join(gpu_names())}")
    return g


def exit_code(result: LintResult, fail_on: str, streamed: Iterable[Severity] = ()) -> int:
    """2 on an input error, 1 on a finding at or above ``fail_on`` (among ``result``'s and the
    severities of those already written and let go, ``streamed``), else 0."""
    if result.errors:
        return 2
    level = Severity(fail_on).rank
    return 1 if any(s.rank >= level for s in
                    (*streamed, *(f.severity for f in result.findings))) else 0


__all__ = ["MAX_GROUP", "LintResult", "Linter", "exit_code", "finding_order",
           "is_tpu", "run_with_nearest_settings",
           "settings_file_for"]


