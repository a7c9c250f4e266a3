"""Every task's reference solution (intent tool calls), and the ledger_js workspace.

For each task in ``TASKS``: the check fails on the copy ``prepare`` makes, and
applying ``task.solution`` with ``Runtime(root).call`` (every call ``ok``, the
last test run green) makes it pass. The copies are prepared, solved and
checked once, in the module-scoped ``solved`` fixture; checks run in threads,
since each is a subprocess (pytest or ``node --test``) and the machine waits on it.
The runtime calls stay sequential: they share parsers and caches.

The rest covers what is new beside raft_kv: the ledger_js pristine suite and
its planted bug, the bug the stale-vote task plants, the node suite runner and
the JavaScript identifier scan the rename check relies on.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.samples.ledger_js_tasks import (
    HIDDEN_REVERSE_TEST_PATH,
    LEDGER_FAILING_TEST,
    LEDGER_FIX,
    _js_lines_naming,
    pristine_node_tests,
)
from grinta_jupyter.samples.raft_kv_tasks import STALE_VOTE_BUG, STALE_VOTE_FAILING_TEST
from grinta_jupyter.samples.tasks import (
    DEMO_FIX,
    TASKS,
    CheckResult,
    copy_workspace,
    get_task,
    run_node_suite,
    run_suite,
    sample_path,
)
from tests.test_samples import files, replace_once

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="the ledger_js tasks need node"
)

THREADS = 4


@dataclass
class Solved:
    """One task taken from its prepared copy to its solved copy."""

    root: Path
    before: CheckResult
    calls: list[tuple[str, bool, int | None, str]]  # name, ok, exit code, output
    after: CheckResult


def check_all(roots: dict[str, Path]) -> dict[str, CheckResult]:
    """Every task's check on its copy, in threads (each mostly waits on a subprocess)."""
    with ThreadPoolExecutor(THREADS) as pool:
        futures = {
            task_id: pool.submit(TASKS[task_id].check, root) for task_id, root in roots.items()
        }
    return {task_id: future.result() for task_id, future in futures.items()}


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Solved]:
    base = tmp_path_factory.mktemp("tasks")
    roots = {
        task_id: task.prepare(base / task_id.replace("/", "__")) for task_id, task in TASKS.items()
    }
    before = check_all(roots)
    calls = {}
    for task_id, root in roots.items():
        runtime = Runtime(root)
        calls[task_id] = []
        for name, args in TASKS[task_id].solution:
            observation = runtime.call(name, args)
            calls[task_id].append((name, observation.ok, observation.exit_code, observation.output))
    after = check_all(roots)
    return {
        task_id: Solved(roots[task_id], before[task_id], calls[task_id], after[task_id])
        for task_id in TASKS
    }


# -- every task ------------------------------------------------------------------


def test_the_tasks_cover_both_workspaces_and_every_kind() -> None:
    assert len(TASKS) >= 8
    for workspace in ("raft_kv", "ledger_js"):
        kinds = {task.kind for task in TASKS.values() if task.workspace == workspace}
        assert kinds == {"bug", "feature", "refactor"}, workspace


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_every_solution_uses_intent_tools_and_ends_by_testing_and_finishing(
    task_id: str, tmp_path: Path
) -> None:
    solution = get_task(task_id).solution
    assert [name for name, _ in solution[-2:]] == ["run", "finish"]
    intent_tools = {tool["function"]["name"] for tool in Runtime(tmp_path).tool_schemas()}
    assert {name for name, _ in solution} <= intent_tools


def test_the_raft_kv_bug_solution_is_the_demo_fix() -> None:
    assert ("replace_string", DEMO_FIX) in get_task("raft_kv/fix-failing-test").solution


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_check_fails_on_the_prepared_copy(task_id: str, solved: dict[str, Solved]) -> None:
    result = solved[task_id].before
    assert not result.passed
    assert result.detail


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_every_call_of_the_solution_is_ok(task_id: str, solved: dict[str, Solved]) -> None:
    calls = solved[task_id].calls
    failed = [(name, output) for name, ok, _, output in calls if not ok]
    assert not failed
    name, _, exit_code, output = calls[-2]
    assert name == "run" and exit_code == 0, output


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_check_passes_once_the_solution_is_applied(task_id: str, solved: dict[str, Solved]) -> None:
    result = solved[task_id].after
    assert result.passed, result.detail


# -- the ledger_js workspace ---------------------------------------------------------


def test_ledger_pristine_suite_fails_exactly_the_planted_test(tmp_path: Path) -> None:
    run = run_node_suite(copy_workspace("ledger_js", tmp_path / "ws"))
    assert run.exit_code == 1, run.output
    assert run.failures == [LEDGER_FAILING_TEST]
    assert set(run.outcomes) == pristine_node_tests("ledger_js")
    assert len(run.outcomes) > 35  # the rest of the suite ran, and passed
    assert "keeps the sign of negative amounts under one unit" in run.output


def test_ledger_fix_targets_one_spot_and_makes_the_suite_pass(tmp_path: Path) -> None:
    source = (sample_path("ledger_js") / LEDGER_FIX["path"]).read_text(encoding="utf-8")
    assert source.count(LEDGER_FIX["old_string"]) == 1
    root = copy_workspace("ledger_js", tmp_path / "ws")
    replace_once(root, LEDGER_FIX["path"], LEDGER_FIX["old_string"], LEDGER_FIX["new_string"])
    run = run_node_suite(root)
    assert run.exit_code == 0, run.tail()
    assert run.outcomes[LEDGER_FAILING_TEST] == "passed"


