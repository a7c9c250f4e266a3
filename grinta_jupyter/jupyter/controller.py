"""What the magics do: create sessions, run them in the kernel, and show them.

One session is current at a time (``grinta_jupyter.current()``). A session
normally runs as an asyncio task on the kernel's event loop, so widget
clicks are handled while it works and other cells can still run; in
``--manual`` mode (or where no event loop runs, such as a terminal IPython)
it advances only when ``%grinta step`` (or a decision) asks it to.

Sessions last: ``%grinta say`` tells the running session something,
``%grinta continue`` gives an ended one its next task, ``%grinta rewind N``
undoes the commits after step N and goes on from there, and ``%grinta resume``
rebuilds a session from its log in a new kernel (the pending proposal is
staged again and asked again). A session given a next task or rewound after it
ended is shown again, panel and all, in the cell that asked, and driven again.
The saved trace's box gives the next task by the same path
(``continue_from_box``, called by ``jupyter/sessionlink.py``, which the
controller tells which session is current and whether it has ended). Asking
the wrong one (``say`` to an ended session, ``continue`` to a running one)
prints the one line that says which command fits; so does a refused rewind,
which changes nothing.

Models: ``start`` and ``resume`` take the model the panel's picker chose and the
key its field holds (``modelbar.configured``; jupyter/modelbar.py). A missing
key stops ``%grinta`` before anything starts: its one line, then the model bar
to type the key in. A session that ends on a model error says so on every model
bar, and a key error (missing, refused) also shows a bar under the trace, since
the panel, header and all, has become the trace. ``%grinta models`` shows the
bar alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import importlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from grinta_jupyter.agent.blocking import running_loop
from grinta_jupyter.agent.updates import (
    DEFAULT_VETO_REASON,
    Approve,
    ContextCondensed,
    ModelText,
    ModelTurn,
    NeedsDecision,
    Rewound,
    SessionEnded,
    SessionResumed,
    StepObserved,
    TaskBegan,
    Update,
    UserSaid,
    Veto,
)
from grinta_jupyter.jupyter.magics import MagicUsageError, edit_arguments
from grinta_jupyter.runtime.display import visible

if TYPE_CHECKING:
    from grinta_jupyter.agent.models import Model
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.stepper import Stepper
    from grinta_jupyter.config import Config, SessionOptions
    from grinta_jupyter.jupyter.panel import SessionPanel
    from grinta_jupyter.runtime.proposal import Proposal

# Updates after which the trace display (the saved output) is redrawn.
TRACE_CHANGES = (
    NeedsDecision,
    StepObserved,
    SessionEnded,
    UserSaid,
    TaskBegan,
    Rewound,
    ContextCondensed,
    SessionResumed,
)
# How long a message that arrived on another thread (a comm over a kernel subshell) waits
# for the session's own loop, held by a running cell, before it gives up.
LOOP_WAIT_S = 30.0
BUSY_HINT = (
    "the kernel is busy running a cell: nothing was given; send it again once the cell has finished"
)
T = TypeVar("T")
# The model's streamed text reaches the panel at most this often: one widget message per
# chunk (thousands a second from a fast provider) would pass jupyter_server's iopub limits,
# which then drop the kernel's output, a cell's too.
TEXT_EVERY_S = 0.1
SAY_HINT = "the session has ended: give it a next task with %grinta continue TASK"
CONTINUE_HINT = (
    "the session is still working on its task: tell it something with %grinta say TEXT, "
    "or end it with %grinta stop before giving it a next task"
)

_current: NotebookSession | None = None
# The view whose session's first model call goes out before litellm is loaded
# (agent/models/early.py): the extension's warming leaves litellm's import until that
# view has shown what the call brought (``grinta_jupyter.hold_model_warming``).
_early_view: NotebookSession | None = None
# What a first call brings before anything the reviewer sees: the warming waits past them.
_BEFORE_THE_FIRST_CARD = (ModelText, ModelTurn, TaskBegan, SessionResumed, UserSaid)


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
        self._stepped_to_end = False  # the stepper's stream yielded SessionEnded
        # The kernel's loop this view was made on (in a cell), which drives the session.
        self.loop = running_loop()
        self.panel: SessionPanel | None = None
        self.trace: Any = None
        # The model's text held back from the panel (``TEXT_EVERY_S``), and its flush.
        self._text_lock = threading.Lock()
        self._held_text: list[str] = []
        self._text_shown_at = 0.0
        self._text_flush: asyncio.TimerHandle | None = None
        if widgets:
            from grinta_jupyter.jupyter.panel import SessionPanel

            self.panel = SessionPanel(
                session, on_decision=self._after_decision, on_next_task=self.next_task
            )

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
        """Show one update: on the panel, and in the trace when a step or the session ends.

        The display is redrawn with the new trace before the panel shows the update. A
        redraw makes the front end build the panel's view anew, so what the update changes
        (a card that now waits, a new card) appears only in the view that stays: drawn in
        the old one, an instant before it goes, it could take a click that is then lost; and
        a front end that removes the panel's view while it still builds the view of a new
        child (a card, the summary) fails in ipywidgets' own code (a disposed box's
        ``widgets``). At the end the display becomes the trace alone.

        The model's streamed text goes to the panel at most every ``TEXT_EVERY_S``, the
        chunks between joined into one ``ModelText``; what is held is shown before any
        other update, so the panel sees everything, in order.
        """
        if isinstance(update, ModelText):
            self._hold_text(update.text)
            return
        self._flush_text()
        ended = isinstance(update, SessionEnded)
        if isinstance(update, TRACE_CHANGES) and self.trace is not None:
            self.trace.update(self.bundle(), raw=True)
        if self.panel is not None:
            self.panel.apply(update)
        if ended:
            self._model_problem()
        if _current is self:
            _announce()

    def _hold_text(self, text: str) -> None:
        """Keep ``text`` for the panel; show what is held now if the last showing is old
        enough, else once it is (a timer on the view's loop, when this runs there; elsewhere,
        as in manual mode, the next update or the end of ``advance`` shows it)."""
        if self.panel is None:
            return
        with self._text_lock:
            self._held_text.append(text)
            if self._text_flush is not None:
                return
            wait = self._text_shown_at + TEXT_EVERY_S - time.monotonic()
            loop = self.loop
            if wait > 0:
                if loop is not None and not self.manual and running_loop() is loop:
                    self._text_flush = loop.call_later(wait, self._flush_text)
                return
        self._flush_text()

    def _flush_text(self) -> None:
        """Show the held text on the panel, as one ``ModelText``."""
        with self._text_lock:
            if self._text_flush is not None:
                self._text_flush.cancel()
                self._text_flush = None
            if not self._held_text:
                return
            text = "".join(self._held_text)
            self._held_text.clear()
            self._text_shown_at = time.monotonic()
        if self.panel is not None:
            self.panel.apply(ModelText(text))

    def _model_problem(self) -> None:
        """The session ended on a model error: every model bar says it, with the fix; a key
        error also shows a bar under the trace, whose key field takes the fix at once (the
        panel, and its header, became the trace)."""
        from grinta_jupyter.agent.models.base import MODEL_ERROR_CODES
        from grinta_jupyter.events import models as ev
        from grinta_jupyter.jupyter import modelbar

        if self.session.end_reason != "error":
            return
        errors = [e for e in self.session.log.events if isinstance(e, ev.ErrorEvent)]
        if not errors or errors[-1].code not in MODEL_ERROR_CODES:
            return
        model = self.session.model
        modelbar.report_error(
            errors[-1].code,
            errors[-1].message,
            getattr(model, "name", None),
            getattr(model, "api_key", None),
        )
        if errors[-1].code in modelbar.KEY_ERRORS and self.trace is not None and _in_kernel_shell():
            _display_widget(modelbar.model_bar())

    # -- driving ------------------------------------------------------------------------

    def start(self) -> None:
        """Drive the session: a task on the kernel's loop, or a Stepper in manual mode.

        Called again when an ended session runs again (a next task, a rewind): the
        loop that followed it ended with its ``SessionEnded``, so a new one starts.
        """
        loop = running_loop()
        if self.manual or loop is None:
            from grinta_jupyter.agent.stepper import Stepper

            self.manual = True
            if self.stepper is None or self._stepped_to_end:  # its stream has ended
                self.stepper = Stepper(self.session)
                self._stepped_to_end = False
            return
        if not self.following:
            self.task = loop.create_task(self._follow())

    @property
    def following(self) -> bool:
        """Whether a loop follows the session's updates now (it shows what they say)."""
        return self.task is not None and not self.task.done()

    async def _follow(self) -> None:
        turns = 0
        try:
            async for update in self.session.updates():
                self.apply(update)
                turns += isinstance(update, ModelTurn)
                if not isinstance(update, _BEFORE_THE_FIRST_CARD) or turns > 1:
                    self._first_card_shown()
        finally:
            self._first_card_shown()

    def _first_card_shown(self) -> None:
        """Let the warming go on where it waits for this view's first card: the token
        encoding's load, and litellm's import if the first call went out without it."""
        global _early_view
        import grinta_jupyter

        grinta_jupyter.first_card_shown()
        if _early_view is self:
            from grinta_jupyter import release_model_warming

            _early_view = None
            release_model_warming()

    def next_task(self, task: str) -> None:
        """Give the ended session ``task`` (the panel's box); drive it.

        The display that shows the panel is redrawn with it (it had become the trace
        when the session ended). Raises what ``Session.continue_task`` raises, and
        RuntimeError when a cell holds the kernel's loop too long (``on_own_loop``).
        """

        def give() -> None:
            self.session.continue_task(task)
            self.reopened(TaskBegan(len(self.session.tasks), self.session.tasks[-1]))

        self.on_own_loop(give)

    def on_own_loop(self, work: Callable[[], T]) -> T:
        """Do ``work`` on the kernel loop this view was made on, and return what it returns.

        JupyterLab sends comm messages (widget clicks, the saved trace's box) over
        kernel subshells, each a thread with an event loop of its own: a session
        given its next task there would be driven on that loop, away from the cells
        and from the loop its documents and kernel tools were bound to. So the work
        goes to the view's loop, in the caller's context (a display it makes is a
        reply to the caller's message), and the caller's thread waits for it, at most
        ``LOOP_WAIT_S``: past that (a cell holds the loop), the work is dropped and
        RuntimeError says so. On the view's own loop, or with none, it runs at once.
        """
        loop = self.loop
        if loop is None or loop.is_closed() or running_loop() is loop:
            return work()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not done.set_running_or_notify_cancel():
                return  # the caller gave up waiting: nothing happens
            try:
                done.set_result(work())
            except BaseException as exc:
                done.set_exception(exc)

        loop.call_soon_threadsafe(run, context=contextvars.copy_context())
        try:
            return done.result(timeout=LOOP_WAIT_S)
        except concurrent.futures.TimeoutError:
            if done.cancel():
                raise RuntimeError(BUSY_HINT) from None
            return done.result()  # it started meanwhile: it is quick, wait for it

    def reopened(self, update: TaskBegan | Rewound) -> None:
        """The session runs again: show ``update`` (when no loop follows it, none saw it; the
        display is redrawn with it, the panel again) and drive the session."""
        if not self.following:
            self.apply(update)
        self.start()
        if _current is self:
            _announce()

    def retire(self) -> None:
        """Another session became current: this one's panel takes no more messages."""
        if self.panel is not None:
            self.panel.retire()

    def give_way(self, reason: str) -> None:
        """Another session became current: this one is retired, and stopped (``reason``)
        unless it has ended."""
        self.retire()
        if not self.session.done:
            self.stop(reason)

    def stop(self, reason: str) -> None:
        """End the session. In manual mode no loop follows it to bring its end to the panel
        and the trace: it is pulled here, or its cards would go on offering Approve, and its
        header "waiting for you", for a session that takes no more decisions."""
        self.session.stop(reason)
        if self.manual and self.session.done:
            self.advance()

    def advance(self) -> list[int]:
        """Manual mode: step until something is to be shown; return the step numbers touched."""
        if self.stepper is None:
            return []
        from grinta_jupyter.jupyter.documents import loop_held

        # On the kernel's loop (a cell, a click) this holds it until the step is done: the
        # open documents cannot be asked meanwhile, and a commit decides from the pushes.
        held = loop_held() if self.loop is not None and running_loop() is self.loop else None
        with held or contextlib.nullcontext():
            updates = self.stepper.advance()
        touched: list[int] = []
        for update in updates:
            self.apply(update)
            if isinstance(update, SessionEnded):
                self._stepped_to_end = True
            step = getattr(update, "step", None)
            if step is not None and step.number not in touched:
                touched.append(step.number)
        self._flush_text()
        return touched

    def _after_decision(self) -> None:
        if self.manual:
            self.advance()

    def panel_sync(self) -> None:
        """Manual mode: show on the panel the marks no update has brought yet (what was said
        meanwhile); the trace follows with the next update the stepper pulls."""
        if self.panel is not None:
            self.panel.sync_marks()


