"""Guards that cannot be fooled: forged test runs, noisy repeats, placeholders, escaped payloads.

Everything runs for real: commands are real processes in a temp workspace
(a two-test pytest project), edits go through ``Runtime``, sessions are driven
by the in-package ScriptedModel. Each class of attack has cases on both sides:
what must be refused and what must still pass.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.guards import (
    FinishGuard,
    Firing,
    Limits,
    StuckDetector,
    claims_tests_pass,
    normalize_output,
)
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.tasktext import asks_for_change
from grinta_jupyter.agent.testruns import (
    changes_files,
    installs_packages,
    judge,
    judge_output,
    parse_test_command,
)
from grinta_jupyter.runtime.guards import (
    check_placeholder,
    check_serialized,
    is_placeholder_line,
)
from grinta_jupyter.runtime.proposal import Observation
from grinta_jupyter.runtime.validation import check_syntax, first_error, language_of
from tests.calc_project import TEST_ADD, calc_project
from tests.conftest import drive, snapshot

TESTS = "python -m pytest -q"
FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
WRONG_FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a * b"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A tiny pytest project whose one bug makes one of its two tests fail."""
    return calc_project(
        tmp_path, tests=TEST_ADD + "\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
    )


class Trail:
    """A FinishGuard fed with real tool calls on a real workspace, one step per call."""

    def __init__(self, root: Path, task: str = "", limits: Limits | None = None):
        self.runtime = Runtime(root)
        self.guard = FinishGuard(limits or Limits(), task=task)
        self.step = 0

    def call(self, tool: str, *, vetoed: bool = False, **args: object) -> Observation:
        self.step += 1
        proposal = self.runtime.propose(tool, args)
        if vetoed:
            obs = Observation(False, "vetoed", None, proposal.id)
        elif proposal.ok:
            obs = self.runtime.commit(proposal)
        else:
            obs = Observation.failure(proposal.error, proposal.id)  # type: ignore[arg-type]
        self.guard.observe(self.step, proposal, obs, vetoed=vetoed)
        return obs

    def run(self, command: str) -> Observation:
        return self.call("run", command=command)

    def finish(self, summary: str = "Done.") -> Firing | None:
        self.step += 1
        return self.guard.check(summary)


# -- 1. premature finish: does the task ask for a change? -----------------------------------


@pytest.mark.parametrize(
    "task,phrase",
    [
        ("fix the failing test", "fix the failing test"),
        ("Fix failing test in ledger_js", "Fix failing test in ledger_js"),
        ("add compare-and-swap to raft_kv: a command `cas KEY`", "add compare-and-swap to raft_kv"),
        ("in ledger_js, rename the JournalEntry class", "rename the JournalEntry class"),
        ("Could you implement lease reads?", "implement lease reads"),
        ("The parser drops the sign. Please correct it.", "correct it"),
        ("Find and fix the bug in parse", "fix the bug in parse"),
        ("explain the bug, then fix it", "fix it"),
        ("1. Refactor RaftNode.step\n2. Add tests", "Refactor RaftNode.step"),
        ("I want you to remove the dead helpers", "remove the dead helpers"),
        ("Don't just explain it, update the docs", "update the docs"),
        ("TODO: migrate to pathlib", "migrate to pathlib"),
        ("make the tests pass", "make the tests pass"),
        ("write a test for Money.parse", "write a test for Money.parse"),
    ],
)
def test_tasks_that_ask_for_a_change(task, phrase):
    assert asks_for_change(task) == phrase


@pytest.mark.parametrize(
    "task",
    [
        "explain the code",
        "explain why the fix is needed",
        "describe how the log is replicated",
        "what does RaftNode.handle_append_entries do?",
        "why does test_x fail?",
        "where is the config loaded?",
        "find where Entry is used",
        "list the public functions",
        "review the changes in node.py",
        "summarize the module",
        "check whether the tests pass",
        "how do I add a new command?",
        "how would you refactor this?",
        "Could you explain the fix?",
        "Tell me how to update the config",
        "explain how add and remove work",
        "Don't change anything, just explain the parser",
        "no need to fix anything, describe the bug",
        "Write a summary of the module",
        "Run the tests and make sure they pass",
        "Bug: negative amounts lose their sign",
        "Explain `fix_sign` and `add`",
        "",
    ],
)
def test_tasks_that_do_not_ask_for_a_change(task):
    assert asks_for_change(task) is None


def test_a_change_task_with_no_change_is_refused_with_the_request_quoted(project):
    trail = Trail(project, "fix the failing test")
    trail.call("read", path="calc.py")
    trail.run(TESTS)
    firing = trail.finish("The test fails because add subtracts.")
    assert firing is not None and firing.action == "reject_finish"
    assert firing.message.startswith(
        'finish refused: the task asks for a change ("fix the failing test") but no file was '
        "changed in this session; make the change, run the tests, then finish"
    )
    assert firing.detail == "the task asks for a change but no file was changed"


def test_a_task_that_asks_for_no_change_finishes_without_a_run(project):
    trail = Trail(project, "explain what add does")
    trail.call("read", path="calc.py")
    assert trail.finish("add returns a - b, which looks like a bug.") is None


def test_a_question_may_finish_after_a_failing_run_if_it_does_not_claim_a_pass(project):
    trail = Trail(project, "why does test_add fail?")
    trail.run(TESTS)
    assert trail.finish("It fails because add subtracts; the tests do not pass.") is None
    trail2 = Trail(project, "why does test_add fail?")
    trail2.run(TESTS)
    refused = trail2.finish("All tests pass.")
    assert refused is not None and "failed with exit code 1" in refused.message


