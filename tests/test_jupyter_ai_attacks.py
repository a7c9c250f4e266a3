"""The Grinta persona in Jupyter AI attacked as a careless user and a hostile chat would.

Real parts only, as in tests/test_jupyter_ai.py (whose helpers these reuse): Jupyter AI's
own persona manager on a real chat document, jupyter-ai-acp-client's ACP client unchanged,
a real ``grinta acp`` subprocess, real litellm talking to tests/openai_server.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_ai_acp_client", reason="Jupyter AI is not installed")

from jupyter_ai_persona_manager import PersonaManager  # noqa: E402
from jupyterlab_chat.models import NewMessage  # noqa: E402
from jupyterlab_chat.ychat import YChat  # noqa: E402

from grinta_jupyter.jupyter_ai.persona import GrintaPersona  # noqa: E402
from tests.openai_server import (  # noqa: E402
    OpenAIServer,
    error_reply,
    stall_reply,
    tool_call,
    tool_reply,
)
from tests.test_jupyter_ai import (  # noqa: E402
    CORE,
    FIX,
    GRINTA_ID,
    WAIT,
    answer,
    pending_tool_call,
    replies,
    send,
    tool_calls,
    until,
)


@pytest.fixture
def project(openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project in the server's root (``tmp_path/root``); the model is the local server."""
    for name in [name for name in os.environ if name.startswith("GRINTA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GRINTA_MODEL", "openai/test")
    monkeypatch.setenv("GRINTA_API_BASE", openai_server.url)
    monkeypatch.setenv("GRINTA_API_KEY", "sk-test-key-for-jupyter-ai")
    project = tmp_path / "root" / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "core.py").write_text(CORE)
    return project


@contextlib.asynccontextmanager
async def chat(
    project: Path, name: str = "fix.chat", ychat: YChat | None = None
) -> AsyncIterator[tuple[YChat, GrintaPersona, PersonaManager]]:
    """A chat in ``project`` with Jupyter AI's persona manager; shut down as a server stops."""
    root = project.parent
    if ychat is None:
        ychat = YChat()
        ychat.initial_path = f"{project.relative_to(root)}/{name}"
    manager = PersonaManager(chat=ychat, root_dir=str(root), event_loop=asyncio.get_running_loop())
    persona = manager.personas[GRINTA_ID]
    assert isinstance(persona, GrintaPersona)
    try:
        yield ychat, persona, manager
    finally:
        await manager.shutdown_personas()


