"""Attacks on today's changes: pushed open documents, the ACP agent's joined text, the persona's
settled buttons.

Real parts only. Open documents (grinta_jupyter/jupyter/documents.py): real kernels, the test
client playing the JupyterLab page over real comms as tests/test_documents_manual.py does (its
helpers reused). The ACP agent (grinta_jupyter/acp/agent.py): the real ``grinta acp``
subprocess driven by the ACP SDK's client (tests/test_acp.py), with a model server that paces
its stream as a real provider does (a few lines of HTTP below: tests/openai_server.py sends its
chunks back to back). The persona (grinta_jupyter/jupyter_ai/persona.py): Jupyter AI's persona
manager on a real chat document (tests/test_jupyter_ai_attacks.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import AgentMessageChunk, ToolCallStart

from grinta_jupyter.jupyter.documents import BEACON, MAX_DOCUMENTS
from tests.openai_server import tool_call, tool_reply
from tests.test_acp import TASK, WAIT, Editor, grinta_acp, workspace
from tests.test_documents_manual import (
    ANSWER_TARGET,
    FAST_S,
    TIMEOUT,
    Page,
    busy_unsaved,
    kernel,
    listening,
    pump,
    run,
    served,
)

__all__ = ["kernel", "served"]  # fixtures, reused

# -- open documents pushed by the pages --------------------------------------------------------

# As a --manual step: the cell holds the kernel's loop and says so (``loop_held``).
BUSY_CHANGED = (
    "import threading\n_t = threading.Thread(target=docs.changed, args=({paths!r},))\n"
    "with loop_held():\n    _t.start(); _t.join()"
)


class RecordingPage(Page):
    """A page that also notes on which of its comms each reload came."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reloaded_on: list[str] = []

    def handle(self, message: dict[str, Any]) -> None:
        content = message["content"]
        mine = message["msg_type"] == "comm_msg" and content["comm_id"] in self.own
        if mine and content["data"].get("request") == "reload":
            self.reloaded_on.append(content["comm_id"])
        super().handle(message)


def kernel_comms(kc: Any) -> int:
    """The comms the kernel keeps open now."""
    code = "import comm\nprint(len(comm.get_comm_manager().comms))"
    return int(run(kc, code).strip())


def comm_info(kc: Any) -> dict[str, Any]:
    reply_id = kc.comm_info(target_name=ANSWER_TARGET)
    while True:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        if reply["parent_header"].get("msg_id") == reply_id:
            comms: dict[str, Any] = reply["content"]["comms"]
            return comms


def test_forged_entries_in_a_push_are_skipped_and_its_dirty_file_still_counts(
    kernel: Any, served: Path
) -> None:
    """Attack: a push whose list mixes junk (NUL, a lone surrogate, a path too long, wrong
    types, a path escaping the root, an absolute path) with the one dirty document. The junk
    is skipped, the dirty document still refuses the write, no exception reaches the cell."""
    page = Page(kernel, served)
    listening(kernel, page)
    junk: list[Any] = [
        {"path": "ws/a\0.py", "dirty": True},
        {"path": "ws/\ud800.py", "dirty": True},
        {"path": "ws/" + "x" * 5000, "dirty": True},
        {"path": ["ws/a.py"], "dirty": True},
        {"path": 7, "dirty": True},
        None,
        "ws/a.py",
        {"path": "../../../../etc/passwd", "dirty": True},
        {"path": str(served / "ws" / "a.py"), "dirty": True},  # absolute: not a server path
    ]
    documents = [*junk, {"path": "ws/a.py", "dirty": 1}]
    packer = kernel.session.pack  # as a browser's JSON.stringify: a lone surrogate escaped
    kernel.session.pack = lambda obj: json.dumps(obj, default=str, ensure_ascii=True).encode()
    try:
        page.open_comm({**page.data(), "push": True, "documents": documents})
    finally:
        kernel.session.pack = packer
    unsaved, took = busy_unsaved(kernel, page)
    assert unsaved == ["a.py"] and took < FAST_S


def test_a_push_that_is_not_a_push_keeps_nothing(kernel: Any, served: Path) -> None:
    """Attack: ``push`` as the string "true", as 1, and a push naming a question nobody asked:
    none is kept (each comm closed), so none can refuse a write."""
    page = Page(kernel, served)
    listening(kernel, page)
    dirty = {**page.data(), "documents": [{"path": "ws/a.py", "dirty": True}]}
    forged = [
        page.open_comm({**dirty, "push": "true"}),
        page.open_comm({**dirty, "push": 1}),
        page.open_comm({**dirty, "push": True, "question": "nobody-asked-this"}),
        page.open_comm({**dirty, "push": True, "question": 5}),
    ]
    assert busy_unsaved(kernel, page)[0] == []
    pump(kernel, 0.2, page)
    assert set(forged) <= page.closed


