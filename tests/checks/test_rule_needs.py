"""Each rule declares what it needs (issue 15); lint.py skips it generically, never by code."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tpcheck.checks import RULES, Rule
from tpcheck.checks.base import Finding, Severity
from tpcheck.checks.context import CheckContext
from tpcheck.checks.registry import FAMILIES, NEEDS
from tpcheck.lint import Linter
from tpcheck.record import fields
from tpcheck.settings import Settings
from tpcheck.sources.base import Deployment

DEPLOYMENT_FIELDS = {f.name for f in fields(Deployment)}


@pytest.mark.parametrize("rule", RULES, ids=[m.code for m in RULES])
def test_every_rule_declares_what_it_needs(rule: Rule) -> None:
    assert rule.needs <= NEEDS, rule.needs - NEEDS
    assert rule.family in FAMILIES
    assert isinstance(rule.memory_model, bool) and isinstance(rule.refusal_verdict, bool)
    assert isinstance(rule.depends_on, tuple)
    # a misspelt field would never be unresolved: the rule would guess silently
    assert set(rule.depends_on) <= DEPLOYMENT_FIELDS, set(rule.depends_on) - DEPLOYMENT_FIELDS


def test_a_row_names_a_function_that_exists() -> None:
    # the registry imports no check; each row's function is found when first called
    for rule in RULES:
        assert isinstance(rule.checker, str)
        module, _, name = rule.checker.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), rule.code


def _probe(code: str, needs: frozenset[str] = frozenset(),
           depends_on: tuple[str, ...] = ()) -> tuple[Rule, list[str]]:
    """A rule that finds nothing and records the launches it was asked about."""
    calls: list[str] = []

    def check(ctx: CheckContext, rule: Rule) -> Iterator[Finding]:
        calls.append(ctx.deployment.path)
        return iter(())

    return Rule(code, "probe", Severity.INFO, "capacity", "probe", check, needs,
                depends_on), calls


def _run(tmp_path: Path, name: str, text: str, *rules: Rule) -> None:
    p = tmp_path / name
    p.write_text(text)
    linter = Linter(Settings(offline=True), gpu_flag="h100-sxm")
    linter.rules = list(rules)
    linter.run([str(p)])


TPU = """apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice}
      containers:
        - name: engine
          image: vllm/vllm-openai:v0.33.0
          args: [vllm, serve, org/m, -tp, '16']
          resources: {limits: {google.com/tpu: 16}}
"""


def test_tpu_skips_what_needs_gpu_physics_whatever_its_code(tmp_path: Path) -> None:
    # codes a prefix gate would have treated the other way round
    physics, physics_calls = _probe("TP001", frozenset({"gpu_physics"}))
    layout, layout_calls = _probe("TP201")
    _run(tmp_path, "tpu.yaml", TPU, physics, layout)
    assert physics_calls == [] and layout_calls == [str(tmp_path / "tpu.yaml")]


def test_unknown_t_skips_what_needs_a_known_t(tmp_path: Path) -> None:
    text = "vllm serve org/m --tensor-parallel-size $((N * 8))\n"
    needs_t, needs_t_calls = _probe("TP001", frozenset({"known_tp"}))
    other, other_calls = _probe("TP401")
    _run(tmp_path, "run.sh", text, needs_t, other)
    assert needs_t_calls == [] and other_calls == [str(tmp_path / "run.sh")]


def test_an_unresolved_field_skips_the_rules_that_depend_on_it(tmp_path: Path) -> None:
    text = "vllm serve org/m --tensor-parallel-size 8 --data-parallel-size $DP\n"
    dp, dp_calls = _probe("TP001", depends_on=("data_parallel_size",))
    mem, mem_calls = _probe("TP201", depends_on=("gpu_memory_utilization",))
    _run(tmp_path, "run.sh", text, dp, mem)
    assert dp_calls == [] and mem_calls == [str(tmp_path / "run.sh")]


def test_a_refused_size_runs_only_what_does_without_a_valid_layout(tmp_path: Path) -> None:
    # t = 0 is below vLLM's minimum of 1: TP003's case (issue 17); layout rules are not run
    text = "vllm serve org/m --tensor-parallel-size 0\n"
    layout, layout_calls = _probe("TP001", frozenset({"valid_layout"}))
    cmdline, cmdline_calls = _probe("TP201")
    _run(tmp_path, "run.sh", text, layout, cmdline)
    assert layout_calls == [] and cmdline_calls == [str(tmp_path / "run.sh")]


def test_no_rule_code_outside_the_registry_gates_the_run() -> None:
    # lint.py reads the rows (needs, outcome) and physics returns refusals as facts: neither
    # names a rule code, so a rule's behaviour is changed in its row alone
    root = Path(__file__).resolve().parents[2] / "tpcheck"
    for rel in ("lint.py", "physics/legality.py", "physics/plan.py"):
        text = (root / rel).read_text(encoding="utf-8")
        assert re.findall(r"[\"']TP\d{3}[\"']", text) == [], rel


def test_the_option_rows_outcomes_are_the_ones_worded() -> None:
    # checks._options asserts a row's outcome against OUTCOMES without importing the headlines
    from tpcheck.checks._option_headline import VERB
    from tpcheck.checks._option_verdicts import OUTCOMES

    assert set(VERB) | {"combination"} == OUTCOMES
    assert {r.param("outcome") for r in RULES if r.family == "options"} <= OUTCOMES


def test_replacing_the_rules_between_runs_runs_the_new_ones(tmp_path: Path) -> None:
    """The linter reads its rows (rule, function, needs) once per run: a run after ``rules`` is
    replaced asks the new rules, not the rows of the first run."""
    p = tmp_path / "run.sh"
    p.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct\n")
    first, first_calls = _probe("TP901")
    second, second_calls = _probe("TP902")
    linter = Linter(Settings(offline=True), gpu_flag="h100-sxm")
    linter.rules = [first]
    linter.run([str(p)])
    linter.rules = [second]
    linter.run([str(p)])
    assert len(first_calls) == 1 and len(second_calls) == 1
