"""Guards: deterministic checks the session runs around the model.

Each returns a ``Firing`` (or None); the session records every firing as an
event and acts on it. Every limit is a field of ``Limits``.
"""

from __future__ import annotations

import hashlib
import json
import math
import posixpath
import re
import shlex
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, Literal

from grinta_jupyter.agent.shell import segments
from grinta_jupyter.agent.tasktext import asks_for_change
from grinta_jupyter.agent.testruns import (
    SetupChange,
    changes_files,
    code_changes_files,
    covers,
    failing_tests,
    installs_packages,
    judge,
    parse_test_command,
    selections,
    setup_change,
    setup_files_named,
    setups_of,
    test_layout,
    test_names,
)
from grinta_jupyter.config import CondenseMethod, Config
from grinta_jupyter.runtime.errors import COMMAND_FAILED, COMMAND_TIMEOUT, EXECUTE_FAILED
from grinta_jupyter.runtime.proposal import CommandProposal, Observation, Proposal, WriteProposal


@dataclass(frozen=True)
class Limits:
    """Every guard's threshold, and the session budgets (None = no limit).

    The budgets are what a person configures: their defaults are ``Config``'s.
    """

    repeat_threshold: int = 3  # the same call with the same result this many times is "stuck"
    failing_command_threshold: int = 3  # the same command failing this often, with no change
    alternation_window: int = 6  # A/B/A/B/A/B over this many calls is "stuck"
    failed_region_threshold: int = 2  # the same failing edit target this many times forces a read
    max_consecutive_errors: int = 5  # circuit breaker
    max_finish_rejections: int = 2  # after this many rejected finishes, the next one is accepted
    max_stuck_warnings: int = 2  # after this many stuck warnings, the session stops
    max_steps: int | None = Config.max_steps
    max_tokens: int | None = Config.max_tokens
    max_cost: float | None = Config.max_cost  # dollars
    max_wall_time: float | None = Config.max_wall_time  # seconds
    max_model_turns_without_tool: int = 3
    # Tokens each request stays under (older turns are condensed, agent/condense.py);
    # None: a share of the model's context window (``condense.request_budget``).
    context_budget: int | None = Config.context_budget
    condense: CondenseMethod = Config.condense  # who writes a condensation's text


GuardName = Literal[
    "stuck_repeat",
    "stuck_alternation",
    "stuck_failing_command",
    "failed_region",
    "circuit_breaker",
    "budget:steps",
    "budget:tokens",
    "budget:cost",
    "budget:wall_time",
    "premature_finish",
    "no_tool_call",
]
# What a firing does: a note after the result, a fresh read of the file, the finish sent
# back to the model, or the end of the session.
GuardAction = Literal["warn", "force_read", "reject_finish", "stop"]


# Why a session ended, when the machine ended it; ``stop(reason)`` ends it with the
# caller's own words instead (e.g. "stopped by the user"), kept as given.
EndReason = Literal[
    "finished",
    "error",
    "policy_error",
    "log_write_failed",
    "stuck",
    "no_tool_call",
    "circuit_breaker",
    "budget:steps",
    "budget:tokens",
    "budget:cost",
    "budget:wall_time",
]


@dataclass(frozen=True)
class Firing:
    guard: GuardName
    detail: str
    action: GuardAction
    message: str = ""  # what the model is told, when anything


def signature(tool: str, args: dict[str, Any], root: str | None = None) -> str:
    """What makes two calls the same call. A command is compared as the shell reads it
    (comments, quoting and spacing dropped) and without its timeout: ``pytest -q # try 2``
    and ``pytest  '-q'`` with another timeout are the same command run again. A file is
    named the one way (``workspace_args``): ``calc.py``, ``./calc.py`` and, with the
    workspace ``root``, its absolute path are the same file."""
    if tool == "run" and isinstance(args.get("command"), str):
        args = {"command": _same_runner(as_read(args["command"]))}
    else:
        args = workspace_args(args, root)
    return f"{tool}:{json.dumps(args, sort_keys=True)}"


# The header of a read's output: the file as the workspace names it and the lines shown.
_READ_HEADER = re.compile(r"^(?P<path>.+) \(lines \d+-\d+ of \d+\)$")


def call_signature(proposal: Proposal, observation: Observation, root: str | None = None) -> str:
    """``signature`` of a call that ran. A read of lines is named by what it showed, the
    file as the workspace names it and the range: ``calc.py``, ``./calc.py``, the absolute
    path of it, ``start_line=1`` and an ``end_line`` past the end all read the same text."""
    args = proposal.args
    if proposal.tool == "read" and observation.ok and not args.get("symbol"):
        header = _READ_HEADER.match(observation.output.split("\n", 1)[0])
        if header is not None:
            rest = {k: v for k, v in args.items() if k not in ("path", "start_line", "end_line")}
            return f"read:{header.group(0)} {json.dumps(rest, sort_keys=True)}"
    return signature(proposal.tool, args, root)


def _same_path(path: str) -> str:
    """``path`` as written the one way two spellings of a workspace path share."""
    return posixpath.normpath(path.strip().replace("\\", "/")) if path.strip() else path


def workspace_path(path: str, root: str | None) -> str:
    """``path`` as ``_same_path`` writes it, and relative to the workspace ``root`` when it
    names a file in it: ``/ws/calc.py``, ``../ws/calc.py`` and, through a link to the
    workspace (``~/proj`` -> ``/data/proj``), ``/link/calc.py`` are ``calc.py``. A path
    outside the workspace stays as it is (``_same_path``)."""
    same = _same_path(path)
    if not root or not path.strip() or "\x00" in same:
        return same
    base = posixpath.normpath(root)
    full = posixpath.normpath(posixpath.join(base, same))
    real_root = _real(base)
    for top in dict.fromkeys((base, real_root)):
        inside = _under(full, top)
        if inside is not None:
            return inside
    # Its folder's links followed (not the file's own: a link in the workspace stays itself).
    folder, name = posixpath.split(full)
    inside = _under(_real(folder), real_root) if name else None
    if inside is None:
        return same
    return name if inside == "." else f"{inside}/{name}"


def _under(path: str, top: str) -> str | None:
    """``path`` relative to the folder ``top`` when it is in it (``"."`` for ``top``)."""
    if path == top:
        return "."
    prefix = top if top.endswith("/") else top + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _real(path: str) -> str:
    """``path`` with its links followed (as it is when it cannot be read)."""
    try:
        return posixpath.realpath(path)
    except (OSError, ValueError):
        return path


