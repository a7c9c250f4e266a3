"""Live cards in a real JupyterLab: readable in every theme, and approved hunk by hunk.

A notebook cell builds a ``Session`` whose ``ScriptedModel`` proposes one
``multiedit`` of three hunks in two files, and shows it as the controller
does: a ``SessionPanel`` fed by one loop over ``session.updates()``, running
as a task on the kernel's loop. A second cell displays the same step's MIME
bundle, which the labextension draws: the saved card.

- Contrast: in JupyterLab Light, Dark and Dark High Contrast, the WCAG
  contrast ratio of the text of the diff rows (added, removed, context, and
  their highlighted tokens), the hunk and file headers and the step header
  (number, tool, kind, badge, decision) and, live, the action bar, against
  the background actually painted under it, in the live card and in the
  saved card: at least 4.5.
- Per-hunk approval: uncheck one hunk, approve the others with a reason;
  the files on disk hold exactly the accepted hunks.
"""

from __future__ import annotations

import json
from pathlib import Path
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
from tests.browser.panel import STEP_TIMEOUT_MS, pending_card, wait_for_status

pytestmark = pytest.mark.browser

THEMES = ["JupyterLab Light", "JupyterLab Dark", "JupyterLab Dark High Contrast"]
WCAG_NORMAL_TEXT = 4.5

CALC = "def f():\n    return 1\n" + "\n" * 8 + "def g():\n    # keep\n    return 'three'\n"
UTIL = "LIMIT = 10\n"
EDITS = [
    {"path": "calc.py", "old_string": "return 1", "new_string": "return 2"},
    {"path": "calc.py", "old_string": "return 'three'", "new_string": "return 'four'"},
    {"path": "util.py", "old_string": "LIMIT = 10", "new_string": "LIMIT = 20"},
]

SESSION_CELL = f"""
import asyncio, json, pathlib
from IPython.display import display
from grinta_jupyter.agent import Session
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.jupyter.panel import SessionPanel

root = pathlib.Path("hunks-ws")
root.mkdir(exist_ok=True)
(root / "calc.py").write_text({CALC!r})
(root / "util.py").write_text({UTIL!r})
edits = json.loads({json.dumps(EDITS)!r})
model = ScriptedModel([
    reply("Three small changes:", call("multiedit", edits=edits)),
    reply("Checking:", call("run", command="python -c 'import calc, util'")),
])
session = Session("tidy calc.py and util.py", model=model, root=root)
panel = SessionPanel(session)

async def drive():  # as the controller does: one loop, every update to the panel
    async for update in session.updates():
        panel.apply(update)

task = asyncio.ensure_future(drive())
display(panel.widget)
"""

SAVED_CELL = """
from grinta_jupyter.jupyter.mime import step_bundle
while session.pending is None:
    await asyncio.sleep(0.05)
display(step_bundle(session.steps[0], session.id), raw=True)
"""

# The WCAG ratio of an element's text against the colour painted under it: the element's
# and its ancestors' backgrounds composited (translucent tints included) over the page's.
CONTRAST_JS = """
(elements) => {
  // Computed colours read rgb(r, g, b), rgba(r, g, b, a) or, from color-mix(), color(srgb r g b / a).
  const parse = value => {
    const m = value.match(/^(rgba?|color)\\(\\s*(?:srgb\\s+)?([^)]*)\\)$/);
    if (!m) throw new Error('unreadable colour: ' + value);
    const p = m[2].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    const scale = m[1] === 'color' ? 255 : 1;
    return [p[0] * scale, p[1] * scale, p[2] * scale, p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3] + bottom[3] * (1 - top[3]);
    const mix = i => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a;
    return [mix(0), mix(1), mix(2), a];
  };
  const background = el => {
    const layers = [];
    for (let n = el; n; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) {
        layers.push(c);
        if (c[3] >= 1) break;
      }
    }
    return layers.reverse().reduce((under, c) => over(c, under), [255, 255, 255, 1]);
  };
  const luminance = c => {
    const ch = c.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  return elements.map(el => {
    const bg = background(el);
    const fg = over(parse(getComputedStyle(el).color), bg);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    return {
      what: el.className || el.tagName,
      text: el.textContent.slice(0, 40),
      ratio: Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100
    };
  });
}
"""

