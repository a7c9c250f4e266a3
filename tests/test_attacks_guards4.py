"""Fourth round of attacks on the content guards and the stuck detector: a placeholder let
through because a longer line of the file began with it, loops of three calls and of
failing edits that each aimed elsewhere, and warnings that did not name the repeated call.
Everything runs through real ``Runtime`` and ``Session`` objects on a temp workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from tests.calc_project import calc_project


def _replace(root: Path, path: str, text: str, old: str, new: str) -> str | None:
    """The error code of replacing ``old`` with ``new`` in a file holding ``text``."""
    (root / path).write_text(text)
    proposal = Runtime(root).propose(
        "replace_string", {"path": path, "old_string": old, "new_string": new}
    )
    return proposal.error.code if proposal.error else None


def _session(tmp_path: Path, calls: list[dict[str, object]]) -> Session:
    root = calc_project(tmp_path)
    turns = [reply("", c) for c in calls] + [reply("", call("finish", summary="x"))]
    session = Session("explain calc", model=ScriptedModel(turns), root=root, policy="auto")
    asyncio.run(session.run())
    return session


def _fired(session: Session) -> list[tuple[str, str]]:
    return [(e.guard, e.detail) for e in session.log.events if e.type == "guard_fired"]


# -- placeholders ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,text,new",
    [
        ("m.py", "# ...and then we retry\nx = 1\ny = 2\n", "# ..."),
        ("m.py", "# ..........\nx = 1\ny = 2\n", "# ..."),
        ("m.rs", "// ...but only once\nlet x = 1;\nlet y = 2;\n", "// ..."),
        ("m.sql", "-- ...rows first\nSELECT 1;\nSELECT 2;\n", "-- ..."),
    ],
)
def test_a_placeholder_that_begins_a_longer_line_of_the_file_is_refused(tmp_path, path, text, new):
    """Attack: replace code with a bare ``# ...`` in a file one of whose comments begins
    with it (``# ...and then we retry``, a ``# ........`` rule). Bug: "the file already
    held it" was a substring test on the whole file, so the elision was written."""
    old = text.splitlines()[-1]
    assert _replace(tmp_path, path, text, old, new) == "PLACEHOLDER"


def test_a_placeholder_the_file_held_as_a_line_still_passes(tmp_path):
    """False-positive side: a file that holds ``# ...`` as a whole line may get another."""
    text = "def f():\n    # ...\n    return 1\n\ny = 2\n"
    assert _replace(tmp_path, "m.py", text, "y = 2", "# ...\ny = 3") is None


@pytest.mark.parametrize(
    "path,text,old,new",
    [
        ("m.pyi", "def f(x: int) -> str: pass\n", "pass", "..."),
        ("m.py", "b = a[0]\n", "b = a[0]", "b = a[..., 0]\nc = a[\n    ...,\n    1,\n]"),
        ("m.js", "f(a)\n", "f(a)", "f(...args)\nconst o = {\n  ...rest,\n  ...other\n};"),
        ("r.md", "# T\n\nsome text\n", "some text", "some text...\n\n...\n\nmore…"),
        ("t.py", "def test_a():\n    assert 1\n", "def test_a():",
         "# The rest of the tests below check the parser.\ndef test_a():"),
    ],
)  # fmt: skip
def test_code_and_prose_with_ellipses_still_pass(tmp_path, path, text, old, new):
    """False positives that held: stubs, numpy slicing, JS spread, Markdown, prose."""
    assert _replace(tmp_path, path, text, old, new) is None


# -- stuck detection -------------------------------------------------------------------------


def test_a_cycle_of_three_calls_with_the_same_results_is_stuck(tmp_path):
    """Attack: go round read calc.py, read test_calc.py, search add, again and again. Bug:
    only one call repeated or two alternating were seen, so the cycle ran to the step
    budget; now it is warned about, names the calls, and ends the session as stuck."""
    cycle = [
        call("read", path="calc.py"),
        call("read", path="test_calc.py"),
        call("search", query="add"),
    ]
    session = _session(tmp_path, cycle * 4)
    fired = _fired(session)
    assert fired and fired[0][0] == "stuck_alternation"
    assert "read path=calc.py" in fired[0][1] and "search query=add" in fired[0][1]
    assert "same three calls" in session.steps[5].observation.output
    assert session.end_reason == "stuck"


def test_reading_one_file_by_ranges_and_testing_after_edits_is_not_stuck(tmp_path):
    """False-positive side: reads of other line ranges and test runs after real edits are
    progress, even in a three-call rhythm."""
    calls: list[dict[str, object]] = []
    for n, op in enumerate(["*", "/", "+"], 1):
        calls.append(call("read", path="calc.py", start_line=1, end_line=n))
        calls.append(
            call("edit_symbols", edits=[{"symbol": "calc.py::add", "action": "replace",
                 "new_source": f"def add(a, b):\n    return a {op} b\n"}])
        )  # fmt: skip
        calls.append(call("run", command="python -m pytest -q"))
    session = _session(tmp_path, calls)
    assert [g for g, _ in _fired(session) if g.startswith("stuck")] == []


def test_the_same_read_spelled_with_dot_slash_is_the_same_call(tmp_path):
    """Attack: read ``calc.py``, ``./calc.py``, ``calc.py`` (the same file, the same
    result). Bug: the spellings made three different calls, so no repeat was seen."""
    session = _session(
        tmp_path,
        [
            call("read", path="calc.py"),
            call("read", path="./calc.py"),
            call("read", path="calc.py"),
        ],
    )
    fired = _fired(session)
    assert fired and fired[0][0] == "stuck_repeat" and "path=calc.py" in fired[0][1]
    assert "(read path=calc.py)" in session.steps[2].observation.output


def test_failing_edits_on_one_file_each_on_another_target_force_a_read(tmp_path):
    """Attack: edit calc.py with a wrong old_string, read something else, edit it with
    another wrong old_string, and so on. Bug: the failures were counted per target and the
    reads reset the circuit breaker, so nothing fired until the step budget; now the third
    failed edit on the file forces a fresh read of it."""
    calls: list[dict[str, object]] = []
    for op in "*/%&":
        calls.append(
            call("replace_string", path="calc.py", old_string=f"return a {op} b",
                 new_string="return a + b")
        )  # fmt: skip
        calls.append(call("read", path="test_calc.py"))
    session = _session(tmp_path, calls)
    fired = _fired(session)
    assert ("failed_region", "force_read") in [
        (e.guard, e.action) for e in session.log.events if e.type == "guard_fired"
    ]
    assert "edits on calc.py failed" in fired[0][1]
    assert "return a - b" in session.steps[4].observation.output  # the fresh read
    # And the note says why it was read, not that one edit failed twice.
    assert "each on another target" in session.steps[4].observation.output
    assert "failed twice on the same target" not in session.steps[4].observation.output
