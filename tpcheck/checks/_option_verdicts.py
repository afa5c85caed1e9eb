"""What the engine's parser does with one option use (Verdict), and a deployment's (Analysis)."""

from __future__ import annotations

from tpcheck.engines.flags import Option
from tpcheck.engines.release import Release
from tpcheck.record import record
from tpcheck.sources.base import OptionUse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Outcome = Literal["ok", "unknown", "ambiguous", "removed", "bad_value", "deprecated",
                      "combination"]

# The outcomes an option rule reports (a registry row's ``outcome``): every Outcome but "ok"
# (``_option_headline.VERB`` words each but "combination", whose headline is its own).
OUTCOMES = frozenset({"unknown", "ambiguous", "removed", "bad_value", "deprecated",
                      "combination"})

# How each engine names its parser in its error lines (argparse's ``prog``).
PROG = {"vllm": "vllm serve", "sglang": "sglang serve"}
KEYWORD_OWNER = {"vllm": "EngineArgs.__init__()", "sglang": "ServerArgs.__init__()"}


@record
class Verdict:
    """One option use and what the pinned release does with it."""

    use: OptionUse
    outcome: Outcome
    message: str  # the engine's own words (argparse / TypeError / pydantic), then tpcheck's
    option: Option | None = None
    suggestion: str | None = None  # the closest real option, for "did you mean"
    replacement: str | None = None
    headline: str | None = None  # a combination's own clause: which option needs which


@record
class Analysis:
    engine: str
    release: str
    note: str | None  # "no table for 0.x: checked against 0.y"
    verdicts: tuple[Verdict, ...]
    pinned: Release  # the deployment's release (the table may be the nearest one read)


__all__ = ["KEYWORD_OWNER", "PROG", "Analysis", "Verdict"]
