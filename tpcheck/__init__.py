"""tpcheck: what vLLM and SGLang do with a tensor-parallel layout, before anyone books a GPU."""

__version__ = "0.1.0"
