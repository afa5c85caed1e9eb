"""`tpcheck models pull` / `models list` against the loopback hub, and the settings-file edit.

huggingface_hub reads HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE at import, so every run that may
reach the hub is a fresh ``python -m tpcheck`` with its own environment. The edit of
pyproject.toml / .tpcheck.toml is tested in-process: only the models table may change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hubserver import HubServer, commit_of
from tests.shared import said
from tpcheck.models import catalog
from tpcheck.models.pull import PullError, edit_mapping, hub_candidates
from tpcheck.sources import read_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

# A real config.json (Llama-3.1-8B's: 32 heads, 8 KV heads) served under ids the catalog lacks
REAL_CONFIG = (catalog.CATALOG_DIR / "meta-llama--Llama-3.1-8B" / "config.json").read_bytes()
QUANT = json.dumps({"producer": {"name": "modelopt"},
                    "quantization": {"quant_algo": "FP8"}}).encode()
TOKEN = "hf_tpcheckPullToken0123456789"

PYPROJECT = """\
[project]
name = "infra"  # not ours: must stay byte for byte

[tool.tpcheck]
gpu = "h100-sxm"
"""


def tpcheck(cwd: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("HF_", "HUGGING")) and "PROXY" not in k.upper()}
    base.pop("TRANSFORMERS_OFFLINE", None)
    base.update(HF_HOME=str(cwd.parent / "hf"), NO_PROXY="127.0.0.1,localhost")
    base.update(env)
    return subprocess.run([sys.executable, "-m", "tpcheck", *args], cwd=cwd, env=base,
                          capture_output=True, text=True, timeout=120)


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / "deploy").mkdir(parents=True)
    (proj / "pyproject.toml").write_text(PYPROJECT)
    (proj / "deploy" / "run.sh").write_text(
        "vllm serve acme/gated-8b --tensor-parallel-size 3\n"
        "vllm serve /models/x --served-model-name acme/open-8b --tensor-parallel-size 3\n"
        "vllm serve ${MODEL} --tensor-parallel-size 3\n")
    return proj


def test_pull_a_gated_model_with_a_token_then_lint_offline(tmp_path: Path) -> None:
    proj = project(tmp_path)
    files = {"acme/gated-8b": {"config.json": REAL_CONFIG, "hf_quant_config.json": QUANT},
             "acme/open-8b": {"config.json": REAL_CONFIG}}
    with HubServer(files, gated=["acme/gated-8b"], token=TOKEN) as hub:
        # without the token the gated repo is one line and exit 2; the open one is still pulled
        anon = tpcheck(proj, ["models", "pull", "deploy"], {"HF_ENDPOINT": hub.endpoint})
        proc = tpcheck(proj, ["models", "pull", "deploy"],
                       {"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": TOKEN})
    assert anon.returncode == 2 and "Traceback" not in anon.stderr
    (gated_line,) = [ln for ln in anon.stderr.splitlines() if ln.startswith("tpcheck: error:")]
    assert gated_line.startswith("tpcheck: error: acme/gated-8b is gated on ")  # named once
    assert proc.returncode == 0, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    # the ${MODEL} line names no hub id: said, not pulled
    assert "skipped: " in proc.stderr and "'${MODEL}' names no hub id" in proc.stderr
    # the open repo came from the hub in the first run, so from the HF cache in the second
    for repo, quant, came in (("acme/gated-8b", True, "hub"), ("acme/open-8b", False,
                                                              "hf-cache")):
        folder = proj / ".tpcheck" / "models" / repo.replace("/", "--")
        assert (folder / "config.json").read_bytes() == REAL_CONFIG  # verbatim
        assert (folder / "hf_quant_config.json").is_file() == quant
        assert (folder / "REVISION").read_text() == f"{commit_of(repo)}\n"
        assert f"{repo} @ {commit_of(repo)} ({came}) -> .tpcheck/models/" in proc.stdout
    text = (proj / "pyproject.toml").read_text()
    # the anonymous run mapped the open model; the second replaced that line and appended
    assert text == PYPROJECT + (
        '\n[tool.tpcheck.models]\n'
        '"acme/open-8b" = ".tpcheck/models/acme--open-8b"\n'
        '"acme/gated-8b" = ".tpcheck/models/acme--gated-8b"\n')
    assert tomllib.loads(text)["tool"]["tpcheck"]["gpu"] == "h100-sxm"

    # Offline, a cold HF cache, the hub gone: the mapping answers for both models
    lint = tpcheck(proj, ["--offline", "--format", "json", "deploy"],
                   {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "cold"),
                    "HF_ENDPOINT": hub.endpoint})
    found = json.loads(lint.stdout)["findings"]
    codes = {(f["line"], f["code"]) for f in found}
    # 32 heads % 3 = 2 -> TP101 on lines 1 and 2; line 3 (${MODEL}) stays TP000
    assert {(1, "TP101"), (2, "TP101"), (3, "TP000")} <= codes
    assert not any(f["code"] == "TP000" and f["line"] in (1, 2) for f in found)
    (hinted,) = [f for f in found if f["line"] == 2 and f["code"] == "TP101"]
    assert "--served-model-name `acme/open-8b`" in said(hinted)  # still a visible guess

    listed = tpcheck(proj, ["models", "list", "--format", "json"], {"HF_HUB_OFFLINE": "1"})
    rows = json.loads(listed.stdout)
    assert rows[:2] == [
        {"id": "acme/gated-8b", "source": "pulled", "revision": commit_of("acme/gated-8b")},
        {"id": "acme/open-8b", "source": "pulled", "revision": commit_of("acme/open-8b")}]
    assert len(rows) == 2 + len(catalog.all_ids())
    assert {r["source"] for r in rows[2:]} == {"catalog"}
    text_list = tpcheck(proj, ["models", "list"], {"HF_HUB_OFFLINE": "1"}).stdout.splitlines()
    assert text_list[0].split() == ["acme/gated-8b", "pulled", commit_of("acme/gated-8b")]


@pytest.mark.parametrize(("server", "phrase"), [
    ({"missing": {"acme/gated-8b": 404}}, "acme/gated-8b not found on"),
    ({"files": {"acme/gated-8b": {"config.json": b"<html>login</html>"}}}, "malformed JSON"),
])
def test_a_hub_error_is_one_line(tmp_path: Path, server: dict[str, object], phrase: str) -> None:
    proj = project(tmp_path)
    (proj / "deploy" / "run.sh").write_text("vllm serve acme/gated-8b -tp 2\n")
    with HubServer(**server) as hub:  # type: ignore[arg-type]
        proc = tpcheck(proj, ["models", "pull", "deploy"], {"HF_ENDPOINT": hub.endpoint})
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("tpcheck: error: acme/gated-8b") and phrase in line
    assert line.count("acme/gated-8b") == 1  # not "acme/gated-8b: acme/gated-8b not found"
    assert (proj / "pyproject.toml").read_text() == PYPROJECT  # nothing pulled: untouched
    assert not (proj / ".tpcheck").exists()


def test_offline_pull_reads_the_hf_cache_only(tmp_path: Path) -> None:
    proj = project(tmp_path)
    (proj / "deploy" / "run.sh").write_text("vllm serve Qwen/Qwen3-8B -tp 2\n")
    proc = tpcheck(proj, ["models", "pull", "--offline", "deploy"], {})
    # the catalog holds Qwen3-8B, but pull wants the hub's own file: offline and uncached, none
    assert proc.returncode == 2
    # and it says what pull can do, not lint's advice (pull has no --model-config)
    assert proc.stderr == ("tpcheck: error: Qwen/Qwen3-8B: not in the HF cache, and the hub is "
                           "skipped (--offline): run `tpcheck models pull` online to fetch it\n")


def test_candidates_follow_the_resolvers_order(tmp_path: Path) -> None:
    f = tmp_path / "run.sh"
    f.write_text("vllm serve /models/Qwen3-32B --served-model-name acme/x -tp 2\n"
                 "vllm serve Qwen/Qwen3-8B --served-model-name acme/y -tp 2\n")
    d1, d2 = read_path(str(f)).deployments
    assert [c[0] for c in hub_candidates(d1)] == ["Qwen/Qwen3-32B", "acme/x"]
    assert hub_candidates(d2) == [("Qwen/Qwen3-8B", "as written")]
    # a mapping wins: to a hub id, that id is pulled; to a local config, nothing is
    assert hub_candidates(d1, {"/models/Qwen3-32B": "acme/ft-32b"}) == [
        ("acme/ft-32b", "mapped from '/models/Qwen3-32B'")]
    assert hub_candidates(d1, {"/models/Qwen3-32B": "configs/ft/config.json"}) == []


# ---- the settings-file edit -------------------------------------------------------------

NEW = {"acme/a": ".tpcheck/models/acme--a", "org/b": ".tpcheck/models/org--b"}


def test_edit_replaces_and_appends_inside_the_existing_table() -> None:
    text = ('[tool.tpcheck]\ngpu = "h100-sxm"\n\n[tool.tpcheck.models]\n'
            '# pulled by tpcheck\n"acme/a" = "old/path"  # was by hand\n'
            "'x/y' = 'keep/me'\n\n[tool.other]\nz = 1\n")
    out = edit_mapping(Path("pyproject.toml"), text, NEW)
    assert out == ('[tool.tpcheck]\ngpu = "h100-sxm"\n\n[tool.tpcheck.models]\n'
                   '# pulled by tpcheck\n"acme/a" = ".tpcheck/models/acme--a"\n'
                   "'x/y' = 'keep/me'\n\"org/b\" = \".tpcheck/models/org--b\"\n"
                   "\n[tool.other]\nz = 1\n")
    assert tomllib.loads(out)["tool"]["tpcheck"]["models"] == {**NEW, "x/y": "keep/me"}


def test_edit_keeps_crlf_and_a_dot_tpcheck_toml_top_level_table() -> None:
    text = 'gpu = "h100-sxm"\r\n\r\n[models]\r\n"m" = "p"\r\n'
    out = edit_mapping(Path(".tpcheck.toml"), text, {"acme/a": "x"})
    assert out == 'gpu = "h100-sxm"\r\n\r\n[models]\r\n"m" = "p"\r\n"acme/a" = "x"\r\n'
    assert edit_mapping(Path(".tpcheck.toml"), "", {"acme/a": "x"}) == '[models]\n"acme/a" = "x"\n'


def test_edit_refuses_what_it_cannot_edit_safely() -> None:
    inline = '[tool.tpcheck]\nmodels = { "m" = "p" }\n'
    with pytest.raises(PullError, match="add the mapping by hand"):
        edit_mapping(Path("pyproject.toml"), inline, NEW)
    with pytest.raises(PullError, match="invalid TOML"):
        edit_mapping(Path("pyproject.toml"), "[tool.tpcheck\n", NEW)


def test_a_settings_file_that_cannot_be_edited_is_one_line_and_nothing_is_fetched(
        tmp_path: Path) -> None:
    proj = project(tmp_path)
    (proj / "pyproject.toml").write_text('[tool.tpcheck]\nmodels = { "m" = "p" }\n')
    (proj / "deploy" / "run.sh").write_text("vllm serve acme/open-8b -tp 2\n")
    with HubServer({"acme/open-8b": {"config.json": REAL_CONFIG}}) as hub:
        proc = tpcheck(proj, ["models", "pull", "deploy"], {"HF_ENDPOINT": hub.endpoint})
        asked = hub.requests
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "add the mapping by hand" in proc.stderr
    assert not (proj / ".tpcheck").exists() and asked == []


def test_a_mapping_to_a_pulled_hub_id_is_followed_once(tmp_path: Path) -> None:
    from tpcheck.models.resolve import Resolver

    folder = tmp_path / ".tpcheck" / "models" / "acme--ft-32b"
    folder.mkdir(parents=True)
    (folder / "config.json").write_bytes(REAL_CONFIG)
    r = Resolver(offline=True, base_dir=str(tmp_path), cwd=str(tmp_path), mappings={
        "/models/Qwen3-32B": "acme/ft-32b", "acme/ft-32b": ".tpcheck/models/acme--ft-32b"})
    res = r.resolve("/models/Qwen3-32B")
    assert res.source == "mapping" and res.config["num_attention_heads"] == 32  # Llama-3.1-8B's
    assert res.tried == ("mapping '/models/Qwen3-32B' -> 'acme/ft-32b'",
                         f"mapping 'acme/ft-32b' -> {folder}")
