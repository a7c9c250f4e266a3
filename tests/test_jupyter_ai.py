"""The Grinta persona in a real Jupyter AI, without a browser.

Jupyter AI's own persona manager finds the persona through its entry point and
builds it on a real chat document (``jupyterlab_chat.ychat.YChat``); a chat
message goes to it as Jupyter AI's router hands it one (``on_message``); the
persona's ACP client (jupyter-ai-acp-client's, unchanged) starts the agent
command it names, a real ``grinta acp``, whose model is real litellm talking to
tests/openai_server.py. A permission is answered the way the chat's buttons
answer it (``resolve_permission``, what their REST handler calls). The browser
test (tests/browser/test_jupyter_ai.py) does the same through the chat's UI.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_ai_acp_client", reason="Jupyter AI is not installed")

from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona  # noqa: E402
from jupyter_ai_persona_manager import PersonaManager  # noqa: E402
from jupyterlab_chat.models import NewMessage  # noqa: E402
from jupyterlab_chat.ychat import YChat  # noqa: E402

from grinta_jupyter.jupyter_ai import AGENT_COMMAND, AVATAR  # noqa: E402
from grinta_jupyter.jupyter_ai.persona import GrintaPersona  # noqa: E402
from tests.openai_server import OpenAIServer, tool_call, tool_reply  # noqa: E402

GRINTA_ID = "jupyter-ai-personas::grinta_jupyter::GrintaPersona"
CORE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WRONG = {"path": "pkg/core.py", "old_string": "a - b", "new_string": "b - a"}
FIX = {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return a + b"}
TEST = "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
TESTS = "python -m pytest -q tests"
TASK = "fix the failing test in pkg/core.py"
WAIT = 60.0  # seconds before the test gives up on something that should happen


def test_jupyter_ai_finds_the_grinta_persona_through_its_entry_point() -> None:
    found = [ep for ep in entry_points(group="jupyter_ai.personas") if ep.name == "grinta"]
    assert len(found) == 1, "reinstall the package (pip install -e .) to register it"
    persona = found[0].load()
    assert persona is GrintaPersona and issubclass(persona, BaseAcpPersona)
    # The agent is this interpreter's grinta, not whatever `grinta` is on the server's PATH.
    assert (sys.executable, "-m", "grinta_jupyter.acp") == AGENT_COMMAND
    assert AVATAR.is_file() and AVATAR.read_text().lstrip().startswith("<svg")


def test_a_chat_message_runs_a_session_whose_writes_wait_for_the_chat(
    openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Jupyter server's environment, which the agent inherits: the model is the local server.
    for name in [name for name in os.environ if name.startswith("GRINTA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GRINTA_MODEL", "openai/test")
    monkeypatch.setenv("GRINTA_API_BASE", openai_server.url)
    monkeypatch.setenv("GRINTA_API_KEY", "sk-test-key-for-jupyter-ai")
    root = tmp_path / "server-root"
    project = root / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "core.py").write_text(CORE)
    (project / "tests").mkdir()
    (project / "tests" / "test_core.py").write_text(TEST)
    openai_server.queue(
        tool_reply(tool_call("replace_string", WRONG, id="call_wrong")),
        tool_reply(tool_call("replace_string", FIX, id="call_fix")),
        tool_reply(tool_call("run", {"command": TESTS})),
        tool_reply(tool_call("finish", {"summary": "add adds now; 1 passed."})),
        tool_reply(tool_call("finish", {"summary": "Nothing else to change."})),
    )
    core = project / "pkg" / "core.py"

    async def chat() -> None:
        ychat = YChat()
        ychat.initial_path = "project/fix.chat"  # relative to the server's root, as in Lab
        manager = PersonaManager(
            chat=ychat, root_dir=str(root), event_loop=asyncio.get_running_loop()
        )
        persona = manager.personas[GRINTA_ID]
        assert isinstance(persona, GrintaPersona)
        assert persona.name == "Grinta" and persona.as_user().mention_name == "Grinta"
        assert persona.defaults.avatar_path == str(AVATAR)
        try:
            turn = asyncio.ensure_future(send(ychat, persona, f"@Grinta {TASK}"))

            wrong = await until(lambda: pending_tool_call(ychat), "the first write to ask")
            assert wrong["kind"] == "edit" and wrong["title"] == "Edit pkg/core.py"
            assert [o["option_id"] for o in wrong["permission_options"]] == ["approve", "veto"]
            assert wrong["diffs"] == [
                {"path": str(core), "old_text": CORE, "new_text": CORE.replace("a - b", "b - a")}
            ]
            assert core.read_text() == CORE  # nothing is written before the chat says so
            process = await persona.get_agent_subprocess()
            assert command_line(process.pid) == list(AGENT_COMMAND)
            await answer(persona, wrong, "veto")

            fix = await until(
                lambda: pending_tool_call(ychat, not_id=wrong["tool_call_id"]), "the fix to ask"
            )
            assert core.read_text() == CORE  # the vetoed write left every byte
            await answer(persona, fix, "approve")
            run = await until(
                lambda: pending_tool_call(ychat, not_id=fix["tool_call_id"]), "the tests to ask"
            )
            assert run["kind"] == "execute" and run["title"] == f"Run: {TESTS}"
            assert core.read_text() == FIXED
            await answer(persona, run, "approve")
            await asyncio.wait_for(turn, WAIT)
            calls = {c["tool_call_id"]: c for c in tool_calls(ychat)}
            assert calls[wrong["tool_call_id"]]["status"] == "failed"
            assert calls[fix["tool_call_id"]]["status"] == "completed"
            assert calls[run["tool_call_id"]]["status"] == "completed"
            assert "add adds now; 1 passed." in replies(ychat, persona.id)
        finally:
            await manager.shutdown_personas()  # as when the Jupyter server stops
        assert process.returncode is not None

        # The chat reopened by a new server: its next message goes on with the same session.
        manager = PersonaManager(
            chat=ychat, root_dir=str(root), event_loop=asyncio.get_running_loop()
        )
        persona = manager.personas[GRINTA_ID]
        try:
            await asyncio.wait_for(send(ychat, persona, "@Grinta anything else?"), WAIT)
            assert "Nothing else to change." in replies(ychat, persona.id)
        finally:
            await manager.shutdown_personas()

    asyncio.run(chat())

    # One grinta session, in the chat's folder, with the task as the person wrote it,
    # resumed by the second server, whose message was the next task.
    [log] = (project / ".grinta" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["task"] for e in events if e["type"] == "session_start"] == [TASK]
    assert [e["type"] for e in events].count("resume") == 1
    assert [e["task"] for e in events if e["type"] == "task_start"] == ["anything else?"]
    prompts = [m for r in openai_server.requests for m in r.body["messages"] if m["role"] == "user"]
    assert not any("@Grinta" in str(m["content"]) or "MCP" in str(m["content"]) for m in prompts)
    # The model read the veto as the result of the first write.
    second = openai_server.requests[1].body["messages"]
    assert "vetoed" in next(m["content"] for m in second if m.get("tool_call_id") == "call_wrong")


# -- the chat's side ----------------------------------------------------------------------------


async def send(ychat: YChat, persona: GrintaPersona, body: str) -> None:
    """Post ``body`` as a person and hand it to the persona, as Jupyter AI's router does."""
    message = ychat.get_message(ychat.add_message(NewMessage(body=body, sender="someone")))
    assert message is not None
    await persona.on_message(message)


def tool_calls(ychat: YChat) -> list[dict[str, Any]]:
    """Every tool call the chat shows (the ACP client keeps them in its messages' metadata)."""
    calls: list[dict[str, Any]] = []
    for message in ychat.get_messages():
        calls.extend((getattr(message, "metadata", None) or {}).get("tool_calls", []))
    return calls


def pending_tool_call(ychat: YChat, not_id: str | None = None) -> dict[str, Any] | None:
    for call in tool_calls(ychat):
        if call.get("permission_status") == "pending" and call["tool_call_id"] != not_id:
            return call
    return None


def replies(ychat: YChat, sender: str) -> str:
    return "\n".join(m.body for m in ychat.get_messages() if m.sender == sender)


async def answer(persona: GrintaPersona, call: dict[str, Any], option: str) -> None:
    """Click a permission button: what the chat's REST handler does with the click."""
    client = await persona.get_client()
    assert client.resolve_permission(call["session_id"], call["tool_call_id"], option)


async def until(found: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def command_line(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
