"""The one flag and alias table for both engines, and argparse's prefix rule applied to it.

Each engine parses its command line with argparse (``allow_abbrev`` left at True), so a long
flag may be shortened to any prefix that matches exactly one option of that engine. Deciding
that needs every option string the engine registers, not only the ones tpcheck reads, so both
full lists are generated per release into ``tpcheck/engines/options/<engine>-<version>.json`` by
``tools/gen_options.py`` (read with ``ast`` from the released packages). The table below maps the
options tpcheck reads to Deployment fields; their registrations in the releases read by hand:

- vLLM 0.33.0: ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args`` (l.958-1900),
  ``vllm/entrypoints/common/cli_args.py`` (``FrontendArgs`` fields become flags),
  ``vllm/entrypoints/cli/serve.py`` and ``vllm/utils/argparse_utils.py``.
  ``FlexibleArgumentParser.parse_args`` (argparse_utils.py l.381-394) turns ``_`` into ``-`` in
  the flag name, so ``--tensor_parallel_size`` is ``--tensor-parallel-size``.
- SGLang 0.5.23: ``sglang/srt/arg_groups/fields/*.py`` (each annotated field is ``--field-name``
  plus its ``aliases``; ``no_cli`` fields have no flag) and ``sglang/srt/server_args.py``.
  SGLang does not rewrite underscores.
"""

from __future__ import annotations

from functools import lru_cache

from tpcheck.engines import NEWEST
from tpcheck.record import field, record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, Literal
    Kind = Literal["int", "float", "str", "bool", "model", "human_int"]




@record
class Flag:
    """A flag tpcheck reads: the Deployment field it sets and how its value is parsed."""

    field: str
    kind: Kind
    names: tuple[str, ...]
    source: str  # where in the engine the option is registered
    value: bool = True  # for bool flags: what giving the flag sets (``--no-x`` sets False)


# vLLM 0.33.0 (file/line in vllm/engine/arg_utils.py unless said otherwise).
VLLM_FLAGS: tuple[Flag, ...] = (
    Flag("model", "model", ("--model",), "arg_utils.py l.969"),
    Flag("tensor_parallel_size", "int", ("--tensor-parallel-size", "-tp"), "arg_utils.py l.1209"),
    Flag(
        "pipeline_parallel_size",
        "int",
        ("--pipeline-parallel-size", "-pp"),
        "arg_utils.py l.1171-1173",
    ),
    Flag("data_parallel_size", "int", ("--data-parallel-size", "-dp"), "arg_utils.py l.1241"),
    Flag(
        "enable_expert_parallel",
        "bool",
        ("--enable-expert-parallel", "-ep"),
        "arg_utils.py l.1305-1307",
    ),
    Flag(
        "enable_expert_parallel",
        "bool",
        ("--no-enable-expert-parallel",),
        "arg_utils.py l.386 BooleanOptionalAction",
        value=False,
    ),
    Flag("max_num_seqs", "int", ("--max-num-seqs",), "arg_utils.py l.1754"),
    Flag("block_size", "int", ("--block-size",), "config/cache.py CacheConfig.block_size"),
    Flag("max_model_len", "human_int", ("--max-model-len",), "arg_utils.py l.991"),
    Flag(
        "max_num_batched_tokens", "human_int", ("--max-num-batched-tokens",), "arg_utils.py l.1740"
    ),
    Flag(
        "gpu_memory_utilization",
        "float",
        ("--gpu-memory-utilization", "--device-memory-utilization"),
        "arg_utils.py l.1389-1391",
    ),
    Flag("kv_cache_dtype", "str", ("--kv-cache-dtype",), "arg_utils.py l.1397"),
    Flag("cpu_offload_gb", "float", ("--cpu-offload-gb",), "arg_utils.py (OffloadConfig)"),
    Flag(
        "distributed_executor_backend",
        "str",
        ("--distributed-executor-backend",),
        "arg_utils.py (ParallelConfig.distributed_executor_backend)",
    ),
    Flag("quantization", "str", ("--quantization", "-q"), "arg_utils.py l.992"),
    Flag("dtype", "str", ("--dtype",), "arg_utils.py l.977"),
    Flag("revision", "str", ("--revision",), "arg_utils.py (ModelConfig.revision)"),
    Flag("served_model_name", "str", ("--served-model-name",), "arg_utils.py (ModelConfig)"),
    Flag("enforce_eager", "bool", ("--enforce-eager",), "arg_utils.py l.1000"),
    Flag(
        "enforce_eager",
        "bool",
        ("--no-enforce-eager",),
        "arg_utils.py l.386 BooleanOptionalAction",
        value=False,
    ),
    Flag("disable_custom_all_reduce", "bool", ("--disable-custom-all-reduce",),
         "arg_utils.py l.1367"),
    Flag("config", "str", ("--config",), "utils/argparse_utils.py l.516-604"),
    # a JSON object; post_process turns its kv_role into pd_role (config/kv_transfer.py l.11-13)
    Flag("kv_transfer_config", "str", ("--kv-transfer-config",), "arg_utils.py l.1880-1882"),
    # post_process turns these into mm_zero, the modalities limited to 0 (a tower whose
    # modalities all are is not built: 0.19.0 models/interfaces.py l.249-288)
    Flag("language_model_only", "bool", ("--language-model-only",),
         "0.19.0 arg_utils.py l.1072, config/multimodal.py l.76-78"),
    Flag("language_model_only", "bool", ("--no-language-model-only",),
         "0.19.0 arg_utils.py l.1072 BooleanOptionalAction", value=False),
    Flag("limit_mm_per_prompt", "str", ("--limit-mm-per-prompt",),
         "0.19.0 arg_utils.py l.1075, config/multimodal.py l.79-95, 259-273"),
)

