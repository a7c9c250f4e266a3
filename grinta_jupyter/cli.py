"""The ``grinta`` command: demo, run, replay, metrics, eval.

grinta demo [--root DIR] [--auto]          the scripted demo on a copy of the raft_kv sample
grinta run "TASK" [--model M] [--root DIR] [--auto] [--toolset T] [--max-steps N]
grinta replay LOG [--root DIR]             re-run a recorded session; report differing steps
grinta metrics LOG [--json]                behaviour metrics of a recorded session
grinta eval [--tasks T] [--toolsets A,B] [--model M] [--runs N] ...

Errors: a mistake the user can fix (a bad option, a missing folder or log, no
API key) is one line ``grinta: error: ...`` on stderr and exit status 2,
checked before any session starts; anything else is one line
``grinta: internal error: ...`` and status 1 (``GRINTA_DEBUG=1`` shows the
traceback). Ctrl-C stops the session: one line, status 130.

Deciding: a proposal is approved only on an explicit yes (Enter, ``y``,
``yes``); ``v``/``veto``/``n``/``no`` veto it, ``e``/``edit`` edit it, and any
other answer asks again. End of input (Ctrl-D, a closed pipe) vetoes the
pending proposal and stops the session: stdin will not answer again, and
stopping costs nothing while another model turn costs tokens.

Everything shown that came from the model, the files or a command passes
through ``runtime.display.visible``, so no escape sequence in it reaches the
terminal raw.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.runtime.display import has_unsafe, visible

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.step import Step

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

DEFAULT_MAX_STEPS = Limits().max_steps
SHOWN_OUTPUT_CHARS = 2000

PROMPT = "approve? [Y]es / [v]eto / [e]dit: "
HINT = "answer y or Enter to approve, v or n to veto (you give a reason), e to edit"
APPROVE_WORDS = frozenset({"", "y", "yes"})
VETO_WORDS = frozenset({"v", "veto", "n", "no"})
EDIT_WORDS = frozenset({"e", "edit"})
DEFAULT_VETO_REASON = "vetoed by the user"
STDIN_CLOSED = "stopped: standard input closed"
INTERRUPTED = "interrupted by the user"


class UserError(Exception):
    """A mistake the user can fix; its message is the one line they see."""


# -- the command line ------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with every error as one line (no usage dump, no exit from inside)."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see {self.prog} --help)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="grinta", description="A step-by-step coding agent you can steer.")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="{demo,run,replay,metrics,eval}"
    )

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
    run.add_argument("--max-steps", type=_positive_int, default=DEFAULT_MAX_STEPS)

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
    evl.add_argument("--runs", type=_positive_int, default=3, help="seeds per (task, toolset)")
    evl.add_argument("--jobs", type=_positive_int, default=1, help="runs in parallel (processes)")
    evl.add_argument(
        "--out", default="grinta-eval", help="results folder (an existing one is resumed)"
    )
    evl.add_argument("--max-steps", type=_positive_int, default=DEFAULT_MAX_STEPS)
    evl.add_argument("--max-cost", type=_positive_float, default=None, help="USD per run")
    evl.add_argument("--max-wall-time", type=_positive_float, default=900.0, help="seconds per run")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The console entry: run one command; every failure is one line on stderr."""
    _tolerant_streams()
    try:
        args = _parser().parse_args(argv)
        status = _dispatch(args)
    except KeyboardInterrupt:
        _complain("\ngrinta: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `grinta metrics LOG | head`: the reader left; nothing to say
        _drop_stdout()
        return EXIT_INTERNAL_ERROR
    except Exception as exc:
        message = _user_error(exc)
        if message is not None:
            _complain(f"grinta: error: {_one_line(message)}")
            return EXIT_USER_ERROR
        if os.environ.get("GRINTA_DEBUG", "").strip() not in ("", "0"):
            raise
        _complain(
            f"grinta: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
            "(set GRINTA_DEBUG=1 for the traceback)"
        )
        return EXIT_INTERNAL_ERROR
    try:
        if sys.stdout is not None:  # None when started with stdout closed
            sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_INTERNAL_ERROR
    except OSError as exc:  # stdout on a full disk
        _complain(f"grinta: error: cannot write the output: {exc.strerror}")
        _drop_stdout()
        return EXIT_USER_ERROR
    return status


def _user_error(exc: Exception) -> str | None:
    """The line to show for a mistake the user can fix, or None for anything else (a bug)."""
    from grinta_jupyter.agent.models.base import ModelError
    from grinta_jupyter.events.metrics import LogError

    if isinstance(exc, (UserError, LogError)):
        return str(exc)
    if isinstance(exc, ModelError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, OSError) and exc.strerror:  # the machine said no: a path, a permission
        return exc.strerror + (f": {exc.filename}" if exc.filename else "")
    return None


def _complain(line: str) -> None:
    """``line`` on stderr (print would fall back to stdout when stderr is closed)."""
    if sys.stderr is not None:
        print(line, file=sys.stderr, flush=True)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so Python's own flush at exit has nothing left to fail on."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "eval":
        return _eval(args)
    if args.command == "metrics":
        return _metrics(args)
    if args.command == "replay":
        return _replay(args)
    if args.command == "demo":
        return _demo(args)
    return _run(args)


def _metrics(args: argparse.Namespace) -> int:
    from grinta_jupyter.events.metrics import format_summary, summarize

    metrics = summarize(args.log)
    # JSON escapes control characters itself; the table holds the log's task and model names.
    print(json.dumps(metrics, indent=2) if args.json else visible(format_summary(metrics)))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from grinta_jupyter.agent.replay import replay

    root = _existing_folder(args.root, "--root") if args.root is not None else None
    report = replay(args.log, root)
    for line in report.differences:
        print(visible(line))
    print(
        f"replayed {report.steps} steps: "
        + ("every proposal identical" if report.identical else f"{len(report.differences)} differ")
    )
    return 0 if report.identical else 1


def _demo(args: argparse.Namespace) -> int:
    from grinta_jupyter.agent import make_model
    from grinta_jupyter.samples.tasks import copy_workspace

    root = _empty_folder(args.root) if args.root is not None else None
    model = make_model(args.model, require_key=True)
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="grinta-demo-")) / "raft_kv"
    try:
        copy_workspace("raft_kv", root)
    except OSError as exc:
        raise UserError(
            f"cannot copy the raft_kv sample to {root}: {exc.strerror or exc}"
        ) from None
    print(f"workspace: {visible(str(root))} (a fresh copy of the raft_kv sample)")
    return _run_session(
        "fix the failing test in raft_kv",
        root,
        model,
        auto=args.auto,
        toolset="intent",
        max_steps=DEFAULT_MAX_STEPS,
        sample="raft_kv",
    )


