"""Hostile input, third round (issue 28): every expansion and parser bounded by work.

Each case runs the real CLI in a fresh interpreter whose address space is capped at 1 GiB
(``RLIMIT_AS``), so a bomb that still expands ends in a MemoryError ("please report") instead
of taking the machine, and fails the test either way. Times and peaks are bench/hostile.py's.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

MODEL = "Qwen/Qwen3-32B"  # bundled catalog: 64 heads, so t = 3 is TP101 (64 mod 3 = 1)
AS_LIMIT = 1024 * 1024 * 1024


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def lint(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TPCHECK_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--gpu", "h100-sxm",
                           "--format", "json", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env, preexec_fn=_cap)


def pod(env_lines: list[str], extra_args: str) -> str:
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "    - name: vllm\n      image: vllm/vllm-openai\n      env:\n"
            + "".join(f"        {e}\n" for e in env_lines)
            + f"      command: [vllm, serve, {MODEL}, --tensor-parallel-size, '3'{extra_args}]\n")


def errors(out: str) -> list[str]:
    """The JSON report's input errors, as path:line:column: message."""
    return [f"{e['path']}:{e['line']}:{e['column']}: {e['message']}"
            for e in json.loads(out)["errors"]]


def codes(out: str) -> list[str]:
    return [f["code"] for f in json.loads(out)["findings"]]


def test_k8s_env_doubling_is_bounded_and_said_in_one_line(tmp_path: Path) -> None:
    # V0 is 10 characters and each of 27 entries doubles the one before: 10 × 2**27 = 1.3 GB
    # if expanded (13 s and 1.9 GB before, 31 entries a MemoryError "please report").
    env = ["- {name: V0, value: abcdefghij}"] + [
        f"- {{name: V{i}, value: '$(V{i - 1})$(V{i - 1})'}}" for i in range(1, 28)]
    (tmp_path / "pod.yaml").write_text(pod(env, ", --served-model-name, '$(V27)'"))
    p = lint(tmp_path, "pod.yaml")
    assert "please report" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
    # 10 × 2**12 = 40,960 fits the 64 KiB word limit, V13's second $(V12) (81,920) does not:
    # V13 is line 9 + 13 = 22 of the file, its second reference at column 37
    assert errors(p.stdout) == [
        "pod.yaml:22:37: variable expansion past tpcheck's limits (64 KiB a word, "
        "4 MiB a file); what it builds is unresolved"]
    assert p.returncode == 2 and "TP101" in codes(p.stdout)  # the launch is still checked


def test_k8s_env_chain_is_bounded_by_the_file_total(tmp_path: Path) -> None:
    # V_i = $(V_{i-1})x has i + 1 characters, its entry expands V_{i-1}'s i: 20,000 entries
    # would expand 2 × 10**8 (1.9 GB before). After entry i the total is i(i + 1)/2, past
    # 4 MiB (4,194,304) first at i = 2,896 (4,194,856; 2,895 gives 4,191,960): V2896, on line
    # 9 + 2,896 = 2,905, its reference at column 33
    env = ["- {name: V0, value: x}"] + [
        f"- {{name: V{i}, value: '$(V{i - 1})x'}}" for i in range(1, 20_000)]
    (tmp_path / "pod.yaml").write_text(pod(env, ", --served-model-name, '$(V19999)'"))
    p = lint(tmp_path, "pod.yaml")
    assert "please report" not in p.stderr, p.stderr[-2000:]
    assert (2896 * 2897 // 2, 2895 * 2896 // 2) == (4_194_856, 4_191_960)
    assert errors(p.stdout) == [
        "pod.yaml:2905:33: variable expansion past tpcheck's limits (64 KiB a word, "
        "4 MiB a file); what it builds is unresolved"]
    assert p.returncode == 2 and "TP101" in codes(p.stdout)


def test_many_assignments_and_commands_are_linear(tmp_path: Path) -> None:
    # 24,000 assignments then 25,000 commands (330 KB): each command copied the environment
    # (24,000 × 25,000 = 6 × 10**8 entries, 65-150 s); a view costs nothing per command.
    # 49,000 words + the launch's 4 stay under the 50,000-word limit, so the launch is read.
    text = "".join(f"A{i}=v\n" for i in range(24_000)) + "true\n" * 25_000
    text += f"vllm serve {MODEL} --tensor-parallel-size 3\n"
    (tmp_path / "many.sh").write_text(text)
    assert 300_000 < len(text) < 400_000
    p = lint(tmp_path, "many.sh", timeout=30)
    assert p.returncode == 1 and errors(p.stdout) == [], p.stderr[-2000:]
    assert "TP101" in codes(p.stdout)


def test_chained_assignments_are_linear(tmp_path: Path) -> None:
    # A_i=$A_{i-1}: 10,000 assignments, each its own command (24 s before)
    text = "A0=4\n" + "".join(f"A{i}=$A{i - 1}\n" for i in range(1, 10_000))
    text += f"vllm serve {MODEL} --tensor-parallel-size 3 --max-num-seqs $A9999\n"
    (tmp_path / "chain.sh").write_text(text)
    p = lint(tmp_path, "chain.sh", timeout=30)
    assert p.returncode == 1 and errors(p.stdout) == [], p.stderr[-2000:]
    assert "TP101" in codes(p.stdout)


def test_a_command_keeps_its_own_environment_and_later_ones_do_not_see_it(
        tmp_path: Path) -> None:
    # the view over the script's environment: VLLM_X=1 belongs to the first launch only,
    # B=2 (an assignment alone) to every command after it
    from tpcheck.sources.shell import read_shell

    first, second = read_shell("e.sh", "A=0\nVLLM_X=1 vllm serve m -tp 2\nB=2\n"
                                       "vllm serve m -tp 2\n")
    assert dict(first.env) == {"A": "0", "VLLM_X": "1"}
    assert dict(second.env) == {"A": "0", "B": "2"}


TEMPLATE = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "    - name: vllm\n      image: vllm/vllm-openai\n{extra}"
            f"      command: [vllm, serve, {MODEL}, --tensor-parallel-size, 'TP']\n")