def test_a_vetoed_write_is_the_users_decision(project):
    trail = Trail(project, "fix the failing test")
    trail.call("replace_string", vetoed=True, **FIX)
    assert trail.finish("Stopped at the user's request; nothing changed.") is None


# -- 1. premature finish: forged and failing test runs ------------------------------------------

FORGERIES = [
    "python -c \"print('2 passed in 0.01s')\"",
    "echo 2 passed",
    "printf '== 2 passed in 0.1s ==\\n'",
    "true # pytest",
    "cat log.txt",
    "sh -c 'echo 2 passed in 0.01s'",
    'pytest() { echo "2 passed in 0.01s"; }; pytest',
    "python -m pytest -q; echo '== 2 passed in 0.1s =='",
    "python -m pytest -q || true",
    "python -m pytest -q | sed s/failed/passed/",
    "python -m pytest -q --co",
    "python -m pytest -q -k no_such_test",
    "cat <<EOF\n2 passed in 0.01s\nEOF",
    "python -m pytest -q > out.txt; tail -n 3 out.txt",
    # Anything that runs beside the runner could print the summary itself.
    "date '+2 passed in 0.12s' && python -m pytest -q",
    "basename '2 passed in 0.12s' && python -m pytest -q",
    "expr '2 passed in 0.12s' && python -m pytest -q",
    "X='2 passed in 0.1s' printenv X && python -m pytest -q",
    "python fake.py; python -m pytest -q",
    "python < fake.py; python -m pytest -q",
    "cat fake.py | python; python -m pytest -q",
    "python -m fake && python -m pytest -q",
    "python -m pytest --collect-only -q",
]


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_test_run_does_not_satisfy_the_guard(project, forgery):
    (project / "log.txt").write_text("======== 2 passed in 0.03s ========\n")
    (project / "fake.py").write_text("print('======== 2 passed in 0.03s ========')\n")
    trail = Trail(project, "fix the failing test")
    assert trail.call("replace_string", **WRONG_FIX).ok  # the tests still fail after it
    trail.run(forgery)
    firing = trail.finish("Fixed; all tests pass.")
    assert firing is not None, forgery
    assert firing.message.startswith("finish refused: ")
    assert "step 2" in firing.message, firing.message


@pytest.mark.parametrize(
    "command",
    [
        TESTS,
        "python -m pytest",
        "pytest -q",
        "python -m pytest -q 2>&1 | tail -n 5",
        "cd . && timeout 60 python -m pytest -q",
        "PYTHONDONTWRITEBYTECODE=1 python -m pytest -q",
        "python -m pytest -q test_calc.py::test_add",
        "bash -c 'python -m pytest -q'",
    ],
)
def test_a_real_passing_run_after_the_edit_lets_finish_through(project, command):
    trail = Trail(project, "fix the failing test")
    trail.call("replace_string", **FIX)
    obs = trail.run(command)
    assert obs.exit_code == 0, obs.output
    assert trail.finish("Fixed add; 2 passed.") is None, trail.guard.last_test


def test_unittest_and_node_runs_are_recognised_from_their_real_output(project, tmp_path):
    (project / "test_unit.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n"
        "        self.assertTrue(True)\n"
    )
    trail = Trail(project, "add a unittest")
    trail.call("create", path="extra.py", content="X = 1\n")
    trail.run("python -m unittest test_unit")
    assert trail.finish("Added; the tests pass.") is None
    js = tmp_path / "js"
    js.mkdir()
    (js / "a.test.mjs").write_text(
        "import test from 'node:test';\nimport assert from 'node:assert';\n"
        "test('adds', () => assert.equal(1 + 1, 2));\n"
    )
    trail = Trail(js, "create a module")
    trail.call("create", path="m.mjs", content="export const x = 1;\n")
    obs = trail.run("node --test")
    assert obs.exit_code == 0, obs.output
    assert trail.finish("Created; tests pass.") is None, trail.guard.last_test


def test_a_failing_run_after_the_edit_sends_finish_back_naming_step_command_and_exit_code(
    project,
):
    trail = Trail(project, "fix the failing test")
    trail.call("replace_string", **WRONG_FIX)
    trail.run(TESTS)
    firing = trail.finish("Fixed.")
    assert firing is not None
    assert firing.detail == "the last test run after the last edit did not pass"
    assert "the last test run (step 2: python -m pytest -q) failed with exit code 1" in (
        firing.message
    )
    assert "failed" in firing.message.split("exit code 1", 1)[1]  # the runner's summary line


def test_an_edit_without_a_run_names_the_step_the_files_and_a_command_to_run(project):
    trail = Trail(project, "fix the failing test")
    trail.call("read", path="calc.py")
    trail.call("replace_string", **FIX)
    firing = trail.finish("Fixed.")
    assert firing is not None
    assert firing.detail == "files were edited but no command was run after the last edit"
    assert "step 2 edited calc.py and no test command ran after it" in firing.message
    assert "`python -m pytest -q`" in firing.message
    trail.run("python calc.py")
    firing = trail.finish("Fixed.")
    assert firing is not None
    assert firing.detail == "files were edited but no test command ran after the last edit"
    assert "(step 4: `python calc.py`) is not a test run" in firing.message


def test_the_suggested_command_is_the_sessions_own_test_command(project):
    trail = Trail(project, "fix the failing test")
    trail.run("python -m pytest -q test_calc.py")
    trail.call("replace_string", **FIX)
    firing = trail.finish("Fixed.")
    assert firing is not None and "`python -m pytest -q test_calc.py`" in firing.message


def test_a_passing_run_before_the_last_edit_does_not_count(project):
    trail = Trail(project, "fix the failing test")
    trail.call("replace_string", **FIX)
    trail.run(TESTS)
    trail.call("create", path="notes.py", content="NOTE = 1\n")
    firing = trail.finish("Fixed; 2 passed.")
    assert firing is not None and "step 3 edited notes.py" in firing.message


