"""The user's namespace in an IPython kernel, for the kernel tools (tools/kernel.py).

``IPythonNamespace(shell)`` answers the ``Namespace`` protocol from the
shell's ``user_ns`` (the dictionary the notebook's cells run in) and hides
what IPython put there itself (``user_ns_hidden``: ``In``, ``Out``,
``get_ipython``, ``exit``, ``quit``, ...). ``current_namespace()`` is the
running kernel's, or None outside one; IPython is imported only then.

In a kernel, ``exit()`` and ``quit()`` do not raise SystemExit: they call
the shell's ``ask_exit``, which stops the kernel once the cell is done. So
that the ``execute`` tool contains them like ``sys.exit()``, an
``IPythonNamespace`` replaces ``shell.ask_exit`` (once per shell) by one that
raises SystemExit when called from code ``execute`` runs, in that thread only
(the model reads EXECUTE_FAILED; the kernel lives on), and asks the shell's
own everywhere else (a cell, another thread). A lasting replacement rather
than one made around each run: runs may overlap, and each would have to put
back what the other replaced.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Set
from typing import Any

__all__ = ["IPythonNamespace", "current_namespace"]

# Always hidden, whether or not the shell lists them in user_ns_hidden.
_SHELL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit"})


class IPythonNamespace:
    """An IPython shell's user namespace."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        if not isinstance(shell.ask_exit, _ContainedExit):
            shell.ask_exit = _ContainedExit(shell.ask_exit)
        # ipykernel makes its own input() and getpass the builtins while a cell runs: a cell
        # started while the agent's code runs would hand that code a front end to ask.
        kernel = getattr(shell, "kernel", None)
        for name in ("raw_input", "getpass"):
            found = getattr(kernel, name, None) if kernel is not None else None
            if callable(found) and not isinstance(found, _NoInputInExecutedCode):
                setattr(kernel, name, _NoInputInExecutedCode(found, name))

    def namespace(self) -> dict[str, Any]:
        user_ns: dict[str, Any] = self.shell.user_ns
        return user_ns

    def hidden(self) -> Set[str]:
        hidden = getattr(self.shell, "user_ns_hidden", None) or {}
        return _SHELL_NAMES | frozenset(hidden)


class _ContainedExit:
    """The shell's ``ask_exit`` (what ``exit()``/``quit()`` call), but SystemExit in the thread
    of code the ``execute`` tool runs, and in any thread that is not the kernel's own (the
    main thread, where cells run, or ipykernel's subshells): a thread the executed code
    started outlives it, and its ``exit()`` would end the kernel after the current cell."""

    def __init__(self, original: Callable[[], None]) -> None:
        self.original = original

    def __call__(self) -> None:
        from grinta_jupyter.tools.execute import in_executed_code

        if in_executed_code():
            raise SystemExit("exit() here ends the executed code, not the kernel")
        if not _kernel_thread():
            raise SystemExit("exit() in this thread ends the thread, not the kernel")
        self.original()


class _NoInputInExecutedCode:
    """The kernel's ``raw_input`` or ``getpass`` (what ipykernel makes ``input()`` and
    ``getpass.getpass`` while a cell runs), but stdin closed in the thread of code the
    ``execute`` tool runs, as everywhere else for that code (tools/execute.py, ``_NoInput``):
    the front end is never sent an input request for the agent's code."""

    def __init__(self, original: Callable[..., str], name: str) -> None:
        self.original = original
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        from grinta_jupyter.tools.execute import closed_getpass, closed_input, in_executed_code

        if in_executed_code():
            closed = closed_getpass if self.name == "getpass" else closed_input
            return closed(*args, **kwargs)
        return self.original(*args, **kwargs)


def _kernel_thread() -> bool:
    """Whether this thread runs the kernel's cells: the main thread, or an ipykernel thread
    (a subshell's)."""
    current = threading.current_thread()
    if current is threading.main_thread():
        return True
    module = sys.modules.get("ipykernel.thread")
    base = getattr(module, "BaseThread", None) if module is not None else None
    return isinstance(base, type) and isinstance(current, base)


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
