"""Attacks on the change that keeps the halves' helper off the caller's CPU, lowers the split
threshold to 36,000 characters, and rewrites two guard prefilters (``_may_open``,
``_comments_may_refuse``) with str methods.

The property that matters for ``runtime/halves.py``: ``halves.compiles(text)`` is True only
when ``compile(text)`` succeeds, whatever happens to the CPUs, the helper process or
``/proc`` meanwhile; the affinity calls never raise, never stop a healthy helper, and
leave the helper where the docstring says (every CPU it was started with but the caller's).
For ``runtime/guards.py``: whole files checked as ``tools/facade.py`` checks them get the
answers the implementation before the change (commit fa5b8da) gave.

Tests marked xfail(strict=True) describe a weakness found, not fixed here (see their reason).
"""

from __future__ import annotations

import ctypes
import errno
import importlib.util
import os
import random
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from grinta_jupyter.runtime import guards, halves, validation
from grinta_jupyter.runtime.diffs import unified_diff
from tests.test_halves import _whole_ok

REPO = Path(__file__).resolve().parent.parent
STDLIB = Path(sysconfig.get_paths()["stdlib"])
MARK = "\n\ndef marker():\n    pass\n"

_LINUX_2CPU = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2
needs_two_cpus = pytest.mark.skipif(
    not _LINUX_2CPU or not os.path.exists("/proc/thread-self/stat"),
    reason="keeping the helper off a CPU needs Linux, /proc and two CPUs",
)


def _filler(tag: str, functions: int) -> str:
    """Plain functions with no blank line between them: no place to cut."""
    return "".join(
        f"def {tag}_{k}(a, b=1):\n    total = a + b * {k}\n    return [total, {k}]\n"
        for k in range(functions)
    )


# About 18,500 characters a side: texts just above the real threshold (36,000).
EARLY, LATE = _filler("early", 280), _filler("late", 280)


def _file(opening: str = "", second: str = "", tail: str = "") -> str:
    """A text of about 37,000 characters with one place to cut, ``MARK``."""
    text = opening + EARLY + tail + MARK + second + LATE
    assert halves._cut(text) == len(opening) + len(EARLY) + len(tail) + 2, "the cut moved"
    assert len(text) >= halves.SPLIT_MIN_CHARS
    return text


GOOD = _file()
BAD = _file("late_1 = 0\n", "if True:\n    global late_1\n")  # a global crossing the cut


def _until_proven(text: str = GOOD, tries: int = 80) -> bool:
    for _ in range(tries):
        if halves.compiles(text):
            return True
        time.sleep(0.05)
    return False


def _helper_pid() -> int:
    assert _until_proven(), "the helper never proved a plain file"
    process = halves._HELPER._process
    assert process is not None
    return process.pid


def _in_thread(fn: Callable[[], object], cpus: set[int] | None = None) -> object:
    """``fn()`` in a new thread, pinned to ``cpus`` first when given (the thread's own
    affinity only: the test's thread is left alone)."""
    box: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
            box.append(fn())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    if errors:
        raise errors[0]
    assert box, "the thread did not finish"
    return box[0]


@pytest.fixture(autouse=True)
def _fresh_helper() -> Iterator[None]:
    halves._HELPER.close()
    halves._HELPER = halves._Helper()
    yield
    halves._HELPER.close()
    halves._HELPER = halves._Helper()


# -- where the thread runs ------------------------------------------------------------------


