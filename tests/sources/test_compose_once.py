"""A YAML file is composed once: the lone-patch note and the KServe pairing look at the nodes the
reader composed (``yamlfile.read_yaml_docs``), and say what they said when each composed the
file again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sources.test_kustomize import DEPLOY, PATCH
from tpcheck.record import replace
from tpcheck.sources import kustomize, read_path
from tpcheck.sources.base import MAX_LAUNCHES, ReadResult
from tpcheck.sources.kserve import pair_kserve
from tpcheck.sources.yamlfile import read_yaml, read_yaml_docs

PAIR = Path(__file__).resolve().parents[2] / "fixtures" / "reach4" / "kserve-pair"


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def seen(res: ReadResult) -> list[tuple[object, ...]]:
    """What a report shows of each launch: every field, and each option where it is placed (an
    option's ``locate`` is a closure, equal only to itself)."""
    return [(replace(d, options=()), [(o.written, o.value, o.locate()) for o in d.options])
            for d in res.deployments]


def test_the_reader_hands_over_every_document_it_composed() -> None:
    text = "---\nkind: ConfigMap\n---\n---\nkind: Service\n"
    res, docs = read_yaml_docs("x.yaml", text)
    # three documents, the empty middle one an empty scalar (as compose_all gives it)
    assert docs is not None
    assert [kustomize.identity(d)[0] for d in docs] == ["ConfigMap", None, "Service"]
    assert docs[1].value == ""
    assert read_yaml_docs("x.yaml", "# nothing\n")[1] == []  # no document: nothing composed
    assert res == read_yaml("x.yaml", text)


@pytest.mark.parametrize("text", [
    "a: [1, 2\n",  # does not parse
    # Go actions that do not parse as YAML: read as a template, from the rendered text
    "x: {{ .Values.tp }} y\n",
])
def test_no_documents_when_the_file_was_not_composed_as_written(text: str) -> None:
    assert read_yaml_docs("x.yaml", text)[1] is None


def test_no_documents_when_reading_stopped_early() -> None:
    # MAX_LAUNCHES + 2 single-launch documents: the last one is never composed
    doc = "command: [vllm, serve, m, --tensor-parallel-size, '2']\n"
    text = "---\n".join([doc] * (MAX_LAUNCHES + 2))
    res, docs = read_yaml_docs("x.yaml", text)
    assert docs is None
    assert len(res.deployments) == MAX_LAUNCHES + 1  # read_path keeps the first MAX_LAUNCHES


def test_the_lone_patch_note_is_the_same_from_the_shared_nodes(tmp_path: Path) -> None:
    (tmp_path / "srv.yaml").write_text(DEPLOY)
    (tmp_path / "srv").mkdir()
    patch = tmp_path / "srv" / "patch.yaml"
    patch.write_text(PATCH)
    res, docs = read_yaml_docs(str(patch), PATCH)
    assert docs is not None and len(docs) == 1
    shared = kustomize.note_lone_patch(str(patch), res, docs)
    again = kustomize.note_lone_patch(str(patch), res)  # composes the text itself
    assert shared == again
    (d,) = shared.deployments
    assert d.notes[-1].endswith("kustomize would merge it into Deployment srv in ../srv.yaml; "
                                "lint the overlay's kustomization.yaml, or the base")
    assert read_path(str(patch)).deployments[0].notes == d.notes


def test_the_kserve_pairing_is_the_same_from_the_shared_nodes() -> None:
    path = str(PAIR / "inferenceservice.yaml")
    text = (PAIR / "inferenceservice.yaml").read_text()
    res, docs = read_yaml_docs(path, text)
    assert docs is not None
    shared = pair_kserve(path, text, res, docs)
    again = pair_kserve(path, text, res)
    assert seen(shared) == seen(again)
    assert (shared.errors, shared.notes) == (again.errors, again.notes) == ((), ())
    # the two InferenceServices, each read on the runtime beside it (test_kserve's figures)
    assert [d.tensor_parallel_size for d in shared.deployments] == [8, 1]
    assert seen(read_path(path)) == seen(shared)
