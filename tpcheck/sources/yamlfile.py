"""YAML files: every document composed once (node marks kept), then read by shape."""

from __future__ import annotations

import re

import yaml

from tpcheck.sources.base import RECOVERED_NOTE, Deployment, ReadResult, SourceError, Span
from tpcheck.sources.kube import Walker
from tpcheck.sources.positions import LineIndex, Located, Runs
from tpcheck.sources.vllm_config import looks_like_config, read_config
from tpcheck.sources.yamlctx import LOADER, Ctx


def read_yaml(path: str, text: str) -> ReadResult:
    index = LineIndex(text)
    ctx = Ctx(path, index)
    found: list[Deployment] = []
    errors: list[SourceError] = []
    try:
        for doc in yaml.compose_all(text, Loader=LOADER):
            if doc is None:
                continue
            if looks_like_config(doc):
                found.extend(read_config(doc, ctx))
            else:
                found.extend(Walker(ctx).run(doc))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = (e.problem or e.context or "invalid YAML").strip()
        errors.append(SourceError(path, line, col, f"YAML does not parse: {problem}"))
        if not found:
            found.extend(_recover(path, index))
    except yaml.YAMLError as e:
        errors.append(SourceError(path, 1, 1, f"YAML does not parse: {str(e).splitlines()[0]}"))
    return ReadResult(path, tuple(found), tuple(errors), text)


_KEY = re.compile(r"^\s*(?:-\s+)?(?:[A-Za-z0-9_.\-/\"']+:(?:\s+|$))?(?:[|>][-+0-9]*\s*$)?")


_COMMENT_START = re.compile(r"(?:^|(?<=\s))#")


def _recover(path: str, index: LineIndex) -> list[Deployment]:
    """After a parse error: read the text's values as one word stream, so an engine launch in
    a broken manifest is still shown (each marked as recovered)."""
    from tpcheck.sources.kube import hint_offsets

    if not hint_offsets(index.text):
        return []  # no engine name, CRD key or engine option anywhere: nothing to recover
    from tpcheck.sources.argv import Launch, deployment_from_words, find_launch, infer_engine
    from tpcheck.sources.shell import Vars, tokenize

    chars: list[str] = []
    pos = Runs()  # a run per line, not a tuple per character
    for ln_no, line in enumerate(index.text.split("\n"), start=1):
        if line.startswith(("<<<<<<<", "=======", ">>>>>>>")):
            continue
        m = _KEY.match(line)
        start = m.end() if m else 0
        body = line[start:]
        if body.strip().startswith("#"):
            body = ""
        if "#" in body:
            # a comment: '#' at the start or after a blank, with no quote after it (linear:
            # the search starts past the last quote)
            q = max(body.rfind("'"), body.rfind('"'))
            c = _COMMENT_START.search(body, q + 1)
            if c is not None:
                body = body[: c.start()]
        body = body.rstrip()
        if body.endswith("\\"):
            body = body[:-1]
        chars.append(body)
        pos.add(ln_no, start + 1, len(body))
        chars.append(" ")
        pos.add(ln_no, len(line) + 1, 1)
    fb = Span(path, 1, 1, 1, 1)
    loc = Located("".join(chars), pos, fb, path)
    out: list[Deployment] = []
    note = RECOVERED_NOTE
    for words in tokenize(loc, Vars()):
        values = [w.value for w in words]
        la = find_launch(values)
        if la is None:
            eng = infer_engine(values, None)
            if eng is None or not any(v.startswith("--") for v in values):
                continue
            first = next(i for i, v in enumerate(values) if v.startswith("--"))
            la = Launch(eng, first, first, False, inferred=True)
        out.append(deployment_from_words(path, words, la, notes=[note]))
    return out
