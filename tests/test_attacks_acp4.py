"""``grinta acp`` attacked a fourth time: a session loaded into a workspace that is not its
own, a file swapped for a FIFO while its write waits for the editor. Real parts only: the agent subprocess, the ACP SDK's own client, and
tests/openai_server.py for the model (helpers from tests/test_acp.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat

from acp import text_block

from tests.openai_server import tool_call, tool_reply
from tests.test_acp import CORE, FIX, TASK, WAIT, Editor, grinta_acp, tool_results, until, workspace
from tests.test_acp_attacks import ESCAPED, rpc_error


def test_a_session_is_not_loaded_into_another_workspace_through_a_shared_log_folder(
    openai_server, tmp_path
):
    """Attack: with ``GRINTA_LOG_DIR`` (one log folder for every workspace), a client loads
    a session of project A naming project B as ``cwd``. It was loaded: A's conversation
    replayed as B's, and the write that waited in A staged again and committed in B, a
    project that session never read."""
    root = workspace(tmp_path)
    other = tmp_path / "other"
    shutil.copytree(root, other)
    logs = tmp_path / "logs"
    logs.mkdir()
    openai_server.queue(tool_reply(tool_call("replace_string", FIX), text="One edit."))
    first = Editor("approve")
    first.hold = asyncio.Event()  # never set: the agent dies while the write waits

    async def die_waiting() -> str:
        async with grinta_acp(first, tmp_path, openai_server, GRINTA_LOG_DIR=str(logs)) as (
            conn,
            process,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.wait_for(first.asked.wait(), WAIT)
            process.kill()
            await process.wait()
            with contextlib.suppress(Exception):
                await turn
            return sid

    sid = asyncio.run(die_waiting())
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Done."})))
    second = Editor("approve")

    async def load_elsewhere() -> list[int]:
        async with grinta_acp(
            second, tmp_path, openai_server, stderr_must_not_hold=ESCAPED, GRINTA_LOG_DIR=str(logs)
        ) as (conn, _):
            params = {"sessionId": sid, "mcpServers": []}
            codes = [await rpc_error(conn, "session/load", {**params, "cwd": str(other)})]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    conn.prompt(session_id=sid, prompt=[text_block("go on")]), WAIT
                )
            codes.append(await rpc_error(conn, "session/load", {**params, "cwd": str(root)}))
            return codes

    assert asyncio.run(load_elsewhere()) == [-32602, 0]
    assert (other / "pkg" / "core.py").read_text() == CORE


def test_a_file_swapped_for_a_fifo_while_its_write_waits_does_not_hang_the_commit(
    openai_server, tmp_path
):
    """Attack: while a write waits for Approve, the file is replaced by a FIFO (a tool of
    the user's, a hostile process in the workspace). With an editor that reads files, the
    commit first asks whether the editor holds unsaved text of it, and read the disk with a
    plain ``open``: on a FIFO that blocks until something writes to it, in the commit's
    thread, which Stop waits for. The turn never ended, and the agent never exited."""
    root = workspace(tmp_path)
    target = root / "pkg" / "core.py"
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX)),
        tool_reply(tool_call("finish", {"summary": "Could not edit."})),
    )
    editor = Editor("approve")
    editor.hold = asyncio.Event()
    editor.hold_answer = "approve"

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server, files=True) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.wait_for(editor.asked.wait(), WAIT)
            editor.buffers[str(target)] = CORE  # its answer, never a read of the FIFO itself
            target.unlink()
            os.mkfifo(target)
            editor.hold.set()
            try:
                done = await asyncio.wait_for(asyncio.shield(turn), 20)
            finally:  # old code: a writer lets the blocked reader go, so the agent can end
                with contextlib.suppress(OSError):
                    os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))
                await until(lambda: turn.done(), "the turn's end")
            return done.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert stat.S_ISFIFO(target.lstat().st_mode)
    [refusal] = tool_results(openai_server.requests[1])  # the model reads why, as a failure
    assert "regular file" in refusal or "changed" in refusal, refusal
