"""Engine command lines: which engine a command launches, and its flags read as argparse would.

The flag table and the prefix rule live in ``tpcheck.engines.flags``; this module walks the
words of one command (from a shell line, a manifest's ``command``+``args``, a Python list) and
fills a Deployment with each value and the span of the token that set it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tpcheck.deferred import lazy_re
from tpcheck.engines.flags import ENGINE_ONLY_FLAGS, Flag, Resolved, resolve
from tpcheck.record import field, fields, record
from tpcheck.sources.base import RUNTIME_WORDS_NOTE, Deployment, OptionUse, Span
from tpcheck.sources.words import Word

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

    from tpcheck.engines.flags import Kind
    from tpcheck.sources.base import Engine

# python -m MODULE → engine. dynamo.vllm / dynamo.sglang pass the engine's own flags through.
VLLM_MODULES = frozenset(
    {"vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server", "dynamo.vllm"}
)
SGLANG_MODULES = frozenset(
    {"sglang.launch_server", "sglang_router.launch_server", "dynamo.sglang"}
)


# Launchers that parse options of their own before handing the engine's on: an option the
# engine does not know may be theirs, so TP001/TP002/TP004 stay quiet (issue 17).
PASSTHROUGH_MODULES = frozenset({"dynamo.vllm", "dynamo.sglang", "sglang_router.launch_server"})
PASSTHROUGH_NOTE = "the launcher adds options of its own to the engine's"


def _option_word(opt: str) -> bool:
    """``re.match(r"^--?[A-Za-z][\\w.-]*$", opt)`` with str methods (compiling the pattern was
    ~0.3 million instructions of a one-file lint): ``\\w`` is ``str.isalnum`` or ``_``, and ``$``
    also matches before a final newline. Equal to the pattern on every code point."""
    body = opt[2:] if opt.startswith("--") else opt[1:] if opt.startswith("-") else ""
    if body.endswith("\n"):
        body = body[:-1]
    head = body[:1]
    if not (head.isascii() and head.isalpha()):
        return False
    rest = body[1:].replace("-", "a").replace(".", "a").replace("_", "a")
    return not rest or rest.isalnum()


_ENGINE_NAMES = ("vllm", "sglang")
_NOT_LAUNCHERS = frozenset({"echo", "printf", "cat", "grep", "#", "test", "[", "curl", "wget"})


@record
class Launch:
    engine: Engine
    index: int  # index of the launcher's first word
    args_start: int  # first word that is an argument
    positional_model: bool  # `vllm serve MODEL` / `sglang serve MODEL`
    inferred: bool = False  # no launcher: engine told by its flags or the image


def find_launch(values: Sequence[str]) -> Launch | None:
    """The first engine launch among a command's words, if any."""
    if values and values[0] in _NOT_LAUNCHERS:
        return None
    n = len(values)
    for i, w in enumerate(values):
        # asked of every word of every command read: a word is split at its last "/" only
        # when it ends in an engine's name, and the next word is looked at only then
        if w.endswith(_ENGINE_NAMES):
            base = w.rsplit("/", 1)[-1]
            if (base == "vllm" or base == "sglang") and i + 1 < n and values[i + 1] == "serve":
                return Launch("vllm" if base == "vllm" else "sglang", i, i + 2, True)
            continue
        if w == "-m" and i + 1 < n and values[i + 1]:
            nxt = values[i + 1]
            if nxt in VLLM_MODULES:
                return Launch("vllm", i, i + 2, False)
            if nxt in SGLANG_MODULES:
                return Launch("sglang", i, i + 2, False)
            if nxt == "vllm.entrypoints.cli.main" and i + 2 < len(values) and (
                values[i + 2] == "serve"
            ):
                return Launch("vllm", i, i + 3, True)
    return None


