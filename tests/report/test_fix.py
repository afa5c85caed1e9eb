"""``tpcheck --fix`` / ``--diff`` through the real CLI on real files (copies of the fixtures).

Figures: Llama-3.1-70B (bundled config.json) has h = 64 query heads, h_kv = 8 and f = 28,672,
so TP 6 is refused (64 mod 6 = 4) and the legal sizes near it are 4 and 8; Qwen3-32B has
h_kv = 8, so TP 16 replicates the KV cache 2× and TP 8 with 2 data-parallel replicas uses the
same 16 GPUs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
L70 = "meta-llama/Llama-3.1-70B-Instruct"


def tp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPCHECK")}
    env.update(HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "tpcheck", "--offline", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600, check=False)


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its sha256 (a byte changed anywhere shows)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def findings(p: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = json.loads(p.stdout)["findings"]
    return out


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    return tmp_path


def test_fix_on_every_fixture_fixes_what_it_claims_adds_nothing_and_is_idempotent(
        copy: Path) -> None:
    before = findings(tp("--format", "json", "fixtures", cwd=copy))
    fixable = [f for f in before if f["fixable"]]
    # the fixtures with a mechanical fix: TP101-TP103 at t = 6 in llama70b-tp6.sh, at t = 3 in
    # the json6902 overlay and in the Terraform variable's default (with TP104: Qwen3-32B's
    # padded vocabulary 151,936 mod 3 = 1), TP201 in qwen3-32b-tp16.yaml, the Helm chart and the
    # h100 overlay, TP001 --gpu-memory-utilisation in the KServe runtime. The four multi-node
    # TP201s (three LeaderWorkerSets, sglang --nnodes 2) have edits but none simple: not [*]
    assert Counter(str(f["code"]) for f in fixable) == Counter(
        {"TP101": 3, "TP102": 3, "TP103": 3, "TP104": 1, "TP201": 3, "TP001": 1})
    untouched = tree(copy / "fixtures")
    p = tp("--fix", "fixtures", cwd=copy)
    assert p.returncode == 2, p.stderr  # the broken fixtures (broken.yaml, broken.py) stay errors
    fixed = tree(copy / "fixtures")
    changed = sorted(k for k in fixed if fixed[k] != untouched[k])
    assert changed == ["kustomize/overlays/h100/patch-tp.yaml",
                       "kustomize/overlays/json6902/kustomization.yaml",
                       "layouts/chart/values.yaml", "lint/llama70b-tp6.sh",
                       "lint/qwen3-32b-tp16.yaml", "reach4/kserve-alone/servingruntime.yaml",
                       "reach4/terraform/main.tf"]
    # 3 (tp6.sh) + 3 (json6902) + 4 (main.tf) + 1 (h100 patch) + 1 (chart) + 1 (qwen3)
    # + 1 (servingruntime) = 14 findings fixed
    assert "tpcheck: fixed 14 finding(s) in 7 file(s)" in p.stdout
    after = findings(tp("--format", "json", "fixtures", cwd=copy))
    gone = Counter((f["code"], f["path"]) for f in before) - Counter(
        (f["code"], f["path"]) for f in after)
    new = Counter((f["code"], f["path"]) for f in after) - Counter(
        (f["code"], f["path"]) for f in before)
    assert new == Counter(), "a fix brought a finding"
    # the 14 it claimed, and 3 TP401s the new sizes settle as well: the json6902 overlay's
    # t = 3 on 2 requested GPUs (now 2), the h100 overlay's and the chart's t = 16 on 8 (now 8)
    assert sum(gone.values()) == 17
    assert {k for k in gone if k[0] == "TP401"} == {
        ("TP401", "fixtures/kustomize/base/deployment.yaml"),
        ("TP401", "fixtures/kustomize/overlays/h100/patch-tp.yaml"),
        ("TP401", "fixtures/layouts/chart/templates/deploy.yaml")}
    assert all(not f["fixable"] for f in after)  # left: the multi-node TP201s, unmarked
    # ... and each of those says why it was not fixed
    for name in ("lws-tp16-2x8-h100.yaml", "lws-tp16-2x8-p5.yaml", "lws-tp16-2x8-gke-multinet.yaml",
                 "sglang-nnodes.sh"):
        line = next(x for x in p.stdout.splitlines() if name in x and "not fixed" in x)
        assert "TP201 not fixed:" in line and "choose by hand" in line
    again = tp("--fix", "fixtures", cwd=copy)
    assert tree(copy / "fixtures") == fixed  # a second --fix changes no byte
    assert "tpcheck: fixed 0 finding(s) in 0 file(s)" in again.stdout


def test_diff_writes_nothing_and_git_apply_of_it_is_what_fix_writes(copy: Path) -> None:
    other = copy / "other"
    shutil.copytree(copy / "fixtures", other / "fixtures")
    untouched = tree(copy / "fixtures")
    d = tp("--diff", "fixtures", cwd=copy)
    assert d.returncode == 2  # broken fixtures; a clean tree with a change to make exits 1
    assert tree(copy / "fixtures") == untouched  # --diff writes nothing
    assert "tpcheck: would fix 14 finding(s) in 7 file(s)" in d.stderr
    patch = copy / "fix.patch"
    patch.write_text(d.stdout, encoding="utf-8")
    subprocess.run(["git", "apply", "-p1", str(patch)], cwd=copy, check=True)
    tp("--fix", "fixtures", cwd=other)
    assert tree(copy / "fixtures") == tree(other / "fixtures")


def test_helm_chart_tp_is_fixed_in_values_yaml_not_in_the_template(copy: Path) -> None:
    chart = copy / "fixtures" / "layouts" / "chart"
    template = (chart / "templates" / "deploy.yaml").read_bytes()
    p = tp("--format", "json", "fixtures/layouts/chart/templates/deploy.yaml", cwd=copy)
    # TP 16 > h_kv 8 on the chart's 8 GPUs (values.yaml: gpus: 8): TP 8 uses them all (and
    # settles the TP401 beside it, 16 ranks on 8 GPUs, which has no edit of its own)
    assert [(f["code"], f["fixable"]) for f in findings(p)] == [("TP201", True),
                                                                 ("TP401", False)]
    f = findings(p)[0]
    (edit,) = f["edits"]  # type: ignore[misc]
    assert (edit["path"], edit["line"], edit["column"], edit["new_text"]) == (
        "fixtures/layouts/chart/values.yaml", 6, 7, "8")  # `  tp: 16`: the 16 at column 7
    d = tp("--diff", "fixtures/layouts/chart/templates/deploy.yaml", cwd=copy)
    assert d.stdout.splitlines()[:2] == ["--- a/fixtures/layouts/chart/values.yaml",
                                         "+++ b/fixtures/layouts/chart/values.yaml"]
    assert "-  tp: 16\n+  tp: 8\n" in d.stdout
    assert d.returncode == 1
    r = tp("--fix", "fixtures/layouts/chart/templates/deploy.yaml", cwd=copy)
    assert r.returncode == 0, r.stdout
    assert (chart / "templates" / "deploy.yaml").read_bytes() == template
    assert "  tp: 8\n  maxNumSeqs: 64\n" in (chart / "values.yaml").read_text(encoding="utf-8")


MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: llama}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.0
        env:
        - name: TP
          value: "6"   # six GPUs left on the box
        command: ["vllm", "serve", "MODEL", "--tensor-parallel-size", "$(TP)"]
        resources:
          limits:
            nvidia.com/gpu: 6
          requests:
            nvidia.com/gpu: '6'
""".replace("MODEL", L70)


