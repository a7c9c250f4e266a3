"""Locators for grinta's live panel (grinta_jupyter/jupyter/panel.py) in a browser.

Shared by the live tests in JupyterLab (test_live.py, test_live_cards.py) and
Notebook 7 (test_notebook7.py): both front ends draw the same panel, whose
step cards are the labextension's TypeScript card in an anywidget
(grinta_jupyter/jupyter/card.py).
"""

from __future__ import annotations

from typing import Any

STEP_TIMEOUT_MS = 30_000


def start_quickstart_session(page: Any, notebook: Any) -> Any:
    """Run the quickstart's cells 1 and 2 (``%load_ext``, ``%grinta ...``); return the live panel."""
    from tests.browser.conftest import run_command

    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 1; }")
    run_command(page, "notebook:run-cell-and-select-next")
    run_command(page, "notebook:run-cell-and-select-next")
    panel = notebook.locator(".jp-Cell").nth(2).locator(".grinta-panel")
    panel.wait_for(timeout=STEP_TIMEOUT_MS)
    return panel


def pending_card(page: Any, panel: Any, tool: str) -> Any:
    """The panel's card waiting for a decision, once it is a call of ``tool``.

    The locator returned is the card's position, so it still finds the card
    once it is decided.
    """
    cards = panel.locator(".grinta-panel-step")
    pending = cards.filter(has=page.locator(".grinta-actions:visible")).filter(
        has=page.locator(f'.grinta-step[data-tool="{tool}"]')
    )
    pending.wait_for(timeout=STEP_TIMEOUT_MS)
    index = pending.evaluate(
        "el => [...el.closest('.grinta-panel').querySelectorAll('.grinta-panel-step')].indexOf(el)"
    )
    return cards.nth(index)


def wait_for_status(card: Any, status: str) -> None:
    """Wait until the card's step has ``status`` (its badge: pending, committed, vetoed...)."""
    card.locator(f'.grinta-step[data-status="{status}"]').wait_for(timeout=STEP_TIMEOUT_MS)
