"""run: a shell command in the workspace, with a timeout and bounded output.

Staging only records the command; it runs when the proposal is committed
(after approval). On timeout the whole process group is killed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

from pydantic import Field

from grinta_jupyter.runtime.errors import COMMAND_TIMEOUT, INVALID_ARGS, ToolError, fail
from grinta_jupyter.runtime.proposal import Observation, Proposal
from grinta_jupyter.runtime.workspace import Workspace
from grinta_jupyter.tools.base import Args, Settings, ToolContext, ToolSpec


class RunArgs(Args):
    command: str = Field(description="Shell command, run in the workspace root.")
    timeout: float | None = Field(default=None, gt=0, description="Seconds (default 120).")


def stage(args: RunArgs, ctx: ToolContext) -> str:
    if not args.command.strip():
        raise fail(INVALID_ARGS, "command is empty")
    ctx.command = args.command
    ctx.timeout = min(args.timeout or ctx.settings.run_timeout, ctx.settings.run_max_timeout)
    return f"run: {args.command}"


def execute(proposal: Proposal, workspace: Workspace, settings: Settings) -> Observation:
    assert proposal.command is not None
    timeout = proposal.timeout or settings.run_timeout
    started = time.monotonic()
    process = subprocess.Popen(
        proposal.command,
        shell=True,
        cwd=workspace.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so a timeout kills children too
        env=command_env(),
    )
    try:
        raw, _ = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raw, _ = process.communicate()
        timed_out = True
    elapsed = time.monotonic() - started
    text = strip_ansi(raw.decode("utf-8", errors="replace"))
    output = bound_output(text, settings.run_output_chars)
    if timed_out:
        error = ToolError(COMMAND_TIMEOUT, f"command timed out after {timeout:g}s and was killed")
        return Observation(False, f"{error.render()}\n{output}", error, proposal.id)
    code = process.returncode
    text = f"exit code {code} ({elapsed:.1f}s)\n{output}".rstrip()
    return Observation(True, text, None, proposal.id, exit_code=code)


def command_env() -> dict[str, str]:
    """The environment for commands: ours, with this interpreter's folder first on PATH.

    In a kernel started from a virtual environment that was never activated,
    ``python`` and ``pytest`` would otherwise resolve to another interpreter.
    """
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def strip_ansi(text: str) -> str:
    """Drop terminal colour and cursor codes (kernels set FORCE_COLOR; the model needs none of it)."""
    return _ANSI.sub("", text)


def bound_output(text: str, limit: int) -> str:
    """Keep the head and the tail (where test summaries are), drop the middle."""
    if len(text) <= limit:
        return text
    head = text[: limit // 3]
    tail = text[-(limit - len(head)) :]
    dropped = len(text) - len(head) - len(tail)
    return f"{head}\n[... {dropped} characters omitted ...]\n{tail}"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


SPEC = ToolSpec(
    name="run",
    kind="command",
    description="Run a shell command (tests, linters) in the workspace.",
    args=RunArgs,
    stage=stage,
    execute=execute,
)