def test_env_value_quotes_comment_and_both_gpu_counts_follow(tmp_path: Path) -> None:
    m = tmp_path / "deploy.yaml"
    m.write_text(MANIFEST, encoding="utf-8")
    p = tp("--gpu", "h100-sxm", "--fix", "deploy.yaml", cwd=tmp_path)
    # TP 4 (weights fit: 140 GB of bf16 over 4 H100s) and 4 GPUs requested: no TP401 left
    assert p.returncode == 0, p.stdout
    assert m.read_text(encoding="utf-8") == (
        MANIFEST.replace('value: "6"', 'value: "4"').replace("gpu: 6", "gpu: 4")
        .replace("gpu: '6'", "gpu: '4'"))


def test_shell_default_python_default_and_compose(tmp_path: Path) -> None:
    (tmp_path / "serve.sh").write_text(
        f"#!/bin/bash\nTP=${{TP:-6}}  # override per box\nvllm serve {L70} \\\n"
        '  --tensor-parallel-size "$TP"\n', encoding="utf-8")
    (tmp_path / "serve.py").write_text(
        "import os\nfrom vllm import LLM\n\n"
        f"llm = LLM(model='{L70}',\n          tensor_parallel_size=int(os.getenv('TP', '6')))\n",
        encoding="utf-8")
    (tmp_path / "compose.yaml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.0\n"
        f"    command: --model {L70} --tensor-parallel-size 6\n"
        "    deploy:\n      resources:\n        reservations:\n          devices:\n"
        "            - driver: nvidia\n              count: 6\n"
        "              capabilities: [gpu]\n", encoding="utf-8")
    before = {n: (tmp_path / n).read_text(encoding="utf-8")
              for n in ("serve.sh", "serve.py", "compose.yaml")}
    p = tp("--gpu", "h100-sxm", "--fix", ".", cwd=tmp_path)
    assert p.returncode == 0, p.stdout
    # each launch: TP101-TP103 at t = 6, 3 findings, one fix of 6 -> 4
    assert "fixed 9 finding(s) in 3 file(s); 0 remaining" in p.stdout
    assert (tmp_path / "serve.sh").read_text(encoding="utf-8") == before["serve.sh"].replace(
        "TP:-6", "TP:-4")
    assert (tmp_path / "serve.py").read_text(encoding="utf-8") == before["serve.py"].replace(
        "'TP', '6'", "'TP', '4'")
    assert (tmp_path / "compose.yaml").read_text(encoding="utf-8") == before[
        "compose.yaml"].replace("size 6", "size 4").replace("count: 6", "count: 4")


