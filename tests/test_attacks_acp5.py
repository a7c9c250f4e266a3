"""``grinta acp`` attacked a fifth time: a write to many large files (what the client is
sent, and whether it still says everything Approve commits), an editor that never answers
``fs/read_text_file`` while the user cancels. Real parts only: the agent subprocess, the
ACP SDK's own client, and tests/openai_server.py for the model (helpers from
tests/test_acp.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ContentToolCallContent, FileEditToolCallContent, ToolCallProgress

from tests.conftest import snapshot
from tests.openai_server import tool_call, tool_reply
from tests.test_acp import CORE, FIX, TASK, WAIT, Editor, grinta_acp, until, workspace
from tests.test_acp_attacks import ESCAPED

PROMPT = 8.0  # seconds a cancelled turn may take to answer: under the 10 s of a file question


class SilentFiles(Editor):
    """An editor that takes ``fs/read_text_file`` requests and never answers them."""

    def __init__(self, answer: str = "approve") -> None:
        super().__init__(answer)
        self.never = asyncio.Event()

    async def read_text_file(self, path, session_id, limit=None, line=None, **kwargs):  # type: ignore[no-untyped-def]
        self.reads.append(path)
        await self.never.wait()
        return await super().read_text_file(path, session_id, limit, line, **kwargs)


def _sent_chars(content: list[Any] | None) -> int:
    """How many characters of text a tool call's content carries."""
    total = 0
    for item in content or []:
        if isinstance(item, FileEditToolCallContent):
            total += len(item.new_text) + len(item.old_text or "")
        elif isinstance(item, ContentToolCallContent):
            total += len(getattr(item.content, "text", ""))
    return total


def _texts(content: list[Any] | None) -> str:
    return "\n".join(
        item.content.text for item in content or [] if isinstance(item, ContentToolCallContent)
    )


def test_a_write_to_many_large_files_is_sent_within_a_budget_naming_every_file(
    openai_server, tmp_path
):
    """Attack: a multiedit over six files of 400 KB each, every line changed. Each file's old
    and new text went to the client whole, in the staged tool call, the permission request
    and the observed update alike: 4.8 million characters each (a few dozen such files pass
    the 50 MB line the ACP SDK's reader takes, and the connection ends). Now the diffs of a
    call stay within a budget, and what the cut leaves out is said: every file is named,
    with its line counts and whether it was shown, so Approve hides nothing it commits."""
    from grinta_jupyter.acp.toolcalls import DIFF_BUDGET_CHARS

    root = workspace(tmp_path)
    names = [f"pkg/m{i}.py" for i in range(6)]
    for name in names:
        (root / name).write_text("value = 1  # a line of about forty characters\n" * 9_000)
    edits = [
        {"path": name, "old_string": "value = 1", "new_string": "value = 2", "replace_all": True}
        for name in names
    ]
    openai_server.queue(
        tool_reply(tool_call("multiedit", {"edits": edits})),
        tool_reply(tool_call("finish", {"summary": "Bumped."})),
    )
    editor = Editor("approve")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            done = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("bump value")]), WAIT
            )
            return done.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    [(asked, _)] = editor.permissions
    [start] = [s for s in editor.starts() if s.kind == "edit"]
    [observed] = [
        u
        for u in editor.updates
        if isinstance(u, ToolCallProgress) and u.tool_call_id == start.tool_call_id and u.content
    ]
    for call in (start, asked, observed):
        assert _sent_chars(call.content) <= DIFF_BUDGET_CHARS + 10_000
        note = _texts(call.content)
        for name in names:  # every file is named, with how much of it was sent
            assert re.search(rf"`{name}` \(\+9,000 -9,000\): (shown|cut short|not shown)", note)
        assert "not shown above" in note and "the write changes all of it, the rest too" in note
    assert "before you approve" in _texts(asked.content)
    # The diff cut short ends at a line's end: its last row keeps its role.
    [cut] = [text for text in _texts(asked.content).split("\n") if text.startswith("```diff")]
    cut = _texts(asked.content).split("```diff\n")[-1].split("\n```")[0]
    assert cut.startswith("--- a/pkg/m2.py") and cut.endswith(
        "value = 1  # a line of about forty characters"
    ), cut[-80:]
    # Approve committed all of it, the files no diff showed too.
    for name in names:
        assert (root / name).read_text().count("value = 2") == 9_000


