"""The saved trace's box, kernel side (grinta_jupyter/jupyter/sessionlink.py), in real kernels.

The test plays the page: it opens a comm on ``grinta.session`` as the labextension does
(labextension/src/sessionLink.ts) and sends what its box sends. The model is real litellm
talking to the local OpenAI-compatible server (tests/openai_server.py).

- The kernel tells every linked page which session is current and whether it has ended,
  at once and on every change.
- While a proposal waits, nothing the box can send decides it: ``continue`` is refused
  (the session is still working), any other request is refused, a message that is not
  a request is not even answered; the file stays as it was.
- Once the session has ended, ``continue`` gives it its next task by ``%grinta continue``'s
  path: the panel is displayed again, parented by the box's message (the page puts it in
  the card's output), the new task's steps follow, its file changes on disk, and the
  display ends as the trace alone (no widget view), which is what the page saves.
- A session that is not current (another one started) takes nothing; a kernel without
  the extension closes the link; links are bounded.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.jupyter.sessionlink import MAX_LINKS, TARGET
from tests.kernels import TIMEOUT, running_kernel
from tests.openai_server import OpenAIServer, tool_call, tool_reply

SESSION_MIME = "application/vnd.grinta.session+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def model_env(server: OpenAIServer) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "GRINTA_MODEL": "openai/test-model",
        "GRINTA_API_BASE": server.url,
        "GRINTA_API_KEY": "sk-local",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def edit(call_id: str, path: str, old: str, new: str) -> Any:
    args = {"path": path, "old_string": old, "new_string": new}
    return tool_reply(tool_call("replace_string", args, call_id))


def finishes(prefix: str) -> list[Any]:
    # The finish guard sends back the first two finishes after an edit with no test run.
    return [tool_reply(tool_call("finish", {"summary": "done"}, f"{prefix}{i}")) for i in range(3)]


class Page:
    """A front end on a kernel client: every iopub message is kept, in order, so what the
    kernel sends on a comm while a cell runs (or after it) is never dropped."""

    def __init__(self, kc: Any):
        self.kc = kc
        self.seen: list[dict[str, Any]] = []

    def pump(self, done: Any, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out; last messages: " + _tail(self.seen))
            try:
                self.seen.append(self.kc.get_iopub_msg(timeout=min(left, 0.5)))
            except Exception:  # queue.Empty: nothing yet
                continue

    def execute(self, code: str) -> str:
        request = self.kc.session.msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        self.kc.shell_channel.send(request)
        mine = request["header"]["msg_id"]
        self.pump(lambda: any(_idle(m, mine) for m in self.seen))
        out = [m for m in self.seen if m["parent_header"].get("msg_id") == mine]
        errors = [m for m in out if m["msg_type"] == "error"]
        assert not errors, "\n".join(errors[0]["content"]["traceback"])
        return "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")

    def wait_for(self, expression: str) -> None:
        """Until ``expression`` is true in the kernel (each check awaits: the session moves)."""
        deadline = time.monotonic() + TIMEOUT
        check = f"import asyncio; await asyncio.sleep(0.2); print(bool({expression}))"
        while self.execute(check).strip() != "True":
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"

    def open_link(self) -> str:
        comm_id = uuid.uuid4().hex
        content = {"comm_id": comm_id, "target_name": TARGET, "data": {}}
        self.kc.shell_channel.send(self.kc.session.msg("comm_open", content))
        return comm_id

    def subshell(self) -> str:
        """A kernel subshell (a thread and event loop of its own), as JupyterLab makes one per
        comm target to send comm messages over."""
        self.kc.control_channel.send(self.kc.session.msg("create_subshell_request", {}))
        return str(self.kc.get_control_msg(timeout=TIMEOUT)["content"]["subshell_id"])

    def send(self, comm_id: str, data: dict[str, Any], subshell: str | None = None) -> str:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        if subshell is not None:
            msg["header"]["subshell_id"] = subshell
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def on_link(self, comm_id: str) -> list[dict[str, Any]]:
        """What the kernel sent on the link: each comm_msg's data."""
        return [
            m["content"]["data"]
            for m in self.seen
            if m["msg_type"] == "comm_msg" and m["content"].get("comm_id") == comm_id
        ]

    def closed(self, comm_id: str) -> bool:
        return any(
            m["msg_type"] == "comm_close" and m["content"].get("comm_id") == comm_id
            for m in self.seen
        )

    def currents(self, comm_id: str) -> list[Any]:
        return [d["current"] for d in self.on_link(comm_id) if "current" in d]

    def answer(self, comm_id: str, ask: int) -> dict[str, Any]:
        def found() -> list[dict[str, Any]]:
            return [d for d in self.on_link(comm_id) if d.get("answer") == ask]

        self.pump(lambda: bool(found()))
        (answer,) = found()
        return answer

    def replies_to(self, msg_id: str) -> list[dict[str, Any]]:
        return [m for m in self.seen if m["parent_header"].get("msg_id") == msg_id]


