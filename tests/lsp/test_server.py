"""``tpcheck lsp`` over stdio with pytest-lsp's real client: diagnostics, hover, code actions.

Documents are opened under a temporary folder but never written there: the server must lint
the text the editor holds, not the disk.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.conftest import REPO
from tpcheck.sources.base import MAX_LAUNCHES

pytestmark = pytest.mark.asyncio

MANIFEST = (REPO / "fixtures" / "lint" / "qwen3-32b-tp16.yaml").read_text(encoding="utf-8")
SERVE = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 --max-model-len 32768\n"

# Qwen3-32B config.json (bundled catalog): L = 64 layers, h_kv = 8, head_dim d_h = 128, bf16.
# At t = 16 > h_kv each GPU keeps max(1, floor(8/16)) = 1 KV head, so
# KV bytes per token per GPU = 2·L·1·d_h·b_kv = 2·64·1·128·2 = 32,768 B, and the cache is
# replicated t / h_kv = 16 / 8 = 2 times.
KV_LINE = "kv_bytes_per_token_per_gpu = 2·L·max(1, floor(h_kv/t))·d_h·b_kv = 32,768 B"
REPLICAS_LINE = "kv_replicas = max(1, t / h_kv) = 2"


def where(text: str, line_text: str, token: str) -> lsp.Range:
    """The 0-based range of ``token`` on the (only) line equal to ``line_text``."""
    lines = text.split("\n")
    row = lines.index(line_text)
    col = line_text.index(token)
    return lsp.Range(lsp.Position(row, col), lsp.Position(row, col + len(token)))


def published(client: LanguageClient) -> list[lsp.PublishDiagnosticsParams]:
    log: list[lsp.PublishDiagnosticsParams] = client.published  # type: ignore[attr-defined]
    return log


async def publish(client: LanguageClient, uri: str, version: int | None) -> list[lsp.Diagnostic]:
    """The next diagnostics of ``uri`` at ``version``; what came before for ``uri`` is consumed."""
    log = published(client)
    for _ in range(3000):  # 30 s
        for i, p in enumerate(log):
            if p.uri == uri and p.version == version:
                log[:] = [q for q in log[i + 1:]] + [q for q in log[:i] if q.uri != uri]
                return list(p.diagnostics)
        await asyncio.sleep(0.01)
    raise AssertionError(f"no diagnostics for {uri} at version {version}: {log}")


def open_doc(client: LanguageClient, uri: str, text: str, language: str) -> None:
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))


def change(client: LanguageClient, uri: str, version: int, rng: lsp.Range | None,
           text: str) -> None:
    ev: Any = (lsp.TextDocumentContentChangePartial(range=rng, text=text) if rng is not None
               else lsp.TextDocumentContentChangeWholeDocument(text=text))
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), [ev]))


def apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply non-overlapping ASCII edits the way an editor does (from the bottom up)."""
    lines = text.split("\n")
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln) + 1)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        a = offsets[e.range.start.line] + e.range.start.character
        b = offsets[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


async def test_open_manifest_gives_tp201_on_the_tp_token(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    uri = (tmp_path / "deploy.yaml").as_uri()  # not on disk
    open_doc(client, uri, MANIFEST, "yaml")
    diags = await publish(client, uri, 1)
    # TP402: the fixture's one pod asks for 16 GPUs on an 8-GPU H100 node type
    assert [d.code for d in diags] == ["TP201", "TP402"]
    d = diags[0]
    # The `16` inside the quotes of `- "16"`, not the quotes, not the whole line.
    assert d.range == where(MANIFEST, '            - "16"', "16")
    assert d.severity == lsp.DiagnosticSeverity.Warning
    assert d.source == "tpcheck"
    assert d.code_description is not None
    assert d.code_description.href.endswith("/rules/TP201.md")
    assert d.message.startswith("TP 16 > 8 KV heads: ")  # the headline; the hover has the rest
    assert d.related_information is not None
    (rel,) = d.related_information
    assert rel.location.uri == uri
    assert rel.location.range == where(MANIFEST, "            - Qwen/Qwen3-32B", "Qwen/Qwen3-32B")
    assert rel.message == "model Qwen/Qwen3-32B"


async def test_hover_shows_the_formulas_with_values(client: LanguageClient,
                                                    tmp_path: Path) -> None:
    uri = (tmp_path / "deploy.yaml").as_uri()
    open_doc(client, uri, MANIFEST, "yaml")
    diags = await publish(client, uri, 1)
    rng = diags[0].range
    hover = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), lsp.Position(rng.start.line, rng.start.character + 1)))
    assert hover is not None
    assert isinstance(hover.contents, lsp.MarkupContent)
    assert hover.contents.kind == lsp.MarkupKind.Markdown
    text = hover.contents.value
    assert text.startswith("**TP201** `kv-head-cliff` (warning)")
    assert KV_LINE in text
    assert REPLICAS_LINE in text
    assert "capacity_gain = seats(t) / seats(h_kv)" in text
    assert hover.range == rng
    # Off the flagged token there is nothing to say.
    nothing = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), lsp.Position(0, 0)))
    assert nothing is None


