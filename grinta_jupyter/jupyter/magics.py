"""``%grinta`` and ``%%grinta``: start a session, and drive it cell by cell.

    %grinta [options] TASK          start a session (it runs in the background; the panel asks you)
    %%grinta [options]              the cell body is the task
    %grinta step                    advance to the next step that has something to show
    %grinta approve [N] | veto REASON | edit {json} | undo | stop | status | log | metrics
    %grinta say TEXT                tell the running session something (read at its next turn)
    %grinta continue TASK           give the ended session its next task (context carried over)
    %grinta rewind N                undo the commits after step N; go on from step N
    %grinta resume [options] [LOG]  rebuild a session from its log (default: the workspace's
                                    most recent unfinished one) after a restart or a crash
    %grinta models                  the model picker and key field for the next session

Options: --model M, --root DIR, --auto, --toolset T, --max-steps N,
--manual (no background task: advance with %grinta step).
They are ``Config`` fields (config.py): an option given wins over the
``GRINTA_*`` environment, which wins over the defaults.
Options go before or after the task; the task is its words as typed (quotes, apostrophes and
backslashes inside it are the task's, not shell syntax; one quoted word alone is unquoted).
A task that starts with a subcommand word, or holds words that look like options, is given
after ``--``: ``%grinta --auto -- fix the --manual flag`` (after options, such a word is
refused, not started as a task: ``%grinta --root proj resume`` means ``resume --root proj``).
Options are spelt out in full (``--a`` is not ``--auto``).

Loading the extension in a kernel also registers the comm target of the saved
trace's box (``jupyter/sessionlink.py``), so a finished session's card can take
its next task.

A mistake in the magic's use prints two short lines, what was wrong and
``USAGE``; a problem that is not about usage (no API key) prints its one line.
Nothing is started either way.

This module is imported when the extension loads, so it imports nothing
heavy at module level.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from IPython.core.magic import Magics, line_cell_magic, magics_class

if TYPE_CHECKING:
    from grinta_jupyter.config import Config

SUBCOMMANDS = (
    "step",
    "approve",
    "veto",
    "edit",
    "undo",
    "stop",
    "status",
    "log",
    "metrics",
    "say",
    "continue",
    "rewind",
    "resume",
    "models",
)
# Subcommands that take nothing after them (veto takes a reason, edit takes JSON).
BARE_SUBCOMMANDS = ("step", "approve", "undo", "stop", "status", "log", "metrics", "models")
USAGE = (
    "usage: %grinta [--model M] [--root DIR] [--auto] [--manual] [--toolset T] [--max-steps N] "
    "TASK | step | approve [N] | "
    "veto REASON | edit JSON | undo | stop | status | log | metrics | say TEXT | "
    "continue TASK | rewind N | resume [options] [LOG] | models"
)


class MagicUsageError(ValueError):
    """The magic could not do what it was asked; the message is the one line shown.

    ``usage`` says whether the usage line follows it (a mistake in how the magic
    was called) or not (a problem to fix elsewhere, such as a missing API key).
    ``after`` runs once the line is shown (the model picker, under a missing key).
    """

    def __init__(self, message: str, usage: bool = True, after: Callable[[], None] | None = None):
        super().__init__(message)
        self.usage = usage
        self.after = after


class Interrupted(KeyboardInterrupt):
    """The kernel's interrupt (the Stop square, Ctrl-C) ended a ``%grinta`` cell while it
    waited (a manual step on a slow model, a decision).

    Shown as one line: IPython's verbose traceback of the interrupt would read and parse the
    source file of every frame below the cell (grinta's and IPython's own, thousands of
    lines), which took 1.7-4 s on a kernel busy with the warming's imports, all of it after
    the person asked to stop. Still a ``KeyboardInterrupt``: the kernel reports the cell as
    interrupted and drops the cells queued after it, as for any other interrupt.
    """

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead
        return [f"KeyboardInterrupt: {self}"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports every mistake as a MagicUsageError (never prints, never exits).

    Options are matched whole, never abbreviated: in ``explain --a``, ``--a`` is refused as
    an unknown option, not taken for ``--auto`` (which approves everything).
    """

    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(message)


def parse_start(line: str, environ: Mapping[str, str] | None = None) -> tuple[str, Config]:
    """The task and the session's configuration: ``environ`` (default: os.environ), then the options.

    A bad option raises MagicUsageError with the usage line; a bad GRINTA_*
    value raises it without (the fix is not in this line).
    """
    task, config, _ = _parse(line, environ)
    return task, config


