"""The ``grinta`` command: demo, run, resume, replay, clean, metrics, eval.

grinta demo [--root DIR] [--auto]          the scripted demo on a copy of the raft_kv sample
grinta run "TASK" [--model M] [--root DIR] [--auto] [--toolset T] [--max-steps N]
                                           (TASK "-": read from standard input)
grinta run --continue LOG "TASK" [--model M] [--root DIR] [--auto]
                                           give an ended session its next task
grinta resume [LOG] [--model M] [--root DIR] [--auto]
                                           go on with a session whose task did not end
                                           (default: the workspace's most recent one)
grinta replay LOG [--root DIR] [--branch K] re-run a recorded session; report differing steps
grinta clean [--root DIR] [--keep N] [--unfinished] [--dry-run]
                                           delete old session logs and their snapshots
grinta metrics LOG [--json]                behaviour metrics of a recorded session
grinta models [--check] [--json]           the configured model, providers with keys, local
                                           servers: what is reachable, one line per model
grinta tasks build --packages P[,P...] --out DIR
                                           eval tasks from real packages' own test suites
grinta eval [--tasks T|DIR] [--toolsets A,B] [--model M] [--runs N] [--backend local|ray] ...

A resumed or continued session goes on in the workspace its log names (or
``--root``, when it moved), with the model of ``--model`` or ``GRINTA_MODEL``
(the demo model for a demo session). Everything about the log is checked
before it is touched: a log that is not one, whose task state does not fit
the command, held by a running session, or not in the sessions folder of the
workspace it names (without ``--root``), is one line and status 2 with the
log unchanged.

Settings come from one ``Config`` (config.py): the ``GRINTA_*`` environment,
then the flags, which win. With no model configured, ``demo`` plays the demo
model; ``run`` and ``eval`` say how to configure one.

Errors: a mistake the user can fix (a bad option or GRINTA_* value, a missing
folder or log, no API key) is one line ``grinta: error: ...`` on stderr and exit status 2,
checked before any session starts; anything else is one line
``grinta: internal error: ...`` and status 1 (``GRINTA_DEBUG=1`` shows the
traceback). Ctrl-C stops the session: one line, status 130.

This module parses the arguments, checks them, dispatches, and turns every
failure into its one line. What a person sees and answers during a session
(the steps, the diffs, the approve/veto/edit prompt) is ``terminal.py``.
Nothing heavy is imported at module import: each command imports what it
needs when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from grinta_jupyter.config import Config, ConfigError, positive_float, positive_int
from grinta_jupyter.experiment.commands import (
    TASKS_HELP,
    add_eval_options,
    add_task_parsers,
    tasks_command,
)
from grinta_jupyter.experiment.runner import EVAL_MAX_WALL_TIME
from grinta_jupyter.runtime.display import visible
from grinta_jupyter.terminal import Console, steer, tolerant_streams

if TYPE_CHECKING:
    from grinta_jupyter.agent.models import Model
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.events.models import Event, SessionStart

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

NO_MODEL = (
    "no model is configured, and the demo model only plays its scripted session on the "
    "raft_kv sample (grinta demo). Set GRINTA_MODEL to a litellm model string, or pass --model."
)


class UserError(Exception):
    """A mistake the user can fix; its message is the one line they see."""


# -- the command line ------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with every error as one line (no usage dump, no exit from inside)."""

    def error(self, message: str) -> NoReturn:
        if self.prog == "grinta run" and "required: task" in message:
            # `grinta run -v`: the task's only word read as an unknown flag.
            message += _QUOTE_THE_TASK
        raise UserError(f"{message} (see {self.prog} --help)")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            message = f"unrecognized arguments: {' '.join(extra)}"
            command = getattr(parsed, "command", None)
            task = getattr(parsed, "task", None)
            if command == "run" and isinstance(task, str) and " " not in task.strip():
                # `grinta run -v is broken`: an unquoted task, its first word read as a flag
                # (a quoted task with a mistyped flag needs no such advice).
                message += _QUOTE_THE_TASK
            if command is None:
                self.error(message)
            raise UserError(f"{message} (see {self.prog} {command} --help)")
        return parsed


_QUOTE_THE_TASK = (
    '; give the task in quotes, and one that starts with "-" after "--": '
    'grinta run -- "-v prints nothing"'
)


