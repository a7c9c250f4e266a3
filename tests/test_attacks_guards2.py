"""Second round of attacks on the guards: elisions, escapes and finishes that got through,
and legitimate LaTeX and Windows paths that were refused. Everything runs through real
``Runtime``, ``FinishGuard`` and ``Session`` objects on a temp workspace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.guards import FinishGuard, Limits, claims_tests_pass
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime.guards import check_serialized, is_placeholder_line
from grinta_jupyter.runtime.proposal import Observation
from tests.calc_project import calc_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A tiny pytest project whose one bug makes its test fail."""
    return calc_project(tmp_path)


def _replace(root: Path, path: str, text: str, old: str, new: str) -> str | None:
    """The error code of replacing ``old`` with ``new`` in a file holding ``text``."""
    (root / path).write_text(text)
    proposal = Runtime(root).propose(
        "replace_string", {"path": path, "old_string": old, "new_string": new}
    )
    return proposal.error.code if proposal.error else None


# -- placeholders ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "# existing code here",
        "# ... existing code here ...",
        "// existing code here",
        "/* existing code here */",
        "<!-- existing code here -->",
        "-- existing code here",
        "# keep existing code",
        "# the same as before",
    ],
)
def test_existing_code_here_is_a_placeholder(line):
    """Attack: elide code with "# existing code here" (or "... existing code here ...", in
    any comment syntax), "# keep existing code", "# the same as before". Bug: "here" after
    "existing code", "keep" before it and "the" before "same as before" made the lines miss
    every pattern, so the elision was written into the file."""
    assert is_placeholder_line(line)


@pytest.mark.parametrize(
    "path,text,old,new",
    [
        ("m.py", "def f(x):\n    y = 1\n    return y\n", "    y = 1", "    # existing code here"),
        ("m.py", "def f(x):\n    y = 1\n    return y\n", "    y = 1", "    # ... existing code here ..."),
        ("m.go", "package m\n\nfunc F() int {\n\treturn 1\n}\n", "\treturn 1",
         "\t// the same as before\n\treturn 1"),
    ],
)  # fmt: skip
def test_existing_code_here_is_refused_by_the_runtime(tmp_path, path, text, old, new):
    """Attack: the same elisions sent through replace_string. Bug: written as they were."""
    assert _replace(tmp_path, path, text, old, new) == "PLACEHOLDER"


@pytest.mark.parametrize(
    "line",
    [
        "# see the existing code in foo.py",
        "# existing users are migrated below",
        "# same as upstream",
        "pass  # existing code here",
        "return 1 // the same as before",
    ],
)
def test_prose_about_existing_code_is_not_a_placeholder(line):
    """False-positive side of the fix above: prose about existing code still passes."""
    assert not is_placeholder_line(line)


# -- serialized payloads ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload,path",
    [
        ("if x:\\n    return 1\\n", "m.py"),
        ("class A:\\n    pass\\n", "m.py"),
        ("def f():\\u000a    return 1", ""),
        ("import os\\u000Aimport sys\\u000a", "m.py"),
        ("print(\\u0022hi\\u0022)", ""),
    ],
)
def test_escaped_code_the_scan_missed_is_refused(payload, path):
    """Attack: JSON-escaped code whose first line ends in a one-letter name and a colon
    (``if x:\\n``), or escaped the JSON way with ``\\u000a``. Bug: ``x:\\n`` was taken for
    the Windows drive ``x:`` (a path, not an escape), and ``\\u000a`` was not an escape at
    all, so the payload was written as one line."""
    error = check_serialized(payload, path)
    assert error is not None and error.code == "CONTENT_SERIALIZED"


def test_escaped_yaml_after_a_one_letter_key_is_refused_by_the_runtime(tmp_path):
    """Attack: ``a:\\n  b: 1\\n`` into a YAML file (valid YAML as one line, so no syntax
    check catches it). Bug: ``a:\\n`` read as a drive letter; the edit was accepted."""
    assert _replace(tmp_path, "c.yaml", "x: 1\n", "x: 1", "a:\\n  b: 1\\n") == (
        "CONTENT_SERIALIZED"
    )