def test_a_command_that_moves_files_is_a_change_that_needs_a_test_run(project):
    trail = Trail(project, "rename calc.py to arith.py")
    trail.run("cp calc.py arith.py")
    firing = trail.finish("Renamed.")
    assert firing is not None and "step 1 ran `cp calc.py arith.py`" in firing.message
    assert changes_files("sed -i s/a/b/ calc.py") and changes_files("echo x > notes.txt")
    assert changes_files("python -m pytest -q > out.txt") is None
    assert changes_files("git status && ls") is None


def test_undo_needs_a_new_test_run(project):
    trail = Trail(project, "fix the failing test")
    trail.call("replace_string", **FIX)
    trail.run(TESTS)
    trail.guard.undo(trail.step)
    firing = trail.finish("Fixed.")
    assert firing is not None and "undo" in firing.message


def test_after_max_rejections_finish_is_accepted_and_the_last_refusal_says_so(project):
    trail = Trail(project, "fix the failing test", Limits(max_finish_rejections=2))
    first = trail.finish()
    second = trail.finish()
    assert first is not None and "next finish will be accepted" not in first.message
    assert second is not None and "Refusal 2 of 2" in second.message
    assert "next finish will be accepted" in second.message
    assert trail.finish() is None, "the guard must never trap a session"


@pytest.mark.parametrize(
    "summary,claims",
    [
        ("All tests pass now.", True),
        ("Fixed; 44 passed.", True),
        ("The suite is green.", True),
        ("The tests still fail.", False),
        ("Tests don't pass yet.", False),
        ("Test suite does not pass on Windows.", False),
        ("Explained the parser.", False),
    ],
)
def test_what_counts_as_claiming_that_tests_pass(summary, claims):
    assert claims_tests_pass(summary) is claims


# -- recognising runners and their summaries -------------------------------------------------


@pytest.mark.parametrize(
    "command,runners",
    [
        ("pytest", ("pytest",)),
        ("py.test -x", ("pytest",)),
        ("python3 -X dev -m pytest tests", ("pytest",)),
        ("uv run --with pytest pytest -q", ("pytest",)),
        ("poetry run python -m unittest discover", ("unittest",)),
        ("coverage run --source x -m pytest", ("pytest",)),
        ("FOO=1 env -u BAR timeout 60 nice -n 5 pytest", ("pytest",)),
        (".venv/bin/pytest", ("pytest",)),
        ("tox -e py311", ("any",)),
        ("nox -s tests", ("any",)),
        ("go test ./...", ("go",)),
        ("cargo +nightly test", ("cargo",)),
        ("cargo nextest run", ("cargo",)),
        ("npm test", ("any",)),
        ("npm run test:unit", ("any",)),
        ("yarn test", ("any",)),
        ("pnpm --filter web test", ("any",)),
        ("npx jest --ci", ("jest",)),
        ("npx vitest run", ("jest",)),
        ("mocha", ("mocha",)),
        ("node --test", ("node",)),
        ("deno test -A", ("deno",)),
        ("bun test", ("bun",)),
        ("mvn -q test", ("maven",)),
        ("./gradlew :app:test", ("gradle",)),
        ("make -C build check", ("any",)),
        ("ctest --output-on-failure", ("ctest",)),
        ("bundle exec rspec", ("xunit",)),
        ("vendor/bin/phpunit", ("phpunit",)),
        ("dotnet test", ("dotnet",)),
        ("cd sub && pytest -q", ("pytest",)),
        ("# run the tests\npytest -q", ("pytest",)),
        # Not test runners at all.
        ("python -c 'import pytest'", ()),
        ("python script.py", ()),
        ("./pytest", ()),
        ("make build", ()),
        ("npm install", ()),
        ("go build ./...", ()),
        ("true # pytest", ()),
        ("echo pytest", ()),
        ("cat pytest.ini", ()),
    ],
)
def test_runner_recognition(command, runners):
    assert parse_test_command(command).runners == runners


@pytest.mark.parametrize(
    "command,distrust",
    [
        ("pytest -q; echo done", "prints text of its choosing"),
        ("pytest -q && git status", "goes on after the test runner"),
        ("pytest -q || true", "goes on after the test runner"),
        ("pytest | sed s/failed/passed/", "prints text of its choosing"),
        ("pytest | awk '{print}'", "prints text of its choosing"),
        ("echo '1 passed in 0.1s' | cat; pytest -q", "prints text of its choosing"),
        ("sort < log.txt; pytest", "shows the contents of a file"),
        ("pytest -q &", "runs in the background"),
        ("PATH=./fake:$PATH pytest", "changes PATH"),
        ("alias pytest='echo 1 passed'; pytest", "defines a shell function or alias"),
        ("function pytest { echo ok; }; pytest", "defines a shell function or alias"),
        # An install runs setup code that can print anything: run the tests on their own.
        ("pip install -e . && pytest -q", "runs beside the test runner"),
        ("date '+2 passed' && pytest -q", "runs beside the test runner"),
        ("pytest --co -q", "does not run the tests"),
    ],
)
def test_commands_whose_output_could_be_forged_are_not_believed(command, distrust):
    verdict = parse_test_command(command)
    assert verdict.is_test and verdict.distrust is not None and distrust in verdict.distrust


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q | tail -n 20",
        "pytest -q 2>&1 | tee log.txt | grep -v DEBUG",
        "yes | npm test",
        "cd src && pytest",
        "source .venv/bin/activate && pytest",
    ],
)
def test_ordinary_test_commands_are_believed(command):
    assert parse_test_command(command).distrust is None