# SGLang 0.5.23 (files under sglang/srt/arg_groups/fields/).
SGLANG_FLAGS: tuple[Flag, ...] = (
    Flag("model", "model", ("--model-path", "--model"), "fields/model.py:51"),
    Flag("tensor_parallel_size", "int", ("--tp-size", "--tensor-parallel-size"), "parallel.py:45"),
    Flag(
        "pipeline_parallel_size",
        "int",
        ("--pp-size", "--pipeline-parallel-size"),
        "parallel.py:59",
    ),
    Flag("data_parallel_size", "int", ("--dp-size", "--data-parallel-size"), "parallel.py:73"),
    Flag(
        "attn_dp_size",
        "int",
        ("--attn-dp-size", "--attention-data-parallel-size"),
        "parallel.py:81",
    ),
    Flag(
        "enable_dp_attention",
        "bool",
        ("--enable-dp-attention",),
        "server_args.py:418 (deprecated, DeprecatedStoreTrueAction)",
    ),
    Flag("ep_size", "int", ("--ep-size", "--expert-parallel-size", "--ep"), "parallel.py:281"),
    Flag("moe_dense_tp_size", "int", ("--moe-dense-tp-size",), "parallel.py:289"),
    Flag("moe_a2a_backend", "str", ("--moe-a2a-backend",), "fields/parallel.py"),
    Flag("nnodes", "int", ("--nnodes",), "parallel.py:43"),
    Flag("max_num_seqs", "int", ("--max-running-requests",), "fields/schedule.py:31"),
    Flag("block_size", "int", ("--page-size",), "fields/schedule.py:146"),
    Flag("max_model_len", "human_int", ("--context-length",), "fields/model.py:110"),
    Flag("max_num_batched_tokens", "int", ("--chunked-prefill-size",), "fields/schedule.py:52"),
    Flag("gpu_memory_utilization", "float", ("--mem-fraction-static",), "fields/schedule.py:27"),
    Flag("swa_full_tokens_ratio", "float", ("--swa-full-tokens-ratio",),
         "fields/schedule.py:150"),
    Flag("mamba_full_memory_ratio", "float", ("--mamba-full-memory-ratio",),
         "fields/schedule.py:220"),
    Flag("max_mamba_cache_size", "int", ("--max-mamba-cache-size",), "fields/schedule.py:216"),
    Flag("kv_cache_dtype", "str", ("--kv-cache-dtype",), "fields/model.py:197"),
    Flag("quantization", "str", ("--quantization",), "fields/model.py:177"),
    Flag("dtype", "str", ("--dtype",), "fields/model.py:160"),
    Flag("revision", "str", ("--revision",), "fields/model.py"),
    Flag("served_model_name", "str", ("--served-model-name",), "fields/serving.py:168"),
    Flag("enforce_eager", "bool", ("--disable-cuda-graph",),
         "server_args.py:410 (the field, fields/exec_.py:670, is no_cli)"),
    Flag("disable_custom_all_reduce", "bool", ("--disable-custom-all-reduce",),
         "fields/exec_.py:725"),
    Flag("config", "str", ("--config",), "server_args.py prepare_server_args"),
    Flag("pd_role", "str", ("--disaggregation-mode",), "fields/disagg.py:55-58"),
)

