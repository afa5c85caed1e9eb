"""The linter's resolution memo: a reference that resolves as written is looked up once per
(model, revision, folder), whatever the file's hints; one that does not is kept per hints too,
since the served name, a file's other hints or a local folder change which model it is.
Offline, with an empty HF cache: only the bundled catalog (and local folders) answer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tpcheck.lint import Linter
from tpcheck.models import catalog
from tpcheck.settings import Settings
from tpcheck.sources import read_path

# offline, with an empty HF cache (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("empty_hf_cache")


def shapes(tmp_path: Path, script: str) -> tuple[Linter, list[tuple[object, ...]]]:
    path = tmp_path / "app" / "run.sh"
    path.parent.mkdir(exist_ok=True)
    path.write_text(script)
    linter = Linter(Settings().with_flags(offline=True), gpu_flag="h100-sxm")
    out = []
    for d in read_path(str(path)).deployments:
        shape, problem, source = linter.shape_for(d)
        out.append((shape.heads if shape else None, shape.name if shape else None, problem,
                    source, linter.model_hint(d)))
    return linter, out


def test_same_model_other_served_names_resolve_apart(tmp_path: Path) -> None:
    linter, got = shapes(tmp_path, (
        "vllm serve /models/ft --served-model-name Qwen/Qwen3-8B -tp 2\n"
        "vllm serve /models/ft --served-model-name Qwen/Qwen3-32B -tp 2\n"
        "vllm serve /models/ft --served-model-name Qwen/Qwen3-8B -tp 4\n"
        "vllm serve /models/ft -tp 2\n"))
    (h8, n8, p8, _, hint8), (h32, n32, p32, _, hint32), again, (_, _, p0, _, hint0) = got
    assert (h8, h32) == (32, 64) and p8 is None and p32 is None  # Qwen3-8B, Qwen3-32B
    assert n8 == n32 == "/models/ft"  # the shape keeps the name the file gives
    assert hint8 is not None and "Qwen/Qwen3-8B" in hint8
    assert hint32 is not None and "Qwen/Qwen3-32B" in hint32
    assert again == got[0]  # the same hints: the same answer
    assert p0 is not None and hint0 is None  # no hint: not found, not another file's model
    assert not linter._resolved  # nothing resolved as written, so nothing kept without hints


KSERVE = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: m
spec:
  predictor:
    model:
      modelFormat:
        name: huggingface
      args:
        - --tensor-parallel-size=2
      storageUri: {uri}
"""


def test_no_reference_other_file_hints_resolve_apart(tmp_path: Path) -> None:
    # no --model at all, only each file's storageUri: the same (empty) reference, two models
    folder = tmp_path / "app"
    folder.mkdir()
    uris = ("hf://Qwen/Qwen3-8B", "hf://Qwen/Qwen3-32B", "hf://Qwen/Qwen3-8B")
    linter = Linter(Settings().with_flags(offline=True), gpu_flag="h100-sxm")
    heads = []
    for i, uri in enumerate(uris):
        (folder / f"isvc{i}.yaml").write_text(KSERVE.format(uri=uri))
        (d,) = read_path(str(folder / f"isvc{i}.yaml")).deployments
        assert d.model is None and d.model_hints
        shape, problem, _ = linter.shape_for(d)
        assert problem is None and shape is not None
        hint = linter.model_hint(d)
        assert hint is not None and uri in hint
        heads.append(shape.heads)
    assert heads == [32, 64, 32]


def test_a_local_folder_wins_in_its_own_folder_only(tmp_path: Path) -> None:
    # the same hub id resolves to the catalog in one folder and to a local copy in another
    # (the file's folder is in the memo's key, as it is where a relative path is looked for)
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "Qwen" / "Qwen3-8B").mkdir(parents=True)
    entry = catalog.find("Qwen/Qwen3-32B")
    assert entry is not None
    shutil.copyfile(entry.config_path, tmp_path / "b" / "Qwen" / "Qwen3-8B" / "config.json")
    linter = Linter(Settings().with_flags(offline=True), gpu_flag="h100-sxm")
    got = []
    for sub in ("a", "b", "a"):
        path = tmp_path / sub / "run.sh"
        path.write_text("vllm serve Qwen/Qwen3-8B --served-model-name Qwen/Qwen3-32B -tp 2\n")
        (d,) = read_path(str(path)).deployments
        shape, _, source = linter.shape_for(d)
        assert shape is not None and source is not None
        got.append((shape.heads, source.split(":", 1)[0]))
    assert got == [(32, "catalog"), (64, "local"), (32, "catalog")]


def test_one_reference_resolved_as_written_is_one_lookup(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _, got = shapes(tmp_path, (
        "vllm serve Qwen/Qwen3-8B --served-model-name a -tp 2\n"
        "vllm serve Qwen/Qwen3-8B --served-model-name b -tp 2\n"
        "vllm serve Qwen/Qwen3-8B -tp 2\n"))
    assert {g[0] for g in got} == {32} and all(g[4] is None for g in got)
    linter = Linter(Settings().with_flags(offline=True), gpu_flag="h100-sxm")
    asked: list[str] = []
    ask = linter.resolver.resolve_hinted

    def counted(model: str, **kw: object) -> object:
        asked.append(model)
        return ask(model, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(linter.resolver, "resolve_hinted", counted)
    for d in read_path(str(tmp_path / "app" / "run.sh")).deployments:
        linter.shape_for(d)
    assert asked == ["Qwen/Qwen3-8B"]  # the served names did not ask again


def test_one_config_is_parsed_once_for_two_names(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import tpcheck.models.config as config

    parsed: list[str] = []
    parse = config.parse_config

    def counted(cfg: object, **kw: object) -> object:
        parsed.append(str(kw.get("name")))
        return parse(cfg, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(config, "parse_config", counted)
    # a folder named after the model and the hub id: the same catalog config.json
    _, got = shapes(tmp_path, (
        "vllm serve /models/Qwen3-8B -tp 2\n"
        "vllm serve Qwen/Qwen3-8B -tp 2\n"))
    assert [g[1] for g in got] == ["/models/Qwen3-8B", "Qwen/Qwen3-8B"]
    assert got[0][3] == got[1][3].split(" (")[0] + f" ({got[0][4]})"
    assert parsed == ["/models/Qwen3-8B"]


def test_a_shape_s_name_is_not_its_value(tmp_path: Path) -> None:
    # the physics' memos key on the shape: one config under two names is priced once
    linter, _ = shapes(tmp_path, ("vllm serve /models/Qwen3-8B -tp 2\n"
                                  "vllm serve Qwen/Qwen3-8B -tp 2\n"))
    a, b = linter.shapes.values()
    assert a is not b and a.name != b.name
    assert a == b and hash(a) == hash(b)


def test_the_resolver_raises_a_kept_error_as_a_copy(tmp_path: Path) -> None:
    from tpcheck.models.resolve import ResolveError, Resolver

    r = Resolver(offline=True, cwd=str(tmp_path))
    raised = []
    for _ in range(2):
        with pytest.raises(ResolveError) as e:
            r.resolve("acme/never-published")
        raised.append(e.value)
    first, second = raised
    assert first is not second
    assert (first.kind, first.message, first.tried) == (second.kind, second.message,
                                                        second.tried)
    assert str(first) == str(second) == first.message
    (kept,) = r._resolved.values()
    assert isinstance(kept, ResolveError) and kept not in raised
    assert kept.__traceback__ is None and kept.__context__ is None
    # an answer is kept too: the same Resolution, not a second lookup
    assert r.resolve("Qwen/Qwen3-8B") is r.resolve("Qwen/Qwen3-8B")
