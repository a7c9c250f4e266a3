"""Telling a real test run from a command that only prints like one.

The finish guard takes "the tests pass" only on the evidence of a test run,
and ``echo 1 passed`` prints the same words as pytest. A command counts as a
passing test run only when all of these hold:

1. Parsing the command (``shell.segments``, ``shell.unwrap``: comments dropped,
   wrappers such as ``timeout 60``, ``uv run``, ``npx``, ``bash -c "..."``
   seen through) finds a test runner ``runner_of`` knows (pytest, ``python -m
   unittest``, tox, nox, go test, cargo test, npm/yarn/pnpm test, jest,
   vitest, mocha, node --test, deno test, bun test, mvn test, gradle test,
   make test/check, ctest, rspec, phpunit, dotnet test, ...).
2. Nothing in the command can have printed a fake summary: no ``echo``,
   ``printf``, ``cat FILE``, ``python -c`` ... whose output is shown, no
   shell function or alias, no ``PATH=`` override, no runner sent to the
   background, and after the last runner only filters of its own pipeline
   (``| tail -n 30``, ``| grep -v x``, ``| tee log``).
3. The output holds that runner's own summary of a pass (pytest ``N passed``,
   unittest ``Ran N tests`` then ``OK``, go ``ok  pkg``, cargo ``test result:
   ok.``, jest/vitest ``Tests: N passed``, mocha ``N passing``, node ``# pass
   N`` with ``# fail 0``, ...) and no summary of a failure. Runners that only
   start another one (npm test, make test, tox) accept any known summary.
4. The exit code is 0.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import functools
import json
import os
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from grinta_jupyter.agent.shell import Segment, base_name, prepare, segments, skip_options, unwrap
from grinta_jupyter.runtime import pyast

# -- what each runner prints ----------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """How one runner reports: the ``passed`` patterns must match in order, ``failed`` not at all."""

    name: str
    passed: tuple[re.Pattern[str], ...]
    failed: re.Pattern[str]


# White space within a line is written [^\S\n]*, never \s*: with re.MULTILINE, \s* runs on
# through the blank lines after each line start, the square of a run of blank lines in a
# command's output.
def _summary(name: str, passed: str | tuple[str, ...], failed: str) -> Summary:
    patterns = (passed,) if isinstance(passed, str) else passed
    return Summary(
        name, tuple(re.compile(p, re.MULTILINE) for p in patterns), re.compile(failed, re.MULTILINE)
    )


_COUNTS = r"(?:\d+ [a-z]+(?: [a-z]+)?, )*"  # pytest: "1 failed, 43 passed, 2 warnings in 1.5s"
SUMMARIES: dict[str, Summary] = {
    s.name: s
    for s in (
        _summary(
            "pytest",
            # The summary line, or under -qq (addopts = "-q" plus -q) the last progress line.
            rf"^[= ]*{_COUNTS}\d+ passed\b[\w ,]* in \d+(?:\.\d+)?s\b|^[sxX]*\.[.sxX]*[^\S\n]*\[100%\]$",
            rf"^[= ]*{_COUNTS}\d+ (?:failed|errors?)\b|^[= ]*no tests ran\b|^Interrupted: "
            r"|^(?:FAILED|ERROR) \S+(?:::|\.py\b)|^[.sxX]*[FE][.sxXFE]*[^\S\n]*\[\s*\d+%\]$",
        ),
        _summary(
            "unittest",
            (r"^Ran [1-9]\d* tests? in ", r"^OK\b"),
            r"^FAILED \((?:failures|errors)=|^NO TESTS RAN",
        ),
        _summary(
            "go", r"^(?:ok\s+\S+|PASS$)", r"^(?:--- )?FAIL\b|^panic: |\[(?:build|setup) failed\]"
        ),
        _summary(
            "cargo",
            r"^test result: ok\. [1-9]\d* passed|^[^\S\n]*Summary \[[^\]]*\]\s+\d+ tests? run: [1-9]\d* passed",
            r"^test result: FAILED|^error(?:\[E\d+\])?: |^[^\S\n]*Summary \[.*\b[1-9]\d* failed",
        ),
        _summary(
            "jest",  # jest and vitest
            r"^[^\S\n]*Tests:?\s+(?:.*[,|]\s*)?[1-9]\d* passed",
            r"^[^\S\n]*Test(?:s| Suites| Files):?\s+(?:.*[,|]\s*)?[1-9]\d* failed",
        ),
        _summary("mocha", r"^[^\S\n]*[1-9]\d* passing\b", r"^[^\S\n]*[1-9]\d* failing\b"),
        _summary(
            "node",  # node --test: TAP ("# pass 3") or the spec reporter ("ℹ pass 3")
            (r"^[#ℹ] pass [1-9]\d*$", r"^[#ℹ] fail 0$"),
            r"^[#ℹ] (?:fail|cancelled) [1-9]",
        ),
        _summary("deno", r"^ok \| [1-9]\d* passed \| 0 failed", r"^FAILED \| |^error: Test failed"),
        _summary(
            "bun", (r"^[^\S\n]*[1-9]\d* pass$", r"^[^\S\n]*0 fail$"), r"^[^\S\n]*[1-9]\d* fail$"
        ),
        _summary(
            "maven",
            (r"\bTests run: [1-9]\d*, Failures: 0, Errors: 0\b", r"\bBUILD SUCCESS\b"),
            r"\bBUILD FAILURE\b|\bTests run: \d+, Failures: (?:[1-9]|\d+, Errors: [1-9])",
        ),
        _summary("gradle", r"^BUILD SUCCESSFUL\b", r"^BUILD FAILED\b|^FAILURE: "),
        _summary(
            "ctest",
            r"\b100% tests passed, 0 tests failed out of [1-9]",
            r"\btests passed, [1-9]\d* tests? failed",
        ),
        _summary(
            "xunit",  # rspec, minitest, mix test, swift test: "N examples, 0 failures"
            r"^(?:Executed )?[1-9]\d* (?:examples?|tests?|runs?),(?: with)?(?: \d+ assertions?,)? 0 failures\b",
            r"^(?:Executed )?\d+ (?:examples?|tests?|runs?),(?: with)?(?: \d+ assertions?,)?"
            r" (?:[1-9]\d* failures?|0 failures, [1-9]\d* errors?)",
        ),
        _summary(
            "phpunit",
            r"^OK \([1-9]\d* tests?, ",
            r"^(?:FAILURES|ERRORS)!$|^Tests: \d+, Assertions: \d+, (?:Failures|Errors):",
        ),
        _summary(
            "dotnet", r"^Passed!\s+-\s+Failed:\s+0,\s+Passed:\s+[1-9]", r"^Failed!\s+-\s+Failed:"
        ),
        _summary(
            "tox",
            r"^[^\S\n]*congratulations :\)",
            r"^[^\S\n]*(?:ERROR: |\S+: (?:FAIL\b|commands failed))|evaluation failed :\(",
        ),
        _summary("nox", r"Session \S+ was successful", r"Session \S+ (?:failed|aborted)"),
        # What a runner that starts another prints when that one failed; never a pass.
        _summary(
            "wrapper",
            r"(?!)",
            r"^g?make(?:\[\d+\])?: \*\*\* |^npm (?:ERR!|error) |^ELIFECYCLE |^error Command failed",
        ),
    )
}
# Runners that only start another (npm test, make test, tox): any known summary will do.
ANY = "any"
# Summaries that say an environment's commands ran, not that tests did: ``tox --notest``,
# ``tox -e lint`` and ``nox -s docs`` end with them too. Under ANY only their failures count;
# a pass needs the summary of the runner they started.
_NOT_EVIDENCE_OF_TESTS = frozenset({"tox", "nox"})


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str  # why not, or the summary line that shows the pass


def judge_output(family: str, output: str) -> Verdict:
    """Whether ``output`` holds ``family``'s summary of a pass and none of a failure."""
    text = output.replace("\r\n", "\n")
    summaries = list(SUMMARIES.values()) if family == ANY else [SUMMARIES[family]]
    for summary in summaries:
        failures = list(summary.failed.finditer(text))
        if failures:  # the last one is usually the runner's own summary line
            return Verdict(False, f"reported a failure ({_line_at(text, failures[-1].start())})")
    for summary in summaries:
        if family == ANY and summary.name in _NOT_EVIDENCE_OF_TESTS:
            continue
        found = _in_order(summary.passed, text)
        if found is not None:
            return Verdict(True, _line_at(text, found))
    name = "test runner" if family == ANY else family
    return Verdict(False, f"shows no {name} summary of passing tests in its output")