# What must be readable: diff rows of each role, their tokens, hunk and file headers, the step header.
CHECKED = [
    "tr.grinta-diff-add td.grinta-diff-code",
    "tr.grinta-diff-del td.grinta-diff-code",
    "tr.grinta-diff-context td.grinta-diff-code",
    "tr.grinta-diff-row [class^='grinta-tok-']",
    "tr.grinta-diff-row td.grinta-diff-num",
    ".grinta-diff-hunk-header",
    ".grinta-diff-file .grinta-diff-path",
    ".grinta-diff-file .grinta-diff-added",
    ".grinta-diff-file .grinta-diff-removed",
    ".grinta-card-header > span",
    ".grinta-actions .grinta-button",  # the live card's bar (absent from the saved card)
    ".grinta-actions .grinta-action-hint",
]


def _write_notebook(path: Path) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None}
        for src in (SESSION_CELL.strip(), SAVED_CELL.strip())
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook))


def _run_all(page: Any, name: str, server: LabServer) -> Any:
    _write_notebook(server.root / name)
    notebook = open_notebook(page, name)
    wait_for_kernel(page)
    run_command(page, "notebook:run-all-cells")
    return notebook


def _ratios(card: Any) -> list[dict[str, Any]]:
    handles = [h for selector in CHECKED for h in card.locator(selector).element_handles()]
    assert handles, "nothing to measure"
    return list(card.page.evaluate(CONTRAST_JS, handles))


def test_live_and_saved_cards_are_readable_in_every_theme(page: Any, lab_server: LabServer) -> None:
    notebook = _run_all(page, "contrast.ipynb", lab_server)
    panel = notebook.locator(".jp-Cell").nth(0).locator(".grinta-panel")
    live = pending_card(page, panel, "multiedit")
    saved = notebook.locator(".jp-Cell").nth(1).locator(".grinta-output > .grinta-step")
    saved.wait_for(timeout=STEP_TIMEOUT_MS)
    # The same card: the live one has the hunk checkboxes and the bar on top of it.
    assert live.locator(".grinta-diff-row").count() == saved.locator(".grinta-diff-row").count()
    assert live.locator(".grinta-tok-keyword").count() > 0, "live cards are highlighted"
    failures = []
    try:
        for theme in THEMES:
            set_theme(page, theme)
            for where, card in (("live", live), ("saved", saved)):
                for m in _ratios(card):
                    if m["ratio"] < WCAG_NORMAL_TEXT:
                        failures.append(f"{theme}, {where}: {m}")
            slug = theme.lower().replace("jupyterlab ", "").replace(" ", "-")
            screenshot(page, f"live-card-{slug}", live)
            screenshot(page, f"saved-card-{slug}", saved)
    finally:
        set_theme(page, "JupyterLab Light")
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        run_command(page, "application:close-all")
    assert not failures, "text below WCAG AA contrast:\n" + "\n".join(failures)


def test_a_write_approved_hunk_by_hunk(page: Any, lab_server: LabServer) -> None:
    notebook = _run_all(page, "hunks.ipynb", lab_server)
    panel = notebook.locator(".jp-Cell").nth(0).locator(".grinta-panel")
    card = pending_card(page, panel, "multiedit")
    # The pending card came into view and took focus (Enter would approve).
    assert card.locator(".grinta-actions").evaluate("el => el === document.activeElement")
    boxes = card.locator("input.grinta-hunk-check")
    assert boxes.count() == 3
    assert all(boxes.nth(i).is_checked() for i in range(3))
    boxes.nth(1).uncheck()
    approve = card.locator("button.grinta-approve")
    assert approve.inner_text() == "Approve selected (2 of 3)"
    card.locator(".grinta-hunk-reason").fill("g() keeps returning 'three'")
    screenshot(page, "live-hunks", panel)
    approve.click()
    wait_for_status(card, "committed")
    workspace = lab_server.root / "hunks-ws"
    assert (workspace / "calc.py").read_text() == CALC.replace("return 1", "return 2")
    assert (workspace / "util.py").read_text() == "LIMIT = 20\n"
    assert card.locator("input.grinta-hunk-check").count() == 0, "a decided card has no checkboxes"
    # The next step (the check run) waits in turn.
    pending_card(page, panel, "run")
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    run_command(page, "application:close-all")