def test_two_pages_one_clean_one_dirty_for_one_file_refuse_the_write(
    kernel: Any, served: Path
) -> None:
    """Attack: two browser windows show a.py; the one pushing last has it saved. The other's
    unsaved edits must still refuse the write: pages are kept apart, not overwritten."""
    dirty = Page(kernel, served, app="window-1")
    clean = Page(kernel, served, app="window-2")
    listening(kernel, dirty, clean)
    dirty.push(a_py=True)
    clean.push(a_py=False)
    assert busy_unsaved(kernel, dirty, clean)[0] == ["a.py"]


def test_a_busy_write_is_reloaded_by_the_page_that_has_it_open_only_on_its_last_push(
    kernel: Any, served: Path
) -> None:
    """Attack: two pages push; one has a.py open (pushing twice), the other b.py. A write of
    a.py in a busy cell is reloaded once, on the comm of the first page's last push; the
    other page is told nothing."""
    (served / "ws" / "b.py").write_text("b = 1\n")
    a_page = RecordingPage(kernel, served, app="has-a")
    b_page = RecordingPage(kernel, served, app="has-b")
    listening(kernel, a_page, b_page)
    a_page.push(a_py=False)
    a_page.push(a_py=False)
    b_page.push(b_py=False)
    pump(kernel, 0.1, a_page, b_page)
    run(kernel, BUSY_CHANGED.format(paths=["a.py"]), a_page, b_page)
    pump(kernel, 0.3, a_page, b_page)
    assert a_page.reloads == [["ws/a.py"]] and b_page.reloads == []
    assert a_page.reloaded_on == [a_page.pushes[-1]]


def test_pushes_and_busy_questions_leave_no_comm_open_behind(kernel: Any, served: Path) -> None:
    """Attack: a page pushes 200 times, then 20 commits are decided in one busy cell (20 late
    questions asked after it). Once the questions end, the kernel keeps the beacon and the
    page's last push only: no comm per push or per question piles up."""
    page = Page(kernel, served)
    listening(kernel, page, timeout=0.3)
    for n in range(200):
        page.push(a_py=bool(n % 2))
    code = (
        "import threading\n"
        "_ts = [threading.Thread(target=docs.unsaved, args=(['a.py'],)) for _ in range(20)]\n"
        "with loop_held():\n    [t.start() for t in _ts]; [t.join() for t in _ts]"
    )
    run(kernel, code, page)
    pump(kernel, 1.5, page)  # the late questions are asked, answered and ended
    assert kernel_comms(kernel) <= 2, "the beacon and the last push's comm"
    assert (
        run(
            kernel,
            "from grinta_jupyter.jupyter import documents as _d\nprint(len(_d._QUESTIONS.open))",
        ).strip()
        == "0"
    )
    assert page.pushes[-1] not in page.closed and set(page.pushes[:-1]) <= page.closed


def test_many_threads_deciding_at_once_in_a_busy_cell_all_see_the_dirty_file(
    kernel: Any, served: Path
) -> None:
    """Attack: the store of pushes is read from 16 worker threads at once while the loop is
    busy: each decision refuses a.py, fast, and none raises."""
    page = Page(kernel, served)
    listening(kernel, page)
    page.push(a_py=True)
    code = (
        "import threading, time\n_r = []\n"
        "def _ask():\n    _r.append(docs.unsaved(['a.py']))\n"
        "_ts = [threading.Thread(target=_ask) for _ in range(16)]\n"
        "_s = time.monotonic()\n"
        "with loop_held():\n    [t.start() for t in _ts]; [t.join() for t in _ts]\n"
        "print(json.dumps({'r': _r, 'took': time.monotonic() - _s}))"
    )
    result = json.loads(run(kernel, code, page))
    assert result["r"] == [["a.py"]] * 16
    assert result["took"] < 2 * FAST_S


