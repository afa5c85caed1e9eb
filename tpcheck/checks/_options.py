"""What the engine's argument parser makes of each option a deployment writes (TP001-TP005).

One pass per deployment resolves every option against the generated table of the pinned
release (``tpcheck/engines/options``), the way argparse would: exact name, else a unique
``--`` prefix (``allow_abbrev`` is left on by both engines), else refused. The rules then pick
the outcomes they speak for. Python keyword arguments are checked against the release's
``EngineArgs``/``LLM`` (vLLM) or ``ServerArgs`` (SGLang) field names instead.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpcheck.checks._option_values import is_float, value_verdict
from tpcheck.checks._option_verdicts import KEYWORD_OWNER, OUTCOMES, PROG, Analysis, Verdict
from tpcheck.checks.base import Assumption, Edit, Finding, Severity
from tpcheck.checks.context import CheckContext, release_for
from tpcheck.checks.registry import Rule
from tpcheck.engines.flags import (
    OptionTable,
    load_table,
    normalize,
)
from tpcheck.engines.release import Release
from tpcheck.record import replace
from tpcheck.sources.argv import PASSTHROUGH_NOTE
from tpcheck.sources.base import (
    RECOVERED_NOTE,
    RUNTIME_WORDS_NOTE,
    Deployment,
    OptionUse,
    Span,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from tpcheck.checks._option_verdicts import Outcome


def release_of(d: Deployment) -> Release:
    """The release of ``d`` from its image tag alone (callers with settings pass their own)."""
    return release_for(d.engine, d.image, d.engine_version, None, None, d.engine_version_from)


# The last deployment analysed: the option rules (TP001-TP006) run one after another on one
# deployment, so one entry serves them all and no finished deployment is kept alive.
_last: tuple[Deployment, Release, Analysis] | None = None


def analyze(d: Deployment, rel: Release | None = None) -> Analysis:
    """Every option of ``d`` resolved against its release (computed once per deployment).

    ``rel`` is the deployment's one release (``CheckContext.release``: the image tag, else
    engine-version, else the newest known); without it only the image tag pins."""
    global _last
    if rel is None:
        rel = release_of(d)
    last = _last  # read once: an LSP thread may replace it meanwhile
    if last is not None and last[0] is d and (last[1] is rel or last[1] == rel):
        return last[2]
    release, note = rel.table_version, rel.table_note
    table = load_table(d.engine, release)
    verdicts = tuple(
        v for v in (_verdict(d.engine, table, u) for u in d.options) if v is not None
    )
    verdicts += tuple(_combinations(d, table))
    newer = None
    if note:  # a release without a table of its own: its neighbours' say
        from tpcheck.checks._option_history import next_release, older_than_all

        newer = next_release(d.engine, release)
    if note and rel.pinned and older_than_all(d.engine, rel.version):
        # pinned before the oldest table: what that release registered is not known here
        verdicts = tuple(v for v in verdicts if v.outcome in ("bad_value", "deprecated"))
    elif newer is not None:
        # A pin between two tables: judge only what the newer neighbour refuses too (an
        # option may have come in between the two releases).
        nt = load_table(d.engine, newer)
        verdicts = tuple(v for v in verdicts
                         if (w := _verdict(d.engine, nt, v.use)) is not None
                         and w.outcome == v.outcome)
    if note:
        verdicts = tuple(v for v in verdicts if v.outcome != "combination")  # another release's
    verdicts += tuple(_dp_attention_without_dp(d, rel))
    if RECOVERED_NOTE in d.notes:
        verdicts = ()  # words read from text that does not parse: not what the engine gets
    elif PASSTHROUGH_NOTE in d.notes or "dynamo" in (d.image or "").lower():
        # dynamo / the SGLang router parse options of their own first: only the engine's own
        # options, found by name, are judged
        verdicts = tuple(v for v in verdicts if v.outcome in ("bad_value", "deprecated"))
    a = Analysis(d.engine, release, note, verdicts, rel)
    _last = (d, rel, a)
    return a


def _combinations(d: Deployment, table: OptionTable) -> Iterator[Verdict]:
    """The two-option checks the release runs after parsing (vLLM's
    ``validate_parsed_serve_args``, SGLang's ServerArgs hooks: an option that requires another,
    two that exclude each other), over the options written.

    Only for a command line whose every option is on it: a ``--config`` file or options
    the shell or the pod fills in at run time (``$EXTRA_ARGS``) may hold the other one."""
    if (not table.validations or (d.entrypoint or "serve") != "serve" or d.unresolved
            or RUNTIME_WORDS_NOTE in d.notes):
        return
    given: dict[str, OptionUse] = {}
    for u in d.options:
        if u.keyword:
            return
        for n in _names_given(d.engine, table, u.written):
            given.setdefault(n, u)
    if "--config" in given:
        return
    for check in table.validations:
        if check["kind"] == "bound":
            v = _bound_verdict(check, given.get(check["option"]))
            if v is not None:
                yield v
            continue
        first, other = given.get(check["option"]), given.get(check["other"])
        if first is None or first.value in ("false", "False", "0"):
            continue
        if (check["kind"] == "requires") == (other is None):
            requires = check["kind"] == "requires"
            use = first if requires or other is None else other
            head = (f"{check['option']} requires {check['other']}" if requires
                    else f"{check['other']} conflicts with {check['option']}")
            yield Verdict(use, "combination",
                          f"{check['exception']}: {check['message']} ({check['where']})",
                          headline=head)


_GIVEN: dict[tuple[str, str, str], tuple[str, ...]] = {}


def _names_given(engine: str, table: OptionTable, written: str) -> tuple[str, ...]:
    """The option names of ``table`` that writing ``written`` sets (its aliases; of a
    BooleanOptionalAction, the on or the off ones), () when it names no option of the table:
    kept per table and spelling (up to 4,096), as ``_prefixed`` is, since a repository writes
    the same few dozen options in every launch."""
    key = (engine, table.version, written)
    hit = _GIVEN.get(key)
    if hit is not None:
        return hit
    opt = normalize(engine, written)
    option = table.by_name.get(opt)
    if option is None and opt.startswith("--"):
        one = _prefixed(table, opt)
        option = table.by_name[one] if one is not None else None
    if option is None:
        hit = ()
    else:
        name = opt if opt in option.names else next(
            (n for n in option.names if n.startswith(opt)), option.names[0])
        off = name.startswith("--no-")  # BooleanOptionalAction's off switch
        hit = tuple(n for n in option.names if n.startswith("--no-") == off)
    if len(_GIVEN) < 4096:
        _GIVEN[key] = hit
    return hit


_PREFIXES: dict[tuple[str, str, str], str | None] = {}


def _prefixed(table: OptionTable, opt: str) -> str | None:
    """The one option name of ``table`` that ``opt`` abbreviates, else None; kept per table and
    spelling (up to 4,096), since scanning every name of a table for each abbreviated option
    of each deployment is the costliest part of the option analysis."""
    key = (table.engine, table.version, opt)
    if key in _PREFIXES:
        return _PREFIXES[key]
    m = [n for n in table.by_name if n.startswith(opt)]
    one = m[0] if len(m) == 1 else None
    if len(_PREFIXES) < 4096:
        _PREFIXES[key] = one
    return one


def _dp_attention_without_dp(d: Deployment, rel: Release) -> Iterator[Verdict]:
    """``--enable-dp-attention`` with no ``--dp`` above 1, on a release that asserts on it
    (``Release.dp_attention_needs_dp``): a check in code, so in no option table."""
    if (not rel.dp_attention_needs_dp or not d.enable_dp_attention
            or (d.data_parallel_size or 1) > 1 or (d.entrypoint or "serve") != "serve"
            or d.unresolved or RUNTIME_WORDS_NOTE in d.notes):
        return
    uses = [u for u in d.options if not u.keyword
            and normalize(d.engine, u.written) == "--enable-dp-attention"]
    if uses and not any(normalize(d.engine, u.written) == "--config" for u in d.options):
        yield Verdict(uses[0], "combination",
                      "AssertionError: Please set a dp-size > 1. You can use 1 < dp-size <= "
                      f"tp-size (sglang {rel.version} server_args.py, DP attention)",
                      headline="--enable-dp-attention requires --dp above 1",
                      suggestion=(f"--dp {d.tensor_parallel_size} with --enable-dp-attention"
                                  if (d.tensor_parallel_size or 1) > 1 else None))


def _bound_verdict(check: dict[str, Any], use: OptionUse | None) -> Verdict | None:
    """A bound the release checks in code after parsing (``if args.x < 0: raise``)."""
    if use is None or use.value is None or not is_float(use.value):
        return None
    x, bound, op = float(use.value), float(check["bound"]), check["refused_if"]
    refused = {"lt": x < bound, "le": x <= bound, "gt": x > bound, "ge": x >= bound}[op]
    if not refused:
        return None
    return Verdict(use, "bad_value", f"{check['exception']}: {check['message']} "
                   f"({check['where']})")


_JUDGED: dict[tuple[str, str, str, str | None, bool], Verdict | None] = {}


def _verdict(engine: str, table: OptionTable, use: OptionUse) -> Verdict | None:
    """``_judge`` remembered per written option and value: a repository repeats the same few
    hundred, and an unknown one costs a prefix scan and a did-you-mean search."""
    key = (engine, table.version, use.written, use.value, use.keyword)
    if key in _JUDGED:
        v = _JUDGED[key]
        return None if v is None else replace(v, use=use)
    v = _judge(engine, table, use)
    if len(_JUDGED) < 8192:  # bounded: a hostile file cannot grow it without limit
        # kept without the use itself (a hit puts its own in): the use's ``locate`` holds the
        # file's words, and 8,192 files' words were most of a large run's memory
        _JUDGED[key] = None if v is None else replace(v, use=_DETACHED)
    return v


_DETACHED = OptionUse("", None, lambda: (Span("", 1, 1, 1, 1), None))


def _judge(engine: str, table: OptionTable, use: OptionUse) -> Verdict | None:
    if use.keyword:
        return _keyword_verdict(engine, table, use)
    opt = normalize(engine, use.written)
    names = table.by_name
    if engine == "vllm" and opt.startswith("-O") and not opt.startswith("--"):
        return None  # -O3, -O.mode=3: FlexibleArgumentParser rewrites them (argparse_utils.py)
    dotted = _dotted_base(engine, table, opt)
    if dotted is not None:
        opt = dotted  # --compilation-config.mode, -cc.mode: a key of the option's JSON value
    option = names.get(opt)
    if option is None and not opt.startswith("--"):
        # a short option with its value attached (-tp8): argparse splits it off
        short = names.get(opt[:2])
        if short is not None and short.takes_value:
            return None
    if option is None and opt.startswith("--"):
        matches = sorted(n for n in names if n.startswith(opt))
        if len(matches) > 1:
            from tpcheck.checks._option_history import ambiguous_since

            since = ambiguous_since(engine, opt, table.version)
            msg = (f"{PROG[engine]}: error: ambiguous option: {use.written} could match "
                   f"{', '.join(matches)}")
            if since:
                msg += f" ({since})"
            return Verdict(use, "ambiguous", msg)
        if len(matches) == 1:
            option = names[matches[0]]
    if option is None:
        return _unknown(engine, table, use, opt, list(names))
    if option.deprecated:
        # the table holds the whole warning (tools/gen_options.py: the engine's text, or for
        # argparse's deprecated=True the parser's line, where, and what the engine says)
        return Verdict(use, "deprecated", option.deprecated, option,
                       replacement=option.replacement)
    if dotted is not None:
        return None  # the value is one key's, merged into the option's JSON by the parser
    return value_verdict(engine, use, option, keyword=False, table=table)


def _dotted_base(engine: str, table: OptionTable, opt: str) -> str | None:
    """The option a dotted key belongs to (``-cc.mode`` → ``-cc``), when this release's
    FlexibleArgumentParser expands dotted keys on that kind of option string (read from its
    source: from 0.9 on ``-`` and so the short aliases too; 0.8.5 expands none)."""
    if "." not in opt:
        return None
    rule = table.parsing.get("dotted_keys")
    if rule is None:
        if engine != "vllm" or "human_int" in table.parsing:
            return None  # a table read with the parsing rules, and this release has none
        prefix = "--"  # a table generated before the rules were read
    else:
        prefix = str(rule.get("prefix", "--"))
    if not opt.startswith(prefix) or opt.startswith("-O"):
        return None
    return opt.split(".", 1)[0]


def _unknown(engine: str, table: OptionTable, use: OptionUse, opt: str,
             names: list[str]) -> Verdict:
    from tpcheck.checks._option_history import last_release_with

    removed = last_release_with(engine, table.version, opt, keyword=False)
    msg = f"{PROG[engine]}: error: unrecognized arguments: {use.written}"
    if removed is not None:
        rel, old = removed
        msg += f" (registered up to {engine} {rel} at {old.where}; gone in {table.version})"
        return Verdict(use, "removed", msg, old, replacement=old.replacement)
    return Verdict(use, "unknown", msg, suggestion=_closest(opt, names))


def _closest(word: str, names: list[str]) -> str | None:
    """The nearest name (difflib ratio ≥ 0.75); only names of about the same length can reach
    that ratio, so the rest are not compared."""
    pool = [n for n in names if abs(len(n) - len(word)) <= max(3, len(word) // 4)
            and n[:2] == word[:2]]
    import difflib  # only for a misspelt option: its import costs a one-file lint ~5 ms

    close = difflib.get_close_matches(word, pool, n=1, cutoff=0.75)
    return close[0] if close else None


def _keyword_verdict(engine: str, table: OptionTable, use: OptionUse) -> Verdict | None:
    from tpcheck.checks._option_history import keywords_of, last_release_with

    kws = keywords_of(engine, table.version)
    if kws is None:
        return None  # a table without keyword names: nothing to judge a keyword by
    if use.written not in kws:
        msg = (f"TypeError: {KEYWORD_OWNER[engine]} got an unexpected keyword argument "
               f"'{use.written}'")
        removed = last_release_with(engine, table.version, use.written, keyword=True)
        if removed is not None:
            msg += f" (accepted up to {engine} {removed[0]}; gone in {table.version})"
            return Verdict(use, "removed", msg)
        return Verdict(use, "unknown", msg, suggestion=_closest(use.written, sorted(kws)))
    option = table.by_name.get("--" + use.written.replace("_", "-"))
    if option is None:
        return None
    return value_verdict(engine, use, option, keyword=True, table=table)


def _same_shape(a: Analysis, v: Verdict, target: str) -> bool:
    """A removed option is swapped for its replacement in place only when both take a value
    or neither does: vLLM's --enable-multimodal-encoder-data-parallel (a flag) became
    --mm-encoder-tp-mode data, which the option's name alone would leave without its value."""
    new = load_table(a.engine, a.release).by_name.get(normalize(a.engine, target))
    return new is not None and v.option is not None and new.takes_value == v.option.takes_value


