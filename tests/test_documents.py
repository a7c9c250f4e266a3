"""The kernel side of the open-documents comm (grinta_jupyter/jupyter/documents.py), in a real kernel.

No browser: the test client plays the front end, answering the kernel's
``comm_open`` on ``grinta.documents`` by opening a comm of its own on
``grinta.documents.answer`` exactly as labextension/src/documents.ts does
(the browser tests in
tests/browser/test_documents.py drive the real one). The runtime asks from a
worker thread while the kernel's loop runs, so the cells here do the same:
``await asyncio.to_thread(docs.unsaved, ...)``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kernels import running_kernel

TIMEOUT = 60
TARGET = "grinta.documents"
ANSWER_TARGET = "grinta.documents.answer"

# A front end's reply to one question: data to send, or None to stay silent, or
# "close" for a front end without the extension (JupyterLab closes unknown comms).
Reply = Callable[[dict[str, Any]], "dict[str, Any] | str | None"]


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """The Jupyter server's root: a workspace ``ws`` in it, and the notebook hosting the kernel."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("a = 1\n")
    (tmp_path / "ws" / "b.ipynb").write_text("{}\n")
    (tmp_path / "host.ipynb").write_text("{}\n")
    return tmp_path


@pytest.fixture
def kernel(served: Path) -> Iterator[Any]:
    with running_kernel(served, {"JPY_SESSION_NAME": str(served / "host.ipynb")}) as kc:
        run(kc, f"from grinta_jupyter.jupyter.documents import *\nroot = {str(served / 'ws')!r}")
        yield kc


