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