# The options the capacity rules' figures rest on (t, p, dp, the context, the memory budget and the
# KV cache's bytes), as each engine spells them; a Python keyword is the same name with
# underscores.
CAPACITY_OPTIONS = {
    "vllm": frozenset({"--tensor-parallel-size", "--pipeline-parallel-size",
                       "--data-parallel-size", "--max-model-len", "--gpu-memory-utilization",
                       "--kv-cache-dtype"}),
    "sglang": frozenset({"--tp-size", "--pp-size", "--dp-size", "--context-length",
                         "--mem-fraction-static", "--kv-cache-dtype"}),
}
_ROOT_OUTCOMES = ("unknown", "ambiguous", "bad_value")


def capacity_option(engine: str, release: str, v: Verdict) -> str | None:
    """The capacity option a misspelt, ambiguous or badly valued option stands for (the one the
    user meant), or None: the capacity rules would compute with the engine's default in its
    place, so the option's finding is the root cause and they stay silent."""
    if v.outcome not in _ROOT_OUTCOMES:
        return None
    wanted = CAPACITY_OPTIONS.get(engine, frozenset())
    names = load_table(engine, release).by_name
    if v.outcome == "ambiguous":
        written = normalize(engine, v.use.written)
        hits = sorted(n for n in wanted if n.startswith(written))
        return hits[0] if hits else None
    candidates = [v.option] if v.outcome == "bad_value" else []
    target = v.suggestion or ""
    if v.use.keyword and target:
        target = "--" + target.replace("_", "-")
    if target in names:
        candidates.append(names[target])
    for opt in candidates:
        if opt is not None:
            hit = next((n for n in opt.names if n in wanted), None)
            if hit is not None:
                return hit
    return None


