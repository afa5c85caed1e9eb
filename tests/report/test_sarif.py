"""SARIF as code scanning reads it: relative percent-encoded URIs under %SRCROOT%, UTF-16
columns, fingerprints that survive a line move, the fix in the result, unreadable files as
results. Each case runs the real CLI in a temporary checkout (``git init``), offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.shared import SARIF_SCHEMA

# Llama-3.1-70B: h = 64, h_kv = 8, f = 28,672; none is divisible by 6, so TP 6 gets the three
# refusals TP101, TP102 and TP103 on the `6`.
LLAMA_TP6 = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n"


def _tpcheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(cwd / ".hf"), "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def _sarif(cwd: Path, *paths: str) -> dict[str, Any]:
    proc = _tpcheck(cwd, "--format", "sarif", *paths)
    assert proc.returncode in (1, 2), proc.stderr
    assert "Traceback" not in proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    if SARIF_SCHEMA.is_file():
        import jsonschema

        jsonschema.validate(data, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    return data


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_uris_are_relative_to_the_checkout_and_percent_encoded(repo: Path, tmp_path: Path) -> None:
    odd = repo / "deploy dir" / "50%#1"
    odd.mkdir(parents=True)
    (odd / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    run = _sarif(repo / "deploy dir", ".", str(outside / "run.sh"))["runs"][0]
    # The run starts in a subfolder: URIs are still relative to the work tree's root.
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": repo.as_uri() + "/"}}
    locations = {json.dumps(r["locations"][0]["physicalLocation"]["artifactLocation"],
                            sort_keys=True) for r in run["results"]}
    assert locations == {
        # space -> %20, % -> %25, # -> %23
        json.dumps({"uri": "deploy%20dir/50%25%231/run.sh", "uriBaseId": "%SRCROOT%"},
                   sort_keys=True),
        json.dumps({"uri": (outside / "run.sh").as_uri()}, sort_keys=True),
    }


def test_columns_count_utf16_code_units(repo: Path) -> None:
    # One emoji (U+1F680, two UTF-16 code units) before the offending `6`.
    line = "echo 🚀 && vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n"
    (repo / "run.sh").write_text(line, encoding="utf-8")
    run = _sarif(repo, "run.sh")["runs"][0]
    assert run["columnKind"] == "utf16CodeUnits"
    code_points = line.index(" 6\n") + 2  # 1-based column of `6` in code points
    regions = {json.dumps(r["locations"][0]["physicalLocation"]["region"])
               for r in run["results"]}
    assert regions == {json.dumps({"startLine": 1, "startColumn": code_points + 1,
                                   "endLine": 1, "endColumn": code_points + 2})}


def test_fingerprints_survive_a_line_move_and_tell_findings_apart(repo: Path) -> None:
    path = repo / "run.sh"
    path.write_text(LLAMA_TP6, encoding="utf-8")
    before = _sarif(repo, "run.sh")["runs"][0]["results"]
    path.write_text("# moved down by a comment\n\n" + LLAMA_TP6, encoding="utf-8")
    after = _sarif(repo, "run.sh")["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after] == [3] * 3

    def prints(results: list[dict[str, Any]]) -> dict[str, str]:
        return {r["ruleId"]: r["partialFingerprints"]["tpcheck/v1"] for r in results}

    assert prints(before) == prints(after)
    assert len(set(prints(before).values())) == 3  # TP101, TP102, TP103: three alerts
    # A second deployment with the same mistake in the same file is a second alert.
    path.write_text(LLAMA_TP6 + LLAMA_TP6, encoding="utf-8")
    twice = _sarif(repo, "run.sh")["runs"][0]["results"]
    assert len({r["partialFingerprints"]["tpcheck/v1"] for r in twice}) == 6


def test_fix_is_in_the_result(repo: Path) -> None:
    (repo / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    (tp101,) = [r for r in _sarif(repo, "run.sh")["runs"][0]["results"] if r["ruleId"] == "TP101"]
    assert "**Fix:**" in tp101["message"]["markdown"]
    assert "\nFix: " in tp101["message"]["text"]
    edits = {c["replacements"][0]["insertedContent"]["text"]
             for f in tp101.get("fixes", []) for c in f["artifactChanges"]}
    # The legal sizes below 6 for h = 64, h_kv = 8, f = 28,672: 4 and 8 both divide all three.
    assert edits and edits <= {"1", "2", "4", "8"}


def test_an_unreadable_file_is_a_result_under_tp900(repo: Path) -> None:
    (repo / "bad.yaml").write_text("a: [1, 2\n", encoding="utf-8")
    (repo / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    run = _sarif(repo, ".")["runs"][0]
    (bad,) = [r for r in run["results"] if r["ruleId"] == "TP900"]
    assert bad["level"] == "error"
    assert bad["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad.yaml"
    assert run["tool"]["driver"]["rules"][bad["ruleIndex"]]["id"] == "TP900"
    assert sorted(r["ruleId"] for r in run["results"]) == ["TP101", "TP102", "TP103", "TP900"]


def test_sarif_file_is_a_side_output_of_the_same_run(repo: Path) -> None:
    (repo / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    (repo / "bad.yaml").write_text("a: [1, 2\n", encoding="utf-8")
    proc = _tpcheck(repo, "--format", "github", "--sarif-file", "out.sarif", ".")
    assert proc.returncode == 2  # the unreadable file; annotations and SARIF are still written
    # TP101, TP102, TP103 on run.sh and the parse error of bad.yaml
    assert sum(line.startswith("::error ") for line in proc.stdout.splitlines()) == 4
    results = json.loads((repo / "out.sarif").read_text(encoding="utf-8"))["runs"][0]["results"]
    assert len(results) == 4


def test_an_unwritable_sarif_file_fails_loudly(repo: Path) -> None:
    (repo / "run.sh").write_text("vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 8\n",
                                 encoding="utf-8")
    proc = _tpcheck(repo, "--sarif-file", "no/such/dir/out.sarif", "run.sh")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "tpcheck: cannot write SARIF to no/such/dir/out.sarif: No such file or directory"]


# ---- code scanning's ingestion rules (issue 36) and hostile names (issue 28 item 7) ----------

def test_a_file_name_that_is_not_utf8_keeps_every_result(repo: Path) -> None:
    name = os.fsdecode(b"x\xff.sh")  # legal on Linux; held as a surrogate by surrogateescape
    (repo / name).write_text(LLAMA_TP6, encoding="utf-8")
    (repo / "ok.sh").write_text(LLAMA_TP6, encoding="utf-8")
    run = _sarif(repo, ".")["runs"][0]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in run["results"]]
    # TP101, TP102 and TP103 on each file; the odd name's byte 0xFF percent-encoded
    assert sorted(uris) == ["ok.sh"] * 3 + ["x%FF.sh"] * 3
    assert os.fsdecode(bytes.fromhex("78ff2e7368")) == name


def test_rules_carry_their_family_tag_and_a_precision(repo: Path) -> None:
    (repo / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    rules = _sarif(repo, "run.sh")["runs"][0]["tool"]["driver"]["rules"]
    tags = {r["id"]: (r["properties"]["tags"], r["properties"]["precision"]) for r in rules}
    assert tags["TP001"] == (["command-line"], "very-high")
    assert tags["TP101"] == (["legality"], "very-high")
    assert tags["TP201"] == (["capacity"], "high")
    assert tags["TP301"] == (["communication"], "medium")
    assert tags["TP401"] == (["scheduling"], "high")
    assert tags["TP900"] == (["input"], "very-high")
    # code scanning's precisions, and every rule tagged
    assert {p for _, p in tags.values()} <= {"very-high", "high", "medium", "low"}
    assert all(len(t) == 1 for t, _ in tags.values())


def test_the_message_links_each_related_location(repo: Path) -> None:
    (repo / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    results = _sarif(repo, "run.sh")["runs"][0]["results"]
    related = [r for r in results if r.get("relatedLocations")]
    assert related  # TP101 points at the model's name as well
    for r in related:
        for loc in r["relatedLocations"]:
            assert f"]({loc['id']})" in r["message"]["text"], r["message"]["text"]
            assert f"]({loc['id']})" in r["message"]["markdown"]


def test_automation_id_is_the_settings_scope_and_can_be_overridden(repo: Path) -> None:
    prod = repo / "deploy" / "prod"
    prod.mkdir(parents=True)
    (prod / ".tpcheck.toml").write_text('gpu = "h100-sxm"\n', encoding="utf-8")
    (prod / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")
    (repo / "run.sh").write_text(LLAMA_TP6, encoding="utf-8")

    def category(cwd: Path, *extra: str) -> str:
        got: str = _sarif(cwd, *extra, "run.sh")["runs"][0]["automationDetails"]["id"]
        return got

    assert category(repo) == "tpcheck/"
    # two uploads in one workflow, one per settings folder: two categories (everything up to
    # the last slash is the category)
    assert category(prod) == "tpcheck/deploy/prod/"
    assert category(prod, "--sarif-category", "tpcheck/gpu-h100/") == "tpcheck/gpu-h100/"
