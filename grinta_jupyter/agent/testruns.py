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

import re
from dataclasses import dataclass

from grinta_jupyter.agent.shell import Segment, base_name, prepare, segments, skip_options, unwrap

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
    )
}
# Runners that only start another (npm test, make test, tox): any known summary will do.
ANY = "any"


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


def judge(command: str, output: str, exit_code: int | None) -> Verdict:
    """Whether running ``command`` with this ``output`` and ``exit_code`` shows tests passing."""
    test = parse_test_command(command)
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


def runner_of(words: list[str]) -> str | None:
    """The summary family of the test runner that ``words`` start, or None."""
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


# What may stand before a test runner in a command that is evidence of a test run: commands
# that print nothing of their own choosing. Everything else there is distrusted.
_QUIET = {"cd", "pushd", "popd", "export", "set", "unset", "true", ":", "ulimit", "umask"}
# Runner options that list, describe or build the tests instead of running them.
_NOT_RUNNING = {
    "--co", "--collect-only", "--version", "-h", "--help", "--fixtures", "--markers",
    "--setup-plan", "--setup-only", "-list", "--listTests", "--list", "--no-run", "--dry-run",
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


def parse_test_command(command: str) -> ParsedTestCommand:
    """The test runners ``command`` starts and whether its output can be believed."""
    parts = segments(command)
    runners = [(i, runner_of(s.words)) for i, s in enumerate(parts)]
    found = [(i, family) for i, family in runners if family is not None]
    if not found:
        return ParsedTestCommand(())
    families = tuple(dict.fromkeys(family for _, family in found))
    return ParsedTestCommand(families, _distrust(command, parts, [i for i, _ in found]))


def _distrust(command: str, parts: list[Segment], runner_indexes: list[int]) -> str | None:
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
    for i in runner_indexes:
        if parts[i].background:
            return f"`{parts[i].text}` runs in the background"
        listing = _NOT_RUNNING & set(parts[i].words)
        if listing:
            return f"`{parts[i].text}` does not run the tests ({sorted(listing)[0]})"
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
            continue
        return (
            f"the command goes on after the test runner (`{segment.text}`), so its output "
            "and exit code are not the runner's alone"
        )
    return None


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
    for segment in segments(command):
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
    return None


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
