"""Frozen value classes that are cheap to define.

On Python 3.11 ``dataclasses`` compiles up to six methods per class through ``exec`` and imports
``inspect``: defining tpcheck's classes that way costs a one-file lint about 24 ms more start-up
(issue 15's measurement; the 70 ms first seen for issue 8 predates other start-up work).
A ``record`` keeps the dataclass contract tpcheck relies on — frozen instances, positional or
keyword construction, defaults and default factories, ``__post_init__``, value equality and
hashing, ordering on request, a readable repr, ``replace`` and ``fields`` — with one ``__init__``
closure per class, no ``exec``, and the other methods shared. As with dataclasses, an
``__init__`` written in the class body is kept: the readers' hottest records (tens of thousands
per corpus run) store their fields directly, at a third of the cost.
PEP 681's ``dataclass_transform`` lets mypy check records exactly as it checks frozen dataclasses.
A record never evaluates its annotations, so every module keeps ``from __future__ import
annotations`` (ruff's required-imports, I002, enforces it).
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    _T = TypeVar("_T")
    _C = TypeVar("_C", bound=type)
else:
    def dataclass_transform(**_: object) -> object:
        return lambda f: f


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record (the dataclasses exception's meaning)."""


class Field:
    """One declared field: its name, default or factory, and whether repr/eq/hash see it."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING,
                 repr: bool = True, compare: bool = True) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot give both default and default_factory")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING,
          repr: bool = True, compare: bool = True) -> Any:
    """A field with a default factory, or one that repr and comparisons skip."""
    return Field(default, default_factory, repr, compare)


def fields(obj: object) -> tuple[Field, ...]:
    """The record's fields in declaration order (base classes' first)."""
    found: tuple[Field, ...] | None = getattr(obj, "__record_fields__", None)
    if found is None:
        raise TypeError(f"{obj!r} is not a record")
    return found


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of ``obj`` with ``changes`` applied, built as ``__init__`` would build it (so it
    validates: a hand-written ``__init__`` or a ``__post_init__`` runs).

    A record whose ``__init__`` is the generated one and that has no ``__post_init__`` only
    stores its fields: the copy's dict is the original's, updated, in C. Through
    ``cls(**kwargs)`` a Deployment (52 fields) cost some thirty times as much (~10 µs), and
    the rules replace one ~6,900 times a 1,000-file run."""
    fields(obj)  # not a record: TypeError
    cls: Any = type(obj)
    names = cls.__match_args__
    if not changes.keys() <= cls.__record_names__:
        unknown = set(changes) - set(names)
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    if cls.__record_plain__:
        new = object.__new__(cls)
        d = new.__dict__
        src = obj.__dict__
        d.update(src)
        if len(src) != len(names):  # a value cached beside the fields (physics.plan's options,
            for k in src.keys() - cls.__record_names__:  # their hash) stays behind
                del d[k]
        d.update(changes)
        return new  # type: ignore[no-any-return]
    kwargs = dict(zip(names, cls.__record_all__(obj), strict=True))
    kwargs.update(changes)
    return cls(**kwargs)  # type: ignore[no-any-return]


def _values(self: Any) -> tuple[Any, ...]:
    return type(self).__record_values__(self)  # type: ignore[no-any-return]


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields' values as one tuple, read in C (``attrgetter``): records key the run's memo
    tables, so their equality and hashing are hot."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr(self: Any) -> str:
    inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in type(self).__record_fields__
                      if f.repr)
    return f"{type(self).__qualname__}({inner})"


