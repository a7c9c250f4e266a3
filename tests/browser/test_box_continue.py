"""The saved trace's box in a real JupyterLab: an ended session takes its next task from it.

A kernel runs ``%grinta`` with real litellm against the local OpenAI-compatible server
(tests/openai_server.py): the model changes ``a.py`` and finishes. While that step waits,
the test opens its veto and types half a reason, and something is said to the session
from the kernel: the kernel redraws the cell (new views of the panel's cards), and the
reason typed so far is still there, focused (labextension/src/render/liveCard.ts keeps the
review by the card's ``key``). Then it approves; the session ends, and the cell's output
is the trace (no widget view: the notebook saves none), whose card shows the message box
(labextension/src/nextTask.ts, render/traceBox.ts). A next task typed there brings the
panel back in that output: the new task's step waits, is approved, its file changes on
disk, and the output is the trace again, box and all, saved without a widget view. This
is done in JupyterLab Light, then again in Dark. The box keeps WCAG AA contrast (4.5:1)
in Light, Dark and Dark High Contrast.

A restarted kernel holds no session: the card shows no box. Once the extension is loaded
there again, the card says which command brings the session back, and after
``%grinta resume LOG`` the box is there again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    LabServer,
    open_notebook,
    run_command,
    screenshot,
    set_theme,
    wait_for_app,
    wait_for_kernel,
)
from tests.browser.panel import STEP_TIMEOUT_MS, pending_card
from tests.browser.test_live_cards import CONTRAST_JS, THEMES, WCAG_NORMAL_TEXT
from tests.browser.test_live_lasting import EXECUTE_JS
from tests.openai_server import OpenAIServer, tool_call, tool_reply

pytestmark = pytest.mark.browser

NOTEBOOK = "box-continue.ipynb"
SESSION_MIME = "application/vnd.grinta.session+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
HALF_REASON = "not before the te"


def _edit(call_id: str, path: str, old: str, new: str) -> Any:
    args = {"path": path, "old_string": old, "new_string": new}
    return tool_reply(tool_call("replace_string", args, call_id), text=f"Changing {path}.")


def _finishes(prefix: str) -> list[Any]:
    # The finish guard sends back the first two finishes after an edit with no test run.
    return [tool_reply(tool_call("finish", {"summary": "done"}, f"{prefix}{i}")) for i in range(3)]


def _write_notebook(server: LabServer, api_base: str, ws: Path) -> None:
    setup = (
        "import os\n"
        f"os.environ.update(GRINTA_MODEL='openai/test-model', GRINTA_API_BASE='{api_base}', "
        "GRINTA_API_KEY='sk-local')\n"
        "%load_ext grinta_jupyter"
    )
    sources = [setup, f"%grinta --root {ws} change x to 2 in a.py"]
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


def _saved_outputs(server: LabServer, page: Any) -> list[dict[str, Any]]:
    run_command(page, "docmanager:save")
    saved = json.loads((server.root / NOTEBOOK).read_text())
    return [o for cell in saved["cells"] for o in cell.get("outputs", [])]


def _ratios(where: Any, selectors: list[str]) -> list[dict[str, Any]]:
    handles = [h for s in selectors for h in where.locator(s).element_handles()]
    assert handles, f"nothing to measure: {selectors}"
    return list(where.page.evaluate(CONTRAST_JS, handles))


def _ended_trace(cell: Any, tasks: int) -> Any:
    """The saved trace card once ``tasks`` tasks have ended, its box offering the next."""
    trace = cell.locator('.grinta-output > .grinta-session[data-end-reason="finished"]')
    trace.wait_for(timeout=STEP_TIMEOUT_MS)
    if tasks > 1:
        trace.locator(".grinta-mark-task").nth(tasks - 2).wait_for(timeout=STEP_TIMEOUT_MS)
    trace.locator('.grinta-trace-box .grinta-box[data-mode="continue"]').wait_for(
        timeout=STEP_TIMEOUT_MS
    )
    return trace


def _next_task(page: Any, cell: Any, trace: Any, task: str, path: Path, expected: str) -> Any:
    """Type ``task`` in the trace's box; approve the step its panel shows; the trace again."""
    box = trace.locator(".grinta-trace-box input.grinta-box-input")
    box.click()
    box.type(task)
    box.press("Enter")
    panel = cell.locator(".grinta-panel")
    panel.wait_for(timeout=STEP_TIMEOUT_MS)
    assert cell.locator(".grinta-trace-box").count() == 0, "the panel took the card's place"
    step = pending_card(page, panel, "replace_string")
    assert path.name in step.inner_text()
    step.locator("button.grinta-approve").click()
    _committed(path, expected)
    return panel


def _committed(path: Path, expected: str) -> None:
    """Wait until ``path`` holds ``expected``. The model finishes at once after the commit,
    and the session's end turns the panel into the trace, at times before the card was seen
    committed (a CI run at 4387bc2: committed and ended within 0.1 s), so the file says it,
    and the trace the caller waits for next."""
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while path.read_text() != expected:
        assert time.monotonic() < deadline, f"{path.name} was not committed"
        time.sleep(0.1)


