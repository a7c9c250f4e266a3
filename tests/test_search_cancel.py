"""A search stops when nobody waits for it any more, and its deadline holds in a tree that
yields no file to check it at (tools/search.py, ``ToolContext.cancel``)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime.errors import SEARCH_TIMEOUT
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.facade import Runtime
from tests.conftest import drive

# Each line makes ``(a|aa)+$`` backtrack for milliseconds: thousands of them take minutes.
SLOW_LINE = "a" * 24 + "!"
SLOW_QUERY = {"query": "(a|aa)+$", "regex": True}


@pytest.fixture
def slow(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "slow.txt").write_text((SLOW_LINE + "\n") * 20_000)
    return root


def test_a_cancelled_staging_refuses_the_search_at_once(slow: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    runtime = Runtime(slow, "intent", Settings(search_timeout=600))
    proposal = runtime.propose("search", SLOW_QUERY, cancel=cancel)
    assert proposal.error is not None and proposal.error.code == SEARCH_TIMEOUT
    assert "cancelled" in proposal.error.message


def test_cancelling_from_another_thread_stops_a_running_search(slow: Path) -> None:
    cancel = threading.Event()
    runtime = Runtime(slow, "intent", Settings(search_timeout=600))
    box: list[object] = []
    worker = threading.Thread(
        target=lambda: box.append(runtime.propose("search", SLOW_QUERY, cancel=cancel))
    )
    worker.start()
    time.sleep(0.3)
    assert worker.is_alive(), "the search ended on its own: the workload is too small"
    cancel.set()
    worker.join(30)  # lines take milliseconds each: the next line's check sees it
    assert not worker.is_alive(), "the search went on after it was cancelled"
    proposal = box[0]
    assert proposal.error is not None and proposal.error.code == SEARCH_TIMEOUT  # type: ignore[attr-defined]


def _observations(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]


def test_stopping_a_session_ends_its_search_and_the_next_task_searches_again(
    slow: Path,
) -> None:
    (slow / "notes.md").write_text("the needle is here\n")
    model = ScriptedModel(
        [
            reply("", call("search", **SLOW_QUERY)),
            reply("", call("search", query="needle", path="notes.md")),
            reply("", call("finish", summary="found")),
        ]
    )
    session = Session("find it", model=model, root=slow, settings=Settings(search_timeout=600))
    returned: list[object] = []
    propose = session.runtime.propose

    def recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = propose(*args, **kwargs)
        returned.append(result)
        return result

    session.runtime.propose = recorded  # type: ignore[method-assign]

    async def go() -> None:
        await session._advance()  # the model's turn
        staging = asyncio.ensure_future(session._advance())
        await asyncio.sleep(0.5)
        assert not staging.done(), "the search ended on its own: the workload is too small"
        session.stop("stopped by the user")
        await asyncio.wait_for(staging, 30)

    asyncio.run(go())
    assert session.done and session.end_reason == "stopped by the user"
    assert session.pending is None and session.steps == []
    assert len(returned) == 1  # the staging thread itself has returned, refused
    assert "cancelled" in returned[0].error.message  # type: ignore[attr-defined]
    # The stop cancelled that staging only: the next task's search runs to its end.
    session.continue_task("look in the notes")
    drive(session, lambda s: s.approve())
    assert session.summary == "found"
    assert any("notes.md:1: the needle is here" in text for text in _observations(model))


def test_a_rewound_session_searches_again(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("ANSWER = 41  # the needle\n")
    model = ScriptedModel(
        [
            reply("", call("read", path="app.py")),
            reply("", call("finish", summary="first")),
            reply("", call("search", query="needle")),
            reply("", call("finish", summary="second")),
        ]
    )
    session = Session("x", model=model, root=root)
    drive(session, lambda s: s.approve())
    assert session.summary == "first"
    session.rewind(0)  # cancels the stagings of the first path: not the ones after it
    drive(session, lambda s: s.approve())
    assert session.summary == "second"
    assert any("app.py:1: ANSWER = 41  # the needle" in text for text in _observations(model))


def test_the_deadline_holds_in_a_tree_of_empty_folders(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for k in range(3_000):
        (root / f"d{k // 100}" / f"e{k}").mkdir(parents=True)
    (root / "zz.txt").write_text("needle\n")
    runtime = Runtime(root, "intent", Settings(search_timeout=0.001))
    proposal = runtime.propose("search", {"query": "needle"})
    # Walking 3,000 folders takes far longer than a millisecond: the search stops, naming
    # the folder it was about to list, instead of finishing the walk past its deadline.
    assert proposal.error is not None and proposal.error.code == SEARCH_TIMEOUT
    assert "while walking the files, at " in proposal.error.message
