"""Step-time calibrations by engine release: which releases each fitted constant holds for.

``physics.step`` fits and applies them; the release ranges and the rows behind them are facts
of the releases measured, so they live here with the other release knowledge.
"""

from __future__ import annotations

from tpcheck.record import record


def release_span(low: tuple[int, int], high: tuple[int, int]) -> str:
    """[low, high) as a reader says it: ``0.5.x`` for one minor, ``0.5–0.7.x`` for several."""
    return (f"{low[0]}.{low[1]}.x" if high == (low[0], low[1] + 1)
            else f"{low[0]}.{low[1]}–{high[0]}.{high[1] - 1}.x")


@record
class Era:
    """One calibration: engine releases [low, high) on one GPU class, and the rows behind it."""

    engine: str
    low: tuple[int, int]
    high: tuple[int, int]
    gpu_class: str
    a: float  # multiplies the memory floor
    c: float  # seconds per layer per step
    k: float  # link peak ÷ achieved all-reduce bandwidth at decode message sizes (1: peak)
    rows: tuple[str, ...]
    source: str

    @property
    def label(self) -> str:
        return f"{self.engine} {release_span(self.low, self.high)} on {self.gpu_class}"


# Lambda's harness says v0.5.4, its files say otherwise (fixtures/observations/README.md).
LAMBDA_DOUBT = ("release in doubt: the result files stream 10 tokens per chunk (itls ≈ 10× "
                "the TPOT), as --num-scheduler-steps 10 does, which vLLM gained in 0.5.5 "
                "(vllm-project/vllm#7000); benchmark_v0.md says v0.5.4")

# Constants from ``fit`` over the rows named; tests/physics/test_step.py refits them.
ERAS: tuple[Era, ...] = (
    Era(
        "vllm", (0, 5), (0, 6), "hopper", a=1.1220, c=59.07e-6, k=1.0,
        rows=("lambda-llama3-70b-h100-tp2", "lambda-llama3-70b-h100-tp4",
              "lambda-llama3-70b-h100-tp8", "lambda-llama3-8b-h100-tp1",
              "lambda-llama3-8b-h100-tp2", "lambda-llama3-8b-h100-tp4",
              "lambda-llama3-8b-h100-tp8", "lambda-mistral7b-h100-tp1",
              "lambda-mistral7b-h100-tp2", "lambda-mistral7b-h100-tp4"),
        source=("LambdaLabsML/vllm-benchmark results/prompt_10 (vLLM 0.5.4, H100 SXM; "
                + LAMBDA_DOUBT + ")"),
    ),
    Era(
        "vllm", (0, 5), (0, 6), "a100", a=1.1982, c=71.87e-6, k=9.82,
        rows=("lambda-llama3-70b-a100-tp2", "lambda-llama3-70b-a100-tp4",
              "lambda-llama3-70b-a100-tp8", "lambda-llama3-8b-a100-tp1",
              "lambda-llama3-8b-a100-tp8"),
        source=("LambdaLabsML/vllm-benchmark results/prompt_10 (vLLM 0.5.4, A100 SXM 80GB; "
                + LAMBDA_DOUBT + ")"),
    ),
    Era(
        "vllm", (0, 7), (0, 8), "a100", a=0.9695, c=161.73e-6, k=25.24,
        rows=("vllm16300-qwq32b-a100-b1-tp2", "vllm16300-qwq32b-a100-b1-tp4",
              "vllm16300-qwq32b-a100-b1-tp8", "vllm16300-qwq32b-a100-b16-tp2",
              "vllm16300-qwq32b-a100-b16-tp4", "vllm16300-qwq32b-a100-b16-tp8"),
        source="vllm-project/vllm#16300 (vLLM 0.7.2, A100 SXM 80GB, benchmark_latency.py)",
    ),
)