def _in_order(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    """Where the first of ``patterns`` matches, when each matches after the one before."""
    position, first = 0, None
    for pattern in patterns:
        match = pattern.search(text, position)
        if match is None:
            return None
        first = match.start() if first is None else first
        position = match.end()
    return first


def _line_at(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return text[start : end if end != -1 else len(text)].strip(" =")[:120]


# -- reading a command ------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedTestCommand:
    """The test runners a command starts, and why its output cannot be trusted (if it cannot)."""

    runners: tuple[str, ...]  # summary families, in order; empty: not a test command
    distrust: str | None = None

    @property
    def is_test(self) -> bool:
        return bool(self.runners)


def judge(command: str, output: str, exit_code: int | None, root: str | None = None) -> Verdict:
    """Whether running ``command`` with this ``output`` and ``exit_code`` shows tests passing
    (``root``: the workspace the command started in, as for ``parse_test_command``)."""
    test = parse_test_command(command, root)
    if not test.is_test:
        return Verdict(False, "is not a test command (no test runner in it)")
    if test.distrust:
        return Verdict(False, f"does not count: {test.distrust}")
    if exit_code is None:
        return Verdict(False, "did not finish")
    verdicts = [judge_output(family, output) for family in test.runners]
    if exit_code != 0:
        failing = next((v.reason for v in verdicts if v.reason.startswith("reported")), "")
        detail = failing.replace("reported a failure ", " ") if failing else ""
        return Verdict(False, f"failed with exit code {exit_code}{detail}")
    return next((v for v in verdicts if not v.passed), verdicts[0])


_DEFINES = re.compile(
    r"(?:^|[;&|\s])(?:function\s+[\w.:-]+|[\w.:-]+\s*\(\s*\)\s*\{|alias\s+[\w.-]+=)"
)
_PYTHON = re.compile(r"^(?:python(?:\d+(?:\.\d+)?)?|pypy\d*)(?:\.exe)?$")
_COVERAGE_VALUE_OPTIONS = frozenset(
    {"--source", "--rcfile", "--include", "--omit", "--data-file", "--context", "--concurrency"}
)
_PYTEST_MODULES = {"pytest", "py.test"}


def _python_target(
    args: list[str], takes_value: frozenset[str] = frozenset({"-X", "-W"})
) -> tuple[str | None, list[str]]:
    """(module, its arguments) for ``python [options] -m module ...``, else (None, the rest)."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "-m" or (args[i].startswith("-m") and len(args[i]) > 2):
            module = args[i][2:] or (args[i + 1] if i + 1 < len(args) else "")
            return module or None, args[i + (1 if len(args[i]) > 2 else 2) :]
        if args[i] in ("-c", "--"):
            break
        i += 2 if args[i] in takes_value else 1
    return None, args[i:]


_MAKE_TARGET = re.compile(r"^(?:test|tests|check|unittest|test[-_:]\S+|\S+[-_]tests?)$")
_GRADLE_TASK = re.compile(r"(?:^|:)(?:test\w*|check|build)$")
_MAVEN_PHASE = {"test", "verify", "install", "integration-test", "package", "surefire:test"}
_TOOL_DIRS = re.compile(
    r"(?:^|/)(?:s?bin|Scripts|\.bin|node_modules|\.?venv[^/]*|\.tox/[^/]+/bin)(?:/|$)"
)


# Project managers whose ``run NAME`` runs a script the project names (``hatch run test``,
# ``pdm run test``), and whose ``test`` sub-command runs the tests (``hatch test``, ``rye test``).
_SCRIPT_RUNNERS = {"hatch", "pdm", "pixi", "rye", "pipenv"}


def runner_of(words: list[str]) -> str | None:
    """The summary family of the test runner that ``words`` start, or None."""
    script = _script_runner(words)
    if script is not None:
        return script
    words = unwrap(words)
    if not words:
        return None
    executable, base = words[0], base_name(words[0])
    if "/" in executable.replace("\\", "/") and not executable.startswith("/"):
        # ./pytest could be any script; a tool directory (.venv/bin, node_modules/.bin) is not.
        folder = executable.replace("\\", "/").rsplit("/", 1)[0]
        if base not in ("gradlew", "mvnw") and not _TOOL_DIRS.search(folder + "/"):
            return None
    args = words[1:]
    if _PYTHON.match(base):
        module, rest = _python_target(args)
        if module:
            return runner_of([module, *rest])
        if len(rest) >= 2 and base_name(rest[0]) == "manage.py" and rest[1] == "test":
            return "unittest"
        return None
    if base in _PYTEST_MODULES:
        return "pytest"
    if base == "unittest":
        return "unittest"
    if base in ("tox", "nox"):
        return ANY
    if base == "coverage":
        rest = skip_options(args, set())
        if rest[:1] == ["run"]:
            module, rest = _python_target(rest[1:], _COVERAGE_VALUE_OPTIONS)
            return runner_of([module, *rest]) if module else None
        return None
    first = skip_options(args, {"-C", "--prefix", "--filter", "-F", "--dir", "--cwd"})
    sub = first[0] if first else ""
    if base == "go":
        return "go" if sub == "test" else None
    if base == "cargo":
        if sub.startswith("+"):
            sub = first[1] if len(first) > 1 else ""
        return "cargo" if sub == "test" or first[:2] == ["nextest", "run"] else None
    if base in ("npm", "yarn", "pnpm", "bun"):
        if base == "bun" and sub == "test":
            return "bun"
        if sub in ("run", "run-script"):
            sub = skip_options(first[1:], set())[0] if len(first) > 1 else ""
        elif base == "npm" and sub in ("t", "tst"):
            sub = "test"
        return ANY if sub == "test" or sub.startswith(("test:", "test-")) else None
    if base in ("jest", "vitest"):
        return "jest"
    if base == "mocha":
        return "mocha"
    if base in ("node", "node.exe"):
        return "node" if "--test" in args else None
    if base == "deno":
        return "deno" if sub == "test" else None
    if base in ("mvn", "mvnw", "mvn.cmd"):
        return "maven" if any(a in _MAVEN_PHASE for a in args) else None
    if base in ("gradle", "gradlew", "gradlew.bat"):
        return "gradle" if any(_GRADLE_TASK.search(a) for a in args) else None
    if base in ("make", "gmake", "just", "rake", "composer", "task"):
        return ANY if any(_MAKE_TARGET.match(a) for a in first) else None
    if base == "ctest":
        return "ctest"
    if base in ("rspec", "minitest"):
        return "xunit"
    if base in ("mix", "swift"):
        return "xunit" if sub == "test" else None
    if base == "rails":
        return ANY if sub == "test" else None
    if base == "php":
        if first[:2] == ["artisan", "test"]:
            return ANY
        return "phpunit" if first and base_name(first[0]) == "phpunit" else None
    if base == "phpunit":
        return "phpunit"
    if base == "dotnet":
        return "dotnet" if sub == "test" else None
    return None


def _script_runner(words: list[str]) -> str | None:
    """ANY for ``hatch test``, ``rye test``, ``hatch run test``, ``pdm run test:unit`` ..."""
    start = unwrap(words)
    if len(start) >= 2 and base_name(start[0]) in _SCRIPT_RUNNERS:
        rest = skip_options(start[1:], {"-e", "--env", "-p", "--project"})
        if rest[:1] == ["test"]:
            return ANY
    # unwrap sees through ``hatch run``: what is left is the script's name.
    for i, word in enumerate(words[:-2]):
        if base_name(word) in _SCRIPT_RUNNERS and words[i + 1] == "run":
            name = skip_options(words[i + 2 :], {"-e", "--env", "-p", "--project"})
            if name and _MAKE_TARGET.match(name[0]) and name[0] == (start[:1] or [""])[0]:
                return ANY
    return None


# What may stand before a test runner in a command that is evidence of a test run: commands
# that print nothing of their own choosing. Everything else there is distrusted.
_QUIET = {"cd", "pushd", "popd", "export", "set", "unset", "true", ":", "ulimit", "umask"}
# Runner options that list, describe or build the tests instead of running them.
_NOT_RUNNING = {
    "--co", "--collect-only", "--version", "-h", "--help", "--fixtures", "--markers",
    "--setup-plan", "--setup-only", "-list", "--listTests", "--list", "--no-run", "--dry-run",
    "--collectonly", "--setupplan", "--setuponly",  # pytest's other spellings of the same
}  # fmt: skip
# Commands whose output, shown on the screen, could imitate a test summary.
_PRINTERS = {"echo", "printf", "print", "yes", "tac", "awk", "gawk", "mawk", "figlet"}
_CODE_FLAGS = {"-c", "-e", "-E", "-p", "--eval", "--print", "-r"}  # python -c, node -e, perl -e ...
_INTERPRETERS = re.compile(r"^(?:python[\d.]*|pypy\d*|node|perl|ruby|php|deno|bun|lua|Rscript)$")
# Filters that only pass on or drop lines of what is piped into them.
_FILTERS = {"tail", "head", "grep", "egrep", "fgrep", "rg", "cat", "tee", "sort", "uniq", "less"}
_FILTER_VALUE_OPTIONS = {"-n", "-c", "-e", "-f", "-m", "-A", "-B", "-C", "--lines", "--bytes"}


def _prints(parts: list[Segment], index: int) -> str | None:
    """Why ``parts[index]`` could show text of its own choosing, or None."""
    segment = parts[index]
    following = index + 1
    while parts[following - 1].piped and following < len(parts):
        if base_name((unwrap(parts[following].words) or [""])[0]) not in _FILTERS:
            return None  # its output is read by a program, not passed on to the screen
        following += 1
    words = unwrap(segment.words)
    if not words:
        return None
    base = base_name(words[0])
    if base in _PRINTERS:
        return f"`{segment.text}` prints text of its choosing"
    if base == "sed" and not any(w.startswith(("-i", "--in-place")) for w in words[1:]):
        return f"`{segment.text}` prints text of its choosing"
    if _INTERPRETERS.match(base) and any(w in _CODE_FLAGS for w in words[1:3]):
        return f"`{segment.text}` prints text of its choosing"
    if base in _FILTERS and (_operands(words) or segment.reads):
        return f"`{segment.text}` shows the contents of a file"
    return None


def _operands(words: list[str]) -> list[str]:
    """The file operands of a filter (for grep, the first operand is the pattern)."""
    base = base_name(words[0])
    rest: list[str] = []
    i = 1
    while i < len(words):
        word = words[i]
        if word in _FILTER_VALUE_OPTIONS:
            i += 2
            continue
        if word.startswith("-") and word != "-":
            i += 1
            continue
        rest.append(word)
        i += 1
    if base in ("grep", "egrep", "fgrep", "rg") and not any(w in ("-e", "-f") for w in words):
        rest = rest[1:]
    if base == "tee":
        return []  # tee writes its operands; what it shows is what it was given
    return [w for w in rest if w != "-"]


def parse_test_command(command: str, root: str | None = None) -> ParsedTestCommand:
    """The test runners ``command`` starts and whether its output can be believed.

    ``root`` is the workspace folder the command starts in: an absolute path inside it
    (``cd /home/me/proj && pytest``) is the workspace's. Without it, any absolute path may
    be outside it and the run does not count."""
    parts = segments(command)
    runners = [(i, runner_of(s.words)) for i, s in enumerate(parts)]
    found = [(i, family) for i, family in runners if family is not None]
    if not found:
        return ParsedTestCommand(())
    families = tuple(dict.fromkeys(family for _, family in found))
    return ParsedTestCommand(families, _distrust(command, parts, [i for i, _ in found], root))


def _distrust(
    command: str, parts: list[Segment], runner_indexes: list[int], root: str | None = None
) -> str | None:
    if _DEFINES.search(prepare(command)):
        return "the command defines a shell function or alias"
    for index, segment in enumerate(parts):
        words = segment.words
        if any(w.startswith("PATH=") for w in words[:3]) or (
            bool(words)
            and base_name(words[0]) == "export"
            and any(w.startswith("PATH=") for w in words)
        ):
            return "the command changes PATH, so the runner it starts may not be the real one"
        reason = _prints(parts, index)
        if reason:
            return reason
    elsewhere = _runs_elsewhere(parts, runner_indexes, root)
    if elsewhere:
        return elsewhere
    for i in runner_indexes:
        if parts[i].background:
            return f"`{parts[i].text}` runs in the background"
        listing = _NOT_RUNNING & set(parts[i].words)
        if listing:
            return f"`{parts[i].text}` does not run the tests ({sorted(listing)[0]})"
        excluded = excludes_tests(parts[i].words) or _excluded_by_added_options(parts[: i + 1])
        if excluded:
            return (
                f"`{parts[i].text}` leaves tests out ({excluded}), and a test it leaves out may "
                "be the one that fails; select the tests to run instead"
            )
    lost = _exit_code_lost(parts, runner_indexes)
    if lost:
        return lost
    last = runner_indexes[-1]
    for index, segment in enumerate(parts[:last]):
        if index in runner_indexes or (segment.piped and index + 1 in runner_indexes):
            continue  # a runner, or what feeds one (`yes | npm test`): nothing of it is shown
        words = unwrap(segment.words)
        base = base_name(words[0]) if words else ""
        if base in _QUIET or (base in ("source", ".") and words[-1].endswith("activate")):
            continue
        # Anything else that runs beside the tests (date, basename, a script) could print a
        # summary of its own: only a plain test command is taken as evidence.
        return f"`{segment.text}` runs beside the test runner and could print anything"
    last = runner_indexes[-1]
    for segment in parts[last + 1 :]:
        base = base_name(unwrap(segment.words)[0]) if unwrap(segment.words) else ""
        if segment.joined_by == "|" and base in _FILTERS:
            dropped = _drops_failures(unwrap(segment.words))
            if dropped:
                return (
                    f"`{segment.text}` {dropped}, and the exit code is then its own, not "
                    "the runner's"
                )
            continue
        return (
            f"the command goes on after the test runner (`{segment.text}`), so its output "
            "and exit code are not the runner's alone"
        )
    return None


def _exit_code_lost(parts: list[Segment], runner_indexes: list[int]) -> str | None:
    """Why a runner before the last one may have failed unseen: ``pytest a || pytest b``
    runs b only when a failed, and after ``;`` the next run goes on whatever a did (its
    output may have gone to ``/dev/null``); only ``&&`` keeps a failure from passing on."""
    for index in runner_indexes[:-1]:
        end = index
        while parts[end].piped and end + 1 < len(parts):
            end += 1
        joined = parts[end + 1].joined_by if end + 1 < len(parts) else "&&"
        if joined in ("||", ";", "\n"):
            return (
                f"`{parts[index].text}` is followed by `{joined.strip() or 'a new line'}`, so its "
                "failure does not stop the runs after it; join the runs with `&&` or name all "
                "the tests in one run"
            )
    return None


# -- tests run somewhere else, or by a changed pytest -----------------------------------
#
# Commands start in the workspace root, and only a run of the workspace's own tests is
# evidence: ``cd /tmp/old && pytest`` passes on another project. The folder a command names
# is read without knowing where the workspace is, so a folder that may be outside it
# counts as outside: an absolute path, one that climbs above where the command started
# (``..``, ``sub/../..``), the home folder (``cd``, ``~``), the previous folder (``cd -``)
# or a path the shell fills in (``$DIR``, ``$(...)``). Run from the root, naming
# ``tests/...`` instead.

# Options that move a runner to another folder or project, by runner.
_FOLDER_OPTIONS: dict[str, frozenset[str]] = {
    "pytest": frozenset({"--rootdir", "-c", "--config-file", "--confcutdir"}),
    "unittest": frozenset({"-s", "--start-directory", "-t", "--top-level-directory"}),
    "make": frozenset({"-C", "--directory", "-f", "--file", "--makefile"}),
    "go": frozenset({"-C"}),
    "cargo": frozenset({"--manifest-path"}),
    "npm": frozenset({"--prefix", "-C", "--dir", "--cwd"}),
    "tox": frozenset({"-c", "--conf", "--root", "--workdir"}),
    "nox": frozenset({"-f", "--noxfile"}),
    "mvn": frozenset({"-f", "--file"}),
    "gradle": frozenset({"-p", "--project-dir", "-b", "--build-file"}),
    "env": frozenset({"-C", "--chdir"}),
}
_FOLDER_FAMILY = {
    "py.test": "pytest", "gmake": "make", "yarn": "npm", "pnpm": "npm", "bun": "npm",
    "mvnw": "mvn", "gradlew": "gradle", "just": "make",
}  # fmt: skip
# pytest settings that change which tests are collected or how an import resolves, set with
# ``-o NAME=VALUE``: ``-o python_functions=test_ok`` leaves every other test uncollected
# and the run says "1 passed".
_COLLECTION_SETTINGS = frozenset(
    {"python_files", "python_classes", "python_functions", "testpaths", "norecursedirs",
     "pythonpath", "usefixtures", "confcutdir"}
)  # fmt: skip
# Plugins that may be turned off with ``-p no:NAME``: they order, time, spread or report the
# tests, and none of them collects a test. Turning off another may leave tests out
# (``-p no:unittest`` skips every unittest.TestCase, ``-p no:asyncio`` every async test).
_PLUGINS_SAFE_TO_DISABLE = frozenset(
    {"cacheprovider", "randomly", "random_order", "xdist", "cov", "warnings", "rerunfailures",
     "sugar", "timeout", "faulthandler", "pastebin", "junitxml", "legacypath", "stepwise",
     "benchmark", "hypothesispytest", "html", "metadata", "flaky", "instafail", "logging"}
)  # fmt: skip


def leaves_workspace(path: str, root: str | None = None) -> bool:
    """Whether the folder or file ``path`` that a command names may be outside the folder it
    started in (see above: absolute, climbing, home, previous or filled in by the shell);
    an absolute one (or ``~/...``) inside ``root``, the workspace, is not."""
    if root is not None and path.startswith(("/", "~")) and not any(c in path for c in "$`"):
        return not _inside(path, root)
    path = path.replace("\\", "/")
    if (
        not path
        or path in ("-", "~")
        or path.startswith(("/", "~"))
        or re.match(r"^[A-Za-z]:", path)
    ):
        return True
    if any(c in path for c in "$`"):
        return True
    depth = 0
    for part in path.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def _inside(path: str, root: str) -> bool:
    """Whether the absolute ``path`` (``~`` expanded) names ``root`` or a path below it, as
    given or with links resolved (a workspace reached through a link is named either way)."""
    try:
        named = os.path.normpath(os.path.expanduser(path))
        real = os.path.realpath(named)
        roots = {os.path.normpath(root), os.path.realpath(root)}
    except (OSError, ValueError, RuntimeError):
        return False
    return any(
        candidate == folder or candidate.startswith(folder.rstrip("/") + "/")
        for candidate in (named, real)
        for folder in roots
    )


def _runs_elsewhere(
    parts: list[Segment], runner_indexes: list[int], root: str | None = None
) -> str | None:
    """Why the tests of this command may be another folder's or run by a changed pytest."""

    def leaves(path: str) -> bool:
        return leaves_workspace(path, root)

    last = runner_indexes[-1]
    for segment in parts[:last]:
        words = segment.words
        if words and base_name(words[0]) in ("cd", "pushd", "chdir"):
            target = next((w for w in words[1:] if not w.startswith("-") or w == "-"), "")
            if leaves(target or "~"):
                return (
                    f"`{segment.text}` moves to {target or 'the home folder'}, which may be "
                    "outside the workspace, so the tests that ran may not be its tests; run them "
                    "from the workspace root, where commands start (name the folder instead: "
                    "`pytest tests/`)"
                )
    for segment in parts[: last + 1]:
        for word in segment.words:
            name, eq, value = word.partition("=")
            if eq and name == "PYTHONPATH" and any(map(leaves, value.split(":"))):
                return (
                    f"`{segment.text}` imports from {value} (PYTHONPATH), which may be outside "
                    "the workspace, so the code tested may not be the workspace's"
                )
    for index in runner_indexes:
        reason = _outside_selection(parts[index].words, leaves) or _changed_pytest(
            parts[: index + 1]
        )
        if reason:
            return f"`{parts[index].text}` {reason}"
    return None


def _outside_selection(raw: list[str], leaves: Callable[[str], bool]) -> str | None:
    """``env -C /x pytest``, ``pytest --rootdir=/x``, ``make -C ../x test``, ``pytest /x``."""
    words = unwrap(raw)
    family = runner_of(words)
    where = [(raw, "env")] if raw and base_name(raw[0]) == "env" else []
    if words:
        base = base_name(words[0])
        if _PYTHON.match(base):
            module, _ = _python_target(words[1:])
            base = module or base
        where.append((words, _FOLDER_FAMILY.get(base, base)))
    for argv, kind in where:
        options = _FOLDER_OPTIONS.get(kind, frozenset())
        for i, word in enumerate(argv[1:], 1):
            name, eq, value = word.partition("=")
            if name in options:
                value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            elif kind == "unittest" and word in ("discover",) and i + 1 < len(argv):
                value = argv[i + 1] if not argv[i + 1].startswith("-") else ""
            else:
                continue
            if value and leaves(value):
                return f"runs tests from {value} ({name}), which may be outside the workspace"
    if family == "pytest":
        module, rest = _python_target(words[1:])
        args = rest if module else words[1:]
        if "--pyargs" in args:
            return "runs the tests of installed packages (--pyargs), not the workspace's"
        i = 0
        while i < len(args):
            name, eq, _ = args[i].partition("=")
            if name in _PYTEST_VALUE_OPTIONS and not eq:
                i += 2
                continue
            if not args[i].startswith("-") and leaves(args[i].split("::")[0]):
                return f"runs tests from {args[i]}, which may be outside the workspace"
            i += 1
    return None


def _changed_pytest(parts: list[Segment]) -> str | None:
    """The option that makes pytest collect fewer tests or load code that may rewrite what it
    reports: ``-o python_functions=...``, ``-p no:unittest``, ``-p plugin``,
    ``PYTEST_PLUGINS=...``, given on the command line or added through PYTEST_ADDOPTS."""
    words = unwrap(parts[-1].words) if parts else []
    if runner_of(words) != "pytest":
        return None
    for segment in parts:
        for word in segment.words:
            if word.partition("=")[0] == "PYTEST_PLUGINS" and "=" in word:
                return (
                    f"loads pytest plugins ({word}), which may change what the run reports; "
                    "run the tests without them"
                )
    added: list[str] = []
    for segment in parts:
        for word in segment.words:
            name, eq, value = word.partition("=")
            if eq and name == "PYTEST_ADDOPTS":
                with contextlib.suppress(ValueError):  # _excluded_by_added_options says so
                    added += shlex.split(value)
    return _pytest_option_change([*words[1:], *added])


def _pytest_option_change(args: list[str]) -> str | None:
    for i, word in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else ""
        if word in ("-o", "--override-ini"):
            setting = following
        elif word.startswith("--override-ini="):
            setting = word.removeprefix("--override-ini=")
        elif word.startswith("-o") and len(word) > 2:
            setting = word[2:]
        else:
            setting = ""
        name = setting.partition("=")[0].strip()
        if name in _COLLECTION_SETTINGS:
            return (
                f"changes which tests pytest collects (-o {setting}), and a test it leaves out "
                "may be the one that fails; select the tests to run by path instead"
            )
        if word == "-p":
            plugin = following
        elif word.startswith("-p") and len(word) > 2 and not word.startswith("--"):
            plugin = word[2:]
        else:
            continue
        if plugin.startswith("no:"):
            if plugin[3:] not in _PLUGINS_SAFE_TO_DISABLE:
                return (
                    f"turns off the pytest plugin {plugin[3:]} (-p {plugin}), which may leave "
                    "tests uncollected or skipped; run the tests without it"
                )
        elif plugin:
            return (
                f"loads the pytest plugin {plugin} (-p {plugin}), which may change what the run "
                "reports; run the tests without it"
            )
    return None


# Options that leave tests out by name, marker or path (`-k "not test_x"`, `--deselect`),
# as against selecting the ones to run (`pytest tests/test_x.py`, `-k test_x`, `go test -run`).
_EXCLUDING = {
    "--deselect", "--ignore", "--ignore-glob",  # pytest
    "-skip",  # go test
    "--skip", "--exclude",  # cargo test (libtest's --skip; a workspace's --exclude)
    "--testPathIgnorePatterns", "--testPathIgnorePattern", "--invert", "-i",  # jest, mocha
}  # fmt: skip
# pytest: excluding when the keyword expression says "not". A marker expression (``-m "not
# slow"``) leaves out a kind of test a project chose to mark, as its own CI does: believed.
_NEGATED_EXPRESSION = {"-k"}


def excludes_tests(words: list[str]) -> str | None:
    """The option of a test runner's ``words`` that leaves tests out, or None."""
    words = unwrap(words)
    family = runner_of(words)
    for i, word in enumerate(words[1:], 1):
        name, _, joined = word.partition("=")
        if name in _NEGATED_EXPRESSION and family == "pytest":
            expression = joined or (words[i + 1] if i + 1 < len(words) else "")
            if re.search(r"(?:^|[\s(])not(?:$|[\s(])", expression):
                return f"{name} {_quoted(expression)}"
        elif name in _EXCLUDING and not (name == "-i" and family != "mocha"):
            return name
    return None


def _excluded_by_added_options(parts: list[Segment]) -> str | None:
    """The excluding option that pytest takes from outside its own words: ``PYTEST_ADDOPTS``
    set for the runner (``PYTEST_ADDOPTS="--deselect t.py::x" pytest``, ``export ...``
    before it) or ``-o addopts=...``. ``pytest -o addopts="-k 'not x'"`` leaves out what
    ``pytest -k "not x"`` does."""
    added: list[str] = []
    for segment in parts:
        for word in segment.words:
            name, eq, value = word.partition("=")
            if eq and name == "PYTEST_ADDOPTS":
                added.append(value)
    words = parts[-1].words if parts else []
    for i, word in enumerate(words):
        if word in ("-o", "--override-ini") and i + 1 < len(words):
            word = f"-o{words[i + 1]}"
        elif word.startswith("--override-ini="):
            word = "-o" + word.removeprefix("--override-ini=")
        if word.startswith("-o"):
            name, eq, value = word[2:].partition("=")
            if eq and name.strip() == "addopts":
                added.append(value)
    for value in added:
        try:
            options = shlex.split(value)
        except ValueError:
            return f"added options {_quoted(value)} that cannot be read"
        listing = _NOT_RUNNING & set(options)
        excluded = excludes_tests(["pytest", *options])
        if excluded or listing:
            return f"{excluded or sorted(listing)[0]}, added through {_quoted(value)}"
    return None


def _quoted(text: str) -> str:
    return f'"{text}"' if " " in text else text


# Lines a runner prints when something failed (one per summary family): a `grep -v` whose
# patterns match none of these cannot have dropped a failure.
_FAILURE_LINES = (
    "=== 1 failed, 2 passed, 1 error in 0.1s ===", "FAILED tests/t.py::test_x - assert",
    "ERROR tests/t.py", ".F.E [100%]", "no tests ran in 0.1s", "Interrupted: 1 error",
    "FAILED (failures=1, errors=1)", "FAIL: test_x (m.T.test_x)", "ERROR: test_e (m.T)",
    "NO TESTS RAN", "--- FAIL: TestX (0.00s)", "FAIL\tpkg\t0.1s", "panic: boom",
    "[build failed]", "[setup failed]", "test result: FAILED. 1 passed; 1 failed",
    "error[E0308]: mismatched", "error: test failed", "2 tests run: 1 passed, 1 failed",
    "Tests:       1 failed, 2 passed, 3 total", "Test Suites: 1 failed", "Test Files  1 failed",
    "  1 failing", "# fail 1", "ℹ fail 1", "# cancelled 1", "FAILED | 1 passed | 1 failed",
    " 1 fail", "BUILD FAILURE", "Tests run: 3, Failures: 1, Errors: 0", "BUILD FAILED",
    "FAILURE: Build failed", "67% tests passed, 1 tests failed out of 3", "3 examples, 1 failure",
    "3 runs, 3 assertions, 0 failures, 1 errors", "FAILURES!", "ERRORS!",
    "Tests: 3, Assertions: 3, Failures: 1.", "Failed!  - Failed: 1, Passed: 2",
    "ERROR: py: commands failed", "py: FAIL code 1", "evaluation failed :(",
    "Session tests failed.", "Session tests aborted", "make: *** [Makefile:2: test] Error 1",
    "npm ERR! Test failed", "npm error Lifecycle script `test` failed", "not ok 1 - x",
    "✕ adds", "✗ adds", "× adds",
)  # fmt: skip
_REGEX_SYNTAX = re.compile(r"[.\[\]*+?(){}|^$\\]")


def _drops_failures(words: list[str]) -> str | None:
    """Why the filter ``words`` after a runner may hide a failure, or None.

    ``tail`` keeps the end, where every runner prints its summary; ``tee``, ``cat``, ``sort``
    and ``uniq`` keep every line. ``head`` may cut the failures off, a selecting ``grep``
    keeps only what it chose, and a ``grep -v`` may drop them, unless its patterns are
    plain text found in no runner's failure lines (``grep -v DEBUG``).
    """
    base = base_name(words[0])
    if base == "head":
        return "keeps only the start of the output, where a failure may be cut off"
    if base == "tail" and any(
        w in ("-c", "--bytes") or w.startswith("--bytes=") or re.match(r"^(?:-c\d+|[-+]\d+c)$", w)
        for w in words[1:]
    ):
        return "keeps only the last bytes of the output, which may cut a failure's count off"
    if base not in ("grep", "egrep", "fgrep", "rg"):
        return None
    flags, patterns, operands = set(), [], []
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-e", "--regexp") and i + 1 < len(words):
            patterns.append(words[i + 1])
            i += 2
            continue
        if word.startswith("--"):
            flags.add(word)
        elif word.startswith("-") and word != "-":
            flags.update(f"-{c}" for c in word[1:])
        else:
            operands.append(word)
        i += 1
    if not patterns and operands:
        patterns.append(operands[0])
    if not ({"-v", "--invert-match"} & flags):
        return "keeps only the lines it matches, so a failure may not show"
    fixed = base == "fgrep" or bool({"-F", "--fixed-strings"} & flags)
    fold = bool({"-i", "--ignore-case"} & flags)
    for pattern in patterns or [""]:
        if {"-f", "--file"} & flags or (not fixed and _REGEX_SYNTAX.search(pattern)):
            return f"drops the lines matching `{pattern}`, which may be failures"
        needle = pattern.lower() if fold else pattern
        if any(needle in (line.lower() if fold else line) for line in _FAILURE_LINES):
            return f"drops the lines matching `{pattern}`, which may be failures"
    return None


# -- which tests a run showed failing, and which a later run covers -----------------------

# The short summary's line (``FAILED t.py::test_x[1] - assert ...``): a node id's parameters
# end at the first ``]`` followed by `` - `` or the line's end; they may hold ``]``, ``::``
# and spaces. A verbose run's line (``t.py::test_x[1] FAILED``) is read by ``_pytest_failing``.
_PYTEST_SUMMARY = re.compile(r"(?:FAILED|ERROR) ([^\s\[]+(?:\[.*?\])?)(?: - .*)?$")
_VERBOSE_OUTCOME = re.compile(r" (?:FAILED|ERROR)\b")
_UNITTEST_FAILING = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", re.MULTILINE)
_MAX_FAILING = 200  # ids kept from one run: enough to name them, bounded for a huge suite


def failing_tests(command: str, output: str) -> frozenset[str]:
    """The pytest node ids (``tests/t.py::test_x``) or unittest ids (``m.T.test_x``) that
    ``command``'s output reports failing; empty for other runners."""
    families = parse_test_command(command).runners
    found: list[str] = []
    if "pytest" in families or ANY in families:
        found += _pytest_failing(output)
    if "unittest" in families or ANY in families:
        for name, where in _UNITTEST_FAILING.findall(output):
            found.append(where if where.endswith(f".{name}") else f"{where}.{name}")
    return frozenset(found[:_MAX_FAILING])


def _pytest_failing(output: str) -> list[str]:
    """The node ids pytest's output reports failing, in order: each line read once, in time
    linear in its length (a pattern that split an id at each ``::`` took seconds on a line
    of colons)."""
    found: list[str] = []
    for line in output.splitlines():
        summary = _PYTEST_SUMMARY.match(line)
        if summary:
            found.append(summary[1])
            continue
        outcome = _VERBOSE_OUTCOME.search(line)  # the first only: the id ends before it
        if outcome is None:
            continue
        node = line[: outcome.start()]
        head, bracket, _ = node.partition("[")
        path, apart, name = head.partition("::")
        if (
            apart
            and path
            and name
            and not any(c.isspace() for c in head)
            and (not bracket or node.endswith("]"))
        ):
            found.append(node)
    return found


# pytest options that take a value as the next word (so it is not a path to test).
_PYTEST_VALUE_OPTIONS = {
    "-k", "-m", "-p", "-o", "-c", "-r", "-W", "-n", "--tb", "--maxfail", "--timeout",
    "--rootdir", "--basetemp", "--durations", "--junitxml", "--junit-xml", "--cov",
    "--cov-report", "--log-level", "--log-cli-level", "--color", "--capture", "--import-mode",
    "--lfnf", "--last-failed-no-failures", "--confcutdir", "--dist", "--count", "--reruns",
    "--numprocesses", "--override-ini", "--config-file", "--deselect", "--ignore",
    "--ignore-glob", "--durations-min", "--verbosity", "--report-log", "--random-order-seed",
}  # fmt: skip


def covers(command: str, test: str) -> bool:
    """Whether running ``command`` runs ``test`` (an id ``failing_tests`` gave), as far as its
    selection can be read: a run that names no tests runs them all; one that names paths,
    node ids, modules or ``-k`` words runs those. What cannot be read counts as covering."""
    for segment in segments(command):
        words = unwrap(segment.words)
        family = runner_of(words)
        if family is None:
            continue
        if family == "pytest" and ("::" in test or test.endswith(".py")):
            if _pytest_covers(words, test):
                return True
        elif family == "unittest" and "::" not in test:
            if _unittest_covers(words, test):
                return True
        else:
            return True  # a runner whose selection is not read here
    return False


def _pytest_covers(words: list[str], test: str) -> bool:
    module, rest = _python_target(words[1:])
    positional, keywords = _pytest_selection(rest if module else words[1:])
    paths = [p for p in positional if "=" not in p and _looks_like_test_path(p)]
    wanted = test.lower()
    for expression in keywords:  # "not" was refused before: these select
        names = [w for w in re.findall(r"[\w.\[\]-]+", expression) if w not in ("and", "or")]
        if names and not any(n.lower() in wanted for n in names):
            return False
    return not paths or any(_path_covers(p, test) for p in paths)


def _pytest_selection(args: list[str]) -> tuple[list[str], list[str]]:
    """pytest's positional arguments (paths, node ids) and ``-k`` expressions in ``args``;
    the value of an option that takes one (``-c setup.cfg``, ``--rootdir tests``) is
    neither."""
    positional: list[str] = []
    expressions: list[str] = []
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        takes_next = name in _PYTEST_VALUE_OPTIONS and not eq
        if takes_next:
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        if name == "-k":
            expressions.append(value)
        elif not takes_next and not args[i].startswith("-"):
            positional.append(args[i])
        i += 1
    return positional, expressions


def _looks_like_test_path(word: str) -> bool:
    return (
        "/" in word
        or "::" in word
        or word.endswith(".py")
        or word in (".", "..")
        or (word.startswith("test"))
    )


def _path_covers(selection: str, test: str) -> bool:
    """Whether the pytest selection (a folder, file or node id, relative to where it ran)
    includes the node id ``test`` (relative to the root folder)."""
    selection = selection.removeprefix("./").rstrip("/")
    if selection in ("", ".", ".."):
        return True
    for candidate in (
        test,
        *(test[i + 1 :] for i, c in enumerate(test.split("::")[0]) if c == "/"),
    ):
        if candidate == selection or candidate.startswith((selection + "::", selection + "/")):
            return True
        if candidate.startswith(selection + "["):  # a parametrized case of the named test
            return True
    return False


def _unittest_covers(words: list[str], test: str) -> bool:
    module, rest = _python_target(words[1:])
    args = rest if module else words[1:]
    parts = test.split(".")
    if args[:1] == ["discover"]:
        pattern, i = "test*.py", 1
        while i < len(args):
            if args[i] in ("-p", "--pattern") and i + 1 < len(args):
                pattern = args[i + 1]
            elif args[i] == "-k" and i + 1 < len(args) and not _unittest_keyword(args[i + 1], test):
                return False
            i += 2 if args[i] in ("-p", "--pattern", "-s", "--start-directory", "-t",
                                  "--top-level-directory", "-k") else 1  # fmt: skip
        return any(fnmatch.fnmatchcase(f"{p}.py", pattern) for p in parts)
    names, i = [], 0
    while i < len(args):
        if args[i] == "-k" and i + 1 < len(args):
            if not _unittest_keyword(args[i + 1], test):
                return False
            i += 2
            continue
        if not args[i].startswith("-"):
            names.append(args[i].removesuffix(".py").replace("/", ".").strip("."))
        i += 1
    return not names or any(n.split(".")[-1] in parts for n in names)


def _unittest_keyword(pattern: str, test: str) -> bool:
    return fnmatch.fnmatchcase(test, pattern if "*" in pattern else f"*{pattern}*")


# -- commands that change files ----------------------------------------------------------------

_MUTATORS = {"mv", "cp", "rm", "rmdir", "mkdir", "touch", "ln", "install", "truncate", "patch",
             "unlink", "black", "isort", "autopep8", "yapf", "rustfmt", "autoflake", "pyupgrade"}  # fmt: skip
_GIT_MUTATORS = {"mv", "rm", "apply", "am", "checkout", "restore", "reset", "revert", "cherry-pick",
                 "merge", "rebase", "pull", "stash", "switch"}  # fmt: skip
_FIX_FLAGS = {"-w", "--write", "-i", "--fix", "--in-place", "format", "fmt", "fix", "tidy"}
_FORMATTERS = {"gofmt", "goimports", "prettier", "eslint", "clang-format", "ruff", "cargo", "dotnet", "go"}  # fmt: skip


def changes_files(command: str) -> str | None:
    """The first part of ``command`` that plainly writes files (``mv a b``, ``sed -i``, ``> f``).

    Only commands known to write count, and not a test run's own output file
    (``pytest > log``, ``| tee log``); a script that writes files is not
    recognised (the guard then asks for an edit through the tools).
    """
    parts = segments(command)
    for segment in parts:
        words = unwrap(segment.words)
        if segment.writes and (not words or runner_of(words) is None):
            return segment.text or f"> {segment.writes[0]}"
        if not words:
            continue
        base, args = base_name(words[0]), words[1:]
        if base in _MUTATORS:
            return segment.text
        if base in ("sed", "perl") and any(
            a.startswith(("-i", "--in-place"))
            or (base == "perl" and a.startswith("-") and "i" in a)
            for a in args
        ):
            return segment.text
        if (
            base == "git"
            and skip_options(args, {"-C", "-c"})[:1]
            and (skip_options(args, {"-C", "-c"})[0] in _GIT_MUTATORS)
        ):
            return segment.text
        if base in _FORMATTERS and any(a in _FIX_FLAGS for a in args):
            return segment.text
        if _writes_by_arguments(base, args, segment, parts):
            return segment.text
    return None


def _writes_by_arguments(
    base: str, args: list[str], segment: Segment, parts: list[Segment]
) -> bool:
    """``tee FILE`` (not a test run's log), ``dd of=``, ``awk -i inplace``, ``curl -o``,
    archives unpacked, and ``python -c CODE`` whose code writes files."""
    if base == "tee":
        fed_by = parts[: parts.index(segment)]
        from_runner = any(runner_of(p.words) for p in fed_by)
        return not from_runner and any(not a.startswith("-") for a in args)
    if base == "dd":
        return any(a.startswith("of=") for a in args)
    if base in ("awk", "gawk"):
        return "inplace" in args
    if base == "curl":
        return any(a in ("-o", "-O", "--output", "--remote-name") for a in args)
    if base == "wget":
        to_screen = "-O-" in args or "--output-document=-" in args or "--spider" in args
        return not to_screen and not any(
            a == "-O" and args[i + 1 : i + 2] == ["-"] for i, a in enumerate(args)
        )
    if base in ("unzip", "rsync"):
        return True
    if base == "tar":
        first = args[0] if args else ""
        return "x" in first.lstrip("-") and not first.startswith("--") or "--extract" in args
    if _PYTHON.match(base) and "-c" in args[:2]:
        code = args[args.index("-c") + 1] if args.index("-c") + 1 < len(args) else ""
        return code_changes_files(code) is not None
    return False


# Calls that write, move or delete files, or run something that may, whatever they are
# called on (``Path.write_text``, ``df.to_csv``, ``subprocess.Popen``) ...
_WRITING_METHODS = {
    "write_text", "write_bytes", "unlink", "rmdir", "touch", "mkdir", "symlink_to",
    "hardlink_to", "makedirs", "removedirs", "rmtree", "copytree", "copyfile", "copy2",
    "savefig", "to_csv", "to_json", "to_parquet", "to_excel", "to_pickle", "to_hdf",
    "to_feather", "to_sql", "save", "savez", "savez_compressed", "savetxt", "check_call",
    "check_output", "Popen", "getoutput", "getstatusoutput", "run_path", "run_module",
    "startfile", "import_module", "run_line_magic", "run_cell",
    "system_piped", "execv", "execvp", "spawnv", "spawnl",
}  # fmt: skip
# Builtins that run code the call does not show; only by their own name: ``model.eval()``
# (a network to inference mode) and ``df.eval("a + b")`` write nothing.
_RUNNING_BUILTINS = {"exec", "eval", "__import__", "compile"}
# ... and any call on these modules but the ones that only read.
_WRITING_MODULES = {"os", "shutil", "subprocess", "pty", "tempfile", "zipfile", "tarfile"}
_READING = {
    "getcwd", "listdir", "scandir", "stat", "lstat", "walk", "getenv", "environ", "cpu_count",
    "getpid", "which", "disk_usage", "get_terminal_size", "fspath", "fsencode", "fsdecode",
    "access", "readlink", "is_zipfile", "is_tarfile", "gettempdir", "urandom", "uname",
}  # fmt: skip


def code_changes_files(code: str) -> str | None:
    """The first call in Python ``code`` that may write files (``open(p, "w")``,
    ``Path.write_text``, ``os.remove``, ``shutil.move``, ``subprocess.run`` ...), or None.

    It reads the code, not what it calls: a function of the user's that writes is not seen.
    Code that cannot be parsed, or that is too long to read, counts as writing.
    """
    if len(code) > _MAX_CODE_CHARS:
        return "code too long to read"
    try:
        with pyast.quietly():  # a SyntaxWarning of the model's code is not the user's
            tree = pyast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "code that cannot be read"
    imported = {  # from os import remove; from subprocess import run
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "") in _WRITING_MODULES
        for alias in node.names
        if alias.name not in _READING
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _may_write(node, imported):
            try:
                return ast.unparse(node)[:80]
            except RecursionError:  # unparse recurses: an argument that is a long `+` chain
                function = node.func
                name = function.attr if isinstance(function, ast.Attribute) else "call"
                if isinstance(function, ast.Name):
                    name = function.id
                return f"{name}(...) on line {node.lineno}"
    return None


def _may_write(call: ast.Call, imported: set[str]) -> bool:
    function = call.func
    if isinstance(function, ast.Name):
        name, receiver = function.id, None
    elif isinstance(function, ast.Attribute):
        name = function.attr
        receiver = function.value.id if isinstance(function.value, ast.Name) else None
    else:
        return False
    if name == "open":
        return _opens_for_writing(call, isinstance(function, ast.Name))
    if name in _WRITING_METHODS or (receiver is None and name in imported):
        return True
    if isinstance(function, ast.Name) and name in _RUNNING_BUILTINS:
        return True
    if receiver in _WRITING_MODULES and name not in _READING:
        return True
    if name in ("rename", "replace") and len(call.args) == 1:  # Path.rename(target)
        return True
    if name == "getattr" and len(call.args) >= 2:
        attribute = call.args[1]
        if not (isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)):
            return True
        return attribute.value in _WRITING_METHODS or attribute.value in ("remove", "rename")
    return False


def _opens_for_writing(call: ast.Call, builtin: bool) -> bool:
    """``open(path, mode)``, ``Path.open(mode)``, ``os.open(path, flags)`` ... whose mode is
    not plainly a read."""
    args = call.args
    mode: ast.expr | None = None
    if builtin:
        mode = args[1] if len(args) > 1 else None
    elif args and _is_mode(args[0]):
        mode = args[0]
    elif len(args) > 1:
        mode = args[1]
    for keyword in call.keywords:
        if keyword.arg in ("mode", "flags"):
            mode = keyword.value
        elif keyword.arg is None:
            return True  # open(**options): cannot tell
    if mode is None:
        return False
    if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
        return True  # os.O_WRONLY, a variable
    return any(c in mode.value for c in "wax+")


def _is_mode(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"[rwxabtU+]{1,4}", node.value) is not None
    )


