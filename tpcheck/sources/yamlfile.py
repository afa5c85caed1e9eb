"""YAML files: every document composed once (node marks kept), then read by shape."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from tpcheck.deferred import lazy_re
from tpcheck.engines.flags import FLAGS
from tpcheck.sources.base import (
    MAX_LAUNCHES,
    RECOVERED_NOTE,
    Deployment,
    ReadResult,
    SourceError,
    Span,
)
from tpcheck.sources.kube import Walker
from tpcheck.sources.positions import LineIndex, Located, Runs
from tpcheck.sources.pyyaml import ReaderError, yaml
from tpcheck.sources.yamlctx import LOADER, Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def read_yaml(path: str, text: str) -> ReadResult:
    return read_yaml_docs(path, text)[0]


def read_yaml_docs(path: str, text: str) -> tuple[ReadResult, list[Any] | None]:
    """``read_yaml``, and the file's documents (None ones left out) when every one of them was
    composed from ``text`` as written, for the readers after it (a lone patch's note, the KServe
    pairing) to look at the same nodes instead of composing the file again; None when it was
    read as a template, did not parse or was not composed to its end."""
    if "{{" in text:
        from tpcheck.sources.helm import is_template

        if is_template(path, text):
            return read_template(path, text), None
    index = LineIndex(text)
    ctx = Ctx(path, index)
    found: list[Deployment] = []
    errors: list[SourceError] = []
    docs: list[Any] | None = []
    try:
        docs = _compose(text, ctx, found)
    except yaml.MarkedYAMLError as e:
        docs = None
        if "{{" in text and not found:
            # Go-template actions outside a chart's templates folder (a values file fed to
            # ``tpl``, a template kept elsewhere): read them neutralised when that parses.
            res = read_template(path, text, chart=False)
            if not res.errors:
                return res, None
        errors.append(_parse_error(path, e, None))
        if not found:
            found.extend(_recover(path, index))
    except yaml.YAMLError as e:
        docs = None
        errors.append(_unmarked_error(path, e, index))
    return ReadResult(path, tuple(found), tuple(errors), text), docs


def _unmarked_error(path: str, e: yaml.YAMLError, index: LineIndex) -> SourceError:
    """A YAML error without a mark: a ReaderError (a NUL, a control character) still knows the
    character's offset, so the error points at it rather than at 1:1."""
    if isinstance(e, ReaderError) and isinstance(e.position, int) and index.text:
        line, col = index.pos(min(e.position, len(index.text) - 1))
        return SourceError(path, line, col, f"YAML does not parse: {e.reason} "
                           f"(character #x{e.character:04x})")
    return SourceError(path, 1, 1, f"YAML does not parse: {str(e).splitlines()[0]}")


def _compose(text: str, ctx: Ctx, found: list[Deployment]) -> list[Any] | None:
    """Every document's launches into ``found``; the documents after the one that takes it past
    MAX_LAUNCHES are not composed (``sources.read_path`` keeps the first MAX_LAUNCHES and says
    where reading stopped). The documents composed, or None when reading stopped early."""
    docs: Any = yaml.compose_all(text, Loader=LOADER)
    llm = "LLMInferenceService" in text  # KServe: a service's baseRefs name configs beside it
    if llm:
        from tpcheck.sources import llmisvc

        docs = list(docs)
    kept: list[Any] = []
    for doc in docs:
        if len(found) > MAX_LAUNCHES:
            return None
        if doc is None:
            continue
        kept.append(doc)
        if llm and llmisvc.kind_of(doc) is not None:
            found.extend(llmisvc.read_llmisvc(doc, ctx, docs))
        elif is_dstack(doc):
            from tpcheck.sources.dstack import read_dstack

            found.extend(read_dstack(doc, ctx))
        elif looks_like_config(doc):
            from tpcheck.sources.vllm_config import read_config

            found.extend(read_config(doc, ctx))
        else:
            found.extend(Walker(ctx).run(doc))
    # an LLMInferenceService's reader sees every document: the readers after it compose anew
    return None if llm else kept


# What a document is, asked of every one: here, so that a Kubernetes manifest imports neither
# the dstack reader nor the vLLM --config reader (each a module to import on every YAML lint).
DSTACK_TYPES = frozenset({"service", "task", "dev-environment"})


def is_dstack(root: Any) -> bool:
    """A dstack run configuration (``tpcheck.sources.dstack``): a mapping with
    ``type: service|task|dev-environment`` and ``commands``."""
    if not isinstance(root, yaml.MappingNode):
        return False
    keys = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
    kind = keys.get("type")
    return (isinstance(kind, yaml.ScalarNode) and kind.value in DSTACK_TYPES
            and "commands" in keys and "kind" not in keys and "apiVersion" not in keys)


def looks_like_config(root: Any) -> bool:
    """A vLLM ``--config`` file (``tpcheck.sources.vllm_config``): a flat mapping with no
    ``kind`` whose keys include a parallel/model engine flag, and whose keys are mostly vLLM
    options: vLLM turns every key into ``--key``, so in a real config they all are. A Helm
    values file (``model:`` beside ``image:``, ``resources:``) or a dstack service (``type:``,
    ``commands:``) names a flag or two among its own keys."""
    if not isinstance(root, yaml.MappingNode):
        return False
    keys = [k.value for k, _ in root.value if isinstance(k, yaml.ScalarNode)]
    if "kind" in keys or "apiVersion" in keys or "services" in keys:
        return False
    table = FLAGS["vllm"]
    hits = options = 0
    for k in keys:
        flag = table.get("--" + str(k).replace("_", "-"))
        options += flag is not None
        if flag is not None and flag.field in (
            "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "model",
            "max_model_len", "max_num_seqs",
        ):
            hits += 1
    return hits >= 1 and 2 * options > len(keys) and any(
        str(k).replace("_", "-") in ("tensor-parallel-size", "model", "pipeline-parallel-size")
        for k in keys
    )