def infer_engine(values: Sequence[str], image: str | None) -> Engine | None:
    """Engine of bare ``args`` (the image's entrypoint runs the engine)."""
    img = (image or "").lower()
    if "sglang" in img:
        return "sglang"
    if "vllm" in img:
        return "vllm"
    score = {"vllm": 0, "sglang": 0}
    for v in values:
        opt = v.split("=", 1)[0]
        for eng in ("vllm", "sglang"):
            if opt in ENGINE_ONLY_FLAGS[eng]:
                score[eng] += 1
    if score["sglang"] > score["vllm"]:
        return "sglang"
    if score["vllm"] > 0:
        return "vllm"
    if score["sglang"] == 0 and any(
        v.split("=", 1)[0] in ("--tensor-parallel-size", "--pipeline-parallel-size") for v in values
    ):
        return "vllm"  # both engines accept these; vLLM's spelling is the common one
    return None


_HUMAN = lazy_re(r"^(\d+(?:\.\d+)?)([kKmMgGtT])$")


def parse_value(kind: Kind, value: str) -> Any:
    """A flag value as the engine's type function reads it; ValueError when it would refuse."""
    v = value.strip()
    if kind in ("int", "human_int"):
        # the pattern ends in a suffix letter: a plain number never compiles it
        m = _HUMAN.match(v) if kind == "human_int" and v[-1:] in "kKmMgGtT" else None
        if m:
            num, suf = m.groups()
            if suf.islower():
                return int(float(num) * {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[suf])
            return int(num) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suf]
        return int(v)
    if kind == "float":
        return float(v)
    if kind == "bool":
        low = v.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise ValueError(v)
    return v


@record(frozen=False)
class Fields:
    """Values read so far, with spans; argparse's last-one-wins applies."""

    values: dict[str, Any] = field(default_factory=dict)
    spans: dict[str, Span] = field(default_factory=dict)
    unresolved: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    options: list[OptionUse] = field(default_factory=list)

    def __init__(self, values: dict[str, Any] | None = None,
                 spans: dict[str, Span] | None = None,
                 unresolved: dict[str, str] | None = None, notes: list[str] | None = None,
                 options: list[OptionUse] | None = None) -> None:
        # Written out (None: a fresh one): one per launch read, and the generated __init__'s
        # five default factories cost ten times as much (see tpcheck.record)
        self.values = {} if values is None else values
        self.spans = {} if spans is None else spans
        self.unresolved = {} if unresolved is None else unresolved
        self.notes = [] if notes is None else notes
        self.options = [] if options is None else options

    def set(self, name: str, value: Any, span: Span) -> None:
        self.values[name] = value
        self.spans[name] = span
        self.unresolved.pop(name, None)

    def unresolved_value(self, name: str, expr: str, span: Span) -> None:
        self.values.pop(name, None)
        self.unresolved[name] = expr
        self.spans[name] = span

    def merge(self, other: Fields) -> None:
        for k, v in other.values.items():
            self.set(k, v, other.spans[k])
        for k, e in other.unresolved.items():
            self.unresolved_value(k, e, other.spans[k])
        self.notes.extend(other.notes)
        self.options.extend(other.options)


def set_typed(fields: Fields, name: str, kind: Kind, word: Word, start: int = 0) -> None:
    """Parse ``word.value[start:]`` as ``kind`` into ``fields`` (unresolved when it cannot)."""
    span = word.value_span(start) if start else word.value_span()
    raw = word.value[start:]
    if word.unresolved is not None:
        expr = word.unresolved
        if start and "=" in expr:
            expr = expr.split("=", 1)[1]
        fields.unresolved_value(name, expr, span)
        return
    if kind == "model":
        fields.set("model", raw, span)
        return
    if name == "max_model_len" and raw.strip().lower() == "auto":
        raw = "-1"  # vLLM's auto-fit spelling (vllm 0.33.0 utils/argparse_utils.py:91-92)
    try:
        fields.set(name, parse_value(kind, raw), span)
        if word.derived is not None:
            fields.notes.append(f"{name} {word.derived.text}")  # where the value came from
    except (ValueError, KeyError):
        fields.unresolved_value(name, raw, span)
        fields.notes.append(f"{name}: {raw!r} is not a valid {kind}")