def _idle(msg: dict[str, Any], parent: str) -> bool:
    return (
        msg["msg_type"] == "status"
        and msg["content"]["execution_state"] == "idle"
        and msg["parent_header"].get("msg_id") == parent
    )


def _tail(seen: list[dict[str, Any]]) -> str:
    return json.dumps([(m["msg_type"], m["content"]) for m in seen[-5:]], default=str)[:2000]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / "b.py").write_text("y = 2\n")
    return root


def test_the_saved_box_gives_an_ended_session_its_next_task_and_never_decides(
    tmp_path: Path, ws: Path
) -> None:
    server = OpenAIServer()
    server.queue(
        edit("c1", "a.py", "x = 1", "x = 2"),
        *finishes("f1-"),
        edit("c2", "b.py", "y = 2", "y = 3"),
        *finishes("f2-"),
    )
    with server, running_kernel(tmp_path, model_env(server)) as kc:
        page = Page(kc)
        page.execute("import json, grinta_jupyter\n%load_ext grinta_jupyter")
        link, other = page.open_link(), page.open_link()
        page.pump(lambda: page.currents(link) == [None] and page.currents(other) == [None])

        page.execute(f"%grinta --root {ws} change x to 2 in a.py")
        page.execute("session = grinta_jupyter.current()")
        sid = page.execute("print(session.id)").strip()
        running = {"session": sid, "state": "running"}
        page.pump(lambda: page.currents(link) == [None, running])
        assert page.currents(other) == [None, running], "every linked page is told"
        page.wait_for("session.waiting")

        # Nothing the box sends decides the waiting proposal.
        refused = page.send(link, {"request": "continue", "session": sid, "task": "y", "ask": 1})
        assert "still working on its task" in page.answer(link, 1)["message"]
        assert page.answer(link, 1)["ok"] is False
        page.send(link, {"request": "approve", "session": sid, "ask": 2})
        assert page.answer(link, 2) == {
            "answer": 2,
            "ok": False,
            "message": "the box only gives an ended session its next task",
        }
        not_a_request = page.send(link, {"event": "approve"})
        page.send(link, {"request": "continue", "session": sid, "task": "  ", "ask": 3})
        assert page.answer(link, 3)["ok"] is False
        assert not [d for d in page.on_link(link) if "answer" in d and d["answer"] not in (1, 2, 3)]
        assert not any(m["msg_type"] == "display_data" for m in page.replies_to(refused))
        assert not page.replies_to(not_a_request) or all(
            m["msg_type"] == "status" for m in page.replies_to(not_a_request)
        )
        assert page.execute("print(session.waiting, len(session.tasks))").split() == ["True", "1"]
        assert (ws / "a.py").read_text() == "x = 1\n"

        page.execute("session.approve()")
        page.wait_for("session.done")
        ended = {"session": sid, "state": "ended"}
        page.pump(lambda: page.currents(link)[-1] == ended)
        assert (ws / "a.py").read_text() == "x = 2\n"

        # Not this kernel's session: refused, nothing changes.
        page.send(link, {"request": "continue", "session": "nope", "task": "t", "ask": 4})
        assert "not the current one" in page.answer(link, 4)["message"]

        # The ended session takes its next task from the box, sent over a subshell as
        # JupyterLab may send it: the session is driven on the kernel's own loop all the same.
        task = {"request": "continue", "session": sid, "task": "change y to 3 in b.py", "ask": 5}
        given = page.send(link, task, subshell=page.subshell())
        assert page.answer(link, 5) == {"answer": 5, "ok": True, "message": "given"}
        (shown,) = [m for m in page.replies_to(given) if m["msg_type"] == "display_data"]
        data = shown["content"]["data"]
        assert WIDGET_MIME in data, "the panel, shown again for the page to put in the card"
        assert data[SESSION_MIME]["session"] == sid and data[SESSION_MIME]["tasks"] == [
            "change x to 2 in a.py",
            "change y to 3 in b.py",
        ]
        display_id = shown["content"]["transient"]["display_id"]
        page.pump(lambda: page.currents(link)[-1] == running)

        follows_here = (
            "from grinta_jupyter.jupyter.controller import current_view\n"
            "import asyncio\n"
            "print(current_view().task.get_loop() is asyncio.get_running_loop())"
        )
        assert page.execute(follows_here).strip() == "True"
        page.wait_for("session.waiting")
        step = json.loads(page.execute("print(json.dumps(session.pending.call.arguments))").strip())
        assert json.loads(step)["path"] == "b.py", "the new task's step waits in its panel"
        page.execute("session.approve()")
        page.wait_for("session.done")
        page.pump(lambda: page.currents(link)[-1] == ended)
        assert (ws / "b.py").read_text() == "y = 3\n"
        assert page.execute("print(session.tasks)").strip() == (
            "['change x to 2 in a.py', 'change y to 3 in b.py']"
        )

        # The display ends as the trace alone: what the page saves (traceSync.ts applies it).
        def final() -> list[dict[str, Any]]:
            return [
                m
                for m in page.seen
                if m["msg_type"] == "update_display_data"
                and m["content"]["transient"]["display_id"] == display_id
                and WIDGET_MIME not in m["content"]["data"]
            ]

        page.pump(lambda: bool(final()))
        trace = final()[-1]["content"]["data"][SESSION_MIME]
        assert trace["end_reason"] == "finished"
        assert [m["kind"] for m in trace["marks"]].count("task") == 1
        assert [s["tool"] for s in trace["steps"]][-4:] == ["replace_string"] + ["finish"] * 3
        assert trace["steps"][-4]["status"] == "committed"


