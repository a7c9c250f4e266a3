"""The quickstart in Notebook 7: the live panel, and the extension's cards.

Notebook 7 is built from JupyterLab's components and loads the same federated
extensions, so the grinta extension's renderers and its trace plugin (which
needs INotebookTracker, which Notebook 7 provides) work unchanged. This runs
the quickstart's session in Notebook 7's own page (``/notebooks/<path>``)
with the demo model, approving by clicking (and once with Enter), and checks
the fix on disk; then, after a reload while the session waits, the finished
trace that replaces the panel (the trace plugin's doing) and is what **Save**
writes; and the step cards ``%grinta log`` writes.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.browser.conftest import (
    REPO,
    LabServer,
    open_notebook7,
    run_command,
    screenshot,
    wait_for_idle,
)
from tests.browser.panel import (
    STEP_TIMEOUT_MS,
    pending_card,
    start_quickstart_session,
    wait_for_status,
)

pytestmark = pytest.mark.browser

QUICKSTART = REPO / "notebooks" / "01-quickstart.ipynb"
NOTEBOOK = "quickstart-notebook7.ipynb"
EXTENSION = "grinta-jupyter-labextension"
FIX = "!= request.prev_log_term"
SESSION_MIME = "application/vnd.grinta.session+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# The demo's session when every call is approved.
TOOLS = ["run", "read", "replace_string", "run", "finish"]


def test_quickstart_session_in_notebook7(notebook7_page: Any, notebook7_server: LabServer) -> None:
    page = notebook7_page
    shutil.copy(QUICKSTART, notebook7_server.root / NOTEBOOK)
    loaded = [e["name"] for e in notebook7_server.page_config()["federated_extensions"]]
    assert EXTENSION in loaded
    notebook = open_notebook7(page, notebook7_server, NOTEBOOK)
    # The renderers (a mimeExtension) and the trace plugin are both active.
    for plugin in ("step", "session", "trace-sync"):
        assert page.evaluate(
            "id => window.jupyterapp.isPluginActivated(id)", f"{EXTENSION}:{plugin}"
        ), plugin

    panel = start_quickstart_session(page, notebook)

    first = pending_card(page, panel, "run")
    assert "python -m pytest" in first.inner_text()
    first.locator("button.grinta-approve").click()

    fix = pending_card(page, panel, "replace_string")
    assert FIX in fix.inner_text()
    fix.scroll_into_view_if_needed()
    screenshot(page, "notebook7-pending-diff")
    fix.locator("button.grinta-approve").click()
    wait_for_status(fix, "committed")
    node = notebook7_server.root / "raft_kv" / "raft_kv" / "node.py"
    assert FIX in node.read_text()

    # Save and reload while the re-run waits. The panel comes back (its widget
    # lives in the kernel), but the new page has no record of the request that
    # made the display, so it drops the kernel's last update (the trace alone)
    # unless the extension's trace plugin applies it: without the plugin the
    # panel stays.
    pending_card(page, panel, "run")
    run_command(page, "docmanager:save")
    notebook = open_notebook7(page, notebook7_server, NOTEBOOK)
    cell = notebook.locator(".jp-Cell").nth(2)
    panel = cell.locator(".grinta-panel")
    # The re-run from the keyboard: Enter on the focused action bar approves.
    pending_card(page, panel, "run").locator(".grinta-actions").press("Enter")
    trace = cell.locator('.grinta-output > .grinta-session[data-end-reason="finished"]')
    trace.wait_for(timeout=STEP_TIMEOUT_MS)
    assert panel.count() == 0
    steps = trace.locator(".grinta-step")
    assert [t.strip() for t in steps.locator(".grinta-tool").all_inner_texts()] == TOOLS
    _show_whole_output(page, 2)
    screenshot(page, "notebook7-finished", trace)
    run_command(page, "docmanager:save")
    saved = json.loads((notebook7_server.root / NOTEBOOK).read_text())
    (output,) = [o for o in saved["cells"][2]["outputs"] if o["output_type"] == "display_data"]
    assert WIDGET_MIME not in output["data"]
    assert output["data"][SESSION_MIME]["end_reason"] == "finished"

    # `%grinta log`: a step card per step, each an output of its own.
    log_index = _cell_index(page, "%grinta log")
    page.evaluate(
        "i => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = i; }", log_index
    )
    run_command(page, "notebook:run-cell")
    wait_for_idle(page)
    log = notebook.locator(".jp-Cell").nth(log_index)
    cards = log.locator(".grinta-output > .grinta-step")
    cards.nth(len(TOOLS) - 1).wait_for(timeout=STEP_TIMEOUT_MS)
    assert [t.strip() for t in cards.locator(".grinta-tool").all_inner_texts()] == TOOLS
    committed = cards.nth(2)
    assert committed.get_attribute("data-status") == "committed"
    added = committed.locator("tr.grinta-diff-add")
    assert FIX in added.locator(".grinta-diff-code").inner_text()
    assert added.locator(".grinta-diff-new").inner_text().isdigit()
    _show_whole_output(page, log_index)
    committed.evaluate("el => el.scrollIntoView({block: 'start'})")
    screenshot(page, "notebook7-log")


def _show_whole_output(page: Any, index: int) -> None:
    """Unfold cell ``index``'s output, which Notebook 7 scrolls when it is long."""
    page.evaluate(
        "i => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = i; }", index
    )
    run_command(page, "notebook:disable-output-scrolling")


def _cell_index(page: Any, source: str) -> int:
    """The index of the open notebook's first cell whose source is ``source``."""
    index = page.evaluate(
        """source => window.jupyterapp.shell.currentWidget.content.widgets
          .findIndex(cell => cell.model.sharedModel.getSource().trim() === source)""",
        source,
    )
    assert index >= 0, f"no cell {source!r}"
    return int(index)