def test_crlf_and_byte_order_mark_are_kept(tmp_path: Path) -> None:
    text = f"vllm serve {L70} --tensor-parallel-size 6\r\n# done\r\n"
    s = tmp_path / "serve.sh"
    s.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    p = tp("--fix", "serve.sh", cwd=tmp_path)
    assert p.returncode == 0, p.stdout
    assert s.read_bytes() == b"\xef\xbb\xbf" + text.replace("size 6", "size 4").encode("utf-8")


def test_exit_code_after_fix_follows_what_is_left(copy: Path) -> None:
    # llama70b-tp6.sh: its three findings are fixed, nothing is left
    p = tp("--fix", "fixtures/lint/llama70b-tp6.sh", cwd=copy)
    assert p.returncode == 0, p.stdout
    # qwen3-32b-tp16.yaml: TP201 fixed (TP 8 × DP 2 on the pod's 16 GPUs); TP402 (16 GPUs on an
    # 8-GPU node type) has no mechanical fix and is an error
    q = tp("--fix", "fixtures/lint/qwen3-32b-tp16.yaml", cwd=copy)
    assert q.returncode == 1
    assert "TP402" in q.stdout and "TP201" not in q.stdout.split("tpcheck: fixed")[0]
    assert '- "8"\n            - --data-parallel-size\n            - "2"\n' in (
        copy / "fixtures/lint/qwen3-32b-tp16.yaml").read_text(encoding="utf-8")
    # warnings only below the fail level: exit 0
    r = tp("--fix", "--fail-on", "error", "fixtures/lint/deepseek-v3-sglang.yaml", cwd=copy)
    assert r.returncode == 0


def test_a_symlinked_file_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.sh"
    target.write_text(f"vllm serve {L70} --tensor-parallel-size 6\n", encoding="utf-8")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "serve.sh").symlink_to(target)
    p = tp("--fix", "serve.sh", cwd=proj)
    assert p.returncode == 2
    assert "is a symbolic link" in p.stderr and "serve.sh" in p.stderr
    assert "size 6" in target.read_text(encoding="utf-8")
    assert (proj / "serve.sh").is_symlink()


def test_stdin_cannot_be_fixed(tmp_path: Path) -> None:
    p = tp("--fix", "-", cwd=tmp_path)
    assert p.returncode == 2
    assert "standard input cannot be fixed" in p.stderr


def test_json_carries_the_preferred_edit_with_its_gpu_request(tmp_path: Path) -> None:
    (tmp_path / "deploy.yaml").write_text(MANIFEST, encoding="utf-8")
    p = tp("--gpu", "h100-sxm", "--format", "json", "deploy.yaml", cwd=tmp_path)
    tp101 = next(f for f in findings(p) if f["code"] == "TP101")
    edits = tp101["edits"]
    assert isinstance(edits, list)
    assert [(e["new_text"], e["preferred"]) for e in edits] == [("4", True), ("8", False)]
    # the TP is written in the env value on line 12 (inside its quotes, column 19); the request
    # follows it in limits (line 16, column 29)
    assert (edits[0]["path"], edits[0]["line"], edits[0]["column"]) == ("deploy.yaml", 12, 19)
    assert edits[0]["also"] == [{"path": "deploy.yaml", "line": 16, "column": 29,
                                 "end_line": 16, "end_column": 30, "new_text": "4"}]