def workspace_args(args: dict[str, Any], root: str | None) -> dict[str, Any]:
    """``args`` with each file named the one way (``workspace_path``): ``path``, and the
    ``path`` and ``symbol`` (``path::name``) of each of ``edits``."""
    if isinstance(args.get("path"), str):
        args = {**args, "path": workspace_path(args["path"], root)}
    edits = args.get("edits")
    if isinstance(edits, list) and any(isinstance(e, dict) for e in edits):
        args = {**args, "edits": [_workspace_edit(e, root) for e in edits]}
    return args


def _workspace_edit(edit: Any, root: str | None) -> Any:
    if not isinstance(edit, dict):
        return edit
    edit = dict(edit)
    if isinstance(edit.get("path"), str):
        edit["path"] = workspace_path(edit["path"], root)
    symbol = edit.get("symbol")
    if isinstance(symbol, str) and "::" in symbol:
        path, _, name = symbol.partition("::")
        edit["symbol"] = f"{workspace_path(path, root)}::{name}"
    return edit


def describe_call(tool: str, args: dict[str, Any]) -> str:
    """A short label of a call for a warning, so the model knows which call it repeats:
    ``run `pytest -q` ``, ``read path=calc.py start_line=1``."""
    if tool == "run" and isinstance(args.get("command"), str):
        return f"run `{_short(args['command'], 80)}`"
    shown = [
        f"{key}={_short(str(value), 40)}"
        for key, value in args.items()
        if isinstance(value, (str, int, float)) and not isinstance(value, bool)
    ]
    label = " ".join([tool, *shown[:3]])
    return label if len(label) <= 120 else label[:117] + "..."


# ``python -m pytest`` and ``pytest`` start the same runner (the module form also puts the
# current folder on sys.path, which a compared result shows when it matters).
_PYTHON_M_PYTEST = re.compile(r"(^ |[;&|] )python[0-9.]* -m pytest\b")


def _same_runner(command: str) -> str:
    """``command`` (as the shell reads it) with ``python -m pytest`` written ``pytest``."""
    return _PYTHON_M_PYTEST.sub(r"\1pytest", command)


def as_read(command: str) -> str:
    """``command`` as the shell reads it: comments, quoting and spacing dropped."""
    parts = segments(command)
    return " ; ".join(f"{p.joined_by} {shlex.join(p.words)}" for p in parts) or command


@dataclass
class _Call:
    """A call the stuck detector saw, and its result, fingerprinted (``output_digest``) only
    when it is compared: normalising a result costs milliseconds, and results are compared
    only when the same call came back ``repeat_threshold`` times in a row."""

    signature: str
    output: str  # the part of the result ``normalize_output`` reads
    label: str = ""  # ``describe_call``: what a warning names
    _digest: str | None = None

    def digest(self) -> str:
        if self._digest is None:
            self._digest = output_digest(self.output)
        return self._digest