@pytest.mark.parametrize(
    "family,output,passed",
    [
        ("pytest", "===== 3 passed, 1 warning in 0.12s =====", True),
        ("pytest", "3 passed in 0.12s", True),
        ("pytest", "....                       [100%]", True),
        ("pytest", "1 failed, 3 passed in 0.12s", False),
        ("pytest", "..F.                       [100%]", False),
        ("pytest", "===== 2 passed, 1 error in 0.3s =====", False),
        ("pytest", "==== no tests ran in 0.01s ====", False),
        ("pytest", "3 tests collected in 0.01s", False),
        ("unittest", "...\nRan 3 tests in 0.001s\n\nOK", True),
        ("unittest", "Ran 3 tests in 0.001s\n\nFAILED (failures=1)", False),
        ("unittest", "Ran 0 tests in 0.000s\n\nOK", False),
        ("unittest", "OK\nRan 3 tests in 0.001s", False),  # OK must follow the count
        ("go", "ok  \texample.com/a\t0.012s\n?   \texample.com/b\t[no test files]", True),
        ("go", "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\texample.com/a\t0.01s", False),
        ("cargo", "test result: ok. 4 passed; 0 failed; 0 ignored", True),
        ("cargo", "test result: FAILED. 3 passed; 1 failed", False),
        ("jest", "Tests:       5 passed, 5 total", True),
        ("jest", "Tests:       1 failed, 4 passed, 5 total", False),
        ("jest", " Test Files  1 passed (1)\n      Tests  4 passed (4)", True),
        ("jest", "      Tests  1 failed | 3 passed (4)", False),
        ("mocha", "  5 passing (12ms)", True),
        ("mocha", "  4 passing (12ms)\n  1 failing", False),
        ("node", "# tests 3\n# pass 3\n# fail 0", True),
        ("node", "# tests 3\n# pass 2\n# fail 1", False),
        ("node", "ℹ tests 3\nℹ pass 3\nℹ fail 0", True),
        ("deno", "ok | 3 passed | 0 failed (12ms)", True),
        ("bun", " 3 pass\n 0 fail\nRan 3 tests across 1 files.", True),
        ("bun", " 2 pass\n 1 fail", False),
        (
            "maven",
            "[INFO] Tests run: 5, Failures: 0, Errors: 0, Skipped: 0\n[INFO] BUILD SUCCESS",
            True,
        ),
        ("maven", "[ERROR] Tests run: 5, Failures: 1, Errors: 0\n[INFO] BUILD FAILURE", False),
        ("ctest", "100% tests passed, 0 tests failed out of 7", True),
        ("xunit", "5 examples, 0 failures", True),
        ("xunit", "5 examples, 2 failures", False),
        ("phpunit", "OK (5 tests, 9 assertions)", True),
        ("dotnet", "Passed!  - Failed:     0, Passed:     5, Skipped:     0", True),
        ("any", "  5 passing (3ms)", True),
        ("any", "Tests:       1 failed, 1 total", False),
        ("any", "> my-app@1.0.0 test\n> node run.js\ndone", False),
    ],
)
def test_runner_summaries(family, output, passed):
    assert judge_output(family, output).passed is passed


def test_exit_code_and_summary_are_both_required():
    assert judge("pytest -q", "exit code 0 (1s)\n3 passed in 0.1s", 0).passed
    assert not judge("pytest -q", "exit code 2 (1s)\n3 passed in 0.1s", 2).passed
    assert not judge("pytest -q", "exit code 0 (1s)\n", 0).passed
    assert not judge("pytest -q", "3 passed in 0.1s", None).passed  # timed out


# -- 2. stuck detection -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ("1 failed in 0.12s", "1 failed in 0.13s"),
        ("exit code 1 (0.1s)\nboom", "exit code 1 (2.4s)\nboom"),
        ("<Node object at 0x7f3a1c2b9e50>", "<Node object at 0x7f3a1c2ba0d0>"),
        ("worker pid 31337 crashed", "worker pid 4242 crashed"),
        (
            "tmp: /tmp/pytest-of-root/pytest-12/test_x0/a.txt",
            "tmp: /tmp/pytest-of-root/pytest-13/test_x0/a.txt",
        ),
        ("at 2024-05-01T12:00:01.123Z", "at 2025-01-09T08:13:44.999Z"),
        ("listening on 127.0.0.1:54321", "listening on 127.0.0.1:40007"),
        ("Time: 1.234 s", "Time: 0.998 s"),
        ("run 3f9a2c1b7e", "run 8812abcde0"),
    ],
)
def test_outputs_that_differ_only_by_noise_are_the_same(a, b):
    assert normalize_output(a) == normalize_output(b)


@pytest.mark.parametrize(
    "a,b",
    [
        ("1 failed, 3 passed", "2 failed, 2 passed"),
        ("progress 50%", "progress 75%"),
        ("AssertionError: 3 != 4", "AssertionError: 3 != 5"),
        ("error in parse()", "error in render()"),
    ],
)
def test_outputs_that_really_differ_stay_different(a, b):
    assert normalize_output(a) != normalize_output(b)


def _stuck_session(root: Path, turns: list, **limits: object) -> Session:
    session = Session(
        "fix the failing test",
        model=ScriptedModel([*turns, reply("", call("finish", summary="gave up"))]),
        root=root,
        policy="auto",
        limits=Limits(**limits),  # type: ignore[arg-type]
    )
    asyncio.run(session.run())
    return session


def _fired(session: Session) -> list[str]:
    return [e.guard for e in session.log.events if e.type == "guard_fired"]


