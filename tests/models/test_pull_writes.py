"""`tpcheck models pull` writes only inside the project (issue 28 item 1): a symlink committed
at any component of a path it writes is refused with one line, exit 2, nothing fetched or
written; the settings edit keeps CRLF, a BOM and comments; messages name the id once and call an
id the hub library rejects invalid. Real symlinks, a real loopback hub, a real ``python -m``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hubserver import HubServer, commit_of
from tests.models.test_pull import REAL_CONFIG, tpcheck
from tpcheck import safewrite

pytestmark = pytest.mark.slow  # a tpcheck process per case (and a local hub)


OUTSIDE = b"precious: not tpcheck's to write\n"


def _project(tmp_path: Path) -> tuple[Path, Path]:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text('[tool.tpcheck]\ngpu = "h100-sxm"\n')
    (proj / "run.sh").write_text("vllm serve acme/ok -tp 2\n")
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "victim").write_bytes(OUTSIDE)
    return proj, outside


def _link_dot_tpcheck(proj: Path, outside: Path) -> Path:
    (proj / ".tpcheck").symlink_to(outside)
    return proj / ".tpcheck"


def _link_model_folder(proj: Path, outside: Path) -> Path:
    (proj / ".tpcheck" / "models").mkdir(parents=True)
    (proj / ".tpcheck" / "models" / "acme--ok").symlink_to(outside)
    return proj / ".tpcheck" / "models" / "acme--ok"


def _link_file(name: str) -> object:
    def make(proj: Path, outside: Path) -> Path:
        folder = proj / ".tpcheck" / "models" / "acme--ok"
        folder.mkdir(parents=True)
        (folder / name).symlink_to(outside / "victim")
        return folder / name
    return make


def _link_settings(proj: Path, outside: Path) -> Path:
    (outside / "victim").write_bytes(b'[tool.tpcheck]\ngpu = "h100-sxm"\n')
    (proj / "pyproject.toml").unlink()
    (proj / "pyproject.toml").symlink_to(outside / "victim")
    return proj / "pyproject.toml"


@pytest.mark.parametrize("make", [
    _link_dot_tpcheck, _link_model_folder, _link_file("config.json"), _link_file("REVISION"),
    _link_file("hf_quant_config.json"), _link_settings,
], ids=[".tpcheck", "model-folder", "config.json", "REVISION", "quant", "pyproject.toml"])
def test_a_committed_symlink_is_refused_and_nothing_is_written(tmp_path: Path, make: object
                                                               ) -> None:
    proj, outside = _project(tmp_path)
    link = make(proj, outside)  # type: ignore[operator]
    before = {p: p.read_bytes() for p in outside.rglob("*")}
    settings_before = (proj / "pyproject.toml").read_bytes()
    with HubServer({"acme/ok": {"config.json": REAL_CONFIG}}) as hub:
        proc = tpcheck(proj, ["models", "pull", "run.sh"], {"HF_ENDPOINT": hub.endpoint})
        asked = hub.requests
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line == (f"tpcheck: error: {link}: is a symbolic link; tpcheck writes only inside "
                    "the project and never through a link (remove it and run again)")
    assert asked == []  # refused before anything was fetched
    assert {p: p.read_bytes() for p in outside.rglob("*")} == before  # nothing written there
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert (proj / "pyproject.toml").read_bytes() == settings_before


def test_the_settings_edit_keeps_crlf_a_bom_and_comments(tmp_path: Path) -> None:
    proj, _ = _project(tmp_path)
    text = ('\ufeff# infra settings\r\n[project]\r\nname = "infra"  # ours\r\n\r\n'
            '[tool.tpcheck]\r\ngpu = "h100-sxm"\r\n')
    (proj / "pyproject.toml").write_bytes(text.encode())
    os.chmod(proj / "pyproject.toml", 0o640)
    with HubServer({"acme/ok": {"config.json": REAL_CONFIG}}) as hub:
        proc = tpcheck(proj, ["models", "pull", "run.sh"], {"HF_ENDPOINT": hub.endpoint})
    assert proc.returncode == 0, proc.stderr
    # every old byte kept, the new table in the file's own line ends, the BOM still first
    assert (proj / "pyproject.toml").read_bytes() == (text + (
        '\r\n[tool.tpcheck.models]\r\n"acme/ok" = ".tpcheck/models/acme--ok"\r\n')).encode()
    assert (proj / "pyproject.toml").stat().st_mode & 0o777 == 0o640  # permissions kept
    folder = proj / ".tpcheck" / "models" / "acme--ok"
    assert (folder / "config.json").read_bytes() == REAL_CONFIG
    assert (folder / "REVISION").read_text() == f"{commit_of('acme/ok')}\n"
    # no temporary file left beside what was written
    assert sorted(p.name for p in folder.iterdir()) == ["REVISION", "config.json"]
    assert sorted(p.name for p in proj.iterdir()) == [".tpcheck", "pyproject.toml", "run.sh"]


def test_an_invalid_id_is_called_invalid_and_the_others_are_still_pulled(tmp_path: Path
                                                                         ) -> None:
    proj, _ = _project(tmp_path)
    # "acme/ok." reads as a hub id to tpcheck; huggingface_hub refuses a name ending in "."
    (proj / "run.sh").write_text("vllm serve acme/ok. -tp 2\nvllm serve acme/ok -tp 2\n")
    with HubServer({"acme/ok": {"config.json": REAL_CONFIG}}) as hub:
        proc = tpcheck(proj, ["models", "pull", "run.sh"], {"HF_ENDPOINT": hub.endpoint})
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("tpcheck: error: acme/ok.: not a valid hub id (")
    assert "cannot reach" not in line and "acme/ok.: acme/ok." not in line
    # an invalid id is no network failure: the next model was still looked up and pulled
    assert "acme/ok @ " in proc.stdout


def test_write_bytes_makes_folders_and_refuses_a_file_where_a_folder_goes(tmp_path: Path
                                                                          ) -> None:
    safewrite.write_bytes(tmp_path, "a/b/c.txt", b"x")
    assert (tmp_path / "a" / "b" / "c.txt").read_bytes() == b"x"
    (tmp_path / "f").write_bytes(b"keep")
    with pytest.raises(safewrite.WriteRefused, match=r"/f: is not a folder"):
        safewrite.write_bytes(tmp_path, "f/c.txt", b"x")
    with pytest.raises(safewrite.WriteRefused, match="not a path inside the project"):
        safewrite.write_bytes(tmp_path, "../escape", b"x")
    assert (tmp_path / "f").read_bytes() == b"keep"
    assert not (tmp_path.parent / "escape").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root may write any file")
def test_a_read_only_settings_file_is_not_replaced(tmp_path: Path) -> None:
    proj, _ = _project(tmp_path)
    os.chmod(proj / "pyproject.toml", 0o444)  # a rename would replace it: refused first
    with HubServer({"acme/ok": {"config.json": REAL_CONFIG}}) as hub:
        proc = tpcheck(proj, ["models", "pull", "run.sh"], {"HF_ENDPOINT": hub.endpoint})
        asked = hub.requests
    assert proc.returncode == 2 and asked == []
    assert proc.stderr == (f"tpcheck: error: {proj / 'pyproject.toml'}: cannot write: "
                           "permission denied\n")


def test_models_list_reads_a_committed_revision_fifo_as_no_revision(tmp_path: Path) -> None:
    from tpcheck.models.pull import pulled_models

    folder = tmp_path / ".tpcheck" / "models" / "acme--ok"
    folder.mkdir(parents=True)
    (folder / "config.json").write_bytes(REAL_CONFIG)
    os.mkfifo(folder / "REVISION")  # read_text waited for a writer forever
    assert pulled_models(tmp_path) == [{"id": "acme/ok", "source": "pulled", "revision": None}]