def test_a_huge_push_of_dirty_documents_is_decided_within_its_bound(
    kernel: Any, served: Path
) -> None:
    """Attack: a page pushes MAX_DOCUMENTS + 5,000 dirty entries (none a real file) and a.py
    first: a busy commit resolves at most MAX_DOCUMENTS paths, fast, and still refuses a.py."""
    page = Page(kernel, served)
    listening(kernel, page)
    entries = [{"path": "ws/a.py", "dirty": True}]
    entries += [{"path": f"ws/no/such/{n}.py", "dirty": True} for n in range(MAX_DOCUMENTS + 5_000)]
    page.open_comm({**page.data(), "push": True, "documents": entries})
    unsaved, took = busy_unsaved(kernel, page)
    assert unsaved == ["a.py"] and took < 3 * FAST_S


def test_a_page_closing_the_beacon_does_not_silence_the_kernel_for_long(
    kernel: Any, served: Path
) -> None:
    """Attack: a hostile page sends comm_close for the beacon, then opens a junk comm with the
    beacon's id. comm_info must list the beacon again once the kernel next asks (a page that
    connects later would otherwise never push)."""
    page = Page(kernel, served)
    listening(kernel, page)
    assert BEACON in comm_info(kernel)
    kernel.shell_channel.send(kernel.session.msg("comm_close", {"comm_id": BEACON, "data": {}}))
    content = {"comm_id": BEACON, "target_name": ANSWER_TARGET, "data": {"junk": True}}
    kernel.shell_channel.send(kernel.session.msg("comm_open", content))
    pump(kernel, 0.1, page)
    run(kernel, "await asyncio.to_thread(docs.unsaved, ['a.py'])", page)
    assert BEACON in comm_info(kernel)
    page.push(a_py=True)  # the page's pushes are still taken
    assert busy_unsaved(kernel, page)[0] == ["a.py"]


def test_a_kernel_without_a_session_keeps_no_push(kernel: Any, served: Path) -> None:
    """Attack: a page pushes to a kernel where no session listens (no target registered yet):
    the comm is closed, and a session started later is not refused by that stale push."""
    page = Page(kernel, served)
    early = page.push(a_py=True)
    pump(kernel, 0.2, page)
    assert early in page.closed
    assert comm_info(kernel) == {}
    run(kernel, "docs = kernel_documents(root)", page)  # no pump: the page does not push again
    assert busy_unsaved(kernel)[0] == []


def test_a_page_of_another_notebook_on_this_kernel_is_heard(kernel: Any, served: Path) -> None:
    """Attack: a second notebook was switched to this kernel; its page (JupyterLab: it sends
    the server's root) pushes with its own notebook as host. Its dirty file refuses a busy
    write; a push without a root whose host is not this kernel's notebook cannot be placed
    and is closed (Notebook 7 sends no root: see the report)."""
    page = Page(kernel, served, app="other-notebook")
    listening(kernel, page)
    dirty = [{"path": "ws/a.py", "dirty": True}]
    page.open_comm(
        {
            "push": True,
            "app": "other-notebook",
            "root": str(served),
            "host": "other.ipynb",
            "documents": dirty,
        }
    )
    unplaced = page.open_comm(
        {"push": True, "app": "nb7-other", "host": "other.ipynb", "documents": dirty}
    )
    assert busy_unsaved(kernel, page)[0] == ["a.py"]
    pump(kernel, 0.2, page)
    assert unplaced in page.closed


