"""Rows 48-58 of fixtures/observations/vllm-startup.jsonl (issue 32, second collection):
published start-ups at t = 1-8 on A100 40/80 GB, L40S and H100, vLLM 0.10.1.1-0.12, with the
assumptions each needs. The logged figures are read from the fixture, never restated here."""

from __future__ import annotations

from .calibration_case import Case

DENNIS = ("the log's banner 'vLLM API server version 0.10.1.1' and 'Initializing a V1 LLM "
          "engine (v0.10.1.1)'")
ROETHIG = "the page's 'vllm --version' (0.10.2) and the log's 'vLLM API server version 0.10.2'"
LLMD_B = ("the write-up of rows 21-24 (same image tag vllm/vllm-openai:latest, pod template and "
          "H100 node): their release, 0.12.0 (see those rows' release_evidence)")
NATIVE = "the log: 'FlashInfer is not available. Falling back to the PyTorch-native implementation'"

CASES_B: dict[int, Case] = {
    48: Case("Qwen/Qwen2-7B-Instruct", "a100-80gb", "0.10.1.1", why_version=DENNIS,
             note="A100 80GB memory not logged: the catalog's 79.32 GiB; custom all-reduce off "
                  "(no P2P); FlashInfer sampler (logged)"),
    49: Case("Qwen/Qwen2-7B-Instruct", "a100-80gb", "0.10.1.1", why_version=DENNIS,
             note="as row 48 at gpu_memory_utilization 0.25"),
    50: Case("Qwen/Qwen2-7B-Instruct", "a100-40gb", "0.10.1.1", why_version=DENNIS,
             sampler="sort", note=f"two nodes over Ray; sort sampler per {NATIVE}"),
    51: Case("Qwen/Qwen2-7B-Instruct", "a100-80gb", "0.10.1.1", why_version=DENNIS,
             note="t = 1 at gpu_memory_utilization 0.25 (a 5 GiB pool)"),
    52: Case("Qwen/Qwen2-7B-Instruct", "a100-80gb", "0.10.1.1", why_version=DENNIS,
             note="t = 1 at gpu_memory_utilization 0.5"),
    53: Case("openai/gpt-oss-120b", "a100-80gb", "0.10.1.1", why_version=DENNIS,
             note="hybrid sliding-window model; Marlin MXFP4 experts on Ampere, each rank's "
                  "720-wide slice padded to 768 (physics.weights.mxfp4_padding)"),
    54: Case("meta-llama/Llama-3.3-70B-Instruct", "h100-sxm", "0.12.0", why_version=LLMD_B,
             quantization="fp8",
             note="RedHatAI's FP8-dynamic checkpoint: FP8 linear layers (per-channel scales), "
                  "bf16 embedding and head, as --quantization fp8 on the bf16 config"),
    55: Case("Qwen/Qwen3-32B", "h100-sxm", "0.12.0", why_version=LLMD_B),
    56: Case("Qwen/Qwen3-32B", "h100-sxm", "0.12.0", why_version=LLMD_B),
    57: Case("Qwen/Qwen3-235B-A22B-FP8", "l40s", "0.10.2", why_version=ROETHIG, sampler="sort",
             note=f"the Instruct-2507 checkpoint has this shape; EP over 8 ranks; {NATIVE}"),
    58: Case("Qwen/Qwen3-30B-A3B-FP8", "l40s", "0.10.2", why_version=ROETHIG, sampler="sort",
             note="the Instruct-2507 checkpoint has this shape; L40S memory 44.42 GiB as the "
                  "same author's 8 × L40S log prints; sort sampler assumed: this page quotes no "
                  "sampler line and the same author's setup (same /workspace/.venv, same day) "
                  "logs the fallback"),
}

EXCLUDED_B: dict[int, str] = {}
