"""run: a shell command in the workspace, with a timeout, bounded output and no leftovers.

Staging only checks and records the command; it runs when the proposal is
committed (after approval), under ``runtime.process.run_command``: the whole
process tree ends with the command, whether it exits, times out or is
interrupted, and its output is read into a bounded buffer (head and tail of
``Settings.run_capture_bytes``), decoded with replacement, stripped of
terminal codes, and cut to ``Settings.run_output_chars`` keeping head and tail.

A command cannot leave a service running (``server &`` ends with the command,
as do ``nohup``, ``setsid`` and daemons): start long-running services outside
the agent, in a terminal or a notebook cell. Commands see the kernel's
environment without its secrets (``runtime.secrets.command_environment``),
except those named in ``Settings.run_pass_env``.

``execute`` never raises: a bad command, a deleted workspace or a failure to
start is an ``Observation`` carrying a ``ToolError``.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterable

from pydantic import Field

from grinta_jupyter.runtime.errors import (
    COMMAND_FAILED,
    COMMAND_TIMEOUT,
    INTERNAL_ERROR,
    INVALID_ARGS,
    WORKSPACE_MISSING,
    ToolError,
    ToolFailure,
    os_error,
)
from grinta_jupyter.runtime.process import MAX_COMMAND_BYTES, OutputBuffer, run_command
from grinta_jupyter.runtime.proposal import CommandProposal, Observation
from grinta_jupyter.runtime.secrets import before_cut, command_environment, cut_end, cut_start
from grinta_jupyter.runtime.workspace import Workspace
from grinta_jupyter.tools.base import Args, CommandResult, Settings, ToolContext, ToolSpec


class RunArgs(Args):
    command: str
    timeout: float | None = Field(default=None, gt=0, description="Seconds (default 120).")


def stage(args: RunArgs, ctx: ToolContext) -> CommandResult:
    problem = check_command(args.command, ctx.settings)
    if problem is not None:
        raise ToolFailure(problem)
    timeout = min(args.timeout or ctx.settings.run_timeout, ctx.settings.run_max_timeout)
    return CommandResult(args.command, timeout, f"run: {args.command}")


_LONG = "write the script to a file and run that file"


def check_command(command: str, settings: Settings) -> ToolError | None:
    """Why ``command`` cannot run (an INVALID_ARGS error), or None."""
    if not command.strip():
        return ToolError(INVALID_ARGS, "command is empty")
    if "\x00" in command:
        return ToolError(INVALID_ARGS, "command contains a NUL byte, which no shell command can")
    limit = settings.run_max_command_chars
    if len(command) > limit:
        return ToolError(
            INVALID_ARGS,
            f"command is {len(command)} characters, over the limit of {limit}; {_LONG}",
        )
    try:
        size = len(command.encode("utf-8"))
    except UnicodeEncodeError:
        return ToolError(INVALID_ARGS, "command is not valid text (it holds a lone surrogate)")
    if size > MAX_COMMAND_BYTES:
        return ToolError(
            INVALID_ARGS,
            f"command is {size} bytes in UTF-8, over the limit of {MAX_COMMAND_BYTES}; {_LONG}",
        )
    return None


def execute(
    proposal: CommandProposal,
    workspace: Workspace,
    settings: Settings,
    cancel: threading.Event | None = None,
) -> Observation:
    """Run the committed command. Never raises: every failure is an Observation with an error.

    ``cancel``, once set, ends the command and every process it started."""
    try:
        return _execute(proposal, workspace, settings, cancel)
    except Exception as exc:  # a bug of ours must not end the session
        error = ToolError(INTERNAL_ERROR, f"run failed unexpectedly: {exc!r}")
        return Observation.failure(error, proposal.id)


def _execute(
    proposal: CommandProposal,
    workspace: Workspace,
    settings: Settings,
    cancel: threading.Event | None,
) -> Observation:
    command = proposal.command or ""
    problem = check_command(command, settings)
    if problem is not None:
        return Observation.failure(problem, proposal.id)
    timeout = proposal.timeout or settings.run_timeout
    if not timeout > 0:  # a hand-made proposal: NaN or negative
        timeout = settings.run_timeout
    timeout = min(timeout, settings.run_max_timeout)
    missing = ToolError(WORKSPACE_MISSING, f"the workspace folder {workspace.root} is gone")
    if not workspace.root.is_dir():
        return Observation.failure(missing, proposal.id)
    try:
        result = run_command(
            command,
            workspace.root,
            command_env(settings.run_pass_env),
            timeout,
            settings.run_capture_bytes,
            cancel=cancel,
        )
    except OSError as exc:
        if not workspace.root.is_dir():  # deleted between the check and the start
            return Observation.failure(missing, proposal.id)
        return Observation.failure(os_error(exc, "starting the command"), proposal.id)
    output = render_output(result.output, settings.run_output_chars)
    if result.timed_out:
        message = (
            f"command timed out after {timeout:g}s and was killed, with every process it started"
        )
        error = ToolError(COMMAND_TIMEOUT, message)
        return Observation(False, f"{error.render()}\n{output}".rstrip(), error, proposal.id)
    if result.exit_code is None:  # cancelled, or its supervisor was killed
        stop = "it was told to stop (SIGTERM) before it finished"
        why = stop if result.cancelled else result.problem or stop
        if result.detail and not result.cancelled:
            why += f": {_detail(result.detail)}"
        error = ToolError(COMMAND_FAILED, f"the command did not finish: {why}")
        return Observation(False, f"{error.render()}\n{output}".rstrip(), error, proposal.id)
    head = f"exit code {result.exit_code} ({result.elapsed:.1f}s)"
    if result.stopped:
        head += (
            f"; {result.stopped} background process(es) still running at the end were killed"
            " (processes never outlive their command)"
        )
    if result.left:
        head += f"; {result.left} process(es) could not be killed"
    text = f"{head}\n{output}".rstrip()
    return Observation(True, text, None, proposal.id, exit_code=result.exit_code)


_DETAIL_CHARS = 1_000


def _detail(text: str) -> str:
    """The last of what a killed supervisor's status pipe held, as the model may read it:
    the command can write there (``/proc/$PPID/fd/2``), so it is stripped of terminal codes
    and cut like any output, keeping no piece of a secret the cut goes through."""
    text = before_cut(strip_ansi(text))
    return cut_start(text[-_DETAIL_CHARS:]) if len(text) > _DETAIL_CHARS else text


def command_env(pass_env: Iterable[str] = ()) -> dict[str, str]:
    """The environment for commands: ours without secrets (bar ``pass_env``), this
    interpreter's folder first on PATH.

    In a kernel started from a virtual environment that was never activated,
    ``python`` and ``pytest`` would otherwise resolve to another interpreter.
    """
    env = command_environment(os.environ, pass_env)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


# CSI (colours, cursor moves); OSC (titles, links) ended by BEL or ST; DCS, SOS, PM and APC
# strings ended by ST; every other escape, intermediates and a final byte (``ESC ( 0`` a
# character set, ``ESC 7`` and ``ESC 8`` saving and restoring the cursor, ``ESC c`` a reset);
# last an ESC that starts none of these. Then the same controls in their one-character (C1)
# forms, U+0080 to U+009F, which terminals also obey (``\x9b2J`` clears the screen); the
# rest of C1 alone. No body may span its own introducer, so a failed match never rescans
# text another attempt of its kind covers: linear time on any input.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[PX^_][^\x1b]*\x1b\\"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x9d[^\x07\x1b\x80-\x9f]*(?:\x07|\x1b\\|\x9c)"
    r"|[\x90\x98\x9e\x9f][^\x1b\x80-\x9f]*(?:\x1b\\|\x9c)"
    r"|[\x80-\x9f]"
)


def strip_ansi(text: str) -> str:
    """Drop terminal colour and cursor codes (kernels set FORCE_COLOR; the model needs none of it)."""
    return _ANSI.sub("", text)


def render_output(buffer: OutputBuffer, limit: int) -> str:
    """What the model reads of a command's output: decoded (bad UTF-8 replaced), without
    terminal codes, at most ``limit`` characters keeping head and tail."""
    if not buffer.omitted:
        return bound_output(_clean(buffer.head + buffer.tail), limit)
    # The head and tail were cut from the output as it came: neither keeps a piece of a
    # secret the cut went through (runtime/secrets.cut_end, cut_start).
    head = cut_end(before_cut(_clean(_whole_end(buffer.head)))[: limit // 3])
    tail = before_cut(_clean(_whole_start(buffer.tail)))
    tail = cut_start(tail[max(len(tail) - (limit - len(head)), 0) :])
    return f"{head}\n[... middle omitted: the command printed {buffer.total} bytes ...]\n{tail}"


# The cuts of the head and tail fall on bytes, maybe inside a character. Decoded as it is, its
# piece would be a replacement character at the edge, which no secret holds: the edge checks
# (cut_end, cut_start) would then find nothing there, and the accented letters of a password
# cut through would keep all the rest of it. So the piece is dropped before decoding.
def _whole_end(raw: bytes) -> bytes:
    """``raw`` without the start of a UTF-8 character its last bytes leave unfinished."""
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if byte < 0x80:
            return raw
        if byte >= 0xC0:  # a lead byte: is its character whole?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return raw if back >= need else raw[:-back]
    return raw


def _whole_start(raw: bytes) -> bytes:
    """``raw`` without the continuation bytes (at most three) of a character cut before it."""
    skip = 0
    while skip < min(3, len(raw)) and 0x80 <= raw[skip] < 0xC0:
        skip += 1
    return raw[skip:]


def _clean(raw: bytes) -> str:
    return strip_ansi(raw.decode("utf-8", errors="replace"))


def bound_output(text: str, limit: int) -> str:
    """Keep the head and the tail (where test summaries are), drop the middle."""
    if len(text) <= limit:
        return text
    text = before_cut(text)  # a cut through a secret must keep no piece of it
    if len(text) <= limit:
        return text
    head = text[: limit // 3]
    tail = text[len(text) - (limit - len(head)) :]  # not text[-0:] when the limit is tiny
    dropped = len(text) - len(head) - len(tail)
    return f"{head}\n[... {dropped} characters omitted ...]\n{tail}"


SPEC = ToolSpec(
    name="run",
    kind="command",
    description="Run a shell command (tests, linters) in the workspace root.",
    args=RunArgs,
    stage=stage,
    execute=execute,
)
