"""The YAML node helpers and once-per-file reader that every part of a kustomize build shares."""

from __future__ import annotations

from tpcheck.sources.base import MAX_BYTES, SourceError
from tpcheck.sources.positions import LineIndex
from tpcheck.sources.pyyaml import ReaderError, yaml
from tpcheck.sources.yamlctx import LOADER, Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

MAP, SEQ, SCALAR = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode
STR_TAG = "tag:yaml.org,2002:str"
SEQ_TAG = "tag:yaml.org,2002:seq"


class KustomizeError(Exception):
    """A kustomization that cannot be assembled: one line naming the file and position."""

    def __init__(self, path: str, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.error = SourceError(path, line, column, message)


class Files:
    """Each file read once per kustomization, with the Ctx that places its nodes."""

    def __init__(self) -> None:
        self.ctx_of: dict[int, Ctx] = {}  # id(node) → the Ctx of the file it was read from
        self.keep: list[Any] = []  # every node registered stays alive (ids stay unique)
        self.synthetic: set[int] = set()  # values no file holds as written (image overrides)
        self.remote: list[tuple[str, str, int]] = []  # remote bases: (ref, file, line)
        self._docs: dict[str, list[Any]] = {}
        self._texts: dict[str, str] = {}

    def given(self, path: str, text: str, docs: list[Any] | None = None) -> None:
        """The text of ``path`` as the caller has it (stdin, an editor buffer), and its
        documents when the caller composed them already (the file is then not composed again)."""
        self._texts[path] = text
        if docs is not None:
            ctx = Ctx(path, LineIndex(text))
            for d in docs:
                self.own(d, ctx)
            self._docs[path] = docs

    def docs(self, path: str, where: tuple[str, Any]) -> list[Any]:
        hit = self._docs.get(path)
        if hit is not None:
            return hit
        text = self._texts.get(path)
        if text is None:
            from tpcheck.sources.files import NotRegular, TooBig, decode_utf8_sig, read_capped

            try:  # a FIFO would block, /dev/zero never end: the one side-file reader
                text = decode_utf8_sig(read_capped(path, MAX_BYTES))
            except NotRegular as e:
                raise error_at(where, f"{path}: {e}") from None
            except TooBig:
                raise error_at(where, f"{path} is over the {MAX_BYTES}-byte limit") from None
            except (OSError, UnicodeDecodeError) as e:
                raise error_at(where, f"cannot read {path}: {getattr(e, 'strerror', None) or e}"
                             ) from None
        ctx = Ctx(path, LineIndex(text))
        try:
            docs = [d for d in yaml.compose_all(text, Loader=LOADER) if d is not None]
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
            raise KustomizeError(path, line, col, f"YAML does not parse: {e.problem}") from None
        except ReaderError as e:  # a NUL or other control character: no mark, a position
            line, col = LineIndex(text).pos(e.position)
            raise KustomizeError(path, line, col, f"YAML does not parse: {e.reason} "
                                 f"(character #x{e.character:04x})") from None
        for d in docs:
            self.own(d, ctx)
        self._docs[path] = docs
        return docs

    def all_docs(self) -> list[list[Any]]:
        return list(self._docs.values())

    def file_of(self, doc: Any) -> str | None:
        """The file ``doc`` was read from as written; None for a node a merge built."""
        return next((p for p, docs in self._docs.items() if any(d is doc for d in docs)), None)

    def own(self, node: Any, ctx: Ctx) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if id(n) in self.ctx_of:
                continue
            self.ctx_of[id(n)] = ctx
            self.keep.append(n)
            if isinstance(n, MAP):
                stack.extend(x for pair in n.value for x in pair)
            elif isinstance(n, SEQ):
                stack.extend(n.value)

    def adopt(self, new: Any, like: Any) -> Any:
        """A node built by the merge is placed where ``like`` (its base) was."""
        self.ctx_of[id(new)] = self.ctx_of[id(like)]
        self.keep.append(new)
        return new


def placed(files: Files, node: Any, message: str) -> KustomizeError:
    """An error at ``node``, placed in its file (also inside an inline patch)."""
    ctx = files.ctx_of.get(id(node))
    if ctx is None:
        return error_at(("<kustomization>", node), message)
    s = ctx.span(node)
    return KustomizeError(s.path, s.line, s.column, message)


def error_at(where: tuple[str, Any], message: str) -> KustomizeError:
    path, node = where
    mark = getattr(node, "start_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return KustomizeError(path, line, col, message)


def get_key(node: Any, key: str) -> Any:
    if isinstance(node, MAP):
        for k, v in node.value:
            if isinstance(k, SCALAR) and k.value == key:
                return v
    return None


def scalar_text(node: Any) -> str | None:
    return node.value if isinstance(node, SCALAR) else None


def identity(doc: Any) -> tuple[str | None, str | None]:
    return scalar_text(get_key(doc, "kind")), scalar_text(get_key(get_key(doc, "metadata"), "name"))


def is_null(node: Any) -> bool:
    return isinstance(node, SCALAR) and not node.style and node.value in ("null", "~", "")


def seq_items(node: Any) -> list[Any]:
    return list(node.value) if isinstance(node, SEQ) else []
