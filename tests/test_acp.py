"""``grinta acp`` end to end: the ACP SDK's own client drives ``python -m grinta_jupyter.acp``
over stdio, and the model is real litellm talking to tests/openai_server.py.

The editor here is a real ACP client (``acp.spawn_agent_process``): it records every
session update and answers permission requests as a person would (approve, veto, allow
always, or "cancelled" once the turn is cancelled, as the protocol says a client does).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    CurrentModeUpdate,
    DeniedOutcome,
    FileEditToolCallContent,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from grinta_jupyter.agent.context import unfence
from tests.conftest import snapshot
from tests.openai_server import OpenAIServer, stall_reply, tool_call, tool_reply

REPO = Path(__file__).resolve().parents[1]
CORE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
FIX = {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return a + b"}
TESTS = "python -m pytest -q tests"
TASK = "fix the failing test in pkg/core.py"
WAIT = 60.0  # seconds before a test gives up waiting for something that should happen
_agents = itertools.count(1)
# What Python prints for something still open at the end (an unclosed writer collected after
# the loop closed printed "Exception ignored in: <function StreamWriter.__del__ ...>").
LEFT_OPEN = ("Exception ignored", "ResourceWarning")


class Editor:
    """The client side of ACP, as an editor would be: it shows updates and asks the user."""

    def __init__(self, answer: str = "approve", *, buffers: dict[str, str] | None = None):
        self.answer = answer  # the option id the "user" picks
        self.buffers = buffers or {}  # absolute path -> unsaved text the editor holds
        self.updates: list[Any] = []
        self.permissions: list[tuple[Any, list[Any]]] = []
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.asked = asyncio.Event()
        self.hold: asyncio.Event | None = None  # when given: wait until it is set, then answer
        self.hold_answer: str | None = None  # ... this option (None: "cancelled", as on a cancel)

    async def request_permission(self, options, session_id, tool_call, **kwargs):  # type: ignore[no-untyped-def]
        self.permissions.append((tool_call, options))
        self.asked.set()
        answer: str | None = self.answer
        if self.hold is not None:
            await self.hold.wait()
            answer = self.hold_answer
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def session_update(self, session_id, update, **kwargs):  # type: ignore[no-untyped-def]
        self.updates.append(update)

    async def read_text_file(self, path, session_id, limit=None, line=None, **kwargs):  # type: ignore[no-untyped-def]
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, content, path, session_id, **kwargs):  # type: ignore[no-untyped-def]
        self.writes.append(path)
        raise RequestError.method_not_found("fs/write_text_file")

    # -- what the editor shows -------------------------------------------------------------

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))

    def starts(self) -> list[ToolCallStart]:
        return [u for u in self.updates if isinstance(u, ToolCallStart)]

    def status(self, tool_call_id: str) -> str | None:
        found = None
        for u in self.updates:
            if isinstance(u, ToolCallStart | ToolCallProgress) and u.tool_call_id == tool_call_id:
                found = u.status or found
        return found

    def shown(self, tool_call_id: str) -> str:
        """Every text the tool call showed, joined."""
        texts = []
        for u in self.updates:
            if isinstance(u, ToolCallStart | ToolCallProgress) and u.tool_call_id == tool_call_id:
                for item in u.content or []:
                    texts.append(getattr(getattr(item, "content", None), "text", ""))
        return "\n".join(texts)


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(CORE)
    (root / "tests" / "test_core.py").write_text(TEST)
    return root.resolve()


@contextlib.asynccontextmanager
async def grinta_acp(
    editor: Editor,
    tmp_path: Path,
    server: OpenAIServer | None,
    *,
    files: bool = False,
    stderr_must_not_hold: tuple[str, ...] = ("Traceback",),
    **variables: str,
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """``python -m grinta_jupyter.acp`` in a subprocess, initialized; its stderr to a file,
    which must hold none of ``stderr_must_not_hold`` at the end, nor a sign of something the
    agent left open (``LEFT_OPEN``: a writer, a transport, a file) when the client left.

    The model is the local server's (none: the demo model), unless ``variables`` say
    otherwise."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GRINTA_") and k not in ("OPENAI_API_KEY", "VISUAL", "EDITOR")
    }
    if server is not None:
        env |= {
            "GRINTA_MODEL": "openai/test",
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": "sk-test-key-for-acp",
        }
    env["PYTHONWARNINGS"] = "always::ResourceWarning"  # what it leaves open, said on stderr
    env |= variables
    stderr = tmp_path / f"agent-{next(_agents)}.stderr"
    with open(stderr, "wb") as err:
        async with spawn_agent_process(  # as an editor starts it: the `grinta acp` command
            editor,
            str(Path(sys.executable).with_name("grinta")),
            "acp",
            env=env,
            cwd=REPO,
            transport_kwargs={"stderr": err},
        ) as (conn, process):
            hello = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=files, write_text_file=files)
                ),
                client_info=Implementation(name="test-editor", title="Test Editor", version="1"),
            )
            assert hello.agent_info is not None and hello.agent_info.name == "grinta"
            assert hello.agent_capabilities is not None and hello.agent_capabilities.load_session
            yield conn, process
    text = stderr.read_text()
    assert not any(mark in text for mark in stderr_must_not_hold + LEFT_OPEN), text


