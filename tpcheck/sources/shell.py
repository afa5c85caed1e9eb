"""Shell commands without a shell: words with positions, variables, continuations, ``sh -c``.

Scripts, ``sh -c`` strings in manifests and compose ``command:`` strings are split the way a
POSIX shell would split them (quotes, ``\\`` continuations, ``&&``/``;``/``|`` chains, comments,
heredoc bodies read as scripts of their own) and ``$VAR``/``${VAR:-default}`` expanded from
assignments seen earlier.
Nothing is ever executed: a command substitution is kept as written and marked unresolved.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Iterator, Mapping, MutableMapping

from tpcheck.deferred import lazy_re
from tpcheck.sources.base import Deployment, Span
from tpcheck.sources.positions import LineIndex, Located, from_file
from tpcheck.sources.shell_tokens import (
    MAX_COMMAND_WORDS,
    MAX_HEREDOC_DEPTH,
    MAX_WORDS,
    ShellTooLong,
    tokenize,
)
from tpcheck.sources.shell_vars import SHELLS, Vars, shell_c_string
from tpcheck.sources.words import MAX_EXPANDED_CHARS as MAX_EXPANDED_CHARS  # the shared limits
from tpcheck.sources.words import MAX_WORD_CHARS as MAX_WORD_CHARS
from tpcheck.sources.words import Word

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from tpcheck.sources.argv import Launch

_INTEGER = lazy_re(r"-?[0-9]+")
_ASSIGN = lazy_re(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_WRAPPERS = frozenset({"exec", "nohup", "time", "env", "sudo", "command", "stdbuf", "setsid"})


def read_commands(
    loc: Located, variables: Vars, env: MutableMapping[str, str], depth: int = 0
) -> Iterator[tuple[list[Word], Mapping[str, str]]]:
    """Commands in ``loc`` with their own environment; ``sh -c STRING`` is read inside.

    Assignments update ``variables`` (so later commands see them); words before the command
    name are its environment; wrappers such as ``exec`` and ``nohup`` are dropped. A command's
    environment is its own assignments over ``env``, a view valid until the next command is
    read (copy it to keep it): a copy of the environment per command made 24,000 assignments
    and 25,000 commands quadratic (65-150 s, issue 28).
    """
    for words in tokenize(loc, variables):
        k = 0
        own: dict[str, str] = {}
        cmd_env = ChainMap(own, env)
        while k < len(words):
            w = words[k]
            if w.value in ("export", "local", "declare", "readonly", "typeset") and k + 1 < len(
                words
            ):
                k += 1
                continue
            m = _ASSIGN.match(w.value)
            if not m or (w.unresolved and "=" not in _prefix_before_expansion(w)):
                break
            name = m.group(1)
            start = len(name) + 1
            variables.derived.pop(name, None)
            if w.unresolved:  # X=$(hostname): X's value is unknown, so a later $X is unresolved
                variables.shell.pop(name, None)
            elif w.derived is not None and _INTEGER.fullmatch(m.group(2)):
                # N=$((A * B)): N's value stands on the whole expression, as written
                variables.shell[name] = Located(m.group(2), (), w.derived.span, w.text.path)
                variables.derived[name] = w.derived
            else:
                variables.shell[name] = w.text.sub(start, len(w.value))
            cmd_env[name] = m.group(2)
            k += 1
        rest = words[k:]
        while rest and rest[0].value in _WRAPPERS:
            rest = rest[1:]
            while rest and rest[0].value.startswith("-"):
                rest = rest[1:]
            while rest and _ASSIGN.match(rest[0].value):
                m2 = _ASSIGN.match(rest[0].value)
                assert m2 is not None
                cmd_env[m2.group(1)] = m2.group(2)
                rest = rest[1:]
        if not rest:
            env.update(own)
            continue
        if depth < 4:
            inner = shell_c_string(rest)
            if inner is not None:
                yield from read_commands(inner.text, variables, cmd_env, depth + 1)
                continue
        yield rest, cmd_env


def _prefix_before_expansion(w: Word) -> str:
    return w.value.split("$", 1)[0]


def read_shell_text(loc: Located, path: str, variables: Vars | None = None,
                    base_env: dict[str, str] | None = None) -> list[Deployment]:
    """Every engine launch in a shell script or command string."""
    from tpcheck.sources.argv import deployment_from_words, find_launch

    variables = variables if variables is not None else Vars()
    out: list[Deployment] = []
    try:
        for words, env in read_commands(loc, variables, dict(base_env or {})):
            docker = container_run(words)
            launch = find_launch([w.value for w in words])
            if docker is not None:
                image, at, extra, spans = docker
                own_entrypoint = bool(extra.pop("_entrypoint", False))
                if launch is not None and launch.index < at:
                    launch = None  # engine words among docker's own options
                if launch is None and not own_entrypoint:
                    launch = _image_launch(words, at, image)
                if launch is None:
                    continue
                from tpcheck.record import replace
                from tpcheck.sources.yamlnodes import engine_version

                d = deployment_from_words(path, words, launch, env=env)
                kw = {k: v for k, v in extra.items() if getattr(d, k) is None}
                if d.image is None:
                    kw.update(image=image, engine_version=engine_version(image, d.engine))
                out.append(replace(d, **kw, spans={**spans, **d.spans}))
                continue
            if launch is None:
                continue
            out.append(deployment_from_words(path, words, launch, env=env))
    except ShellTooLong as e:
        e.found = out
        raise
    return out


def read_shell(path: str, text: str) -> list[Deployment]:
    if "vllm" not in text and "sglang" not in text:
        return []  # every launcher find_launch knows names one of the two engines
    index = LineIndex(text)
    return read_shell_text(from_file(index, path), path)


# `docker run` / `podman run` options that take no value (the others take the next word
# unless written --opt=value)
_RUN_FLAGS = frozenset({"--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "-it",
                        "-ti", "-itd", "-dit", "--privileged", "--init", "-P", "--publish-all",
                        "--read-only", "--sig-proxy", "--no-healthcheck", "-q", "--quiet"})
_DEVICES = lazy_re(r"""["']*device=([0-9,]+)["']*$""")


def container_run(words: list[Word]
                  ) -> tuple[str, int, dict[str, object], dict[str, Span]] | None:
    """(image, index of the first word after it, GPU fields, their spans) of a
    ``docker run`` / ``podman run`` command; None for any other command. ``--gpus N`` and
    ``--gpus '"device=0,1"'`` give the GPU count; ``--gpus all`` gives none."""
    if len(words) < 3 or words[0].value.rsplit("/", 1)[-1] not in ("docker", "podman") or (
            words[1].value != "run"):
        return None
    extra: dict[str, object] = {}
    spans: dict[str, Span] = {}
    k = 2
    while k < len(words):
        v = words[k].value
        if not v.startswith("-") or v == "-":
            return v, k + 1, extra, spans
        opt, eq, val = v.partition("=")
        value_word = words[k] if eq else (words[k + 1] if k + 1 < len(words) else None)
        if not eq and opt not in _RUN_FLAGS:
            k += 1
            val = value_word.value if value_word is not None else ""
        if opt == "--gpus" and value_word is not None:
            n: int | None = int(val) if val.isdigit() else None
            dev = _DEVICES.match(val)
            if dev is not None:
                n = len([i for i in dev.group(1).split(",") if i])
            if n:
                extra["gpus_requested"] = n
                spans["gpus_requested"] = value_word.raw_span
        if opt == "--entrypoint":
            extra["_entrypoint"] = True
        k += 1
    return None


def _image_launch(words: list[Word], at: int, image: str) -> Launch | None:
    """The engine the image's own entrypoint runs with the words after it as arguments
    (``vllm/vllm-openai`` runs ``vllm serve``), when they are engine flags."""
    from tpcheck.sources.argv import Launch, infer_engine

    rest = [w.value for w in words[at:]]
    eng = infer_engine(rest, image)
    if eng is None or not any(v.startswith("--") for v in rest):
        return None
    positional = eng == "vllm" and bool(rest) and not rest[0].startswith("-")
    return Launch(eng, at, at, positional, inferred=True)


__all__ = ["MAX_COMMAND_WORDS", "MAX_EXPANDED_CHARS", "MAX_HEREDOC_DEPTH", "MAX_WORDS",
           "MAX_WORD_CHARS", "SHELLS", "ShellTooLong", "Vars", "container_run", "read_commands",
           "read_shell", "read_shell_text", "shell_c_string", "tokenize"]
