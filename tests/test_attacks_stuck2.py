"""Attacks on the stuck detector's view of paths: the same failing edit or read spelled
``calc.py``, ``./calc.py`` and the workspace's absolute path (also through the link the
workspace was opened by) counted as different calls, so a model going round the spellings
of one failing call was never told it was stuck. Everything runs through real ``Session``
objects on a temp workspace with the package's ``ScriptedModel``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.agent.session import Session
from tests.calc_project import calc_project


def _run(root: Path, turns: list[ModelReply]) -> Session:
    turns = [*turns, reply("", call("finish", summary="x"))]
    session = Session("explain calc", model=ScriptedModel(turns), root=root, policy="auto")
    asyncio.run(session.run())
    return session


def _fired(session: Session) -> list[tuple[str, str]]:
    return [(e.guard, e.detail) for e in session.log.events if e.type == "guard_fired"]


def _replace(path: str, old: str = "return a * b") -> ModelReply:
    return reply("", call("replace_string", path=path, old_string=old, new_string="return a + b"))


def test_a_failing_edit_spelled_three_ways_is_one_call(tmp_path):
    """Attack: the same replace_string that cannot match, on ``calc.py``, its absolute path,
    then ``./calc.py``. Bug: three different calls and three different targets, so nothing
    fired; now the second is the target failing twice and the third a repeat."""
    root = calc_project(tmp_path)
    session = _run(root, [_replace(p) for p in ("calc.py", str(root / "calc.py"), "./calc.py")])
    guards = [guard for guard, _ in _fired(session)]
    assert guards == ["failed_region", "stuck_repeat"], _fired(session)


def test_edits_of_one_file_spelled_three_ways_force_a_read(tmp_path):
    """Attack: three failing edits of calc.py, each on another target and each with the
    file spelled another way. Bug: the per-file count kept ``/abs/calc.py`` apart from
    ``calc.py``, so the model editing from a wrong picture of the file was never shown it."""
    root = calc_project(tmp_path)
    turns = [
        _replace("calc.py", "return a * b"),
        _replace(str(root / "calc.py"), "return a / b"),
        _replace("./calc.py", "return a % b"),
    ]
    fired = _fired(_run(root, turns))
    assert fired == [
        (
            "failed_region",
            "3 edits on calc.py failed, each on another target, with no write in between",
        )
    ], fired


def test_a_workspace_opened_through_a_link_names_its_files_one_way(tmp_path):
    """Attack: the workspace opened through a link (``~/proj`` -> ``/data/proj``); the model
    names calc.py by the link's absolute path, which the tools accept. Bug: the detector
    knew no root, so the link's spelling was yet another call."""
    root = calc_project(tmp_path)
    link = tmp_path / "proj"
    link.symlink_to(root)
    spellings = ("calc.py", str(link / "calc.py"), str(root / "calc.py"))
    session = _run(link, [_replace(p) for p in spellings])
    assert [g for g, _ in _fired(session)] == ["failed_region", "stuck_repeat"], _fired(session)


def test_a_failed_read_spelled_three_ways_is_a_repeat(tmp_path):
    """Attack: read a file that is not there as ``notes.md``, by its absolute path, then as
    ``sub/../notes.md``. Bug: only a read that worked was named by the file it showed; a
    failed one kept its spelling, so the same error three times was three calls."""
    root = calc_project(tmp_path)
    spellings = ("notes.md", str(root / "notes.md"), "sub/../notes.md")
    fired = _fired(_run(root, [reply("", call("read", path=p)) for p in spellings]))
    assert [g for g, _ in fired] == ["stuck_repeat"], fired


def test_a_multiedit_spelled_three_ways_is_one_call(tmp_path):
    """Attack: the same failing multiedit with its edit's path spelled three ways. Bug: the
    paths inside ``edits`` were compared as written, so the target failing again was never
    seen. Its error now names the file as the workspace does, so the results are the same
    too: a repeat."""
    root = calc_project(tmp_path)

    def multiedit(path: str) -> ModelReply:
        edit: dict[str, Any] = {"path": path, "old_string": "return a * b", "new_string": "x"}
        return reply("", call("multiedit", edits=[edit]))

    spellings = ("calc.py", str(root / "calc.py"), "./calc.py")
    fired = _fired(_run(root, [multiedit(p) for p in spellings]))
    assert [g for g, _ in fired] == ["failed_region", "stuck_repeat"], fired


def test_a_file_of_the_same_name_outside_the_workspace_stays_apart(tmp_path):
    """Guard (passes before and after): a failing edit of ``calc.py`` and one of another
    ``calc.py`` outside the workspace (``../calc.py``, by absolute path) are two targets,
    and a write to another file of the workspace is another file, not a repeat."""
    root = calc_project(tmp_path, also={"other.py": "x = 1\n"})
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a * b\n")
    turns = [
        _replace("calc.py"),
        _replace(str(tmp_path / "calc.py")),
        _replace("other.py"),
        _replace("../calc.py"),
    ]
    assert _fired(_run(root, turns)) == []


def test_a_failing_multiedit_names_its_file_as_the_workspace_does(tmp_path: Path) -> None:
    """The error of a failing part named the path as the model spelled it (``./calc.py``),
    so the same failing multiedit in three spellings gave three results and was never a
    repeat; a path holding a line break named the part raw."""
    from grinta_jupyter import Runtime

    (tmp_path / "calc.py").write_text("def f():\n    return 1\n")
    runtime = Runtime(tmp_path)
    messages = []
    for path in ("calc.py", "./calc.py", str(tmp_path / "calc.py")):
        edit = {"path": path, "old_string": "return 2", "new_string": "return 3"}
        proposal = runtime.propose("multiedit", {"edits": [edit]})
        assert proposal.error is not None
        messages.append(proposal.error.message)
    assert len(set(messages)) == 1 and "(calc.py)" in messages[0], messages
    broken = runtime.propose(
        "multiedit", {"edits": [{"path": "a\nERROR.py", "old_string": "x", "new_string": "y"}]}
    )
    # The part is named quoted (the message after it is the part's own error).
    assert broken.error is not None
    assert broken.error.message.startswith('edit 1 of 1 ("a\\nERROR.py"): ')
