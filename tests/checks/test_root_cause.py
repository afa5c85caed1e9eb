"""Root cause first: an option the capacity figures rest on that the engine would not read as
written (TP001 misspelt, TP002 ambiguous, TP003 a bad value) is the finding, and the capacity
rules stay silent for that launch instead of computing with the engine's default in its place
(``--tensor-parallel-sise 8`` would otherwise give a TP204 at t = 1)."""

from __future__ import annotations

import pytest

from tests.checks.rulecase import lint_text
from tpcheck.settings import Settings

# Qwen3-8B at t = 1 on an L4 (22.05 GiB, u = 0.92): 131,072 tokens need 18 GiB of KV cache
# (2·36·8·128·2 = 147,456 B per token), far more than the pool the 16 GB of weights leave.
LONG = "vllm serve Qwen/Qwen3-8B --max-model-len 131072"


def codes(text: str, settings: Settings | None = None) -> list[str]:
    return [f.code for f in lint_text(text, gpu="l4", settings=settings)]


def test_the_default_t_is_what_the_capacity_rule_would_judge() -> None:
    assert "TP204" in codes(LONG)  # t = 1, as the misspelt launch would run


@pytest.mark.parametrize(("option", "code", "meant"), [
    ("--tensor-parallel-sise 8", "TP001", "--tensor-parallel-size"),
    ("--gpu-memory-utilisation 0.9", "TP001", "--gpu-memory-utilization"),
    ("--gpu-memory-utilization 90", "TP003", "--gpu-memory-utilization"),
])
def test_a_capacity_option_the_engine_would_not_read_silences_the_capacity_rules(
        option: str, code: str, meant: str) -> None:
    found = lint_text(f"{LONG} {option}", gpu="l4")
    assert [f.code for f in found] == [code]
    [f] = found
    assert (f"the capacity rules were not run for this deployment: their figures depend on "
            f"{meant}, which the engine would not read as written") in f.notes


def test_an_ambiguous_prefix_of_a_capacity_option_is_a_root_cause() -> None:
    # SGLang 0.5.23: --pp matches --pp-size, --pp-max-micro-batch-size, --pp-async-batch-depth
    found = lint_text("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --pp 2 "
                      "--context-length 131072", gpu="l4")
    assert [f.code for f in found] == ["TP002"]
    assert any("depend on --pp-size" in n for n in found[0].notes)


def test_a_typo_in_another_option_leaves_the_capacity_rules_running() -> None:
    assert codes(f"{LONG} --max-num-seqz 4") == ["TP001", "TP204"]


def test_with_the_option_rules_ignored_the_capacity_rules_speak() -> None:
    # nothing else would say why: the capacity figure at the default is then the finding
    assert codes(f"{LONG} --tensor-parallel-sise 8",
                 Settings(offline=True, ignore=("TP001",))) == ["TP204"]