def _run(args: argparse.Namespace) -> int:
    from grinta_jupyter.agent import make_model

    if not args.task.strip():
        raise UserError('the task is empty; say what to do, e.g. grinta run "fix the failing test"')
    _known_toolsets([args.toolset])
    root = _existing_folder(args.root, "--root")
    model = make_model(args.model, require_key=True)
    if model.name == "demo":
        raise UserError(
            "no model is configured, and the demo model only plays its scripted session on the "
            "raft_kv sample (grinta demo). Set GRINTA_MODEL to a litellm model string, or pass --model."
        )
    return _run_session(
        args.task, root, model, auto=args.auto, toolset=args.toolset, max_steps=args.max_steps
    )


def _eval(args: argparse.Namespace) -> int:
    from grinta_jupyter.agent import make_model
    from grinta_jupyter.experiment.suite import plan_runs, run_suite, select_tasks, write_report

    model = args.model or os.environ.get("GRINTA_MODEL") or "scripted"
    toolsets = [t.strip() for t in args.toolsets.split(",") if t.strip()]
    if not toolsets:
        raise UserError("--toolsets names no toolset")
    _known_toolsets(toolsets)
    try:
        tasks = select_tasks(args.tasks)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not tasks:
        raise UserError("--tasks selects no task")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {args.out} is a file; give a folder for the results")
    if not model.startswith("scripted"):
        make_model(model, require_key=True)  # no key: say so before any run starts
    specs = plan_runs(
        tasks,
        toolsets,
        model,
        args.runs,
        max_steps=args.max_steps,
        max_cost=args.max_cost,
        max_wall_time=args.max_wall_time,
    )
    results = run_suite(specs, out, jobs=args.jobs)
    print(write_report(results, toolsets, out))
    print(f"event logs: {out / 'logs'}; results: {out / 'results.md'}")
    return 0


