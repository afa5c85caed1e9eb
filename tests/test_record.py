"""tpcheck.record keeps the frozen-dataclass contract the package relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tpcheck.record import FrozenInstanceError, field, fields, record, replace


@record
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", repr=False, compare=False)


@record(order=True)
class Pos:
    line: int
    column: int


@record
class Point3(Point):
    z: int = 0


@record(frozen=False)
class Bag:
    items: dict[str, int] = field(default_factory=dict)


@record
class Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("n must be >= 0")


def test_construction_positional_keyword_defaults_and_factories() -> None:
    p = Point(1)
    assert (p.x, p.y, p.tags, p.note) == (1, 0, [], "")
    # note is compare=False, so it does not take part in equality
    assert Point(1, 2, ["a"], "n") == Point(x=1, y=2, tags=["a"], note="other")
    assert Point(1).tags is not Point(1).tags  # a fresh list per instance


@pytest.mark.parametrize(("call", "message"), [
    (lambda: Point(), "missing required argument: 'x'"),
    (lambda: Point(1, 2, [], "", 5), "takes 4 positional arguments but 5 were given"),
    (lambda: Point(1, w=3), "unexpected keyword argument 'w'"),
    (lambda: Point(1, x=2), "multiple values for keyword argument 'x'"),
])
def test_bad_calls_raise_type_error(call: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call()  # type: ignore[operator]


def test_frozen_equal_values_hash_equal() -> None:
    p = Point(1, 2)
    with pytest.raises(FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del p.y  # type: ignore[misc]
    assert isinstance(FrozenInstanceError(), AttributeError)
    assert hash(Pos(1, 2)) == hash(Pos(1, 2))
    assert {Pos(1, 2): "a"}[Pos(1, 2)] == "a"
    assert Pos(1, 2) != (1, 2)  # a different type never compares equal


def test_order_compares_fields_in_declaration_order() -> None:
    assert sorted([Pos(2, 1), Pos(1, 9), Pos(1, 3)]) == [Pos(1, 3), Pos(1, 9), Pos(2, 1)]
    assert Pos(1, 2) <= Pos(1, 2) < Pos(1, 3)
    with pytest.raises(TypeError):
        _ = Pos(1, 2) < (1, 2)  # type: ignore[operator]


def test_repr_skips_repr_false_fields() -> None:
    assert repr(Point(1, note="secret")) == "Point(x=1, y=0, tags=[])"


def test_inheritance_fields_replace_and_post_init() -> None:
    assert [f.name for f in fields(Point3)] == ["x", "y", "tags", "note", "z"]
    p = Point3(1, z=5)
    assert replace(p, y=7) == Point3(1, 7, z=5)
    with pytest.raises(TypeError, match="no field 'w'"):
        replace(p, w=1)  # type: ignore[call-arg]
    assert Checked(3).n == 3
    with pytest.raises(ValueError, match="n must be"):
        replace(Checked(3), n=-1)  # replace goes through __init__, so __post_init__ runs
    with pytest.raises(TypeError, match="not a record"):
        fields(object())


def test_replace_copies_fields_only() -> None:
    p = Point(1, 2, ["a"], note="n")
    p.__dict__["_cached"] = "derived from p"  # as physics.plan caches beside the fields
    q = replace(p, y=3)
    assert (q.x, q.y, q.tags, q.note) == (1, 3, ["a"], "n") and q.tags is p.tags
    assert "_cached" not in q.__dict__ and replace(q, x=5).__dict__.keys() == q.__dict__.keys()
    with pytest.raises(FrozenInstanceError):
        q.x = 0  # type: ignore[misc]


def test_mutable_record_is_unhashable() -> None:
    b = Bag()
    b.items["a"] = 1
    b.items = {"b": 2}
    assert b == Bag({"b": 2})
    with pytest.raises(TypeError):
        hash(b)


def test_a_lint_imports_neither_dataclasses_inspect_nor_typing() -> None:
    # Why record exists: dataclasses imports inspect and compiles its methods through exec, and
    # typing (imported by overloads and aliases) is another ~5 ms of a one-file lint's start-up.
    # Since issue 15 the CLI is click, which imports inspect and typing itself: the whole lint
    # path without the CLI still imports none of the three, and the CLI no dataclasses.
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "lint" / "qwen3-32b-tp16.yaml"
    library = ("import sys; from tpcheck.lint import Linter; from tpcheck.report import render\n"
               "from tpcheck.settings import Settings\n"
               "s = Settings().with_flags(offline=True)\n"
               "r = Linter(s, gpu_flag='h100-sxm').run([sys.argv[1]])\n"
               "text = render('text', r, color=False, statistics=False, quiet=False)\n"
               "print(sorted({f.code for f in r.findings}), sorted(m for m in "
               "('dataclasses', 'inspect', 'typing') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", library, str(fixture)], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "['TP201', 'TP402'] []"  # the fixture's findings: the whole lint path ran
    cli = ("import sys, contextlib, io; from tpcheck.cli import main\n"
           "with contextlib.redirect_stdout(io.StringIO()):\n"
           "    code = main(['--offline', '--gpu', 'h100-sxm', sys.argv[1]])\n"
           "print(code, 'dataclasses' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", cli, str(fixture)], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "1 False"


def test_hand_written_inits_set_every_field_in_order() -> None:
    # The hot records write their __init__ out (tpcheck.record's docstring): each one must
    # still store every declared field, positionally in declaration order and by keyword.
    import importlib
    import pkgutil

    import tpcheck

    written = []
    for info in pkgutil.walk_packages(tpcheck.__path__, "tpcheck."):
        if info.name == "tpcheck.__main__" or info.name.startswith(
                ("tpcheck.lsp", "tpcheck.sources.python_src")):
            continue  # runs the CLI; pygls / libcst: no records, and slow to import
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            init = getattr(obj, "__dict__", {}).get("__init__")
            if (isinstance(obj, type) and obj.__module__ == info.name
                    and "__record_fields__" in obj.__dict__ and init is not None
                    and "_make_init" not in init.__qualname__):
                written.append(obj)
    assert {c.__name__ for c in written} >= {"Span", "Located", "Formula"}
    for cls in written:
        names = [f.name for f in fields(cls)]
        given = {n: ({"k": 1} if n == "values" else f"<{n}>") for n in names}
        for obj in (cls(*given.values()), cls(**given)):
            assert vars(obj) == given, cls.__name__
