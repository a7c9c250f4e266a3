"""Attacks on today's changes (fourth round): resume with GRINTA_LOG_DIR (the CLI and the
magic's lookup), eval's context budget and condense settings in each RunSpec, the CLI's
``parse_args`` override, and the finish guard's pytest-id parsing and skip-call rule.

A promise that holds is a plain test; a hole is ``xfail(strict=True)`` saying what breaks.
Real parts: the demo killed at the prompt (its real log), the real console entry, the
scripted solver's real runs, the real guard helpers.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter import cli
from grinta_jupyter.agent import testruns
from grinta_jupyter.agent.guards import _test_places
from grinta_jupyter.agent.history import latest_unfinished
from grinta_jupyter.agent.testruns import failing_tests, skipped_tests
from grinta_jupyter.config import Config
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_events
from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.runner import RunSpec, run_one
from grinta_jupyter.experiment.suite import _check_same_settings
from grinta_jupyter.jupyter import controller
from grinta_jupyter.jupyter.magics import MagicUsageError
from tests.test_cli_hostile import REPO, grinta
from tests.test_resume_log_dir import killed_at_the_prompt

BUNDLED = "raft_kv/fix-failing-test"
OTHER_USER = 54321
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")


# -- resume with GRINTA_LOG_DIR ------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """(workspace, log lines): a real demo killed at the prompt, its log in a log folder."""
    base = tmp_path_factory.mktemp("today4")
    root, logs = base / "demo", base / "logs"
    killed_at_the_prompt(root, GRINTA_LOG_DIR=str(logs))
    (log,) = logs.glob("*.jsonl")
    return root, log.read_text().splitlines()


def _workspace(tmp_path: Path, demo_log: tuple[Path, list[str]], name: str = "ws") -> Path:
    root = tmp_path / name
    shutil.copytree(demo_log[0], root, symlinks=True)
    return root


def _write_log(demo_log: tuple[Path, list[str]], path: Path, root: str, repeat: int = 1) -> Path:
    """The demo's log at ``path``, its session_start naming ``root`` (the body repeated)."""
    lines = demo_log[1]
    start = json.loads(lines[0])
    start["root"] = root
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([json.dumps(start), *(lines[1:] * repeat)]) + "\n")
    return path


def _start(log: Path) -> ev.SessionStart:
    return next(e for e in read_events(log) if isinstance(e, ev.SessionStart))


def test_resume_without_a_log_expands_a_tilde_log_dir(tmp_path, demo_log):
    home = tmp_path / "home"
    root = _workspace(tmp_path, demo_log)
    _write_log(demo_log, home / "logs" / "s1.jsonl", str(root))
    done = grinta(
        "resume", "--root", str(root), "--auto", timeout=120,
        HOME=str(home), GRINTA_LOG_DIR="~/logs",
    )  # fmt: skip
    assert "has a task that did not end" not in done.stderr
    assert done.returncode == 0, done.stderr


