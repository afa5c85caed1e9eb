"""Whether a YAML file is a kustomization, a patch one names, or a lone patch: the questions
every YAML file asks, answered without importing the overlay build.

A one-file lint is a process of its own, so the kustomize modules (``kustomize``, its
generators, nodes and patches: ~5 million instructions to import) load only when a
kustomization is read, one sits beside the file, or the file has a lone patch's look
(``may_be_lone_patch``). This module imports none of them (they import it).
"""

from __future__ import annotations

import os
from stat import S_ISREG

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from tpcheck.sources.base import ReadResult

NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def is_kustomization(path: str) -> bool:
    return os.path.basename(path) in NAMES


def kustomization_beside(path: str) -> tuple[str, int, int] | None:
    """The kustomization file in ``path``'s folder (its path, mtime and size), if a regular
    file by one of kustomize's names is there: only then can ``path`` be a listed patch.
    Within a run, asked once per folder (``files.RUN_MEMO``): every YAML file asks, and three
    stat calls a file were 2% of reading a 1,000-manifest folder."""
    from tpcheck.sources.files import per_run

    folder = os.path.dirname(os.path.abspath(path))
    return per_run(("kustomization_beside", folder), lambda: _beside(folder))


def _beside(folder: str) -> tuple[str, int, int] | None:
    for name in NAMES:
        kz = os.path.join(folder, name)
        try:
            st = os.stat(kz)
        except OSError:
            continue
        if not S_ISREG(st.st_mode):  # a folder or a FIFO by that name: nothing to read
            continue
        return kz, st.st_mtime_ns, st.st_size
    return None


def may_be_lone_patch(result: ReadResult) -> bool:
    """Whether ``kustomize.note_lone_patch`` could change ``result``: only a deployment naming
    no image (its model unresolved) in a text without ``image:`` can be a lone patch."""
    text = result.text
    return bool(text) and text is not None and "image:" not in text and any(
        d.image is None and (d.model is None or "$" in d.model) for d in result.deployments)