@needs_two_cpus
def test_the_current_cpu_is_read_past_any_thread_name() -> None:
    """The thread's name sits in parentheses inside /proc/thread-self/stat and may hold ')',
    spaces, digits and a newline: the CPU is still field 39 counted from the last ')'."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        pytest.skip("no prctl")

    def read_all() -> list[tuple[bytes, int, int | None]]:
        seen = []
        for name in (b"a) 1 2 3 4 5 6", b") (", b"x\n)9 9 9", b"(((", b""):
            prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
            for cpu in sorted(os.sched_getaffinity(0))[:2]:
                os.sched_setaffinity(0, {cpu})
                seen.append((name, cpu, halves._current_cpu()))
        return seen

    seen = _in_thread(read_all)
    assert isinstance(seen, list) and seen
    assert all(cpu == read for _, cpu, read in seen), seen


class _FakeStat:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def __enter__(self) -> _FakeStat:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read(self) -> bytes:
        return self.data


_FIELDS = b" ".join(b"0" for _ in range(36))
GARBAGE_STATS = {
    "empty": b"",
    "no parenthesis": b"12 python R 1 2 3",
    "too few fields": b"12 (python) R 1 2 3",
    "not a number": b"12 (python) " + _FIELDS + b" x1 0 0",
    "a float": b"12 (python) " + _FIELDS + b" 1.5 0 0",
}


@pytest.mark.parametrize("data", GARBAGE_STATS.values(), ids=list(GARBAGE_STATS))
def test_a_garbage_stat_file_reads_as_no_cpu(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(halves, "open", lambda *a, **k: _FakeStat(data), raising=False)
    assert halves._current_cpu() is None


@pytest.mark.parametrize(
    "error",
    [PermissionError(errno.EACCES, "no"), FileNotFoundError(errno.ENOENT, "no /proc")],
    ids=["EACCES", "ENOENT"],
)
def test_an_unreadable_stat_file_leaves_the_helper_alone_and_the_answers_right(
    monkeypatch: pytest.MonkeyPatch, error: OSError
) -> None:
    pid = _helper_pid()
    before = os.sched_getaffinity(pid) if hasattr(os, "sched_getaffinity") else None
    away = halves._HELPER._away_from

    def refuse(*args: object, **kwargs: object) -> object:
        raise error

    monkeypatch.setattr(halves, "open", refuse, raising=False)
    assert halves._current_cpu() is None
    for _ in range(3):
        assert halves.compiles(GOOD)
        assert not halves.compiles(BAD)
    assert halves._HELPER._process is not None and halves._HELPER._process.pid == pid
    if before is not None:
        assert os.sched_getaffinity(pid) == before
    assert halves._HELPER._away_from == away


@pytest.mark.parametrize("cpu", [-1, 10**6, 2**40])
def test_a_cpu_number_out_of_range_costs_nothing(monkeypatch: pytest.MonkeyPatch, cpu: int) -> None:
    """Whatever number the stat file gives, the helper keeps CPUs it was started with."""
    pid = _helper_pid()
    monkeypatch.setattr(halves, "_current_cpu", lambda: cpu)
    assert halves.compiles(GOOD)
    assert not halves.compiles(BAD)
    assert halves._HELPER._process is not None and halves._HELPER._process.pid == pid
    if halves._HELPER._cpus:
        assert os.sched_getaffinity(pid) == halves._HELPER._cpus


# -- the affinity call failing --------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.EINVAL, "Invalid argument"),  # a cpuset that shrank
        PermissionError(errno.EPERM, "Operation not permitted"),  # seccomp, another user
        ProcessLookupError(errno.ESRCH, "No such process"),
    ],
    ids=["EINVAL", "EPERM", "ESRCH"],
)
def test_a_refused_affinity_call_does_not_stop_the_helper_or_change_answers(
    monkeypatch: pytest.MonkeyPatch, error: OSError
) -> None:
    pid = _helper_pid()
    calls: list[object] = []

    def refuse(target: int, cpus: object) -> None:
        calls.append((target, cpus))
        raise error

    monkeypatch.setattr(halves, "_current_cpu", lambda: 0)
    monkeypatch.setattr(halves._HELPER, "_cpus", {0, 1})
    monkeypatch.setattr(halves._HELPER, "_away_from", None)
    monkeypatch.setattr(os, "sched_setaffinity", refuse, raising=False)
    for _ in range(3):
        assert halves.compiles(GOOD)
        assert not halves.compiles(BAD)
    assert calls and all(call == (pid, {1}) for call in calls)
    # Not remembered as done: tried again at each ask, never taken for success.
    assert len(calls) == 6 and halves._HELPER._away_from is None
    assert halves._HELPER._process is not None and halves._HELPER._process.pid == pid


@needs_two_cpus
def test_cpus_no_longer_allowed_get_a_real_einval_and_nothing_breaks() -> None:
    """The set stored at start holds a CPU that is no longer there (a cpuset that shrank):
    the kernel answers EINVAL; the helper keeps its CPUs and proves what it proved."""
    allowed = os.sched_getaffinity(0)
    pid = _helper_pid()
    cpu = min(allowed)
    halves._HELPER._cpus = {cpu, 4000}  # what remains after the caller's CPU: only CPU 4000
    halves._HELPER._away_from = None
    before = os.sched_getaffinity(pid)

    def ask() -> tuple[bool, bool]:
        return halves.compiles(GOOD), halves.compiles(BAD)

    assert _in_thread(ask, {cpu}) == (True, False)
    assert os.sched_getaffinity(pid) == before
    assert halves._HELPER._away_from is None
    # A set with a CPU gone but others left: the kernel keeps those that exist.
    halves._HELPER._cpus = allowed | {4000}
    assert _in_thread(ask, {cpu}) == (True, False)
    assert os.sched_getaffinity(pid) == allowed - {cpu}
    assert halves._HELPER._away_from == cpu


# -- the helper replaced, dead or a zombie between asks -------------------------------------


@needs_two_cpus
def test_a_replaced_helper_is_kept_off_the_same_cpu_again() -> None:
    """The CPU the old helper was kept off is forgotten with it: a new helper asked from the
    same CPU is moved too (not taken for already done)."""
    allowed = os.sched_getaffinity(0)
    cpu = max(allowed)
    old = _helper_pid()
    assert _in_thread(lambda: halves.compiles(GOOD), {cpu}) is True
    assert os.sched_getaffinity(old) == allowed - {cpu}
    os.kill(old, signal.SIGKILL)
    time.sleep(0.1)
    assert not halves.compiles(GOOD)  # found dead: another started, from this unpinned thread
    assert _in_thread(lambda: _until_proven(), {cpu}) is True
    process = halves._HELPER._process
    assert process is not None and process.pid != old
    assert halves._HELPER._cpus == allowed
    assert os.sched_getaffinity(process.pid) == allowed - {cpu}
    assert _in_thread(lambda: halves.compiles(BAD), {cpu}) is False


@pytest.mark.parametrize("reaped", [False, True], ids=["zombie", "reaped"])
def test_a_helper_that_died_after_it_was_found_alive_gives_false_not_an_error(
    monkeypatch: pytest.MonkeyPatch, reaped: bool
) -> None:
    """Dead between ``_ready`` and the affinity call (a zombie, or reaped so that its pid may
    be anyone's): no exception reaches the caller, the answer is False, the helper is
    dropped and a later ask starts another."""
    _helper_pid()
    process = halves._HELPER._process
    assert process is not None
    found_alive = halves._Helper._ready

    def ready_then_die(self: halves._Helper, size: int) -> subprocess.Popen[bytes] | None:
        got = found_alive(self, size)
        if got is process:
            os.kill(process.pid, signal.SIGKILL)
            if reaped:
                process.wait(5)
            else:
                deadline = time.monotonic() + 5  # wait for the zombie, without reaping it
                while time.monotonic() < deadline:
                    with open(f"/proc/{process.pid}/stat", "rb") as stat:
                        if stat.read().rpartition(b")")[2].split()[0] == b"Z":
                            break
                    time.sleep(0.01)
        return got

    monkeypatch.setattr(halves._Helper, "_ready", ready_then_die)
    monkeypatch.setattr(halves, "_current_cpu", lambda: 0)
    monkeypatch.setattr(halves._HELPER, "_cpus", {0, 1})
    monkeypatch.setattr(halves._HELPER, "_away_from", None)
    assert halves.compiles(GOOD) is False
    assert halves._HELPER._process is None
    monkeypatch.setattr(halves._Helper, "_ready", found_alive)
    assert _until_proven()
    assert not halves.compiles(BAD)


# -- many threads, many CPUs ----------------------------------------------------------------


@needs_two_cpus
def test_threads_pinned_to_every_cpu_asking_at_once_get_only_right_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    pid = _helper_pid()
    wrong: list[str] = []
    # Per thread: how many asks the helper answered, and how many texts were proven. A
    # thread that finds the helper busy compiles whole (``compiles`` says False at once), so
    # each thread asks until the helper has answered it a few times: without that, the
    # first thread to take the helper could hold it through every other thread's asks (as
    # in CI at 7d39e0e, where a broken text's thread took it and nothing was proven).
    answered: dict[int, int] = {}
    proven: dict[int, int] = {}
    real_answer = halves._Helper.answer

    def counted(self: halves._Helper, process: subprocess.Popen[bytes]) -> bool:
        key = threading.get_ident()
        answered[key] = answered.get(key, 0) + 1
        return real_answer(self, process)

    monkeypatch.setattr(halves._Helper, "answer", counted)

    def ask(cpu: int, text: str, expected: bool) -> None:
        key = threading.get_ident()
        os.sched_setaffinity(0, {cpu})
        deadline = time.monotonic() + 40
        k = 0
        while answered.get(key, 0) < 4 and time.monotonic() < deadline:
            if k % 3 == 2:  # move now and then: the helper follows
                os.sched_setaffinity(0, {allowed[(allowed.index(cpu) + k) % len(allowed)]})
            said = halves.compiles(text)
            if said and not expected:
                wrong.append(f"proved a broken text from CPU {cpu}")
            proven[key] = proven.get(key, 0) + said
            k += 1
            time.sleep(0.002)  # let another thread take the helper

    threads = [
        threading.Thread(target=ask, args=(allowed[k % len(allowed)], text, text is GOOD))
        for k, text in enumerate([GOOD, BAD, GOOD, BAD, GOOD, BAD])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not wrong
    assert len(answered) == len(threads) and min(answered.values()) >= 4, answered
    for thread in threads[::2]:  # every answer to a good text proved it
        assert proven.get(thread.ident or 0) == answered[thread.ident or 0], (proven, answered)
    # Never stopped (no answer lost or late), and left where the last ask put it.
    helper = halves._HELPER
    assert helper._process is not None and helper._process.pid == pid
    assert helper._away_from in allowed
    assert os.sched_getaffinity(pid) == set(allowed) - {helper._away_from}


@needs_two_cpus
def test_a_fork_from_a_pinned_thread_gets_its_own_helper_and_right_answers() -> None:
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    parent = _helper_pid()
    assert _in_thread(lambda: halves.compiles(GOOD), {max(allowed)}) is True
    parent_cpus = os.sched_getaffinity(parent)
    read, write = os.pipe()
    os.sched_setaffinity(0, {cpu})
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            code = 1
            try:
                assert halves._HELPER._process is None
                good = _until_proven(GOOD, 100)
                bad = any(halves.compiles(BAD) for _ in range(3))
                own = halves._HELPER._process
                mine = own is not None and own.pid != parent
                os.write(write, b"%d%d%d" % (good, bad, mine))
                code = 0
            finally:
                os._exit(code)
    finally:
        os.sched_setaffinity(0, allowed)
    os.close(write)
    answer = os.read(read, 16)
    os.close(read)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert answer == b"101"  # the good text proven, the bad one never, by its own helper
    assert halves._HELPER._process is not None and halves._HELPER._process.pid == parent
    assert os.sched_getaffinity(parent) == parent_cpus
    assert halves.compiles(GOOD) and not halves.compiles(BAD)


@needs_two_cpus
def test_a_helper_started_by_a_pinned_thread_is_still_kept_off_the_callers_cpu() -> None:
    """A pinned starter's helper inherits that one CPU; the main thread's CPUs are the ones
    it may use, so a caller on the starter's CPU still moves it away."""
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)

    def start_and_prove() -> bool:
        return _until_proven()

    assert _in_thread(start_and_prove, {cpu}) is True
    process = halves._HELPER._process
    assert process is not None
    assert _in_thread(lambda: halves.compiles(GOOD), {cpu}) is True
    assert cpu not in os.sched_getaffinity(process.pid)


