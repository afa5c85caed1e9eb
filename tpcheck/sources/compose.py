"""docker-compose files: ``services.*`` with ``entrypoint``/``command`` and ``deploy`` GPUs.

A service is a container to the walker in ``kube``; this module only tells compose files apart,
because compose splits a ``command:`` string into words itself and interpolates
``${VAR:-default}`` from the host, not from ``environment:``.
"""

from __future__ import annotations

from typing import Any

import yaml


def is_compose(root: Any) -> bool:
    if not isinstance(root, yaml.MappingNode):
        return False
    for k, v in root.value:
        if isinstance(k, yaml.ScalarNode) and k.value == "services":
            return isinstance(v, yaml.MappingNode)
    return False
