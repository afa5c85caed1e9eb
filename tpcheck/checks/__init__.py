"""The rule registry: an explicit list, one module per rule, greppable (yamllint's way).

Each module defines CODE, NAME, SEVERITY (the default), SUMMARY, ``check(ctx) ->
Iterator[Finding]`` and what it needs to say anything; ``lint.py`` reads these generically and
skips the rule for a launch that lacks one (it never gates by code). Codes never change meaning.

- ``NEEDS_SHAPE``: the model's config.json (skipped when it was not found: TP000 says so).
- ``NEEDS_KNOWN_TP``: t as a number (skipped when --tensor-parallel-size is an expression
  tpcheck cannot evaluate, ``$((N * 8))``); only the command-line rules do without it.
- ``NEEDS_GPU_PHYSICS``: GPU memory and link figures (skipped on a TPU slice, which has none).
- ``NEEDS_VALID_LAYOUT``: sizes and limits the engine accepts (skipped when one is below the
  engine's minimum: TP003 says so, and only rules that read the command line as written run).
- ``DEPENDS_ON``: the Deployment fields its figures read besides t (``tpcheck.checks.needs``
  groups the common ones); skipped when the file leaves one as an expression, rather than
  judge the engine's default in its place (issue 18).
- ``USES_MEMORY_MODEL``: its figures come from the memory model, so its findings name the
  engine release whose defaults they assume.
- ``REFUSAL_VERDICT``: its verdict is the engine's start-up refusal; when no image pins the
  release and a known release would not refuse, the finding says so and stays below error.
- ``CONF`` and ``DEFAULT`` (optional, yamllint's pattern): the rule's options with their types
  (a type, or a tuple of allowed strings) and defaults, settable in ``[tool.tpcheck.rules.CODE]``
  and checked by ``rule_options``; ``validate_options(conf)`` may refuse a combination.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import ModuleType

from tpcheck.checks import (
    ambiguous_option,
    bad_option_value,
    context_exceeds_pool,
    deprecated_option,
    experts_cross_nodes,
    ffn_not_divisible,
    gpu_count_mismatch,
    heads_not_divisible,
    kv_head_cliff,
    kv_heads_not_divisible,
    max_num_seqs_binds,
    mla_cache_replicated,
    model_unresolved,
    removed_option,
    tp_crosses_nodes,
    tp_crosses_sockets,
    unknown_option,
    vocab_padding,
    weights_do_not_fit,
)
from tpcheck.settings import SettingsError

RULES: tuple[ModuleType, ...] = (
    model_unresolved,
    unknown_option,
    ambiguous_option,
    bad_option_value,
    removed_option,
    deprecated_option,
    heads_not_divisible,
    kv_heads_not_divisible,
    ffn_not_divisible,
    vocab_padding,
    kv_head_cliff,
    mla_cache_replicated,
    max_num_seqs_binds,
    context_exceeds_pool,
    weights_do_not_fit,
    tp_crosses_nodes,
    tp_crosses_sockets,
    experts_cross_nodes,
    gpu_count_mismatch,
)

BY_CODE: dict[str, ModuleType] = {m.CODE: m for m in RULES}
# Rules whose finding on a capacity option (a misspelt --tensor-parallel-size) is the root cause
# of any capacity figure, by the outcome they report: while the one for the outcome runs, the
# capacity rules stay silent for that launch.
ROOT_CAUSE_RULES: dict[str, ModuleType] = {"unknown": unknown_option,
                                           "ambiguous": ambiguous_option,
                                           "bad_value": bad_option_value}


class UnknownRule(KeyError):
    pass


def get(code: str) -> ModuleType:
    """The rule module for ``code`` (case-insensitive); a clear error for an unknown code."""
    try:
        return BY_CODE[code.strip().upper()]
    except KeyError:
        raise UnknownRule(f"unknown rule code {code!r}; known: {', '.join(BY_CODE)}") from None


def selected(select: tuple[str, ...], ignore: tuple[str, ...]) -> list[ModuleType]:
    """Rules after --select / --ignore; a prefix (``TP2``) selects a family."""

    def match(code: str, pats: tuple[str, ...]) -> bool:
        return any(code.startswith(p.upper()) for p in pats)

    for p in (*select, *ignore):
        if not any(c.startswith(p.upper()) for c in BY_CODE) and p.upper() not in ("ALL",):
            raise UnknownRule(f"unknown rule code {p!r}; known: {', '.join(BY_CODE)}")
    out = [
        m
        for m in RULES
        if not select or "ALL" in (s.upper() for s in select) or match(m.CODE, select)
    ]
    return [m for m in out if not match(m.CODE, ignore)]


# What a rule's CONF may say an option is (yamllint's schema): a type, or the allowed strings.
_TYPE_NAMES: dict[type, str] = {int: "an integer", float: "a number", bool: "true or false",
                                str: "a string"}


def rule_options(table: Mapping[str, Mapping[str, object]],
                 where: str) -> dict[str, dict[str, object]]:
    """``[tool.tpcheck.rules.CODE]`` tables checked against each rule's CONF (its options and
    their types, declared beside the check with their DEFAULT), keyed by code and option as the
    rules spell them. A typo must not silently keep a default: an unknown rule or option, a
    wrong type or a value the rule's ``validate_options`` refuses is one SettingsError naming
    the file and the key."""
    out: dict[str, dict[str, object]] = {}
    for raw_code, options in table.items():
        rule = BY_CODE.get(raw_code.strip().upper())
        if rule is None:
            raise SettingsError(f"{where}: rules.{raw_code}: unknown rule code "
                                f"(known: {', '.join(BY_CODE)})")
        conf: Mapping[str, type | tuple[str, ...]] = getattr(rule, "CONF", {})
        given: dict[str, object] = {}
        for raw_name, value in options.items():
            name, key = raw_name.replace("_", "-"), f"rules.{raw_code}.{raw_name}"
            if name not in conf:
                known = ", ".join(conf) if conf else "none"
                raise SettingsError(f"{where}: {key}: {rule.CODE} has no such option "
                                    f"(options: {known})")
            given[name] = _option_value(conf[name], value, where, key)
        problem = rule.validate_options(given) if hasattr(rule, "validate_options") else None
        if problem:
            raise SettingsError(f"{where}: rules.{raw_code}: {problem}")
        out[rule.CODE] = given
    return out


def _option_value(want: type | tuple[str, ...], value: object, where: str, key: str) -> object:
    """``value`` if it is what the rule's CONF says (an integer is a number), else the error."""
    if isinstance(want, tuple):
        if value in want:
            return value
        raise SettingsError(f"{where}: {key} must be one of {', '.join(want)}, got {value!r}")
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if want is float and isinstance(value, float) and not math.isfinite(value):
        # TOML spells inf and nan; no option of a rule is infinite (waste-factor = inf passed)
        raise SettingsError(f"{where}: {key} must be a finite number, got {value}")
    if isinstance(value, want) and (want is bool or not isinstance(value, bool)):
        return value
    raise SettingsError(f"{where}: {key} must be {_TYPE_NAMES.get(want, want.__name__)}, "
                        f"got {type(value).__name__}")
