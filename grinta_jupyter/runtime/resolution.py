"""How a target the model named was resolved: shown on the card whether staging succeeds or not."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resolution:
    """How a target the model named was resolved (a file, a symbol, a match)."""

    target: str  # what the model asked for, e.g. "RaftNode.append_entries"
    chosen: str | None  # e.g. "raft_kv/node.py:120 method RaftNode.append_entries"
    reason: str  # why it was chosen, or why not
    candidates: tuple[str, ...] = ()
