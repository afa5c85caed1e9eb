"""What a reader hands on: Deployment records with the exact source span of every value.

Readers never compute physics and never apply engine defaults: a field the file did not set is
None. ``spans`` maps a field name to where its value was read, so a finding can underline the
``16`` in ``--tensor-parallel-size 16``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tpcheck.record import field, record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Literal
    Engine = Literal["vllm", "sglang"]


# Note on a deployment the YAML reader recovered from the raw text of a file that does not parse.
RECOVERED_NOTE = "recovered from text: the YAML does not parse"
# Words of the launch filled in at run time (``$EXTRA_ARGS``): the engine may get options that
# are not read here, so no rule says an option is missing (TP006).
RUNTIME_WORDS_NOTE = "some words are filled in at run time"
# A lone kustomize patch's note (kustomize.note_lone_patch); here so TP000 reads it without
# importing the kustomize reader and PyYAML on a shell or Python lint.
PATCH_NOTE = "looks like a kustomize patch"
# A KServe ServingRuntime no InferenceService beside it uses (sources.kserve): its model is
# mounted from the InferenceService's storageUri, so TP000 has nothing to say of it.
RUNTIME_NOTE = ("a KServe ServingRuntime: its model is the InferenceService's, and none in "
                "this folder uses it")
MAX_BYTES = 5 * 1024 * 1024  # default cap on one input file (settings: max-file-size)
# Launches checked per file (issue 14 item 8): each costs its findings (~1 ms), and 5 MB of
# Pods is 26,000 of them. Past it the rest of the file is not checked, and that is said in one
# line (exit 2). Real files hold a few launches.
MAX_LAUNCHES = 1_000


@record(order=True)
class Span:
    """1-based line and column; ``end_column`` is exclusive (LSP and SARIF convert from here)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __init__(self, path: str, line: int, column: int, end_line: int, end_column: int) -> None:
        # Written out: ~30k Spans per 1,000-manifest run (see tpcheck.record)
        d = self.__dict__
        d["path"], d["line"], d["column"] = path, line, column
        d["end_line"], d["end_column"] = end_line, end_column

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }


# An origin for a value no file writes as one value (a Helm ``default`` that values.yaml does
# not override, a function of values): a fix has nowhere to write it (Deployment.written_at).
NOT_WRITTEN = Span("", 0, 0, 0, 0)


@record
class ModelHint:
    """A model the file names outside ``--model``: a container env value, a Python
    ``os.getenv`` default, KServe's ``storageUri``. ``value`` is a hub id or a path (whose folder
    names are matched as for ``--model``); ``origin`` says where it was read, for the finding."""

    value: str
    origin: str


@record
class OptionUse:
    """One option as written (a command-line word or a Python keyword), for the TP0xx rules.

    Spans are worked out only when a rule reports on the option (``locate``): most options of a
    repository are fine, and placing every word costs the corpus lint time (see shell.Word).
    """

    written: str  # as written, without "=value"
    value: str | None  # the value after "=" or the word that follows (None: none, or unresolved)
    locate: Callable[[], tuple[Span, Span | None]]  # (the option, its value)
    keyword: bool = False  # a Python keyword argument, not a command-line word
    attached: bool = False  # written as --option=value

    def __init__(self, written: str, value: str | None,
                 locate: Callable[[], tuple[Span, Span | None]], keyword: bool = False,
                 attached: bool = False) -> None:
        # Written out: one per option word, ~7,400 per 1,000-manifest run (see tpcheck.record)
        d = self.__dict__
        d["written"], d["value"], d["locate"] = written, value, locate
        d["keyword"], d["attached"] = keyword, attached


