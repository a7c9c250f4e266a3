"""Metrics of one session, as one typed model. Every definition is in docs/metrics.md.

``measure(log)`` gives a ``SessionMetrics``: the CLI prints its ``table()``,
the experiment stores its JSON form in each run's result, and the session
card shows it. Each measure carries its unit (``Unit``): seconds, tokens,
dollars, or a count; a cost that is not known is None, shown as "unknown".
The JSON form (``to_json``, ``summarize``) keeps the keys results files have
always had.

A log given by path is read with ``events.log.read_log``: a path that is
missing, not a file, unreadable, empty, or not a grinta session log raises
``LogError`` with one line saying which, for front ends to show as is.
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict

from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_events, read_log
from grinta_jupyter.runtime.display import visible

_READ_TOOLS = {"read"}

Source = str | os.PathLike[str] | Iterable[ev.Event | dict[str, Any]]


@dataclass(frozen=True)
class Unit:
    """What a measure counts, as the table shows it."""

    name: str


Seconds = Unit("seconds")
Tokens = Unit("tokens")
Dollars = Unit("dollars")
Calls = Unit("calls")


class SessionMetrics(BaseModel):
    """Behaviour metrics of one session (docs/metrics.md defines each)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: str | None
    task: str | None
    model: str | None
    toolset: str | None
    end_reason: str | None
    steps: Annotated[int, Calls]
    model_turns: Annotated[int, Unit("turns")]
    tool_calls: Annotated[dict[str, int], Calls]
    tool_entropy_bits: Annotated[float, Unit("bits")]
    redundant_calls: Annotated[int, Calls]
    repeated_reads: Annotated[int, Unit("reads")]
    edit_retries: Annotated[int, Calls]
    validation_failures: Annotated[dict[str, int], Unit("refusals")]
    validation_failure_total: Annotated[int, Unit("refusals")]
    recoveries: Annotated[int, Unit("recoveries")]
    context_tokens: Annotated[list[int], Tokens]
    context_growth_per_request: Annotated[float, Unit("tokens per request")]
    largest_request: Annotated[int, Tokens] = 0  # the largest of ``context_tokens``
    context_budget: Annotated[int | None, Tokens] = None  # what requests had to stay under
    condensations: Annotated[int, Unit("condensations")] = 0
    condensed_tokens_saved: Annotated[int, Tokens] = 0  # tokens_before - tokens_after, summed
    # The requests (1-based, positions in ``context_tokens``) that came first after each
    # condensation: where the series drops.
    condensed_at: Annotated[list[int], Unit("requests")] = []
    tasks: Annotated[int, Unit("tasks")] = 1  # the first task and each next one
    user_messages: Annotated[int, Unit("messages")] = 0  # what the user said mid-run
    rewinds: Annotated[int, Unit("rewinds")] = 0
    time_to_first_edit: Annotated[float | None, Seconds]
    steps_to_first_edit: Annotated[int | None, Unit("steps")]
    premature_finishes: Annotated[int, Unit("finishes")]
    finished: bool
    vetoes: Annotated[int, Unit("decisions")]
    user_edits: Annotated[int, Unit("decisions")]
    guards_fired: Annotated[dict[str, int], Unit("firings")]
    commits: Annotated[int, Unit("commits")]
    prompt_tokens: Annotated[int, Tokens]
    completion_tokens: Annotated[int, Tokens]
    cost: Annotated[float | None, Dollars]  # None: some reply's price was not known
    duration: Annotated[float, Seconds]

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def unit(cls, name: str) -> str | None:
        """The unit of the measure ``name`` ("seconds", "tokens", ...), None for a label."""
        return next((m.name for m in cls.model_fields[name].metadata if isinstance(m, Unit)), None)

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the keys of ``grinta metrics --json`` and of each run's result."""
        return self.model_dump(mode="json")

    def table(self, width: int = 80) -> str:
        """A plain-text table with units, ``width`` columns wide, for terminals and cells."""
        return format_table(self, width)


