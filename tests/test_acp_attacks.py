"""``grinta acp`` attacked as a hostile or careless client would: garbage on the wire,
answers nobody asked for, cancels at every moment, a client that leaves mid-turn, many
sessions at once. Real parts only: the agent subprocess, the ACP SDK's own client, and
tests/openai_server.py for the model (helpers from tests/test_acp.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    FileEditToolCallContent,
)

from tests.conftest import snapshot
from tests.openai_server import stall_reply, text_reply, tool_call, tool_reply
from tests.test_acp import (
    CORE,
    FIX,
    FIXED,
    TASK,
    WAIT,
    Editor,
    died_while_a_write_waited,
    grinta_acp,
    until,
    user_texts,
    workspace,
)

# What the SDK logs when something escaped the agent's own handling (an error answered as
# "internal error", or the connection's read loop dying); a RequestError the agent raises on
# purpose is logged too, with a traceback, but as a "Background task failed": for the tests
# whose client sends errors on purpose, these are what the agent's stderr must not hold.
ESCAPED = ("Unhandled error", "main loop failed", "never retrieved")


async def rpc_error(conn: ClientSideConnection, method: str, params: Any) -> int:
    """The JSON-RPC error code the agent answers a raw request with (0: no error)."""
    try:
        await asyncio.wait_for(conn._conn.send_request(method, params), WAIT)
    except RequestError as exc:
        return exc.code
    return 0


def test_requests_of_the_wrong_shape_get_json_rpc_errors(tmp_path):
    """Attack: unknown methods, unknown sessions, params of the wrong types, workspaces that
    are no folder (a file, a NUL byte, another user's home that does not exist): each must
    get its JSON-RPC error (invalid params, not an internal error), and the agent goes on."""
    root = workspace(tmp_path)
    editor = Editor()
    prompt = [{"type": "text", "text": "hi"}]

    async def scenario() -> dict[str, int]:
        async with grinta_acp(editor, tmp_path, None, stderr_must_not_hold=ESCAPED) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            codes = {
                "unknown method": await rpc_error(conn, "session/frobnicate", {}),
                "extension": await rpc_error(conn, "_grinta/x", {"a": 1}),
                "unknown session": await rpc_error(
                    conn, "session/prompt", {"sessionId": "nope", "prompt": prompt}
                ),
                "prompt not a list": await rpc_error(
                    conn, "session/prompt", {"sessionId": sid, "prompt": "hi"}
                ),
                "params a list": await rpc_error(conn, "session/new", [str(root)]),
                "cwd a number": await rpc_error(conn, "session/new", {"cwd": 5, "mcpServers": []}),
                "cwd a file": await rpc_error(
                    conn, "session/new", {"cwd": str(root / "pkg" / "core.py"), "mcpServers": []}
                ),
                "cwd with NUL": await rpc_error(
                    conn, "session/new", {"cwd": "a\x00b", "mcpServers": []}
                ),
                "cwd of nobody's home": await rpc_error(
                    conn, "session/new", {"cwd": "~no-such-user-here/x", "mcpServers": []}
                ),
                "load a path": await rpc_error(
                    conn,
                    "session/load",
                    {"cwd": str(root), "sessionId": "../../etc/passwd", "mcpServers": []},
                ),
                "mode unknown": await rpc_error(
                    conn, "session/set_mode", {"sessionId": sid, "modeId": "yolo"}
                ),
            }
            # The agent still works: the session answers a prompt (the demo model plays).
            editor.answer = "veto"
            done = await conn.prompt(session_id=sid, prompt=[text_block("go")])
            codes["a prompt after all that"] = 0 if done.stop_reason else -1
            return codes

    codes = asyncio.run(scenario())
    assert codes == {
        "unknown method": -32601,
        "extension": -32601,
        "unknown session": -32002,
        "prompt not a list": -32602,
        "params a list": -32602,
        "cwd a number": -32602,
        "cwd a file": -32602,
        "cwd with NUL": -32602,
        "cwd of nobody's home": -32602,
        "load a path": -32602,
        "mode unknown": -32602,
        "a prompt after all that": 0,
    }


def test_lines_that_are_no_json_rpc_message_do_not_end_the_connection(tmp_path):
    """Attack: lines on stdin that are JSON but no JSON-RPC message (an array, null, a
    string, a response whose error is a string, an id that is a list), JSON nested too deep
    to parse, or not even UTF-8. The agent must skip them and go on serving: one stray line
    must not end the connection, and every session with it."""
    root = workspace(tmp_path)
    lines = [
        b"[]",
        b"null",
        b'"session/new"',
        b'{"jsonrpc": "2.0", "id": 9999, "error": "no such thing"}',
        b'{"jsonrpc": "2.0", "id": [1], "result": {}}',
        b"[" * 100_000 + b"]" * 100_000,
        b"\xff\xfe not even UTF-8",
    ]

    async def scenario() -> str:
        async with grinta_acp(Editor(), tmp_path, None, stderr_must_not_hold=ESCAPED) as (
            conn,
            process,
        ):
            process.stdin.write(b"\n".join(lines) + b"\n")
            await process.stdin.drain()
            return (await asyncio.wait_for(conn.new_session(cwd=str(root)), WAIT)).session_id

    assert asyncio.run(scenario())


class Scripted(Editor):
    """An editor whose answers to permission requests are scripted, one per request: an
    option id; an ``asyncio.Event`` to wait for, then "approve" (never set: the user never
    answers); or any other JSON value as the whole result (well-formed or not)."""

    def __init__(self, *answers: Any):
        super().__init__()
        self.answers = list(answers)

    async def request_permission(self, options, session_id, tool_call, **kwargs):  # type: ignore[no-untyped-def]
        self.permissions.append((tool_call, options))
        self.asked.set()
        answer = self.answers.pop(0)
        if isinstance(answer, asyncio.Event):
            await answer.wait()
            answer = "approve"
        if isinstance(answer, str):
            return {"outcome": {"outcome": "selected", "optionId": answer}}
        return answer


def test_an_option_grinta_did_not_offer_is_a_veto(openai_server, tmp_path):
    """Attack: the client answers a permission request with an option id it was not
    offered: "approve-always" on a write (writes never offer it), a made-up id on a
    command. Neither may approve: nothing is written or run, and the model reads a veto."""
    root = workspace(tmp_path)
    before = snapshot(root)
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX)),
        tool_reply(tool_call("run", {"command": "touch ran.txt"})),
        tool_reply(tool_call("finish", {"summary": "Nothing done."})),
    )
    editor = Scripted("approve-always", "yes-please")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server, stderr_must_not_hold=ESCAPED) as (
            conn,
            _,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            return (await conn.prompt(session_id=sid, prompt=[text_block(TASK)])).stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert snapshot(root) == before
    assert not (root / "ran.txt").exists()
    assert [opt.option_id for opt in editor.permissions[0][1]] == ["approve", "veto"]
    results = [
        m["content"] for m in openai_server.requests[2].body["messages"] if m["role"] == "tool"
    ]
    assert len(results) == 2 and all("vetoed" in r for r in results), results


def test_a_malformed_permission_answer_writes_nothing_and_the_session_goes_on(
    openai_server, tmp_path
):
    """Attack: the client answers permission requests with results of the wrong shape (no
    outcome, no option, an outcome that is a string, a list). Nobody knows what the user
    chose: nothing may be written, the turn ends, and the next prompt goes on with the same
    session."""
    root = workspace(tmp_path)
    before = snapshot(root)
    answers: list[Any] = [
        {},
        {"outcome": {"outcome": "selected"}},
        {"outcome": "approve"},
        [{"outcome": {"outcome": "selected", "optionId": "approve"}}],
    ]
    openai_server.queue(
        *[tool_reply(tool_call("replace_string", FIX)) for _ in answers],
        tool_reply(tool_call("finish", {"summary": "Left it."})),
    )
    editor = Scripted(*answers)

    async def scenario() -> list[str]:
        async with grinta_acp(editor, tmp_path, openai_server, stderr_must_not_hold=ESCAPED) as (
            conn,
            _,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            ends = []
            for text in [TASK, "try again", "and again", "once more", "leave it; finish"]:
                done = await conn.prompt(session_id=sid, prompt=[text_block(text)])
                ends.append(done.stop_reason)
            return ends

    assert asyncio.run(scenario()) == ["cancelled"] * 4 + ["end_turn"]
    assert snapshot(root) == before
    assert len(editor.permissions) == 4
    assert "leave it; finish" in user_texts(openai_server.requests[-1])


def log_events(root: Path, sid: str) -> list[dict[str, Any]]:
    path = root / ".grinta" / "sessions" / f"{sid}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_client_leaving_mid_turn_ends_every_session_cleanly(openai_server, tmp_path):
    """Attack: the client closes stdin while one session runs an approved command (a
    minute's sleep) and another waits for a permission that will never come. The agent
    must end the command, record both sessions' ends, write nothing unapproved, and exit
    at once with status 0, without a traceback."""
    busy, waiting = workspace(tmp_path / "a"), workspace(tmp_path / "b")
    before = snapshot(waiting)
    openai_server.queue(
        tool_reply(tool_call("run", {"command": "echo $$ > started.pid; exec sleep 60"})),
        tool_reply(tool_call("replace_string", FIX)),
    )
    never = asyncio.Event()
    editor = Scripted("approve", never)

    async def scenario() -> tuple[list[str], int | None, float]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, process):
            one = (await conn.new_session(cwd=str(busy))).session_id
            two = (await conn.new_session(cwd=str(waiting))).session_id
            turns = [asyncio.ensure_future(conn.prompt(session_id=one, prompt=[text_block(TASK)]))]
            await until(lambda: (busy / "started.pid").exists(), "the command to start")
            turns.append(
                asyncio.ensure_future(conn.prompt(session_id=two, prompt=[text_block(TASK)]))
            )
            await until(lambda: len(editor.permissions) == 2, "the write to wait")
            left = asyncio.get_running_loop().time()
            process.stdin.close()
            code = await asyncio.wait_for(process.wait(), WAIT)
            took = asyncio.get_running_loop().time() - left
            for turn in turns:
                with contextlib.suppress(Exception):
                    await turn
            return [one, two], code, took

    (one, two), code, took = asyncio.run(scenario())
    assert code == 0
    assert took < 10, f"the agent took {took:.1f} s to leave"
    assert snapshot(waiting) == before
    pid = int((busy / "started.pid").read_text())
    with pytest.raises(ProcessLookupError):  # the command was ended, not left running
        os.kill(pid, 0)
    for root, sid in [(busy, one), (waiting, two)]:
        events = log_events(root, sid)
        assert events[-1]["type"] == "session_end", events[-1]
        assert events[-1]["reason"] == "the ACP client went away"
    ran = [e for e in log_events(busy, one) if e["type"] == "observation"]
    assert len(ran) == 1


def test_a_prompt_right_after_a_cancel_is_the_next_task_even_while_a_command_ends(
    openai_server, tmp_path
):
    """Attack: the user cancels while an approved command runs (cancel sent twice, plus
    cancels for an unknown session and for another, idle one), then at once sends a new
    message, as an editor does when one types during a turn. The first prompt answers
    ``cancelled``; the command is ended and recorded; the new message must become the next
    task and be worked on, not be said to the session that is ending and lost."""
    root = workspace(tmp_path)
    openai_server.queue(
        tool_reply(tool_call("run", {"command": "echo $$ > started.pid; exec sleep 60"})),
        tool_reply(tool_call("finish", {"summary": "Did the other thing."})),
    )
    editor = Scripted("approve")

    async def scenario() -> list[str]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            idle = (await conn.new_session(cwd=str(root))).session_id
            first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(lambda: (root / "started.pid").exists(), "the command to start")
            for target in [sid, sid, "no-such-session", idle]:
                await conn.cancel(session_id=target)
            second = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("do the other thing instead")]),
                WAIT,
            )
            return [(await first).stop_reason, second.stop_reason, sid]

    first, second, sid = asyncio.run(scenario())
    assert first == "cancelled"
    assert second == "end_turn"
    assert "do the other thing instead" in user_texts(openai_server.requests[-1])
    assert "Did the other thing." in editor.text()
    types = [e["type"] for e in log_events(root, sid)]
    assert types.count("task_start") == 1 and "observation" in types


def test_loading_one_session_twice_at_once_leaves_it_loaded(openai_server, tmp_path):
    """Attack: a careless client sends ``session/load`` twice for the same session without
    waiting (a double click), for a session whose agent died while a write waited. Both
    loads answer (the second waits for the first's resume), and the session stays loaded: a
    prompt on it goes on with the same log, and the write is asked again. (Before, each load
    resumed the log; the one that could not claim it dropped the other's conversation, and
    the prompt then found no session, now and then.)"""
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("replace_string", FIX)))
    sid, _ = died_while_a_write_waited(tmp_path, openai_server, root)
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Fixed."})))
    editor = Editor("approve")

    async def load_twice() -> tuple[list[Any], str]:
        async with grinta_acp(editor, tmp_path, openai_server, stderr_must_not_hold=ESCAPED) as (
            conn,
            _,
        ):
            loads = await asyncio.gather(
                conn.load_session(cwd=str(root), session_id=sid),
                conn.load_session(cwd=str(root), session_id=sid),
                return_exceptions=True,
            )
            done = await conn.prompt(session_id=sid, prompt=[text_block("go on")])
            return loads, done.stop_reason

    loads, stop = asyncio.run(load_twice())
    assert not any(isinstance(load, BaseException) for load in loads), loads
    assert stop == "end_turn"
    assert (root / "pkg" / "core.py").read_text() == FIXED
    assert "go on" in user_texts(openai_server.requests[-1])


def test_prompts_of_odd_text_and_mentions_start_a_session_like_any_other(openai_server, tmp_path):
    """Attack: a prompt whose text holds a lone UTF-16 surrogate (valid JSON ``"\\ud800"``,
    no valid UTF-8), and mentions whose URIs hold a NUL byte, point into a symlink loop,
    or outside the workspace. The session must start and reach the model like any other,
    each mention named by its path or, when it has none in the workspace, its URI."""
    root = workspace(tmp_path)
    (root / "loop").symlink_to(root / "loop")
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Nothing to do."})))

    def link(uri: str) -> dict[str, str]:
        return {"type": "resource_link", "name": "x", "uri": uri}

    editor = Editor()

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server, stderr_must_not_hold=ESCAPED) as (
            conn,
            _,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            prompt = [
                {"type": "text", "text": "look at \ud800 this:"},
                link("file:///%FF%FE%00.py"),
                link(f"file://{root}/loop/x.py"),
                link("file:///etc/passwd"),
                link((root / "pkg" / "core.py").as_uri()),
            ]
            done = await asyncio.wait_for(
                conn._conn.send_request("session/prompt", {"sessionId": sid, "prompt": prompt}),
                WAIT,
            )
            return str(done["stopReason"])

    assert asyncio.run(scenario()) == "end_turn"
    task = user_texts(openai_server.requests[0])
    assert "look at \ufffd this:" in task
    assert "`file:///%FF%FE%00.py`" in task and "`file:///etc/passwd`" in task
    assert "`loop/x.py`" in task and "`pkg/core.py`" in task


def test_a_huge_first_prompt_is_refused_like_a_huge_next_one(openai_server, tmp_path):
    """Attack: a first prompt of 100,000 characters (a pasted log). A message or a next task
    that long is refused with "too long ... put the text in a file"; the first task must be
    too, before any model call, rather than be sent to the model at every turn."""
    root = workspace(tmp_path)
    openai_server.queue(stall_reply(120.0))
    editor = Editor()

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(
                conn.prompt(session_id=sid, prompt=[text_block("x" * 100_000)])
            )
            await until(lambda: turn.done() or openai_server.requests, "an answer or a call")
            if not turn.done():
                await conn.cancel(session_id=sid)
            return (await asyncio.wait_for(turn, WAIT)).stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert openai_server.requests == []
    assert "too long" in editor.text()


def test_many_sessions_at_once_each_writes_exactly_what_it_showed(openai_server, tmp_path):
    """Attack: four sessions in four workspaces prompted at once (one with CRLF line
    endings), all waiting for approval together, then approved together. Each must write
    its own workspace only, and exactly the text its tool call's diff showed (line endings
    and all); each keeps its own log."""
    roots = [workspace(tmp_path / str(n)) for n in range(4)]
    crlf = roots[1] / "pkg" / "core.py"
    crlf.write_bytes(CORE.replace("\n", "\r\n").encode())
    openai_server.queue(
        *[tool_reply(tool_call("replace_string", FIX)) for _ in roots],
        *[tool_reply(tool_call("finish", {"summary": "Fixed add."})) for _ in roots],
    )
    editor = Editor("approve")
    editor.hold, editor.hold_answer = asyncio.Event(), "approve"

    async def scenario() -> list[str]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sids = [(await conn.new_session(cwd=str(root))).session_id for root in roots]
            turns = [
                asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
                for sid in sids
            ]
            await until(lambda: len(editor.permissions) == len(roots), "every write to wait")
            assert all(root.joinpath("pkg", "core.py").read_text() == CORE for root in roots)
            assert editor.hold is not None
            editor.hold.set()
            ends = await asyncio.wait_for(asyncio.gather(*turns), WAIT)
            assert [end.stop_reason for end in ends] == ["end_turn"] * len(roots)
            return sids

    sids = asyncio.run(scenario())
    assert len(set(sids)) == len(roots)
    assert crlf.read_bytes() == FIXED.replace("\n", "\r\n").encode()
    shown = {
        diff.path: (diff.old_text, diff.new_text)
        for start in editor.starts()
        for diff in start.content or []
        if isinstance(diff, FileEditToolCallContent)
    }
    assert shown == {
        str(root / "pkg" / "core.py"): (CORE, FIXED)
        if root != roots[1]
        else (CORE.replace("\n", "\r\n"), FIXED.replace("\n", "\r\n"))
        for root in roots
    }
    for root, sid in zip(roots, sids, strict=True):  # byte for byte what the diff showed
        disk = (root / "pkg" / "core.py").read_bytes().decode()
        assert disk == shown[str(root / "pkg" / "core.py")][1]
        assert [p.name for p in (root / ".grinta" / "sessions").glob("*.jsonl")] == [f"{sid}.jsonl"]
    edits = [s for s in editor.starts() if s.kind == "edit"]
    assert all(editor.status(s.tool_call_id) == "completed" for s in edits)


def test_an_approval_that_comes_after_the_cancel_writes_nothing(openai_server, tmp_path):
    """Attack: the user cancels while a write waits for permission, and a careless client
    then answers the request "approve" instead of "cancelled". The turn was cancelled: the
    late approval must not commit anything."""
    root = workspace(tmp_path)
    before = snapshot(root)
    openai_server.queue(tool_reply(tool_call("replace_string", FIX)))
    editor = Editor()
    editor.hold, editor.hold_answer = asyncio.Event(), "approve"

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.wait_for(editor.asked.wait(), WAIT)
            await conn.cancel(session_id=sid)
            stop = (await asyncio.wait_for(turn, WAIT)).stop_reason
            assert editor.hold is not None
            editor.hold.set()  # the approval arrives after all
            await conn.set_session_mode(session_id=sid, mode_id="auto")  # a round trip
            return stop

    assert asyncio.run(scenario()) == "cancelled"
    assert snapshot(root) == before
    edit = editor.starts()[0]
    assert editor.status(edit.tool_call_id) != "completed"


def test_a_long_reply_streamed_fast_reaches_the_editor_joined_and_whole(openai_server, tmp_path):
    """Attack: a fast provider streams 30,000 characters in 10-character pieces (3,000
    chunks). The editor gets all of it, in order, in far fewer messages than chunks: each
    message is an update the client applies (Jupyter AI: of the shared chat document)."""
    from acp.schema import AgentMessageChunk

    root = workspace(tmp_path)
    text = "".join(f"<{n:05d}>" for n in range(4_286))[:30_000]
    openai_server.queue(
        text_reply(text, chunk_size=10), tool_reply(tool_call("finish", {"summary": "Done."}))
    )
    editor = Editor()

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            reply = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block(TASK)]), WAIT
            )
            return reply.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert text in editor.text()
    messages = [u for u in editor.updates if isinstance(u, AgentMessageChunk)]
    assert len(messages) < 300, f"{len(messages)} messages for 3,000 chunks"