def _parse_error(path: str, e: yaml.MarkedYAMLError, outer: Located | None) -> SourceError:
    mark = e.problem_mark or e.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    if outer is not None and mark is not None:
        # a rendered template: back to the character of the file the mark stands on
        ps = outer.positions
        off = LineIndex(outer.value).offset_of(mark)
        if ps:
            line, col = ps[min(off, len(ps) - 1)]
    problem = (e.problem or e.context or "invalid YAML").strip()
    what = "Helm template does not parse once its actions are set aside" if outer else (
        "YAML does not parse")
    return SourceError(path, line, col, f"{what}: {problem}")


def read_template(path: str, text: str, chart: bool = True) -> ReadResult:
    """A Helm template: actions neutralised (``tpcheck.sources.helm``), values.yaml applied,
    positions kept. A template that still does not parse is one error line, no recovery:
    what the text holds between actions is not a launch anyone can read."""
    from tpcheck.sources.helm import chart_root, chart_values, render, values_problem

    root = chart_root(path) if chart else None
    values, values_error = chart_values(root)
    r = render(path, text, values, root, values_error)
    if isinstance(r, SourceError):
        return ReadResult(path, (), (r,), text)
    ctx = Ctx(path, LineIndex(r.text.value), r.text)
    found: list[Deployment] = []
    problem = values_problem(root, values_error)
    errors: list[SourceError] = [] if problem is None else [problem]
    try:
        _compose(r.text.value, ctx, found)
    except yaml.MarkedYAMLError as e:
        errors.append(_parse_error(path, e, r.text))
    except yaml.YAMLError as e:
        errors.append(SourceError(path, 1, 1, f"YAML does not parse: {str(e).splitlines()[0]}"))
    if root is not None:
        note = f"Helm template: values from {os.path.join(root, 'values.yaml')}"
    else:
        note = "Go template: actions set aside, no chart values"
    if r.unresolved:
        note += f"; {r.unresolved} action(s) left unresolved"
    if values_error:
        note += f"; {values_error}"
    out = tuple(restored(d, r.restore, note, r.origin_spans) for d in found)
    return ReadResult(path, out, tuple(errors), text)


def restored(d: Deployment, restore: Callable[[str], str], note: str,
             origins: Callable[[Mapping[str, Span]], dict[str, Span]] | None = None
             ) -> Deployment:
    """The Deployment with each placeholder shown as the action it stands for, and (``origins``)
    where in values.yaml each value read from an action is written."""
    from tpcheck.record import replace

    kw: dict[str, object] = {}
    if origins is not None:
        kw["origins"] = origins(d.spans)
    for name in ("model", "served_model_name", "revision", "image", "kv_cache_dtype",
                 "quantization", "dtype", "gpu_product", "distributed_executor_backend"):
        v = getattr(d, name)
        if isinstance(v, str) and "$(_H" in v:
            kw[name] = restore(v)
    kw["unresolved"] = {k: restore(v) for k, v in d.unresolved.items()}
    kw["env"] = {k: restore(v) for k, v in d.env.items()}
    kw["notes"] = (*(restore(n) for n in d.notes), note)
    return replace(d, **kw)


_KEY = lazy_re(r"^\s*(?:-\s+)?(?:[A-Za-z0-9_.\-/\"']+:(?:\s+|$))?(?:[|>][-+0-9]*\s*$)?")


_COMMENT_START = lazy_re(r"(?:^|(?<=\s))#")


def _recover(path: str, index: LineIndex) -> list[Deployment]:
    """After a parse error: read the text's values as one word stream, so an engine launch in
    a broken manifest is still shown (each marked as recovered)."""
    from tpcheck.sources.hints import hint_offsets

    if not hint_offsets(index.text):
        return []  # no engine name, CRD key or engine option anywhere: nothing to recover
    from tpcheck.sources.argv import Launch, deployment_from_words, find_launch, infer_engine
    from tpcheck.sources.shell import Vars, tokenize

    bodies: list[str] = []  # each line's value; one blank after each
    # Runs built in place (a run per line, or two when the value stops short of the line's
    # end), as Runs.add would: a line's first run never continues the line before's.
    offs: list[int] = []
    lines: list[int] = []
    cols: list[int] = []
    n = 0
    key = _KEY.match
    for ln_no, line in enumerate(index.text.split("\n"), start=1):
        if line.startswith(("<<<<<<<", "=======", ">>>>>>>")):
            continue
        m = key(line)
        start = m.end() if m else 0
        body = line[start:]
        if body.lstrip().startswith("#"):
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
        bodies.append(body)
        k = len(body)
        if k:
            offs.append(n)
            lines.append(ln_no)
            cols.append(start + 1)
            n += k
        if not k or start + k != len(line):  # the blank after it starts a run of its own
            offs.append(n)
            lines.append(ln_no)
            cols.append(len(line) + 1)
        n += 1
    pos = Runs()
    pos.offs, pos.lines, pos.cols, pos.n = offs, lines, cols, n
    fb = Span(path, 1, 1, 1, 1)
    loc = Located(" ".join(bodies) + " " if bodies else "", pos, fb, path)
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
