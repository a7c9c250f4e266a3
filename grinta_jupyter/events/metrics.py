"""Metrics computed from an event log. Every definition is in docs/metrics.md.

A log given by path is read with ``events.log.read_log``: a path that is
missing, not a file, unreadable, empty, or not a grinta session log raises
``LogError`` with one line saying which, for front ends to show as is.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_events, read_log

_READ_TOOLS = {"read"}


def summarize(source: str | os.PathLike[str] | Iterable[ev.Event | dict]) -> dict[str, Any]:
    """Behaviour metrics of one session, from its log path (see ``read_log``) or its events."""
    events = read_log(source) if isinstance(source, (str, os.PathLike)) else read_events(source)
    start = next((e for e in events if isinstance(e, ev.SessionStart)), None)
    end = next((e for e in events if isinstance(e, ev.SessionEnd)), None)
    proposals = [e for e in events if isinstance(e, ev.ToolProposed) and not e.edited]
    requests = [e for e in events if isinstance(e, ev.ModelRequest)]
    replies = [e for e in events if isinstance(e, ev.ModelReplied)]

    counts = Counter(p.tool for p in proposals)
    total = sum(counts.values())
    entropy = -sum((n / total) * math.log2(n / total) for n in counts.values()) if total else 0.0

    signatures = [(p.tool, _canonical(p.arguments)) for p in proposals]
    redundant = sum(n - 1 for n in Counter(signatures).values() if n > 1)

    failures_by_code: Counter[str] = Counter()
    for e in events:
        if isinstance(e, ev.Validated) and not e.ok and e.code:
            failures_by_code[e.code] += 1

    return {
        "session": start.session if start else None,
        "task": start.task if start else None,
        "model": start.model if start else None,
        "toolset": start.toolset if start else None,
        "end_reason": end.reason if end else None,
        "steps": len(proposals),
        "model_turns": len(replies),
        "tool_calls": dict(counts),
        "tool_entropy_bits": round(entropy, 4),
        "redundant_calls": redundant,
        "repeated_reads": _repeated_reads(events),
        "edit_retries": _edit_retries(events),
        "validation_failures": dict(failures_by_code),
        "validation_failure_total": sum(failures_by_code.values()),
        "recoveries": _recoveries(events),
        "context_tokens": [r.tokens for r in requests],
        "context_growth_per_request": _slope([r.tokens for r in requests]),
        **_first_edit(events),
        "premature_finishes": sum(
            1 for e in events if isinstance(e, ev.FinishAttempt) and not e.accepted
        ),
        "finished": any(isinstance(e, ev.FinishAttempt) and e.accepted for e in events),
        "vetoes": sum(1 for e in events if isinstance(e, ev.UserDecision) and e.decision == "veto"),
        "user_edits": sum(
            1 for e in events if isinstance(e, ev.UserDecision) and e.decision == "edit"
        ),
        "guards_fired": dict(Counter(e.guard for e in events if isinstance(e, ev.GuardFired))),
        "commits": sum(1 for e in events if isinstance(e, ev.Committed) and e.ok),
        "prompt_tokens": sum(r.prompt_tokens for r in replies),
        "completion_tokens": sum(r.completion_tokens for r in replies),
        "cost": None
        if any(r.cost is None for r in replies) and replies
        else round(sum(r.cost or 0.0 for r in replies), 6),
        "duration": round(events[-1].t, 3) if events else 0.0,
    }


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments


def _read_key(arguments: str) -> str | None:
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    return json.dumps(
        {k: args.get(k) for k in ("path", "symbol", "start_line", "end_line", "outline")},
        sort_keys=True,
    )


def _repeated_reads(events: list[ev.Event]) -> int:
    """Reads of the same region (path/symbol/range) with no successful commit in between."""
    seen: set[str] = set()
    repeated = 0
    for e in events:
        if isinstance(e, ev.Committed) and e.ok or isinstance(e, ev.Undone) and e.ok:
            seen.clear()  # files changed: reading again is legitimate
        elif isinstance(e, ev.ToolProposed) and e.tool in _READ_TOOLS:
            key = _read_key(e.arguments)
            if key is None:
                continue
            if key in seen:
                repeated += 1
            seen.add(key)
    return repeated


def _write_outcomes(events: list[ev.Event]) -> list[tuple[str, bool]]:
    """(target, succeeded) for every write call, in order; a veto counts as a failure."""
    kinds = {e.call_id: e.kind for e in events if isinstance(e, ev.ToolProposed)}
    outcomes = []
    for e in events:
        if isinstance(e, ev.Observed) and kinds.get(e.call_id) == "write":
            outcomes.append((e.target or "?", e.ok))
    return outcomes


def _edit_retries(events: list[ev.Event]) -> int:
    """Write calls that follow a failed write on the same target."""
    failed: set[str] = set()
    retries = 0
    for target, ok in _write_outcomes(events):
        if target in failed:
            retries += 1
        if ok:
            failed.discard(target)
        else:
            failed.add(target)
    return retries


def _recoveries(events: list[ev.Event]) -> int:
    """Failures of a call on some target later followed by a success on the same target."""
    kinds = {e.call_id: e.kind for e in events if isinstance(e, ev.ToolProposed)}
    failed: set[tuple[str, str]] = set()
    recovered = 0
    for e in events:
        if not isinstance(e, ev.Observed) or e.tool == "finish":
            continue
        key = (kinds.get(e.call_id, ""), e.target or e.tool)
        if not e.ok and e.code != "VETO":
            failed.add(key)
        elif e.ok and key in failed:
            recovered += 1
            failed.discard(key)
    return recovered


def _first_edit(events: list[ev.Event]) -> dict[str, Any]:
    for e in events:
        if isinstance(e, ev.Committed) and e.ok:
            return {"time_to_first_edit": e.t, "steps_to_first_edit": e.step}
    return {"time_to_first_edit": None, "steps_to_first_edit": None}


def _slope(values: list[int]) -> float:
    """Least-squares tokens added per request."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return round(num / den, 2)


def format_summary(metrics: dict[str, Any]) -> str:
    """A plain-text table of the metrics, for the CLI and text outputs."""
    rows = []
    for key, value in metrics.items():
        if key == "context_tokens":
            value = f"{len(value)} requests, {value[0] if value else 0} -> {value[-1] if value else 0} tokens"
        rows.append(f"{key:<28} {value}")
    return "\n".join(rows)