def test_two_fixes_that_disagree_are_neither_made_and_say_why(tmp_path: Path) -> None:
    # One default feeds two launches: Llama-3.1-70B's nearest legal size below 6 is 4 (64 heads),
    # Qwen2-0.5B's is 2 (14 heads: 14 mod 4 = 2); the `6` cannot be both.
    s = tmp_path / "two.sh"
    text = (f'#!/bin/bash\nTP=${{TP:-6}}\nvllm serve {L70} --tensor-parallel-size "$TP" &\n'
            'vllm serve Qwen/Qwen2-0.5B --tensor-parallel-size "$TP"\n')
    s.write_text(text, encoding="utf-8")
    p = tp("--fix", "two.sh", cwd=tmp_path)
    assert p.returncode == 1
    assert s.read_text(encoding="utf-8") == text
    assert "tpcheck: fixed 0 finding(s) in 0 file(s); 6 remaining" in p.stdout
    assert ("two.sh:2:10: TP101 not fixed: two fixes disagree at one place: "
            "'Set tensor parallel size to 2' and 'Set tensor parallel size to 4'") in p.stdout
    assert "[*]" not in p.stdout  # what --fix could not make is not marked fixable


def test_diff_of_a_file_with_nothing_to_fix_is_empty_and_exits_0(copy: Path) -> None:
    p = tp("--diff", "fixtures/lint/qwen3-32b-tp8.yaml", cwd=copy)
    assert (p.returncode, p.stdout) == (0, "")
    assert "would fix 0 finding(s) in 0 file(s)" in p.stderr