_MAX_CODE_CHARS = 200_000


_INSTALLERS = {"pip", "pip3", "uv", "poetry", "pdm", "pipenv", "npm", "yarn", "pnpm", "bun",
               "cargo", "go", "gem", "bundle", "composer", "apt", "apt-get", "brew", "conda",
               "mamba"}  # fmt: skip
_INSTALLS = {"install", "i", "add", "ci", "sync", "get", "require", "update", "upgrade"}


def installs_packages(command: str) -> bool:
    """True when ``command`` installs packages (``pip install x``, ``npm ci``, ``uv sync``)."""
    for segment in segments(command):
        words = unwrap(segment.words)
        if words and base_name(words[0]) in _INSTALLERS:
            rest = skip_options(words[1:], set())
            if rest[:1] == ["pip"]:  # uv pip install
                rest = skip_options(rest[1:], set())
            if rest[:1] and rest[0] in _INSTALLS:
                return True
    return False


# -- tests the session wrote itself, and a test setup it changed --------------------------
#
# A passing run is evidence about the project's tests. A run of only tests the model wrote
# itself (``create tests/test_ok.py`` with ``assert True``, then ``pytest tests/test_ok.py``)
# is evidence about nothing the user had; nor is a run through a test setup the model
# changed (a Makefile whose ``test`` target became ``true``, a conftest.py hook that marks
# failures passed): the old setup passing is what a person wants to know.

