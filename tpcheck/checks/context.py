"""What a rule sees: one deployment, its model shape (if resolved), the GPU, the settings.

The context turns the deployment's flags into physics Options once and caches the evaluation,
so rules only ask for Formulas and decide; they never parse files or format output.
"""

from __future__ import annotations

from functools import lru_cache

from tpcheck.checks.base import Alternative, Assumption, Edit, Finding, Severity
from tpcheck.engines.defaults import KNOWN_RELEASES
from tpcheck.engines.eras import checkpoint_kv_cache
from tpcheck.engines.release import Release, resolve
from tpcheck.formula import Formula
from tpcheck.hardware.gpus import GPU
from tpcheck.models.shape import ModelShape
from tpcheck.physics.groups import Groups, comm_groups
from tpcheck.physics.plan import (
    Evaluation,
    Memo,
    Options,
    capacity_weights,
    evaluate,
    evaluate_capacity,
    fits,
    layout_at,
    starts,
    vllm_budget,
)
from tpcheck.record import replace
from tpcheck.settings import Settings
from tpcheck.sources.base import Deployment, Span

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from functools import cached_property
    from typing import Any

    from tpcheck.checks.registry import Rule
else:
    class cached_property:  # functools' name, whose typing mypy reads (above)
        """``functools.cached_property`` without Python 3.11's lock, as 3.12 has it: every
        launch's context computes ~9 of them once (and fires_with's contexts theirs), and
        3.11 takes an RLock for each. A context is one thread's."""

        def __init__(self, func: Any) -> None:
            self.func, self.attrname, self.__doc__ = func, func.__name__, func.__doc__

        def __set_name__(self, owner: type, name: str) -> None:
            self.attrname = name

        def __get__(self, instance: Any, owner: type | None = None) -> Any:
            if instance is None:
                return self
            value = instance.__dict__[self.attrname] = self.func(instance)
            return value

@lru_cache(maxsize=1024)
def release_for(engine: str, image: str | None, image_version: str | None,
                setting: str | None, setting_from: str | None,
                version_from: str | None) -> Release:
    """``engines.release.resolve``, kept per value: every launch's context asks it (and the
    option rules without the settings), a repository names a few images, and each answer
    parses the versions again (about 19,000 instructions)."""
    return resolve(engine, image=image, image_version=image_version, setting=setting,
                   setting_from=setting_from, version_from=version_from)


class _VerdictHolds(Exception):
    """Ends a rule's check in a context that only asks whether it fires (``fires_with``)."""


AUTO_FIT = -1  # vLLM's --max-model-len -1 / auto (vllm 0.33.0 utils/argparse_utils.py:91-92)


