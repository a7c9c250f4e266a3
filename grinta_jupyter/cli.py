"""The ``grinta`` command: demo, run, replay, metrics.

grinta demo [--root DIR] [--auto]          the scripted demo on a copy of the raft_kv sample
grinta run "TASK" [--model M] [--root DIR] [--auto] [--toolset T] [--max-steps N]
grinta replay LOG [--root DIR]             re-run a recorded session; report differing steps
grinta metrics LOG [--json]                behaviour metrics of a recorded session
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from grinta_jupyter.agent.guards import Limits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="grinta", description="A step-by-step coding agent you can steer."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the scripted demo on a copy of the raft_kv sample")
    demo.add_argument("--root", help="where to copy the sample (default: a new temporary folder)")
    demo.add_argument("--auto", action="store_true", help="approve every step without asking")
    demo.add_argument("--model", help="use a real model instead of the scripted demo")

    run = sub.add_parser("run", help="work on a task in a folder")
    run.add_argument("task")
    run.add_argument(
        "--model", help="any litellm model string (default: $GRINTA_MODEL, else the demo model)"
    )
    run.add_argument(
        "--root", default=".", help="the workspace folder (default: the current folder)"
    )
    run.add_argument("--auto", action="store_true", help="approve every step without asking")
    run.add_argument("--toolset", default="intent")
    run.add_argument("--max-steps", type=int, default=40)

    rep = sub.add_parser("replay", help="re-run a recorded session and report differing steps")
    rep.add_argument("log")
    rep.add_argument(
        "--root", help="a workspace in the session's starting state (default: a fresh sample copy)"
    )

    met = sub.add_parser("metrics", help="behaviour metrics of a recorded session")
    met.add_argument("log")
    met.add_argument("--json", action="store_true")

    evl = sub.add_parser("eval", help="run the harness experiment: tasks x toolsets x seeds")
    evl.add_argument(
        "--tasks", default="all", help='"all", a workspace (raft_kv), or task ids, comma-separated'
    )
    evl.add_argument("--toolsets", default="intent,broad")
    evl.add_argument(
        "--model",
        default=None,
        help='a litellm model string (default: $GRINTA_MODEL), or "scripted" (offline)',
    )
    evl.add_argument("--runs", type=int, default=3, help="seeds per (task, toolset)")
    evl.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    evl.add_argument(
        "--out", default="grinta-eval", help="results folder (an existing one is resumed)"
    )
    evl.add_argument("--max-steps", type=int, default=40)
    evl.add_argument("--max-cost", type=float, default=None, help="USD per run")
    evl.add_argument("--max-wall-time", type=float, default=900.0, help="seconds per run")

    args = parser.parse_args(argv)
    if args.command == "eval":
        return _eval(args)
    if args.command == "metrics":
        from grinta_jupyter.events.metrics import format_summary, summarize

        metrics = summarize(args.log)
        print(json.dumps(metrics, indent=2) if args.json else format_summary(metrics))
        return 0
    if args.command == "replay":
        from grinta_jupyter.agent.replay import replay

        report = replay(args.log, args.root)
        for line in report.differences:
            print(line)
        print(
            f"replayed {report.steps} steps: "
            + (
                "every proposal identical"
                if report.identical
                else f"{len(report.differences)} differ"
            )
        )
        return 0 if report.identical else 1
    if args.command == "demo":
        root = (
            Path(args.root)
            if args.root
            else Path(tempfile.mkdtemp(prefix="grinta-demo-")) / "raft_kv"
        )
        from grinta_jupyter.samples.tasks import copy_workspace

        copy_workspace("raft_kv", root)
        print(f"workspace: {root} (a fresh copy of the raft_kv sample)")
        return _run_session(
            "fix the failing test in raft_kv",
            root,
            args.model,
            args.auto,
            "intent",
            40,
            sample="raft_kv",
        )
    return _run_session(
        args.task, Path(args.root), args.model, args.auto, args.toolset, args.max_steps
    )


def _eval(args: argparse.Namespace) -> int:
    import os

    from grinta_jupyter.experiment.suite import plan_runs, run_suite, select_tasks, write_report

    model = args.model or os.environ.get("GRINTA_MODEL") or "scripted"
    toolsets = [t.strip() for t in args.toolsets.split(",") if t.strip()]
    specs = plan_runs(
        select_tasks(args.tasks),
        toolsets,
        model,
        args.runs,
        max_steps=args.max_steps,
        max_cost=args.max_cost,
        max_wall_time=args.max_wall_time,
    )
    results = run_suite(specs, args.out, jobs=args.jobs)
    print(write_report(results, toolsets, args.out))
    print(f"event logs: {Path(args.out) / 'logs'}; results: {Path(args.out) / 'results.md'}")
    return 0


def _run_session(
    task: str,
    root: Path,
    model_spec: str | None,
    auto: bool,
    toolset: str,
    max_steps: int,
    sample: str | None = None,
) -> int:
    from grinta_jupyter.agent import make_model
    from grinta_jupyter.agent.models import ModelError
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.events.metrics import summarize

    try:
        model = make_model(model_spec)
    except ModelError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    if model.name == "demo" and sample is None:
        print(
            "error: no model is configured, and the demo model only plays its scripted session on the "
            "raft_kv sample (grinta demo). Set GRINTA_MODEL to a litellm model string, or pass --model.",
            file=sys.stderr,
        )
        return 2
    session = Session(
        task,
        model=model,
        root=root,
        toolset=toolset,
        policy="auto" if auto else "ask",
        limits=Limits(max_steps=max_steps),
        sample=sample,
    )
    session.on_text = lambda piece: print(piece, end="", flush=True)
    print(f"model: {session.model.name}   task: {task}\nlog: {session.log_path}\n")
    asyncio.run(_drive(session))
    metrics = summarize(session.log.events)
    print(
        f"\nsession ended: {session.end_reason} after {metrics['steps']} steps, "
        f"{metrics['commits']} commits, {metrics['prompt_tokens'] + metrics['completion_tokens']} tokens"
    )
    if session.summary:
        print(f"summary: {session.summary}")
    print(f"metrics: grinta metrics {session.log_path}")
    return 0 if session.end_reason == "finished" else 1


async def _drive(session) -> None:  # type: ignore[no-untyped-def]
    shown = 0
    while not session.done:
        await session.step()
        for step in session.steps[shown:]:
            if step.observation is not None or step is session.pending:
                _print_step(step)
                shown += 1
        if session.waiting:
            answer = await asyncio.to_thread(_ask)
            if answer.startswith("v"):
                reason = await asyncio.to_thread(_prompt, "reason: ")
                session.veto(reason or "vetoed by the user")
            elif answer.startswith("e"):
                raw = await asyncio.to_thread(_prompt, "new arguments (JSON): ")
                proposal = session.edit(raw)
                print(proposal.diff or (proposal.error.render() if proposal.error else ""))
            else:
                session.approve()
            step = session.steps[-1]
            await session.step()
            if step.observation is not None:
                output = step.observation.output
                print(
                    _indent(
                        output.splitlines()[0] if step.proposal.diff and output else output[:2000]
                    )
                )


def _print_step(step) -> None:  # type: ignore[no-untyped-def]
    p = step.proposal
    print(f"\n--- step {step.number}: {step.call.name} {step.call.arguments[:200]}")
    for r in p.resolutions:
        print(f"    resolved {r.target!r} -> {r.chosen or 'nothing'} ({r.reason})")
    if p.diff:
        print(_indent(p.diff))
    if p.error is not None:
        print(_indent(p.error.render()))
    elif step.observation is not None:
        output = step.observation.output
        print(_indent(output.splitlines()[0] if p.diff and output else output[:2000]))


def _ask() -> str:
    return _prompt("approve? [Y]es / [v]eto / [e]dit: ").strip().lower() or "y"


def _prompt(text: str) -> str:
    try:
        return input(text)
    except EOFError:
        return "v"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())


if __name__ == "__main__":
    sys.exit(main())
