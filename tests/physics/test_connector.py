"""Issue 32 item 6: a launch with --kv-transfer-config says that the predicted pool is before
the connector's own buffers (the older Qwen3-235B-A22B-FP8 row: 8.11 GiB logged, 13.2
predicted, with a connector on)."""

from __future__ import annotations

from pathlib import Path

from tests.physics.test_calibration import _shape
from tpcheck.hardware.gpus import find_gpu
from tpcheck.lint import Linter
from tpcheck.physics.plan import Options, engine_log_lines, evaluate
from tpcheck.settings import Settings

CFG = """'{"kv_connector":"NixlConnector","kv_role":"kv_both"}'"""


def test_pool_names_the_connector_and_stays_the_same() -> None:
    s = _shape("meta-llama/Llama-3.1-8B-Instruct")
    plain = evaluate(s, 2, Options(gpu=find_gpu("h100-sxm")))
    conn = evaluate(s, 2, Options(gpu=find_gpu("h100-sxm"), kv_connector="NixlConnector"))
    assert plain.pool is not None and conn.pool is not None
    assert conn.pool.result == plain.pool.result  # not modelled, only said
    assert conn.pool.values["kv_connector"] == "NixlConnector"
    # Established in 0.19 and 0.33: the worker makes the connector in initialize_from_config,
    # after determine_available_memory sized the pool (gpu_worker.py l.515-527 / l.866-887),
    # so its buffers cannot shrink the printed pool: they need memory beyond it.
    assert "connector's own GPU buffers are not modelled and not in the pool" in (
        conn.pool.source)
    assert "after the pool is sized" in conn.pool.source
    assert engine_log_lines(conn, "vllm")[-1].startswith(
        "(not in this prediction: the NixlConnector connector's buffers")
    assert "kv_connector" not in plain.pool.values


def test_memory_findings_assume_the_pool_is_before_the_connector(tmp_path: Path) -> None:
    p = tmp_path / "run.sh"
    p.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072 "
                 f"--max-num-seqs 512 --kv-transfer-config {CFG}\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert not res.errors, res.errors
    mem = [f for f in res.findings if f.code == "TP203"]
    assert mem, [f.code for f in res.findings]
    for f in mem:
        kinds = {a.kind: a.text for a in f.assumptions}
        assert "NixlConnector" in kinds["connector"]
        assert "after sizing the pool" in kinds["connector"]
