"""Issue 18: one mistake, one screen. TP 6 on Qwen3-32B (h = 64, h_kv = 8, f = 25,600,
V = 151,936) is refused four ways on the same token; the text report says the refusal, the
legal sizes and the fix once, then each other code's own reason in one line. JSON and SARIF
keep every finding whole."""

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
    lines = render_text(res).splitlines()
    # head + formula + fix, then one line each for TP102-104, then the summary: 7, not 13
    assert len(lines) == 7, lines
    assert lines[0].startswith(f"{p}:1:50: TP101 [error] vllm refuses tensor parallel size 6")
    assert lines[0].endswith("Legal sizes for this model: 1, 2, 4, 8, 16, 32, 64")
    assert lines[2] == "    fix: use tensor parallel size 4 or 8"
    # each other code: its own formula and engine message, nothing repeated
    assert lines[3].startswith("  + TP102 [error] h_kv mod t = 2 (h_kv=8, t=6). The engine says:")
    assert lines[4] == ('  + TP103 [error] f mod t = 4 (f=25,600, t=6). The engine says: '
                        '"AssertionError: 25600 is not divisible by 6".')
    assert lines[5].startswith("  + TP104 [error] V_pad mod t = 4 (V_pad=151,936, t=6).")
    assert sum("Legal sizes" in ln for ln in lines) == 1
    assert sum("fix:" in ln for ln in lines) == 1
    # machine formats keep all four whole
    for f in res.findings:
        assert "Legal sizes for this model" in f.to_json()["message"]  # type: ignore[operator]
    sarif = render_sarif(res)
    assert sarif.count("Legal sizes for this model") >= 4


def test_unrelated_findings_on_one_span_stay_whole(tmp_path: Path) -> None:
    # Llama-3.1-70B at t = 16 on H100: TP201 (past h_kv = 8) and others share the t span but
    # not a statement: each keeps its formulas and fix.
    p = tmp_path / "run.sh"
    p.write_text("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 16 "
                 "--max-model-len 8192\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    text = render_text(res)
    assert "  + " not in text
    assert text.count("    fix: ") == len(res.findings)