def start(task: str, config: Config) -> Session:
    """Start a session on ``task`` as ``config`` says (the ``%grinta`` options over the environment).

    Everything that can be wrong with the configuration (toolset, root, a missing
    API key) raises MagicUsageError before anything starts, so the current session
    keeps running and no panel appears for a session that cannot work.
    """
    global _current
    from grinta_jupyter.agent.session import Session, check_task
    from grinta_jupyter.jupyter import modelbar
    from grinta_jupyter.tools import TOOLSETS

    try:
        check_task(task)
    except ValueError as exc:
        raise MagicUsageError(str(exc), usage=False) from None
    if config.toolset not in TOOLSETS:
        raise MagicUsageError(
            f"unknown toolset {config.toolset!r}; known: {', '.join(sorted(TOOLSETS))}"
        )
    config = modelbar.configured(config)
    model = _model_or_fix(config)
    demo = model.name == "demo"
    if demo and config.origin("root") == "--root":
        raise MagicUsageError(
            "no model is configured, and the demo model only plays its scripted session on "
            "a copy of a bundled sample (raft_kv, or sales for a task about the sales notebook); "
            "drop --root, or set GRINTA_MODEL (or --model)"
        )
    if not demo:
        _check_root(config)
    try:
        root, sample = _workspace(config, demo, task)
    except OSError as exc:  # the demo's copy: a folder that cannot be written
        raise MagicUsageError(
            f"cannot copy the demo's sample into the current folder ({visible(str(Path.cwd()))}): "
            f"{exc.strerror or exc}; the demo works on a copy next to the notebook, so open "
            "the notebook from a folder you can write to (or %cd to one first)",
            usage=False,
        ) from None
    try:
        options = config.session_options(root)
        session = Session(task, model=model, sample=sample, **_in_kernel(options, root))
    except OSError as exc:
        raise MagicUsageError(
            f"cannot work in {root}: {exc.strerror or exc}", usage=False
        ) from None
    # Only now that the new session exists: one that cannot start leaves the current one alone.
    if _current is not None:
        _current.give_way("replaced by a new session")
    modelbar.clear_problem()
    view = NotebookSession(session, manual=config.manual)
    _current = view
    if sample:
        print(
            f"grinta: demo model on a copy of the {sample} sample in {root} "
            "(set GRINTA_MODEL to use a real model)"
        )
    _print_rules(session)
    view.show()
    _warm_symbols(session)
    view.start()
    _hold_for_first_call(view)
    _announce()
    if view.manual:
        print("manual mode: advance with %grinta step")
    return session


