"""The engines' own argument tests as tpcheck's test data, run as one table.

``tests/data/engine_arg_cases/<engine>-<version>.json`` holds what each release's own tests
assert about a command line (extracted by ``tools/extract_arg_tests.py`` from the release's
sdist: argv, outcome, file:line). Each case is linted as ``vllm serve MODEL ARGV`` pinned to that
release, and tpcheck must agree: accepted → no TP001-TP004/TP006; refused while parsing → an
error among TP001-TP004; a warning at parse time → TP005; refused by the validation that runs
after parsing → TP006 (or TP003 for a bound on one value) when that release's validation
code states it. The cases no rule can state are listed in ``OUT_OF_SCOPE`` with the reason.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.checks.rulecase import lint_text
from tpcheck.settings import Settings

DATA = Path(__file__).resolve().parent.parent / "data" / "engine_arg_cases"
OPTION_RULES = {"TP001", "TP002", "TP003", "TP004", "TP006"}
MODEL = "facebook/opt-125m"

# (test name, reason): refusals that depend on the machine or on what the engine loads, which no
# static rule can state.
OUT_OF_SCOPE: dict[str, str] = {
    "test_chat_template_validation_for_sad_paths":
        "the chat template file is looked up on the machine that runs the engine",
    "test_attention_config":
        "raised by create_engine_config after the model's config is loaded",
    "test_reasoning_effort_map_rejects_invalid":
        "the valid effort names are the serving layer's, not an option table's",
}


def _cases() -> list[Any]:
    out = []
    for path in sorted(DATA.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for c in data["cases"]:
            if "argv" not in c:
                continue
            cid = f"{data['engine']}-{data['version']}:{c['file'].rsplit('/', 1)[-1]}:{c['line']}"
            cid += ":" + " ".join(c["argv"])[:60]
            out.append(pytest.param(data["engine"], data["version"], c, id=cid))
    return out


def command_line(argv: list[str]) -> str:
    argv = argv[1:] if argv[:1] == ["serve"] else argv
    head = ["vllm", "serve"] + ([] if "--model" in argv else [MODEL])
    return shlex.join(head + argv) + "\n"


_SETTINGS: dict[str, Settings] = {}


def findings_for(version: str, argv: list[str]) -> list[tuple[str, str]]:
    s = _SETTINGS.get(version)
    if s is None:
        s = _SETTINGS[version] = Settings(offline=True, engine_version=version,
                                          engine_version_from="the engine's own test")
    return [(f.code, f.severity.value) for f in lint_text(command_line(argv), settings=s)]


@pytest.mark.parametrize(("engine", "version", "case"), _cases())
def test_release_test_case(engine: str, version: str, case: dict[str, Any]) -> None:
    outcome = case["outcome"]
    if outcome == "refused_validation" and case["test"] in OUT_OF_SCOPE:
        pytest.skip(OUT_OF_SCOPE[case["test"]])
    got = findings_for(version, case["argv"])
    option = [(c, s) for c, s in got if c in OPTION_RULES]
    if outcome == "accepted":
        assert option == [], got
    elif outcome in ("refused_parse", "refused"):
        assert [c for c, s in option if s == "error" and c != "TP006"], got
    elif outcome == "warns":
        assert ("TP005", "warning") in got, got
    else:
        # refused after parsing: two options (TP006), or one value's bound written in the
        # validation code (TP003)
        assert outcome == "refused_validation"
        assert ("TP006", "error") in got or ("TP003", "error") in got, got