def test_the_same_failing_run_with_changing_timings_fires_the_stuck_guard(project):
    run = call("run", command=TESTS)
    session = _stuck_session(project, [reply("", run)] * 3)
    assert "stuck_repeat" in _fired(session), [s.observation.output[-60:] for s in session.steps]


def test_twenty_noisy_repeats_stop_the_session(project):
    noisy = (
        "python -c \"import os, time; print('pid', os.getpid(), 'at', hex(id(object())), "
        "time.time(), 'in %.2fs' % time.perf_counter()); raise SystemExit(1)\""
    )
    session = _stuck_session(project, [reply("", call("run", command=noisy))] * 20)
    assert session.end_reason == "stuck" and len(session.steps) < 20


def test_a_failing_command_repeated_with_reads_between_fires(project):
    failing = call("run", command=TESTS)
    turns = [
        reply("", failing),
        reply("", call("read", path="calc.py")),
        reply("", failing),
        reply("", call("search", query="add")),
        reply("", failing),
    ]
    session = _stuck_session(project, turns)
    assert _fired(session).count("stuck_failing_command") == 1
    warned = session.steps[4].observation.output
    assert "has failed 3 times and nothing was changed in between" in warned


def test_other_commands_between_failing_runs_do_not_hide_the_loop(project):
    failing = call("run", command=TESTS)
    turns = [
        reply("", failing),
        reply("", call("run", command="ls")),
        reply("", failing),
        reply("", call("run", command="python -c 'print(1)'")),
        reply("", failing),
    ]
    assert "stuck_failing_command" in _fired(_stuck_session(project, turns))


def test_a_command_that_changes_files_between_failing_runs_is_progress(project):
    failing = call("run", command=TESTS)
    turns = [
        reply("", failing),
        reply("", call("run", command="cp calc.py calc_backup.py")),
        reply("", failing),
        reply("", call("run", command="mv calc_backup.py calc_old.py")),
        reply("", failing),
    ]
    assert "stuck_failing_command" not in _fired(_stuck_session(project, turns))
    assert installs_packages("pip install -e .") and installs_packages("uv pip install x")
    assert installs_packages("npm ci") and not installs_packages("pip list")


def test_an_edit_between_failing_runs_is_progress(project):
    failing = call("run", command=TESTS)
    turns = []
    for i in range(3):
        new = f"return a * b + {i}"
        old = "return a - b" if i == 0 else f"return a * b + {i - 1}"
        turns += [
            reply("", call("replace_string", path="calc.py", old_string=old, new_string=new)),
            reply("", failing),
        ]
    session = _stuck_session(project, turns)
    assert "stuck_failing_command" not in _fired(session)
    assert "stuck_repeat" not in _fired(session)


def test_a_command_whose_output_really_changes_is_not_stuck(project):
    counter = (
        "python -c \"import pathlib; p = pathlib.Path('n.txt'); "
        "n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n)); print('count', n)\""
    )
    detector = StuckDetector(Limits())
    runtime = Runtime(project)
    for _ in range(4):
        proposal = runtime.propose("run", {"command": counter})
        assert detector.observe(proposal, runtime.commit(proposal)) is None


# -- 1/2. end to end through a real Session --------------------------------------------------


def _attempts(session: Session) -> list[tuple[bool, str]]:
    return [(e.accepted, e.reason) for e in session.log.events if e.type == "finish_attempt"]


def test_session_forged_run_goes_back_then_a_real_run_finishes(project):
    model = ScriptedModel(
        [
            reply("", call("replace_string", **FIX)),
            reply("", call("run", command="echo '2 passed in 0.01s'")),
            reply("", call("finish", summary="Fixed; 2 passed.")),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="Fixed; 2 passed.")),
        ]
    )
    session = Session("fix the failing test", model=model, root=project, policy="auto")
    asyncio.run(session.run())
    assert session.end_reason == "finished"
    assert [a for a, _ in _attempts(session)] == [False, True]
    refusal = session.steps[2].observation.output
    assert refusal.startswith("finish refused: step 1 edited calc.py")
    assert "is not a test run" in refusal


def test_session_failing_run_goes_back(project):
    model = ScriptedModel(
        [
            reply("", call("replace_string", **WRONG_FIX)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="Done.")),
            reply("", call("finish", summary="Done.")),
            reply("", call("finish", summary="Done.")),
        ]
    )
    session = Session("fix the failing test", model=model, root=project, policy="auto")
    asyncio.run(session.run())
    assert [a for a, _ in _attempts(session)] == [False, False, True]
    assert "failed with exit code 1" in session.steps[2].observation.output
    assert "Refusal 2 of 2" in session.steps[3].observation.output


def test_session_change_task_without_a_change_goes_back(project):
    """Needs the session to pass its task to FinishGuard (``FinishGuard(limits, task=task)``)."""
    model = ScriptedModel(
        [
            reply("", call("read", path="calc.py")),
            reply("", call("finish", summary="add subtracts instead of adding.")),
            reply("", call("replace_string", **FIX)),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="Fixed add; 2 passed.")),
        ]
    )
    session = Session("fix the failing test", model=model, root=project, policy="auto")
    asyncio.run(session.run())
    assert _attempts(session) == [
        (False, "the task asks for a change but no file was changed"),
        (True, ""),
    ]
    assert session.end_reason == "finished"


def test_session_explain_task_finishes_without_a_run(project):
    model = ScriptedModel(
        [
            reply("", call("read", path="calc.py")),
            reply("", call("finish", summary="add returns a - b.")),
        ]
    )
    session = Session("explain what add does", model=model, root=project, policy="auto")
    asyncio.run(session.run())
    assert session.end_reason == "finished" and _attempts(session) == [(True, "")]


