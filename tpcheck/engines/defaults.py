"""Engine defaults as data, keyed by engine and version, each with the source it was read from.

A deployment that leaves a flag unset gets the engine's default here, and the default used is
named in the formula values so the user sees it. Versions come from the container image tag,
else ``[tool.tpcheck] engine_version``, else the newest known release below.
"""

from __future__ import annotations

from functools import lru_cache

from tpcheck.engines import NEWEST, parse_version
from tpcheck.formula import MIB
from tpcheck.record import record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Literal
    EngineName = Literal["vllm", "sglang"]
    Entrypoint = Literal["serve", "llm"]


VLLM_SRC = f"vllm {NEWEST['vllm']}"
SGLANG_SRC = f"sglang {NEWEST['sglang']}"
GIB_BYTES = 1 << 30


@record
class Default:
    """A default value, where it was read, and which version it belongs to."""

    value: float | int | str
    source: str
    version: str
    assumed: bool = False  # True when the version is older than what was read and not checked


@record
class EngineDefaults:
    engine: EngineName
    version: str  # the version these defaults are for (as given or newest known)

    # The tables are asked the same questions for every layout of a run (the budget, the
    # prefill chunk, the step's release): each answer is kept on the (frozen, shared) defaults.
    def gpu_memory_utilization(self) -> Default:
        found: Default | None = self.__dict__.get("_gmu")
        if found is None:
            found = self.__dict__["_gmu"] = self._gpu_memory_utilization()
        return found

    def batch_defaults(
        self, total_mem_bytes: int, gpu_name: str, entrypoint: Entrypoint = "serve",
        max_model_len: int | None = None,
    ) -> tuple[Default, Default]:
        """vLLM's (max_num_seqs, max_num_batched_tokens) by GPU memory, entry point and release
        (``_batch_defaults``)."""
        kept: dict[tuple[object, ...], tuple[Default, Default]] = self.__dict__.setdefault(
            "_batch", {})
        key = (total_mem_bytes, gpu_name, entrypoint, max_model_len)
        found = kept.get(key)
        if found is None:
            found = self._batch_defaults(total_mem_bytes, gpu_name, entrypoint, max_model_len)
            if len(kept) < 256:
                kept[key] = found
        return found

    def block_size(self) -> Default:
        found: Default | None = self.__dict__.get("_block")
        if found is None:
            found = self.__dict__["_block"] = self._block_size()
        return found

    def _gpu_memory_utilization(self) -> Default:
        if self.engine == "vllm":
            pv = parse_version(self.version) or (0, 33)
            if pv >= (0, 33):
                return Default(0.92, f"{VLLM_SRC} config/cache.py l.215 CacheConfig", self.version)
            # 0.9 -> 0.92 in 0.20.0: config/cache.py l.66 (0.20.0, 0.21.0) reads 0.92, l.41 of
            # 0.19.0 and 0.18.0 and l.49 of 0.12.0-0.17.0 read 0.9 (0.10.1: l.43).
            if pv >= (0, 20):
                return Default(0.92, f"vllm {self.version} config/cache.py CacheConfig (0.92 "
                               "from 0.20.0, l.66)", self.version)
            return Default(
                0.9,
                f"vllm {self.version} config/cache.py CacheConfig (0.9 until 0.19.0, l.41)",
                self.version,
                assumed=pv < (0, 10),
            )
        raise ValueError(
            "SGLang's mem_fraction_static depends on GPU memory: use sglang_mem_fraction"
        )

    def _batch_defaults(
        self, total_mem_bytes: int, gpu_name: str, entrypoint: Entrypoint = "serve",
        max_model_len: int | None = None,
    ) -> tuple[Default, Default]:
        """vLLM's (max_num_seqs, max_num_batched_tokens) by GPU memory, entry point and release.

        The tiers as read in each release's ``engine/arg_utils.py``: the >= 160 GiB tier (16384
        tokens for serve too) exists from 0.28.0 (l.2582; absent in 0.27.0 get_batch_defaults
        l.2515 and 0.26.0 l.2431); GB10 (cc 12.1) stays on the small tier from 0.33.0
        (l.2963). The >= 70 GiB non-A100 tier reads the same in 0.10.1 (_set_default_args_v1
        l.1638), 0.12.0 (l.1827), 0.17.0 (l.1974), 0.21.0 (l.2246) and 0.26.0 (l.2460).
        """
        pv = parse_version(self.version) or (0, 33)
        if pv < (0, 8):  # V0: no tiers (vllm 0.6.4 engine/arg_utils.py l.123, config.py l.1103)
            v0 = f"vllm {self.version} (V0; as read in 0.6.4)"
            toks = (2048 if max_model_len is None else
                    max(max_model_len, 2048) if max_model_len <= 32768 else 512)
            return (
                Default(256, f"{v0} engine/arg_utils.py EngineArgs.max_num_seqs l.123",
                        self.version, pv[:2] != (0, 6)),
                Default(toks, f"{v0} config.py SchedulerConfig l.1103-1118: max(max_model_len, "
                        "2048), 512 with chunked prefill past 32K", self.version, pv[:2] != (0, 6)),
            )
        src = f"vllm {self.version} engine/arg_utils.py {_batch_source(pv)}"
        gib = total_mem_bytes / GIB_BYTES
        llm = entrypoint == "llm"
        name = gpu_name.lower()
        gb10 = pv >= (0, 33) and "gb10" in name
        if gib >= 160 and pv >= (0, 28):
            seqs, toks = 1024, 16384
        elif gib >= 70 and "a100" not in name and not gb10:
            seqs, toks = 1024, (16384 if llm else 8192)
        else:
            seqs, toks = 256, (8192 if llm else 2048)
        assumed = pv < (0, 10)  # V1 defaults read from 0.10.1 on; older releases not checked
        return (
            Default(seqs, src, self.version, assumed),
            Default(toks, src, self.version, assumed),
        )

    def _block_size(self) -> Default:
        if self.engine == "vllm":
            return Default(
                16, f"{VLLM_SRC} config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE l.185", self.version
            )
        return Default(
            1, f"{SGLANG_SRC} arg_groups/overrides.py l.1362 (page_size 1 on CUDA)", self.version
        )


