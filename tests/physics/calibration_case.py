"""What a published vLLM start-up row needs beyond its own fields (test_calibration.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """What a row needs beyond its own fields; every value here is an assumption, named."""

    model: str  # catalog id
    gpu: str  # catalog key (memory from the row's gpu_mem_gib when it gives one)
    version: str  # the row's version, else the release its log format / date implies
    why_version: str = ""
    dtype: str | None = None
    utilization: float | None = None  # only when the row has none: the version's default
    max_model_len: int | None = None  # only when the row has none
    entrypoint: str = "serve"
    note: str = ""
    weights_miss: str = ""  # a known miss of the weights figure: xfail (strict) with the reason
    pool_miss: str = ""  # a known miss of the available-KV figure
    pool_from_tokens: str = ""  # why the logged GiB is not the engine's pool (then tokens · kv_B)
    unread: str = ""  # a part of the model tpcheck cannot read: kept out of issue 32's 5 % bar
    quantization: str | None = None  # the launch's --quantization where config.json has none
    # The sampler the log shows where it is not the release's default ("sort": vLLM logged
    # "FlashInfer is not available. Falling back to the PyTorch-native implementation").
    sampler: str = ""
