"""Formula values: every number tpcheck reports carries how it was computed.

A rule never prints a bare figure; it assembles Formulas from the physics, so the CLI, SARIF,
JSON and the editor hover can all show the expression, the substituted values and the source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from tpcheck.record import field, record

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    Number = int | float
    Scalar = int | float | str | bool | None


@record
class Formula:
    """One computed quantity: ``name = expression`` evaluated at ``values`` gives ``result``."""

    name: str
    expression: str
    values: Mapping[str, Scalar]
    result: Number
    unit: str = ""
    source: str = ""
    terms: tuple[Formula, ...] = field(default=())
    # Typed flags, so that a rule asks the data and never reads another formula's source text:
    # ``assumed`` — an input is an assumption (a link class, an efficiency) rather than read from
    # the deployment or measured; ``calibrated`` — True when a published measurement fits it,
    # False when it is a floor or a model without one, None when that does not apply; ``link``
    # — the network between nodes its all-reduces cross ("" inside a node); ``release`` — the
    # engine release (or calibration era) whose rules it applies ("" when none).
    assumed: bool = False
    calibrated: bool | None = None
    link: str = ""
    release: str = ""

    def __init__(self, name: str, expression: str, values: Mapping[str, Scalar], result: Number,
                 unit: str = "", source: str = "", terms: tuple[Formula, ...] = (),
                 assumed: bool = False, calibrated: bool | None = None, link: str = "",
                 release: str = "") -> None:
        # Written out (see tpcheck.record): the physics builds ~30 Formulas per TP size.
        d = self.__dict__
        d["name"], d["expression"], d["result"] = name, expression, result
        # A copy of the mapping, in insertion order, so equal inputs compare equal.
        d["values"] = dict(values)
        d["unit"], d["source"], d["terms"] = unit, source, terms
        d["assumed"], d["calibrated"], d["link"], d["release"] = assumed, calibrated, link, release

    def substituted(self) -> str:
        """The values as ``sym=value`` pairs, in the order the physics gave them."""
        return ", ".join(f"{k}={format_scalar(v)}" for k, v in self.values.items())

    def render(self) -> str:
        """One line a person can check by hand."""
        unit = f" {self.unit}" if self.unit else ""
        lhs = self.name if self.name == self.expression else f"{self.name} = {self.expression}"
        vals = f"  [{self.substituted()}]" if self.values else ""
        return f"{lhs} = {format_scalar(self.result)}{unit}{vals}"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "expression": self.expression,
            "values": dict(self.values),
            "result": self.result,
            "unit": self.unit,
            "source": self.source,
        }
        out["assumed"] = self.assumed
        if self.calibrated is not None:
            out["calibrated"] = self.calibrated
        if self.link:
            out["link"] = self.link
        if self.release:
            out["release"] = self.release
        if self.terms:
            out["terms"] = [t.to_json() for t in self.terms]
        return out


def format_scalar(v: Scalar) -> str:
    """Integers with thousands separators, floats with four significant digits."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:  # NaN
            return "nan"
        if v in (math.inf, -math.inf):  # a huge setting (alpha = 1e306) overflows a sum
            return "∞" if v > 0 else "−∞"
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):,}"
        if abs(v) >= 1e4:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(v)


def count(n: int, noun: str) -> str:
    """``1 GPU``, ``8 GPUs``, ``1,024 sequences``: a count with its noun (plural by ``s``)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10


def fmt_bytes(n: Number) -> str:
    """Binary units, as vLLM's own log lines print them."""
    a = abs(n)
    if a >= GIB:
        return f"{n / GIB:.2f} GiB"
    if a >= MIB:
        return f"{n / MIB:.2f} MiB"
    if a >= KIB:
        return f"{n / KIB:.2f} KiB"
    return f"{int(n)} B"
