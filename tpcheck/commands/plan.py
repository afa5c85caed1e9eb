"""``tpcheck plan MODEL``: the capacity table across tensor-parallel sizes, cliff marked."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from tpcheck import UsageError
from tpcheck.commands import base
from tpcheck.commands.plan_rows import link_use_of, plan_row, prefill_shares
from tpcheck.record import replace
from tpcheck.settings import MAX_ALPHA

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from tpcheck.hardware.gpus import GPU
    from tpcheck.hardware.links import Link
    from tpcheck.models.shape import ModelShape
    from tpcheck.physics.plan import Options
    from tpcheck.physics.recommend import Only


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"expected key=value, got {item!r}", "--set")
        k, v = item.split("=", 1)
        if not k.strip():
            raise UsageError(f"no key before '=' in {item!r}", "--set")
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:  # a plain word (bfloat16), or an integer past Python's 4,300 digits
            out[k.strip()] = v
        except RecursionError:  # 30,000 nested brackets: the decoder's recursion ran out
            raise UsageError(f"the value of {k.strip()!r} is nested too deeply to read",
                             "--set") from None
    return out


MAX_SIZES = 256  # TP sizes in one sweep: a table still read row by row


def _parse_tps(text: str | None) -> list[int] | None:
    if text is None:
        return None  # not given: the default sweep (--tp '' is given, and names no size)
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
        raise UsageError("no sizes given", "--tp")
    sizes = sorted(set(out))
    if len(sizes) > MAX_SIZES:  # 1-4096: 4,096 rows no one reads, ~4 s of evaluation
        raise UsageError(f"{len(sizes):,} sizes in one sweep; at most {MAX_SIZES} (e.g. "
                         f"1-{MAX_SIZES}, or a list of the sizes to compare)", "--tp")
    return sizes


def _posint(s: str) -> int:
    try:
        v = int(s.strip())
    except ValueError:
        raise UsageError(f"{s!r} is not a whole number", "--tp") from None
    if v < 1 or v > 4096:
        raise UsageError(f"{v} is out of range 1..4096", "--tp")
    return v


DESCRIPTION = """\
Sweep tensor-parallel sizes for MODEL (a config.json, a folder, a hub id, or a manifest).

