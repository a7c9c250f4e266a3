"""Attacks on the open-documents protocol (runtime/documents.py, jupyter/documents.py, Runtime.commit).

The promises: the runtime never writes a file a front end says is open with unsaved changes; a
slow, hanging, hostile or malformed front end can neither hang a commit beyond its bound nor make
an exception escape nor hide another window's unsaved work. A real kernel runs the runtime; the
test client plays the pages (as tests/test_documents.py does), answering each question on the
``grinta.documents`` comm after a delay (opening a comm of its own on ``grinta.documents.answer``
that names the question), closing the question's comm, or saying something malformed. An answer
still due when a cell ends is sent during the next one, as a page would. The promises under
"what broke" were ``xfail(strict=True)`` until issue 12 fixed them.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel

from grinta_jupyter.jupyter.documents import MAX_DOCUMENTS, MAX_PATH, read_answer

TIMEOUT = 60
TARGET = "grinta.documents"
ANSWER_TARGET = "grinta.documents.answer"

# What a page does when asked: a list of (delay in seconds, answer data | "close").
Page = Callable[[int], list[tuple[float, "dict[str, Any] | str"]]]

# What the pages still have to do, per kernel client: (when, the question's comm, its id, action).
Pending = list[tuple[float, str, str, "dict[str, Any] | str"]]
_pending: dict[int, Pending] = {}
_asked: dict[int, int] = {}  # questions the kernel asked so far, per kernel client


@pytest.fixture
def served(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("a = 1\n")
    (ws / "link.py").symlink_to(ws / "a.py")
    (tmp_path / "outside.py").write_text("o = 1\n")
    return tmp_path


@pytest.fixture
def kernel(served: Path) -> Iterator[Any]:
    env = {"PATH": os.environ["PATH"], "JPY_SESSION_NAME": str(served / "host.ipynb")}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(served), env=env)
    try:
        run(
            kc,
            "import asyncio, json, os\n"
            "from grinta_jupyter import Runtime\n"
            "from grinta_jupyter.jupyter.documents import kernel_documents\n"
            f"root = {str(served / 'ws')!r}\n",
        )
        yield kc
    finally:
        _pending.pop(id(kc), None)
        _asked.pop(id(kc), None)
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc: Any, code: str, *pages: Page) -> str:
    """Run ``code``; every page answers each question the kernel asks meanwhile. Its stdout."""
    msg = kc.session.msg(
        "execute_request",
        {"code": code, "silent": False, "store_history": False, "user_expressions": {}},
    )
    kc.shell_channel.send(msg)
    pending = _pending.setdefault(id(kc), [])
    out: list[str] = []
    deadline = time.monotonic() + TIMEOUT
    while True:
        now = time.monotonic()
        assert now < deadline, "the cell never finished"
        for due, comm_id, question, action in sorted(
            (p for p in pending if p[0] <= now), key=lambda p: p[0]
        ):
            pending.remove((due, comm_id, question, action))
            if isinstance(action, str):  # "close": a page without the extension
                kc.shell_channel.send(kc.session.msg("comm_close", {"comm_id": comm_id}))
            else:
                data = {"question": question, **action}
                content = {"comm_id": uuid.uuid4().hex, "target_name": ANSWER_TARGET, "data": data}
                kc.shell_channel.send(kc.session.msg("comm_open", content))
        try:
            message = kc.get_iopub_msg(timeout=0.02)
        except Exception:  # queue.Empty: nothing yet
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "comm_open" and content["target_name"] == TARGET:
            asked = _asked[id(kc)] = _asked.get(id(kc), 0) + 1
            question = content["data"].get("question", "")
            for page in pages:
                for delay, action in page(asked):
                    due = time.monotonic() + delay
                    pending.append((due, content["comm_id"], question, action))
        if message["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        if kind == "error":
            raise AssertionError("\n".join(content["traceback"]))
        if kind == "stream":
            out.append(content["text"])
        if kind == "status" and content["execution_state"] == "idle":
            return "".join(out)


def page(
    served: Path, *documents: tuple[str, bool], app: str = "page-1", delay: float = 0.0
) -> Page:
    docs = [{"path": p, "dirty": d} for p, d in documents]
    answer = {"app": app, "root": str(served), "documents": docs}
    return lambda _question: [(delay, answer)]


def setup(kc: Any, timeout: float = 2.0, probe: float = 0.3, linger: float = 0.2) -> None:
    run(
        kc,
        "docs = kernel_documents(root)\n"
        f"docs.timeout, docs.probe, docs.linger = {timeout}, {probe}, {linger}\n"
        "rt = Runtime(root, documents=docs)\n",
    )


def unsaved(kc: Any, paths: list[str], *pages: Page) -> list[str]:
    code = f"print(json.dumps(await asyncio.to_thread(docs.unsaved, {paths!r})))"
    return list(json.loads(run(kc, code, *pages)))


def commit(kc: Any, *pages: Page) -> dict[str, Any]:
    """Propose an edit of a.py and commit it in a worker thread, as the session does."""
    code = (
        "p = rt.propose('replace_string', {'path': 'a.py', 'old_string': 'a = ', "
        "'new_string': 'a = 1 + '})\n"
        "o = await asyncio.to_thread(rt.commit, p)\n"
        "print(json.dumps({'ok': o.ok, 'code': o.error.code if o.error else None}))"
    )
    result: dict[str, Any] = json.loads(run(kc, code, *pages))
    return result


# -- what holds ---------------------------------------------------------------------------------


def test_links_and_dotted_paths_to_a_dirty_file_refuse_the_commit(
    kernel: Any, served: Path
) -> None:
    setup(kernel)
    for front_path in ("ws/link.py", "ws/../ws/a.py", "./ws/a.py"):
        result = commit(kernel, page(served, (front_path, True), ("../../etc/passwd", True)))
        assert result == {"ok": False, "code": "DOCUMENT_UNSAVED"}, front_path
    assert (served / "ws" / "a.py").read_text() == "a = 1\n"


def test_a_hanging_front_end_cannot_hang_the_commit(kernel: Any, served: Path) -> None:
    """No answer within the bound counts as nothing open (the documented fail-open)."""
    setup(kernel, timeout=0.5, probe=0.2)
    assert commit(kernel, lambda _q: []) == {"ok": True, "code": None}
    assert (served / "ws" / "a.py").read_text() == "a = 1 + 1\n"


def test_malformed_answers_are_ignored_without_an_exception(kernel: Any, served: Path) -> None:
    setup(kernel, timeout=0.5, probe=0.2)
    junk: list[dict[str, Any] | str] = [
        {"app": 1, "documents": []},
        {"app": "x", "documents": "ws/a.py"},
        {"app": "x", "root": "relative/root", "documents": [{"path": "ws/a.py", "dirty": True}]},
        {"app": "x", "root": 5, "host": ["h"], "documents": [{"path": "ws/a.py", "dirty": True}]},
        {"app": "x", "root": str(served), "documents": [1, None, {"path": 3}, {"dirty": True}]},
        {"documents": [{"path": "ws/a.py", "dirty": True}]},
    ]
    malformed: Page = lambda _q: [(0.0, j) for j in junk]  # noqa: E731
    assert unsaved(kernel, ["a.py"], malformed) == []
    assert commit(kernel, malformed) == {"ok": True, "code": None}


def test_a_junk_answer_does_not_end_the_wait_for_a_real_one(kernel: Any, served: Path) -> None:
    """Only answers that can be placed count toward the pages waited for."""
    setup(kernel, timeout=2.0)
    junk: Page = lambda _q: [(0.0, {"app": "x", "documents": "nope"})]  # noqa: E731
    real = page(served, ("ws/a.py", True), delay=0.3)
    assert commit(kernel, junk, real) == {"ok": False, "code": "DOCUMENT_UNSAVED"}
    assert (served / "ws" / "a.py").read_text() == "a = 1\n"


def test_an_answer_to_an_earlier_question_is_not_taken_for_the_next(
    kernel: Any, served: Path
) -> None:
    """A page that answers question 1 late (dirty) and question 2 at once (clean): question 2
    is decided by its own answer."""
    setup(kernel, timeout=1.0, probe=1.0, linger=2.0)

    def flip(question: int) -> list[tuple[float, dict[str, Any] | str]]:
        dirty = question == 1
        data = {"app": "p", "root": str(served), "documents": [{"path": "ws/a.py", "dirty": dirty}]}
        return [(1.5 if dirty else 0.0, data)]

    assert unsaved(kernel, ["a.py"], flip) == []
    assert unsaved(kernel, ["a.py"], flip) == []


# -- what broke, and holds now -------------------------------------------------------------------


def test_a_malformed_window_does_not_hide_another_windows_unsaved_work(
    kernel: Any, served: Path
) -> None:
    """A root with a NUL byte is not an answer: it neither raises nor ends the wait."""
    setup(kernel)
    honest = page(served, ("ws/a.py", False), app="honest")
    other = page(served, ("ws/a.py", False), app="other")
    assert unsaved(kernel, ["a.py"], honest, other) == []  # two windows answer from now on
    run(kernel, "await asyncio.sleep(0.5)")  # the question's comm closes, counting both
    hostile: Page = lambda _q: [  # noqa: E731
        (0.0, {"app": "other", "root": f"{served}\0", "documents": [{"path": "ws/a.py"}]})
    ]
    dirty = page(served, ("ws/a.py", True), app="honest", delay=0.05)
    assert commit(kernel, hostile, dirty) == {"ok": False, "code": "DOCUMENT_UNSAVED"}
    assert (served / "ws" / "a.py").read_text() == "a = 1\n"


def test_one_unresolvable_entry_does_not_drop_the_answer(served: Path) -> None:
    """A lone surrogate (valid JSON) cannot be resolved: that entry is skipped, not the answer."""
    data = {
        "app": "p",
        "root": str(served),
        "documents": [{"path": "ws/\ud800", "dirty": True}, {"path": "ws/a.py", "dirty": True}],
    }
    answer = read_answer(data, None)
    assert answer is not None
    assert answer.documents[served.resolve() / "ws" / "a.py"] == ("ws/a.py", True)


def test_a_late_answer_makes_the_next_question_wait_again(kernel: Any, served: Path) -> None:
    """After a question went unanswered in time, a late answer restores the full wait."""
    setup(kernel, timeout=1.0, probe=0.1, linger=1.5)

    def slow_once(question: int) -> list[tuple[float, dict[str, Any] | str]]:
        data = {"app": "p", "root": str(served), "documents": [{"path": "ws/a.py", "dirty": True}]}
        return [(1.3 if question == 1 else 0.4, data)]

    assert unsaved(kernel, ["a.py"], slow_once) == []  # too late: the documented fail-open
    run(kernel, "await asyncio.sleep(2.0)", slow_once)  # the late answer arrives, the comm closes
    assert unsaved(kernel, ["a.py"], slow_once) == ["a.py"]
    assert unsaved(kernel, ["a.py"], slow_once) == ["a.py"]


def test_a_window_without_the_extension_does_not_hide_a_dirty_document(
    kernel: Any, served: Path
) -> None:
    """A page closing the question's comm cannot silence another: each page answers on its own."""
    setup(kernel)
    without: Page = lambda _q: [(0.0, "close")]  # noqa: E731
    with_extension = page(served, ("ws/a.py", True), delay=0.05)
    assert commit(kernel, without, with_extension) == {"ok": False, "code": "DOCUMENT_UNSAVED"}
    assert (served / "ws" / "a.py").read_text() == "a = 1\n"


