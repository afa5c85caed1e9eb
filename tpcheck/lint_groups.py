"""One finding per multi-pod group (a LeaderWorkerSet's templates launch one engine)."""

from __future__ import annotations

from tpcheck.checks.base import Finding
from tpcheck.record import replace
from tpcheck.sources.base import Deployment, Span


def merge_groups(linted: list[tuple[Deployment, list[Finding]]]
                 ) -> list[tuple[Deployment, list[Finding]]]:
    """One finding per multi-pod group, not per pod template.

    A LeaderWorkerSet's leader and worker templates (one ``leaderWorkerTemplate.size``) launch
    one engine: a finding both templates get is said once, at the first template's span (the
    leader's, which LWS writes first), with the others' spans as related information. A code
    only one template gets stays on that template."""
    first: dict[Span, int] = {}
    out: list[tuple[Deployment, list[Finding]]] = []
    for d, found in linted:
        key = d.spans.get("group_size") if (d.group_size or 0) > 1 else None
        if key is None:
            out.append((d, found))
            continue
        lead = first.get(key)
        if lead is None:
            first[key] = len(out)
            out.append((d, list(found)))
            continue
        lead_found = out[lead][1]
        kept: list[Finding] = []
        for f in found:
            i = next((k for k, g in enumerate(lead_found) if g.code == f.code), None)
            if i is None:
                kept.append(f)
                continue
            g = lead_found[i]
            note = (f"the same {f.code} for the group's other pod template (line {f.span.line}): "
                    f"{d.group_size} pods run one engine")
            lead_found[i] = replace(g, related=(*g.related, (f.span, note)))
        out.append((d, kept))
    return out


__all__ = ["merge_groups"]
