"""What the magics do: create sessions, run them in the kernel, and show them.

One session is current at a time (``grinta_jupyter.current()``). A session
normally runs as an asyncio task on the kernel's event loop, so widget
clicks are handled while it works and other cells can still run; in
``--manual`` mode (or where no event loop runs, such as a terminal IPython)
it advances only when ``%grinta step`` (or a decision) asks it to.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grinta_jupyter.jupyter.magics import MagicUsageError, edit_arguments
from grinta_jupyter.runtime.display import visible

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session

_current: NotebookSession | None = None


def current() -> Session | None:
    """The session the last ``%grinta`` started, or None."""
    return _current.session if _current is not None else None


def current_view() -> NotebookSession | None:
    return _current


class NotebookSession:
    """A session, its panel and trace display, and how it is driven in this kernel."""

    def __init__(self, session: Session, manual: bool, widgets: bool = True):
        self.session = session
        self.manual = manual
        self.task: asyncio.Task[Any] | None = None
        self.panel = None
        self.trace = None
        if widgets:
            from grinta_jupyter.jupyter.panel import SessionPanel

            self.panel = SessionPanel(session, on_decision=self._after_decision)
        session.log.listeners.append(self._on_event)
        session.watchers.append(self._update_trace)

    # -- display -----------------------------------------------------------------------

    def show(self) -> None:
        from IPython.display import display

        self.trace = display(self.bundle(), raw=True, display_id=True)

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
        return {**trace, **self.panel.widget._repr_mimebundle_(), "text/plain": trace["text/plain"]}

    def _on_event(self, event: Any) -> None:
        if event.type in ("observation", "session_end"):
            self._update_trace()

    def _update_trace(self) -> None:
        if self.trace is not None:
            self.trace.update(self.bundle(), raw=True)

    # -- driving ------------------------------------------------------------------------

    def start(self) -> None:
        loop = _running_loop()
        if self.manual or loop is None:
            self.manual = True
            return
        self.task = loop.create_task(self.session.run())

    def advance(self) -> list[int]:
        """Manual mode: step until something new is to be shown; return the step numbers touched."""
        session = self.session
        before = {s.number: (s.observation is not None, s.decision, s.edits) for s in session.steps}
        touched: list[int] = []

        async def go() -> None:
            while not session.done:
                if session.waiting:
                    return
                step = await session.step()
                if step is not None and step.number not in touched:
                    touched.append(step.number)
                if step is not None and (step.observation is not None or session.waiting):
                    return

        run_coroutine(go())
        return [
            n
            for n in touched
            if before.get(n)
            != (
                session.steps[n - 1].observation is not None,
                session.steps[n - 1].decision,
                session.steps[n - 1].edits,
            )
        ] or touched

    def _after_decision(self) -> None:
        if self.manual:
            self.advance()


def start(options: Any) -> Session:
    """Start a session from parsed ``%grinta`` options.

    Everything that can be wrong with the options (toolset, root, a missing API
    key) raises MagicUsageError before anything starts, so the current session
    keeps running and no panel appears for a session that cannot work.
    """
    global _current
    from grinta_jupyter.agent import make_model
    from grinta_jupyter.agent.guards import Limits
    from grinta_jupyter.agent.models import ModelError
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.tools import TOOLSETS
    from grinta_jupyter.tools.base import Settings

    if options.toolset not in TOOLSETS:
        raise MagicUsageError(
            f"unknown toolset {options.toolset!r}; known: {', '.join(sorted(TOOLSETS))}"
        )
    try:
        model = make_model(options.model, require_key=True)
    except ModelError as exc:
        raise MagicUsageError(f"{exc.code}: {exc.message}", usage=False) from None
    demo = getattr(model, "name", "") == "demo"
    if demo and options.root:
        raise MagicUsageError(
            "no model is configured, and the demo model only plays its scripted session on "
            "a copy of the raft_kv sample; drop --root, or set GRINTA_MODEL (or --model)"
        )
    if not demo:
        _check_root(options.root)
    root, sample = _workspace(options.root, demo)
    protected = () if options.allow_notebooks else ("*.ipynb",)
    limits = Limits() if options.max_steps is None else Limits(max_steps=options.max_steps)
    if _current is not None and not _current.session.done:
        _current.session.stop("replaced by a new session")
    try:
        session = Session(
            options.task,
            model=model,
            root=root,
            toolset=options.toolset,
            policy="auto" if options.auto else "ask",
            limits=limits,
            sample=sample,
            settings=Settings(protected=protected),
        )
    except OSError as exc:
        raise MagicUsageError(
            f"cannot work in {root}: {exc.strerror or exc}", usage=False
        ) from None
    view = NotebookSession(session, manual=options.manual)
    _current = view
    if sample:
        print(
            f"grinta: demo model on a copy of the raft_kv sample in {root} "
            "(set GRINTA_MODEL to use a real model)"
        )
    view.show()
    view.start()
    if view.manual:
        print("manual mode: advance with %grinta step")
    return session


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
        from grinta_jupyter.events.metrics import format_summary, summarize

        print(visible(format_summary(summarize(session.log.events))))
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
        _show_steps(session, [step.number])
        if not proposal.ok:
            print(
                "the edited call does not validate; edit again, approve to send the error to the model, "
                "or veto"
            )
        return None
    if name == "approve":
        session.approve()
    else:
        session.veto(rest or "vetoed by the user")
    if view.manual:

        async def apply() -> None:
            await session.step()

        run_coroutine(apply())
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
    from IPython.display import display

    from grinta_jupyter.jupyter.mime import session_bundle, session_secrets, step_bundle

    for step in session.steps:
        display(step_bundle(step, session.id, session_secrets(session)), raw=True)
    display(session_bundle(session), raw=True)


def _show_steps(session: Session, numbers: list[int]) -> None:
    from IPython.display import display

    from grinta_jupyter.jupyter.mime import session_bundle, session_secrets, step_bundle

    for number in numbers:
        display(
            step_bundle(session.steps[number - 1], session.id, session_secrets(session)), raw=True
        )
    if session.done:
        display(session_bundle(session), raw=True)


def _check_root(root: str | None) -> None:
    """MagicUsageError unless the workspace (--root, else $GRINTA_ROOT, else here) is a folder."""
    if root is not None:
        where, usage = f"--root {root}", True
        path = Path(root).expanduser()
        if not root.strip():
            raise MagicUsageError("--root is empty; give a folder")
    else:
        env = os.environ.get("GRINTA_ROOT", ".")
        where, usage, path = f"GRINTA_ROOT={env}", False, Path(env).expanduser()
    if not path.exists():
        raise MagicUsageError(f"{where} does not exist", usage=usage)
    if not path.is_dir():
        raise MagicUsageError(f"{where} is not a folder", usage=usage)


def _workspace(root: str | None, demo: bool) -> tuple[Path, str | None]:
    if root:
        return Path(root).expanduser(), None
    if demo:
        return demo_workspace(Path.cwd() / "raft_kv"), "raft_kv"
    return Path(os.environ.get("GRINTA_ROOT", ".")), None


DEMO_MARKER = ".grinta/demo-copy"


def demo_workspace(target: Path) -> Path:
    """A fresh copy of the raft_kv sample at ``target`` for the demo model.

    A folder we made earlier (it holds our marker file) is replaced by a fresh
    copy, so the demo always starts from the failing test; any other folder
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
    copy_workspace("raft_kv", candidate)
    (candidate / DEMO_MARKER).parent.mkdir(exist_ok=True)
    (candidate / DEMO_MARKER).write_text(
        "made by grinta's demo; it is replaced by the next demo run\n"
    )
    return candidate


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to completion from a magic (the kernel's loop is busy with this cell)."""
    from grinta_jupyter.agent.blocking import run_blocking

    return run_blocking(coro)
