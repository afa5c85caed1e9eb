"""The one flag and alias table for both engines, and argparse's prefix rule applied to it.

Each engine parses its command line with argparse (``allow_abbrev`` left at True), so a long
flag may be shortened to any prefix that matches exactly one option of that engine. Deciding
that needs every option string the engine registers, not only the ones tpcheck reads, so both
full lists are kept below, read from the released wheels:

- vLLM 0.33.0: ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args`` (l.958-1900),
  ``vllm/entrypoints/common/cli_args.py`` (``FrontendArgs`` fields become flags),
  ``vllm/entrypoints/cli/serve.py`` and ``vllm/utils/argparse_utils.py``.
  ``FlexibleArgumentParser.parse_args`` (argparse_utils.py l.381-394) turns ``_`` into ``-`` in
  the flag name, so ``--tensor_parallel_size`` is ``--tensor-parallel-size``.
- SGLang 0.5.23: ``sglang/srt/arg_groups/fields/*.py`` (each annotated field is ``--field-name``
  plus its ``aliases``; ``no_cli`` fields have no flag) and ``sglang/srt/server_args.py``.
  SGLang does not rewrite underscores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["int", "float", "str", "bool", "model", "human_int"]

VLLM_VERSION_READ = "0.33.0"
SGLANG_VERSION_READ = "0.5.23"


@dataclass(frozen=True)
class Flag:
    """A flag tpcheck reads: the Deployment field it sets and how its value is parsed."""

    field: str
    kind: Kind
    names: tuple[str, ...]
    source: str  # where in the engine the option is registered
    value: bool = True  # for bool flags: what giving the flag sets (``--no-x`` sets False)


# vLLM 0.33.0 (file/line in vllm/engine/arg_utils.py unless said otherwise).
VLLM_FLAGS: tuple[Flag, ...] = (
    Flag("model", "model", ("--model",), "arg_utils.py l.969"),
    Flag("tensor_parallel_size", "int", ("--tensor-parallel-size", "-tp"), "arg_utils.py l.1209"),
    Flag(
        "pipeline_parallel_size", "int", ("--pipeline-parallel-size", "-pp"),
        "arg_utils.py l.1171-1173",
    ),
    Flag("data_parallel_size", "int", ("--data-parallel-size", "-dp"), "arg_utils.py l.1241"),
    Flag(
        "enable_expert_parallel", "bool", ("--enable-expert-parallel", "-ep"),
        "arg_utils.py l.1305-1307",
    ),
    Flag(
        "enable_expert_parallel", "bool", ("--no-enable-expert-parallel",),
        "arg_utils.py l.386 BooleanOptionalAction", value=False,
    ),
    Flag("max_num_seqs", "int", ("--max-num-seqs",), "arg_utils.py l.1754"),
    Flag("max_model_len", "human_int", ("--max-model-len",), "arg_utils.py l.991"),
    Flag("max_num_batched_tokens", "human_int", ("--max-num-batched-tokens",), "arg_utils.py l.1740"),
    Flag(
        "gpu_memory_utilization", "float",
        ("--gpu-memory-utilization", "--device-memory-utilization"), "arg_utils.py l.1389-1391",
    ),
    Flag("kv_cache_dtype", "str", ("--kv-cache-dtype",), "arg_utils.py l.1397"),
    Flag("quantization", "str", ("--quantization", "-q"), "arg_utils.py l.992"),
    Flag("dtype", "str", ("--dtype",), "arg_utils.py l.977"),
    Flag("revision", "str", ("--revision",), "arg_utils.py (ModelConfig.revision)"),
    Flag("enforce_eager", "bool", ("--enforce-eager",), "arg_utils.py l.1000"),
    Flag(
        "enforce_eager", "bool", ("--no-enforce-eager",),
        "arg_utils.py l.386 BooleanOptionalAction", value=False,
    ),
    Flag("config", "str", ("--config",), "utils/argparse_utils.py l.516-604"),
)

# SGLang 0.5.23 (files under sglang/srt/arg_groups/fields/).
SGLANG_FLAGS: tuple[Flag, ...] = (
    Flag("model", "model", ("--model-path", "--model"), "fields/model.py:51"),
    Flag("tensor_parallel_size", "int", ("--tp-size", "--tensor-parallel-size"), "parallel.py:45"),
    Flag(
        "pipeline_parallel_size", "int", ("--pp-size", "--pipeline-parallel-size"),
        "parallel.py:59",
    ),
    Flag("data_parallel_size", "int", ("--dp-size", "--data-parallel-size"), "parallel.py:73"),
    Flag(
        "attn_dp_size", "int", ("--attn-dp-size", "--attention-data-parallel-size"),
        "parallel.py:81",
    ),
    Flag(
        "enable_dp_attention", "bool", ("--enable-dp-attention",),
        "server_args.py:419 (deprecated, DeprecatedStoreTrueAction)",
    ),
    Flag("ep_size", "int", ("--ep-size", "--expert-parallel-size", "--ep"), "parallel.py:281"),
    Flag("nnodes", "int", ("--nnodes",), "parallel.py:43"),
    Flag("max_num_seqs", "int", ("--max-running-requests",), "fields/schedule.py:31"),
    Flag("max_model_len", "human_int", ("--context-length",), "fields/model.py:110"),
    Flag("max_num_batched_tokens", "int", ("--chunked-prefill-size",), "fields/schedule.py:52"),
    Flag("gpu_memory_utilization", "float", ("--mem-fraction-static",), "fields/schedule.py:27"),
    Flag("kv_cache_dtype", "str", ("--kv-cache-dtype",), "fields/model.py:197"),
    Flag("quantization", "str", ("--quantization",), "fields/model.py:177"),
    Flag("dtype", "str", ("--dtype",), "fields/model.py:160"),
    Flag("revision", "str", ("--revision",), "fields/model.py"),
    Flag("enforce_eager", "bool", ("--disable-cuda-graph",), "fields/exec_.py"),
    Flag("config", "str", ("--config",), "server_args.py prepare_server_args"),
)

# Python keyword names: vLLM's LLM(...)/EngineArgs(...) take the long flag names with ``_``
# (arg_utils.py l.492-651); sgl.Engine(...) takes ServerArgs field names.
VLLM_KWARGS: dict[str, tuple[str, Kind]] = {
    "model": ("model", "model"),
    "tensor_parallel_size": ("tensor_parallel_size", "int"),
    "pipeline_parallel_size": ("pipeline_parallel_size", "int"),
    "data_parallel_size": ("data_parallel_size", "int"),
    "enable_expert_parallel": ("enable_expert_parallel", "bool"),
    "max_num_seqs": ("max_num_seqs", "int"),
    "max_model_len": ("max_model_len", "int"),
    "max_num_batched_tokens": ("max_num_batched_tokens", "int"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "float"),
    "kv_cache_dtype": ("kv_cache_dtype", "str"),
    "quantization": ("quantization", "str"),
    "dtype": ("dtype", "str"),
    "revision": ("revision", "str"),
    "enforce_eager": ("enforce_eager", "bool"),
}
SGLANG_KWARGS: dict[str, tuple[str, Kind]] = {
    "model_path": ("model", "model"),
    "tp_size": ("tensor_parallel_size", "int"),
    "pp_size": ("pipeline_parallel_size", "int"),
    "dp_size": ("data_parallel_size", "int"),
    "attn_dp_size": ("attn_dp_size", "int"),
    "enable_dp_attention": ("enable_dp_attention", "bool"),
    "ep_size": ("ep_size", "int"),
    "nnodes": ("nnodes", "int"),
    "max_running_requests": ("max_num_seqs", "int"),
    "context_length": ("max_model_len", "int"),
    "chunked_prefill_size": ("max_num_batched_tokens", "int"),
    "mem_fraction_static": ("gpu_memory_utilization", "float"),
    "kv_cache_dtype": ("kv_cache_dtype", "str"),
    "quantization": ("quantization", "str"),
    "dtype": ("dtype", "str"),
    "revision": ("revision", "str"),
    "disable_cuda_graph": ("enforce_eager", "bool"),
}

VLLM_OPTION_STRINGS = frozenset(
    ["--additional-config", "--aggregate-engine-logging", "--all2all-backend", "--allow-credentials", "--allow-deprecated-quantization", "--allowed-headers", "--allowed-local-media-path", "--allowed-media-domains", "--allowed-methods", "--allowed-origins", "--anthropic-disabled-thinking-effort", "--api-key", "--api-server-count", "--async-scheduling", "--attention-backend", "--attention-config", "--aux-output-config", "--block-size", "--chat-template", "--chat-template-content-format", "--code-revision", "--cohere-format", "--cohere-is-reasoning-model", "--collect-detailed-traces", "--compilation-config", "--config", "--config-format", "--convert", "--cp-kv-cache-interleave-size", "--cpu-distributed-timeout-seconds", "--cpu-offload-gb", "--cpu-offload-params", "--cudagraph-capture-sizes", "--cudagraph-metrics", "--custom-histogram-buckets", "--data-parallel-address", "--data-parallel-backend", "--data-parallel-external-lb", "--data-parallel-hybrid-lb", "--data-parallel-multi-port-external-lb", "--data-parallel-rank", "--data-parallel-rpc-port", "--data-parallel-size", "--data-parallel-size-local", "--data-parallel-start-rank", "--data-parallel-supervisor-port", "--dbo-decode-token-threshold", "--dbo-prefill-token-threshold", "--dcp-comm-backend", "--dcp-kv-cache-interleave-size", "--dcp-q-replicate", "--decode-context-parallel-size", "--default-chat-template-kwargs", "--default-mm-loras", "--device-ids", "--device-memory-utilization", "--diffusion-config", "--disable-access-log-for-endpoints", "--disable-cascade-attn", "--disable-chunked-mm-input", "--disable-custom-all-reduce", "--disable-fastapi-docs", "--disable-hybrid-kv-cache-manager", "--disable-log-stats", "--disable-nccl-for-dp-synchronization", "--disable-sliding-window", "--disable-uvicorn-access-log", "--distributed-executor-backend", "--distributed-timeout-seconds", "--download-dir", "--dp-supervisor-probe-failure-threshold", "--dp-supervisor-probe-interval-s", "--dp-supervisor-probe-timeout-s", "--dp-sync-interval", "--dtype", "--ec-manager-config", "--ec-transfer-config", "--elastic-ep-max-dp-size", "--enable-auto-tool-choice", "--enable-batch-sharded-sampling", "--enable-chunked-prefill", "--enable-cumem-allocator", "--enable-dbo", "--enable-elastic-ep", "--enable-ep-weight-filter", "--enable-eplb", "--enable-expert-parallel", "--enable-fault-tolerance", "--enable-flash-late-interaction", "--enable-flashinfer-autotune", "--enable-force-include-usage", "--enable-hc-sp", "--enable-layerwise-nvtx-tracing", "--enable-log-deltas", "--enable-log-outputs", "--enable-log-requests", "--enable-logging-iteration-details", "--enable-lora", "--enable-mamba-cache-stochastic-rounding", "--enable-mamba-shared-prefix-checkpoint", "--enable-mfu-metrics", "--enable-mixed-moe-lora-format", "--enable-mm-embeds", "--enable-moe-shared-loras", "--enable-nccl-comm-suspend", "--enable-offline-docs", "--enable-per-request-metrics", "--enable-prefix-caching", "--enable-prompt-embeds", "--enable-prompt-tokens-details", "--enable-request-id-headers", "--enable-return-routed-experts", "--enable-scale-out", "--enable-server-load-tracking", "--enable-shm-tensor-arena", "--enable-sleep-mode", "--enable-ssl-refresh", "--enable-tokenizer-info-endpoint", "--enable-tower-connector-lora", "--enable-trace-replay", "--enforce-eager", "--engram-config", "--eplb-config", "--exclude-tools-when-tool-choice-none", "--expert-placement-strategy", "--fail-on-environ-validation", "--fault-tolerance-config", "--fingerprint-mode", "--fingerprint-value", "--fully-sharded-loras", "--gdn-prefill-backend", "--generation-config", "--gpu-memory-utilization", "--grpc", "--grpc-port", "--h11-max-header-count", "--h11-max-incomplete-event-size", "--headless", "--hf-config-path", "--hf-overrides", "--hf-token", "--host", "--ignore-patterns", "--interleave-mm-strings", "--io-processor-plugin", "--ir-op-priority", "--jit-monitor-mode", "--jit-monitor-verbose", "--kda-decode-backend", "--kda-prefill-backend", "--kernel-config", "--kv-cache-dtype", "--kv-cache-dtype-skip-layers", "--kv-cache-memory-bytes", "--kv-cache-metrics", "--kv-cache-metrics-sample", "--kv-events-config", "--kv-offloading-backend", "--kv-offloading-size", "--kv-sharing-fast-prefill", "--kv-transfer-config", "--language-model-only", "--limit-mm-per-prompt", "--linear-backend", "--load-format", "--log-config-file", "--log-error-stack", "--log-level", "--logging-config", "--logits-processors", "--logprobs-mode", "--long-prefill-token-threshold", "--long-prefill-token-threshold-adaptive", "--lora-dtype", "--lora-modules", "--lora-target-modules", "--mamba-backend", "--mamba-block-size", "--mamba-cache-dtype", "--mamba-cache-mode", "--mamba-cache-philox-rounds", "--mamba-ssm-cache-dtype", "--mamba-ssu-algorithm", "--master-addr", "--master-port", "--max-cpu-loras", "--max-cudagraph-capture-size", "--max-log-len", "--max-logprobs", "--max-lora-cls-labels", "--max-lora-rank", "--max-loras", "--max-model-len", "--max-num-active-seqs", "--max-num-batched-tokens", "--max-num-queued-reqs", "--max-num-queued-tokens", "--max-num-scheduled-tokens", "--max-num-seqs", "--max-parallel-loading-workers", "--media-io-kwargs", "--middleware", "--mm-device-do-normalize", "--mm-encoder-attn-backend", "--mm-encoder-attn-dtype", "--mm-encoder-fp8-scale-path", "--mm-encoder-fp8-scale-save-margin", "--mm-encoder-fp8-scale-save-path", "--mm-encoder-only", "--mm-encoder-tp-mode", "--mm-hasher-algorithm", "--mm-ipc-gpu-memory-gb", "--mm-processor-cache-gb", "--mm-processor-cache-type", "--mm-processor-device", "--mm-processor-kwargs", "--mm-shm-cache-max-object-size-mb", "--mm-tensor-ipc", "--model", "--model-class-overrides", "--model-impl", "--model-loader-extra-config", "--moe-backend", "--monokernel", "--nnodes", "--no-enable-expert-parallel", "--no-enforce-eager", "--node-rank", "--num-gpu-blocks-override", "--numa-bind", "--numa-bind-cpus", "--numa-bind-nodes", "--offload-backend", "--offload-group-size", "--offload-num-in-group", "--offload-params", "--offload-prefetch-step", "--optimization-level", "--otlp-traces-endpoint", "--override-generation-config", "--per-request-spec-decode-metrics", "--performance-mode", "--pipeline-parallel-size", "--pooler-config", "--port", "--prefill-context-parallel-size", "--prefill-schedule-interval", "--prefix-cache-retention-interval", "--prefix-caching-hash-algo", "--prefix-match-unit", "--profiler-config", "--pt-load-map-location", "--quantization", "--quantization-config", "--ray-workers-use-nsight", "--reasoning-config", "--reasoning-effort-map", "--reasoning-parser", "--reasoning-parser-plugin", "--renderer-num-workers", "--replayssm-buffer-len", "--response-role", "--return-sampling-mask", "--return-tokens-as-token-ids", "--revision", "--root-path", "--runner", "--safetensors-load-strategy", "--safetensors-prefetch-block-size", "--safetensors-prefetch-num-threads", "--scheduler-cls", "--scheduler-reserve-full-isl", "--scheduling-policy", "--seed", "--served-model-name", "--show-hidden-metrics-for-version", "--shutdown-timeout", "--skip-mm-profiling", "--skip-tokenizer-init", "--sleep-mode-backend", "--sleep-mode-offload-cudagraph", "--sleep-preserve-parameter-names", "--sparse-indexer-topk-backend", "--spec-method", "--spec-model", "--spec-tokens", "--specialize-active-lora", "--speculative-config", "--sse-keep-alive-interval", "--ssl-ca-certs", "--ssl-cert-reqs", "--ssl-certfile", "--ssl-ciphers", "--ssl-keyfile", "--stream-interval", "--structured-outputs-config", "--swa-bounded-replay", "--tensor-parallel-size", "--tokenizer", "--tokenizer-mode", "--tokenizer-revision", "--tokens-only", "--tool-call-parser", "--tool-parser-plugin", "--tool-server", "--tool-strict-level", "--trust-remote-code", "--trust-request-chat-template", "--trust-request-mm-kwargs", "--ubatch-size", "--uds", "--use-fp64-gumbel", "--use-replayssm", "--use-tqdm-on-load", "--uvicorn-log-level", "--video-pruning-method", "--video-pruning-rate", "--watchdog-config", "--watermark", "--watermark-config", "--weight-transfer-config", "--worker-cls", "--worker-extension-cls", "-ac", "-asc", "-cc", "-dc", "-dcp", "-dp", "-dpa", "-dpb", "-dpe", "-dph", "-dpl", "-dpm", "-dpn", "-dpp", "-dpr", "-ep", "-n", "-pcp", "-pp", "-q", "-r", "-sc", "-tp"]
)

SGLANG_OPTION_STRINGS = frozenset(
    ["--abort-on-priority-when-disabled", "--admin-api-key", "--allow-auto-truncate", "--allowed-media-domains", "--api-key", "--asr-max-buffer-seconds", "--asr-max-concurrent-sessions", "--attention-backend", "--attention-context-parallel-size", "--attention-data-parallel-size", "--attn-cp-size", "--attn-dp-size", "--base-gpu-id", "--batch-notify-size", "--bf16-gemm-backend", "--boundary-reduction", "--bucket-e2e-request-latency", "--bucket-inter-token-latency", "--bucket-time-to-first-token", "--c128-page-size", "--chat-template", "--checkpoint-engine-wait-weights-before-ready", "--chunked-prefill-size", "--completion-template", "--config", "--constrained-json-disable-any-whitespace", "--constrained-json-max-whitespace-cnt", "--constrained-json-whitespace-pattern", "--context-bucket", "--context-length", "--cp-strategy", "--cpu-offload-gb", "--crash-dump-folder", "--cuda-graph-backend-decode", "--cuda-graph-backend-prefill", "--cuda-graph-bs-decode", "--cuda-graph-bs-prefill", "--cuda-graph-config", "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill", "--cuda-graph-max-seq-len-prefill", "--cuda-graph-prefill-max-context", "--custom-weight-loader", "--data-parallel-size", "--dcp-comm-backend", "--dcp-replicate-q-proj", "--dcp-size", "--debug-cuda-graph", "--debug-tensor-dump-input-file", "--debug-tensor-dump-layers", "--debug-tensor-dump-output-folder", "--decode-attention-backend", "--decode-context-parallel-size", "--decode-log-interval", "--decoupled-spec-bind-endpoint", "--decoupled-spec-connect-endpoints", "--decoupled-spec-rank", "--decoupled-spec-role", "--decrypted-config-file", "--decrypted-draft-config-file", "--deepep-config", "--deepep-dispatcher-output-dtype", "--deepep-mode", "--deepep-v2-mode", "--default-chat-template-kwargs", "--default-priority-value", "--delete-ckpt-after-loading", "--detokenizer-worker-num", "--device", "--disable-aiter-allreduce-fusion-in-decode", "--disable-aiter-allreduce-fusion-in-prefill", "--disable-attn-tp-gather", "--disable-chunked-prefix-cache", "--disable-cuda-graph", "--disable-cuda-graph-padding", "--disable-custom-all-reduce", "--disable-decode-cuda-graph", "--disable-fast-image-processor", "--disable-flashinfer-autotune", "--disable-flashinfer-cutlass-moe-fp4-allgather", "--disable-hybrid-swa-memory", "--disable-outlines-disk-cache", "--disable-overlap-schedule", "--disable-prefill-cuda-graph", "--disable-priority-preemption", "--disable-radix-cache", "--disable-shared-experts-fusion", "--disable-tokenizer-batch-decode", "--disaggregation-bootstrap-port", "--disaggregation-decode-allocation-policy", "--disaggregation-decode-enable-offload-kvcache", "--disaggregation-decode-enable-radix-cache", "--disaggregation-decode-extra-slots", "--disaggregation-decode-host-receive-threshold", "--disaggregation-decode-polling-interval", "--disaggregation-decode-retraction-backup", "--disaggregation-enable-kv-checksum", "--disaggregation-ib-device", "--disaggregation-mode", "--disaggregation-transfer-backend", "--dist-init-addr", "--dist-timeout", "--dllm-algorithm", "--dllm-algorithm-config", "--dllm-fdfo", "--download-dir", "--dp-size", "--dsa-decode-backend", "--dsa-paged-mqa-logits-backend", "--dsa-prefill-backend", "--dsa-topk-backend", "--dsa-triton-union", "--dsv4-attn-backend", "--dsv4-prefill-backend", "--dtype", "--dwdp-size", "--dynamic-batch-tokenizer-batch-size", "--dynamic-batch-tokenizer-batch-timeout", "--elastic-ep-backend", "--elastic-ep-initial-size", "--elastic-ep-join-mode", "--elastic-ep-join-rank-offset", "--elastic-ep-scale-timeout", "--enable-adaptive-dispatch-to-encoder", "--enable-aiter-allreduce-fusion", "--enable-amd-monokernel", "--enable-attn-tp-input-scattered", "--enable-broadcast-mm-inputs-process", "--enable-cache-report", "--enable-cp-decode-attn-tp", "--enable-cudagraph-gc", "--enable-custom-logit-processor", "--enable-decoder-swa-bounded-replay", "--enable-deepseek-v4-fp4-indexer", "--enable-dense-mlp-attn-tp", "--enable-deterministic-inference", "--enable-dp-attention", "--enable-dp-attention-local-control-broadcast", "--enable-dp-lm-head", "--enable-draft-weights-cpu-backup", "--enable-dsa-cache-layer-split", "--enable-dsa-fused-indexer", "--enable-dynamic-batch-tokenizer", "--enable-dynamic-chunking", "--enable-elastic-expert-backup", "--enable-encoder-swa-bounded-replay", "--enable-eplb", "--enable-flashinfer-allreduce-fusion", "--enable-flexkv", "--enable-forward-pass-metrics", "--enable-fp32-lm-head", "--enable-fused-moe-sum-all-reduce", "--enable-fused-qk-norm-rope", "--enable-hicache", "--enable-hierarchical-cache", "--enable-hisparse", "--enable-http-worker-reuseport", "--enable-http2", "--enable-int8-mamba-checkpoint", "--enable-kv-cache-sharding", "--enable-layernorm-sp", "--enable-layerwise-nvtx-marker", "--enable-lean-attention", "--enable-linear-replayssm", "--enable-linear-replayssm-spec", "--enable-linker-mla-dedup", "--enable-lmcache", "--enable-lora", "--enable-lora-overlap-loading", "--enable-mamba-cache-stochastic-rounding", "--enable-megamoe-for-layernorm-sp", "--enable-memory-saver", "--enable-metrics", "--enable-metrics-for-all-schedulers", "--enable-mfu-metrics", "--enable-mis", "--enable-mixed-chunk", "--enable-mm-global-cache", "--enable-mscclpp", "--enable-multi-layer-eagle", "--enable-multimodal", "--enable-nccl-nvls", "--enable-nvidia-megakernel", "--enable-p2p-check", "--enable-page-major-kv-layout", "--enable-paged-experts", "--enable-pd-role-switch", "--enable-pdmux", "--enable-precise-embedding-interpolation", "--enable-prefill-cp", "--enable-prefill-delayer", "--enable-prefix-mm-cache", "--enable-priority-scheduling", "--enable-profile-cuda-graph", "--enable-quant-communications", "--enable-request-time-stats-logging", "--enable-response-store", "--enable-return-aux-hidden-states", "--enable-return-hidden-states", "--enable-return-indexer-topk", "--enable-return-routed-experts", "--enable-scattered-sconv", "--enable-session-radix-cache", "--enable-shared-experts-attn-tp", "--enable-single-batch-overlap", "--enable-ssl-refresh", "--enable-streaming-session", "--enable-strict-thinking", "--enable-symm-mem", "--enable-tf32-matmul", "--enable-tokenizer-batch-encode", "--enable-torch-compile", "--enable-torch-compile-debug-mode", "--enable-torch-symm-mem", "--enable-tp-lm-head-all-to-all", "--enable-trace", "--enable-two-batch-overlap", "--enable-unified-cache-external-linker", "--enable-unified-memory", "--enable-w4a4-mxfp4-megamoe", "--enable-waterfill", "--enable-watermark", "--enable-weights-cpu-backup", "--encoder-bootstrap-port", "--encoder-only", "--encoder-register-urls", "--encoder-transfer-backend", "--encoder-urls", "--enforce-disable-flashinfer-allreduce-fusion", "--enforce-shared-experts-fusion", "--engine-info-bootstrap-port", "--ep", "--ep-dispatch-algorithm", "--ep-num-redundant-experts", "--ep-size", "--eplb-algorithm", "--eplb-min-rebalancing-utilization-threshold", "--eplb-rebalance-layers-per-chunk", "--eplb-rebalance-num-iterations", "--expert-balancedness-report-mode", "--expert-distribution-recorder-buffer-size", "--expert-distribution-recorder-mode", "--expert-parallel-size", "--experts-shared-outer-loras", "--export-metrics-to-file", "--export-metrics-to-file-dir", "--extra-metric-labels", "--fastapi-root-path", "--file-storage-path", "--flashinfer-a2a-dispatch-type", "--flashinfer-allreduce-fusion-backend", "--flashinfer-autotune-skip-ops", "--flashinfer-mla-disable-ragged", "--flashinfer-mxfp4-moe-precision", "--flexkv-config-file", "--forward-hooks", "--forward-pass-metrics-ipc-name", "--forward-pass-metrics-worker-id", "--fp4-gemm-backend", "--fp8-gemm-backend", "--fuseep-mode", "--gated-launch-port", "--gc-threshold", "--gc-warning-threshold-secs", "--generation-tokens-buckets", "--gpu-id-step", "--grammar-backend", "--grpc-http-sidecar-port", "--grpc-mode", "--grpc-port", "--grpc-response-timeout-secs", "--hf-chat-template-name", "--hicache-host-memory-fraction", "--hicache-host-memory-mode", "--hicache-io-backend", "--hicache-mem-layout", "--hicache-ratio", "--hicache-size", "--hicache-storage-backend", "--hicache-storage-backend-extra-config", "--hicache-storage-prefetch-policy", "--hicache-storage-prefetch-retry-max-attempts", "--hicache-storage-prefetch-retry-poll-interval", "--hicache-write-policy", "--hierarchical-sparse-attention-extra-config", "--hisparse-config", "--host", "--http2-initial-connection-window-size", "--http2-max-concurrent-streams", "--image-processor-backend", "--incremental-streaming-output", "--init-expert-location", "--int8-mamba-ckpt-size", "--is-embedding", "--json-model-override-args", "--kt-cpuinfer", "--kt-max-deferred-experts-per-token", "--kt-method", "--kt-num-gpu-experts", "--kt-threadpool-count", "--kt-weight-path", "--kv-cache-dtype", "--kv-canary", "--kv-canary-real-data", "--kv-canary-sweep-interval", "--kv-events-config", "--language-model-only", "--language-only", "--limit-mm-data-per-request", "--linear-attn-backend", "--linear-attn-decode-backend", "--linear-attn-prefill-backend", "--linear-attn-verify-backend", "--linear-replayssm-cache-len", "--lmcache-config-file", "--load-balance-method", "--load-format", "--load-publish-endpoint", "--load-snapshot-publish-interval", "--log-level", "--log-level-http", "--log-requests", "--log-requests-format", "--log-requests-level", "--log-requests-target", "--lora-backend", "--lora-drain-wait-threshold", "--lora-eviction-policy", "--lora-paths", "--lora-strict-loading", "--lora-target-modules", "--lora-use-virtual-experts", "--mamba-backend", "--mamba-cache-philox-rounds", "--mamba-full-memory-ratio", "--mamba-max-states-per-path", "--mamba-radix-cache-strategy", "--mamba-ssm-dtype", "--mamba-track-interval", "--max-ep-size", "--max-loaded-loras", "--max-lora-chunk-size", "--max-lora-rank", "--max-loras-per-batch", "--max-mamba-cache-size", "--max-prefill-tokens", "--max-queued-requests", "--max-running-requests", "--max-total-tokens", "--media-url-max-file-size-mb", "--mem-fraction-static", "--min-free-slots-delay", "--mlx-enable-sampling", "--mm-attention-backend", "--mm-enable-dp-encoder", "--mm-feature-transport", "--mm-global-cache-backend", "--mm-io-worker-num", "--mm-preprocess-cache-size-mb", "--mm-process-config", "--mm-processor-worker-num", "--model", "--model-checksum", "--model-config-parser", "--model-impl", "--model-loader-extra-config", "--model-path", "--modelexpress-config", "--modelopt-checkpoint-restore-path", "--modelopt-checkpoint-save-path", "--modelopt-export-path", "--modelopt-quant", "--moe-a2a-backend", "--moe-data-parallel-size", "--moe-dense-tp-size", "--moe-dp-size", "--moe-runner-backend", "--monokernel-backend", "--mooncake-ib-device", "--msprobe-dump-config", "--nccl-init-addr", "--nccl-port", "--nnodes", "--node-rank", "--num-continuous-decode-steps", "--num-reserved-decode-tokens", "--numa-node", "--offload-group-size", "--offload-mode", "--offload-num-in-group", "--offload-prefetch-step", "--optimistic-prefill-attempts", "--otlp-service-name", "--otlp-traces-endpoint", "--page-size", "--paged-experts-num-resident", "--pdmux-config-path", "--pipeline-parallel-size", "--ple-offload-backend", "--ple-offload-dir", "--ple-offload-embedding", "--port", "--pp-async-batch-depth", "--pp-max-micro-batch-size", "--pp-size", "--pre-warm-nccl", "--preferred-sampling-params", "--prefill-attention-backend", "--prefill-decode-interval", "--prefill-decode-interval-min-bs", "--prefill-delayer-forward-passes-buckets", "--prefill-delayer-max-delay-ms", "--prefill-delayer-max-delay-passes", "--prefill-delayer-queue-min-ratio", "--prefill-delayer-token-usage-low-watermark", "--prefill-delayer-wait-seconds-buckets", "--prefill-kv-cache-dequant-dtype", "--prefill-max-requests", "--prefill-only-disable-kv-cache", "--priority-scheduling-preemption-threshold", "--prompt-tokens-buckets", "--qsa-indexer-dtype", "--quantization", "--quantization-param-path", "--quantize-and-serve", "--radix-cache-backend", "--radix-eviction-policy", "--radix-eviction-policy-config", "--random-seed", "--reasoning-parser", "--remote-instance-weight-loader-backend", "--remote-instance-weight-loader-seed-instance-ip", "--remote-instance-weight-loader-seed-instance-service-port", "--remote-instance-weight-loader-send-weights-group-ports", "--remote-instance-weight-loader-start-seed-via-transfer-engine", "--retraction-policy", "--return-aux-hidden-state-layer-ids", "--return-hidden-states-mode", "--return-input-ids", "--return-output-ids", "--revision", "--rl-on-policy-target", "--rl-quant-profile", "--sampling-backend", "--sampling-defaults", "--sampling-mask-max-tokens", "--schedule-conservativeness", "--schedule-low-priority-values-first", "--schedule-policy", "--scheduler-recv-interval", "--served-model-name", "--shared-experts-tp-size", "--show-time-cost", "--sidecar", "--sidecar-args", "--skip-server-warmup", "--skip-tokenizer-init", "--sleep-on-idle", "--sm-group-num", "--smg-grpc-mode", "--smg-http-sidecar-port", "--soft-watchdog-timeout", "--spec-trace-dir", "--speculative-accept-threshold-acc", "--speculative-accept-threshold-single", "--speculative-adaptive", "--speculative-adaptive-config", "--speculative-algorithm", "--speculative-attention-mode", "--speculative-dflash-block-size", "--speculative-domino-candidate-pool-size", "--speculative-draft-attention-backend", "--speculative-draft-kv-cache-dtype", "--speculative-draft-load-format", "--speculative-draft-model", "--speculative-draft-model-path", "--speculative-draft-model-quantization", "--speculative-draft-model-revision", "--speculative-draft-sink-size", "--speculative-draft-window-size", "--speculative-dsa-topk-backend", "--speculative-dspark-align-verify-tokens-to-graph-tier", "--speculative-dspark-block-size", "--speculative-dspark-confidence-sts-path", "--speculative-dspark-sps-table-path", "--speculative-eagle-topk", "--speculative-enable-w4a4-mxfp4-megamoe", "--speculative-moe-a2a-backend", "--speculative-moe-runner-backend", "--speculative-ngram-capacity", "--speculative-ngram-external-corpus-max-tokens", "--speculative-ngram-external-corpus-path", "--speculative-ngram-external-sam-budget", "--speculative-ngram-match-type", "--speculative-ngram-max-bfs-breadth", "--speculative-ngram-max-trie-depth", "--speculative-ngram-min-bfs-breadth", "--speculative-num-draft-tokens", "--speculative-num-steps", "--speculative-token-map", "--speculative-use-block-verification", "--speculative-use-rejection-sampling", "--ssl-ca-certs", "--ssl-certfile", "--ssl-keyfile", "--ssl-keyfile-password", "--startup-weight-load-mode", "--stream-interval", "--stream-response-default-include-usage", "--strip-thinking-cache", "--swa-full-tokens-ratio", "--swa-prefix-tails", "--tbo-token-distribution-threshold", "--tensor-parallel-size", "--tokenizer-backend", "--tokenizer-metrics-allowed-custom-labels", "--tokenizer-metrics-custom-labels-header", "--tokenizer-mode", "--tokenizer-path", "--tokenizer-worker-num", "--tool-call-parser", "--tool-server", "--torch-compile-max-bs", "--tp-size", "--trace-modules", "--triton-attention-num-kv-splits", "--triton-attention-reduce-in-fp32", "--triton-attention-split-tile-size", "--trust-mm-content-hashes", "--trust-remote-code", "--trust-request-chat-template", "--unified-cache-external-linker-backend", "--unified-cache-external-linker-config", "--uno-lora-path", "--use-ray", "--uvicorn-access-log-exclude-prefixes", "--warmups", "--watchdog-timeout", "--watermark-config", "--weight-cache-mode", "--weight-cache-socket", "--weight-cache-timeout", "--weight-loader-disable-mmap", "--weight-loader-drop-cache-after-load", "--weight-loader-prefetch-checkpoints", "--weight-loader-prefetch-num-threads", "--weight-version"]
)

OPTION_STRINGS: dict[str, frozenset[str]] = {
    "vllm": VLLM_OPTION_STRINGS,
    "sglang": SGLANG_OPTION_STRINGS,
}
FLAGS: dict[str, dict[str, Flag]] = {
    "vllm": {n: f for f in VLLM_FLAGS for n in f.names},
    "sglang": {n: f for f in SGLANG_FLAGS for n in f.names},
}
# Flags whose presence alone (args with no launcher) says which engine reads them.
ENGINE_ONLY_FLAGS: dict[str, frozenset[str]] = {
    "vllm": frozenset(FLAGS["vllm"]) - frozenset(FLAGS["sglang"]) - {"-q", "-ep"},
    "sglang": frozenset(FLAGS["sglang"]) - frozenset(FLAGS["vllm"]),
}


@dataclass(frozen=True)
class Resolved:
    """What argparse makes of one option string: the option it names, or why it refuses it."""

    option: str | None  # the full option string argparse picks, None when unknown/ambiguous
    flag: Flag | None  # the tpcheck table row, None when tpcheck does not read the option
    error: str | None = None  # the engine's own refusal (ambiguous prefix)


def normalize(engine: str, option: str) -> str:
    """vLLM reads ``--max_num_seqs`` as ``--max-num-seqs``; SGLang takes names as written."""
    if engine == "vllm" and option.startswith("--"):
        head, dot, tail = option[2:].partition(".")
        return "--" + head.replace("_", "-") + dot + tail
    return option


def resolve(engine: str, option: str) -> Resolved:
    """Resolve an option string (no ``=value``) the way the engine's argparse would."""
    opt = normalize(engine, option)
    known = OPTION_STRINGS[engine]
    table = FLAGS[engine]
    if opt in known or opt in table:
        return Resolved(opt, table.get(opt))
    if not opt.startswith("--") or len(opt) < 3:
        return Resolved(None, None)
    matches = sorted(o for o in known if o.startswith(opt))
    if len(matches) == 1:
        return Resolved(matches[0], table.get(matches[0]))
    if len(matches) > 1:
        shown = ", ".join(matches)
        return Resolved(
            None, None, f"ambiguous option: {option} could match {shown}"
        )
    return Resolved(None, None)