async def until(condition: Any, what: str) -> None:
    """Wait for ``condition()`` (something the agent or the server does), at most ``WAIT`` s."""
    for _ in range(int(WAIT / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def tool_results(request: Any) -> list[str]:
    return [unfence(m["content"]) for m in request.body["messages"] if m["role"] == "tool"]


def user_texts(request: Any) -> str:
    return "\n".join(str(m["content"]) for m in request.body["messages"] if m["role"] == "user")


def test_allow_commits_a_message_reaches_the_model_and_a_next_prompt_continues(
    openai_server, tmp_path
):
    root = workspace(tmp_path)
    openai_server.queue(
        tool_reply(tool_call("read", {"path": "pkg/core.py"}), text="Reading first."),
        tool_reply(tool_call("replace_string", FIX)),
        tool_reply(tool_call("run", {"command": TESTS})),
        tool_reply(tool_call("finish", {"summary": "Fixed add; the test passes."})),
        tool_reply(tool_call("finish", {"summary": "add returns the sum of a and b."})),
    )
    editor = Editor()
    editor.hold, editor.hold_answer = asyncio.Event(), "approve"

    async def scenario() -> tuple[str, list[str]]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            new = await conn.new_session(cwd=str(root))
            assert new.modes is not None and new.modes.current_mode_id == "ask"
            sid = new.session_id
            log = root / ".grinta" / "sessions" / f"{sid}.jsonl"
            first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.wait_for(editor.asked.wait(), WAIT)  # the edit waits for the user
            # A prompt while the task runs is said to the model; it ends with the task.
            said = asyncio.ensure_future(
                conn.prompt(session_id=sid, prompt=[text_block("keep the fix to one line")])
            )
            await until(lambda: "keep the fix to one line" in log.read_text(), "the message")
            assert editor.hold is not None
            editor.hold.set()  # the user approves the edit (and, later, the test run)
            ends = [(await first).stop_reason, (await said).stop_reason]
            ends.append(
                (
                    await conn.prompt(
                        session_id=sid, prompt=[text_block("now explain what add does")]
                    )
                ).stop_reason
            )
            return sid, ends

    session_id, ends = asyncio.run(scenario())

    assert ends == ["end_turn", "end_turn", "end_turn"]
    assert "keep the fix to one line" in user_texts(openai_server.requests[2])
    assert (root / "pkg" / "core.py").read_text() == FIXED
    # The ACP session id is grinta's: it names the log, which both tasks appended to.
    events = [
        json.loads(line)
        for line in (root / ".grinta" / "sessions" / f"{session_id}.jsonl").read_text().splitlines()
    ]
    assert [e["type"] for e in events].count("task_start") == 1
    # Model text streamed as agent message chunks; the summaries came after each task.
    assert "Reading first." in editor.text()
    assert "Fixed add; the test passes." in editor.text()
    assert "add returns the sum" in editor.text()
    # Every tool call was reported with its kind, title and locations.
    starts = editor.starts()
    assert [s.kind for s in starts] == ["read", "edit", "execute", "other", "other"]
    read, edit, run = starts[:3]
    core = str(root / "pkg" / "core.py")
    assert read.title.startswith("Read pkg/core.py")
    assert [loc.path for loc in read.locations or []] == [core]
    assert edit.title == "Edit pkg/core.py"
    assert [(loc.path, loc.line) for loc in edit.locations or []] == [(core, 2)]
    diff = [c for c in edit.content or [] if isinstance(c, FileEditToolCallContent)]
    assert [(d.path, d.old_text, d.new_text) for d in diff] == [(core, CORE, FIXED)]
    assert run.title == f"Run: {TESTS}"
    assert "1 passed" in editor.shown(run.tool_call_id)
    assert all(editor.status(s.tool_call_id) == "completed" for s in starts)
    # The write and the command asked; the read did not. A write is never "always".
    asked = [(call.tool_call_id, {o.kind for o in options}) for call, options in editor.permissions]
    assert asked == [
        (edit.tool_call_id, {"allow_once", "reject_once"}),
        (run.tool_call_id, {"allow_once", "allow_always", "reject_once"}),
    ]
    assert editor.writes == []  # the commit is grinta's own
    # The second prompt was the session's next task: the model read it after the first.
    assert "now explain what add does" in user_texts(openai_server.requests[-1])
    assert "Fixed add" in json.dumps(openai_server.requests[-1].body["messages"])


def test_a_veto_leaves_every_byte_and_reaches_the_model(openai_server, tmp_path):
    root = workspace(tmp_path)
    before = snapshot(root)
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX)),
        tool_reply(tool_call("finish", {"summary": "Left it as it is, as asked."})),
    )
    editor = Editor("veto")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            new = await conn.new_session(cwd=str(root))
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block(TASK)])
            return done.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert snapshot(root) == before
    (result,) = tool_results(openai_server.requests[1])
    assert "vetoed" in result and "rejected in Test Editor" in result
    (edit, _finish) = editor.starts()
    assert editor.status(edit.tool_call_id) == "failed"
    assert "Vetoed" in editor.shown(edit.tool_call_id)