async def test_workspace_gpu_setting_and_edit_clears_the_diagnostic(client: LanguageClient,
                                                                    tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE, "shellscript")
    (d,) = await publish(client, uri, 1)
    # "vllm serve Qwen/Qwen3-32B --tensor-parallel-size " is 49 characters: `16` is 49..51.
    assert d.range == lsp.Range(lsp.Position(0, 49), lsp.Position(0, 51))
    assert d.code == "TP201"
    assert " seats vs " in d.message  # seats: tpcheck.gpu from the workspace configuration
    change(client, uri, 2, d.range, "8")
    assert await publish(client, uri, 2) == []


async def test_quick_fix_to_h_kv_removes_the_finding(client: LanguageClient,
                                                     tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE, "shellscript")
    (d,) = await publish(client, uri, 1)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), d.range, lsp.CodeActionContext(diagnostics=[d])))
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, lsp.CodeAction)]
    assert titles == ["Set tensor parallel size to h_kv = 8", "Add `# tpcheck: ignore[TP201]`"]
    fix = actions[0]
    assert isinstance(fix, lsp.CodeAction)
    assert fix.kind == lsp.CodeActionKind.QuickFix and fix.is_preferred
    assert list(fix.diagnostics or ()) == [d]
    assert fix.edit is not None and fix.edit.changes is not None
    edits = list(fix.edit.changes[uri])
    assert edits == [lsp.TextEdit(d.range, "8")]
    fixed = apply(SERVE, edits)
    assert fixed == SERVE.replace("size 16", "size 8")
    change(client, uri, 2, None, fixed)
    assert await publish(client, uri, 2) == []


async def test_ignore_action_inserts_an_indented_comment(client: LanguageClient,
                                                         tmp_path: Path) -> None:
    uri = (tmp_path / "deploy.yaml").as_uri()
    open_doc(client, uri, MANIFEST, "yaml")
    (d,) = [x for x in await publish(client, uri, 1) if x.code == "TP201"]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), d.range, lsp.CodeActionContext(diagnostics=[d])))
    assert actions is not None
    (ignore,) = [a for a in actions if isinstance(a, lsp.CodeAction) and "ignore" in a.title]
    assert ignore.edit is not None and ignore.edit.changes is not None
    edits = list(ignore.edit.changes[uri])
    row = d.range.start.line
    # A new line above the flagged one, indented like it (12 spaces before `- "16"`).
    assert edits == [lsp.TextEdit(lsp.Range(lsp.Position(row, 0), lsp.Position(row, 0)),
                                  "            # tpcheck: ignore[TP201]\n")]
    change(client, uri, 2, None, apply(MANIFEST, edits))
    # the pod still asks for 16 GPUs on an 8-GPU node type: TP402 stays
    assert [x.code for x in await publish(client, uri, 2)] == ["TP402"]


async def test_changing_tp_in_the_manifest_trades_tp201_for_tp401(client: LanguageClient,
                                                                   tmp_path: Path) -> None:
    uri = (tmp_path / "deploy.yaml").as_uri()
    open_doc(client, uri, MANIFEST, "yaml")
    (d,) = [x for x in await publish(client, uri, 1) if x.code == "TP201"]
    change(client, uri, 2, d.range, "8")
    diags = await publish(client, uri, 2)
    # TP 8 serves fine, but the pod still asks for 16 GPUs: t·p·dp = 8·1·1 = 8 ≠ 16.
    assert [x.code for x in diags] == ["TP401", "TP402"]  # and 16 GPUs on an 8-GPU node type
    assert "8 GPUs sit idle" in diags[0].message