def _parser() -> argparse.ArgumentParser:
    """Flags whose name is a ``Config`` field default to None: not given, the environment decides."""
    parser = _Parser(prog="grinta", description="A step-by-step coding agent you can steer.")
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="{demo,run,resume,replay,clean,metrics,models,tasks,eval,acp}",
    )

    demo = sub.add_parser("demo", help="run the scripted demo on a copy of the raft_kv sample")
    demo.add_argument(
        "--root",
        dest="copy_to",
        help="where to copy the sample (default: a new temporary folder)",
    )
    demo.add_argument("--auto", action="store_true", default=None, help=_AUTO)
    demo.add_argument("--model", help="use a real model instead of the scripted demo")

    run = sub.add_parser("run", help="work on a task in a folder")
    run.add_argument("task", help='what to do; "-": read it from standard input')
    run.add_argument(
        "--continue",
        dest="continue_log",
        metavar="LOG",
        help="give the ended session of LOG this next task (same workspace, context carried over)",
    )
    run.add_argument("--model", help="any litellm model string (default: $GRINTA_MODEL)")
    run.add_argument(
        "--root",
        help="the workspace folder (default: $GRINTA_ROOT, else the current folder; with "
        "--continue: the log's workspace)",
    )
    run.add_argument("--auto", action="store_true", default=None, help=_AUTO)
    run.add_argument("--toolset", help=f"default: {Config.toolset}")
    run.add_argument("--max-steps", type=positive_int, help=_MAX_STEPS)

    res = sub.add_parser("resume", help="go on with a session whose task did not end")
    res.add_argument(
        "log", nargs="?", help="its event log (default: the workspace's most recent unfinished one)"
    )
    res.add_argument("--model", help="any litellm model string (default: $GRINTA_MODEL)")
    res.add_argument(
        "--root",
        help="the workspace, when it moved (default: the one the log names; without LOG, the "
        "workspace to look in and go on in: $GRINTA_ROOT, else the current folder)",
    )
    res.add_argument("--auto", action="store_true", default=None, help=_AUTO)

    rep = sub.add_parser("replay", help="re-run a recorded session and report differing steps")
    rep.add_argument("log")
    rep.add_argument(
        "--root",
        help="a workspace in the session's starting state, changed by the replay (default: a "
        "fresh sample copy, else a new folder rebuilt from the log's snapshots)",
    )
    rep.add_argument(
        "--branch",
        type=_branch_number,
        help="the branch of a rewound session to replay (default: the one it ended on)",
    )

    cln = sub.add_parser("clean", help="delete old session logs and the snapshots only they need")
    cln.add_argument(
        "--root", help="the workspace folder (default: $GRINTA_ROOT, else the current folder)"
    )
    cln.add_argument(
        "--keep",
        type=_count,
        default=CLEAN_KEEP,
        help=f"how many of the most recent sessions to keep (default: {CLEAN_KEEP})",
    )
    cln.add_argument(
        "--unfinished",
        action="store_true",
        help="also delete sessions whose task did not end (kept by default: they may be resumed)",
    )
    cln.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")

    met = sub.add_parser("metrics", help="behaviour metrics of a recorded session")
    met.add_argument("log")
    met.add_argument("--json", action="store_true")

    mod = sub.add_parser(
        "models", help="what models are configured and reachable (key names only, never values)"
    )
    mod.add_argument(
        "--check", action="store_true", help="also call each hosted provider that has a key"
    )
    mod.add_argument("--json", action="store_true")

    acp = sub.add_parser(
        "acp",
        help="run as an Agent Client Protocol agent on stdio (for Zed, Jupyter AI: docs/acp.md)",
        add_help=False,
    )
    acp.add_argument("acp_args", nargs="*", help="see grinta acp --help")

    add_task_parsers(sub)  # grinta tasks build --packages P[,P...] --out DIR

    evl = sub.add_parser("eval", help="run the harness experiment: tasks x toolsets x seeds")
    evl.add_argument("--tasks", default="all", help=TASKS_HELP)
    evl.add_argument("--toolsets", default="intent,broad")
    evl.add_argument(
        "--model",
        help='a litellm model string (default: $GRINTA_MODEL), or "scripted" (offline)',
    )
    evl.add_argument(
        "--runs",
        type=_at_most(EVAL_MAX_RUNS),
        default=3,
        help=f"seeds per (task, toolset), at most {EVAL_MAX_RUNS}",
    )
    evl.add_argument(
        "--jobs",
        type=_at_most(EVAL_MAX_JOBS),
        default=1,
        help=f"runs in parallel (processes), at most {EVAL_MAX_JOBS}",
    )
    evl.add_argument(
        "--out", default="grinta-eval", help="results folder (an existing one is resumed)"
    )
    evl.add_argument("--max-steps", type=positive_int, help=_MAX_STEPS)
    evl.add_argument("--max-cost", type=positive_float, help="dollars per run")
    evl.add_argument(
        "--max-wall-time",
        type=positive_float,
        help=f"seconds per run (default: $GRINTA_MAX_WALL_TIME, else {EVAL_MAX_WALL_TIME:g})",
    )
    add_eval_options(evl)  # --backend local|ray, --address A
    return parser


