"""TP005 deprecated-option: an option the release still takes but warns about.

Every expected message is the engine's own text (CPython Lib/argparse.py, pydantic, the
releases' deprecation texts quoted from the generated tables); moved from
tests/checks/test_command_line.py, which keeps the cases that span several codes (issue 15).
"""

from __future__ import annotations

from pathlib import Path

from tests.checks.rulecase import col
from tests.checks.rulecase import lint_command_line as lint
from tpcheck.checks.base import Severity


def test_deprecated_option_quotes_the_engines_warning(tmp_path: Path) -> None:
    line = "python -m sglang.launch_server --model-path m --dp 2 --enable-dp-attention"
    [f] = lint(tmp_path, "d.sh", line + "\n")
    assert f.code == "TP005" and f.severity is Severity.WARNING
    # SGLang 0.5.23 server_args.py:419, DeprecatedStoreTrueAction(new_flag="--attn-dp-size")
    assert f.message.startswith("'--enable-dp-attention' is deprecated and will be removed in a "
                                "future release. Use '--attn-dp-size <dp-size>' instead.")
    assert f.span.column == col(line, "--enable-dp-attention")
