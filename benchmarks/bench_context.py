"""Bounded context: request sizes with and without a token budget, and the two ways to condense.

Run: ``python benchmarks/bench_context.py [--steps 600] [--eval-budget 2500] [--seeds 3]``
(not a test; prints figures). ``--skip-long`` or ``--skip-eval`` leave a part out.

Part 1, the long session: the scripted 600-step session of benchmarks/bench_session.py
(``read`` a 200-line module, ``replace_string`` one line, ``search``, ``replace_string``
back, in a cycle; ``auto`` policy; guards on), run three ways:

- *no budget*: what every session did before issue 14 (the budget set out of reach);
- *default budget*: what a scripted model gets now (``DEFAULT_BUDGET``, 32,000 tokens);
- *small budget*: ``--small-budget`` tokens (8,000), to see frequent condensations.

For each: the largest request and the mean request (prompt tokens, o200k, messages plus
tool schemas, as logged), the prompt tokens of all requests together (what a provider
bills), the condensations and the tokens they saved, the time spent planning and
applying them (median and max, ms), and the session's wall time.

Part 2, the offline eval under a small budget: the eight sample tasks (both sample
workspaces) with the offline solver (``SolverModel``, experiment/solver.py), toolset
``intent``, ``--seeds`` seeds, under ``--eval-budget`` tokens, condensed by grinta's
digest and by the model (``Limits.condense``), and without a budget. The solver plays a
reference solution whatever it is sent, so it cannot judge a summary's quality; to
measure the rest of the model method (an extra request per condensation, its tokens, and
that the task still passes), it is wrapped so that a request without tools (the
summarisation request) is answered with a plain text summary made of the transcript's
last lines, instead of consuming a step of its plan. Printed per method: pass rate,
condensations, largest and mean request, all prompt tokens including the summarisation
requests, and the mean time per run.
"""

from __future__ import annotations

import argparse
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
from grinta_jupyter.agent.condense import DEFAULT_BUDGET  # noqa: E402
from grinta_jupyter.agent.context import count_request_tokens  # noqa: E402
from grinta_jupyter.agent.guards import Limits  # noqa: E402
from grinta_jupyter.agent.models.base import ModelReply, Usage  # noqa: E402
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply  # noqa: E402
from grinta_jupyter.events import models as ev  # noqa: E402

OUT_OF_REACH = 10**9


def script(steps: int) -> list[ModelReply]:
    cycle = [
        reply("Reading the module.", call("read", path="mod.py")),
        reply("", call("replace_string", path="mod.py", old_string="VALUE = 1", new_string="VALUE = 2")),
        reply("Looking for uses.", call("search", query="return x")),
        reply("", call("replace_string", path="mod.py", old_string="VALUE = 2", new_string="VALUE = 1")),
    ]  # fmt: skip
    return [cycle[i % len(cycle)] for i in range(steps)] + [
        reply("Done.", call("finish", summary="VALUE toggled."))
    ] * 3


class Lean:
    """A ScriptedModel that keeps no copies of the requests (they grow with the square of
    the step count without a budget)."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner, self.name = inner, inner.name

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        try:
            return await self.inner.complete(messages, tools, on_text)
        finally:
            self.inner.requests.clear()


def timed(session: Session, spent: list[float]) -> None:
    """Time each condensation's planning and application (not the check that one is due)."""
    context = session.context
    plan, condense = context.plan_condensation, context.condense

    def timed_plan(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        found = plan(*args, **kwargs)
        if found is not None:
            spent.append(time.perf_counter() - started)
        return found

    def timed_condense(upto: int, text: str) -> None:
        started = time.perf_counter()
        condense(upto, text)
        spent[-1] += time.perf_counter() - started
        context.request()  # the one full rendering a condensation costs

    context.plan_condensation = timed_plan  # type: ignore[method-assign]
    context.condense = timed_condense  # type: ignore[method-assign]


def figures(events: list[ev.Event]) -> dict[str, Any]:
    requests = [e.tokens for e in events if isinstance(e, ev.ModelRequest)]
    condensed = [e for e in events if isinstance(e, ev.Condensed)]
    return {
        "largest": max(requests),
        "mean": statistics.mean(requests),
        "all": sum(requests),
        "condensations": len(condensed),
        "saved": sum(c.tokens_before - c.tokens_after for c in condensed),
    }


def long_session(steps: int, budget: int, label: str) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp:
        root = Path(tmp)
        body = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(99))
        (root / "mod.py").write_text("VALUE = 1\n\n" + body)
        limits = Limits(max_steps=None, context_budget=budget)
        model = Lean(ScriptedModel(script(steps)))
        session = Session("toggle VALUE", model=model, root=root, policy="auto", limits=limits)
        spent: list[float] = []
        timed(session, spent)
        started = time.perf_counter()
        session.run_sync()
        wall = time.perf_counter() - started
        f = figures(session.log.events)
        shown = "none" if budget == OUT_OF_REACH else f"{budget:,}"
        cost = f"{statistics.median(spent) * 1000:.1f} / {max(spent) * 1000:.1f}" if spent else "-"
        print(
            f"{label:<15} {shown:>8}  {f['largest']:>8,}  {f['mean']:>8,.0f}  {f['all']:>11,}  "
            f"{f['condensations']:>5}  {f['saved']:>9,}  {cost:>13}  {wall:>6.1f}  "
            f"{session.end_reason} after {len(session.steps)} steps"
        )


