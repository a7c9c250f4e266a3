"""Steps and sessions as MIME bundles: a versioned JSON payload plus HTML and text.

The JSON (``application/vnd.grinta.step+json``, docs/mime-schema.md) is what
the labextension renders. The HTML is self-contained (inline styles, no
script), so a saved notebook still reads on GitHub and nbviewer. Sizes are
bounded so a notebook that ran a session stays small.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from grinta_jupyter.events.log import redact

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.step import Step

STEP_MIME = "application/vnd.grinta.step+json"
SESSION_MIME = "application/vnd.grinta.session+json"
SCHEMA_VERSION = 1
MAX_DIFF_CHARS = 8_000
MAX_OUTPUT_CHARS = 4_000
MAX_TEXT_DIFF_LINES = 60
MAX_ARG_CHARS = 2_000  # a create's content is also in the diff


def step_status(step: Step) -> str:
    p = step.proposal
    if step.decision == "veto":
        return "vetoed"
    if step.observation is None:
        return "refused" if p.error is not None else "pending"
    if p.kind == "finish":  # a finish the guard sent back did not end anything
        return "done" if step.observation.ok else "refused"
    if p.kind == "write":
        return "committed" if step.observation.ok else "refused"
    if p.error is not None:
        return "refused"
    return "committed" if p.kind == "command" else "done"


def step_payload(step: Step, session_id: str) -> dict[str, Any]:
    """The JSON payload of one step (schema version 1)."""
    p = step.proposal
    try:
        parsed = json.loads(step.call.arguments or "{}")
        arguments, raw = (parsed, None) if isinstance(parsed, dict) else (None, step.call.arguments)
    except ValueError:
        arguments, raw = None, step.call.arguments
    diff = p.diff
    error = p.error
    obs = step.observation
    payload = {
        "version": SCHEMA_VERSION,
        "session": session_id,
        "step": step.number,
        "tool": step.call.name,
        "kind": p.kind,
        "status": step_status(step),
        "text": step.text,
        "arguments": _bound_args(arguments) if arguments is not None else None,
        "raw_arguments": _cut(raw, MAX_ARG_CHARS) if raw is not None else None,
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
        "diff": _cut(diff, MAX_DIFF_CHARS),
        "diff_truncated": len(diff) > MAX_DIFF_CHARS,
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
        else {
            "ok": obs.ok,
            "output": _cut(obs.output, MAX_OUTPUT_CHARS),
            "exit_code": obs.exit_code,
        },
        "guards": [{"guard": g.guard, "detail": g.detail, "action": g.action} for g in step.guards],
    }
    return json.loads(redact(json.dumps(payload)))


def session_payload(session: Session) -> dict[str, Any]:
    from grinta_jupyter.events.metrics import summarize

    metrics = summarize(session.log.events)
    metrics.pop("context_tokens", None)
    payload = {
        "version": SCHEMA_VERSION,
        "session": session.id,
        "task": session.task,
        "model": getattr(session.model, "name", "model"),
        "toolset": session.runtime.toolset.name,
        "root": str(session.root),
        "end_reason": session.end_reason,
        "summary": session.summary,
        "metrics": metrics,
        "log": str(session.log_path) if session.log_path else None,
    }
    return json.loads(redact(json.dumps(payload)))


def trace_bundle(session: Session) -> dict[str, Any]:
    """The whole session so far as one output: the session payload with its steps."""
    payload = session_payload(session)
    payload["steps"] = [step_payload(step, session.id) for step in session.steps]
    body = "".join(step_html(p) for p in payload["steps"])
    if session.done:
        body += session_html(payload)
    text = (
        "\n\n".join(step_text(p) for p in payload["steps"])
        or f"[grinta session {session.id}] starting"
    )
    return {
        SESSION_MIME: payload,
        "text/html": f'<div class="grinta-trace">{body}</div>',
        "text/plain": text,
    }


def step_bundle(step: Step, session_id: str) -> dict[str, Any]:
    payload = step_payload(step, session_id)
    return {STEP_MIME: payload, "text/html": step_html(payload), "text/plain": step_text(payload)}


def session_bundle(session: Session) -> dict[str, Any]:
    payload = session_payload(session)
    return {
        SESSION_MIME: payload,
        "text/html": session_html(payload),
        "text/plain": session_text(payload),
    }


# -- text ----------------------------------------------------------------------------


def step_text(payload: dict[str, Any]) -> str:
    lines = [f"[grinta step {payload['step']}] {payload['tool']} ({payload['status']})"]
    if payload.get("summary"):
        lines.append(payload["summary"])
    for r in payload["resolutions"]:
        lines.append(f"resolved {r['target']!r} -> {r['chosen'] or 'nothing'} ({r['reason']})")
    if payload["diff"]:
        diff_lines = payload["diff"].rstrip().splitlines()
        lines.extend(diff_lines[:MAX_TEXT_DIFF_LINES])
        if len(diff_lines) > MAX_TEXT_DIFF_LINES:
            lines.append(f"... {len(diff_lines) - MAX_TEXT_DIFF_LINES} more diff lines")
    v = payload["validation"]
    if not v["ok"]:
        lines.append(f"{v['code']}: {v['message']}")
    if payload.get("reason"):
        lines.append(f"vetoed: {payload['reason']}")
    obs = payload.get("observation")
    if obs and not payload["diff"]:
        lines.append(obs["output"][:1500])
    return "\n".join(lines)


def session_text(payload: dict[str, Any]) -> str:
    m = payload["metrics"]
    return (
        f"[grinta session {payload['session']}] {payload['end_reason']}: {payload['summary'] or ''}\n"
        f"steps {m['steps']}, commits {m['commits']}, entropy {m['tool_entropy_bits']} bits, "
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


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


MAX_HTML_DIFF_LINES = 80  # inline styles cost ~200 bytes a row: keep saved notebooks small


def diff_rows_html(diff: str, max_lines: int = MAX_HTML_DIFF_LINES) -> str:
    """A unified diff as table rows with old and new line numbers."""
    rows = []
    old = new = 0
    lines = diff.splitlines()
    if len(lines) > max_lines:
        lines, hidden = lines[:max_lines], len(lines) - max_lines
    else:
        hidden = 0
    for line in lines:
        if line.startswith("--- ") or line.startswith("+++ "):
            if line.startswith("+++ "):
                name = line[4:].removeprefix("b/")
                rows.append(
                    f'<tr><td colspan="3" style="background:#f6f8fa;font-weight:600;padding:2px 6px">'
                    f"{_esc(name)}</td></tr>"
                )
            continue
        if line.startswith("@@"):
            try:
                parts = line.split(" ")
                old = int(parts[1][1:].split(",")[0])
                new = int(parts[2][1:].split(",")[0])
            except (IndexError, ValueError):
                pass
            rows.append(
                f'<tr><td colspan="3" style="color:#57606a;background:#ddf4ff;padding:0 6px">'
                f"{_esc(line)}</td></tr>"
            )
            continue
        if line.startswith("\\"):
            rows.append(f'<tr><td></td><td></td><td style="color:#57606a">{_esc(line)}</td></tr>')
            continue
        mark, body = line[:1], line[1:]
        if mark == "+":
            style, cells = "background:#e6ffec", ("", str(new))
            new += 1
        elif mark == "-":
            style, cells = "background:#ffebe9", (str(old), "")
            old += 1
        else:
            style, cells = "", (str(old), str(new))
            old += 1
            new += 1
        num = "color:#8c959f;text-align:right;padding:0 4px;user-select:none"
        rows.append(
            f'<tr style="{style}"><td style="{num}">{cells[0]}</td><td style="{num}">{cells[1]}</td>'
            f'<td style="white-space:pre;padding:0 6px">{_esc(mark + body)}</td></tr>'
        )
    if hidden:
        rows.append(
            f'<tr><td colspan="3" style="color:#57606a;padding:2px 6px">… {hidden} more diff lines '
            "(the full diff is in the event log)</td></tr>"
        )
    return "".join(rows)


def step_html(payload: dict[str, Any]) -> str:
    status = payload["status"]
    color = _STATUS_COLORS.get(status, "#57606a")
    decision = f" · {payload['decision']}" if payload.get("decision") else ""
    parts = [
        f'<div class="grinta-step" style="{_CARD}">',
        f'<div style="padding:6px 10px;border-bottom:1px solid #d0d7de;background:#f6f8fa">'
        f'<b>Step {payload["step"]}</b> · <code style="{_MONO}">{_esc(payload["tool"])}</code> '
        f'<span style="color:{color};font-weight:600">{_esc(status)}{_esc(decision)}</span> '
        f'<span style="color:#57606a">{_esc(payload.get("summary") or "")}</span></div>',
        '<div style="padding:6px 10px">',
    ]
    if payload.get("text"):
        parts.append(
            f'<div style="white-space:pre-wrap;margin-bottom:6px">{_esc(payload["text"])}</div>'
        )
    args = (
        payload["arguments"] if payload["arguments"] is not None else payload.get("raw_arguments")
    )
    parts.append(
        f'<details><summary>call arguments</summary><pre style="{_MONO};white-space:pre-wrap">'
        f"{_esc(json.dumps(args, indent=2) if isinstance(args, dict) else args)}</pre></details>"
    )
    for r in payload["resolutions"]:
        parts.append(
            f'<div>resolved <code style="{_MONO}">{_esc(r["target"])}</code> → '
            f'<b>{_esc(r["chosen"] or "nothing")}</b> <span style="color:#57606a">({_esc(r["reason"])})</span>'
            + "".join(
                f'<div style="{_MONO};margin-left:1em">· {_esc(c)}</div>' for c in r["candidates"]
            )
            + "</div>"
        )
    if payload["diff"]:
        cut = " (truncated)" if payload.get("diff_truncated") else ""
        parts.append(
            f'<table style="{_MONO};border-collapse:collapse;width:100%;margin:6px 0">'
            f"{diff_rows_html(payload['diff'])}</table>{_esc(cut)}"
        )
    v = payload["validation"]
    if not v["ok"]:
        parts.append(
            f'<div style="color:#cf222e;margin:4px 0"><b>{_esc(v["code"])}</b>: {_esc(v["message"])}</div>'
        )
        for c in v["candidates"]:
            label = (
                f"{c['path']}:{c['line']}"
                + (f" {c['name']}" if c.get("name") else "")
                + (f" ({c['note']})" if c.get("note") else "")
            )
            parts.append(
                f'<div style="margin-left:1em">{_esc(label)}'
                + (
                    f'<pre style="{_MONO};margin:2px 0">{_esc(c["snippet"])}</pre>'
                    if c.get("snippet")
                    else ""
                )
                + "</div>"
            )
    if payload.get("reason"):
        parts.append(f'<div style="color:#cf222e">vetoed: {_esc(payload["reason"])}</div>')
    for g in payload["guards"]:
        parts.append(
            f'<div style="color:#9a6700">guard {_esc(g["guard"])}: {_esc(g["detail"])} '
            f"({_esc(g['action'])})</div>"
        )
    obs = payload.get("observation")
    if obs and not payload["diff"]:
        parts.append(
            f"<details><summary>result{' (exit ' + str(obs['exit_code']) + ')' if obs.get('exit_code') is not None else ''}"
            f'</summary><pre style="{_MONO};white-space:pre-wrap">{_esc(obs["output"])}</pre></details>'
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
    rows = "".join(
        f'<tr><td style="padding:0 8px;color:#57606a">{_esc(k)}</td><td>{_esc(m.get(k))}</td></tr>'
        for k in keys
    )
    return (
        f'<div class="grinta-session" style="{_CARD}"><div style="padding:6px 10px;background:#f6f8fa">'
        f"<b>grinta session</b> · {_esc(payload['model'])} · ended: <b>{_esc(payload['end_reason'])}</b></div>"
        f'<div style="padding:6px 10px"><div>Task: {_esc(payload["task"])}</div>'
        f'<div style="white-space:pre-wrap">Summary: {_esc(payload["summary"] or "(none)")}</div>'
        f'<table style="{_MONO};margin-top:6px">{rows}</table></div></div>'
    )


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not saved in the notebook]"


def _bound_args(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: _cut(v, MAX_ARG_CHARS) if isinstance(v, str) else v for k, v in arguments.items()}
