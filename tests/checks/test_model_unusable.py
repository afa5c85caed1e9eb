"""TP000 when a config.json was found but cannot be used: the fix names that file and what to
change there, not "pass --model-config PATH" (which the user may already have done)."""

from __future__ import annotations

import json
from pathlib import Path

from tpcheck.checks.base import Finding
from tpcheck.lint import Linter
from tpcheck.settings import Settings

GENERIC = "run `tpcheck models pull PATH...` once online"


def tp000(tmp_path: Path, launch: str, **settings: object) -> Finding:
    p = tmp_path / "run.sh"
    p.write_text(launch + "\n")
    res = Linter(Settings(offline=True, **settings)).run([str(p)])  # type: ignore[arg-type]
    assert not res.errors, res.errors
    [f] = [f for f in res.findings if f.code == "TP000"]
    return f


def test_local_folder_with_malformed_json(tmp_path: Path) -> None:
    (tmp_path / "ft").mkdir()
    (tmp_path / "ft" / "config.json").write_text('{"hidden_size": 4096,\n')
    f = tmp_path / "ft" / "config.json"
    found = tp000(tmp_path, "vllm serve ./ft --tensor-parallel-size 2")
    assert found.message == "config.json found but not usable"
    assert found.notes[0].startswith(f"{f}:2:1: malformed JSON")
    assert found.fix == (f"make {f} valid JSON (the error is at line 2, column 1); it is the "
                         "config.json of the model folder the deployment names")


def test_model_config_missing_a_field(tmp_path: Path) -> None:
    f = tmp_path / "cfg.json"
    f.write_text(json.dumps({"hidden_size": 4096, "num_attention_heads": 32}))
    found = tp000(tmp_path, "vllm serve acme/ft --tensor-parallel-size 2", model_config=str(f))
    assert "missing field num_hidden_layers" in found.text
    assert found.fix == (f"add num_hidden_layers to {f} (copy it from the model's config.json "
                         "on the hub); it is the file --model-config names")
    assert found.fix is not None and GENERIC not in found.fix


def test_mapping_to_a_non_object(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    f = tmp_path / "m" / "config.json"
    f.write_text("[1, 2]")
    found = tp000(tmp_path, "vllm serve acme/ft --tensor-parallel-size 2",
                  models={"acme/ft": str(tmp_path / "m")})
    assert "expected a JSON object, got list" in found.text
    assert found.fix == (f"replace {f} with the model's config.json (a JSON object of its "
                         "fields); it is the file [tool.tpcheck.models] maps 'acme/ft' to")


def test_model_config_path_that_does_not_exist(tmp_path: Path) -> None:
    found = tp000(tmp_path, "vllm serve acme/ft --tensor-parallel-size 2",
                  model_config=str(tmp_path / "nothere.json"))
    assert "no such file (from --model-config)" in found.text
    assert found.fix == ("point --model-config at the model's config.json (or the folder holding "
                         "it): the path given does not exist")


def test_config_not_found_keeps_the_advice_to_find_one(tmp_path: Path) -> None:
    found = tp000(tmp_path, "vllm serve acme/unknown-ft --tensor-parallel-size 2")
    assert not found.text.startswith("config.json found")
    assert found.fix is not None and found.fix.startswith(GENERIC)
