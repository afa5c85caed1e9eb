"""Flag resolution as each engine's argparse does it (0.33 / 0.5.23 option lists)."""

from __future__ import annotations

from tpcheck.engines.flags import resolve
from tpcheck.sources.shell import read_shell


def test_sglang_prefixes() -> None:
    assert resolve("sglang", "--tp").option == "--tp-size"
    assert resolve("sglang", "--dp").option == "--dp-size"
    r = resolve("sglang", "--pp")
    assert r.option is None and r.error is not None and "--pp-size" in r.error
    # exact match wins over longer flags sharing the prefix
    assert resolve("sglang", "--enable-dp-attention").option == "--enable-dp-attention"


def test_vllm_underscores_short_aliases_and_prefix() -> None:
    assert resolve("vllm", "--tensor_parallel_size").option == "--tensor-parallel-size"
    assert resolve("vllm", "-tp").option == "-tp"
    assert resolve("vllm", "--max-num-batched-token").option == "--max-num-batched-tokens"
    assert resolve("vllm", "--tp").option is None  # no vLLM long flag starts with --tp
    assert resolve("sglang", "--tp_size").option is None  # SGLang keeps underscores


def test_launch_forms() -> None:
    text = (
        "vllm serve a --tensor-parallel-size=2\n"
        "vllm serve --model b -tp 3\n"
        "python -m vllm.entrypoints.openai.api_server --model c --tensor-parallel-size 4\n"
        "python3 -m sglang.launch_server --model-path d --tp-size 5\n"
        "sglang serve e --tensor-parallel-size 6\n"
        "echo vllm serve is not a launch && TP=7; vllm serve f -tp $TP\n"
    )
    got = [(d.engine, d.model, d.tensor_parallel_size) for d in read_shell("x.sh", text)]
    assert got == [
        ("vllm", "a", 2), ("vllm", "b", 3), ("vllm", "c", 4), ("sglang", "d", 5),
        ("sglang", "e", 6), ("vllm", "f", 7),
    ]


def test_prefix_assignment_is_not_seen_by_the_same_command() -> None:
    # bash expands $TP before TP=7 applies to the command's environment
    (d,) = read_shell("x.sh", "TP=7 vllm serve f -tp $TP\n")
    assert d.tensor_parallel_size is None and d.env["TP"] == "7"


def test_unknown_variable_is_unresolved_not_guessed() -> None:
    (d,) = read_shell("x.sh", "vllm serve m --tensor-parallel-size $NGPU\n")
    assert d.tensor_parallel_size is None
    assert d.unresolved["tensor_parallel_size"] == "$NGPU"


def test_human_readable_max_model_len() -> None:
    (d,) = read_shell("x.sh", "vllm serve m --max-model-len 32k --max-num-seqs 8\n")
    assert d.max_model_len == 32000 and d.max_num_seqs == 8


def test_multimodal_limits_become_the_modalities_at_zero() -> None:
    # vLLM 0.19 skips a tower whose modalities are all limited to 0 (models/interfaces.py
    # l.249-288); --language-model-only sets every limit to 0 (config/multimodal.py l.264).
    text = (
        "vllm serve a --limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'\n"
        "vllm serve b --limit-mm-per-prompt '{\"image\": {\"count\": 0}, \"audio\": 2}'\n"
        "vllm serve c --limit-mm-per-prompt '{\"image\": 4}'\n"
        "vllm serve d --language-model-only\n"
        "vllm serve e --limit-mm-per-prompt image=0\n"
        "vllm serve f\n"
    )
    got = [(d.model, d.mm_zero) for d in read_shell("x.sh", text)]
    assert got == [("a", "image,video"), ("b", "image"), ("c", ""), ("d", "*"),
                   ("e", None), ("f", None)]