def _model_or_fix(config: Config) -> Model:
    """The model ``config`` names (the picker's and the key field's included), else the demo.

    A missing key raises MagicUsageError: its one line names the variable to set, and
    a model bar with the key field follows it, so the key can be typed there at once.
    """
    from grinta_jupyter.agent.models import ModelError, configured_model
    from grinta_jupyter.jupyter import modelbar

    try:
        return configured_model(config, require_key=True)
    except ModelError as exc:
        line = modelbar.report_error(exc.code, exc.message, config.model)
        key_error = exc.code in modelbar.KEY_ERRORS and _in_kernel_shell()
        raise MagicUsageError(line, usage=False, after=show_models if key_error else None) from None


def show_models() -> None:
    """``%grinta models``: the model picker and key field, without a session (a notebook's
    widgets need a kernel: a terminal IPython is pointed at ``grinta models``)."""
    from grinta_jupyter.jupyter import modelbar

    if not _in_kernel_shell():
        print("%grinta models shows the model picker in a notebook; here, run: grinta models")
        return
    running = _current.session.model.name if _current and not _current.session.done else ""
    _display_widget(modelbar.model_bar(running=running))


def _in_kernel_shell() -> bool:
    """Whether this runs in a kernel, whose front end can show widgets."""
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


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
    ``%grinta`` finds the modules imported and the tool schemas generated (seconds
    otherwise, some of them on the kernel's event loop). The token encoding is left to
    ``warm_tokens``: meanwhile the counting helper the warming started counts.
    Each part that fails is skipped: it fails again, with its error, when really needed.
    """
    for name in START_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for part in (_warm_schemas, _warm_parser):
        with contextlib.suppress(Exception):
            part()


def model_configured() -> bool:
    """Whether the environment names a model litellm calls (not the demo): the warming
    imports litellm only then. A demo kernel is spared its import (4-5 s of processor
    and 210 MB): a model chosen later in the picker warms it then (``want_model``), and
    one named only by ``%grinta --model`` loads it on its first call, as the CLI does.
    A configuration that cannot be read is taken to name one (the warming did then)."""
    try:
        from grinta_jupyter.agent.models.demo import DEMO_NAME
        from grinta_jupyter.config import Config

        model = Config.from_env(os.environ).model
    except Exception:
        return True
    return bool(model and model.strip() and model.strip() != DEMO_NAME)


def plan_model_import() -> None:
    """Say that the warming imports litellm soon: an early first call starts no import."""
    with contextlib.suppress(Exception):
        from grinta_jupyter.agent.models.litellm_model import plan_import

        plan_import()


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


def warm_tokens() -> None:
    """Load the token encoding in this process (0.5-0.7 s of the interpreter's lock); the
    counting helper then stops (tools/tokens.py)."""
    from grinta_jupyter.tools import tokens

    with contextlib.suppress(Exception):
        tokens.load()


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
    # The model's first answer needs litellm, which the warming may still be importing:
    # an index built meanwhile (worker processes, the kernel's own thread) would slow
    # the import down on a small machine, and the first card with it. A first call that
    # goes out without litellm comes back at once from a local server: the whole index
    # built meanwhile would keep its first symbol waiting, where a cold lookup parses only
    # the files holding the name (code/index.py); it is built once that card is shown.
    early = _calls_early(session)
    wait_for_litellm = _uses_litellm(session) and not early

    def build() -> None:
        from grinta_jupyter import settle_first_card, settle_warming

        if wait_for_litellm:
            settle_warming()
        elif early:
            settle_first_card()
        with contextlib.suppress(Exception):  # a proposal that needs the index reports it
            runtime.symbols  # noqa: B018  (building it is the point)

    threading.Thread(target=build, name="grinta-index", daemon=True).start()


def first_call_early() -> bool:
    """Whether the last session started makes its first call before litellm is loaded, and
    the warming should wait to import litellm until that call is over."""
    return _early_view is not None


def _hold_for_first_call(view: NotebookSession) -> None:
    global _early_view
    _early_view = view if view.following and _calls_early(view.session) else None


def _calls_early(session: Session) -> bool:
    from grinta_jupyter.agent.models.litellm_model import LiteLLMModel

    return isinstance(session.model, LiteLLMModel) and session.model.calls_early()


def _uses_litellm(session: Session) -> bool:
    from grinta_jupyter.agent.models.litellm_model import LiteLLMModel

    return isinstance(session.model, LiteLLMModel)


def _in_kernel(options: SessionOptions, root: Path) -> dict[str, Any]:
    """The session's options inside a kernel (outside one, ``options`` unchanged).

    In a kernel the intent toolset gains ``inspect`` and ``execute`` on the user's
    variables, commits ask the open documents of the front end first (unsaved
    changes refuse them) and reload them after, and the cell running ``%grinta``
    is protected from the agent's edits (docs/notebook.md).
    """
    from IPython import get_ipython

    from grinta_jupyter.jupyter.documents import kernel_documents
    from grinta_jupyter.jupyter.kernel import IPythonNamespace
    from grinta_jupyter.tools.kernel import kernel_toolset

    result: dict[str, Any] = dict(options)
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return result
    if options["toolset"] == "intent":
        result["toolset"] = kernel_toolset(IPythonNamespace(shell))
    result["documents"] = kernel_documents(root)
    cells = _host_cell_addresses(root)
    if cells:
        result["settings"] = replace(options["settings"], protected_cells=cells)
    return result


def _host_cell_addresses(root: Path) -> tuple[str, ...]:
    """The addresses of the cell running this magic, when it is a cell of a notebook in the
    workspace: by id, and by source (a notebook saved without ids knows the cell by it)."""
    from grinta_jupyter.jupyter.documents import host_cell
    from grinta_jupyter.runtime.notebook_checks import source_digest

    host = host_cell()
    if host.notebook is None or host.cell_id is None:
        return ()
    try:
        rel = host.notebook.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:  # the host notebook is outside the workspace
        return ()
    cells = [f"{rel}::cell:{host.cell_id}"]
    if host.code is not None:
        cells.append(f"{rel}::code:{source_digest(host.code)}")
    return tuple(cells)


def _protect_this_cell(session: Session) -> None:
    """The cell the panel is shown in again (``continue``, ``rewind`` after the end) runs the
    session now: protect it from the agent's edits too, as the first ``%grinta`` cell is."""
    runtime = session.runtime
    added = [
        a
        for a in _host_cell_addresses(runtime.workspace.root)
        if a not in runtime.settings.protected_cells
    ]
    if added:
        runtime.settings = replace(
            runtime.settings, protected_cells=(*runtime.settings.protected_cells, *added)
        )


def command(name: str, rest: str) -> Any:
    view = _current
    if view is None:
        raise MagicUsageError(
            "no session yet: start one with %grinta TASK, or %grinta resume a session "
            "this workspace ran before",
            usage=False,
        )
    session = view.session
    if name == "say":
        say(view, rest)
        return None
    if name == "continue":
        continue_task(view, rest)
        return None
    if name == "rewind":
        rewind(view, rest)
        return None
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
        view.stop("stopped by the user")
        _announce()
        print(status_line(session))
        return None
    if name == "undo":
        undo(session)
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
    try:
        decided = _decide(session, name, rest)
    except RuntimeError as exc:  # decided meanwhile (the Python API, a card), or moved on
        raise MagicUsageError(visible(str(exc), keep_newlines=False), usage=False) from None
    if name == "edit":
        proposal = decided
        assert proposal is not None
        view.advance()  # manual mode: the panel shows the new proposal
        _show_steps(session, [step.number])
        if not proposal.ok:
            print(
                "the edited call does not validate; edit again, approve to send the error to the model, "
                "or veto"
            )
        return None
    if view.manual:
        view.advance()
        _show_steps(session, [step.number])
    return None


def undo(session: Session) -> None:
    """``%grinta undo``: the session's last commit restored, or why not, in one line.

    A log that cannot take the undo (another session object holds it: the session resumed
    in another kernel; a log that failed) refuses it with nothing restored: said as the
    refusal it is, not as a traceback.
    """
    from grinta_jupyter.events.log import LogError

    try:
        obs = session.undo()
    except LogError as exc:
        raise MagicUsageError(
            visible(f"not undone: {exc}", keep_newlines=False), usage=False
        ) from None
    print(visible(obs.output))


def _decide(session: Session, name: str, rest: str) -> Proposal | None:
    """``%grinta approve | veto REASON | edit JSON`` given to the pending step."""
    if name == "edit":
        return session.edit(edit_arguments(rest))
    if name == "approve":  # "%grinta approve 3": step 3 only, so a cell run again (Run All)
        # cannot approve a later proposal nobody has seen
        return session.decide(Approve(), int(rest) if rest else None)
    return session.decide(Veto(rest or DEFAULT_VETO_REASON))


def say(view: NotebookSession, text: str) -> None:
    """``%grinta say TEXT``: the model reads it at its next turn; a pending proposal waits on."""
    session = view.session
    if not text.strip():
        raise MagicUsageError("say takes what to tell the model, e.g. %grinta say use pathlib")
    if session.done:
        raise MagicUsageError(SAY_HINT, usage=False)
    try:
        session.say(text)
    except RuntimeError:  # it ended between the check and the call
        raise MagicUsageError(SAY_HINT, usage=False) from None
    if view.manual:
        view.panel_sync()
    waits = " (the pending step still waits for you)" if session.waiting else ""
    print(f"said: the model reads it at its next turn{waits}")


def continue_task(view: NotebookSession, task: str) -> None:
    """``%grinta continue TASK``: the ended session's next task, shown and driven in this cell."""
    session = view.session
    if not task.strip():
        raise MagicUsageError("continue takes the next task, e.g. %grinta continue add a test")
    if not session.done:
        raise MagicUsageError(CONTINUE_HINT, usage=False)
    try:
        session.continue_task(task)
    except RuntimeError:
        raise MagicUsageError(CONTINUE_HINT, usage=False) from None
    except ValueError as exc:  # a task over the session's bound
        raise MagicUsageError(str(exc), usage=False) from None
    except OSError as exc:
        raise MagicUsageError(f"cannot go on: {exc.strerror or exc}", usage=False) from None
    _protect_this_cell(session)
    view.show()  # the panel, here: the cell the next task was given in
    view.reopened(TaskBegan(len(session.tasks), session.tasks[-1]))
    if view.manual:
        print("manual mode: advance with %grinta step")


def continue_from_box(session_id: str, task: str) -> str | None:
    """The next task from a saved trace's box (``jupyter/sessionlink.py``): ``%grinta continue``.

    The panel is displayed again as ``%grinta continue`` displays it; from the box's
    message, that display has no cell, and the page puts it in the output of the card
    that asked. Returns None when the task was given, else why not (one line), and then
    nothing changed: the box hands the text back.
    """
    view = _current
    if view is None or view.session.id != session_id:
        return "this session is not the current one in this kernel: nothing was sent"
    try:
        view.on_own_loop(lambda: continue_task(view, task))
    except (MagicUsageError, RuntimeError) as exc:
        return visible(str(exc), keep_newlines=False)
    return None


def _announce() -> None:
    """Tell the pages' saved cards (``jupyter/sessionlink.py``) which session is current now,
    and whether it has ended: its trace's box offers a next task only then."""
    from grinta_jupyter.jupyter import sessionlink

    view = _current
    if view is None:
        sessionlink.announce(None)
    else:
        sessionlink.announce(view.session.id, "ended" if view.session.done else "running")


def rewind(view: NotebookSession, text: str) -> None:
    """``%grinta rewind N``: undo the commits after step N, then go on from step N.

    A refusal (a file changed outside the session since, a commit running, no such
    step) is its one line, and nothing changed.
    """
    from grinta_jupyter.agent.session import RewindError
    from grinta_jupyter.events.log import LogError

    word = text.strip()
    # Digits only: int() also takes "1_0", "+1" and other scripts' digits, and a typo read
    # as another step would undo the wrong commits.
    if not (word.isascii() and word.isdigit()):
        raise MagicUsageError(f"rewind takes a step number, e.g. %grinta rewind 3 (got {word!r})")
    number = int(word)
    session = view.session
    was_done = session.done
    try:
        update = session.rewind(number)
    except (RewindError, LogError) as exc:  # LogError: another session holds its log now
        raise MagicUsageError(f"not rewound: {exc}", usage=False) from None
    print(visible(rewind_line(update), keep_newlines=False))
    if was_done:
        _protect_this_cell(session)
        view.show()  # an ended session's panel had become its trace: here it is again
    view.reopened(update)
    if view.manual:
        print("manual mode: advance with %grinta step")


def rewind_line(update: Rewound) -> str:
    undone = len(update.undone)
    line = (
        f"rewound to step {update.to_step}: {undone} commit{'' if undone == 1 else 's'} "
        f"undone; the session goes on from there as branch {update.branch}"
    )
    from grinta_jupyter.agent.history import split_not_undone  # with the session, not at load

    kept, ran = split_not_undone(update.not_undone)
    if ran:
        line += f" (not undone, they ran: {'; '.join(ran)})"
    if kept:
        line += f" (left as found: {'; '.join(kept)})"
    return line


def resume(log: str | None, config: Config) -> Session:
    """``%grinta resume [LOG]``: the session of ``log`` (else the workspace's most recent
    unfinished one), rebuilt in this kernel, shown and driven.

    The proposal that waited when the kernel stopped is staged again against the files
    as they are now and asked again (a stale one says what changed). Everything that
    can be wrong (no log, a model that cannot run it) raises MagicUsageError first.
    """
    global _current
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.events import models as ev
    from grinta_jupyter.events.log import LogError, read_events
    from grinta_jupyter.jupyter import modelbar

    refused = config.kept_options("resumed", "")  # were dropped without a word
    if refused is not None:
        raise MagicUsageError(refused, usage=False)
    path = _log_to_resume(log, config)
    try:
        events = read_events(path)
    except (OSError, ValueError, LogError) as exc:
        raise MagicUsageError(f"cannot read {path}: {exc}", usage=False) from None
    start = next((e for e in events if isinstance(e, ev.SessionStart)), None)
    if start is None:
        raise MagicUsageError(f"{path} is not a grinta session log", usage=False)
    config = modelbar.configured(config)
    model = _model_or_fix(config)
    ran_with = start.model
    if model.name == "demo" and ran_with != "demo":
        raise MagicUsageError(
            f"this session ran with {ran_with}; no model is configured to go on with it: "
            "set GRINTA_MODEL (or give --model)",
            usage=False,
        )
    if _current is not None and _current.session.id == start.session and not _current.session.done:
        raise MagicUsageError(
            f"session {start.session} is running in this kernel; it needs no resume",
            usage=False,
        )
    root = config.workspace if config.origin("root") == "--root" else Path(start.root)
    if config.origin("root") != "--root" and not _names_its_root(path, root, config):
        # As the terminal: a log copied or moved elsewhere does not choose where to write.
        raise MagicUsageError(
            f"cannot resume {path}: it is not in the sessions folder of the workspace it "
            f"names ({start.root or 'none'}), nor one of yours in the log folder; give --root "
            "to say where it goes on",
            usage=False,
        )
    try:
        _check_root(config, None if config.origin("root") == "--root" else root)
    except MagicUsageError as exc:  # said as every other reason a log cannot be resumed
        raise MagicUsageError(f"cannot resume {path}: {exc}", usage=exc.usage) from None
    options = _in_kernel(config.session_options(root), root)
    try:
        session = Session.resume(
            path,
            model=model,
            policy=config.policy,
            root=root,
            # The kernel's tools again for a session that had them; else the log's toolset.
            toolset=None
            if isinstance(options["toolset"], str) or start.toolset != "kernel"
            else options["toolset"],
            documents=options.get("documents"),
            settings=options["settings"],
        )
    except (OSError, ValueError, LogError) as exc:
        raise MagicUsageError(f"cannot resume {path}: {exc}", usage=False) from None
    # Only now that it is rebuilt: a log that cannot be resumed leaves the current one alone.
    if _current is not None:
        _current.give_way("replaced by a resumed session")
    view = NotebookSession(session, manual=config.manual)
    _current = view
    print(visible(resumed_line(session, path), keep_newlines=False))
    for note in config.kept_limits(session.limits):  # the environment's, not taken
        print(visible(note, keep_newlines=False))
    _print_rules(session)
    view.show()
    _warm_symbols(session)
    if not session.done:
        view.start()
        _hold_for_first_call(view)
        if view.manual:
            print("manual mode: advance with %grinta step")
    _announce()
    return session


def resumed_line(session: Session, path: Path) -> str:
    queued = len(session.queue)
    state = (
        f"ended ({session.end_reason}): give it a next task with %grinta continue TASK"
        if session.done
        else (
            f"{queued} call{'' if queued == 1 else 's'} without an outcome will be asked again"
            if queued
            else "it goes on from there"
        )
    )
    return f"resumed session {session.id} from {path}: {len(session.steps)} steps done; {state}"


def _log_to_resume(log: str | None, config: Config) -> Path:
    """The log ``%grinta resume`` means: the path given (or a session id of the workspace,
    of the demo's copies or in the configured log folder), else the most recent unfinished
    session of those workspaces."""
    from grinta_jupyter.agent.history import latest_unfinished, owned

    roots = _resume_roots(config)
    sessions = config.workspace / ".grinta" / "sessions"
    log_dir = Path(config.log_dir).expanduser() if config.log_dir else None
    if log:
        folders = [root / ".grinta" / "sessions" for root in roots] + ([log_dir] if log_dir else [])
        candidates = [Path(log).expanduser()]
        if "/" not in log and log not in (".", ".."):  # a session id, not a path
            candidates += [folder / name for folder in folders for name in (log, f"{log}.jsonl")]
        for candidate in candidates:
            # An id found in a shared log folder must be this user's own file.
            theirs = log_dir is not None and candidate.parent == log_dir and not owned(candidate)
            if candidate.is_file() and not theirs:
                return candidate
        where = ", ".join(map(str, folders))
        raise MagicUsageError(f"no session log {log} (nor in {where})", usage=False)
    found = [path for root in roots if (path := latest_unfinished(root, log_dir)) is not None]
    if not found:
        raise MagicUsageError(
            f"no unfinished session in {sessions}: name one, %grinta resume LOG",
            usage=False,
        )
    return max(found, key=_mtime)


def _names_its_root(log: Path, root: Path, config: Config) -> bool:
    """Whether ``log`` may name the workspace a resumed session goes on in: it lies in that
    workspace's ``.grinta/sessions``, or is this user's own file in the configured log
    folder (``GRINTA_LOG_DIR``)."""
    from grinta_jupyter.agent.history import owned

    if not root.is_absolute():
        return False  # a relative root names no workspace
    try:
        parent = log.resolve().parent
        if parent == (root / ".grinta" / "sessions").resolve():
            return True
        if config.log_dir and owned(log):
            return parent == Path(config.log_dir).expanduser().resolve()
    except OSError:
        pass
    return False


def _resume_roots(config: Config) -> list[Path]:
    """Where ``%grinta resume`` looks: the workspace, and, unless --root named one, the
    demo's copies of the samples in the current folder (bounded: the first few hundred
    entries)."""
    roots = [config.workspace]
    if config.origin("root") != "default":
        return roots
    import itertools

    with contextlib.suppress(OSError):
        for entry in itertools.islice(Path.cwd().iterdir(), 500):
            if (entry / DEMO_MARKER).is_file():
                roots.append(entry)
    return roots


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _print_rules(session: Session) -> None:
    """Say which rules files went into the system prompt (when any did)."""
    from grinta_jupyter.jupyter.mime import rules_line

    if session.rules:
        rules = [
            {"path": r.path, "chars": r.chars, "truncated": r.truncated} for r in session.rules
        ]
        print(visible(f"grinta: rules files loaded: {rules_line(rules)}", keep_newlines=False))


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
        _display(step_bundle(step, session.id, session_secrets(session), live=not session.done))
    _display(session_bundle(session))


def _show_steps(session: Session, numbers: list[int]) -> None:
    from grinta_jupyter.jupyter.mime import session_bundle, session_secrets, step_bundle

    for number in numbers:
        _display(
            step_bundle(session.steps[number - 1], session.id, session_secrets(session), live=True)
        )
    if session.done:
        _display(session_bundle(session))


def _check_root(config: Config, path: Path | None = None) -> None:
    """MagicUsageError unless the workspace (``path``, else --root, else $GRINTA_ROOT, else
    here) can hold a session: a folder, not the file system's root, with a ``.grinta`` grinta
    can write (``root_problem``; a ``.grinta`` file started a session that ended at once)."""
    from grinta_jupyter.runtime.workspace import root_problem

    origin = config.origin("root")
    if path is not None:
        where, usage = f"the session's workspace {path}", False
    elif origin == "--root":
        where, usage = f"--root {config.root}", True
    elif origin == "default":
        where, usage = "the current folder", False
    else:
        where, usage = f"{origin}={config.root}", False
    problem = root_problem(config.workspace if path is None else path, where)
    if problem is not None:
        # Only a path that is not a folder is a mistake in the line's options.
        usage = usage and problem in (f"{where} does not exist", f"{where} is not a folder")
        raise MagicUsageError(problem, usage=usage)


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
    of that name, or a copy a live session still works in (this kernel's, before
    the new session replaces it, or another notebook's), is left alone and the copy
    goes beside it. Replacing a live one deleted its open log and its files under it.
    """
    import shutil

    from grinta_jupyter.samples.tasks import copy_workspace

    candidate = target
    number = 1
    while candidate.exists() and (
        not (candidate / DEMO_MARKER).exists() or _live_session_in(candidate)
    ):
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


def _live_session_in(folder: Path, most: int = 200) -> bool:
    """Whether a live session (of any process) writes a log in ``folder``'s ``.grinta``: a
    live session holds an exclusive ``flock`` on its log (events/log.py); an ended one
    does not. Past ``most`` logs, or when the folder cannot be read, it counts as live."""
    import fcntl
    import itertools

    sessions = folder / ".grinta" / "sessions"
    try:
        with os.scandir(sessions) as listing:
            logs = list(itertools.islice(listing, most + 1))
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if len(logs) > most:
        return True
    for entry in logs:
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # a link, a FIFO that went: not a log a session holds
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            pass  # a file system without locks: nothing to learn
        finally:
            os.close(fd)  # also releases the probe's lock
    return False


def _display_widget(widget: Any) -> None:
    from IPython.display import display

    display(widget)  # type: ignore[no-untyped-call]


def _display(bundle: dict[str, Any], **options: Any) -> Any:
    """Display a raw MIME bundle (IPython's ``display`` has no type annotations)."""
    from IPython.display import display

    return display(bundle, raw=True, **options)  # type: ignore[no-untyped-call]
