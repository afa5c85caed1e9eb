"""The command lines that launch a layout on vLLM and on SGLang, in each release's spelling.

Facts the forms rest on (the releases' own source, /work/shared/engines notes):
- vLLM: ``--data-parallel-size`` runs replicas of a dense model as separate engines (world size
  is p·t, DP is separate engines: vllm 0.33.0 config/parallel.py l.964); a MoE model's replicas
  share its experts (MoE over t·dp), so they are one launch across nodes
  (``--data-parallel-size-local``, ``--data-parallel-address``, ``--headless`` with
  ``--data-parallel-start-rank`` on the other nodes). A replica wider than a node runs with
  ``--nnodes``/``--node-rank``/``--master-addr`` (``--headless`` on the other nodes).
- SGLang refuses data-parallel replicas across nodes ("multi-node data-parallel replicas are not
  supported", sglang 0.5.23 arg_groups/validation_hook.py:~199) and replicas together with
  attention DP (parallel_hook.py:287-291): replicas on other nodes are launches of their own.
  ``sglang serve`` is the recommended entry point (sglang/launch_server.py:71).
"""

from __future__ import annotations

from tpcheck.engines.flags import nearest_release, option_strings
from tpcheck.record import record

HEAD = "HEAD_IP"  # the first node's address: the user's to fill in
SGLANG_PORT = 5000  # --dist-init-addr HOST:PORT: any free port
VLLM_DP_RPC_PORT = 13345  # vLLM's default --data-parallel-rpc-port (arg_utils)


@record
class Launch:
    """One engine's command line for a layout and where to run it."""

    engine: str
    argv: tuple[str, ...]
    where: str  # "on each of 2 nodes", "on node 0 (node-rank 1 on the other, with --headless)"
    refused: str | None = None  # the engine refuses this layout: why (no argv then)

    @property
    def line(self) -> str:
        import shlex

        return " ".join(shlex.quote(a) for a in self.argv)


@record
class Spec:
    """What the command line says beside the layout: the model and the limits as set."""

    model: str
    context: int | None = None
    max_num_seqs: int | None = None
    utilization: float | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    moe: bool = False


def _kv_dtype(engine: str, name: str | None) -> str | None:
    """SGLang names fp8 caches by format (fp8_e4m3, fp8_e5m2); vLLM also accepts plain fp8."""
    if name is None or name == "auto":
        return None
    if engine == "sglang" and name == "fp8":
        return "fp8_e4m3"
    return name