Shows, per t: whether vLLM/SGLang start, KV heads per GPU, weights and KV bytes per GPU,
the KV pool and how many sequences of --context tokens it seats — with the KV-head cliff
marked where more GPUs stop buying cache. With --gpus N: every layout of N GPUs (TP × PP × DP,
expert parallel and attention DP for MoE/MLA models) ranked for --goal, and the vLLM and
SGLang command lines of the recommended ones. A manifest gives the model, GPU, context,
limits and GPU count of its deployment."""


@click.command("plan", cls=base.Command, help=DESCRIPTION)
@click.argument("model", metavar="MODEL")
@base.gpu_option("GPU: h100-sxm, h200, a100-sxm-80gb, l40s, H100, ...", dest="gpu_name")
@base.option("--gpus", type=base.IntRange(1, 4096), metavar="N",
             help="GPU budget: rank every layout of N GPUs and recommend one per goal.")
@base.option("--goal", type=base.Choice(["throughput", "latency"]),
             help="With --gpus: rank for decode tokens/s per GPU (default) or batch-1 time per "
                  "token.")
@base.option("--hbm", metavar="SIZE",
             help="Memory per GPU as the driver reports it (80GB, 79.2GiB); overrides --gpu's.")
@base.option("--gpu-memory-utilization", "--mem-fraction-static", "util",
             type=base.FloatRange(0, 1, lo_open=True), metavar="FRACTION",
             help="Fraction of GPU memory the engine may use (default: the engine version's).")
@base.option("--engine", type=base.Choice(["vllm", "sglang"]),
             help="Engine whose rules and defaults apply (default: vllm, or the manifest's).")
@base.option("--engine-version", type=base.Release(), metavar="VERSION",
             help="Engine release whose defaults apply (default: newest known).")
@base.option("--tp", "tps", metavar="SIZES",
             help="TP sizes: 1,2,4,8 or 1-16 (default: powers of two to 64 and the legal others).")
@base.option("--pp", type=base.IntRange(1, 1024), metavar="N",
             help="Pipeline-parallel size (default: 1).")
@base.option("--dp", type=base.IntRange(1, 1024), metavar="N",
             help="Data-parallel replicas: seats and GPUs count every replica; with --gpus, "
                  "only layouts of N replicas.")
@base.option("--enable-expert-parallel", is_flag=True,
             help="As the engines' flag: MoE experts spread whole across the GPUs.")
@base.option("--attn-dp", type=base.IntRange(1, 1024), default=1, metavar="N",
             help="SGLang attention DP groups.")
@base.option("--max-num-seqs", type=base.IntRange(1), metavar="N",
             help="Sequences running at once (default: the engine version's).")
@base.option("--max-num-batched-tokens", type=base.IntRange(1), metavar="N",
             help="Tokens per scheduler step (default: the engine version's).")
@base.option("--swa-full-tokens-ratio", type=base.FloatRange(0, lo_open=True),
             metavar="RATIO", help="SGLang: SWA pool tokens per full-pool token (default 0.8).")
@base.option("--mamba-full-memory-ratio", type=base.FloatRange(0, lo_open=True),
             metavar="RATIO", help="SGLang: linear-attention state memory per KV memory.")
@base.option("--max-mamba-cache-size", type=base.IntRange(1), metavar="N",
             help="SGLang: linear-attention state slots (default: from the ratio).")
@base.option("--reserve", metavar="SIZE",
             help="Non-KV reserve per GPU (e.g. 4GiB; 0 allowed). Default: estimated.")
@base.option("--context", type=base.IntRange(1), metavar="TOKENS",
             help="Tokens per sequence for seats (default: [tool.tpcheck] context; a "
                  "manifest's max-model-len, else the model's maximum as the lint reads it; "
                  "a model named directly: its maximum capped at 32768).")
@base.option("--kv-cache-dtype", metavar="DTYPE",
             help="auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2 ...")
@base.option("--quantization", metavar="METHOD",
             help="Override the checkpoint's quantization (fp8, awq, gptq, ...).")
@base.option("--dtype", metavar="DTYPE",
             help="Override the activation dtype (bfloat16, float16).")
@base.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
             help="Override a config.json field (repeatable).")
@base.option("--batch", type=base.IntRange(1), default=1, metavar="N",
             help="Decode batch for the step model (default: 1).")
@base.option("--alpha", type=base.FloatRange(0, MAX_ALPHA), metavar="SECONDS",
             help="Fixed all-reduce cost in seconds (default: the collective model's).")
@base.option("--link", metavar="CLASS",
             help="Link class for the TP group: nvlink4, pcie5, ib-ndr, ...")
@base.option("--width", type=base.IntRange(60, 1000), metavar="COLUMNS",
             help="Text width (default: the terminal's, 100 when not a terminal).")
@base.option("--nodes", type=base.IntRange(1, 4096), metavar="N",
             help="Nodes the GPUs span: the sweep stops at N × --gpus-per-node.")
@base.option("--gpus-per-node", type=base.IntRange(1, 1024), metavar="G",
             help="GPUs one node holds (default: the GPU's NVLink domain, 8 on HGX).")
@base.option("--network", metavar="SPEC",
             help="NICs per node between nodes, e.g. 8x400G-ib, 4x200G-roce (default: an "
                  "HGX node's 8x400G-ib, assumed).")
@base.offline_option
@base.format_option("text", "json", "markdown")
def command(**params: Any) -> int:
    return run(base.parsed(params))


def _sizes(args: base.Args
           ) -> tuple[int | None, int | None, float | None, float | None, str | None]:
    """(--hbm bytes, --reserve bytes, --link bandwidth, --link α), each checked."""
    from tpcheck.hardware.gpus import parse_size

    mem = res_b = None
    if args.hbm is not None:
        try:
            mem = parse_size(args.hbm)
        except ValueError as e:
            raise UsageError(str(e), "--hbm") from None
        if not mem > 0:  # 0 B of HBM printed a sweep where nothing fits
            raise UsageError(f"{args.hbm!r} is no memory size: a GPU has more than 0 bytes",
                             "--hbm")
    if args.reserve is not None:
        try:
            res_b = parse_size(args.reserve)
        except ValueError as e:
            raise UsageError(str(e), "--reserve") from None
    link_bw = link_alpha = link_key = None
    if args.link:
        from tpcheck.hardware.links import find_link, link_names

        lk = find_link(args.link)
        if lk is None:
            raise UsageError(f"unknown link {args.link!r}; known: {', '.join(link_names())}",
                             "--link")
        if lk.inter_node:  # one NIC's rate per GPU, as given
            link_bw, link_alpha = lk.bandwidth, lk.alpha
        else:  # a class inside a node: priced by the collective model per message size
            link_key = lk.key
    return mem, res_b, link_bw, link_alpha, link_key


def _gpu(name: str | None, origin: str = "--gpu") -> GPU | None:
    from tpcheck.hardware.gpus import find_gpu, gpu_names

    if not name:
        return None
    gpu = find_gpu(name)
    if gpu is None:
        known = f"unknown GPU {name!r}; known: {', '.join(gpu_names())}"
        if origin.startswith("--"):
            raise UsageError(known, origin)
        raise UsageError(f"{origin}: {known}")  # the settings file's key, as the lint says it
    return gpu


def _options(args: base.Args, gpu: GPU | None, base_opts: Options | None = None) -> Options:
    """The physics options: the manifest's (``base_opts``) with every flag given on top."""
    from tpcheck.physics.plan import Options

    mem, res_b, link_bw, link_alpha, link_key = _sizes(args)
    alpha = args.alpha if args.alpha is not None else link_alpha
    given: dict[str, Any] = {
        "engine": args.engine, "engine_version": args.engine_version, "memory": mem,
        "utilization": args.util, "pp": args.pp, "dp": args.dp,
        "max_num_seqs": args.max_num_seqs, "max_num_batched_tokens": args.max_num_batched_tokens,
        "reserve": res_b, "context": args.context, "kv_cache_dtype": args.kv_cache_dtype,
        "quantization": args.quantization, "dtype": args.dtype, "alpha": alpha,
        "link_bandwidth": link_bw, "link_key": link_key,
        "swa_full_tokens_ratio": args.swa_full_tokens_ratio,
        "mamba_full_memory_ratio": args.mamba_full_memory_ratio,
        "max_mamba_cache_size": args.max_mamba_cache_size,
    }
    given["gpus_per_node"], given["network"] = _nodes(args, gpu)
    set_now = {k: v for k, v in given.items() if v is not None}
    if gpu is not None or base_opts is None:
        set_now["gpu"] = gpu
    if args.enable_expert_parallel:
        set_now["expert_parallel"] = True
    if args.attn_dp != 1 or base_opts is None:
        set_now["attn_dp"] = args.attn_dp
    set_now["batch"] = args.batch
    return replace(base_opts or Options(), **set_now)


