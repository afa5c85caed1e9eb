"""Find a model's config.json from where users keep it, without ever freezing the caller.

A manifest names ``meta-llama/Llama-3.1-70B-Instruct``, ``/models/llama-70b`` or ``$(MODEL_ID)``;
every rule needs that model's config.json. ``Resolver.resolve(model, revision=..., base_dir=...)``
returns a :class:`Resolution` or raises :class:`ResolveError`. Places are tried in this order:

1. ``model_config`` (``--model-config PATH``, a config.json or a folder holding one) wins for every
   model; then ``mappings`` (``[tool.tpcheck.models]``): the reference as written maps to a path
   (config.json or folder; source ``mapping``) or to a hub id, which is resolved by steps 2-5.
   Relative paths here are taken from the constructor's ``base_dir`` (the settings file's folder),
   else ``cwd``.
2. A local folder named by the reference that exists, relative to ``resolve(base_dir=...)`` (the
   manifest's folder) and then ``cwd``, with a config.json in it (source ``local``).
3. The Hugging Face cache through huggingface_hub's own ``try_to_load_from_cache`` (``HF_HOME``,
   ``HF_HUB_CACHE`` and ``revision`` honoured as the library reads them; source ``hf-cache``).
4. The bundled catalog, exact id or a listed alias, case-insensitive (source ``catalog``); it
   holds one revision per model, so a pinned ``revision`` not in the cache falls back to it.
5. The hub via ``hf_hub_download`` (``HF_ENDPOINT``, ``HF_TOKEN`` honoured) unless offline:
   ``offline=True`` or ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` set. The download runs in a
   child process (``tpcheck.models.hubfetch``) killed after ``timeout`` seconds, because
   huggingface_hub retries a timed-out request with a much longer timeout and a thread cannot be
   stopped; the partial blob it leaves is removed, and a body over ``MAX_CONFIG_BYTES`` by its
   HEAD is not downloaded. The file lands in the normal cache, so the next run finds it in step 3
   (source ``hub`` this time, ``hf-cache`` after).

``hf_quant_config.json`` beside the config (same folder, snapshot or repo) fills ``quant_config``.
References that are still template expressions (``$(MODEL_ID)``, ``${MODEL}``, ``{{ .Values.m }}``,
empty) fail fast with kind ``unresolved`` unless a mapping names them. Each ``ResolveError`` has a
``kind`` (unresolved, gated, not-found, timeout, bad-json, network), a one-line ``message`` that
never contains the token, and ``tried``: every place looked at, for TP000.

One Resolver is one run: results and failures are memoised per (model, revision) so a thousand
manifests naming one model cost one lookup. It is not thread-safe; share it within one thread.
huggingface_hub is imported only when step 3 runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tpcheck.models import catalog, hints
from tpcheck.models.config_files import (
    CONFIG_NAME,
    MAX_CONFIG_BYTES,
    QUANT_NAME,
    config_in,
    load_json,
    not_a_file,
    quant_beside,
)
from tpcheck.models.hub import (
    cache_folder,
    classify_hub_error,
    drop_cache_entry,
    fetch_in_child,
    import_hub,
)
from tpcheck.models.refs import (
    file_hint,
    is_expression,
    is_offline_env,
    is_repo_id,
    looks_like_path,
)
from tpcheck.models.resolve_error import ResolveError, redact, redact_url
from tpcheck.record import record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, Literal

    from tpcheck.models.shape import Quant
    Source = Literal["path", "mapping", "local", "hf-cache", "catalog", "hub"]


@record
class Resolution:
    model: str  # the reference as given
    config: Mapping[str, Any]  # parsed config.json
    quant_config: Mapping[str, Any] | None  # hf_quant_config.json beside it, when present
    source: Source
    location: str  # the file it was read from (a cache snapshot path for hf-cache and hub)
    tried: tuple[str, ...]
    hint: str | None = None  # how the model was guessed (resolve_hinted), for the findings
    # a quantized repack read as its base (tpcheck.models.repacks): the Quant its name says
    assumed_quant: Quant | None = None


def _expand(ref: str) -> Path:
    """``~`` and ``~user`` expanded where the user exists; an unknown user stays as written
    (pathlib raises RuntimeError, which must not stop the run)."""
    try:
        return Path(ref).expanduser()
    except RuntimeError:
        return Path(ref)


def _short(text: str, keep: int = 80) -> str:
    return text if len(text) <= keep else f"{text[:keep]}… ({len(text):,} characters)"


class Resolver:
    """Resolves model references to config.json for one run (see the module docstring)."""

    def __init__(
        self,
        *,
        model_config: str | None = None,
        mappings: Mapping[str, str] | None = None,
        offline: bool | None = None,
        timeout: float = 5.0,
        base_dir: str | None = None,
        cwd: str | None = None,
        use_catalog: bool = True,
    ) -> None:
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        # `tpcheck models pull` wants the hub's own file (HF cache or hub), not the catalog's copy
        self.use_catalog = use_catalog
        self.base_dir = Path(base_dir) if base_dir is not None else self.cwd
        self.model_config = model_config
        self.mappings = dict(mappings or {})
        self.offline = offline
        self.timeout = timeout
        self._remote: dict[tuple[str, str | None], Resolution | ResolveError] = {}
        self._files: dict[Path, Resolution | ResolveError] = {}
        self._resolved: dict[tuple[str, str | None, str | None], Resolution | ResolveError] = {}
        self._hub_down: ResolveError | None = None

    # -- public ---------------------------------------------------------------------------

    def resolve(
        self, model: str, *, revision: str | None = None, base_dir: str | None = None
    ) -> Resolution:
        """The config for ``model``, or ResolveError naming every place tried. Kept per
        (model, revision, base_dir) for the run: ``resolve_hinted`` asks a hint's hub id again
        for its relatives, and a repository's files name the same ids with other hints (on a
        varied corpus 580 asks were 259 distinct)."""
        key = (model, revision, base_dir)
        hit = self._resolved.get(key)
        if hit is None:
            try:
                hit = self._resolve(model, revision, base_dir)
            except ResolveError as e:
                hit = _bare(e)
            self._resolved[key] = hit
        if isinstance(hit, ResolveError):
            raise hit.copy()
        return hit

    def _resolve(self, model: str, revision: str | None, base_dir: str | None) -> Resolution:
        """``resolve`` without its memo: every place, in order (the module docstring)."""
        if self.model_config is not None:
            path = self._anchor(self.model_config)
            return self._from_file(model, path, "path", (f"--model-config {path}",))
        target = self.mappings.get(model)
        if target is None and model.strip() != model:
            target = self.mappings.get(model.strip())
        tried: tuple[str, ...] = ()
        ref = model.strip()
        if target is not None:
            if looks_like_path(target) or self._anchor(target).exists():
                path = self._anchor(target)
                return self._from_file(model, path, "mapping", (f"mapping {model!r} -> {path}",))
            tried = (f"mapping {model!r} -> {target!r}",)
            ref = target.strip()
            pulled = self.mappings.get(ref)
            if pulled is not None and ref != model and (
                    looks_like_path(pulled) or self._anchor(pulled).exists()):
                # the hub id is itself mapped, as `tpcheck models pull` maps what it stored
                path = self._anchor(pulled)
                return self._from_file(model, path, "mapping",
                                       (*tried, f"mapping {ref!r} -> {path}"))
        if is_expression(ref):
            what = f"{model!r}, an expression tpcheck cannot evaluate" if ref else "empty"
            raise ResolveError(
                "unresolved",
                f"model is {what}; pass --model-config PATH or map it in [tool.tpcheck.models]",
                (*tried, "expression: not evaluated"),
            )
        local = self._local(model, ref, base_dir, tried)
        if isinstance(local, Resolution):
            return local
        tried = local
        if looks_like_path(ref):
            raise ResolveError(
                "not-found",
                f"{ref}: no such local folder with {CONFIG_NAME} and not a hub id; "
                "pass --model-config PATH or map it in [tool.tpcheck.models]",
                tried,
            )
        result = self._remote_cached(ref, revision)
        if isinstance(result, ResolveError):
            raise result.with_tried(tried + result.tried)
        return Resolution(
            model,
            result.config,
            result.quant_config,
            result.source,
            result.location,
            tried + result.tried,
        )

    def fetch(self, repo: str, revision: str | None = None) -> Resolution:
        """``repo``'s config.json from the HF cache or the hub only (steps 3 and 5), for
        `tpcheck models pull`; the location is then a cache snapshot path, whose folder name is
        the commit."""
        result = self._remote_cached(repo, revision)
        if isinstance(result, ResolveError):
            raise result.with_tried(result.tried)  # a copy: the cached one gains no traceback
        return result

    def resolve_hinted(
        self,
        model: str,
        *,
        served_name: str | None = None,
        revision: str | None = None,
        base_dir: str | None = None,
        file_hints: Sequence[tuple[str, str]] = (),
    ) -> Resolution:
        """``resolve``, then, when the reference is a local path that does not resolve or an
        expression (or empty), the hints the file gives: ``file_hints`` as (hub id or path,
        where it was read) — env values, Python ``os.getenv`` defaults, KServe ``storageUri`` —,
        the path's folder names, then ``--served-model-name``. A hinted Resolution says which
        hint in ``hint``; when no hint resolves, the first error is raised with the hints tried
        added to it."""
        try:
            return self.resolve(model, revision=revision, base_dir=base_dir)
        except ResolveError as e:
            error = e
        ref = model.strip()
        if model in self.mappings or ref in self.mappings or self.model_config is not None:
            raise error
        is_path = error.kind == "not-found" and looks_like_path(ref) and not is_expression(ref)
        candidates: list[tuple[str, str]] = []
        # readers give file hints only for a reference that is not a literal (an expression, a
        # Python name, a path, none at all), so they are tried whatever the first error was
        if file_hints:
            for value, origin in file_hints:
                candidates.extend(file_hint(value, origin))
        if is_path:
            folder = hints.folder_hint(ref)
            if folder is not None:
                candidates.append((folder[0], f"model taken from the folder name `{folder[1]}`"))
        served = hints.served_hint(served_name)
        if served is not None and (is_path or error.kind == "unresolved"):
            candidates.append((served, f"model taken from --served-model-name `{served}`"))
        failed: list[str] = []
        for hub_id, why in candidates:
            try:
                r = self.resolve(hub_id, base_dir=base_dir)
            except ResolveError as e:
                failed.append(f"{why} -> {hub_id}: {e.kind}")
                continue
            return Resolution(
                model, r.config, r.quant_config, r.source, r.location,
                (*error.tried, *r.tried),
                f"{why} -> {hub_id}; map it in [tool.tpcheck.models] to be exact",
            )
        # nothing named the model exactly: a same-shape relative of a hub id (siblings module)
        asked = [] if is_path or is_expression(ref) else [(ref, "")]
        for hub_id, why in [*asked, *candidates]:
            found = self._relative(hub_id, base_dir)
            if isinstance(found, str):
                failed.append(found)
                continue
            if found is not None:
                r, rel, how = found
                via = f"{why} -> {hub_id}: " if why else ""
                return Resolution(
                    model, r.config, r.quant_config, r.source, r.location,
                    (*error.tried, *failed, *r.tried),
                    f"{via}shape of relative {rel} ({how}); pin it with "
                    "`tpcheck models pull` or [tool.tpcheck.models]", r.assumed_quant,
                )
        if not failed:
            raise error
        hub = [c for c, _ in candidates if "/" in c]  # a hint that names a hub id leads
        lead = f"no config.json found for {hub[0]}; " if hub else ""
        raise ResolveError(error.kind, f"{lead}{error.message} (also tried: "
                           f"{'; '.join(failed)})", (*error.tried, *failed))

    # -- steps ----------------------------------------------------------------------------

    def _relative(self, hub_id: str, base_dir: str | None
                  ) -> tuple[Resolution, str, str] | str | None:
        """(resolution, relative, how its name differs) for a hub id the hub and the catalog do
        not hold (siblings.relative, else a quantized repack's base: tpcheck.models.repacks), a
        line for TP000's tried list when the relative is refused, None when there is none."""
        if not self.use_catalog or not is_repo_id(hub_id) or "/" not in hub_id:
            return None
        try:
            self.resolve(hub_id, base_dir=base_dir)
        except ResolveError as e:
            if e.kind not in ("not-found", "gated"):
                return None  # the hub did not answer: its own file may exist
        else:
            return None  # it resolves exactly; the caller had other reasons to stop
        from tpcheck.models import siblings
        from tpcheck.models.repacks import repack_of

        found = siblings.relative(hub_id)
        repack = repack_of(hub_id) if found is None else None
        if repack is not None:
            found = (repack.base, repack.how)
        if found is None:
            base = siblings.unquantized_base(hub_id)
            return None if base is None else (
                f"relative {base}: same shape, not taken: the figures need {hub_id}'s own "
                "quantization_config (its quantization words are not a rule tpcheck knows)")
        rel, how = found
        try:
            r = self.resolve(rel, base_dir=base_dir)
        except ResolveError as e:
            return f"relative {rel}: {e.kind}"
        # A relative's name and config may be quantized without a word for it (DeepSeek-V3
        # ships FP8): its siblings share that. A quantized name needs a quantized relative; a
        # repack's base must be unquantized, its name's rule pricing the weights.
        said = siblings.quantized_name(hub_id)
        quantized = bool(r.quant_config) or isinstance(r.config.get("quantization_config"), dict)
        if repack is not None:
            return (Resolution(r.model, r.config, None, r.source, r.location, r.tried,
                               assumed_quant=repack.quant), rel, how) if not quantized else (
                f"relative {rel}: already quantized, so -{repack.suffix} is not a rule")
        if said != siblings.quantized_name(rel) or (said and not quantized):
            return f"relative {rel}: quantized otherwise than {hub_id}"
        return r, rel, how

    def _anchor(self, ref: str) -> Path:
        path = _expand(ref)
        return path if path.is_absolute() else self.base_dir / path

    def _from_file(
        self, model: str, path: Path, source: Source, tried: tuple[str, ...]
    ) -> Resolution:
        key = path
        hit = self._files.get(key)
        if hit is None:
            config_path = config_in(path)
            if config_path is None:
                what = (f"no {CONFIG_NAME} in this folder" if path.is_dir()
                        else not_a_file(path))
                origin = {"path": "--model-config", "mapping": "[tool.tpcheck.models] mapping"}
                hit = ResolveError(
                    "not-found", f"{path}: {what} (from {origin.get(source, source)})"
                )
            else:
                try:
                    hit = Resolution(
                        model,
                        load_json(config_path),
                        quant_beside(config_path),
                        source,
                        str(config_path),
                        (),
                    )
                except ResolveError as e:
                    hit = _bare(e)
            self._files[key] = hit
        if isinstance(hit, ResolveError):
            raise hit.with_tried(tried)
        return Resolution(model, hit.config, hit.quant_config, source, hit.location, tried)

    def _local(
        self, model: str, ref: str, base_dir: str | None, tried: tuple[str, ...]
    ) -> Resolution | tuple[str, ...]:
        candidates: list[Path] = []
        expanded = _expand(ref)
        if expanded.is_absolute():
            candidates.append(expanded)
        else:
            for anchor in (Path(base_dir) if base_dir is not None else None, self.cwd):
                if anchor is not None and anchor / expanded not in candidates:
                    candidates.append(anchor / expanded)
        for folder in candidates:
            try:
                exists = folder.exists()
                config = config_in(folder) if exists else None
            except (OSError, ValueError) as e:  # a name over 255 bytes, a NUL byte
                tried += (f"local folder {_short(str(folder))}: {getattr(e, 'strerror', e)}",)
                continue
            if not exists:
                tried += (f"local folder {folder}: missing",)
                continue
            if config is None:
                tried += (f"local folder {folder}: no {CONFIG_NAME}",)
                continue
            return self._from_file(model, folder, "local", (*tried, f"local folder {folder}"))
        return tried

    def _remote_cached(self, repo: str, revision: str | None) -> Resolution | ResolveError:
        key = (repo, revision)
        hit = self._remote.get(key)
        if hit is None:
            try:
                hit = self._remote_lookup(repo, revision)
            except ResolveError as e:
                hit = _bare(e)
            self._remote[key] = hit
        return hit

    def _remote_lookup(self, repo: str, revision: str | None) -> Resolution:
        tried: list[str] = []
        rev = revision or "main"
        folder = cache_folder(repo)
        if not folder.is_dir():
            # Nothing cached for this repo: skip importing huggingface_hub for the cache lookup
            # (~100 ms of start-up); the catalog may answer without it.
            tried.append(f"HF cache {folder.parent} ({repo}@{rev}): not cached")
            return self._after_cache(repo, revision, tried)
        hub = import_hub()
        cache_dir = hub.constants.HF_HUB_CACHE
        try:
            cached = hub.try_to_load_from_cache(repo, CONFIG_NAME, revision=revision)
        except Exception as e:  # an id the library rejects: say so, and go on to the catalog
            cached = None
            tried.append(f"HF cache {cache_dir}: {type(e).__name__}")
        else:
            if isinstance(cached, str):
                quant = hub.try_to_load_from_cache(repo, QUANT_NAME, revision=revision)
                return self._read_snapshot(
                    repo, cached, quant, "hf-cache", (*tried, f"HF cache {cached}")
                )
            state = "known to have no config.json" if cached is not None else "not cached"
            tried.append(f"HF cache {cache_dir} ({repo}@{rev}): {state}")
        return self._after_cache(repo, revision, tried)

    def _after_cache(self, repo: str, revision: str | None, tried: list[str]) -> Resolution:
        rev = revision or "main"
        entry = catalog.find(repo) if self.use_catalog else None
        if entry is not None:
            config = load_json(entry.config_path)
            tried.append(f"bundled catalog {entry.folder.name}")
            return Resolution(
                repo,
                config,
                quant_beside(entry.config_path),
                "catalog",
                str(entry.config_path),
                tuple(tried),
            )
        if self.use_catalog:
            tried.append(f"bundled catalog: no entry for {repo}")

        if self.offline or is_offline_env():
            why = "--offline" if self.offline else "HF_HUB_OFFLINE"
            tried.append(f"hub: skipped ({why})")
            if not self.use_catalog:  # `models pull`: it fetches, so offline it can only say so
                raise ResolveError(
                    "not-found",
                    f"not in the HF cache, and the hub is skipped ({why}): run `tpcheck models "
                    "pull` online to fetch it",
                    tuple(tried),
                )
            raise ResolveError(
                "not-found",
                f"no {CONFIG_NAME} for {repo} offline (tried local folders, HF cache, bundled "
                "catalog); pass --model-config PATH, map it in [tool.tpcheck.models], or run once "
                "online to fill the HF cache",
                tuple(tried),
            )
        hub = import_hub()
        endpoint = redact_url(str(hub.constants.ENDPOINT))
        if self._hub_down is not None:
            tried.append(f"hub {endpoint}: skipped ({self._hub_down.kind} earlier in this run)")
            raise ResolveError(
                self._hub_down.kind,
                f"{repo}: not looked up; {endpoint} "
                + ("timed out" if self._hub_down.kind == "timeout" else "was unreachable")
                + " earlier in this run (go offline to use the cache and catalog only)",
                tuple(tried),
            )
        tried.append(f"hub {endpoint} ({repo}@{rev})")
        job = fetch_in_child(repo, revision, self.timeout)
        if job.config_path is not None:
            return self._read_snapshot(repo, job.config_path, job.quant_path, "hub", tuple(tried))
        if job.error is None or (job.error.kind == "timeout" and not job.error.message):
            error = ResolveError(
                "timeout",
                f"{repo}: {endpoint} did not answer within {self.timeout:g} s "
                "(raise the timeout, or go offline to use the cache and catalog only)",
                tuple(tried),
            )
        else:
            error = job.error.with_tried(tuple(tried))
        if error.kind in ("timeout", "network"):
            self._hub_down = error  # one stall per run, not one per model
        raise error

    @staticmethod
    def _read_snapshot(
        repo: str, config_path: str, quant_path: object, source: Source, tried: tuple[str, ...]
    ) -> Resolution:
        parsed: list[dict[str, Any] | None] = []
        for path in (config_path, quant_path):
            if not isinstance(path, str):
                parsed.append(None)
                continue
            try:
                parsed.append(load_json(Path(path)))
            except ResolveError as e:
                # An HTML login or proxy page served with status 200, or a body past the limits,
                # would otherwise be read from the cache by every later run, offline too.
                if e.kind != "bad-json":
                    raise e.with_tried(tried) from None
                removed = drop_cache_entry(Path(path))
                raise ResolveError(e.kind, f"{e.message}; " + (
                    f"removed this bad entry from the HF cache (it came from {source})"
                    if removed else "this HF cache entry is bad: delete it"), tried) from None
        config, quant = parsed
        assert config is not None  # config_path is a str
        return Resolution(repo, config, quant, source, config_path, tried)


__all__ = ["CONFIG_NAME", "MAX_CONFIG_BYTES", "QUANT_NAME", "Resolution", "ResolveError",
           "Resolver", "classify_hub_error", "file_hint", "import_hub", "is_expression",
           "is_offline_env", "is_repo_id", "load_json", "looks_like_path", "redact", "redact_url"]


def _bare(e: ResolveError) -> ResolveError:
    """``e`` for a run-long cache: without its traceback, whose frames would pin the file being
    checked when it was raised (its read result, every word's positions) for the whole run."""
    e.__traceback__ = e.__context__ = e.__cause__ = None
    return e
