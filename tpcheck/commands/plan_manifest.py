"""``tpcheck plan deploy/qwen.yaml``: plan what a manifest deploys, read as the lint reads it.

The model, GPU, context, limits and GPU count come from each deployment the file holds, through
the lint's own reader, resolver and ``CheckContext.options`` (one source of truth for what a
manifest says); flags given on the command line go on top.
"""

from __future__ import annotations

from tpcheck import CommandError, UsageError
from tpcheck.record import record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Iterator

    from tpcheck.commands import base
    from tpcheck.hardware.gpus import GPU
    from tpcheck.models.shape import ModelShape
    from tpcheck.physics.plan import Options


@record
class ManifestPlan:
    """One deployment's model and options, and the GPUs it asks for."""

    model: str
    shape: ModelShape
    where: str
    options: Options
    gpus: int
    label: str  # "deploy/qwen.yaml:12 (vllm)": which deployment this plan is of
    release: str  # "0.33.0 (from the image tag v0.33.0)"
    layout: str  # the deployment's own layout, "TP 16"


def manifest_plans(path: str, args: base.Args, gpu: GPU | None) -> Iterator[ManifestPlan]:
    from pathlib import Path

    from tpcheck.checks.context import CheckContext
    from tpcheck.lint import Linter
    from tpcheck.report.plan_words import release_words
    from tpcheck.settings import SettingsError, find_settings_file, load_settings
    from tpcheck.sources import read_path

    try:
        settings = load_settings(find_settings_file(Path.cwd()))
    except SettingsError as e:
        raise UsageError(str(e)) from None
    if args.offline:
        from tpcheck.record import replace

        settings = replace(settings, offline=True)
    rr = read_path(path)
    if rr.errors:
        first = rr.errors[0]
        raise CommandError(f"{first.path}:{first.line}:{first.column}: {first.message}")
    if not rr.deployments:
        raise CommandError(f"{path}: no vLLM or SGLang launch found to plan")
    linter = Linter(settings, gpu_flag=args.gpu_name)
    for d in rr.deployments:
        shape, problem, source = linter.shape_for(d)
        where = f"{d.path}:{d.span.line}"
        if shape is None or source is None:
            raise CommandError(f"{where}: {problem or 'no model config found'}")
        # the lint's precedence: the manifest's GPU, then --gpu, then [tool.tpcheck] gpu
        found, origin = linter.gpu_for(d)
        ctx = CheckContext(d, shape=shape, settings=settings, gpu=found, gpu_origin=origin)
        opts = ctx.options
        gpus = ctx.gpus_available or ctx.tp * ctx.pp * ctx.dp
        model = d.model or d.unresolved.get("model") or shape.name
        rel = ctx.release
        core = f"TP {ctx.tp}" + (f" × PP {ctx.pp}" if ctx.pp > 1 else "")
        layout = f"{ctx.dp} × {core}" if ctx.dp > 1 else core
        yield ManifestPlan(model, shape, source, opts, gpus, f"{where} ({d.engine}, {layout})",
                           release_words(d.engine, rel.version, rel.source, rel.pinned), layout)