def test_cancel_cuts_the_model_call_and_a_waiting_step_and_the_next_prompt_goes_on(
    openai_server, tmp_path
):
    root = workspace(tmp_path)
    before = snapshot(root)
    openai_server.queue(
        stall_reply(120.0),  # the model "thinks" for two minutes
        tool_reply(tool_call("replace_string", FIX)),  # ... then a write that waits
        tool_reply(tool_call("finish", {"summary": "Nothing changed, as asked."})),
    )
    editor = Editor("approve")

    async def scenario() -> list[str]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(lambda: len(openai_server.requests) == 1, "the first model call")
            await conn.cancel(session_id=sid)
            first = await asyncio.wait_for(turn, WAIT)
            # The HTTP stream was closed: the server saw the client hang up mid-reply.
            await until(lambda: openai_server.disconnects, "the model call to be cut")

            editor.hold = asyncio.Event()  # the next permission waits for the user...
            turn = asyncio.ensure_future(
                conn.prompt(session_id=sid, prompt=[text_block("try again")])
            )
            await asyncio.wait_for(editor.asked.wait(), WAIT)
            await conn.cancel(session_id=sid)  # ... who cancels the turn instead
            editor.hold.set()  # and the editor answers the pending request "cancelled"
            second = await asyncio.wait_for(turn, WAIT)

            editor.hold = None
            third = await conn.prompt(session_id=sid, prompt=[text_block("leave it; finish")])
            return [first.stop_reason, second.stop_reason, third.stop_reason]

    assert asyncio.run(scenario()) == ["cancelled", "cancelled", "end_turn"]
    assert snapshot(root) == before
    assert len(openai_server.requests) == 3
    assert "leave it; finish" in user_texts(openai_server.requests[2])
    edit = editor.starts()[0]
    assert edit.kind == "edit" and editor.status(edit.tool_call_id) != "completed"


