"""``grinta acp`` attacked again: a secret in what a tool call is titled, a prompt sent with
the load it needs, a cancel after a prompt that waits for a cancelled turn, an empty or
another workspace. Real parts only: the agent subprocess, the ACP SDK's own client, and
tests/openai_server.py for the model (helpers from tests/test_acp.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from acp import RequestError, text_block

from tests.openai_server import text_reply, tool_call, tool_reply
from tests.test_acp import FIX, TASK, WAIT, Editor, grinta_acp, workspace
from tests.test_acp_attacks import ESCAPED, rpc_error

SECRET = "sk-test-key-for-acp"  # the API key grinta_acp gives the agent


def log_lines(root: Path, sid: str) -> list[dict[str, Any]]:
    path = root / ".grinta" / "sessions" / f"{sid}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_secret_the_model_names_is_redacted_in_titles_and_locations(openai_server, tmp_path):
    """Attack: the model puts the API key in a command, a path and a search query. The
    content and raw input of each tool call were redacted; its title ("Run: echo sk-...")
    and its locations were sent as they were, in the tool call and in the permission
    request alike."""
    root = workspace(tmp_path)
    openai_server.queue(
        tool_reply(tool_call("run", {"command": f"echo {SECRET}"})),
        tool_reply(tool_call("read", {"path": f"{SECRET}.txt"})),
        tool_reply(tool_call("search", {"query": SECRET})),
        tool_reply(tool_call("finish", {"summary": "Nothing to do."})),
    )
    editor = Editor("veto")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            return (await conn.prompt(session_id=sid, prompt=[text_block(TASK)])).stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    titles = [start.title for start in editor.starts()]
    assert titles[:3] == ["Run: echo [REDACTED]", "Read [REDACTED].txt", "Search '[REDACTED]'"]
    sent = [u.model_dump_json() for u in editor.updates]
    sent += [call.model_dump_json() for call, _ in editor.permissions]
    assert len(editor.permissions) == 1
    assert not [text for text in sent if SECRET in text]


def test_a_prompt_sent_with_its_load_waits_for_it_and_keeps_one_log(openai_server, tmp_path):
    """Attack: a careless client sends ``session/load`` and, without waiting for its answer,
    prompts the session (again and again while the answer is "not found"). A prompt that
    came while the log was being resumed started a second session on the same log: a new
    ``session_start`` with its numbering from 1 again, appended to the resumed log. The
    prompt must wait for the load and go on with the loaded session."""
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Looked."})))

    async def first() -> str:
        async with grinta_acp(Editor(), tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("look at pkg/core.py")])
            return sid

    sid = asyncio.run(first())
    openai_server.queue(
        text_reply("Going on."), tool_reply(tool_call("finish", {"summary": "Went on."}))
    )

    async def second() -> list[Any]:
        async with grinta_acp(Editor(), tmp_path, openai_server, stderr_must_not_hold=ESCAPED) as (
            conn,
            _,
        ):
            load = asyncio.ensure_future(
                conn._conn.send_request(
                    "session/load", {"cwd": str(root), "sessionId": sid, "mcpServers": []}
                )
            )
            answers: list[Any] = []
            for _ in range(200):
                try:
                    done = await asyncio.wait_for(
                        conn.prompt(session_id=sid, prompt=[text_block("go on")]), WAIT
                    )
                except RequestError as exc:
                    answers.append(exc.code)
                    await asyncio.sleep(0.002)
                    continue
                answers.append(done.stop_reason)
                break
            await asyncio.wait_for(load, WAIT)
            return answers

    assert asyncio.run(second()) == ["end_turn"]
    events = log_lines(root, sid)
    assert [e["type"] for e in events].count("session_start") == 1
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    assert "go on" in json.dumps(events)


class SlowBuffers(Editor):
    """An editor that is slow to say what it holds of a file (fs/read_text_file), until
    ``release`` is set: a commit in flight waits for it."""

    def __init__(self) -> None:
        super().__init__("approve")
        self.reading = asyncio.Event()
        self.release = asyncio.Event()

    async def read_text_file(self, path, session_id, limit=None, line=None, **kwargs):  # type: ignore[no-untyped-def]
        self.reading.set()
        await self.release.wait()
        return await super().read_text_file(path, session_id, limit, line, **kwargs)


def test_a_cancel_after_a_prompt_waiting_for_a_cancelled_turn_cancels_that_prompt(
    openai_server, tmp_path
):
    """Attack: the user cancels while an approved write commits (the editor is slow to
    answer what it holds of the file), types a new message, and cancels again before the
    first turn has ended. The second cancel came after the new prompt: it must answer
    ``cancelled`` and run nothing. It used to land on the turn already ending, and the new
    message then ran as the next task, asking for and running a command."""
    root = workspace(tmp_path)
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX)),
        tool_reply(tool_call("run", {"command": "touch second.txt"})),
        tool_reply(tool_call("finish", {"summary": "Did the other thing."})),
    )
    editor = SlowBuffers()

    async def scenario() -> list[str]:
        async with grinta_acp(editor, tmp_path, openai_server, files=True) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.wait_for(editor.reading.wait(), WAIT)
            # Sent back to back: the first turn is still ending when the new prompt and the
            # second cancel arrive (a cancel now ends the editor's question at once, so no
            # wait keeps the first turn open for long).
            cancel = asyncio.ensure_future(conn.cancel(session_id=sid))
            second = asyncio.ensure_future(
                conn.prompt(session_id=sid, prompt=[text_block("do the other thing")])
            )
            await cancel
            await asyncio.sleep(0)  # the prompt is written to the agent before the cancel
            await conn.cancel(session_id=sid)
            editor.release.set()
            return [(await asyncio.wait_for(turn, WAIT)).stop_reason for turn in (first, second)]

    assert asyncio.run(scenario()) == ["cancelled", "cancelled"]
    assert len(editor.permissions) == 1 and len(openai_server.requests) == 1
    assert not (root / "second.txt").exists()


def test_an_empty_workspace_or_another_one_for_a_live_session_is_refused(openai_server, tmp_path):
    """Attack: ``session/new`` with an empty ``cwd`` (an editor with no folder open) was a
    session in whatever folder the editor started grinta in (its home, "/"); a
    ``session/load`` of a session this agent runs, naming another folder, was answered as
    loaded while the session went on working in its own. Both are invalid params."""
    root = workspace(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Looked."})))

    async def scenario() -> list[int]:
        async with grinta_acp(Editor(), tmp_path, openai_server, stderr_must_not_hold=ESCAPED) as (
            conn,
            _,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("look at pkg/core.py")])
            return [
                await rpc_error(conn, "session/new", {"cwd": "", "mcpServers": []}),
                await rpc_error(
                    conn,
                    "session/load",
                    {"cwd": str(other), "sessionId": sid, "mcpServers": []},
                ),
                await rpc_error(
                    conn, "session/load", {"cwd": str(root), "sessionId": sid, "mcpServers": []}
                ),
            ]

    assert asyncio.run(scenario()) == [-32602, -32602, 0]
