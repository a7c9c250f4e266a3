"""The panel of a session that lasts, in a real JupyterLab: the message box and the marks.

A kernel runs ``%grinta`` with the demo model (the lab runs without GRINTA_MODEL). The
test types a message into the panel's box while the first step waits, and lets the
session move on (approved from the kernel, so the page's focus stays in the box): when
the next step starts waiting and the kernel redraws the cell's display, the box keeps
its text and the focus, and the new card does not take it (an Enter meant for the
message must never approve a step). Enter then says the message: the box is cleared,
the step still waits, and a "You said" mark shows in the panel; once the session ends,
the saved trace shows it too, drawn by the extension. The marks and the box are
measured for WCAG AA contrast (4.5:1) in JupyterLab Light, Dark and Dark High Contrast,
live and saved.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.conftest import (
    LabServer,
    open_notebook,
    run_command,
    screenshot,
    set_theme,
    wait_for_kernel,
)
from tests.browser.panel import STEP_TIMEOUT_MS, pending_card
from tests.browser.test_live_cards import CONTRAST_JS, THEMES, WCAG_NORMAL_TEXT

pytestmark = pytest.mark.browser

NOTEBOOK = "lasting.ipynb"
MESSAGE = "keep the fix to one line"
CHECKED = [".grinta-mark-title", ".grinta-mark-text", ".grinta-box-input", ".grinta-box-status"]

# Run code in the notebook's kernel without touching the page (its focus stays put).
EXECUTE_JS = """
async code => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  await kernel.requestExecute({ code, silent: true, stop_on_error: true }).done;
}
"""


def _write_notebook(server: LabServer) -> None:
    sources = ["%load_ext grinta_jupyter", "%grinta fix the failing test in raft_kv"]
    cells = [
        {"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
        for s in sources
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (server.root / NOTEBOOK).write_text(json.dumps(notebook))


def _ratios(where: Any, selectors: list[str]) -> list[dict[str, Any]]:
    handles = [h for s in selectors for h in where.locator(s).element_handles()]
    assert handles, "nothing to measure"
    return list(where.page.evaluate(CONTRAST_JS, handles))


def test_the_box_says_while_a_step_waits_and_never_decides(
    page: Any, lab_server: LabServer
) -> None:
    _write_notebook(lab_server)
    notebook = open_notebook(page, NOTEBOOK)
    wait_for_kernel(page)
    run_command(page, "notebook:run-all-cells")
    cell = notebook.locator(".jp-Cell").nth(1)
    panel = cell.locator(".grinta-panel")
    panel.wait_for(timeout=STEP_TIMEOUT_MS)
    pending_card(page, panel, "run")

    box = panel.locator("input.grinta-box-input")
    assert "reads it at its next turn" in (box.get_attribute("placeholder") or "")
    box.click()
    box.type(MESSAGE)
    # The session moves on meanwhile: the tests run, the read runs, the fix waits.
    page.evaluate(EXECUTE_JS, "import grinta_jupyter; grinta_jupyter.current().approve()")
    fix = pending_card(page, panel, "replace_string")
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.matches('input.grinta-box-input')",
        timeout=5_000,
    )
    assert box.input_value() == MESSAGE, "what was typed survives the redraw"
    assert not fix.locator(".grinta-actions").evaluate("el => el.contains(document.activeElement)")

    box.press("Enter")
    panel.locator(".grinta-mark-said").wait_for(timeout=STEP_TIMEOUT_MS)
    assert box.input_value() == ""
    assert MESSAGE in panel.locator(".grinta-mark-said").inner_text()
    status = panel.locator(".grinta-box-status")
    assert "still waits for you" in status.inner_text()
    fix.locator(".grinta-actions").wait_for()  # still pending: Enter in the box decided nothing
    fix.locator('.grinta-step[data-status="pending"]').wait_for()
    box.type("a draft for the screenshot")

    failures = []
    try:
        for theme in THEMES:
            set_theme(page, theme)
            failures += [
                f"{theme}, live: {m}"
                for m in _ratios(panel, CHECKED)
                if m["ratio"] < WCAG_NORMAL_TEXT
            ]
            slug = theme.lower().replace("jupyterlab ", "").replace(" ", "-")
            screenshot(page, f"live-box-{slug}", panel)
        set_theme(page, "JupyterLab Light")
        page.evaluate(EXECUTE_JS, "grinta_jupyter.current().stop('enough')")
        trace = cell.locator(".grinta-output > .grinta-session")
        trace.wait_for(timeout=STEP_TIMEOUT_MS)
        said = trace.locator(".grinta-mark-said")
        assert MESSAGE in said.inner_text()
        for theme in THEMES:
            set_theme(page, theme)
            failures += [
                f"{theme}, saved: {m}"
                for m in _ratios(trace, [".grinta-mark-title", ".grinta-mark-text"])
                if m["ratio"] < WCAG_NORMAL_TEXT
            ]
            slug = theme.lower().replace("jupyterlab ", "").replace(" ", "-")
            screenshot(page, f"saved-mark-{slug}", said)
    finally:
        set_theme(page, "JupyterLab Light")
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        run_command(page, "application:close-all")
    assert not failures, "text below WCAG AA contrast:\n" + "\n".join(failures)