async def test_malformed_yaml_mid_edit_does_not_crash(client: LanguageClient,
                                                      tmp_path: Path) -> None:
    uri = (tmp_path / "deploy.yaml").as_uri()
    open_doc(client, uri, MANIFEST, "yaml")
    (d,) = [x for x in await publish(client, uri, 1) if x.code == "TP201"]
    # Half-typed flow sequence: `- [--max-model-len` never closes.
    broken_line = MANIFEST.split("\n").index("            - --max-model-len")
    at = lsp.Position(broken_line, len("            - "))
    change(client, uri, 2, lsp.Range(at, at), "[")
    diags = await publish(client, uri, 2)
    # The reader says where YAML stopped parsing (what it recovered may add other findings).
    (bad,) = [x for x in diags if x.code is None]
    assert bad.severity == lsp.DiagnosticSeverity.Error
    assert bad.message.startswith("YAML does not parse")
    assert bad.source == "tpcheck"
    assert bad.range.start.line >= broken_line
    # The server still answers requests while the YAML is broken, from the broken text's
    # result (never the stale TP201 of version 1) ...
    hover = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), d.range.start))
    assert hover is None or (isinstance(hover.contents, lsp.MarkupContent)
                             and "TP201" not in hover.contents.value)
    # ... and once the edit is undone the finding and its hover come back.
    change(client, uri, 3, lsp.Range(at, lsp.Position(at.line, at.character + 1)), "")
    (again,) = [x for x in await publish(client, uri, 3) if x.code != "TP402"]
    assert again.code == "TP201" and again.range == d.range
    hover = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), d.range.start))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert KV_LINE in hover.contents.value


async def test_debounced_changes_publish_the_last_version(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE, "shellscript")
    assert [x.code for x in await publish(client, uri, 1)] == ["TP201"]
    # Typing 16 → 1 → 12 → 8 faster than the 150 ms debounce: one lint, of the last text.
    for version, text in ((2, "1"), (3, "12"), (4, "8")):
        change(client, uri, version, None, SERVE.replace("16", text))
    await asyncio.sleep(1.0)
    assert [(p.version, list(p.diagnostics)) for p in published(client)] == [(4, [])]


async def test_save_and_close(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE, "shellscript")
    await publish(client, uri, 1)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    (d,) = await publish(client, uri, 1)
    assert d.code == "TP201"
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert await publish(client, uri, None) == []  # closing clears the file's diagnostics


async def test_tool_tpcheck_settings_apply(bare_client: LanguageClient, tmp_path: Path) -> None:
    # [tool.tpcheck] next to the document: TP201 ignored for this project.
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.tpcheck]\nignore = ["TP201"]\n')
    uri = (project / "serve.sh").as_uri()
    open_doc(bare_client, uri, SERVE, "shellscript")
    assert await publish(bare_client, uri, 1) == []
    # A folder without settings, same server: the finding is back, and with no GPU configured
    # anywhere the message says so instead of counting seats.
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "x"\n')
    uri2 = (other / "serve.sh").as_uri()
    open_doc(bare_client, uri2, SERVE, "shellscript")
    (d,) = await publish(bare_client, uri2, 1)
    assert d.code == "TP201"
    assert d.message.endswith("the KV cache is replicated 2×, not divided")  # no GPU: no seats


# Llama-3.1-70B: h = 64, h_kv = 8, f = 28,672; TP 6 divides none of them (TP101, TP102, TP103
# on the same `6`). The legal sizes around 6 are 4 and 8.
REFUSED = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 6\n"


def titles_of(actions: Any) -> list[str]:
    assert actions is not None
    return [a.title for a in actions if isinstance(a, lsp.CodeAction)]


async def test_one_quick_fix_per_change_for_three_refusals(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, REFUSED, "shellscript")
    diags = await publish(client, uri, 1)
    assert sorted(str(d.code) for d in diags) == ["TP101", "TP102", "TP103"]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), diags[0].range, lsp.CodeActionContext(diagnostics=diags)))
    titles = titles_of(actions)
    assert titles.count("Set tensor parallel size to 4") == 1
    assert titles.count("Set tensor parallel size to 8") == 1
    assert titles.count("Add `# tpcheck: ignore[TP101]`") == 1
    (four,) = [a for a in actions or () if isinstance(a, lsp.CodeAction)
               and a.title == "Set tensor parallel size to 4"]
    # The one action fixes all three diagnostics.
    assert sorted(str(d.code) for d in four.diagnostics or ()) == ["TP101", "TP102", "TP103"]


async def test_quick_fixes_from_anywhere_on_the_line(client: LanguageClient,
                                                     tmp_path: Path) -> None:
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE, "shellscript")
    (d,) = await publish(client, uri, 1)
    cursor = lsp.Position(d.range.start.line, 0)  # the start of the line, far from `16`
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), lsp.Range(cursor, cursor),
        lsp.CodeActionContext(diagnostics=[])))
    assert "Set tensor parallel size to h_kv = 8" in titles_of(actions)


