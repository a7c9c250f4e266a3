"""A grinta step as an ACP tool call: id, kind, title, locations, content, status.

Every step a session proposes becomes one ACP tool call, started when it is
staged (``StepProposed``) and finished when it has its outcome
(``StepObserved``); the same call is what a permission request names. The
mapping (docs/acp.md):

==============  ============================================================
grinta          ACP
==============  ============================================================
read, search    kind ``read`` (``search`` for the search tool)
write           kind ``edit``; one diff per file (old text, new text as staged)
command         kind ``execute``; the command, then its output
finish          kind ``other``; the summary, or why it was refused
title           one line: ``Read pkg/core.py (lines 1-7 of 7)``, ``Edit pkg/core.py``,
                ``Run `pytest -q```, ``Finish``
locations       absolute paths, with the 1-based line read or first changed
status          ``pending`` when staged, ``in_progress`` once approved,
                ``completed`` or ``failed`` (refused, vetoed, failed) when observed
==============  ============================================================

A read says what it resolved (the symbol, the candidates, the lines). Every
text shown passes through the session's secret redaction, and is bounded:
outputs to ``SHOWN_CHARS``, each side of a diff to ``DIFF_TEXT_CHARS`` (a
larger file shows its unified diff instead), and all the diffs of a call together to
``DIFF_BUDGET_CHARS``: past it a diff is cut at a line's end, later files are not sent,
and a note names every file the write changes and how much of it was shown, so nothing
Approve commits is hidden. Titles and texts show control,
bidirectional and invisible characters escaped (``runtime/display.visible``),
as every other front end does; a diff's old and new text stay exact (they are
what the client compares and shows as the change), as does the raw input.

Pure functions of a step (or of a logged event, for a loaded session's
replay): nothing here talks to the client.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_tool_call,
)
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
)

from grinta_jupyter.agent.step import Step
from grinta_jupyter.runtime.display import visible
from grinta_jupyter.runtime.proposal import FileChange, Proposal

SHOWN_CHARS = 8_000  # of an output or a message shown in a tool call
DIFF_TEXT_CHARS = 1_000_000  # of each side of a file's diff sent as old/new text
# Of all the diffs of one tool call together (old and new texts, unified diffs): a write to
# many large files sent them all, three times (staged, asked, observed), in single lines a
# client reads whole (the ACP SDK's reader stops at 50 MB, ending the connection).
DIFF_BUDGET_CHARS = 2_000_000
RAW_INPUT_CHARS = 2_000  # of each string argument echoed as the call's raw input
TARGET_CHARS = 300  # of a target the model named, quoted in how it resolved
MAX_LINE = 2**32 - 1  # the largest line a location may name (ACP: uint32)

Content = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
Redact = Callable[[str], str]
Status = Literal["pending", "in_progress", "completed", "failed"]

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", re.MULTILINE)
_PLACE = re.compile(r"^(.+?):(\d+)\b")  # "pkg/core.py:6 method K.m", as a Resolution names it


def tool_call_id(branch: int, step: int, call_id: str) -> str:
    """The ACP id of a step: unique in the session, the same when its log is replayed.

    Step numbers repeat across the branches a rewind makes, and a model's call ids
    need not be unique across replies, so both go in.
    """
    prefix = f"b{branch}-" if branch else ""
    if not _PLAIN_ID.fullmatch(call_id):  # the model's text: a secret, megabytes, a newline
        call_id = "h" + hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix}step{step}-{call_id}"


# A model's call id kept as it is in the ACP id: short and plain (providers' ids are).
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def kind_of(tool: str, kind: str) -> ToolKind:
    """The ACP kind of a grinta tool of kind ``kind`` (read | write | command | finish)."""
    if kind == "read":
        return "search" if tool == "search" else "read"
    if kind == "write":
        return "edit"
    if kind == "command":
        return "execute"
    return "other"


def title_of(tool: str, kind: str, args: dict[str, Any], summary: str) -> str:
    """One line saying what the step does (``summary``: a staged read's own, else "")."""
    if kind == "finish":
        return "Finish"
    if kind == "command":
        command = _one_line(str(args.get("command") or args.get("code") or tool), 200)
        if any(word.startswith("/") and "/" in word[1:] for word in command.split()):
            # Jupyter AI shows such a word as its last part ("rm -rf /home/me/proj" read
            # "rm -rf proj"): a title that would mislead says where the command is instead.
            return "Run a command naming absolute paths (read it below)"
        return f"Run: {command}"  # plain text: some clients show no markdown
    if kind == "write":
        paths = paths_in(args)
        verb = "Create" if tool == "create" else "Edit"
        # One line, bounded, like every title: a name may hold line breaks (Linux takes them),
        # shown escaped (``\n``) so the title names the file the write makes, not a lookalike.
        named = visible(", ".join(paths), keep_newlines=False)
        return f"{verb} {_cut(named, 200)}" if paths else f"Edit ({tool})"
    if tool == "search":
        return f"Search '{_one_line(str(args.get('query', '')), 200)}'"
    target = (
        summary or args.get("path") or args.get("symbol") or tool
    )  # "pkg/core.py (lines 1-7 of 7)"
    return f"Read {_one_line(str(target), 200)}"


def _title(proposal: Proposal, redact: Redact) -> str:
    return redact(
        title_of(
            proposal.tool, proposal.kind, proposal.args, proposal.summary if proposal.ok else ""
        )
    )


def locations_of(root: Path, proposal: Proposal, redact: Redact) -> list[ToolCallLocation]:
    """Where the step reads or writes: absolute paths, with a 1-based line when known (the
    paths redacted: the model names them, and may name a secret)."""
    return [
        location.model_copy(update={"path": redact(location.path)})
        for location in _locations(root, proposal)
    ]


def _locations(root: Path, proposal: Proposal) -> list[ToolCallLocation]:
    if proposal.changes:
        return [
            ToolCallLocation(
                path=str(root / change.path),
                line=change.added[0][0] if change.added else _first_changed_line(change.diff),
            )
            for change in proposal.changes
        ]
    found: list[ToolCallLocation] = []
    for resolution in proposal.resolutions:
        place = _PLACE.match(resolution.chosen or "")
        if place:
            found.append(ToolCallLocation(path=str(root / place[1]), line=int(place[2])))
    if found:
        return found
    args = proposal.args
    if proposal.kind == "read" and proposal.tool != "search":
        path = str(args.get("path") or "").split("::", 1)[0]
        where = inside(root, path) if path else None
        if where:
            start = args.get("start_line")
            # ACP's line is a uint32: a larger number (the model's) breaks a strict client's
            # parse of the whole update, or of the permission request that carries it.
            line = start if type(start) is int and 0 < start <= MAX_LINE else None
            return [ToolCallLocation(path=where, line=line)]
        return []
    return [
        ToolCallLocation(path=where)
        for where in map(partial(inside, root), paths_in(args))
        if where
    ]


def inside(root: Path, path: str) -> str | None:
    """``root / path`` when it stays inside the workspace (lexically), else None: a path the
    model names (``/etc/passwd``, ``../..``) is no place for an editor that follows the
    agent to open, even when the runtime refused the call."""
    try:
        where = os.path.normpath(root / path)
    except (TypeError, ValueError):  # a NUL in the name
        return None
    base = os.path.normpath(root)
    return where if where == base or where.startswith(base.rstrip(os.sep) + os.sep) else None


def staged_content(
    root: Path, step: Step, redact: Redact, notes: Sequence[str] = ()
) -> list[Content]:
    """What a reviewer sees before deciding: the diffs, the command, what a read resolved."""
    proposal = step.proposal
    content: list[Content] = []
    if step.stale:
        content.append(_text(f"**Staged again after a restart:** {step.stale}", redact))
    content.extend(diffs(root, proposal, redact))
    if proposal.command:
        content.append(_text(fenced(proposal.command, "sh"), redact))
    content.extend(_text(line, redact) for line in resolved(proposal, redact))
    if proposal.error is not None:
        content.append(
            _text(f"**Refused ({proposal.error.code}):** {proposal.error.message}", redact)
        )
    content.extend(_text(note, redact) for note in notes)
    return content


def diffs(
    root: Path, proposal: Proposal, redact: Redact, *, deciding: bool = True
) -> list[Content]:
    """One ACP diff per staged file: its old and new text (a very large file: its unified diff),
    all of them within ``DIFF_BUDGET_CHARS``.

    Past the budget, a file's unified diff is cut short at a line's end and the files after
    it are not sent; a note then names every file the write changes, with its line counts
    and whether the diffs above show it whole, cut short or not at all, so what Approve
    commits is never hidden. ``deciding``: the step waits for its decision (the note says to
    read the rest before approving).
    """
    content: list[Content] = []
    left = DIFF_BUDGET_CHARS
    shown: list[tuple[FileChange, str]] = []  # each file, and how much of it was sent
    for change in proposal.changes:
        before, after = change.before, change.after or ""
        sides = len(before or "") + len(after)
        small = len(before or "") <= DIFF_TEXT_CHARS and len(after) <= DIFF_TEXT_CHARS
        if small and sides <= left:
            content.append(
                tool_diff_content(
                    redact(str(root / change.path)),
                    redact(after),
                    redact(before) if before is not None else None,
                )
            )
            left -= sides
            shown.append((change, "shown above"))
            continue
        diff = redact(change.diff) if left > 0 else ""  # redacted whole, then cut
        if diff and len(diff) <= left:
            content.append(_text(fenced(diff, "diff"), redact))
            left -= len(diff)
            shown.append((change, "shown above"))
            continue
        kept = diff[: diff.rfind("\n", 0, left) + 1]  # whole lines: a row keeps its role
        if kept:
            content.append(_text(fenced(kept, "diff"), redact))
            left = 0
            shown.append((change, "cut short above"))
        else:
            left = 0
            shown.append((change, "not shown above"))
    if any(how != "shown above" for _, how in shown):
        content.append(_text(_cut_note(shown, deciding), redact))
    return content


def _cut_note(shown: Sequence[tuple[FileChange, str]], deciding: bool) -> str:
    """What a diff cut to the budget leaves out: every file of the write, and how it shows."""
    head = (
        "**The diff above is cut:** it is too large to send whole, and the write changes all "
        "of it, the rest too; the session log holds it whole"
    )
    if deciding:
        head += " (read the rest there before you approve)"
    files = [
        f"- {_code(visible(change.path, keep_newlines=False))} "
        f"(+{change.added_lines:,} -{change.removed_lines:,}): {how}"
        for change, how in shown
    ]
    return "\n".join([head + ". The files it changes:", *files])


def _code(text: str) -> str:
    """``text`` as Markdown inline code that no backtick in it can close early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def resolved(proposal: Proposal, redact: Redact) -> list[str]:
    """How the targets the model named were resolved, one line each."""
    lines = []
    for r in proposal.resolutions:
        # The target is the model's text: a megabyte of it went out in every update of the
        # call. Redacted before it is cut, so the cut leaves no piece of a secret.
        target = _code(_cut(redact(r.target), TARGET_CHARS))
        if r.chosen:
            lines.append(f"Resolved {target} to {r.chosen} ({r.reason}).")
        else:
            more = f" Candidates: {', '.join(r.candidates[:10])}." if r.candidates else ""
            lines.append(f"Could not resolve {target}: {r.reason}.{more}")
    return lines


def started(root: Path, branch: int, step: Step, redact: Redact) -> ToolCallStart:
    """The ACP tool call of a step just staged."""
    proposal = step.proposal
    return start_tool_call(
        tool_call_id(branch, step.number, step.call.id),
        _title(proposal, redact),
        kind=kind_of(proposal.tool, proposal.kind),
        status="pending",
        content=staged_content(root, step, redact),
        locations=locations_of(root, proposal, redact),
        raw_input=bounded_args(redact_args(proposal.args, redact)),
    )


def asking(root: Path, branch: int, step: Step, redact: Redact) -> ToolCallUpdate:
    """The tool call a permission request names: the step as it waits."""
    proposal = step.proposal
    return ToolCallUpdate(
        tool_call_id=tool_call_id(branch, step.number, step.call.id),
        title=_title(proposal, redact),
        kind=kind_of(proposal.tool, proposal.kind),
        status="pending",
        content=staged_content(root, step, redact),
        locations=locations_of(root, proposal, redact),
    )


def observed(
    root: Path, branch: int, step: Step, redact: Redact, notes: Sequence[str] = ()
) -> ToolCallProgress:
    """The ACP update of a step that has its outcome: status and what came of it.

    A write keeps its diffs (what was committed, or what was refused); a command shows
    its exit code and output; a read what it resolved and what it read; a veto its reason.
    """
    proposal, obs = step.proposal, step.observation
    ok = obs is not None and obs.ok
    content = diffs(root, proposal, redact, deciding=False)
    if proposal.command:
        content.append(_text(fenced(proposal.command, "sh"), redact))
    content.extend(_text(line, redact) for line in resolved(proposal, redact))
    if step.decision == "veto":
        content.append(_text(f"**Vetoed:** {step.reason or 'no reason given'}", redact))
    elif obs is not None:  # (a command's output starts with its exit code)
        if proposal.kind == "write" and ok:
            content.append(_text(_first_line(obs.output), redact))
        elif proposal.kind == "finish":  # the summary, or why the finish was refused: prose
            content.append(_text(bounded(obs.output), redact))
        elif obs.output:
            content.append(_text(fenced(bounded(obs.output)), redact))
    content.extend(_text(note, redact) for note in notes)
    # Clients that show a call's raw output and not its content (Jupyter AI's chat) still
    # show what a read resolved and what a command printed.
    shown = (
        [*resolved(proposal, redact), bounded(obs.output)]
        if obs is not None and (proposal.kind in ("read", "command") or not ok)
        else []
    )
    return update_tool_call(
        tool_call_id(branch, step.number, step.call.id),
        title=_title(proposal, redact),
        status="completed" if ok else "failed",
        content=content,
        locations=locations_of(root, proposal, redact),
        raw_output=shown_text("\n".join(shown), redact) if shown else None,
    )


def progress(branch: int, step: Step, status: Status) -> ToolCallProgress:
    """Only the status of a step's tool call changes (approved: it runs now)."""
    return update_tool_call(tool_call_id(branch, step.number, step.call.id), status=status)


# -- text helpers ----------------------------------------------------------------------------


def fenced(text: str, language: str = "") -> str:
    """``text`` as a Markdown code block no line of it can close early."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def bounded(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit:,} more characters)"


def bounded_args(args: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments with every long string cut (a create's content is in its diff)."""

    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > RAW_INPUT_CHARS:
            return value[:RAW_INPUT_CHARS] + f"… ({len(value) - RAW_INPUT_CHARS:,} more characters)"
        if isinstance(value, dict):
            return {key: cut(item) for key, item in value.items()}
        if isinstance(value, list):
            return [cut(item) for item in value]
        return value

    cut_args: dict[str, Any] = cut(args)
    return cut_args


def redact_args(args: dict[str, Any], redact: Redact) -> dict[str, Any]:
    """The arguments with secrets redacted in every string value."""
    text = json.dumps(args)
    clean = redact(text)
    if clean == text:
        return args
    try:
        parsed: dict[str, Any] = json.loads(clean)
    except (ValueError, RecursionError):
        return {"arguments": clean}
    return parsed


def _text(text: str, redact: Redact) -> ContentToolCallContent:
    return tool_content(text_block(shown_text(text, redact)))


def shown_text(text: str, redact: Redact) -> str:
    """``text`` as a person reads it in the client: redacted, then with every character that
    could rewrite what is shown (a bidirectional override, an ANSI escape, a zero-width
    space) made visible as an escape, as the notebook's cards and the terminal show it."""
    return visible(redact(text))


def _one_line(text: str, limit: int) -> str:
    return _cut(visible(" ".join(text.split()), keep_newlines=False), limit)


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _first_changed_line(diff: str) -> int | None:
    found = _HUNK.search(diff)
    return max(int(found[1]), 1) if found else None


def paths_in(args: dict[str, Any]) -> list[str]:
    """The files a call's arguments name (``path``, or each edit's path or symbol file)."""
    paths: list[str] = []
    path = args.get("path")
    if isinstance(path, str) and path:
        paths.append(path.split("::", 1)[0])
    for edit in args.get("edits") or []:
        if not isinstance(edit, dict):
            continue
        symbol = str(edit.get("symbol") or "")
        named = edit.get("path") or (symbol.split("::", 1)[0] if "::" in symbol else "")
        if isinstance(named, str) and named and named not in paths:
            paths.append(named)
    return paths