def measure(source: Source) -> SessionMetrics:
    """Behaviour metrics of one session, from its log path (see ``read_log``) or its events."""
    read = read_log(source) if isinstance(source, (str, os.PathLike)) else read_events(source)
    events = _in_order(read)
    # A call asked again after a resume is one call: its second proposal, and what was
    # decided on its first one before the interruption, are not counted twice.
    superseded = _superseded(events)
    counted = [e for i, e in enumerate(events) if i not in superseded]
    start = next((e for e in events if isinstance(e, ev.SessionStart)), None)
    # A session given next tasks ends once per task: the last end is where it stands.
    end = next((e for e in reversed(events) if isinstance(e, ev.SessionEnd)), None)
    proposals = [e for e in counted if isinstance(e, ev.ToolProposed) and not e.edited]
    requests = [e for e in events if isinstance(e, ev.ModelRequest)]
    replies = [e for e in events if isinstance(e, ev.ModelReplied)]
    condensed = [e for e in events if isinstance(e, ev.Condensed)]

    counts = Counter(p.tool for p in proposals)
    total = sum(counts.values())
    entropy = -sum((n / total) * math.log2(n / total) for n in counts.values()) if total else 0.0

    signatures = [(p.tool, _canonical(p.arguments)) for p in proposals]
    redundant = sum(n - 1 for n in Counter(signatures).values() if n > 1)

    failures_by_code: Counter[str] = Counter()
    for e in counted:
        if isinstance(e, ev.Validated) and not e.ok and e.code:
            failures_by_code[e.code] += 1
    first_edit = _first_edit(events)

    return SessionMetrics(
        session=start.session if start else None,
        task=start.task if start else None,
        model=start.model if start else None,
        toolset=start.toolset if start else None,
        end_reason=end.reason if end else None,
        steps=len(proposals),
        model_turns=len(replies),
        tool_calls=dict(counts),
        tool_entropy_bits=round(entropy, 4),
        redundant_calls=redundant,
        repeated_reads=_repeated_reads(counted),
        edit_retries=_edit_retries(events),
        validation_failures=dict(failures_by_code),
        validation_failure_total=sum(failures_by_code.values()),
        recoveries=_recoveries(events),
        context_tokens=[r.tokens for r in requests],
        context_growth_per_request=_slope([r.tokens for r in requests]),
        largest_request=max((r.tokens for r in requests), default=0),
        context_budget=next((r.budget for r in reversed(requests) if r.budget), None),
        condensations=len(condensed),
        condensed_tokens_saved=sum(max(0, c.tokens_before - c.tokens_after) for c in condensed),
        condensed_at=_condensed_at(events),
        tasks=1 + sum(1 for e in events if isinstance(e, ev.TaskStarted)),
        user_messages=sum(
            1 for e in events if isinstance(e, ev.UserMessage) and e.source == "user"
        ),
        rewinds=sum(1 for e in events if isinstance(e, ev.Rewound)),
        time_to_first_edit=first_edit.t if first_edit and _is_time(first_edit.t) else None,
        steps_to_first_edit=first_edit.step if first_edit else None,
        premature_finishes=sum(
            1 for e in counted if isinstance(e, ev.FinishAttempt) and not e.accepted
        ),
        finished=any(isinstance(e, ev.FinishAttempt) and e.accepted for e in counted),
        vetoes=sum(1 for e in counted if isinstance(e, ev.UserDecision) and e.decision == "veto"),
        user_edits=sum(
            1 for e in counted if isinstance(e, ev.UserDecision) and e.decision == "edit"
        ),
        guards_fired=dict(Counter(e.guard for e in events if isinstance(e, ev.GuardFired))),
        commits=sum(1 for e in events if isinstance(e, ev.Committed) and e.ok),
        prompt_tokens=sum(r.prompt_tokens for r in replies),
        completion_tokens=sum(r.completion_tokens for r in replies),
        cost=_cost(replies),
        duration=round(max((e.t for e in events if _is_time(e.t)), default=0.0), 3),
    )


def _in_order(events: list[ev.Event]) -> list[ev.Event]:
    """Events in the order the session made them: by sequence number when every event has
    one (lines of a log moved by hand), else as given. A line found twice (a log appended
    to itself, lines copied back by a sync tool: the same number and the same event) is
    one event; two different events under one number are both measured."""
    if not events or not all(e.seq > 0 for e in events):
        return events
    seen: dict[int, list[ev.Event]] = {}
    ordered = []
    for event in sorted(events, key=lambda e: e.seq):
        same_number = seen.setdefault(event.seq, [])
        if event not in same_number:
            same_number.append(event)
            ordered.append(event)
    return ordered


def _is_time(t: float) -> bool:
    """Whether ``t`` can be a time since the session started (a hand-edited log may hold a
    negative or non-finite one: it is not measured)."""
    return math.isfinite(t) and t >= 0