_RESOLVED: dict[tuple[str, str], tuple[Resolved, bool]] = {}


def _resolve(engine: Engine, opt: str) -> tuple[Resolved, bool]:
    """``resolve`` and ``_option_word`` remembered per option (both depend on the engine and
    the option alone): an unknown option scans every option string the engine has, the same
    few hundred options recur across a repository, and one lookup answers both."""
    key = (engine, opt)
    hit = _RESOLVED.get(key)
    if hit is None:
        hit = (resolve(engine, opt), _option_word(opt))
        if len(_RESOLVED) < 8192:  # bounded: a hostile file cannot grow it without limit
            _RESOLVED[key] = hit
    return hit


def parse_args(engine: Engine, words: Sequence[Word], positional_model: bool) -> Fields:
    """Read an engine's arguments (words after the launcher)."""
    f = Fields()
    i = 0
    n = len(words)
    if positional_model and n and not words[0].value.startswith("-"):
        set_typed(f, "model", "model", words[0])
        i = 1
    after_dashes = False  # argparse: every word after "--" is positional
    while i < n:
        w = words[i]
        v = w.value
        after_dashes = after_dashes or v == "--"
        if not v.startswith("-") or v in ("-", "--") or _is_number(v):
            if (positional_model and not v.startswith("-") and "model" not in f.values
                    and "model" not in f.unresolved and not after_dashes):
                # argparse takes `vllm serve --opt=x MODEL`'s positional after options too
                set_typed(f, "model", "model", w)
            i += 1
            continue
        opt, eq, _ = v.partition("=")
        r, option_word = _RESOLVED.get((engine, opt)) or _resolve(engine, opt)
        if option_word and not after_dashes:
            f.options.append(_option_use(w, opt, eq, words[i + 1] if i + 1 < n else None))
        if r.error is not None:
            f.notes.append(f"{engine} refuses {opt}: {r.error}")
        flag = r.flag
        takes_value = flag is None or flag.kind != "bool"
        if flag is None:
            # Not read by tpcheck: skip the option's value when one follows it.
            if not eq and i + 1 < n and _looks_like_value(words[i + 1].value):
                i += 1
            i += 1
            continue
        if not takes_value:
            if eq:
                set_typed(f, flag.field, "bool", w, len(opt) + 1)
            else:
                f.set(flag.field, flag.value, w.raw_span)
            i += 1
            continue
        if eq:
            _store(f, flag, w, len(opt) + 1)
            i += 1
            continue
        if i + 1 < n and _looks_like_value(words[i + 1].value):
            _store(f, flag, words[i + 1], 0)
            i += 2
            continue
        f.notes.append(f"{opt} has no value")
        i += 1
    post_process(engine, f)
    return f


def _option_use(w: Word, opt: str, eq: str, nxt: Word | None) -> OptionUse:
    """The option word and the value argparse would give it (the next word when it looks like
    one); the spans are placed only if a rule reports on it."""
    if w.unresolved is not None:
        return OptionUse(opt, None, lambda: (w.raw_span, None))
    if eq:
        start = len(opt) + 1
        return OptionUse(opt, w.value[start:],
                         lambda: (w.value_span(0, len(opt)), w.value_span(start)),
                         attached=True)
    if nxt is not None and _looks_like_value(nxt.value):
        value = None if nxt.unresolved is not None else nxt.value
        return OptionUse(opt, value, lambda: (w.value_span(), nxt.value_span()))
    return OptionUse(opt, None, lambda: (w.value_span(), None))


def _store(f: Fields, flag: Flag, w: Word, start: int) -> None:
    if flag.field == "config":
        f.notes.append(f"--config {w.value[start:]} (read that file too)")
        return
    set_typed(f, flag.field, flag.kind, w, start)