@pytest.mark.parametrize(
    "path,line",
    [
        ("paper.tex", "As $x \\to 0$, see \\ref{a} and \\ref{b}."),
        ("notes.md", "The map $f: A \\to B$ is \\textbf{onto} for $n \\to \\infty$."),
        ("notes.md", "$\\rm{x} \\rbrace$ and $\\top \\not\\to \\bot$"),
        ("paper.tex", "\\title{On \\textcolor{red}{things}} \\today"),
    ],
)
def test_latex_commands_on_one_line_are_not_escapes(tmp_path, path, line):
    """False positive: a one-line edit of a .tex file or a Markdown cell holding LaTeX
    commands that begin like an escape (``\\to``, ``\\ref``, ``\\text...``, ``\\rm``,
    ``\\not``, ``\\top``, ``\\title``). Bug: they were counted as JSON escapes and the
    edit refused as CONTENT_SERIALIZED."""
    assert _replace(tmp_path, path, "start\n", "start", line) is None


@pytest.mark.parametrize(
    "code",
    [
        "C:\\new\\table",
        "cd C:\\new",
        "c:\\temp\\new.txt",
        "\\\\server\\tmp\\new",
        'print("a\\nb")',
        "$\\theta = \\nabla f + \\tau$",
        "x = a[..., 0]",
    ],
)
def test_escapes_that_held_still_pass(code):
    """False-positive side of the fixes above: drive paths, UNC paths, strings, LaTeX."""
    assert check_serialized(code) is None


# -- premature finish -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "summary",
    [
        "All tests for the failover module pass.",
        "The tests for the no-op path pass.",
        "Tests for the fail-safe branch pass.",
    ],
)
def test_a_pass_claim_with_fail_or_no_inside_a_word_is_a_claim(summary):
    """Attack: claim a pass in words holding "fail" or "no" (failover, no-op, fail-safe).
    Bug: the negation check matched ``fail\\w*`` and ``no`` inside them, so the claim was
    not seen and a finish after a failing run went through."""
    assert claims_tests_pass(summary)


@pytest.mark.parametrize(
    "summary",
    [
        "I did not run the tests; the change passes mypy.",
        "No tests were run, but the build succeeds.",
        "Added tests, and ruff passes.",
    ],
)
def test_an_honest_summary_that_something_else_passes_is_not_a_claim(summary):
    """False positive: a summary that says the tests were not run (or only added) and that
    another check passes. Bug: "tests" and "passes" up to 40 characters apart, across a
    ``;`` or ", but", made a claim, and such a finish was refused for claiming a pass."""
    assert not claims_tests_pass(summary)
    assert FinishGuard(Limits(), task="explain the parser").check(summary) is None


def test_a_failover_claim_after_a_failing_run_is_refused(project):
    """Attack: task asks a question (no change needed), the test run fails, and the finish
    says "All tests for the failover module pass". Bug: the claim was taken for a negation
    and the finish was accepted."""
    runtime = Runtime(project)
    guard = FinishGuard(Limits(), task="do the failover tests pass?")
    proposal = runtime.propose("run", {"command": "python -m pytest -q"})
    observation: Observation = runtime.commit(proposal)
    assert observation.exit_code != 0
    guard.observe(1, proposal, observation)
    refused = guard.check("All tests for the failover module pass.")
    assert refused is not None and refused.guard == "premature_finish"
    assert guard.check("The failover tests still fail.") is None  # a negation stays one


# -- stuck loops ------------------------------------------------------------------------------


def _stuck(session: Session) -> list[str]:
    """The stuck guards that fired in ``session`` (the refused finish at its end is not one)."""
    return [
        e.guard
        for e in session.log.events
        if e.type == "guard_fired" and e.guard.startswith(("stuck", "failed_region"))
    ]


