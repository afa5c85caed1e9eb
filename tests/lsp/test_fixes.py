"""An added option written in the document's own syntax, and read back before it is offered."""

from __future__ import annotations

from tpcheck.checks.base import Edit
from tpcheck.lsp.fixes import changes_for, verified
from tpcheck.lsp.suppress import apply_change
from tpcheck.sources.base import Span


def _edit(line: str, token: str, path: str) -> Edit:
    col = line.index(token) + 1
    return Edit(Span(path, 1, col, 1, col + len(token)), "8", "TP 8 with DP 2",
                add_option=("--data-parallel-size", "2"))


def _apply(text: str, edit: Edit, kind: str) -> str | None:
    changes = changes_for(edit, text.split("\n"), kind)
    if changes is None:
        return None
    for c in sorted(changes, key=lambda c: (c.line, c.column), reverse=True):
        text = apply_change(text, c)
    return text


def test_python_keyword_argument() -> None:
    text = 'llm = LLM("Qwen/Qwen3-32B", tensor_parallel_size=16)\n'
    edit = _edit(text, "16", "serve.py")
    assert _apply(text, edit, "python") == (
        'llm = LLM("Qwen/Qwen3-32B", tensor_parallel_size=8, data_parallel_size=2)\n')
    changes = changes_for(edit, text.split("\n"), "python")
    assert changes is not None
    assert verified(text, "serve.py", changes, "data_parallel_size", 2)


def test_a_positional_python_value_gets_no_option() -> None:
    text = "run(16)\n"
    assert _apply(text, _edit(text, "16", "serve.py"), "python") is None


def test_shell_word_with_equals() -> None:
    text = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size=16\n"
    assert _apply(text, _edit(text, "16", "run.sh"), "shell") == (
        "vllm serve Qwen/Qwen3-32B --tensor-parallel-size=8 --data-parallel-size 2\n")


def test_an_insertion_that_does_not_read_back_is_not_verified() -> None:
    # `- --tensor-parallel-size=16` is one argv item: appending inside it would give the engine
    # "8 --data-parallel-size 2" as the TP value. The read-back catches it.
    text = ("args:\n  - vllm\n  - serve\n  - Qwen/Qwen3-32B\n  - --tensor-parallel-size=16\n")
    lines = text.split("\n")
    col = lines[4].index("16") + 1
    edit = Edit(Span("d.yaml", 5, col, 5, col + 2), "8", "t",
                add_option=("--data-parallel-size", "2"))
    changes = changes_for(edit, lines, "yaml")
    assert changes is None or not verified(text, "d.yaml", changes, "data_parallel_size", 2)
