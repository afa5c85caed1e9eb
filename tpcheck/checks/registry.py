"""Every rule as data: one ``Rule`` record per code, in one table (kube-linter's checks over a
few templates, yamllint's explicit registry).

A row names its code, kebab-case name, default severity, family, what it needs to say anything,
the Deployment fields its figures read, its options with their defaults, a one-line summary (the
doc is ``rules/CODE.md``) and the function that checks it. The families that share a mechanism
are rows beside that mechanism: TP001-TP005 are ``checks._options.check`` with the option-table
outcome each reports, TP101-TP103 are ``checks._refusal.check`` with the kind of refusal each
maps to its code. ``lint.py`` reads the rows generically and never gates by code.

Importing this module imports no check (the functions are looked up when first called), so
``tpcheck rules`` and ``explain`` stay cheap at start-up.

What a rule needs (``needs``), each skipping the rule for a launch that lacks it:

- ``shape``: the model's config.json (TP000 says when it was not found).
- ``known_tp``: t as a number (not an expression such as ``$((N * 8))``).
- ``gpu_physics``: GPU memory and link figures (not on a TPU slice, which has none).
- ``valid_layout``: sizes and limits the engine accepts (TP003 says when one is below the
  engine's minimum), and no root-cause option finding on a capacity option.
- ``topology``: a saved ``nvidia-smi topo -m`` (``--topology``, ``[tool.tpcheck] topology``)
  to place the group on.
- ``model_problem``: a model whose config.json was not found or cannot be used (TP000).
- ``latent_cache``: a KV cache without a head axis (MLA, compressed attention).
- ``experts``: experts (MoE) in the model, when its config.json is known.

A rule skipped for a need is not even imported (its function is looked up at its first call):
a deployment pays only for the rule families that can say something about it.

``depends_on``: the Deployment fields its figures read besides t (LAYOUT, MEMORY and BATCH below
group the common ones); the rule is skipped when the file leaves one as an expression.
``memory_model``: its figures come from the memory model, so its findings name the engine
release they assume. ``refusal_verdict``: its verdict is the engine's start-up refusal; when no
image pins the release and a known release would not refuse, the finding says so and stays below
error.
"""

from __future__ import annotations

from tpcheck.checks.base import Severity
from tpcheck.record import field, record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from tpcheck.checks.base import Finding
    from tpcheck.checks.context import CheckContext

# Groups of Deployment fields the rows name in ``depends_on``: a rule whose figures depend on one
# says nothing when the file leaves it as an expression tpcheck cannot evaluate
# (``--data-parallel-size $((LWS_GROUP_SIZE * N))``) rather than judge the engine default in its
# place (issue 18).
# How the GPUs are split besides t: every per-GPU figure of the layout rules reads them.
LAYOUT = ("pipeline_parallel_size", "data_parallel_size", "attn_dp_size", "ep_size",
          "moe_dense_tp_size", "moe_a2a_backend", "enable_expert_parallel")
# What the KV pool is carved from: the memory budget and the bytes per weight and per token.
MEMORY = ("gpu_memory_utilization", "kv_cache_dtype", "quantization", "dtype", "cpu_offload_gb")
# What the engine schedules into the pool.
BATCH = ("max_num_seqs", "max_model_len", "max_num_batched_tokens")

NEEDS = frozenset({"shape", "known_tp", "gpu_physics", "valid_layout", "topology",
                   "model_problem", "latent_cache", "experts"})
FAMILIES = ("model", "options", "legality", "capacity", "topology", "scheduling")


@record
class RuleOption:
    """One ``[tool.tpcheck.rules.CODE]`` option: its type (or allowed strings), default and
    lowest accepted value (checked by ``checks.rule_options``)."""

    name: str
    kind: type | tuple[str, ...]
    default: object
    minimum: float | None = None