_AUTO = "approve every step without asking"
CLEAN_KEEP = 10  # sessions ``grinta clean`` keeps by default


def _count(text: str) -> int:
    """A number 0 or more (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


_branch_number = _count

# `grinta eval --runs 1000000000` built every run's spec before the first started: a silent
# wait for ever (and memory), not an error. Bounds far above any real experiment.
EVAL_MAX_RUNS = 1000
EVAL_MAX_JOBS = 256


def _at_most(limit: int) -> Callable[[str], int]:
    """An argparse type: a whole number from 1 to ``limit``."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"must be {limit} or less, got {value}")
        return value

    return parse


_MAX_STEPS = f"default: $GRINTA_MAX_STEPS, else {Config.max_steps}"


def main(argv: list[str] | None = None) -> int:
    """The console entry: run one command; every failure is one line on stderr."""
    tolerant_streams()
    config: Config | None = None
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["acp"]:  # its own options (--help); standard output is the protocol's
        from grinta_jupyter.acp import main as acp_main

        return acp_main(given[1:])
    try:
        args = _parser().parse_args(argv)
        config = Config.from_env(os.environ).with_options(**_config_options(args))
        status = _dispatch(args, config)
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
        if config is not None and config.debug:
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
    from grinta_jupyter.events.log import LogError
    from grinta_jupyter.experiment.errors import ExperimentUsageError

    if isinstance(exc, (UserError, LogError, ConfigError, ExperimentUsageError)):
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


