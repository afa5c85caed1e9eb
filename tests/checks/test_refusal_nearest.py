"""TP101-TP104 keep the legal sizes and their edits on the launch's context: the rules that
refuse one launch say the same sizes, and another launch (its own context) says its own."""

from __future__ import annotations

from tests.checks.rulecase import lint_text, only
from tpcheck.checks.base import Finding


def _said(found: list[Finding]) -> list[tuple[str, str | None, tuple[str, ...]]]:
    return sorted((f.code, f.fix, tuple(e.new_text for e in f.edits))
                  for f in found if f.code.startswith("TP10"))


def test_rules_of_one_launch_share_the_sizes() -> None:
    # Llama-3.1-70B at t = 6: h = 64 mod 6 (TP101) and h_kv = 8 mod 6 (TP102)
    found = lint_text("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6")
    a, b = only(found, "TP101"), only(found, "TP102")
    assert a.fix == b.fix == "use tensor parallel size 4 or 8"
    assert a.edits == b.edits and a.edits
    assert a.notes[1] == b.notes[1]


def test_each_launch_its_own_sizes() -> None:
    one = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6"
    two = "vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 14"
    both = _said(lint_text(f"{one}\n{two}\n"))
    assert both == _said(lint_text(one) + lint_text(two))
    assert {fix for _, fix, _ in both} == {"use tensor parallel size 4 or 8",
                                            "use tensor parallel size 4"}
