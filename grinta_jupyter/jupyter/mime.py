"""Steps and sessions as MIME bundles: a versioned JSON payload plus HTML and text.

The JSON (``application/vnd.grinta.step+json``, docs/mime-schema.md) is what
the labextension renders. The HTML is self-contained (inline styles, no
script), so a saved notebook still reads on GitHub and nbviewer. Sizes are
bounded so a notebook that ran a session stays small.

What the reviewer sees is what will be written:

- The payload keeps text as it is (secrets redacted); every renderer escapes.
- The HTML and the text show each diff line by its role in its hunk, read by
  the ``@@`` counts (``runtime.diffs.parse_unified``), never by its first
  characters: a removed ``-- comment`` is a removed row, an added
  ``+++ b/x`` is an added row, and a file name holding a newline is one
  escaped name.
- Control characters, terminal escapes, bidirectional overrides and invisible
  characters are shown as escapes (``runtime.display.visible``), in HTML
  inside a styled ``grinta-escape`` span so they read apart from literal text.
  No raw control character reaches ``text/html`` or ``text/plain``.
"""

from __future__ import annotations

import html
import itertools
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from grinta_jupyter.runtime.diffs import DiffFile, DiffHunk, parse_unified, quote_path
from grinta_jupyter.runtime.display import (
    ESCAPE_MARKS_NOTE,
    RowSpaces,
    escape_marks,
    parts_marks,
    row_parts,
    row_spaces,
    visible,
    visible_parts,
)
from grinta_jupyter.runtime.proposal import CommandProposal, FinishProposal, WriteProposal
from grinta_jupyter.runtime.secrets import Secrets

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.step import Step
    from grinta_jupyter.jupyter.timeline import Mark

STEP_MIME = "application/vnd.grinta.step+json"
SESSION_MIME = "application/vnd.grinta.session+json"
SCHEMA_VERSION = 1
MAX_DIFF_CHARS = 8_000
# A pending write's diff on the live card: about 20,000 rows, past which a person reads it
# in the session log (the card says it was cut; hunks cannot be picked then).
MAX_LIVE_DIFF_CHARS = 1_000_000
MAX_OUTPUT_CHARS = 4_000
MAX_TEXT_DIFF_LINES = 60
MAX_TEXT_OUTPUT_CHARS = 1_500
MAX_ARG_CHARS = 2_000  # a create's content is also in the diff
# Rich outputs (execute's plots): the images kept in a step payload, each base64 at most this long.
RICH_IMAGE_TYPES = frozenset({"image/png", "image/jpeg"})
MAX_RICH_OUTPUTS = 8
MAX_RICH_CHARS = 2_000_000
DIFF_CUT_NOTE = "the diff was cut short to keep the notebook small; the session log has all of it"
# Under a waiting write's diff cut at MAX_LIVE_DIFF_CHARS: Approve commits what is not shown.
DIFF_CUT_PENDING_NOTE = (
    "the diff is cut here and approving commits all of it, the rest too: read the rest in "
    "the session log before you approve. The files this write changes:"
)
# In text/plain, free text (output, messages) and stray diff lines start with this:
# it can be mistaken neither for a step header nor for a diff header or row.
TEXT_INDENT = "| "


def step_status(step: Step) -> str:
    p = step.proposal
    if step.decision == "veto":
        return "vetoed"
    if step.observation is None:
        return "refused" if p.error is not None else "pending"
    if isinstance(p, FinishProposal):  # a finish the guard sent back did not end anything
        return "done" if step.observation.ok else "refused"
    if isinstance(p, WriteProposal):
        return "committed" if step.observation.ok else "refused"
    if p.error is not None:
        return "refused"
    return "committed" if isinstance(p, CommandProposal) else "done"


def session_secrets(session: Session) -> Secrets:
    """The secrets to keep out of a session's cards: the session's (its model's key too)."""
    secrets = getattr(session, "secrets", None)
    return secrets if isinstance(secrets, Secrets) else Secrets.from_env()