def died_while_a_write_waited(
    tmp_path: Path, server: OpenAIServer, root: Path
) -> tuple[str, Editor]:
    """(id, editor) of a session on ``root`` whose agent was killed while its first write
    (the model's first reply, queued on ``server``) waited for the editor's answer."""
    editor = Editor("approve")
    editor.hold = asyncio.Event()  # never set: the agent dies while the write waits

    async def die_waiting() -> str:
        async with grinta_acp(editor, tmp_path, server) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.wait_for(editor.asked.wait(), WAIT)
            process.kill()
            await process.wait()
            with contextlib.suppress(Exception):
                await turn
            return sid

    return asyncio.run(die_waiting()), editor


def test_load_session_replays_and_resumes_a_step_that_waited_when_the_agent_died(
    openai_server, tmp_path
):
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("replace_string", FIX), text="One edit."))
    sid, first = died_while_a_write_waited(tmp_path, openai_server, root)
    assert (root / "pkg" / "core.py").read_text() == CORE
    openai_server.queue(
        tool_reply(tool_call("run", {"command": TESTS})),
        tool_reply(tool_call("finish", {"summary": "Fixed; 1 passed."})),
    )
    second = Editor("approve")

    async def load_and_go_on() -> str:
        async with grinta_acp(second, tmp_path, openai_server) as (conn, _):
            loaded = await conn.load_session(cwd=str(root), session_id=sid)
            assert loaded is not None
            # Some SDK versions hand notifications to the client from a queue: the reply to
            # load_session may come before the replayed updates are all handled.
            await until(
                lambda: (
                    any(isinstance(u, ToolCallStart) for u in second.updates)
                    and "One edit." in second.text()
                ),
                "the replayed conversation",
            )
            replayed = list(second.updates)
            assert [u.content.text for u in replayed if isinstance(u, UserMessageChunk)] == [TASK]
            assert [s.kind for s in replayed if isinstance(s, ToolCallStart)] == ["edit"]
            assert "One edit." in second.text()
            done = await conn.prompt(session_id=sid, prompt=[text_block("go on")])
            return done.stop_reason

    assert asyncio.run(load_and_go_on()) == "end_turn"
    assert (root / "pkg" / "core.py").read_text() == FIXED
    log = (root / ".grinta" / "sessions" / f"{sid}.jsonl").read_text()
    assert '"type":"resume"' in log.replace(" ", "")
    assert "go on" in user_texts(openai_server.requests[1])
    # The write that waited was staged again and asked again, then committed.
    asked = [call.tool_call_id for call, _ in second.permissions]
    assert len(asked) == 2 and asked[0] == first.permissions[0][0].tool_call_id


def test_an_unsaved_editor_buffer_blocks_the_commit_and_reads_say_so(openai_server, tmp_path):
    root = workspace(tmp_path)
    before = snapshot(root)
    core = str(root / "pkg" / "core.py")
    openai_server.queue(
        tool_reply(tool_call("read", {"path": "pkg/core.py"})),
        tool_reply(tool_call("replace_string", FIX)),
        stall_reply(120.0),
    )
    # The user is typing in pkg/core.py and has not saved; line endings do not count.
    editor = Editor("approve", buffers={core: "def add(a, b):\r\n    return a - b  # hmm\r\n"})

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server, files=True) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(lambda: len(openai_server.requests) == 3, "the model to see the refusal")
            await conn.cancel(session_id=sid)
            return (await asyncio.wait_for(turn, WAIT)).stop_reason

    assert asyncio.run(scenario()) == "cancelled"
    assert snapshot(root) == before
    assert core in editor.reads and editor.writes == []
    (_read, refused) = tool_results(openai_server.requests[2])
    assert refused.startswith("ERROR DOCUMENT_UNSAVED")
    read, edit = editor.starts()
    assert "unsaved changes" in editor.shown(read.tool_call_id)
    assert editor.status(edit.tool_call_id) == "failed"