@needs_two_cpus
@pytest.mark.xfail(
    strict=True,
    reason="accepted: an ask widens the helper back to the CPUs stored at its start, undoing "
    "a restriction made since (taskset on the helper's pid). With two CPUs the restriction "
    "can equal the set an ask made, so no rule that moves the helper both ways can tell them "
    "apart (docs/guarantees.md)",
)
def test_an_ask_does_not_give_the_helper_cpus_it_was_denied_since() -> None:
    allowed = os.sched_getaffinity(0)
    low, high = min(allowed), max(allowed)
    pid = _helper_pid()
    assert _in_thread(lambda: halves.compiles(GOOD), {high}) is True
    assert halves._HELPER._away_from == high
    os.sched_setaffinity(pid, {low})  # an administrator's "taskset -p -c <low> <pid>"
    assert _in_thread(lambda: halves.compiles(GOOD), {low}) is True
    assert high not in os.sched_getaffinity(pid)


# -- the threshold: texts just above 36,000 characters --------------------------------------


def _exact(length: int) -> str:
    text = _filler("a", 240) + MARK + _filler("b", 240)
    pad = length - len(text)
    assert pad >= 2
    return text + "#" + "x" * (pad - 2) + "\n"


def test_the_threshold_is_where_the_helper_starts_being_asked() -> None:
    below, at = _exact(halves.SPLIT_MIN_CHARS - 1), _exact(halves.SPLIT_MIN_CHARS)
    assert halves.SPLIT_MIN_CHARS == 36_000
    assert halves._cut(below) is not None and halves._cut(at) is not None
    assert not halves.compiles(below)
    assert halves._HELPER._process is None  # not even started
    assert _until_proven(at)
    assert not halves.compiles(below)


