"""The Grinta persona attacked where the chat meets the agent process: a crash of the agent.

Real parts only, as in tests/test_jupyter_ai_attacks.py (whose helpers these reuse): Jupyter
AI's own persona manager on a real chat document, jupyter-ai-acp-client's ACP client
unchanged, a real ``grinta acp`` subprocess, real litellm talking to tests/openai_server.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("jupyter_ai_acp_client", reason="Jupyter AI is not installed")

from tests.openai_server import OpenAIServer, tool_call, tool_reply  # noqa: E402
from tests.test_jupyter_ai import (  # noqa: E402
    CORE,
    FIX,
    WAIT,
    answer,
    pending_tool_call,
    replies,
    send,
    until,
)
from tests.test_jupyter_ai_attacks import (  # noqa: E402
    chat,
    pending_in_new_messages,
    project,
)

__all__ = ["project"]  # the fixture, imported for pytest


def test_an_agent_crash_is_one_clear_line_and_the_next_message_goes_on(
    openai_server: OpenAIServer, project: Path
) -> None:
    """Attack: the agent process dies (SIGKILL, as the OOM killer does) while a write waits
    for Approve, with a second chat on the same agent. The chat showed a traceback
    ("ConnectionError: Connection closed") and kept live Approve/Veto buttons nobody
    listened to; and, the dead process being kept for the server's life, every later message
    in every chat showed the same traceback until the server restarted. Now: one line that
    says what happened, no live buttons, and the next message starts a new agent that loads
    each chat's session (the waiting write asked again)."""
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX, id="call_fix")),
        tool_reply(tool_call("finish", {"summary": "Left as it was."})),
        tool_reply(tool_call("finish", {"summary": "Other chat done."})),
    )
    core = project / "pkg" / "core.py"

    async def scenario() -> None:
        async with chat(project, "other.chat") as (other_chat, other, _):
            await other._ensure_prepared()
            async with chat(project) as (ychat, persona, _):
                turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
                await until(lambda: pending_tool_call(ychat), "the fix to ask")
                dead = await persona.get_agent_subprocess()
                os.kill(dead.pid, signal.SIGKILL)
                await asyncio.wait_for(turn, WAIT)
                shown = [m.body for m in ychat.get_messages() if m.sender == persona.id]
                said = shown[-1]
                assert "agent process stopped" in said and "signal 9" in said, said
                assert "Traceback" not in "".join(shown) and "error occurred" not in said
                assert pending_tool_call(ychat) is None  # no button left live
                assert not persona.processing

                old = {m.id for m in ychat.get_messages()}
                again = asyncio.ensure_future(send(ychat, persona, "@Grinta go on"))
                asked = await until(
                    lambda: pending_in_new_messages(ychat, old), "the fix asked again"
                )
                assert (await persona.get_agent_subprocess()).pid != dead.pid
                await answer(persona, asked, "veto")
                await asyncio.wait_for(again, WAIT)
                assert "Left as it was." in replies(ychat, persona.id)

            # The other chat's session was made on the dead agent: it is loaded in the new one.
            await asyncio.wait_for(send(other_chat, other, "@Grinta anything?"), WAIT)
            assert "Other chat done." in replies(other_chat, other.id)
            assert "Traceback" not in replies(other_chat, other.id)

    asyncio.run(scenario())
    assert core.read_text() == CORE
    logs = sorted((project / ".grinta" / "sessions").glob("*.jsonl"))
    starts = [(log, _first_task(log)) for log in logs]
    [(fixed, _)] = [(log, task) for log, task in starts if task == "fix add"]
    assert [line for line in fixed.read_text().splitlines() if '"resume"' in line]


def _first_task(log: Path) -> str:
    return str(json.loads(log.read_text().splitlines()[0]).get("task"))