def test_review_mode_asks_for_reads_until_the_user_allows_them_all(openai_server, tmp_path):
    root = workspace(tmp_path)
    openai_server.queue(
        tool_reply(tool_call("read", {"path": "pkg/core.py"})),
        tool_reply(tool_call("read", {"path": "tests/test_core.py"})),
        tool_reply(tool_call("finish", {"summary": "add subtracts; the test expects a sum."})),
    )
    editor = Editor("approve-always")

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            await conn.set_session_mode(session_id=sid, mode_id="review")
            mention = ResourceContentBlock(
                type="resource_link", name="core.py", uri=(root / "pkg" / "core.py").as_uri()
            )
            done = await conn.prompt(
                session_id=sid, prompt=[text_block("explain what is wrong in"), mention]
            )
            return done.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert "explain what is wrong in `pkg/core.py`" in user_texts(openai_server.requests[0])
    read_one, read_two, _finish = editor.starts()
    assert [call.tool_call_id for call, _ in editor.permissions] == [read_one.tool_call_id]
    modes = [u.current_mode_id for u in editor.updates if isinstance(u, CurrentModeUpdate)]
    assert modes == ["ask"]
    assert editor.status(read_two.tool_call_id) == "completed"


def test_without_a_model_the_demo_model_plays_and_says_so(tmp_path):
    root = workspace(tmp_path)
    before = snapshot(root)
    editor = Editor("approve")
    editor.hold = asyncio.Event()

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, None) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.wait_for(editor.asked.wait(), WAIT)
            await conn.cancel(session_id=sid)
            assert editor.hold is not None
            editor.hold.set()
            return (await asyncio.wait_for(turn, WAIT)).stop_reason

    assert asyncio.run(scenario()) == "cancelled"
    assert "demo model" in editor.text()
    assert snapshot(root) == before


def test_client_buffers_compare_as_an_editor_loads_and_refuse_when_nobody_knows(tmp_path):
    """``ClientBuffers`` (acp/fs.py) on a real loop thread, as the agent runs it; the
    coroutine below plays the client's ``fs/read_text_file``."""
    from grinta_jupyter.acp.fs import ClientBuffers

    root = tmp_path.resolve()
    (root / "crlf.py").write_bytes(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")
    (root / "clean.py").write_text("z = 3\n")
    held = {str(root / "crlf.py"): "x = 1\ny = 2\n", str(root / "clean.py"): "z = 3  # typing\n"}
    asked: list[str] = []

    async def read_text(path: str) -> str:
        asked.append(path)
        if path not in held:
            raise RequestError.resource_not_found(path)
        return held[path]

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        buffers = ClientBuffers(read_text, root, loop, timeout=WAIT)
        # Line endings and a byte order mark are not changes; typing is. A new file is not asked.
        assert buffers.unsaved(["crlf.py", "clean.py", "new.py"]) == ["clean.py"]
        assert asked == [str(root / "crlf.py"), str(root / "clean.py")]
        (root / "unknown.py").write_text("")
        with pytest.raises(RequestError):  # the client cannot say: the runtime refuses the write
            buffers.unsaved(["unknown.py"])

        async def on_the_loop() -> None:
            buffers.unsaved(["clean.py"])

        with pytest.raises(RuntimeError, match="cannot arrive"):
            asyncio.run_coroutine_threadsafe(on_the_loop(), loop).result(WAIT)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()


def test_a_missing_key_is_said_in_the_chat_with_the_fix(tmp_path):
    root = workspace(tmp_path)
    editor = Editor()

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, None, GRINTA_MODEL="openai/gpt-4o-mini") as (
            conn,
            _,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            return (await conn.prompt(session_id=sid, prompt=[text_block(TASK)])).stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    assert "OPENAI_API_KEY" in editor.text()
    assert not (root / ".grinta" / "sessions").exists()