def root_cause(d: Deployment) -> tuple[Verdict, str] | None:
    """The first option finding (TP001-TP003's outcomes) about an option the capacity rules
    depend on, and that option: printed first, and the capacity rules do not run for ``d``."""
    if not d.options:
        return None
    a = analyze(d)
    for v in a.verdicts:
        meant = capacity_option(a.engine, a.release, v)
        if meant is not None:
            return v, meant
    return None


def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
    """TP001-TP005: the option uses whose outcome the rule's row names (``outcome``), with the
    row's fix when no spelling to use is known."""
    outcome = rule.param("outcome")
    assert outcome in OUTCOMES, rule
    yield from findings(ctx, rule, outcome, rule.param("fix") or "")  # type: ignore[arg-type]


def refused(ctx: CheckContext, rule: Rule, field: str, message: str) -> Finding:
    """A value the option table lets through but the engine's model code refuses (vLLM 0.33
    takes any string for --kv-cache-dtype at parse time): the physics' own words, at the value,
    reported by the bad-value rule. The other rules then run without it."""
    d = ctx.deployment
    from tpcheck.checks._option_headline import brief

    flag = "--" + field.replace("_", "-")
    value = brief(str(getattr(d, field)), 24)
    return ctx.finding(rule, f"{flag} {value!r} is a value the engine refuses",
                       notes=(message,), span=d.span_of(field),
                       assumptions=(Assumption("value", f"the other rules use the engine's "
                                               f"default for {flag}"),),
                       fix=f"give {flag} a value this {d.engine} release knows")