@dataclass
class StuckDetector:
    """Repeats that change nothing: the same call and result, A/B alternations, a failing
    command re-run with no change in between, and edits failing on the same target.

    Results are compared after ``normalize_output`` drops what differs between two runs of
    the same thing (timings, addresses, PIDs, temp paths, dates, ports), so ``0.12s`` against
    ``0.13s`` is still the same result. A failing command counts again even when other calls
    sit between the repeats (reads, other commands); only a successful write, or a successful
    command that plainly changes files (``mv``, ``sed -i``) or installs packages, resets it.
    A write that puts the files back as they were (an edit, then its undo) resets nothing:
    failures are counted per state of the files the session wrote.

    A cycle of three calls (A/B/C/A/B/C) is stuck when each call got the same result as its
    last turn: with nothing changed, the next turn of the cycle will see the same. Edits that
    fail on one file (each on another target) with no successful write to it in between
    force a fresh read once there are one more of them than ``failed_region_threshold``:
    the model is editing from a picture of the file that is wrong. Each warning names the
    call it is about. A file is the same file however it is spelled (``workspace_path``):
    ``calc.py``, ``./calc.py`` and its absolute path under ``root``, the workspace.
    """

    limits: Limits
    root: str | None = None
    # The last calls, as many as the repeat and alternation checks read.
    recent: deque[_Call] = field(init=False)
    failed_targets: dict[str, int] = field(default_factory=dict)
    failing_commands: dict[str, int] = field(
        default_factory=dict
    )  # "files-state command" -> failures since a change
    # Each file the session wrote: digests of its text before the first write and now.
    written: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    # Failed edits per file since its last successful write, whatever their targets.
    failed_paths: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kept = max(1, self.limits.repeat_threshold, self.limits.alternation_window)
        self.recent = deque(maxlen=kept)

    def observe(self, proposal: Proposal, observation: Observation) -> Firing | None:
        sig = call_signature(proposal, observation, self.root)
        command = " ".join(shell_command(proposal).split())
        if isinstance(proposal, WriteProposal) and observation.ok:
            self._note_write(proposal)
            for path in proposal.paths:
                self.failed_paths.pop(workspace_path(path, self.root), None)
        # "pytest -q  # try 2" is "pytest -q" again, and so it is after an edit and its undo.
        key = f"{self._files_state()} {as_read(command)}" if command else ""
        failures = self._count_failing_command(proposal, observation, command, key)
        label = describe_call(proposal.tool, proposal.args)
        self.recent.append(_Call(sig, observation.output[:_COMPARED_CHARS], label))
        recent = list(self.recent)[-self.limits.repeat_threshold :]
        if (
            len(recent) == self.limits.repeat_threshold
            and len({c.signature for c in recent}) == 1
            and len({c.digest() for c in recent}) == 1  # results compared only for one call
        ):
            self.failing_commands.pop(key, None)  # one warning for one loop
            return Firing(
                "stuck_repeat",
                f"{label} called {len(recent)} times with the same result",
                "warn",
                f"You have made the same {proposal.tool} call {len(recent)} times and got the "
                f"same result ({label}). Do something different.",
            )
        calls = list(self.recent)[-self.limits.alternation_window :]
        window = [c.signature for c in calls]
        if (
            len(window) == self.limits.alternation_window
            and len(set(window)) == 2
            and all(window[i] != window[i + 1] for i in range(len(window) - 1))
        ):
            names = " and ".join(f"`{c.label}`" for c in calls[-2:])
            return Firing(
                "stuck_alternation",
                f"alternating between {names} for {len(window)} steps",
                "warn",
                f"You are alternating between the same two calls ({names}). Step back and "
                "change approach.",
            )
        if self._cycles(calls):
            names = ", ".join(f"`{c.label}`" for c in calls[-3:])
            return Firing(
                "stuck_alternation",
                f"cycling through {names} for {len(window)} steps with the same results",
                "warn",
                f"You are going round the same three calls ({names}) and each gets the same "
                "result as last time. Step back and change approach.",
            )
        if failures >= self.limits.failing_command_threshold:
            self.failing_commands.pop(key, None)
            return Firing(
                "stuck_failing_command",
                f"`{command[:80]}` failed {failures} times with no change in between",
                "warn",
                f"`{command[:80]}` has failed {failures} times and nothing was changed in "
                "between, so running it again will fail the same way. Read the failure, change "
                "the code (or the command), then run it again.",
            )
        if isinstance(proposal, WriteProposal) and observation.error is not None:
            return self._failed_edit(proposal)
        return None

    def _cycles(self, calls: list[_Call]) -> bool:
        """Whether ``calls`` (the last ``alternation_window``) go round three distinct calls,
        each with the result it got one turn before."""
        period = 3
        if len(calls) != self.limits.alternation_window or len(calls) < 2 * period:
            return False
        if len({c.signature for c in calls[:period]}) != period:
            return False
        later = range(period, len(calls))
        if any(calls[i].signature != calls[i - period].signature for i in later):
            return False
        return all(calls[i].digest() == calls[i - period].digest() for i in later)

    def _failed_edit(self, proposal: Proposal) -> Firing | None:
        """Count a failed edit by its target and by its file; a fresh read when either is
        too many."""
        target = edit_target(proposal, self.root)
        if target:
            self.failed_targets[target] = self.failed_targets.get(target, 0) + 1
            if self.failed_targets[target] >= self.limits.failed_region_threshold:
                self.failed_targets[target] = 0
                return Firing(
                    "failed_region",
                    f"edit on {target} failed {self.limits.failed_region_threshold} times",
                    "force_read",
                )
        edits = proposal.args.get("edits")
        first = edits[0] if isinstance(edits, list) and edits and isinstance(edits[0], dict) else {}
        path = proposal.args.get("path", first.get("path"))
        if not isinstance(path, str) or not path.strip():
            return None
        path = workspace_path(path, self.root)
        self.failed_paths[path] = self.failed_paths.get(path, 0) + 1
        if self.failed_paths[path] > self.limits.failed_region_threshold:
            count = self.failed_paths.pop(path)
            return Firing(
                "failed_region",
                f"{count} edits on {path} failed, each on another target, with no write in between",
                "force_read",
                f"{count} edits of {path} failed in a row, each on another target: the text you "
                "edit from is not what the file holds",
            )
        return None

    def _count_failing_command(
        self, proposal: Proposal, observation: Observation, command: str, key: str
    ) -> int:
        """How many times ``command`` (``key``: as the shell reads it, in this state of the
        files) has now failed since the last change (0 if it did not)."""
        if proposal.tool == "execute" and kernel_code_writes(proposal, observation):
            self.failing_commands.clear()  # the next run may see something new
        if proposal.kind != "command" or not command:
            return 0
        if observation.ok and observation.exit_code in (None, 0):
            if changes_files(command) or installs_packages(command):
                self.failing_commands.clear()  # the next run may see something new
            return 0
        self.failing_commands[key] = self.failing_commands.get(key, 0) + 1
        return self.failing_commands[key]

    def _note_write(self, proposal: WriteProposal) -> None:
        for change in proposal.changes:
            first = self.written.get(change.path, (_text_digest(change.before), None))[0]
            self.written[change.path] = (first, _text_digest(change.after))

    def _files_state(self) -> str:
        """A digest of the written files that differ from how the session found them."""
        changed = sorted((path, now) for path, (first, now) in self.written.items() if now != first)
        return _text_digest(repr(changed)) or ""


def _text_digest(text: str | None) -> str | None:
    if text is None:
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# What differs between two runs of the same command: replaced before outputs are compared.
_NOISE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, flags), replacement)
    for pattern, replacement, flags in (
        (r"\b0x[0-9a-fA-F]{4,}\b", "0xADDR", 0),
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "UUID", re.I),
        (r"(?:[A-Za-z]:)?(?:/private)?(?:/tmp|/var/folders|/var/tmp|/dev/shm|\\Temp|/Temp)"
         r"[/\\][^\s'\":,)\]]*", "TMPPATH", re.I),
        (r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
         "DATE", 0),
        (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "TIME", 0),
        (r"(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5}\b", "HOST:PORT", 0),
        (r"\b(pid|port|process|thread|tid)\b([ =:#]*)\d+", r"\1\2N", re.I),
        (r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds?|m|min|mins|minutes?)\b", "DURATION", 0),
        (r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b", "HASH", 0),
        (r"\b\d{5,}\b", "N", 0),
    )
)  # fmt: skip
_COMPARED_CHARS = 20_000


def normalize_output(text: str) -> str:
    """``text`` with timings, addresses, PIDs, temp paths, dates, ports and ids made uniform."""
    text = text[:_COMPARED_CHARS]
    for pattern, replacement in _NOISE:
        text = pattern.sub(replacement, text)
    return text


def output_digest(text: str) -> str:
    """A short fingerprint of ``text`` after ``normalize_output``."""
    return hashlib.blake2b(normalize_output(text).encode(), digest_size=16).hexdigest()


def edit_target(proposal: Proposal, root: str | None = None) -> str | None:
    """The region a write aimed at: path plus the first line of old_string, or the symbol
    (each file named the one way, ``workspace_args``)."""
    args = workspace_args(proposal.args, root)
    if "edits" in args and args["edits"]:
        first = args["edits"][0]
        if "symbol" in first:
            return str(first["symbol"])
        return f"{first.get('path')}::{str(first.get('old_string', '')).strip().splitlines()[:1]}"
    if "old_string" in args:
        return f"{args.get('path')}::{str(args['old_string']).strip().splitlines()[:1]}"
    if "path" in args:
        return str(args["path"])
    return None


@dataclass
class CircuitBreaker:
    limits: Limits
    consecutive: int = 0

    def observe(self, observation: Observation) -> Firing | None:
        self.consecutive = 0 if observation.ok else self.consecutive + 1
        if self.consecutive >= self.limits.max_consecutive_errors:
            return Firing(
                "circuit_breaker", f"{self.consecutive} tool calls failed in a row", "stop"
            )
        return None