class SummarisingSolver:
    """The offline solver, answering a request without tools (a summarisation request) with
    the last lines of the transcript it was sent, as text, instead of a step of its plan."""

    def __init__(self, solver: Any) -> None:
        self.solver, self.name = solver, solver.name
        self.summaries = 0
        self.summary_tokens = 0  # prompt tokens of the summarisation requests

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        if tools:
            reply_: ModelReply = await self.solver.complete(messages, tools, on_text)
            return reply_
        self.summaries += 1
        prompt = count_request_tokens(messages, [])
        self.summary_tokens += prompt
        lines = [line for line in messages[-1]["content"].splitlines() if line.strip()]
        text = "Summary (offline stand-in): " + " | ".join(lines[-12:])[:1200]
        return ModelReply(text=text, usage=Usage(prompt, 120), finish_reason="stop")


def choose_model(session: Session) -> None:
    """Plan condensations for the model's summary whatever the session asks for (the
    session passes ``limits.condense`` once it is wired; this makes sure it is measured)."""
    plan = session.context.plan_condensation

    def planned(budget: int, tool_tokens: int, method: str = "model") -> Any:
        return plan(budget, tool_tokens, "model")

    session.context.plan_condensation = planned  # type: ignore[method-assign,assignment]


def eval_run(task_id: str, seed: int, budget: int, method: str | None) -> dict[str, Any]:
    from grinta_jupyter.experiment.runner import RunSpec, make_model
    from grinta_jupyter.samples.tasks import get_task

    task = get_task(task_id)
    with tempfile.TemporaryDirectory(prefix="bench-context-eval-") as tmp:
        root = task.prepare(Path(tmp) / task.workspace)
        spec = RunSpec(task=task_id, toolset="intent", model="scripted", seed=seed)
        solver = make_model(spec, root, [tuple(c) for c in getattr(task, "solution", ())])
        model = SummarisingSolver(solver)
        limits = Limits(
            max_wall_time=300.0,
            context_budget=budget if method else OUT_OF_REACH,
            condense="model" if method == "model" else "digest",
        )
        session = Session(
            task.prompt,
            model=model,
            root=root,
            toolset="intent",
            policy="auto",
            limits=limits,
            log_dir=Path(tmp) / "logs",
        )
        if method == "model":
            choose_model(session)
        started = time.perf_counter()
        session.run_sync()
        seconds = time.perf_counter() - started
        passed = task.check(root).passed
        f = figures(session.log.events)
        methods = {e.method for e in session.log.events if isinstance(e, ev.Condensed)}
        return {
            **f,
            "all": f["all"] + model.summary_tokens,
            "passed": passed,
            "seconds": seconds,
            "summaries": model.summaries,
            "methods": methods,
        }


def offline_eval(budget: int, seeds: int) -> None:
    from grinta_jupyter.samples.tasks import TASKS

    print(
        f"\nOffline eval: {len(TASKS)} tasks x {seeds} seeds, toolset intent, solver model, "
        f"budget {budget:,} tokens"
    )
    print(
        f"{'method':<10} {'passed':>7}  {'condensations':>13}  {'summaries':>9}  "
        f"{'largest':>8}  {'mean req':>8}  {'all prompt':>10}  {'s/run':>6}"
    )
    for method in (None, "digest", "model"):
        runs = [eval_run(t, s, budget, method) for t in TASKS for s in range(seeds)]
        passed = sum(r["passed"] for r in runs)
        logged = set().union(*(r["methods"] for r in runs))
        label = (method or "no budget") + (f" {sorted(logged)}" if method == "model" else "")
        print(
            f"{label:<10} {passed:>3}/{len(runs):<3}  "
            f"{sum(r['condensations'] for r in runs):>13}  {sum(r['summaries'] for r in runs):>9}  "
            f"{max(r['largest'] for r in runs):>8,}  "
            f"{statistics.mean(r['mean'] for r in runs):>8,.0f}  "
            f"{sum(r['all'] for r in runs):>10,}  "
            f"{statistics.mean(r['seconds'] for r in runs):>6.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--small-budget", type=int, default=8_000)
    parser.add_argument("--eval-budget", type=int, default=2_500)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--skip-long", action="store_true")
    parser.add_argument("--skip-eval", action="store_true")
    args = parser.parse_args()
    if not args.skip_long:
        print(f"A {args.steps}-step scripted session (tokens: o200k, messages + tool schemas)")
        print(
            f"{'':<15} {'budget':>8}  {'largest':>8}  {'mean':>8}  {'all prompts':>11}  "
            f"{'cond.':>5}  {'saved':>9}  {'ms med/max':>13}  {'wall s':>6}"
        )
        long_session(args.steps, OUT_OF_REACH, "no budget")
        long_session(args.steps, DEFAULT_BUDGET, "default budget")
        long_session(args.steps, args.small_budget, "small budget")
    if not args.skip_eval:
        offline_eval(args.eval_budget, args.seeds)


if __name__ == "__main__":
    main()
