"""Model hints a file gives outside ``--model``: KServe ``storageUri``, an llm-d-benchmark
scenario's ``model.huggingfaceId``, Python ``os.getenv`` defaults, and the ``org--name`` folder.

Offline with an empty HF cache throughout, so only the bundled catalog answers; each hinted
finding must say which hint named its model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.shared import said
from tpcheck.cli import main
from tpcheck.models import hints
from tpcheck.models.resolve import ResolveError, Resolver
from tpcheck.sources import read_path
from tpcheck.sources.base import ModelHint

# offline, with an empty HF cache (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("empty_hf_cache")


def _lint(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    main(["--offline", "--format", "json", str(path)])
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["findings"]
    return found


def test_org_dash_dash_name_folder_needs_a_catalog_id() -> None:
    # the catalog lists the hub's old name as an alias of meta-llama/Llama-3.1-8B-Instruct
    assert hints.folder_hint("/bucket/models/meta-llama--Meta-Llama-3.1-8B-Instruct") == (
        "meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama--Meta-Llama-3.1-8B-Instruct")
    assert hints.folder_hint(".tpcheck/models/Qwen--Qwen3-8B") == ("Qwen/Qwen3-8B",
                                                                  "Qwen--Qwen3-8B")
    assert hints.folder_hint("/models/my--finetune") is None  # no hub id anyone can check
    assert hints.folder_hint("/models/Qwen--Qwen3-8B-ft") is None  # exact, never a prefix


KSERVE = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: {name}
spec:
  predictor:
    model:
      modelFormat:
        name: huggingface
      args:
        - --tensor-parallel-size=3
        - --max-model-len=1024
      storageUri: {uri}
      resources:
        limits:
          nvidia.com/gpu: "3"
"""


@pytest.mark.parametrize(("uri", "why", "heads"), [
    # hf://org/name names the hub id itself
    ("hf://Qwen/Qwen3-8B", "storageUri `hf://Qwen/Qwen3-8B` (line 13) -> Qwen/Qwen3-8B", 32),
    # another scheme: the folder name, even behind an expression earlier in the path
    ("s3://${bucket}/models/Qwen--Qwen3-32B",
     "the folder name `Qwen--Qwen3-32B` in storageUri `s3://${bucket}/models/Qwen--Qwen3-32B` "
     "(line 13) -> Qwen/Qwen3-32B", 64),
])
def test_kserve_storage_uri(tmp_path: Path, capsys: pytest.CaptureFixture[str], uri: str,
                            why: str, heads: int) -> None:
    f = tmp_path / "isvc.yaml"
    f.write_text(KSERVE.format(name="x", uri=uri))
    (d,) = read_path(str(f)).deployments
    assert d.model is None and d.model_hints[0].value == uri.removeprefix("hf://")
    found = _lint(f, capsys)
    # Qwen3-8B has 32 query heads, Qwen3-32B 64; neither divides by t = 3: TP101 fires
    (tp101,) = [x for x in found if x["code"] == "TP101"]
    assert tp101["message"] == f"vllm refuses TP 3: h mod t = {heads % 3} (h={heads}, t=3)"
    assert said(tp101).endswith(f"assumes: model taken from {why}; map it in "
                                "[tool.tpcheck.models] to be exact")


