"""The session's own overhead per step, over a long scripted session.

Run: ``python benchmarks/bench_session.py [--steps 1000] [--lines 200]`` (not a test;
prints figures).

A scripted model (``ScriptedModel``) plays ``--steps`` cheap tool calls in a cycle of
four, under the ``auto`` policy so nobody waits: ``read`` the module, ``replace_string``
one line (``VALUE = 1`` -> ``VALUE = 2``), ``search`` for a word, ``replace_string``
back; the edits alternate so each one applies, and no guard sees a repeat. Three
``finish`` calls end it (the finish guard refuses two: nothing ran the tests).
The budgets are off; the guards, masking, event log and token counting all run.

Definitions, per step ``k`` (one model turn and the one call it asks for):

- *overhead*: the wall time from the moment ``model.complete`` of turn ``k`` returns to
  the moment ``model.complete`` of turn ``k + 1`` is entered. It is everything but the
  model call (the scripted model's own work, e.g. copying the request, is excluded):
  recording the reply, staging, the policy, committing, guards, the observation,
  then building the next request (context, schemas, digest, token count) and the
  events of all of it. No step runs a command, so there is no command time to remove.
- *runtime*: the part of the overhead spent inside ``Runtime.propose`` and
  ``Runtime.commit`` (resolving, staging, validating, diffing, the atomic write and its
  journal): the tool's own work.
- *session*: overhead minus runtime: the session machinery, including the hand-offs to
  the worker threads that stage and commit (``asyncio.to_thread``), and on step 1 the
  one-time load of the token encoding.
- *overhead CPU*: the process CPU time (every thread) over the same span as the overhead:
  what the step cost whatever else the machine runs (wall times include waiting for a
  core when other processes share them).

Figures are printed per hundred steps (1-100, 101-200, ...): median and p95 of each,
then the medians per tool, then where the median of all steps falls: half the steps
commit a write, so it lies where the other steps' slowest meet the writes' fastest
(their p90 and p10 are printed; docs/speed.md, stop 43), then the process RSS after the
last step (``VmRSS``; ``VmHWM`` is the peak). The scripted model keeps a deep copy of
every request it is sent (``requests``), which grows with the square of the step count;
the benchmark clears it after each turn so the RSS is the session's, not the test
double's.

Goals (issue 13): overhead at most 5 ms median per step, flat from step 1 to step
1,000; RSS at most 300 MB after 1,000 steps. Report ``uptime`` with the figures: the
wall times grow with the load of the machine, the CPU column much less.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grinta_jupyter.agent import Session  # noqa: E402
from grinta_jupyter.agent.guards import Limits  # noqa: E402
from grinta_jupyter.agent.models.base import ModelReply  # noqa: E402
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply  # noqa: E402

GOAL_MEDIAN_MS = 5.0
# Tools whose step commits a write (the journal's fsyncs): in this script, replace_string.
WRITES = frozenset({"create", "replace_string", "multiedit", "edit_symbols"})
GOAL_RSS_MB = 300.0
BUCKET = 100


class Timer:
    """Total time spent inside wrapped calls since the last ``take``."""

    def __init__(self) -> None:
        self.spent = 0.0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.spent += time.perf_counter() - started

        return timed

    def take(self) -> float:
        spent, self.spent = self.spent, 0.0
        return spent


class TimedModel:
    """A ``ScriptedModel`` whose calls are timed: when each was entered and returned."""

    def __init__(self, inner: ScriptedModel, runtime: Timer) -> None:
        self.inner = inner
        self.name = inner.name
        self.entered: list[float] = []
        self.returned: list[float] = []
        self.cpu: list[tuple[float, float]] = []  # process CPU time when entered, returned
        self.runtime = runtime
        self.runtime_before: list[float] = []  # runtime time since the previous turn

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        self.entered.append(time.perf_counter())
        cpu_entered = time.process_time()
        self.runtime_before.append(self.runtime.take())
        try:
            return await self.inner.complete(messages, tools, on_text)
        finally:
            self.inner.requests.clear()  # the double's copies are not the session's memory
            cpu_returned = time.process_time()  # read inside the model's span, like the entry's
            self.returned.append(time.perf_counter())
            self.cpu.append((cpu_entered, cpu_returned))


def module_text(lines: int) -> str:
    body = [f"def f{i}(x):\n    return x + {i}\n" for i in range(max(1, (lines - 2) // 2))]
    return "VALUE = 1\n\n" + "".join(body)


def script(steps: int) -> list[ModelReply]:
    cycle = [
        reply("Reading the module.", call("read", path="mod.py")),
        reply("", call("replace_string", path="mod.py", old_string="VALUE = 1", new_string="VALUE = 2")),
        reply("Looking for uses.", call("search", query="return x")),
        reply("", call("replace_string", path="mod.py", old_string="VALUE = 2", new_string="VALUE = 1")),
    ]  # fmt: skip
    turns = [cycle[i % len(cycle)] for i in range(steps)]
    return turns + [reply("Done.", call("finish", summary="VALUE toggled."))] * 3


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(steps: int, lines: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-session-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "mod.py").write_text(module_text(lines))
        runtime = Timer()
        model = TimedModel(ScriptedModel(script(steps)), runtime)
        limits = Limits(max_steps=None, max_tokens=None, max_cost=None, max_wall_time=None)
        session = Session("toggle VALUE", model=model, root=root, policy="auto", limits=limits)
        session.runtime.propose = runtime.wrap(session.runtime.propose)  # type: ignore[method-assign]
        session.runtime.commit = runtime.wrap(session.runtime.commit)  # type: ignore[method-assign]
        started = time.perf_counter()
        await session.run()
        total = time.perf_counter() - started
        rss, peak = rss_mb()
        overhead = [model.entered[k + 1] - model.returned[k] for k in range(steps)]
        cpu = [model.cpu[k + 1][0] - model.cpu[k][1] for k in range(steps)]
        work = model.runtime_before[1 : steps + 1]
        machinery = [o - w for o, w in zip(overhead, work, strict=True)]
        ok = sum(1 for s in session.steps[:steps] if s.observation and s.observation.ok)
        print(
            f"{steps} steps ({ok} ok), {len(session.log.events)} events, ended: "
            f"{session.end_reason}, {total:.1f} s in all; file of {lines} lines"
        )
        print(f"{'steps':>11}  {'overhead med/p95':>17}  {'session med/p95':>16}  "
              f"{'runtime med/p95':>16}  {'overhead CPU':>16}  (ms)")  # fmt: skip
        for first in range(0, steps, BUCKET):
            span = slice(first, min(first + BUCKET, steps))
            row = [overhead[span], machinery[span], work[span], cpu[span]]
            cells = "  ".join(f"{ms(v, 0.5):>7.2f} / {ms(v, 0.95):>6.2f}" for v in row)
            print(f"{first + 1:>5}-{span.stop:<5}  {cells}")
        median = statistics.median(overhead) * 1000
        print(
            f"all steps: overhead median {median:.2f} ms (goal <= {GOAL_MEDIAN_MS}), "
            f"session {statistics.median(machinery) * 1000:.2f} ms, "
            f"runtime {statistics.median(work) * 1000:.2f} ms, "
            f"CPU {statistics.median(cpu) * 1000:.2f} ms"
        )
        for tool in sorted({s.call.name for s in session.steps[:steps]}):
            mine = [k for k in range(steps) if session.steps[k].call.name == tool]
            cells = ", ".join(
                f"{label} {ms([values[k] for k in mine], 0.5):.2f}"
                for label, values in (("overhead", overhead), ("session", machinery),
                                      ("runtime", work), ("CPU", cpu))
            )  # fmt: skip
            print(f"  {tool:<15} ({len(mine)} steps) median ms: {cells}")
        writes = [overhead[k] for k in range(steps) if session.steps[k].call.name in WRITES]
        others = [overhead[k] for k in range(steps) if session.steps[k].call.name not in WRITES]
        if writes and others:
            print(
                f"  the median of all steps lies where the other steps' slowest meet the "
                f"writes' fastest: other steps p90 {ms(others, 0.9):.2f} ms, writes p10 "
                f"{ms(writes, 0.1):.2f} ms ({len(writes)} of {steps} steps write)"
            )
        print(
            f"RSS after {steps} steps: {rss:.0f} MB (peak {peak:.0f} MB; goal <= {GOAL_RSS_MB:.0f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=200, help="lines of the module read")
    args = parser.parse_args()
    asyncio.run(measure(args.steps, args.lines))


if __name__ == "__main__":
    main()
