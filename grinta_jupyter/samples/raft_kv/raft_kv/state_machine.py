"""The replicated state machine: a key-value store of strings driven by text commands.

A command is whitespace-separated words, so keys and values cannot contain spaces:

    set KEY VALUE     store VALUE under KEY
    get KEY           read KEY
    delete KEY        remove KEY

Every command returns the value KEY held before it ran, or None if KEY was absent.
Reads go through the log like writes do, which makes them linearizable.
"""

from __future__ import annotations

from typing import Protocol


class StateMachine(Protocol):
    """What a Raft node applies committed commands to."""

    def apply(self, command: str) -> str | None:
        """Execute one committed command and return its result."""
        ...


# How many arguments each operation takes.
ARITY: dict[str, int] = {"get": 1, "set": 2, "delete": 1}


def parse_command(command: str) -> tuple[str, list[str]]:
    """Split ``command`` into its operation and arguments; raise ValueError if malformed."""
    words = command.split()
    if not words:
        raise ValueError("empty command")
    operation, *args = words
    if operation not in ARITY:
        raise ValueError(f"unknown operation {operation!r}; expected one of {', '.join(ARITY)}")
    if len(args) != ARITY[operation]:
        raise ValueError(f"{operation} takes {ARITY[operation]} argument(s), got {len(args)}")
    return operation, args


class KVStateMachine:
    """An in-memory dict that changes only through committed commands."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def apply(self, command: str) -> str | None:
        """Execute ``command`` and return the value its key held before."""
        operation, args = parse_command(command)
        key = args[0]
        previous = self.data.get(key)
        if operation == "set":
            self.data[key] = args[1]
        elif operation == "delete":
            self.data.pop(key, None)
        return previous
