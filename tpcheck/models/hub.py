"""The hub and its local cache: where a repo is cached, the child that fetches, its errors."""

from __future__ import annotations

import json
import os
import time
from functools import lru_cache
from pathlib import Path

from tpcheck.models.config_files import CONFIG_NAME
from tpcheck.models.resolve_error import ResolveError, scrub

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def cache_folder(repo: str) -> Path:
    """Where huggingface_hub keeps ``repo``: HF_HUB_CACHE, else HF_HOME/hub, else the XDG default
    (the library's documented layout ``models--{org}--{name}``)."""
    env = os.environ
    base = _cache_base(env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"),
                       env.get("HF_HOME"), env.get("XDG_CACHE_HOME"), env.get("HOME"))
    return base / ("models--" + repo.replace("/", "--"))


@lru_cache(maxsize=8)
def _cache_base(hub_cache: str | None, hf_home: str | None, xdg: str | None,
                home: str | None) -> Path:
    """The cache folder for these variables (``home``: HOME, which ``~`` expands to), kept: a
    run asks it for every model it looks up, and expanding and joining paths is most of it."""
    if hub_cache:
        return Path(hub_cache).expanduser()
    hf_home = hf_home or os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"),
                                      "huggingface")
    return Path(hf_home).expanduser() / "hub"


def import_hub() -> Any:
    """Import huggingface_hub lazily. Before its first import, default telemetry (an extra request
    to the endpoint for agent detection) and progress bars off: a linter makes only the requests it
    needs and writes only its own output. Explicit user settings are kept."""
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import huggingface_hub
        import huggingface_hub.constants
    except ValueError as e:  # the library parses HF_ENDPOINT and friends at import
        raise ResolveError("network", f"huggingface_hub refuses its environment "
                           f"(HF_ENDPOINT={os.environ.get('HF_ENDPOINT', '')!r}?): {e}") from None
    return huggingface_hub


def classify_hub_error(error: BaseException, repo: str, endpoint: str) -> ResolveError:
    """Map huggingface_hub's exception (and its causes) to a kind and a one-line message.

    Matched on class names along the MRO so the same code reads 0.x and 1.x/2.x errors, whose
    modules and HTTP client differ."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    for exc in chain:
        names = {c.__name__ for c in type(exc).__mro__}
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if "HFValidationError" in names:  # the library's own check of the id, before any request
            return ResolveError("not-found", f"{repo}: not a valid hub id "
                                f"({scrub(str(exc)).split(': ')[0]})")
        if "GatedRepoError" in names:
            return ResolveError(
                "gated",
                f"{repo} is gated on {endpoint} (HTTP {status}): accept its licence on the hub and "
                "set HF_TOKEN, or pass --model-config PATH",
            )
        if "RevisionNotFoundError" in names:
            return ResolveError("not-found", f"{repo}: revision not found on {endpoint}")
        if names & {"RemoteEntryNotFoundError", "EntryNotFoundError"}:
            return ResolveError("not-found", f"{repo} on {endpoint} has no {CONFIG_NAME}")
        if "RepositoryNotFoundError" in names:
            return ResolveError(
                "not-found",
                f"{repo} not found on {endpoint} (HTTP {status}); if it is private or gated, "
                "set HF_TOKEN",
            )
        if status in (401, 403):
            return ResolveError(
                "gated",
                f"{repo}: access denied by {endpoint} (HTTP {status}); set HF_TOKEN to a token "
                "with access, or pass --model-config PATH",
            )
        if status == 404:
            return ResolveError("not-found", f"{repo} not found on {endpoint} (HTTP 404)")
        if any("Timeout" in n for n in names):
            return ResolveError("timeout", f"{repo}: {endpoint} did not answer in time")
    last = chain[-1]
    detail = scrub(str(last)).split(". ")[0][:160]
    return ResolveError(
        "network", f"{repo}: cannot reach {endpoint} ({type(last).__name__}: {detail})"
    )


class _Fetched:
    """What the hub child process answered (see tpcheck.models.hubfetch)."""

    def __init__(self) -> None:
        self.config_path: str | None = None
        self.quant_path: str | None = None
        self.error: ResolveError | None = None


# Starting the child (an interpreter importing huggingface_hub) is not the hub's time: it gets
# its own bound, generous for a loaded CI box, before ``hub-timeout`` starts to count.
_CHILD_START_SECONDS = 30.0
_CHILD_KINDS = ("gated", "not-found", "timeout", "bad-json", "network")


def fetch_in_child(repo: str, revision: str | None, timeout: float) -> _Fetched:
    """config.json (and best-effort hf_quant_config.json) of ``repo`` from the hub, in a child
    process killed at ``timeout``; the partial blobs it leaves in the HF cache are removed."""
    import selectors
    import subprocess
    import sys

    out = _Fetched()
    blobs = cache_folder(repo) / "blobs"
    before = set(blobs.glob("*.incomplete")) if blobs.is_dir() else set()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpcheck.models.hubfetch", repo, revision or "", repr(timeout)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)

    def line(deadline: float) -> dict[str, Any] | None:
        """The child's next answer, None at the deadline or when it ended without one."""
        nonlocal buffer
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            buffer += chunk
        raw, buffer = buffer.split(b"\n", 1)
        try:
            answer = json.loads(raw)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None

    try:
        ready = line(time.monotonic() + _CHILD_START_SECONDS)
        deadline = time.monotonic() + timeout
        answer = line(deadline) if ready is not None else None
        if answer is None:
            out.error = ResolveError("timeout", "")  # the caller words it
        elif "config_path" in answer:
            out.config_path = str(answer["config_path"])
            quant = line(deadline)
            if quant is not None and isinstance(quant.get("quant_path"), str):
                out.quant_path = quant["quant_path"]
        else:
            kind = answer.get("kind")
            out.error = ResolveError(kind if kind in _CHILD_KINDS else "network",
                                     str(answer.get("message", "no answer from the hub")))
    finally:
        sel.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        if blobs.is_dir():
            for partial in set(blobs.glob("*.incomplete")) - before:
                partial.unlink(missing_ok=True)
    return out


def drop_cache_entry(path: Path) -> bool:
    """Remove one file of huggingface_hub's cache layout (snapshots/<rev>/<file> → blobs/<id>).
    Anything not laid out like that cache is left alone."""
    if path.parent.parent.name != "snapshots":
        return False
    try:
        blob = path.resolve()
        path.unlink()
        if blob.parent.name == "blobs" and blob.parent.parent == path.parent.parent.parent:
            blob.unlink(missing_ok=True)
    except OSError:
        return False
    return True
