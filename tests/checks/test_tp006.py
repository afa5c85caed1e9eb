"""TP006 option-combination: the option pairs a release checks after parsing (vLLM's
validate_parsed_serve_args, read into each table's ``validations``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.rulecase import col, engine_says
from tests.checks.rulecase import lint_command_line as lint
from tpcheck.checks.base import Severity


def test_auto_tool_choice_without_a_parser(tmp_path: Path) -> None:
    line = "vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice"
    [f] = lint(tmp_path, "s.sh", line + "\n")
    assert f.code == "TP006" and f.severity is Severity.ERROR
    # vllm 0.33.0 vllm/entrypoints/common/cli_args.py:553-554, the engine's own words
    assert f.message == "--enable-auto-tool-choice requires --tool-call-parser"
    assert engine_says(f).startswith("TypeError: Error: --enable-auto-tool-choice requires "
                                     "--tool-call-parser (vllm/entrypoints/common/cli_args.py:554)")
    assert f.span.column == col(line, "--enable-auto-tool-choice")


@pytest.mark.parametrize("line", [
    "vllm serve m --enable-auto-tool-choice --tool-call-parser hermes",
    "vllm serve m --enable-auto-tool-choice --tool-call hermes",  # a unique prefix
    "vllm serve m --no-enable-auto-tool-choice",
    "vllm serve m --enable-auto-tool-choice $EXTRA_ARGS",  # the parser may be in there
    "vllm serve m --enable-auto-tool-choice --config serve.yaml",  # or in that file
    "python -c 'from vllm import LLM; LLM(\"m\", enable_auto_tool_choice=True)'",
])
def test_silent_when_the_other_option_is_there_or_may_be(tmp_path: Path, line: str) -> None:
    assert [f.code for f in lint(tmp_path, "s.sh", line + "\n")] == []


def test_two_options_that_exclude_each_other(tmp_path: Path) -> None:
    # 0.33.0 cli_args.py:565-568: per-request metrics need the stats --disable-log-stats turns off
    line = "vllm serve m --enable-per-request-metrics --disable-log-stats"
    [f] = lint(tmp_path, "s.sh", line + "\n")
    assert f.code == "TP006"
    # at the option to drop, which the headline names first
    assert f.message == "--disable-log-stats conflicts with --enable-per-request-metrics"
    assert f.span.column == col(line, "--disable-log-stats")
    assert "remove --disable-log-stats" in engine_says(f)
    # 0.21.0 has neither the option (TP001) nor the check (its table lists two "requires")
    codes = [f.code for f in lint(tmp_path, "s.sh", line + "\n", engine_version="0.21.0")]
    assert codes == ["TP001"]


def test_each_release_has_its_own_checks(tmp_path: Path) -> None:
    # 0.8.5 openai/cli_args.py:288-290: --enable-reasoning requires --reasoning-parser; the
    # option is gone from 0.10 on (TP004 there, not TP006)
    [f] = lint(tmp_path, "s.sh", "vllm serve m --enable-reasoning\n", engine_version="0.8.5")
    assert f.code == "TP006"
    assert engine_says(f).startswith("TypeError: Error: --enable-reasoning requires "
                                "--reasoning-parser (vllm/entrypoints/openai/cli_args.py:289)")
    codes = [f.code for f in lint(tmp_path, "s.sh", "vllm serve m --enable-reasoning\n",
                                  engine_version="0.33.0")]
    assert codes == ["TP004"]


def test_sglang_ssl_options_given_alone(tmp_path: Path) -> None:
    # sglang 0.5.23 arg_groups/serving_hook.py:50-57 handle_ssl_validation
    line = "python -m sglang.launch_server --model-path m --ssl-keyfile /k.pem"
    [f] = lint(tmp_path, "s.sh", line + "\n")
    assert f.code == "TP006"
    assert f.message == "--ssl-keyfile requires --ssl-certfile"
    assert engine_says(f).startswith("ValueError: --ssl-keyfile requires --ssl-certfile to be "
                                "specified as well. (sglang/srt/arg_groups/serving_hook.py:51)")
    ok = line + " --ssl-certfile /c.pem"
    assert lint(tmp_path, "s.sh", ok + "\n") == []


_DPA = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --enable-dp-attention"


@pytest.mark.parametrize("version", ["0.4.4.post1", "0.4.6.post1", "0.4.10.post2", "0.5.2rc2"])
def test_dp_attention_without_dp_is_refused_where_the_release_asserts(
        tmp_path: Path, version: str) -> None:
    # server_args.py asserts dp_size > 1 under --enable-dp-attention from 0.4.4.post1 (l.268)
    # to 0.5.2rc2 (l.616); dp defaults to 1, so the flag alone cannot start
    [f] = lint(tmp_path, "s.sh", _DPA + "\n", engine_version=version)
    assert f.code == "TP006" and f.severity is Severity.ERROR
    assert f.message == "--enable-dp-attention requires --dp above 1"
    assert engine_says(f).startswith("AssertionError: Please set a dp-size > 1")
    assert f.span.column == col(_DPA, "--enable-dp-attention")
    assert f.fix == "use --dp 2 with --enable-dp-attention"  # dp = t = 2 spans the TP group


@pytest.mark.parametrize(("version", "extra"), [
    ("0.4.3", ""),  # up to 0.4.4 the flag sets dp_size = tp_size itself (l.254 in 0.4.3)
    ("0.5.2", ""),  # 0.5.2 turns DP attention off when dp is 1 (server_args.py l.634-635)
    ("0.4.6.post1", " --dp 2"),
    ("0.4.6.post1", " --dp-size 2"),
    ("0.4.6.post1", " $EXTRA_ARGS"),  # --dp may be in there
])
def test_dp_attention_silent_where_dp_is_set_or_not_asserted(
        tmp_path: Path, version: str, extra: str) -> None:
    assert [f.code for f in lint(tmp_path, "s.sh", _DPA + extra + "\n",
                                 engine_version=version)] == []


def test_dp_attention_unpinned_is_not_judged(tmp_path: Path) -> None:
    # the newest release (0.5.23) only deprecates the flag for --attn-dp-size
    # (server_args.py:419): a TP005, no old assert
    assert [f.code for f in lint(tmp_path, "s.sh", _DPA + "\n")] == ["TP005"]