def test_session_veto_of_the_only_write_lets_finish_through(project):
    """Needs the session to report vetoed calls too (``observe(..., vetoed=vetoed)``)."""
    model = ScriptedModel(
        [
            reply("", call("replace_string", **FIX)),
            reply("", call("finish", summary="Stopped; the user declined the edit.")),
        ]
    )
    before = snapshot(project)
    session = drive(
        Session("fix the failing test", model=model, root=project),
        lambda s: s.veto("not like that"),
    )
    assert session.end_reason == "finished" and snapshot(project) == before


# -- 4. content guards: placeholders ---------------------------------------------------------

PLACEHOLDERS = [
    # Found by attacking the first version: a name in place of a noun, brackets, other ellipses.
    "# ... rest of f unchanged",
    "# ... rest of __init__ unchanged",
    "# rest of C.f unchanged",
    "# rest of method body here",
    "# (existing code)",
    "# existing implementation",
    "# Existing code",
    "# Keep the remaining code as-is",
    "# \u22ef",
    "# \u2026\u2026",
    "# ... stays the same",
    "// other handlers as above",
    "# ...",
    "    // ...",
    "/* ... */",
    "<!-- ... -->",
    "{/* ... */}",
    "-- ...",
    "; ...",
    "% ...",
    "#...",
    "# …",
    "# [...]",
    "[snip]",
    "<snip>",
    "--- snip ---",
    "(rest unchanged)",
    "# rest of file",
    "...existing code...",
    "... rest of the file ...",
    "// (unchanged)",
    "# unchanged",
    "# TODO: same as before",
    "# FIXME: rest unchanged",
    "# Same as above",
    "# ... rest of the code unchanged ...",
    "/* ... remaining methods ... */",
    "<!-- ... existing content ... -->",
    "    # (rest of implementation omitted)",
    "/* rest of the class unchanged */",
    "-- rest of query unchanged",
    " * ... existing methods ...",
    "{# ... #}",
    "(* ... *)",
    "# everything else unchanged",
    "# the other functions stay the same",
    "// ... other cases ...",
    "# (omitted for brevity)",
    "// ... etc",
]
REAL_CODE = [
    "...",
    "    ...",
    "def f(): ...",
    "    def stub(self) -> int: ...",
    "x = ...",
    "Callable[..., T]",
    "def f(*args: Any, **kw: Any) -> Tuple[int, ...]:",
    "    ...args,",
    "...rest,",
    "  ...rest",
    "const merged = { ...defaults, ...options };",
    "(...)",
    "[...]",
    "print('...')",
    '    "# ... existing code ...",',
    "# returns the value unchanged",
    "# leave the value unchanged if it is None",
    "# This keeps the rest of the string unchanged",
    "pass  # unchanged",
    "    return x  # ... unchanged",
    "# Keep existing entries when the term matches",
    "# the rest of the log is truncated here",
    "# Rest of the file is generated by protoc",
    "# Other handlers",
    "# REST API",
    "# see above",
    "# as above",
    "# etc",
    "# loading...",
    "# wait for it...",
    "# args: (a, b, ...)",
    "// handle SIGINT, SIGTERM and other signals...",
    "// TODO: implement",
    "# your code here",
    "[code]",
    "[tool.ruff]",
    "[more]",
    "<code>",
    "---",
    "* ...",
    "...     return 1",
    ">>> f(...)",
    "// same as before the refactor, but faster",
    "# ........................................",
    "# .-. .-. . . .-.",
    "# Everything else",
    "# no changes",
    "# file etc.",
]


@pytest.mark.parametrize("line", PLACEHOLDERS)
def test_placeholder_lines_are_refused(line):
    assert is_placeholder_line(line)


@pytest.mark.parametrize("line", REAL_CODE)
def test_real_code_and_prose_comments_are_not_placeholders(line):
    assert not is_placeholder_line(line)


def test_claims_inside_a_comment_block_are_prose_but_alone_they_are_placeholders():
    block = [
        (10, "    # The cache is rebuilt only when the key changed, otherwise the"),
        (11, "    # contents are the same"),
        (12, "    #     ..."),
        (13, "    # as the call before."),
    ]
    assert check_placeholder(block, "") is None
    alone = [(10, "    x = 1"), (11, "    # contents are the same"), (12, "    return x")]
    error = check_placeholder(alone, "")
    assert error is not None and error.line == 11
    # An unindented ellipsis is a placeholder even among comments.
    marked = [(10, "    # setup"), (11, "    # ..."), (12, "    # teardown")]
    assert check_placeholder(marked, "") is not None


def test_python_docstring_examples_may_elide_code():
    source = (
        'def connect():\n    """Open a connection.\n\n    Example::\n\n'
        "        with connect() as c:\n            # ...\n            # rest of your code\n"
        '    """\n    return object()\n'
    )
    added = list(enumerate(source.split("\n"), 1))
    assert check_placeholder(added, "", "net.py", source) is None
    assert check_placeholder(added, "", "net.py") is not None, "without the text, no context"
    broken = source.replace("return object()", "return (")  # still tokenizes up to the error
    assert check_placeholder(list(enumerate(broken.split("\n"), 1)), "", "net.py", broken) is None


def test_prose_files_refuse_only_markers_that_stand_in_for_the_document():
    example = [(3, "# ... rest of your code ..."), (4, "// ..."), (5, "    ...")]
    assert check_placeholder(example, "", "docs/guide.md") is None
    assert check_placeholder(example, "", "README") is None
    refused = check_placeholder([(7, "<!-- rest of README unchanged -->")], "", "README.md")
    assert refused is not None and refused.code == "PLACEHOLDER" and refused.line == 7
    assert check_placeholder([(2, "[rest of file omitted]")], "", "notes.txt") is not None
    assert check_placeholder(example, "", "src/app.py") is not None


