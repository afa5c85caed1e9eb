"""One release per deployment drives every rule: the image tag, else engine-version (the flag
or the settings file), else the newest known, the same order for the option rules and for the
memory model."""

from __future__ import annotations

from tests.checks.rulecase import engine_says, lint_text
from tpcheck.engines.release import NEWEST, resolve
from tpcheck.settings import Settings

LINE = "vllm serve Qwen/Qwen3-8B --enable-prompt-adapter --device cuda\n"
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
       "  - name: vllm\n    image: vllm/vllm-openai:v0.8.5\n"
       "    command: [vllm, serve, Qwen/Qwen3-8B, --enable-prompt-adapter, --device, cuda]\n")


def _codes(text: str, name: str, settings: Settings | None = None) -> list[tuple[str, str]]:
    return sorted((f.code, f.severity.value) for f in lint_text(text, name=name,
                                                                settings=settings))


def test_engine_version_pins_the_option_tables_like_an_image_tag() -> None:
    # 0.8.5 registers --enable-prompt-adapter (arg_utils.py, gone after 0.9.2) and --device
    # (an option of its own then; a prefix of --device-ids/--device-memory-utilization by 0.33)
    pinned = Settings(offline=True, engine_version="0.8.5",
                      engine_version_from="--engine-version")
    by_flag = _codes(LINE, "run.sh", pinned)
    by_tag = _codes(POD, "pod.yaml")
    assert by_flag == by_tag
    assert not [c for c, _ in by_flag if c in ("TP001", "TP002", "TP003", "TP004", "TP005")]
    # unpinned, the newest table: the dropped option is a possibility (warning), the prefix an
    # error
    codes = _codes(LINE, "run.sh")
    assert ("TP004", "warning") in codes and ("TP002", "error") in codes


def test_settings_pin_makes_a_removed_option_an_error() -> None:
    pinned = Settings(offline=True, engine_version="0.33.0",
                      engine_version_from="[tool.tpcheck] engine-version in pyproject.toml")
    [f] = [f for f in lint_text("vllm serve m --swap-space 4\n", settings=pinned)
           if f.code == "TP004"]
    assert f.severity.value == "error"
    assert "no release pinned" not in f.message


def test_unpinned_removal_is_phrased_as_a_possibility() -> None:
    [f] = [f for f in lint_text("vllm serve m --enable-reasoning\n") if f.code == "TP004"]
    assert f.severity.value == "warning"
    assert f.message == "removed option --enable-reasoning; use --reasoning-parser"
    assert f"gone in {NEWEST['vllm']}" in engine_says(f)
    assert "an older release may accept it: pin the image to the release you run" in f.notes


def test_resolution_order() -> None:
    kw = {"setting": "0.10.2", "setting_from": "--engine-version"}
    assert resolve("vllm", image="vllm/vllm-openai:v0.8.5", image_version="0.8.5",
                   **kw).version == "0.8.5"
    r = resolve("vllm", image="vllm/vllm-openai:latest", **kw)
    assert (r.version, r.pinned, r.source) == ("0.10.2", True, "from --engine-version")
    r = resolve("vllm")
    assert (r.version, r.pinned) == (NEWEST["vllm"], False)
    assert r.checked_against == f"checked against vllm {NEWEST['vllm']}: no release pinned"
    # a pin between two tables is checked against the nearest older one, and says so
    r = resolve("vllm", setting="0.15.1")
    assert r.table_version == "0.14.0"
    assert r.table_note == ("vllm 0.15.1 has no option table: checked against 0.14.0, the "
                            "nearest known")
