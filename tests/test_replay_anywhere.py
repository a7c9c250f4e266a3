"""Replay of any workspace from the log's snapshots, and of sessions that last: several tasks,
things the user said, rewind branches. Real files, real sessions, the scripted model."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.replay import replay
from grinta_jupyter.agent.session import Session
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, read_events
from grinta_jupyter.events.snapshots import SnapshotStore
from tests.conftest import drive, snapshot

ADD = {"path": "pkg/core.py", "old_string": "return a + b", "new_string": "return b + a"}
SUB = {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return -(b - a)"}
NEW = {"path": "pkg/extra.py", "content": "X = 1\n"}
TESTS = "python -m pytest -q tests/test_core.py"
TEST_CORE = "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
CORE = "import os\n\n\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace that is no bundled sample; replays make their folders under tmp_path."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(CORE)
    (root / "README.md").write_text("# project\n\nAdd and subtract.\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(TEST_CORE)
    (root / "notes").mkdir()
    (root / "notes" / "untouched.txt").write_text("never read by the session\n")
    return root


def one_task(root: Path) -> Session:
    model = ScriptedModel(
        [
            reply("Reading first.", call("read", path="tests/test_core.py")),
            reply("", call("replace_string", **ADD)),
            reply("", call("create", **NEW)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="swapped and added")),
        ]
    )
    return drive(Session("swap add's operands", model=model, root=root), lambda s: s.approve())


def replays(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("grinta-replay-*"))


# -- any workspace ------------------------------------------------------------------------------


def test_a_session_on_any_folder_replays_on_its_files_as_first_found(project, tmp_path):
    session = one_task(project)
    assert session.end_reason == "finished"
    events = read_events(session.log_path)
    kept = {e.path: e.sha256 for e in events if isinstance(e, ev.FileSnapshot)}
    assert set(kept) == {"tests/test_core.py", "pkg/core.py", "pkg/extra.py"}
    assert kept["pkg/extra.py"] is None  # it did not exist
    # The project moves on after the session.
    (project / "pkg" / "core.py").write_text("def add(a, b):\n    return 0\n")
    (project / "tests" / "test_core.py").unlink()

    report = replay(session.log_path)

    assert report.identical, report.differences
    assert report.steps == 5 and report.branch == 0 and report.tasks == 1
    assert report.root is not None and report.root.name == "project"
    assert report.root.parent.parent == tmp_path / "tmp"
    rebuilt = {k: v for k, v in snapshot(report.root).items() if ".pytest_cache" not in k}
    assert {k for k in rebuilt if "__pycache__" not in k} == {
        "tests/test_core.py",
        "pkg/core.py",
        "pkg/extra.py",
    }
    assert {k: rebuilt[k] for k in ("tests/test_core.py", "pkg/core.py", "pkg/extra.py")} == {
        "tests/test_core.py": TEST_CORE.encode(),
        "pkg/core.py": CORE.replace("return a + b", "return b + a").encode(),  # replayed
        "pkg/extra.py": b"X = 1\n",  # created by the replay
    }, "only the files the session read or changed, as it found them, then changed again"
    assert report.log_path is not None and report.log_path.is_relative_to(report.root)


def test_a_log_moved_out_of_its_workspace_still_finds_its_snapshots(project, tmp_path):
    session = one_task(project)
    moved = tmp_path / "elsewhere" / "session.jsonl"
    moved.parent.mkdir()
    shutil.copy(session.log_path, moved)
    assert replay(moved).identical


def test_a_log_from_another_workspace_without_its_blobs_is_refused_naming_the_files(
    project, tmp_path
):
    session = one_task(project)
    other = tmp_path / "other"
    (other / ".grinta" / "sessions").mkdir(parents=True)
    copied = other / ".grinta" / "sessions" / session.log_path.name
    shutil.copy(session.log_path, copied)
    shutil.rmtree(project / ".grinta" / "blobs")

    with pytest.raises(LogError) as caught:
        replay(copied)

    message = str(caught.value)
    assert "\n" not in message and str(copied) in message
    assert "2 file(s) cannot be restored" in message  # a file that did not exist needs none
    assert "tests/test_core.py (its snapshot" in message and "pkg/core.py (its snapshot" in message
    assert "is missing" in message
    assert replays(tmp_path) == [], "nothing half-done: the rebuilt folder is removed"


def test_a_tampered_snapshot_is_refused_not_restored(project, tmp_path):
    session = one_task(project)
    events = read_events(session.log_path)
    tests = next(e for e in events if isinstance(e, ev.FileSnapshot) and e.path.startswith("tests"))
    assert tests.sha256 is not None
    blob = SnapshotStore(project).blob_path(tests.sha256)
    blob.write_bytes(blob.read_bytes().replace(b"== 3", b"!= 3"))

    with pytest.raises(LogError, match=r"tests/test_core.py \(its snapshot \w+ is damaged"):
        replay(session.log_path)
    assert replays(tmp_path) == []


def test_a_log_with_no_snapshots_and_no_sample_asks_for_the_root(project):
    session = one_task(project)
    lines = [
        line
        for line in session.log_path.read_text().splitlines()
        if json.loads(line)["type"] != "snapshot"
    ]
    bare = project.parent / "bare.jsonl"
    bare.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogError, match="pass --root with the workspace in its starting state"):
        replay(bare)


def test_a_root_given_is_used_and_its_files_not_as_found_are_noted(project, tmp_path):
    session = one_task(project)
    given = tmp_path / "given"
    (given / "pkg").mkdir(parents=True)
    (given / "pkg" / "core.py").write_text(CORE)
    (given / "tests").mkdir()
    (given / "tests" / "test_core.py").write_text(TEST_CORE + "# a line added since\n")

    report = replay(session.log_path, given)

    assert report.root == given and report.identical  # the read differs, no proposal does
    assert report.notes == [f"tests/test_core.py differs in {given}: not as the session found it"]


# -- sessions that last -------------------------------------------------------------------------


def said_where(events: list[ev.Event]) -> list[tuple[str, int, int]]:
    """Each thing the user said, with the model requests and replies logged before it."""
    requests = replies = 0
    found = []
    for e in events:
        if isinstance(e, ev.ModelRequest):
            requests += 1
        elif isinstance(e, ev.ModelReplied):
            replies += 1
        elif isinstance(e, ev.UserMessage) and e.source == "user":
            found.append((e.text, requests, replies))
    return found


def request_sizes(events: list[ev.Event]) -> list[int]:
    return [e.messages for e in events if isinstance(e, ev.ModelRequest)]


def test_a_continued_conversation_replays_each_task_and_each_word_at_its_turn(project):
    holder: dict[str, Session] = {}

    def talks_while_thinking(messages):  # the user speaks while the model is busy
        holder["s"].say("and keep the file short")
        return reply("", call("create", **NEW))

    model = ScriptedModel(
        [
            reply("", call("read", path="tests/test_core.py")),
            reply("", call("replace_string", **ADD)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="swapped")),
            talks_while_thinking,
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="added")),
        ]
    )
    session = holder["s"] = Session("swap add's operands", model=model, root=project)
    answered = []

    def decide(s: Session) -> None:
        if not answered:  # said while the first proposal waits, then approved
            s.say("use the keyword order")
        answered.append(1)
        s.approve()

    drive(session, decide)
    session.continue_task("add an extra module")
    drive(session, decide)
    assert session.summary == "added"
    original = read_events(session.log_path)
    assert said_where(original) == [
        ("use the keyword order", 2, 2),
        ("and keep the file short", 5, 4),
    ]

    report = replay(session.log_path)

    assert report.identical, report.differences
    assert report.tasks == 2 and report.steps == 7
    assert report.log_path is not None
    again = read_events(report.log_path)
    assert said_where(again) == said_where(original), "each said before the same model turn"
    assert request_sizes(again) == request_sizes(original), "the same conversation, turn by turn"
    started = [(e.number, e.task) for e in again if isinstance(e, ev.TaskStarted)]
    assert started == [(2, "add an extra module")]
    assert (report.root / "pkg" / "extra.py").read_text() == "X = 1\n"


def rewound(root: Path) -> Session:
    model = ScriptedModel(
        [
            reply("", call("read", path="tests/test_core.py")),
            reply("", call("replace_string", **ADD)),
            reply("", call("replace_string", **SUB)),
            reply("", call("create", **NEW)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="three changes")),
            reply("", call("read", path="README.md")),  # after the rewind: another way
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="one change")),
        ]
    )
    session = drive(Session("change things", model=model, root=root), lambda s: s.approve())
    session.rewind(2)
    return drive(session, lambda s: s.approve())


def test_a_rewound_session_replays_the_branch_it_ended_on_or_the_one_asked(project):
    session = rewound(project)
    assert session.branch == 1 and session.summary == "one change"

    latest = replay(session.log_path)
    assert latest.identical, latest.differences
    assert latest.branch == 1 and latest.steps == 5
    assert latest.root is not None
    assert snapshot(latest.root)["pkg/core.py"] == CORE.replace("a + b", "b + a").encode()
    assert not (latest.root / "pkg" / "extra.py").exists()

    first = replay(session.log_path, branch=0)
    assert first.identical, first.differences
    assert first.branch == 0 and first.steps == 6
    assert first.root is not None and (first.root / "pkg" / "extra.py").exists()
    assert "return -(b - a)" in (first.root / "pkg" / "core.py").read_text()

    with pytest.raises(LogError, match=r"has no branch 7 \(its branches: 0, 1\)"):
        replay(session.log_path, branch=7)


def test_a_branch_asked_of_a_log_never_rewound_is_refused(project):
    session = one_task(project)
    with pytest.raises(LogError, match="no branch 1: it was never rewound"):
        replay(session.log_path, branch=1)


def test_a_rebuilt_workspace_that_lacks_what_a_command_needs_says_so(project):
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("run", command=TESTS)),  # reads tests/test_core.py, never read
            reply("", call("finish", summary="swapped")),
        ]
    )
    session = drive(Session("swap", model=model, root=project), lambda s: s.approve())
    assert session.end_reason == "finished"

    report = replay(session.log_path)

    assert report.differences == ["the session: finished in the log, ended error in the replay"], (
        "the finish is refused there: the tests it ran are not in the rebuilt folder"
    )
    assert report.notes == [
        "the workspace was rebuilt with only the 1 file(s) the session read or changed; the "
        "commands of step(s) 2 may need others: replay on a copy of the workspace as it was "
        "(--root)"
    ]
    copy = project.parent / "copy"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns(".grinta"))
    (copy / "pkg" / "core.py").write_text(CORE)  # as the session found it
    assert replay(session.log_path, copy).identical