_TEST_DEFINITION = re.compile(r"^[^\S\n]*(?:async[^\S\n]+)?def[^\S\n]+(test\w*)", re.MULTILINE)


def test_names(text: str) -> frozenset[str]:
    """The names of the Python test functions and methods ``text`` defines (``def test*``)."""
    return frozenset(_TEST_DEFINITION.findall(text[:_MAX_CODE_CHARS]))


_LAYOUT_MAX_CHARS = 2_000_000  # a larger test file is not read for its tests' layout


@functools.lru_cache(maxsize=16)
def test_layout(text: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The test functions and methods ``text`` defines, by qualified name (``test_x``,
    ``TestA.test_x``, ``TestA.TestB.test_x``), and those of them it marks to be skipped or
    to fail; None when it does not parse (or is over ``_LAYOUT_MAX_CHARS``).

    Skipped or expected to fail: a decorator of the test or of an enclosing class naming
    ``skip``, ``skipif``, ``xfail``, ``skipIf``, ``skipUnless`` or ``expectedFailure``, or a
    name bound to one (``later = pytest.mark.skip``, ``from unittest import skip as s``); a
    call anywhere in its body to ``*.skip``, ``*.skipTest``, ``*.xfail``, ``*.importorskip``
    or such a name, or a ``raise *SkipTest``; every test of the file for a module-level
    ``pytestmark`` naming a mark of these, such a call at module level, or a fixture of the
    file that makes such a call (which tests it skips is decided at run time). Only what
    the file's text says: a conftest.py's hooks and fixtures are not read here."""
    if len(text) > _LAYOUT_MAX_CHARS:
        return None
    try:
        with pyast.quietly():
            tree = pyast.parse(text)
        return _layout(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Also a tree too deep to walk: what it defines cannot be told. (The walks below
        # are iterative, so a long expression, ``1 + 1 + ...``, is no such tree.)
        return None


def _layout(tree: ast.Module) -> tuple[frozenset[str], frozenset[str]]:
    aliases = _skip_aliases(tree)
    every = any(_skips_all(statement, aliases) for statement in tree.body) or any(
        _skipping_fixture(node, aliases) for node in ast.walk(tree)
    )
    every = every or _not_a_test(tree.body)
    defined: set[str] = set()
    skipped: set[str] = set()

    def under(name: str) -> set[str]:
        return {t for t in defined if t == name or t.startswith(name + ".")}

    def visit(body: list[ast.stmt], prefix: str, marked: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                inner = marked or _marked(node.decorator_list, aliases) or _not_a_test(node.body)
                defined.difference_update(under(prefix + node.name))  # a class defined again
                visit(node.body, f"{prefix}{node.name}.", inner)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
                "test"
            ):
                name = prefix + node.name
                defined.add(name)
                skipped.discard(name)
                if (
                    every
                    or marked
                    or _marked(node.decorator_list, aliases)
                    or _skips(node.body, aliases)
                ):
                    skipped.add(name)
            else:  # ``del test_x``, ``test_x = None``, ``test_x.__test__ = False``...
                gone, off = _unbound(node, aliases)
                for name in gone:
                    defined.difference_update(under(prefix + name))
                for name in off:
                    skipped.update(under(prefix + name))
        skipped.intersection_update(defined)

    visit(tree.body, "", False)
    return frozenset(defined), frozenset(skipped)


def _not_a_test(body: list[ast.stmt]) -> bool:
    """Whether a module's or class's ``body`` sets ``__test__`` to False (pytest and nose
    then collect nothing of it)."""
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__test__" for t in node.targets)
        and isinstance(node.value, ast.Constant)
        and not node.value.value
        for node in body
    )


def _unbound(node: ast.stmt, aliases: _Names) -> tuple[list[str], list[str]]:
    """The names a statement of a module or class body takes away from the tests (``del
    test_x``, ``test_x = None``) and those it marks not to run (``test_x.__test__ =
    False``, ``test_x = pytest.mark.skip(test_x)``)."""
    gone: list[str] = []
    off: list[str] = []
    if isinstance(node, ast.Delete):
        gone += [t.id for t in node.targets if isinstance(t, ast.Name)]
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        value = node.value
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "__test__"
                and isinstance(target.value, ast.Name)
                and isinstance(value, ast.Constant)
                and not value.value
            ):
                off.append(target.value.id)
            elif isinstance(target, ast.Name):
                if isinstance(value, ast.Constant):
                    gone.append(target.id)
                elif _marked([value], aliases):
                    off.append(target.id)
    return gone, off


def skipped_tests(text: str) -> frozenset[str]:
    """The names (unqualified) of the tests ``test_layout`` finds marked to be skipped or to
    fail in ``text``; empty when it does not parse."""
    layout = test_layout(text)
    return frozenset(name.rpartition(".")[2] for name in layout[1]) if layout else frozenset()


_SKIP_WORD = re.compile(r"skip|skipif|xfail|skipIf|skipUnless|expectedFailure")
_SKIP_CALLS = frozenset({"skip", "xfail", "importorskip"})
_SKIP_IMPORTED = re.compile(
    r"^(?:skip|skipif|xfail|skipIf|skipUnless|expectedFailure|skipTest|SkipTest|importorskip)$"
)
_TEST_MODULES = frozenset({"pytest", "_pytest", "py", "unittest"})


class _Names(NamedTuple):
    """What a test file binds that the skip checks need."""

    skips: frozenset[str]  # names bound to a skip mark or call (``later = pytest.mark.skip``)
    modules: frozenset[str]  # names of pytest's or unittest's (``pytest``, ``pt``, ``outcomes``)
    foreign: frozenset[str]  # names imported from anywhere else (a project's own ``skip``)


def _skip_aliases(tree: ast.Module) -> _Names:
    """Names the file binds to a skip mark or call: imported from pytest or unittest under
    another name (``from pytest import skip as later``) or assigned one (``later =
    pytest.mark.skip``); and the names its imports bind, pytest's and unittest's apart."""
    names: set[str] = set()
    modules: set[str] = set(_TEST_MODULES)
    foreign: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.partition(".")[0]
                bound = alias.asname or root
                (modules if root in _TEST_MODULES else foreign).add(bound)
        elif isinstance(node, ast.ImportFrom):
            ours = node.level == 0 and (node.module or "").partition(".")[0] in _TEST_MODULES
            for alias in node.names:
                (modules if ours else foreign).add(alias.asname or alias.name)
                if ours and alias.asname and _SKIP_IMPORTED.match(alias.name):
                    names.add(alias.asname)
        elif (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and node.value is not None
            and _names_a_skip(node.value)
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return _Names(frozenset(names), frozenset(modules), frozenset(foreign - modules))


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a name reached through attributes, else None (walked, not unparsed:
    no recursion however long the expression)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _skip_call(callee: str, aliases: _Names) -> bool:
    """Whether calling ``callee`` (dotted) skips: ``skipTest`` on anything; ``skip``,
    ``xfail`` or ``importorskip`` by a bare name not imported from elsewhere, or on a name of
    pytest's or unittest's (``pytest.skip``, ``pt.skip``), not on the project's own
    (``reader.skip(3)``, ``mylib.skip()``); or a name bound to a skip."""
    first, _, _ = callee.partition(".")
    last = callee.rpartition(".")[2]
    if last == "skipTest" or callee in aliases.skips:
        return True
    if last not in _SKIP_CALLS:
        return False
    return first in aliases.modules if "." in callee else callee not in aliases.foreign


def _names_a_skip(value: ast.expr) -> bool:
    """Whether a decorator or an assigned value names a skip mark (``pytest.mark.skip``, ``skipif``,
    ``unittest.expectedFailure``...): walked, not unparsed, so a long expression (a table of
    test data, ``1 + 1 + ...``) costs no recursion and no text."""
    return any(
        _SKIP_WORD.fullmatch(node.id if isinstance(node, ast.Name) else node.attr)
        for node in ast.walk(value)
        if isinstance(node, (ast.Name, ast.Attribute))
    )


def _root_name(node: ast.expr) -> str | None:
    """The name a decorator or callee is reached by (``later`` of ``later(...)``)."""
    while isinstance(node, (ast.Call, ast.Attribute)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _marked(decorators: list[ast.expr], aliases: _Names) -> bool:
    return any(
        _names_a_skip(decorator) or _root_name(decorator) in aliases.skips
        for decorator in decorators
    )


def _skips(body: list[ast.stmt], aliases: _Names) -> bool:
    """Whether ``body`` (at any depth) calls a skip or raises ``SkipTest``."""
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                callee = _dotted(node.func)
                if callee is not None and _skip_call(callee, aliases):
                    return True
            elif isinstance(node, ast.Raise) and node.exc is not None:
                raised = _dotted(node.exc.func if isinstance(node.exc, ast.Call) else node.exc)
                if raised is not None and raised.endswith("SkipTest"):
                    return True
    return False


def _skipping_fixture(node: ast.AST, aliases: _Names) -> bool:
    """Whether ``node`` is a fixture that may skip the tests using it (any of the file's:
    which ones an autouse fixture picks is decided at run time)."""
    return (
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(
            "fixture" in (_dotted(d.func if isinstance(d, ast.Call) else d) or "")
            for d in node.decorator_list
        )
        and _skips(node.body, aliases)
    )


def _skips_all(statement: ast.stmt, aliases: _Names) -> bool:
    """Whether a module-level ``statement`` skips every test of the file."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            value = statement.value
            return _names_a_skip(value) or any(
                isinstance(n, ast.Name) and n.id in aliases.skips for n in ast.walk(value)
            )
        return False
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return _skips([statement], aliases)
    return False


@dataclass(frozen=True)
class Selection:
    """What one pytest or unittest run in a command names: workspace paths and node ids
    (``tests/t.py::test_x``) or unittest names (``tests.t.T.test_x``), and ``-k`` words."""

    runner: str  # "pytest" or "unittest"
    targets: tuple[str, ...]
    keywords: tuple[str, ...] = ()


def selections(command: str, root: str | None = None) -> list[Selection] | None:
    """The selection of each pytest and unittest run in ``command``, the paths made relative
    to the workspace root (``cd tests && pytest test_x.py`` names ``tests/test_x.py``); None
    when a runner runs what cannot be read here (another runner, ``unittest discover``, a
    folder after ``cd`` to a place not known), which counts as the project's tests."""
    found: list[Selection] = []
    folder = ""
    for segment in segments(command):
        words = unwrap(segment.words)
        base = base_name(words[0]) if words else ""
        if base in ("cd", "pushd"):
            target = next((w for w in words[1:] if not w.startswith("-")), "")
            moved = _workspace_relative(posixpath.join(folder, target) if target else "", root)
            if moved is None:
                return None
            folder = moved
            continue
        family = runner_of(words)
        if family is None:
            continue
        if family not in ("pytest", "unittest"):
            return None
        module, rest = _python_target(words[1:])
        args = rest if module else words[1:]
        if family == "unittest":
            if args[:1] == ["discover"]:
                return None
            names = [a for a in args if not a.startswith("-")]
            found.append(Selection("unittest", tuple(_unittest_target(n, folder) for n in names)))
            continue
        positional, expressions = _pytest_selection(args)
        keywords = [
            w
            for expression in expressions
            for w in re.findall(r"[\w.\[\]-]+", expression)
            if w not in ("and", "or")
        ]
        targets = []
        for word in positional:
            path, sep, node = word.partition("::")
            joined = _workspace_relative(posixpath.join(folder, path), root)
            if joined is not None:
                targets.append(joined + sep + node)
        found.append(Selection("pytest", tuple(targets), tuple(keywords)))
    return found


def _workspace_relative(path: str, root: str | None) -> str | None:
    """``path`` (relative to the root, or absolute inside it) as the root-relative path."""
    if path.startswith("/"):
        if root is None or not _inside(path, root):
            return None
        for folder in (os.path.normpath(root), os.path.realpath(root)):
            if path == folder or path.startswith(folder.rstrip("/") + "/"):
                path = path[len(folder) :].lstrip("/")
                break
        else:
            return None
    if leaves_workspace(path or "."):
        return None
    normal = posixpath.normpath(path or ".")
    return "" if normal == "." else normal


def _unittest_target(name: str, folder: str) -> str:
    """A unittest name as a dotted name from the root (``tests/t.py`` -> ``tests.t``)."""
    if name.endswith(".py") or "/" in name:
        name = posixpath.normpath(posixpath.join(folder, name)).removesuffix(".py")
        return name.replace("/", ".")
    return f"{folder.replace('/', '.')}.{name}" if folder else name


# Files that decide how pytest finds, runs and reports tests, by name.
_PYTEST_INI_FILES = {"pytest.ini", ".pytest.ini"}
# Settings of a pytest configuration that change which tests run or what a run reports.
_PYTEST_SETTINGS = _COLLECTION_SETTINGS | {"addopts", "required_plugins", "xfail_strict"}
# What a conftest.py can do to hide a failure: a hook (collection, outcome, report, exit
# status), a plugin, files left uncollected, a skip, xfail or exit.
_CONFTEST_RISK = re.compile(
    r"\b(?:def\s+pytest_\w+|pytest_plugins|collect_ignore\w*|hookimpl|hookwrapper|skip\w*|"
    r"xfail|importorskip|_?exit|deselect\w*|_pytest)\b"
)
_MAKEFILES = {"makefile", "gnumakefile", "justfile", "taskfile.yml", "taskfile.yaml"}
_JS_CONFIG = re.compile(
    r"^(?:jest|vitest|vite|karma|ava|playwright)\.config\.\w+$|^\.mocharc\.\w+$"
)
# package.json keys that are a test setup: the test scripts and the runners' own settings.
_PACKAGE_TEST_KEYS = {"jest", "mocha", "ava", "vitest", "c8", "nyc"}


@dataclass(frozen=True)
class SetupChange:
    """A change to a test setup: which runners it affects and what it changed."""

    affects: frozenset[str]  # "pytest", "make", "npm", "tox", "nox"
    what: str  # "conftest.py adds `def pytest_collection_modifyitems`"


def setup_change(path: str, before: str | None, after: str | None) -> SetupChange | None:
    """What changing ``path`` from ``before`` to ``after`` (None: no file) changes in how
    tests are found, run or reported, or None when it changes nothing of that."""
    if before == after:
        return None
    name = posixpath.basename(path.replace("\\", "/"))
    lower = name.lower()
    old, new = before or "", after or ""
    if name == "conftest.py":
        risky = _conftest_risk(old, new)
        return SetupChange(frozenset({"pytest"}), f"{path} {risky}") if risky else None
    if lower in _MAKEFILES or lower.endswith(".mk"):
        return SetupChange(frozenset({"make"}), f"{path} changed")
    if _JS_CONFIG.match(lower):
        return SetupChange(frozenset({"npm"}), f"{path} changed")
    if lower == "package.json":
        if _package_test_keys(old) == _package_test_keys(new):
            return None
        return SetupChange(frozenset({"npm"}), f"{path}'s test scripts changed")
    if lower == "noxfile.py":
        return SetupChange(frozenset({"nox"}), f"{path} changed")
    sections = _ini_sections if lower.endswith((".ini", ".cfg")) else _toml_sections
    if lower in _PYTEST_INI_FILES | {"tox.ini", "setup.cfg", "pyproject.toml"}:
        before_sections, after_sections = sections(old), sections(new)
        changed = {
            s for s in before_sections.keys() | after_sections.keys()
            if before_sections.get(s) != after_sections.get(s)
        }  # fmt: skip
        affects: set[str] = set()
        what: list[str] = []
        for section in sorted(changed):
            if _is_pytest_section(lower, section):
                keys = _changed_pytest_settings(
                    before_sections.get(section, ""), after_sections.get(section, "")
                )
                if keys:
                    affects.add("pytest")
                    what.append(f"pytest's {', '.join(keys)}")
            elif lower == "tox.ini" or section == "tool.tox" or section.startswith("tool.tox."):
                affects.add("tox")
                what.append(f"[{section}]")
            elif re.match(r"tool\.(?:hatch\.envs|pdm\.scripts|rye\.scripts|pixi\.tasks)", section):
                affects.add("script")
                what.append(f"[{section}]")
        if affects:
            return SetupChange(frozenset(affects), f"{path} changed ({'; '.join(what)})")
    return None


def _conftest_risk(before: str, after: str) -> str | None:
    """What a conftest.py change adds that can hide a failure (``adds `def pytest_...```)."""
    old = set(before[:_MAX_CODE_CHARS].splitlines())
    for line in after[:_MAX_CODE_CHARS].splitlines():
        if line in old:
            continue
        code = line.split("#", 1)[0]
        found = _CONFTEST_RISK.search(code)
        if found:
            return f"adds `{found.group()}`"
    return None


def _package_test_keys(text: str) -> object:
    """The test scripts and test runner settings of a package.json (its text when it does
    not parse: then any change counts)."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    scripts = data.get("scripts")
    tests = (
        {k: v for k, v in scripts.items() if "test" in k.lower()}
        if isinstance(scripts, dict)
        else scripts
    )
    return (tests, {k: data.get(k) for k in _PACKAGE_TEST_KEYS})


def _is_pytest_section(file: str, section: str) -> bool:
    if file in _PYTEST_INI_FILES:
        return section in ("pytest", "tool:pytest")
    if file == "tox.ini":
        return section == "pytest"
    if file == "setup.cfg":
        return section == "tool:pytest"
    return section in ("tool.pytest", "tool.pytest.ini_options")


_SECTION = re.compile(r"^[^\S\n]*\[\[?([^\[\]\n]+)\]\]?[^\S\n]*$", re.MULTILINE)


def _ini_sections(text: str) -> dict[str, str]:
    return _split_sections(text)


def _toml_sections(text: str) -> dict[str, str]:
    return {name.strip().strip('"'): body for name, body in _split_sections(text).items()}


def _split_sections(text: str) -> dict[str, str]:
    """Each ``[section]`` of an ini or TOML text and its body (``""``: before the first)."""
    found: dict[str, str] = {}
    matches = list(_SECTION.finditer(text[:_MAX_CODE_CHARS]))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        name = match.group(1).strip()
        found[name] = found.get(name, "") + text[match.end() : end]
    return found


_SETTING = re.compile(r"^[^\S\n]*([\w.-]+)[^\S\n]*[=:]", re.MULTILINE)


def _changed_pytest_settings(before: str, after: str) -> list[str]:
    """The pytest settings (of ``_PYTEST_SETTINGS``) whose text differs between two bodies of
    a pytest section; ``addopts`` only when what it adds changes what runs."""
    old, new = _settings(before), _settings(after)
    changed = []
    for key in sorted(old.keys() | new.keys()):
        if key not in _PYTEST_SETTINGS or old.get(key) == new.get(key):
            continue
        # addopts: only what it adds that may leave tests out (not `-v`, nor what it had).
        if key == "addopts" and not _addopts_risks(new.get(key, "")) - _addopts_risks(
            old.get(key, "")
        ):
            continue
        changed.append(key)
    return changed


def _settings(body: str) -> dict[str, str]:
    """Each setting of an ini or TOML section body and its value text (continuation lines
    and a TOML list across lines included)."""
    found: dict[str, str] = {}
    matches = list(_SETTING.finditer(body))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        found[match.group(1).strip()] = " ".join(body[match.end() : end].split())
    return found


def _addopts_risks(value: str) -> frozenset[str]:
    """What the options pytest is given through ``addopts`` do that leaves tests out,
    changes what it collects or loads code (each option with the one after it), or
    ``{"unreadable"}``."""
    text = value.strip()
    strings = [a or b for a, b in re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'', text)]
    try:
        if text.startswith("["):  # a TOML list: each string one option
            options = strings
        elif text[:1] in ("'", '"'):  # a TOML string: the options as a command line has them
            options = shlex.split(" ".join(strings))
        else:
            options = shlex.split(text)
    except ValueError:
        return frozenset({"unreadable"})
    found: set[str] = set(_NOT_RUNNING & set(options))
    for i in range(len(options)):
        pair = options[i : i + 2]
        for reason in (excludes_tests(["pytest", *pair]), _pytest_option_change(pair)):
            if reason:
                found.add(reason)
    return frozenset(found)


def setups_of(command: str) -> frozenset[str]:
    """The test setups (``SetupChange.affects``) a command's test runs go through."""
    found: set[str] = set()
    for segment in segments(command):
        words = unwrap(segment.words)
        family = runner_of(words)
        if family is None:
            continue
        base = base_name(words[0])
        if family == "pytest":
            found.add("pytest")
        elif family in ("jest", "mocha", "node", "bun"):
            found.add("npm")
        elif family == ANY:
            found.add("pytest")  # a wrapper may start pytest
            if base in ("make", "gmake", "just", "task", "rake"):
                found.add("make")
            elif base in ("npm", "yarn", "pnpm", "bun"):
                found.update({"npm"})
            elif base in ("tox", "nox"):
                found.add(base)
            else:
                found.update({"script", "tox"})
    return frozenset(found)


def setup_files_named(command: str) -> dict[str, frozenset[str]]:
    """The test setup files a command that changes files names (``sed -i ... Makefile``,
    ``> conftest.py``), each with the setups it may have changed: what a command wrote is
    not known, so any change to such a file counts."""
    found: dict[str, frozenset[str]] = {}
    for segment in segments(command):
        for word in [*segment.words[1:], *segment.writes]:
            name = posixpath.basename(word.replace("\\", "/")).lower()
            if name == "conftest.py" or name in _PYTEST_INI_FILES:
                affects = {"pytest"}
            elif name in _MAKEFILES or name.endswith(".mk"):
                affects = {"make"}
            elif name == "package.json" or _JS_CONFIG.match(name):
                affects = {"npm"}
            elif name == "tox.ini":
                affects = {"tox", "pytest"}
            elif name == "noxfile.py":
                affects = {"nox"}
            elif name in ("pyproject.toml", "setup.cfg"):
                affects = {"pytest", "tox", "script"}
            else:
                continue
            found[posixpath.normpath(word)] = frozenset(affects)
    return found