def post_process(engine: Engine, f: Fields) -> None:
    ep = f.values.get("ep_size")  # kept: TP301 needs the width (SGLang moe_tp = tp // ep)
    ep_span = f.spans.get("ep_size")
    if isinstance(ep, int) and ep_span is not None:
        f.set("enable_expert_parallel", ep > 1, ep_span)
    if f.values.pop("enable_dp_attention", None) and "enable_dp_attention" in f.spans:
        f.values["enable_dp_attention"] = True
    if engine == "sglang" and f.values.get("enable_dp_attention") and (
        "attn_dp_size" not in f.values and isinstance(f.values.get("data_parallel_size"), int)
    ):
        # SGLang rewrites `--dp N --enable-dp-attention` to `--attn-dp-size N`
        # (arg_groups/parallel_hook.py:39-61); the written dp is kept as written.
        f.values["attn_dp_size"] = f.values["data_parallel_size"]
        f.spans["attn_dp_size"] = f.spans["data_parallel_size"]
    if engine == "sglang" and isinstance(f.values.get("attn_dp_size"), int):
        f.values.setdefault("enable_dp_attention", f.values["attn_dp_size"] > 1)
    _pd_role(f)
    _mm_zero(f)
    if engine == "vllm":
        dp = f.values.get("data_parallel_size")
        if isinstance(dp, int) and dp > 1 and f.values.get("enable_expert_parallel"):
            f.values["enable_dp_attention"] = True
            f.spans.setdefault("enable_dp_attention", f.spans["data_parallel_size"])


def _mm_zero(f: Fields) -> None:
    """vLLM's modalities limited to 0 per prompt: every one with --language-model-only, else
    the keys --limit-mm-per-prompt's JSON sets to 0 or {"count": 0} (config/multimodal.py
    l.259-273); a limit that is not JSON is left unread."""
    lmo = f.values.pop("language_model_only", None)
    lmo_span = f.spans.pop("language_model_only", None)
    raw = f.values.pop("limit_mm_per_prompt", None)
    raw_span = f.spans.pop("limit_mm_per_prompt", None)
    f.unresolved.pop("limit_mm_per_prompt", None)
    f.unresolved.pop("language_model_only", None)
    if lmo is True and lmo_span is not None:
        f.set("mm_zero", "*", lmo_span)
        return
    if not isinstance(raw, str) or raw_span is None:
        return
    import json  # only for a launch that sets the limit

    try:
        limits = json.loads(raw)
    except ValueError:
        return
    if not isinstance(limits, dict):
        return
    zero = sorted(k for k, v in limits.items() if isinstance(k, str) and (
        v == 0 or (isinstance(v, dict) and v.get("count") == 0)) and v is not False)
    f.set("mm_zero", ",".join(zero), raw_span)


_KV_CONNECTOR = lazy_re(r"""["']?kv_connector["']?\s*:\s*["']?([A-Za-z0-9_.]+)""")
_KV_ROLE = lazy_re(r"""["']?kv_role["']?\s*:\s*["']?(kv_producer|kv_consumer|kv_both)""")
_PD_ROLES = {"prefill": "prefill", "decode": "decode", "kv_producer": "prefill",
             "kv_consumer": "decode"}


def _pd_role(f: Fields) -> None:
    """The server's side of a disaggregated pair: SGLang's --disaggregation-mode as written
    ("null" is not disaggregated), vLLM's kv_role from --kv-transfer-config (kv_both serves
    either side, per request: no role)."""
    cfg = f.values.pop("kv_transfer_config", None)
    cfg_span = f.spans.pop("kv_transfer_config", None)
    f.unresolved.pop("kv_transfer_config", None)
    if isinstance(cfg, str) and cfg_span is not None:
        c = _KV_CONNECTOR.search(cfg)
        f.set("kv_connector", c.group(1) if c else "", cfg_span)
        m = _KV_ROLE.search(cfg)
        if m is not None and m.group(1) in _PD_ROLES:
            f.set("pd_role", _PD_ROLES[m.group(1)], cfg_span)
    role = f.values.get("pd_role")
    if role is not None and role not in _PD_ROLES:
        del f.values["pd_role"]  # "null", or a value SGLang refuses (TP003 says so)
    if "pd_role" not in f.values:
        # Dynamo's vLLM worker (python -m dynamo.vllm) takes its side as a flag of its own
        # (ai-dynamo examples/backends/vllm/launch/disagg_kvbm.sh: the prefill worker)
        use = next((o for o in f.options if o.written == "--is-prefill-worker"), None)
        if use is not None:
            f.set("pd_role", "prefill", use.locate()[0])


