"""TP000 model-unresolved: a warning at the model reference saying what was tried; the
`models pull` hint only for what pull can fetch (a hub id, not a local path) in a file (not
stdin); quiet when the model resolves (catalog or --model-config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Severity
from tpcheck.settings import Settings

PULL = ("`tpcheck models pull` on this file, run once online, fetches and maps it for offline "
        "runs")
SKIPPED = "rules that need the model's shape were skipped for this deployment"


@pytest.mark.parametrize(("model", "name", "tried", "pull"), [
    ("acme-ai/support-llama-70b-ft", "run.sh",
     "no config.json for acme-ai/support-llama-70b-ft offline (tried local folders, HF cache, "
     "bundled catalog)", True),
    ("/models/llama", "run.sh",
     "/models/llama: no such local folder with config.json and not a hub id", False),
    # stdin: there is no file for `models pull` to read
    ("acme-ai/support-llama-70b-ft", "-", "no config.json for acme-ai/support-llama-70b-ft", False),
])
def test_fires_at_the_model(model: str, name: str, tried: str, pull: bool) -> None:
    text = f"vllm serve {model} --tensor-parallel-size 4"
    f = only(lint_text(text, name=name), "TP000")
    assert f.severity == Severity.WARNING
    # "vllm serve " is 11 characters: the model starts at column 12
    assert (f.span.line, f.span.column, f.span.end_column) == (1, 12, 12 + len(model))
    assert tried in f.text  # the headline names the model, the evidence what was tried
    assert SKIPPED in f.text
    assert (PULL in f.text) == pull
    assert f.formulas == ()
    assert (f.fix or "").startswith("run `tpcheck models pull PATH...` once online")
    # nothing else could be said without the shape: TP101-TP205 were skipped
    assert {x.code for x in lint_text(text, name=name)} == {"TP000"}


def test_quiet_when_the_model_resolves() -> None:
    assert [f for f in lint_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8")
            if f.code == "TP000"] == []
    config = (Path(__file__).resolve().parents[2] / "tpcheck" / "models" / "catalog"
              / "meta-llama--Llama-3.1-70B-Instruct" / "config.json")
    settings = Settings(offline=True, model_config=str(config))
    found = lint_text("vllm serve acme-ai/support-llama-70b-ft --tensor-parallel-size 4",
                      settings=settings)
    assert "TP000" not in {f.code for f in found}