def _known_toolsets(names: list[str]) -> None:
    from grinta_jupyter.tools import TOOLSETS

    for name in names:
        if name not in TOOLSETS:
            raise UserError(f"unknown toolset {name!r}; known: {', '.join(sorted(TOOLSETS))}")


def _existing_folder(text: str, option: str) -> Path:
    if not text.strip():
        raise UserError(f"{option} is empty; give a folder")
    path = Path(text).expanduser()
    if not path.exists():
        raise UserError(f"{option} {text} does not exist")
    if not path.is_dir():
        raise UserError(f"{option} {text} is not a folder")
    return path


def _empty_folder(text: str) -> Path:
    """The demo's --root: a new folder, or an empty one (the sample is copied into it)."""
    if not text.strip():
        raise UserError("--root is empty; give a folder")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise UserError(f"--root {text} is not a folder")
    if path.is_dir() and any(path.iterdir()):
        raise UserError(
            f"--root {text} already holds files; the demo copies the raft_kv sample into a new "
            "or empty folder"
        )
    return path


# -- a session in the terminal ---------------------------------------------------------------


def _run_session(
    task: str,
    root: Path,
    model: Any,
    *,
    auto: bool,
    toolset: str,
    max_steps: int | None,
    sample: str | None = None,
) -> int:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.events.metrics import summarize

    try:
        session = Session(
            task,
            model=model,
            root=root,
            toolset=toolset,
            policy="auto" if auto else "ask",
            limits=Limits(max_steps=max_steps),
            sample=sample,
        )
    except OSError as exc:
        raise UserError(f"cannot work in {root}: {exc.strerror or exc}") from None
    console = Console(sys.stdout)
    session.on_text = console.model_text
    print(
        f"model: {visible(session.model.name)}   task: {visible(task)}\nlog: {session.log_path}\n"
    )
    interrupted = not _run_until_done(session, _drive(session, console))
    metrics = summarize(session.log.events)
    print(
        f"\nsession ended: {visible(str(session.end_reason))} after {metrics['steps']} steps, "
        f"{metrics['commits']} commits, {metrics['prompt_tokens'] + metrics['completion_tokens']} tokens"
    )
    if session.summary:
        print(f"summary: {visible(session.summary)}")
    print(f"metrics: grinta metrics {session.log_path}")
    problem = _ending_error(session)
    if problem:
        _complain(f"grinta: error: {_one_line(problem)}")
    if interrupted:
        _complain("grinta: interrupted (Ctrl-C): the session stopped")
        return EXIT_INTERRUPTED
    return 0 if session.end_reason == "finished" else 1


def _ending_error(session: Session) -> str | None:
    """What went wrong when the session ended on an error: the model's code and message."""
    from grinta_jupyter.events import models as ev

    if session.end_reason == "error":
        errors = [e for e in session.log.events if isinstance(e, ev.ErrorEvent)]
        if errors:
            return f"{errors[-1].code}: {errors[-1].message}"
    return getattr(session.log, "error", None)


def _run_until_done(session: Session, driver: Coroutine[Any, Any, None]) -> bool:
    """Run ``driver`` on a loop of its own; False when Ctrl-C stopped the session.

    Not ``asyncio.run``: its Ctrl-C handler cancels the task instead of raising,
    which a blocking prompt never sees. Here Ctrl-C raises where it lands (the
    prompt, the model call), the session is stopped, and what is still running
    is cancelled and waited for.
    """
    loop = asyncio.new_event_loop()
    task = loop.create_task(driver)
    try:
        loop.run_until_complete(task)
        return True
    except KeyboardInterrupt:
        if not session.done:
            session.stop(INTERRUPTED)
        return False
    except Exception:
        if not session.done:  # a bug: still end the log, then let main report it
            session.stop("internal error")
        raise
    finally:
        try:
            if task.done() and not task.cancelled():
                task.exception()  # seen here, so asyncio does not log it again
            pending = asyncio.all_tasks(loop)
            for left in pending:
                left.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


