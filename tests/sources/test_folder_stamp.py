"""``folder_stamp``: asked once per folder within a run, afresh outside one (the editor)."""

from __future__ import annotations

import os
from pathlib import Path

from tpcheck.sources.files import folder_stamp, run_over


def test_stamp_is_taken_once_per_run_and_afresh_outside(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("kind: Pod\n")  # 10 bytes
    (tmp_path / "notes.txt").write_text("x\n")  # not YAML: not in the stamp
    folder = str(tmp_path)
    mtime = os.stat(tmp_path / "a.yaml").st_mtime_ns
    with run_over([folder]):
        first = folder_stamp(folder, 200)
        assert first == (("a.yaml", mtime, 10),)
        (tmp_path / "b.yml").write_text("kind: Service\n")  # 14 bytes, written mid-run
        # the run's answer: a run reads files that do not change under it, and each KServe
        # file of a 100,000-file folder rescanning it made the run quadratic
        assert folder_stamp(folder, 200) is first
    b_mtime = os.stat(tmp_path / "b.yml").st_mtime_ns
    # outside a run every call looks again, so an editor's index sees the new file
    assert folder_stamp(folder, 200) == (("a.yaml", mtime, 10), ("b.yml", b_mtime, 14))
    assert folder_stamp(folder, 1) == (("a.yaml", mtime, 10),)  # the first `limit` by name
