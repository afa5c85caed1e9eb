"""TP005 deprecated-option: an option the release still takes but warns about.

Every expected message is the engine's own text (CPython Lib/argparse.py, pydantic, the
releases' deprecation texts quoted from the generated tables); moved from
tests/checks/test_command_line.py, which keeps the cases that span several codes (issue 15).
"""

from __future__ import annotations

from pathlib import Path

from tests.checks.rulecase import col, engine_says
from tests.checks.rulecase import lint_command_line as lint
from tpcheck.checks.base import Severity


def test_deprecated_option_quotes_the_engines_warning(tmp_path: Path) -> None:
    line = "python -m sglang.launch_server --model-path m --dp 2 --enable-dp-attention"
    [f] = lint(tmp_path, "d.sh", line + "\n")
    assert f.code == "TP005" and f.severity is Severity.WARNING
    # SGLang 0.5.23 server_args.py:418, DeprecatedStoreTrueAction(new_flag="--attn-dp-size")
    assert engine_says(f).startswith("'--enable-dp-attention' is deprecated and will be removed "
                                     "in a future release. Use '--attn-dp-size <dp-size>' instead.")
    assert f.span.column == col(line, "--enable-dp-attention")


def test_deprecated_true_says_what_the_engine_prints(tmp_path: Path) -> None:
    """vLLM 0.10.2 registers --disable-log-requests with argparse's ``deprecated=True``
    (engine/arg_utils.py:1783): the finding says the warning line argparse prints, the release
    and the place, then the line vLLM itself logs (utils/__init__.py:1758-1761), all from the
    table. That line names --enable-log-requests, the opposite switch, which is no drop-in
    replacement, so the fix still says to remove it."""
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: vllm\n    image: vllm/vllm-openai:v0.10.2\n"
            "    command: [vllm, serve, m, --disable-log-requests]\n")
    [f] = lint(tmp_path, "p.yaml", text)
    assert f.code == "TP005" and f.severity is Severity.WARNING
    assert engine_says(f).startswith(
        "vllm serve: warning: option '--disable-log-requests' is deprecated (registered as "
        "deprecated in vllm 0.10.2 at vllm/engine/arg_utils.py:1783); "
        "vllm/utils/__init__.py:1759: \"argument '--disable-log-requests' is deprecated and "
        "replaced with '--enable-log-requests'. This will be removed in v0.12.0.\"")
    assert f.fix is not None and f.fix.startswith("remove it")


def test_deprecated_true_names_the_replacement_the_engine_logs(tmp_path: Path) -> None:
    """vLLM 0.11.0 --enable-multimodal-encoder-data-parallel (deprecated=True, arg_utils.py:752)
    and EngineArgs.__post_init__ logging 'Please use `--mm-encoder-tp-mode data` instead.'
    (arg_utils.py:987-989): the fix names that option."""
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: vllm\n    image: vllm/vllm-openai:v0.11.0\n"
            "    command: [vllm, serve, m, --enable-multimodal-encoder-data-parallel]\n")
    [f] = lint(tmp_path, "p.yaml", text)
    assert f.code == "TP005"
    assert engine_says(f).startswith(
        "vllm serve: warning: option '--enable-multimodal-encoder-data-parallel' is deprecated "
        "(registered as deprecated in vllm 0.11.0 at vllm/engine/arg_utils.py:752); "
        "vllm/engine/arg_utils.py:988: \"--enable-multimodal-encoder-data-parallel` is "
        "deprecated and will be removed in v0.13. Please use `--mm-encoder-tp-mode data` "
        "instead.\"")
    assert f.fix == "use --mm-encoder-tp-mode"


def test_deprecation_logged_while_the_config_is_built(tmp_path: Path) -> None:
    """vLLM 0.33.0 logs _IR_OP_PRIORITY_DEPRECATION_MESSAGE (engine/arg_utils.py:468-471) with
    logger.warning_once at l.2823 when the engine config is built, not through argparse; the
    table holds the message and the place (its own test:
    test_ir_op_priority_deprecation_warning)."""
    [f] = lint(tmp_path, "s.sh", "vllm serve m --ir-op-priority '{\"rms_norm\": [\"vllm_c\"]}'\n")
    assert f.code == "TP005" and f.severity is Severity.WARNING
    assert f.message == "deprecated option --ir-op-priority"
    assert engine_says(f).startswith(
        "ir_op_priority (--ir-op-priority) is deprecated because vLLM IR is being removed. It "
        "will be removed in v0.34.0. (logged while the config is built, "
        "vllm/engine/arg_utils.py:2823)")
