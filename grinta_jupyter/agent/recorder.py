"""Turning what happens to a step into events (pure: the session emits them)."""

from __future__ import annotations

from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.agent.step import Step, known_cost, token_count
from grinta_jupyter.events import models as ev
from grinta_jupyter.runtime.proposal import CommandProposal, Proposal, WriteProposal
from grinta_jupyter.runtime.textfile import sha256


def proposal_events(step: Step, edited: bool = False) -> list[ev.Event]:
    """The events that record a (re-)proposed step: the call, resolutions, diff, validation."""
    p, call = step.proposal, step.call
    restaged = step.restaged
    events: list[ev.Event] = [
        ev.ToolProposed(
            call_id=call.id,
            tool=call.name,
            arguments=call.arguments,
            kind=p.kind,
            summary=p.summary,
            proposal=p.id,
            edited=edited,
            restaged=restaged,
            stale=step.stale,
        ),
        *(
            ev.SymbolResolved(
                call_id=call.id,
                target=r.target,
                chosen=r.chosen,
                reason=r.reason,
                candidates=list(r.candidates),
            )
            for r in p.resolutions
        ),
    ]
    if p.changes:
        events.append(
            ev.DiffStaged(
                call_id=call.id,
                paths=p.paths,
                diff=p.diff,
                added=sum(c.added_lines for c in p.changes),
                removed=sum(c.removed_lines for c in p.changes),
                base={c.path: _sha_or_none(c.old_bytes) for c in p.changes},
                after={c.path: _sha_or_none(c.new_bytes) for c in p.changes},
            )
        )
    if isinstance(p, (WriteProposal, CommandProposal)) or not p.ok:
        events.append(
            ev.Validated(
                call_id=call.id,
                ok=p.ok,
                code=p.error.code if p.error else None,
                message=p.error.message if p.error else None,
                target=target_of(p),
            )
        )
    return events


def reply_event(reply: ModelReply, duration: float) -> ev.ModelReplied:
    """The record of one model reply: its text, raw tool calls, tokens, cost and duration."""
    usage = reply.usage
    return ev.ModelReplied(
        text=reply.text,
        tool_calls=[
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls
        ],
        # As the totals count them (agent/step.py): a client's odd usage crashes nothing.
        prompt_tokens=token_count(usage.prompt_tokens),
        completion_tokens=token_count(usage.completion_tokens),
        cost=known_cost(usage.cost),
        duration=round(duration, 4),
        finish_reason=reply.finish_reason,
    )


def target_of(proposal: Proposal) -> str | None:
    """The path (or symbol's file) a call aimed at, for recovery metrics."""
    args = proposal.args
    if args.get("path"):
        return str(args["path"])
    edits = args.get("edits") or []
    if edits:
        first = edits[0]
        return str(first.get("path") or first.get("symbol", "")).split("::")[0] or None
    return None


def _sha_or_none(data: bytes | None) -> str | None:
    return None if data is None else sha256(data)
