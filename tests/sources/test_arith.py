"""Shell arithmetic without a shell: the values a POSIX shell gives, or unknown (None)."""

from __future__ import annotations

import time

import pytest

from tpcheck.sources.arith import INT_MAX, MAX_DEPTH, MAX_TEXT, constant, evaluate

ENV = {"A": "2", "B": "8", "E": "", "EXPR": "2+3", "NEG": "-3", "OCT": "010", "W": "x"}


def value(text: str, per_pod: frozenset[str] = frozenset()) -> int | None:
    res = evaluate(text, ENV.get, per_pod)
    return None if res is None else res.value


@pytest.mark.parametrize(("text", "expected"), [
    ("1+2*3", 7),  # * binds tighter than +
    ("(1+2)*3", 9),
    ("10-4-3", 3),  # left to right: (10-4)-3, not 10-(4-3) = 9
    ("64/4/2", 8),  # (64/4)/2, not 64/(4/2) = 32
    ("2*3%4", 2),  # same level, left to right: (2*3)%4 = 6%4
    ("-7/2", -3),  # C division truncates toward zero (not Python's floor, -4)
    ("7/-2", -3),
    ("-7%2", -1),  # the remainder takes the dividend's sign: -7 - 2·(-3)
    ("7%-2", 1),  # 7 - (-2)·(-3)
    ("- -5", 5),  # two unary minuses with a blank between them
    ("+4", 4),
    ("0x10", 16),
    ("010", 8),  # a leading 0 is octal
    ("A*B", 16),  # variables without $
    ("$A * $B", 16),
    ("${A}*${B}", 16),
    ("  ( A + 1 ) * B  ", 24),  # (2+1)·8
    ("${Z:-4}*A", 8),  # Z unknown: the default 4, times 2
    ("${E:-3}", 3),  # E set but empty: ":-" takes the default
    ("NEG*2", -6),
    ("OCT+0", 8),  # a variable's value is read as a constant too
    (f"{INT_MAX}", INT_MAX),
    (f"{INT_MAX}-1+1", INT_MAX),
])
def test_values_as_the_shell_computes_them(text: str, expected: int) -> None:
    assert value(text) == expected


@pytest.mark.parametrize("text", [
    "1/0", "5%0", "A/(B-8)",  # division by zero: the shell stops with an error
    f"{INT_MAX}+1",  # past the signed 64-bit range: bash wraps silently
    f"-{INT_MAX}-2",  # INT_MIN - 1
    "3037000500*3037000500",  # 9.22e18 > 2^63-1
    "99999999999999999999999999",  # a constant past 64 bits
    "Z*2",  # unknown variable: never the shell's 0 (the image may set it)
    "W+1",  # a value that is not an integer
    "EXPR*2",  # bash would evaluate the value; tpcheck reads constants only
    "08", "0x",  # not constants
    "A<2", "A<<1", "A?1:2", "A=3", "A++", "--A", "A,B", "~A",  # outside the subset
    "1 2", "(1", "1)", "1+", "", "()",  # malformed
    "$(date +%s)", "`date`",  # a command substitution inside
])
def test_unknown_expressions_are_none(text: str) -> None:
    assert value(text) is None


def test_per_pod_variables_are_set_so_the_default_never_applies() -> None:
    # LWS_WORKER_INDEX is set on every pod, differently: ${LWS_WORKER_INDEX:-0} is not 0
    assert value("${LWS_WORKER_INDEX:-0} * B", frozenset({"LWS_WORKER_INDEX"})) is None
    assert value("${LWS_WORKER_INDEX:-0} * B") == 0  # not injected: the default, 0·8


def test_names_are_reported_in_order_of_first_use_defaults_are_not() -> None:
    res = evaluate("B * A + B * ${Z:-1}", ENV.get)
    assert res is not None
    assert (res.value, res.names) == (8 * 2 + 8 * 1, ("B", "A"))


def test_nesting_depth_is_bounded() -> None:
    ok = "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH
    deep = "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1)
    assert value(ok) == 1
    assert value(deep) is None
    assert value("-" + " -" * MAX_DEPTH + "1") is None  # 65 unary signs: depth too


def test_hostile_inputs_are_unknown_in_bounded_time() -> None:
    hostile = [
        "(" * 100_000 + "1" + ")" * 100_000,  # past MAX_TEXT
        "(" * (MAX_TEXT // 2 - 1) + ")" * (MAX_TEXT // 2 - 1),
        "1" + "+1" * (MAX_TEXT // 2 - 1),  # the longest sum read: a value, not an error
        "9" * MAX_TEXT,
        "- " * (MAX_TEXT // 2),
    ]
    start = time.perf_counter()
    results = [value(h) for h in hostile]
    assert time.perf_counter() - start < 1.0
    assert results == [None, None, MAX_TEXT // 2, None, None]


@pytest.mark.parametrize(("text", "expected"), [
    ("42", 42), (" -7 ", -7), ("0x1F", 31), ("0755", 493), ("09", None), ("4.5", None),
    ("", None), ("1e3", None), ("9223372036854775808", None),
])
def test_constants(text: str, expected: int | None) -> None:
    assert constant(text) == expected