def events(project: Path) -> list[dict[str, Any]]:
    """The events of the one session log in ``project``."""
    [log] = (project / ".grinta" / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def user_texts(server: OpenAIServer) -> list[str]:
    return [
        str(m["content"])
        for r in server.requests
        for m in r.body["messages"]
        if m["role"] == "user"
    ]


def test_a_message_sent_while_a_write_waits_reaches_the_model(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: the person types to @Grinta while its write waits for Approve. The docs
    promise the model reads it at its next turn: it must not wait for the task to end (and
    become the next task), nor cancel the waiting write, nor start a second agent."""
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX, id="call_fix")),
        tool_reply(tool_call("finish", {"summary": "Left add alone."})),
    )
    core = project / "pkg" / "core.py"

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            fix = await until(lambda: pending_tool_call(ychat), "the fix to ask")
            said = asyncio.ensure_future(send(ychat, persona, "@Grinta no, leave add alone"))
            await asyncio.sleep(1.0)  # time for the message to reach the agent
            assert pending_tool_call(ychat) == fix  # still waiting for the button
            await answer(persona, fix, "veto")
            await asyncio.wait_for(asyncio.gather(turn, said), WAIT)
            assert "Left add alone." in replies(ychat, persona.id)

    asyncio.run(scenario())
    assert core.read_text() == CORE
    # The model read the message at the turn after the veto, within the same task.
    assert len(openai_server.requests) == 2
    assert "no, leave add alone" in str(openai_server.requests[1].body["messages"])
    assert [e["type"] for e in events(project)].count("task_start") == 0


def test_two_messages_at_once_make_one_session_and_one_agent(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: two messages to @Grinta sent at once, before any agent runs. One agent
    process and one grinta session on the folder: the first is the task, the second is
    said to it or is its next task, never a second session."""
    openai_server.queue(
        tool_reply(tool_call("finish", {"summary": "One."})),
        tool_reply(tool_call("finish", {"summary": "Two."})),
    )

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            both = asyncio.gather(
                send(ychat, persona, "@Grinta first thing"),
                send(ychat, persona, "@Grinta second thing"),
            )
            await asyncio.wait_for(both, WAIT)
            process = await persona.get_agent_subprocess()
            agents = [p for p in Path("/proc").glob("[0-9]*") if _is_agent_of(p, os.getpid())]
            assert [int(p.name) for p in agents] == [process.pid]
            assert "One." in replies(ychat, persona.id)

    asyncio.run(scenario())
    found = events(project)
    assert [e["task"] for e in found if e["type"] == "session_start"] == ["first thing"]
    assert "second thing" in str(openai_server.requests[-1].body["messages"])


def _is_agent_of(proc: Path, parent: int) -> bool:
    try:
        stat = (proc / "stat").read_text()
        cmdline = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == parent and b"grinta_jupyter.acp" in cmdline


def test_the_stop_button_while_a_write_waits_writes_nothing_and_the_chat_goes_on(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: stop (Jupyter AI's cancel) while a write waits; then a late click on the
    write's Approve; then a new message. Nothing is written, the late click is refused, and
    the new message is the next task of the same session."""
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX, id="call_fix")),
        tool_reply(tool_call("finish", {"summary": "Nothing to do."})),
    )
    core = project / "pkg" / "core.py"

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            fix = await until(lambda: pending_tool_call(ychat), "the fix to ask")
            assert persona.processing
            await persona.cancel_response()
            await asyncio.wait_for(turn, WAIT)
            client = await persona.get_client()
            assert not client.resolve_permission(fix["session_id"], fix["tool_call_id"], "approve")
            assert core.read_text() == CORE
            [shown] = [c for c in tool_calls(ychat) if c["tool_call_id"] == fix["tool_call_id"]]
            assert shown["status"] == "failed" and shown["permission_status"] == "resolved"
            await asyncio.wait_for(send(ychat, persona, "@Grinta anything else?"), WAIT)
            assert "Nothing to do." in replies(ychat, persona.id)

    asyncio.run(scenario())
    assert core.read_text() == CORE
    found = events(project)
    assert [e["task"] for e in found if e["type"] == "task_start"] == ["anything else?"]


def test_permission_answers_twice_foreign_or_not_offered_are_no_approval(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: a click for another session, for a tool call that does not exist, an option
    grinta never offered on a write (``approve-always``), then a second click after the
    first. Only the first real answer counts, and an option not offered is a veto."""
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX, id="call_fix")),
        tool_reply(tool_call("finish", {"summary": "Vetoed, so done."})),
    )
    core = project / "pkg" / "core.py"

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            fix = await until(lambda: pending_tool_call(ychat), "the fix to ask")
            client = await persona.get_client()
            sid, tid = fix["session_id"], fix["tool_call_id"]
            assert not client.resolve_permission("another-session", tid, "approve")
            assert not client.resolve_permission(sid, "step9-call_nope", "approve")
            assert client.resolve_permission(sid, tid, "approve-always")
            assert not client.resolve_permission(sid, tid, "approve")
            await asyncio.wait_for(turn, WAIT)

    asyncio.run(scenario())
    assert core.read_text() == CORE
    second = openai_server.requests[1].body["messages"]
    assert "vetoed" in next(m["content"] for m in second if m.get("tool_call_id") == "call_fix")


@pytest.mark.parametrize(
    ("body", "said"),
    [("@Grinta", "the message was empty"), ("@Grinta:  \n ", "the message was empty")],
)
def test_a_message_that_is_only_a_mention_calls_no_model(
    openai_server: OpenAIServer, project: Path, body: str, said: str
) -> None:
    """Attack: a message that is only ``@Grinta`` (with a colon, blank lines). The chat
    says so, no model is called, no session starts, and the next message is the task."""
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Done."})))

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            await asyncio.wait_for(send(ychat, persona, body), WAIT)
            assert said in replies(ychat, persona.id)
            assert openai_server.requests == []
            await asyncio.wait_for(send(ychat, persona, "@Grinta look at add"), WAIT)
            assert "Done." in replies(ychat, persona.id)

    asyncio.run(scenario())
    assert [e["task"] for e in events(project) if e["type"] == "session_start"] == ["look at add"]


def test_a_huge_task_is_refused_in_one_line_and_the_chat_goes_on(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: a task pasted at 30,000 characters. One clear line in the chat (put it in a
    file), no model call, no traceback; the next message works."""
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Done."})))

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            await asyncio.wait_for(send(ychat, persona, "@Grinta " + "x" * 30_000), WAIT)
            shown = replies(ychat, persona.id)
            assert "file" in shown and "Traceback" not in shown
            assert openai_server.requests == []
            await asyncio.wait_for(send(ychat, persona, "@Grinta look at add"), WAIT)
            assert "Done." in replies(ychat, persona.id)

    asyncio.run(scenario())


def test_a_401_is_one_clear_message_and_the_persona_stays_usable(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: the model's server refuses the key (401). The chat shows one message that
    says to set the key, no traceback; the next message (the key fixed) works."""
    openai_server.queue(
        # The agent's first call goes before litellm is loaded; litellm sends it again.
        error_reply(401, "Incorrect API key provided"),
        error_reply(401, "Incorrect API key provided"),
        tool_reply(tool_call("finish", {"summary": "Done."})),
    )

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            await asyncio.wait_for(send(ychat, persona, "@Grinta look at add"), WAIT)
            shown = [
                m.body for m in ychat.get_messages() if m.sender == persona.id and m.body.strip()
            ]
            assert len(shown) == 1 and "GRINTA_API_KEY" in shown[0]
            assert "Traceback" not in shown[0] and "error occurred" not in shown[0]
            await asyncio.wait_for(send(ychat, persona, "@Grinta try again"), WAIT)
            assert "Done." in replies(ychat, persona.id)

    asyncio.run(scenario())


def test_the_server_stopping_while_a_write_waits_leaves_no_agent_and_no_write(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: the persona manager shuts the persona down (the server stops, the chat is
    closed) while a write waits for a click nobody will give. The message's task ends, the
    agent process is gone, nothing is written, the chat shows no error; the reopened chat
    loads the session and goes on: it asks the same write again when the agent was ended
    before it recorded the stop, else it takes the message as the next task (which of the
    two depends on whether the client's stop reaches the agent before its end: both seen)."""
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX, id="call_fix")),
        tool_reply(tool_call("finish", {"summary": "Left as it was."})),
    )
    core = project / "pkg" / "core.py"

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, manager):
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            fix = await until(lambda: pending_tool_call(ychat), "the fix to ask")
            process = await persona.get_agent_subprocess()
            await asyncio.wait_for(manager.shutdown_personas(), WAIT)
            await asyncio.wait_for(turn, WAIT)  # the message's task does not hang
            assert process.returncode is not None
            # A stop is no error: the chat (saved with its messages) shows no traceback.
            assert "error occurred" not in replies(ychat, persona.id)
        assert core.read_text() == CORE
        assert not [p for p in Path("/proc").glob("[0-9]*") if _is_agent_of(p, os.getpid())]
        old = {m.id for m in ychat.get_messages()}
        async with chat(project, ychat=ychat) as (_, persona, _):
            again = asyncio.ensure_future(send(ychat, persona, "@Grinta go on"))
            await until(
                lambda: again.done() or pending_in_new_messages(ychat, old),
                "the fix asked again, or the message taken as the next task",
            )
            asked = pending_in_new_messages(ychat, old)
            if asked is not None:  # the stop was not recorded: the write waits again
                assert asked["diffs"] == fix["diffs"]
                await answer(persona, asked, "veto")
            await asyncio.wait_for(again, WAIT)
            assert "Left as it was." in replies(ychat, persona.id)

    asyncio.run(scenario())
    assert core.read_text() == CORE
    assert [e["type"] for e in events(project)].count("resume") == 1


