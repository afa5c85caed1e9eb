"""Which profiling a vLLM release runs (V0, V1 before graph profiling, V1): each reserve asks."""

from __future__ import annotations

from tpcheck.engines.defaults import parse_version

# Engine eras whose profiling differs (see engine_era).
ERA_V0 = "v0"  # V0 engine (default before 0.8): N defaults to max(max_model_len, 2048)
ERA_V1_NO_GRAPHS = "v1<0.21"  # V1 before CUDA-graph memory profiling became the default
ERA_V1 = "v1"  # 0.21 and later: the CUDA graph estimate is subtracted


def engine_era(version: str | None) -> str:
    """Which profiling a vLLM version runs: V0 (< 0.8), V1 before 0.21, or V1 with graphs."""
    pv = parse_version(version)
    if pv is None:
        return ERA_V1
    if pv < (0, 8):
        return ERA_V0
    if pv < (0, 21):
        return ERA_V1_NO_GRAPHS
    return ERA_V1
