"""Writes approved in part (``ApproveHunks``): what the model is told, and what resume reads.

The model is told which hunks were declined, in grinta's words (``declined_note``). A
session resumed after a crash must tell whether such a write's commit landed; the log
holds the decision's hunks and the whole proposal's diff and hashes, not the bytes the
accepted hunks give, so the session (``Session._landed_hunks``) compares the disk with the
journal, from the part of the logged diff these functions read back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grinta_jupyter.events import models as ev

if TYPE_CHECKING:
    from grinta_jupyter.runtime.proposal import Proposal

# Seconds a commit's journal time may precede its decision's log time and still be its commit
# (both are this machine's wall clock; the commit is made after the decision is logged).
CLOCK_SLACK = 1.0

_MARKS = {"context": " ", "add": "+", "del": "-", "note": "\\ "}


def declined_note(proposal: Proposal, accepted: Sequence[int], reason: str) -> str:
    """What the model is told about the hunks the user declined (grinta's words, not data)."""
    from grinta_jupyter.runtime.hunks import hunks

    every = hunks(proposal)
    declined = [(h.index, h.path, h.header) for h in every if h.index not in set(accepted)]
    return _declined_words(len(every), declined, reason)


def _declined_words(total: int, declined: Sequence[tuple[int, str, str]], reason: str) -> str:
    listed = "; ".join(
        f"hunk {index + 1} in {path} ({header.strip()})" for index, path, header in declined
    )
    note = (
        f"[review] The user approved {total - len(declined)} of {total} hunks of this "
        f"edit. Declined, and NOT applied: {listed}. The files hold only the approved hunks."
    )
    return note + (f" The user's reason: {reason}" if reason else "")


def hunk_decisions(path: Sequence[ev.Event]) -> dict[str, ev.UserDecision]:
    """The ``approve_hunks`` decisions of the last reply's calls, by call id: each the last
    word on its call since the call was last staged (a call staged again after it, by an
    earlier resume, was not what it decided)."""
    found: dict[str, ev.UserDecision] = {}
    for event in path:
        if isinstance(event, (ev.ModelReplied, ev.TaskStarted, ev.Rewound)):
            found = {}
        elif isinstance(event, (ev.ToolProposed, ev.DiffStaged)):
            found.pop(event.call_id, None)
        elif isinstance(event, ev.UserDecision):
            # One whose hunks were lost (a hand-edited log) still approved only a part.
            if event.decision == "approve_hunks":
                found[event.call_id] = event
            else:
                found.pop(event.call_id, None)
    return found


@dataclass
class Part:
    """The accepted hunks of a logged diff: their own diff, files and counts."""

    diff: str
    paths: list[str]  # the files with an accepted hunk, in the diff's order
    added: int
    removed: int
    total: int  # hunks of the whole diff
    declined: list[tuple[int, str, str]] = field(default_factory=list)  # (index, path, header)


def accepted_part(diff: str, accepted: Sequence[int]) -> Part | None:
    """The accepted hunks (numbered from 0 across files, as ``runtime.hunks`` numbers them)
    of the logged ``diff``; None when the diff cannot be read so (redacted, hand-edited)."""
    from grinta_jupyter.runtime.diffs import parse_unified, quote_path

    files = parse_unified(diff)
    if not files or any(f.new_path is None and f.old_path is None for f in files):
        return None
    total = sum(len(f.hunks) for f in files)
    chosen = set(accepted)
    if not chosen or not chosen <= set(range(total)):
        return None
    lines: list[str] = []
    part = Part("", [], 0, 0, total)
    index = 0
    for file in files:
        path = file.new_path if file.new_path is not None else file.old_path
        assert path is not None
        mine = []
        for hunk in file.hunks:
            if index in chosen:
                mine.append(hunk)
            else:
                part.declined.append((index, path, hunk.header))
            index += 1
        if not mine:
            continue
        part.paths.append(path)
        lines.append(f"--- {quote_path('a/' + file.old_path) if file.old_path else '/dev/null'}")
        lines.append(f"+++ {quote_path('b/' + file.new_path) if file.new_path else '/dev/null'}")
        for hunk in mine:
            lines.append(hunk.header)
            lines.extend(_MARKS[row.role] + row.text for row in hunk.rows)
            part.added += sum(row.role == "add" for row in hunk.rows)
            part.removed += sum(row.role == "del" for row in hunk.rows)
    part.diff = "\n".join(lines) + "\n"
    return part


def declined_text(part: Part | None, decision: ev.UserDecision) -> str:
    """What the model is told about the hunks declined by a partial commit recovered on
    resume (the words of ``declined_note``; the hunks as the logged diff numbers them)."""
    reason = decision.reason or ""
    if part is not None:
        return _declined_words(part.total, part.declined, reason)
    shown = _shown(decision)
    note = (
        f"[review] The user approved only some hunks of this edit (hunks {shown}); the "
        "others were declined and NOT applied. The files hold only the approved hunks."
    )
    return note + (f" The user's reason: {reason}" if reason else "")


def not_landed(decision: ev.UserDecision) -> str:
    """Why a resumed call approved in part, whose commit did not land, waits for a person."""
    shown = _shown(decision)
    return (
        f"the user approved only some of its hunks (hunks {shown}) before the session was "
        "interrupted, and that commit did not land: it is staged whole again, so a person "
        "decides (approve the same hunks, or others)"
    )


def _shown(decision: ev.UserDecision) -> str:
    """The decision's hunks, numbered from 1 (a log may have lost them)."""
    numbers = sorted({index + 1 for index in decision.hunks or [] if isinstance(index, int)})
    return ", ".join(map(str, numbers)) or "not recorded"
