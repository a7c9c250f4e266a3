"""Building tasks from real packages: ``grinta tasks build --packages P[,P...] --out DIR``.

For each package:

1. Its source distribution is fetched with ``pip download --no-binary :all:
   --no-deps`` into a cache outside the task folder (``default_cache()``), once:
   a pinned ``name==version`` already in the cache is not fetched again.
2. It is unpacked (bounded, no path escapes) and its layout detected: where
   the code is imported from (``src/`` or the root), where its tests are.
3. Its own test suite must pass as it came (the baseline), run as
   ``python -m pytest`` with the package's ``addopts`` cleared (they name
   plugins and coverage options this environment has no reason to have) and
   the import root on ``pythonpath``.
4. Every mutation site of ``mutate`` in its library code is a candidate; the
   candidates are tried in a seeded order that visits each function once
   before any twice. A mutation is kept only when the tests go from passing to
   failing (not to a timeout or a collection error), and then only if a second,
   full run fails again: that run's failures make the task's prompt, written
   as a user reports a bug (test names and assertions, never the mutation).
5. Each kept mutation is written as a task (``taskdir.BuiltTask``): starting
   files = the package folder plus the bug, the check = the test command, the
   reference fix = the original text (as a ``replace_string`` call).

Nothing here decides whether a task is hard: the number of tasks per package
and the seed decide which bugs are kept. Packages that pytest itself imports
(pluggy, packaging, ...) are refused: their tests would test pytest's copy.
A package whose suite does not pass as it came is refused with the reason, and
the build goes on with the others (``PackageReport.refused``).
"""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Queue
from typing import Any

from grinta_jupyter.experiment.errors import ExperimentUsageError
from grinta_jupyter.experiment.mutate import Mutation, find_mutations
from grinta_jupyter.experiment.taskdir import (
    FORMAT,
    INDEX,
    BuiltTask,
    TestCommand,
    TestRun,
    file_hashes,
    read_index,
    run_tests,
    unparametrized,
)

# Small pure-Python libraries whose own tests run in seconds here (docs/experiment.md lists
# the tasks built from each). Pinned, so that a build is repeatable and the cache is used.
DEFAULT_PACKAGES = (
    "inflection==0.5.1",
    "isodate==0.7.2",
    "webcolors==25.10.0",
    "parse==1.22.4",
    "six==1.17.0",
    "cachetools==8.0.2",
    "semver==3.1.2",
    "toolz==1.2.0",
)
DEFAULT_PER_PACKAGE = 25
# pytest imports these before the package's tests run, so their tests would test that copy.
PYTEST_OWN = {
    "pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "pygments",
    "colorama",
    "exceptiongroup",
    "tomli",
    "py",
}
PIP_TIMEOUT = 600.0  # seconds for one pip download
MAX_ARCHIVE_MEMBERS = 20_000
MAX_ARCHIVE_BYTES = 200 * 1024 * 1024
# Folders that hold no library code (what the tests cover is under the import root).
_NOT_LIBRARY = {
    "docs",
    "doc",
    "examples",
    "example",
    "benchmark",
    "benchmarks",
    "tools",
    "bin",
    "scripts",
    "tests",
    "test",
    "testing",
    "build",
    "dist",
}
_NOT_LIBRARY_FILES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py"}
# Left out of a package folder: caches only. An sdist's *.egg-info stays: it is the package's
# metadata (importlib.metadata.version finds it on the path), and tests may ask for it.
_SHIPPED_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
_CONFIG_FILES = ("setup.cfg", "tox.ini", "pytest.ini", "pyproject.toml")
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:==([A-Za-z0-9][A-Za-z0-9.+!_-]*))?$")


class BuildError(ExperimentUsageError):
    """A mistake the user can fix (a bad package name, an unusable --out); one line."""


@dataclass(frozen=True)
class Layout:
    """Where a package's code and tests are, relative to its root."""

    import_root: str  # "." or "src"
    tests: tuple[str, ...]  # test folders or files, as pytest arguments
    library: tuple[str, ...]  # the .py files mutations go into
    protected: tuple[str, ...]  # files the check keeps unchanged (tests, their config)


@dataclass
class PackageReport:
    """What a build did with one package; it goes into index.json."""

    requirement: str
    name: str = ""
    version: str = ""
    workspace: str = ""
    sdist: str = ""
    tests: int = 0  # tests in the suite
    baseline_seconds: float = 0.0
    sites: int = 0  # mutation sites found
    tried: int = 0
    kept: int = 0
    operators: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    refused: str | None = None  # why no task was built from it
    task_ids: list[str] = field(default_factory=list)