def test_an_ended_session_takes_its_next_task_from_its_saved_trace(
    page: Any, lab_server: LabServer
) -> None:
    ws = lab_server.root / "box-ws"
    ws.mkdir()
    for name, text in (("a.py", "x = 1\n"), ("b.py", "y = 2\n"), ("c.py", "z = 3\n")):
        (ws / name).write_text(text)
    server = OpenAIServer()
    server.queue(
        _edit("c1", "a.py", "x = 1", "x = 2"),
        *_finishes("f1-"),
        _edit("c2", "b.py", "y = 2", "y = 3"),
        *_finishes("f2-"),
        _edit("c3", "c.py", "z = 3", "z = 4"),
        *_finishes("f3-"),
    )
    with server:
        _write_notebook(lab_server, server.url, ws)
        notebook = open_notebook(page, NOTEBOOK)
        wait_for_kernel(page)
        run_command(page, "notebook:run-all-cells")
        cell = notebook.locator(".jp-Cell").nth(1)
        panel = cell.locator(".grinta-panel")
        panel.wait_for(timeout=STEP_TIMEOUT_MS)
        fix = pending_card(page, panel, "replace_string")

        # A veto half typed survives the kernel's redraw of the cell (new views of the cards).
        fix.locator(".grinta-actions").press("Escape")
        reason = fix.locator("input.grinta-veto-reason")
        reason.type(HALF_REASON)
        reason.evaluate("el => { el.dataset.before = 'redraw'; }")
        page.evaluate(EXECUTE_JS, "import grinta_jupyter; grinta_jupyter.current().say('be brief')")
        panel.locator(".grinta-mark-said").wait_for(timeout=STEP_TIMEOUT_MS)
        page.wait_for_function(
            """() => {
              const r = document.querySelector('input.grinta-veto-reason');
              return r && r.dataset.before === undefined;
            }""",
            timeout=STEP_TIMEOUT_MS,
        )
        assert reason.input_value() == HALF_REASON
        assert reason.evaluate("el => el === document.activeElement")
        reason.press("Escape")  # not vetoed after all
        fix.locator("button.grinta-approve").click()
        _committed(ws / "a.py", "x = 2\n")

        # The session ends: the output is the trace, with the box.
        trace = _ended_trace(cell, 1)
        assert panel.count() == 0
        box = trace.locator(".grinta-trace-box input.grinta-box-input")
        assert "next task" in (box.get_attribute("placeholder") or "")
        outputs = _saved_outputs(lab_server, page)
        assert not [o for o in outputs if WIDGET_MIME in o.get("data", {})]
        screenshot(page, "box-continue-ended-light", trace)

        failures: list[str] = []
        try:
            _next_task(page, cell, trace, "change y to 3 in b.py", ws / "b.py", "y = 3\n")
            trace = _ended_trace(cell, 2)
            set_theme(page, "JupyterLab Dark")
            _next_task(page, cell, trace, "change z to 4 in c.py", ws / "c.py", "z = 4\n")
            trace = _ended_trace(cell, 3)
            trace.locator("input.grinta-box-input").type("a draft for the screenshot")
            for theme in THEMES:
                set_theme(page, theme)
                failures += [
                    f"{theme}, box: {m}"
                    for m in _ratios(trace, [".grinta-box-input", ".grinta-mark-title"])
                    if m["ratio"] < WCAG_NORMAL_TEXT
                ]
                slug = theme.lower().replace("jupyterlab ", "").replace(" ", "-")
                screenshot(page, f"box-continue-{slug}", trace.locator(".grinta-trace-box"))
            set_theme(page, "JupyterLab Light")
            trace.locator("input.grinta-box-input").fill("")

            (saved,) = [o for o in _saved_outputs(lab_server, page) if SESSION_MIME in o["data"]]
            assert WIDGET_MIME not in saved["data"]
            payload = saved["data"][SESSION_MIME]
            assert payload["tasks"] == [
                "change x to 2 in a.py",
                "change y to 3 in b.py",
                "change z to 4 in c.py",
            ]
            log = payload["log"]

            # A restarted kernel holds no session: no box.
            page.evaluate(
                "async () => { await window.jupyterapp.shell.currentWidget"
                ".sessionContext.session.kernel.restart(); }"
            )
            wait_for_kernel(page)
            trace.locator(".grinta-trace-box").wait_for(state="hidden", timeout=STEP_TIMEOUT_MS)
            assert trace.locator(".grinta-box-input").count() == 0

            # With the extension loaded there again, the card says how to bring it back.
            page.evaluate(
                "() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }"
            )
            run_command(page, "notebook:run-cell")
            wait_for_kernel(page)
            run_command(page, "docmanager:save")
            page.reload()
            wait_for_app(page)
            notebook = open_notebook(page, NOTEBOOK)
            wait_for_kernel(page)
            trace = notebook.locator(".jp-Cell").nth(1).locator(".grinta-output > .grinta-session")
            hint = trace.locator(".grinta-box-hint")
            hint.wait_for(timeout=STEP_TIMEOUT_MS)
            assert f"%grinta resume {log}" in hint.inner_text()
            assert trace.locator(".grinta-box-input").count() == 0
            for theme in THEMES:
                set_theme(page, theme)
                failures += [
                    f"{theme}, hint: {m}"
                    for m in _ratios(trace, [".grinta-box-hint"])
                    if m["ratio"] < WCAG_NORMAL_TEXT
                ]
            set_theme(page, "JupyterLab Light")
            page.evaluate(EXECUTE_JS, f"%grinta resume {log}")
            trace.locator('.grinta-box[data-mode="continue"]').wait_for(timeout=STEP_TIMEOUT_MS)
        finally:
            set_theme(page, "JupyterLab Light")
            page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
            run_command(page, "application:close-all")
    assert not failures, "text below WCAG AA contrast:\n" + "\n".join(failures)
