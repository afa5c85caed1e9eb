"""The one pass over a parsed file: which calls launch an engine, and Modal's GPU decorators."""

from __future__ import annotations

from tpcheck.sources.python_literals import fstring_text

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

VLLM_CALLS = frozenset({"LLM", "EngineArgs", "AsyncEngineArgs", "AsyncLLMEngine", "LLMEngine"})
SUBPROCESS = frozenset({"run", "Popen", "call", "check_call", "check_output", "execvp", "execv"})


def launch_kind(node: Any) -> str | None:
    """Which launch a call could be: "vllm" (``LLM(...)``, ``EngineArgs(...)``), "sglang"
    (``sgl.Engine(...)``), "subprocess" (``subprocess.run([...])``), else None."""
    import libcst as cst

    fn = node.func
    name = fn.value if isinstance(fn, cst.Name) else (
        fn.attr.value if isinstance(fn, cst.Attribute) else ""
    )
    owner = fn.value.value if isinstance(fn, cst.Attribute) and isinstance(
        fn.value, cst.Name) else ""
    if name in VLLM_CALLS:
        return "vllm"
    if name == "Engine" and owner in ("sgl", "sglang", ""):
        return "sglang"
    if name in SUBPROCESS and node.args:
        return "subprocess"
    return None


def scan_visitor() -> Any:
    """One pass over the file (libcst's visits cost as much as its parse): the launch calls,
    the argparse options and the name bindings, each with its top-level statement."""
    import libcst as cst

    class Scan(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.top: Any = None
            self.calls: list[tuple[Any, Any]] = []  # (call, top-level statement)
            self.options: list[tuple[Any, Any]] = []  # (add_argument call, top)
            self.binds: list[tuple[str, Any, Any]] = []  # (name, value, top)

        def visit_Call(self, node: cst.Call) -> None:
            fn = node.func
            if isinstance(fn, cst.Attribute) and fn.attr.value == "add_argument":
                self.options.append((node, self.top))
            if launch_kind(node) is not None:
                self.calls.append((node, self.top))

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    self.binds.append((t.target.value, node.value, self.top))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if isinstance(node.target, cst.Name):
                self.binds.append((node.target.value, node.value, self.top))

    return Scan()


def modal_gpus(module: Any, consts: dict[str, Any]) -> dict[int, tuple[int, str | None, Any]]:
    """id(top-level def or class) → (GPU count, product, the ``gpu=`` node) from a Modal
    ``@app.function(gpu="H100:8")`` / ``@app.cls(gpu=f"H100:{N_GPU}")`` decorator; a bare
    ``"H100"`` is one GPU. A list of choices or any other expression gives nothing."""
    import libcst as cst

    out: dict[int, tuple[int, str | None, Any]] = {}
    for top in module.body:
        if not isinstance(top, (cst.FunctionDef, cst.ClassDef)):
            continue
        for dec in top.decorators:
            call = dec.decorator
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value in ("function", "cls")):
                continue
            for arg in call.args:
                if arg.keyword is None or arg.keyword.value != "gpu":
                    continue
                text = fstring_text(arg.value, consts)
                if text is None:
                    continue
                name, colon, cnt = text.rpartition(":")
                if not colon:
                    name, cnt = text, "1"
                if name and cnt.isdigit() and int(cnt) >= 1:
                    out[id(top)] = (int(cnt), name, arg.value)
    return out


__all__ = ["SUBPROCESS", "VLLM_CALLS", "launch_kind", "modal_gpus", "scan_visitor"]
