"""Progress of an eval: how many runs are done, the pass rate so far, the cost so far.

``Tally`` counts; a ``Progress`` shows it. ``BarProgress`` is a tqdm bar on
stderr (runs done of all, including those finished by an earlier eval that
this one resumes); ``LineProgress`` hands one line per finished run to a
callable (``print`` in a notebook, a no-op in tests). When stderr is not a
terminal (a log file, CI, ``nohup``), or without tqdm installed, the bar gives
way to lines on stderr: a bar redrawn with carriage returns is one endless line
in a file.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Tally:
    """Runs finished, passed, and what they cost (runs whose cost is unknown are counted apart)."""

    done: int = 0
    passed: int = 0
    cost: float = 0.0
    cost_unknown: int = 0
    started: float = field(default_factory=time.monotonic)

    def add(self, result: dict[str, Any]) -> None:
        self.done += 1
        self.passed += bool(result.get("passed"))
        metrics = result.get("metrics") or {}
        cost = metrics.get("cost")
        if cost is None:
            self.cost_unknown += 1
        else:
            self.cost += float(cost)

    def summary(self) -> str:
        rate = f" ({self.passed / self.done:.0%})" if self.done else ""
        if self.done and self.cost_unknown == self.done:
            cost = "cost unknown"  # no run's price was known (the offline solver, a local model)
        else:
            unknown = f" (+{self.cost_unknown} runs unknown)" if self.cost_unknown else ""
            cost = f"cost ${self.cost:.4f}{unknown}"
        return f"passed {self.passed}/{self.done}{rate}, {cost}"


class Progress(Protocol):
    def update(self, result: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class LineProgress:
    """One line per finished run, handed to ``say``."""

    def __init__(self, say: Callable[[str], None], total: int, earlier: Iterable[dict[str, Any]]):
        self.say, self.total, self.tally = say, total, Tally()
        for result in earlier:
            self.tally.add(result)

    def update(self, result: dict[str, Any]) -> None:
        self.tally.add(result)
        spec, count = result["spec"], self.tally.done
        filled = int(20 * count / self.total) if self.total else 20
        verdict = "passed" if result["passed"] else f"FAILED ({result['end_reason']})"
        self.say(
            f"[{'#' * filled}{'.' * (20 - filled)}] {count}/{self.total} {spec['task']} "
            f"{spec['toolset']} seed {spec['seed']}: {verdict} in {result['seconds']:.1f}s; "
            f"{self.tally.summary()} (elapsed {time.monotonic() - self.tally.started:.0f}s)"
        )

    def close(self) -> None:
        return None


class BarProgress:
    """A tqdm bar on stderr: runs done of all, pass rate and cost so far."""

    def __init__(self, total: int, earlier: Iterable[dict[str, Any]]):
        from tqdm import tqdm  # type: ignore[import-untyped]

        self.tally = Tally()
        for result in earlier:
            self.tally.add(result)
        self.bar = tqdm(
            total=total,
            initial=self.tally.done,
            unit="run",
            desc="eval",
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.5,
        )
        self.bar.set_postfix_str(self.tally.summary())

    def update(self, result: dict[str, Any]) -> None:
        self.tally.add(result)
        self.bar.set_postfix_str(self.tally.summary(), refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def make_progress(
    say: Callable[[str], None] | None, total: int, earlier: list[dict[str, Any]]
) -> Progress:
    """Lines to ``say`` when given; else a bar on a terminal, lines on stderr elsewhere."""
    if say is not None:
        return LineProgress(say, total, earlier)
    if _on_a_terminal(sys.stderr):
        try:
            return BarProgress(total, earlier)
        except ImportError:
            pass
    return LineProgress(lambda line: print(line, file=sys.stderr, flush=True), total, earlier)


def _on_a_terminal(stream: Any) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