# Python keyword names: vLLM's LLM(...)/EngineArgs(...) take the long flag names with ``_``
# (arg_utils.py l.492-651); sgl.Engine(...) takes ServerArgs field names.
VLLM_KWARGS: dict[str, tuple[str, Kind]] = {
    "model": ("model", "model"),
    "tensor_parallel_size": ("tensor_parallel_size", "int"),
    "pipeline_parallel_size": ("pipeline_parallel_size", "int"),
    "data_parallel_size": ("data_parallel_size", "int"),
    "enable_expert_parallel": ("enable_expert_parallel", "bool"),
    "max_num_seqs": ("max_num_seqs", "int"),
    "block_size": ("block_size", "int"),
    "max_model_len": ("max_model_len", "int"),
    "max_num_batched_tokens": ("max_num_batched_tokens", "int"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "float"),
    "kv_cache_dtype": ("kv_cache_dtype", "str"),
    "quantization": ("quantization", "str"),
    "dtype": ("dtype", "str"),
    "revision": ("revision", "str"),
    "enforce_eager": ("enforce_eager", "bool"),
    "disable_custom_all_reduce": ("disable_custom_all_reduce", "bool"),
    "distributed_executor_backend": ("distributed_executor_backend", "str"),
    "cpu_offload_gb": ("cpu_offload_gb", "float"),
}
SGLANG_KWARGS: dict[str, tuple[str, Kind]] = {
    "model_path": ("model", "model"),
    "tp_size": ("tensor_parallel_size", "int"),
    "pp_size": ("pipeline_parallel_size", "int"),
    "dp_size": ("data_parallel_size", "int"),
    "attn_dp_size": ("attn_dp_size", "int"),
    "enable_dp_attention": ("enable_dp_attention", "bool"),
    "ep_size": ("ep_size", "int"),
    "moe_dense_tp_size": ("moe_dense_tp_size", "int"),
    "moe_a2a_backend": ("moe_a2a_backend", "str"),
    "nnodes": ("nnodes", "int"),
    "max_running_requests": ("max_num_seqs", "int"),
    "page_size": ("block_size", "int"),
    "context_length": ("max_model_len", "int"),
    "chunked_prefill_size": ("max_num_batched_tokens", "int"),
    "mem_fraction_static": ("gpu_memory_utilization", "float"),
    "swa_full_tokens_ratio": ("swa_full_tokens_ratio", "float"),
    "mamba_full_memory_ratio": ("mamba_full_memory_ratio", "float"),
    "max_mamba_cache_size": ("max_mamba_cache_size", "int"),
    "kv_cache_dtype": ("kv_cache_dtype", "str"),
    "quantization": ("quantization", "str"),
    "dtype": ("dtype", "str"),
    "revision": ("revision", "str"),
    "disable_cuda_graph": ("enforce_eager", "bool"),
    "disable_custom_all_reduce": ("disable_custom_all_reduce", "bool"),
}