def _parse(line: str, environ: Mapping[str, str] | None) -> tuple[str, Config, str | None]:
    """``parse_start``, and the task's first word as typed (quotes kept); None when the task
    came after ``--`` or is empty."""
    from grinta_jupyter.config import Config, ConfigError, positive_int

    parser = _Parser(prog="%grinta", add_help=False, exit_on_error=False, allow_abbrev=False)
    # Every option is a Config field; None (not given) leaves the environment's value.
    parser.add_argument("--model")
    parser.add_argument("--root")
    parser.add_argument("--auto", action="store_true", default=None)
    parser.add_argument("--toolset")
    parser.add_argument("--max-steps", type=positive_int)
    parser.add_argument("--manual", action="store_true", default=None)
    parser.add_argument("task", nargs="*")
    words = _words(line)
    names = [word for word, _, _ in words]
    # After "--" everything is the task: "%grinta -- fix the --auto flag".
    ends = names.index("--") if "--" in names else len(words)
    try:
        args, unknown = parser.parse_known_args(names[:ends])
    except argparse.ArgumentError as exc:
        raise MagicUsageError(str(exc)) from None
    if "--allow-notebooks" in unknown:
        raise MagicUsageError(
            "--allow-notebooks is gone: notebooks are always edited as cells, validated before "
            "every commit, and the cell running the session is protected (docs/notebook.md)"
        )
    if any(not word.startswith("-") for word in unknown):
        raise MagicUsageError(
            f"an option splits the task ({' '.join(unknown)!r} after it): put options before "
            "or after the task; a task with words like --auto goes after --: "
            "%grinta --auto -- fix the --manual flag"
        )
    if unknown:
        raise MagicUsageError(f"unknown option {' '.join(unknown)}")
    options = vars(args)
    given = options.pop("task")
    if ends < len(words):
        if given:
            raise MagicUsageError("the task goes after --, with nothing before it but options")
        task, typed = _as_typed(line, words[ends + 1 :]), None
    else:
        first = _run_of(names, given)
        task = _as_typed(line, words[first : first + len(given)])
        typed = (
            line[words[first][1] : words[first][2]].strip()
            if given and first < len(words)
            else None
        )
    try:
        config = Config.from_env(os.environ if environ is None else environ)
    except ConfigError as exc:
        raise MagicUsageError(str(exc), usage=False) from None
    try:
        return task, config.with_options(**options), typed
    except ConfigError as exc:
        raise MagicUsageError(str(exc)) from None


def split_command(line: str) -> tuple[str | None, str]:
    """(subcommand, rest) when ``line`` starts with a subcommand word, else (None, line)."""
    head, *rest = line.split(maxsplit=1) or [""]
    if head == "--":
        return None, "".join(rest)
    if head in SUBCOMMANDS:
        return head, "".join(rest).strip()
    return None, line


