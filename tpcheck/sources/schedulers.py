"""The GPUs a Slurm batch script asks for, from its ``#SBATCH`` lines.

``--gres=gpu:A6000:2`` and ``--gpus-per-node=[TYPE:]N`` are per node; ``--gpus=[TYPE:]N``
(``-G``) is for the whole job, so per node only on one node. A job on several nodes
(``--nodes=2``, ``-N 2``) is left alone: which ranks land on which node is the launcher's
business (Ray, torchrun), and a per-node count would make TP401 compare the wrong totals.
Slurm stops reading ``#SBATCH`` at the first command; so does this.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tpcheck.deferred import lazy_re
from tpcheck.record import replace
from tpcheck.sources.base import Deployment, Span

_SBATCH = lazy_re(r"#SBATCH[ \t]+(.*)")
_OPT = lazy_re(r"(--[a-z-]+|-[A-Za-z])(?:[= \t]+(\S+))?")
# gpu[:TYPE]:N inside a --gres list (gpu:a100:4,shard:2)
_GRES = lazy_re(r"(?:^|,)gpu(?::([A-Za-z0-9_.\-]+))?:(\d+)")
_TYPED = lazy_re(r"(?:([A-Za-z][A-Za-z0-9_.\-]*):)?(\d+)$")


def slurm_gpus(path: str, text: str) -> tuple[dict[str, object], dict[str, Span]]:
    """(Deployment fields, their spans) the ``#SBATCH`` header sets: gpus_requested and
    gpu_product; empty when there is none, or the job spans several nodes."""
    if "#SBATCH" not in text:
        return {}, {}
    extra: dict[str, object] = {}
    spans: dict[str, Span] = {}
    nodes = 1
    job_total: tuple[int, str | None, Span] | None = None
    for n, line in enumerate(text.split("\n"), 1):
        body = line.strip()
        if not body:
            continue
        m = _SBATCH.match(body)
        if m is None:
            if body.startswith("#"):
                continue
            break  # the first command ends the header
        col = line.index("#SBATCH") + 1 + m.start(1)
        for o in _OPT.finditer(m.group(1)):
            name, value = o.group(1), o.group(2) or ""
            vcol = col + (o.start(2) if o.group(2) else o.start(1))
            span = Span(path, n, vcol, n, vcol + len(value))
            if name in ("--nodes", "-N"):
                first = re.match(r"\d+", value)
                nodes = int(first.group(0)) if first else 2  # an expression: not one node
            elif name == "--gres":
                g = _GRES.search(value)
                if g:
                    _put(extra, spans, int(g.group(2)), g.group(1), span)
            elif name == "--gpus-per-node":
                t = _TYPED.match(value)
                if t:
                    _put(extra, spans, int(t.group(2)), t.group(1), span)
            elif name in ("--gpus", "-G"):
                t = _TYPED.match(value)
                if t:
                    job_total = (int(t.group(2)), t.group(1), span)
    if nodes != 1:
        return {}, {}
    if "gpus_requested" not in extra and job_total is not None:
        _put(extra, spans, *job_total)
    return extra, spans


def _put(extra: dict[str, object], spans: dict[str, Span], count: int, product: str | None,
         span: Span) -> None:
    extra["gpus_requested"] = count
    spans["gpus_requested"] = span
    if product:
        extra["gpu_product"] = product
        spans["gpu_product"] = span


def with_slurm(found: Iterable[Deployment], path: str, text: str) -> tuple[Deployment, ...]:
    """The launches with the batch header's GPUs, where the launch itself names none."""
    out = tuple(found)
    if not out or "#SBATCH" not in text:
        return out
    extra, spans = slurm_gpus(path, text)
    if not extra:
        return out
    res: list[Deployment] = []
    for d in out:
        kw = {k: v for k, v in extra.items() if getattr(d, k) is None}
        if kw:
            d = replace(d, **kw, spans={**{k: spans[k] for k in kw}, **d.spans})
        res.append(d)
    return tuple(res)