@pytest.mark.parametrize(
    "path,old,new,code",
    [
        ("m.py", "    return 2", "    # ... rest unchanged", "PLACEHOLDER"),
        ("m.js", "  return 2;", "  // ... existing code ...", "PLACEHOLDER"),
        ("m.py", "    return 2", "    ...", None),  # a bare ellipsis body is real Python
        ("m.js", "  return 2;", "  return { ...defaults, two: 2 };", None),
        ("m.py", "    return 2", "    return 2  # returns the value unchanged", None),
    ],
)
def test_placeholders_through_the_runtime(ws, path, old, new, code):
    source = (
        "def two():\n    return 2\n"
        if path.endswith(".py")
        else "function two() {\n  return 2;\n}\n"
    )
    (ws / path).write_text(source)
    proposal = Runtime(ws).propose(
        "replace_string", {"path": path, "old_string": old, "new_string": new}
    )
    assert (proposal.error.code if proposal.error else None) == code, proposal.error


def test_a_marker_the_file_already_held_may_stay(ws):
    (ws / "q.js").write_text("// ...\nconst x = 1;\n")
    p = Runtime(ws).propose(
        "replace_string",
        {"path": "q.js", "old_string": "const x = 1;", "new_string": "// ...\nconst x = 2;"},
    )
    assert p.ok, p.error


# -- 4. content guards: serialized payloads -----------------------------------------------------

SERIALIZED = [
    "def f():\\n    return 1\\n",
    '{\\"a\\": 1}',
    "line1\\nline2",
    "line1\\\\nline2",
    "import os\\n\\ndef main():\\n\\tprint(os.sep)\\n",
    '"def f():\\n    return 1\\n"',
    '"line one\\nline two"',
    "# helper\\ndef f():\\n    return 1",
    "x = 1\\ny = 2",
    "const a = 1;\\nconst b = 2;",
    'say(\\"hi\\")',
    "<div>\\n  <p>x</p>\\n</div>",
    "    x = a - b\\n    return x\\n",
    "SELECT 1;\\nSELECT 2;",
    "public class A {\\n\\tint x;\\n}",
]
ESCAPES_IN_REAL_CODE = [
    'print("a\\nb")',
    'printf("%d\\n", x);',
    're.compile(r"\\d+\\n")',
    "lines = text.split(/\\r?\\n/);",
    "const re = /\\n+/g;",
    "char c = '\\n';",
    "line one\nline two\n",
    'echo -e "a\\nb"',
    "tr '\\n' ' '",
    "path = C:\\new\\table",
    "\\\\server\\tmp\\new",
    "$\\theta = \\nabla f + \\tau$",
    "Lines end with \\n.",
    "split the text on \\n to get lines",
    '"second line\\n"',
    '    "Usage: prog\\n  -h  help\\n"',
    'return "\\n".join(lines) + "\\t\\n"',
    'fmt.Printf("%s\\n", x)',
    "`a\\nb`",
    "x = 1  # split on \\n",
    "// split on \\r\\n",
    "if (c == '\\t') {",
    'def f():\n    return "a\\nb"\n',
    'let s = format!("{}\\n", x);',
    'msg = f"{a}\\n{b}"',
    "    # Order matters: replace \\r\\n first so we don't produce extra \\n from \\r then \\n",
    'def f():\n    """Split on \\n and \\r\\n.\n\n    ``\\n`` stays.\n    """\n',
    "This looks for a newline as a CR/LF pair (\\\\r\\\\n) even on UNIX because",
    'The ``\\n``, ``\\r``, and ``"`` characters are escaped',
    "g_1 = mean\\left[\\left(\\frac{x - \\mu}{\\sigma}\\right)^3\\right]",
]


@pytest.mark.parametrize("payload", SERIALIZED)
def test_serialized_payloads_are_refused(payload):
    error = check_serialized(payload)
    assert error is not None and error.code == "CONTENT_SERIALIZED"


@pytest.mark.parametrize("code", ESCAPES_IN_REAL_CODE)
def test_escapes_in_real_code_pass(code):
    assert check_serialized(code) is None


def test_a_whole_file_on_one_line_is_refused_by_the_runtime(ws):
    whole = "import os\\n\\n\\ndef main():\\n\\tprint(os.getcwd())\\n\\n\\nmain()\\n"
    before = snapshot(ws)
    for tool, args in [
        ("create", {"path": "w.py", "content": whole}),
        ("create", {"path": "w.js", "content": '"const a = 1;\\nconst b = 2;\\n"'}),
        (
            "replace_string",
            {
                "path": "pkg/core.py",
                "old_string": "    return a + b",
                "new_string": "    s = a + b\\n    return s",
            },
        ),
    ]:
        p = Runtime(ws).propose(tool, args)
        assert p.error is not None and p.error.code == "CONTENT_SERIALIZED", (tool, p.error)
    assert snapshot(ws) == before


def test_shell_code_may_escape_quotes_but_not_newlines():
    assert check_serialized('echo \\"$name\\" >> out.txt', "scripts/run.sh") is None
    assert check_serialized('\t@echo \\"done\\"', "Makefile") is None
    assert check_serialized('run: echo \\"hi\\"', ".github/workflows/ci.yml") is None
    assert check_serialized('echo \\"$name\\"', "tool.py") is not None
    assert check_serialized("set -e\\nmake\\n", "build.sh") is not None


def test_one_packed_line_among_real_lines_is_refused():
    packed = "def g():\\n    return 2\\n"
    edit = f"x = 1\n{packed}\ny = 2\nz = 3\nw = 4\n"
    assert check_serialized(edit) is not None
    assert check_serialized('x = 1\ny = "a\\nb\\nc"\nz = 3\n') is None