def _config_options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed flags that are ``Config`` fields (same names); None where not given."""
    names = {f.name for f in fields(Config)}
    return {name: value for name, value in vars(args).items() if name in names}


def _dispatch(args: argparse.Namespace, config: Config) -> int:
    if args.command in _SESSION_COMMANDS:
        # The token encoding's load holds the interpreter's lock for 0.6-0.8 s, before the
        # first request (its count is logged) and beside litellm's import: a helper process
        # loads it on the other processor meanwhile and counts for the session
        # (runtime/counting.py; standard library only, as this module's imports).
        from grinta_jupyter.runtime import counting

        counting.start()
    if args.command == "eval":
        return _eval(args, config)
    if args.command == "metrics":
        return _metrics(args)
    if args.command == "tasks":
        return tasks_command(args)
    if args.command == "models":
        from grinta_jupyter.agent.models.catalog import main as models

        return models(config, os.environ, check=args.check, as_json=args.json)
    if args.command == "replay":
        return _replay(args)
    if args.command == "clean":
        return _clean(args, config)
    if args.command == "demo":
        return _demo(args, config)
    if args.command == "resume":
        return _resume(args, config)
    args.task = _task_argument(args.task, config)
    if args.continue_log is not None:
        return _continue(args, config)
    return _run(args, config)


# The commands that run a session in this process.
_SESSION_COMMANDS = ("run", "demo", "resume")


def _task_argument(task: str, config: Config) -> str:
    """The task as given; ``-``: read from standard input to its end (``echo TASK | grinta
    run -``). The answers to the session's questions then come from the terminal
    (``/dev/tty``), since standard input is spent: without one, ``--auto`` is needed."""
    if task != "-":
        return task
    from grinta_jupyter.agent.session import MAX_MESSAGE_CHARS

    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        raise UserError(
            "grinta run -: the task is read from standard input, and that is "
            + ("closed" if stdin is None else "a terminal")
            + '; pipe it in (echo "fix the failing test" | grinta run -), or give it as '
            "an argument"
        )
    text = stdin.read(MAX_MESSAGE_CHARS + 1)  # more is refused as too long a task
    if config.policy == "auto":
        return text
    try:
        terminal = open("/dev/tty", encoding=stdin.encoding or "utf-8", errors="replace")  # noqa: SIM115  (stdin for the rest of the run)
    except OSError:
        raise UserError(
            "grinta run -: the task came from standard input, and there is no terminal to "
            "answer the session's questions; add --auto to run without them, or give the "
            "task as an argument"
        ) from None
    sys.stdin = terminal
    return text


def _metrics(args: argparse.Namespace) -> int:
    from grinta_jupyter.events.metrics import measure

    metrics = measure(args.log)
    # json.dumps escapes control and non-ASCII characters; the table makes the log's text visible.
    print(json.dumps(metrics.to_json(), indent=2) if args.json else metrics.table())
    return 0


def _replay(args: argparse.Namespace) -> int:
    from grinta_jupyter.agent.replay import replay

    root = _existing_folder(args.root, "--root") if args.root is not None else None
    report = replay(args.log, root, args.branch)
    print(f"replayed in: {visible(str(report.root))}")
    for note in report.notes:
        print(visible(f"note: {note}"))
    for line in report.differences:
        print(visible(line))
    if report.branch or report.tasks > 1:
        print(f"branch {report.branch}, {report.tasks} task(s)")
    print(
        f"replayed {report.steps} steps: "
        + ("every proposal identical" if report.identical else f"{len(report.differences)} differ")
    )
    return 0 if report.identical else 1


def _clean(args: argparse.Namespace, config: Config) -> int:
    from grinta_jupyter.events.snapshots import clean

    root = _existing_folder(config.workspace, config.origin("root"))
    done = clean(root, keep=args.keep, unfinished=args.unfinished, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    for log in done.logs:
        print(f"{verb} {visible(str(log))}")
    print(
        f"{verb} {len(done.logs)} session log(s) and {done.blobs} snapshot blob(s) "
        f"({done.bytes:,} bytes); {done.kept} session log(s) kept"
    )
    if done.unfinished:
        print(
            f"kept {len(done.unfinished)} session(s) whose task did not end (resume them, or "
            "pass --unfinished): " + ", ".join(visible(p.name) for p in done.unfinished)
        )
    return 0


def _demo(args: argparse.Namespace, config: Config) -> int:
    from grinta_jupyter.agent.models import configured_model
    from grinta_jupyter.samples.tasks import copy_workspace

    root = _empty_folder(args.copy_to) if args.copy_to is not None else None
    model = configured_model(config, require_key=True)
    _log_folder(config)
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="grinta-demo-")) / "raft_kv"
    try:
        copy_workspace("raft_kv", root)
    except OSError as exc:
        raise UserError(
            f"cannot copy the raft_kv sample to {root}: {exc.strerror or exc}"
        ) from None
    print(f"workspace: {visible(str(root))} (a fresh copy of the raft_kv sample)")
    return _run_session("fix the failing test in raft_kv", model, config, root, sample="raft_kv")


def _run(args: argparse.Namespace, config: Config) -> int:
    from grinta_jupyter.agent.models import configured_model

    if not args.task.strip():
        raise UserError('the task is empty; say what to do, e.g. grinta run "fix the failing test"')
    _known_toolsets([config.toolset], config.origin("toolset"))
    root = _session_root(config.workspace, config.origin("root"))
    if config.model is None:
        raise UserError(NO_MODEL)
    if config.model.strip() in _NOT_LITELLM:
        # Went to litellm as a model string: a session log, seconds of import, then
        # "UNKNOWN_MODEL" after the session had started.
        raise UserError(
            f"{config.origin('model')} {config.model.strip()}: {_NOT_LITELLM[config.model.strip()]}"
            "; grinta run needs a litellm model string, e.g. openai/gpt-4o-mini"
        )
    model = configured_model(config, require_key=True)
    if "/" not in config.model:
        # A bare name is where typos live (gtp-4o): litellm says whether any provider serves
        # it before a session and its log exist (the first call loads litellm anyway).
        check_ready = getattr(model, "check_ready", None)
        if check_ready is not None:
            check_ready()
    _log_folder(config)
    return _run_session(args.task, model, config, root)


# Model names grinta shows that are not litellm models, and where each one plays.
_NOT_LITELLM = {
    "demo": "the demo model plays only its scripted session on the raft_kv sample (grinta demo)",
    "scripted": "the scripted model plays only eval tasks' reference solutions (grinta eval)",
    "scripted:noop": "the scripted model plays only in grinta eval",
}


def _continue(args: argparse.Namespace, config: Config) -> int:
    """``grinta run --continue LOG TASK``: the ended session of LOG, given its next task."""
    from grinta_jupyter.agent.history import unfinished

    if not args.task.strip():
        raise UserError('the task is empty; say what to do next, e.g. "now add a test"')
    refused = config.kept_options("continued", " without --continue")  # were dropped unsaid
    if refused is not None:
        raise UserError(refused)
    log, events, start = _session_log(args.continue_log)
    if unfinished(events):
        raise UserError(
            f"{log}: its task has not ended; go on with it first (grinta resume {log}), then "
            "continue it"
        )
    root = _resume_root(args.root, log, start, config.log_dir)
    model = _model_for(config, start)
    session = _resumed(log, model, config, root)
    if not session.done:  # checked above; a log that changed in between is not continued
        raise UserError(f"{log}: its task has not ended; go on with it first (grinta resume)")
    _kept_from_log(config, session)
    session.continue_task(args.task)
    print(
        f"model: {visible(session.model.name)}   task {len(session.tasks)}: "
        f"{visible(args.task.strip())}\nworkspace: {visible(str(session.root))}\nlog: {log}"
    )
    _show_rules(session)
    print()
    return _steer_to_end(session)


def _resume(args: argparse.Namespace, config: Config) -> int:
    """``grinta resume [LOG]``: a session whose task did not end, rebuilt from its log."""
    from grinta_jupyter.agent.history import latest_unfinished, unfinished
    from grinta_jupyter.events import models as ev

    if args.log is None:
        where = _existing_folder(config.workspace, config.origin("root"))
        found = latest_unfinished(where, config.log_dir)
        if found is None:
            raise UserError(
                f"no session of {where} has a task that did not end; name a log: grinta resume LOG"
            )
        text = str(found)
    else:
        text = args.log
    log, events, start = _session_log(text)
    if not unfinished(events):
        ended = next(e for e in reversed(events) if isinstance(e, ev.SessionEnd))
        raise UserError(
            f"{log}: its task ended ({ended.reason}); give it a next task: "
            f'grinta run --continue {log} "TASK"'
        )
    root = _resume_root(args.root, log, start, config.log_dir)
    model = _model_for(config, start)
    session = _resumed(log, model, config, root)
    _kept_from_log(config, session)
    resumed = [e for e in session.log.events if isinstance(e, ev.Resumed)][-1:]
    again = len(resumed[0].requeued) if resumed else 0
    landed = len(resumed[0].recovered) if resumed else 0
    print(
        f"model: {visible(session.model.name)}   task: {visible(session.tasks[-1])}\n"
        f"workspace: {visible(str(session.root))}\nlog: {log}\n"
        f"resumed after step {len(session.steps)}"
        + (f"; {again} call(s) staged again against the files as they are now" if again else "")
        + (f"; {landed} commit(s) had landed and are not made again" if landed else "")
    )
    _show_rules(session)
    print()
    return _steer_to_end(session)


def _session_log(text: str) -> tuple[Path, list[Event], SessionStart]:
    """The log at ``text``: its path, events and session_start; LogError when it is not one."""
    from grinta_jupyter.events import models as ev
    from grinta_jupyter.events.log import read_log

    if not text.strip():
        raise UserError("the log is empty; give the path of a session log (.grinta/sessions/)")
    events = read_log(text)
    start = next(e for e in events if isinstance(e, ev.SessionStart))
    if start.toolset == "kernel":
        raise UserError(
            f"{text}: this session ran in a kernel with its tools; go on with it there "
            "(%grinta resume, %grinta continue)"
        )
    return Path(text), events, start


def _resume_root(
    given: str | None, log: Path, start: SessionStart, log_dir: str | None = None
) -> Path:
    """Where a resumed session goes on: ``--root``, else the workspace its log names.

    Only a log lying in that workspace's ``.grinta/sessions``, or this user's own file in
    the folder logs are configured to go to (``GRINTA_LOG_DIR``) naming it by an absolute
    path, chooses it: a log copied or moved elsewhere must not choose where the session
    writes, so ``--root`` says it.
    """
    from grinta_jupyter.agent.history import owned

    if given is not None:
        return _session_root(given, "--root")
    named = Path(start.root)
    if (
        os.path.isabs(start.root)
        and log_dir
        and _same_folder(log.absolute().parent, Path(log_dir).expanduser())
        and owned(log)  # another user's log in a shared folder chooses nothing
    ):
        return _session_root(named, "the session's workspace")
    home = _home_of(log)
    if not start.root.strip() or home is None or not _same_folder(home, named):
        lies = (
            f"lies in the workspace {home}" if home else "is not in a workspace's sessions folder"
        )
        raise UserError(
            f"{log} {lies} but its session ran in {start.root or 'no named folder'}; pass --root "
            "to say where it goes on"
        )
    return _session_root(named, "the session's workspace")


def _home_of(log: Path) -> Path | None:
    """The workspace whose ``.grinta/sessions`` holds ``log``, if it lies in one."""
    parent = log.absolute().parent
    if parent.name == "sessions" and parent.parent.name == ".grinta":
        return parent.parent.parent
    return None


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _model_for(config: Config, start: SessionStart) -> Model:
    """The configured model; a demo session goes on with the demo model when none is."""
    from grinta_jupyter.agent.models import configured_model

    if config.model is None:
        if start.model == "demo":
            from grinta_jupyter.agent.models.demo import DemoModel

            return DemoModel()
        raise UserError(
            f"no model is configured; this session used {start.model!r}: pass --model "
            "(or set GRINTA_MODEL) to go on with it"
        )
    return configured_model(config, require_key=True)


def _kept_from_log(config: Config, session: Session) -> None:
    """Say which of the environment's limits a resumed or continued session does not take."""
    for note in config.kept_limits(session.limits):
        _complain(visible(note))


