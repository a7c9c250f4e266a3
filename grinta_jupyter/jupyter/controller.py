"""What the magics do: create sessions, run them in the kernel, and show them.

One session is current at a time (``grinta_jupyter.current()``). A session
normally runs as an asyncio task on the kernel's event loop, so widget
clicks are handled while it works and other cells can still run; in
``--manual`` mode (or where no event loop runs, such as a terminal IPython)
it advances only when ``%grinta step`` (or a decision) asks it to.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grinta_jupyter.agent.blocking import running_loop
from grinta_jupyter.agent.updates import (
    DEFAULT_VETO_REASON,
    Approve,
    NeedsDecision,
    SessionEnded,
    StepObserved,
    Update,
    Veto,
)
from grinta_jupyter.jupyter.magics import MagicUsageError, edit_arguments
from grinta_jupyter.runtime.display import visible

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.stepper import Stepper
    from grinta_jupyter.config import Config, SessionOptions
    from grinta_jupyter.jupyter.panel import SessionPanel

# Updates after which the trace display (the saved output) is redrawn.
TRACE_CHANGES = (NeedsDecision, StepObserved, SessionEnded)

_current: NotebookSession | None = None


def current() -> Session | None:
    """The session the last ``%grinta`` started, or None."""
    return _current.session if _current is not None else None


def current_view() -> NotebookSession | None:
    return _current


class NotebookSession:
    """A session, its panel and trace display, and how it is driven in this kernel.

    One loop over ``session.updates()`` feeds the panel and the trace: a task on the
    kernel's event loop, or, in manual mode, a ``Stepper`` pulled by ``%grinta step``
    and by decisions (agent/stepper.py: one background loop, not one per step).
    """

    def __init__(self, session: Session, manual: bool, widgets: bool = True):
        self.session = session
        self.manual = manual
        self.task: asyncio.Task[None] | None = None
        self.stepper: Stepper | None = None
        self.panel: SessionPanel | None = None
        self.trace: Any = None
        if widgets:
            from grinta_jupyter.jupyter.panel import SessionPanel

            self.panel = SessionPanel(session, on_decision=self._after_decision)

    # -- display -----------------------------------------------------------------------

    def show(self) -> None:
        self.trace = _display(self.bundle(), display_id=True)

    def bundle(self) -> dict[str, Any]:
        """The panel while the session runs, with the trace as its fallbacks; the trace alone once it ends.

        Dropping the widget view at the end makes the saved output the trace (a
        widget view without a kernel shows nothing useful). Whether a front end
        applies this update to a cell that finished running varies (JupyterLab
        does until the page is reloaded; the grinta labextension does always;
        nbclient never), so ``%grinta log`` remains the portable way to keep it.
        """
        from grinta_jupyter.jupyter.mime import trace_bundle

        trace = trace_bundle(self.session)
        if self.panel is None or self.session.done:
            return trace
        view: dict[str, Any] = self.panel.widget._repr_mimebundle_()
        return {**trace, **view, "text/plain": trace["text/plain"]}

    def apply(self, update: Update) -> None:
        """Show one update: on the panel, and in the trace when a step or the session ends."""
        if self.panel is not None:
            self.panel.apply(update)
        if isinstance(update, TRACE_CHANGES) and self.trace is not None:
            self.trace.update(self.bundle(), raw=True)

    # -- driving ------------------------------------------------------------------------

    def start(self) -> None:
        loop = running_loop()
        if self.manual or loop is None:
            from grinta_jupyter.agent.stepper import Stepper

            self.manual = True
            self.stepper = Stepper(self.session)
            return
        self.task = loop.create_task(self._follow())

    async def _follow(self) -> None:
        async for update in self.session.updates():
            self.apply(update)

    def advance(self) -> list[int]:
        """Manual mode: step until something is to be shown; return the step numbers touched."""
        if self.stepper is None:
            return []
        touched: list[int] = []
        for update in self.stepper.advance():
            self.apply(update)
            step = getattr(update, "step", None)
            if step is not None and step.number not in touched:
                touched.append(step.number)
        return touched

    def _after_decision(self) -> None:
        if self.manual:
            self.advance()


def start(task: str, config: Config) -> Session:
    """Start a session on ``task`` as ``config`` says (the ``%grinta`` options over the environment).

    Everything that can be wrong with the configuration (toolset, root, a missing
    API key) raises MagicUsageError before anything starts, so the current session
    keeps running and no panel appears for a session that cannot work.
    """
    global _current
    from grinta_jupyter.agent.models import ModelError, configured_model
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.tools import TOOLSETS

    if config.toolset not in TOOLSETS:
        raise MagicUsageError(
            f"unknown toolset {config.toolset!r}; known: {', '.join(sorted(TOOLSETS))}"
        )
    try:
        model = configured_model(config, require_key=True)
    except ModelError as exc:
        raise MagicUsageError(f"{exc.code}: {exc.message}", usage=False) from None
    demo = model.name == "demo"
    if demo and config.origin("root") == "--root":
        raise MagicUsageError(
            "no model is configured, and the demo model only plays its scripted session on "
            "a copy of a bundled sample (raft_kv, or sales for a task about the sales notebook); "
            "drop --root, or set GRINTA_MODEL (or --model)"
        )
    if not demo:
        _check_root(config)
    root, sample = _workspace(config, demo, task)
    if _current is not None and not _current.session.done:
        _current.session.stop("replaced by a new session")
    try:
        options = config.session_options(root)
        session = Session(task, model=model, sample=sample, **_in_kernel(options, root))
    except OSError as exc:
        raise MagicUsageError(
            f"cannot work in {root}: {exc.strerror or exc}", usage=False
        ) from None
    view = NotebookSession(session, manual=config.manual)
    _current = view
    if sample:
        print(
            f"grinta: demo model on a copy of the {sample} sample in {root} "
            "(set GRINTA_MODEL to use a real model)"
        )
    view.show()
    _warm_symbols(session)
    view.start()
    if view.manual:
        print("manual mode: advance with %grinta step")
    return session


# What ``start`` and a session's first steps import, for ``warm_imports``.
START_MODULES = (
    "grinta_jupyter.agent.models",
    "grinta_jupyter.agent.session",
    "grinta_jupyter.agent.stepper",
    "grinta_jupyter.tools.kernel",
    "grinta_jupyter.jupyter.documents",
    "grinta_jupyter.jupyter.kernel",
    "grinta_jupyter.jupyter.panel",
    "grinta_jupyter.jupyter.mime",
    "grinta_jupyter.code.index",
    "IPython.display",
)


def warm_imports() -> None:
    """Import what ``start`` needs and build what a session's first model turn builds.

    The extension's warming thread calls it when the extension loads, so the first
    ``%grinta`` finds the modules imported, the tool schemas generated and the token
    encoding loaded (seconds otherwise, some of them on the kernel's event loop).
    Each part that fails is skipped: it fails again, with its error, when really needed.
    """
    for name in START_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for part in (_warm_schemas, _warm_tokens, _warm_parser):
        with contextlib.suppress(Exception):
            part()


def warm_model() -> None:
    """Import litellm and load what its first call loads (seconds), in the warming thread."""
    from grinta_jupyter.agent.models.litellm_model import warm

    with contextlib.suppress(Exception):
        warm()


def _warm_schemas() -> None:
    from grinta_jupyter.tools import execute, inspect, intent_toolset
    from grinta_jupyter.tools.base import compact_schema

    intent_toolset().schemas()
    compact_schema(inspect.InspectArgs)
    compact_schema(execute.ExecuteArgs)


def _warm_tokens() -> None:
    from grinta_jupyter.tools.tokens import count_tokens

    count_tokens("")


def _warm_parser() -> None:
    from grinta_jupyter.code.symbols import extract_symbols

    extract_symbols("warming.py", b"def f():\n    pass\n")


def _warm_symbols(session: Session) -> None:
    """Index the workspace in the background while the model thinks of its first call.

    Reading or editing a symbol needs the index; building it takes seconds on a large
    workspace. The index refreshes itself under its own lock, so a proposal that
    needs it meanwhile waits for this build instead of starting its own.
    """
    runtime = session.runtime

    def build() -> None:
        with contextlib.suppress(Exception):  # a proposal that needs the index reports it
            runtime.symbols  # noqa: B018  (building it is the point)

    threading.Thread(target=build, name="grinta-index", daemon=True).start()


def _in_kernel(options: SessionOptions, root: Path) -> dict[str, Any]:
    """The session's options inside a kernel (outside one, ``options`` unchanged).

    In a kernel the intent toolset gains ``inspect`` and ``execute`` on the user's
    variables, commits ask the open documents of the front end first (unsaved
    changes refuse them) and reload them after, and the cell running ``%grinta``
    is protected from the agent's edits (docs/notebook.md).
    """
    from IPython import get_ipython

    from grinta_jupyter.jupyter.documents import host_cell, kernel_documents
    from grinta_jupyter.jupyter.kernel import IPythonNamespace
    from grinta_jupyter.tools.kernel import kernel_toolset

    result: dict[str, Any] = dict(options)
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return result
    if options["toolset"] == "intent":
        result["toolset"] = kernel_toolset(IPythonNamespace(shell))
    result["documents"] = kernel_documents(root)
    host = host_cell()
    if host.notebook is not None and host.cell_id is not None:
        try:
            rel = host.notebook.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:  # the host notebook is outside the workspace
            return result
        result["settings"] = replace(
            options["settings"], protected_cells=(f"{rel}::cell:{host.cell_id}",)
        )
    return result


def command(name: str, rest: str) -> Any:
    view = _current
    if view is None:
        raise MagicUsageError("no session yet: start one with %grinta TASK")
    session = view.session
    if name == "status":
        print(status_line(session))
        return None
    if name == "log":
        show_log(session)
        return None
    if name == "metrics":
        from grinta_jupyter.events.metrics import measure

        print(visible(measure(session.log.events).table()))
        return None
    if name == "stop":
        session.stop("stopped by the user")
        print(status_line(session))
        return None
    if name == "undo":
        print(visible(session.undo().output))
        return None
    if name == "step":
        if not view.manual:
            print(
                status_line(session) + " (the session runs in the background; decisions drive it)"
            )
            return None
        _show_steps(session, view.advance())
        return None
    if session.pending is None:
        raise MagicUsageError(f"nothing is waiting for a decision ({status_line(session)})")
    step = session.pending
    if name == "edit":
        proposal = session.edit(edit_arguments(rest))
        view.advance()  # manual mode: the panel shows the new proposal
        _show_steps(session, [step.number])
        if not proposal.ok:
            print(
                "the edited call does not validate; edit again, approve to send the error to the model, "
                "or veto"
            )
        return None
    if name == "approve":
        session.decide(Approve())
    else:
        session.decide(Veto(rest or DEFAULT_VETO_REASON))
    if view.manual:
        view.advance()
        _show_steps(session, [step.number])
    return None


def status_line(session: Session) -> str:
    """One line on where the session is; what the model wrote in it is made ``visible``."""
    if session.done:
        line = (
            f"session {session.id}: ended ({session.end_reason}) after {len(session.steps)} steps"
        )
    elif session.waiting:
        p = session.pending.proposal  # type: ignore[union-attr]
        line = f"session {session.id}: step {session.pending.number} waits for you: {p.tool} {p.summary}"  # type: ignore[union-attr]
    else:
        line = f"session {session.id}: {session.state.value}, {len(session.steps)} steps so far"
    return visible(line, keep_newlines=False)


def show_log(session: Session) -> None:
    """Display every step and the session summary as persisted MIME bundles."""
    from grinta_jupyter.jupyter.mime import session_bundle, session_secrets, step_bundle

    for step in session.steps:
        _display(step_bundle(step, session.id, session_secrets(session)))
    _display(session_bundle(session))


def _show_steps(session: Session, numbers: list[int]) -> None:
    from grinta_jupyter.jupyter.mime import session_bundle, session_secrets, step_bundle

    for number in numbers:
        _display(step_bundle(session.steps[number - 1], session.id, session_secrets(session)))
    if session.done:
        _display(session_bundle(session))


def _check_root(config: Config) -> None:
    """MagicUsageError unless the workspace (--root, else $GRINTA_ROOT, else here) is a folder."""
    origin = config.origin("root")
    if origin == "--root":
        where, usage = f"--root {config.root}", True
    elif origin == "default":
        where, usage = "the current folder", False
    else:
        where, usage = f"{origin}={config.root}", False
    path = config.workspace
    if not path.exists():
        raise MagicUsageError(f"{where} does not exist", usage=usage)
    if not path.is_dir():
        raise MagicUsageError(f"{where} is not a folder", usage=usage)


def _workspace(config: Config, demo: bool, task: str) -> tuple[Path, str | None]:
    """The session's folder, and the sample it is a copy of (the demo's, in a fresh copy).

    The demo plays raft_kv, or the sales notebook for a task about it (``demo_sample``).
    """
    if demo:
        from grinta_jupyter.agent.models.demo import demo_sample

        sample = demo_sample(task)
        return demo_workspace(Path.cwd() / sample, sample), sample
    return config.workspace, None


DEMO_MARKER = ".grinta/demo-copy"


def demo_workspace(target: Path, sample: str = "raft_kv") -> Path:
    """A fresh copy of the bundled ``sample`` at ``target`` for the demo model.

    A folder we made earlier (it holds our marker file) is replaced by a fresh
    copy, so the demo always starts from the planted bug; any other folder
    of that name is left alone and the copy goes beside it.
    """
    import shutil

    from grinta_jupyter.samples.tasks import copy_workspace

    candidate = target
    number = 1
    while candidate.exists() and not (candidate / DEMO_MARKER).exists():
        number += 1
        candidate = target.with_name(f"{target.name}-{number}")
    if candidate.exists():
        shutil.rmtree(candidate)
    copy_workspace(sample, candidate)
    (candidate / DEMO_MARKER).parent.mkdir(exist_ok=True)
    (candidate / DEMO_MARKER).write_text(
        "made by grinta's demo; it is replaced by the next demo run\n"
    )
    return candidate


def _display(bundle: dict[str, Any], **options: Any) -> Any:
    """Display a raw MIME bundle (IPython's ``display`` has no type annotations)."""
    from IPython.display import display

    return display(bundle, raw=True, **options)  # type: ignore[no-untyped-call]