FUTURE = "from __future__ import annotations\n"
BARRY = "from __future__ import barry_as_FLUFL\n"
# name -> (opening, second, tail, whether the whole text compiles); every text is just
# above the threshold, with its one cut in the middle.
NEAR_THRESHOLD = {
    "plain": ("", "", "", True),
    "annotations imported first": (FUTURE, "x: undefined_name = 1\n", "", True),
    "CRLF blank line at the cut": ("", "", "\r", True),
    # The parser ignores barry_as_FLUFL when it is imported (only the flag changes it).
    "barry first, != after the cut": (BARRY, "assert 1 != 2\n", "", True),
    "barry first, <> after the cut": (BARRY, "assert 1 <> 2\n", "", False),
    "future import after the cut": ("", FUTURE, "", False),
    "future import spelt with NFKC letters": (
        "",
        "from __ｆuture__ import annotations\n",
        "",
        False,
    ),
    "global after a module-level use": ("late_1 = 0\n", "global late_1\n", "", False),
    "global behind a continuation": ("late_2 = 0\n", "if 1:\n    global \\\n late_2\n", "", False),
    "global of an NFKC name": ("x = 0\n", "global ｘ\n", "", False),
    "lone surrogate after the cut": ("", "s = '\ud800'\n", "", False),
    "surrogate pair after the cut": ("", "s = '\ud83d\ude00'\n", "", False),
    "lone surrogate right before the cut": ("", "", "s = '\udfff'\n", False),
    "NUL after the cut": ("", "s = 1\x00\n", "", False),
    "tabs and spaces mixed after the cut": ("", "if 1:\n\tx = 1\n        y = 2\n", "", False),
    "return outside a function after the cut": ("", "return 1\n", "", False),
    "non-ASCII names": ("", "café = 1\nπ = café\n", "", True),
    # Annotations imported where the guess does not see it: a walrus in an annotation is an
    # error in the whole file only.
    "annotations imported over a continuation": (
        "from __future__ import \\\n    annotations\n",
        "def g(x: (y := 1)):\n    pass\n",
        "",
        False,
    ),
    "the import only in a docstring": (
        '"""Example:\nfrom __future__ import annotations\n"""\n',
        "def g(x: (y := 1)):\n    pass\n",
        "",
        True,
    ),
}


