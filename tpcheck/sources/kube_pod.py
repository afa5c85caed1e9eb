"""What the objects enclosing a container say of its pod: GPUs, node, group size, annotations."""

from __future__ import annotations

from tpcheck.jsonlib import json
from tpcheck.sources.base import Deployment, ModelHint, Span
from tpcheck.sources.kube_env import int_or_none
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.yamlctx import Ctx
from tpcheck.sources.yamlnodes import PRODUCT_LABELS, mget, mpath, product_in_terms

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any



GPU_KEYS = ("nvidia.com/gpu", "amd.com/gpu")
# NIC resources a pod can request (AWS EFA, the RDMA device plugins, NVIDIA's network operator)
GKE_INTERFACES = "networking.gke.io/interfaces"
GKE_DEFAULT_INTERFACE = "networking.gke.io/default-interface"
NET_RESOURCE = (r"vpc\.amazonaws\.com/efa|rdma/.+|nvidia\.com/(?:rdma|mlnx|hostdev|"
                r"sriov).*")  # matched at the start: is_net_resource, held to it by the tests
_NET_PREFIXES = ("vpc.amazonaws.com/efa", "nvidia.com/rdma", "nvidia.com/mlnx",
                 "nvidia.com/hostdev", "nvidia.com/sriov")


def is_net_resource(name: str) -> bool:
    """``re.match(NET_RESOURCE, name)`` with str methods (a resource key is asked for each
    limit of each container; the pattern's compile was ~0.8 million instructions of a lint)."""
    return name.startswith(_NET_PREFIXES) or (name.startswith("rdma/") and name[5:6] not in
                                               ("", "\n"))


# Suppression that survives `helm template` and Kustomize (they drop comments):
# metadata.annotations["tpcheck.dev/ignore"] = "TP201,TP203" (optionally ": reason").
IGNORE_ANNOTATION = "tpcheck.dev/ignore"
PD_ROLE_LABEL = "llm-d.ai/role"  # llm-d's prefill/decode pods (its guides' manifests)


# Every key of an enclosing object that a ``context`` reader looks at (its guard or its value):
# a reader added there must add its keys here.
CONTEXT_KEYS = frozenset({
    "resources", "nodeSelector", "affinity", "workerGroupSpecs", "headGroupSpec", "metadata",
    "subComponentType", "leaderWorkerTemplate", "multinode", "podGroupSize", "workloadTemplate",
    "leader", "worker",
})
_SCALAR = yaml.ScalarNode

MODEL_LABEL = "ai.gke.io/model"  # GKE AI/ML samples: the model a pod template serves


def _product(node: Any) -> Any:
    sel = mget(node, "nodeSelector")
    if isinstance(sel, yaml.MappingNode):
        for label in PRODUCT_LABELS:
            v = mget(sel, label)
            if isinstance(v, yaml.ScalarNode):
                return v
    return product_in_terms(mpath(
        node, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    ))


