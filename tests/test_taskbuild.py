"""Building tasks from real packages: fetch, baseline, mutate, keep what the tests catch, write.

One real package (tests/experiment_tasks.py) is fetched from the package index
and built once per session; the refusals and the layout cases use small
source distributions made here, put in the cache as pip would have left them.
"""

from __future__ import annotations

import argparse
import io
import json
import tarfile
from pathlib import Path

import pytest

from grinta_jupyter.experiment.commands import add_task_parsers, eval_specs, tasks_command
from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.mutate import find_mutations
from grinta_jupyter.experiment.taskbuild import BuildError, build_tasks, fetch_sdist, reference_fix
from grinta_jupyter.experiment.taskdir import TaskDirError, load_task, task_ids, unparametrized
from grinta_jupyter.tools.facade import Runtime
from tests.experiment_tasks import TASKS, built_tasks


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_tasks(tmp_path_factory)


def test_each_built_task_fails_before_and_passes_after_its_reference_fix(built, tmp_path):
    folder, report = built
    ids = task_ids(folder)
    assert ids == [f"inflection/{n:03d}" for n in range(1, TASKS + 1)] == report.task_ids
    for task_id in ids:
        task = load_task(folder, task_id)
        root = task.prepare(tmp_path / task_id.replace("/", "-") / task.workspace)
        pristine = (task.source / task.bug.path).read_text()
        buggy = (root / task.bug.path).read_text()
        assert buggy == task.bug.apply(pristine) != pristine  # one range, nothing else moved
        before = task.check(root)
        assert not before.passed
        assert task.tests.required and task.tests.required[0] in before.detail
        name, args = task.solution[0]
        assert Runtime(root).call(name, args).ok  # the reference fix, through the real tool
        assert (root / task.bug.path).read_text() == pristine
        after = task.check(root)
        assert after.passed, after.detail


def test_the_prompt_is_a_users_report_of_the_failing_tests_not_the_bug(built):
    folder, _ = built
    for task_id in task_ids(folder):
        task = load_task(folder, task_id)
        assert task.prompt.startswith("The tests of inflection fail.")
        assert task.tests.shown() in task.prompt  # the command that shows it
        listed = [line[2:] for line in task.prompt.splitlines() if line.startswith("- test")]
        assert 1 <= len(listed) <= 5  # the first five failing tests, then a count
        assert {unparametrized(test) for test in listed} <= set(task.tests.required)
        assert task.bug.path not in task.prompt and "mutat" not in task.prompt.lower()
        assert task.solution[1] == ("run", {"command": task.tests.shown()})
        assert task.solution[2][0] == "finish"


def test_editing_the_tests_does_not_pass_the_check(built, tmp_path):
    folder, _ = built
    task = load_task(folder, task_ids(folder)[0])
    root = task.prepare(tmp_path / task.workspace)
    Runtime(root).call(*task.solution[0])
    test_file = root / task.tests.required[0].split("::")[0]
    test_file.write_text(test_file.read_text() + "\n# reviewed\n")
    verdict = task.check(root)
    assert not verdict.passed and "test files changed" in verdict.detail


def test_the_index_records_what_was_built_and_eval_plans_runs_from_the_folder(built):
    folder, report = built
    index = json.loads((folder / "index.json").read_text())
    entry = index["packages"]["inflection"]
    assert entry["kept"] == TASKS and entry["tried"] >= TASKS and entry["tests"] > 400
    assert entry["workspace"] == "inflection-0.5.1" and entry["sdist"] == "inflection-0.5.1.tar.gz"
    assert sum(entry["operators"].values()) == TASKS
    assert (folder / "packages" / "inflection-0.5.1" / "test_inflection.py").is_file()
    args = argparse.Namespace(tasks=str(folder), runs=2)
    specs = eval_specs(args, "scripted", ["intent", "broad"], max_steps=20)
    assert len(specs) == TASKS * 2 * 2
    assert {s.tasks_dir for s in specs} == {str(folder.resolve())} and specs[0].max_steps == 20


def test_a_pinned_sdist_in_the_cache_is_not_fetched_again(built):
    folder, report = built
    cache = folder.parent / "cache"
    before = sorted((cache / "sdists").iterdir())
    assert fetch_sdist("inflection==0.5.1", cache) == cache / "sdists" / report.sdist
    assert sorted((cache / "sdists").iterdir()) == before


# -- small packages made here ----------------------------------------------------------------

TINY = {
    "src/tiny/__init__.py": '''\
"""A tiny library."""


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def window(items, size):
    return [items[i : i + size] for i in range(0, len(items) - size + 1)]
''',
    "tests/test_tiny.py": """\
from tiny import clamp, window


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10
    assert clamp(0, 0, 10) == 0


def test_window():
    assert window([1, 2, 3], 2) == [[1, 2], [2, 3]]
    assert window([1, 2], 3) == []
""",
    "pyproject.toml": '[project]\nname = "tiny"\nversion = "1.0"\n',
    # Metadata as setuptools puts it in an sdist; a test reads it, so it must ship with the tasks.
    "src/tiny.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
    "tests/test_metadata.py": (
        "from importlib.metadata import version\n\n\n"
        "def test_version():\n    assert version('tiny') == '1.0'\n"
    ),
}


