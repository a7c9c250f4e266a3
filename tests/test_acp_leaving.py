"""The ACP client leaving at awkward moments: the agent exits with nothing left open (its
stderr is checked by ``grinta_acp`` for ``ResourceWarning`` and ``Exception ignored``) and
the session's log is free for the next agent to load."""

from __future__ import annotations

import asyncio
import contextlib

from acp import text_block

from tests.openai_server import tool_call, tool_reply
from tests.test_acp import FIX, FIXED, Editor, died_while_a_write_waited, grinta_acp, workspace


def test_a_client_that_leaves_while_its_load_is_read_leaves_the_log_free(openai_server, tmp_path):
    """Attack: ``session/load`` sent, then the connection closed before the answer. The load
    went on after the agent had closed its sessions: the log it opened was left to the
    garbage collector at exit."""
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("replace_string", FIX), text="One edit."))
    sid, _ = died_while_a_write_waited(tmp_path, openai_server, root)

    async def load_and_leave() -> None:
        async with grinta_acp(Editor("approve"), tmp_path, openai_server) as (conn, _):
            load = asyncio.ensure_future(conn.load_session(cwd=str(root), session_id=sid))
            await asyncio.sleep(0)  # sent; the context's end closes stdin at once
        with contextlib.suppress(ConnectionError):  # no answer: the connection closed
            await load

    for _ in range(5):  # the load is not always still running when the agent closes
        asyncio.run(load_and_leave())
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Fixed."})))
    again = Editor("approve")

    async def load_and_go_on() -> str:
        async with grinta_acp(again, tmp_path, openai_server) as (conn, _):
            await conn.load_session(cwd=str(root), session_id=sid)
            return (await conn.prompt(session_id=sid, prompt=[text_block("go on")])).stop_reason

    assert asyncio.run(load_and_go_on()) == "end_turn"
    assert (root / "pkg" / "core.py").read_text() == FIXED
