"""The model's streamed text reaches the panel joined, at most every ``TEXT_EVERY_S``.

A fast provider sends thousands of chunks a second; one widget message each would pass
jupyter_server's iopub limits (tests/test_freeze_attacks.py sends them through a real
kernel). Here: the panel still shows every character, in order, and nothing after the text
is shown before it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent import ModelText, ModelTurn, NeedsDecision, Session, StepProposed
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.jupyter.controller import TEXT_EVERY_S, NotebookSession
from grinta_jupyter.runtime import secrets


@pytest.fixture(autouse=True)
def no_secrets_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests time how text is shown, and a secret anywhere in the process changes what
    may be shown (the end of a reply that could be a secret being written is held back, a
    long word holding part of one is hidden): an environment or a key held by an earlier
    test in the same worker (``hold`` lasts the process's life) made them fail."""
    monkeypatch.setattr(secrets, "_held", set())
    for name, value in list(os.environ.items()):
        if secrets.is_secret_variable(name, value):
            monkeypatch.delenv(name)


CHUNKS = 3_000


class Chatty(ScriptedModel):
    """Streams each turn's text in ``CHUNKS`` pieces, as fast as the loop turns."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        result = await super().complete(messages, tools, None)
        for n in range(CHUNKS):
            if n % 50 == 0:
                await asyncio.sleep(0)
            if on_text is not None:
                on_text(f"<{n}>")
        return result


def _session(root: Path) -> Session:
    (root / "a.py").write_text("x = 1\n")
    model = Chatty([reply("", call("replace_string", path="a.py", old_string="1", new_string="2"))])
    return Session("change x", model=model, root=root)


def _watch(view: NotebookSession) -> list[str]:
    """Every value the thinking line takes, in order."""
    assert view.panel is not None
    shown: list[str] = []
    view.panel.thinking.observe(lambda change: shown.append(change["new"]), "value")
    return shown


def test_a_fast_stream_reaches_the_panel_joined_and_whole(tmp_path: Path) -> None:
    session = _session(tmp_path)
    view = NotebookSession(session, manual=False)
    shown = _watch(view)
    at_card: list[str] = []
    assert view.panel is not None
    panel_apply = view.panel.apply

    def apply(update: Any) -> None:
        if isinstance(update, StepProposed):  # what the thinking line said just before
            at_card.append(shown[-1] if shown else "")
        panel_apply(update)

    view.panel.apply = apply  # type: ignore[method-assign]

    async def go() -> float:
        started = asyncio.get_running_loop().time()
        async for update in session.updates():
            view.apply(update)
            if isinstance(update, NeedsDecision):
                break
        took = asyncio.get_running_loop().time() - started
        session.stop("done")
        return took

    took = asyncio.run(go())
    texts = [v for v in shown if v]
    # One redraw per TEXT_EVERY_S at most (plus the first, and the last before the card).
    assert 1 <= len(texts) <= took / TEXT_EVERY_S + 3, f"{len(texts)} redraws in {took:.2f} s"
    # The last showing before the card holds the end of the reply: nothing was dropped.
    assert at_card and f"&lt;{CHUNKS - 1}&gt;" in at_card[0], at_card[0][-200:]


def _text_on_loop(
    tmp_path: Path, scenario: Callable[[NotebookSession, list[str]], Any]
) -> list[str]:
    """Run ``scenario(view, shown)`` (a coroutine) on a loop the view takes as its own, after
    a ModelTurn; what the thinking line showed."""
    view = NotebookSession(_session(tmp_path), manual=False)
    shown = _watch(view)

    async def go() -> None:
        view.loop = asyncio.get_running_loop()
        view.apply(ModelTurn(1))
        await scenario(view, shown)

    asyncio.run(go())
    return shown


def test_the_text_held_is_shown_after_a_pause_without_another_update(tmp_path: Path) -> None:
    """The last chunks of a burst are not kept until the next update: a timer shows them."""

    async def go(view: NotebookSession, shown: list[str]) -> None:
        view.apply(ModelText("first "))  # shown at once: nothing was shown lately
        view.apply(ModelText("second"))  # held: the first was just shown
        assert "second" not in (shown[-1] if shown else "")
        await asyncio.sleep(TEXT_EVERY_S * 3)
        assert "first second" in shown[-1]

    shown = _text_on_loop(tmp_path, go)
    assert len([v for v in shown if "first" in v]) == 2


def test_manual_mode_shows_the_text_held_at_the_end_of_a_step(tmp_path: Path) -> None:
    """No timer runs while a manual step blocks its cell: ``advance`` shows what is held."""
    session = _session(tmp_path)
    view = NotebookSession(session, manual=True)
    shown = _watch(view)
    view.start()
    try:
        view.advance()
        assert any(f"&lt;{CHUNKS - 1}&gt;" in v for v in shown)
        assert session.waiting
    finally:
        session.stop("done")


def test_a_late_timer_shows_nothing_twice(tmp_path: Path) -> None:
    """A flush that fires after its text was shown by an update shows nothing twice."""

    async def go(view: NotebookSession, shown: list[str]) -> None:
        view.apply(ModelText("a"))
        view.apply(ModelText("b"))  # held, a timer set
        view.apply(ModelTurn(1))  # shows "ab" first, then clears the line
        count = len(shown)
        await asyncio.sleep(TEXT_EVERY_S * 3)
        assert len(shown) == count, shown[count:]

    shown = _text_on_loop(tmp_path, go)
    assert any("ab" in v for v in shown)
    assert shown[-1] == "" or "ab" not in shown[-1]
