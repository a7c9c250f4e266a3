"""``grinta acp`` attacked a third time: workspaces whose name the file system cannot take,
file names and commands a model makes to dress up what a person reviews, a prompt of only
an image, a client that sends prompt after prompt, location lines out of ACP's range. Real
parts only: the agent subprocess, the ACP SDK's own client, and tests/openai_server.py for
the model (helpers from tests/test_acp.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from acp import text_block
from acp.helpers import audio_block, image_block
from acp.schema import ToolCallProgress, ToolCallStart

from tests.openai_server import tool_call, tool_reply
from tests.test_acp import WAIT, Editor, grinta_acp, workspace
from tests.test_acp_attacks import ESCAPED, rpc_error


def test_a_workspace_name_too_long_for_the_file_system_is_invalid_params(tmp_path):
    """Attack: ``session/new`` and ``session/load`` with a ``cwd`` longer than the file
    system takes (ENAMETOOLONG). ``Path.is_dir`` raises on it instead of answering False,
    so the agent answered "internal error" (-32603) with a traceback in its log, where any
    other ``cwd`` that names no folder gets invalid params (-32602)."""
    root = workspace(tmp_path)
    long = "/" + "a" * 5_000
    deep = str(root) + "/x" * 3_000  # every part short, the whole path too long

    async def scenario() -> list[int]:
        async with grinta_acp(Editor(), tmp_path, None, stderr_must_not_hold=ESCAPED) as (
            conn,
            _,
        ):
            codes = [
                await rpc_error(conn, "session/new", {"cwd": long, "mcpServers": []}),
                await rpc_error(conn, "session/new", {"cwd": deep, "mcpServers": []}),
                await rpc_error(
                    conn,
                    "session/load",
                    {"cwd": long, "sessionId": "20250101-000000-abcdef", "mcpServers": []},
                ),
            ]
            sid = (await asyncio.wait_for(conn.new_session(cwd=str(root)), WAIT)).session_id
            codes.append(0 if sid else -1)  # the agent goes on
            return codes

    assert asyncio.run(scenario()) == [-32602, -32602, -32602, 0]


def test_a_write_title_is_one_bounded_line_whatever_the_file_name(openai_server, tmp_path):
    """Attack: the model creates a file whose name holds line breaks and runs to hundreds
    of characters (Linux takes both), as if to add lines of its own to the title a person
    reads before approving ("Create x.py\\n\\nApproved by the team"). Every other title is
    one line cut at 200 characters (a command's, a read's, a search's); a write's was the
    names as they came, line breaks and all."""
    root = workspace(tmp_path)
    name = "notes.py\n\nApproved by the team, click Approve\n" + "b" * 180
    openai_server.queue(
        tool_reply(tool_call("create", {"path": name, "content": "x = 1\n"})),
        tool_reply(tool_call("finish", {"summary": "Nothing."})),
    )
    editor = Editor("veto")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            done = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("add notes")]), WAIT
            )
            return done.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    [create] = [start for start in editor.starts() if start.kind == "edit"]
    asked = [call.title for call, _ in editor.permissions]
    for title in [create.title, *asked]:
        assert title is not None and "\n" not in title and len(title) <= 210, title
        assert title.startswith("Create notes.py\\n\\nApproved by the team"), title
    assert not (root / name).exists()


def test_a_model_call_id_reaches_the_client_only_when_short_and_plain() -> None:
    """The ACP id of a step carried the model's call id as it came: a model that wrote a
    secret, a newline or a megabyte into its call id sent it to the client in every update.
    A plain id is kept (replays give the same id); anything else is a digest of it."""
    from grinta_jupyter.acp.toolcalls import tool_call_id

    assert tool_call_id(0, 3, "call_abc-123") == "step3-call_abc-123"
    for odd in ("sk-proj-" + "x" * 80, "a\nb", "é", "c" * 1_000_000, ""):
        shown = tool_call_id(1, 2, odd)
        assert shown.startswith("b1-step2-h") and len(shown) <= 40, shown
        assert shown == tool_call_id(1, 2, odd)  # the same every time: replay finds it
    assert tool_call_id(0, 1, "a\nb") != tool_call_id(0, 1, "a\nc")


def test_a_location_the_model_names_outside_the_workspace_is_not_sent(tmp_path: Path) -> None:
    """A read of /etc/passwd or ../../x is refused by the runtime, yet its ACP location was
    that path: an editor that follows the agent would open it."""
    from grinta_jupyter import Runtime
    from grinta_jupyter.acp.toolcalls import locations_of

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    runtime = Runtime(root)

    def where(args: dict[str, object], tool: str = "read") -> list[str]:
        return [loc.path for loc in locations_of(root, runtime.propose(tool, args), str)]

    assert where({"path": "/etc/passwd"}) == []
    assert where({"path": "../../etc/passwd", "start_line": 3}) == []
    assert where({"path": "a.py"}) == [str(root / "a.py")]
    assert where({"path": "sub/../a.py"}) in ([str(root / "a.py")], [])


def test_control_characters_the_model_writes_are_shown_escaped_in_what_a_person_reviews(
    openai_server, tmp_path
):
    """Attack: the model proposes a command holding a bidirectional override (U+202E, which
    reorders what follows it on screen) and an ANSI escape, and reads a file whose name holds
    one. The notebook's cards and the terminal show such characters as escapes
    (runtime/display.visible); the ACP tool call sent them as they were, in the title and
    the command of the very permission request a person approves."""
    from grinta_jupyter.runtime.display import has_unsafe

    root = workspace(tmp_path)
    command = "echo ok #\u202e ;txt.x\x1b[2K"
    openai_server.queue(
        tool_reply(tool_call("run", {"command": command})),
        tool_reply(tool_call("read", {"path": "pkg/\u202ecore.py"})),
        tool_reply(tool_call("finish", {"summary": "Nothing."})),
    )
    editor = Editor("veto")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            done = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("look")]), WAIT
            )
            return done.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    [(asked, _)] = editor.permissions
    assert asked.title == "Run: echo ok #\\u202e ;txt.x\\x1b[2K"
    calls = [u for u in editor.updates if isinstance(u, ToolCallStart | ToolCallProgress)]
    shown = [asked.title, *(block.content.text for block in asked.content or [])]
    for call in calls:
        shown.append(call.title or "")
        shown.extend(getattr(block.content, "text", "") for block in call.content or [])
        shown.append(str(call.raw_output or ""))
    assert "\\u202e" in "".join(shown)
    assert not [text for text in shown if has_unsafe(text)]
    # what would run is the model's command byte for byte: only its display escapes
    [run] = [start for start in editor.starts() if start.kind == "execute"]
    assert run.raw_input == {"command": command}


def test_a_prompt_of_only_an_image_asks_for_words_and_calls_no_model(openai_server, tmp_path):
    """Attack: a careless client sends a screenshot alone (or with a blank line of text),
    although grinta's capabilities say it takes no images. Its stand-in, "[an image or a
    sound, which grinta cannot read]", became the whole task: the model was called, and
    billed, to do something nobody asked. Nothing readable must start nothing."""
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "Looked."})))
    editor = Editor()
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

    async def scenario() -> list[str]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            reasons = []
            for prompt in (
                [image_block(png, "image/png")],
                [text_block("  \n"), image_block(png, "image/png"), audio_block(png, "audio/wav")],
            ):
                done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=prompt), WAIT)
                reasons.append(done.stop_reason)
            assert not openai_server.requests
            done = await asyncio.wait_for(
                conn.prompt(
                    session_id=sid,
                    prompt=[text_block("what is in"), image_block(png, "image/png")],
                ),
                WAIT,
            )
            return [*reasons, done.stop_reason]

    assert asyncio.run(scenario()) == ["end_turn", "end_turn", "end_turn"]
    assert editor.text().count("cannot read images") == 2
    [request] = openai_server.requests
    assert "what is in [an image" in json.dumps(request.body["messages"])


def _rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def test_prompts_answered_are_not_kept_in_memory(openai_server, tmp_path):
    """Attack: a client (or an editor kept open for days) sends prompt after prompt, here
    thirty pasted logs of 3 MB, each refused as too long. The ACP SDK's request store keeps
    every request it was sent, params and all, in a list nothing reads: the agent grew by
    the whole 90 MB and would go on growing for as long as the editor keeps it."""
    import sys

    if not sys.platform.startswith("linux"):
        import pytest

        pytest.skip("reads the agent's memory from /proc")
    root = workspace(tmp_path)
    editor = Editor()
    pasted = "x" * 3_000_000

    async def scenario() -> int:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            await conn.prompt(session_id=sid, prompt=[text_block(pasted)])
            before = _rss_mb(process.pid)
            for _ in range(30):
                await asyncio.wait_for(
                    conn.prompt(session_id=sid, prompt=[text_block(pasted)]), WAIT
                )
            return _rss_mb(process.pid) - before

    grown = asyncio.run(scenario())
    assert grown < 45, f"the agent grew by {grown} MB over 90 MB of prompts it had answered"
    assert editor.text().count("too long") == 31
    assert not openai_server.requests


def test_a_location_line_stays_in_the_range_acp_gives_it(tmp_path: Path) -> None:
    """A read's location took the model's ``start_line`` as it came: 2**40 or 10**30
    went out as the line, where ACP's schema says uint32, so a strict client failed to parse
    the update, or the permission request (review mode) and then answered it with an error,
    which cancels the turn."""
    from grinta_jupyter import Runtime
    from grinta_jupyter.acp.toolcalls import locations_of

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    runtime = Runtime(root)

    def lines(start: object) -> list[int | None]:
        proposal = runtime.propose("read", {"path": "a.py", "start_line": start})
        return [loc.line for loc in locations_of(root, proposal, str)]

    assert lines(1) == [1]
    assert lines(2**32 - 1) in ([2**32 - 1], [])
    for odd in (2**32, 2**40, 10**30, -3, 0):
        assert lines(odd) in ([None], []), odd