async def test_preferred_fix_uses_the_requested_gpus(client: LanguageClient,
                                                     tmp_path: Path) -> None:
    """The pod requests 16 GPUs: TP 8 alone leaves 8 idle (TP401), so the preferred fix is TP 8
    with --data-parallel-size 16 / 8 = 2, one edit, and nothing is left after it."""
    uri = (tmp_path / "deploy.yaml").as_uri()
    open_doc(client, uri, MANIFEST, "yaml")
    (d,) = [x for x in await publish(client, uri, 1) if x.code == "TP201"]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), d.range, lsp.CodeActionContext(diagnostics=[d])))
    assert actions is not None
    by_title = {a.title: a for a in actions if isinstance(a, lsp.CodeAction)}
    both = by_title["Set tensor parallel size to h_kv = 8 with --data-parallel-size 2"]
    # TP 8 alone is still offered, with the request cut to 8 GPUs (no TP401), not preferred
    alone = by_title["Set tensor parallel size to h_kv = 8, and request 8 GPUs"]
    assert both.is_preferred and not alone.is_preferred
    assert alone.edit is not None and alone.edit.changes is not None
    cut = apply(MANIFEST, list(alone.edit.changes[uri]))
    assert cut == MANIFEST.replace('- "16"', '- "8"').replace(
        'nvidia.com/gpu: "16"', 'nvidia.com/gpu: "8"')
    assert both.edit is not None and both.edit.changes is not None
    fixed = apply(MANIFEST, list(both.edit.changes[uri]))
    assert '            - "8"\n            - --data-parallel-size\n            - "2"\n' in fixed
    change(client, uri, 2, None, fixed)
    # TP201 gone; the pod's 16 GPUs on an 8-GPU node type (TP402) are another change
    assert [x.code for x in await publish(client, uri, 2)] == ["TP402"]


@pytest.mark.parametrize(("text", "language", "expected"), [
    # A flow list: two more items, quoted like the value.
    ('args: ["vllm", "serve", "Qwen/Qwen3-32B", "--tensor-parallel-size", "16"]\n',
     "yaml", '"--tensor-parallel-size", "8", "--data-parallel-size", "2"]'),
    # One command string (sh -c): the option goes into the same string.
    ('args: ["sh", "-c", "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 16 --port 8000"]\n',
     "yaml", "--tensor-parallel-size 8 --data-parallel-size 2 --port 8000"),
])
async def test_tp_and_dp_in_the_files_syntax(client: LanguageClient, tmp_path: Path, text: str,
                                             language: str, expected: str) -> None:
    # 16 GPUs requested, so TP 8 alone would leave 8 idle.
    text = ("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n"
            "      containers:\n        - name: vllm\n"
            "          image: vllm/vllm-openai:v0.33.0\n"
            "          " + text + "          resources:\n            limits:\n"
            "              nvidia.com/gpu: 16\n")
    uri = (tmp_path / "deploy.yaml").as_uri()
    open_doc(client, uri, text, language)
    diags = [d for d in await publish(client, uri, 1) if d.code == "TP201"]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), diags[0].range, lsp.CodeActionContext(diagnostics=diags)))
    (both,) = [a for a in actions or () if isinstance(a, lsp.CodeAction)
               and a.title.endswith("--data-parallel-size 2")]
    assert both.edit is not None and both.edit.changes is not None
    fixed = apply(text, list(both.edit.changes[uri]))
    assert expected in fixed
    change(client, uri, 2, None, fixed)
    assert [d.code for d in await publish(client, uri, 2)] == []


async def wait_for(predicate: Any, what: str) -> None:
    for _ in range(1000):  # 10 s
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_settings_problems_are_shown_once(bare_client: LanguageClient,
                                                tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.tpcheck]\nno_such_key = 1\n')
    for i, name in enumerate(("a.sh", "b.sh")):
        uri = (project / name).as_uri()
        open_doc(bare_client, uri, SERVE, "shellscript")
        await publish(bare_client, uri, 1)
        shown = [m for m in bare_client.messages if "tpcheck settings" in m.message]
        # Shown as an error the first time; the second document does not repeat it.
        assert len(shown) == 1, (i, shown)
    (msg,) = shown
    assert msg.type == lsp.MessageType.Error
    assert "pyproject.toml" in msg.message and "no_such_key" in msg.message