def step_payload(
    step: Step,
    session_id: str,
    secrets: Secrets | None = None,
    *,
    branch: int = 0,
    rewound: bool = False,
    live: bool = False,
) -> dict[str, Any]:
    """The JSON payload of one step (schema version 1): secrets redacted, sizes bounded.

    ``live``: for a card shown while its step may wait (the panel's, the trace of a
    session that has not ended, the steps ``%grinta`` prints): a write waiting for its
    decision keeps its diff whole up to ``MAX_LIVE_DIFF_CHARS``, so what is approved is
    what was shown (a decided step, or one a rewind dropped, keeps ``MAX_DIFF_CHARS``).

    Text is kept as it is (the renderers escape it). Secrets (the environment's
    unless given) are redacted before anything is cut, so a cut never leaves a
    piece of a secret that no longer matches. The diff is cut without a marker
    (``diff_truncated`` says so), so its last line keeps its role. ``branch`` is
    the branch the step was made on; ``rewound`` says a rewind took it off the
    session's current branch (its commits were undone). ``restaged`` and
    ``stale`` say the proposal was staged again when the session resumed, and
    what had changed in its files since it was first staged.
    """
    secrets = secrets if secrets is not None else Secrets.from_env()
    p = step.proposal
    try:
        parsed = json.loads(step.call.arguments or "{}")
        arguments, raw = (parsed, None) if isinstance(parsed, dict) else (None, step.call.arguments)
    except (ValueError, RecursionError):  # nested too deeply: shown raw
        arguments, raw = None, step.call.arguments
    error = p.error
    obs = step.observation
    payload: dict[str, Any] = {
        "version": SCHEMA_VERSION,
        "session": session_id,
        "step": step.number,
        "tool": step.call.name,
        "kind": p.kind,
        "status": step_status(step),
        "text": step.text,
        "arguments": None if arguments is None else _redact_keys(arguments, secrets),
        "raw_arguments": raw,
        "summary": p.summary,
        "resolutions": [
            {
                "target": r.target,
                "chosen": r.chosen,
                "reason": r.reason,
                "candidates": r.candidates[:20],
            }
            for r in p.resolutions
        ],
        "diff": secrets.redact_diff(p.diff),
        "diff_truncated": False,
        "files": [
            {"path": c.path, "added": c.added_lines, "removed": c.removed_lines} for c in p.changes
        ],
        "validation": {
            "ok": error is None,
            "code": error.code if error else None,
            "message": error.message if error else None,
            "candidates": [
                {
                    "path": c.path,
                    "line": c.line,
                    "snippet": c.snippet,
                    "note": c.note,
                    "kind": c.kind,
                    "name": c.name,
                }
                for c in (error.candidates[:10] if error else ())
            ],
        },
        "decision": step.decision,
        "reason": step.reason,
        "edits": step.edits,
        "observation": None
        if obs is None
        else {"ok": obs.ok, "output": obs.output, "exit_code": obs.exit_code},
        "guards": [{"guard": g.guard, "detail": g.detail, "action": g.action} for g in step.guards],
        "branch": branch,
        "rewound": rewound,
        "restaged": step.restaged,
        "stale": step.stale,
    }
    payload = secrets.redact_data(payload)
    # A command has no diff: its arguments are what the reviewer approves, so they are kept
    # whole (the runtime refuses a command over run_max_command_chars, 32,000).
    if payload["arguments"] is not None and not (isinstance(p, CommandProposal) and p.ok):
        payload["arguments"] = _bound_args(payload["arguments"])
    if payload["raw_arguments"] is not None:
        payload["raw_arguments"] = _cut(payload["raw_arguments"], MAX_ARG_CHARS)
    diff = payload["diff"]
    keep = MAX_LIVE_DIFF_CHARS if _waits(payload, live) else MAX_DIFF_CHARS
    payload["diff"], payload["diff_truncated"] = diff[:keep], len(diff) > keep
    if payload["observation"] is not None:
        output = payload["observation"]["output"]
        payload["observation"]["output"] = _cut(output, MAX_OUTPUT_CHARS)
        # Added after redaction: image data is base64, not text a secret could be in.
        payload["observation"]["outputs"] = rich_outputs(obs.outputs if obs else (), secrets)
    return payload


def rich_outputs(outputs: Iterable[dict[str, str]], secrets: Secrets) -> list[dict[str, str]]:
    """The rich outputs a card shows: images (base64) and their ``text/plain`` descriptions,
    bounded in number and size. Other types (``text/html``) are left out: no card renders
    markup it did not build itself."""
    shown = []
    for bundle in itertools.islice(outputs, MAX_RICH_OUTPUTS):
        kept = {
            mime: data
            for mime, data in bundle.items()
            if mime in RICH_IMAGE_TYPES and len(data) <= MAX_RICH_CHARS
        }
        kept["text/plain"] = secrets.redact(bundle.get("text/plain", "[output]"))[:MAX_ARG_CHARS]
        shown.append(kept)
    return shown


