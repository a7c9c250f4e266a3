"""Attacks on today's changes (c523672..): the finish guard's files-on-disk check after a
rewind, the AST reading of kernel code, the live trace of a session that ended while a write
waited, and execute's redaction of secrets held in the kernel.

Real sessions (``ScriptedModel``) on temp workspaces, real commands and the real execute tool
on a ``DictNamespace``; nothing is mocked. Holes found (each test below failed before its fix):

- A rewind kept the files' state noted after a test run of the branch it left: the rewind's
  own undo (byte for byte, new mtimes) then read as "changed on disk after the test run", and
  an honest finish was refused; rewound to before every test run, the finish crashed the
  session (``assert self.last_test is not None`` in ``FinishGuard.moved_on_disk``).
- ``code_changes_files`` named the writing call with ``ast.unparse``, which recursed past the
  limit on a call whose argument is a long ``+`` chain (400 strings joined): the
  RecursionError escaped the guards and ended the session's run with a traceback.
- The trace of a session stopped while a write waited kept that step "live": the saved
  output (the display becomes the trace at the end) carried the whole diff three times
  (payload, HTML rows, text), megabytes in the notebook for a step nobody will decide.
- Execute's output was redacted of every text of 8+ characters under a name holding KEY or
  TOKEN: ``keys = ["user_id", "created_at"]`` (or a loop's leftover ``key``) turned every
  "created_at" of every later output, a data frame's columns too, into [REDACTED].
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent import NeedsDecision, Session
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.testruns import code_changes_files
from grinta_jupyter.jupyter.mime import MAX_DIFF_CHARS, trace_bundle
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset
from grinta_jupyter.tools.values import kernel_secrets

LIMIT = 120  # seconds any one session may take before it counts as a hang
FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
AGAIN = {"path": "calc.py", "old_string": "return a + b", "new_string": "return b + a"}
FINISH = reply("", call("finish", summary="Fixed add; all tests pass."))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "calc"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider -p no:nbval"\n'
    )
    return root


def _drive(session: Session) -> None:
    asyncio.run(asyncio.wait_for(session.run(), LIMIT))


def _finishes(session: Session) -> list[tuple[bool, str]]:
    return [(e.accepted, e.reason) for e in session.log.events if e.type == "finish_attempt"]


# -- the finish guard after a rewind -----------------------------------------------------------


def _fixed_tested_then_edited(root: Path) -> Session:
    """Fix, run the tests (pass), edit again; the script then runs out (the session ends)."""
    turns = [
        reply("", call("replace_string", **FIX)),
        reply("", call("run", command="python -m pytest -q")),
        reply("", call("replace_string", **AGAIN)),
    ]
    session = Session("fix the failing test", model=ScriptedModel(turns), root=root, policy="auto")
    _drive(session)
    assert len(session.steps) == 3
    return session


def test_a_rewind_to_the_passing_test_run_lets_the_honest_finish_through(project: Path) -> None:
    """Rewind to step 2 (the passing run): the undo of step 3 puts calc.py back byte for byte,
    as the tests saw it. Bug: its new mtime read as a change on disk after step 2's run."""
    session = _fixed_tested_then_edited(project)
    session.rewind(2)
    assert "return a + b" in (project / "calc.py").read_text()
    session.model = ScriptedModel([FINISH])
    _drive(session)
    assert _finishes(session) == [(True, "")]
    assert session.end_reason == "finished"


def test_a_rewind_to_before_every_test_run_does_not_crash_the_finish(project: Path) -> None:
    """Rewind to step 1 (before any test run): a finish is refused for want of a test run.
    Bug: the state noted at the dropped branch's run differed from the files, and the guard
    asserted a test run it no longer had (AssertionError out of ``Session.run``)."""
    session = _fixed_tested_then_edited(project)
    session.rewind(1)
    session.model = ScriptedModel([FINISH])
    _drive(session)  # raised AssertionError
    attempts = _finishes(session)
    assert attempts and not attempts[0][0], attempts
    assert "no command was run after the last edit" in attempts[0][1]


# -- reading kernel code ------------------------------------------------------------------------

