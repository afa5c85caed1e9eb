"""Seeded generators of hostile-but-plausible inputs for every reader (issue 28).

One generator per reader — Kubernetes YAML with ``env`` and ``$(VAR)``, Helm charts, Python
launch code, shell scripts, ``vllm serve`` argv — each a function of a ``random.Random``, so
``bench/hostile.py --fuzz`` draws hundreds of thousands from a seed and the property tests
under tests/property draw a few dozen through hypothesis (``st.randoms()``). The pieces are
the shapes that found bugs: doubling and chained expansion, unary and bracket chains with a
syntax error after them, 5,000-digit numbers, huge ``nindent`` widths, JSON patches through
missing keys, blocks without a final newline, several bad values on one line.
"""

from __future__ import annotations

import random

MODELS = ["Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B-Instruct", "m", "./local", "$(MODEL)",
          "${MODEL:-Qwen/Qwen3-32B}", ""]
FLAGS = ["--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "--data-parallel-size",
         "--max-num-seqs", "--max-model-len", "--gpu-memory-utilization", "--kv-cache-dtype",
         "--dtype", "--quantization", "--swap-space", "--max-num-batched-tokens",
         "--enable-expert-parallel", "--block-size", "--served-model-name", "--unknown-flag",
         "--enforce-eager", "--cpu-offload-gb", "--tokenizer-mode", "--seed"]


def number(rng: random.Random) -> str:
    """A value for a numeric option: small, huge, odd, or not a number at all."""
    k = rng.randrange(14)
    if k == 0:
        return "9" * rng.choice([19, 400, 4301, 5000])
    if k == 1:
        return rng.choice(["1e300", "1e999", "inf", "-inf", "nan", "-0", "0.0"])
    if k == 2:
        return rng.choice(["-1", "0", "90", "1.5", "0x10", "1_000", "８", "٨", "", "abc"])
    if k == 3:
        return rng.choice(["fp9", "fp8", "auto", "bf16", "blah", "awq", "foo", "half"])
    return str(rng.choice([1, 2, 3, 4, 6, 8, 16, 32, 64, 128, 0.9, 0.95]))


def argv_line(rng: random.Random) -> str:
    """``vllm serve MODEL`` with a few flags, several of them bad at once."""
    words = ["vllm", "serve", rng.choice(MODELS[:4])]
    for _ in range(rng.randrange(8)):
        words.append(rng.choice(FLAGS))
        if rng.random() < 0.9:
            words.append(number(rng))
    return " ".join(w if w and " " not in w else repr(w) for w in words)


def _ref(rng: random.Random, i: int) -> str:
    j = rng.randrange(max(1, i)) if rng.random() < 0.85 else rng.randrange(i + 5)
    return f"$(V{j})"


def k8s_env(rng: random.Random) -> tuple[str, str]:
    """A Pod whose container env expands ``$(VAR)`` (doubling, chains, unknown names) and
    whose args use them, sometimes inside ``sh -c``."""
    style = rng.randrange(4)
    # the long chains are rare: a 20,000-entry one costs a second, the rest milliseconds
    n = rng.choice([0, 1, 3, 10, 27, 40]) if style or rng.random() > 0.04 else rng.choice(
        [200, 2000, 20_000])
    env = ["- {name: V0, value: " + rng.choice(["abcdefghij", "x", "'8'", "''", "$(V0)"]) + "}"]
    for i in range(1, n):
        if style == 0:
            value = f"$(V{i - 1})x"
        elif style == 1:
            value = f"$(V{i - 1})$(V{i - 1})"
        else:
            value = "".join(rng.choice([_ref(rng, i), "-", "x", "$(", ")", "$$(V1)"])
                            for _ in range(rng.randrange(1, 5)))
        env.append(f"- {{name: V{i}, value: '{value}'}}")
    last = f"$(V{max(0, n - 1)})"
    args = [rng.choice(MODELS[:3]), "--tensor-parallel-size", rng.choice(["'3'", "'8'", last]),
            "--served-model-name", f"'{last}'"]
    if rng.random() < 0.3:
        command = (f"[sh, -c, 'A={last}; vllm serve {rng.choice(MODELS[:3])} "
                   f"--max-model-len $A $(V1)']")
    else:
        command = f"[vllm, serve, {', '.join(args)}]"
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "    - name: vllm\n      image: vllm/vllm-openai\n      env:\n"
            + "".join(f"        {e}\n" for e in env) + f"      command: {command}\n")
    if rng.random() < 0.2:
        text = text.rstrip("\n")  # no final newline
    return "pod.yaml", text