def run(args: base.Args) -> int:
    if _is_manifest(args.model):
        from tpcheck.commands.plan_manifest import manifest_plans

        code = 0
        docs: list[dict[str, Any]] = []  # --format json: one document for every deployment
        for item in manifest_plans(args.model, args, _gpu(args.gpu_name)):
            # the deployment's GPU is the lint's (the manifest's own, else --gpu): kept
            opts = _options(args, None, item.options)
            code = max(code, _plan(args, item.model, item.shape, item.where, opts,
                                   _manifest_gpus(args, item.gpus), item.label, item.release,
                                   docs))
        if args.fmt == "json":
            # one deployment: its plan as for a model; several: {"plans": [...]} in file order
            out = docs[0] if len(docs) == 1 else {"path": args.model, "plans": docs}
            print(json.dumps(out, indent=2, default=str))
        return code
    args, gpu, release = _with_settings(args)
    shape, where = load_model(args.model, args)
    opts = _options(args, gpu)
    said = None if release is None else _release_words(opts, release)
    return _plan(args, args.model, shape, where, opts, args.gpus, None, said)


def _with_settings(args: base.Args) -> tuple[base.Args, GPU | None, str | None]:
    """[tool.tpcheck] under the flags, as the lint and ``plan FILE`` read it: gpu, context,
    engine-version, alpha and offline; the GPU, and where the release came from when the
    settings named it."""
    from pathlib import Path

    from tpcheck.settings import SettingsError, find_settings_file, load_settings

    try:
        settings = load_settings(find_settings_file(Path.cwd()))
    except SettingsError as e:
        raise UsageError(str(e)) from None
    given: dict[str, Any] = {}
    if args.context is None and settings.context:
        given["context"] = settings.context
    if args.alpha is None and settings.alpha is not None:
        given["alpha"] = settings.alpha
    if settings.offline:
        given["offline"] = True
    origin = None
    if args.engine_version is None and settings.engine_version:
        given["engine_version"] = settings.engine_version
        origin = settings.engine_version_from or "[tool.tpcheck] engine-version"
    if args.gpu_name:
        gpu = _gpu(args.gpu_name)
    elif settings.gpu:
        gpu = _gpu(settings.gpu, "[tool.tpcheck] gpu")
    else:
        gpu = None
    return (base.Args(**{**vars(args), **given}) if given else args), gpu, origin


