"""``grinta acp`` attacked a third time: workspaces whose name the file system cannot take,
and file names a model makes to dress up what a write's title says. Real parts only: the
agent subprocess, the ACP SDK's own client, and tests/openai_server.py for the model
(helpers from tests/test_acp.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp import text_block

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
