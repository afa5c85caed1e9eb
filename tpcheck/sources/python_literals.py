"""The plain literals of Python launch code, read from libcst nodes (never evaluated)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def literal(node: Any) -> Any:
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        try:
            return node.evaluated_value
        except (SyntaxError, ValueError):  # "\N{NOPE}", a bad escape: the engine could not run it
            return None
    if isinstance(node, cst.Integer):
        digits = node.value.replace("_", "")
        if len(digits) > 400:  # int() refuses over 4,300 digits; no size is that long anyway
            return None
        return int(digits, 0)
    if isinstance(node, cst.Float):
        return float(node.value)
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal(node.expression)
        return -inner if isinstance(inner, (int, float)) else None
    return None


def fstring_text(node: Any, consts: dict[str, Any]) -> str | None:
    """A string literal, or an f-string whose fields are names of literals, as text."""
    import libcst as cst

    lit = literal(node)
    if isinstance(lit, str):
        return lit
    if not isinstance(node, cst.FormattedString):
        return None
    parts: list[str] = []
    for p in node.parts:
        if isinstance(p, cst.FormattedStringText):
            parts.append(p.value)
        elif (isinstance(p, cst.FormattedStringExpression) and isinstance(p.expression, cst.Name)
              and p.expression.value in consts and p.format_spec is None):
            v = literal(consts[p.expression.value])
            if v is None:
                return None
            parts.append(str(v))
        else:
            return None
    return "".join(parts)


def module_consts(module: Any) -> dict[str, Any]:
    """Names bound once at module level to a plain literal: name → the literal's node."""
    import libcst as cst

    consts: dict[str, Any] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and literal(small.value) is not None
                ):
                    consts[small.targets[0].target.value] = small.value
    return consts


__all__ = ["fstring_text", "literal", "module_consts"]
