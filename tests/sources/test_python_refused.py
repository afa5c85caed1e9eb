"""Python that libcst will not build a tree for is the file's one-line error (issue 14).

``LLM(model=b"""""""", ...)`` is bytes followed by a str literal: libcst's parser accepts the
tokens, then its validation raises ``CSTValidationError`` ("Cannot concatenate string and
bytes"), which ended the whole run as "internal error". Python refuses the file as well
("cannot mix bytes and nonbytes literals"), so it is reported where Python's parser points.
The siblings: a libcst syntax error, nesting past the reader's limit, and the parser's
"invalid escape sequence" warnings, which printed stray stderr lines naming no file.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import warnings

import pytest

from tpcheck.sources import read_path
from tpcheck.sources.python_src import MAX_DEPTH


def _errors(text: str) -> list[str]:
    result = read_path("odd.py", text)
    assert result.deployments == ()
    return [str(e) for e in result.errors]


def _python_position(text: str) -> tuple[int, int]:
    """Where the interpreter's own parser points (3.11: just past the concatenation)."""
    with pytest.raises(SyntaxError) as python:
        ast.parse(text)
    assert python.value.msg == "cannot mix bytes and nonbytes literals"
    return python.value.lineno or 0, python.value.offset or 0


@pytest.mark.parametrize("literals", [
    'b""""""""',  # the reproducer: b"""""" then ""
    "b'' ''", "'' b''", "f'' b''", "u'' b''", "Rb'x' f'{1}'",
])
def test_bytes_and_str_concatenated_is_one_error_at_python_position(literals: str) -> None:
    text = f"from vllm import LLM\nLLM(model={literals}, tensor_parallel_size=2)\n"
    line, column = _python_position(text)
    assert line == 2 and column > len("LLM(model=")
    assert _errors(text) == [f"odd.py:{line}:{column}: Python does not parse: "
                             "cannot mix bytes and nonbytes literals"]


def test_a_libcst_syntax_error_is_one_error_with_its_position() -> None:
    # `print 'x'` (Python 2); the position is libcst's own (1.9 says line 3, column 10)
    (err,) = _errors("from vllm import LLM\nprint 'x'\nLLM(model='m')\n")
    assert re.fullmatch(r"odd\.py:[23]:\d+: Python does not parse: [^\n]+", err), err


def test_nesting_past_the_limit_is_one_error_never_handed_to_libcst() -> None:
    # MAX_DEPTH + 20 unary minus signs: each is one level of the tree, deeper than the limit
    text = "LLM(" + "-" * (MAX_DEPTH + 20) + "1)\n"
    (err,) = _errors(text)
    assert err.startswith("odd.py:1:") and f"nests over {MAX_DEPTH} levels" in err, err


def test_a_lone_bytes_literal_parses_and_its_launch_is_read() -> None:
    # valid Python (the engine would refuse the bytes at run time): read, no error
    result = read_path("ok.py", "LLM(model=b'org/m', tensor_parallel_size=2)\n")
    assert result.errors == ()
    assert len(result.deployments) == 1


def test_invalid_escape_warnings_neither_print_nor_change_the_read() -> None:
    # "\d" in a literal: parsing warns "<unknown>:1: invalid escape sequence" (SyntaxWarning,
    # shown by default from Python 3.12), a stderr line that names no file
    text = 'LLM(model="a\\d", tensor_parallel_size=2)\n'
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = read_path("w.py", text)
    assert shown == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning made an error still reads the same value
        strict = read_path("w.py", text)
    assert [d.model for d in result.deployments] == [d.model for d in strict.deployments] \
        == ["a\\d"]


def test_a_syntax_error_is_the_interpreters_and_libcst_never_loads() -> None:
    # issue 28 item 2: libcst's parser took 35-80 s on 12 KB of `--a` with a syntax error after
    # it; compile() refuses it at the interpreter's place (line 3, the '(' at column 5) and
    # libcst is not even imported (checked in a fresh interpreter)
    code = ("import sys\nfrom tpcheck.sources import read_path\n"
            "text = 'from vllm import LLM\\nx = ' + '--a' * 4000 + '\\ny = (\\n'\n"
            "r = read_path('u.py', text)\n"
            "print([str(e) for e in r.errors], 'libcst' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[\"u.py:3:5: Python does not parse: '(' was never closed\"] False"
