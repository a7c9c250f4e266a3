"""The quickstart's live session in a real JupyterLab, and the notebook it saves.

A kernel runs ``%grinta`` with the demo model (the lab runs without
GRINTA_MODEL). The test clicks through the panel as a user would: approve
the test run, check the pending fix's diff and approve it, veto the next run
with Escape and a reason, approve the run the finish guard asks for. Then it
saves, shuts the kernel down, reloads, and opens the notebook where no kernel
can start: the saved output must be the trace, drawn by the extension.
"""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

import pytest

from tests.browser.conftest import (
    REPO,
    SCREENSHOTS,
    VIEWPORT,
    LabServer,
    open_notebook,
    run_command,
    screenshot,
    set_theme,
    wait_for_app,
    wait_for_kernel,
)
from tests.browser.panel import (
    STEP_TIMEOUT_MS,
    pending_card,
    start_quickstart_session,
    wait_for_status,
)

pytestmark = pytest.mark.browser

NOTEBOOK = "quickstart.ipynb"
SESSION_MIME = "application/vnd.grinta.session+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
FIX = "!= request.prev_log_term"
VETO_REASON = "Not now: I will run the suite myself."
# The demo's session with one veto: the finish guard refuses the first finish.
TOOLS = ["run", "read", "replace_string", "run", "finish", "run", "finish"]


def test_quickstart_session_live_then_saved(page: Any, lab_server: LabServer) -> None:
    shutil.copy(REPO / "notebooks" / "01-quickstart.ipynb", lab_server.root / NOTEBOOK)
    notebook = open_notebook(page, NOTEBOOK)
    wait_for_kernel(page)
    panel = start_quickstart_session(page, notebook)

    first = pending_card(page, panel, "run")
    assert "python -m pytest" in first.inner_text()
    screenshot(page, "live-pending-run", panel)
    first.locator("button.grinta-approve").click()

    # The read runs by itself; the fix waits, with its diff.
    fix = pending_card(page, panel, "replace_string")
    assert FIX in fix.inner_text()
    screenshot(page, "live-pending-diff", panel)
    fix.locator("button.grinta-approve").click()
    wait_for_status(fix, "committed")
    node = lab_server.root / "raft_kv" / "raft_kv" / "node.py"
    assert FIX in node.read_text()

    # Veto the re-run from the keyboard (Escape on the focused bar), with a reason.
    rerun = pending_card(page, panel, "run")
    rerun.locator(".grinta-actions").press("Escape")
    rerun.get_by_placeholder("Why? The model reads this.").fill(VETO_REASON)
    screenshot(page, "live-veto-reason", rerun)
    rerun.get_by_role("button", name="Send veto").click()
    wait_for_status(rerun, "vetoed")
    assert VETO_REASON in rerun.locator(".grinta-reason").inner_text()

    # The demo tries to finish; the finish guard sends it back to run the tests.
    last_run = pending_card(page, panel, "run")
    refused_finish = panel.locator(".grinta-panel-step").nth(4)
    assert "premature_finish" in refused_finish.inner_text()
    screenshot(page, "live-vetoed", panel)
    _screenshot_from(page, "live-vetoed-steps", rerun, panel)
    last_run.locator("button.grinta-approve").click()
    # When the session ends the kernel replaces the panel by the trace, and
    # the extension applies that to the finished cell (labextension/src/traceSync.ts).
    trace = (
        notebook.locator(".jp-Cell")
        .nth(2)
        .locator('.grinta-output > .grinta-session[data-end-reason="finished"]')
    )
    trace.wait_for(timeout=STEP_TIMEOUT_MS)
    assert panel.count() == 0
    screenshot(page, "live-finished", trace)

    run_command(page, "docmanager:save")
    saved = json.loads((lab_server.root / NOTEBOOK).read_text())
    (output,) = [o for o in saved["cells"][2]["outputs"] if o["output_type"] == "display_data"]
    assert WIDGET_MIME not in output["data"]
    assert output["data"][SESSION_MIME]["end_reason"] == "finished"
    tools = [s["tool"] for s in output["data"][SESSION_MIME]["steps"]]
    assert tools == TOOLS

    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    run_command(page, "application:close-all")
    _reload_without_kernels(page)
    notebook = open_notebook(page, NOTEBOOK, kernel=False)
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.hasNoKernel")
    assert NOTEBOOK not in [s["path"] for s in lab_server.api("/api/sessions")]
    trace = notebook.locator(".jp-Cell").nth(2).locator(".grinta-output > .grinta-session")
    trace.wait_for()
    _check_saved_trace(trace)
    screenshot(page, "saved-trace-full-light", trace)
    # A taller window scrolled to the fix and its diff, with the veto below.
    page.set_viewport_size({**VIEWPORT, "height": 1250})
    fix = trace.locator(".grinta-step").nth(2)
    try:
        fix.evaluate("el => el.scrollIntoView({block: 'start'})")
        screenshot(page, "saved-trace-light")
        set_theme(page, "JupyterLab Dark")
        fix.evaluate("el => el.scrollIntoView({block: 'start'})")
        screenshot(page, "saved-trace-dark")
    finally:
        page.set_viewport_size(VIEWPORT)
        set_theme(page, "JupyterLab Light")
        run_command(page, "application:close-all")


def _check_saved_trace(trace: Any) -> None:
    assert trace.get_attribute("data-end-reason") == "finished"
    steps = trace.locator(".grinta-step")
    assert [t.strip() for t in steps.locator(".grinta-tool").all_inner_texts()] == TOOLS
    fix = steps.nth(2)
    assert fix.get_attribute("data-status") == "committed"
    added = fix.locator("tr.grinta-diff-add")
    assert added.count() == 1
    new_line = added.locator(".grinta-diff-new").inner_text()
    assert new_line.isdigit() and int(new_line) > 1
    assert FIX in added.locator(".grinta-diff-code").inner_text()
    vetoed = steps.nth(3)
    assert vetoed.get_attribute("data-status") == "vetoed"
    assert VETO_REASON in vetoed.locator(".grinta-reason").inner_text()
    assert (
        trace.locator(".grinta-card-header .grinta-badge").first.inner_text().lower() == "finished"
    )


def _screenshot_from(page: Any, name: str, first: Any, container: Any) -> None:
    """Save the part of ``container`` from ``first`` down to its end (or the window's)."""
    first.evaluate("el => el.scrollIntoView({block: 'start'})")
    top = first.bounding_box()
    box = container.bounding_box()
    bottom = min(box["y"] + box["height"], VIEWPORT["height"])
    clip = {"x": box["x"], "y": top["y"], "width": box["width"], "height": bottom - top["y"]}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), clip=clip)


def _reload_without_kernels(page: Any) -> None:
    """Reload JupyterLab as if no kernel were installed, so a notebook opens with none."""
    page.route(
        re.compile(r"/api/kernelspecs(\?|$)"),
        lambda route: route.fulfill(json={"default": "", "kernelspecs": {}}),
    )
    page.reload()
    wait_for_app(page)
