"""``%grinta`` and ``%%grinta``: start a session, and drive it cell by cell.

    %grinta [options] TASK          start a session (it runs in the background; the panel asks you)
    %%grinta [options]              the cell body is the task
    %grinta step                    advance to the next step that has something to show
    %grinta approve | veto REASON | edit {json} | undo | stop | status | log | metrics

Options: --model M, --root DIR, --auto, --toolset T, --max-steps N,
--manual (no background task: advance with %grinta step), --allow-notebooks.
A task that starts with a subcommand word can be given after ``--``.

This module is imported when the extension loads, so it imports nothing
heavy at module level.
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

SUBCOMMANDS = ("step", "approve", "veto", "edit", "undo", "stop", "status", "log", "metrics")


class MagicUsageError(ValueError):
    """The magic's arguments were not understood."""


def parse_start(line: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="%grinta", add_help=False, exit_on_error=False)
    parser.add_argument("--model")
    parser.add_argument("--root")
    parser.add_argument("--auto", action="store_true")
    parser.add_argument("--toolset", default="intent")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--manual", action="store_true")
    parser.add_argument("--allow-notebooks", action="store_true")
    parser.add_argument("task", nargs="*")
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        words = line.split()
    try:
        args, unknown = parser.parse_known_args(words)
    except (argparse.ArgumentError, SystemExit) as exc:
        raise MagicUsageError(str(exc)) from None
    if unknown:
        raise MagicUsageError(f"unknown option(s): {' '.join(unknown)}")
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
                return controller.start(options)
            command, rest = split_command(line)
            if command is None:
                options = parse_start(rest)
                if not options.task:
                    raise MagicUsageError("give a task, e.g. %grinta fix the failing test")
                return controller.start(options)
            return controller.command(command, rest)
        except MagicUsageError as exc:
            print(f"%grinta: {exc}\n{__doc__.split(chr(10) + chr(10))[0] if __doc__ else ''}")
            return None


def edit_arguments(text: str) -> dict[str, Any] | str:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise MagicUsageError(f"edit takes JSON arguments: {exc}") from None
    if not isinstance(value, dict):
        raise MagicUsageError("edit takes a JSON object")
    return value