def session_payload(session: Session) -> dict[str, Any]:
    from grinta_jupyter.events.metrics import measure

    # The same model the CLI's table and the experiment read (events/metrics.py).
    metrics = measure(session.log.events).model_dump(mode="json", exclude={"context_tokens"})
    tasks = list(session.tasks) or [session.task]
    payload = {
        "version": SCHEMA_VERSION,
        "session": session.id,
        "task": tasks[0],
        "tasks": tasks,
        "branch": session.branch,
        "rules": [
            {"path": r.path, "chars": r.chars, "truncated": r.truncated} for r in session.rules
        ],
        "model": getattr(session.model, "name", "model"),
        "toolset": session.runtime.toolset.name,
        "root": str(session.root),
        "end_reason": session.end_reason,
        "summary": session.summary,
        "error": _last_error(session),
        "metrics": metrics,
        "log": str(session.log_path) if session.log_path else None,
    }
    redacted: dict[str, Any] = session_secrets(session).redact_data(payload)
    return redacted


def _last_error(session: Session) -> str | None:
    """``CODE: message`` of the error that ended the session (a missing key, say), if any."""
    errors = [e for e in session.log.events if e.type == "error"]
    if not session.done or not errors:
        return None
    return f"{getattr(errors[-1], 'code', 'ERROR')}: {getattr(errors[-1], 'message', '')}"


def trace_bundle(session: Session) -> dict[str, Any]:
    """The whole session so far as one output: the session payload with its steps and marks.

    ``steps`` are in the order they happened, every branch's (a step a rewind undid is
    ``rewound``); ``marks`` are what happened between them (jupyter/timeline.py), each
    with ``at``, the number of ``steps`` before it.
    """
    from grinta_jupyter.jupyter.timeline import Mark, timeline

    secrets = session_secrets(session)
    payload = session_payload(session)
    steps: list[dict[str, Any]] = []
    marks: list[dict[str, Any]] = []
    html_parts: list[str] = []
    text_parts: list[str] = []
    live = not session.done  # a session that ended (stopped while a write waited) decides nothing
    for item in timeline(session):
        if isinstance(item, Mark):
            mark = mark_payload(item, len(steps), secrets)
            marks.append(mark)
            html_parts.append(mark_html(mark))
            text_parts.append(mark_text(mark))
        else:
            # live: a write waiting for its decision shows its whole diff here too (this
            # output is the card of front ends without the panel, and the text a console
            # prints before ``%grinta approve``); the next update cuts it once decided.
            step = step_payload(
                item.step,
                session.id,
                secrets,
                branch=item.branch,
                rewound=item.rewound,
                live=live,
            )
            steps.append(step)
            html_parts.append(step_html(step, live=live))
            text_parts.append(step_text(step, live=live))
    payload["steps"], payload["marks"] = steps, marks
    body = "".join(html_parts)
    if session.done:
        body += session_html(payload)
    text = "\n\n".join(text_parts) or f"[grinta session {line_text(session.id)}] starting"
    return {
        SESSION_MIME: payload,
        "text/html": f'<div class="grinta-trace">{body}</div>',
        "text/plain": text,
    }


def mark_payload(mark: Mark, at: int, secrets: Secrets) -> dict[str, Any]:
    """A mark of the trace (a task began, the user said, a rewind...): ``at`` steps precede it."""
    payload: dict[str, Any] = secrets.redact_data(
        {"kind": mark.kind, "title": mark.title, "text": mark.text, "branch": mark.branch}
    )
    payload["at"] = at
    return payload


def step_bundle(
    step: Step, session_id: str, secrets: Secrets | None = None, *, live: bool = False
) -> dict[str, Any]:
    """One step's card; ``live`` as in ``step_payload`` (a step shown while it may wait)."""
    payload = step_payload(step, session_id, secrets, live=live)
    return {
        STEP_MIME: payload,
        "text/html": step_html(payload, live=live),
        "text/plain": step_text(payload, live=live),
    }


def session_bundle(session: Session) -> dict[str, Any]:
    payload = session_payload(session)
    return {
        SESSION_MIME: payload,
        "text/html": session_html(payload),
        "text/plain": session_text(payload),
    }


# -- text ----------------------------------------------------------------------------


def line_text(text: Any) -> str:
    """One line of untrusted text for a terminal: every control character escaped, newlines too."""
    return visible(str(text), keep_newlines=False)


def block_text(text: str, label: str = TEXT_INDENT) -> str:
    """Untrusted text of several lines for a terminal: escaped; after ``label``, lines indented."""
    first, *rest = visible(text).split("\n")
    return "\n".join([label + first, *(TEXT_INDENT + line for line in rest)])