class SlowPage(Page):
    """A page still there but slow to answer (a throttled background tab): it notes each
    question and answers when told; like the extension, it pushes only what changed, and
    again when the kernel closes the comm of its last push (it forgot the page)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: list[str] = []

    def handle(self, message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] == "comm_open" and content["target_name"] == "grinta.documents":
            self.asked.append(content["data"]["question"])
            return
        super().handle(message)

    def answer_late(self) -> None:
        for question in self.asked:
            self.open_comm({"question": question, **self.data()})
        self.asked.clear()


def test_a_slow_page_still_there_keeps_its_unsaved_file_refused(kernel: Any, served: Path) -> None:
    page = SlowPage(kernel, served)
    listening(kernel, page, timeout=0.5)
    page.push(a_py=True)
    assert busy_unsaved(kernel, page)[0] == ["a.py"]
    pump(kernel, 1.5, page)  # the question is asked; the throttled tab answers after its end
    page.answer_late()
    pump(kernel, 0.3, page)
    # Nothing changed in the page: like the extension, it does not push again.
    assert busy_unsaved(kernel, page)[0] == ["a.py"], "the unsaved a.py is writable again"


# -- the ACP agent's text, joined -----------------------------------------------------------


class PacedModel:
    """An OpenAI-compatible streaming server whose replies are lists of (delay, delta): each
    delta sent after its delay, as a provider streams while it generates."""

    def __init__(self) -> None:
        self.replies: list[list[tuple[float, dict[str, Any]]]] = []
        self.requests = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                model.requests += 1
                if not model.replies:
                    # Refused at once (a 400 is not retried): an empty stream would be
                    # retried by the model's backoff, seconds of nothing for these tests.
                    body = json.dumps({"error": {"message": "paced: no scripted reply"}})
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body.encode())
                    return
                script = model.replies.pop(0)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for delay, delta in [(0.0, {"role": "assistant", "content": ""}), *script]:
                        time.sleep(delay)
                        finish = delta.pop("finish_reason", None)
                        chunk = {
                            "id": "paced",
                            "object": "chat.completion.chunk",
                            "created": 0,
                            "model": "test",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                        }
                        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def text(self, *pieces: tuple[float, str]) -> list[tuple[float, dict[str, Any]]]:
        return [(delay, {"content": piece}) for delay, piece in pieces]

    def finish(self, summary: str, delay: float = 0.0) -> list[tuple[float, dict[str, Any]]]:
        call = {
            "index": 0,
            "id": "call_finish",
            "type": "function",
            "function": {"name": "finish", "arguments": json.dumps({"summary": summary})},
        }
        return [(delay, {"tool_calls": [call]}), (0.0, {"finish_reason": "tool_calls"})]

    def variables(self) -> dict[str, str]:
        return {
            "GRINTA_MODEL": "openai/test",
            "GRINTA_API_BASE": self.url,
            "GRINTA_API_KEY": "sk-test-key-for-acp",
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def paced() -> Iterator[PacedModel]:
    model = PacedModel()
    try:
        yield model
    finally:
        model.close()


def chunks(editor: Editor) -> list[str]:
    return [u.content.text for u in editor.updates if isinstance(u, AgentMessageChunk)]


def test_text_streamed_before_the_model_pauses_is_shown_during_the_pause(
    paced: PacedModel, tmp_path: Path
) -> None:
    """Attack: the model streams a sentence fast, then thinks 3 s before its tool call (a
    slow provider, or a long tool call's arguments being generated). The editor must show the
    whole sentence within about 50 ms, not only its first piece until the model goes on."""
    root = workspace(tmp_path)
    sentence = "Let me look at pkg/core.py before I change anything."
    pieces = [sentence[i : i + 4] for i in range(0, len(sentence), 4)]
    paced.replies.append(
        paced.text(*[(0.002, p) for p in pieces]) + paced.finish("Looked.", delay=3.0)
    )
    editor = Editor()

    async def scenario() -> tuple[str, str]:
        async with grinta_acp(editor, tmp_path, None, **paced.variables()) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            deadline = time.monotonic() + WAIT
            while not editor.text() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await asyncio.sleep(1.0)  # the model still thinks: 2 s to go
            during = editor.text()
            reply = await asyncio.wait_for(turn, WAIT)
            return during, reply.stop_reason

    during, stop = asyncio.run(scenario())
    assert stop == "end_turn"
    assert sentence in during, f"shown during the pause: {during!r}"
    assert editor.text().count(sentence) == 1


def test_a_secret_the_stream_splits_across_two_sends_is_redacted(
    paced: PacedModel, tmp_path: Path
) -> None:
    """Attack: the model echoes a secret of the agent's environment (16 characters: too short
    for the partial rule) in 3-character pieces 120 ms apart, as a slow provider streams: each
    piece is due to be sent alone. Each send redacted alone shows a piece; the editor joins
    them into the whole secret. The word a send ends inside must wait for the rest of it."""
    root = workspace(tmp_path)
    secret = "Zq8vP2xW9kL4mN7r"
    text = f"The token is {secret} and that is all."
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    paced.replies.append(paced.text(*[(0.12, p) for p in pieces]) + paced.finish("Said."))
    editor = Editor()

    async def scenario() -> str:
        variables = {**paced.variables(), "MY_SERVICE_TOKEN": secret}
        async with grinta_acp(editor, tmp_path, None, **variables) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            reply = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block(TASK)]), WAIT
            )
            return reply.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    shown = editor.text()
    assert len(chunks(editor)) > 1, "the pacing made several sends"
    assert secret not in shown and "[REDACTED]" in shown, shown
    assert "The token is [REDACTED] and that is all." in shown


def test_text_before_a_tool_call_and_after_it_keep_their_order(
    paced: PacedModel, tmp_path: Path
) -> None:
    """Attack: text, then at once a tool call (held text and a tool call in one window), then
    text of the next reply. The editor shows the first text, the tool call, the next text."""
    root = workspace(tmp_path)
    read = {
        "index": 0,
        "id": "call_read",
        "type": "function",
        "function": {"name": "read", "arguments": json.dumps({"path": "pkg/core.py"})},
    }
    paced.replies.append(
        paced.text((0.0, "First "), (0.0, "I read."))
        + [(0.0, {"tool_calls": [read]}), (0.0, {"finish_reason": "tool_calls"})]
    )
    paced.replies.append(paced.text((0.0, "Then "), (0.0, "I finish.")) + paced.finish("Done."))
    editor = Editor()

    async def scenario() -> str:
        async with grinta_acp(editor, tmp_path, None, **paced.variables()) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            reply = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block(TASK)]), WAIT
            )
            return reply.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    order = []
    for u in editor.updates:
        if isinstance(u, AgentMessageChunk):
            order.append(("text", u.content.text))
        elif isinstance(u, ToolCallStart):
            order.append(("tool", u.title))
    text_before = "".join(
        t for kind, t in order[: [k for k, _ in order].index("tool")] if kind == "text"
    )
    assert text_before == "First I read."
    assert "Then I finish." in "".join(t for kind, t in order if kind == "text")
    after = order[[k for k, _ in order].index("tool") :]
    assert "".join(t for kind, t in after if kind == "text").startswith("Then I finish.")


def test_a_cancel_mid_stream_shows_the_held_text_once_before_the_turn_ends(
    paced: PacedModel, tmp_path: Path
) -> None:
    """Attack: the user cancels while the model streams; text held at the cancel is shown
    before the prompt answers "cancelled", once, and nothing of that turn comes after it,
    not even at the start of the next turn."""
    root = workspace(tmp_path)
    pieces = [(0.001, f"w{n:03d} ") for n in range(200)] + [(5.0, "late ")]
    paced.replies.append(paced.text(*pieces) + paced.finish("never"))
    paced.replies.append(paced.text((0.0, "Second turn.")) + paced.finish("Second."))
    editor = Editor()

    async def scenario() -> tuple[str, int, str]:
        async with grinta_acp(editor, tmp_path, None, **paced.variables()) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            deadline = time.monotonic() + WAIT
            while "w199" not in editor.text() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await conn.cancel(session_id=sid)
            stop = (await asyncio.wait_for(turn, WAIT)).stop_reason
            at_end = len(editor.updates)
            await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("go on")]), WAIT)
            return stop, at_end, editor.text()

    stop, _, shown = asyncio.run(scenario())
    assert stop == "cancelled"
    first = "".join(f"w{n:03d} " for n in range(200))
    assert shown.count(first) == 1 and "late" not in shown
    assert shown.index(first) < shown.index("Second turn.")


# -- the persona's buttons at shutdown ------------------------------------------------------


@pytest.fixture
def ai_project(openai_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As tests/test_jupyter_ai_attacks.py's ``project``: a project in the server's root."""
    pytest.importorskip("jupyter_ai_acp_client", reason="Jupyter AI is not installed")
    from tests.test_acp import CORE

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