@record
class Option:
    """One argparse action of a release: its option strings and what its value must be."""

    names: tuple[str, ...]
    kind: str  # int, float, human_int, str, flag (no value), bool_optional, list, optional_str
    where: str  # file:line in the release where the option is registered
    choices: tuple[str, ...] | None = None
    range: tuple[tuple[str, float], ...] = ()  # pydantic bounds: (("gt", 0), ("le", 1))
    deprecated: str | None = None  # the engine's deprecation text
    replacement: str | None = None
    parser: str | None = None  # "json" (type=json.loads), "lora_modules" (LoRAParserAction)
    auto: bool = False  # human_int that also takes -1/auto (human_readable_int_or_auto)
    json_fields: tuple[str, ...] = ()  # the keys a JSON value may have (lora_modules)
    json_required: tuple[str, ...] = ()  # the keys it must have

    def __init__(self, names: tuple[str, ...], kind: str, where: str,
                 choices: tuple[str, ...] | None = None,
                 range: tuple[tuple[str, float], ...] = (),  # the JSON key
                 deprecated: str | None = None, replacement: str | None = None,
                 parser: str | None = None, auto: bool = False,
                 json_fields: tuple[str, ...] = (), json_required: tuple[str, ...] = ()) -> None:
        # Written out (like Span's): a table builds ~400 of these when a launch is read
        d = self.__dict__
        d["names"], d["kind"], d["where"], d["choices"] = names, kind, where, choices
        d["range"], d["deprecated"], d["replacement"] = range, deprecated, replacement
        d["parser"], d["auto"] = parser, auto
        d["json_fields"], d["json_required"] = json_fields, json_required

    @property
    def takes_value(self) -> bool:
        return self.kind not in ("flag", "bool_optional")


@record
class OptionTable:
    """Every option string one engine release registers (tpcheck/engines/options/*.json)."""

    engine: str
    version: str
    source: str
    by_name: dict[str, Option]
    # How the release's parser treats values (read from its source by tools/gen_options.py):
    # "human_int" (human_readable_int's pattern and suffixes), "dotted_keys" (the prefix that
    # FlexibleArgumentParser expands ``.key`` on).
    parsing: dict[str, dict[str, object]] = field(default_factory=dict)
    # The two-option checks run after parsing, before the model loads (TP006).
    validations: tuple[dict[str, Any], ...] = ()


OPTIONS_DIR = __file__.rsplit("/", 1)[0] + "/options"
_TABLES: dict[tuple[str, str], OptionTable] = {}
DEFAULT_RELEASE = NEWEST  # with nothing pinned, the newest table is checked


_RELEASES: dict[str, list[str]] = {}


def known_releases(engine: str) -> list[str]:
    """Releases with a generated table, oldest first (listed once per process)."""
    out = _RELEASES.get(engine)
    if out is None:
        import os

        out = sorted((n[len(engine) + 1 : -5] for n in os.listdir(OPTIONS_DIR)
                      if n.startswith(engine + "-") and n.endswith(".json")), key=version_key)
        _RELEASES[engine] = out
    return out


_KEYS: dict[str, tuple[int, ...]] = {}
# PEP 440's public version, spelt leniently (``v`` prefix, ``-``/``_``/``.`` separators, the
# alternative names alpha/beta/c/pre/preview/rev/r); a local ``+cu128`` or build suffix after
# it is ignored. packaging is no dependency of tpcheck, so the ordering is written out here.
# Each word must end there (``-cu128``, ``-rocm6.3`` are build suffixes, not c/r parts).
_PEP440 = (r"^\s*v?(\d+(?:\.\d+)*)"
           r"(?:[-_.]?(alpha|beta|preview|pre|rc|a|b|c)[-_.]?(\d*)(?![a-z]))?"
           r"(?:-(\d+)|[-_.]?(post|rev|r)[-_.]?(\d*)(?![a-z]))?"
           r"(?:[-_.]?(dev)[-_.]?(\d*)(?![a-z]))?")
_PRE_RANK = {"a": -3, "alpha": -3, "b": -2, "beta": -2, "c": -1, "rc": -1, "pre": -1,
             "preview": -1}
_NO_DEV = 1 << 62  # a release without .devN sorts after every .devN of it


