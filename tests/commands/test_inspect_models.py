"""`tpcheck inspect` says where each model's config.json came from (the rules' resolver)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_inspect_names_the_config_source(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text(
        "vllm serve Qwen/Qwen3-32B -tp 8\nvllm serve acme/unknown-model -tp 8\n")
    p = subprocess.run([sys.executable, "-m", "tpcheck.cli", "inspect", "--offline", "--format",
                        "json", "a.sh"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    known, unknown = json.loads(p.stdout)["deployments"]
    assert known["model_config"].startswith("catalog: ")
    assert known["model_config"].endswith("Qwen--Qwen3-32B/config.json")
    assert unknown["model_config"] is None and "offline" in unknown["model_problem"]


def test_inspect_follows_each_files_nearest_settings_as_lint_does(tmp_path: Path) -> None:
    """Issue 28 item 5: a sub-folder's ``offline = true`` and models table applied to lint but
    not to inspect, which sent requests to the hub (with the token) and could name another
    config than lint's. A real loopback hub: with the nearest settings offline, no request."""
    import os

    from tests.hubserver import HubServer
    from tests.models.test_pull import REAL_CONFIG

    sub = tmp_path / "team"
    (sub / "cfg").mkdir(parents=True)
    (sub / "cfg" / "config.json").write_bytes(REAL_CONFIG)  # Llama-3.1-8B's: 32 heads
    (sub / ".tpcheck.toml").write_text(
        'offline = true\n\n[models]\n"acme/mapped" = "cfg"\n')
    (sub / "run.sh").write_text("vllm serve acme/mapped -tp 2\nvllm serve acme/other -tp 2\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    with HubServer({"acme/other": {"config.json": REAL_CONFIG}}) as hub:
        env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path / "hf"),
                   HF_TOKEN="hf_" + "x" * 12, NO_PROXY="127.0.0.1,localhost")
        runs = {cmd: subprocess.run(
            [sys.executable, "-m", "tpcheck", *cmd.split(), "--format", "json", "team/run.sh"],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
            for cmd in ("inspect", "check")}
        asked = hub.requests
    assert asked == []  # the nearest settings say offline: neither command asked the hub
    mapped, other = json.loads(runs["inspect"].stdout)["deployments"]
    assert mapped["model_config"] == f"mapping: {sub / 'cfg' / 'config.json'}"
    assert other["model_config"] is None and "offline" in other["model_problem"]
    # and lint saw the same: the mapped model's 32 heads % 2 == 0 (no TP101), the other TP000
    found = json.loads(runs["check"].stdout)["findings"]
    assert {(f["line"], f["code"]) for f in found if f["code"] == "TP000"} == {(2, "TP000")}
