"""The user's namespace in an IPython kernel, for the kernel tools (tools/kernel.py).

``IPythonNamespace(shell)`` answers the ``Namespace`` protocol from the
shell's ``user_ns`` (the dictionary the notebook's cells run in) and hides
what IPython put there itself (``user_ns_hidden``: ``In``, ``Out``,
``get_ipython``, ``exit``, ``quit``, ...). ``current_namespace()`` is the
running kernel's, or None outside one; IPython is imported only then.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

__all__ = ["IPythonNamespace", "current_namespace"]

# Always hidden, whether or not the shell lists them in user_ns_hidden.
_SHELL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit"})


class IPythonNamespace:
    """An IPython shell's user namespace."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def namespace(self) -> dict[str, Any]:
        user_ns: dict[str, Any] = self.shell.user_ns
        return user_ns

    def hidden(self) -> Set[str]:
        hidden = getattr(self.shell, "user_ns_hidden", None) or {}
        return _SHELL_NAMES | frozenset(hidden)


def current_namespace() -> IPythonNamespace | None:
    """The namespace of the kernel this code runs in; None outside a kernel (a terminal IPython
    has no kernel the tools could belong to)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    return IPythonNamespace(shell)