def _resumed(log: Path, model: Model, config: Config, root: Path) -> Session:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.events.log import LogError

    try:
        return Session.resume(
            log, model=model, policy=config.policy, root=root, settings=config.settings()
        )
    except OSError as exc:
        raise UserError(f"cannot go on in {root}: {exc.strerror or exc}") from None
    except LogError as exc:  # what is wrong with the log
        raise UserError(str(exc)) from None


def _eval(args: argparse.Namespace, config: Config) -> int:
    from grinta_jupyter.agent.models import configured_model
    from grinta_jupyter.experiment.commands import eval_backend, eval_specs
    from grinta_jupyter.experiment.suite import run_suite, write_report

    model = config.model
    if model is None:
        raise UserError(NO_MODEL[:-1] + ' ("--model scripted" plays reference solutions offline).')
    toolsets = [t.strip() for t in args.toolsets.split(",") if t.strip()]
    if not toolsets:
        raise UserError("--toolsets names no toolset")
    _known_toolsets(toolsets)
    try:
        specs = eval_specs(
            args,
            model,
            toolsets,
            max_steps=config.max_steps,
            max_tokens=config.max_tokens,
            max_cost=config.max_cost,
            max_wall_time=config.max_wall_time or EVAL_MAX_WALL_TIME,
            context_budget=config.context_budget,
            condense=config.condense,
        )
        backend = eval_backend(args)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {args.out} is a file; give a folder for the results")
    if not model.startswith("scripted"):
        configured_model(config, require_key=True)  # no key: say so before any run starts
    results = run_suite(specs, out, jobs=args.jobs, backend=backend)
    print(write_report(results, toolsets, out))
    print(
        f"event logs: {out / 'logs'}; results: {out / 'results.md'}; report: {out / 'report.html'}"
    )
    return 0


