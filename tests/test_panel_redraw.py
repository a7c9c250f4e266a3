"""The cell's display is redrawn before the panel shows what changed.

A redraw (the trace kept current in the saved output) makes JupyterLab build the panel's
view anew. Shown first, a card that waits for a decision would appear in the old view an
instant before it goes, and a click on it then would be lost (a browser test once lost an
Approve that way)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from grinta_jupyter.agent import NeedsDecision, Session, SessionEnded, StepObserved
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.jupyter.controller import NotebookSession


class Display:
    """Stands for the cell's display handle: records each redraw in ``order``."""

    def __init__(self, order: list[str]) -> None:
        self.order = order

    def update(self, bundle: dict[str, Any], raw: bool = False) -> None:
        self.order.append("redraw")


def test_each_redraw_comes_before_the_panel_shows_the_update(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    model = ScriptedModel(
        [
            reply("", call("replace_string", path="a.py", old_string="1", new_string="2")),
            reply("", call("finish", summary="x is 2")),
        ]
    )
    session = Session("change x", model=model, root=tmp_path)
    view = NotebookSession(session, manual=False)
    order: list[str] = []
    view.trace = Display(order)
    assert view.panel is not None
    panel_apply = view.panel.apply

    def apply(update: Any) -> None:
        order.append(type(update).__name__)
        panel_apply(update)

    view.panel.apply = apply  # type: ignore[method-assign]

    async def go() -> None:
        async for update in session.updates():
            view.apply(update)
            if isinstance(update, NeedsDecision):
                session.approve()

    asyncio.run(go())
    for kind in (NeedsDecision, StepObserved, SessionEnded):
        at = order.index(kind.__name__)
        assert order[at - 1] == "redraw", (kind.__name__, order)
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
