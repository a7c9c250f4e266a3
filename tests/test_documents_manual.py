"""Open documents while the kernel's loop is busy in a cell (grinta_jupyter/jupyter/documents.py).

``%grinta approve`` in ``--manual`` mode holds the kernel's main thread while a background
loop commits, so the kernel cannot ask its pages which documents they have open: it answers
from what each page pushed before the cell. Real kernels; the test client plays the page as
labextension/src/documents.ts does: it pushes its documents on a comm of its own on
``grinta.documents.answer`` when the kernel opens its watch on ``grinta.documents.watch`` and
whenever they change, answers the kernel's questions on ``grinta.documents``, and records the
reloads the kernel sends on its comms. A push sent before a cell is handled before it: shell
messages are handled in order. tests/browser/test_documents_manual.py drives the real page.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.jupyter.documents import MAX_ANSWERS
from tests.kernels import running_kernel
from tests.openai_server import OpenAIServer, text_reply, tool_call, tool_reply

TIMEOUT = 60
TARGET = "grinta.documents"
ANSWER_TARGET = "grinta.documents.answer"
WATCH_TARGET = "grinta.documents.watch"
FAST_S = 1.0  # a commit in a busy cell decides within this (not the 2 s question timeout)

# A cell holding the kernel's loop while a worker thread asks, as ``%grinta approve`` does
# in manual mode (the session commits on a background loop while the cell waits for it).
BUSY_UNSAVED = """
import threading, time
_result = {}
def _ask():
    started = time.monotonic()
    _result["unsaved"] = docs.unsaved(["a.py"])
    _result["took"] = time.monotonic() - started
_thread = threading.Thread(target=_ask)
with loop_held():  # as a --manual step holds the loop while the session commits
    _thread.start()
    _thread.join()
print(json.dumps(_result))
"""


class Page:
    """A JupyterLab page showing the kernel's notebook, as the extension's plugin behaves."""

    def __init__(self, kc: Any, served: Path, app: str = "page-1", answers: bool = True):
        self.kc, self.served, self.app = kc, served, app
        self.documents: dict[str, bool] = {}  # server-relative path -> dirty
        self.answers = answers  # False: the tab is gone, it answers nothing any more
        self.watched = False
        self.own: set[str] = set()  # comms this page opened
        self.closed: set[str] = set()  # ... that the kernel closed
        self.reloads: list[list[str]] = []
        self.pushes: list[str] = []  # the comm of each push, in order
        self.push_when_asked = False  # True: a page loaded while a question is open

    def data(self) -> dict[str, Any]:
        docs = [{"path": p, "dirty": d} for p, d in self.documents.items()]
        return {"app": self.app, "root": str(self.served), "host": "host.ipynb", "documents": docs}

    def open_comm(self, data: dict[str, Any]) -> str:
        comm_id = uuid.uuid4().hex
        self.own.add(comm_id)
        content = {"comm_id": comm_id, "target_name": ANSWER_TARGET, "data": data}
        self.kc.shell_channel.send(self.kc.session.msg("comm_open", content))
        return comm_id

    def push(self, **documents: bool) -> str:
        """The page's documents changed (or the kernel asked it to push): tell the kernel."""
        self.documents.update({f"ws/{name.replace('_', '.')}": d for name, d in documents.items()})
        comm_id = self.open_comm({"push": True, **self.data()})
        self.pushes.append(comm_id)
        return comm_id

    def handle(self, message: dict[str, Any]) -> None:
        kind, content = message["msg_type"], message["content"]
        if kind == "comm_open" and content["target_name"] == WATCH_TARGET:
            self.watched = True
            self.push()
        elif kind == "comm_open" and content["target_name"] == TARGET and self.push_when_asked:
            self.push_when_asked = False
            self.push()
        elif kind == "comm_open" and content["target_name"] == TARGET and self.answers:
            self.open_comm({"question": content["data"]["question"], **self.data()})
        elif kind == "comm_msg" and content["comm_id"] in self.own:
            if content["data"].get("request") == "reload":
                self.reloads.append(content["data"]["paths"])
        elif kind == "comm_close" and content["comm_id"] in self.own:
            self.closed.add(content["comm_id"])
            last = self.pushes and content["comm_id"] == self.pushes[-1]
            if last and self.answers and self.watched:  # a kernel that listens forgot it:
                self.push()  # being here, it pushes again (documents.ts, onPushClosed)


