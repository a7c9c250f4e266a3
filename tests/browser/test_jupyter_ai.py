"""``@Grinta`` in Jupyter AI's chat, in a real JupyterLab with Jupyter AI installed.

The lab's environment names the model (``GRINTA_MODEL`` and friends, pointing at
tests/openai_server.py with a scripted reply sequence), as a user's would: the
Grinta persona's ``grinta acp`` inherits it. The test types the message a
person types, sees grinta's tool calls in the chat (a read that ran, an edit
with its diff waiting for Approve or Veto), allows the write and the test run
from the chat's buttons, and checks the file on disk. Screenshots of the chat
in both themes go to artifacts/screenshots/ (docs/jupyter-ai.md shows them).

Jupyter AI needs no model provider for an ACP persona, so none is configured.
Its vendored personas (Claude, Codex, ...) are turned off with the switch
jupyter-ai-acp-client has for end-to-end tests, so the chat holds Grinta alone
whatever agent CLIs the machine has.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import (
    LabServer,
    _serve,
    _without_rtc,
    lab_page,
    run_command,
    screenshot,
    set_theme,
)
from tests.openai_server import OpenAIServer, tool_call, tool_reply

pytest.importorskip("jupyter_ai_acp_client", reason="Jupyter AI is not installed")

pytestmark = pytest.mark.browser

CHAT = "project/fix.chat"
CORE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
TESTS = "python -m pytest -q tests"
TASK = "fix the failing test in pkg/core.py"
SUMMARY = "Fixed add: it added a - b; 1 passed."
STEP_MS = 60_000  # what one step may take: the first starts grinta acp and imports litellm


@pytest.fixture(scope="module")
def model() -> Iterator[OpenAIServer]:
    """The model: a read, the fix, the test run, and a finish."""
    with OpenAIServer() as server:
        server.queue(
            tool_reply(tool_call("read", {"path": "pkg/core.py"}), text="Let me look at `add`."),
            tool_reply(
                tool_call(
                    "replace_string",
                    {"path": "pkg/core.py", "old_string": "a - b", "new_string": "a + b"},
                )
            ),
            tool_reply(tool_call("run", {"command": TESTS})),
            tool_reply(tool_call("finish", {"summary": SUMMARY})),
        )
        yield server


@pytest.fixture(scope="module")
def jai_lab(tmp_path_factory: pytest.TempPathFactory, model: OpenAIServer) -> Iterator[LabServer]:
    """A JupyterLab like ``lab_server``, whose environment configures grinta's model."""
    env = {
        "GRINTA_MODEL": "openai/test",
        "GRINTA_API_BASE": model.url,
        "GRINTA_API_KEY": "sk-test-key-for-jupyter-ai",
        "JUPYTER_AI_ACP_CLIENT_E2E_TESTING_ONLY": "1",  # no vendored personas (docstring)
    }
    options = ["--LabApp.expose_app_in_browser=True", *_without_rtc()]
    base = tmp_path_factory.mktemp("jai-lab")
    # The persona's shutdown ends grinta acp with the server: give it time.
    with _serve(base, "jupyterlab", options, home="/lab", env=env, stop_wait=20) as server:
        project = server.root / "project"
        (project / "pkg").mkdir(parents=True)
        (project / "tests").mkdir()
        (project / "pkg" / "__init__.py").write_text("")
        (project / "pkg" / "core.py").write_text(CORE)
        (project / "tests" / "test_core.py").write_text(TEST)
        (server.root / CHAT).write_text("")  # a new chat, as "New chat" in the launcher makes one
        yield server


def test_grinta_in_the_jupyter_ai_chat_asks_then_writes(
    browser: Any, jai_lab: LabServer, model: OpenAIServer
) -> None:
    core = jai_lab.root / "project" / "pkg" / "core.py"
    with lab_page(browser, jai_lab) as page:
        run_command(page, "docmanager:open", {"path": CHAT})
        chat = page.locator(".jp-chat-widget").first
        chat.wait_for(state="visible", timeout=30_000)
        # The persona picker shows Grinta, and its ACP modes (grinta's policies).
        picker = chat.locator(".jp-chat-input-container")
        picker.get_by_text("Grinta", exact=True).wait_for(timeout=30_000)
        picker.get_by_role("button", name="Ask before changes").wait_for(timeout=STEP_MS)

        box = chat.locator(".jp-chat-input-textfield textarea:not([aria-hidden])")
        box.click()
        box.press_sequentially(f"@Grinta {TASK}")
        box.press("Enter")

        messages = chat.locator(".jp-chat-messages-container")
        messages.get_by_text("Let me look at add.").wait_for(timeout=STEP_MS)
        messages.get_by_text("Read pkg/core.py (lines 1-2 of 2)").wait_for(timeout=STEP_MS)
        buttons = messages.locator(".jp-jupyter-ai-acp-client-permission-buttons")
        buttons.get_by_role("button", name="Approve").wait_for(timeout=STEP_MS)
        diff = messages.locator(".jp-jupyter-ai-acp-client-diff-block").first.inner_text()
        lines = [" ".join(line.split()) for line in diff.splitlines()]
        assert "project/pkg/core.py" in lines
        assert "- return a - b" in lines and "+ return a + b" in lines
        assert buttons.get_by_role("button", name="Veto").is_visible()
        assert core.read_text() == CORE  # staged and shown; nothing written yet
        screenshot(page, "jupyter-ai-edit-light", chat)
        try:
            set_theme(page, "JupyterLab Dark")
            screenshot(page, "jupyter-ai-edit-dark", chat)
        finally:
            set_theme(page, "JupyterLab Light")

        buttons.get_by_role("button", name="Approve").click()
        run = buttons.get_by_role("button", name="Run", exact=True)
        run.wait_for(timeout=STEP_MS)
        assert core.read_text() == FIXED  # committed when the chat allowed it
        assert buttons.get_by_role("button", name="Always run this exact command").is_visible()
        run.click()
        messages.get_by_text(SUMMARY).wait_for(timeout=STEP_MS)
        screenshot(page, "jupyter-ai-done-light", chat)

    # The session's record is in the chat's folder, the task as typed (without the mention).
    [log] = (jai_lab.root / "project" / ".grinta" / "sessions").glob("*.jsonl")
    starts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["task"] for e in starts if e["type"] == "session_start"] == [TASK]
    assert model.pending == 0
