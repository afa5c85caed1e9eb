"""Whether a written value is one the option's parser accepts: type, choices, range, sizes."""

from __future__ import annotations

import re

from tpcheck.checks._option_verdicts import PROG, Verdict
from tpcheck.deferred import lazy_re
from tpcheck.engines.flags import (
    Option,
    OptionTable,
)
from tpcheck.sources.base import OptionUse

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass


_HUMAN = lazy_re(r"^-?\d+(\.\d+)?[kKmMgGtT]?$")


def value_verdict(engine: str, use: OptionUse, option: Option, *, keyword: bool,
                  table: OptionTable) -> Verdict | None:
    """argparse's type and choices check, then pydantic's range check on the config field."""
    v = use.value
    if v is None or not option.takes_value or not v.strip() or "$" in v or "`" in v:
        return None  # no value, or one the shell or the pod fills in at run time
    arg = "/".join(option.names[:2]) if not keyword else use.written
    if not keyword:
        if option.kind == "int" and not is_int(v):
            return Verdict(use, "bad_value",
                           f"{PROG[engine]}: error: argument {arg}: invalid int value: '{v}'",
                           option)
        if option.kind == "float" and not is_float(v):
            return Verdict(use, "bad_value",
                           f"{PROG[engine]}: error: argument {arg}: invalid float value: '{v}'",
                           option)
        if option.kind == "human_int":
            said = human_int_error(v, option, table.parsing.get("human_int"))
            if said is not None:
                return Verdict(use, "bad_value",
                               f"{PROG[engine]}: error: argument {arg}: {said}", option)
        if option.parser is not None and "{{" not in v:
            said = parsed_value_error(option, v)
            if said is not None:
                return Verdict(use, "bad_value", f"{PROG[engine]}: error: {said}"
                               if option.parser == "lora_modules" else
                               f"{PROG[engine]}: error: argument {arg}: {said}", option)
        if option.choices is not None and v not in option.choices:
            shown = ", ".join(f"'{c}'" for c in option.choices)
            import difflib

            close = difflib.get_close_matches(v, option.choices, n=1, cutoff=0.6)
            return Verdict(use, "bad_value",
                           f"{PROG[engine]}: error: argument {arg}: invalid choice: '{v}' "
                           f"(choose from {shown})", option,
                           suggestion=close[0] if close else None)
    if option.range and is_float(v):
        x = float(v)
        words = {"gt": "greater than", "ge": "greater than or equal to",
                 "lt": "less than", "le": "less than or equal to"}
        for op, bound in option.range:
            ok = {"gt": x > bound, "ge": x >= bound, "lt": x < bound, "le": x <= bound}[op]
            if not ok:
                b = int(bound) if float(bound).is_integer() else bound
                field = option.names[0].lstrip("-").replace("-", "_")
                return Verdict(use, "bad_value",
                               f"pydantic ValidationError: {field}: Input should be "
                               f"{words[op]} {b} [input_value={v}]", option)
    return None


def human_int_error(v: str, option: Option, rule: dict[str, object] | None) -> str | None:
    """What the release's ``human_readable_int`` (``_or_auto``) says of ``v``, None if it takes
    it: a number with a decimal suffix may have decimals, one with a binary suffix may not, and
    anything else goes through ``int()`` (argparse then names the function)."""
    s = v.strip()
    func = "human_readable_int_or_auto" if option.auto else "human_readable_int"
    if option.auto and (s == "-1" or s.lower() == "auto"):
        return None
    if rule is None:  # a table generated before the parser was read: the old reading
        if _HUMAN.match(s) or s == "auto":
            return None
        return f"invalid value: '{v}' (an integer, optionally with k/m/g/t or K/M/G/T)"
    decimal = rule.get("decimal", ())
    binary = rule.get("binary", ())
    # Plain digits (--max-model-len 32768): a match's suffix would be digits too, in neither
    # list unless one holds digits, so int() decides, without compiling the release's pattern
    plain = s.isascii() and s.isdigit() and not any(
        isinstance(x, str) and (not x or x.isdigit())
        for x in (*(decimal if isinstance(decimal, list) else ()),
                  *(binary if isinstance(binary, list) else ())))
    m = None if plain else re.fullmatch(str(rule.get("pattern", "")), s)
    if m is not None and len(m.groups()) == 2:
        number, suffix = m.groups()
        if isinstance(decimal, list) and suffix in decimal:
            return None
        if isinstance(binary, list) and suffix in binary:
            if is_int(number):
                return None
            return (f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean "
                    f"to use {number}{suffix.lower()} instead? ({rule.get('where')})")
    if is_int(s):
        return None
    return f"invalid {func} value: '{v}'"


def parsed_value_error(option: Option, v: str) -> str | None:
    """A value read by ``json.loads`` or vLLM's LoRAParserAction, as the release parses it."""
    import json

    if option.parser == "json":
        try:
            json.loads(v)
        except ValueError:
            return f"invalid loads value: '{v}'"
        return None
    if option.parser != "lora_modules" or not v or ("=" in v and "," not in v):
        return None  # empty: skipped; name=path: the old form
    try:
        d = json.loads(v)
    except ValueError:
        return f"Invalid JSON format for --lora-modules: {v}"
    if not isinstance(d, dict):
        return f"Invalid fields for --lora-modules: {v} - not a JSON object"
    missing = [k for k in option.json_required if k not in d]
    extra = sorted(k for k in d if option.json_fields and k not in option.json_fields)
    if missing:
        return (f"Invalid fields for --lora-modules: {v} - missing required field(s): "
                f"{', '.join(missing)}")
    if extra:
        return f"Invalid fields for --lora-modules: {v} - unexpected field(s): {', '.join(extra)}"
    return None


def is_int(v: str) -> bool:
    try:
        int(v)
    except ValueError:
        return False
    return True


def is_float(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


__all__ = ["human_int_error", "is_float", "is_int", "parsed_value_error", "value_verdict"]
