"""Position sequences stand in for the list of (line, column) they describe, and words place
their characters only when asked."""

from __future__ import annotations

import random

import pytest

from tpcheck.sources.base import Span
from tpcheck.sources.positions import Linear, LineIndex, Located, Runs, from_file
from tpcheck.sources.shell import Vars, tokenize
from tpcheck.sources.yaml_scalar import locate


def _runs(spec: list[tuple[int, int, int]]) -> tuple[Runs, list[tuple[int, int]]]:
    """A Runs and the plain list it stands for: one (line, col, length) per run."""
    r = Runs()
    out: list[tuple[int, int]] = []
    for line, col, k in spec:
        r.add(line, col, k)
        out.extend((line, col + d) for d in range(k))
    return r, out


def test_runs_merge_a_run_that_continues_the_last() -> None:
    r, full = _runs([(3, 5, 4), (3, 9, 1), (4, 1, 2), (4, 7, 0), (6, 2, 3)])
    # (3, 9) follows (3, 5..8) on the same line: one run; a zero-length add adds nothing
    assert (r.offs, r.lines, r.cols, r.n) == ([0, 5, 7], [3, 4, 6], [5, 1, 2], 10)
    assert list(r) == full and len(r) == len(full) == 10


def test_runs_index_slice_and_search_like_the_list() -> None:
    rng = random.Random(8)
    for _ in range(200):
        spec, line = [], 1
        for _ in range(rng.randint(1, 6)):
            line += rng.randint(0, 2)
            spec.append((line, rng.randint(1, 30), rng.randint(0, 5)))
        # keep positions strictly increasing, as readers build them
        spec = [(ln, c, k) for ln, c, k in spec if k]
        r, full = _runs(sorted(set(spec)))
        if len(set(full)) != len(full) or full != sorted(full):
            continue
        n = len(full)
        for i in range(-n, n):
            assert r[i] == full[i]
        with pytest.raises(IndexError):
            r[n]
        for a in range(n + 1):
            for b in range(a, n + 2):
                assert list(r[a:b]) == full[a:b], (spec, a, b)
        assert list(r[::2]) == full[::2]
        for k, p in enumerate(full):
            assert r.index(p) == k
        with pytest.raises(ValueError):
            r.index((0, 0))


def test_a_slice_inside_one_run_is_a_linear() -> None:
    r, _ = _runs([(2, 3, 10), (5, 1, 10)])
    assert isinstance(r[12:15], Linear) and list(r[12:15]) == [(5, 3), (5, 4), (5, 5)]
    assert r[4:4] == ()


def test_block_scalar_positions_are_runs_per_line() -> None:
    text = "cmd: |\n  vllm serve m \\\n    --tensor-parallel-size 8\nx: 1\n"
    import yaml

    from tpcheck.sources.yamlctx import LOADER

    node = yaml.compose(text, Loader=LOADER).value[0][1]
    loc = locate(node, LineIndex(text), "f.yaml")
    assert isinstance(loc.positions, Runs)
    # the 8 is on line 3: 4 spaces of indentation kept past the block's 2, then
    # "--tensor-parallel-size " (23 chars) -> column 2 + 2 + 23 + 1 = 28
    k = loc.value.index("8")
    assert loc.positions[k] == (3, 28)
    assert list(loc.positions) == [loc.positions[i] for i in range(len(loc.value))]


def test_words_are_placed_only_when_asked() -> None:
    text = "echo hi\nvllm serve m --tensor-parallel-size 8\n"
    loc = from_file(LineIndex(text), "run.sh")
    cmds = list(tokenize(loc, Vars()))
    words = cmds[1]
    assert [w.value for w in words] == ["vllm", "serve", "m", "--tensor-parallel-size", "8"]
    assert all(w._text is None and w._raw is None for w in words)  # nothing placed yet
    eight = words[-1]
    # line 2: "vllm serve m --tensor-parallel-size " is 36 characters: the 8 is column 37
    assert eight.value_span() == Span("run.sh", 2, 37, 2, 38)
    assert eight.raw_span == Span("run.sh", 2, 37, 2, 38)
    assert words[0]._text is None  # only the word asked for was placed


def test_expanded_word_keeps_the_assignment_place_and_the_written_text() -> None:
    text = 'TP=4\nvllm serve m --tensor-parallel-size "$TP" --pipeline-parallel-size $PP\n'
    loc = from_file(LineIndex(text), "run.sh")
    v = Vars()
    v.shell["TP"] = loc.sub(3, 4)  # what read_commands records for TP=4 (the 4 at 1:4)
    words = list(tokenize(loc, v))[1]
    tp, pp = words[4], words[6]
    assert tp.value == "4" and tp.var_span == Span("run.sh", 1, 4, 1, 5)
    assert tp.text.positions[0] == (1, 4)  # the 4 sits where it was assigned
    # '"$TP"' is written at line 2, columns 37..41 (36 characters before its opening quote)
    assert tp.raw_span == Span("run.sh", 2, 37, 2, 42)
    assert pp.value == "$PP" and pp.unresolved == "$PP"  # never assigned: kept as written


def test_unresolved_word_without_positions_is_kept_as_written() -> None:
    fb = Span("x.py", 3, 10, 3, 40)
    loc = Located("vllm serve m --tp ${TP:-$N}", (), fb, "x.py")
    words = next(iter(tokenize(loc, Vars())))
    assert words[-1].unresolved == "${TP:-$N}"
    assert words[-1].raw_span == Span("x.py", 3, 10, 3, 11)  # everything on the fallback


def test_line_starts_are_worked_out_only_when_asked() -> None:
    import yaml

    from tpcheck.sources.yamlctx import LOADER

    text = "a: 1\nbb: [x, 'y']\n"
    ix = LineIndex(text)
    doc = yaml.compose(text, Loader=LOADER)
    y = doc.value[1][1].value[1]
    # 'y' starts at line 2 (0-based 1), column 8: offset 5 ("a: 1\n") + 8 = 13
    assert ix.offset_of(y.start_mark) == 13 == text.index("'y'")
    assert ix._starts is None  # ASCII: the mark's own index was the offset
    assert ix.starts == [0, 5, 18]  # "a: 1\n" is 5 characters, "bb: [x, 'y']\n" 13 more


def test_non_ascii_text_is_placed_by_line_and_column() -> None:
    from tpcheck.sources import read_path

    ascii_text = (
        "containers:\n- name: x\n  command: [vllm, serve, m, --tensor-parallel-size, '8']\n")
    accented = "# modèle\n" + ascii_text
    spans = []
    for text in (ascii_text, accented):
        d = read_path("d.yaml", text).deployments[0]
        spans.append(d.spans["tensor_parallel_size"])
    # line 3: "  command: [vllm, serve, m, --tensor-parallel-size, " is 52 characters, so the
    # 8 (inside quotes) is column 54; one comment line above moves it to line 4, same column
    assert (spans[0].line, spans[0].column) == (3, 54)
    assert (spans[1].line, spans[1].column) == (4, 54)


def test_an_empty_quoted_value_is_placed_at_its_quotes() -> None:
    from tpcheck.sources import read_path

    text = 'vllm serve m --max-model-len "" --tensor-parallel-size 8\n'
    rr = read_path("run.sh", text)
    assert rr.errors == ()
    d = rr.deployments[0]
    assert d.tensor_parallel_size == 8 and d.max_model_len is None
    # "vllm serve m --max-model-len " is 29 characters: the empty "" is columns 30-31
    s = d.spans["max_model_len"]
    assert (s.line, s.column, s.end_column) == (1, 30, 32)