def template(extra: str = "", tp: str = "3") -> str:
    return TEMPLATE.replace("{extra}", extra).replace("'TP'", f"'{tp}'")


def chart(root: Path, values: str, template: str) -> Path:
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (root / "values.yaml").write_text(values)
    (root / "templates" / "pod.yaml").write_text(template)
    return root


def test_a_5000_digit_number_in_values_or_an_action_is_a_tp003_as_in_a_manifest(
        tmp_path: Path) -> None:
    # int() refuses past 4,300 digits: values.yaml's loader and the action's literal ended in
    # "ValueError … please report"; a plain manifest's 5,000-digit size is TP003
    big = "9" * 5000
    chart(tmp_path / "values", f"tp: {big}\n",
          template(tp="{{ .Values.tp }}"))
    chart(tmp_path / "action", "tp: 3\n", template(tp="{{ " + big + " }}"))
    (tmp_path / "plain.yaml").write_text(template(tp=big))
    p = lint(tmp_path, "values", "action", "plain.yaml")
    assert "please report" not in p.stderr, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["errors"] == []
    tp003 = {f["path"] for f in out["findings"] if f["code"] == "TP003"
             and "--tensor-parallel-size" in f["message"]}
    assert tp003 == {"values/templates/pod.yaml", "action/templates/pod.yaml", "plain.yaml"}


def test_nindent_wider_than_the_limit_is_one_line(tmp_path: Path) -> None:
    # nindent 400000000 laid out a 3.5 GB line for a 300-byte template; 10**29 was an
    # OverflowError ("please report"). The action is on line 9 (8 lines of the Pod before it)
    extra = "      args:\n{{ .Values.args | toYaml | nindent %s }}\n"
    chart(tmp_path / "wide", "args: [a]\n", template(extra % "400000000"))
    chart(tmp_path / "huge", "args: [a]\n", template(extra % ("1" + "0" * 29)))
    p = lint(tmp_path, "wide", "huge")
    assert "please report" not in p.stderr, p.stderr[-2000:]
    assert sorted(errors(p.stdout)) == [
        "huge/templates/pod.yaml:9:1: Helm template: nindent 100000…(30 digits) is wider than "
        "tpcheck lays out (1,024 columns); not read",
        "wide/templates/pod.yaml:9:1: Helm template: nindent 400000000 is wider than tpcheck "
        "lays out (1,024 columns); not read"]
    assert p.returncode == 2


def test_json6902_add_through_a_missing_key_is_kustomizes_refusal(tmp_path: Path) -> None:
    # an add to /spec/containers/0/args/- when the container has no args: IndexError
    # ("please report") before; kustomize refuses it with "doc is missing path"
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [pod.yaml]\npatches:\n  - target: {kind: Pod, name: p}\n    patch: |-\n"
        "      - op: add\n        path: /spec/containers/0/args/-\n"
        "        value: --tensor-parallel-size=3\n")
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        f"    - name: vllm\n      image: vllm/vllm-openai\n      command: [vllm, serve, {MODEL}]\n")
    p = lint(tmp_path, "kustomization.yaml")
    # the operation is line 5, column 9 of the kustomization (the inline patch's "- op")
    assert errors(p.stdout) == [
        "kustomization.yaml:5:9: JSON patch add does not apply: doc is missing path "
        "'/spec/containers/0/args/-' (no 'args')"], p.stderr
    assert p.returncode == 2


