"""Guards: deterministic checks the session runs around the model.

Each returns a ``Firing`` (or None); the session records every firing as an
event and acts on it. Every limit is a field of ``Limits``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from grinta_jupyter.runtime.proposal import Observation, Proposal


@dataclass(frozen=True)
class Limits:
    """Every guard's threshold, and the session budgets (None = no limit)."""

    repeat_threshold: int = 3  # the same call with the same result this many times is "stuck"
    alternation_window: int = 6  # A/B/A/B/A/B over this many calls is "stuck"
    failed_region_threshold: int = 2  # the same failing edit target this many times forces a read
    max_consecutive_errors: int = 5  # circuit breaker
    max_finish_rejections: int = 2  # after this many rejected finishes, the next one is accepted
    max_stuck_warnings: int = 2  # after this many stuck warnings, the session stops
    max_steps: int | None = 40
    max_tokens: int | None = None
    max_cost: float | None = None
    max_wall_time: float | None = None  # seconds
    max_model_turns_without_tool: int = 3


@dataclass(frozen=True)
class Firing:
    guard: str
    detail: str
    action: str  # warn | force_read | reject_finish | stop
    message: str = ""  # what the model is told, when anything


def signature(tool: str, args: dict[str, Any]) -> str:
    return f"{tool}:{json.dumps(args, sort_keys=True)}"


@dataclass
class StuckDetector:
    """Repeated identical calls, A/B alternations, and edits failing on the same target."""

    limits: Limits
    history: list[tuple[str, str]] = field(default_factory=list)  # (call signature, result digest)
    failed_targets: dict[str, int] = field(default_factory=dict)

    def observe(self, proposal: Proposal, observation: Observation) -> Firing | None:
        sig = signature(proposal.tool, proposal.args)
        self.history.append((sig, observation.output[:2000]))
        recent = self.history[-self.limits.repeat_threshold :]
        if len(recent) == self.limits.repeat_threshold and len(set(recent)) == 1:
            return Firing(
                "stuck_repeat",
                f"{proposal.tool} called {len(recent)} times with the same result",
                "warn",
                f"You have made the same {proposal.tool} call {len(recent)} times and got the "
                "same result. Do something different.",
            )
        window = [s for s, _ in self.history[-self.limits.alternation_window :]]
        if (
            len(window) == self.limits.alternation_window
            and len(set(window)) == 2
            and all(window[i] != window[i + 1] for i in range(len(window) - 1))
        ):
            return Firing(
                "stuck_alternation",
                f"alternating between two calls for {len(window)} steps",
                "warn",
                "You are alternating between the same two calls. Step back and change approach.",
            )
        if proposal.kind == "write" and observation.error is not None:
            target = edit_target(proposal)
            if target:
                self.failed_targets[target] = self.failed_targets.get(target, 0) + 1
                if self.failed_targets[target] >= self.limits.failed_region_threshold:
                    self.failed_targets[target] = 0
                    return Firing(
                        "failed_region",
                        f"edit on {target} failed {self.limits.failed_region_threshold} times",
                        "force_read",
                    )
        return None


def edit_target(proposal: Proposal) -> str | None:
    """The region a write aimed at: path plus the first line of old_string, or the symbol."""
    args = proposal.args
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
    limits: Limits
    started: float = field(default_factory=time.monotonic)

    def check(self, steps: int, tokens: int, cost: float) -> Firing | None:
        lim = self.limits
        if lim.max_steps is not None and steps >= lim.max_steps:
            return Firing("budget:steps", f"{steps} steps (limit {lim.max_steps})", "stop")
        if lim.max_tokens is not None and tokens >= lim.max_tokens:
            return Firing("budget:tokens", f"{tokens} tokens (limit {lim.max_tokens})", "stop")
        if lim.max_cost is not None and cost >= lim.max_cost:
            return Firing("budget:cost", f"${cost:.4f} (limit ${lim.max_cost})", "stop")
        elapsed = time.monotonic() - self.started
        if lim.max_wall_time is not None and elapsed >= lim.max_wall_time:
            return Firing(
                "budget:wall_time", f"{elapsed:.0f}s (limit {lim.max_wall_time:.0f}s)", "stop"
            )
        return None


_CLAIMS_TESTS_PASS = re.compile(
    r"\b(tests?|suite|specs?)\b[^.\n]{0,40}\b(pass(es|ed|ing)?|green|succeed(s|ed)?)\b"
    r"|\ball (tests )?(pass|green)\b",
    re.IGNORECASE,
)
_TEST_RUN_PASSED = re.compile(r"\b\d+ passed\b|\bOK\b|\bok\b|PASS", re.MULTILINE)


@dataclass
class FinishGuard:
    """Sends a premature finish back: edits with no run after the last one, or an unproven claim."""

    limits: Limits
    last_edit_step: int | None = None
    last_run_step: int | None = None
    last_run_passed: bool = False
    rejections: int = 0

    def observe(self, step: int, proposal: Proposal, observation: Observation) -> None:
        if proposal.kind == "write" and observation.ok:
            self.last_edit_step = step
        elif proposal.kind == "command" and proposal.tool == "run" and not _is_trivial(proposal):
            self.last_run_step = step
            self.last_run_passed = observation.exit_code == 0 and bool(
                _TEST_RUN_PASSED.search(observation.output)
            )

    def undo(self, step: int) -> None:
        self.last_edit_step = step  # an undo changes files just as an edit does

    def check(self, summary: str) -> Firing | None:
        if self.rejections >= self.limits.max_finish_rejections:
            return None
        reason = None
        if self.last_edit_step is not None and (self.last_run_step or 0) < self.last_edit_step:
            reason = "files were edited but no command was run after the last edit"
        elif _CLAIMS_TESTS_PASS.search(summary) and not (
            self.last_run_step and self.last_run_passed
        ):
            reason = "the summary says tests pass, but no run in this session showed passing tests"
        if reason is None:
            return None
        self.rejections += 1
        return Firing(
            "premature_finish",
            reason,
            "reject_finish",
            f"finish refused: {reason}. Run the relevant tests, check the result, then finish.",
        )


def _is_trivial(proposal: Proposal) -> bool:
    command = (proposal.command or "").strip()
    return (
        command.split(" ")[0] in {"ls", "cat", "echo", "pwd", "head", "tail", "git"}
        and "test" not in command
    )
