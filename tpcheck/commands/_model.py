"""Turn a model reference on the command line into a ModelShape, via the shared resolver."""

from __future__ import annotations

from tpcheck.errors import CommandError, UsageError
from tpcheck.models.shape import ModelShape

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def apply_overrides(cfg: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``--set key=value``: top-level fields, and the text model's when the config nests one."""
    if not overrides:
        return cfg
    out = dict(cfg)
    for sub in ("text_config", "language_config", "llm_config"):
        if isinstance(out.get(sub), dict):
            inner = dict(out[sub])
            for k, v in overrides.items():
                if k in inner or k not in out:
                    inner[k] = v
            out[sub] = inner
    for k, v in overrides.items():
        out[k] = v
    return out


def load_shape(model: str, *, overrides: dict[str, Any] | None = None, offline: bool = False,
               model_config: str | None = None) -> tuple[ModelShape, str]:
    """(ModelShape, "source: location") or a CommandError naming what was tried.

    The settings file is read as ``check`` reads it, so ``offline = true``, ``hub-timeout`` and
    [tool.tpcheck.models] hold here too (issue 14 item 1: ``plan`` used to reach the hub anyway).
    """
    from pathlib import Path

    from tpcheck.models.config import ConfigError, parse_config
    from tpcheck.models.resolve import ResolveError, Resolver
    from tpcheck.settings import SettingsError, find_settings_file, load_settings

    try:
        settings = load_settings(find_settings_file(Path.cwd()))
    except SettingsError as e:
        raise UsageError(str(e)) from None
    try:
        r = Resolver(model_config=model_config, mappings=settings.models,
                     offline=offline or settings.offline or None, timeout=settings.hub_timeout,
                     base_dir=settings.root).resolve(model)
    except ResolveError as e:
        raise CommandError(str(e)) from None
    cfg = apply_overrides(dict(r.config), overrides or {})
    try:
        shape = parse_config(cfg, name=model, path=r.location, quant_cfg=r.quant_config)
    except ConfigError as e:
        raise CommandError(str(e)) from None
    return shape, f"{r.source}: {r.location}"
