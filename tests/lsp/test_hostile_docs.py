"""``tpcheck lsp`` with hostile documents and settings, through pytest-lsp's real client.

Every hostile input of the command-line sweep (tests/test_hostile.py, tests/commands/
test_robustness.py) opened as an editor buffer: the server answers each with a publish (a
diagnostic or none), never dies, and still lints a good document afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.test_server import SERVE, open_doc, publish

pytestmark = pytest.mark.asyncio


def _laughs() -> str:
    """Nine aliases of nine aliases, eight levels: 9**8 strings if anything expanded it."""
    lines = ["kind: Pod", 'l0: &l0 ["--tensor-parallel-size", "8"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    lines += ["spec: {containers: [{image: vllm/vllm-openai:v0.8.5, args: *l8}]}"]
    return "\n".join(lines) + "\n"


HOSTILE: dict[str, str] = {
    "laughs.yaml": _laughs(),
    "pytag.yaml": '!!python/object/apply:os.system ["echo hi"]\n',
    "dupkeys.yaml": "kind: Pod\nkind: Job\nspec: {containers: [{image: vllm/vllm-openai, "
                    "args: [--tensor-parallel-size, '3'], args: [-tp, '5']}]}\n",
    "multidoc.yaml": "--- 3\n--- [1, 2]\n--- null\n---\nkind: Pod\nspec: [1]\n---\nkind: Pod\n"
                     "spec: {containers: [null, 3, {args: 5, command: {a: 1}, image: [1]}]}\n",
    "deep.yaml": "[" * 5000 + "]" * 5000 + "\n",
    "nul.yaml": "kind: Pod\x00\n",
    "kustomization.yaml": "resources: [a.yaml]\n\x00",
    "Chart.yaml": "apiVersion: [\n",
    "values.yaml": "a: &a [*a]\n",
    # a vLLM --config file (JSON is not linted in the editor) with a 5,000-digit integer
    "vllm-config.yaml": "model: Qwen/Qwen3-32B\ntensor-parallel-size: " + "9" * 5000 + "\n",
    "unterminated.sh": 'vllm serve "meta-llama/Llama-3.1-8B --tensor-parallel-size 8\n',
    "heredoc.sh": "cat <<EOF\nvllm serve m --tensor-parallel-size 8\n",
    "continuation.sh": "vllm serve Qwen/Qwen3-32B \\\n  --tensor-parallel-size 3 \\",
    "arith.sh": "vllm serve m -tp $((1<<62)) --max-model-len ${X:-${Y:-$(echo 5)}}\n",
    "bom.sh": "\ufeff" + SERVE,
    "nul.sh": "vllm serve m\x00 -tp 8\n",
    "surrogate.sh": "vllm serve m\ud800 -tp 8\n",
    "binary.sh": bytes(range(256)).decode("latin-1"),
    "latin1.py": '# -*- coding: latin-1 -*-\nfrom vllm import LLM\nLLM(model="m\xe9", '
                 "tensor_parallel_size=8)\n",
    "badcoding.py": "# -*- coding: klingon -*-\nfrom vllm import LLM\n"
                    'LLM(model="m", tensor_parallel_size=8)\n',
    "bom.py": '\ufeff# coding: latin-1\nfrom vllm import LLM\nLLM(model="m", '
              "tensor_parallel_size=8)\n",
    "hugeint.py": 'from vllm import LLM\nLLM(model="m", tensor_parallel_size=' + "9" * 5000
                  + ", max_model_len=1e999)\n",
    "power.py": 'from vllm import LLM\nLLM(model="m", tensor_parallel_size=2**99999)\n',
    "nested.py": "x = " + "[" * 3000 + "]" * 3000 + "\n",
    "syntax.py": 'from vllm import LLM\nLLM(model="m", tensor_parallel_size=8\n',
}


async def test_every_hostile_document_is_answered_and_the_server_lives(
        client: LanguageClient, tmp_path: Path) -> None:
    for version, (name, text) in enumerate(HOSTILE.items(), start=1):
        uri = (tmp_path / name).as_uri()
        language = {"sh": "shellscript", "py": "python"}.get(
            name.rsplit(".", 1)[1], "yaml")
        open_doc(client, uri, text, language)
        diags = await publish(client, uri, 1)  # raises after 30 s without a publish
        assert all(d.range.start.line >= 0 for d in diags), (name, version)
        assert not any("internal error" in d.message for d in diags), (name, diags)
    # Still alive and still right: Qwen3-32B at t=3 (64 query heads, 64 mod 3 = 1) is TP101.
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE.replace("16", "3"), "shellscript")
    codes = {d.code for d in await publish(client, uri, 1)}
    assert "TP101" in codes


@pytest.mark.parametrize("settings", [
    "[tool.tpcheck]\nselect = " + "[" * 5000 + "]" * 5000 + "\n",  # tomllib recursion
    "[tool]\ntpcheck = 5\n",  # a key where the table belongs
    "[tool.tpcheck]\nengine-version = 'latest'\n",  # no release number in it
])
async def test_hostile_settings_file_is_one_diagnostic_not_silence(
        client: LanguageClient, tmp_path: Path, settings: str) -> None:
    (tmp_path / "pyproject.toml").write_text(settings, encoding="utf-8")
    uri = (tmp_path / "serve.sh").as_uri()
    open_doc(client, uri, SERVE, "shellscript")
    (d,) = await publish(client, uri, 1)
    assert d.severity == lsp.DiagnosticSeverity.Error
    assert "pyproject.toml" in d.message and "internal error" not in d.message
