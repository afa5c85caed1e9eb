"""What the manifest readers ask of the shell for every container: the variables known while
reading (``Vars``) and the string of a ``sh -c STRING`` command. Apart from the tokenizer
(``tpcheck.sources.shell_tokens``, with its arithmetic and word recipes), which is imported only
when a text is split as a shell would split it: a Deployment whose command and args are lists
of words runs none of it (~3 million instructions of a one-file YAML lint to import).
"""

from __future__ import annotations

from collections.abc import MutableMapping

from tpcheck.record import field, record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from tpcheck.sources.positions import Located
    from tpcheck.sources.words import Derived, Word

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})


@record(frozen=False)
class Vars:
    """Variables known while reading: name → value with positions (k8s ``$(VAR)`` separate).

    ``origins`` says where an orchestrator-injected value comes from (``LWS_GROUP_SIZE`` →
    ``leaderWorkerTemplate.size``), for ``tpcheck inspect``; ``per_pod`` names are injected
    with a value that differs between pods (``LWS_WORKER_INDEX``): set, so a ``:-`` default
    never applies, and unknown; ``derived`` holds how a variable assigned from ``$(( … ))``
    got its value."""

    shell: MutableMapping[str, Located] = field(default_factory=dict)
    k8s: MutableMapping[str, Located] = field(default_factory=dict)
    origins: MutableMapping[str, str] = field(default_factory=dict)
    per_pod: frozenset[str] = frozenset()
    derived: MutableMapping[str, Derived] = field(default_factory=dict)
    arithmetic: bool = True  # False: no shell reads the text (a flags-only ``args`` string)

    def __init__(self, shell: MutableMapping[str, Located] | None = None,
                 k8s: MutableMapping[str, Located] | None = None,
                 origins: MutableMapping[str, str] | None = None,
                 per_pod: frozenset[str] = frozenset(),
                 derived: MutableMapping[str, Derived] | None = None,
                 arithmetic: bool = True) -> None:
        # Written out (None: a fresh dict): ~3,000 a 1,000-manifest run, and the generated
        # __init__'s default factories cost ten times as much (see tpcheck.record)
        self.shell = {} if shell is None else shell
        self.k8s = {} if k8s is None else k8s
        self.origins = {} if origins is None else origins
        self.per_pod = per_pod
        self.derived = {} if derived is None else derived
        self.arithmetic = arithmetic


def shell_c_string(words: list[Word]) -> Word | None:
    """The command string of ``sh -c STRING`` (``bash -lc``, ``sh -c -- ...``), else None."""
    name = words[0].value.rsplit("/", 1)[-1]
    if name not in SHELLS:
        return None
    for k in range(1, len(words)):
        v = words[k].value
        if v.startswith("-") and "c" in v[1:] and not v.startswith("--"):
            j = k + 1
            if j < len(words) and words[j].value == "--":
                j += 1
            return words[j] if j < len(words) else None
        if not v.startswith("-"):
            return None
    return None