@record
class Rule:
    code: str
    name: str
    severity: Severity
    family: str
    summary: str
    # "module:function" (imported when first called) or the function: function(ctx, rule)
    checker: str | Callable[[CheckContext, Rule], Iterator[Finding]]
    needs: frozenset[str] = frozenset({"shape", "known_tp", "valid_layout"})
    depends_on: tuple[str, ...] = ()
    memory_model: bool = False
    refusal_verdict: bool = False
    options: tuple[RuleOption, ...] = ()
    # what a shared mechanism needs to know for this row (the outcome, the refusal kind, the fix)
    params: tuple[tuple[str, str], ...] = field(default=())

    @property
    def doc(self) -> str:
        return f"rules/{self.code}.md"

    def param(self, key: str) -> str | None:
        # kept on the (frozen) row, as the options' hash is: the rows over a shared mechanism
        # ask their parameter for every launch
        kept: dict[str, str] | None = self.__dict__.get("_params")
        if kept is None:
            kept = self.__dict__["_params"] = dict(self.params)
        return kept.get(key)

    @property
    def defaults(self) -> Mapping[str, object]:
        return {o.name: o.default for o in self.options}

    @property
    def function(self) -> Callable[[CheckContext, Rule], Iterator[Finding]]:
        """The function that checks this row (imported when first asked)."""
        return self.checker if callable(self.checker) else _function(self.checker)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        return self.function(ctx, self)


_FUNCTIONS: dict[str, Callable[[CheckContext, Rule], Iterator[Finding]]] = {}


def _function(path: str) -> Callable[[CheckContext, Rule], Iterator[Finding]]:
    fn = _FUNCTIONS.get(path)
    if fn is None:
        import importlib

        module, _, name = path.partition(":")
        if not module.startswith("tpcheck.checks."):  # the rows' own constants, never input
            raise ValueError(f"a rule's function lives in tpcheck.checks, not {module!r}")
        fn = _FUNCTIONS[path] = getattr(importlib.import_module(module), name)
    return fn


_C = "tpcheck.checks."
_GPU = frozenset({"shape", "known_tp", "gpu_physics", "valid_layout"})
_NO_SHAPE = frozenset({"known_tp", "gpu_physics", "valid_layout"})


def _option_rule(code: str, name: str, severity: Severity, outcome: str, summary: str,
                 fix: str) -> Rule:
    """A row over the option tables: the outcome of ``checks._options`` it reports."""
    return Rule(code, name, severity, "options", summary, _C + "_options:check", frozenset(),
                params=(("outcome", outcome), ("fix", fix)))


def _legality_rule(code: str, name: str, kind: str, summary: str,
                   depends_on: tuple[str, ...] = (), checker: str = "_refusal:check") -> Rule:
    """A row over ``physics.legality``: the kind of refusal it names by its code."""
    return Rule(code, name, Severity.ERROR, "legality", summary, _C + checker,
                depends_on=depends_on, params=(("refusal", kind),))


