"""SGLang 0.5.23's option table, generated from the released wheel's annotated fields.

0.5.23 declares its options as ``A[T, "help"]`` / ``A[T, Arg(...)]`` fields of the namespace
classes in ``sglang/srt/arg_groups/fields/*.py``; ``arg_groups/arg_utils.py``
``add_cli_args_from_dataclass`` (l.328-417) turns each into an ``add_argument`` call, and
``server_args.py`` ``add_cli_args`` (l.351-443) adds dynamic choices and deprecated spellings.
Line numbers below are the wheel's (sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl).
Each test here but the TP004 one failed on the table transcribed by hand (names only, no
keywords) that this one replaces.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from tests.checks.rulecase import engine_says
from tests.checks.rulecase import lint_command_line as lint
from tests.engines.test_options import OPTIONS, gen
from tpcheck.checks.base import Severity
from tpcheck.engines.flags import load_table

POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
       "  - name: s\n    image: lmsysorg/sglang:v0.5.23\n    command: [%s]\n")


def test_kinds_choices_and_defaults_come_from_the_cited_field() -> None:
    t = load_table("sglang", "0.5.23")
    assert t.source == "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"
    s = t.by_name
    # fields/model.py:197 kv_cache_dtype: A[str, Arg(choices=["auto", "fp8_e5m2", "fp8_e4m3",
    # "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16"])] = "auto" (8 values, sorted)
    kv = s["--kv-cache-dtype"]
    assert kv.where == "sglang/srt/arg_groups/fields/model.py:197" and kv.kind == "str"
    assert kv.choices == ("auto", "bf16", "bfloat16", "fp4_mx_block16", "fp8_e4m3", "fp8_e5m2",
                          "mxfp8", "nvfp4")
    # fields/exec_.py:613 cuda_graph_backend_decode: choices=Backend.ALL, and
    # model_executor/cuda_graph_config.py:48 ALL = (FULL, BREAKABLE, DISABLED) = l.45-47's
    # "full", "breakable", "disabled"; its type_parser returns the value unchanged (l.237-243)
    cg = s["--cuda-graph-backend-decode"]
    assert cg.where.endswith("fields/exec_.py:613")
    assert cg.choices == ("breakable", "disabled", "full")
    # fields/exec_.py:836-851 moe_a2a_backend: A[Literal["none", "deepep", "mooncake", "nixl",
    # "mori", "ascend_fuseep", "flashinfer", "megamoe", "deepep_v2", "ascend_tp", "pplx",
    # "flashinfer_megamoe"], ...] = "none": 12 choices from the Literal (no Arg choices)
    a2a = s["--moe-a2a-backend"]
    assert a2a.where.endswith("fields/exec_.py:836") and a2a.choices is not None
    assert len(a2a.choices) == 12 and "flashinfer_megamoe" in a2a.choices
    # fields/parallel.py:81 attn_dp_size: A[int, Arg(aliases=["--attention-data-parallel-size"])]
    assert s["--attention-data-parallel-size"] is s["--attn-dp-size"]
    assert s["--attn-dp-size"].kind == "int"
    # fields/model.py:110 context_length: type_parser=human_readable_int
    assert s["--context-length"].kind == "human_int"
    # fields/schedule.py:71 max_prefill_tokens: A[int, Arg(type_parser=human_readable_int)]
    assert s["--max-prefill-tokens"].kind == "human_int"
    # fields/schedule.py:31 max_running_requests: A[Optional[int], "..."] = None
    assert s["--max-running-requests"].kind == "int"
    # fields/lora.py:54 lora_paths: Arg(action=LoRAPathAction, action_kwargs={"nargs": "*"})
    assert s["--lora-paths"].kind == "list"
    # fields/model.py enable_tf32_matmul: Arg(action=argparse.BooleanOptionalAction): argparse
    # registers the --no- spelling too (12 such fields; the hand list had none of the 12)
    assert s["--no-enable-tf32-matmul"] is s["--enable-tf32-matmul"]
    assert s["--enable-tf32-matmul"].kind == "bool_optional"


def test_defaults_are_written_where_the_field_states_one() -> None:
    data = json.loads((OPTIONS / "sglang-0.5.23.json").read_text(encoding="utf-8"))
    by = {n: e for e in data["options"] for n in e["names"]}
    assert by["--kv-cache-dtype"]["default"] == "auto"  # fields/model.py:197 ... = "auto"
    assert by["--tp-size"]["default"] == 1  # fields/parallel.py:45 ... = 1
    assert by["--max-prefill-tokens"]["default"] == 16384  # fields/schedule.py:71-81
    assert by["--mem-fraction-static"]["default"] is None  # schedule.py:27, resolved later
    assert "default" not in by["--model-path"]  # model.py:51 has none: argparse requires it
    # keywords: every ServerArgs field, no_cli ones too (parallel.py:194 enable_dp_attention)
    assert "enable_dp_attention" in data["keywords"] and "tp_size" in data["keywords"]
    assert len(data["keywords"]) == 546


def test_tp003_refuses_a_value_outside_the_choices_for_0_5_23(tmp_path: Path) -> None:
    text = POD % ("sglang, serve, --model-path, m, --cuda-graph-backend-decode, piecewise, "
                  "--max-running-requests, lots, --max-prefill-tokens, 8x")
    fs = lint(tmp_path, "p.yaml", text)
    assert [f.code for f in fs] == ["TP003", "TP003", "TP003"]
    assert engine_says(fs[0]).startswith(
        "sglang serve: error: argument --cuda-graph-backend-decode: invalid choice: "
        "'piecewise' (choose from 'breakable', 'disabled', 'full')")
    assert engine_says(fs[1]).startswith(
        "sglang serve: error: argument --max-running-requests: invalid int value: 'lots'")
    # human_readable_int (utils/common.py:3394) takes 8k, not 8x
    assert engine_says(fs[2]).startswith(
        "sglang serve: error: argument --max-prefill-tokens: invalid value: '8x'")


def test_enable_dp_attention_is_still_accepted_but_deprecated_in_0_5_23(tmp_path: Path) -> None:
    """server_args.py:418-424 registers --enable-dp-attention with DeprecatedStoreTrueAction,
    new_flag="--attn-dp-size <dp-size>" ("TODO: remove the flag and the field after
    2026-12-31"): the launch goes on with a warning (TP005), it is not removed (TP004). The
    warning is the action's own (argparse_actions.py:97-101); the replacement takes a value
    and the old spelling does not, so no edit swaps one for the other."""
    fs = lint(tmp_path, "p.yaml", POD % "sglang, serve, --model-path, m, --enable-dp-attention")
    [f] = fs
    assert f.code == "TP005" and f.severity is Severity.WARNING
    assert engine_says(f).startswith(
        "'--enable-dp-attention' is deprecated and will be removed in a future release. "
        "Use '--attn-dp-size <dp-size>' instead.")
    assert f.fix == "use --attn-dp-size" and f.edits == ()
    opt = load_table("sglang", "0.5.23").by_name["--enable-dp-attention"]
    assert opt.where == "sglang/srt/server_args.py:418" and opt.kind == "flag"


def test_a_brace_pattern_names_no_single_replacement(tmp_path: Path) -> None:
    """server_args.py:410-415: --disable-cuda-graph, new_flag=
    "--cuda-graph-backend-{decode,prefill}=disabled": two options replace it, and
    --cuda-graph-backend alone is an ambiguous prefix, so the table names no replacement."""
    [f] = lint(tmp_path, "p.yaml", POD % "sglang, serve, --model-path, m, --disable-cuda-graph")
    assert f.code == "TP005"
    assert engine_says(f).startswith("'--disable-cuda-graph' is deprecated and will be removed "
                                     "in a future release. Use '--cuda-graph-backend-{decode,"
                                     "prefill}=disabled' instead.")
    assert "; use --" not in f.message and f.edits == ()


def test_an_option_0_5_23_dropped_names_the_last_release(tmp_path: Path) -> None:
    # 0.5.10.post1 server_args.py:4149 --stream-output (DeprecatedStoreTrueAction); no
    # 0.5.23 field or call registers it
    [f] = lint(tmp_path, "p.yaml", POD % "sglang, serve, --model-path, m, --stream-output")
    assert f.code == "TP004" and f.severity is Severity.ERROR
    assert engine_says(f).startswith(
        "sglang serve: error: unrecognized arguments: --stream-output (registered up to sglang "
        "0.5.10.post1 at sglang/srt/server_args.py:4149; gone in 0.5.23)")


def test_engine_keywords_are_checked_for_0_5_23(tmp_path: Path) -> None:
    """``sgl.Engine(**kwargs)`` builds ``ServerArgs(**kwargs)``, a msgspec struct of every
    namespace field (server_args.py:546-566): 0.5.23 has no ``cuda_graph_max_bs`` field (split
    into fields/exec_.py cuda_graph_max_bs_decode / _prefill), 0.5.10.post1 had one. The hand
    table had no keyword list, so keywords were not judged at all."""
    fs = lint(tmp_path, "e.py", 'import sglang as sgl\n\nllm = sgl.Engine(model_path="m", '
              "tp_size=2, attn_dp_size=2, cuda_graph_max_bs=8)\n")
    [f] = fs
    assert f.code == "TP004"
    assert engine_says(f).startswith(
        "TypeError: ServerArgs.__init__() got an unexpected keyword argument "
        "'cuda_graph_max_bs' (accepted up to sglang 0.5.10.post1; gone in 0.5.23)")


_ARG_UTILS = "def add_cli_args_from_dataclass(parser, cls, *, fields=None): ...\n"
_CHOICES = 'BACKENDS = ["b", "a"]\n'
_ACTIONS = '''
import argparse
def print_deprecated_warning(message): ...
class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, nargs=0, **kwargs):
        self.new_flag = new_flag
    def __call__(self, parser, namespace, values, option_string=None):
        replacement = f" Use '{self.new_flag}' instead." if self.new_flag else ""
        print_deprecated_warning(f"'{option_string}' is gone soon.{replacement}")
'''
_FIELDS = '''
import argparse
from typing import List, Literal, Optional
import msgspec
from sglang.srt.arg_groups.arg_utils import A, Arg
from sglang.srt.arg_groups.choices import BACKENDS
from sglang.srt.utils.common import human_readable_int

class Mode:
    ONE = "one"
    ALL = (ONE, "two")

def same(raw):
    return raw

class Par(msgspec.Struct):
    _NS_PATH = "par"
    tp_size: A[int, Arg(help="TP.", aliases=["--tensor-parallel-size"])] = 1
    backend: A[Optional[str], Arg(help="b", choices=BACKENDS + ["c"])] = None
    mode: A[Optional[Literal["one", "two"]], Arg(choices=Mode.ALL, type_parser=same)] = None
    page: A[Literal[16, 32], "page"] = 16
    length: A[Optional[int], Arg(help="l", type_parser=human_readable_int)] = None
    urls: A[List[str], "u"] = msgspec.field(default_factory=list)
    fast: A[bool, Arg(help="f", action=argparse.BooleanOptionalAction)] = True
    quiet: A[bool, "q"] = False
    hidden: A[bool, Arg(no_cli=True)] = False
    plain: int = 0
    model_path: A[str, "path"]
'''
_SERVER_ARGS = '''
import argparse
from sglang.srt.arg_groups.arg_utils import add_cli_args_from_dataclass
from sglang.srt.arg_groups.argparse_actions import DeprecatedStoreTrueAction
from sglang.srt.arg_groups.fields.par import Par

class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--old", action=DeprecatedStoreTrueAction, new_flag="--tp-size <n>",
                            help="Deprecated.")
        parser.add_argument("--older", action=DeprecatedStoreTrueAction,
                            new_flag="--x-{a,b}=1", help="Deprecated.")

_INPUT_NAMESPACES = [
    Par,
]
'''


def test_generator_reads_annotated_fields_with_ast(tmp_path: Path) -> None:
    """A tiny wheel laid out like 0.5.23: kinds, choices (through an import, a ``+`` and a class
    attribute), defaults, ``no_cli``, the --no- spelling and the rendered deprecation warning,
    from the source alone; the same bytes twice."""
    whl = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for name, text in (("arg_utils.py", _ARG_UTILS), ("choices.py", _CHOICES),
                           ("argparse_actions.py", _ACTIONS), ("fields/par.py", _FIELDS)):
            z.writestr("sglang/srt/arg_groups/" + name, text)
        z.writestr("sglang/srt/utils/common.py", "def human_readable_int(v): ...\n")
        z.writestr("sglang/srt/server_args.py", _SERVER_ARGS)
    g = gen()
    out = tmp_path / "out"
    first = g.write("sglang", "9.9.9", g.Archive(whl), out).read_bytes()
    assert g.write("sglang", "9.9.9", g.Archive(whl), out).read_bytes() == first
    data = json.loads(first)
    by = {n: e for e in data["options"] for n in e["names"]}
    rel = "sglang/srt/arg_groups/fields/par.py"
    assert by["--tensor-parallel-size"] == {
        "names": ["--tp-size", "--tensor-parallel-size"], "default": 1, "kind": "int",
        "where": f"{rel}:18"}  # _FIELDS line 18 (line 1 is the empty one)
    assert by["--backend"]["choices"] == ["a", "b", "c"] and by["--backend"]["default"] is None
    assert by["--mode"]["choices"] == ["one", "two"]  # Mode.ALL = (ONE, "two"), ONE = "one"
    assert by["--page"]["kind"] == "int" and by["--page"]["choices"] == [16, 32]
    assert by["--length"]["kind"] == "human_int"
    assert by["--urls"]["kind"] == "list" and by["--urls"]["default"] == []
    assert by["--no-fast"] is by["--fast"] and by["--fast"]["kind"] == "bool_optional"
    assert by["--quiet"]["kind"] == "flag" and by["--quiet"]["default"] is False
    assert "default" not in by["--model-path"]
    assert "--hidden" not in by and "--plain" not in by  # no_cli; no A[...] annotation
    assert by["--old"]["deprecated"] == "'--old' is gone soon. Use '--tp-size <n>' instead."
    assert by["--old"]["replacement"] == "--tp-size"
    assert by["--older"]["deprecated"].endswith("Use '--x-{a,b}=1' instead.")
    assert "replacement" not in by["--older"]
    # every field is a ServerArgs keyword, hidden (no_cli) and plain included
    assert data["keywords"] == ["backend", "fast", "hidden", "length", "mode", "model_path",
                                "page", "plain", "quiet", "tp_size", "urls"]


WHEELS = Path(os.environ.get("TPCHECK_WHEELS", "/work/wheels"))


@pytest.mark.parametrize(("version", "wheel"), [
    ("0.5.23", "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"),
    ("0.5.10.post1", "sglang-0.5.10.post1-py3-none-any.whl"),
    ("0.4.10.post2", "sglang-0.4.10.post2-py3-none-any.whl"),
])
def test_committed_sglang_tables_regenerate_from_their_wheels(tmp_path: Path, version: str,
                                                              wheel: str) -> None:
    if not (WHEELS / wheel).exists():
        pytest.skip(f"{wheel} not downloaded (set TPCHECK_WHEELS to its folder)")
    g = gen()
    path = g.write("sglang", version, g.Archive(WHEELS / wheel), tmp_path)
    assert path.read_bytes() == (OPTIONS / f"sglang-{version}.json").read_bytes()
