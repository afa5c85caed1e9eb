"""The rules, looked up and selected: the rows are data in ``tpcheck.checks.registry`` (one
``Rule`` per code), the checks are the functions those rows name. Codes never change meaning.

``[tool.tpcheck.rules.CODE]`` tables are checked here against each rule's declared options
(their types, defaults and lowest values), so a typo never silently keeps a default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from tpcheck.checks.registry import BY_CODE, REFUSAL_CODES, RULES, Rule
from tpcheck.settings import SettingsError

__all__ = ["BY_CODE", "REFUSAL_CODES", "RULES", "Rule", "UnknownRule", "get", "rule_options",
           "selected"]


class UnknownRule(KeyError):
    pass


def get(code: str) -> Rule:
    """The rule for ``code`` (case-insensitive); a clear error for an unknown code."""
    try:
        return BY_CODE[code.strip().upper()]
    except KeyError:
        raise UnknownRule(f"unknown rule code {code!r}; known: {', '.join(BY_CODE)}") from None


def selected(select: tuple[str, ...], ignore: tuple[str, ...]) -> list[Rule]:
    """Rules after --select / --ignore; a prefix (``TP2``) selects a family."""

    def match(code: str, pats: tuple[str, ...]) -> bool:
        return any(code.startswith(p.upper()) for p in pats)

    for p in (*select, *ignore):
        if not any(c.startswith(p.upper()) for c in BY_CODE) and p.upper() not in ("ALL",):
            raise UnknownRule(f"unknown rule code {p!r}; known: {', '.join(BY_CODE)}")
    out = [
        m
        for m in RULES
        if not select or "ALL" in (s.upper() for s in select) or match(m.code, select)
    ]
    return [m for m in out if not match(m.code, ignore)]


# What a rule's option may be (yamllint's schema): a type, or the allowed strings.
_TYPE_NAMES: dict[type, str] = {int: "an integer", float: "a number", bool: "true or false",
                                str: "a string"}


def rule_options(table: Mapping[str, Mapping[str, object]],
                 where: str) -> dict[str, dict[str, object]]:
    """``[tool.tpcheck.rules.CODE]`` tables checked against each rule's options (their types,
    defaults and lowest values, in its registry row), keyed by code and option as the rules
    spell them. A typo must not silently keep a default: an unknown rule or option, a wrong
    type or a value below the option's minimum is one SettingsError naming the file and the
    key."""
    out: dict[str, dict[str, object]] = {}
    for raw_code, options in table.items():
        rule = BY_CODE.get(raw_code.strip().upper())
        if rule is None:
            raise SettingsError(f"{where}: rules.{raw_code}: unknown rule code "
                                f"(known: {', '.join(BY_CODE)})")
        conf = {o.name: o for o in rule.options}
        given: dict[str, object] = {}
        for raw_name, value in options.items():
            name, key = raw_name.replace("_", "-"), f"rules.{raw_code}.{raw_name}"
            if name not in conf:
                known = ", ".join(conf) if conf else "none"
                raise SettingsError(f"{where}: {key}: {rule.code} has no such option "
                                    f"(options: {known})")
            given[name] = _option_value(conf[name].kind, value, where, key)
            low = conf[name].minimum
            if low is not None and not given[name] >= low:  # type: ignore[operator]  # nan too
                raise SettingsError(f"{where}: rules.{raw_code}: {name} must be {low:g} or "
                                    f"more, got {given[name]}")
        out[rule.code] = given
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
