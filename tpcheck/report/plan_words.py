"""What both plan reports say the same way: the release, and a refusal by its rule's name."""

from __future__ import annotations

from collections.abc import Sequence

from tpcheck.physics.legality import Refusal
from tpcheck.physics.plan import Options


def plan_release(opts: Options, said: str | None = None,
                 setting_from: str = "--engine-version") -> str:
    """The release plan's defaults and reserve assume, and where it came from (issue 19);
    ``said``: a manifest's own words for it (its image tag). A release tpcheck has not read is
    named with the nearest known one whose tables the figures follow."""
    from tpcheck.engines.release import resolve as release_for

    if said:
        return said
    engine = "sglang" if opts.engine == "sglang" else "vllm"
    rel = release_for(engine, setting=opts.engine_version, setting_from=setting_from)
    src = rel.source if rel.pinned else "newest known: pass --engine-version to be exact"
    return release_words(engine, rel.version, src, rel.pinned)


def release_words(engine: str, version: str, source: str, pinned: bool) -> str:
    """``0.33.0 (from the image tag v0.33.0)``: one pair of parentheses (a source that has its
    own, "newest known (image … not pinned …)", is said with a semicolon), and a pinned release
    tpcheck has not read names the nearest known one whose tables the figures follow."""
    from tpcheck.engines.flags import nearest_release

    if source.startswith("newest known (") and source.endswith(")"):
        source = "newest known; " + source[len("newest known ("):-1]
    if pinned:
        pick, unknown = nearest_release(engine, version)
        if unknown:
            source += (f"; not a release tpcheck has read: the tables follow {pick}, the "
                       "nearest known")
    return f"{version} ({source})"


def count(n: int, word: str) -> str:
    """``1 seat``, ``2 seats``, ``1,024 GPUs``: a figure with its noun in the right number."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


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