class PodFacts:
    """The walker's readers of a container's enclosing objects (mixed into ``kube.Walker``)."""

    ctx: Ctx

    def _model_label(self, anc: tuple[Any, ...]) -> ModelHint | None:
        """The pod template's ``ai.gke.io/model`` label (GKE's samples name the model they
        serve there: ``gemma-3-27b-it``): a name the resolver matches exactly against the
        catalog's names, as it does a folder's, for a model given as a path or expression."""
        for a in reversed(anc):
            labels = mpath(a, "metadata", "labels") if isinstance(a, yaml.MappingNode) else None
            value = mget(labels, MODEL_LABEL) if isinstance(labels, yaml.MappingNode) else None
            if isinstance(value, yaml.ScalarNode) and isinstance(value.value, str) and (
                    value.value.strip()):
                name = value.value.strip()
                return ModelHint(name, f"label {MODEL_LABEL} `{name}` "
                                       f"(line {self.ctx.span(value).line})")
        return None

    def context(
        self, m: Any, keys: dict[str, Any], anc: tuple[Any, ...]
    ) -> tuple[dict[str, Any], dict[str, Span], list[str]]:
        """GPU count, product and group size that apply to a container: its own resources
        first, then each enclosing object's, nearest first, one reader per kind of object."""
        extra: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        notes: list[str] = []
        self._container_gpus(keys, extra, spans)
        readers = (self._dynamo_gpus, self._node_product, self._ray_cluster,
                   self._ignore_annotation, self._group_size, self._ome_group_size,
                   self._pd_role, self._gke_networks)
        for a in reversed(anc):
            if not isinstance(a, yaml.MappingNode):
                continue
            # one pass over the ancestor's keys, not one per lookup; only the keys some
            # reader asks about (first of duplicates wins, as in ``mget``): an ancestor with
            # none of them (a Deployment's spec, most pod specs) calls no reader
            ks = {k.value: v for k, v in reversed(a.value)
                  if type(k) is _SCALAR and k.value in CONTEXT_KEYS}
            if ks:
                for read in readers:
                    read(a, ks, extra, spans)
        return extra, spans, notes

    def _container_gpus(
        self, keys: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """Kubernetes resources.limits/requests, else compose's reserved devices."""
        ctx = self.ctx
        res = keys.get("resources")
        for where in ("limits", "requests"):
            sect = mget(res, where)
            for gk in GPU_KEYS:
                v = mget(sect, gk)
                if isinstance(v, yaml.ScalarNode) and "gpus_requested" not in extra:
                    n = int_or_none(v.value)
                    if n is not None:
                        extra["gpus_requested"] = n
                        spans["gpus_requested"] = ctx.span(v)
            if isinstance(sect, yaml.MappingNode) and "network_resource" not in extra:
                for kn, vn in sect.value:
                    name = str(getattr(kn, "value", ""))
                    if is_net_resource(name) and isinstance(vn, yaml.ScalarNode):
                        extra["network_resource"] = f"{name}={vn.value}"
                        spans["network_resource"] = ctx.span(kn)
                        break
        devices = mpath(res, "reservations", "devices") or mpath(
            mget(keys.get("deploy"), "resources"), "reservations", "devices"
        )
        if isinstance(devices, yaml.SequenceNode) and "gpus_requested" not in extra:
            for dev in devices.value:
                cnt, ids = mget(dev, "count"), mget(dev, "device_ids")
                if isinstance(cnt, yaml.ScalarNode) and int_or_none(cnt.value) is not None:
                    extra["gpus_requested"] = int_or_none(cnt.value)
                    spans["gpus_requested"] = ctx.span(cnt)
                elif isinstance(ids, yaml.SequenceNode):
                    extra["gpus_requested"] = len(ids.value)
                    spans["gpus_requested"] = ctx.span(ids)

    def _dynamo_gpus(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """Dynamo: resources.limits.gpu on the service."""
        if "gpus_requested" in extra or "resources" not in ks:
            return
        res_a = ks["resources"]
        g = mpath(res_a, "limits", "gpu") or mpath(res_a, "requests", "gpu")
        if isinstance(g, yaml.ScalarNode) and int_or_none(g.value) is not None:
            extra["gpus_requested"] = int_or_none(g.value)
            spans["gpus_requested"] = self.ctx.span(g)

    def _node_product(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """The GPU product a pod's nodeSelector or affinity asks for."""
        if "gpu_product" in extra or ("nodeSelector" not in ks and "affinity" not in ks):
            return
        prod = _product(a)
        if prod is not None:
            extra["gpu_product"] = prod.value
            spans["gpu_product"] = self.ctx.span(prod)

    def _ray_cluster(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """KubeRay: a RayCluster's worker or head group."""
        if "ray_cluster" not in extra and ("workerGroupSpecs" in ks or "headGroupSpec" in ks):
            extra["ray_cluster"] = True

    def _ignore_annotation(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """The tpcheck ignore annotation on the object's metadata."""
        if "ignores" in extra or "metadata" not in ks:
            return
        ign = mget(mget(ks["metadata"], "annotations"), IGNORE_ANNOTATION)
        if isinstance(ign, yaml.ScalarNode):
            codes = ign.value.split(":", 1)[0]  # "TP201,TP203: reason"
            extra["ignores"] = {ign.start_mark.line + 1: frozenset(
                c.strip().upper() for c in codes.split(",") if c.strip())}
            spans["ignores"] = self.ctx.span(ign)

    def _gke_networks(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """GKE multi-networking: the pod's ``networking.gke.io/interfaces`` annotation (a JSON
        list of {interfaceName, network}); every interface but the default one is a GPU NIC
        (GKE docs, "Set up multi-network support for Pods"; A3 Mega's eth1–eth8)."""
        if "network_resource" in extra or "metadata" not in ks:
            return
        ann = mget(ks["metadata"], "annotations")
        node = mget(ann, GKE_INTERFACES)
        if not isinstance(node, yaml.ScalarNode):
            return
        try:
            items = json.loads(node.value)
        except ValueError:
            return
        if not isinstance(items, list):
            return
        dflt = mget(ann, GKE_DEFAULT_INTERFACE)
        main = dflt.value if isinstance(dflt, yaml.ScalarNode) else "eth0"
        nets = [str(i.get("network", "")) for i in items
                if isinstance(i, dict) and i.get("interfaceName") != main]
        if nets:
            rdma = ":rdma" if any("rdma" in x.lower() for x in nets) else ""
            extra["network_resource"] = f"{GKE_INTERFACES}={len(nets)}{rdma}"
            spans["network_resource"] = self.ctx.span(node)

    def _pd_role(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """A disaggregated server's side from its labels: llm-d's ``llm-d.ai/role`` (pod
        template or object metadata), Dynamo's ``subComponentType`` on the service."""
        if "pd_role" in extra:
            return
        node = ks.get("subComponentType")
        if node is None and "metadata" in ks:
            node = mget(mget(ks["metadata"], "labels"), PD_ROLE_LABEL)
        if isinstance(node, yaml.ScalarNode) and node.value in ("prefill", "decode"):
            extra["pd_role"] = node.value
            spans["pd_role"] = self.ctx.span(node)

    def _group_size(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """Pods per replica: LWS, Dynamo multinode, podGroupSize, llmaz's workloadTemplate."""
        if "group_size" in extra or not (
            "leaderWorkerTemplate" in ks or "multinode" in ks or "podGroupSize" in ks
            or "workloadTemplate" in ks
        ):
            return
        size = mpath(a, "leaderWorkerTemplate", "size")
        if size is None:
            size = mpath(a, "multinode", "nodeCount")
        if size is None:
            size = mget(a, "podGroupSize")
        if size is None:  # llmaz Service: an LWS template under another name
            size = mpath(a, "workloadTemplate", "size")
        if isinstance(size, yaml.ScalarNode) and int_or_none(size.value) is not None:
            extra["group_size"] = int_or_none(size.value)
            spans["group_size"] = self.ctx.span(size)

    def _ome_group_size(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """OME engine/decoder (and its runtimes' engineConfig): a leader pod and worker.size
        worker pods per replica (OME docs, concepts/omenative/instances)."""
        if "group_size" in extra or "leader" not in ks or "worker" not in ks:
            return
        size = mget(ks["worker"], "size")
        if isinstance(size, yaml.ScalarNode) and int_or_none(size.value) is not None:
            extra["group_size"] = 1 + (int_or_none(size.value) or 0)
            spans["group_size"] = self.ctx.span(size)

    def model_hints(
        self, d: Deployment, anc: tuple[Any, ...], first: ModelHint | None = None
    ) -> Deployment:
        """Where else the document names the model, for a ``--model`` that is an expression or
        a path: ``first`` (KServe's ``storageUri``), then an llm-d-benchmark scenario's
        ``model.huggingfaceId`` (its launch reads ``/model-cache/$MODEL_PATH``, a variable the
        harness fills from that block at run time)."""
        if d.model is not None and not d.model.startswith("/"):
            return d  # a hub id as written: nothing to hint
        found = [first] if first is not None else []
        for a in reversed(anc):
            if not isinstance(a, yaml.MappingNode):
                continue
            hub = mpath(a, "model", "huggingfaceId") or mpath(a, "common", "model",
                                                               "huggingfaceId")
            if isinstance(hub, yaml.ScalarNode) and isinstance(hub.value, str) and hub.value:
                found.append(ModelHint(hub.value, f"model.huggingfaceId `{hub.value}` "
                                                  f"(line {self.ctx.span(hub).line})"))
                break
        label = self._model_label(anc)
        if label is not None:
            found.append(label)
        if not found:
            return d
        from tpcheck.record import replace

        return replace(d, model_hints=(*d.model_hints, *found))

    def apply_parallelism(self, d: Deployment, anc: tuple[Any, ...]) -> Deployment:
        """KServe ``parallelism: {tensor, pipeline, data, expert}`` for fields flags left unset."""
        par = None
        for a in reversed(anc):
            par = mget(a, "parallelism")
            if isinstance(par, yaml.MappingNode):
                break
            par = None
        if par is None:
            return d
        from tpcheck.record import replace

        fields = {"tensor": "tensor_parallel_size", "pipeline": "pipeline_parallel_size",
                  "data": "data_parallel_size"}
        kw: dict[str, Any] = {}
        spans = dict(d.spans)
        for key, name in fields.items():
            v = mget(par, key)
            if isinstance(v, yaml.ScalarNode) and getattr(d, name) is None and (
                name not in d.unresolved
            ):
                n = int_or_none(v.value)
                if n is not None:
                    kw[name] = n
                    spans[name] = self.ctx.span(v)
        ex = mget(par, "expert")
        if isinstance(ex, yaml.ScalarNode) and d.enable_expert_parallel is None:
            kw["enable_expert_parallel"] = ex.value.lower() in ("true", "1", "yes")
            spans["enable_expert_parallel"] = self.ctx.span(ex)
        return replace(d, spans=spans, **kw) if kw else d