def _words(line: str) -> list[tuple[str, int, int]]:
    """The words of ``line`` as a POSIX shell splits them, each with where it starts and ends
    in ``line`` (from an unbalanced quote on, the words are split at whitespace)."""
    stream = io.StringIO(line)
    lexer = shlex.shlex(stream, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[tuple[str, int, int]] = []
    while True:
        end = words[-1][2] if words else 0
        start = len(line) - len(line[end:].lstrip())
        try:
            word = lexer.get_token()
        except ValueError:  # no closing quotation
            rest = re.finditer(r"\S+", line[end:])
            return words + [(m.group(), end + m.start(), end + m.end()) for m in rest]
        if word is None:
            return words
        words.append((word, start, stream.tell()))


def _run_of(names: list[str], given: list[str]) -> int:
    """Where the task's words ``given`` (argparse's) run in ``names``: the first place they
    do, after the options before them."""
    for first in range(len(names) - len(given) + 1):
        if names[first : first + len(given)] == given:
            return first
    return len(names)


def _as_typed(line: str, words: list[tuple[str, int, int]]) -> str:
    """The text of ``words`` as ``line`` has it (quotes, apostrophes and backslashes are the
    task's, not shell syntax); one quoted word alone is its words (``"fix the bug"``)."""
    if not words:
        return ""
    if len(words) == 1:
        return words[0][0].strip()
    return line[words[0][1] : words[-1][2]].strip()


@magics_class
class GrintaMagics(Magics):
    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        # The saved trace's box talks to this kernel over a comm: its target is
        # registered as the extension loads (one entry; nothing is imported for it).
        from grinta_jupyter.jupyter import sessionlink

        sessionlink.register(shell)

    @line_cell_magic
    def grinta(self, line: str, cell: str | None = None) -> Any:
        from grinta_jupyter import hold_model_warming, release_model_warming, settle

        # A session this starts may make its first call before litellm is loaded: the
        # warming leaves litellm's import until that call is over (``controller.start``).
        hold_model_warming()
        settle()  # the extension's warming may still be importing what the controller needs
        from grinta_jupyter.jupyter import controller

        try:
            return self._grinta(controller, line, cell)
        except KeyboardInterrupt:
            raise Interrupted(
                "%grinta was interrupted; %grinta status says where the session stands"
            ) from None
        finally:
            if not controller.first_call_early():
                release_model_warming()

    def _grinta(self, controller: Any, line: str, cell: str | None) -> Any:
        try:
            if cell is not None:
                words, config = parse_start(line)
                if words:
                    raise MagicUsageError(
                        f"the task goes in the cell; the line takes only options (got {words!r})"
                    )
                if not cell.strip():
                    raise MagicUsageError("the cell is empty; write the task in it")
                controller.start(cell.strip(), config)
                return None
            command, rest = split_command(line)
            if command is None and line.strip().lower() in SUBCOMMANDS:
                # "%grinta Stop" would replace the running session with one on the task "Stop".
                word = line.strip()
                raise MagicUsageError(
                    f"subcommands are lowercase: %grinta {word.lower()} (for the task "
                    f"{word!r}, write %grinta -- {word})"
                )
            if command is None:
                task, config, first_word = _parse(line, None)  # a leading "--" is its to take
                if not task:
                    raise MagicUsageError("give a task, e.g. %grinta fix the failing test")
                _refuse_subcommand(first_word)
                controller.start(task, config)
                return None  # no Out[n] echo: grinta_jupyter.current() is the session
            if command == "resume":
                words, config = parse_start(rest)
                names = [name for name, _, _ in _words(words)]  # a quoted path is one name
                if len(names) > 1 and not Path(words).expanduser().exists():
                    raise MagicUsageError(f"resume takes one log (got {words!r})")
                controller.resume(words if len(names) > 1 else "".join(names) or None, config)
                return None
            if command == "approve" and re.fullmatch(r"[0-9]{1,9}", rest):
                pass  # %grinta approve N: only step N, if it is the one waiting
            elif command in BARE_SUBCOMMANDS and rest:
                raise MagicUsageError(
                    f"{command} takes nothing after it (got {rest!r}); for a task that starts "
                    f"with {command!r}, write %grinta -- {command} ..."
                )
            if command == "models":
                controller.show_models()
                return None
            return controller.command(command, rest)
        except MagicUsageError as exc:
            show_usage_error(exc)
            return None


def _refuse_subcommand(word: str | None) -> None:
    """MagicUsageError when the task's first word, as typed, is a subcommand's: options came
    before it (``%grinta --root proj resume``, ``%grinta --manual step``), and taken as a
    task it would start a session on the task "resume" and stop the running one. Such a
    task goes after ``--`` (or in quotes, which say it is meant)."""
    if word is None or word.lower() not in SUBCOMMANDS:
        return
    command = word.lower()
    how = (
        "resume takes its options after it: %grinta resume [options] [LOG]"
        if command == "resume"
        else f"{command} is a subcommand and takes no options: %grinta {command}"
    )
    raise MagicUsageError(
        f"nothing was started: {how}; a task that starts with {word!r} goes after --: "
        f"%grinta [options] -- {word} ..."
    )


def show_usage_error(exc: MagicUsageError) -> None:
    """What was wrong on one line, then the usage line when it was a mistake of usage."""
    from grinta_jupyter.runtime.display import visible

    print(f"%grinta: {visible(str(exc), keep_newlines=False)}")
    if exc.usage:
        print(USAGE)
    if exc.after is not None:
        exc.after()


def edit_arguments(text: str) -> dict[str, Any] | str:
    if not text.strip():
        raise MagicUsageError('edit takes JSON arguments, e.g. %grinta edit {"path": "a.py"}')
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        hint = (
            ""
            if text.lstrip().startswith("{")
            else " (for a task that starts with 'edit', write %grinta -- edit ...)"
        )
        raise MagicUsageError(f"edit takes JSON arguments: {exc}{hint}") from None
    if not isinstance(value, dict):
        raise MagicUsageError(f"edit takes a JSON object {{...}}, not {type(value).__name__}")
    return value