@record
class Deployment:
    """One engine launch found in a file. Fields are as written; None where not set."""

    path: str
    engine: Engine
    span: Span  # the launch itself (the command, the LLM(...) call, the workload)
    model: str | None = None
    served_model_name: str | None = None  # --served-model-name (first name): a hint, not the model
    # Other places the file names the model, for a reference that is an expression or a path:
    # (hub id or path, where it was read), in the order to try them (ModelHint above).
    model_hints: tuple[ModelHint, ...] = ()
    revision: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    enable_expert_parallel: bool | None = None
    enable_dp_attention: bool | None = None
    attn_dp_size: int | None = None  # SGLang --attn-dp-size (or dp with --enable-dp-attention)
    ep_size: int | None = None  # SGLang --ep-size (expert-parallel width inside the TP group)
    moe_dense_tp_size: int | None = None  # SGLang --moe-dense-tp-size (TP of the dense MLPs)
    moe_a2a_backend: str | None = None  # SGLang --moe-a2a-backend (deepep, ...: EP spans TP)
    max_num_seqs: int | None = None  # SGLang --max-running-requests
    block_size: int | None = None  # tokens per KV block; SGLang --page-size
    max_model_len: int | None = None  # SGLang --context-length
    max_num_batched_tokens: int | None = None  # SGLang --chunked-prefill-size
    gpu_memory_utilization: float | None = None  # SGLang --mem-fraction-static
    swa_full_tokens_ratio: float | None = None  # SGLang: SWA pool size / full pool size
    mamba_full_memory_ratio: float | None = None  # SGLang: linear-attention state / KV memory
    max_mamba_cache_size: int | None = None  # SGLang: linear-attention state slots
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    dtype: str | None = None
    enforce_eager: bool | None = None
    disable_custom_all_reduce: bool | None = None  # the engine's own all-reduce kernel off
    nnodes: int | None = None
    gpus_requested: int | None = None  # per pod / container
    gpus_per_node: int | None = None
    group_size: int | None = None  # LeaderWorkerSet size (pods per replica)
    gpu_product: str | None = None  # node selector label value, instance type, ...
    # a NIC resource the pod requests, "name=count": vpc.amazonaws.com/efa=32, rdma/roce_gdr=1
    network_resource: str | None = None
    image: str | None = None
    engine_version: str | None = None  # from the image tag when it pins one
    # where engine_version came from when not the image tag ("from `vllm==0.6.3` pinned at …")
    engine_version_from: str | None = None
    entrypoint: Literal["serve", "llm"] | None = None  # CLI server or Python LLM(...) class
    distributed_executor_backend: str | None = None  # vLLM: mp, ray, ...
    cpu_offload_gb: float | None = None  # vLLM: GiB of weights per GPU kept in CPU memory
    ray_cluster: bool | None = None  # inside a Ray cluster spec: worker pods add GPUs
    # "prefill"/"decode" in a disaggregated (PD) pair: SGLang --disaggregation-mode, vLLM
    # --kv-transfer-config kv_role kv_producer/kv_consumer, llm-d.ai/role or Dynamo
    # subComponentType labels. None: not disaggregated, or the role is per request (kv_both).
    pd_role: str | None = None
    # vLLM --kv-transfer-config's kv_connector (NixlConnector, LMCacheConnectorV1, ...): its
    # buffers are not in tpcheck's pool (issue 32 item 6). "" when the config names none.
    kv_connector: str | None = None
    # vLLM: the modalities --limit-mm-per-prompt limits to 0, comma-joined ("*" with
    # --language-model-only, every one): a vision tower whose modalities all are is not loaded.
    mm_zero: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    spans: Mapping[str, Span] = field(default_factory=dict)
    unresolved: Mapping[str, str] = field(default_factory=dict)  # field -> expression as written
    ignores: Mapping[int, frozenset[str]] = field(default_factory=dict)  # annotation suppressions
    notes: tuple[str, ...] = ()
    options: tuple[OptionUse, ...] = ()  # every option as written, in order
    # Where a value is written when that is not where it is read: a Helm template's
    # ``{{ .Values.engine.tp }}`` is read in the template (``spans``) and written in values.yaml
    # (here). A fix edits this span; a finding underlines ``spans``.
    origins: Mapping[str, Span] = field(default_factory=dict)

    def written_at(self, name: str) -> Span | None:
        """Where the value of field ``name`` is written (the span a fix edits), or None: not
        set, or computed by a template expression no file writes as one value."""
        at = self.origins.get(name) or self.spans.get(name)
        return None if at == NOT_WRITTEN else at

    def span_of(self, *names: str) -> Span:
        """The span of the first named field that has one, else the launch span."""
        for n in names:
            s = self.spans.get(n)
            if s is not None:
                return s
        return self.span


@record
class SourceError:
    """A file that could not be read: one line, with its position."""

    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "column": self.column,
                "message": self.message}


@record
class ReadResult:
    """Everything one file yielded."""

    path: str
    deployments: tuple[Deployment, ...] = ()
    errors: tuple[SourceError, ...] = ()
    text: str | None = None  # kept for inline suppressions
    skipped: bool = False  # never read (not a regular file, over the size cap): not counted
    notes: tuple[SourceError, ...] = ()  # said once, never the exit code (a format not read)


def launch_limit(path: str, at: Span, limit: int = MAX_LAUNCHES) -> SourceError:
    """The one line for a file with more than ``limit`` launches; ``at``: the first not read."""
    return SourceError(path, at.line, at.column,
                       f"the file has more launches than tpcheck reads ({limit:,}); "
                       f"nothing from line {at.line} on is checked")


def keep_launches(res: ReadResult, limit: int = MAX_LAUNCHES) -> ReadResult:
    """``res`` with at most ``limit`` launches: past it, the launches and the errors from the
    first launch not read on are dropped for one line saying where reading stopped."""
    if len(res.deployments) <= limit:
        return res
    at = res.deployments[limit].span
    errors = tuple(e for e in res.errors if (e.line, e.column) < (at.line, at.column))
    return ReadResult(res.path, res.deployments[:limit],
                      (*errors, launch_limit(res.path, at, limit)), res.text, res.skipped)
