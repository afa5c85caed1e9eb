"""How long the Language Server takes to re-diagnose a 200-line manifest after an edit (warm).

Measures what the server does per (debounced) change, in-process: ``DocumentLinter.lint`` on the
new text (settings lookup, read, rules) and the conversion of its findings into LSP diagnostics.
The JSON-RPC write is left out. Each run edits the TP value (16 ↔ 8), so nothing is a cache hit
on the text itself; the model shape and resolver stay warm, as they do in an editor session.

    python bench/lsp_bench.py [-n 200] [--lines 200] [--default-gc]

Target (issue 7): median under 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen3-32b
  labels:
    app: qwen3-32b
spec:
  replicas: 1
  selector:
    matchLabels:
      app: qwen3-32b
  template:
    metadata:
      labels:
        app: qwen3-32b
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: ["vllm", "serve"]
          args:
            - Qwen/Qwen3-32B
            - --tensor-parallel-size
            - "{tp}"
            - --max-model-len
            - "32768"
          ports:
            - containerPort: 8000
          resources:
            limits:
              nvidia.com/gpu: "{tp}"
"""


def manifest(lines: int, tp: int) -> str:
    """The deployment, a Service and a ConfigMap padded to ``lines`` lines."""
    head = DEPLOYMENT.format(tp=tp) + (
        "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: qwen3-32b\nspec:\n"
        "  selector:\n    app: qwen3-32b\n  ports:\n    - port: 80\n      targetPort: 8000\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: qwen3-32b-prompts\ndata:\n")
    have = head.count("\n")
    pad = "".join(f"  prompt-{i:03d}: \"You are assistant number {i}.\"\n"
                  for i in range(max(lines - have, 0)))
    return head + pad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=200, help="timed runs")
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--default-gc", action="store_true",
                    help="keep Python's GC thresholds (the server tunes them as the CLI does)")
    args = ap.parse_args()
    if not args.default_gc:
        from tpcheck.lsp.server import tune_gc

        tune_gc()

    from tpcheck.lsp import convert
    from tpcheck.lsp.engine import DocumentLinter, EditorConfig

    texts = [manifest(args.lines, 16), manifest(args.lines, 8)]
    assert texts[0].count("\n") == args.lines, texts[0].count("\n")
    linter = DocumentLinter()
    config = EditorConfig(gpu="h100-sxm")
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "deploy.yaml")  # never written: the server lints the editor's text

        def once(i: int) -> tuple[float, int]:
            text = texts[i % 2]
            t0 = time.perf_counter()
            result = linter.lint(path, text, language_id="yaml", config=config)
            lines = convert.split_lines(text)
            diags = [convert.diagnostic(f, lines, "file:///x", result.name)
                     for f in result.findings]
            diags += [convert.error_diagnostic(e, lines, result.name) for e in result.errors]
            return (time.perf_counter() - t0) * 1000, len(diags)

        t_cold, _ = once(0)
        for i in range(args.warmup):
            once(i)
        runs = [once(i) for i in range(args.n)]
    ms = sorted(t for t, _ in runs)
    codes = {n for _, n in runs}
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    print(f"re-diagnose {args.lines}-line manifest after an edit (TP 16 <-> 8), warm, "
          f"n={args.n}: median {statistics.median(ms):.2f} ms, p90 {p90:.2f} ms, "
          f"min {ms[0]:.2f} ms, max {ms[-1]:.2f} ms; first (cold) {t_cold:.1f} ms; "
          f"diagnostics per run {sorted(codes)}")


if __name__ == "__main__":
    main()