def _cost(replies: list[ev.ModelReplied]) -> float | None:
    """The dollars the replies cost; None (unknown) when any reply's price is unknown or is
    not a price (NaN, infinite, negative), or the sum is too large to be a number."""
    if not replies:
        return 0.0
    costs = [r.cost for r in replies]
    if any(c is None or not math.isfinite(c) or c < 0 for c in costs):
        return None
    try:
        total = math.fsum(c for c in costs if c is not None)
    except OverflowError:  # past the largest float
        return None
    return round(total, 6) if math.isfinite(total) else None


# What a person or a guard decided on one proposal of a call.
_DECIDED = (ev.Validated, ev.UserDecision, ev.FinishAttempt)


def _superseded(events: list[ev.Event]) -> set[int]:
    """Positions of events a resumed session made again: the proposal of a call asked again
    (``resume.requeued``, ``tool_proposed.restaged``) and what was decided on the call's
    earlier proposal that had no outcome (its refusal, a decision, a finish attempt)."""
    skip: set[int] = set()
    waiting: dict[str, list[int]] = {}  # call id -> its proposal's events, no outcome yet
    requeued: dict[str, list[int]] = {}
    for i, e in enumerate(events):
        if isinstance(e, (ev.ModelReplied, ev.Rewound, ev.TaskStarted)):
            waiting, requeued = {}, {}
        elif isinstance(e, ev.Resumed):
            requeued = {c: waiting.pop(c) for c in e.requeued if c in waiting}
        elif isinstance(e, ev.ToolProposed) and e.restaged and e.call_id in requeued:
            skip.add(i)
            skip.update(j for j in requeued.pop(e.call_id) if isinstance(events[j], _DECIDED))
            waiting[e.call_id] = []
        elif isinstance(e, ev.ToolProposed) and not e.edited:
            waiting[e.call_id] = []
        elif isinstance(e, ev.Observed):
            waiting.pop(e.call_id, None)
        elif isinstance(e, _DECIDED) and e.call_id in waiting:
            waiting[e.call_id].append(i)
    return skip


def summarize(source: Source) -> dict[str, Any]:
    """``measure(source)`` in its JSON form (the run results and the session card hold this)."""
    return measure(source).to_json()


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, RecursionError):
        return arguments


def _read_key(arguments: str) -> str | None:
    try:
        args = json.loads(arguments)
    except (ValueError, RecursionError):
        return None
    if not isinstance(args, dict):
        return None
    return json.dumps(
        {k: args.get(k) for k in ("path", "symbol", "start_line", "end_line", "outline")},
        sort_keys=True,
    )


def _repeated_reads(events: list[ev.Event]) -> int:
    """Reads of the same region (path/symbol/range) with no successful commit or undo in
    between, on the line of steps the read was made on: a rewind goes back to the reads
    its branch keeps (those up to the step it rewound to)."""
    lines: dict[int, list[str | None]] = {}  # branch -> its read keys; None: files changed
    steps: dict[int, list[int]] = {}  # branch -> the step of each entry of its line
    seen: set[str] = set()
    repeated = 0
    for e in events:
        if isinstance(e, ev.Rewound):
            kept = [i for i, step in enumerate(steps.get(e.parent, [])) if step <= e.to_step]
            lines[e.branch] = [lines[e.parent][i] for i in kept]
            steps[e.branch] = [steps[e.parent][i] for i in kept]
            seen = set()
            for key in lines[e.branch]:
                seen = set() if key is None else seen | {key}
            continue
        entry: str | None
        if isinstance(e, ev.Committed) and e.ok or isinstance(e, ev.Undone) and e.ok:
            seen.clear()  # files changed: reading again is legitimate
            entry = None
        elif isinstance(e, ev.ToolProposed) and e.tool in _READ_TOOLS and not e.edited:
            key = _read_key(e.arguments)
            if key is None:
                continue
            if key in seen:
                repeated += 1
            seen.add(key)
            entry = key
        else:
            continue
        lines.setdefault(e.branch, []).append(entry)
        steps.setdefault(e.branch, []).append(e.step)
    return repeated


def _write_outcomes(events: list[ev.Event]) -> list[tuple[str, bool]]:
    """(target, succeeded) for every write call, in order; a veto counts as a failure."""
    kinds: dict[str, str] = {}  # call id -> the kind of its latest proposal (ids repeat)
    outcomes = []
    for e in events:
        if isinstance(e, ev.ToolProposed):
            kinds[e.call_id] = e.kind
        elif isinstance(e, ev.Observed) and kinds.get(e.call_id) == "write":
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
    kinds: dict[str, str] = {}  # call id -> the kind of its latest proposal (ids repeat)
    failed: set[tuple[str, str]] = set()
    recovered = 0
    for e in events:
        if isinstance(e, ev.ToolProposed):
            kinds[e.call_id] = e.kind
        if not isinstance(e, ev.Observed) or e.tool == "finish":
            continue
        key = (kinds.get(e.call_id, ""), e.target or e.tool)
        if not e.ok and e.code != "VETO":
            failed.add(key)
        elif e.ok and key in failed:
            recovered += 1
            failed.discard(key)
    return recovered


