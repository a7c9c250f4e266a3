"""``%grinta`` and ``%%grinta``: start a session, and drive it cell by cell.

    %grinta [options] TASK          start a session (it runs in the background; the panel asks you)
    %%grinta [options]              the cell body is the task
    %grinta step                    advance to the next step that has something to show
    %grinta approve | veto REASON | edit {json} | undo | stop | status | log | metrics

Options: --model M, --root DIR, --auto, --toolset T, --max-steps N,
--manual (no background task: advance with %grinta step), --allow-notebooks.
A task that starts with a subcommand word can be given after ``--``.

A mistake in the magic's use prints two short lines, what was wrong and
``USAGE``; a problem that is not about usage (no API key) prints its one line.
Nothing is started either way.

This module is imported when the extension loads, so it imports nothing
heavy at module level.
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import Any, NoReturn

from IPython.core.magic import Magics, line_cell_magic, magics_class

SUBCOMMANDS = ("step", "approve", "veto", "edit", "undo", "stop", "status", "log", "metrics")
# Subcommands that take nothing after them (veto takes a reason, edit takes JSON).
BARE_SUBCOMMANDS = ("step", "approve", "undo", "stop", "status", "log", "metrics")
USAGE = (
    "usage: %grinta [--model M] [--root DIR] [--auto] [--manual] TASK | step | approve | "
    "veto REASON | edit JSON | undo | stop | status | log | metrics"
)


class MagicUsageError(ValueError):
    """The magic could not do what it was asked; the message is the one line shown.

    ``usage`` says whether the usage line follows it (a mistake in how the magic
    was called) or not (a problem to fix elsewhere, such as a missing API key).
    """

    def __init__(self, message: str, usage: bool = True):
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse that reports every mistake as a MagicUsageError (never prints, never exits)."""

    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def parse_start(line: str) -> argparse.Namespace:
    parser = _Parser(prog="%grinta", add_help=False, exit_on_error=False)
    parser.add_argument("--model")
    parser.add_argument("--root")
    parser.add_argument("--auto", action="store_true")
    parser.add_argument("--toolset", default="intent")
    parser.add_argument("--max-steps", type=_positive_int)  # default: the session's Limits
    parser.add_argument("--manual", action="store_true")
    parser.add_argument("--allow-notebooks", action="store_true")
    parser.add_argument("task", nargs="*")
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        words = line.split()
    try:
        args, unknown = parser.parse_known_args(words)
    except argparse.ArgumentError as exc:
        raise MagicUsageError(str(exc)) from None
    if unknown:
        raise MagicUsageError(f"unknown option {' '.join(unknown)}")
    args.task = " ".join(args.task).strip()
    return args


def split_command(line: str) -> tuple[str | None, str]:
    """(subcommand, rest) when ``line`` starts with a subcommand word, else (None, line)."""
    stripped = line.strip()
    if stripped.startswith("-- "):
        return None, stripped[3:]
    head, _, rest = stripped.partition(" ")
    if head in SUBCOMMANDS:
        return head, rest.strip()
    return None, line


@magics_class
class GrintaMagics(Magics):
    @line_cell_magic
    def grinta(self, line: str, cell: str | None = None) -> Any:
        from grinta_jupyter.jupyter import controller

        try:
            if cell is not None:
                options = parse_start(line)
                options.task = cell.strip()
                if not options.task:
                    raise MagicUsageError("the cell is empty; write the task in it")
                return controller.start(options)
            command, rest = split_command(line)
            if command is None:
                options = parse_start(rest)
                if not options.task:
                    raise MagicUsageError("give a task, e.g. %grinta fix the failing test")
                return controller.start(options)
            if command in BARE_SUBCOMMANDS and rest:
                raise MagicUsageError(
                    f"{command} takes nothing after it (got {rest!r}); for a task that starts "
                    f"with {command!r}, write %grinta -- {command} ..."
                )
            return controller.command(command, rest)
        except MagicUsageError as exc:
            show_usage_error(exc)
            return None


def show_usage_error(exc: MagicUsageError) -> None:
    """What was wrong on one line, then the usage line when it was a mistake of usage."""
    from grinta_jupyter.runtime.display import visible

    print(f"%grinta: {visible(str(exc), keep_newlines=False)}")
    if exc.usage:
        print(USAGE)


def edit_arguments(text: str) -> dict[str, Any] | str:
    if not text.strip():
        raise MagicUsageError('edit takes JSON arguments, e.g. %grinta edit {"path": "a.py"}')
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MagicUsageError(f"edit takes JSON arguments: {exc}") from None
    if not isinstance(value, dict):
        raise MagicUsageError(f"edit takes a JSON object {{...}}, not {type(value).__name__}")
    return value