def test_a_cancel_ends_the_turn_while_the_editor_never_says_what_it_holds(openai_server, tmp_path):
    """Attack: the user approves a write, the commit asks the editor what it holds of the
    file (``fs/read_text_file``), the editor never answers, and the user cancels. The turn
    went on until the 10 s timeout of that question. A cancel must end it at once, and
    the commit that could not learn what the editor holds is refused: nothing written."""
    root = workspace(tmp_path)
    before = snapshot(root)
    openai_server.queue(tool_reply(tool_call("replace_string", FIX)))
    editor = SilentFiles("approve")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server, files=True) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            try:
                await until(lambda: editor.reads, "the commit's question to the editor")
                await conn.cancel(session_id=sid)
                done = await asyncio.wait_for(asyncio.shield(turn), WAIT)
            finally:
                editor.never.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(turn, WAIT)
            return done.stop_reason

    assert asyncio.run(scenario()) == "cancelled"
    assert snapshot(root) == before
    assert (root / "pkg" / "core.py").read_text() == CORE
    [edit] = [s for s in editor.starts() if s.kind == "edit"]
    assert editor.status(edit.tool_call_id) == "failed"
    # refused because of the cancel (before: because the 10 s question timed out)
    assert "cancelled before the editor said what it holds" in editor.shown(edit.tool_call_id)


def test_a_cancel_ends_the_turn_while_a_reads_note_waits_for_the_editor(openai_server, tmp_path):
    """Attack: the model reads a file; grinta asks the editor whether its buffer differs
    (to note it on the read), the editor never answers, and the user cancels. The turn
    waited the 10 s of that question; it ends at once now. The next prompt asks the
    editor again (its answer is awaited as before), and its write commits."""
    root = workspace(tmp_path)
    openai_server.queue(
        tool_reply(tool_call("read", {"path": "pkg/core.py"})),
        tool_reply(tool_call("replace_string", FIX)),
        tool_reply(tool_call("finish", {"summary": "Fixed."})),
        tool_reply(tool_call("finish", {"summary": "Fixed, untested."})),
    )
    editor = SilentFiles("approve")

    async def scenario() -> list[str]:
        async with grinta_acp(
            editor, tmp_path, openai_server, files=True, stderr_must_not_hold=ESCAPED
        ) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            try:
                await until(lambda: editor.reads, "the read's question to the editor")
                await conn.cancel(session_id=sid)
                first = await asyncio.wait_for(asyncio.shield(turn), PROMPT)
            finally:
                editor.never.set()  # from now on the editor answers
            second = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("go on")]), WAIT
            )
            return [first.stop_reason, second.stop_reason]

    assert asyncio.run(scenario()) == ["cancelled", "end_turn"]
    assert (root / "pkg" / "core.py").read_text() != CORE
    assert len(editor.reads) >= 2  # the commit of the next turn asked the editor again
    [edit] = [s for s in editor.starts() if s.kind == "edit"]
    assert editor.status(edit.tool_call_id) == "completed"


def test_a_huge_target_the_model_names_is_quoted_cut_in_what_the_client_is_sent(
    tmp_path: Path,
) -> None:
    """Attack: the model asks to delete a symbol whose name is a megabyte long (or holds
    backticks, to close the quote early). The tool call quoted the name whole in how it
    resolved, in the staged call, the permission request and the observed update alike:
    three megabytes for one refused step. The quote is cut now, and stays one quote."""
    from grinta_jupyter import Runtime
    from grinta_jupyter.acp import toolcalls
    from grinta_jupyter.agent.models.base import ToolCall
    from grinta_jupyter.agent.step import Step

    root = tmp_path.resolve()
    (root / "a.py").write_text("def f():\n    pass\n")
    runtime = Runtime(root)
    quoted = {"w" * 1_000_000: "`a.py::" + "w" * 293 + "…`", "x`](u) `y": "``a.py::x`](u) `y``"}
    for name, quote in quoted.items():
        args = {"edits": [{"symbol": f"a.py::{name}", "action": "delete"}]}
        step = Step(
            1,
            ToolCall("c1", "edit_symbols", json.dumps(args)),
            runtime.propose("edit_symbols", args),
        )
        for call in (
            toolcalls.started(root, 0, step, str),
            toolcalls.asking(root, 0, step, str),
            toolcalls.observed(root, 0, step, str),
        ):
            assert _sent_chars(call.content) < 5_000
            [line] = [t for t in _texts(call.content).split("\n") if t.startswith("Could not")]
            assert line.startswith(f"Could not resolve {quote}: "), line[:400]


@pytest.mark.parametrize(
    "command",
    ["rm -rf /home/me/proj", "cat /etc/passwd", "ls /tmp/x/ && pytest", "pytest tests/", "echo /"],
)
def test_a_command_title_is_shown_by_jupyter_ai_as_sent(command: str) -> None:
    """Jupyter AI's client shows a title word that starts with ``/`` and holds another ``/``
    as its last part: "Run: rm -rf /home/me/proj" read "Run: rm -rf proj", a command other
    than the one approved. A title holding such a word no longer names the command (the call's
    content shows it exactly)."""
    from jupyter_ai_acp_client.tool_call_renderer import _shorten_title

    from grinta_jupyter.acp.toolcalls import title_of

    title = title_of("run", "command", {"command": command}, "")
    assert _shorten_title(title) == title
    if "/" not in command.replace(" /", " "):
        assert title == f"Run: {command}"