@pytest.mark.parametrize(("name", "text", "fixed"), [
    # TP001: the option the misspelling is closest to in the release's table
    ("a.sh", "vllm serve Qwen/Qwen3-32B --tensor-parallel-sise=8\n",
     "vllm serve Qwen/Qwen3-32B --tensor-parallel-size=8\n"),
    # TP001 on a Python keyword: the keyword's own spelling
    ("b.py", "from vllm import LLM\nllm = LLM(model='Qwen/Qwen3-32B', tensor_parallel_sise=8)\n",
     "from vllm import LLM\nllm = LLM(model='Qwen/Qwen3-32B', tensor_parallel_size=8)\n"),
    # TP003: a choice the parser refuses, the nearest it accepts
    ("c.sh", "vllm serve Qwen/Qwen3-32B --dtype bfloat17\n",
     "vllm serve Qwen/Qwen3-32B --dtype bfloat16\n"),
    # TP004: SGLang dropped --stream-output for --incremental-streaming-output (both flags)
    ("d.sh", "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --stream-output\n",
     "python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
     "--incremental-streaming-output\n"),
    # TP003: a fraction written as a percent (vLLM bounds it 0 < u <= 1): 90 / 100 = 0.9, the
    # one reading in range
    ("e.py", "from vllm import LLM\nllm = LLM(model='Qwen/Qwen3-32B', gpu_memory_utilization=90)\n",
     "from vllm import LLM\nllm = LLM(model='Qwen/Qwen3-32B', gpu_memory_utilization=0.9)\n"),
    ("f.sh", "vllm serve Qwen/Qwen3-32B --gpu-memory-utilization=95.5\n",
     "vllm serve Qwen/Qwen3-32B --gpu-memory-utilization=0.955\n"),
])
def test_option_fixes(tmp_path: Path, name: str, text: str, fixed: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    p = tp("--fix", name, cwd=tmp_path)
    assert p.returncode == 0, p.stdout
    assert "fixed 1 finding(s) in 1 file(s); 0 remaining" in p.stdout
    assert (tmp_path / name).read_text(encoding="utf-8") == fixed


def test_a_helm_value_the_template_computes_is_not_fixed(copy: Path) -> None:
    # `{{ .Values.tpx | default 16 }}`: values.yaml has no tpx, so the 16 is the template's own
    # default; no file writes it as one value, so there is no fix (the template is not edited)
    chart = copy / "fixtures" / "layouts" / "chart"
    t = chart / "templates" / "deploy.yaml"
    t.write_text(t.read_text(encoding="utf-8").replace(
        "{{ $eng.tp }}", "{{ .Values.tpx | default 16 }}"), encoding="utf-8")
    before = tree(chart)
    p = tp("--format", "json", "fixtures/layouts/chart/templates/deploy.yaml", cwd=copy)
    assert [(f["code"], f["edits"]) for f in findings(p)] == [("TP201", []), ("TP401", [])]
    d = tp("--diff", "fixtures/layouts/chart/templates/deploy.yaml", cwd=copy)
    assert (d.returncode, d.stdout) == (0, "")
    tp("--fix", "fixtures/layouts/chart/templates/deploy.yaml", cwd=copy)
    assert tree(chart) == before


def test_a_value_out_of_range_with_no_one_reading_is_not_fixed(tmp_path: Path) -> None:
    # 250 is no percent (over 100) and 0 sequences has no nearest meaning: both stay refused
    text = ("vllm serve Qwen/Qwen3-32B --gpu-memory-utilization 250\n"
            "vllm serve Qwen/Qwen3-8B --max-num-seqs 0\n")
    (tmp_path / "x.sh").write_text(text, encoding="utf-8")
    p = tp("--format", "json", "x.sh", cwd=tmp_path)
    assert [(f["code"], f["fixable"]) for f in findings(p)] == [("TP003", False),
                                                                 ("TP003", False)]
    d = tp("--diff", "x.sh", cwd=tmp_path)
    assert (d.returncode, d.stdout) == (0, "")


def test_fix_with_json_prints_what_is_left_and_the_summary_on_stderr(copy: Path) -> None:
    p = tp("--fix", "--format", "json", "fixtures/lint/qwen3-32b-tp16.yaml", cwd=copy)
    assert p.returncode == 1
    # TP201 fixed; TP402 (16 GPUs on an 8-GPU node type) left, on line 26 now that the fix
    # added two lines (--data-parallel-size, "2") above the request
    assert [(f["code"], f["line"]) for f in findings(p)] == [("TP402", 26)]
    assert p.stderr.startswith("tpcheck: fixed 1 finding(s) in 1 file(s); 1 remaining")


def test_fix_and_diff_together_only_show(copy: Path) -> None:
    before = tree(copy / "fixtures")
    p = tp("--fix", "--diff", "fixtures/lint/llama70b-tp6.sh", cwd=copy)
    assert p.returncode == 1 and "+    --tensor-parallel-size 4 \\\n" in p.stdout
    assert tree(copy / "fixtures") == before


def test_a_values_yaml_fix_is_checked_against_every_template_that_reads_it(
        tmp_path: Path) -> None:
    # Two servers share `engine.tp: 16`. Qwen3-32B (h_kv = 8) is better off at TP 8; Llama-3.1-
    # 405B is not: at TP 8 its weights are 101,470,601,216 B per H100 (TP201's weights_at_h_kv),
    # over the GPU's 79.2 GiB, so TP 8 would bring a TP205 in the other template.
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: two\nversion: 0.1.0\n")
    values = "engine:\n  tp: 16  # shared by both servers\n"
    (chart / "values.yaml").write_text(values, encoding="utf-8")
    for name, model in (("a", "Qwen/Qwen3-32B"), ("b", "meta-llama/Llama-3.1-405B-Instruct")):
        (chart / "templates" / f"{name}.yaml").write_text(
            f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n"
            "  template:\n    spec:\n      containers:\n      - name: vllm\n"
            "        image: vllm/vllm-openai:v0.33.0\n"
            f'        args: ["vllm", "serve", "{model}", "--tensor-parallel-size", '
            '"{{ .Values.engine.tp }}"]\n', encoding="utf-8")
    p = tp("--gpu", "h100-sxm", "--fix", "chart", cwd=tmp_path)
    assert (chart / "values.yaml").read_text(encoding="utf-8") == values
    assert ("chart/templates/a.yaml:11:78: TP201 not fixed: 'Set tensor parallel size to "
            "h_kv = 8' would bring TP205 in chart/templates/b.yaml") in p.stdout


def test_diff_of_a_file_without_a_final_newline_applies_with_git(tmp_path: Path) -> None:
    s = tmp_path / "s.sh"
    s.write_text(f"vllm serve {L70} --tensor-parallel-size 6", encoding="utf-8")
    d = tp("--diff", "s.sh", cwd=tmp_path)
    assert d.stdout.count("\\ No newline at end of file\n") == 2  # the old line and the new
    (tmp_path / "p.diff").write_text(d.stdout, encoding="utf-8")
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert s.read_text(encoding="utf-8") == f"vllm serve {L70} --tensor-parallel-size 4"