async def _drive(session: Session, console: Console) -> None:
    """Step ``session`` to its end, showing each step once and asking about each proposal.

    The prompt blocks the loop on purpose: nothing else runs while a person decides.
    """
    while not session.done:
        await session.step()
        console.show_new(session)
        if not session.waiting:
            continue
        answered = _decide(session, console)
        await session.step()  # apply the decision
        console.show_new(session)
        if not answered and not session.done:
            console.say("standard input closed: the proposal was vetoed and the session stops")
            session.stop(STDIN_CLOSED)


def _decide(session: Session, console: Console) -> bool:
    """Ask until the pending proposal is approved or vetoed; False when stdin closed (vetoed)."""
    step = session.pending
    assert step is not None
    while True:
        answer = _read_line(PROMPT)
        if answer is None:
            session.veto("no answer: standard input closed")
            return False
        word = answer.strip().lower()
        if word in APPROVE_WORDS:
            session.approve()
            return True
        if word in VETO_WORDS:
            reason = _read_line("reason: ")
            session.veto((reason or "").strip() or DEFAULT_VETO_REASON)
            return reason is not None
        if word in EDIT_WORDS:
            _edit(session, step, console)
            continue
        console.say(HINT)


def _edit(session: Session, step: Step, console: Console) -> None:
    """Let the person rewrite the pending call's arguments; a valid change is proposed anew."""
    current = _pretty_arguments(step.call.arguments)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor and editor.strip() and _isatty(sys.stdin):
        text = _edit_in_editor(editor, current, console)
    else:
        text = _edit_at_prompt(current, console)
    if text is None or not text.strip() or text.strip() == current.strip():
        console.say("the proposal is unchanged")
        return
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        console.say(f"not valid JSON ({exc}); the proposal is unchanged")
        return
    if not isinstance(value, dict):
        console.say(
            f"the arguments must be a JSON object {{...}}, not {type(value).__name__}; "
            "the proposal is unchanged"
        )
        return
    if value == _parsed(step.call.arguments):
        console.say("the proposal is unchanged")
        return
    proposal = session.edit(value)
    console.proposal(step)
    if not proposal.ok:
        console.say(
            "the edited call does not validate: edit again, veto, or approve to send the error "
            "to the model"
        )