def _known_toolsets(names: list[str], origin: str = "--toolsets") -> None:
    from grinta_jupyter.tools import TOOLSETS

    for name in names:
        if name not in TOOLSETS:
            raise UserError(
                f"unknown toolset {name!r} ({origin}); known: {', '.join(sorted(TOOLSETS))}"
            )


def _existing_folder(path: Path | str, option: str) -> Path:
    text = str(path)
    if not text.strip():
        raise UserError(f"{option} is empty; give a folder")
    path = Path(text).expanduser()
    if not path.exists():
        raise UserError(f"{option} {text} does not exist")
    if not path.is_dir():
        raise UserError(f"{option} {text} is not a folder")
    return path


def _session_root(path: Path | str, option: str) -> Path:
    """``path`` as a session's workspace: an existing folder, not the file system's root,
    whose ``.grinta`` grinta can write (``root_problem``); else one line, before anything
    starts (a ``.grinta`` file used to start a session that ended at once on its log)."""
    from grinta_jupyter.runtime.workspace import root_problem

    folder = _existing_folder(path, option)
    if option == "default":
        named = "the current folder"
    else:
        named = f"{option}{' ' if option.startswith('-') else '='}{path}"
    problem = root_problem(folder, named)
    if problem is not None:
        raise UserError(problem)
    return folder