@dataclass
class Budgets:
    """The session's budgets. Tokens and cost are counted from the totals each check is
    given, by what they grew since the check before: a reply that reported negative usage
    (a provider's bug, or a price computed from negative token counts) lowers the totals
    but never what the budgets have counted, so it cannot buy the session more room."""

    limits: Limits
    started: float = field(default_factory=time.monotonic)
    _seen: tuple[int, float] | None = field(default=None, init=False, repr=False)
    _spent: tuple[int, float] = field(default=(0, 0.0), init=False, repr=False)

    def check(self, steps: int, tokens: int, cost: float) -> Firing | None:
        """Before asking the model: every budget."""
        tokens, cost = self._count(tokens, cost)
        firing = self.before_step(steps)
        if firing is not None and firing.guard == "budget:steps":
            return firing
        lim = self.limits
        if lim.max_tokens is not None and tokens >= lim.max_tokens:
            return Firing("budget:tokens", f"{tokens} tokens (limit {lim.max_tokens})", "stop")
        if lim.max_cost is not None and cost >= lim.max_cost:
            return Firing("budget:cost", f"${cost:.4f} (limit ${lim.max_cost})", "stop")
        return firing

    def before_step(self, steps: int) -> Firing | None:
        """Before each step, the model's reply being paid for: the steps and the time (one
        reply may hold dozens of calls)."""
        lim = self.limits
        if lim.max_steps is not None and steps >= lim.max_steps:
            return Firing("budget:steps", f"{steps} steps (limit {lim.max_steps})", "stop")
        return self.wall_time()

    def wall_time(self) -> Firing | None:
        """The wall-time budget, once spent."""
        limit = self.limits.max_wall_time
        elapsed = time.monotonic() - self.started
        if limit is not None and elapsed >= limit:
            return Firing("budget:wall_time", f"{elapsed:.0f}s (limit {limit:.0f}s)", "stop")
        return None

    def wall_time_left(self) -> float | None:
        """Seconds until the wall-time budget is spent (0 or less: spent); None: no limit
        (also a NaN one, which never fires)."""
        limit = self.limits.max_wall_time
        if limit is None or math.isnan(limit):
            return None
        return limit - (time.monotonic() - self.started)

    def _count(self, tokens: int, cost: float) -> tuple[int, float]:
        """What the budgets have counted, given the totals now."""
        last_tokens, last_cost = self._seen if self._seen is not None else (0, 0.0)
        spent_tokens, spent_cost = self._spent
        grown = cost - last_cost
        self._spent = (
            spent_tokens + max(0, tokens - last_tokens),
            spent_cost + (grown if math.isfinite(grown) and grown > 0 else 0.0),
        )
        self._seen = (tokens, cost)
        return self._spent


# Within one clause: in "I did not run the tests; mypy passes" something else passes.
_CLAIMS_TESTS_PASS = re.compile(
    r"\b(tests?|suite|specs?)\b(?:(?![;:]|, (?:and|but)\b)[^.\n]){0,40}"
    r"\b(pass(es|ed|ing)?|green|succeed(s|ed)?)\b"
    r"|\ball (tests )?(pass|green)\b|\b\d+ (?:tests? )?(?:passed|passing)\b",
    re.IGNORECASE,
)
# Whole words: "no-op" and "failover" negate nothing.
_NEGATED = re.compile(
    r"n't\b|\b(?:not|never|no|cannot|fail(?:s|ed|ing|ures?)?)\b(?!-)", re.IGNORECASE
)
# A test command to suggest, by the suffix of the file that was changed.
_SUGGESTED_TESTS = {
    ".py": "python -m pytest -q", ".js": "npm test", ".mjs": "npm test", ".cjs": "npm test",
    ".ts": "npm test", ".tsx": "npm test", ".jsx": "npm test", ".go": "go test ./...",
    ".rs": "cargo test", ".java": "mvn test", ".kt": "gradle test", ".rb": "bundle exec rspec",
    ".php": "vendor/bin/phpunit", ".cs": "dotnet test", ".ex": "mix test", ".exs": "mix test",
    ".swift": "swift test",
}  # fmt: skip


def claims_tests_pass(summary: str) -> bool:
    """True when ``summary`` says tests pass ("all tests pass", "44 passed"), not when it says
    they do not ("the tests still fail", "tests don't pass yet")."""
    return any(not _NEGATED.search(m.group()) for m in _CLAIMS_TESTS_PASS.finditer(summary))


@dataclass(frozen=True)
class _Change:
    order: int
    what: str  # "step 3 edited raft_kv/node.py", "step 4 ran `mv a b`"
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Run:
    order: int
    step: int
    command: str
    is_test: bool = False  # it starts a test runner
    trusted: bool = False  # ... and nothing in it could have forged the runner's output
    passed: bool = False
    reason: str = ""  # the verdict: why it did not pass, or the summary that shows it did
    advice: str = ""  # what to do instead, when the run passed but is not evidence