def pending_in_new_messages(ychat: YChat, old: set[str]) -> dict[str, Any] | None:
    """A pending tool call in a message whose id is not in ``old``."""
    for message in ychat.get_messages():
        if message.id not in old:
            for call in (getattr(message, "metadata", None) or {}).get("tool_calls", []):
                if call.get("permission_status") == "pending":
                    return call
    return None


def test_no_approve_button_stays_pending_after_the_server_stopped(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: the server stops while a write waits, and the chat is saved. Its Approve and
    Veto buttons must not stay live in the saved chat: a click on them after the restart
    goes nowhere (the reopened chat asks the write again, in a new message)."""
    openai_server.queue(tool_reply(tool_call("replace_string", FIX, id="call_fix")))

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, manager):
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            await until(lambda: pending_tool_call(ychat), "the fix to ask")
            await asyncio.wait_for(manager.shutdown_personas(), WAIT)
            await asyncio.wait_for(turn, WAIT)
            assert pending_tool_call(ychat) is None

    asyncio.run(scenario())


def test_closing_one_chat_stops_its_session_while_another_chat_keeps_the_agent(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: two chats share the one agent; the first, in *Run without asking*, is closed
    (its personas shut down) while its model call runs. The agent stays for the other chat,
    but the closed chat's session must stop: nobody watches it any more."""
    openai_server.queue(stall_reply(20.0))

    async def scenario() -> None:
        async with chat(project, "other.chat") as (_, other, _):
            await other._ensure_prepared()
            async with chat(project) as (ychat, persona, manager):
                await persona._ensure_prepared()
                await persona.set_acp_mode("auto")
                turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
                await until(lambda: openai_server.requests, "the model call")
                await asyncio.wait_for(manager.shutdown_personas(), WAIT)
                await asyncio.wait_for(turn, WAIT)
                for _ in range(100):  # the agent cuts the model call at once
                    if openai_server.disconnects:
                        break
                    await asyncio.sleep(0.05)
                assert openai_server.disconnects, "the closed chat's session goes on"
            process = await other.get_agent_subprocess()
            assert process.returncode is None  # still serving the other chat

    asyncio.run(scenario())


def test_a_chat_moved_to_another_folder_starts_over_with_only_the_message(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: the chat file is moved to another folder between two server runs, so its
    session's log is not in the new workspace. The next message must still reach grinta as
    the person wrote it (no ``@Grinta``, no transcript dump over the size limit)."""
    openai_server.queue(
        tool_reply(tool_call("finish", {"summary": "First done. " + "y" * 300})),
        tool_reply(tool_call("finish", {"summary": "Second done."})),
    )
    (project / "sub").mkdir()

    async def scenario() -> None:
        ychat = YChat()
        ychat.initial_path = "project/fix.chat"
        async with chat(project, ychat=ychat) as (_, persona, _):
            await asyncio.wait_for(send(ychat, persona, "@Grinta look at add"), WAIT)
        # A colleague pastes a long log for another persona.
        ychat.add_message(NewMessage(body="log:\n" + "z" * 21_000, sender="colleague"))
        ychat.initial_path = "project/sub/fix.chat"
        async with chat(project, ychat=ychat) as (_, persona, _):
            await asyncio.wait_for(send(ychat, persona, "@Grinta and now sub"), WAIT)
            assert "Second done." in replies(ychat, persona.id)

    asyncio.run(scenario())
    assert user_texts(openai_server) == ["look at add", "and now sub"]
    [log] = (project / "sub" / ".grinta" / "sessions").glob("*.jsonl")
    start = json.loads(log.read_text().splitlines()[0])
    assert start["task"] == "and now sub"


def test_a_model_server_that_is_down_is_one_clear_message(
    openai_server: OpenAIServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: GRINTA_API_BASE names a server that is not running. After grinta's retries,
    the chat shows one message naming the server, without a traceback, and the persona is
    not left processing."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("GRINTA_API_BASE", f"http://127.0.0.1:{port}/v1")

    async def scenario() -> None:
        async with chat(project) as (ychat, persona, _):
            await asyncio.wait_for(send(ychat, persona, "@Grinta look at add"), WAIT)
            shown = [
                m.body for m in ychat.get_messages() if m.sender == persona.id and m.body.strip()
            ]
            assert len(shown) == 1 and f"127.0.0.1:{port}" in shown[0]
            assert "Traceback" not in shown[0] and "error occurred" not in shown[0]
            assert not persona.processing

    asyncio.run(scenario())