def _log_folder(config: Config) -> None:
    """Make the configured log folder now: a path that cannot hold logs (a file, a missing
    drive) is one line before any session starts, not a session that ends at once on a log
    it could not open, named as the log to measure."""
    if config.log_dir is None:
        return
    option = config.origin("log_dir")
    try:
        Path(config.log_dir).expanduser().mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file, or a link to nothing
        raise UserError(f"{option} {config.log_dir} is not a folder") from None
    except OSError as exc:
        raise UserError(f"{option} {config.log_dir}: {exc.strerror or exc}") from None


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
    task: str, model: Model, config: Config, root: Path, sample: str | None = None
) -> int:
    from grinta_jupyter.agent.session import Session

    options = config.session_options(root)
    try:
        session = Session(task, model=model, sample=sample, **options)
    except OSError as exc:
        raise UserError(f"cannot work in {root}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a task too long
        raise UserError(str(exc)) from None
    print(f"model: {visible(session.model.name)}   task: {visible(task)}\nlog: {session.log_path}")
    _show_rules(session)
    print()
    return _steer_to_end(session)


def _show_rules(session: Session) -> None:
    """Which rules files of the project are in the system prompt, if any; and what opening
    the workspace did to commits a crash had interrupted (the trace's recovery mark)."""
    for note in session.runtime.recovered:
        print(f"recovered an interrupted commit: {visible(note, keep_newlines=False)}")
    if session.rules:
        print(
            "rules: "
            + ", ".join(
                visible(r.path, keep_newlines=False)
                + (f" (cut to {r.chars:,} characters)" if r.truncated else "")
                for r in session.rules
            )
        )


def _steer_to_end(session: Session) -> int:
    """Ask about each step until the session ends; say how it ended; the exit status."""
    from grinta_jupyter.events.metrics import measure

    console = Console(sys.stdout)
    interrupted = not steer(session, console)
    metrics = measure(session.log.events)
    cost = "cost unknown" if metrics.cost is None else f"{metrics.cost:.4f} dollars"
    print(
        f"\nsession ended: {visible(str(session.end_reason))} after {metrics.steps} steps, "
        f"{metrics.commits} commits, {metrics.tokens:,} tokens, {cost}, "
        f"{metrics.duration:.1f} seconds"
    )
    if session.summary:
        print(f"summary: {visible(session.secrets.redact(session.summary))}")
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


def _one_line(text: str) -> str:
    line = visible(text, keep_newlines=False)
    return line if len(line) <= 500 else line[:500] + "..."


def console() -> NoReturn:
    """The ``grinta`` command: ``main``, then an exit that does not wait for litellm's
    background import when nothing will use it (a short ``grinta run`` printed its summary
    and then waited 4-11 s for it). ``main`` itself returns, for callers in a process of
    their own making."""
    status = main()
    if "grinta_jupyter.agent.models.litellm_model" in sys.modules:  # else no import runs
        from grinta_jupyter.agent.models import litellm_model

        litellm_model.end_without_import(status)
    sys.exit(status)


if __name__ == "__main__":
    console()