LONG_CONCAT = (
    "from pathlib import Path\nPath('gen.txt').write_text("
    + " + ".join(['"line\\n"'] * 450)
    + ")\n"
)


def test_a_writing_call_with_a_long_concatenation_is_named_not_a_recursion_error() -> None:
    found = code_changes_files(LONG_CONCAT)  # raised RecursionError (ast.unparse)
    assert found is not None and "write_text" in found


def test_kernel_code_with_a_long_concatenation_does_not_end_the_session(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)  # the code runs in this process: its gen.txt goes there
    turns = [reply("", call("execute", code=LONG_CONCAT)), FINISH]
    session = Session(
        "say hello",
        model=ScriptedModel(turns),
        root=project,
        policy="auto",
        toolset=kernel_toolset(DictNamespace()),
    )
    _drive(session)  # raised RecursionError from the guards
    assert session.done and session.end_reason is not None


# -- the trace of a session that ended while a write waited ------------------------------------


def test_a_session_stopped_while_a_big_write_waits_saves_a_bounded_trace(tmp_path: Path) -> None:
    big = "".join(f"v{i} = {i}\n" for i in range(30_000))
    turns = [reply("", call("create", path="big.py", content=big)), FINISH]
    session = Session("t", model=ScriptedModel(turns), root=tmp_path)

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                session.stop()

    asyncio.run(asyncio.wait_for(go(), LIMIT))
    assert session.done and not (tmp_path / "big.py").exists()
    bundle: dict[str, Any] = trace_bundle(session)  # the saved output from now on
    step = bundle["application/vnd.grinta.session+json"]["steps"][0]
    assert len(step["diff"]) <= MAX_DIFF_CHARS and step["diff_truncated"]
    assert len(bundle["text/html"]) < 100_000, len(bundle["text/html"])  # was 2,000,000
    assert len(bundle["text/plain"]) < 50_000, len(bundle["text/plain"])  # was 490,000


# -- execute's redaction of the kernel's secrets -----------------------------------------------


@pytest.mark.parametrize(
    "names",
    [
        {"keys": ["user_id", "created_at", "updated_at_value"]},
        {"key": "created_at_timestamp"},  # a loop's leftover ``for key, v in row.items()``
        {"sort_key": "customer_identifier"},
        {"tokens": ["Transformers", "Tokenizer"]},
        {"row": {"primary_key": "customer_name"}},
    ],
)
def test_ordinary_words_under_key_or_token_names_are_not_kernel_secrets(
    names: dict[str, Any],
) -> None:
    assert kernel_secrets(names) == []


@pytest.mark.parametrize(
    "names,secret",
    [
        ({"token": "a8f5f167f44f4964e6c998dee827110c"}, "a8f5f167f44f4964e6c998dee827110c"),
        ({"api_keys": ["Zq81kLm0pQ2rS7tU"]}, "Zq81kLm0pQ2rS7tU"),
        ({"db_password": "correct_horse_battery"}, "correct_horse_battery"),
        ({"config": {"GITHUB_TOKEN": "gh_Abc123_xyz789"}}, "gh_Abc123_xyz789"),
        ({"key": "sk-" + "abcdefghij" * 3}, "sk-" + "abcdefghij" * 3),  # letters, yet a key
    ],
)
def test_secret_looking_texts_under_key_or_token_names_stay_kernel_secrets(
    names: dict[str, Any], secret: str
) -> None:
    assert secret in kernel_secrets(names)


def test_execute_output_keeps_a_column_named_like_a_leftover_key(tmp_path: Path) -> None:
    code = (
        "row = {'user_id': 7, 'created_at': '2024-01-01'}\n"
        "for key, value in row.items():\n    pass\n"
        "print(list(row))"
    )
    turns = [reply("", call("execute", code=code)), reply("", call("finish", summary="done"))]
    session = Session(
        "say hello",
        model=ScriptedModel(turns),
        root=tmp_path,
        policy="auto",
        toolset=kernel_toolset(DictNamespace()),
    )
    _drive(session)
    output = next(e.output for e in session.log.events if e.type == "observation")
    assert "created_at" in output and "REDACTED" not in output, output