async def test_editing_pyproject_relints_open_documents(bare_client: LanguageClient,
                                                        tmp_path: Path) -> None:
    registrations = bare_client.registrations  # type: ignore[attr-defined]
    await wait_for(lambda: registrations, "the settings watch to be registered")
    (reg,) = registrations
    assert reg.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES
    globs = {w["globPattern"] for w in reg.register_options["watchers"]}
    assert globs == {"**/pyproject.toml", "**/.tpcheck.toml"}

    project = tmp_path / "project"
    project.mkdir()
    settings = project / "pyproject.toml"
    settings.write_text('[tool.tpcheck]\nignore = ["TP201"]\n')
    uri = (project / "serve.sh").as_uri()
    open_doc(bare_client, uri, SERVE, "shellscript")
    assert await publish(bare_client, uri, 1) == []
    settings.write_text('[tool.tpcheck]\nignore = []\n')
    bare_client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent(uri=settings.as_uri(), type=lsp.FileChangeType.Changed)]))
    (d,) = await publish(bare_client, uri, 1)  # the same text, re-linted with the new settings
    assert d.code == "TP201"


async def test_a_slow_document_does_not_hold_up_a_fast_one(client: LanguageClient,
                                                           tmp_path: Path) -> None:
    # MAX_LAUNCHES (1,000) LLM(...) calls, as many as a file is read for: every one a
    # deployment to read and check, seconds of work.
    slow_text = "from vllm import LLM\n" + "".join(
        f'llm{i} = LLM("Qwen/Qwen3-32B", tensor_parallel_size=16)\n'
        for i in range(MAX_LAUNCHES))
    slow, fast = (tmp_path / "slow.py").as_uri(), (tmp_path / "fast.sh").as_uri()
    open_doc(client, slow, slow_text, "python")
    await asyncio.sleep(0.05)  # the slow lint has started
    open_doc(client, fast, SERVE, "shellscript")
    (d,) = await publish(client, fast, 1)
    assert d.code == "TP201"
    # The fast document was answered while the slow one was still being linted.
    assert not any(p.uri == slow for p in published(client))
    diags = await publish(client, slow, 1)
    assert len(diags) == MAX_LAUNCHES and {x.code for x in diags} == {"TP201"}


async def test_a_document_past_the_size_budget_is_linted_on_save(client: LanguageClient,
                                                                 tmp_path: Path) -> None:
    # 1 MiB (the live budget) of comment lines after the launch.
    big = SERVE + "# padding the file past the live-lint budget\n" * 24_000
    assert len(big) > 1024 * 1024
    uri = (tmp_path / "big.sh").as_uri()
    open_doc(client, uri, big, "shellscript")
    (d,) = await publish(client, uri, 1)
    assert d.code == "TP201"
    (told,) = [m for m in client.messages if "big.sh" in m.message]
    assert told.type == lsp.MessageType.Info
    # 24,000 × 45 bytes + 74 = 1,080,074 bytes = 1,054.8 KiB, over the 1,024 KiB live budget
    assert told.message == ("tpcheck: big.sh is 1,055 KiB, over the 1,024 KiB budget for "
                            "linting as you type; it is now linted when opened or saved")
    # An edit that fixes the finding is not linted until the document is saved.
    change(client, uri, 2, d.range, "8")
    await asyncio.sleep(0.5)
    assert not any(p.uri == uri for p in published(client))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert await publish(client, uri, 2) == []


async def test_quick_fix_on_a_helm_template_edits_values_yaml(client: LanguageClient,
                                                              tmp_path: Path) -> None:
    # The chart fixture: values.yaml says `engine: {tp: 16}` and `gpus: 8`; the template writes
    # `--tensor-parallel-size={{ $eng.tp }}`. Qwen3-32B has h_kv = 8: TP 8 uses the 8 GPUs.
    import shutil

    chart = tmp_path / "chart"
    shutil.copytree(REPO / "fixtures" / "layouts" / "chart", chart)
    template = chart / "templates" / "deploy.yaml"
    uri = template.as_uri()
    text = template.read_text(encoding="utf-8")
    open_doc(client, uri, text, "yaml")
    (d,) = [x for x in await publish(client, uri, 1) if x.code == "TP201"]
    assert d.range == where(text, "        - --tensor-parallel-size={{ $eng.tp }}", "{{ $eng.tp }}")
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), d.range, lsp.CodeActionContext(diagnostics=[d])))
    assert actions is not None
    (fix,) = [a for a in actions if isinstance(a, lsp.CodeAction) and a.is_preferred]
    assert fix.title == "Set tensor parallel size to h_kv = 8"
    assert fix.edit is not None and fix.edit.changes is not None
    values = (chart / "values.yaml").as_uri()
    # the template expression is left alone: the 16 on `  tp: 16` (line 6, 0-based 5) is replaced
    assert {k: list(v) for k, v in fix.edit.changes.items()} == {values: [lsp.TextEdit(
        lsp.Range(lsp.Position(5, 6), lsp.Position(5, 8)), "8")]}