def waiting_calls(ychat: Any, sender: str) -> list[dict[str, Any]]:
    """The tool calls still waiting in ``sender``'s messages (junk metadata skipped)."""
    found = []
    for message in ychat.get_messages():
        metadata = message.metadata if isinstance(message.metadata, dict) else {}
        for call in metadata.get("tool_calls") or []:
            if message.sender == sender and call.get("permission_status") == "pending":
                found.append(call)
    return found


def test_a_junk_message_earlier_in_the_chat_does_not_keep_grinta_s_buttons_live(
    openai_server: Any, ai_project: Path
) -> None:
    """Attack: earlier in the shared chat, a collaborator's message carries metadata that is
    not a mapping (a string: any writer of the shared document can put one there), and
    another persona's message has a tool call waiting. The server stops while Grinta's write
    waits: Grinta's buttons are settled all the same, the other persona's are left alone."""
    from jupyterlab_chat.models import NewMessage

    from tests.test_acp import FIX
    from tests.test_jupyter_ai import send, until
    from tests.test_jupyter_ai_attacks import chat

    openai_server.queue(tool_reply(tool_call("replace_string", FIX, id="call_fix")))
    theirs = {"tool_call_id": "theirs", "title": "other", "permission_status": "pending"}

    async def scenario() -> None:
        async with chat(ai_project) as (ychat, persona, manager):
            junk = ychat.add_message(NewMessage(body="look", sender="colleague"))
            other = ychat.add_message(NewMessage(body="asking", sender="other-persona"))
            ychat._ymessages[ychat._indexes_by_id[junk]]["metadata"] = "junk"
            ychat._ymessages[ychat._indexes_by_id[other]]["metadata"] = {"tool_calls": [theirs]}
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            await until(lambda: waiting_calls(ychat, persona.id), "the fix to ask")
            with contextlib.suppress(Exception):  # what the manager does with a raise: not ours
                await asyncio.wait_for(manager.shutdown_personas(), WAIT)
            await asyncio.wait_for(turn, WAIT)
            assert waiting_calls(ychat, persona.id) == [], "Grinta's buttons stay live"
            assert waiting_calls(ychat, "other-persona") == [theirs], "another's call touched"

    asyncio.run(scenario())