def _release_words(opts: Options, origin: str) -> str:
    from tpcheck.report.plan_words import plan_release

    return plan_release(opts, None, origin)


def _manifest_gpus(args: base.Args, found: int) -> int | None:
    """The budget a manifest's plan ranks: --gpus, else the manifest's GPU count; --tp asks for
    the sweep of those sizes instead."""
    if args.gpus:
        return int(args.gpus)
    return None if args.tps is not None else found


def _is_manifest(model: str) -> bool:
    """A file that is not a config.json (a folder or a .json file stays a model reference)."""
    import os

    return os.path.isfile(model) and not model.lower().endswith(".json")


def load_model(model: str, args: base.Args) -> tuple[ModelShape, str]:
    from tpcheck.commands._model import load_shape

    return load_shape(model, overrides=_parse_set(args.sets or ()), offline=args.offline)


def _emit(doc: dict[str, Any], sink: list[dict[str, Any]] | None) -> None:
    """Print a JSON plan, or keep it for the one document a manifest's plans make."""
    if sink is not None:
        sink.append(doc)
    else:
        print(json.dumps(doc, indent=2, default=str))


def _plan(args: base.Args, model: str, shape: ModelShape, where: str, opts: Options,
          gpus: int | None, label: str | None, release: str | None,
          sink: list[dict[str, Any]] | None = None) -> int:
    from tpcheck.report.paths import source_label

    shown = source_label(where)
    if gpus:
        return _recommend(args, model, shape, shown, opts, gpus, label, release, sink)
    if args.goal is not None:  # the sweep ranks nothing: --goal would change no figure
        raise UsageError("--goal ranks the layouts of a GPU budget: give --gpus N (the sweep of "
                         "--tp sizes ranks nothing)", "--goal")
    from tpcheck.physics.plan import intensity, sweep

    tps = _parse_tps(args.tps)
    most = args.nodes * (opts.gpus_per_node or _node_size(opts.gpu)) if args.nodes else None
    if most is not None and tps is not None and max(tps) > most:
        raise UsageError(f"TP {max(tps)} needs more than the {most} GPUs of {args.nodes} "
                         f"node(s)", "--tp")
    try:
        rows = sweep(shape, opts, tps)
        if most is not None:  # the GPUs there are: no TP group wider than all the nodes
            rows = [r for r in rows if r.tp <= most]
    except ValueError as e:  # an unknown --quantization / --dtype / --kv-cache-dtype name
        raise UsageError(str(e)) from None
    use = link_use_of(args.link, opts.gpu, args.alpha, opts)
    prefill = prefill_shares(shape, rows, opts, use)
    if args.fmt == "json":
        from tpcheck.report.plan_words import plan_release

        doc = {
            "model": model,
            "source": shown,
            "gpu": opts.gpu.key if opts.gpu else None,
            "context": rows[0].context.result if rows else None,
            "link": None if use is None else {
                "key": use.link.key, "name": use.link.name, "bandwidth": use.bandwidth.result,
                "alpha": use.alpha.result, "source": use.bandwidth.source},
            "batch": args.batch,
            "dp": opts.dp,
            "rows": [plan_row(r, p, plan_release(opts, release), opts.dp, opts.pp)
                     for r, p in zip(rows, prefill, strict=True)],
        }
        if label:
            doc["deployment"] = label
        _emit(doc, sink)
        return 0
    from tpcheck.report.plan_text import PlanView, render_plan

    it_be = intensity(shape, 8, opts) if (opts.gpu or opts.link_bandwidth) else None
    view = PlanView(model=model, where=shown, shape=shape, rows=tuple(rows), opts=opts,
                    it_be=it_be, prefill=tuple(prefill),
                    link_label=None if use is None else use.label,
                    width=_width(args), markdown=args.fmt == "markdown", title=label,
                    release=release)
    sys.stdout.write(render_plan(view))
    return 0


