"""A notebook of pre-baked grinta outputs (docs/mime-schema.md), for rendering tests.

Every output carries the step or session MIME type plus the ``text/html`` and
``text/plain`` fallbacks a real session writes, so a test can also check that
JupyterLab prefers the extension's card. The diffs come from the runtime's own
``unified_diff`` on the bundled raft_kv sample, so they have the real format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grinta_jupyter.runtime.diffs import unified_diff
from grinta_jupyter.samples.core import SAMPLES_DIR

STEP_MIME = "application/vnd.grinta.step+json"
SESSION_MIME = "application/vnd.grinta.session+json"
SESSION_ID = "20261130-101500-ab12cd"
NODE_PY = "raft_kv/node.py"
FALLBACK_HTML = "<p>grinta step (HTML fallback)</p>"

# A kernel name no machine has: the notebook opens without starting a kernel.
NO_KERNEL = {"name": "grinta-prebaked", "display_name": "No kernel (pre-baked outputs)"}

OLD_CHECK = "        if self.log.term_at(request.prev_log_index) < request.prev_log_term:\n"
NEW_CHECK = "        if self.log.term_at(request.prev_log_index) != request.prev_log_term:\n"


def _node_source() -> str:
    return (SAMPLES_DIR / "raft_kv" / NODE_PY).read_text()


def _step(**fields: Any) -> dict[str, Any]:
    step: dict[str, Any] = {
        "version": 1,
        "session": SESSION_ID,
        "step": 1,
        "tool": "read",
        "kind": "read",
        "status": "done",
        "text": "",
        "arguments": {},
        "raw_arguments": None,
        "summary": "",
        "resolutions": [],
        "diff": "",
        "diff_truncated": False,
        "files": [],
        "validation": {"ok": True, "code": None, "message": None, "candidates": []},
        "decision": None,
        "reason": None,
        "edits": 0,
        "observation": None,
        "guards": [],
    }
    step.update(fields)
    return step


def pending_write() -> dict[str, Any]:
    """A replace_string waiting for approval, with a one-line diff in node.py."""
    old = _node_source()
    assert OLD_CHECK in old, "the raft_kv sample changed: update tests/browser/cards.py"
    diff = unified_diff(NODE_PY, old, old.replace(OLD_CHECK, NEW_CHECK))
    return _step(
        step=3,
        tool="replace_string",
        kind="write",
        status="pending",
        text=(
            "The follower only rejects entries when its term at prev_log_index is "
            "*lower* than the leader's; any mismatch must be rejected. Fixing the comparison:"
        ),
        arguments={
            "path": NODE_PY,
            "old_string": OLD_CHECK.strip(),
            "new_string": NEW_CHECK.strip(),
        },
        summary=f"replaced 1 occurrence in {NODE_PY}",
        resolutions=[
            {
                "target": "RaftNode.handle_append_entries",
                "chosen": f"{NODE_PY}:268 method RaftNode.handle_append_entries",
                "reason": "the only definition with this name",
                "candidates": [],
            }
        ],
        diff=diff.text,
        files=[{"path": NODE_PY, "added": 1, "removed": 1}],
    )


def vetoed_rewrite() -> dict[str, Any]:
    """A sweeping multiedit the user vetoed: a diff long enough to start collapsed."""
    old = _node_source()
    lines = old.splitlines(keepends=True)
    # Annotate every 20th line: many separate hunks, well over the 80-row limit.
    new = "".join(
        line.rstrip("\n") + "  # reviewed\n" if i % 20 == 10 and line.strip() else line
        for i, line in enumerate(lines)
    )
    diff = unified_diff(NODE_PY, old, new)
    return _step(
        step=4,
        tool="multiedit",
        kind="write",
        status="vetoed",
        text="I'll mark every reviewed line so we can track progress.",
        arguments={"edits": [{"path": NODE_PY, "old_string": "...", "new_string": "..."}]},
        summary=f"{len(diff.added)} edits in {NODE_PY}",
        diff=diff.text,
        files=[{"path": NODE_PY, "added": len(diff.added), "removed": diff.removed}],
        decision="veto",
        reason="No drive-by comments; fix only the follower's log check.",
    )


def refused_ambiguous() -> dict[str, Any]:
    """A replace_string refused with AMBIGUOUS_MATCH and its three candidates."""
    lines = _node_source().splitlines()
    hits = [i for i, line in enumerate(lines) if "return self._append_entries_reply(" in line]
    candidates = [
        {
            "path": NODE_PY,
            "line": i + 1,
            "snippet": "\n".join(lines[max(0, i - 2) : i + 3]),
            "note": f"occurrence {n + 1} of {len(hits)}",
            "kind": "",
            "name": "",
        }
        for n, i in enumerate(hits)
    ]
    message = (
        f"old_string occurs {len(hits)} times in {NODE_PY}; make it unique "
        "(add surrounding lines) or set replace_all"
    )
    return _step(
        step=5,
        tool="replace_string",
        kind="write",
        status="refused",
        text="Returning the conflict index as well:",
        arguments={
            "path": NODE_PY,
            "old_string": "return self._append_entries_reply(",
            "new_string": "return self._reply(",
        },
        validation={
            "ok": False,
            "code": "AMBIGUOUS_MATCH",
            "message": message,
            "candidates": candidates,
        },
    )


def command_with_guard() -> dict[str, Any]:
    """A committed test run with its output, on which a guard fired."""
    output = "\n".join(
        [f"tests/test_replication.py::test_case_{i} PASSED" for i in range(1, 19)]
        + ["", "18 passed in 0.42s"]
    )
    return _step(
        step=6,
        tool="run",
        kind="command",
        status="committed",
        arguments={"command": "python -m pytest -q tests/test_replication.py"},
        summary="exit 0",
        decision="auto",
        observation={"ok": True, "output": output, "exit_code": 0},
        guards=[
            {"guard": "repeated_command", "detail": "same command as step 2", "action": "warn"}
        ],
    )


def session_summary() -> dict[str, Any]:
    return {
        "version": 1,
        "session": SESSION_ID,
        "task": "Followers accept entries whose previous term does not match. Fix it.",
        "model": "demo",
        "toolset": "intent",
        "root": "/tmp/raft_kv",
        "end_reason": "finished",
        "summary": "Fixed the log-matching check in RaftNode.handle_append_entries.",
        "metrics": {
            "steps": 6,
            "commits": 1,
            "tool_entropy_bits": 1.918,
            "tool_calls": {"read": 2, "replace_string": 2, "multiedit": 1, "run": 1},
            "vetoes": 1,
            "context_tokens": [1200, 1480, 1920, 2210, 2500, 2800, 3100, 3300, 3900, 4100],
            "cost": None,
            "duration": 12.5,
        },
        "log": f"/tmp/raft_kv/.grinta/sessions/{SESSION_ID}.jsonl",
    }


def live_trace() -> dict[str, Any]:
    """A running session shown as one output: the session payload with its steps."""
    trace = session_summary()
    trace.update(end_reason=None, summary=None, steps=[pending_write(), refused_ambiguous()])
    return trace


BROKEN = {"version": 1, "session": SESSION_ID, "step": 7, "kind": "write", "status": 42}
FUTURE = {"version": 7, "session": SESSION_ID, "step": 8, "hologram": True}


def _output(mime: str, data: dict[str, Any], plain: str) -> dict[str, Any]:
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {mime: data, "text/html": FALLBACK_HTML, "text/plain": plain},
    }


def cards_notebook() -> dict[str, Any]:
    """The notebook: one code cell per card, in session order."""
    cells = [
        ("# step 3: pending write", _output(STEP_MIME, pending_write(), "step 3 pending")),
        ("# step 4: vetoed rewrite", _output(STEP_MIME, vetoed_rewrite(), "step 4 vetoed")),
        ("# step 5: refused", _output(STEP_MIME, refused_ambiguous(), "step 5 refused")),
        ("# step 6: command", _output(STEP_MIME, command_with_guard(), "step 6 run")),
        ("# session", _output(SESSION_MIME, session_summary(), "session finished")),
        ("# live trace", _output(SESSION_MIME, live_trace(), "session running")),
        ("# broken payload", _output(STEP_MIME, BROKEN, "step 7")),
        ("# unknown version", _output(STEP_MIME, FUTURE, "step 8")),
    ]
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": NO_KERNEL},
        "cells": [
            {
                "cell_type": "code",
                "id": f"cell-{i}",
                "execution_count": None,
                "metadata": {},
                "source": source,
                "outputs": [output],
            }
            for i, (source, output) in enumerate(cells)
        ],
    }


def write_cards_notebook(path: Path) -> Path:
    path.write_text(json.dumps(cards_notebook(), indent=1))
    return path