def run(kc: Any, code: str, *pages: Page, timeout: float = TIMEOUT) -> str:
    """Run ``code`` while ``pages`` play their part; its stdout."""
    msg = kc.session.msg(
        "execute_request",
        {"code": code, "silent": False, "store_history": False, "user_expressions": {}},
    )
    kc.shell_channel.send(msg)
    out: list[str] = []
    while True:
        message = kc.get_iopub_msg(timeout=timeout)
        for page in pages:
            page.handle(message)
        if message["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "error":
            raise AssertionError("\n".join(content["traceback"]))
        if kind == "stream":
            out.append(content["text"])
        if kind == "status" and content["execution_state"] == "idle":
            return "".join(out)


def pump(kc: Any, seconds: float, *pages: Page) -> None:
    """Let the kernel's loop run free for ``seconds``, the pages playing their part."""
    run(kc, f"await asyncio.sleep({seconds})", *pages)


def busy_unsaved(kc: Any, *pages: Page) -> tuple[list[str], float]:
    result = json.loads(run(kc, BUSY_UNSAVED, *pages))
    return result["unsaved"], result["took"]


@pytest.fixture
def served(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("a = 1\n")
    (tmp_path / "host.ipynb").write_text("{}\n")
    return tmp_path


@pytest.fixture
def kernel(served: Path) -> Iterator[Any]:
    with running_kernel(served, {"JPY_SESSION_NAME": str(served / "host.ipynb")}) as kc:
        run(
            kc,
            "import asyncio, json\nfrom grinta_jupyter.jupyter.documents import *\n"
            f"root = {str(served / 'ws')!r}",
        )
        yield kc


def listening(kc: Any, *pages: Page, timeout: float = 2.0, probe: float = 0.3) -> None:
    """A session starts listening (as ``%grinta`` does); the pages see its watch and push."""
    run(
        kc,
        f"docs = kernel_documents(root)\ndocs.timeout, docs.probe, docs.linger = {timeout}, {probe}, 0.2",
        *pages,
    )
    pump(kc, 0.1, *pages)  # the watch is opened once the cell is done


def test_a_push_made_before_a_busy_cell_decides_its_commit_at_once(
    kernel: Any, served: Path
) -> None:
    page = Page(kernel, served)
    listening(kernel, page)
    page.push(a_py=True)  # the user typed in a.py: the page pushes before the cell is run
    unsaved, took = busy_unsaved(kernel, page)
    assert unsaved == ["a.py"]
    assert took < FAST_S, f"a busy loop made the commit wait {took:.1f} s"
    assert page.watched, "the kernel asks the pages to push when it starts listening"

    page.push(a_py=False)  # saved: the next push says so, and the earlier push's comm is closed
    unsaved, took = busy_unsaved(kernel, page)
    assert unsaved == [] and took < FAST_S
    pump(kernel, 0.2, page)
    assert page.pushes[-2] in page.closed and page.pushes[-1] not in page.closed


def test_a_cell_that_holds_the_loop_unannounced_is_found_out_by_waiting(
    kernel: Any, served: Path
) -> None:
    """Any other cell that holds the loop while a commit asks (a long computation while a
    session runs in the background) is found out after ``busy`` seconds, and the pushes
    decide: not "nothing open". A loop merely slow to turn (a loaded machine) is not taken
    for a busy one within a quarter of a second: the answer of the question decides then."""
    page = Page(kernel, served)
    listening(kernel, page)
    run(kernel, "docs.busy = 0.6")
    page.push(a_py=True)
    unheld = BUSY_UNSAVED.replace("with loop_held():", "if True:")
    result = json.loads(run(kernel, unheld, page))
    assert result["unsaved"] == ["a.py"]
    assert 0.5 < result["took"] < 0.6 + FAST_S, result["took"]


def test_a_page_that_never_pushed_means_nothing_open_without_the_full_wait(
    kernel: Any, served: Path
) -> None:
    listening(kernel)
    unsaved, took = busy_unsaved(kernel)
    assert unsaved == [] and took < FAST_S, f"a busy loop made the commit wait {took:.1f} s"


def test_asked_on_the_loop_thread_it_answers_from_the_pushes(kernel: Any, served: Path) -> None:
    """There no question can be answered: the last push decides. Off the loop, with the loop
    free, the question is asked and the page's answer decides, as before pushes existed."""
    page = Page(kernel, served)
    listening(kernel, page)
    page.push(a_py=True)
    assert json.loads(run(kernel, "print(json.dumps(docs.unsaved(['a.py'])))", page)) == ["a.py"]
    page.documents["ws/a.py"] = False  # saved, the push not sent yet: the answer says so
    code = "print(json.dumps(await asyncio.to_thread(docs.unsaved, ['a.py'])))"
    assert json.loads(run(kernel, code, page)) == []


def test_a_write_made_in_a_busy_cell_is_reloaded_once_the_loop_is_free(
    kernel: Any, served: Path
) -> None:
    page = Page(kernel, served)
    listening(kernel, page)
    page.push(a_py=False)
    pump(kernel, 0.1, page)
    code = "import threading\n_t = threading.Thread(target=docs.changed, args=(['a.py'],))\n_t.start(); _t.join()"
    run(kernel, code, page)
    pump(kernel, 0.3, page)
    assert page.reloads == [["ws/a.py"]], "sent on the page's last push comm"


def test_a_push_from_a_page_gone_is_forgotten_once_a_question_goes_unanswered(
    kernel: Any, served: Path
) -> None:
    """A tab closed with unsaved changes refuses the writes made while the loop is busy (the
    kernel cannot know it is gone) until the loop is free to ask: then it is forgotten."""
    page = Page(kernel, served)
    listening(kernel, page, timeout=0.5)
    pushed = page.push(a_py=True)
    page.answers = False  # the tab is closed
    assert busy_unsaved(kernel, page)[0] == ["a.py"]
    pump(kernel, 1.5, page)  # the question is asked now; nobody answers it in time
    assert busy_unsaved(kernel, page)[0] == []
    assert pushed in page.closed


def test_a_page_that_pushed_after_the_question_was_asked_is_not_forgotten(
    kernel: Any, served: Path
) -> None:
    """A page loaded while the question after a busy cell is open never saw it: it is there."""
    page = Page(kernel, served)
    listening(kernel, page, timeout=0.5)
    page.push(a_py=False)
    late = Page(kernel, served, app="loaded-late", answers=False)
    late.documents["ws/a.py"] = True
    late.push_when_asked = True
    assert busy_unsaved(kernel, page, late)[0] == []
    pump(kernel, 1.5, page, late)  # asked now: the late page pushes instead of answering
    assert late.pushes, "the late page pushed while the question was open"
    assert busy_unsaved(kernel, page, late)[0] == ["a.py"]


def test_a_page_still_there_is_kept_by_the_question_asked_after_the_busy_cell(
    kernel: Any, served: Path
) -> None:
    page = Page(kernel, served)
    listening(kernel, page, timeout=0.5)
    page.push(a_py=True)
    assert busy_unsaved(kernel, page)[0] == ["a.py"]
    pump(kernel, 1.5, page)  # the question is asked now, and answered
    assert busy_unsaved(kernel, page)[0] == ["a.py"]


def test_a_page_connecting_later_learns_from_comm_info_that_the_kernel_listens(
    kernel: Any,
) -> None:
    def listed() -> dict[str, Any]:
        reply_id = kernel.comm_info(target_name=ANSWER_TARGET)
        while True:
            reply = kernel.get_shell_msg(timeout=TIMEOUT)
            if reply["parent_header"].get("msg_id") == reply_id:
                comms: dict[str, Any] = reply["content"]["comms"]
                return comms

    assert listed() == {}
    listening(kernel)
    comms = listed()
    assert comms and all(c["target_name"] == ANSWER_TARGET for c in comms.values())


def test_pushes_are_bounded_and_malformed_ones_ignored(kernel: Any, served: Path) -> None:
    pages = [Page(kernel, served, app=f"p{n}") for n in range(MAX_ANSWERS)]
    listening(kernel, *pages)
    extra = Page(kernel, served, app="one-too-many")
    refused = extra.push(a_py=True)
    junk = [
        {"push": True, "app": 5, "root": str(served), "documents": []},
        {"push": True, "app": "x", "root": "relative", "documents": []},
        {"push": True, "app": "y", "root": str(served), "documents": "ws/a.py"},
        {"push": "yes", "app": "z", "root": str(served), "documents": []},
    ]
    junk_comms = [extra.open_comm(j) for j in junk]
    assert busy_unsaved(kernel, extra, *pages)[0] == [], "a page beyond the bound is not kept"
    pump(kernel, 0.2, extra)
    assert refused in extra.closed and set(junk_comms) <= extra.closed
    pages[3].push(a_py=True)  # a page kept updates its own
    assert busy_unsaved(kernel, *pages)[0] == ["a.py"]


# -- a real --manual session -----------------------------------------------------------------


@pytest.fixture
def model() -> Iterator[OpenAIServer]:
    with OpenAIServer() as started:
        yield started


@pytest.fixture
def grinta_kernel(served: Path, model: OpenAIServer) -> Iterator[Any]:
    env = {
        "JPY_SESSION_NAME": str(served / "host.ipynb"),
        "GRINTA_MODEL": "openai/test-model",
        "GRINTA_API_KEY": "sk-local",
        "GRINTA_API_BASE": model.url,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    with running_kernel(served, env) as kc:
        run(kc, "import asyncio, grinta_jupyter\n%load_ext grinta_jupyter")
        yield kc


def manual_session(kc: Any, served: Path, model: OpenAIServer, page: Page) -> None:
    """``%grinta --manual`` proposes an edit of a.py; the page has a.py open."""
    edit = {"path": "a.py", "old_string": "a = 1", "new_string": "a = 2"}
    model.queue(tool_reply(tool_call("replace_string", edit)), text_reply("done"))
    run(kc, f"%grinta --manual --root {served / 'ws'} set a to 2", page)
    pump(kc, 0.2, page)  # the session's start asks the pages to push: this one pushes
    run(kc, "%grinta step", page)
    run(kc, "session = grinta_jupyter.current()", page)


def test_manual_approve_refuses_a_write_to_a_document_with_unsaved_changes(
    grinta_kernel: Any, served: Path, model: OpenAIServer
) -> None:
    before = (served / "ws" / "a.py").read_bytes()
    page = Page(grinta_kernel, served)
    page.documents["ws/a.py"] = False
    manual_session(grinta_kernel, served, model, page)
    page.push(a_py=True)  # the user types in a.py, then approves
    started = time.monotonic()
    run(grinta_kernel, "%grinta approve", page)
    took = time.monotonic() - started
    assert (served / "ws" / "a.py").read_bytes() == before, "the unsaved work was overwritten"
    said = "o = session.steps[0].observation\nprint(o.error.code if o.error else 'written')"
    assert run(grinta_kernel, said, page).strip() == "DOCUMENT_UNSAVED"
    assert took < 10, f"approve took {took:.1f} s"
    assert page.watched and len(page.pushes) == 2, "pushed when the session started, and edited"


def test_manual_approve_writes_a_saved_document_and_reloads_it_after_the_cell(
    grinta_kernel: Any, served: Path, model: OpenAIServer
) -> None:
    page = Page(grinta_kernel, served)
    page.documents["ws/a.py"] = False
    manual_session(grinta_kernel, served, model, page)
    run(grinta_kernel, "%grinta approve", page)
    assert run(grinta_kernel, "print(session.steps[0].observation.ok)", page).strip() == "True"
    assert (served / "ws" / "a.py").read_text() == "a = 2\n"
    pump(grinta_kernel, 0.3, page)
    assert ["ws/a.py"] in page.reloads
