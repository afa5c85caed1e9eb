"""The option strings the walk reacts to: the first texts of a process are scanned with str
methods (``_option_scan``), the rest with the compiled pattern; the scan equals the pattern on
every corpus and fixture file, and on random texts of dashes, option letters, word characters
ASCII and not, and separators."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpcheck.sources import hints
from tpcheck.sources.hints import _HINT_FLAGS, _SHORTS, _option_scan

ROOT = Path(__file__).resolve().parents[2]
# what tpcheck compiled before (one alternation: long options, then the few short ones by name)
PATTERN = re.compile(r"--[A-Za-z][\w-]*|-(?:" + "|".join(map(re.escape, _SHORTS)) + r")(?![\w-])")


def by_pattern(text: str, flags: frozenset[str] | set[str]) -> list[int]:
    return [m.start() for m in PATTERN.finditer(text) if m[0] in flags]


def every_match(text: str) -> list[int]:
    """Offsets of every match, whatever it spells (a set that holds each one)."""
    return by_pattern(text, {m[0] for m in PATTERN.finditer(text)})


def test_the_short_options_are_the_three_parallel_sizes() -> None:
    # SGLang's -tp/-pp/-dp (the scan's docstring spells them out; a new one would show here)
    assert _SHORTS == ("dp", "pp", "tp")
    assert hints._OPTION.pattern == PATTERN.pattern  # the module's pattern is the one tested


def test_past_the_first_texts_the_pattern_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "vllm serve m --tensor-parallel-size 8 -tp 2 --x-tp --max-model-len=9"
    monkeypatch.setattr(hints, "_scans", [0])
    answers = [hints._option_offsets(text, _HINT_FLAGS)
               for _ in range(hints._SCANNED_FIRST + 2)]
    # --tensor-parallel-size at 13, -tp at 13 + 25 = 38, --max-model-len at 38 + 6 + 7 = 51
    # (--x-tp, at 44, is no hint flag, and its -tp is part of it), both ways
    assert answers == [[13, 38, 51]] * (hints._SCANNED_FIRST + 2)
    assert hints._scans == [hints._SCANNED_FIRST]


TEXTS = sorted([*ROOT.glob("fixtures/**/*.yaml"), *ROOT.glob("fixtures/**/*.sh"),
                *(ROOT.parent / "shared" / "corpus" / "real").glob("**/*.y*ml")])


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_equal_to_the_pattern_on_real_files(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    assert _option_scan(text, _HINT_FLAGS) == by_pattern(text, _HINT_FLAGS)
    words = {m[0] for m in PATTERN.finditer(text)}
    assert _option_scan(text, words) == every_match(text)


@pytest.mark.parametrize(("text", "want"), [
    ("vllm serve m --tensor-parallel-size 8", [13]),
    ("---tp 2", [1]),  # a run of dashes: its last two start the option
    ("-------------------- -tp 2", [21]),
    ("--foo-tp 2 -tp", [0, 11]),  # -tp inside --foo-tp is consumed by it
    ("-tpx -tp_ -tp-a -tp", [16]),  # followed by a word character: not -tp
    ("--a\u00e9b --x\u0668y --x\u00b7", [0, 6, 12]),  # é and ٨ are \w; · is not
    ("x" * 70 + " --" + "a" * 130 + "!", [71]),  # a word longer than one 64-character chunk
    ("", []), ("--", []), ("-", []), ("--9 -dp", [4]),
])
def test_offsets_of_every_match(text: str, want: list[int]) -> None:
    assert every_match(text) == want  # the pattern's own answer, so the cases test something
    assert _option_scan(text, {m[0] for m in PATTERN.finditer(text)}) == want


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="--- dptxa_9Z\u00e9\u0668\u00b7\n=.", max_size=80))
def test_equal_to_the_pattern_on_random_texts(text: str) -> None:
    assert _option_scan(text, {m[0] for m in PATTERN.finditer(text)}) == every_match(text)