@pytest.mark.parametrize("name", NEAR_THRESHOLD)
def test_texts_just_above_the_threshold_are_proven_only_when_they_compile(name: str) -> None:
    opening, second, tail, compiles = NEAR_THRESHOLD[name]
    text = _file(opening, second, tail)
    assert len(text) < 40_000
    assert _whole_ok(text) is compiles
    _helper_pid()
    said = [halves.compiles(text) for _ in range(3)]
    if not compiles:
        assert not any(said)
        assert validation._python(text, "big.py") is not None
    elif name not in ("barry first, != after the cut", "the import only in a docstring"):
        # (those two are left to the whole compile, by design)
        assert all(said)
    else:
        assert validation._python(text, "big.py") is None


@pytest.mark.parametrize("coding", ["ascii", "latin-1"])
def test_a_coding_declaration_sends_a_text_above_the_threshold_to_the_whole_compile(
    coding: str,
) -> None:
    """The file is read by its declaration: the halves (compiled as str) must not speak."""
    text = _file(f"# -*- coding: {coding} -*-\n", "s = 'é€'\n")
    _helper_pid()
    assert not any(halves.compiles(text) for _ in range(3))
    expected = coding == "latin-1"  # the UTF-8 bytes read as Latin-1 are valid, if mangled
    assert (validation._python(text, "big.py") is None) is expected