def test_only_the_current_session_takes_a_task(tmp_path: Path, ws: Path) -> None:
    server = OpenAIServer()
    server.queue(*finishes("a-"), *finishes("b-"))
    with server, running_kernel(tmp_path, model_env(server)) as kc:
        page = Page(kc)
        page.execute("import grinta_jupyter\n%load_ext grinta_jupyter")
        link = page.open_link()
        page.execute(f"%grinta --root {ws} look around")
        first = page.execute("s1 = grinta_jupyter.current(); print(s1.id)").strip()
        page.wait_for("s1.done")
        page.execute(f"%grinta --root {ws} look again")
        second = page.execute("s2 = grinta_jupyter.current(); print(s2.id)").strip()
        page.wait_for("s2.done")
        page.pump(lambda: page.currents(link)[-1] == {"session": second, "state": "ended"})
        assert {"session": first, "state": "ended"} in page.currents(link)

        page.send(link, {"request": "continue", "session": first, "task": "more", "ask": 1})
        assert page.answer(link, 1)["ok"] is False
        assert page.execute("print(len(s1.tasks), len(s2.tasks))").split() == ["1", "1"]


def test_a_kernel_without_the_extension_closes_the_link_and_links_are_bounded(
    tmp_path: Path,
) -> None:
    with running_kernel(tmp_path) as kc:
        page = Page(kc)
        early = page.open_link()
        page.pump(lambda: page.closed(early))
        assert page.on_link(early) == []

        page.execute("%load_ext grinta_jupyter")
        links = [page.open_link() for _ in range(MAX_LINKS + 1)]
        page.pump(lambda: all(page.currents(link) == [None] for link in links))
        page.pump(lambda: page.closed(links[0]))
        assert not any(page.closed(link) for link in links[1:])
        assert (
            page.execute(
                "import comm; print('grinta.session' in comm.get_comm_manager().targets)"
            ).strip()
            == "True"
        )


def test_a_task_from_another_thread_is_given_on_the_sessions_loop_or_not_at_all(
    tmp_path: Path, ws: Path
) -> None:
    """A comm message may arrive on a kernel subshell's thread (JupyterLab sends comms over
    subshells); the controller does its work on the session's own loop, and when a cell holds
    that loop too long, gives up and says so: the work then never runs."""
    server = OpenAIServer()
    server.queue(*finishes("a-"))
    with server, running_kernel(tmp_path, model_env(server)) as kc:
        page = Page(kc)
        page.execute("import grinta_jupyter\n%load_ext grinta_jupyter")
        page.execute(f"%grinta --root {ws} look around")
        page.execute(
            "import threading\n"
            "from grinta_jupyter.jupyter import controller\n"
            "view, out, ran, errors = controller.current_view(), {}, [], []\n"
            "def ask():\n"
            "    out['thread'] = view.on_own_loop(lambda: threading.current_thread().name)\n"
            "threading.Thread(target=ask).start()"
        )
        page.wait_for("'thread' in out")
        assert page.execute("print(out['thread'])").strip() == "MainThread"

        held = page.execute(
            "controller.LOOP_WAIT_S = 0.3\n"
            "def asks():\n"
            "    try:\n"
            "        view.on_own_loop(lambda: ran.append('ran'))\n"
            "    except RuntimeError as exc:\n"
            "        errors.append(str(exc))\n"
            "t = threading.Thread(target=asks)\n"
            "t.start(); t.join()  # this cell holds the loop meanwhile\n"
            "print(errors == [controller.BUSY_HINT], ran)"
        )
        assert held.strip() == "True []"
        page.execute("import asyncio; await asyncio.sleep(0.3)")
        assert page.execute("print(ran)").strip() == "[]", "given up: it never runs"
