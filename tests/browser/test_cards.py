"""The labextension renders pre-baked step and session cards in a real JupyterLab.

No kernel runs: the notebook's outputs are written by ``cards.py`` from
payloads that follow docs/mime-schema.md.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.cards import FALLBACK_HTML, refused_ambiguous, write_cards_notebook
from tests.browser.conftest import REPO, LabServer, open_notebook, screenshot, set_theme

pytestmark = pytest.mark.browser

NOTEBOOK = "cards.ipynb"
# Each output's own card (a live trace's step cards are nested inside its session card).
CARDS = ".grinta-output > .grinta-card"
BUILD = REPO / "grinta_jupyter" / "labextension"


@pytest.fixture(scope="module", autouse=True)
def lab_serves_this_build(lab_server: LabServer) -> None:
    """Fail clearly when JupyterLab loads another copy of the extension than this checkout's."""
    loaded = {e["name"]: e["load"] for e in lab_server.page_config()["federated_extensions"]}
    name = "grinta-jupyter-labextension"
    assert name in loaded, f"{name} is not installed here: pip install -e . (docs/labextension.md)"
    built = json.loads((BUILD / "package.json").read_text())["jupyterlab"]["_build"]["load"]
    assert loaded[name] == built, (
        f"JupyterLab serves {loaded[name]}, this checkout built {built}: reinstall "
        "(pip install -e .) or link it (jupyter labextension develop --overwrite .)"
    )


@pytest.fixture
def cards(page: Any, lab_server: LabServer) -> Any:
    """The cards notebook, open; its locator."""
    write_cards_notebook(lab_server.root / NOTEBOOK)
    panel = open_notebook(page, NOTEBOOK, kernel=False)
    panel.locator(CARDS).nth(7).wait_for()
    return panel


def test_cards_show_what_the_payloads_say(page: Any, cards: Any) -> None:
    step_cards = cards.locator(".grinta-output > .grinta-step")
    assert cards.locator(CARDS).count() == 8
    # The card, not the HTML fallback, is what JupyterLab shows.
    assert cards.get_by_text(FALLBACK_HTML.removeprefix("<p>").removesuffix("</p>")).count() == 0

    pending = step_cards.nth(0)
    header = pending.locator(".grinta-card-header")
    assert header.locator(".grinta-tool").inner_text() == "replace_string"
    assert header.locator(".grinta-badge").inner_text().lower() == "pending"
    assert "awaiting your decision" in header.inner_text()
    assert "RaftNode.handle_append_entries" in pending.locator(".grinta-resolutions").inner_text()
    assert pending.locator(".grinta-diff-path").inner_text() == "raft_kv/node.py"
    removed = pending.locator("tr.grinta-diff-del")
    added = pending.locator("tr.grinta-diff-add")
    assert removed.count() == 1 and added.count() == 1
    assert _cells(removed) == ["285", "", "-", _check("<")]
    assert _cells(added) == ["", "285", "+", _check("!=")]
    first_context = pending.locator("tr.grinta-diff-context").first
    assert _cells(first_context)[:2] == ["282", "282"]
    # Python is highlighted with the editor's palette.
    assert added.locator(".grinta-tok-keyword", has_text="if").count() == 1

    vetoed = step_cards.nth(1)
    assert vetoed.locator(".grinta-badge").inner_text().lower() == "vetoed"
    assert "No drive-by comments" in vetoed.locator(".grinta-reason").inner_text()

    refused = step_cards.nth(2)
    validation = refused_ambiguous()["validation"]
    assert refused.locator(".grinta-badge").inner_text().lower() == "refused"
    assert refused.locator(".grinta-error-code").inner_text() == "AMBIGUOUS_MATCH"
    assert refused.locator(".grinta-error-message").inner_text() == validation["message"]
    assert refused.locator(".grinta-candidate").count() == len(validation["candidates"]) == 4
    assert "_append_entries_reply(" in refused.locator(".grinta-snippet").first.inner_text()

    command = step_cards.nth(3)
    observation = command.locator("details.grinta-observation")
    # 20 lines of output start folded; the summary says what is inside.
    assert "exit 0 · 20 lines" in observation.locator("summary").inner_text()
    assert observation.get_attribute("open") is None
    observation.locator("summary").click()
    assert "18 passed" in observation.locator(".grinta-observation-output").inner_text()
    assert "repeated_command" in command.locator(".grinta-guards").inner_text()

    session = cards.locator(".grinta-output > .grinta-session").nth(0)
    assert "finished" in session.locator(".grinta-badge").inner_text().lower()
    assert session.locator('tr[data-metric="tool_entropy_bits"] td').inner_text() == "1.918"

    trace = cards.locator(".grinta-output > .grinta-session").nth(1)
    assert (
        trace.locator(".grinta-card-header .grinta-badge").first.inner_text().lower() == "running"
    )
    assert trace.locator(".grinta-step").count() == 2
    assert trace.locator(".grinta-metrics").count() == 0

    problems = cards.locator(".grinta-problem-message")
    assert problems.nth(0).inner_text() == (
        "grinta: cannot render this step (field `tool` is missing; and 1 more)"
    )
    assert problems.nth(1).inner_text() == (
        "grinta: cannot render this step (schema version 7; this extension knows 1)"
    )

    screenshot(page, "cards-light")
    screenshot(page, "step-card-light", pending)
    screenshot(page, "session-card-light", session)


