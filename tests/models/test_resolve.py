"""The resolver against real huggingface_hub: a real cache layout, a loopback hub, real errors.

huggingface_hub reads HF_HOME, HF_HUB_CACHE, HF_ENDPOINT and HF_HUB_OFFLINE when it is imported,
so every scenario that reaches the cache or the hub runs in a fresh interpreter with its own
environment (``run``). Steps that never import huggingface_hub (paths, mappings, local folders,
expressions) run in-process.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.hubserver import HubServer, commit_of
from tpcheck.models import catalog
from tpcheck.models.resolve import ResolveError, Resolver

CATALOG_70B = catalog.CATALOG_DIR / "meta-llama--Llama-3.1-70B-Instruct" / "config.json"
# A real config.json (Llama-3.1-8B's) served under names the catalog does not know, so only the
# cache or the hub can answer for them.
REAL_CONFIG = (catalog.CATALOG_DIR / "meta-llama--Llama-3.1-8B" / "config.json").read_bytes()
REAL = json.loads(REAL_CONFIG)
QUANT = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}
TOKEN = "hf_tpcheckTestToken0123456789"

DRIVER = r"""
import json, sys, time
spec = json.loads(sys.argv[1])
if spec.get("preimport"):
    from tpcheck.models.resolve import import_hub
    import_hub()  # as the resolver imports it; keeps import time out of a timing assertion
from tpcheck.models.resolve import Resolver, ResolveError
resolver = Resolver(**spec.get("init", {}))
out = []
for call in spec["calls"]:
    for _ in range(call.get("repeat", 1)):
        t0 = time.perf_counter()
        try:
            r = resolver.resolve(call["model"], revision=call.get("revision"))
            row = {"ok": True, "source": r.source, "location": r.location, "config": dict(r.config),
                   "quant": None if r.quant_config is None else dict(r.quant_config),
                   "tried": list(r.tried)}
        except ResolveError as e:
            row = {"ok": False, "kind": e.kind, "message": e.message, "str": str(e),
                   "tried": list(e.tried)}
        row["elapsed"] = time.perf_counter() - t0
    out.append(row)
out_mods = "huggingface_hub" in sys.modules
print(json.dumps({"results": out, "hub_imported": out_mods}))
"""


def dead_endpoint() -> str:
    """A loopback URL nothing listens on: a started-then-stopped server's port."""
    hub = HubServer().start()
    endpoint = hub.endpoint
    hub.stop()
    return endpoint