def test_a_failing_command_varied_by_its_comment_fires(project):
    """Attack: run the same failing command again and again, changing only a trailing
    comment (``# attempt 2``), with a read of a different file between the runs. Bug: the
    failing-command count was keyed by the raw text, so each run was a new command and
    ``stuck_failing_command`` never fired (the docs say comments do not make a new one)."""
    (project / "notes.txt").write_text("n\n")
    turns = []
    for attempt, path in enumerate(["calc.py", "test_calc.py", "notes.txt"], 1):
        turns.append(reply("", call("run", command=f"python -m pytest -q  # attempt {attempt}")))
        turns.append(reply("", call("read", path=path)))
    session = Session(
        "fix the failing test",
        model=ScriptedModel([*turns, reply("", call("finish", summary="gave up"))]),
        root=project,
        policy="auto",
    )
    asyncio.run(session.run())
    assert "stuck_failing_command" in _stuck(session)


# -- notebooks --------------------------------------------------------------------------------


def test_a_notebook_takes_latex_in_markdown_and_refuses_an_elided_code_cell(tmp_path):
    """Attack and false positive in one notebook: the model writes ``$x \\to 0$, see
    \\ref{a} and \\ref{b}`` into a Markdown cell, then ``# ... existing code here ...`` into
    a code cell. Bug: the LaTeX was refused as serialized code and the elision accepted."""
    cells = [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["Intro.\n"]},
        {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": None,
         "outputs": [], "source": ["x = 1\n", "y = 2"]},
    ]  # fmt: skip
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    runtime = Runtime(tmp_path)

    def code(old: str, new: str) -> str | None:
        args = {"path": "nb.ipynb", "old_string": old, "new_string": new}
        proposal = runtime.propose("replace_string", args)
        return proposal.error.code if proposal.error else None

    assert code("Intro.", "As $x \\to 0$, see \\ref{a} and \\ref{b}.") is None
    assert code("x = 1", "# ... existing code here ...") == "PLACEHOLDER"
    assert code("x = 1", "x = 1\\ny = 2\\n") == "CONTENT_SERIALIZED"  # held before too


def test_a_failing_command_between_an_edit_and_its_undo_fires(project):
    """Attack: flip-flop between two versions of a line (``a * b``, then back to ``a - b``),
    running the same failing tests after each write. Bug: every successful write reset the
    failing-command count, so an edit and its undo hid the loop forever (and the calls, three
    distinct ones, are no A/B alternation): ``stuck_failing_command`` never fired."""
    run = reply("", call("run", command="python -m pytest -q"))
    there = reply("", call("replace_string", path="calc.py", old_string="return a - b",
                           new_string="return a * b"))  # fmt: skip
    back = reply("", call("replace_string", path="calc.py", old_string="return a * b",
                          new_string="return a - b"))  # fmt: skip
    turns = [run, there, run, back, run, there, run, back, run]
    session = Session(
        "fix the failing test",
        model=ScriptedModel([*turns, reply("", call("finish", summary="gave up"))]),
        root=project,
        policy="auto",
    )
    asyncio.run(session.run())
    assert _stuck(session) == ["stuck_failing_command"]


def test_a_failing_command_after_a_real_new_edit_is_not_stuck(project):
    """False-positive side: three different wrong fixes, each followed by the failing run,
    are progress (new file states), so nothing fires."""
    run = reply("", call("run", command="python -m pytest -q"))
    turns = [run]
    for old, new in [("a - b", "a * b"), ("a * b", "a // b"), ("a // b", "a ** b")]:
        edit = call("replace_string", path="calc.py", old_string=f"return {old}",
                    new_string=f"return {new}")  # fmt: skip
        turns += [reply("", edit), run]
    session = Session(
        "fix the failing test",
        model=ScriptedModel([*turns, reply("", call("finish", summary="gave up"))]),
        root=project,
        policy="auto",
    )
    asyncio.run(session.run())
    assert _stuck(session) == []