def _first_edit(events: list[ev.Event]) -> ev.Committed | None:
    """The first successful commit."""
    return next((e for e in events if isinstance(e, ev.Committed) and e.ok), None)


def _condensed_at(events: list[ev.Event]) -> list[int]:
    """The request (1-based) that followed each condensation, once per request."""
    at: list[int] = []
    requests = 0
    pending = False
    for e in events:
        if isinstance(e, ev.Condensed):
            pending = True
        elif isinstance(e, ev.ModelRequest):
            requests += 1
            if pending:
                at.append(requests)
                pending = False
    return at


def _slope(values: list[int]) -> float:
    """Least-squares tokens added per request."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return round(num / den, 2)


def format_table(metrics: SessionMetrics, width: int = 80) -> str:
    """The metrics as ``name value unit`` rows under a header naming the session.

    Text from the log (task, model names) is made ``visible`` and cut to ``width``;
    counts by name (tool calls, refusals, guards) wrap onto indented lines.
    """
    header = [
        ("session", metrics.session),
        ("task", metrics.task),
        ("model", metrics.model),
        ("toolset", metrics.toolset),
        ("ended", metrics.end_reason),
    ]
    lines = [
        _cut(f"{label:<9}{visible(value or '-', keep_newlines=False)}", width)
        for label, value in header
    ]
    lines += ["", f"{'metric':<28} {'value':>12}  unit"]
    for name in SessionMetrics.model_fields:
        if name in _HEADER:
            continue
        lines += _rows(name, getattr(metrics, name), SessionMetrics.unit(name), width)
    return "\n".join(lines)


def format_summary(metrics: SessionMetrics | Mapping[str, Any]) -> str:
    """``format_table`` of a ``SessionMetrics`` or of its JSON form (what ``summarize`` returns)."""
    model = metrics if isinstance(metrics, SessionMetrics) else SessionMetrics(**metrics)
    return format_table(model)


_HEADER = {"session", "task", "model", "toolset", "end_reason"}
_INDENT = " " * 29


def _rows(name: str, value: Any, unit: str | None, width: int) -> list[str]:
    if isinstance(value, dict):
        counts = ", ".join(
            f"{visible(k, keep_newlines=False)} {n}" for k, n in sorted(value.items())
        )
        text = f"{counts} ({unit})" if counts and unit else counts or "none"
        wrapped = textwrap.wrap(text, width - len(_INDENT)) or [""]
        return [f"{name:<28} {wrapped[0]}", *(_INDENT + more for more in wrapped[1:])]
    if isinstance(value, list) and name == "condensed_at":  # request numbers
        numbers = ", ".join(str(n) for n in value) or "none"
        wrapped = textwrap.wrap(numbers, width - len(_INDENT) - 12) or ["none"]
        lines = [f"{name:<28} {'requests ' + wrapped[0] if value else 'none'}"]
        return lines + [_INDENT + more for more in wrapped[1:]]
    if isinstance(value, list):  # context tokens: one count per request
        shown = (
            f"{shown_value(value[0], unit)} -> {shown_value(value[-1], unit)}" if value else "none"
        )
        return [f"{name:<28} {shown:>12}  {unit} ({len(value)} requests)"]
    return [f"{name:<28} {shown_value(value, unit):>12}  {unit or ''}".rstrip()]


def shown_value(value: Any, unit: str | None) -> str:
    """A measure as the table and the session card show it ("unknown" for an unknown cost)."""
    if value is None:
        return "unknown" if unit == Dollars.name else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit == Dollars.name:
        text = f"{value:.6f}"
    elif unit == Seconds.name:
        text = f"{value:.2f}"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = f"{value:g}"
    return text if len(text) <= _VALUE_WIDTH else _scientific(value)


_VALUE_WIDTH = 12  # the value column of the table


def _scientific(value: float) -> str:
    """A number too long for the value column (a hand-made log), as mantissa and exponent;
    an int is written from its digits (it may be past the largest float)."""
    if isinstance(value, float):
        return f"{value:.4e}"
    digits = str(abs(value))
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:5]}e+{len(digits) - 1}"


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."