_ACTIONS = ["{{ .Values.tp }}", "{{ .Values.model | quote }}", "{{ default 8 .Values.tp }}",
            "{{ int .Values.tp }}", "{{ .Values.missing.deep }}", "{{ $x := 1 }}", "{{}}",
            "{{- /* c */ -}}", "{{ include \"x\" . }}", "{{ toYaml .Values.l }}"]


def helm(rng: random.Random) -> dict[str, str]:
    """A chart: Chart.yaml, values.yaml and one template (paths relative to the chart)."""
    big = "9" * rng.choice([5, 4301, 5000])
    values = rng.choice([
        f"tp: {rng.choice(['3', '8', big, '1e999', '-1', 'abc', '[1, 2]', '{a: 1}'])}\n"
        f"model: {rng.choice(MODELS[:3])}\nl: [a, {big}]\nargs: [--x, '1']\n",
        "a: &a [*a]\n", "tp: !!python/object/apply:os.system [x]\n", "", "- 1\n", f"{big}\n",
        "res:\n  limits: {nvidia.com/gpu: " + rng.choice(["3", big, "-1"]) + "}\n",
    ])
    width = rng.choice(["0", "4", "12", "400000000", "1" + "0" * 29, "9" * 5000, "-2"])
    lines = ["apiVersion: v1", "kind: Pod", "metadata: {name: p}", "spec:", "  containers:",
             "    - name: vllm", "      image: vllm/vllm-openai",
             "      command: [vllm, serve, " + rng.choice(["{{ .Values.model }}", MODELS[0]])
             + ", --tensor-parallel-size, '" + rng.choice(
                 ["{{ .Values.tp }}", "{{ " + big + " }}", "3", "{{ add 1 " + big + " }}"])
             + "']"]
    for _ in range(rng.randrange(4)):
        k = rng.randrange(5)
        if k == 0:
            lines.append("      args:")
            lines.append("{{ .Values.args | toYaml | " + rng.choice(["nindent", "indent"])
                         + f" {width} }}}}")
        elif k == 1:
            lines.append("      resources:\n{{ toYaml .Values.res | nindent " + width + " }}")
        elif k == 2:
            lines.append("      x: " + rng.choice(_ACTIONS))
        elif k == 3:
            lines.append("{{ if .Values.tp }}      y: 1\n{{ end }}")
        else:
            lines.append("      z: |\n        " + rng.choice(_ACTIONS))
    text = "\n".join(lines)
    if rng.random() < 0.5:
        text += "\n"
    return {"Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n", "values.yaml": values,
            "templates/pod.yaml": text}


def python(rng: random.Random) -> tuple[str, str]:
    """Launch code with the shapes that slowed or broke the readers."""
    kwargs = []
    for _ in range(rng.randrange(5)):
        key = rng.choice(["tensor_parallel_size", "max_model_len", "kv_cache_dtype", "dtype",
                          "gpu_memory_utilization", "max_num_seqs", "model"])
        value = rng.choice([number(rng), repr(number(rng)), "os.getenv('TP', '8')",
                            "int(os.environ.get('TP', '4'))", "TP", "2**99999", "-" * 50 + "1",
                            "(" * 50 + "1" + ")" * 50, "b'' ''", "'\\N{NOPE}'", "f'{1}'"])
        kwargs.append(f"{key}={value}")
    body = [f"TP = {number(rng) or 1}", f"LLM(model={rng.choice(MODELS[:3])!r}, "
            + ", ".join(kwargs) + ")"]
    k = rng.randrange(9)
    if k == 0:  # a long unary chain, then a syntax error (libcst took a minute)
        body.append("x = " + "--a" * rng.choice([100, 1000, 4000]))
        body.append(rng.choice(["y = (", "def f(:", "print 'x'", ""]))
    elif k == 1:
        body.append("x = " + rng.choice(["[", "(", "{"]) * rng.choice([50, 199, 201, 3000]))
    elif k == 2:
        body.append("x = " + "+".join(["1"] * rng.choice([100, 3000])))
    elif k == 3:
        body.append(rng.choice(["type X = int", "match x:\n    case 1:\n        pass",
                                "async def f():\n    await g()", "if (n := 1):\n  pass",
                                "x = f'{f\"{1}\"}'", "def f[T](x: T) -> T: ..."]))
    elif k == 4:
        body.append(rng.choice(["\x00", "\ufeff", "\t x = 1", "\\", "'''", "x = 1 if else 2"]))
    elif k == 5:
        body.append("subprocess.run(['vllm', 'serve', 'm', '--tensor-parallel-size', "
                    f"{number(rng)!r}])")
    text = "import os, subprocess\nfrom vllm import LLM\n" + "\n".join(body)
    if rng.random() < 0.7:
        text += "\n"
    return "launch.py", text