def _is_number(v: str) -> bool:
    if v.startswith("--"):
        return False  # no float starts with two signs: skip the raise for every --flag
    try:
        float(v)
    except ValueError:
        return False
    return True


def _looks_like_value(v: str) -> bool:
    return not v.startswith("-") or _is_number(v) or v == "-"


_DEPLOYMENT_FIELDS = frozenset(f.name for f in fields(Deployment))


def deployment_from_fields(
    path: str,
    engine: Engine,
    span: Span,
    f: Fields,
    *,
    env: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
    extra_spans: Mapping[str, Span] | None = None,
    notes: Sequence[str] = (),
) -> Deployment:
    """Build the record; fields the reader did not set stay None."""
    kw: dict[str, Any] = {}
    spans: dict[str, Span] = {}
    for k, v in (extra or {}).items():
        if k in _DEPLOYMENT_FIELDS and v is not None:
            kw[k] = v
    spans.update(extra_spans or {})
    for k, v in f.values.items():
        if k in _DEPLOYMENT_FIELDS:
            kw[k] = v
    for k, s in f.spans.items():
        spans[k] = s
    unresolved = {k: e for k, e in f.unresolved.items() if k in _DEPLOYMENT_FIELDS}
    all_notes = tuple(dict.fromkeys([*notes, *f.notes]))
    return Deployment(
        path=path,
        engine=engine,
        span=span,
        env=dict(env or {}),
        spans=spans,
        unresolved=unresolved,
        notes=all_notes,
        options=tuple(f.options),
        **kw,
    )


def deployment_from_words(
    path: str,
    words: Sequence[Word],
    launch: Launch,
    *,
    env: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
    extra_spans: Mapping[str, Span] | None = None,
    notes: Sequence[str] = (),
) -> Deployment:
    """A Deployment from one command's words and the launch found in them."""
    args = words[launch.args_start :]
    f = parse_args(launch.engine, args, launch.positional_model)
    first = words[launch.index].raw_span if launch.index < len(words) else words[0].raw_span
    last = words[-1].raw_span
    if last.path == first.path and (last.end_line, last.end_column) < (first.line, first.column):
        # a pod's `command:` written after its `args:`: the launch spans its words wherever
        # each was written in that file, from the first to the last (a kustomize patch's args
        # are in another file: the launch stays at the base's command)
        spans = [w.raw_span for w in words[launch.index:] if w.raw_span.path == first.path]
        first = min(spans, key=lambda s: (s.line, s.column))
        last = max(spans, key=lambda s: (s.end_line, s.end_column))
    span = Span(first.path, first.line, first.column, last.end_line, last.end_column)
    kw: dict[str, Any] = {"entrypoint": "serve"}
    kw.update(extra or {})
    module = words[launch.index + 1].value if launch.index + 1 < len(words) else ""
    if words[launch.index].value == "-m" and module in PASSTHROUGH_MODULES:
        notes = (*notes, PASSTHROUGH_NOTE)
    if any(w.unresolved is not None for w in args):
        notes = (*notes, RUNTIME_WORDS_NOTE)
    return deployment_from_fields(
        path, launch.engine, span, f, env=env, extra=kw, extra_spans=extra_spans, notes=notes
    )
