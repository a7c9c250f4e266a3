"""Attacks on the live card and the saved card in a real JupyterLab, light and dark.

- A step a rewind undid is drawn dashed and badged *rewound*: every text of
  it (diff rows, tokens, line numbers, header) stays at WCAG AA 4.5:1 against
  what is painted under it, fading (CSS ``opacity``) included.
- Approve, once clicked, is disabled until the kernel answers: the kernel is
  kept busy (a cell sleeps, so the card's message waits in its queue) while
  the card is double-clicked and Enter is pressed; one answer is sent, the
  buttons and hunk checkboxes are disabled, say so and stay readable, and
  the write lands once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.cards import STEP_MIME, pending_write
from tests.browser.conftest import LabServer, open_notebook, run_command, set_theme, wait_for_kernel
from tests.browser.panel import STEP_TIMEOUT_MS, pending_card, wait_for_status
from tests.browser.test_live_cards import CALC, SESSION_CELL

pytestmark = pytest.mark.browser

THEMES = ["JupyterLab Light", "JupyterLab Dark"]
WCAG_NORMAL_TEXT = 4.5
BUSY_SECONDS = 8

# The WCAG ratio of every visible element's own text against the colour painted under it:
# backgrounds composited up the tree, then each faded ancestor (opacity < 1) mixes text and
# background with what lies under it, as the browser paints a group.
CONTRAST_JS = """
(root) => {
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
      if (c[3] > 0) {
        layers.push(c);
        if (c[3] >= 1) break;
      }
    }
    return layers.reverse().reduce((under, c) => over(c, under), [255, 255, 255, 1]);
  };
  const fade = (c, under, o) => [0, 1, 2].map(i => c[i] * o + under[i] * (1 - o)).concat([1]);
  const luminance = c => {
    const ch = c.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  const out = [];
  for (const el of [root, ...root.querySelectorAll('*')]) {
    const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('').trim();
    if (!own || !el.getClientRects().length) continue;
    let bg = background(el);
    let fg = over(parse(getComputedStyle(el).color), bg);
    for (let n = el; n; n = n.parentElement) {
      const o = Number(getComputedStyle(n).opacity);
      if (o < 1) {
        const under = background(n.parentElement);
        fg = fade(fg, under, o);
        bg = fade(bg, under, o);
      }
    }
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    const ratio = Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100;
    out.push({ what: el.className || el.tagName, text: own.slice(0, 40), ratio });
  }
  return out;
}
"""


def _rewound_output() -> dict[str, Any]:
    step = pending_write()
    step.update(status="committed", decision="approve", rewound=True, branch=1)
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {STEP_MIME: step, "text/plain": "step 3 rewound"},
    }


def _write_notebook(path: Path) -> None:
    def cell(source: str, outputs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "cell_type": "code",
            "metadata": {},
            "source": source,
            "outputs": outputs,
            "execution_count": None,
        }

    notebook = {
        "cells": [
            cell(SESSION_CELL.strip(), []),
            cell("# a step a rewind undid (saved)", [_rewound_output()]),
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook))


def _unreadable(page: Any, node: Any, theme: str) -> list[str]:
    return [
        f"{theme}: {m}"
        for m in page.evaluate(CONTRAST_JS, node.element_handle())
        if m["ratio"] < WCAG_NORMAL_TEXT
    ]


def test_rewound_and_answered_cards_stay_readable_and_answer_once(
    page: Any, lab_server: LabServer
) -> None:
    _write_notebook(lab_server.root / "attacks-ui.ipynb")
    notebook = open_notebook(page, "attacks-ui.ipynb")
    wait_for_kernel(page)
    cells = notebook.locator(".jp-Cell")
    rewound = cells.nth(1).locator(".grinta-output > .grinta-step")
    rewound.wait_for(timeout=STEP_TIMEOUT_MS)
    assert rewound.get_attribute("data-rewound") is not None
    assert rewound.locator(".grinta-status-rewound").inner_text().lower() == "rewound"
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }")
    run_command(page, "notebook:run-cell")
    panel = cells.nth(0).locator(".grinta-panel")
    card = pending_card(page, panel, "multiedit")
    failures: list[str] = []
    try:
        for theme in THEMES:
            set_theme(page, theme)
            failures += _unreadable(page, rewound, f"{theme}, rewound")
        set_theme(page, THEMES[0])

        # The kernel is busy: the card's answer waits in its queue behind the sleep.
        page.evaluate(
            "code => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
            ".requestExecute({code})",
            f"import time; time.sleep({BUSY_SECONDS})",
        )
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus"
            " === 'busy'"
        )
        card.locator("button.grinta-approve").dblclick()
        bar = card.locator(".grinta-actions")
        disabled = bar.evaluate("el => [...el.querySelectorAll('button')].map(b => b.disabled)")
        assert disabled == [True, True, True], "answered: Approve, Edit, Veto disabled"
        boxes = card.locator("input.grinta-hunk-check")
        assert [boxes.nth(i).is_disabled() for i in range(3)] == [True] * 3, "hunks locked as sent"
        assert "waiting for the kernel" in bar.inner_text()
        bar.press("Enter")
        for theme in THEMES:
            set_theme(page, theme)
            failures += _unreadable(page, bar, f"{theme}, answered bar")
        wait_for_status(card, "committed")
        workspace = lab_server.root / "hunks-ws"
        assert (workspace / "calc.py").read_text() == CALC.replace("return 1", "return 2").replace(
            "return 'three'", "return 'four'"
        )
        assert (workspace / "util.py").read_text() == "LIMIT = 20\n"
        # The next step waits with its own bar, enabled: nothing of the double click reached it.
        after = pending_card(page, panel, "run")
        assert after.locator(".grinta-actions button:disabled").count() == 0
        assert after.locator(".grinta-step").get_attribute("data-status") == "pending"
    finally:
        set_theme(page, "JupyterLab Light")
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        run_command(page, "application:close-all")
    assert not failures, "text below WCAG AA contrast:\n" + "\n".join(failures)