def default_cache() -> Path:
    """Where sdists are kept between builds: $GRINTA_CACHE, else the user's cache folder."""
    from grinta_jupyter.config import Config

    configured = Config.from_env(os.environ).cache
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "grinta"


def parse_requirement(text: str) -> tuple[str, str | None]:
    match = _REQUIREMENT.match(text.strip())
    if not match:
        raise BuildError(f"{text!r} is not a package name or name==version")
    return match.group(1), match.group(2)


def normalize(name: str) -> str:
    """PEP 503's normal form, with underscores (as sdist file names have it since PEP 625)."""
    return re.sub(r"[-_.]+", "_", name).lower()


# -- fetching and unpacking ------------------------------------------------------------------


def fetch_sdist(requirement: str, cache: Path) -> Path:
    """The source distribution for ``requirement`` in ``cache/sdists``, downloaded with pip if needed."""
    name, version = parse_requirement(requirement)
    if normalize(name) in PYTEST_OWN:
        raise BuildError(f"{name} is imported by pytest itself; its tests would test pytest's copy")
    sdists = cache / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    if version is not None:
        cached = _cached_sdist(sdists, name, version)
        if cached is not None:
            return cached
    with tempfile.TemporaryDirectory(prefix="download-", dir=sdists) as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
        command += ["--disable-pip-version-check", "--quiet", "--dest", scratch, requirement]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise BuildError(
                f"pip download {requirement} took more than {PIP_TIMEOUT:g}s"
            ) from None
        files = [p for p in Path(scratch).iterdir() if p.is_file()]
        if done.returncode != 0 or len(files) != 1:
            last = (done.stderr.strip().splitlines() or ["no file downloaded"])[-1]
            raise BuildError(f"pip download {requirement} failed: {last}")
        target = sdists / files[0].name
        os.replace(files[0], target)
    return target


def _cached_sdist(sdists: Path, name: str, version: str) -> Path | None:
    for path in sorted(sdists.iterdir()):
        stem = _archive_stem(path.name)
        if stem is None:
            continue
        file_name, _, file_version = stem.rpartition("-")
        if normalize(file_name) == normalize(name) and file_version == version:
            return path
    return None


def _archive_stem(filename: str) -> str | None:
    for suffix in (".tar.gz", ".tgz", ".tar.bz2", ".zip"):
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return None