def shell(rng: random.Random) -> tuple[str, str]:
    """A script: assignments (doubling, chains, many), expansions, heredocs, ``sh -c``."""
    lines: list[str] = []
    k = rng.randrange(6)
    big = rng.random() < 0.05  # the long scripts (10,000-49,000 lines) are rare
    if k == 0:
        lines += ["A=xxxxxxxxxx"] + ['A="$A$A"'] * rng.choice([5, 13, 28, 40])
    elif k == 1:
        n = rng.choice([2000, 10_000]) if big else 100
        lines += ["A0=4"] + [f"A{i}=$A{i - 1}" for i in range(1, n)]
    elif k == 2:
        n = rng.choice([5000, 24_000]) if big else 100
        lines += [f"B{i}=v" for i in range(n)] + ["true"] * (25_000 if big else 10)
    elif k == 3:
        lines += ["cat <<EOF > run.sh", "vllm serve m --tensor-parallel-size $TP", "EOF"] * (
            rng.choice([1, 50]))
    elif k == 4:
        lines += ["TP=$((" + "1+" * rng.choice([10, 1000]) + "1))",
                  "N=$(( 1 << " + rng.choice(["62", "63", "9999"]) + " ))"]
    lines.append(rng.choice(["", "exec ", "nohup ", "VLLM_X=1 ", "sh -c '", "bash -lc \""])
                 + argv_line(rng) + rng.choice(["", " $A", " ${A:-1}", " $A9", " \\", "'",
                                                 '"', " &&"]))
    return "run.sh", "\n".join(lines) + rng.choice(["\n", ""])


def kustomize(rng: random.Random) -> dict[str, str]:
    """A kustomization with a JSON 6902 patch whose path may go through missing keys."""
    path = rng.choice(["/spec/containers/0/args/-", "/spec/containers/0/args/0",
                       "/spec/containers/5/args", "/spec/containers/-/x", "/spec/x/y/z",
                       "/spec/containers/0/command/9", "/metadata/name/x"])
    op = rng.choice(["add", "replace", "remove", "move"])
    has_args = rng.random() < 0.5
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
           "    - name: vllm\n      image: vllm/vllm-openai\n"
           "      command: [vllm, serve, Qwen/Qwen3-32B]\n"
           + ("      args: [--max-num-seqs, '8']\n" if has_args else ""))
    kust = ("resources: [pod.yaml]\npatches:\n  - target: {kind: Pod, name: p}\n    patch: |-\n"
            f"      - op: {op}\n        path: {path}\n        value: --tensor-parallel-size=3")
    return {"kustomization.yaml": kust + rng.choice(["\n", ""]), "pod.yaml": pod}


# name -> (generator, what it returns: "file" (name, text) or "tree" {relative path: text})
GENERATORS = {"k8s-env": (k8s_env, "file"), "helm": (helm, "tree"), "python": (python, "file"),
              "shell": (shell, "file"), "argv": (lambda r: ("serve.sh", argv_line(r) + "\n"),
                                                 "file"),
              "kustomize": (kustomize, "tree")}
