"""What a run keeps between files: a cached answer must not pin the file it was found in.

Issue 30: the resolver's and the linter's caches of failed model lookups kept each
ResolveError with its traceback, whose frames held the file being checked (its read result,
deployments and every word's character positions) for the whole run — memory grew with every
file that named an unknown model.
"""

from __future__ import annotations

import gc
from pathlib import Path

from tpcheck.lint import Linter
from tpcheck.models.resolve import ResolveError
from tpcheck.settings import Settings
from tpcheck.sources.words import Word

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: m{i}}}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.19.0
      command: ["vllm", "serve", "acme/unknown-model-{i}b", "--tensor-parallel-size", "2",
                "--max-model-len", "8192", "--gpu-memory-utilization", "0.9"]
      resources: {{limits: {{nvidia.com/gpu: 2}}}}
"""
FILES = 40


def live_words() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Word)


def test_failed_lookups_do_not_pin_their_files(tmp_path: Path) -> None:
    for i in range(FILES):
        (tmp_path / f"pod{i:02d}.yaml").write_text(POD.format(i=i))
    linter = Linter(Settings().with_flags(offline=True), gpu_flag="h100-sxm")
    before = live_words()
    res = linter.run([str(tmp_path)])
    # every file is one deployment whose model cannot be found offline: 40 TP000s
    assert (res.files, res.deployments) == (FILES, FILES)
    assert [f.code for f in res.findings] == ["TP000"] * FILES
    # each file has 9 words (vllm, serve, the model and three option-value pairs); with the
    # errors' tracebacks cached, 240 of the 40 × 9 = 360 stayed alive; none may outlive its file
    assert live_words() - before < 10
    cached = [*linter._resolved.values(), *linter._hinted.values(),
              *linter.resolver._resolved.values(), *linter.resolver._remote.values(),
              *linter.resolver._files.values()]
    errors = [e for e in cached if isinstance(e, ResolveError)]
    assert len(errors) >= FILES  # one failed lookup per distinct model, at least
    assert all(e.__traceback__ is None and e.__context__ is None for e in errors)
