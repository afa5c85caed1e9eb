"""The plan table's rows: the TP group's link, each row's prefill all-reduce share, its keys."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from tpcheck.formula import Formula
    from tpcheck.hardware.gpus import GPU
    from tpcheck.models.shape import ModelShape
    from tpcheck.physics.linkcost import LinkUse
    from tpcheck.physics.plan import Evaluation, Options


def link_use_of(link: str | None, gpu: GPU | None, alpha: float | None,
                opts: Options) -> LinkUse | None:
    """The TP group's link: --link's class, else the GPU's own link, inside a node priced by
    the collective model as the engine release runs it (α: --alpha, else the model's)."""
    from tpcheck.hardware.links import Link, find_link
    from tpcheck.physics.linkcost import link_use, node_use
    from tpcheck.physics.plan import release_of

    def inside(lk: Link) -> LinkUse:
        return node_use(lk, 8, engine=opts.engine, version=release_of(opts),
                        custom=opts.custom_all_reduce, alpha=alpha)

    if link:
        lk = find_link(link)
        assert lk is not None  # validated above
        return link_use(lk, alpha=alpha) if lk.inter_node else inside(lk)
    if gpu is None:
        return None
    base = find_link(gpu.link)
    name = base.name if base is not None else gpu.link
    return inside(Link(gpu.link, name, gpu.link_bandwidth, 0.0, False, gpu.source))


def prefill_shares(shape: ModelShape, rows: Sequence[Evaluation], opts: Options,
                   use: LinkUse | None) -> list[Formula | None]:
    """Share of a prefill chunk spent in all-reduces, per row (None without a GPU's FLOP/s);
    without --link, a row whose TP group outgrows the NVLink domain all-reduces on the network."""
    from tpcheck.physics.linkcost import node_group, node_network, prefill_share, prefill_tokens
    from tpcheck.record import replace

    gpu = opts.gpu
    if gpu is None or use is None:
        return [None] * len(rows)
    n, src = prefill_tokens(opts.engine, opts.engine_version, opts.entrypoint, gpu, opts.memory,
                            opts.max_num_batched_tokens,
                            int(rows[0].context.result) if rows else None)
    def at_t(t: int) -> LinkUse:
        g = use.group
        if g is None or g.nodes > 1:
            return use
        return replace(use, group=node_group(g.intra, g.intra_bw, t))  # this row's ranks

    return [prefill_share(shape, r.tp, gpu,
                          use if opts.link_bandwidth else node_network(
                              gpu, r.tp, gpus_per_node=opts.gpus_per_node,
                              network=opts.network) or at_t(r.tp),
                          n, src, opts.dtype) if r.tp > 1 else None
            for r in rows]


def plan_row(r: Evaluation, pre: Formula | None, release: str = "", dp: int = 1,
             pp: int = 1) -> dict[str, object]:
    """DESIGN.md's row keys unchanged, plus the prefill chunk's all-reduce share and, with
    replicas, the GPUs and seats of all of them."""
    from tpcheck.checks.registry import REFUSAL_CODES
    from tpcheck.report.plan_words import rule_name

    row = r.to_row()
    # the physics names what does not divide; the rule that reports it gives the code
    row["refusals"] = [{"code": REFUSAL_CODES[x.kind], "rule": rule_name(REFUSAL_CODES[x.kind]),
                        "check": x.check, "message": x.engine_message} for x in r.refusals]
    row["gpus"] = r.tp * pp * dp
    seats = row.get("seats")
    row["seats_all_replicas"] = None if not isinstance(seats, int) else seats * dp
    row["seats_nothing"] = bool(r.legal and r.fits is not False and seats == 0)
    row.setdefault("engine_version", release)
    row["prefill_comm_share"] = None if pre is None else pre.result
    chunk = pre if pre is not None else r.prefill
    row["prefill_tokens"] = None if chunk is None else chunk.values["n"]
    return row


__all__ = ["link_use_of", "plan_row", "prefill_shares"]