def test_prose_may_mention_one_escape():
    assert check_serialized("Use \\n or \\r\\n", "docs/x.md") is not None  # two escapes
    assert check_serialized("Join the lines with\\nnewlines", "notes.md") is None
    assert check_serialized("Join the lines with\\nnewlines", "notes.py") is not None


def test_huge_and_deeply_nested_inputs_stay_cheap():
    started = time.monotonic()
    assert check_serialized("a\\t" * 300_000) is not None
    assert check_serialized("x = 1\\n" * 200_000) is not None
    assert check_serialized("C:\\new\\tab " * 100_000) is None
    assert check_serialized("x = 1\n" * 200_000) is None
    lines = [(i, "# ..." if i == 49_999 else f"x{i} = {i}") for i in range(1, 50_000)]
    assert check_placeholder(lines, "") is not None
    parse_test_command("bash -c '" + "eval " * 2000 + "pytest'")  # no RecursionError
    parse_test_command("pytest && " * 5000 + "echo done")
    assert time.monotonic() - started < 10, "bounded work, not a hang"


# -- 5. strict JSON ------------------------------------------------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_python_accepts_are_refused(ws, constant):
    (ws / "c.json").write_text('{\n  "a": 1,\n  "b": 2\n}\n')
    p = Runtime(ws).propose(
        "replace_string",
        {"path": "c.json", "old_string": '"b": 2', "new_string": f'"b": {constant}'},
    )
    assert p.error is not None and p.error.code == "SYNTAX_ERROR"
    assert constant in p.error.message and "not valid JSON" in p.error.message
    assert p.error.line == 3


def test_json_constants_inside_strings_are_fine(ws):
    (ws / "c.json").write_text('{"a": 1}\n')
    p = Runtime(ws).propose(
        "replace_string",
        {"path": "c.json", "old_string": '"a": 1', "new_string": '"a": "NaN", "b": "-Infinity"'},
    )
    assert p.ok, p.error


def test_a_duplicate_key_added_to_json_is_refused_but_an_old_one_stays_editable(ws):
    (ws / "p.json").write_text('{\n  "name": "x",\n  "scripts": {"test": "jest"}\n}\n')
    rt = Runtime(ws)
    p = rt.propose(
        "replace_string",
        {
            "path": "p.json",
            "old_string": '"name": "x",',
            "new_string": '"name": "x",\n  "scripts": {},',
        },
    )
    assert p.error is not None and 'duplicate key "scripts"' in p.error.message
    assert p.error.line == 4
    assert first_error("p.json", '[{"id": 1}, {"id": 2}]') is None  # the same key in two objects
    (ws / "d.json").write_text('{"a": 1, "a": 2, "b": 3}\n')
    p = rt.propose(
        "replace_string", {"path": "d.json", "old_string": '"b": 3', "new_string": '"b": 4'}
    )
    assert p.ok, "an error the file already had does not block an edit"


def test_a_json_file_that_already_had_comments_stays_editable(ws):
    (ws / "settings.json").write_text('{\n  // the port\n  "port": 80\n}\n')
    rt = Runtime(ws)
    p = rt.propose(
        "replace_string", {"path": "settings.json", "old_string": "80", "new_string": "81"}
    )
    assert p.ok, p.error
    p = rt.propose(
        "replace_string", {"path": "settings.json", "old_string": "80", "new_string": "81,,"}
    )
    assert p.error is not None and p.error.code == "SYNTAX_ERROR", "a new error is still refused"


def test_jsonc_files_take_comments_and_trailing_commas_but_not_nan(ws):
    text = '{\n  // strict mode\n  "compilerOptions": {"strict": true,},\n  /* more */\n}\n'
    assert check_syntax("tsconfig.json", None, text) is None
    assert check_syntax(".vscode/settings.json", None, '{"a": 1, // x\n}') is None
    assert check_syntax("x.jsonc", None, '{"a": 1,}') is None
    error = check_syntax("tsconfig.json", text, text.replace("true,", "NaN,"))
    assert error is not None and "NaN" in error.message and error.line == 3
    assert (
        check_syntax("data.json", None, '{"a": 1, // x\n}') is not None
    )  # plain JSON: no comments


# -- 6. languages by suffix, ignoring case ----------------------------------------------------------


@pytest.mark.parametrize(
    "path,language",
    [("A.JSON", "json"), ("x.Json", "json"), ("M.PY", "python"), ("c.YAML", "yaml"),
     ("p.TOML", "toml"), ("x.JSONC", "json"), ("MAKEFILE", "make"), ("a.Ts", "typescript")],
)  # fmt: skip
def test_language_detection_ignores_case(path, language):
    assert language_of(path) == language


def test_upper_case_json_is_validated_strictly(ws):
    (ws / "CONFIG.JSON").write_text('{"a": 1}\n')
    p = Runtime(ws).propose(
        "replace_string", {"path": "CONFIG.JSON", "old_string": "1", "new_string": "NaN"}
    )
    assert p.error is not None and p.error.code == "SYNTAX_ERROR" and "NaN" in p.error.message


@pytest.mark.parametrize(
    "commands",
    [
        [f"python -m pytest -q # attempt {n}" for n in range(4)],
        ["python -m pytest -q", "python -m 'pytest' -q", 'python -m "pytest"  -q'],
    ],
)
def test_the_same_command_written_differently_is_the_same_call(commands):
    from grinta_jupyter.agent.guards import signature

    assert (
        len({signature("run", {"command": c, "timeout": n}) for n, c in enumerate(commands)}) == 1
    )
    assert signature("run", {"command": "pytest -q a"}) != signature(
        "run", {"command": "pytest -q b"}
    )
