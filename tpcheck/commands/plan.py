"""``tpcheck plan MODEL``: the capacity table across tensor-parallel sizes, cliff marked."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from tpcheck.formula import Formula

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tpcheck.hardware.gpus import GPU
    from tpcheck.models.shape import ModelShape
    from tpcheck.physics.linkcost import LinkUse
    from tpcheck.physics.plan import Evaluation, Options


def _parse_set(items: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--set")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:
            out[k.strip()] = v
    return out


def _parse_tps(text: str | None) -> list[int] | None:
    if not text:
        return None
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = _posint(a), _posint(b)
            out.extend(range(lo, hi + 1))
        elif part:
            out.append(_posint(part))
    if not out:
        raise click.BadParameter("no sizes given", param_hint="--tp")
    return sorted(set(out))


def _posint(s: str) -> int:
    try:
        v = int(s.strip())
    except ValueError:
        raise click.BadParameter(f"{s!r} is not a whole number", param_hint="--tp") from None
    if v < 1 or v > 4096:
        raise click.BadParameter(f"{v} is out of range 1..4096", param_hint="--tp")
    return v


@click.command("plan")
@click.argument("model")
@click.option("--gpu", "gpu_name", help="GPU: h100-sxm, h200, a100-sxm-80gb, l40s, H100, ...")
@click.option("--hbm",
              help="Memory per GPU as the driver reports it (80GB, 79.2GiB); overrides --gpu's.")
@click.option("--gpu-memory-utilization", "--mem-fraction-static", "util",
              type=click.FloatRange(0, 1, min_open=True),
              help="Fraction of GPU memory the engine may use (default: the engine version's).")
@click.option("--engine", type=click.Choice(["vllm", "sglang"]), default="vllm", show_default=True)
@click.option("--engine-version",
              help="Engine release whose defaults apply (default: newest known).")
@click.option("--tp", "tps",
              help="TP sizes: 1,2,4,8 or 1-16 (default: powers of two to 64 and the legal others).")
@click.option("--pp", type=click.IntRange(1, 1024), default=1, show_default=True)
@click.option("--dp", type=click.IntRange(1, 1024), default=1, show_default=True)
@click.option("--enable-expert-parallel", is_flag=True)
@click.option("--attn-dp", type=click.IntRange(1, 1024), default=1,
              help="SGLang attention DP groups.")
@click.option("--max-num-seqs", type=click.IntRange(1))
@click.option("--max-num-batched-tokens", type=click.IntRange(1))
@click.option("--reserve",
              help="Non-KV reserve per GPU (e.g. 4GiB; 0 allowed). Default: estimated.")
@click.option("--context", type=click.IntRange(1),
              help="Tokens per sequence for seats (default: model max, capped at 32768).")
@click.option("--kv-cache-dtype", help="auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2 ...")
@click.option("--quantization",
              help="Override the checkpoint's quantization (fp8, awq, gptq, ...).")
@click.option("--dtype", help="Override the activation dtype (bfloat16, float16).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a config.json field (repeatable).")
@click.option("--batch", type=click.IntRange(1), default=1, show_default=True,
              help="Decode batch for the step model.")
@click.option("--alpha", type=click.FloatRange(0),
              help="Fixed all-reduce cost in seconds (default 10e-6).")
@click.option("--link", help="Link class for the TP group: nvlink4, pcie5, ib-ndr, ...")
@click.option("--offline", is_flag=True, help="Never contact the hub.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]),
              default="text", show_default=True)
def plan_cmd(model: str, gpu_name: str | None, hbm: str | None, util: float | None, engine: str,
             engine_version: str | None, tps: str | None, pp: int, dp: int,
             enable_expert_parallel: bool, attn_dp: int, max_num_seqs: int | None,
             max_num_batched_tokens: int | None, reserve: str | None, context: int | None,
             kv_cache_dtype: str | None, quantization: str | None, dtype: str | None,
             sets: tuple[str, ...], batch: int, alpha: float | None, link: str | None,
             offline: bool, fmt: str) -> int:
    """Sweep tensor-parallel sizes for MODEL (a config.json, a folder, or a hub id).

    Shows, per t: whether vLLM/SGLang start, KV heads per GPU, weights and KV bytes per GPU,
    the KV pool and how many sequences of --context tokens it seats — with the KV-head cliff
    marked where more GPUs stop buying cache.
    """
    from tpcheck.commands._model import load_shape
    from tpcheck.hardware.gpus import find_gpu, gpu_names, parse_size
    from tpcheck.physics.plan import Options, intensity, sweep

    gpu = None
    if gpu_name:
        gpu = find_gpu(gpu_name)
        if gpu is None:
            raise click.BadParameter(
                f"unknown GPU {gpu_name!r}; known: {', '.join(gpu_names())}", param_hint="--gpu")
    mem = None
    if hbm:
        try:
            mem = parse_size(hbm)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--hbm") from None
    res_b = None
    if reserve is not None:
        try:
            res_b = parse_size(reserve)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--reserve") from None
    link_bw = link_alpha = None
    if link:
        from tpcheck.hardware.links import find_link, link_names

        lk = find_link(link)
        if lk is None:
            raise click.BadParameter(f"unknown link {link!r}; known: {', '.join(link_names())}",
                                     param_hint="--link")
        link_bw, link_alpha = lk.bandwidth, lk.alpha
    shape, where = load_shape(model, overrides=_parse_set(sets), offline=offline)
    opts = Options(
        engine=engine, engine_version=engine_version, gpu=gpu, memory=mem, utilization=util,
        pp=pp, dp=dp, expert_parallel=enable_expert_parallel, attn_dp=attn_dp,
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, reserve=res_b,
        context=context, kv_cache_dtype=kv_cache_dtype, quantization=quantization, dtype=dtype,
        batch=batch, alpha=alpha if alpha is not None else link_alpha, link_bandwidth=link_bw,
    )
    try:
        rows = sweep(shape, opts, _parse_tps(tps))
    except ValueError as e:  # an unknown --quantization / --dtype / --kv-cache-dtype name
        raise click.UsageError(str(e)) from None
    use = _link_use(link, gpu, alpha)
    prefill = _prefill(shape, rows, opts, use)
    if fmt == "json":
        doc = {
            "model": model,
            "source": where,
            "gpu": gpu.key if gpu else None,
            "context": rows[0].context.result if rows else None,
            "link": None if use is None else {
                "key": use.link.key, "name": use.link.name, "bandwidth": use.bandwidth.result,
                "alpha": use.alpha.result, "source": use.bandwidth.source},
            "batch": batch,
            "rows": [_row(r, p) for r, p in zip(rows, prefill, strict=True)],
        }
        click.echo(json.dumps(doc, indent=2, default=str))
        return 0
    from tpcheck.report.plan_text import render_plan

    it_be = intensity(shape, 8, opts) if (gpu or link_bw) else None
    click.echo(render_plan(model, where, shape, rows, opts, it_be,
                           color=sys.stdout.isatty(), prefill=prefill,
                           link_label=None if use is None else use.label), nl=False)
    return 0


def _link_use(link: str | None, gpu: GPU | None, alpha: float | None) -> LinkUse | None:
    """The TP group's link: --link's class, else the GPU's own link (α: --alpha, else 10 µs)."""
    from tpcheck.formula import Formula
    from tpcheck.hardware.links import Link, find_link
    from tpcheck.physics.linkcost import link_use
    from tpcheck.physics.plan import DEFAULT_ALPHA

    if link:
        lk = find_link(link)
        assert lk is not None  # validated above
        return link_use(lk, alpha=alpha)
    if gpu is None:
        return None
    base = find_link(gpu.link)
    name = base.name if base is not None else gpu.link
    lk = Link(gpu.link, name, gpu.link_bandwidth, DEFAULT_ALPHA, False, gpu.source)
    bw = Formula("B", "B (GPU's link)", {"gpu": gpu.key}, gpu.link_bandwidth, "B/s", gpu.source)
    return link_use(lk, bandwidth=bw, alpha=DEFAULT_ALPHA if alpha is None else alpha)


def _prefill(shape: ModelShape, rows: Sequence[Evaluation], opts: Options,
             use: LinkUse | None) -> list[Formula | None]:
    """Share of a prefill chunk spent in all-reduces, per row (None without a GPU's FLOP/s)."""
    from tpcheck.physics.linkcost import prefill_share, prefill_tokens

    gpu = opts.gpu
    if gpu is None or use is None:
        return [None] * len(rows)
    n, src = prefill_tokens(opts.engine, opts.engine_version, opts.entrypoint, gpu, opts.memory,
                            opts.max_num_batched_tokens)
    return [prefill_share(shape, r.tp, gpu, use, n, src, opts.dtype) if r.tp > 1 else None
            for r in rows]


def _row(r: Evaluation, pre: Formula | None) -> dict[str, object]:
    """DESIGN.md's row keys unchanged, plus the prefill chunk's all-reduce share."""
    row = r.to_row()
    row["prefill_comm_share"] = None if pre is None else pre.result
    row["prefill_tokens"] = None if pre is None else pre.values["n"]
    return row