def _per_node(per_replica: int, dp: int, node: int | None) -> tuple[int, int]:
    """(replicas per node, nodes) for replicas that fit a node (one node per replica when the
    node size is unknown and the replica is alone)."""
    if node is None or node < per_replica:
        return 1, dp
    each = max(1, min(dp, node // per_replica))
    return each, -(-dp // each)


def _known(engine: str, version: str | None) -> frozenset[str]:
    """The option strings of ``version`` (or of the nearest release read; None: the newest)."""
    return option_strings(engine, nearest_release(engine, version)[0] if version else None)


def _missing(engine: str, version: str | None, argv: list[str]) -> Launch | None:
    """A launch the release cannot spell: an option its table lacks (an older release)."""
    known = _known(engine, version)
    gone = [a for a in argv if a.startswith("--") and a not in known]
    if not gone:
        return None
    name = "vLLM" if engine == "vllm" else "SGLang"
    return Launch(engine, (), "", f"{name} {version or ''} has no {', '.join(gone)}: this "
                  "layout needs a newer release".replace("  ", " "))


def vllm(spec: Spec, tp: int, pp: int, dp: int, ep: bool, node: int | None,
         version: str | None = None) -> Launch:
    out = _vllm(spec, tp, pp, dp, ep, node, _known("vllm", version))
    return (_missing("vllm", version, list(out.argv)) or out) if out.argv else out


def _vllm(spec: Spec, tp: int, pp: int, dp: int, ep: bool, node: int | None,
          known: frozenset[str]) -> Launch:
    argv = ["vllm", "serve", spec.model, "--tensor-parallel-size", str(tp)]
    if pp > 1:
        argv += ["--pipeline-parallel-size", str(pp)]
    if ep:
        argv.append("--enable-expert-parallel")
    argv += _limits("vllm", spec)
    span = node is not None and tp * pp > node
    if span:
        nodes = -(-tp * pp // node)  # type: ignore[operator]
        if "--nnodes" not in known:
            return Launch("vllm", (), "", f"this vLLM has no --nnodes: a replica of "
                          f"{tp * pp} GPUs needs a Ray cluster")
        argv += ["--nnodes", str(nodes), "--node-rank", "0", "--master-addr", HEAD]
        rep = f"one per replica, {dp} replicas: " if dp > 1 else ""
        return Launch("vllm", tuple(argv), f"{rep}on node 0 of {nodes}; on node k add "
                      "--headless with --node-rank k")
    each, nodes = _per_node(tp * pp, dp, node)
    if spec.moe and dp > 1 and nodes > 1:
        argv += ["--data-parallel-size", str(dp), "--data-parallel-size-local", str(each),
                 "--data-parallel-address", HEAD, "--data-parallel-rpc-port",
                 str(VLLM_DP_RPC_PORT)]
        return Launch("vllm", tuple(argv), f"on node 0 of {nodes}; on node k add --headless "
                      f"--data-parallel-start-rank k·{each}")
    if (each > 1 or (spec.moe and dp > 1)) and "--data-parallel-size" not in known \
            and not spec.moe:
        return Launch("vllm", tuple(argv), f"{dp} launches ({each} per node), each on its own "
                      "GPUs (CUDA_VISIBLE_DEVICES) and --port: this release has no "
                      "--data-parallel-size")
    if each > 1 or (spec.moe and dp > 1):
        argv += ["--data-parallel-size", str(each)]
    return Launch("vllm", tuple(argv), f"on each of {nodes} nodes" if nodes > 1 else
                  "on one node")


def sglang(spec: Spec, tp: int, pp: int, dp: int, ep: bool, attn_dp: int, node: int | None,
           version: str | None = None) -> Launch:
    out = _sglang(spec, tp, pp, dp, ep, attn_dp, node, version)
    return (_missing("sglang", version, list(out.argv)) or out) if out.argv else out


def _sglang(spec: Spec, tp: int, pp: int, dp: int, ep: bool, attn_dp: int, node: int | None,
            version: str | None) -> Launch:
    known = _known("sglang", version)
    serve = ["sglang", "serve"] if version is None or _at_least(version, (0, 5, 10)) else \
        ["python", "-m", "sglang.launch_server"]
    argv = [*serve, "--model-path", spec.model, "--tp-size", str(tp)]
    if pp > 1:
        argv += ["--pp-size", str(pp)]
    if ep:
        argv += ["--ep-size", str(tp)]
    if attn_dp > 1:
        argv += (["--attn-dp-size", str(attn_dp)] if "--attn-dp-size" in known
                 else ["--enable-dp-attention", "--dp-size", str(attn_dp)])
    argv += _limits("sglang", spec)
    if node is not None and tp * pp > node:
        nodes = -(-tp * pp // node)
        argv += ["--nnodes", str(nodes), "--node-rank", "0",
                 "--dist-init-addr", f"{HEAD}:{SGLANG_PORT}"]
        rep = f"one per replica, {dp} replicas: " if dp > 1 else ""
        return Launch("sglang", tuple(argv), f"{rep}on node 0 of {nodes}; on node k "
                      "--node-rank k")
    each, nodes = _per_node(tp * pp, dp, node)
    if each > 1 and attn_dp == 1:
        argv += ["--dp-size", str(each)]
    elif each > 1:
        return Launch("sglang", tuple(argv), f"{dp} launches ({each} per node, each on its own "
                      "GPUs and port): replicas and attention DP do not combine")
    return Launch("sglang", tuple(argv), f"on each of {nodes} nodes" if nodes > 1 else
                  "on one node")


def _at_least(version: str, floor: tuple[int, ...]) -> bool:
    from tpcheck.engines.flags import version_key

    return version_key(version) >= floor


def _limits(engine: str, spec: Spec) -> list[str]:
    """The context and the limits the figures assume, in the engine's option names."""
    sgl = engine == "sglang"
    out: list[str] = []
    if spec.context:
        out += ["--context-length" if sgl else "--max-model-len", str(spec.context)]
    if spec.max_num_seqs:
        out += ["--max-running-requests" if sgl else "--max-num-seqs", str(spec.max_num_seqs)]
    if spec.utilization is not None:
        out += ["--mem-fraction-static" if sgl else "--gpu-memory-utilization",
                f"{spec.utilization:g}"]
    kvd = _kv_dtype(engine, spec.kv_cache_dtype)
    if kvd:
        out += ["--kv-cache-dtype", kvd]
    if spec.quantization:
        out += ["--quantization", spec.quantization]
    return out