def make_sdist(cache: Path, name: str, files: dict[str, str], extra: tarfile.TarInfo | None = None):
    sdists = cache / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    path = sdists / f"{name}-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for relative, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-1.0/{relative}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if extra is not None:
            archive.addfile(extra, io.BytesIO(b"x" * extra.size))
    return path


def test_a_src_layout_package_is_built_and_tasks_command_reports_it(tmp_path, capsys):
    make_sdist(tmp_path / "cache", "tiny", TINY)
    parser = argparse.ArgumentParser()
    add_task_parsers(parser.add_subparsers(dest="command"))
    argv = ["tasks", "build", "--packages", "tiny==1.0", "--out", str(tmp_path / "tasks")]
    argv += ["--cache", str(tmp_path / "cache"), "--per-package", "2", "--jobs", "1"]
    assert tasks_command(parser.parse_args(argv)) == 0
    out = capsys.readouterr().out
    assert "tiny-1.0: 2 tasks (" in out and "2 tasks in" in out
    task = load_task(tmp_path / "tasks", "tiny/001")
    assert task.bug.path == "src/tiny/__init__.py"
    assert "pythonpath=src" in task.tests.command and "tests" in task.tests.command
    assert set(task.tests.protected) == {
        "tests/test_tiny.py",
        "tests/test_metadata.py",
        "pyproject.toml",
    }
    root = task.prepare(tmp_path / "work" / task.workspace)
    assert not task.check(root).passed
    Runtime(root).call(*task.solution[0])
    assert task.check(root).passed
    # Built again into the same folder: its tasks are replaced, not added.
    assert tasks_command(parser.parse_args(argv)) == 0
    assert task_ids(tmp_path / "tasks") == ["tiny/001", "tiny/002"]


def test_packages_that_cannot_make_tasks_are_refused_with_the_reason(tmp_path):
    cache = tmp_path / "cache"
    make_sdist(cache, "untested", {"untested/__init__.py": "def f(x):\n    return x + 1\n"})
    failing = dict(TINY)
    failing["tests/test_tiny.py"] += "\n\ndef test_broken():\n    assert clamp(1, 2, 3) == 1\n"
    make_sdist(cache, "broken", failing)
    reports = build_tasks(
        ["untested==1.0", "broken==1.0"], tmp_path / "out", cache=cache, say=print
    )
    assert [r.refused for r in reports] == [
        "its source distribution has no tests",
        reports[1].refused,
    ]
    assert "do not pass as it came" in reports[1].refused
    assert "tests/test_tiny.py::test_broken" in reports[1].refused
    assert json.loads((tmp_path / "out" / "index.json").read_text())["tasks"] == []


def test_user_mistakes_are_one_line_errors(tmp_path):
    escape = tarfile.TarInfo("../outside.txt")
    escape.size = 1
    make_sdist(tmp_path / "cache", "evil", TINY, extra=escape)
    with pytest.raises(BuildError, match="not a plain source archive"):
        build_tasks(["evil==1.0"], tmp_path / "out", cache=tmp_path / "cache", say=print)
    assert not (tmp_path / "cache" / "outside.txt").exists()
    with pytest.raises(BuildError, match="imported by pytest itself"):
        fetch_sdist("pluggy", tmp_path / "cache")
    with pytest.raises(BuildError, match="not a package name"):
        fetch_sdist("inflection; rm -rf /", tmp_path / "cache")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    with pytest.raises(BuildError, match="is not a task folder"):
        build_tasks(["tiny==1.0"], tmp_path / "notes", cache=tmp_path / "cache", say=print)
    with pytest.raises(TaskDirError, match="not a task folder"):
        eval_specs(
            argparse.Namespace(tasks=str(tmp_path / "notes"), runs=1), "scripted", ["intent"]
        )
    assert issubclass(BuildError, ExperimentUsageError) and issubclass(TaskDirError, ValueError)


def test_a_reference_fix_names_lines_that_occur_once_even_with_their_whitespace_stripped():
    source = (
        "def f(x):\n    y = x\n    return y\n\n\n"
        "def g(x):\n    y = x\n    return y + 1\n\n\n"
        "def h(x):\n    y = x\n    return -y\n"
    )
    (drop,) = [m for m in find_mutations(source, "m.py") if m.original == "    return y\n"]
    buggy = drop.apply(source)
    fix = reference_fix(drop, buggy)
    assert buggy.count(fix["old_string"].strip()) == 1  # "    y = x\n\n" alone is not
    assert buggy.replace(fix["old_string"], fix["new_string"]) == source
