"""TP004 removed-option: an option an earlier release had; the finding names the last one.

Every expected message is the engine's own text (CPython Lib/argparse.py, pydantic, the
releases' deprecation texts quoted from the generated tables); moved from
tests/checks/test_command_line.py, which keeps the cases that span several codes (issue 15).
"""

from __future__ import annotations

from pathlib import Path

from tests.checks.rulecase import engine_says
from tests.checks.rulecase import lint_command_line as lint
from tpcheck.checks.base import Severity


def test_removed_option_names_the_last_release_that_had_it(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: v\n      image: vllm/vllm-openai:v0.33.0\n"
        "      command: [vllm, serve]\n"
        "      args: [m, --swap-space, '4']\n"
    )
    [f] = lint(tmp_path, "pod.yaml", text)
    assert f.code == "TP004" and f.severity is Severity.ERROR
    assert engine_says(f).startswith("vllm serve: error: unrecognized arguments: --swap-space "
                                "(registered up to vllm 0.14.0 at vllm/engine/arg_utils.py:")
    assert (f.span.line, f.span.column) == (9, text.splitlines()[8].index("--swap") + 1)


def test_removed_option_without_a_pinned_release_is_a_warning(tmp_path: Path) -> None:
    [f] = lint(tmp_path, "s.sh", "vllm serve m --swap-space 4\n")
    assert f.code == "TP004" and f.severity is Severity.WARNING
    assert "pin the image to the release you run" in f.text


def test_old_image_tag_picks_the_nearest_older_table(tmp_path: Path) -> None:
    text = (
        "services:\n  llm:\n    image: vllm/vllm-openai:v0.15.1\n"
        "    command: [--model, m, --swap-space, '4', --tensor-parallel-sise, '2']\n"
    )
    [f] = lint(tmp_path, "docker-compose.yml", text)
    # 0.15.1 has no table; 0.14.0 is the newest known release not newer than it, and it still
    # registers --swap-space: only the misspelling is refused
    assert f.code == "TP001"
    assert "vllm 0.15.1 has no option table: checked against 0.14.0, the nearest known" in (
        f.text)


def test_a_flag_whose_replacement_takes_a_value_is_not_swapped_in_place(tmp_path: Path) -> None:
    """vLLM 0.11.0 logs 'Please use `--mm-encoder-tp-mode data` instead.' for the flag
    --enable-multimodal-encoder-data-parallel (arg_utils.py:987-989), gone by 0.14.0: the
    finding names the replacement, but no edit puts --mm-encoder-tp-mode there without its
    value."""
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: vllm\n    image: vllm/vllm-openai:v0.14.0\n"
            "    command: [vllm, serve, m, --enable-multimodal-encoder-data-parallel]\n")
    [f] = lint(tmp_path, "p.yaml", text)
    assert f.code == "TP004"
    assert engine_says(f) == (
        "vllm serve: error: unrecognized arguments: --enable-multimodal-encoder-data-parallel "
        "(registered up to vllm 0.11.0 at vllm/engine/arg_utils.py:752; gone in 0.14.0)")
    assert f.message == ("removed option --enable-multimodal-encoder-data-parallel; "
                         "use --mm-encoder-tp-mode")
    assert f.fix == "use --mm-encoder-tp-mode" and f.edits == ()