def _eq(self: Any, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def value_hash(obj: object) -> int:
    """The hash a frozen record has by default: of its compared fields' values."""
    return _hash(obj)


def _frozen_setattr(self: Any, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _order(op: Callable[[tuple[Any, ...], tuple[Any, ...]], bool]) -> Callable[[Any, Any], object]:
    def compare(self: Any, other: Any) -> object:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return op(_values(self), _values(other))
    return compare


_ORDER = {
    "__lt__": _order(lambda a, b: a < b),
    "__le__": _order(lambda a, b: a <= b),
    "__gt__": _order(lambda a, b: a > b),
    "__ge__": _order(lambda a, b: a >= b),
}


def _collect(cls: type) -> tuple[Field, ...]:
    """Base records' fields, then this class's annotations in order (ClassVars skipped)."""
    out: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__record_fields__", ()):
            out[f.name] = f
    # The class's own annotations, read directly: inspect.get_annotations would import inspect.
    # A field without field(...) is built here, not through Field's __init__ (a Python call
    # per field: ~570 fields on a one-file lint's path).
    own = cls.__dict__
    for name, ann in own.get("__annotations__", {}).items():
        if isinstance(ann, str) and ann.startswith(_CLASS_VAR):
            continue
        value = own.get(name, MISSING)
        if isinstance(value, Field):
            f = value
            f.name = name
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            f = _new_field(Field)
            f.name = name
            f.default = value
            f.default_factory = MISSING
            f.repr = f.compare = True
        out[name] = f
    seen_default = False
    for f in out.values():
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"{cls.__name__}: non-default field {f.name!r} follows a default")
    return tuple(out.values())


_CLASS_VAR = ("ClassVar", "typing.ClassVar")
_new_field = object.__new__


def _make_init(cls: type, fs: tuple[Field, ...], names: tuple[str, ...]) -> Callable[..., None]:
    """One ``__init__`` per class, built without ``exec`` from dict updates done in C: the
    defaults, then the positional values, then the keywords once they are checked."""
    name_set = frozenset(names)
    n = len(names)
    defaults = {f.name: f.default for f in fs if f.default is not MISSING}
    factories = {f.name: f.default_factory for f in fs if f.default_factory is not MISSING}
    post = hasattr(cls, "__post_init__")
    qual = cls.__qualname__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        d = self.__dict__
        if len(args) > n:
            raise TypeError(f"{qual}() takes {n} positional arguments but {len(args)} were given")
        if defaults:
            d.update(defaults)
        if args:  # (zip's strict= keyword alone costs each call a keyword parse)
            d.update(zip(names, args))  # noqa: B905 - len(args) <= n was checked above
        if kwargs:
            if not kwargs.keys() <= name_set:
                bad = next(k for k in kwargs if k not in name_set)
                raise TypeError(f"{qual}() got an unexpected keyword argument {bad!r}")
            if args and not kwargs.keys().isdisjoint(names[:len(args)]):
                bad = next(k for k in names[:len(args)] if k in kwargs)
                raise TypeError(f"{qual}() got multiple values for keyword argument {bad!r}")
            d.update(kwargs)
        if len(d) < n:  # a fresh instance's dict holds only fields: some are still unset
            for name, make in factories.items():
                if name not in d:
                    d[name] = make()
            if len(d) < n:
                missing = next(name for name in names if name not in d)
                raise TypeError(f"{qual}() missing required argument: {missing!r}")
        if post:
            self.__post_init__()

    __init__.__qualname__ = f"{qual}.__init__"
    return __init__


def _build(cls: _C, frozen: bool, order: bool) -> _C:
    fs = _collect(cls)
    names = tuple([f.name for f in fs])
    compare = names if all([f.compare for f in fs]) else tuple([f.name for f in fs if f.compare])
    attrs: dict[str, Any] = {
        "__record_fields__": fs,
        "__record_compare__": compare,
        "__record_values__": _getter(compare),
        "__record_all__": _getter(names),
        "__match_args__": names,
        "__eq__": _eq,
    }
    generated = "__init__" not in cls.__dict__
    if generated:  # as dataclasses: a hand-written __init__ is kept
        attrs["__init__"] = _make_init(cls, fs, names)
    # replace may store the fields itself: nothing but the generated __init__ would run
    own_new = any(["__new__" in c.__dict__ for c in cls.__mro__[:-1]])
    attrs["__record_plain__"] = generated and not hasattr(cls, "__post_init__") and not own_new
    attrs["__record_names__"] = frozenset(names)
    if "__repr__" not in cls.__dict__:
        attrs["__repr__"] = _repr
    if frozen:
        attrs.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
        if cls.__dict__.get("__hash__") is None:  # a hand-written __hash__ is kept (ModelShape)
            attrs["__hash__"] = _hash
    else:
        attrs["__hash__"] = None  # mutable and compared by value: unhashable, like dataclasses
    if order:
        attrs.update(_ORDER)
    # type.__setattr__ for each (the built-in setattr is that call when the class's type is
    # type, a third cheaper than calling the slot wrapper: ~70 records on a lint's path)
    put = setattr if type(cls) is type else type.__setattr__
    for k, v in attrs.items():
        put(cls, k, v)
    return cls


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(cls: _C | None = None, /, *, frozen: bool = True, order: bool = False) -> Any:
    """Make ``cls`` a record: ``@record``, ``@record(order=True)``, ``@record(frozen=False)``.

    (Typed ``Any``: type checkers apply PEP 681 to the class and ignore a class decorator's
    return type, and overloads would import typing at run time.)"""
    if cls is not None:
        return _build(cls, True, False)
    return lambda c: _build(c, frozen, order)