def test_ledger_package_is_an_es_module_tested_by_node() -> None:
    import json

    package = json.loads((sample_path("ledger_js") / "package.json").read_text())
    assert package["type"] == "module"
    assert package["scripts"]["test"] == "node --test"
    assert not package.get("dependencies") and not package.get("devDependencies")


def test_ledger_test_names_are_unique() -> None:
    # Node's JUnit report has no file names: a test's id is its chain of names.
    ids = pristine_node_tests("ledger_js")
    assert len(ids) == len({test_id.lower() for test_id in ids})
    assert all(" > " in test_id for test_id in ids)


def test_format_is_an_ambiguous_symbol_in_ledger_js(tmp_path: Path) -> None:
    root = copy_workspace("ledger_js", tmp_path / "ws")
    proposal = Runtime(root).propose(
        "edit_symbols",
        {"edits": [{"symbol": "format", "action": "replace", "new_source": "format() {}"}]},
    )
    assert proposal.error is not None and proposal.error.code == "AMBIGUOUS_SYMBOL"
    names = {candidate.name for candidate in proposal.error.candidates}
    assert {"Money.format", "TrialBalance.format", "TextTable.format"} <= names


def test_node_suite_names_a_file_that_does_not_load(tmp_path: Path) -> None:
    root = copy_workspace("ledger_js", tmp_path / "ws")
    (root / "test" / "broken.test.js").write_text("import { nope } from '../src/index.js';\n")
    run = run_node_suite(root)
    assert run.exit_code == 1
    assert run.outcomes["test/broken.test.js"] == "failed"


# -- checks cannot be satisfied by weakening the tests ----------------------------------


def test_ledger_fix_check_refuses_an_edited_test(tmp_path: Path) -> None:
    task = get_task("ledger_js/fix-failing-test")
    root = task.prepare(tmp_path / "ws")
    replace_once(root, "test/money.test.js", "-0.50').cents, -50", "-0.50').cents, 50")
    replace_once(root, "test/money.test.js", "-0.07').cents, -7", "-0.07').cents, 7")
    result = task.check(root)
    assert not result.passed
    assert "test/money.test.js was modified" in result.detail


def test_rename_check_refuses_an_alias_a_left_over_file_and_a_skipped_test(
    tmp_path: Path,
) -> None:
    task = get_task("ledger_js/rename-journal-entry")
    root = task.prepare(tmp_path / "ws")
    runtime = Runtime(root)
    for name, args in task.solution:
        assert runtime.call(name, args).ok
    index = root / "src" / "index.js"
    original = index.read_text(encoding="utf-8")
    index.write_text(original + "export { Transaction as JournalEntry };\n", encoding="utf-8")
    result = task.check(root)
    assert not result.passed and "src/index.js:" in result.detail
    index.write_text(original, encoding="utf-8")

    shutil.copy(root / "src" / "transaction.js", root / "src" / "journal.js")
    result = task.check(root)
    assert not result.passed and "src/journal.js" in result.detail
    (root / "src" / "journal.js").unlink()

    replace_once(
        root,
        "test/money.test.js",
        "it('keeps the sign of negative amounts under one unit', () => {",
        "it.skip('keeps the sign of negative amounts under one unit', () => {",
    )
    result = task.check(root)
    assert not result.passed and f"not passing: {LEDGER_FAILING_TEST}" in result.detail


def test_a_passing_test_with_the_same_names_does_not_hide_a_failure(tmp_path: Path) -> None:
    root = copy_workspace("ledger_js", tmp_path / "ws")
    suite, test = LEDGER_FAILING_TEST.split(" > ")
    (root / "test" / "decoy.test.js").write_text(
        f"import {{ describe, it }} from 'node:test';\ndescribe('{suite}', () => it('{test}', () => {{}}));\n"
    )
    assert run_node_suite(root).outcomes[LEDGER_FAILING_TEST] == "failed"


def test_feature_check_leaves_the_workspace_untouched(solved: dict[str, Solved]) -> None:
    root = solved["ledger_js/reverse-entry"].root
    before = files(root)
    assert get_task("ledger_js/reverse-entry").check(root).passed
    assert files(root) == before
    assert not (root / HIDDEN_REVERSE_TEST_PATH).exists()


# -- the bug the stale-vote task plants ------------------------------------------------------


def test_stale_vote_bug_fails_exactly_one_test(tmp_path: Path) -> None:
    root = get_task("raft_kv/stale-vote").prepare(tmp_path / "ws")
    source = (root / STALE_VOTE_BUG["path"]).read_text(encoding="utf-8")
    assert STALE_VOTE_BUG["new_string"] in source
    run = run_suite(root)
    assert run.exit_code == 1, run.output
    assert run.failures == [STALE_VOTE_FAILING_TEST]


# -- the JavaScript identifier scan ------------------------------------------------------


def test_js_scan_skips_comments_strings_and_template_text() -> None:
    source = (
        "// JournalEntry in a comment\n"
        "/* JournalEntry\n   over lines */ const a = 'JournalEntry';\n"
        'const b = "JournalEntry\\" still a string";\n'
        "const c = `JournalEntry ${1 + 1} JournalEntry`;\n"
        "const JournalEntryX = 1;\n"
    )
    assert _js_lines_naming(source, "JournalEntry") == []


def test_js_scan_finds_identifiers_in_code_and_template_substitutions() -> None:
    source = (
        "import { JournalEntry } from './journal.js';\n"
        "const label = `made by ${JournalEntry.name} at ${{ a: 1 }.a}`;\n"
        "export { JournalEntry as Entry };\n"
        "const nested = `${`${JournalEntry}`}`; const after = JournalEntry;\n"
    )
    assert _js_lines_naming(source, "JournalEntry") == [1, 2, 3, 4, 4]