def run(
    kc: Any,
    code: str,
    reply: Reply | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Run ``code``, answering the kernel's questions with ``reply``; return its stdout and
    the messages the kernel sent on the questions' comms and the answers' (reloads, closes),
    each with ``on``: "question" or "answer"."""
    msg = kc.session.msg(
        "execute_request",
        {"code": code, "silent": False, "store_history": True, "user_expressions": {}},
        metadata=metadata or {},
    )
    kc.shell_channel.send(msg)
    out: list[str] = []
    sent: list[dict[str, Any]] = []
    comms: dict[str, str] = {}  # comm id -> "question" | "answer"
    while True:
        message = kc.get_iopub_msg(timeout=TIMEOUT)
        kind, content = message["msg_type"], message["content"]
        if kind == "comm_open" and content["target_name"] == TARGET:
            comms[content["comm_id"]] = "question"
            answer = reply(content["data"]) if reply else None
            if answer == "close":
                kc.shell_channel.send(kc.session.msg("comm_close", {"comm_id": content["comm_id"]}))
            elif isinstance(answer, dict):
                own = uuid.uuid4().hex
                comms[own] = "answer"
                data = {"question": content["data"]["question"], **answer}
                opened = {"comm_id": own, "target_name": ANSWER_TARGET, "data": data}
                kc.shell_channel.send(kc.session.msg("comm_open", opened))
        elif kind in ("comm_msg", "comm_close") and content["comm_id"] in comms:
            on = comms[content["comm_id"]]
            sent.append({"type": kind, "on": on, **content.get("data", {})})
        if message["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        if kind == "error":
            raise AssertionError("\n".join(content["traceback"]))
        if kind == "stream":
            out.append(content["text"])
        if kind == "status" and content["execution_state"] == "idle":
            return "".join(out), sent


def answer(root: str | None, *documents: tuple[str, bool], host: str = "host.ipynb") -> Reply:
    """A page with ``documents`` (server-relative path, dirty) open."""
    docs = [{"path": p, "dirty": d} for p, d in documents]
    return lambda _data: {"app": "page-1", "root": root, "host": host, "documents": docs}


def new_documents(timeout: float = 5.0, probe: float = 0.3, linger: float = 0.1) -> str:
    return (
        "docs = kernel_documents(root)\n"
        f"docs.timeout, docs.probe, docs.linger = {timeout}, {probe}, {linger}\n"
        "import asyncio\n"
    )


def unsaved(kc: Any, paths: list[str], reply: Reply | None) -> list[str]:
    out, _ = run(kc, f"print(json.dumps(await asyncio.to_thread(docs.unsaved, {paths!r})))", reply)
    return list(json.loads(out))


def test_open_and_dirty_files_are_unsaved(kernel: Any, served: Path) -> None:
    run(kernel, "import json\n" + new_documents())
    reply = answer(str(served), ("ws/a.py", True), ("ws/b.ipynb", False), ("other.py", True))
    assert unsaved(kernel, ["a.py", "b.ipynb", "c.py"], reply) == ["a.py"]


def test_a_home_relative_root_is_expanded(kernel: Any, served: Path) -> None:
    run(kernel, f"import json, os\nos.environ['HOME'] = {str(served.parent)!r}\n" + new_documents())
    reply = answer(f"~/{served.name}", ("ws/b.ipynb", True))
    assert unsaved(kernel, ["b.ipynb"], reply) == ["b.ipynb"]


def test_without_a_root_the_host_notebook_places_the_paths(kernel: Any) -> None:
    """Notebook 7's page carries no serverRoot: $JPY_SESSION_NAME less the host's own path."""
    run(kernel, "import json\n" + new_documents())
    assert unsaved(kernel, ["a.py"], answer(None, ("ws/a.py", True))) == ["a.py"]
    # A host renamed since the kernel started cannot place anything: nothing counts as open.
    assert unsaved(kernel, ["a.py"], answer(None, ("ws/a.py", True), host="renamed.ipynb")) == []


def test_no_front_end_or_one_without_the_extension_means_nothing_open(kernel: Any) -> None:
    run(kernel, "import json\n" + new_documents(timeout=1.0, probe=0.2))
    assert unsaved(kernel, ["a.py"], None) == []
    assert unsaved(kernel, ["a.py"], None) == [], "the second question only probes"
    assert unsaved(kernel, ["a.py"], lambda _data: "close") == []


def test_asked_on_the_loop_thread_it_answers_at_once(kernel: Any, served: Path) -> None:
    """There the front end's answer could never arrive while it waits: nothing is open."""
    run(kernel, "import json\n" + new_documents())
    out, _ = run(kernel, "print(json.dumps(docs.unsaved(['a.py'])))", answer(str(served)))
    assert json.loads(out) == []


def test_changed_reloads_the_open_documents_by_their_front_end_paths(
    kernel: Any, served: Path
) -> None:
    run(kernel, new_documents())
    reply = answer(str(served), ("ws/a.py", False), ("ws/b.ipynb", True), ("x.py", False))
    code = "await asyncio.to_thread(docs.changed, ['a.py', 'b.ipynb', 'new.py'])\nawait asyncio.sleep(0.5)"
    _, sent = run(kernel, code, reply)
    # Both are named, on the page's own comm; the page itself skips a document with unsaved
    # changes. Then the page's comm is closed, and the question's.
    assert sent == [
        {
            "type": "comm_msg",
            "on": "answer",
            "request": "reload",
            "paths": ["ws/a.py", "ws/b.ipynb"],
        },
        {"type": "comm_close", "on": "answer"},
        {"type": "comm_close", "on": "question"},
    ]


def test_changed_sends_nothing_when_nothing_written_is_open(kernel: Any, served: Path) -> None:
    run(kernel, new_documents())
    code = "await asyncio.to_thread(docs.changed, ['a.py'])\nawait asyncio.sleep(0.5)"
    _, sent = run(kernel, code, answer(str(served), ("x.py", False)))
    assert sent == [
        {"type": "comm_close", "on": "answer"},
        {"type": "comm_close", "on": "question"},
    ]


def test_host_cell_names_the_notebook_and_the_running_cell(kernel: Any, served: Path) -> None:
    code = "h = host_cell(); print(h.notebook, h.cell_id); print(repr(h.code))"
    out, _ = run(kernel, code, metadata={"cellId": "c0ffee"})
    first, second = out.strip().split("\n")
    assert first.split() == [str(served / "host.ipynb"), "c0ffee"]
    assert second == repr(code)  # the cell by its source too: a notebook without ids on disk
    # A task started in that cell still sees it, whatever cell runs later.
    start = "import asyncio\nasync def later():\n    await asyncio.sleep(0.3)\n    return host_cell()\ntask = asyncio.ensure_future(later())"
    run(kernel, start, metadata={"cellId": "session-cell"})
    out, _ = run(kernel, "print((await task).cell_id)", metadata={"cellId": "other"})
    assert out.strip() == "session-cell"


def test_outside_a_kernel_there_are_no_documents(tmp_path: Path) -> None:
    from grinta_jupyter.jupyter.documents import host_cell, kernel_documents, read_answer

    assert kernel_documents(tmp_path) is None
    assert host_cell().cell_id is None
    assert read_answer({"app": "x", "documents": "nope"}, None) is None
    placed = read_answer(
        {"app": "x", "root": str(tmp_path), "documents": [{"path": "/etc/passwd", "dirty": True}]},
        None,
    )
    assert placed is not None and placed.documents == {}, "absolute paths are not a page's"


def test_an_answer_to_no_open_question_is_closed_and_ignored(kernel: Any, served: Path) -> None:
    """A page answering a question the kernel did not ask (or no longer waits for) counts for
    nothing, and its comm is closed at once."""
    run(kernel, "import json\n" + new_documents(timeout=0.5, probe=0.2))
    docs = [{"path": "ws/a.py", "dirty": True}]
    stray_answer = {"question": "no-such", "app": "p", "root": str(served), "documents": docs}
    stray: Reply = lambda _data: stray_answer  # noqa: E731
    out, sent = run(
        kernel, "print(json.dumps(await asyncio.to_thread(docs.unsaved, ['a.py'])))", stray
    )
    assert json.loads(out) == []
    assert {"type": "comm_close", "on": "answer"} in sent
