"""A template's chart: its folder, its values.yaml read once and safely, where each value sits."""

from __future__ import annotations

import os

from tpcheck.sources.base import MAX_BYTES, SourceError, Span

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


MAX_CHART_DEPTH = 8  # folders walked up from a template to find Chart.yaml


def chart_root(path: str) -> str | None:
    """The folder holding ``Chart.yaml`` at or above the template's folder."""
    d = os.path.dirname(os.path.abspath(path))
    for _ in range(MAX_CHART_DEPTH):
        if os.path.isfile(os.path.join(d, "Chart.yaml")):
            return d
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    return None


_VALUES_CACHE: dict[tuple[str, int, int], tuple[Any, str | None]] = {}


def chart_values(root: str | None) -> tuple[Any, str | None]:
    """values.yaml of the chart (safe loading), or None when there is none (then every
    ``.Values`` reference is unknown, not missing), with an error saying why it was not used."""
    if root is None:
        return None, None
    path = os.path.join(root, "values.yaml")
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    from tpcheck.sources.files import decode_utf8_sig, overlaid, read_capped

    key = (path, st.st_mtime_ns, st.st_size)
    fresh = overlaid(path)  # a fix being checked: the edited values, not the cached ones
    got = None if fresh else _VALUES_CACHE.get(key)
    if got is not None:
        return got
    from tpcheck.sources.pyyaml import yaml

    loader = _values_loader()

    result: tuple[Any, str | None]
    try:
        # read as every side file is: a FIFO hung the run, a link to /dev/zero read 3.7 GB
        text = decode_utf8_sig(read_capped(path, MAX_BYTES))
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or e
        result = (None, f"{path} could not be read ({why}); values not used")
    else:
        try:
            data = yaml.load(text, Loader=loader)
            result = (data if isinstance(data, dict) else {}, None)
        except (yaml.YAMLError, RecursionError) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            result = (None, f"{path} could not be read ({first}); values not used")
    if not fresh:
        _VALUES_CACHE[key] = result
    return result


def values_problem(root: str | None, values_error: str | None) -> SourceError | None:
    """The chart's values.yaml that could not be used, as an error naming that file (the lint
    gives it once however many templates read the chart): its launches are read without values,
    which must not pass as a clean run."""
    if root is None or not values_error:
        return None
    path = os.path.join(root, "values.yaml")
    return SourceError(path, 1, 1, values_error.removeprefix(f"{path} "))


def _values_loader() -> Any:
    """Safe loading only; an integer past int's conversion limit (4,300 digits) is kept as
    the text written, as a manifest's scalar is, instead of a ValueError ("please report")."""
    from tpcheck.sources.pyyaml import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class ValuesLoader(base):  # type: ignore[misc,valid-type]
        pass

    def construct_int(loader: Any, node: Any) -> Any:
        try:
            return loader.construct_yaml_int(node)
        except ValueError:
            return str(node.value)

    ValuesLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return ValuesLoader


def values_locator(root: str) -> Callable[[tuple[str, ...]], Span | None]:
    """A function from values.yaml keys to the span of the scalar written under them (inside
    its quotes, so an edit keeps them); None for a key path that is not a plain scalar."""
    from tpcheck.sources.files import decode_utf8_sig, read_capped
    from tpcheck.sources.pyyaml import yaml

    path = os.path.join(root, "values.yaml")
    try:
        text = decode_utf8_sig(read_capped(path, MAX_BYTES))
        top = yaml.compose(text, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return lambda keys: None

    def find(keys: tuple[str, ...]) -> Span | None:
        node = top
        for k in keys:
            if not isinstance(node, yaml.MappingNode):
                return None
            hits = [v for kn, v in node.value if getattr(kn, "value", None) == k]
            if len(hits) != 1:  # a key written twice: which one Helm takes is not guessed
                return None
            node = hits[0]
        if not isinstance(node, yaml.ScalarNode):
            return None
        a, b = node.start_mark, node.end_mark
        if a.line != b.line or node.style not in (None, "'", '"'):
            return None  # a block or multi-line scalar: not one token to replace
        q = 1 if node.style else 0
        return Span(path, a.line + 1, a.column + 1 + q, b.line + 1, b.column + 1 - q)

    return find