@pytest.mark.parametrize(("op", "path", "missing"), [
    ("replace", "/spec/containers/0/resources", "resources"),  # RFC 6902 §4.3: target must exist
    ("remove", "/spec/containers/0/args", "args"),  # §4.2
    ("replace", "/spec/containers/1", "1"),  # one container: index 1 is past the end
])
def test_json6902_replace_or_remove_of_a_missing_target_is_refused(
        tmp_path: Path, op: str, path: str, missing: str) -> None:
    value = "        value: {limits: {nvidia.com/gpu: 8}}\n" if op == "replace" else ""
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [pod.yaml]\npatches:\n  - target: {kind: Pod, name: p}\n    patch: |-\n"
        f"      - op: {op}\n        path: {path}\n{value}")
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        f"    - name: vllm\n      image: vllm/vllm-openai\n      command: [vllm, serve, {MODEL}]\n")
    p = lint(tmp_path, "kustomization.yaml")
    assert errors(p.stdout) == [
        f"kustomization.yaml:5:9: JSON patch {op} does not apply: doc is missing path "
        f"{path!r} (no {missing!r})"], p.stderr
    assert p.returncode == 2


def test_plan_set_nested_past_the_decoder_is_one_usage_line(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-m", "tpcheck", "plan", "--offline", "--gpu",
                        "h100-sxm", MODEL, "--set", "text_config=" + "[" * 30_000 + "]" * 30_000],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [
        "tpcheck: error: argument --set: the value of 'text_config' is nested too deeply to "
        "read (see 'tpcheck plan --help')"]


@pytest.mark.parametrize("text", [
    "pipeline-parallel-size:\nmax-num-seqs:\n{{}}n:",  # a vLLM --config file, no final newline
    "{{ $x := 1 }}\ntensor-parallel-size: 2\nmodel: |\n  x",  # a block scalar ends a template
])
def test_a_node_ending_past_the_last_line_is_placed_at_the_end(tmp_path: Path,
                                                               text: str) -> None:
    # the YAML end mark of the last node sits on a line the text does not have (no final
    # newline): LineIndex.offset raised IndexError, "please report"
    (tmp_path / "x.yaml").write_text(text)
    p = lint(tmp_path, "x.yaml")
    assert "please report" not in p.stdout + p.stderr and "IndexError" not in p.stdout
    assert json.loads(p.stdout)["summary"]["deployments"] == 1


def test_line_index_offset_past_the_last_line_is_the_end() -> None:
    from tpcheck.sources.positions import LineIndex

    idx = LineIndex("ab\ncd")  # lines start at 0 and 3; the text is 5 characters
    assert (idx.offset(2, 2), idx.offset(3, 1), idx.offset(9, 4)) == (4, 5, 5)


@pytest.mark.parametrize(("rest", "columns"), [
    # column of each bad value on `vllm serve Qwen/Qwen3-32B --kv-cache-dtype fp9 …`:
    # "vllm serve Qwen/Qwen3-32B --kv-cache-dtype " is 43 characters, so fp9 is at 44
    ("", [44]),
    # + " --gpu-memory-utilization " (26): 44 + 3 + 26 = 73
    (" --gpu-memory-utilization 90", [44, 73]),
    # + " --dtype " (9): 56; + "blah --max-model-len " (21): 77. The table refused --dtype,
    # the physics refused it as well (same value: once), and fp9 ran into every rule
    # ("internal error in TP101 … TP303") once the first refusal was set aside
    (" --dtype blah --max-model-len abc", [44, 56, 77]),
    # 44; --quantization at 44 + 3 + 16 = 63; t = 0 at 63 + 3 + 24 = 90; -1 at 90 + 1 + 16 = 107
    (" --quantization foo --tensor-parallel-size 0 --max-num-seqs -1", [44, 63, 90, 107]),
])
def test_every_bad_value_on_a_line_is_its_own_finding(tmp_path: Path, rest: str,
                                                      columns: list[int]) -> None:
    (tmp_path / "n.sh").write_text(f"vllm serve {MODEL} --kv-cache-dtype fp9{rest}\n")
    p = lint(tmp_path, "n.sh")
    out = json.loads(p.stdout)
    assert out["errors"] == [], out["errors"]
    assert sorted(f["column"] for f in out["findings"] if f["code"] == "TP003") == columns


def test_a_400_digit_max_num_seqs_is_no_internal_error(tmp_path: Path) -> None:
    # found by bench/hostile.py --fuzz: TP203's "N× the seats" divided as floats
    # (OverflowError: integer division result too large for a float)
    (tmp_path / "s.sh").write_text(f"vllm serve {MODEL} -tp 4 --max-num-seqs {'9' * 400}\n")
    p = lint(tmp_path, "s.sh")
    out = json.loads(p.stdout)
    assert out["errors"] == [] and "internal error" not in p.stderr
    (f,) = [f for f in out["findings"] if f["code"] == "TP203"]
    assert f["message"].startswith(f"--max-num-seqs {'9' * 400} is ")