RULES: tuple[Rule, ...] = (
    Rule("TP000", "model-unresolved", Severity.WARNING, "model",
         "The model's config.json could not be found or cannot be used; shape-based rules were "
         "skipped.",
         _C + "model_unresolved:check", frozenset({"valid_layout", "model_problem"})),
    _option_rule("TP001", "unknown-option", Severity.ERROR, "unknown",
                 "An option (or Python keyword) the engine release does not know: it exits at "
                 "start-up.", "remove it, or spell an option of this release"),
    _option_rule("TP002", "ambiguous-option", Severity.ERROR, "ambiguous",
                 "An abbreviated option that matches several options of the release: argparse "
                 "refuses it.", "write the option in full"),
    _option_rule("TP003", "bad-option-value", Severity.ERROR, "bad_value",
                 "A value that is not of the option's type, not one of its choices, or out of "
                 "its range.", "give a value of the type, choices or range the message quotes"),
    _option_rule("TP004", "removed-option", Severity.ERROR, "removed",
                 "An option an older release accepted and the pinned release no longer "
                 "registers.", "drop it, or use what replaced it in this release"),
    _option_rule("TP005", "deprecated-option", Severity.WARNING, "deprecated",
                 "An option the pinned release still accepts but warns about and will remove.",
                 "remove it, or use the replacement the engine's warning names: later releases "
                 "drop deprecated options"),
    _option_rule("TP006", "option-combination", Severity.ERROR, "combination",
                 "An option the release refuses without another one, or together with another one.",
                 "add the option it requires, or drop the one that conflicts"),
    _legality_rule("TP101", "heads-not-divisible", "heads",
                   "The query heads are not divisible by the tensor-parallel size (h mod t ≠ 0): "
                   "the engine refuses to start."),
    _legality_rule("TP102", "kv-heads-not-divisible", "kv_heads",
                   "KV heads can be neither partitioned nor replicated evenly over t: the "
                   "attention layer asserts at start-up."),
    _legality_rule("TP103", "ffn-not-divisible", "widths",
                   "The FFN, expert or quantization-group width per rank does not divide: the "
                   "parallel linear layer refuses.",
                   ("data_parallel_size", "ep_size", "enable_expert_parallel")),
    _legality_rule("TP104", "vocab-padding", "vocab",
                   "The vocabulary padded to a multiple of 64 is not divisible by t (vLLM "
                   "refuses), or the padding rows hold memory (info).",
                   checker="vocab_padding:check"),
    Rule("TP201", "kv-head-cliff", Severity.WARNING, "capacity",
         "t > h_kv: the KV cache is replicated instead of divided; more GPUs buy little "
         "capacity.", _C + "kv_head_cliff:check", _GPU, LAYOUT, memory_model=True),
    Rule("TP202", "mla-cache-replicated", Severity.WARNING, "capacity",
         "MLA model with t > 1 and no DP-attention: every rank holds the whole latent KV "
         "cache.", _C + "mla_cache_replicated:check", _GPU | {"latent_cache"}, LAYOUT,
         memory_model=True),
    Rule("TP203", "max-num-seqs-binds", Severity.INFO, "capacity",
         "max-num-seqs is below the seats memory allows (the scheduler binds) or far above "
         "them (memory binds: preemption).", _C + "max_num_seqs_binds:check", _GPU,
         LAYOUT + MEMORY + BATCH, memory_model=True,
         options=(RuleOption("waste-factor", float, 4.0, minimum=1.0),)),
    Rule("TP204", "context-exceeds-pool", Severity.ERROR, "capacity",
         "max_model_len tokens of one sequence do not fit the predicted KV pool: vLLM refuses.",
         _C + "context_exceeds_pool:check", _GPU, LAYOUT + MEMORY + BATCH, memory_model=True,
         refusal_verdict=True),
    Rule("TP205", "weights-do-not-fit", Severity.ERROR, "capacity",
         "Weights per GPU exceed M·u: the engine runs out of memory loading them.",
         _C + "weights_do_not_fit:check", _GPU, LAYOUT + MEMORY, memory_model=True,
         refusal_verdict=True),
    Rule("TP301", "tp-crosses-nodes", Severity.WARNING, "topology",
         "TP group larger than the GPUs per node: InfiniBand/Ethernet between ranks.",
         _C + "tp_crosses_nodes:check", _NO_SHAPE, (*LAYOUT, "nnodes")),
    Rule("TP302", "tp-crosses-sockets", Severity.WARNING, "topology",
         "The TP group's weakest link is SYS (or PCIe where NVLink was expected).",
         _C + "tp_crosses_sockets:check", _NO_SHAPE | {"topology"}, LAYOUT),
    Rule("TP303", "experts-cross-nodes", Severity.INFO, "topology",
         "The expert-parallel group spans nodes: the experts' all-to-all crosses the network.",
         _C + "experts_cross_nodes:check", _NO_SHAPE | {"experts"}, (*LAYOUT, "nnodes")),
    Rule("TP401", "gpu-count-mismatch", Severity.ERROR, "scheduling",
         "t·p·dp differs from the GPUs requested: fewer cannot start, more sit idle.",
         _C + "gpu_count_mismatch:check", frozenset({"known_tp", "valid_layout"})),
    Rule("TP402", "pod-exceeds-node", Severity.ERROR, "scheduling",
         "One pod requests more GPUs than a node of the type it selects has: it stays Pending.",
         _C + "pod_exceeds_node:check", frozenset({"valid_layout"})),
)

BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}
# The code that reports each kind of refusal physics.legality returns (a fact, not a code).
REFUSAL_CODES: dict[str, str] = {
    kind: r.code for r in RULES if (kind := r.param("refusal")) is not None}