@dataclass
class FinishGuard:
    """Sends a premature finish back to the model, saying exactly what is missing.

    In this order, a finish is refused when:

    1. the task asks for a change (``tasktext.asks_for_change``: "fix the failing
       test", not "explain the parser") and nothing was changed in the session: no
       successful write, no command that plainly writes files (``mv``, ``sed -i``), no
       file of a failing test changed on disk (``disk_first``);
    2. files were changed and no passing test run followed the last change. A test
       run is a command ``testruns`` recognises as a real runner (``echo 1 passed``
       and ``python -c "print('1 passed')"`` are not), whose output shows the
       runner's own summary of a pass, with exit code 0;
    3. a test a run showed failing was then deleted by the session, or marked to be
       skipped or to fail (``testruns.test_layout``), through an edit tool or on disk (a
       command, kernel code, an editor: ``disk_first``), and is not back as it was: a
       failing test shows a problem to fix, and a suite passing without it shows nothing
       (unless the task itself speaks of skipping, removing or disabling tests);
    4. the summary says the tests pass and the last test run did not show it.

    A vetoed write is the user's decision and waives (1); a vetoed test run waives
    nothing (the user may only mean "not yet"). After ``max_finish_rejections``
    refusals the next finish is accepted, so the guard never traps a session; the
    last refusal says so.
    """

    limits: Limits
    task: str = ""
    # The workspace commands start in: a test run naming it by its absolute path is its own.
    root: str | None = None
    rejections: int = 0
    changed: bool = False  # a write, or a command that writes files, succeeded
    declined_change: bool = False  # the user vetoed a write
    last_change: _Change | None = None
    last_command: _Run | None = None
    last_test: _Run | None = None
    # Tests a run showed failing (pytest and unittest ids) that no passing run has run since:
    # id -> the step that showed it.
    failing: dict[str, int] = field(default_factory=dict)
    # Each Python file the session wrote: the test names it held before the first write,
    # and now. A file none of whose tests are ones it had is the session's own.
    tests_written: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    # Test setup files (conftest.py, Makefile, package.json ...) the session wrote: their
    # text before the first write, and the change that makes a run through them no evidence
    # (with the order and step it was made at).
    setup_originals: dict[str, str | None] = field(default_factory=dict)
    setups_changed: dict[str, tuple[int, int, SetupChange]] = field(default_factory=dict)
    # Every test a run showed failing, passing runs since or not: id -> the first step.
    seen_failing: dict[str, int] = field(default_factory=dict)
    # Each Python file the session wrote: its text before the first write and now, and the
    # steps that wrote it ("" for no file). Read for its tests only at a finish.
    test_texts: dict[str, tuple[str, str, tuple[int, ...]]] = field(default_factory=dict)
    # The files of tests a run showed failing (named by the tests' ids), each known to
    # exist when the run ended or at the run before it (``disk_files``); the session reads
    # them after the run (``disk_first``: the text then, when it reads as text) and again
    # at a finish (``disk_now``: the text, "" for a file gone, None for one that no longer
    # reads as text: a folder, a FIFO, a link out of the workspace, too large). So a test
    # deleted or skipped by a command, kernel code or an editor is seen as one the edit
    # tools dropped is. ``disk_found``: at a finish, the test files made since that name a
    # test gone from its file (where it may have moved).
    disk_files: set[str] = field(default_factory=set)
    disk_first: dict[str, str] = field(default_factory=dict)
    disk_now: dict[str, str | None] = field(default_factory=dict)
    disk_found: dict[str, str] = field(default_factory=dict)
    # The source files' state (``Workspace.source_state``) when ``disk_files`` was first
    # filled (a file not in it is one made since); the paths ``failing_files`` named that
    # held no file (not read again).
    disk_state: dict[str, tuple[int, int, int]] | None = None
    disk_missing: set[str] = field(default_factory=set)
    _order: int = field(default=0, init=False, repr=False)  # orders changes and runs
    # ``_dropped_failing``'s verdict made ahead by ``settle`` (it parses test files: the
    # session makes it in a worker thread, not on the kernel's event loop); the next check
    # takes it, and drops it whatever it decides.
    _settled: tuple[tuple[str, str] | None] | None = field(default=None, init=False, repr=False)

    def observe(
        self, step: int, proposal: Proposal, observation: Observation, *, vetoed: bool = False
    ) -> None:
        """Record a step's outcome (``vetoed``: the user refused it, nothing ran)."""
        self._order += 1
        command = shell_command(proposal)
        if vetoed:
            self.declined_change = self.declined_change or isinstance(proposal, WriteProposal)
            return
        if isinstance(proposal, WriteProposal) and observation.ok:
            self._note_change(f"step {step} edited {_listing(proposal.paths)}", proposal.paths)
            self._note_written(step, proposal)
        elif proposal.tool == "execute":
            writes = kernel_code_writes(proposal, observation)
            if writes:
                self._note_change(f"step {step} ran code in the kernel that writes (`{writes}`)")
        elif isinstance(proposal, CommandProposal) and command.strip():
            timed_out = observation.error is not None and observation.error.code == COMMAND_TIMEOUT
            if not observation.ok and not timed_out:
                return  # refused before it ran
            exit_code = observation.exit_code if observation.ok else None
            mutation = changes_files(command) if exit_code == 0 else None
            if mutation:
                self._note_change(f"step {step} ran `{_short(mutation)}`")
                for path, affects in setup_files_named(command).items():
                    what = f"{path} changed by `{_short(mutation, 60)}`"
                    self.setups_changed[path] = (self._order, step, SetupChange(affects, what))
                self._order += 1  # a test in the same command ran after the change
            parsed = parse_test_command(command, self.root)
            run = _Run(self._order, step, command)
            if parsed.is_test:
                verdict = judge(command, observation.output, exit_code, self.root)
                trusted = parsed.distrust is None
                run = _Run(
                    self._order, step, command, True, trusted, verdict.passed, verdict.reason
                )
                if run.passed:
                    run = self._not_evidence(run) or run
                self.last_test = run
                self._note_failing(step, command, observation.output, run)
            self.last_command = run

    def _note_written(self, step: int, proposal: WriteProposal) -> None:
        """Keep what the guard must know of the files a write changed: the tests a Python
        file holds, and whether a test setup now differs from how the session found it.
        (A write replayed from a log holds no texts: nothing to keep.)"""
        for change in proposal.changes:
            if change.after is None and change.before is None:
                continue  # replayed from a log: no texts
            path = _same_path(change.path)
            if path.endswith(".py"):
                first = self.tests_written.get(path, (test_names(change.before or ""),))[0]
                self.tests_written[path] = (first, test_names(change.after or ""))
                before, _, steps = self.test_texts.get(path, (change.before or "", "", ()))
                self.test_texts[path] = (before, change.after or "", (*steps, step))
            if change.after is None:
                continue
            original = self.setup_originals.setdefault(path, change.before)
            setup = setup_change(path, original, change.after)
            if setup is None:
                self.setups_changed.pop(path, None)  # put back as it was
            else:
                self.setups_changed[path] = (self._order, step, setup)

    def _not_evidence(self, run: _Run) -> _Run | None:
        """``run`` (a pass) as no evidence when it went through a test setup the session
        changed, or ran only tests the session wrote; None when it is evidence."""
        through = setups_of(run.command)
        for order, step, setup in sorted(self.setups_changed.values(), key=lambda c: c[0]):
            if order < run.order and setup.affects & through:
                return replace(
                    run,
                    passed=False,
                    reason=(
                        f"went through a test setup this session changed (step {step}: "
                        f"{setup.what}), and a pass through a changed setup shows nothing of "
                        "the project's tests"
                    ),
                    advice=(
                        "put the setup back as it was, or run the tests without it (the runner "
                        "itself, such as `python -m pytest`, instead of `make test`), then finish."
                    ),
                )
        own = self._own_tests_only(run.command)
        if own:
            return replace(
                run,
                passed=False,
                reason=(
                    f"ran only tests this session wrote ({_listing(own)}), which show nothing of "
                    "the tests the project had"
                ),
                advice=(
                    "run the project's tests too (with no path, `python -m pytest` runs them "
                    "all, yours with them), check that they pass, then finish."
                ),
            )
        return None

    def _own_tests_only(self, command: str) -> list[str]:
        """The targets of ``command``'s test runs when every one names only tests the
        session wrote (files it made, or made hold none of their old tests; tests it added,
        by node id or ``-k`` name); else [] (a whole suite, or one old test, counts)."""
        found = selections(command, self.root)
        if not found:
            return []
        added = {name for first, now in self.tests_written.values() for name in now - first}
        own: list[str] = []
        for selection in found:
            if selection.runner == "unittest":
                if not selection.targets or not all(map(self._own_module, selection.targets)):
                    return []
                own += selection.targets
                continue
            by_path = bool(selection.targets) and all(map(self._own_node, selection.targets))
            by_name = bool(selection.keywords) and all(w in added for w in selection.keywords)
            if not (by_path or by_name):
                return []
            own += selection.targets if by_path else selection.keywords
        return own

    def _own_node(self, target: str) -> bool:
        """Whether the pytest target (``tests/t.py`` or a node id) names only the session's
        own tests."""
        path, _, node = target.partition("::")
        first, now = self.tests_written.get(path, (None, None))
        if first is None or now is None:
            return False
        if node:
            return node.split("::")[-1].split("[")[0] in now - first
        return bool(now) and not first & now

    def _own_module(self, name: str) -> bool:
        """Whether the unittest name (``tests.test_x``, ``tests.test_x.T.test_y``) names
        only the session's own tests."""
        for path, (first, now) in self.tests_written.items():
            module = path.removesuffix(".py").replace("/", ".")
            if name == module:
                return bool(now) and not first & now
            if name.startswith(module + "."):
                rest = name[len(module) + 1 :].split(".")
                return bool(now) and not first & now or rest[-1] in now - first
        return False

    def _note_failing(self, step: int, command: str, output: str, run: _Run) -> None:
        """Keep the tests this run showed failing; forget those a passing run ran."""
        if run.passed:
            self.failing = {t: s for t, s in self.failing.items() if not covers(command, t)}
            return
        for test in sorted(failing_tests(command, output)):
            self.failing.setdefault(test, step)
            self.seen_failing.setdefault(test, step)

    def failing_files(self) -> list[str]:
        """Where the tests that runs showed failing may be defined (workspace-relative paths,
        sorted), but for those already read (``disk_files``) or found missing: the session
        reads them from disk."""
        paths = {path for test in self.seen_failing for path in _test_files(test)}
        return sorted(paths - self.disk_files - self.disk_missing)

    def missing_names(self) -> set[str]:
        """The names (unqualified) of the tests seen failing that their file on disk no longer
        runs (``disk_now``): at a finish the session looks for them in test files made since."""
        names: set[str] = set()
        for test in self.seen_failing:
            for path, name in _test_places(test, self.disk_now):
                now = self.disk_now[path]
                layout = test_layout(now) if now else (frozenset(), frozenset())
                if layout is not None and name not in layout[0] - layout[1]:
                    names.add(name.rpartition(".")[2])
        return names

    def tested_at(self, step: int) -> bool:
        """Whether step ``step`` was a test run (the session then notes the files' state)."""
        return self.last_test is not None and self.last_test.step == step

    def moved_on_disk(self, paths: list[str]) -> None:
        """Source files changed on disk since the last test run, by nothing the guard saw
        (a script, a function of the user's run in the kernel, an editor): a change, unless
        the guard already saw one after that run (its own words say it better)."""
        assert self.last_test is not None
        if self.last_change is not None and self.last_change.order > self.last_test.order:
            return
        self._note_change(
            f"{_listing(paths)} changed on disk after the test run of step "
            f"{self.last_test.step} (not through an edit tool)",
            paths,
        )

    def undo(self, step: int) -> None:
        """The user undid a commit: files changed, so the tests must run again."""
        self._order += 1
        self.last_change = _Change(self._order, f"the undo after step {step} changed files")

    def settle(self) -> None:
        """Decide now whether a failing test was dropped (parsing the test files involved,
        up to 2 MB each), for the next ``check``: called where blocking is harmless, once
        the files were read for a finish."""
        self._settled = (self._dropped_now(),)

    def check(self, summary: str) -> Firing | None:
        try:
            return self._check(summary)
        finally:
            self._settled = None  # made for this finish only

    def _check(self, summary: str) -> Firing | None:
        if self.rejections >= self.limits.max_finish_rejections:
            return None
        problem = self._problem(summary)
        if problem is None:
            return None
        detail, message = problem
        self.rejections += 1
        if self.rejections >= self.limits.max_finish_rejections:
            message += (
                f" (Refusal {self.rejections} of {self.limits.max_finish_rejections}: the next "
                "finish will be accepted as it is, so finish only when the work is done.)"
            )
        return Firing("premature_finish", detail, "reject_finish", f"finish refused: {message}")

    def _problem(self, summary: str) -> tuple[str, str] | None:
        """(detail for the log, what the model is told) for the first unmet rule, or None."""
        wanted = asks_for_change(self.task)
        on_disk = any(
            p in self.disk_now and self.disk_now[p] != self.disk_first.get(p)
            for p in self.disk_files
        )
        if wanted and not (self.changed or self.declined_change or on_disk):
            return (
                "the task asks for a change but no file was changed",
                f'the task asks for a change ("{wanted}") but no file was changed in this '
                "session; make the change, run the tests, then finish.",
            )
        change = self.last_change
        if change is not None:
            test = (
                self.last_test if self.last_test and self.last_test.order > change.order else None
            )
            ran = (
                self.last_command
                if self.last_command and self.last_command.order > change.order
                else None
            )
            run_tests = f"run the tests ({self._suggestion()}), check that they pass, then finish."
            if ran is None:
                return (
                    "files were edited but no command was run after the last edit",
                    f"{change.what} and no test command ran after it; {run_tests}",
                )
            if test is None:
                return (
                    "files were edited but no test command ran after the last edit",
                    f"{change.what}, and the command after it (step {ran.step}: "
                    f"`{_short(ran.command)}`) is not a test run (no test runner in it); {run_tests}",
                )
            if not test.passed:
                return "the last test run after the last edit did not pass", self._failed(test)
        dropped = self._dropped_failing()
        if dropped:
            return dropped
        passed = self.last_test is not None and self.last_test.passed
        if passed and self.failing and (change is not None or claims_tests_pass(summary)):
            return self._left_out()
        if claims_tests_pass(summary) and not (self.last_test and self.last_test.passed):
            detail = "the summary says tests pass, but no run in this session showed passing tests"
            if self.last_test is None:
                return detail, (
                    "the summary says the tests pass, but no test command ran in this session; "
                    f"run the tests ({self._suggestion()}) and report what they show."
                )
            return detail, "the summary says the tests pass, but " + self._failed(self.last_test)
        return None

    def _dropped_failing(self) -> tuple[str, str] | None:
        if self._settled is not None:
            return self._settled[0]
        return self._dropped_now()

    def _dropped_now(self) -> tuple[str, str] | None:
        """A test seen failing that the session then deleted, or marked to be skipped or to
        fail, through its edit tools or on disk, unless the task asks for that (read here,
        at a finish: the files' texts are parsed only then, and only those holding such a
        test)."""
        if not self.seen_failing or _asks_to_drop_tests(self.task):
            return None
        files = {**dict.fromkeys(self.test_texts), **dict.fromkeys(self.disk_now)}
        for test, failed_at in sorted(self.seen_failing.items(), key=lambda item: item[1]):
            unittest = "::" not in test
            for path, name in _test_places(test, files):
                written = self.test_texts.get(path)
                if path in self.disk_now:
                    how = self._dropped_on_disk(path, name, unittest)
                elif written is not None:
                    how = self._dropped(path, name, written[0], written[1], unittest)
                else:
                    continue
                if how is None:
                    continue
                if written is not None and self.disk_now.get(path, written[1]) == written[1]:
                    steps = written[2]
                    when = (
                        f"step {steps[0]}"
                        if len(steps) == 1
                        else f"the edits of {path} at steps {', '.join(map(str, steps))}"
                    )
                    done = (
                        "deleted it" if how == "deleted" else "marked it to be skipped or to fail"
                    )
                    happened = f"{when} {done}"
                else:  # a command, kernel code or an editor changed the file on disk
                    happened = {
                        "deleted": f"{path} no longer defines it",
                        "skipped": f"{path} now marks it to be skipped or to fail",
                        "unreadable": f"{path} no longer reads as a Python test file (a folder, "
                        "a FIFO, a link out of the workspace, too large, or not Python)",
                    }[how] + " (changed on disk, not through an edit tool)"
                return (
                    "a test seen failing was deleted or skipped by the session",
                    f"{test} failed at step {failed_at}, and {happened}; a failing test "
                    "shows a problem to fix, and a suite that passes without it shows nothing. "
                    "Put the test back, fix the code (or correct the test, keeping what it "
                    "checks) until it passes, run the tests, then finish.",
                )
        return None

    def _dropped_on_disk(self, path: str, name: str, unittest: bool) -> str | None:
        """ "deleted", "skipped" or "unreadable" when the test ``name`` (qualified) that a run
        showed failing in ``path`` is gone from the file on disk (not moved, ``_moved``),
        newly marked skipped there, or the file no longer reads as Python; None otherwise.
        The run that showed it failing shows it was there and ran: only a test the edit
        tools added to the file (not in its text before the session's first write) is the
        session's own to drop."""
        now = self.disk_now[path]
        written = self.test_texts.get(path)
        first = written[0] if written is not None else self.disk_first.get(path)
        before = test_layout(first) if first else None
        if written is not None and (before is None or name not in before[0]):
            return None
        if first and now and before is None:
            return None  # its layout could not be read then (too large, too deep): no claim
        after = (frozenset(), frozenset()) if now == "" else test_layout(now) if now else None
        if after is None:
            return "unreadable"
        if name not in after[0]:
            return None if self._moved(path, name, unittest) else "deleted"
        if name in after[1] and not (before is not None and name in before[1]):
            return "skipped"
        return None

    def _dropped(
        self, path: str, name: str, first: str, now: str, unittest: bool = False
    ) -> str | None:
        """ "deleted" or "skipped" when test ``name`` (qualified) of ``path`` was in ``first``
        and is gone from ``now`` (not moved, ``_moved``) or newly marked skipped there; None
        otherwise, or when a text cannot be read."""
        if first == now:
            return None
        before, after = test_layout(first), test_layout(now)
        if before is None or after is None or name not in before[0]:
            return None
        if name not in after[0]:
            return None if self._moved(path, name, unittest) else "deleted"
        if name in after[1] and name not in before[1]:
            return "skipped"
        return None

    def _moved(self, path: str, name: str, unittest: bool) -> bool:
        """Whether the test ``name`` gone from ``path`` runs, unskipped, from a test file the
        session wrote that did not have it before, or one made on disk since
        (``disk_found``): a file its runner collects by its name and folder
        (``_collected``), so a copy kept in ``keep.py`` or ``build/`` is no move, nor an
        unrelated test of the same name in a file the session touched."""
        bare = name.rpartition(".")[2]

        def runs(text: str | None) -> bool:
            layout = test_layout(text) if text else None
            return layout is not None and any(
                t.rpartition(".")[2] == bare for t in layout[0] - layout[1]
            )

        for other, (first, now, _) in self.test_texts.items():
            if other == path or not _collected(other, unittest):
                continue
            was = test_layout(first) if first else (frozenset(), frozenset())
            had = was is None or any(t.rpartition(".")[2] == bare for t in was[0])
            if not had and runs(self.disk_now.get(other, now)):
                return True
        return any(
            other != path
            and other not in self.test_texts
            and _collected(other, unittest)
            and runs(text)
            for other, text in self.disk_found.items()
        )

    def _left_out(self) -> tuple[str, str]:
        """The tests seen failing that the passing runs since left out."""
        assert self.last_test is not None
        shown = sorted(self.failing, key=lambda t: (self.failing[t], t))
        names = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
        first = self.failing[shown[0]]
        return (
            "a test seen failing was not run again by the passing test run",
            f"{names} failed at step {first}, and the passing test run since (step "
            f"{self.last_test.step}: `{_short(self.last_test.command)}`) did not run "
            f"{'it' if len(shown) == 1 else 'them'}; run {'it' if len(shown) == 1 else 'them'} "
            "(or the whole suite), check that the run passes, then finish.",
        )

    def _failed(self, test: _Run) -> str:
        if test.advice:
            advice = test.advice
        elif not test.trusted:
            advice = "run the test command on its own, then finish."
        elif test.reason.startswith("shows no"):
            advice = "run the tests so that the runner's summary shows, then finish."
        else:
            advice = "fix what fails, run the tests again, then finish."
        return (
            f"the last test run (step {test.step}: {_short(test.command)}) {test.reason}; {advice}"
        )

    def _suggestion(self) -> str:
        if self.last_test is not None and self.last_test.trusted:
            return f"for example `{_short(self.last_test.command)}`"
        for path in self.last_change.paths if self.last_change else ():
            suggested = _SUGGESTED_TESTS.get(PurePosixPath(path).suffix.lower())
            if suggested:
                return f"for example `{suggested}`"
        return "the project's test command"

    def _note_change(self, what: str, paths: list[str] | None = None) -> None:
        self._order += 1
        self.changed = True
        self.last_change = _Change(self._order, what, tuple(paths or ()))