def unpack(sdist: Path, dest: Path) -> Path:
    """Unpack ``sdist`` into ``dest`` (bounded, nothing outside it); return its top folder."""
    dest.mkdir(parents=True, exist_ok=True)
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as archive:
            members = archive.infolist()
            _bounded(len(members), sum(m.file_size for m in members), sdist)
            for member in members:
                target = (dest / member.filename).resolve()
                if not target.is_relative_to(dest.resolve()):
                    raise BuildError(
                        f"{sdist.name} has a path outside its folder: {member.filename}"
                    )
            archive.extractall(dest)
    else:
        with tarfile.open(sdist) as archive:
            tar_members = archive.getmembers()
            _bounded(len(tar_members), sum(m.size for m in tar_members), sdist)
            try:
                archive.extractall(dest, filter="data")  # refuses links and paths that leave dest
            except tarfile.FilterError as exc:
                raise BuildError(f"{sdist.name} is not a plain source archive: {exc}") from None
    tops = [p for p in dest.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise BuildError(f"{sdist.name} does not hold one top folder")
    return tops[0]


def _bounded(members: int, size: int, sdist: Path) -> None:
    if members > MAX_ARCHIVE_MEMBERS or size > MAX_ARCHIVE_BYTES:
        raise BuildError(
            f"{sdist.name} is too large to build tasks from ({members} files, {size} bytes)"
        )


# -- the package's layout and test command ---------------------------------------------------


def detect_layout(root: Path) -> Layout | None:
    """Where the code and the tests of the package at ``root`` are; None when it has no tests."""
    src = root / "src"
    has_src = src.is_dir() and (any(src.glob("*/__init__.py")) or any(src.glob("*.py")))
    import_root = "src" if has_src else "."
    tests: list[str] = []
    for name in ("tests", "test", "testing"):
        if (root / name).is_dir() and any((root / name).rglob("test*.py")):
            tests.append(name)
            break
    if not tests:  # tests inside the package (toolz/tests)
        base = root / import_root
        tests = sorted(
            p.relative_to(root).as_posix()
            for p in base.glob("*/tests")
            if p.is_dir() and any(p.glob("test*.py"))
        )
    if not tests:
        tests = sorted(p.name for p in root.glob("test_*.py")) + sorted(
            p.name for p in root.glob("*_test.py")
        )
    if not tests:
        return None
    test_paths = [root / t for t in tests]

    def is_test(path: Path) -> bool:
        return (
            any(path == t or t in path.parents for t in test_paths)
            or path.name.startswith("test_")
            or path.name.endswith("_test.py")
        )

    library = []
    base = root / import_root
    for path in sorted(base.rglob("*.py")):
        relative = path.relative_to(base)
        if any(part in _NOT_LIBRARY or part.startswith(".") for part in relative.parts[:-1]):
            continue
        if is_test(path) or path.name in _NOT_LIBRARY_FILES or path.name.endswith("egg-info"):
            continue
        if (
            import_root == "."
            and len(relative.parts) > 1
            and not (base / relative.parts[0] / "__init__.py").is_file()
        ):
            continue  # a folder of scripts, not an importable package
        library.append(path.relative_to(root).as_posix())
    protected = sorted(
        {
            p.relative_to(root).as_posix()
            for t in test_paths
            for p in ([t] if t.is_file() else t.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        }
        | {p.relative_to(root).as_posix() for p in root.rglob("conftest.py")}
        | {name for name in _CONFIG_FILES if (root / name).is_file()}
    )
    return Layout(import_root, tuple(tests), tuple(library), tuple(protected))


def test_command(layout: Layout, timeout: float) -> TestCommand:
    command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    command += ["-o", f"pythonpath={layout.import_root}", *layout.tests]
    return TestCommand(tuple(command), timeout)


# -- building --------------------------------------------------------------------------------


def build_tasks(
    requirements: Iterable[str],
    out: str | os.PathLike[str],
    *,
    cache: Path | None = None,
    per_package: int = DEFAULT_PER_PACKAGE,
    jobs: int = 2,
    seed: int = 0,
    say: Callable[[str], None] | None = None,
) -> list[PackageReport]:
    """Build up to ``per_package`` tasks from each package into the task folder ``out``.

    ``out`` may be new, empty, or a task folder already: a package built again
    replaces its earlier tasks, the others stay. index.json is written last.
    """
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    folder = Path(out)
    index_path = folder / INDEX
    if folder.exists() and not folder.is_dir():
        raise BuildError(f"--out {folder} is a file; give a folder for the tasks")
    if folder.is_dir() and any(folder.iterdir()) and not index_path.is_file():
        raise BuildError(f"--out {folder} holds files and is not a task folder")
    index: dict[str, Any] = (
        read_index(folder)
        if index_path.is_file()
        else {"format": FORMAT, "packages": {}, "tasks": []}
    )
    cache = cache or default_cache()
    reports = []
    for requirement in requirements:
        report = build_package(
            requirement, folder, cache=cache, per_package=per_package, jobs=jobs, seed=seed, say=say
        )
        reports.append(report)
        if report.refused is None:
            index["packages"][report.name] = asdict(report)
            index["tasks"] = [
                t for t in index["tasks"] if not t.startswith(f"{report.name}/")
            ] + report.task_ids
        else:
            say(f"{requirement}: refused: {report.refused}")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{INDEX}.tmp"
    tmp.write_text(json.dumps(index, indent=1))
    os.replace(tmp, index_path)
    return reports


def build_package(
    requirement: str,
    out: Path,
    *,
    cache: Path,
    per_package: int,
    jobs: int,
    seed: int,
    say: Callable[[str], None],
) -> PackageReport:
    """Fetch, check and mutate one package; write its tasks under ``out``."""
    report = PackageReport(requirement)
    started = time.monotonic()
    sdist = fetch_sdist(requirement, cache)
    report.sdist = sdist.name
    with tempfile.TemporaryDirectory(prefix="grinta-build-") as scratch_dir:
        scratch = Path(scratch_dir)
        unpacked = unpack(sdist, scratch / "unpacked")
        # The baseline and the mutations run on the folder exactly as the tasks will ship it.
        pristine = scratch / "package"
        shutil.copytree(unpacked, pristine, ignore=_SHIPPED_IGNORE)
        name, _ = parse_requirement(requirement)
        version = unpacked.name.rpartition("-")[2]
        report.name, report.version = normalize(name).replace("_", "-"), version
        report.workspace = f"{report.name}-{version}"
        layout = detect_layout(pristine)
        if layout is None:
            report.refused = "its source distribution has no tests"
            return report
        baseline = run_tests(pristine, test_command(layout, timeout=600.0))
        if not baseline.passed:
            failing = (
                ", ".join(f.test for f in baseline.failures[:3]) or baseline.output.strip()[-200:]
            )
            report.refused = (
                f"its tests do not pass as it came (exit {baseline.exit_code}): {failing}"
            )
            return report
        report.tests, report.baseline_seconds = len(baseline.outcomes), round(baseline.seconds, 2)
        # A mutant may loop forever; it gets ten times the baseline, and never less than 30 s.
        trial = test_command(layout, timeout=max(30.0, 10 * baseline.seconds))
        candidates = ordered_candidates(pristine, layout, random.Random(f"{seed}:{report.name}"))
        report.sites = len(candidates)
        say(
            f"{report.workspace}: {report.tests} tests pass in {baseline.seconds:.1f}s; "
            f"{len(candidates)} mutation sites in {len(layout.library)} files"
        )
        kept = _try_mutations(pristine, candidates, trial, per_package, jobs, report, scratch, say)
        package_dir = out / "packages" / report.workspace
        if package_dir.exists():
            shutil.rmtree(package_dir)
        shutil.copytree(pristine, package_dir)
        tasks_dir = out / "tasks" / report.name
        if tasks_dir.exists():
            shutil.rmtree(tasks_dir)
        tasks_dir.mkdir(parents=True)
        protected = file_hashes(pristine, list(layout.protected))
        check = test_command(layout, timeout=max(60.0, 20 * baseline.seconds))
        for number, (mutation, failed) in enumerate(kept, 1):
            task = make_task(
                report, number, mutation, failed, check, protected, pristine, package_dir
            )
            (tasks_dir / f"{number:03d}.json").write_text(json.dumps(task.to_json(), indent=1))
            report.task_ids.append(task.id)
            report.operators[mutation.operator] = report.operators.get(mutation.operator, 0) + 1
    report.seconds = round(time.monotonic() - started, 1)
    say(
        f"{report.workspace}: kept {report.kept} of {report.tried} mutations tried in {report.seconds:.0f}s"
    )
    return report


def ordered_candidates(root: Path, layout: Layout, rng: random.Random) -> list[Mutation]:
    """Every mutation site, in a seeded order that tries each function once before any twice."""
    by_function: dict[tuple[str, str], list[Mutation]] = defaultdict(list)
    for path in layout.library:
        try:
            source = (root / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for mutation in find_mutations(source, path):
            by_function[(path, mutation.function)].append(mutation)
    groups = [by_function[key] for key in sorted(by_function)]
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    ordered = []
    for depth in range(max((len(g) for g in groups), default=0)):
        ordered += [group[depth] for group in groups if depth < len(group)]
    return ordered


def _try_mutations(
    pristine: Path,
    candidates: list[Mutation],
    trial: TestCommand,
    wanted: int,
    jobs: int,
    report: PackageReport,
    scratch: Path,
    say: Callable[[str], None],
) -> list[tuple[Mutation, TestRun]]:
    """Try candidates in order, ``jobs`` at a time, until ``wanted`` are kept (or none are left).

    Each worker has its own copy of the package and puts one mutation in at a
    time. Batches are judged in candidate order, so which mutations are kept
    does not depend on which worker finished first.
    """
    copies: Queue[Path] = Queue()
    for i in range(max(1, jobs)):
        copy = scratch / f"work-{i}"
        shutil.copytree(pristine, copy)
        copies.put(copy)
    max_tries = 8 * wanted  # most sites are not worth a task; do not try them all on a big package
    kept: list[tuple[Mutation, TestRun]] = []
    per_function: dict[tuple[str, str], int] = defaultdict(int)

    def attempt(mutation: Mutation) -> TestRun | None:
        copy = copies.get()
        target = copy / mutation.path
        original = target.read_text(encoding="utf-8")
        try:
            target.write_text(mutation.apply(original), encoding="utf-8")
            first = run_tests(copy, trial, "-x")
            if first.exit_code != 1 or not first.failures:
                return None  # survived, timed out, or broke collection: not a realistic task
            full = run_tests(
                copy, trial
            )  # every failing test, for the report; and again: not flaky
            return full if full.exit_code == 1 and full.failures else None
        finally:
            target.write_text(original, encoding="utf-8")
            copies.put(copy)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        position = 0
        while len(kept) < wanted and position < len(candidates) and report.tried < max_tries:
            batch: list[Mutation] = []
            while len(batch) < max(1, jobs) and position < len(candidates):
                mutation = candidates[position]
                position += 1
                if per_function[(mutation.path, mutation.function)] >= 2:
                    continue  # two bugs per function at most: spread the tasks over the code
                batch.append(mutation)
            for mutation, run in zip(batch, pool.map(attempt, batch), strict=True):
                report.tried += 1
                function = (mutation.path, mutation.function)
                if run is not None and len(kept) < wanted and per_function[function] < 2:
                    kept.append((mutation, run))
                    per_function[function] += 1
            if report.tried % 20 < len(batch):
                say(f"{report.workspace}: {len(kept)} kept of {report.tried} tried")
    report.kept = len(kept)
    return kept


def make_task(
    report: PackageReport,
    number: int,
    mutation: Mutation,
    failed: TestRun,
    check: TestCommand,
    protected: dict[str, str],
    pristine: Path,
    package_dir: Path,
) -> BuiltTask:
    original = (pristine / mutation.path).read_text(encoding="utf-8")
    buggy = mutation.apply(original)
    tests = TestCommand(
        check.command,
        check.timeout,
        required=tuple(sorted({unparametrized(f.test) for f in failed.failures})),
        protected=protected,
    )
    return BuiltTask(
        id=f"{report.name}/{number:03d}",
        package=report.name,
        version=report.version,
        workspace=report.workspace,
        prompt=user_report(report.name, tests, failed),
        tests=tests,
        bug=mutation,
        source=package_dir,
        solution=(
            ("replace_string", reference_fix(mutation, buggy)),
            ("run", {"command": tests.shown()}),
            ("finish", {"summary": f"Fixed the bug in {mutation.function} ({mutation.path})."}),
        ),
    )


def user_report(package: str, tests: TestCommand, failed: TestRun, shown: int = 5) -> str:
    """The bug as a user reports it: the command, the failing tests, their assertions."""
    names = sorted({f.test for f in failed.failures})
    plural = "s" if len(names) != 1 else ""
    lines = [
        f"The tests of {package} fail. `{tests.shown()}` reports {len(names)} failing test{plural}:",
        "",
    ]
    seen: set[str] = set()
    for failure in failed.failures:
        if failure.test in seen or len(seen) == shown:
            continue
        seen.add(failure.test)
        lines.append(f"- {failure.test}")
        for line in failure.message.strip().splitlines()[:4]:
            lines.append(f"    {line[:200]}")
    if len(names) > shown:
        lines.append(f"- ... and {len(names) - shown} more")
    lines += [
        "",
        "Please find the cause in the library code and fix it. The tests are right; leave them as they are.",
    ]
    return "\n".join(lines)


def reference_fix(mutation: Mutation, buggy: str) -> dict[str, str]:
    """A ``replace_string`` call that turns ``buggy`` back into the original text.

    Its ``old_string`` is the whole lines around the bug, widened until they
    occur once in the file (a deleted block has no line of its own: the lines
    around the gap are used).
    """
    start, end = mutation.start, mutation.start + len(mutation.replacement)
    first = buggy.rfind("\n", 0, start) + 1
    if end > first and buggy[end - 1] == "\n":
        last = end  # the range already ends a line
    else:
        newline = buggy.find("\n", end)
        last = len(buggy) if newline < 0 else newline + 1

    def unique(first: int, last: int) -> bool:
        # Unique even with its surrounding whitespace stripped: some edit tools strip it.
        core = buggy[first:last].strip()
        return bool(core) and buggy.count(core) == 1

    while not unique(first, last) and (first > 0 or last < len(buggy)):
        if first > 0:
            first = buggy.rfind("\n", 0, first - 1) + 1
        if not unique(first, last) and last < len(buggy):
            newline = buggy.find("\n", last)
            last = len(buggy) if newline < 0 else newline + 1
    old = buggy[first:last]
    new = old[: start - first] + mutation.original + old[end - first :]
    return {"path": mutation.path, "old_string": old, "new_string": new}


def bug_diff(mutation: Mutation, original: str) -> str:
    """The bug as a unified diff (for a person reading a task; never in a prompt)."""
    buggy = mutation.apply(original)
    return "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            buggy.splitlines(keepends=True),
            f"a/{mutation.path}",
            f"b/{mutation.path}",
        )
    )