def diff_text_lines(diff: str) -> list[str]:
    """A diff for a terminal, rebuilt from its rows by role: headers, then marked rows.

    File headers are ``--- a/path`` and ``+++ b/path`` (paths unquoted, then
    escaped on one line), hunk headers ``@@ ... @@``. A row's marker is followed
    by a space (``- ``, ``+ ``, two spaces for context), as ``difflib.ndiff``
    writes them, so no row can read as a header: a removed ``-- comment`` is
    ``- -- comment``, an added ``++ x`` is ``+ ++ x``. Lines that are neither
    header nor row (a diff cut through a header) start with ``TEXT_INDENT``.
    """
    out: list[str] = []
    files = parse_unified(diff)
    for file in files:
        if file.old_path is not None or file.new_path is not None:
            out.append("--- " + _side(file.old_path, "a/"))
            out.append("+++ " + _side(file.new_path, "b/"))
        out.extend(TEXT_INDENT + line_text(note) for note in file.notes)
        for hunk in file.hunks:
            out.append(line_text(hunk.header))
            for row, kind in zip(hunk.rows, _row_spaces(hunk, files, diff), strict=True):
                if row.role == "note":
                    out.append(_TEXT_MARKS["note"] + line_text(row.text))
                    continue
                parts = row_parts(row.text, kind)
                out.append(_TEXT_MARKS[row.role] + "".join(part for part, _ in parts))
                # Carets under escapes: a real carriage return is not a typed "\r".
                if marks := parts_marks(parts):
                    out.append(f"{_TEXT_MARKS['note']}{marks} {ESCAPE_MARKS_NOTE}")
    return out


_TEXT_MARKS = {"context": "  ", "add": "+ ", "del": "- ", "note": "\\ "}
_HTML_MARKS = {"context": " ", "add": "+", "del": "-", "note": "\\ "}


def _row_spaces(hunk: DiffHunk, files: list[DiffFile], diff: str) -> list[RowSpaces]:
    """``display.row_spaces`` of a hunk's rows. A diff cut short mid-line (``diff_truncated``)
    ends in a row cut where the line was not: no trailing whitespace is marked there."""
    kinds = row_spaces([(row.role, row.text) for row in hunk.rows])
    cut = diff and not diff.endswith("\n") and files[-1].hunks and hunk is files[-1].hunks[-1]
    if cut and kinds and kinds[-1] == "trailing":
        kinds[-1] = "odd"
    return kinds


def _side(path: str | None, prefix: str) -> str:
    """A file header's path, escaped. A name holding a letter past ASCII is C-quoted with every
    such character escaped, as git shows it (``"b/c\\u043enfig.py"``): a look-alike letter
    from another script never reads as the file it imitates."""
    if path is None:
        return "/dev/null"
    return (
        prefix + shown
        if (shown := line_text(path)).isascii()
        else quote_path(prefix + path, ascii_only=True)
    )


