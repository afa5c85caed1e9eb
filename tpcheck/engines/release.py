"""One engine release, resolved once per deployment, and what tpcheck knows of it.

Every rule asks the same ``Release``: the option rules (TP001-TP006) take its option table, the
memory rules its defaults and its label. The order that picks it is the same everywhere: the
container image tag, else ``engine-version`` (``--engine-version`` over ``[tool.tpcheck]``), else
the newest release tpcheck has read (``tpcheck.engines.NEWEST``, the one place it is written).
"""

from __future__ import annotations

from tpcheck.engines import NEWEST, parse_version
from tpcheck.engines.defaults import EngineDefaults
from tpcheck.engines.flags import OptionTable, load_table, nearest_release
from tpcheck.record import record

__all__ = ["NEWEST", "NOT_PINNED", "Release", "newest", "parse_version", "resolve"]

TYPE_CHECKING = False  # typing's constant without importing typing (start-up)
if TYPE_CHECKING:
    from tpcheck.engines.defaults import EngineName

NOT_PINNED = "newest known (image not pinned: pin it to be exact)"
_UNPINNED_TAGS = ("latest", "nightly", "main")


@record
class Release:
    """The engine release a deployment's findings assume, and where tpcheck got it."""

    engine: str
    version: str
    source: str  # the image tag, [tool.tpcheck] engine-version, --engine-version, or NOT_PINNED
    pinned: bool

    def __str__(self) -> str:
        name = "vLLM" if self.engine == "vllm" else "SGLang"
        return f"{name} {self.version}, {self.source}"

    @property
    def table_version(self) -> str:
        """The release whose option table is checked (this one, or the nearest read)."""
        return self._nearest()[0]

    @property
    def table_note(self) -> str | None:
        """Said when the table is not this release's own ("checked against the nearest")."""
        return self._nearest()[1]

    def _nearest(self) -> tuple[str, str | None]:
        return nearest_release(self.engine, self.version if self.pinned else None)

    def options(self) -> OptionTable:
        """The option table of this release (or of the nearest release read)."""
        return load_table(self.engine, self.table_version)

    def defaults(self) -> EngineDefaults:
        return EngineDefaults(self.engine, self.version)  # type: ignore[arg-type]

    @property
    def checked_against(self) -> str:
        """The option rules' assumption: which table, and why that one."""
        if self.table_note:
            return self.table_note
        if self.pinned:
            return f"checked against {self.engine} {self.table_version}, {self.source}"
        if self.source == NOT_PINNED:
            return f"checked against {self.engine} {self.table_version}: no release pinned"
        return f"checked against {self.engine} {self.table_version}: {self.source}"

    @property
    def dp_attention_spans_tp(self) -> bool:
        """SGLang up to 0.4.4 sets ``dp_size = tp_size`` whenever ``--enable-dp-attention`` is
        given (server_args.py l.250 in 0.4.2.post4, l.254 in 0.4.3, l.265 in 0.4.4); from
        0.4.4.post1 on the user's --dp counts and must be > 1 (l.268 there: "Please set a
        dp-size > 1"). Only a pin says which: unpinned is the newest."""
        from tpcheck.engines.flags import version_key

        return (self.engine == "sglang" and self.pinned and bool(version_key(self.version))
                and version_key(self.version) < version_key("0.4.4.post1"))

    @property
    def dp_attention_needs_dp(self) -> bool:
        """SGLang 0.4.4.post1 to 0.5.2rc2 assert ``dp_size > 1`` whenever
        ``--enable-dp-attention`` is given ("Please set a dp-size > 1", server_args.py l.268 in
        0.4.4.post1, l.461 in 0.4.10.post2, l.538 in 0.5.1.post3, l.616 in 0.5.2rc2); 0.5.2
        turns the flag off instead when dp is 1 (l.634-635). Only a pin says which."""
        from tpcheck.engines.flags import version_key

        key = version_key(self.version) if self.engine == "sglang" and self.pinned else ()
        return bool(key) and version_key("0.4.4.post1") <= key < version_key("0.5.2")

    @property
    def dp_attention_by_dp_flag(self) -> bool:
        """A pinned SGLang 0.4.x turns attention DP on with ``--enable-dp-attention --dp N``;
        0.5.23 deprecates that pair for ``--attn-dp-size N`` (server_args.py:419), which the
        fixes of newer or unpinned releases name."""
        return self.engine == "sglang" and self.pinned and self.version.startswith("0.4")

    @property
    def physics_version(self) -> str | None:
        """The version the memory model is given: None (the newest rules) when nothing pins."""
        return self.version if self.pinned else None


def newest(engine: str) -> Release:
    return Release(engine, NEWEST[engine], NOT_PINNED, False)


def resolve(engine: EngineName | str, *, image: str | None = None,
            image_version: str | None = None, setting: str | None = None,
            setting_from: str | None = None, version_from: str | None = None) -> Release:
    """Which release applies: the image tag (or the pin ``version_from`` names: a pip pin
    in a Dockerfile or setup script), else the setting, else the newest known.

    ``:latest``/``:nightly`` (or an untagged image) pin nothing, so they fall through.
    """
    tag = (image or "").split("@", 1)[0].rsplit("/", 1)[-1]
    last = NEWEST[engine]
    if image_version and (parse_version(image_version) or (0,)) > (parse_version(last) or (0,)):
        # A later release than any read, or a tag that numbers something else (NGC's 26.02,
        # a wrapper's own version): the newest known rules are what tpcheck can apply.
        named = f"the pin {image_version}" if version_from else f"the image tag {tag}"
        return Release(engine, last, f"newest known ({named} names no release "
                       "tpcheck has read: pin a known one to be exact)", False)
    if image_version:
        return Release(engine, image_version, version_from or f"from the image tag {tag}", True)
    if setting:
        return Release(engine, setting, f"from {setting_from or 'the settings'}", True)
    src = NOT_PINNED
    if image and ":" in tag and tag.rsplit(":", 1)[-1].lower().startswith(_UNPINNED_TAGS):
        src = f"newest known (image {tag} not pinned: pin it to be exact)"
    return Release(engine, last, src, False)
