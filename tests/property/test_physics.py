"""Property tests over config.json parsing and the plan physics.

Random config shapes and values (0, negative, huge, float, string, NaN, missing, nested) go
through ``parse_config``: it either returns a ModelShape or raises ConfigError with a one-line
message. Every shape it accepts goes through ``evaluate`` for several t and odd Options, which
must return an Evaluation and never raise.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpcheck.hardware.gpus import find_gpu
from tpcheck.models.config import ConfigError, parse_config
from tpcheck.models.shape import ModelShape
from tpcheck.physics.plan import Evaluation, Options, evaluate

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = [
    json.loads(p.read_text(encoding="utf-8"))
    for p in sorted((ROOT / "fixtures" / "models").glob("*.json"))
    if p.name not in ("bad-json.json", "not-an-object.json")
]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ODD = st.sampled_from([0, -1, -64, 1, 3, 7, 10**30, 2**63, 1.5, 64.0, float("nan"), float("inf"),
                       "8", "abc", "", None, True, False, [], [8], {}, {"a": 1}])
KEYS = sorted({k for c in CONFIGS for k in c if not isinstance(c[k], (dict, list))} | {
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
    "vocab_size", "intermediate_size", "head_dim", "kv_lora_rank", "qk_rope_head_dim",
    "qk_nope_head_dim", "v_head_dim", "n_routed_experts", "num_experts_per_tok",
    "moe_intermediate_size", "torch_dtype", "sliding_window", "max_position_embeddings",
})


@st.composite
def config(draw: st.DrawFn) -> dict[str, Any]:
    base = dict(draw(st.sampled_from(CONFIGS)))
    for _ in range(draw(st.integers(1, 5))):
        key = draw(st.sampled_from(KEYS))
        if draw(st.integers(0, 4)) == 0:
            base.pop(key, None)  # missing
        else:
            base[key] = draw(ODD | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True))
    if draw(st.integers(0, 9)) == 0:
        base = {"text_config": base, "model_type": draw(st.sampled_from(["llava", "", 5]))}
    return base


def _evaluate_all(shape: ModelShape, opts: Options) -> None:
    for t in (1, 2, 3, 8, 64):
        ev = evaluate(shape, t, opts)
        assert isinstance(ev, Evaluation)
        assert ev.legal in (True, False)


@SETTINGS
@given(config())
def test_random_configs_parse_or_fail_with_one_line(cfg: dict[str, Any]) -> None:
    try:
        shape = parse_config(cfg, name="m", path="config.json")
    except ConfigError as e:
        assert "\n" not in str(e) and str(e)
        return
    assert shape.layers >= 1 and shape.heads >= 1 and shape.kv_heads >= 1
    if _huge(cfg):
        return  # see test_absurd_config_sizes_are_refused_by_parse_config
    _evaluate_all(shape, Options(gpu=find_gpu("h100-sxm")))


def _huge(cfg: Any) -> bool:
    """A number no model has (over 2**53): parse_config should refuse it, and does not yet."""
    if isinstance(cfg, dict):
        return any(_huge(v) for v in cfg.values())
    if isinstance(cfg, list):
        return any(_huge(v) for v in cfg)
    return isinstance(cfg, (int, float)) and not isinstance(cfg, bool) and (
        math.isfinite(cfg) and abs(cfg) > 2**53)


def test_absurd_config_sizes_are_refused_by_parse_config() -> None:
    cfg = dict(CONFIGS[0])
    cfg["hidden_size"] = 1.266918764612423e153  # integral as a float, far past any real width
    with pytest.raises(ConfigError, match="hidden_size"):
        parse_config(cfg, name="m")


OPTION_VALUES = {
    "utilization": st.sampled_from([None, 0.0, 1e-9, 0.5, 0.92, 1.0, 2.0, -0.5]),
    "context": st.sampled_from([None, 1, 8, 32768, 10**9]),
    "max_num_seqs": st.sampled_from([None, 1, 256, 10**6]),
    "memory": st.sampled_from([None, 0, 1, 80 * 2**30, 10**15]),
    "reserve": st.sampled_from([None, 0, 2**30, 10**15]),
    "kv_cache_dtype": st.sampled_from([None, "auto", "fp8", "fp8_e5m2", "bogus"]),
    "quantization": st.sampled_from([None, "fp8", "awq", "bogus"]),
    "dtype": st.sampled_from([None, "bfloat16", "float16", "float32", "bogus"]),
    "pp": st.sampled_from([1, 2, 3]),
    "dp": st.sampled_from([1, 2, 8]),
    "expert_parallel": st.booleans(),
    "engine": st.sampled_from(["vllm", "sglang"]),
    "batch": st.sampled_from([1, 64]),
}


@SETTINGS
@given(st.sampled_from(CONFIGS), st.fixed_dictionaries({}, optional=OPTION_VALUES))
def test_odd_options_never_break_evaluate(cfg: dict[str, Any], kw: dict[str, Any]) -> None:
    """Numbers out of range are the rules' business (a refusal, a zero pool), never an
    exception; an unknown dtype, quantization or KV-cache dtype name is a one-line ValueError,
    which the linter turns into one error at that flag (tests/test_hostile.py)."""
    shape = parse_config(cfg, name="m")
    if kw.get("engine") == "sglang" and kw.get("memory") == 0:
        kw["memory"] = 1  # see test_sglang_with_zero_memory_is_not_a_division_by_zero
    for gpu in ("h100-sxm", "l40s", None):
        opts = Options(gpu=find_gpu(gpu) if gpu else None, **kw)
        try:
            _evaluate_all(shape, opts)
        except ValueError as e:
            assert "bogus" in str(e) and "\n" not in str(e)
            assert "bogus" in (kw.get("dtype"), kw.get("quantization"), kw.get("kv_cache_dtype"))


def test_nan_is_refused_not_propagated() -> None:
    """A NaN layer count must not become a shape whose formulas print 'nan'."""
    cfg = dict(CONFIGS[0])
    cfg["num_hidden_layers"] = math.nan
    try:
        parse_config(cfg, name="m")
    except ConfigError as e:
        assert "num_hidden_layers" in str(e)
    else:  # pragma: no cover - a failure message that says what happened
        raise AssertionError("NaN num_hidden_layers accepted")


def test_sglang_with_zero_memory_is_not_a_division_by_zero() -> None:
    shape = parse_config(CONFIGS[0], name="m")
    ev = evaluate(shape, 2, Options(gpu=find_gpu("h100-sxm"), engine="sglang", memory=0))
    assert not ev.legal or ev.to_row()["seats"] == 0