def findings(ctx: CheckContext, rule: Rule, outcome: Outcome,
             default_fix: str) -> Iterator[Finding]:
    """The findings of one outcome, each at the option (or, for a bad value, the value)."""
    d = ctx.deployment
    if not d.options:
        return
    a = analyze(d, ctx.release)
    if not any(v.outcome == outcome for v in a.verdicts):
        return  # (the headlines' module is imported only for a finding)
    from tpcheck.checks._option_headline import headline, percent_as_fraction

    for v in a.verdicts:
        if v.outcome != outcome:
            continue
        opt_span, value_span = v.use.locate()
        span = value_span if outcome == "bad_value" and value_span is not None else opt_span
        target = v.replacement or v.suggestion
        if outcome == "bad_value" and target is None:
            target = percent_as_fraction(v)
        msg = headline(v, outcome, target)
        notes = [f"the engine says: {v.message}"]
        meant = capacity_option(a.engine, a.release, v)
        if meant is not None:
            notes.append(f"the capacity rules were not run for this deployment: their figures "
                         f"depend on {meant}, which the engine would not read as written")
        assumed: tuple[Assumption, ...]
        if a.note:
            assumed = (Assumption("release", a.note),)
        elif not a.pinned.pinned:
            assumed = (Assumption("release", a.pinned.checked_against),)
        else:
            assumed = ()
        edits: tuple[Edit, ...] = ()
        fix = default_fix
        if target and target != v.use.written:
            fix = f"use {target}"
            if (outcome in ("unknown", "removed") or (outcome == "bad_value" and value_span)) and (
                    outcome != "removed" or _same_shape(a, v, target)):
                edits = (Edit(value_span if outcome == "bad_value" and value_span else opt_span,
                              target, f"replace with {target}"),)
        severity = None
        if outcome == "removed" and not a.pinned.pinned:
            severity = Severity.WARNING  # refused by the newest release; an older image runs it
            notes.append("an older release may accept it: pin the image to the release you run")
        yield ctx.finding(rule, msg, span=span, fix=fix, edits=edits, severity=severity,
                          notes=tuple(notes), assumptions=assumed)


__all__ = ["CAPACITY_OPTIONS", "KEYWORD_OWNER", "PROG", "Analysis", "Verdict", "analyze",
           "capacity_option", "check", "findings", "refused", "release_of", "root_cause"]
