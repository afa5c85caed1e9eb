"""``--format markdown`` and ``--summary-file``: the counts by rule, every finding with its
headline, the input errors; text from the files stays text (escaped), on one line."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from tests.shared import chdir
from tpcheck.cli import main
from tpcheck.report.markdown import escape

ROOT = Path(__file__).resolve().parents[2]
TP16 = (ROOT / "fixtures" / "lint" / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8")
LLAMA_TP6 = ("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6 "
             "--max-model-len 8192\n")


def run_in(folder: Path, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with chdir(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--offline", "--gpu", "h100-sxm", *args])
    return code, out.getvalue(), err.getvalue()


def table(text: str, header: str) -> list[list[str]]:
    """The rows of the table under ``header``, cells split on unescaped pipes."""
    lines = text.splitlines()
    start = lines.index(header) + 2
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        cells, cur, i = [], "", 1
        while i < len(ln) - 1:
            if ln[i] == "\\":
                cur += ln[i:i + 2]
                i += 2
                continue
            if ln[i] == "|":
                cells.append(cur.strip())
                cur = ""
            else:
                cur += ln[i]
            i += 1
        cells.append(cur.strip())
        rows.append(cells)
    return rows


def test_counts_by_rule_and_every_finding_with_its_headline(tmp_path: Path) -> None:
    (tmp_path / "qwen.yaml").write_text(TP16, encoding="utf-8")
    for i in range(3):
        (tmp_path / f"llama{i}.sh").write_text(LLAMA_TP6, encoding="utf-8")
    code, md, _ = run_in(tmp_path, ["--format", "markdown", "."])
    _, js, _ = run_in(tmp_path, ["--format", "json", "."])
    findings = json.loads(js)["findings"]
    assert code == 1
    # Llama-3.1-70B at t = 6: h = 64, h_kv = 8 and f = 28,672 are none divisible by 6 (TP101,
    # TP102, TP103) in each of 3 scripts; Qwen3-32B at t = 16 > h_kv = 8: TP201, and 16 GPUs
    # in a pod whose node type has 8: TP402. 3·3 + 2 = 11 findings, the JSON's own count.
    assert len(findings) == 11
    assert md.splitlines()[0] == "### tpcheck: 11 findings in 4 deployments (4 files read)"
    counts = {r[0]: int(r[3]) for r in table(md, "| rule | name | severity | findings |")}
    assert counts == {"TP101": 3, "TP102": 3, "TP103": 3, "TP201": 1, "TP402": 1}
    rows = table(md, "| where | rule | headline |")
    # paths as the annotations name them: repository-relative, no ./
    assert [(r[0], r[1].split()[0]) for r in rows] == [
        (escape(f"{f['path'].removeprefix('./')}:{f['line']}:{f['column']}"), f["code"])
        for f in findings]
    assert [r[2] for r in rows] == [escape(f["message"]) for f in findings]


def test_file_text_is_escaped_and_stays_in_its_cell(tmp_path: Path) -> None:
    name = "a|b <i>x.sh"
    (tmp_path / name).write_text(LLAMA_TP6, encoding="utf-8")
    _, md, _ = run_in(tmp_path, ["--format", "markdown", "--select", "TP101", name])
    (row,) = table(md, "| where | rule | headline |")
    assert row[0].startswith("a\\|b \\<i>x.sh:1:")
    assert "<i>" not in md.replace("\\<i>", "")


def test_no_findings_and_input_errors(tmp_path: Path) -> None:
    (tmp_path / "ok.sh").write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8\n",
                                    encoding="utf-8")
    (tmp_path / "bad.yaml").write_bytes(b"a: [\xff\n")
    code, md, _ = run_in(tmp_path, ["--format", "markdown", "--select", "TP1", "."])
    assert code == 2
    assert md.splitlines()[0] == "### tpcheck: 0 findings in 1 deployment (2 files read)"
    assert "**1 input error** (exit 2):" in md
    assert "- bad.yaml:1:1: not UTF-8 text" in md


def test_summary_file_is_appended_from_the_same_run(tmp_path: Path) -> None:
    (tmp_path / "qwen.yaml").write_text(TP16, encoding="utf-8")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    code, out, _ = run_in(tmp_path, ["--format", "github", "--summary-file", str(summary),
                                     "qwen.yaml"])
    _, md, _ = run_in(tmp_path, ["--format", "markdown", "qwen.yaml"])
    assert code == 1 and out.startswith("::")
    assert summary.read_text(encoding="utf-8") == "earlier step\n" + md + "\n"
    code, _, err = run_in(tmp_path, ["--summary-file", str(tmp_path / "no" / "s.md"),
                                     "qwen.yaml"])
    assert code == 2 and "cannot write the summary to" in err


def test_unused_suppressions_are_listed_when_asked_for(tmp_path: Path) -> None:
    (tmp_path / "ok.sh").write_text("# tpcheck: ignore[TP201]\n"
                                    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8\n",
                                    encoding="utf-8")
    code, md, _ = run_in(tmp_path, ["--format", "markdown", "--report-unused-ignores", "ok.sh"])
    # TP 8 = h_kv on 8 H100s: no TP201 to suppress, so the comment on line 1 is unused
    assert code == 0
    assert "**1 unused suppression**:" in md
    assert "- ok.sh:1: # tpcheck: ignore\\[TP201\\]" in md  # brackets escaped: not a link
