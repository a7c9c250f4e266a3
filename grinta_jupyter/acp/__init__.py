"""``grinta acp``: grinta as an Agent Client Protocol agent over stdio (docs/acp.md).

``main(argv)`` runs the agent until the client closes its end. It is a front
end like ``jupyter/`` and the CLI: it imports ``agent/`` and below, nothing
imports it, and the ACP SDK (``pip install 'grinta-jupyter[acp]'``) is
imported only inside this package, when the agent starts.

Standard output carries the protocol and nothing else: before anything else
runs, file descriptor 1 is duplicated for the protocol and then pointed at
standard error, so a stray ``print`` (ours, a library's, a C extension's)
lands in the client's log instead of corrupting a JSON-RPC message.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Sequence
from typing import IO

USAGE = """\
usage: grinta acp

Runs grinta as an ACP (Agent Client Protocol) agent on standard input and
output, for an editor or chat that speaks ACP (Zed, Jupyter AI, ...). The
client starts it; the workspace is the folder the client names.

The model comes from the environment the client starts it with:
  GRINTA_MODEL     a litellm model string (none: the scripted demo model)
  GRINTA_API_BASE  a local or proxy server for the model (optional)
  GRINTA_API_KEY   its key (or the provider's own variable, e.g. OPENAI_API_KEY)
Budgets (GRINTA_MAX_STEPS, ...) as for grinta run. Whether steps ask first is
the session's mode, chosen in the client ("Ask before changes" by default).

See docs/acp.md.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ACP agent on stdio; the exit status (0 when the client closed the connection)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    if args:
        print(  # one line, as every command's mistakes are
            f"grinta: error: grinta acp takes no arguments, got {args[0]!r} "
            "(see grinta acp --help)",
            file=sys.stderr,
        )
        return 2
    problem = _stdio_problem()
    if problem:
        print(
            f"grinta acp: {problem}, not a pipe from an ACP client; an editor such as Zed "
            "starts `grinta acp` and talks to it through pipes",
            file=sys.stderr,
        )
        return 2
    # The first prompt's token counts go to the counting helper, which loads the encoding on
    # the other processor while the agent imports (runtime/counting.py): as `grinta run`.
    from grinta_jupyter.runtime import counting

    counting.start()
    from grinta_jupyter.config import Config, ConfigError

    try:
        config = Config.from_env(os.environ)
    except ConfigError as exc:
        print(f"grinta acp: {exc}", file=sys.stderr)
        return 2
    try:
        from grinta_jupyter.acp.agent import NotAPipe, serve
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith("acp"):
            raise
        print(
            "grinta acp: the Agent Client Protocol SDK is not installed: "
            "pip install 'grinta-jupyter[acp]'",
            file=sys.stderr,
        )
        return 2
    protocol_out = _claim_stdout()
    try:
        asyncio.run(serve(config, protocol_out))
    except KeyboardInterrupt:
        return 130
    except NotAPipe as exc:
        print(f"grinta acp: {exc}", file=sys.stderr)
        return 2
    finally:
        protocol_out.close()  # the transport closed it, unless serve never opened one
    _end_without_litellm()
    return 0


def _end_without_litellm() -> None:
    """End the process now if all that keeps it is litellm's background import: everything
    of the connection is closed by now (``litellm_model.end_without_import``)."""
    from grinta_jupyter.agent.models import litellm_model

    litellm_model.end_without_import(0)


def _stdio_problem() -> str | None:
    """What is wrong with standard input or output for the protocol, or None; checked here,
    so ``grinta acp`` and ``python -m grinta_jupyter.acp`` both say it.

    A closed one was a traceback. An input device other than a terminal (/dev/null)
    asyncio takes for a pipe, but its selector refuses it: a traceback, then a wait for
    input, forever. A file is left to the protocol's own check.
    """
    for fd, name in ((0, "standard input"), (1, "standard output")):
        try:
            os.fstat(fd)
        except OSError:
            return f"{name} is closed"
    if stat.S_ISCHR(os.fstat(0).st_mode) and not os.isatty(0):
        return "standard input is a device such as /dev/null"
    return None


def _claim_stdout() -> IO[str]:
    """A text file on the real stdout, for the protocol alone; fd 1 now writes to stderr."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w")