def _cut_files(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Each file of a write whose diff was cut, with its line counts and how much of it the
    cut diff still shows: a file past the cut is named here or nowhere (a summary need not)."""
    shown = [f.path for f in parse_unified(payload["diff"]) if f.new_path or f.old_path]
    out = []
    for file in payload.get("files") or []:
        path = str(file.get("path", ""))
        where = (
            "not shown above"
            if path not in shown
            else "cut short above"
            if shown and path == shown[-1]
            else "shown above"
        )
        out.append((path, f"+{file.get('added', 0):,} -{file.get('removed', 0):,}, {where}"))
    return out


def _waits(payload: dict[str, Any], live: bool) -> bool:
    """Whether a live card's step waits for a decision (a step a rewind dropped never will)."""
    return live and payload["status"] == "pending" and not payload.get("rewound")


def step_text(payload: dict[str, Any], *, live: bool = False) -> str:
    """The step as plain text (what a terminal client prints): every field escaped.

    ``live`` (the payload is ``step_payload``'s live one): a pending step's diff shows
    every line, as a console prints it before ``%grinta approve``.
    """
    status = payload["status"] + (", rewound" if payload.get("rewound") else "")
    branch = f" branch {payload['branch']}" if payload.get("branch") else ""
    head = f"[grinta step {payload['step']}{branch}] {line_text(payload['tool'])} ({status})"
    # The summary shares the header line, as on the card: no free text starts a line above the diff.
    summary = f" · {line_text(payload['summary'])}" if payload.get("summary") else ""
    lines = [head + summary]
    if payload.get("stale"):
        lines.append(block_text(payload["stale"], "stale: "))
    elif payload.get("restaged"):
        lines.append(TEXT_INDENT + RESTAGED_NOTE)
    command = _command(payload)
    for i, line in enumerate([] if command is None else command.split("\n")):
        # What will run, every line of it, marked as the CLI marks it.
        lines.append(f"{TEXT_INDENT}{'> ' if i else '$ '}{line_text(line)}")
        if marks := escape_marks(line):  # Python reads a lone "\r" as a line break
            lines.append(f"{TEXT_INDENT}  {marks} {ESCAPE_MARKS_NOTE}")
    for r in payload["resolutions"]:
        chosen = line_text(r["chosen"]) if r["chosen"] else "nothing"
        lines.append(f"resolved '{line_text(r['target'])}' -> {chosen} ({line_text(r['reason'])})")
    if payload["diff"]:
        diff_lines = diff_text_lines(payload["diff"])
        # A pending step's rows all show: a console approves what it printed.
        whole = _waits(payload, live)
        keep = len(diff_lines) if whole else MAX_TEXT_DIFF_LINES
        lines.extend(diff_lines[:keep])
        if len(diff_lines) > keep:
            lines.append(
                f"... {len(diff_lines) - keep} more diff lines (the session log has all of them)"
            )
        if payload.get("diff_truncated") and whole:
            lines.append(f"... {DIFF_CUT_PENDING_NOTE}")
            lines.extend(
                f"{TEXT_INDENT}{line_text(path)} ({counts})" for path, counts in _cut_files(payload)
            )
        elif payload.get("diff_truncated"):
            lines.append(f"... {DIFF_CUT_NOTE}")
    v = payload["validation"]
    if not v["ok"]:
        lines.append(block_text(v["message"] or "", f"{line_text(v['code'])}: "))
    if payload.get("reason"):
        lines.append(block_text(payload["reason"], _reason_label(payload) + ": "))
    obs = payload.get("observation")
    if obs and not payload["diff"] and obs["output"]:
        lines.append(block_text(obs["output"][:MAX_TEXT_OUTPUT_CHARS]))
    return "\n".join(lines)


def mark_text(mark: dict[str, Any]) -> str:
    """A mark as plain text: ``[grinta] Title`` and its text, every field escaped."""
    return (
        block_text(mark["text"], f"[grinta {line_text(mark['title'])}] ")
        if mark["text"]
        else (f"[grinta {line_text(mark['title'])}]")
    )


def _reason_label(payload: dict[str, Any]) -> str:
    """What a step's ``reason`` is: a veto's, or why the hunks left out of a partial approval were."""
    return "hunks declined" if payload.get("decision") == "approve_hunks" else "vetoed"


def session_text(payload: dict[str, Any]) -> str:
    m = payload["metrics"]
    return (
        f"[grinta session {line_text(payload['session'])}] {line_text(payload['end_reason'])}: "
        f"{line_text(payload['summary'] or '')}\n"
        + (f"error: {line_text(payload['error'])}\n" if payload.get("error") else "")
        + f"steps {m['steps']}, commits {m['commits']}, entropy {m['tool_entropy_bits']} bits, "
        f"tokens {m['prompt_tokens'] + m['completion_tokens']}"
    )


# -- HTML (inline styles only: it must survive GitHub's and nbviewer's sanitisers) -----------

_STATUS_COLORS = {
    "pending": "#b26b00",
    "committed": "#1a7f37",
    "done": "#57606a",
    "vetoed": "#cf222e",
    "refused": "#cf222e",
}
_CARD = (
    "border:1px solid #d0d7de;border-radius:6px;margin:6px 0;font-family:sans-serif;font-size:13px"
)
_MONO = "font-family:SFMono-Regular,Menlo,Consolas,monospace;font-size:12px"
# An escape is boxed and coloured so it reads apart from the same characters typed literally;
# the colour keeps its contrast on light and dark backgrounds alike.
_ESCAPE = "color:#d63384;border:1px solid;border-radius:3px"
_ROW_STYLES = {"add": "background:#e6ffec", "del": "background:#ffebe9", "context": "", "note": ""}
_NUM = "color:#8c959f;text-align:right;padding:0 4px;user-select:none"
_MUTED_ROW = "color:#57606a;padding:0 6px"


RESTAGED_NOTE = "staged again when the session resumed: the files had not changed"
STALE_TITLE = "Stale: staged again after the session resumed, and the files had changed"
_MARK_COLORS = {
    "task": "#0969da",
    "said": "#8250df",
    "rewind": "#9a6700",
    "condensed": "#57606a",
    "resumed": "#1a7f37",
    "ended": "#57606a",
    "recovery": "#9a6700",
}

MAX_STYLED_ESCAPES = 64  # per text: a styled escape costs ~90 bytes of saved notebook


def text_html(text: Any, *, keep_newlines: bool = True) -> str:
    """Untrusted text as HTML: markup escaped, control characters as styled escapes.

    Past ``MAX_STYLED_ESCAPES`` runs of escapes in one text, the rest are only made bold,
    so hostile text cannot swell a saved notebook, and still no escape reads as the same
    characters typed (a real carriage return as a typed ``\\r``).
    """
    return _parts_html(visible_parts(str(text), keep_newlines=keep_newlines))


def _parts_html(parts: list[tuple[str, bool]]) -> str:
    """``text_html`` of text already split into literal runs and escapes."""
    out, styled = [], 0
    for part, escaped in parts:
        if escaped and styled < MAX_STYLED_ESCAPES:
            out.append(f'<span class="grinta-escape" style="{_ESCAPE}">{part}</span>')
            styled += 1
        elif escaped:
            out.append(f"<b>{html.escape(part, quote=True)}</b>")
        else:
            out.append(html.escape(part, quote=True))
    return "".join(out)


def line_html(text: Any) -> str:
    """One line of untrusted text as HTML (a newline is shown as ``\\n``)."""
    return text_html(text, keep_newlines=False)


MAX_HTML_DIFF_LINES = 80  # inline styles cost ~200 bytes a row: keep saved notebooks small
MAX_HTML_DIFF_CHARS = 48_000  # and rows full of styled escapes cost more
# A pending diff's rows (HTML fallback of front ends without the panel): every row up to this.
MAX_LIVE_HTML_CHARS = 2_000_000


def diff_rows_html(diff: str, max_lines: int | None = MAX_HTML_DIFF_LINES) -> str:
    """A unified diff as table rows, each by its role in its hunk, with old and new line numbers.

    ``max_lines`` counts lines of the diff text (a file header is two); rows stop
    there or at ``MAX_HTML_DIFF_CHARS`` of HTML, and the rest is summed up in a
    last row. ``None``: a diff waiting for its decision, every row up to
    ``MAX_LIVE_HTML_CHARS`` (past it, the last row says to read the rest in the log).
    """
    items: list[tuple[int, str]] = []  # (lines of the diff it stands for, row)
    files = parse_unified(diff)
    for file in files:
        items.extend(_file_rows(file, files, diff))
    rows, used, size = [], 0, 0
    for cost, row in items:
        if (
            size + len(row) > MAX_LIVE_HTML_CHARS
            if max_lines is None
            else used + cost > max_lines or size + len(row) > MAX_HTML_DIFF_CHARS
        ):
            break
        rows.append(row)
        used += cost
        size += len(row)
    hidden = sum(cost for cost, _ in items) - used
    if hidden and max_lines is None:  # pending: Approve would commit rows not shown here
        rows.append(
            f'<tr class="grinta-diff-more"><td colspan="3" style="{_MUTED_ROW}">… {hidden} more '
            "diff lines are not shown here: read them in the event log before you approve</td></tr>"
        )
    elif hidden:
        rows.append(
            f'<tr class="grinta-diff-more"><td colspan="3" style="{_MUTED_ROW}">… {hidden} more '
            "diff lines (the full diff is in the event log)</td></tr>"
        )
    return "".join(rows)


def _file_rows(file: DiffFile, files: list[DiffFile], diff: str) -> list[tuple[int, str]]:
    items: list[tuple[int, str]] = []
    if file.old_path is not None or file.new_path is not None:
        status = "new file" if file.old_path is None else "deleted" if file.new_path is None else ""
        notes = [status] if status else []
        if not visible(file.path).isascii():  # a Cyrillic "о": cоnfig.py is not config.py
            notes.append(quote_path(file.path, ascii_only=True))
        status = (
            f' <span style="font-weight:normal;color:#57606a">({html.escape(", ".join(notes))})</span>'
            if notes
            else ""
        )
        items.append(
            (
                2,
                '<tr class="grinta-diff-file"><td colspan="3" '
                'style="background:#f6f8fa;font-weight:600;padding:2px 6px">'
                f"{line_html(file.path)}{status}</td></tr>",
            )
        )
    for note in file.notes:
        items.append(
            (
                1,
                f'<tr class="grinta-diff-note"><td colspan="3" style="{_MUTED_ROW}">'
                f"{line_html(note)}</td></tr>",
            )
        )
    for hunk in file.hunks:
        items.append(
            (
                1,
                '<tr class="grinta-diff-hunk"><td colspan="3" '
                f'style="color:#57606a;background:#ddf4ff;padding:0 6px">{line_html(hunk.header)}'
                "</td></tr>",
            )
        )
        for row, kind in zip(hunk.rows, _row_spaces(hunk, files, diff), strict=True):
            text = (
                line_html(row.text)
                if row.role == "note"
                else _parts_html(row_parts(row.text, kind))
            )
            old = "" if row.old_line is None else str(row.old_line)
            new = "" if row.new_line is None else str(row.new_line)
            code = "white-space:pre;padding:0 6px" + (
                ";color:#57606a" if row.role == "note" else ""
            )
            items.append(
                (
                    1,
                    f'<tr class="grinta-diff-row grinta-diff-{row.role}" '
                    f'style="{_ROW_STYLES[row.role]}"><td style="{_NUM}">{old}</td>'
                    f'<td style="{_NUM}">{new}</td><td style="{code}">'
                    f"{html.escape(_HTML_MARKS[row.role])}{text}</td></tr>",
                )
            )
    return items


def mark_html(mark: dict[str, Any]) -> str:
    """A mark between step cards: a coloured rule, its title, its text."""
    color = _MARK_COLORS.get(mark["kind"], "#57606a")
    return (
        f'<div class="grinta-mark grinta-mark-{html.escape(mark["kind"])}" style="margin:8px 0;'
        f"padding:2px 10px;border-left:3px solid {color};font-family:sans-serif;font-size:13px"
        f'"><b style="color:{color}">{line_html(mark["title"])}</b> '
        f'<span style="white-space:pre-wrap">{text_html(mark["text"])}</span></div>'
    )


def step_html(payload: dict[str, Any], *, live: bool = False) -> str:
    """The step's card in inline-styled HTML; ``live`` as in ``step_text``."""
    status = payload["status"]
    color = _STATUS_COLORS.get(status, "#57606a")
    decision = f" · {payload['decision']}" if payload.get("decision") else ""
    branch = f" (branch {payload['branch']})" if payload.get("branch") else ""
    rewound = (
        ' <span style="color:#9a6700;font-weight:600">rewound</span>'
        if payload.get("rewound")
        else ""
    )
    parts = [
        f'<div class="grinta-step" style="{_CARD}{";opacity:0.7" if rewound else ""}">',
        f'<div style="padding:6px 10px;border-bottom:1px solid #d0d7de;background:#f6f8fa">'
        f'<b>Step {payload["step"]}{branch}</b> · <code style="{_MONO}">'
        f'{line_html(payload["tool"])}</code> <span style="color:{color};font-weight:600">'
        f"{line_html(status + decision)}</span>{rewound} "
        f'<span style="color:#57606a">{line_html(payload.get("summary") or "")}</span>'
        "</div>",
        '<div style="padding:6px 10px">',
    ]
    if payload.get("stale"):
        parts.append(
            '<div class="grinta-stale" style="color:#9a6700;white-space:pre-wrap;margin-bottom:6px">'
            f"<b>{html.escape(STALE_TITLE)}</b>: {text_html(payload['stale'])}</div>"
        )
    elif payload.get("restaged"):
        parts.append(f'<div style="color:#57606a">{html.escape(RESTAGED_NOTE)}</div>')
    if payload.get("text"):
        parts.append(
            '<div style="white-space:pre-wrap;margin-bottom:6px">'
            f"{text_html(payload['text'])}</div>"
        )
    args = (
        payload["arguments"] if payload["arguments"] is not None else payload.get("raw_arguments")
    )
    shown = json.dumps(args, indent=2, ensure_ascii=False) if isinstance(args, dict) else args
    parts.append(
        f'<details><summary>call arguments</summary><pre style="{_MONO};white-space:pre-wrap">'
        f"{text_html(shown)}</pre></details>"
    )
    for r in payload["resolutions"]:
        parts.append(
            f'<div>resolved <code style="{_MONO}">{line_html(r["target"])}</code> → '
            f"<b>{line_html(r['chosen'] or 'nothing')}</b> "
            f'<span style="color:#57606a">({line_html(r["reason"])})</span>'
            + "".join(
                f'<div style="{_MONO};margin-left:1em">· {line_html(c)}</div>'
                for c in r["candidates"]
            )
            + "</div>"
        )
    if payload["diff"]:
        # A pending step's rows all show: Approve commits every one of them.
        rows = None if _waits(payload, live) else MAX_HTML_DIFF_LINES
        parts.append(
            f'<table style="{_MONO};border-collapse:collapse;width:100%;margin:6px 0">'
            f"{diff_rows_html(payload['diff'], rows)}</table>"
        )
        if payload.get("diff_truncated") and rows is None:
            files = "".join(
                f"<li>{line_html(path)} ({html.escape(counts)})</li>"
                for path, counts in _cut_files(payload)
            )
            parts.append(
                f'<div class="grinta-diff-cut" style="color:#9a6700;font-weight:600">'
                f'{html.escape(DIFF_CUT_PENDING_NOTE)}<ul style="margin:2px 0">{files}</ul></div>'
            )
        elif payload.get("diff_truncated"):
            parts.append(f'<div style="color:#57606a">{html.escape(DIFF_CUT_NOTE)}</div>')
    v = payload["validation"]
    if not v["ok"]:
        parts.append(
            f'<div style="color:#cf222e;margin:4px 0"><b>{line_html(v["code"])}</b>: '
            f'<span style="white-space:pre-wrap">{text_html(v["message"] or "")}</span></div>'
        )
        for c in v["candidates"]:
            label = (
                f"{c['path']}:{c['line']}"
                + (f" {c['name']}" if c.get("name") else "")
                + (f" ({c['note']})" if c.get("note") else "")
            )
            parts.append(
                f'<div style="margin-left:1em">{line_html(label)}'
                + (
                    f'<pre style="{_MONO};margin:2px 0">{text_html(c["snippet"])}</pre>'
                    if c.get("snippet")
                    else ""
                )
                + "</div>"
            )
    if payload.get("reason"):
        parts.append(
            '<div style="color:#cf222e;white-space:pre-wrap">'
            f"{_reason_label(payload)}: {text_html(payload['reason'])}</div>"
        )
    for g in payload["guards"]:
        parts.append(
            f'<div style="color:#9a6700">guard {line_html(g["guard"])}: {text_html(g["detail"])} '
            f"({line_html(g['action'])})</div>"
        )
    obs = payload.get("observation")
    if obs and not payload["diff"]:
        exit_code = f" (exit {obs['exit_code']})" if obs.get("exit_code") is not None else ""
        parts.append(
            f"<details><summary>result{html.escape(exit_code)}</summary>"
            f'<pre style="{_MONO};white-space:pre-wrap">{text_html(obs["output"])}</pre></details>'
        )
    parts.append("</div></div>")
    return "".join(parts)


def session_html(payload: dict[str, Any]) -> str:
    m = payload["metrics"]
    keys = [
        "steps",
        "commits",
        "tool_entropy_bits",
        "redundant_calls",
        "repeated_reads",
        "edit_retries",
        "validation_failure_total",
        "recoveries",
        "premature_finishes",
        "vetoes",
        "user_edits",
        "steps_to_first_edit",
        "prompt_tokens",
        "completion_tokens",
        "cost",
    ]
    from grinta_jupyter.events.metrics import SessionMetrics, shown_value

    rows = "".join(
        f'<tr><td style="padding:0 8px;color:#57606a">{html.escape(k)}</td>'
        f'<td style="text-align:right">{line_html(shown_value(m.get(k), SessionMetrics.unit(k)))}</td>'
        f'<td style="padding:0 8px;color:#57606a">{html.escape(SessionMetrics.unit(k) or "")}</td></tr>'
        for k in keys
    )
    return (
        f'<div class="grinta-session" style="{_CARD}">'
        '<div style="padding:6px 10px;background:#f6f8fa">'
        f"<b>grinta session</b> · {line_html(payload['model'])} · ended: "
        f"<b>{line_html(payload['end_reason'])}</b></div>"
        + (
            f'<div style="padding:2px 10px;color:#57606a">rules: '
            f"{line_html(rules_line(payload['rules']))}</div>"
            if payload.get("rules")
            else ""
        )
        + f'<div style="padding:6px 10px"><div style="white-space:pre-wrap">Task: '
        f"{text_html(payload['task'])}</div>"
        '<div style="white-space:pre-wrap">Summary: '
        f"{text_html(payload['summary'] or '(none)')}</div>"
        + (
            f'<div class="grinta-session-error" style="color:#cf222e;white-space:pre-wrap">'
            f"Error: {text_html(payload['error'])}</div>"
            if payload.get("error")
            else ""
        )
        + f'<table style="{_MONO};margin-top:6px">{rows}</table></div></div>'
    )


def rules_line(rules: list[dict[str, Any]]) -> str:
    """The rules files a session loaded, on one line: ``AGENTS.md, CLAUDE.md (cut to 8,000 chars)``."""
    return ", ".join(
        r["path"] + (f" (cut to {r['chars']:,} characters)" if r.get("truncated") else "")
        for r in rules
    )


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not saved in the notebook]"


def _command(payload: dict[str, Any]) -> str | None:
    """The text a command step runs (``run``'s command, ``execute``'s code), if it has one."""
    arguments = payload.get("arguments") or {}
    if payload.get("kind") != "command":
        return None
    text = arguments.get("command", arguments.get("code"))
    return text if isinstance(text, str) else None


def _bound_args(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: _cut(v, MAX_ARG_CHARS) if isinstance(v, str) else v for k, v in arguments.items()}


def _redact_keys(data: Any, secrets: Secrets) -> Any:
    """``data`` with secrets redacted from its keys too: a model's arguments are all its text."""
    if isinstance(data, dict):
        return {secrets.redact(str(k)): _redact_keys(v, secrets) for k, v in data.items()}
    if isinstance(data, list):
        return [_redact_keys(v, secrets) for v in data]
    return data