def test_a_message_with_a_field_this_server_does_not_know_does_not_keep_buttons_live(
    openai_server: Any, ai_project: Path
) -> None:
    """Attack: a collaborator on a newer jupyterlab-chat (or a hostile writer) adds a field
    this server's ``Message`` does not know to one message of the shared chat, so reading
    the chat's messages raises. The server stops while Grinta's write waits: its buttons
    must still be settled."""
    from jupyterlab_chat.models import NewMessage

    from tests.test_acp import FIX
    from tests.test_jupyter_ai import send, until
    from tests.test_jupyter_ai_attacks import chat

    openai_server.queue(tool_reply(tool_call("replace_string", FIX, id="call_fix")))

    def waiting(ychat: Any, sender: str) -> list[dict[str, Any]]:
        found = []
        for message in ychat._get_messages():  # the raw dicts: get_messages() raises now
            metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
            for call in metadata.get("tool_calls") or []:
                if message.get("sender") == sender and call.get("permission_status") == "pending":
                    found.append(call)
        return found

    async def scenario() -> None:
        async with chat(ai_project) as (ychat, persona, manager):
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            await until(lambda: waiting(ychat, persona.id), "the fix to ask")
            odd = ychat.add_message(NewMessage(body="+1", sender="colleague"))
            ychat._ymessages[ychat._indexes_by_id[odd]]["reactions"] = ["+1"]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(manager.shutdown_personas(), WAIT)
            await asyncio.wait_for(turn, WAIT)
            assert waiting(ychat, persona.id) == [], "Grinta's buttons stay live"

    asyncio.run(scenario())


def test_two_sessions_streaming_at_once_on_one_connection_keep_their_text_apart(
    paced: PacedModel, tmp_path: Path
) -> None:
    """Attack: two sessions of one editor stream at once, each pausing mid-sentence: each
    session's text reaches it whole, once, and none of the other's."""
    root = workspace(tmp_path)
    for letter in "AB":
        words = [(0.004, f"{letter}{n:03d} ") for n in range(60)]
        paced.replies.append(paced.text(*words, (0.3, f"{letter}end.")) + paced.finish("Done."))

    class ByDocument(Editor):
        def __init__(self) -> None:
            super().__init__()
            self.texts: dict[str, list[str]] = {}

        async def session_update(self, session_id, update, **kwargs):  # type: ignore[no-untyped-def]
            if isinstance(update, AgentMessageChunk):
                self.texts.setdefault(session_id, []).append(update.content.text)
            await super().session_update(session_id, update, **kwargs)

    editor = ByDocument()

    async def scenario() -> list[str]:
        async with grinta_acp(editor, tmp_path, None, **paced.variables()) as (conn, _):
            sids = [(await conn.new_session(cwd=str(root))).session_id for _ in range(2)]
            replies = await asyncio.wait_for(
                asyncio.gather(
                    *[conn.prompt(session_id=s, prompt=[text_block(TASK)]) for s in sids]
                ),
                WAIT,
            )
            assert [r.stop_reason for r in replies] == ["end_turn", "end_turn"]
            return sids

    sids = asyncio.run(scenario())
    shown = ["".join(editor.texts[s]) for s in sids]
    letters = {text[0] for text in shown}
    assert letters == {"A", "B"}
    for text in shown:
        mine = text[0]
        other = "B" if mine == "A" else "A"
        expected = "".join(f"{mine}{n:03d} " for n in range(60)) + f"{mine}end."
        assert text.count(expected) == 1 and f"{other}0" not in text, text