# A clause of the task that asks for tests to be skipped, removed or disabled ("remove the
# obsolete test_add"): then doing so is the work. Not a mention ("the test for deleting a
# user fails", "without skipping any test").
_DROP_CLAUSE = re.compile(
    r"^(?:(?:please|and|then|also|just|now)\s+)*(?:skip|xfail|remov|delet|drop|disabl|renam)\w*"
    r"\b[^.;,\n]{0,40}?\btest",
    re.IGNORECASE,
)
_CLAUSES = re.compile(r"[.;,\n!?]|\band\b|\bthen\b", re.IGNORECASE)


def _asks_to_drop_tests(task: str) -> bool:
    return any(_DROP_CLAUSE.search(clause.strip()) for clause in _CLAUSES.split(task))


def _test_places(test: str, texts: Mapping[str, object]) -> list[tuple[str, str]]:
    """The files (of ``texts``) and qualified names a failing test's id may stand for: a
    pytest id (``sub/t.py::TestA::test_x[1]``) by its path or a path ending in it (a run
    from a subfolder names paths from there), a unittest id (``pkg.t.T.test_x``) by each
    way to split it into a module and a name."""
    places: list[tuple[str, str]] = []
    if "::" in test:
        path, _, rest = test.partition("::")
        name = ".".join(rest.partition("[")[0].split("::"))  # parameters may hold "::"
        path = _same_path(path)
        return [(p, name) for p in texts if p == path or p.endswith("/" + path)]
    parts = test.split(".")
    for size in range(len(parts) - 1, 0, -1):
        module = "/".join(parts[:size]) + ".py"
        name = ".".join(parts[size:])
        places += [(p, name) for p in texts if p == module or p.endswith("/" + module)]
    return places