def test_many_answers_cannot_make_a_question_unbounded(kernel: Any, served: Path) -> None:
    """Answers per question and paths resolved per question are bounded."""
    setup(kernel, timeout=5.0)
    windows = 12
    per_window = MAX_DOCUMENTS // 4

    def many(_question: int) -> list[tuple[float, dict[str, Any] | str]]:
        docs = [{"path": f"ws/d{i}.py", "dirty": False} for i in range(per_window)]
        return [
            (0.0, {"app": f"w{n}", "root": str(served), "documents": docs}) for n in range(windows)
        ]

    small: Page = lambda _q: [  # noqa: E731
        (0.0, {"app": f"w{n}", "root": str(served), "documents": []}) for n in range(windows)
    ]
    assert unsaved(kernel, ["a.py"], small) == []  # from now on twelve windows are waited for
    run(kernel, "await asyncio.sleep(0.5)")  # the question's comm closes, counting them all
    run(
        kernel,
        "import os.path\nresolved = [0]\n_realpath = os.path.realpath\n"
        "def counting(path, *a, **k):\n    resolved[0] += 1\n    return _realpath(path, *a, **k)\n"
        "os.path.realpath = counting\n",
    )
    try:
        assert unsaved(kernel, ["a.py"], many) == []
        count = int(run(kernel, "print(resolved[0])").strip())
    finally:
        run(kernel, "os.path.realpath = _realpath")
    assert count <= MAX_DOCUMENTS + 10, f"{count} paths resolved for one question"