class CheckContext:
    def __init__(
        self,
        deployment: Deployment,
        *,
        shape: ModelShape | None,
        settings: Settings,
        gpu: GPU | None = None,
        gpu_origin: str = "",
        model_problem: str | None = None,
        model_source: str | None = None,
        model_fix: str | None = None,
        model_hint: str | None = None,
        topology: object | None = None,
        evaluations: Memo | None = None,
    ) -> None:
        self.deployment = deployment
        self.shape = shape
        self.settings = settings
        self.gpu = gpu
        self.gpu_origin = gpu_origin
        self.model_problem = model_problem
        self.model_source = model_source
        self.model_fix = model_fix  # TP000's fix when the config found cannot be used
        self.model_hint = model_hint  # the model was guessed: every finding says from what
        self.topology = topology
        # Shared by a run's contexts: manifests repeat layouts, and rules ask the same what-ifs
        # (t = h_kv, an fp8 cache) for every deployment of a model (plan.Memo, bounded).
        self._evaluations = evaluations if evaluations is not None else Memo()
        self.verdict_only = False  # fires_with's contexts: the evidence is never built
        # fires_with's contexts: the context whose deployment this one's is, under another
        # release (only the release and what it decides differ: options_for)
        self._like: CheckContext | None = None

    def verdict_holds(self) -> None:
        """A refusal-verdict rule calls this once its verdict holds, before it builds the
        evidence (TP205's what-fits-instead scan alone evaluates up to 15 layouts). When the
        context only asks whether the rule fires with another release, that ends the check."""
        if self.verdict_only:
            raise _VerdictHolds

    # ---- layout -------------------------------------------------------------------------
    @property
    def tp(self) -> int:
        return self.deployment.tensor_parallel_size or 1

    @property
    def pp(self) -> int:
        return self.deployment.pipeline_parallel_size or 1

    @property
    def dp(self) -> int:
        return self.deployment.data_parallel_size or 1

    @property
    def attn_dp(self) -> int:
        d = self.deployment
        if d.engine != "sglang":
            return 1
        if d.attn_dp_size:
            return d.attn_dp_size
        if d.enable_dp_attention and d.data_parallel_size:
            return d.data_parallel_size  # old spelling: --dp N --enable-dp-attention
        if d.enable_dp_attention and self.release.dp_attention_spans_tp:
            return self.tp  # SGLang ≤ 0.4.4: the flag alone sets dp_size = tp_size
        return 1

    @property
    def dp_replicas(self) -> int:
        """Whole copies of the TP group (SGLang's old --dp with DP-attention is not one)."""
        d = self.deployment
        if d.engine == "sglang" and (d.enable_dp_attention or (d.attn_dp_size or 1) > 1):
            return 1
        return self.dp

    @cached_property
    def groups(self) -> Groups:
        """The widths that all-reduce and exchange experts (DP-attention, EP: not always t)."""
        d, s = self.deployment, self.shape
        return comm_groups(
            engine=d.engine, tp=self.tp, dp=self.dp, attn_dp=self.attn_dp,
            is_moe=bool(s is not None and s.moe is not None and s.moe.moe_layers),
            dense_layers=s.dense_layers if s is not None else 0, ep_size=d.ep_size,
            enable_expert_parallel=bool(d.enable_expert_parallel),
            moe_dense_tp=d.moe_dense_tp_size, a2a_backend=d.moe_a2a_backend)

    @property
    def tp_span(self) -> Span:
        return self.deployment.span_of("tensor_parallel_size", "model")

    @property
    def gpus_available(self) -> int | None:
        """GPUs the manifest requests for the whole group (per pod × pods), what TP401 compares
        t·p·dp with; None when not requested or when the rank count is an expression."""
        d = self.deployment
        if not d.gpus_requested or d.gpus_requested <= 0 or any(
                k in d.unresolved for k in ("pipeline_parallel_size", "data_parallel_size",
                                            "nnodes")):
            return None
        return d.gpus_requested * (d.group_size or d.nnodes or 1)

    def uses_all_gpus(self, tp: int, dp: int | None = None) -> bool:
        """Whether t·p·dp at ``tp`` leaves TP401 nothing to say: it equals the GPUs requested
        (or more ranks inside a Ray cluster, whose worker pods bring the rest); True when no
        count is known."""
        have = self.gpus_available
        ranks = tp * self.pp * (self.dp_replicas if dp is None else dp)
        return have is None or ranks == have or (bool(self.deployment.ray_cluster) and ranks > have)

    def option(self, rule: Rule, name: str) -> Any:
        """A rule's option: ``[tool.tpcheck.rules.CODE]`` when set (the linter has checked it
        against the rule's declared options), else the rule's default."""
        return self.settings.rules.get(rule.code, {}).get(name, rule.defaults[name])

    # ---- context used for capacity --------------------------------------------------------
    @cached_property
    def context(self) -> tuple[int, str]:
        """(tokens, where they came from): --context / settings, max_model_len, model maximum."""
        if self.settings.context:
            return self.settings.context, "tpcheck context setting"
        d = self.deployment
        mpe = (self.shape.max_position_embeddings if self.shape else None) or 2048
        if d.max_model_len == AUTO_FIT and d.engine == "vllm":
            return self._auto_fit(mpe)
        if d.max_model_len:
            flag = "--context-length" if d.engine == "sglang" else "--max-model-len"
            return d.max_model_len, f"{flag} in the deployment"
        return mpe, "the model's max_position_embeddings (no max-model-len set)"

    def context_said(self) -> Assumption:
        """The tokens per sequence the capacity figures use, and where they came from."""
        c, c_from = self.context
        return Assumption("context", f"c = {c:,} tokens per sequence ({c_from})")

    def _auto_fit(self, mpe: int) -> tuple[int, str]:
        """``--max-model-len -1``/``auto``: vLLM starts from the model's maximum and, when one
        such sequence does not fit the KV pool, shortens it to the pool (vllm 0.33.0
        config/model.py:2639-2642, v1/core/kv_cache_planning.py:1337-1410 and :1545)."""
        said = "--max-model-len -1 (auto): the model's max_position_embeddings"
        if self.shape is None or self.gpu is None:
            return mpe, said
        ev = evaluate_capacity(self.shape, self.tp, self.options_for(mpe), self._evaluations)
        if ev.refusals or ev.tokens is None:
            return mpe, said
        tokens = int(ev.tokens.result)
        if tokens >= mpe:
            return mpe, f"{said}, which fits the pool"
        if tokens <= 0:
            return mpe, f"{said}; the pool holds no token to shorten it to"
        return tokens, (f"--max-model-len -1 (auto): vLLM shortens the model's {mpe:,} to the "
                        f"{tokens:,} tokens the pool holds")

    @cached_property
    def release(self) -> Release:
        """The deployment's one release, which every rule asks: the image tag, else
        engine-version (the flag over the settings file), else the newest known."""
        d = self.deployment
        return release_for(d.engine, d.image, d.engine_version, self.settings.engine_version,
                           self.settings.engine_version_from, d.engine_version_from)

    def fires_with(self, rule: Rule, version: str) -> bool:
        """Whether ``rule`` fires on this deployment when the engine is ``version``."""
        d = replace(self.deployment, engine_version=version)
        other = CheckContext(d, shape=self.shape, settings=self.settings, gpu=self.gpu,
                             gpu_origin=self.gpu_origin, model_problem=self.model_problem,
                             model_source=self.model_source, model_fix=self.model_fix,
                             model_hint=self.model_hint,
                             topology=self.topology, evaluations=self._evaluations)
        other.verdict_only = True
        other._like = self
        try:
            return any(True for _ in rule.check(other))
        except _VerdictHolds:
            return True

    def _say_release(self, rule: Rule,
                     severity: Severity) -> tuple[tuple[Assumption, ...], Severity]:
        """Memory findings name the release they assume; an unpinned verdict that flips
        between known releases says so and stays below error."""
        if not rule.memory_model:
            return (), severity
        rel = self.release
        known = KNOWN_RELEASES.get(self.deployment.engine, ())
        if self.deployment.engine == "sglang" and rel.pinned and rel.version not in known:
            # SGLang's budget was read in a few releases; say which one's rules are applied.
            from tpcheck.physics.sglang_memory import release_read

            return (Assumption("release", f"SGLang {release_read(rel.version)}'s memory rules, "
                               f"the nearest release read; the deployment names {rel.version}, "
                               f"{rel.source}"),), severity
        said = Assumption("release", str(rel))
        if rel.pinned or not rule.refusal_verdict:
            return (said,), severity
        silent = [v for v in known if v != rel.version and not self.fires_with(rule, v)]
        if silent:
            if severity == Severity.ERROR:
                severity = Severity.WARNING
            return (said, Assumption("release", f"the verdict depends on the release: it does "
                                     f"not hold with {', '.join(silent)}, so pin the image to "
                                     "know")), severity
        if len(known) > 1:
            return (said, Assumption("release", f"the verdict holds for every known release "
                                     f"({known[0]} to {known[-1]})")), severity
        return (said,), severity

    @cached_property
    def options(self) -> Options:
        return self.options_for(self.context[0])

    @cached_property
    def checkpoint_kv(self) -> str | None:
        """The KV cache dtype the checkpoint sets when the launch leaves --kv-cache-dtype at
        auto and the release reads it (ModelOpt kv_cache_scheme); None: the launch decides."""
        d, q = self.deployment, (self.shape.quant if self.shape is not None else None)
        if q is None or q.kv_cache is None or (d.kv_cache_dtype or "auto").lower() != "auto":
            return None
        return q.kv_cache if checkpoint_kv_cache(d.engine, self.release.physics_version) else None

    @cached_property
    def checkpoint_kv_source(self) -> str:
        """Where the release reads the checkpoint's KV cache dtype (for the assumption)."""
        return checkpoint_kv_cache(self.deployment.engine, self.release.physics_version) or ""

    def options_for(self, context: int) -> Options:
        """The physics options of this deployment with ``context`` tokens per sequence."""
        d = self.deployment
        like = self._like
        if like is not None:
            # the same deployment under another release: what the release decides replaced
            # in the other's options (a copy costs a tenth of building them field by field)
            return replace(like.options, engine_version=self.release.physics_version,
                           attn_dp=self.attn_dp, context=context,
                           kv_cache_dtype=self.checkpoint_kv or d.kv_cache_dtype)
        return Options(
            engine=d.engine,
            engine_version=self.release.physics_version,
            entrypoint=d.entrypoint or "serve",
            gpu=self.gpu,
            utilization=d.gpu_memory_utilization,
            pp=self.pp,
            dp=self.dp,
            expert_parallel=bool(d.enable_expert_parallel),
            attn_dp=self.attn_dp,
            max_num_seqs=d.max_num_seqs,
            block_size=d.block_size,
            max_num_batched_tokens=d.max_num_batched_tokens,
            context=context,
            kv_cache_dtype=self.checkpoint_kv or d.kv_cache_dtype,
            quantization=d.quantization,
            dtype=d.dtype,
            enforce_eager=bool(d.enforce_eager),
            custom_all_reduce=not d.disable_custom_all_reduce,
            cpu_offload=int((d.cpu_offload_gb or 0) * (1 << 30)),
            swa_full_tokens_ratio=d.swa_full_tokens_ratio,
            mamba_full_memory_ratio=d.mamba_full_memory_ratio,
            max_mamba_cache_size=d.max_mamba_cache_size,
            alpha=self.settings.alpha,
            kv_connector=d.kv_connector if d.engine == "vllm" else None,
            vision_off=self._vision_off(),
        )

    def _vision_off(self) -> bool:
        """Whether the launch limits every modality of the model's vision tower to 0."""
        zero, vis = self.deployment.mm_zero, self.shape.vision if self.shape else None
        if zero is None or vis is None:
            return False
        return zero == "*" or set(vis.modalities) <= set(zero.split(","))

    @cached_property
    def evaluation(self) -> Evaluation:
        return self.evaluate_at(self.tp)

    @cached_property
    def capacity(self) -> Evaluation:
        """``evaluation`` without the decode step: all a verdict about starting needs (TP204,
        TP205), so asking it under another release (``fires_with``) prices no step."""
        return self.capacity_at(self.tp)

    def evaluate_at(self, t: int, **changes: object) -> Evaluation:
        opts = replace(self.options, **changes) if changes else self.options
        return self.evaluate_with(t, opts)

    def capacity_at(self, t: int, **changes: object) -> Evaluation:
        """``evaluate_at`` without the decode step and prefill columns (``step`` is None): for
        a rule that asks only whether a layout starts and what it leaves for the KV cache."""
        assert self.shape is not None
        opts = replace(self.options, **changes) if changes else self.options
        return evaluate_capacity(self.shape, t, opts, self._evaluations)

    def starts_at(self, t: int, **changes: object) -> bool:
        """Whether the layout at ``t`` (``changes`` applied) is legal and leaves a KV pool:
        ``capacity_at``'s verdict, priced only as far as it needs (plan.starts)."""
        assert self.shape is not None
        opts = replace(self.options, **changes) if changes else self.options
        return starts(self.shape, t, opts, self._evaluations)

    def fits_at(self, t: int, **changes: object) -> bool | None:
        """``capacity_at(t).fits``, priced only as far as it needs (plan.fits)."""
        assert self.shape is not None
        opts = replace(self.options, **changes) if changes else self.options
        return fits(self.shape, t, opts, self._evaluations)

    def weights_at(self, t: int, **changes: object) -> Formula:
        """``capacity_at(t).weights``, without the rest of the capacity (plan.capacity_weights)."""
        assert self.shape is not None
        opts = replace(self.options, **changes) if changes else self.options
        return capacity_weights(self.shape, t, opts, self._evaluations)

    def weights_over_budget(self) -> bool | None:
        """For a vLLM launch, whether the layout is legal and its weights exceed M·u (TP205's
        verdict) from the layout alone; None for SGLang, whose budget comes with its pool."""
        assert self.shape is not None
        if self.deployment.engine != "vllm":
            return None
        opts = self.options
        ev = layout_at(self.shape, self.tp, opts, self._evaluations)
        mu = vllm_budget(opts)
        return not ev.refusals and mu is not None and ev.weights.result > mu[0] * mu[1]

    def evaluate_with(self, t: int, opts: Options) -> Evaluation:
        """One evaluation per (shape, t, options) for the whole run (as long as it is recent)."""
        assert self.shape is not None
        return evaluate(self.shape, t, opts, self._evaluations)

    # ---- building findings ----------------------------------------------------------------
    def finding(
        self,
        rule: Rule,
        message: str,
        *,
        span: Span | None = None,
        formulas: tuple[Formula, ...] = (),
        fix: str | None = None,
        edits: tuple[Edit, ...] = (),
        severity: Severity | None = None,
        related: tuple[tuple[Span, str], ...] = (),
        notes: tuple[str, ...] = (),
        alternatives: tuple[Alternative, ...] = (),
        assumptions: tuple[Assumption, ...] = (),
    ) -> Finding:
        """``message`` is the headline (one clause, verdict first); the detail goes in
        ``notes``, ``formulas``, ``alternatives`` and ``assumptions``. The engine release and
        the model hint are added here, once, for every rule."""
        said, severity = self._say_release(rule, severity or rule.severity)
        hint: tuple[Assumption, ...] = (
            (Assumption("model", self.model_hint),) if self.model_hint else ())
        if rule.memory_model and self.checkpoint_kv:
            name = self.shape.name if self.shape is not None else "the model"
            hint += (Assumption("kv-cache-dtype", f"the KV cache is {self.checkpoint_kv}, not the "
                                f"model dtype: {name}'s config.json quantization_config."
                                "kv_cache_scheme is static 8-bit float and --kv-cache-dtype is "
                                f"auto ({self.checkpoint_kv_source})"),)
        conn = self.deployment.kv_connector
        if rule.memory_model and conn is not None and self.deployment.engine == "vllm":
            hint += (Assumption("connector", f"the {conn or 'KV-transfer'} connector's own "
                                "GPU buffers are not modelled: vLLM (0.19, 0.33) makes the "
                                "connector after sizing the pool, so they need memory beyond "
                                "--gpu-memory-utilization, not a smaller pool"),)
        return Finding(
            code=rule.code,
            name=rule.name,
            severity=severity,
            message=message,
            span=span or self.tp_span,
            formulas=formulas,
            fix=fix,
            edits=edits,
            related=related,
            notes=tuple(n for n in notes if n),
            alternatives=alternatives,
            assumptions=(*assumptions, *said, *hint),
        )

    def model_related(self) -> tuple[tuple[Span, str], ...]:
        s = self.deployment.spans.get("model")
        if s is None or s == self.tp_span:
            return ()
        return ((s, f"model {self.deployment.model}"),)