def _batch_source(pv: tuple[int, ...]) -> str:
    """Where the release's batch defaults were read (the nearest release read at or below)."""
    for first, where in (((0, 33), "get_batch_defaults l.2940"),
                         ((0, 28), "get_batch_defaults l.2553 (as read in 0.28.0)"),
                         ((0, 26), "get_batch_defaults l.2431 (as read in 0.26.0)"),
                         ((0, 21), "get_batch_defaults l.2217 (as read in 0.21.0)"),
                         ((0, 17), "get_batch_defaults l.1945 (as read in 0.17.0)"),
                         ((0, 12), "get_batch_defaults l.1799 (as read in 0.12.0)")):
        if pv >= first:
            return where
    return "_set_default_args_v1 l.1584 (as read in 0.10.1)"


# vLLM releases whose memory model differs in tpcheck's tables (sampler, CUDA-graph estimate,
# batch-default tiers, gpu_memory_utilization 0.92 from 0.20), from the first V1 release read
# (0.10.1): a verdict that changes between two of them changes with the release. SGLang: the
# releases whose KV budget and default mem_fraction_static were read (physics/sglang_memory.py).
KNOWN_RELEASES: dict[str, tuple[str, ...]] = {
    "vllm": ("0.10.1", "0.12.0", "0.17.0", "0.20.0", "0.21.0", "0.28.0", "0.33.0"),
    "sglang": ("0.4.6", "0.5.2", "0.5.23"),
}
__all__ = ["NEWEST", "parse_version"]


@lru_cache(maxsize=256)
def defaults_for(engine: EngineName, version: str | None = None) -> EngineDefaults:
    """One shared (frozen) EngineDefaults per engine and version, so that its answers are
    kept across a run's layouts (up to 256 versions)."""
    return EngineDefaults(engine, version or NEWEST[engine])


def sglang_chunked_prefill(gpu_mem_mib: float) -> int:
    """SGLang 0.5.23 ``memory_hook.py`` handle_gpu_memory_settings: chunk by GPU memory."""
    if gpu_mem_mib < 20 * 1024:
        return 2048
    if gpu_mem_mib < 60 * 1024:
        return 4096
    if gpu_mem_mib < 160 * 1024:
        return 8192
    return 16384


def sglang_decode_graph_bs(gpu_mem_mib: float, tp: int) -> int:
    """SGLang 0.5.23 memory_hook.py: decode cuda-graph max batch size by memory and TP."""
    if gpu_mem_mib < 20 * 1024:
        return 8
    if gpu_mem_mib < 35 * 1024:
        return 48 if tp < 4 else 160
    if gpu_mem_mib < 60 * 1024:
        return 32 if tp < 4 else 160
    if gpu_mem_mib < 160 * 1024:
        return 256 if tp < 4 else 512
    return 512


def sglang_mem_fraction(gpu_mem_bytes: int, tp: int, pp: int = 1, attn_dp: int = 1) -> Default:
    """SGLang 0.5.23 default mem_fraction_static (memory_hook.py l.281-345), dense CUDA model.

    reserved = 512 + 1.5·max(chunk, 2048) + tp·pp/8·1024 + graph (MiB), at least 10 GiB on
    cards over 60 GiB; fraction = round((gpu_mem − reserved)/gpu_mem, 3).
    """
    mem = gpu_mem_bytes / MIB
    if mem <= 0:  # memory unknown: memory_hook.py's fallback
        return Default(0.95, f"{SGLANG_SRC} arg_groups/memory_hook.py (gpu_mem unknown)",
                       NEWEST["sglang"])
    chunk = sglang_chunked_prefill(mem)
    max_bs = sglang_decode_graph_bs(mem, tp)
    graph = max_bs * 2.0
    if attn_dp > 1:
        graph += max_bs * attn_dp * 3
        if max_bs > 300:
            graph += max_bs * attn_dp * 1.5
    # Prefill graph (BREAKABLE backend by default on CUDA): 58 capture sizes x 8 MiB at chunk 8192.
    graph += 464 if chunk >= 8192 else 0
    reserved = 512 + max(chunk, 2048) * 1.5 + tp * pp / 8 * 1024 + graph
    if mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    frac = round((mem - reserved) / mem, 3)
    return Default(frac, f"{SGLANG_SRC} arg_groups/memory_hook.py l.281-345", NEWEST["sglang"])


def sglang_max_running_requests(pool_tokens: int, context_len: int) -> Default:
    """SGLang 0.5.23 kv_cache_configurator.py resolve_max_num_reqs l.3119-3172 (per DP worker)."""
    est = int(pool_tokens / max(context_len, 1) * 512)
    est = min(max(est, 2048), 4096)
    return Default(
        min(est, pool_tokens // 2),
        f"{SGLANG_SRC} mem_cache/kv_cache_configurator.py resolve_max_num_reqs",
        NEWEST["sglang"],
    )