def version_key(v: str) -> tuple[int, ...]:
    """Release order by PEP 440: ``0.5.2.dev1`` < ``0.5.2a1`` < ``0.5.2rc2`` < ``0.5.2`` <
    ``0.5.2.post1`` < ``0.5.3``; () when ``v`` starts with no version.

    The key is the release padded to four numbers (0.10 == 0.10.0), then the pre-release phase
    (-4 a lone .devN, -3 a, -2 b, -1 rc, 0 none) and number, the post number (-1 none) and the
    dev number (after every .devN when there is none)."""
    k = _KEYS.get(v)
    if k is None and all(part.isascii() and part.isdigit() for part in v.split(".")):
        # 0.33.0, the common case, without the pattern (compiling it with IGNORECASE costs a
        # one-file lint ~5 ms): the release alone, no phase, no post, no dev
        rel = [int(x) for x in v.split(".")]
        while len(rel) > 4 and rel[-1] == 0:
            rel.pop()
        k = (*rel, *[0] * (4 - len(rel)), 0, 0, -1, _NO_DEV)
    if k is None:
        import re

        m = re.match(_PEP440, v, re.IGNORECASE)
        if m is None:
            k = ()
        else:
            rel = [int(x) for x in m.group(1).split(".")]
            while len(rel) > 4 and rel[-1] == 0:
                rel.pop()  # 1.0.0.0.0 == 1.0
            rel += [0] * (4 - len(rel))
            pre_l, pre_n, post_implicit, post_l, post_n, dev_l, dev_n = m.groups()[1:]
            phase = _PRE_RANK[pre_l.lower()] if pre_l else 0
            post = (int(post_implicit) if post_implicit is not None
                    else int(post_n or 0) if post_l else -1)
            if dev_l and not pre_l and post < 0:
                phase = -4  # 1.0.dev1 sorts before 1.0a1 (PEP 440 "Summary of ordering")
            dev = int(dev_n or 0) if dev_l else _NO_DEV
            k = (*rel, phase, int(pre_n or 0), post, dev)
        if len(_KEYS) < 1024:
            _KEYS[v] = k
    return k


@lru_cache(maxsize=1024)
def nearest_release(engine: str, version: str | None) -> tuple[str, str | None]:
    """The table to check against, and a note when it is not the pinned release itself.

    No pin: the release tpcheck's defaults follow. A pin without a table: the newest known
    release not newer than it (else the oldest known), said so in the finding. Kept per
    (engine, version), up to 1,024: every rule of every deployment asks its release's.
    """
    if not version:
        return DEFAULT_RELEASE[engine], None
    v = version.lstrip("vV")
    known = known_releases(engine)
    if v in known:
        return v, None
    key = version_key(v)
    if not key:
        return DEFAULT_RELEASE[engine], None
    older = [k for k in known if version_key(k) <= key]
    pick = older[-1] if older else known[0]
    return pick, f"{engine} {v} has no option table: checked against {pick}, the nearest known"


def load_table(engine: str, version: str) -> OptionTable:
    """Read one generated table (once per process); only reading a launch needs it."""
    key = (engine, version)
    t = _TABLES.get(key)
    if t is None:
        from tpcheck.jsonlib import json

        with open(f"{OPTIONS_DIR}/{engine}-{version}.json", encoding="utf-8") as fh:
            head, *rows = fh.read().split("\n")
        data = json.loads(head[: -len(_OPTIONS_KEY)] + "}")
        by_name = OptionsByName()
        add = by_name.setdefault  # dict's (OptionsByName.add): ~430 names, no Python call each
        for row in rows:
            if row.startswith(_NAMES):  # not the closing "]}"
                for n in row[len(_NAMES) : row.index('"]')].split('","'):
                    add(n, row)
        t = OptionTable(engine, data["version"], data.get("source", ""), by_name,
                        data.get("parsing", {}), tuple(data.get("validations", ())))
        _TABLES[key] = t
    return t


# The layout tools/gen_options.py's table_text writes: the release's facts on the first line,
# ending where the options list opens, then one option a line, its names first. An option is
# decoded from its line when first looked up (decoding all ~320 cost a one-file lint ~2 M
# instructions). Option strings hold no quote or backslash, so the names are read as written.
_OPTIONS_KEY = ',"options":['
_NAMES = '{"names":["'


def _option(e: dict[str, Any]) -> Option:
    """One JSON entry of a generated table as its Option."""
    ch = e.get("choices")
    rng = e.get("range")
    return Option(
        tuple(e["names"]),
        e.get("kind", "str"),
        e.get("where", ""),
        tuple(str(c) for c in ch) if ch is not None else None,
        tuple(sorted(rng.items())) if rng else (),
        e.get("deprecated"),
        e.get("replacement"),
        e.get("parser"),
        bool(e.get("auto", False)),
        tuple(e.get("json_fields", ())),
        tuple(e.get("json_required", ())),
    )


