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


def test_without_the_panel_a_pending_write_shows_every_row_in_html_and_text(
    tmp_path: Path,
) -> None:
    """The trace is the card of front ends without the panel and what a console prints
    before ``%grinta approve``; before stop 33 it showed 80 rows in HTML and 60 lines in
    text of a write Approve then committed whole."""
    from grinta_jupyter.jupyter.mime import session_secrets, step_bundle, trace_bundle

    model = ScriptedModel(
        [
            reply("", call("create", path="big.py", content=CONTENT)),
            reply("", call("finish", summary="written")),
        ]
    )
    session = Session("write it", model=model, root=tmp_path)
    shown: list[dict[str, Any]] = []

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                shown.append(trace_bundle(session))
                shown.append(
                    step_bundle(update.step, session.id, session_secrets(session), live=True)
                )
                session.approve()

    asyncio.run(go())
    for bundle in shown:
        for i in range(2_000):
            row = f"line_{i:05d} = {i}  # a row of the new module"
            assert f"+ {row}" in bundle["text/plain"]
            assert row in bundle["text/html"]
        assert "more diff lines" not in bundle["text/plain"] + bundle["text/html"]
    decided = trace_bundle(session)  # decided: what a saved notebook keeps
    assert "more diff lines" in decided["text/plain"] and "more diff lines" in decided["text/html"]
    assert "line_01999" not in decided["text/html"]


def test_a_pending_diff_too_big_for_the_html_fallback_says_to_read_the_log(tmp_path: Path) -> None:
    from grinta_jupyter.jupyter.mime import MAX_LIVE_HTML_CHARS, trace_bundle

    content = ("a\x1b" * 100 + "\n") * 2_000  # escapes: about 7 KB of HTML a row
    model = ScriptedModel([reply("", call("create", path="esc.txt", content=content))])
    session = Session("write it", model=model, root=tmp_path)

    async def go() -> dict[str, Any]:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                return trace_bundle(session)
        raise AssertionError("no decision was asked for")

    html = asyncio.run(go())["text/html"]
    assert MAX_LIVE_HTML_CHARS // 2 < len(html) < MAX_LIVE_HTML_CHARS + 20_000
    assert (
        "more diff lines are not shown here: read them in the event log before you approve" in html
    )


def test_a_waiting_step_a_rewind_took_off_is_cut_as_a_decided_one(tmp_path: Path) -> None:
    """A rewind to before the step that waited takes it off the branch: it will never be
    approved, so the trace keeps what a saved card keeps (not the whole diff of a step
    that waits)."""
    from grinta_jupyter.jupyter.mime import trace_bundle

    model = ScriptedModel([reply("", call("create", path="big.py", content=CONTENT))])
    session = Session("write it", model=model, root=tmp_path)

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                session.rewind(0)
                return

    asyncio.run(go())
    bundle = trace_bundle(session)
    (step,) = bundle["application/vnd.grinta.session+json"]["steps"]
    assert step["rewound"] and step["diff_truncated"]
    assert "more diff lines" in bundle["text/plain"] and "more diff lines" in bundle["text/html"]
    assert not (tmp_path / "big.py").exists()


def test_a_waiting_step_a_rewind_to_it_dropped_is_marked_rewound(tmp_path: Path) -> None:
    """A rewind to the very step that waited keeps it on the branch, undecided for good:
    the trace said "pending" for ever and kept its whole diff as if Approve could come."""
    from grinta_jupyter.jupyter.mime import trace_bundle

    model = ScriptedModel([reply("", call("create", path="big.py", content=CONTENT))])
    session = Session("write it", model=model, root=tmp_path)

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                session.rewind(update.step.number)
                return

    asyncio.run(go())
    assert session.pending is None
    bundle = trace_bundle(session)
    (step,) = bundle["application/vnd.grinta.session+json"]["steps"]
    assert step["rewound"] and step["diff_truncated"]
    assert "(pending, rewound)" in bundle["text/plain"]
