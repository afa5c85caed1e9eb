"""The one-clause headline of an option finding, and a percent meant as a fraction."""

from __future__ import annotations

from tpcheck.checks._option_verdicts import Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tpcheck.checks._option_verdicts import Outcome


def percent_as_fraction(v: Verdict) -> str | None:
    """The value in range for a fraction written as a percent: ``--gpu-memory-utilization 90``
    is refused (``le 1``) and meant 0.9. Only for a float option bounded to (0, 1] or [0, 1]
    and a value in (1, 100]: the one reading that puts it in range; anything else is left."""
    opt, written = v.option, v.use.value
    if opt is None or opt.kind != "float" or written is None:
        return None
    bounds = dict(opt.range)
    if bounds.get("le") != 1 or not ({"gt", "ge"} & bounds.keys()):
        return None
    if bounds.get("gt", bounds.get("ge")) != 0:
        return None
    try:
        x = float(written)
    except ValueError:
        return None
    if not 1 < x <= 100:
        return None
    return f"{x / 100:.6g}"


VERB = {"unknown": "unknown option", "ambiguous": "ambiguous option",
         "removed": "removed option", "bad_value": "invalid value", "deprecated":
         "deprecated option"}


def brief(text: str, keep: int) -> str:
    """A word cut for a headline; the evidence quotes it whole (the engine's own message)."""
    return text if len(text) <= keep else text[:keep - 1] + "…"


def headline(v: Verdict, outcome: Outcome, target: str | None) -> str:
    """One clause: what the engine's parser does with the option, and the spelling to use.
    The written words are cut so that the clause stays one line (≤ 100 characters)."""
    written = brief(v.use.written, 64)  # the longest option either engine has is 62
    if v.headline:
        return v.headline
    if outcome == "bad_value":
        head = f"invalid value {brief(v.use.value or '', 24)!r} for {written}"
    elif outcome == "ambiguous":
        head = f"ambiguous option {written}: the parser cannot tell which option it abbreviates"
    elif v.use.keyword:
        head = f"{VERB[outcome].replace('option', 'keyword argument')} {written}"
    else:
        head = f"{VERB[outcome]} {written}"
    if target and target != v.use.written:
        head += f" (did you mean {target}?)" if outcome in ("unknown", "bad_value") else (
            f"; use {target}")
    return head


__all__ = ["VERB", "brief", "headline", "percent_as_fraction"]
