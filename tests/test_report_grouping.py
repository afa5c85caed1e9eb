"""Issue 18: one mistake, one screen. TP 6 on Qwen3-32B (h = 64, h_kv = 8, f = 25,600,
V = 151,936) is refused four ways on the same token; the text report says the refusal, the
legal sizes and the fix once, then each other code's headline and its own evidence. JSON and
SARIF keep every finding whole."""

from __future__ import annotations

from pathlib import Path

from tpcheck.lint import Linter
from tpcheck.report.sarif import render_sarif
from tpcheck.report.text import render_text
from tpcheck.settings import Settings


def test_four_refusals_of_one_t_are_one_screen(tmp_path: Path) -> None:
    p = tmp_path / "run.sh"
    p.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6\n")
    res = Linter(Settings(offline=True)).run([str(p)])
    assert [f.code for f in res.findings] == ["TP101", "TP102", "TP103", "TP104"]
    lines = render_text(res, width=80).splitlines()
    # 64 mod 6 = 4: the headline is the verdict with its formula
    assert lines[0] == f"{p}:1:50: TP101 [*] [error] vllm refuses TP 6: h mod t = 4 (h=64, t=6)"
    assert "    fix: use tensor parallel size 4 or 8" in lines
    # each other code: its headline, its engine message and formula, nothing repeated
    plus = [ln for ln in lines if ln.startswith("  + ")]
    assert plus == ["  + TP102 [error] vllm refuses TP 6: h_kv mod t = 2 (h_kv=8, t=6)",
                    "  + TP103 [error] vllm refuses TP 6: f mod t = 4 (f=25,600, t=6)",
                    "  + TP104 [error] vllm refuses TP 6: V_pad mod t = 4 (V_pad=151,936, t=6)"]
    assert '    the engine says: "AssertionError: 25600 is not divisible by 6"' in lines
    assert sum("Legal sizes" in ln for ln in lines) == 1
    assert sum("fix:" in ln for ln in lines) == 1
    assert all(len(ln) <= 80 for ln in lines[1:]), lines
    # machine formats keep all four whole
    for f in res.findings:
        assert any("Legal sizes for this model" in str(e["text"])
                   for e in f.to_json()["evidence"])  # type: ignore[union-attr]
    sarif = render_sarif(res)
    assert sarif.count("Legal sizes for this model") >= 4


def test_concise_is_one_line_per_finding(tmp_path: Path) -> None:
    p = tmp_path / "run.sh"
    p.write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 6\n")
    res = Linter(Settings(offline=True)).run([str(p)])
    lines = render_text(res, concise=True).splitlines()
    assert [ln.split()[1] for ln in lines] == ["TP101", "TP102", "TP103", "TP104"]
    assert all(ln.startswith(f"{p}:1:50: TP10") for ln in lines)


def test_unrelated_findings_on_one_span_stay_whole(tmp_path: Path) -> None:
    # Llama-3.1-70B at t = 16 on H100: TP201 (past h_kv = 8) and others share the t span but
    # not a fix: each keeps its formulas and fix.
    p = tmp_path / "run.sh"
    p.write_text("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 16 "
                 "--max-model-len 8192\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    text = render_text(res)
    assert "  + " not in text
    assert text.count("    fix: ") == len(res.findings)