def _width(args: base.Args) -> int:
    """--width, else the terminal's columns, else 100 (a pipe, a file, a CI log)."""
    if args.width:
        return int(args.width)
    if sys.stdout.isatty():
        import shutil

        return max(60, shutil.get_terminal_size((100, 24)).columns)
    return 100


def _recommend(args: base.Args, model: str, shape: ModelShape, shown: str, opts: Options,
               gpus: int, label: str | None, release: str | None,
               sink: list[dict[str, Any]] | None = None) -> int:
    from tpcheck.physics.recommend import recommend
    from tpcheck.report import plan_rank

    if opts.gpu is None and opts.memory is None:
        raise UsageError("ranking layouts needs seats: name the GPU (--gpu) or its memory "
                         "(--hbm)", "--gpus")

    if args.batch != 1:  # the ranking steps each layout at the batch its seats admit
        raise UsageError("--gpus ranks each layout at the batch its seats admit; --batch is the "
                         "sweep's (drop --gpus, or --batch)", "--batch")
    only, given = _only(args)
    try:
        plan = recommend(shape, opts, gpus, goal=args.goal or "throughput", dp=args.dp,
                         only=only)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not plan.layouts:  # --dp 3 of 8 GPUs, --tp 3 --pp 3 of 8: nothing to rank
        from tpcheck.report.plan_words import count

        raise UsageError(f"no layout of {count(gpus, 'GPU')} (t × p × replicas = {gpus}) has "
                         f"{' '.join(given)}", "--gpus")
    launches = plan_rank.launches(plan, model, shape, opts)
    if args.fmt == "json":
        doc = plan_rank.to_json(plan, model, shown, opts, launches, release)
        if label:
            doc["deployment"] = label
        _emit(doc, sink)
        return 0
    render = plan_rank.markdown if args.fmt == "markdown" else plan_rank.text
    sys.stdout.write(render(plan, model, shown, shape, opts, launches, _width(args), label,
                            release))
    return 0


def _node_size(gpu: GPU | None) -> int:
    """GPUs per node when not given: an NVLink part's domain (8 on HGX), else 8."""
    return gpu.nvlink_domain if gpu is not None and gpu.link.startswith("nvlink") else 8


def _nodes(args: base.Args, gpu: GPU | None) -> tuple[int | None, Link | None]:
    """--gpus-per-node and --network as the physics takes them: the node size, and the
    network as each GPU's share of the node's NICs (None: the physics' defaults)."""
    from tpcheck.hardware.links import Link
    from tpcheck.hardware.network import parse_network

    per_node: int | None = args.gpus_per_node
    if args.network is None:
        return per_node, None
    net = parse_network(args.network)
    if net is None:
        raise UsageError(f"{args.network!r} is not a network: NICS x GBPS[-KIND], e.g. "
                         "8x400G-ib, 4x200G-roce", "--network")
    size = per_node or _node_size(gpu)
    return size, Link(f"{net.kind}-{net.nics}x{net.gbps:g}", f"{net.label} per node",
                      net.aggregate / size, 0.0, True, f"--network {args.network}")


def _only(args: base.Args) -> tuple[Only, list[str]]:
    """The layout the command line fixes beside --gpus, and those options as given."""
    from tpcheck.physics.recommend import Only

    tps = _parse_tps(args.tps)
    attn = args.attn_dp if args.attn_dp != 1 else None
    given = [f"--{k} {v}" for k, v in (("dp", args.dp), ("tp", args.tps), ("pp", args.pp),
                                        ("attn-dp", attn)) if v is not None]
    if args.enable_expert_parallel:
        given.append("--enable-expert-parallel")
    return Only(tps=None if tps is None else tuple(tps), pp=args.pp,
                ep=True if args.enable_expert_parallel else None, attn_dp=attn), given
