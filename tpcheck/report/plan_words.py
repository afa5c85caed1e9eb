"""What both plan reports say the same way: the release, and a refusal by its rule's name."""

from __future__ import annotations

from collections.abc import Sequence

from tpcheck.physics.legality import Refusal
from tpcheck.physics.plan import Options


def plan_release(opts: Options, said: str | None = None) -> str:
    """The release plan's defaults and reserve assume, and where it came from (issue 19);
    ``said``: a manifest's own words for it (its image tag)."""
    from tpcheck.engines.release import resolve as release_for

    if said:
        return said
    rel = release_for("sglang" if opts.engine == "sglang" else "vllm",
                      setting=opts.engine_version, setting_from="--engine-version")
    src = rel.source if rel.pinned else "newest known: pass --engine-version to be exact"
    return f"{rel.version} ({src})"


def rule_name(code: str) -> str:
    """A rule's kebab-case name (checks.registry), "" for a code it does not list."""
    from tpcheck.checks.registry import RULES

    return next((r.name for r in RULES if r.code == code), "")


def refusal_labels(refusals: Sequence[Refusal]) -> list[str]:
    """Each rule once, by code and name, with the first check it made ("TP103
    ffn-not-divisible: fp8_block (...)"), in the order the engine checks them."""
    from tpcheck.checks.registry import REFUSAL_CODES

    out: dict[str, str] = {}
    for x in refusals:
        code = REFUSAL_CODES[x.kind]
        if code not in out:
            f = x.formula
            out[code] = f"{code} {rule_name(code)}: {x.check} ({f.expression} = {f.result:g})"
    return list(out.values())