def test_cards_follow_the_dark_theme(page: Any, cards: Any) -> None:
    pending = cards.locator(".grinta-output > .grinta-step").nth(0)
    refused = cards.locator(".grinta-output > .grinta-step").nth(2)
    light_background = _background(pending)
    set_theme(page, "JupyterLab Dark")
    try:
        dark_background = _wait_background_change(pending, light_background)
        assert _luminance(dark_background) < _luminance(light_background)
        screenshot(page, "cards-dark")
        screenshot(page, "step-card-dark", pending)
        screenshot(page, "refused-card-dark", refused)
    finally:
        set_theme(page, "JupyterLab Light")


def test_long_diff_starts_collapsed_and_expands(page: Any, cards: Any) -> None:
    vetoed = cards.locator(".grinta-output > .grinta-step").nth(1)
    rows = vetoed.locator("tr.grinta-diff-row")
    total = rows.count()
    toggle = vetoed.locator("button.grinta-toggle")
    assert total > 80
    assert toggle.inner_text() == f"Show all {total} lines ({total - _visible(rows)} hidden)"
    assert _visible(rows) <= 80
    screenshot(page, "long-diff-collapsed-light", vetoed)

    toggle.click()
    assert _visible(rows) == total
    assert toggle.inner_text() == "Show fewer lines"

    # A live session re-renders its output after every step: what the reader
    # expanded stays expanded.
    vetoed.evaluate("el => el.classList.add('stale-render')")
    page.evaluate(
        """() => {
          const outputs = window.jupyterapp.shell.currentWidget.content.widgets[1].model.outputs;
          outputs.set(0, outputs.get(0).toJSON());
        }"""
    )
    cards.locator(".stale-render").wait_for(state="detached")
    assert _visible(rows) == total
    toggle.click()
    assert _visible(rows) <= 80


def _cells(row: Any) -> list[str]:
    return [c.rstrip("\n") for c in row.locator("td").all_inner_texts()]


def _check(op: str) -> str:
    """The line the pending step changes, with its comparison operator."""
    return f"        if self.log.term_at(request.prev_log_index) {op} request.prev_log_term:"


def _visible(rows: Any) -> int:
    return int(rows.evaluate_all("rows => rows.filter(r => !r.hidden).length"))


def _background(card: Any) -> str:
    return str(card.evaluate("el => getComputedStyle(el).backgroundColor"))


def _wait_background_change(card: Any, before: str) -> str:
    card.evaluate(
        """(el, before) => new Promise(resolve => {
          const check = () => getComputedStyle(el).backgroundColor !== before
            ? resolve() : requestAnimationFrame(check);
          check();
        })""",
        before,
    )
    return _background(card)


def _luminance(css_color: str) -> float:
    parts = css_color[css_color.index("(") + 1 : css_color.index(")")].split(",")
    r, g, b = (float(p) for p in parts[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
