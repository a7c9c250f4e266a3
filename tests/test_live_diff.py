"""A write waiting for its decision shows its whole diff on the live card.

Before stop 32 the panel's card cut every diff at 8,000 characters (the limit that keeps a
saved notebook small) while Approve still committed all of it: a 2,000-line file was
approved from its first 160 lines."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from grinta_jupyter.agent import NeedsDecision, Session
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.jupyter.controller import NotebookSession
from grinta_jupyter.jupyter.mime import MAX_DIFF_CHARS, MAX_LIVE_DIFF_CHARS

CONTENT = "".join(f"line_{i:05d} = {i}  # a row of the new module\n" for i in range(2_000))


def payloads_when(tmp_path: Path, content: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The live card's payload while the create waits, and after it was approved."""
    model = ScriptedModel(
        [
            reply("", call("create", path="big.py", content=content)),
            reply("", call("finish", summary="written")),
        ]
    )
    session = Session("write it", model=model, root=tmp_path)
    view = NotebookSession(session, manual=False)
    assert view.panel is not None
    seen: list[dict[str, Any]] = []

    async def go() -> None:
        async for update in session.updates():
            view.apply(update)
            if isinstance(update, NeedsDecision):
                seen.append(dict(view.panel.cards[update.step.number].payload))
                session.approve()

    asyncio.run(go())
    return seen[0], dict(view.panel.cards[1].payload)


def test_the_live_card_of_a_pending_write_holds_its_whole_diff(tmp_path: Path) -> None:
    pending, decided = payloads_when(tmp_path, CONTENT)
    assert pending["status"] == "pending" and pending["diff_truncated"] is False
    rows = [line[1:] + "\n" for line in pending["diff"].splitlines() if line.startswith("+")][1:]
    assert "".join(rows) == CONTENT  # every added line, as written
    assert (tmp_path / "big.py").read_text() == CONTENT
    # Decided, the card keeps what a saved notebook keeps.
    assert decided["status"] == "committed" and decided["diff_truncated"] is True
    assert len(decided["diff"]) == MAX_DIFF_CHARS


def test_past_the_live_limit_the_card_says_it_was_cut(tmp_path: Path) -> None:
    line = "y" * 99 + "\n"
    pending, _ = payloads_when(tmp_path, line * (MAX_LIVE_DIFF_CHARS // len(line) + 10))
    assert pending["diff_truncated"] is True and len(pending["diff"]) == MAX_LIVE_DIFF_CHARS
