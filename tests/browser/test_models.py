"""The model picker and the key field in a real JupyterLab, light and dark.

The kernel is told (in its first cell) to use ``anthropic/claude-x`` with no
key, and where a local Ollama answers (a stand-in on 127.0.0.1, tests/model_servers.py).
``%grinta`` then refuses to start, says so in one line and shows the model bar:
the key is missing, and the picker lists the configured model, the local
Ollama's model and one model per provider still without a key. A key typed in
the field and sent with Enter is gone from the page at once and held by the
kernel; picking the Ollama model hides the field (it takes no key); picking the
demo makes the next ``%grinta`` run it, in a panel whose header has the same bar. The lab
saves widget state in notebooks for this test ("Save Jupyter widget state"):
the saved notebook holds the bar's state, and never the key. The bar's text is
measured for WCAG AA contrast (4.5:1) in JupyterLab Light, Dark and Dark High
Contrast.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from tests.browser.conftest import (
    LabServer,
    lab_page,
    open_notebook,
    run_command,
    screenshot,
    set_theme,
    wait_for_kernel,
)
from tests.browser.panel import STEP_TIMEOUT_MS, pending_card
from tests.browser.test_live_cards import CONTRAST_JS, THEMES, WCAG_NORMAL_TEXT
from tests.model_servers import ModelServer

pytestmark = pytest.mark.browser

NOTEBOOK = "models.ipynb"
KEY = "sk-ant-typed-in-the-browser-0123456789"
OLLAMA_MODEL = "ollama_chat/qwen2.5-coder:7b"
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
CHECKED = [
    ".grinta-models-label",
    ".grinta-models-note",
    ".grinta-models-problem",
    "select.grinta-models-select",
    "input.grinta-models-key",
    "button.grinta-models-use",
]


def _write_notebook(server: LabServer, ollama: str) -> None:
    setup = (
        "import os\n"
        f"os.environ['OLLAMA_HOST'] = {ollama!r}\n"
        "os.environ['GRINTA_MODEL'] = 'anthropic/claude-x'\n"
        "for _v in ('ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'GRINTA_API_KEY'):\n"
        "    os.environ.pop(_v, None)\n"
        "%load_ext grinta_jupyter"
    )
    cells = [
        {"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
        for s in (
            setup,
            "%grinta fix the failing test",
            "os.environ.pop('GRINTA_MODEL', None)\n%grinta models",
            "%grinta fix the failing test in raft_kv",
        )
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (server.root / NOTEBOOK).write_text(json.dumps(notebook))


def _save_widget_state(server: LabServer, on: bool) -> None:
    """JupyterLab's "Save Jupyter widget state in notebooks" setting, through its REST API."""
    raw = json.dumps({"saveState": True} if on else {})
    request = urllib.request.Request(
        f"{server.url}/lab/api/settings/{WIDGETS_PLUGIN}",
        data=json.dumps({"raw": raw}).encode(),
        method="PUT",
        headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def _ratios(where: Any) -> list[dict[str, Any]]:
    handles = [h for s in CHECKED for h in where.locator(s).element_handles()]
    assert handles, "nothing to measure"
    return [
        m
        for m in where.page.evaluate(CONTRAST_JS, handles)
        if m["text"] or "SELECT" in m["what"].upper()
    ]


def _slug(theme: str) -> str:
    return theme.lower().replace("jupyterlab ", "").replace(" ", "-")


def test_the_picker_and_the_key_field(browser: Any, lab_server: LabServer) -> None:
    _save_widget_state(lab_server, True)
    failures: list[str] = []
    try:
        with (
            ModelServer(ollama_models=["qwen2.5-coder:7b"]) as ollama,
            lab_page(browser, lab_server) as page,
        ):
            _write_notebook(lab_server, ollama.url)
            notebook = open_notebook(page, NOTEBOOK)
            wait_for_kernel(page)
            try:
                failures = _drive(page, notebook, lab_server)
            finally:
                set_theme(page, "JupyterLab Light")
                page.evaluate(
                    "() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()"
                )
                run_command(page, "application:close-all")
            assert any(r.path == "/api/tags" for r in ollama.requests), "Ollama was asked"
    finally:
        _save_widget_state(lab_server, False)
    assert not failures, "text below WCAG AA contrast:\n" + "\n".join(failures)


def _run_cells(page: Any, first: int, count: int) -> None:
    page.evaluate(
        f"() => {{ window.jupyterapp.shell.currentWidget.content.activeCellIndex = {first}; }}"
    )
    for _ in range(count):
        run_command(page, "notebook:run-cell-and-select-next")


def _drive(page: Any, notebook: Any, server: LabServer) -> list[str]:
    _run_cells(page, 0, 2)
    cell = notebook.locator(".jp-Cell").nth(1)
    bar = cell.locator(".grinta-models")
    bar.wait_for(timeout=STEP_TIMEOUT_MS)
    line = cell.locator(".jp-OutputArea-output pre").first.inner_text()
    assert line.startswith("%grinta: MISSING_KEY: no API key for anthropic/claude-x")
    assert "type a key in the key field" in line

    # The picker: the configured model chosen, the local Ollama's model once it answered.
    select = bar.locator("select.grinta-models-select")
    select.locator(f'option[value="{OLLAMA_MODEL}"]').wait_for(state="attached", timeout=10_000)
    assert select.input_value() == "anthropic/claude-x"
    groups = select.locator("optgroup").evaluate_all("gs => gs.map(g => g.label)")
    assert groups[0] == "Configured" and "Local Ollama" in groups and groups[-1] == "Needs a key"
    assert bar.locator(".grinta-models-searching").is_hidden()

    # The missing key, said with its fix.
    assert bar.get_attribute("data-key-state") == "missing"
    assert "set ANTHROPIC_API_KEY" in bar.locator(".grinta-models-note").inner_text()
    assert bar.locator(".grinta-models-problem").inner_text().startswith("MISSING_KEY: ")
    field = bar.locator("input.grinta-models-key")
    assert field.get_attribute("type") == "password"

    failures: list[str] = []
    for theme in THEMES:
        set_theme(page, theme)
        failures += [f"{theme}, no key: {m}" for m in _ratios(bar) if m["ratio"] < WCAG_NORMAL_TEXT]
        screenshot(page, f"models-missing-{_slug(theme)}", cell.locator(".jp-OutputArea"))
    set_theme(page, "JupyterLab Light")

    # The key: typed, sent with Enter, gone from the page, held by the kernel.
    field.fill(KEY)
    field.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('.grinta-models').dataset.keyState === 'panel'",
        timeout=10_000,
    )
    assert field.input_value() == ""
    assert "memory only" in bar.locator(".grinta-models-note").inner_text()
    assert bar.locator(".grinta-models-problem").is_hidden(), "the problem is fixed"
    assert bar.locator("button.grinta-models-forget").is_visible()
    assert KEY not in page.content()
    # The same key again: the kernel's word is the same as before, and still replaces
    # the page's "sending the key..." (a redraw on a status change alone never came).
    status = bar.locator(".grinta-models-status")
    received = "key for anthropic received: the next session uses it"
    assert status.inner_text() == received
    field.fill(KEY)
    field.press("Enter")
    page.wait_for_function(
        "text => document.querySelector('.grinta-models-status').textContent === text",
        arg=received,
        timeout=10_000,
    )
    assert field.input_value() == ""
    for theme in THEMES:
        set_theme(page, theme)
        failures += [
            f"{theme}, key held: {m}" for m in _ratios(bar) if m["ratio"] < WCAG_NORMAL_TEXT
        ]
        screenshot(page, f"models-held-{_slug(theme)}", bar)
    set_theme(page, "JupyterLab Light")

    # Picking the local Ollama model: the next session's; its key field goes away.
    select.select_option(OLLAMA_MODEL)
    page.wait_for_function(
        "() => document.querySelector('.grinta-models').dataset.keyState === 'none'",
        timeout=10_000,
    )
    assert (
        f"the next session uses {OLLAMA_MODEL}" in bar.locator(".grinta-models-status").inner_text()
    )
    assert bar.locator(".grinta-models-keybox").is_hidden()

    # Saved: the bar's widget state is in the notebook, the key is not.
    run_command(page, "docmanager:save")
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=10_000
    )
    saved = (server.root / NOTEBOOK).read_text()
    states = json.loads(saved)["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
    bars = [s["state"] for s in states["state"].values() if s["state"].get("kind") == "models"]
    assert bars and bars[-1]["chosen"] == OLLAMA_MODEL, "the widget state was saved"
    assert KEY not in saved and KEY[10:30] not in saved

    # The choice is the next session's. Without GRINTA_MODEL the picker offers the demo;
    # picked over the Ollama model chosen above, it is what the next %grinta runs, in a panel
    # whose header has the same bar.
    _run_cells(page, 2, 1)
    again = notebook.locator(".jp-Cell").nth(2).locator(".grinta-models")
    again.wait_for(timeout=STEP_TIMEOUT_MS)
    assert again.locator("select.grinta-models-select").input_value() == OLLAMA_MODEL
    again.locator("select.grinta-models-select").select_option("demo")
    again.locator(".grinta-models-status", has_text="the next session uses demo").wait_for()
    _run_cells(page, 3, 1)
    panel = notebook.locator(".jp-Cell").nth(3).locator(".grinta-panel")
    panel.wait_for(timeout=STEP_TIMEOUT_MS)
    header = panel.locator(".grinta-panel-header")
    assert header.inner_text().startswith("grinta · demo · raft_kv")
    in_panel = panel.locator(".grinta-models")
    assert in_panel.locator("select.grinta-models-select").input_value() == "demo"
    assert in_panel.get_attribute("data-key-state") == "none"
    pending_card(page, panel, "run")  # the session runs: a steady panel for the screenshots
    for theme in THEMES:
        set_theme(page, theme)
        failures += [
            f"{theme}, panel: {m}" for m in _ratios(in_panel) if m["ratio"] < WCAG_NORMAL_TEXT
        ]
        screenshot(page, f"models-panel-{_slug(theme)}", panel)
    return failures
