"""The pieces of a session a front end reads: its state, its steps, its totals, its policy."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from grinta_jupyter.agent.guards import Firing
from grinta_jupyter.agent.models.base import ToolCall, Usage
from grinta_jupyter.runtime.proposal import FinishProposal, Observation, Proposal


class State(str, Enum):
    THINKING = "thinking"
    PROPOSED = "proposed"
    COMMITTED = "committed"
    OBSERVED = "observed"
    FINISH_CHECK = "finish_check"
    DONE = "done"


# A policy decides whether a proposal runs without asking: "ask" (reads run,
# writes and commands wait), "auto" (everything runs), or a callable returning
# True (approve), False (ask), or ("veto", reason).
Policy = Literal["ask", "auto"] | Callable[[Proposal], "bool | tuple[str, str]"]


# How a step was decided: by the policy ("auto"), or by a person.
DecisionKind = Literal["auto", "approve", "approve_hunks", "veto"]


class PolicyError(TypeError):
    """A policy callable returned something that is not a decision (a developer's mistake)."""


def policy_verdict(policy: Policy, proposal: Proposal, auto_reads: bool) -> bool | tuple[str, str]:
    """Whether ``proposal`` runs without asking (True), asks (False) or is vetoed.

    Finish always runs; reads run unless the person switched ``auto_reads`` off;
    a callable policy that answers something else raises PolicyError.
    """
    if isinstance(proposal, FinishProposal):
        return True
    if not proposal.needs_approval and (auto_reads or policy == "auto"):
        return True
    if policy == "auto":
        return True
    if policy == "ask":
        return False
    return check_policy_verdict(policy(proposal))


def check_policy_verdict(value: object) -> bool | tuple[str, str]:
    """``value`` if it is a decision a policy may return, else a PolicyError saying what it was."""
    if value is True or value is False:
        return value
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and value[0] == "veto"
        and isinstance(value[1], str)
    ):
        return ("veto", value[1] or "vetoed by policy")
    raise PolicyError(
        f"the policy returned {value!r} ({type(value).__name__}); expected True (approve), "
        "False (ask the user) or ('veto', reason)"
    )


@dataclass
class Step:
    """One tool call and what became of it; front ends render these as cards."""

    number: int
    call: ToolCall
    proposal: Proposal
    text: str = ""  # the model's text that came with the call
    decision: DecisionKind | None = None
    reason: str | None = None
    observation: Observation | None = None
    guards: list[Firing] = field(default_factory=list)
    edits: int = 0
    restaged: bool = False  # staged again when the session was resumed
    stale: str | None = None  # ... against files that changed since it was first staged


@dataclass
class Totals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True  # False once any reply's cost was unknown

    def add(self, usage: Usage) -> None:
        """Count one reply's usage. What a model client reports is not trusted: a token
        count sent as text (``"120"``) counts as the number it says, one that is not a
        number counts 0, instead of crashing the session; a NaN or infinite price counts
        as unknown, since one NaN in the total would make every later cost NaN and the
        ``max_cost`` budget never fire."""
        self.prompt_tokens += token_count(usage.prompt_tokens)
        self.completion_tokens += token_count(usage.completion_tokens)
        cost = known_cost(usage.cost)
        if cost is not None:
            self.cost += cost
        else:
            self.cost_known = False


def known_cost(cost: object) -> float | None:
    """A reported price in USD, or None when it is no finite number (unknown)."""
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost):
        return float(cost)
    return None


def token_count(count: object) -> int:
    """A reported token count as a whole number, read as the event log reads it (``"120"``
    and ``120.0`` are 120); 0 when it is not one."""
    if isinstance(count, bool):
        return 0
    if isinstance(count, int):
        return count
    if isinstance(count, float) and count.is_integer():
        return int(count)
    if isinstance(count, str) and count.strip().lstrip("+-").isdigit():
        return int(count.strip())
    return 0