def test_a_named_log_in_a_tilde_log_dir_names_its_workspace(tmp_path, demo_log, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    root = _workspace(tmp_path, demo_log)
    log = _write_log(demo_log, home / "logs" / "s1.jsonl", str(root))
    assert cli._resume_root(None, log, _start(log), "~/logs") == root


def test_a_relative_log_dir_is_read_from_where_grinta_runs(tmp_path, demo_log, monkeypatch):
    root = _workspace(tmp_path, demo_log)
    log = _write_log(demo_log, tmp_path / "logs" / "s1.jsonl", str(root))
    monkeypatch.chdir(tmp_path)
    assert latest_unfinished(root, "logs") == Path("logs/s1.jsonl")
    assert cli._resume_root(None, Path("logs/s1.jsonl"), _start(log), "logs") == root


def test_a_log_dir_that_is_the_workspaces_own_sessions_folder(tmp_path, demo_log):
    """The two folders are one: the log is found (once) and names its workspace, the
    folder spelled directly or through a link."""
    root = _workspace(tmp_path, demo_log)
    sessions = root / ".grinta" / "sessions"
    log = _write_log(demo_log, sessions / "s1.jsonl", str(root))
    link = tmp_path / "sessions-link"
    link.symlink_to(sessions)
    assert latest_unfinished(root, sessions) == log
    assert latest_unfinished(root, link) in (log, link / "s1.jsonl")
    assert cli._resume_root(None, log, _start(log), str(sessions)) == root
    assert cli._resume_root(None, link / "s1.jsonl", _start(log), str(link)) == root


def test_a_linked_log_folder_and_a_workspace_given_through_a_link(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    log = _write_log(demo_log, tmp_path / "logs" / "s1.jsonl", str(root))
    logs_link, root_link = tmp_path / "logs-link", tmp_path / "ws-link"
    logs_link.symlink_to(tmp_path / "logs")
    root_link.symlink_to(root)
    assert latest_unfinished(root_link, logs_link) == logs_link / "s1.jsonl"
    assert (
        cli._resume_root(None, logs_link / "s1.jsonl", _start(log), str(tmp_path / "logs")) == root
    )
    assert cli._resume_root(None, log, _start(log), str(logs_link)) == root


def test_a_link_in_the_log_folder_is_not_found_without_a_log(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    real = _write_log(demo_log, tmp_path / "away" / "s1.jsonl", str(root))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "s1.jsonl").symlink_to(real)
    assert latest_unfinished(root, tmp_path / "logs") is None


@as_root
def test_another_users_link_in_the_log_folder_chooses_nothing(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    real = _write_log(demo_log, tmp_path / "away" / "s1.jsonl", str(root))
    logs = tmp_path / "logs"
    logs.mkdir()
    link = logs / "s1.jsonl"
    link.symlink_to(real)
    os.lchown(link, OTHER_USER, OTHER_USER)
    with pytest.raises(cli.UserError, match="pass --root"):
        cli._resume_root(None, link, _start(real), str(logs))


def test_a_log_without_a_root_is_not_found_and_needs_root(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    log = _write_log(demo_log, tmp_path / "logs" / "s1.jsonl", "  ")
    assert latest_unfinished(root, tmp_path / "logs") is None
    with pytest.raises(cli.UserError, match="pass --root"):
        cli._resume_root(None, log, _start(log), str(tmp_path / "logs"))


def test_a_root_with_dotdot_is_the_folder_it_leads_to(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    (tmp_path / "x").mkdir()
    log = _write_log(demo_log, tmp_path / "logs" / "s1.jsonl", str(tmp_path / "x" / ".." / "ws"))
    assert latest_unfinished(root, tmp_path / "logs") == log
    assert cli._resume_root(None, log, _start(log), str(tmp_path / "logs")).resolve() == root


def test_a_relative_root_names_no_workspace(tmp_path, demo_log, monkeypatch):
    first = _workspace(tmp_path, demo_log, "first")
    second = _workspace(tmp_path, demo_log, "second")
    logs = tmp_path / "logs"
    _write_log(demo_log, logs / "s1.jsonl", ".")
    found = []
    for root in (first, second):
        monkeypatch.chdir(root)
        found.append(latest_unfinished(root, logs))
    assert found == [None, None]


def test_a_named_log_with_a_relative_root_needs_root(tmp_path, demo_log):
    """``grinta resume LOG`` of this user's log in the log folder, its root written "."
    (a hand-edited log: sessions write absolute roots): no workspace is taken from it."""
    here = _workspace(tmp_path, demo_log, "here")
    logs = tmp_path / "logs"
    log = _write_log(demo_log, logs / "s1.jsonl", ".")
    done = grinta("resume", str(log), "--auto", cwd=here, timeout=60, GRINTA_LOG_DIR=str(logs))
    assert done.returncode == 2 and "pass --root" in done.stderr, done.stderr


HOLDER = """
import sys, time
from pathlib import Path
from grinta_jupyter.events.log import claim
handle = claim(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""


def test_a_log_folder_log_held_by_a_running_session_is_not_resumed(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    log = _write_log(demo_log, tmp_path / "logs" / "s1.jsonl", str(root))
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(log)], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert latest_unfinished(root, tmp_path / "logs") is None
    finally:
        child.kill()
        child.wait(timeout=30)
    assert latest_unfinished(root, tmp_path / "logs") == log


def test_thousands_of_small_logs_of_other_workspaces(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    logs = tmp_path / "logs"
    text = _write_log(demo_log, logs / "s0.jsonl", str(tmp_path / "elsewhere")).read_text()
    for i in range(1, 2000):
        (logs / f"s{i}.jsonl").write_text(text)
    started = time.monotonic()
    assert latest_unfinished(root, logs) is None
    assert time.monotonic() - started < 8


def test_huge_logs_of_other_workspaces_are_not_read_whole(tmp_path, demo_log):
    root = _workspace(tmp_path, demo_log)
    logs = tmp_path / "logs"
    big = _write_log(demo_log, logs / "s0.jsonl", str(tmp_path / "elsewhere"), repeat=2000)
    for i in range(1, 15):
        shutil.copyfile(big, logs / f"s{i}.jsonl")
    assert big.stat().st_size > 2_500_000
    started = time.monotonic()
    assert latest_unfinished(root, logs) is None
    assert time.monotonic() - started < 1.0  # 1.9 s when each log was read whole; ms now


# -- %grinta resume LOG: which log, and where it goes on ------------------------------------


def test_magic_resume_ids_that_are_paths_do_not_reach_out_of_the_folders(tmp_path, monkeypatch):
    logs, here = tmp_path / "logs", tmp_path / "here"
    logs.mkdir()
    here.mkdir()
    (tmp_path / "secret.jsonl").write_text("{}\n")
    (logs / "s1.jsonl").write_text("{}\n")
    monkeypatch.chdir(here)
    config = Config(log_dir=str(logs))
    for given in ("../secret", "..", ".", "../logs/nope", ""):
        if given:
            with pytest.raises(MagicUsageError, match="no session log"):
                controller._log_to_resume(given, config)
    # a path is the path given, relative to the kernel's folder, or absolute
    assert controller._log_to_resume("../secret.jsonl", config) == Path("../secret.jsonl")
    assert controller._log_to_resume(str(logs / "s1.jsonl"), config) == logs / "s1.jsonl"
    assert controller._log_to_resume("s1", config) == logs / "s1.jsonl"


class _Reached(Exception):
    pass


def _resume_reaching_the_session(monkeypatch, log: str, config: Config) -> Path:
    """Run controller.resume up to Session.resume; the root it would go on in."""
    from grinta_jupyter.agent.session import Session

    def stop(path, **kwargs):
        raise _Reached(kwargs.get("root"))

    monkeypatch.setattr(Session, "resume", staticmethod(stop))
    with pytest.raises(_Reached) as reached:
        controller.resume(log, config)
    return Path(reached.value.args[0])


def test_magic_resume_of_an_id_in_the_log_folder_goes_on_in_its_workspace(
    tmp_path, demo_log, monkeypatch
):
    root = _workspace(tmp_path, demo_log)
    _write_log(demo_log, tmp_path / "logs" / "s1.jsonl", str(root))
    monkeypatch.chdir(tmp_path)
    config = Config(log_dir=str(tmp_path / "logs"))
    assert _resume_reaching_the_session(monkeypatch, "s1", config) == root


@as_root
def test_magic_resume_without_an_id_skips_another_users_log(tmp_path, demo_log, monkeypatch):
    root = _workspace(tmp_path, demo_log)
    log = _write_log(demo_log, tmp_path / "logs" / "s1.jsonl", str(root))
    os.chown(log, OTHER_USER, OTHER_USER)
    monkeypatch.chdir(root)
    with pytest.raises(MagicUsageError, match="no unfinished session"):
        controller._log_to_resume(None, Config(log_dir=str(tmp_path / "logs")))


@as_root
def test_magic_resume_of_another_users_id_in_the_log_folder_chooses_nothing(
    tmp_path, demo_log, monkeypatch
):
    root = _workspace(tmp_path, demo_log)
    log = _write_log(demo_log, tmp_path / "shared" / "evil-1.jsonl", str(root))
    os.chown(log, OTHER_USER, OTHER_USER)
    monkeypatch.chdir(tmp_path)
    config = Config(log_dir=str(tmp_path / "shared"))
    try:
        went_on = _resume_reaching_the_session(monkeypatch, "evil-1", config)
    except MagicUsageError:
        return  # refused: the promise holds
    pytest.fail(f"went on in {went_on}, the workspace another user's log names")


def test_magic_resume_of_a_log_elsewhere_needs_root(tmp_path, demo_log, monkeypatch):
    root = _workspace(tmp_path, demo_log)
    copy = _write_log(demo_log, tmp_path / "downloads" / "s1.jsonl", str(root))
    monkeypatch.chdir(tmp_path)
    try:
        went_on = _resume_reaching_the_session(monkeypatch, str(copy), Config())
    except MagicUsageError:
        return
    pytest.fail(f"went on in {went_on} without --root")


# -- eval: context budget and condense in each RunSpec ------------------------------------


def _old_result(spec: RunSpec, drop: tuple[str, ...] = (), **changed) -> dict:
    from dataclasses import asdict

    saved = {k: v for k, v in asdict(spec).items() if k not in drop}
    return {spec.key: {"spec": {**saved, **changed}}}


def test_results_older_than_the_settings_count_as_made_with_the_defaults(tmp_path):
    spec = RunSpec(BUNDLED, "intent", "scripted", 0)
    old = _old_result(spec, drop=("context_budget", "condense"))
    _check_same_settings([spec], old, tmp_path)  # no raise
    explicit = _old_result(spec, context_budget=None, condense="digest")
    _check_same_settings([spec], explicit, tmp_path)
    budgeted = RunSpec(BUNDLED, "intent", "scripted", 0, context_budget=1500)
    with pytest.raises(ExperimentUsageError, match="context_budget None, not 1500"):
        _check_same_settings([budgeted], old, tmp_path)
    by_model = RunSpec(BUNDLED, "intent", "scripted", 0, condense="model")
    with pytest.raises(ExperimentUsageError, match="condense 'digest', not 'model'"):
        _check_same_settings([by_model], old, tmp_path)


def test_partial_or_odd_spec_dicts_are_other_settings(tmp_path):
    spec = RunSpec(BUNDLED, "intent", "scripted", 0, context_budget=1500, condense="model")
    for odd in (
        _old_result(spec, drop=("model",)),
        _old_result(spec, context_budget="1500"),
        _old_result(spec, condense="MODEL"),
        _old_result(spec, drop=("max_wall_time",), max_steps=None),
    ):
        with pytest.raises(ExperimentUsageError, match="other settings"):
            _check_same_settings([spec], odd, tmp_path)
    # a key it does not know, or another tasks folder, is no other setting
    _check_same_settings([spec], _old_result(spec, future=1, tasks_dir="/moved"), tmp_path)


def test_a_context_budget_too_small_for_any_request_still_ends_the_run(tmp_path):
    spec = RunSpec(BUNDLED, "intent", "scripted", 0, context_budget=1)
    result = run_one(spec, tmp_path)
    assert result["end_reason"] == "finished" and result["passed"], result["detail"]
    assert result["spec"]["context_budget"] == 1
    assert result["metrics"]["context_budget"] == 1
    log = (tmp_path / "logs" / f"{spec.key}.jsonl").read_text()
    assert '"type": "condensed"' in log


def _tools_called(out: Path, spec: RunSpec) -> list[str]:
    lines = (out / "logs" / f"{spec.key}.jsonl").read_text().splitlines()
    return [e["tool"] for e in map(json.loads, lines) if e["type"] == "tool_proposed"]


def test_condense_by_model_leaves_the_scripted_solution_as_it_is(tmp_path):
    """The scripted solver once answered the summary request (no tools) with a step of its
    plan: a condensation ate the solution's test run. It answers no text now, and the
    session keeps its digest."""
    by_digest = RunSpec(BUNDLED, "intent", "scripted", 0, context_budget=1200)
    by_model = RunSpec(BUNDLED, "intent", "scripted", 0, context_budget=1200, condense="model")
    run_one(by_digest, tmp_path / "digest")
    result = run_one(by_model, tmp_path / "model")
    assert result["spec"]["condense"] == "model"
    assert _tools_called(tmp_path / "model", by_model) == _tools_called(
        tmp_path / "digest", by_digest
    )


def test_grinta_eval_takes_the_settings_and_a_resume_must_share_them(tmp_path):
    out = tmp_path / "eval"
    args = ["eval", "--tasks", BUNDLED, "--toolsets", "intent", "--model", "scripted"]
    args += ["--runs", "1", "--out", str(out)]
    done = grinta(*args, timeout=180, GRINTA_CONTEXT_BUDGET="5000", GRINTA_CONDENSE="digest")
    assert done.returncode == 0, done.stderr
    (result,) = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert result["spec"]["context_budget"] == 5000 and result["spec"]["condense"] == "digest"
    again = grinta(*args, timeout=180, GRINTA_CONTEXT_BUDGET="6000")
    assert again.returncode == 2
    (line,) = again.stderr.splitlines()
    assert line.startswith("grinta: error:") and "context_budget 5000, not 6000" in line


# -- the CLI's parse_args: one error line, status 2 ----------------------------------------


def _main(*argv: str) -> tuple[int | str, str]:
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status: int | str = cli.main(list(argv))
    except SystemExit as exc:
        status = f"exit {exc.code}"
    return status, err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        (),
        ("--bogus",),
        ("bogus",),
        ("--", "run", "x"),
        ("demo", "--bogus"),
        ("run", "--bogus"),
        ("run", "--"),
        ("run", "--", "a", "b"),
        ("run", "x", "--root"),
        ("resume", "--bogus"),
        ("resume", "a", "b"),
        ("resume", "--", "--x", "y"),
        ("replay", "--bogus"),
        ("replay", "x", "y"),
        ("clean", "--bogus"),
        ("clean", "--keep", "-1"),
        ("metrics", "a", "b"),
        ("models", "--bogus"),
        ("tasks",),
        ("tasks", "build", "--out", "x", "--bogus"),
        ("eval", "--bogus"),
        ("eval", "x"),
        ("eval", "--runs"),
        ("eval", "--backend", "bogus"),
    ],
)
def test_every_mistake_on_the_line_is_one_error_line(argv):
    status, err = _main(*argv)
    assert status == 2, err
    (line,) = err.splitlines()
    assert line.startswith("grinta: error:") and "Traceback" not in err


def test_help_is_status_0():
    status, err = _main("--help")
    assert status == "exit 0" and not err
    done = subprocess.run(
        [sys.executable, "-m", "grinta_jupyter.cli", "--help"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "usage: grinta" in done.stdout and not done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "-v", "is", "broken"),
        ("run", "--continue", "L.jsonl", "fix", "it"),
        ("run", "--", "a", "b"),
    ],
)
def test_an_unquoted_task_gets_the_quoting_hint(argv):
    status, err = _main(*argv)
    assert status == 2 and "give the task in quotes" in err and len(err.splitlines()) == 1


def test_a_quoted_task_with_a_mistyped_flag_gets_no_quoting_hint():
    status, err = _main("run", "fix the failing test", "--modle", "gpt-4o")
    assert status == 2 and "--modle" in err
    assert "give the task in quotes" not in err


def test_an_unknown_flag_of_a_subcommand_points_to_its_own_help():
    status, err = _main("eval", "--bogus")
    assert status == 2 and "(see grinta eval --help)" in err


def test_grinta_acp_with_an_unknown_flag_is_one_error_line():
    status, err = _main("acp", "--bogus")
    assert status == 2
    (line,) = err.splitlines()
    assert line.startswith("grinta: error:")


# -- the finish guard: pytest ids, skip calls ----------------------------------------------


@pytest.mark.parametrize(
    ("output", "test"),
    [
        ("FAILED t.py::test_a[x::y] - assert 0", "t.py::test_a[x::y]"),
        ("FAILED t.py::test_a[a]b] - assert 0", "t.py::test_a[a]b]"),
        ("FAILED t.py::test_a[a - b] - AssertionError", "t.py::test_a[a - b]"),
        ("FAILED t.py::test_a[x] - assert [1] == [2]", "t.py::test_a[x]"),
        ("FAILED t.py::test_a - assert [1] == [2]", "t.py::test_a"),
        ("FAILED t.py::T::test_a[a b]", "t.py::T::test_a[a b]"),
        ("t.py::test_a[x] y] FAILED   [ 50%]", "t.py::test_a[x] y]"),
        ("t.py::test_a[x::y] ERROR    [ 50%]", "t.py::test_a[x::y]"),
    ],
)
def test_odd_pytest_ids_are_read_whole(output, test):
    assert failing_tests("python -m pytest -q", f"..F\n{output}\n1 failed\n") == {test}


def test_a_parameter_holding_colons_names_the_test_it_belongs_to():
    texts = {"tests/t.py": None}
    assert _test_places("tests/t.py::T::test_x[a::b]", texts) == [("tests/t.py", "T.test_x")]
    assert _test_places("t.py::test_x[a]b::c]", texts) == [("tests/t.py", "test_x")]


def test_the_failing_test_regex_is_linear_on_a_line_of_colons():
    started = time.monotonic()
    failing_tests("python -m pytest -q", ":" * 12000 + " FAILED\n1 failed\n")
    assert time.monotonic() - started < 1.0  # seconds when quadratic; under a ms now


def test_the_failing_test_regex_is_linear_on_brackets():
    started = time.monotonic()
    line = "FAILED t.py::test_a[" + "] x" * 20000
    failing_tests("python -m pytest -q", line + "\n" + "ERROR a[" * 5000 + "\n")
    assert time.monotonic() - started < 1.0


def _skipped(body: str, header: str = "") -> bool:
    text = f"{header}\n\ndef test_a():\n    {body}\n"
    layout = testruns.test_layout(text)
    assert layout is not None and "test_a" in layout[0], text
    return "test_a" in layout[1]


def test_real_skips_are_skips():
    assert _skipped("s()", "from pytest import skip as s")
    assert _skipped("skip()", "from pytest import skip")
    assert _skipped("pt.skip('x')", "import pytest as pt")
    assert _skipped("pytest.skip('x')")  # pytest need not be imported in the file
    assert _skipped("o.skip('x')", "from _pytest import outcomes as o")
    assert _skipped("pytest.importorskip('numpy')", "import pytest")
    assert _skipped("self.skipTest('x')")


def test_a_projects_own_skip_method_is_no_skip():
    assert not _skipped("reader = Reader(); reader.skip(3)", "from app import Reader")
    assert not _skipped("self.reader.skip(3)")


def test_skip_on_an_imported_module_that_is_not_pytest_is_no_skip():
    assert not _skipped("assert mylib.skip([1, 2], 1) == [2]", "import mylib")
    assert not _skipped("assert list(ops.skip(2)) == []", "from reactivex import operators as ops")


def test_a_bare_skip_imported_from_the_project_is_no_skip():
    assert not _skipped("assert skip([1, 2], 1) == [2]", "from mylib.seq import skip")


def test_a_long_expression_in_a_decorator_or_callee_leaves_the_layout_readable():
    long = " + ".join(["1"] * 600)
    decorated = (
        f"import pytest\n\n@pytest.mark.parametrize('n', [{long}])\n"
        "def test_a(n):\n    pytest.skip('later')\n"
    )
    called = (
        f"import pytest\n\ndef test_a():\n    assert ({long}).bit_length()\n    pytest.skip('x')\n"
    )
    assert skipped_tests(decorated) == {"test_a"}
    assert skipped_tests(called) == {"test_a"}


def test_a_long_assigned_expression_leaves_the_layout_readable():
    long = " + ".join(["1"] * 2000)
    text = f"import pytest\nDATA = [{long}]\n\ndef test_a():\n    pytest.skip('later')\n"
    assert skipped_tests(text) == {"test_a"}
