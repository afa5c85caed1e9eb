"""The hub download of one repo's config.json, run as a child process of the lint.

A child process rather than a thread, because a thread cannot be stopped: after ``hub-timeout``
a stalled download went on writing a partial blob into the HF cache and was still alive at
interpreter shutdown (issue 14 items 7 and 12). The parent (``hub.fetch_in_child``) kills the child
at its deadline and removes the partial files; nothing of the download outlives the run.

    python -m tpcheck.models.hubfetch REPO REVISION TIMEOUT    (REVISION "" for the default)

Writes one JSON object per line to stdout: ``{"ready": true}`` once huggingface_hub is imported
(the deadline counts from there, not from interpreter start), then the config answer
(``{"config_path": ...}`` or ``{"kind": ..., "message": ...}``), then ``{"quant_path": ...}``.
"""

from __future__ import annotations

import contextlib
import json
import sys


def _say(obj: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    from tpcheck.models.resolve import (
        CONFIG_NAME,
        MAX_CONFIG_BYTES,
        QUANT_NAME,
        classify_hub_error,
        import_hub,
        redact_url,
    )

    repo, revision, timeout = argv[0], argv[1] or None, float(argv[2])
    hub = import_hub()
    endpoint = redact_url(str(hub.constants.ENDPOINT))
    # The HTTP client's import (~1 s) and the user agent (installed packages' versions) are
    # start-up, not the hub's time; a release without these helpers does both on first request.
    import huggingface_hub.utils as hub_utils

    for warm in ("get_session", "build_hf_headers"):
        with contextlib.suppress(Exception):
            getattr(hub_utils, warm)()
    _say({"ready": True})
    try:
        # One HEAD without retries first: hf_hub_download retries refused connections and 5xx
        # with backoff, which would turn "unreachable" into a timeout. Its size is checked
        # before any byte of the body is written to the cache.
        url = hub.hf_hub_url(repo, CONFIG_NAME, revision=revision)
        meta = hub.get_hf_file_metadata(url, timeout=timeout)
        size = getattr(meta, "size", None)
        if isinstance(size, int) and size > MAX_CONFIG_BYTES:
            _say({"kind": "bad-json",
                  "message": f"{repo}: {CONFIG_NAME} on {endpoint} is {size:,} bytes, over the "
                             f"{MAX_CONFIG_BYTES:,}-byte limit for a model config; not "
                             "downloaded"})
            return 0
        path = hub.hf_hub_download(repo, CONFIG_NAME, revision=revision, etag_timeout=timeout)
    except Exception as e:
        err = classify_hub_error(e, repo, endpoint)
        _say({"kind": err.kind, "message": err.message})
        return 0
    _say({"config_path": str(path)})
    try:
        quant = hub.hf_hub_download(repo, QUANT_NAME, revision=revision, etag_timeout=timeout)
    except Exception:
        quant = None  # most repos have none; a 404 is the normal answer
    _say({"quant_path": None if quant is None else str(quant)})
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