def run(
    tmp_path: Path, calls: list[dict[str, Any]], env: dict[str, str] | None = None, **spec: Any
) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """Run the resolver in a fresh interpreter with a clean HF environment under tmp_path."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HUGGING")) and "PROXY" not in k.upper()
    }
    base.pop("TRANSFORMERS_OFFLINE", None)
    base.update(HF_HOME=str(tmp_path / "hf"), NO_PROXY="127.0.0.1,localhost")
    base.setdefault("HF_ENDPOINT", dead_endpoint())  # never the real hub, even by mistake
    base.update(env or {})
    payload = json.dumps({"calls": calls, **spec})
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, payload],
        env=base,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    results: list[dict[str, Any]] = data["results"]
    return results, proc


def make_cache(hub_cache: Path, repo: str, files: dict[str, bytes], ref: str = "main") -> str:
    """Lay out a repo the way huggingface_hub stores it: blobs by etag, snapshot symlinks, refs."""
    commit = hashlib.sha1(f"{repo}@{ref}".encode()).hexdigest()
    folder = hub_cache / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / ref).write_text(commit)
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    (folder / "blobs").mkdir(exist_ok=True)
    for name, data in files.items():
        blob = folder / "blobs" / hashlib.sha1(data).hexdigest()
        blob.write_bytes(data)
        (snap / name).symlink_to(os.path.relpath(blob, snap))
    return commit


def one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message


# -- the Hugging Face cache ------------------------------------------------------------------


def test_cache_layout_resolves_offline(tmp_path: Path) -> None:
    quant = json.dumps(QUANT).encode()
    commit = make_cache(
        tmp_path / "hf" / "hub",
        "acme/cached-8b",
        {"config.json": REAL_CONFIG, "hf_quant_config.json": quant},
    )
    with HubServer() as hub:  # listening, so a request would be seen rather than refused
        [res], _ = run(
            tmp_path,
            [{"model": "acme/cached-8b"}],
            {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": hub.endpoint},
        )
        assert hub.requests == []
    assert res["ok"], res
    assert res["source"] == "hf-cache"
    expected = tmp_path / "hf/hub/models--acme--cached-8b/snapshots" / commit / "config.json"
    assert res["location"] == str(expected)
    assert res["config"] == REAL
    assert res["config"]["num_key_value_heads"] == 8  # Llama-3.1-8B: 32 query heads, 8 kv heads
    assert res["quant"] == QUANT


def test_cache_honours_revision_and_hf_hub_cache(tmp_path: Path) -> None:
    custom = tmp_path / "elsewhere"
    old = dict(REAL, num_hidden_layers=16)
    main_commit = make_cache(custom, "acme/rev", {"config.json": REAL_CONFIG})
    v1_commit = make_cache(custom, "acme/rev", {"config.json": json.dumps(old).encode()}, "v1")
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(custom)}
    calls = [
        {"model": "acme/rev"},
        {"model": "acme/rev", "revision": "v1"},
        {"model": "acme/rev", "revision": main_commit},
        {"model": "acme/rev", "revision": "v2"},
    ]
    (head, tag, sha, missing), _ = run(tmp_path, calls, env)
    assert head["config"]["num_hidden_layers"] == REAL["num_hidden_layers"] == 32
    assert tag["config"]["num_hidden_layers"] == 16
    assert tag["location"].endswith(f"/snapshots/{v1_commit}/config.json")
    assert sha["location"] == head["location"]
    assert not missing["ok"] and missing["kind"] == "not-found"
    # The same layout is invisible once HF_HUB_CACHE no longer points at it: the env var mattered.
    [res], _ = run(tmp_path, [{"model": "acme/rev"}], {"HF_HUB_OFFLINE": "1"})
    assert not res["ok"] and res["kind"] == "not-found"


def test_malformed_cached_json_names_the_file(tmp_path: Path) -> None:
    make_cache(tmp_path / "hf" / "hub", "acme/broken", {"config.json": b'{"hidden_size": 4096,\n}'})
    [res], _ = run(tmp_path, [{"model": "acme/broken"}], {"HF_HUB_OFFLINE": "1"})
    assert res["kind"] == "bad-json"
    one_line(res["message"])
    # json reports the stray "}" on line 2, column 1
    assert "/snapshots/" in res["message"] and "config.json:2:1: malformed JSON" in res["message"]


# -- the bundled catalog --------------------------------------------------------------------


def test_catalog_exact_id_case_insensitive_and_never_guessed(tmp_path: Path) -> None:
    calls = [
        {"model": "META-LLAMA/llama-3.1-70b-INSTRUCT"},
        {"model": "meta-llama/Llama-3.1-70B-Instruct-FP8"},  # not listed as an alias
    ]
    (hit, guess), _ = run(tmp_path, calls, {"HF_HUB_OFFLINE": "1"})
    assert hit["source"] == "catalog" and hit["location"] == str(CATALOG_70B)
    # 70B: 64 query heads, 8 kv heads, hidden 8192 (catalog SOURCE file records the same)
    assert (hit["config"]["num_attention_heads"], hit["config"]["num_key_value_heads"]) == (64, 8)
    assert not guess["ok"] and guess["kind"] == "not-found"
    assert "hub: skipped (HF_HUB_OFFLINE)" in guess["tried"]


def test_unknown_model_offline_fails_in_well_under_a_second(tmp_path: Path) -> None:
    calls = [{"model": "acme/never-heard-of-it"}]
    # cold: the lazy huggingface_hub import is inside the timed call; --offline, no env var
    [res], _ = run(tmp_path, calls, init={"offline": True})
    assert res["kind"] == "not-found"
    one_line(res["message"])
    assert res["elapsed"] < 1.0, res["elapsed"]
    places = " | ".join(res["tried"])
    for place in ("local folder", "HF cache", "bundled catalog", "hub: skipped (--offline)"):
        assert place in places


# -- the hub (loopback) ---------------------------------------------------------------------


def test_hub_download_fills_cache_then_offline_reads_it(tmp_path: Path) -> None:
    hub = HubServer({"acme/fresh": {"config.json": REAL_CONFIG}}).start()
    try:
        [online], _ = run(tmp_path, [{"model": "acme/fresh"}], {"HF_ENDPOINT": hub.endpoint})
        seen = [(r.method, r.path) for r in hub.requests]
    finally:
        hub.stop()
    assert online["source"] == "hub" and online["config"] == REAL and online["quant"] is None
    commit = commit_of("acme/fresh")
    assert online["location"] == str(
        tmp_path / "hf/hub/models--acme--fresh/snapshots" / commit / "config.json"
    )
    assert seen == [
        ("HEAD", "/acme/fresh/resolve/main/config.json"),  # the probe, no retries
        ("HEAD", "/acme/fresh/resolve/main/config.json"),  # hf_hub_download's own
        ("GET", "/acme/fresh/resolve/main/config.json"),
        ("HEAD", "/acme/fresh/resolve/main/hf_quant_config.json"),  # 404: none in this repo
    ]
    # Server gone and offline: the cache the first run filled answers.
    [offline], _ = run(
        tmp_path, [{"model": "acme/fresh"}], {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": hub.endpoint}
    )
    assert offline["source"] == "hf-cache"
    assert offline["location"] == online["location"] and offline["config"] == REAL


def test_hub_quant_config_beside_and_token_sent_never_printed(tmp_path: Path) -> None:
    files = {"config.json": REAL_CONFIG, "hf_quant_config.json": json.dumps(QUANT).encode()}
    with HubServer({"acme/fp8": files}, gated=["acme/gated"]) as hub:
        (ok, gated), proc = run(
            tmp_path,
            [{"model": "acme/fp8"}, {"model": "acme/gated"}],
            {"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": TOKEN},
        )
        auth = {r.authorization for r in hub.requests}
    assert ok["source"] == "hub" and ok["quant"] == QUANT
    assert auth == {f"Bearer {TOKEN}"}  # every request carried HF_TOKEN
    assert gated["kind"] == "gated"
    assert TOKEN not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("server", "model", "kind", "phrase"),
    [
        ({"gated": ["acme/gated"]}, "acme/gated", "gated", "is gated on"),
        ({"missing": {"acme/gone": 401}}, "acme/gone", "not-found", "(HTTP 401); if it is private"),
        ({"missing": {"acme/gone": 404}}, "acme/gone", "not-found", "not found on"),
        ({"files": {"acme/empty": {"README.md": b"hi"}}}, "acme/empty", "not-found", "no config"),
        ({"files": {"acme/bad": {"config.json": b"{oops"}}}, "acme/bad", "bad-json", ":1:2:"),
    ],
)
def test_hub_errors_are_one_line(
    tmp_path: Path, server: dict[str, Any], model: str, kind: str, phrase: str
) -> None:
    with HubServer(**server) as hub:
        [res], proc = run(tmp_path, [{"model": model}], {"HF_ENDPOINT": hub.endpoint})
    assert not res["ok"] and res["kind"] == kind, res
    one_line(res["message"])
    assert model in res["message"] or kind == "bad-json"
    assert phrase in res["message"], res["message"]
    assert proc.stderr == ""


def test_hanging_hub_times_out_on_time_once_per_run(tmp_path: Path) -> None:
    timeout = 1.0
    with HubServer(hang=["acme/slow", "acme/slower"]) as hub:
        (first, second), _ = run(
            tmp_path,
            [{"model": "acme/slow"}, {"model": "acme/slower"}],
            {"HF_ENDPOINT": hub.endpoint},
            init={"timeout": timeout},
            preimport=True,
        )
        # the probe for the first model, never answered; none for the second
        assert [(r.method, r.path) for r in hub.requests] == [
            ("HEAD", "/acme/slow/resolve/main/config.json")
        ]
    assert first["kind"] == second["kind"] == "timeout"
    one_line(first["message"])
    one_line(second["message"])
    # waited the timeout, and not huggingface_hub's own 60 s retry: the margin is the hub child
    # process's start (an interpreter importing huggingface_hub and its HTTP client, ~1-1.5 s
    # here under load), which the timeout does not count
    assert timeout <= first["elapsed"] < timeout + 5.0, first["elapsed"]
    # a hub that stalled once is not asked again in the same run
    assert second["elapsed"] < 0.2, second["elapsed"]
    assert "timed out earlier in this run" in second["message"]


def test_unreachable_hub_is_a_network_error(tmp_path: Path) -> None:
    start = time.monotonic()
    [res], _ = run(tmp_path, [{"model": "acme/anything"}], init={"timeout": 3.0})
    assert res["kind"] == "network", res
    one_line(res["message"])
    assert res["elapsed"] < 3.0  # refused at once, not timed out
    assert time.monotonic() - start < 10


def test_one_lookup_per_model_per_run(tmp_path: Path) -> None:
    with HubServer({"acme/popular": {"config.json": REAL_CONFIG}}) as hub:
        (first, last), _ = run(
            tmp_path,
            [{"model": "acme/popular"}, {"model": "acme/popular", "repeat": 1000}],
            {"HF_ENDPOINT": hub.endpoint},
        )
        count = len(hub.requests)
    assert first["source"] == last["source"] == "hub"
    # 1001 resolves, one lookup: probe HEAD + HEAD + GET config.json, HEAD hf_quant_config.json
    assert count == 4


# -- paths, mappings, local folders, expressions (no huggingface_hub needed) ----------------


def write_config(folder: Path, config: dict[str, Any] | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_bytes(config if isinstance(config, bytes) else json.dumps(config).encode())
    return path


def test_model_config_file_or_folder_wins_over_everything(tmp_path: Path) -> None:
    path = write_config(tmp_path / "mine", dict(REAL, num_hidden_layers=3))
    for given in (str(path), "mine"):
        resolver = Resolver(model_config=given, base_dir=str(tmp_path), offline=True)
        for model in ("meta-llama/Llama-3.1-70B-Instruct", "$(MODEL_ID)"):
            res = resolver.resolve(model)
            assert res.source == "path" and res.location == str(path)
            assert res.config["num_hidden_layers"] == 3 and res.model == model


def test_mapping_to_path_and_to_hub_id(tmp_path: Path) -> None:
    path = write_config(tmp_path / "cfg", dict(REAL, num_hidden_layers=5))
    resolver = Resolver(
        mappings={"/models/llama-8b": "cfg/config.json", "$(MODEL_ID)": "cfg"},
        base_dir=str(tmp_path),
        cwd=str(tmp_path),
        offline=True,
    )
    for model in ("/models/llama-8b", "$(MODEL_ID)"):
        res = resolver.resolve(model)
        assert (res.source, res.location) == ("mapping", str(path))
        assert res.config["num_hidden_layers"] == 5


def test_mapping_to_hub_id_reaches_the_catalog(tmp_path: Path) -> None:
    init = {"mappings": {"/models/llama-70b": "meta-llama/Llama-3.1-70B-Instruct"}}
    [res], _ = run(tmp_path, [{"model": "/models/llama-70b"}], {"HF_HUB_OFFLINE": "1"}, init=init)
    assert res["source"] == "catalog" and res["location"] == str(CATALOG_70B)
    assert res["tried"][0] == "mapping '/models/llama-70b' -> 'meta-llama/Llama-3.1-70B-Instruct'"


def test_local_folder_beside_the_manifest_then_cwd(tmp_path: Path) -> None:
    manifests = tmp_path / "deploy"
    near = write_config(manifests / "meta-llama" / "Llama-3.1-8B", dict(REAL, vocab_size=7))
    far = write_config(tmp_path / "cwd" / "models" / "small", REAL)
    (manifests / "meta-llama" / "Llama-3.1-8B" / "hf_quant_config.json").write_text(
        json.dumps(QUANT)
    )
    resolver = Resolver(cwd=str(tmp_path / "cwd"), offline=True)
    res = resolver.resolve("meta-llama/Llama-3.1-8B", base_dir=str(manifests))
    # a folder that exists wins over the catalog entry of the same name, as the engines load it
    assert (res.source, res.location) == ("local", str(near))
    assert res.config["vocab_size"] == 7 and res.quant_config == QUANT
    res = resolver.resolve("./models/small", base_dir=str(manifests))
    assert (res.source, res.location) == ("local", str(far))


def test_local_malformed_json_is_one_line(tmp_path: Path) -> None:
    path = write_config(tmp_path / "m", b'{\n  "hidden_size": 4096\n  "x": 1\n}')
    with pytest.raises(ResolveError) as info:
        Resolver(cwd=str(tmp_path), offline=True).resolve("./m")
    assert info.value.kind == "bad-json"
    # the missing comma is reported where "x" starts: line 3, column 3
    assert info.value.message.startswith(f"{path}:3:3: malformed JSON: Expecting ',' delimiter")
    one_line(info.value.message)


def test_missing_local_path_is_not_sent_to_the_hub(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    with pytest.raises(ResolveError) as info:
        Resolver(cwd=str(tmp_path)).resolve("/models/llama-70b")
    assert time.perf_counter() - t0 < 0.5
    assert info.value.kind == "not-found"
    assert info.value.tried == ("local folder /models/llama-70b: missing",)
    one_line(info.value.message)


@pytest.mark.parametrize(
    "model", ["$(MODEL_ID)", "${MODEL}", "$MODEL", "{{ .Values.model }}", "", "   "]
)
def test_expressions_fail_fast_as_unresolved(tmp_path: Path, model: str) -> None:
    with pytest.raises(ResolveError) as info:
        Resolver(cwd=str(tmp_path)).resolve(model)
    assert info.value.kind == "unresolved"
    one_line(info.value.message)
    assert "--model-config" in info.value.message and "[tool.tpcheck.models]" in info.value.message


def test_huggingface_hub_is_imported_only_when_needed(tmp_path: Path) -> None:
    write_config(tmp_path / "local", REAL)
    calls = [{"model": "$(MODEL_ID)"}, {"model": "./local"}, {"model": "/no/such/dir"}]
    results, proc = run(tmp_path, calls)
    assert [r.get("kind", r.get("source")) for r in results] == ["unresolved", "local", "not-found"]
    assert json.loads(proc.stdout)["hub_imported"] is False
    code = (
        "import sys, tpcheck.cli, tpcheck.models.resolve; print('huggingface_hub' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_model_config_says_where_it_came_from(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    cases = [
        (
            Resolver(model_config="nope.json", base_dir=str(tmp_path)),
            "no such file (from --model-config)",
        ),
        (Resolver(model_config="empty", base_dir=str(tmp_path)), "no config.json in this folder"),
        (
            Resolver(mappings={"m": "./gone/config.json"}, base_dir=str(tmp_path)),
            "no such file (from [tool.tpcheck.models] mapping)",
        ),
    ]
    for resolver, phrase in cases:
        with pytest.raises(ResolveError) as info:
            resolver.resolve("m")
        assert info.value.kind == "not-found" and phrase in info.value.message
        one_line(info.value.message)


def test_hub_server_binds_loopback_and_stops_itself() -> None:
    import socket

    hub = HubServer(lifetime=0.3).start()
    host, port = hub.endpoint.removeprefix("http://").split(":")
    assert host == "127.0.0.1"
    socket.create_connection((host, int(port)), timeout=1).close()
    time.sleep(0.8)  # past its lifetime: the timer stopped it and closed the socket
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=1)


def test_a_config_with_an_integer_past_the_digit_limit_is_one_bad_json_line(
        tmp_path: Path) -> None:
    # Python refuses int("9" * 5000) (sys.get_int_max_str_digits() is 4,300): json.loads raises
    # ValueError, which was an internal error in `plan` and a raw message in TP000.
    from tpcheck.models.resolve import ResolveError, load_json

    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": ' + "9" * 5000 + "}", encoding="utf-8")
    with pytest.raises(ResolveError) as info:
        load_json(path)
    assert info.value.kind == "bad-json"
    assert info.value.message.startswith(f"{path}: not a model config (")


def test_a_malformed_hf_endpoint_is_a_network_error_not_a_traceback() -> None:
    # huggingface_hub parses HF_ENDPOINT at import; 'http://[::1' raised ValueError there.
    code = ("from tpcheck.models.resolve import ResolveError, import_hub\n"
            "try:\n    import_hub()\n"
            "except ResolveError as e:\n    print(e.kind, '|', e.message)\n")
    env = {**os.environ, "HF_ENDPOINT": "http://[::1"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60, check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout.startswith("network | huggingface_hub refuses its environment "
                               "(HF_ENDPOINT='http://[::1'?)"), p.stdout