# -- the guards against the implementation before the change --------------------------------


def _old_guards() -> ModuleType:
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", "fa5b8da:grinta_jupyter/runtime/guards.py"],
        capture_output=True,
        check=False,
    )
    if source.returncode != 0:
        pytest.skip("commit fa5b8da is not in this checkout")
    name = "_guards_before_fa5b8da"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    try:
        exec(compile(source.stdout, "old_guards.py", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture(scope="module")
def old_guards() -> ModuleType:
    return _old_guards()


ODD_SPACE = [" ", "\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028",
             "\u2029", "\xa0", "\u3000", "\r"]  # fmt: skip
PIECES = [
    "#", "# ", "\\", "\\n", "\\r", "\\t", '\\"', "\\\\n", '"', "'", "'#'", '"\\n#"', "...", "…",
    "⋯", "//", "/*", "*/", "<!--", "-->", "(", ")", "[", "]", "{", "}", "-", ";", "%", "*", ".",
    "rest of file", "existing code", "unchanged", "same as before", "x = 1", "def f():",
    "print('a\\nb')", "    ", "snip", "code", "é", "Ü", "def ", "return x", "if x:", "C:\\new",
    "\\theta", "x" * 130,
]  # fmt: skip


def _line(rng: random.Random) -> str:
    lead = "".join(rng.choice(ODD_SPACE) for _ in range(rng.randint(0, 2)))
    return lead + "".join(rng.choice(PIECES + ODD_SPACE) for _ in range(rng.randint(0, 6)))


def _verdicts(module: ModuleType, text: str, path: str, compiled: bool) -> tuple[object, ...]:
    """What ``facade._check`` asks of the guards for a new file ``text`` at ``path``; the
    last with the file's first third as what it held, unless that is where the rule changed
    since fa5b8da (then None, for both implementations)."""
    added = unified_diff(path, None, text).added
    joined = "\n".join(line for _, line in added)
    held = text[: len(text) // 3]
    checks = [
        module.check_serialized(joined, path, compiled),
        module.check_serialized(joined, path, False),
        module.check_serialized(joined, path, True),  # the comment count's shortcut, always
        module.check_placeholder(added, "", path, text),
    ]
    if not _held_in_part_only(added, held, path):
        checks.append(module.check_placeholder(added, held, path, text))
    out = [None if error is None else (error.code, error.line, error.message) for error in checks]
    return tuple(out + [None] * (5 - len(out)))


def _held_in_part_only(added: list[tuple[int, str]], held: str, path: str) -> bool:
    """Whether an added line that looks like a placeholder is in ``held`` only as part of a
    longer line: fa5b8da counted that as held, and a placeholder beginning a longer line of
    the file passed (tests/test_attacks_guards4.py); now only a whole line of the file is.
    (1 of the 2,000 random files here.)"""
    whole = {line.strip() for line in held.split("\n")}
    prose = guards.is_prose(path)
    return any(
        guards._placeholder(line, prose) is not None
        and line.strip() in held
        and line.strip() not in whole
        for _, line in added
    )


@pytest.mark.parametrize("seed", range(4))
def test_random_files_with_odd_whitespace_get_the_old_verdicts(
    old_guards: ModuleType, seed: int
) -> None:
    rng = random.Random(seed)
    refused = accepted = 0
    for _ in range(500):
        lines = rng.choice([1, 8, 63, 64, 65, 200])
        newline = rng.choice(["\n", "\r\n", "\n"])
        text = newline.join(_line(rng) for _ in range(lines))
        path = rng.choice(["a.py", "a.md", "a.sh", "a.js", "README", "a.pyi"])
        compiled = path.endswith(".py") and validation.compiles(path, text)
        new = _verdicts(guards, text, path, compiled)
        assert new == _verdicts(old_guards, text, path, compiled), repr(text)
        refused += any(new)
        accepted += not any(new)
    assert refused and accepted  # both answers are reached


def _stdlib_variants() -> Iterator[tuple[str, str]]:
    """Real modules with one odd line put in, as created whole."""
    inserts = [
        "\x0c# ... existing code ...",
        "\u2028# rest of file unchanged",
        "\xa0\x0b// ...",
        "x = 1  # a\\nb\\nc",
        "# a\\n\\tdef f():\\n    pass",
        "s = '#\\n'  # \\",
        "# \\" + "n" * 50,
        "\x1c[snip]",
        "\x85... existing code ...",
        "\u3000(rest unchanged)",
    ]
    for module in ("tarfile.py", "json/decoder.py"):
        lines = (STDLIB / module).read_text().split("\n")
        for k, insert in enumerate(inserts):
            at = len(lines) * (k + 1) // (len(inserts) + 2)
            while lines[at].strip():  # a blank line: between statements
                at += 1
            yield module, "\n".join([*lines[:at], insert, *lines[at:]])


def test_real_modules_with_odd_lines_get_the_old_verdicts(old_guards: ModuleType) -> None:
    seen = set()
    for module, text in _stdlib_variants():
        compiled = validation.compiles(module, text)
        new = _verdicts(guards, text, module, compiled)
        assert new == _verdicts(old_guards, text, module, compiled), module
        seen.add(any(new))
        crlf = text.replace("\n", "\r\n")
        assert _verdicts(guards, crlf, module, compiled) == _verdicts(
            old_guards, crlf, module, compiled
        )
    assert seen == {True, False}


def test_a_comment_escape_on_the_last_line_without_a_newline_is_counted() -> None:
    """The backslash search must reach the last line (no newline after it) and the first."""
    assert guards._comments_may_refuse("# a\\nb\\nc", 0)
    assert guards._comments_may_refuse("x = 1\ny = 2  # \\n\\n", 1)
    assert guards._comments_may_refuse("\\\n# \\n \\t", 0)
    assert not guards._comments_may_refuse("'\\n' # none here\n# \\x", 5)
    # A backslash before the '#' on one line and escapes after it on the next.
    assert guards._comments_may_refuse("a = '\\n'  # \\t\n# \\n \\r", 1)