# Folders pytest does not look into by default (``norecursedirs``), besides dot-folders.
_NOT_COLLECTED = frozenset({"build", "dist", "node_modules", "venv", "CVS", "_darcs", "{arch}"})


def test_file_name(path: str) -> bool:
    """Whether ``path``'s name is one a test runner's discovery collects by default
    (``test*.py`` for unittest, ``test_*.py`` and ``*_test.py`` for pytest)."""
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test") or name.endswith("_test.py"))


def _collected(path: str, unittest: bool) -> bool:
    """Whether the runner of a test (unittest's, else pytest's) collects ``path`` by default:
    its name (pytest: ``test_*.py``, ``*_test.py``; unittest: ``test*.py``) and, for
    pytest, no folder on the way that it skips (``build``, ``dist``, dot-folders...)."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if not test_file_name(path):
        return False
    if unittest:
        return True
    if any(p.startswith(".") or p.endswith(".egg") or p in _NOT_COLLECTED for p in parts[:-1]):
        return False
    return name.startswith("test_") or name.endswith("_test.py")


def _test_files(test: str) -> list[str]:
    """The workspace-relative files a failing test's id may name (see ``_test_places``): a
    pytest id's path, a unittest id's modules (``pkg.t.T.test_x``: ``pkg/t/T.py``,
    ``pkg/t.py``, ``pkg.py``)."""
    if "::" in test:
        path = _same_path(test.partition("::")[0])
        return [path] if path.endswith(".py") else []
    parts = test.split(".")
    return ["/".join(parts[:size]) + ".py" for size in range(len(parts) - 1, 0, -1)]


def _listing(paths: list[str], shown: int = 2) -> str:
    if not paths:
        return "files"
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def kernel_code_writes(proposal: Proposal, observation: Observation) -> str | None:
    """What in the code ``execute`` ran may have written files (``open(p, "w")``,
    ``os.remove``), when it ran at all (also when it raised, timed out or was stopped: it
    may have written before)."""
    code = proposal.args.get("code")
    ran = observation.ok or (
        observation.error is not None
        and observation.error.code in (EXECUTE_FAILED, COMMAND_TIMEOUT, COMMAND_FAILED)
    )
    if not ran or not isinstance(code, str):
        return None
    found = code_changes_files(code)
    return _short(found, 60) if found else None


def shell_command(proposal: Proposal) -> str:
    """The shell command a proposal runs ("" for none). The kernel's ``execute`` runs Python,
    which the shell-command checks (file changes, test runs, installs) would misread."""
    if proposal.tool == "execute":
        return ""
    return proposal.command or ""


def _short(command: str, limit: int = 100) -> str:
    command = " ".join(command.split())
    return command if len(command) <= limit else command[: limit - 3] + "..."


class Guards:
    """Every guard of one session, and what an outcome makes them do."""

    def __init__(self, limits: Limits, task: str, root: str | None = None) -> None:
        self.limits = limits
        self.stuck = StuckDetector(limits, root=root)
        self.breaker = CircuitBreaker(limits)
        self.budgets = Budgets(limits)
        self.finish = FinishGuard(limits, task=task, root=root)
        self.warnings = 0  # stuck warnings given so far

    def after(
        self, number: int, proposal: Proposal, observation: Observation, vetoed: bool
    ) -> list[Firing]:
        """What step ``number``'s outcome sets off (a vetoed call sets off nothing)."""
        firings: list[Firing] = []
        if not vetoed:
            found = (self.stuck.observe(proposal, observation), self.breaker.observe(observation))
            firings = [f for f in found if f is not None]
        self.finish.observe(number, proposal, observation, vetoed=vetoed)
        self.warnings += sum(1 for f in firings if f.action == "warn")
        return firings

    def end_reason(self, firings: list[Firing]) -> EndReason | None:
        """Why these firings end the session, if they do (a stop, or one warning too many)."""
        stop = next((f for f in firings if f.action == "stop"), None)
        if stop is not None:
            return ending(stop)
        if self.warnings > self.limits.max_stuck_warnings:
            return "stuck"
        return None


def ending(firing: Firing) -> EndReason:
    """The end reason of a guard that stops the session (its own name)."""
    guard = firing.guard
    if guard in ("circuit_breaker", "no_tool_call"):
        return guard
    if guard in ("budget:steps", "budget:tokens", "budget:cost", "budget:wall_time"):
        return guard
    raise ValueError(f"the {guard} guard does not end a session")