def test_paths_too_long_or_roots_with_nul_are_not_resolved(served: Path) -> None:
    long = "ws/" + "d/" * (MAX_PATH // 2) + "a.py"
    data = {
        "app": "p",
        "root": str(served),
        "documents": [{"path": long, "dirty": True}, {"path": "ws/a.py", "dirty": True}],
    }
    answer = read_answer(data, None)
    assert answer is not None
    assert list(answer.documents) == [served.resolve() / "ws" / "a.py"]
    assert read_answer({**data, "root": f"{served}\0"}, None) is None
    assert read_answer({**data, "root": str(served) + "/" * MAX_PATH}, None) is None


def test_a_window_with_many_clean_documents_does_not_hide_a_dirty_one(
    kernel: Any, served: Path
) -> None:
    """Only documents said to be dirty are resolved to decide what is unsaved, so the bound on
    paths resolved cannot be spent by another window's clean ones."""
    setup(kernel, timeout=5.0)
    clean = [(f"ws/d{i}.py", False) for i in range(MAX_DOCUMENTS)]
    many = page(served, *clean, app="many")
    saved = page(served, ("ws/a.py", False), app="other")
    assert unsaved(kernel, ["a.py"], many, saved) == []  # two windows answer from now on
    run(kernel, "await asyncio.sleep(0.5)")  # the question's comm closes, counting both
    dirty = page(served, ("ws/a.py", True), app="other", delay=0.05)
    assert commit(kernel, many, dirty) == {"ok": False, "code": "DOCUMENT_UNSAVED"}
    assert (served / "ws" / "a.py").read_text() == "a = 1\n"