def test_kserve_storage_uri_naming_nothing_is_still_tp000(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "isvc.yaml"
    f.write_text(KSERVE.format(name="x", uri="pvc://models/my-finetune"))
    assert [x["code"] for x in _lint(f, capsys)] == ["TP000"]


SCENARIO = """\
scenario:
  - name: guide
    common:
      model:
        name: Qwen/Qwen3-32B
        path: models/Qwen/Qwen3-32B
        huggingfaceId: {hub}
    modelservice:
      decode:
        vllm:
          customCommand: |
            . /shared-config/llmdbench_env.sh
            vllm serve /model-cache/$MODEL_PATH \\
            --served-model-name $MODEL_NAME \\
            --tensor-parallel-size 3
"""


def test_llm_d_benchmark_scenario_huggingface_id(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "scenario.yaml"
    f.write_text(SCENARIO.format(hub="Qwen/Qwen3-32B"))
    (d,) = read_path(str(f)).deployments
    assert d.model_hints == (ModelHint("Qwen/Qwen3-32B",
                                       "model.huggingfaceId `Qwen/Qwen3-32B` (line 7)"),)
    found = _lint(f, capsys)
    (tp101,) = [x for x in found if x["code"] == "TP101"]  # 64 heads % 3 = 1
    assert said(tp101).endswith("assumes: model taken from model.huggingfaceId "
                                "`Qwen/Qwen3-32B` (line 7) -> Qwen/Qwen3-32B; map it in "
                                "[tool.tpcheck.models] to be exact")
    # a hint that resolves nowhere: TP000 with what was tried
    f.write_text(SCENARIO.format(hub="acme/never-published"))
    (tp000,) = _lint(f, capsys)
    assert tp000["code"] == "TP000"
    assert ("also tried: model taken from model.huggingfaceId `acme/never-published` (line 7) "
            "-> acme/never-published: not-found") in said(tp000)
    # the headline names the hub id the hint gave, not the path or expression the engine gets
    assert tp000["message"] == "no config.json found for acme/never-published"


def test_a_hub_id_as_written_wins_over_file_hints(tmp_path: Path) -> None:
    r = Resolver(offline=True, cwd=str(tmp_path))
    res = r.resolve_hinted("Qwen/Qwen3-8B", file_hints=[("Qwen/Qwen3-32B", "env MODEL_ID")])
    assert res.hint is None and res.config["num_attention_heads"] == 32
    res = r.resolve_hinted("$(MODEL_ID)", file_hints=[("Qwen/Qwen3-32B", "env MODEL_ID")])
    assert res.config["num_attention_heads"] == 64 and res.hint is not None
    with pytest.raises(ResolveError):
        r.resolve_hinted("$(MODEL_ID)", file_hints=[("", "env MODEL_ID")])


SERVE_PY = '''\
import os
import subprocess

from vllm import LLM

TP = int(os.getenv("TENSOR_PARALLEL_SIZE", "3"))


def main() -> None:
    model_id = os.environ.get("MODEL_ID", "Qwen/Qwen3-8B")
    LLM(model=model_id, tensor_parallel_size=TP,
        max_num_seqs=int(os.environ.get("MAX_NUM_SEQS", default="64")))
    LLM(os.environ["MODEL_ID"], tensor_parallel_size=2)
    subprocess.run(["vllm", "serve", os.getenv("MODEL", "Qwen/Qwen3-32B"),
                    "--tensor-parallel-size", os.getenv("TP", "3")])
'''


def test_python_environment_defaults_are_read(tmp_path: Path) -> None:
    f = tmp_path / "serve.py"
    f.write_text(SERVE_PY)
    d1, d2, d3 = read_path(str(f)).deployments
    # the model is a hint (the environment may name another); int options take the default
    assert d1.model is None and d1.unresolved["model"] == "model_id"
    assert d1.model_hints == (ModelHint(
        "Qwen/Qwen3-8B", 'the default of os.getenv("MODEL_ID") `Qwen/Qwen3-8B` (line 10)'),)
    assert (d1.tensor_parallel_size, d1.max_num_seqs) == (3, 64)
    tp = d1.spans["tensor_parallel_size"]  # underlines the "3" of the default on line 6
    assert (tp.line, tp.column, tp.end_column) == (6, 45, 46)
    assert ('tensor_parallel_size = 3 is the default of os.getenv("TENSOR_PARALLEL_SIZE"); the '
            "environment or command line may set another") in d1.notes
    # os.environ["X"] has no default: nothing to take
    assert d2.model is None and d2.model_hints == () and d2.tensor_parallel_size == 2
    # in a subprocess list too
    assert d3.unresolved["model"] == 'os.getenv("MODEL", "Qwen/Qwen3-32B")'
    assert [h.value for h in d3.model_hints] == ["Qwen/Qwen3-32B"]
    assert d3.tensor_parallel_size == 3


def test_python_defaults_a_name_bound_twice_is_not_taken(tmp_path: Path) -> None:
    f = tmp_path / "serve.py"
    f.write_text('import os\nfrom vllm import LLM\nm = os.getenv("M", "Qwen/Qwen3-8B")\n'
                 'if os.getenv("BIG"):\n    m = os.getenv("M2", "Qwen/Qwen3-32B")\n'
                 'LLM(model=m, tensor_parallel_size=int(os.getenv("TP")))\n')
    (d,) = read_path(str(f)).deployments
    assert d.model_hints == () and d.tensor_parallel_size is None  # no default for TP either


def test_python_defaults_reach_the_findings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "serve.py"
    f.write_text(SERVE_PY)
    found = _lint(f, capsys)
    by_line: dict[int, list[str]] = {}
    for x in found:
        by_line.setdefault(x["line"], []).append(x["code"])
    # line 6 (TP's default 3 with Qwen3-8B: 32 heads, 8 KV heads, 151,936 vocab rows, all
    # indivisible by 3); line 13 names no default (TP000); line 15 (Qwen3-32B: f = 25,600 too)
    assert by_line == {6: ["TP101", "TP102", "TP104"], 13: ["TP000"],
                       15: ["TP101", "TP102", "TP103", "TP104"]}
    tails = {said(x).split("assumes: model taken", 1)[-1] for x in found
             if x["line"] in (6, 15)}
    assert tails == {
        ' from the default of os.getenv("MODEL_ID") `Qwen/Qwen3-8B` (line 10) -> '
        "Qwen/Qwen3-8B; map it in [tool.tpcheck.models] to be exact",
        ' from the default of os.getenv("MODEL") `Qwen/Qwen3-32B` (line 14) -> '
        "Qwen/Qwen3-32B; map it in [tool.tpcheck.models] to be exact"}


RAY_SERVICE = """\
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: llm
spec:
  serveConfigV2: |
    applications:
    - name: llm
      import_path: serve:model
      runtime_env:
        env_vars:
          MODEL_ID: "Qwen/Qwen3-8B"
          TENSOR_PARALLEL_SIZE: "{tp}"
          MAX_NUM_SEQS: "64"
"""


def test_ray_serve_runtime_env_vars(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "ray.yaml"
    f.write_text(RAY_SERVICE.format(tp=3))
    (d,) = read_path(str(f)).deployments
    assert (d.engine, d.entrypoint, d.tensor_parallel_size, d.max_num_seqs) == ("vllm", "llm",
                                                                               3, 64)
    tp = d.spans["tensor_parallel_size"]  # the 3 on line 13 of the file, not of the block
    assert (tp.line, tp.column) == (13, 34)
    assert d.model_hints == (ModelHint("Qwen/Qwen3-8B",
                                       "runtime_env.env_vars MODEL_ID `Qwen/Qwen3-8B` (line 12)"),)
    assert any("serve:model is assumed to pass to vLLM" in n for n in d.notes)
    found = _lint(f, capsys)
    # Qwen3-8B: 32 heads, 8 KV heads, vocab 151,936 rows: none divides by 3
    assert sorted(x["code"] for x in found) == ["TP101", "TP102", "TP104"]
    assert all("assumes: model taken from runtime_env.env_vars MODEL_ID `Qwen/Qwen3-8B` "
               "(line 12)" in said(x) for x in found)
    # without a literal TENSOR_PARALLEL_SIZE the script's layout is unknown: no deployment
    f.write_text(RAY_SERVICE.format(tp="$TP"))
    assert read_path(str(f)).deployments == ()


def test_k8s_env_values_expand_earlier_variables(tmp_path: Path) -> None:
    f = tmp_path / "pod.yaml"
    f.write_text("""\
apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  containers:
  - name: a
    image: vllm/vllm-openai:v0.8.0
    env:
    - name: ORG
      value: Qwen
    - name: MODEL_ID
      value: $(ORG)/Qwen3-8B
    - name: LATER
      value: $(NOT_YET)/x
    - name: NOT_YET
      value: defined-after
    args: ["--model", "$(MODEL_ID)", "--served-model-name", "$(LATER)"]
""")
    (d,) = read_path(str(f)).deployments
    # the kubelet expands $(VAR) in an env value from the variables defined before it
    assert d.model == "Qwen/Qwen3-8B" and d.env["MODEL_ID"] == "Qwen/Qwen3-8B"
    m = d.spans["model"]  # "Qwen" comes from line 10, the rest from line 12
    assert (m.line, m.column) == (10, 14)
    assert d.served_model_name == "$(NOT_YET)/x"  # a later variable stays as written


ARGPARSE_PY = """\
import argparse

from vllm import LLM

parser = argparse.ArgumentParser()
parser.add_argument("--model", "-m", default="Qwen/Qwen3-32B")
parser.add_argument("--tensor-parallel-size", "--tp", type=int, default=3)
parser.add_argument("--seqs", dest="max_seqs", default="32")
parser.add_argument("--twice", default="a")
parser.add_argument("--twice", default="b")
args = parser.parse_args()
LLM(model=args.model, tensor_parallel_size=args.tensor_parallel_size,
    max_num_seqs=int(args.max_seqs), max_model_len=args.twice)
"""


def test_python_argparse_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "serve.py"
    f.write_text(ARGPARSE_PY)
    (d,) = read_path(str(f)).deployments
    assert d.unresolved["model"] == "args.model"
    assert d.model_hints == (ModelHint("Qwen/Qwen3-32B",
                                       "the default of --model `Qwen/Qwen3-32B` (line 6)"),)
    assert (d.tensor_parallel_size, d.max_num_seqs) == (3, 32)  # dest= is honoured
    assert d.max_model_len is None  # an option declared twice: either default, so neither
    found = _lint(f, capsys)
    # Qwen3-32B: 64 heads % 3 = 1, 8 KV heads % 3 = 2, f = 25,600 % 3 = 1, 151,936 % 3 = 1
    assert sorted(x["code"] for x in found) == ["TP101", "TP102", "TP103", "TP104"]
    assert all(x["line"] == 7 for x in found)  # the 3 in default=3
    assert all("assumes: model taken from the default of --model `Qwen/Qwen3-32B` (line 6)"
               in said(x) for x in found)
