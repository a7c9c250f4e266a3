"""The kernel toolset: the intent tools plus ``inspect`` and ``execute`` on the user's variables.

Offered only when a session runs inside a kernel. The two tools are bound,
by closure, to a ``Namespace``: the live dictionary of the user's variables
and the names the kernel itself put there (hidden from listings). The
IPython-backed one is ``grinta_jupyter.jupyter.kernel.IPythonNamespace``;
``DictNamespace`` wraps a plain dictionary (scripts and tests). This layer
never imports IPython.

- ``inspect`` is a read: it looks at values through their types and their
  own attributes and never calls the user's code (tools/inspect.py; values
  are described by tools/values.py and tools/frames.py).
- ``execute`` is a command: staging checks the code's syntax, nothing runs
  before approval, then the code runs in a worker thread with a time limit
  and the session's Stop (tools/execute.py).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any, Protocol

from grinta_jupyter.tools.base import Toolset

__all__ = ["DictNamespace", "Namespace", "kernel_toolset"]


class Namespace(Protocol):
    """The user's variables, as the kernel holds them."""

    def namespace(self) -> dict[str, Any]:
        """The live dictionary code runs in (``execute`` adds to it; ``inspect`` only reads)."""
        ...

    def hidden(self) -> Set[str]:
        """Names the kernel defined itself, left out of ``inspect``'s listing."""
        ...


@dataclass
class DictNamespace:
    """A plain dictionary as the user's namespace (scripts, tests)."""

    values: dict[str, Any] = field(default_factory=dict)
    hidden_names: frozenset[str] = frozenset()

    def namespace(self) -> dict[str, Any]:
        return self.values

    def hidden(self) -> Set[str]:
        return self.hidden_names


def kernel_toolset(namespace: Namespace) -> Toolset:
    """The intent toolset plus ``inspect`` and ``execute`` bound to ``namespace``."""
    from grinta_jupyter.tools import execute, inspect, intent_toolset

    tools = intent_toolset().tools
    finish = tools.pop("finish")  # finish stays last, as in every toolset
    specs = [*tools.values(), inspect.spec(namespace), execute.spec(namespace), finish]
    return Toolset.of("kernel", specs)
