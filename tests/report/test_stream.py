"""Every report written file by file (issue 30): the same bytes as the report rendered at the
end, each file's findings handed over as soon as it is checked, and nothing kept of them but
what the report prints (the tail's counts; markdown's rows)."""

from __future__ import annotations

import gc
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import chdir
from tpcheck.checks.base import Finding, Severity
from tpcheck.lint import Linter, exit_code, run_with_nearest_settings
from tpcheck.report import render
from tpcheck.report.markdown import MAX_ROWS, MarkdownSummary
from tpcheck.report.sarif import KEPT_FILES, SarifWriter
from tpcheck.report.stream import Stream
from tpcheck.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
# every file of fixtures/lint and fixtures/manifests: TP1xx-TP4xx findings, errors and notes
FOLDERS = ("fixtures/lint", "fixtures/manifests")


def _linter_for(_: Path | None) -> Linter:
    return Linter(Settings(offline=True), gpu_flag="h100-sxm")


def _live_findings() -> int:
    gc.collect()
    return sum(type(o) is Finding for o in gc.get_objects())


@pytest.mark.parametrize(("fmt", "style"), [
    ("text", {}), ("text", {"statistics": True}), ("text", {"quiet": True}),
    ("text", {"concise": True}), ("json", {}), ("github", {}), ("sarif", {}),
    ("sarif", {"category": "tpcheck/x/", "scope": "fixtures"}), ("markdown", {}),
])
def test_the_stream_writes_what_the_whole_report_renders(fmt: str, style: dict[str, bool]
                                                         ) -> None:
    with chdir(ROOT):
        whole = run_with_nearest_settings(FOLDERS, _linter_for)
        expected = render(fmt, whole, **style)
        out = io.StringIO()
        stream = Stream(fmt, out.write, **style)
        streamed = run_with_nearest_settings(FOLDERS, _linter_for, sink=stream)
        stream.close(streamed)
    assert len(whole.findings) > 20 and whole.errors  # the comparison has something to say
    assert out.getvalue() == expected
    assert streamed.findings == []  # written and let go
    assert stream.count == len(whole.findings)
    assert exit_code(streamed, "warning", stream.severities) == exit_code(whole, "warning")


def test_each_file_is_handed_over_when_checked_in_path_order() -> None:
    batches: list[list[Finding]] = []
    with chdir(ROOT):
        result = run_with_nearest_settings(FOLDERS, _linter_for, sink=batches.append)
    paths = [{f.span.path for f in b} for b in batches if b]
    assert all(len(p) == 1 for p in paths)  # one file's findings per batch
    order = [p.pop() for p in paths]
    assert order == sorted(order) and len(order) == len(set(order)) > 5
    assert result.files == len(batches)  # one call per file read, findings or not


def test_an_empty_run_is_still_a_whole_document() -> None:
    out = io.StringIO()
    stream = Stream("json", out.write)
    with chdir(ROOT):  # `nvidia-smi topo -m` captures (.txt): no file a lint reads
        result = run_with_nearest_settings(["fixtures/topology"], _linter_for, sink=stream)
    stream.close(result)
    assert result.files == 0 and stream.count == 0 and not stream.severities
    assert out.getvalue() == render("json", result) == (
        '{\n  "findings": [],\n  "errors": [],\n  "summary": '
        '{"files": 0, "deployments": 0, "suppressed": 0}\n}\n')
    assert exit_code(result, "info", stream.severities) == 0
    assert exit_code(result, "info", {Severity.INFO}) == 1  # a finding already written counts


def test_the_command_streams_and_exits_as_before() -> None:
    """The console path: same output as the rendered report, exit code 1 for the warnings."""
    p = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm",
                        "--format", "github", "fixtures/lint"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120, check=False)
    with chdir(ROOT):
        whole = run_with_nearest_settings(["fixtures/lint"], _linter_for)
    assert p.stdout == render("github", whole)
    assert p.returncode == exit_code(whole, "warning") == 1


@pytest.mark.parametrize("fmt", ["sarif", "markdown"])
def test_sarif_and_markdown_keep_no_finding_nor_every_file(fmt: str) -> None:
    """A 10,000-file run took 1.09 GB under --format sarif (every finding and every file's
    lines kept to the end); each result is now written as its file is checked."""
    out = io.StringIO()
    with chdir(ROOT):
        before = _live_findings()
        stream = Stream(fmt, out.write)
        sides = [SarifWriter(io.StringIO().write), MarkdownSummary()]
        for side in sides:
            stream.also(side)
        result = run_with_nearest_settings(FOLDERS, _linter_for, sink=stream)
        kept = _live_findings() - before
        stream.close(result)
    assert stream.count > 20 and kept == 0
    for writer in (stream.sarif, sides[0]):
        if writer is not None:  # the last few files' lines, for columns and snippets
            assert 0 < len(writer.src._lines) <= KEPT_FILES
    assert sides[1].count == stream.count and len(sides[1].rows) == min(stream.count, MAX_ROWS)


def test_the_side_reports_are_the_formats_own_bytes(tmp_path: Path) -> None:
    """--sarif-file and --summary-file, fed from the text run's findings, hold what --format
    sarif and --format markdown print; the summary is appended (a shared job summary)."""
    sarif, summary = tmp_path / "out.sarif", tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")

    def tpcheck(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm",
                               *args, *FOLDERS], capture_output=True, text=True, cwd=ROOT,
                              timeout=120, check=False)

    side = tpcheck("-q", "--sarif-file", str(sarif), "--summary-file", str(summary))
    alone = {fmt: tpcheck("--format", fmt) for fmt in ("sarif", "markdown")}
    assert side.returncode == alone["sarif"].returncode == 2  # fixtures/lint has input errors
    assert sarif.read_text(encoding="utf-8") == alone["sarif"].stdout
    assert summary.read_text(encoding="utf-8") == "earlier step\n" + alone["markdown"].stdout + "\n"


def test_a_sarif_file_that_cannot_be_written_fails_the_run_once(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm", "-q",
                        "--sarif-file", str(tmp_path / "missing" / "out.sarif"),
                        "fixtures/lint"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, check=False)
    assert p.returncode == 2
    said = [ln for ln in p.stderr.splitlines() if "cannot write SARIF" in ln]
    assert len(said) == 1 and said[0].endswith("No such file or directory")