class OptionsByName(dict):  # type: ignore[type-arg]  # dict[str, Option] to its readers
    """A table's ``by_name``: option string -> Option, each Option built from its JSON line
    when first looked up. A launch names a few of the release's ~430 option strings (the
    prefix rule reads only the names), and building all ~320 Options cost a one-file lint
    ~4 million instructions. Every way of reading a value (``[]``, ``get``, ``values``,
    ``items``, comparison, ``copy``) gives Options; an entry's names share one Option, the
    first entry naming a string keeps it (as ``setdefault`` did). (``dict(t)`` and ``{**t}``
copy in C, past these methods: use ``copy()``.)"""

    def add(self, name: str, entry: str) -> None:
        dict.setdefault(self, name, entry)

    def _built(self, entry: str) -> Option:
        from tpcheck.jsonlib import json

        opt = _option(json.loads(entry.rstrip(",")))
        for n in opt.names:
            if dict.get(self, n) is entry:
                dict.__setitem__(self, n, opt)
        return opt

    def __getitem__(self, name: str) -> Option:
        got = dict.__getitem__(self, name)
        return got if type(got) is Option else self._built(got)

    def get(self, name: str, default: Any = None) -> Any:
        got = dict.get(self, name, _ABSENT)
        if got is _ABSENT:
            return default
        return got if type(got) is Option else self._built(got)

    def _all(self) -> OptionsByName:
        for name in self:
            self[name]
        return self

    def values(self) -> Any:
        return dict.values(self._all())

    def items(self) -> Any:
        return dict.items(self._all())

    def copy(self) -> dict[str, Option]:
        return dict(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OptionsByName):
            other._all()
        return dict.__eq__(self._all(), other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # as dict's

    def __repr__(self) -> str:
        return dict.__repr__(self._all())


_ABSENT = object()


def option_strings(engine: str, version: str | None = None) -> frozenset[str]:
    """Every option string of a release (default: the release tpcheck's defaults follow)."""
    return frozenset(load_table(engine, version or DEFAULT_RELEASE[engine]).by_name)

FLAGS: dict[str, dict[str, Flag]] = {
    "vllm": {n: f for f in VLLM_FLAGS for n in f.names},
    "sglang": {n: f for f in SGLANG_FLAGS for n in f.names},
}
# Flags whose presence alone (args with no launcher) says which engine reads them.
ENGINE_ONLY_FLAGS: dict[str, frozenset[str]] = {
    "vllm": frozenset(FLAGS["vllm"]) - frozenset(FLAGS["sglang"]) - {"-q", "-ep"},
    "sglang": frozenset(FLAGS["sglang"]) - frozenset(FLAGS["vllm"]),
}


@record
class Resolved:
    """What argparse makes of one option string: the option it names, or why it refuses it."""

    option: str | None  # the full option string argparse picks, None when unknown/ambiguous
    flag: Flag | None  # the tpcheck table row, None when tpcheck does not read the option
    error: str | None = None  # the engine's own refusal (ambiguous prefix)


def normalize(engine: str, option: str) -> str:
    """vLLM reads ``--max_num_seqs`` as ``--max-num-seqs``; SGLang takes names as written."""
    if engine == "vllm" and option.startswith("--"):
        head, dot, tail = option[2:].partition(".")
        return "--" + head.replace("_", "-") + dot + tail
    return option


def resolve(engine: str, option: str, version: str | None = None) -> Resolved:
    """Resolve an option string (no ``=value``) the way the engine's argparse would."""
    opt = normalize(engine, option)
    known = load_table(engine, version or DEFAULT_RELEASE[engine]).by_name
    table = FLAGS[engine]
    if opt in known:
        return Resolved(opt, table.get(opt))
    if not opt.startswith("--") or len(opt) < 3:
        return Resolved(None, None)
    matches = sorted(o for o in known if o.startswith(opt))
    if len(matches) == 1:
        return Resolved(matches[0], table.get(matches[0]))
    if len(matches) > 1:
        shown = ", ".join(matches)
        return Resolved(None, None, f"ambiguous option: {option} could match {shown}")
    return Resolved(None, None)