def _edit_in_editor(editor: str, current: str, console: Console) -> str | None:
    """The text the person saved in their editor, or None when they gave up or it failed."""
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        console.say(f"cannot read the editor command {editor!r}: {exc}")
        return None
    fd, name = tempfile.mkstemp(prefix="grinta-edit-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(current + "\n")
        try:
            done = subprocess.run([*command, name], check=False)
        except OSError as exc:
            console.say(f"cannot run the editor {command[0]!r}: {exc.strerror or exc}")
            return None
        if done.returncode != 0:
            console.say(f"the editor exited with status {done.returncode}")
            return None
        try:
            return Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            console.say(f"cannot read the edited arguments: {exc}")
            return None
    finally:
        Path(name).unlink(missing_ok=True)


def _edit_at_prompt(current: str, console: Console) -> str:
    """Lines typed at the prompt up to an empty line (or the end of input)."""
    console.say("current arguments:")
    console.block(current)
    console.say("new arguments as JSON, ending with an empty line (only Enter keeps them):")
    lines: list[str] = []
    while True:
        line = _read_line("")
        if line is None or not line.strip():
            return "\n".join(lines)
        lines.append(line)


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return None


def _pretty_arguments(arguments: str) -> str:
    """The call's arguments as indented JSON, every unsafe character written as a \\u escape."""
    value = _parsed(arguments)
    if value is None:
        return arguments
    text = json.dumps(value, indent=2, ensure_ascii=False)
    if not has_unsafe(text):
        return text
    # Inside JSON strings a \\u escape is the same value, and an editor shows it as it is.
    return "".join(f"\\u{ord(c):04x}" if has_unsafe(c) else c for c in text)


def _read_line(prompt: str) -> str | None:
    """One line from stdin, or None at its end (Ctrl-D, a closed pipe, no stdin at all).

    Not ``input()``: it fails outright when stdin, stdout or stderr is closed.
    """
    if prompt:
        print(prompt, end="", flush=True)
    line = sys.stdin.readline() if sys.stdin is not None else ""
    if prompt and (not line or not _isatty(sys.stdin)):
        print()  # nothing was echoed: end the prompt's line
    return line.removesuffix("\n") if line else None


class Console:
    """What the CLI shows a person: each step once, and untrusted text only as ``visible``."""

    def __init__(self, out: TextIO, color: bool | None = None):
        self.out = out
        if color is None:
            color = _isatty(out) and not os.environ.get("NO_COLOR")
        self.color = color
        self._headers: set[int] = set()
        self._outputs: set[int] = set()

    def say(self, line: str) -> None:
        print(visible(line), file=self.out, flush=True)

    def block(self, text: str) -> None:
        print(_indent(visible(text)), file=self.out, flush=True)

    def model_text(self, piece: str) -> None:
        """Streamed model text: escapes are per character, so a split sequence stays harmless."""
        print(visible(piece), end="", file=self.out, flush=True)

    def show_new(self, session: Session) -> None:
        """Each step's proposal the first time it is seen, and its outcome once it has one."""
        for step in session.steps:
            if step.number not in self._headers:
                self._headers.add(step.number)
                self.proposal(step)
            if step.observation is not None and step.number not in self._outputs:
                self._outputs.add(step.number)
                self.observation(step)

    def proposal(self, step: Step) -> None:
        p = step.proposal
        arguments = visible(step.call.arguments[:200], keep_newlines=False)
        lines = [
            f"\n--- step {step.number}: {visible(step.call.name, keep_newlines=False)} {arguments}"
        ]
        for r in p.resolutions:
            lines.append(
                "    "
                + visible(
                    f"resolved {r.target!r} -> {r.chosen or 'nothing'} ({r.reason})",
                    keep_newlines=False,
                )
            )
        if p.diff:
            lines.extend("    " + line for line in diff_lines(p.diff, self.color))
        if p.error is not None:
            lines.append(_indent(visible(p.error.render())))
        print("\n".join(lines), file=self.out, flush=True)

    def observation(self, step: Step) -> None:
        obs = step.observation
        assert obs is not None
        if obs.error is not None and obs.error == step.proposal.error:
            return  # shown with the proposal
        output = obs.output
        shown = (
            output.split("\n")[0] if step.proposal.diff and output else output[:SHOWN_OUTPUT_CHARS]
        )
        if shown.strip():
            print(_indent(visible(shown)), file=self.out, flush=True)


_STYLES = {"add": "\x1b[32m", "del": "\x1b[31m", "hunk": "\x1b[36m", "file": "\x1b[1m"}
_RESET = "\x1b[0m"
_MARKS = {"add": "+", "del": "-"}


def diff_lines(diff: str, color: bool = False) -> list[str]:
    """A unified diff as lines to print: each row marked by its role, its text made visible.

    Rows are read by their hunk's counts (``parse_unified``), never by their first
    character, and only our own colour codes are added (when ``color``).
    """
    from grinta_jupyter.runtime.diffs import parse_unified, quote_path

    def paint(style: str, line: str) -> str:
        return f"{_STYLES[style]}{line}{_RESET}" if color else line

    def path(name: str | None, prefix: str) -> str:
        return (
            "/dev/null" if name is None else visible(quote_path(prefix + name), keep_newlines=False)
        )

    out: list[str] = []
    for f in parse_unified(diff):
        if f.old_path is not None or f.new_path is not None:
            out.append(paint("file", f"--- {path(f.old_path, 'a/')}"))
            out.append(paint("file", f"+++ {path(f.new_path, 'b/')}"))
        out.extend(visible(note, keep_newlines=False) for note in f.notes)
        for hunk in f.hunks:
            out.append(paint("hunk", visible(hunk.header, keep_newlines=False)))
            for row in hunk.rows:
                text = visible(row.text, keep_newlines=False)
                if row.role == "note":
                    out.append(f"\\ {text}")
                elif row.role == "context":
                    out.append(" " + text)
                else:
                    out.append(paint(row.role, _MARKS[row.role] + text))
    return out


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().split("\n"))


def _one_line(text: str) -> str:
    line = visible(text, keep_newlines=False)
    return line if len(line) <= 500 else line[:500] + "..."


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


def _tolerant_streams() -> None:
    """Never fail on a character the terminal's encoding lacks, in or out."""
    for stream, errors in ((sys.stdout, "backslashreplace"), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors=errors)
    # An answer that is not text in the locale's encoding is an answer we do not know, not a crash.
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="replace")


if __name__ == "__main__":
    sys.exit(main())
