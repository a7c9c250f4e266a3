"""The agent session: one step state machine driven by any front end.

    THINKING --model reply--> PROPOSED --approve--> COMMITTED --> OBSERVED --> THINKING
                                  |--edit args--> (re-resolve, re-stage, re-validate) PROPOSED
                                  |--veto(reason)--> OBSERVED (the reason goes back to the model)
                                  |--invalid--> OBSERVED (structured error goes back to the model)
    finish --> FINISH_CHECK --accepted--> DONE   (premature finish goes back to the model)

One way out, one way in: ``session.updates()`` drives the session and yields
typed updates (agent/updates.py) as they happen; ``session.decide(...)``
answers a proposal that waits (``Approve()``, ``Edit(arguments)``,
``Veto(reason)``, ``ApproveHunks([...])``). ``await session.run()`` is that
loop with nobody watching; ``Stepper`` (agent/stepper.py) pulls the same
stream from synchronous code. The CLI, the notebook panel, the magics, the
replayer and the experiment runner are all loops over this stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import stat
import threading
import time
import tokenize
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import aclosing
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from grinta_jupyter.agent.blocking import running_loop
from grinta_jupyter.agent.condense import condense_with_model, request_budget, tokens_after
from grinta_jupyter.agent.context import Context, one_line, veto_text
from grinta_jupyter.agent.guards import (
    Budgets,
    EndReason,
    Firing,
    Guards,
    Limits,
    ending,
    test_file_name,
)
from grinta_jupyter.agent.history import (
    KEPT_CHANGE,
    ContextFeed,
    Rebuilt,
    branch_events,
    branches,
    check_sequence,
    kept_changes,
    limits_from,
    rebuild,
    recorded_proposal,
    setting,
)
from grinta_jupyter.agent.models.base import (
    Model,
    ModelError,
    ModelReply,
    ToolCall,
    Usage,
    parsed_arguments,
)
from grinta_jupyter.agent.partial import (
    CLOCK_SLACK,
    accepted_part,
    declined_note,
    declined_text,
    hunk_decisions,
    not_landed,
)
from grinta_jupyter.agent.recorder import proposal_events, reply_event, target_of
from grinta_jupyter.agent.rules import MAX_TOTAL_TOKENS as MAX_RULES_TOKENS
from grinta_jupyter.agent.rules import load_rules
from grinta_jupyter.agent.step import (
    Policy,
    PolicyError,
    State,
    Step,
    Totals,
    policy_verdict,
)
from grinta_jupyter.agent.stream import Listener, Listeners, update_for
from grinta_jupyter.agent.updates import (
    DEFAULT_VETO_REASON,
    Approve,
    ApproveHunks,
    Decision,
    Edit,
    ModelText,
    NeedsDecision,
    Rewound,
    SessionEnded,
    Undone,
    Update,
    Veto,
)
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import EventLog, LogError, claim, read_log
from grinta_jupyter.events.snapshots import SnapshotStore
from grinta_jupyter.runtime.documents import OpenDocuments
from grinta_jupyter.runtime.errors import (
    COMMIT_GONE,
    INTERNAL_ERROR,
    INVALID_ARGS,
    STALE_FILE,
    ToolError,
    ToolFailure,
)
from grinta_jupyter.runtime.files import read_regular
from grinta_jupyter.runtime.proposal import (
    FinishProposal,
    Observation,
    Proposal,
    ReadProposal,
    WriteProposal,
)
from grinta_jupyter.runtime.secrets import REDACTED, Secrets
from grinta_jupyter.runtime.textfile import sha256
from grinta_jupyter.tools import TOOLSETS
from grinta_jupyter.tools.base import Settings, Toolset
from grinta_jupyter.tools.facade import Runtime
from grinta_jupyter.tools.tokens import schema_json_tokens

SNAPSHOT_READ_BYTES = 8 * 1024 * 1024  # a file read for its snapshot (the tools' own cap)
# Files the finish guard reads from disk: at most this many holding failing tests (read
# after the test runs that show them failing, and at a finish; thousands failing is rare).
MAX_FAILING_FILES = 50
MAX_FOUND_FILES = 2_000  # test files made since, read at a finish for a test gone from its own


class RewindError(ValueError):
    """A rewind that was refused; nothing changed. The message is one line for a person."""


class Session:
    """A coding task worked on by a model through the runtime, one gated step at a time."""

    def __init__(
        self,
        task: str,
        *,
        model: Model,
        root: str | os.PathLike[str],
        toolset: str | Toolset = "intent",
        policy: Policy = "ask",
        limits: Limits | None = None,
        keep_observations: int = 5,
        log_dir: str | Path | None = None,
        sample: str | None = None,
        session_id: str | None = None,
        settings: Settings | None = None,
        documents: OpenDocuments | None = None,
        _resume: tuple[Path, list[ev.Event], IO[str]] | None = None,
    ):
        if not (policy in ("ask", "auto") or callable(policy)):
            raise PolicyError(f"policy must be 'ask', 'auto' or a callable, not {policy!r}")
        if _resume is None:  # before anything is made on disk
            check_task(task)
        self.task = task
        self.model = model
        self.runtime = Runtime(root, toolset, settings, documents)
        self.root = self.runtime.root
        self.policy: Policy = policy
        self.limits = limits or Limits()
        self.id = session_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        log_path = (
            Path(log_dir) / f"{self.id}.jsonl"
            if log_dir
            else self.root / ".grinta" / "sessions" / f"{self.id}.jsonl"
        )
        if _resume is not None:
            log_path = _resume[0]
        # The model's own key is a secret even when it came from code, not from the environment.
        self.secrets = Secrets.from_env(extra=[getattr(model, "api_key", None)])
        self.log = EventLog(
            log_path,
            self.id,
            self.secrets,
            _resume[1] if _resume else None,
            claimed=_resume[2] if _resume else None,
        )
        self.budget = request_budget(self.limits, model)  # tokens each request stays under
        # The rules are in every request and never condensed: at most a quarter of it.
        rules = load_rules(
            self.root, self.secrets, max_tokens=min(MAX_RULES_TOKENS, self.budget // 4)
        )
        self.rules = rules.files  # the project's rules files in the system prompt
        self._rules_text = rules.text
        self.context = Context.start(
            str(self.root), task, keep_observations, self.secrets, rules=rules.text
        )
        self._feed = ContextFeed(self.context)  # the context grows only from events
        self.tasks = [task]  # this session's tasks, in order (``continue_task`` adds one)
        self.branch = 0  # a rewind starts a new branch
        self._task_first_step = 0  # steps taken before the current task began
        self._task_tokens = 0  # tokens spent before the current task began
        self._generation = 0  # bumped by a rewind: work begun before it is dropped
        # Held while an event is logged and applied to the context, and while a decision is
        # checked against the pending step: both happen from any thread.
        self._lock = threading.RLock()
        self._snapshots = SnapshotStore(self.root)
        self._snapshotted: set[str] = set()  # paths whose starting state is recorded
        self._restaging: dict[str, ev.DiffStaged | None] = {}  # resumed calls, by call id
        # Resumed calls approved in part whose commit did not land: why a person decides again.
        self._partly_approved: dict[str, str] = {}
        # Resumed calls the user had edited: an edit that does not validate waits, as live.
        self._edited: set[str] = set()
        # The source files' state after the last test run (Workspace.source_state): a finish
        # compares it with the files as they are, so a write no tool call shows (a script, a
        # function run in the kernel, an editor) needs the tests again. None: not taken (no
        # test run yet, a resumed session until its next one, too many files).
        self._tested_files: dict[str, tuple[int, int, int]] | None = None
        self.state = State.THINKING
        self.steps: list[Step] = []
        self.pending: Step | None = None
        self.queue: list[tuple[ToolCall, str]] = []
        self.totals = Totals()
        self.end_reason: str | None = None
        self.summary: str | None = None
        self.auto_reads = True  # under "ask", reads run without asking unless this is switched off
        # The answer to the pending proposal, until the driver acts on it. An ApproveHunks is
        # kept as the proposal of the accepted hunks, staged and validated when it was decided.
        self._decision: Approve | Veto | _Selected | None = None
        self._model_task: asyncio.Task[ModelReply] | None = None
        # The model condensing the context: the summary and what it spent.
        self._condensing: asyncio.Future[tuple[str, Usage]] | None = None
        self._driver: asyncio.Future[None] | None = None  # the unit of work in progress
        self._loop: asyncio.AbstractEventLoop | None = None  # where the driver runs
        self._committing = False  # a commit or command is in flight: it is not cancelled
        self._staging = False  # a call is being staged (in a worker thread)
        self._cancel_command = threading.Event()  # set by stop(): a running command ends
        # Set by stop() and rewind: a staging in its worker thread stops early (a search
        # would otherwise go on for its whole timeout after the session stopped waiting).
        self._cancel_staging = threading.Event()
        self._stop_after_commit: str | None = None
        # The wall-time budget's watch: the budgets it counts for, the loop and its timer.
        self._wall_watch: tuple[Budgets, asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = (
            None
        )
        self._turns_without_tool = 0
        self._log_failed = False
        self._listeners = Listeners()  # the running updates() iterators
        self._unheard: list[Update] = []  # announced while nobody listened (``_ANNOUNCED``)
        self.guards = Guards(self.limits, task, str(self.root))
        if _resume is not None:
            self._restore(_resume[1])
            return
        self._emit(
            ev.SessionStart(
                task=task,
                model=getattr(model, "name", type(model).__name__),
                toolset=self.runtime.toolset.name,
                root=str(self.root),
                policy=policy if isinstance(policy, str) else "callable",
                # The budget as resolved (from the model's window when not set), for replay.
                settings=asdict(self.limits)
                | {"keep_observations": keep_observations, "budget": self.budget},
                sample=sample,
                rules=self.rules,
                recovery=self.runtime.recovered,
            )
        )

    @classmethod
    def resume(
        cls,
        log: str | os.PathLike[str],
        *,
        model: Model,
        policy: Policy = "ask",
        root: str | os.PathLike[str] | None = None,
        toolset: str | Toolset | None = None,
        documents: OpenDocuments | None = None,
        settings: Settings | None = None,
    ) -> Session:
        """The session recorded in ``log``, rebuilt after a kernel restart or a crash.

        Same id, same log (appended to): context, totals, guard state and branch as
        they were. Calls of the last reply that have no outcome are staged again against
        the files as they are now when the session is driven; one whose files changed
        since says so (``Step.stale``) and always waits for a decision. A commit that had
        landed before the interruption is recorded as done, not made again. A session
        whose task had ended comes back done: give it a next task (``continue_task``).
        ``toolset`` is needed for a session that ran with the kernel's toolset.
        """
        path = Path(log)
        read_log(path)  # says what is wrong with a path that is no log, before opening it
        # Locked from the first read to the last write: nobody appends in between, and the
        # torn tail cut below is nobody's line in progress.
        try:
            handle = claim(path)
        except OSError as exc:
            raise LogError(f"cannot open {path}: {exc.strerror or exc}") from None
        try:
            events = read_log(path)  # a torn last line is skipped here, and cut below
            check_sequence(events, str(path))
            start = events[0]
            assert isinstance(start, ev.SessionStart)
            if root is None and not _kept_by(path, Path(start.root)):
                # A log names its own workspace: one from elsewhere must not choose where the
                # resumed session writes.
                raise LogError(
                    f"{path} is not in the sessions folder of the workspace it names "
                    f"({start.root}); pass the workspace to resume it in (root=, --root)"
                )
            chosen: str | Toolset = toolset if toolset is not None else start.toolset
            if chosen == "kernel":
                raise ValueError(
                    "this session ran with the kernel's tools: resume it in a kernel "
                    "(%grinta resume), or pass toolset="
                )
            if isinstance(chosen, str) and chosen not in TOOLSETS:
                raise LogError(  # an edited line, or a newer grinta's toolset
                    f"{path} names a toolset this grinta does not have ({chosen!r}; known: "
                    f"{', '.join(sorted(TOOLSETS))})"
                )
            _drop_torn_tail(path)
            return cls(
                start.task,
                model=model,
                root=root if root is not None else start.root,
                toolset=chosen,
                policy=policy,
                limits=limits_from(start.settings),
                keep_observations=setting(start.settings, "keep_observations", 5),
                sample=start.sample,
                session_id=start.session,
                settings=settings,
                documents=documents,
                _resume=(path, events, handle),
            )
        except BaseException:
            handle.close()
            raise

    # -- public state -----------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.state is State.DONE

    @property
    def waiting(self) -> bool:
        """True when a proposal waits for approve / edit / veto."""
        return self.pending is not None and self._decision is None

    @property
    def log_path(self) -> Path | None:
        return self.log.path

    # -- decisions: synchronous, from any thread; the driver acts on them -------------------

    def decide(
        self, decision: Decision, step: int | Step | None = None, *, edits: int | None = None
    ) -> Proposal | None:
        """Answer the pending proposal.

        ``step``: the step the decision was made on (the card a person clicked), or its
        number: refused (RuntimeError), nothing decided, when another one waits by then (step
        numbers repeat across branches: a ``Step`` names one exactly). ``edits``: the
        ``Step.edits`` count of the proposal the person saw: an approval (whole or of hunks)
        is refused (RuntimeError), nothing decided, when the proposal was edited since. A
        reason (a veto's, or why hunks were declined) is cut to what a message may hold.

        ``Approve()`` commits it as staged, ``Veto(reason)`` refuses it (the reason goes
        to the model), ``Edit(arguments)`` re-stages the call with new arguments and
        returns the new proposal, which waits for a decision in turn.
        ``ApproveHunks(indices, reason)`` stages the accepted hunks of a write now and
        returns that proposal; when it does not validate (half an edit can break the
        syntax) nothing is decided and the step still waits. Both stage (read, match,
        validate) on the calling thread before they return: from an event loop that must
        keep turning, call ``decide`` in a worker thread (``asyncio.to_thread``), as the
        notebook panel does.
        """
        if not isinstance(decision, (Approve, Veto, Edit, ApproveHunks)):
            raise TypeError(
                "decide takes Approve(), Edit(arguments), Veto(reason) or ApproveHunks(indices), "
                f"not {decision!r}"
            )
        if not isinstance(step, Step | int | None) or isinstance(step, bool):
            raise TypeError(f"step is a Step or a step number, not {step!r}")
        if isinstance(decision, Veto):
            decision = Veto(_bounded_reason(decision.reason))
        elif isinstance(decision, ApproveHunks):
            decision = ApproveHunks(decision.hunks, _bounded_reason(decision.reason))
        if isinstance(step, Step):
            target = self._require_waiting(step.number, step, edits)
        else:
            target = self._require_waiting(step, None, edits)
        if isinstance(decision, Approve):
            self._record(decision, target, edits)
            return None
        if isinstance(decision, Veto):
            self._record(Veto(decision.reason or DEFAULT_VETO_REASON), target)
            return None
        if isinstance(decision, Edit):
            return self._edit(decision.arguments, target)
        return self._select_hunks(decision, target, edits)

    def approve(self) -> None:
        self.decide(Approve())

    def veto(self, reason: str = DEFAULT_VETO_REASON) -> None:
        self.decide(Veto(reason))

    def edit(self, new_args: dict[str, Any] | str) -> Proposal:
        """Replace the pending call's arguments; the new proposal must be approved in turn."""
        proposal = self.decide(Edit(new_args))
        assert proposal is not None
        return proposal

    def stop(self, reason: str = "stopped") -> None:
        """End the session now, cancelling a running model call.

        A commit in flight is never abandoned half-way: a running command is told to
        stop (its process tree is ended), and the session ends once the outcome is
        recorded. From a thread other than the one driving the session, the stop is
        handed to the driver's loop (``done`` turns True there, moments later).
        """
        loop = self._loop
        elsewhere = loop is not None and not loop.is_closed() and running_loop() is not loop
        if self._driver is not None and elsewhere:
            assert loop is not None
            loop.call_soon_threadsafe(self.stop, reason)
            return
        for task in (self._model_task, self._condensing):
            if task is not None and not task.done():
                task.cancel()
        self._cancel_staging.set()
        if self._committing:
            self._cancel_command.set()
            self._stop_after_commit = self._stop_after_commit or reason
            return
        self._end(reason)

    def release(self) -> None:
        """Close the log of a session nobody drives now, because its front end is going
        away (an ACP client that left). What it recorded stays, and a later resume goes on
        from it; a session being driven keeps its log, which its end closes."""
        if self._driver is None:
            self.log.close()

    def undo(self) -> Observation:
        """Undo this session's last commit (a user action, recorded and reported to the
        model); never another session's in the same folder.

        After the session's end too: the log records it all the same (``LogBusy``, nothing
        restored, when another session object holds the log now).
        """
        with self._logging():
            obs = self.runtime.undo(owner=f"session {self.id} call ")
            self._emit(
                ev.Undone(ok=obs.ok, message=obs.output, commit_id=obs.commit_id), len(self.steps)
            )
            self._listeners.publish(Undone(obs.ok, obs.output))
            if obs.ok:
                self.guards.finish.undo(len(self.steps))
                self._note(f"(The user undid the last commit: {obs.output})")
        return obs

    @contextlib.contextmanager
    def _logging(self) -> Iterator[None]:
        """The log open for what happens inside, if the session has ended (then closed
        again): what a person does after the end is recorded like the rest."""
        if self.log.error is not None:  # what cannot be recorded is not done
            raise LogError(f"nothing was done: {self.log.error}")
        reopened = self.done and not self.log.is_open
        if reopened:
            self.log.reopen()  # LogError (LogBusy...): the log cannot take it; nothing was done
        try:
            yield
        finally:
            if reopened and self.done:
                self.log.close()

    # -- a session that lasts: conversation, next tasks, rewind -------------------------------

    def say(self, text: str) -> None:
        """Tell the model something; it reads it at its next turn.

        From any thread or task, at any time while the session runs: a proposal waiting
        for a decision keeps waiting, a model call in flight is not cancelled (the message
        joins the request after it, following the results of the calls already made).
        """
        if not isinstance(text, str) or not text.strip():
            raise ValueError("say needs some text")
        _check_length(text, "a message")
        if self.done:
            raise RuntimeError(
                "the session has ended: give it a next task instead (continue_task, "
                "%grinta continue TASK)"
            )
        loop = self._loop
        driven = self._driver is not None and loop is not None and not loop.is_closed()
        if driven and running_loop() is not loop:  # the driver's loop logs it, in order
            assert loop is not None
            loop.call_soon_threadsafe(self._said, text.strip())
            return
        self._said(text.strip())

    def _said(self, text: str) -> None:
        # Said from a thread just as the session ended: logged all the same, so a resumed or
        # continued session reads it. (Another session object holding the log by then: the
        # message stays in this one's memory only.)
        with contextlib.suppress(LogError), self._logging():
            self._emit(ev.UserMessage(text=text, source="user"), len(self.steps))

    def continue_task(self, task: str) -> None:
        """Give an ended session its next task: same workspace, same log, context carried over.

        Guards and budgets start afresh for the task; drive the session again with
        ``updates()`` (or ``run()``) as for a new one.
        """
        if not isinstance(task, str) or not task.strip():
            raise ValueError("continue_task needs a task")
        check_task(task)
        if not self.done:
            raise RuntimeError(
                "the session is still working on its task: say something to it instead "
                "(say, %grinta say TEXT), or stop it first"
            )
        task = task.strip()
        self._reopen()
        self.tasks.append(task)
        self.guards = Guards(self.limits, task, str(self.root))
        self._tested_files = None
        self._task_first_step = len(self.steps)
        self._task_tokens = self.totals.prompt_tokens + self.totals.completion_tokens
        self._emit(ev.TaskStarted(task=task, number=len(self.tasks)), len(self.steps))

    def rewind(self, step: int) -> Rewound:
        """Undo the commits made after ``step``, byte for byte, and go on from there.

        The session continues from the end of step ``step`` as a new branch (the steps
        after it stay in the log, on their branch). Refused with ``RewindError``, nothing
        changed, when a commit or command is running, when a file those commits wrote
        changed outside the session since, or when an undo record is gone. Commands that
        ran after ``step`` cannot be undone: they are listed (``Rewound.not_undone``). Call
        it from the thread that drives the session, or when none does.
        """
        if self._committing:
            raise RewindError("a commit or command is running: rewind once it has finished")
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= len(self.steps):
            raise RewindError(
                f"there is no step {step!r} to rewind to (this branch has steps 0 to "
                f"{len(self.steps)})"
            )
        path = branch_events(self.log.events, self.branch)
        # Undone on any branch (an undo before an earlier rewind is off this branch's path):
        # commit ids are the journal's, unique, and an undone commit stays undone.
        undone = {e.commit_id for e in self.log.events if isinstance(e, ev.Undone) and e.ok}
        staged_here = {e.call_id for e in path if isinstance(e, ev.ToolProposed)}
        later = [  # this branch's own commits (a hand-edited line cannot name another's)
            e
            for e in path
            if isinstance(e, ev.Committed)
            and e.ok
            and e.step > step
            and e.commit_id not in undone
            and e.call_id in staged_here
        ]
        nameless = next((e for e in later if not e.commit_id), None)
        if nameless is not None:
            raise RewindError(f"nothing was rewound: {_unnamed(nameless, path)}")
        foreign = self._not_this_sessions(later)
        if foreign is not None:
            raise RewindError(f"nothing was rewound: {foreign}")
        commits = [e.commit_id for e in later if e.commit_id]
        ran = {e.call_id: e for e in path if isinstance(e, ev.ToolProposed)}
        not_undone = [
            f"step {e.step}: {ran[e.call_id].summary or e.tool}"
            for e in path
            if isinstance(e, ev.Observed)
            and e.step > step
            and e.call_id in ran
            and ran[e.call_id].kind == "command"
            and e.exit_code is not None
        ]
        # Changes found in place at a resume, not written by the session: left, and said.
        not_undone += kept_changes(path, step)
        # The state to go on from, before any file changes: a history that cannot be
        # rebuilt (an edited log) refuses the rewind with every file as it was.
        try:
            state = rebuild(
                [e for e in path if e.step <= step],
                root=str(self.root),
                rules=self._rules_text,
                secrets=self.secrets,
                boundary=self.context.boundary,
            )
        except (LogError, ValueError) as exc:
            raise RewindError(f"nothing was rewound: the log up to step {step} {exc}") from None
        # The log first: a rewind it cannot record must not change a file (LogBusy).
        with self._logging():
            obs = self.runtime.undo_commits(commits)
            if not obs.ok and not self._rewound_already(later, path, obs):
                assert obs.error is not None
                advice = ""
                if obs.error.code == STALE_FILE:
                    advice = (
                        ": keep that change elsewhere and put the file back as the session "
                        "left it, or rewind to a step after the last commit that wrote it"
                    )
                raise RewindError(f"nothing was rewound: {obs.error.message}{advice}")
            return self._rewound(step, state, commits, not_undone)

    def _not_this_sessions(self, later: list[ev.Committed]) -> str | None:
        """Why one of ``later`` is not a commit this session made, if one is not: its kept
        undo record names another session or call as its maker (or, made by an older version
        that names none, other files). A log edited to name another's commit must not make a
        rewind undo that work."""
        kept = {record.id: record for record in self.runtime.journal.history()}
        for commit in later:
            record = kept.get(commit.commit_id or "")
            if record is None:
                continue  # gone: the undo refuses it (COMMIT_GONE), or it was rewound already
            if record.owner is None:
                if sorted(record.files) == sorted(commit.paths):
                    continue
            elif record.owner == self._owner(ToolCall(commit.call_id, "", "")):
                continue
            return (
                f"the log names commit {commit.commit_id} for step {commit.step}, but that "
                f"commit was made by {record.owner or 'another call'} ({record.label}): the "
                "log was edited or mixed with another's, so it cannot be trusted to say what to "
                "undo; undo the session's changes by hand"
            )
        return None

    def _rewound_already(
        self, later: list[ev.Committed], path: list[ev.Event], obs: Observation
    ) -> bool:
        """Whether the files already hold what the rewind would restore: a crash came after
        its transaction, before its event (the transaction dropped the undo records)."""
        if obs.error is None or obs.error.code not in (COMMIT_GONE, STALE_FILE) or not later:
            return False
        staged = {e.call_id: e for e in path if isinstance(e, ev.DiffStaged)}
        first: dict[str, str | None] = {}  # path -> its sha256 before the first later commit
        for commit in later:
            diff = staged.get(commit.call_id)
            if diff is None:
                return False
            for where in diff.paths:
                first.setdefault(where, diff.base.get(where))
        return all(self._disk_sha(where) == sha for where, sha in first.items())

    def _rewound(
        self, step: int, state: Rebuilt, commits: list[str], not_undone: list[str]
    ) -> Rewound:
        self._generation += 1  # a model turn or staging begun before this is dropped
        self._cancel_staging.set()
        for task in (self._model_task, self._condensing):
            if task is not None and not task.done():
                task.cancel()
        self._adopt(state)
        self.steps = self.steps[:step]
        parent = self.branch
        self.branch = self.log.branch = max(branches(self.log.events)) + 1
        self._reopen()  # the log is open already (``_logging``)
        self._emit(
            ev.Rewound(
                to_step=step,
                parent=parent,
                undone=list(reversed(commits)),
                not_undone=not_undone,
            ),
            step,
        )
        return Rewound(step, self.branch, tuple(reversed(commits)), tuple(not_undone))

    def _reopen(self) -> None:
        """Make an ended (or waiting) session ready to think again."""
        self.log.reopen()
        self.state = State.THINKING
        self.end_reason = None
        self.summary = None
        with self._lock:
            self.pending = None
            self._decision = None
        self.queue = []
        # The resumed calls dropped with the queue: a later call that reuses one's id (local
        # models send ``call_0`` every time) is a new call, neither restaged nor stale.
        self._restaging.clear()
        self._partly_approved.clear()
        self._edited.clear()
        self._turns_without_tool = 0
        self._stop_after_commit = None
        self._cancel_command.clear()
        self._cancel_staging = threading.Event()  # stop() and rewind set the one before
        self._listeners.wake()

    def _adopt(self, state: Rebuilt) -> None:
        """Take the context, guards and task bookkeeping of a rebuilt state."""
        self.context = state.context
        self._feed = state.feed
        self.guards = state.guards
        # The files' state noted at a test run the rebuilt guards may not have (a rewind took
        # it off), and the rewind's undo rewrote files since: not taken until the next run.
        self._tested_files = None
        self.tasks = state.tasks
        self._task_first_step = state.task_first_step
        self._task_tokens = state.task_tokens

    def _restore(self, events: list[ev.Event]) -> None:
        """Rebuild this session from the events of its log (``resume``)."""
        self.branch = self.log.branch = events[-1].branch
        state = rebuild(
            branch_events(events, self.branch),
            root=str(self.root),
            rules=self._rules_text,
            secrets=self.secrets,
            boundary=self.context.boundary,
        )
        self._adopt(state)
        self.steps = state.steps
        for event in events:  # spent on every branch: money spent is spent
            if isinstance(event, ev.ModelReplied):
                self.totals.add(Usage(event.prompt_tokens, event.completion_tokens, event.cost))
        self._snapshotted = {e.path for e in events if isinstance(e, ev.FileSnapshot)}
        self.summary = state.summary
        recovered: list[str] = []
        if state.ended is None:
            # The calls left without an outcome are staged again (or recovered) as the steps
            # they were: their numbers are theirs again.
            again = {call.id for call, _ in state.unfinished}
            while (
                self.steps
                and self.steps[-1].call.id in again
                and self.steps[-1].observation is None
            ):
                self.steps.pop()
            decided = state.approved
            # Calls approved in part (``ApproveHunks``): what landed is only the accepted hunks.
            partly = hunk_decisions(branch_events(events, self.branch))
            for call, text in state.unfinished:
                staged = state.staged.get(call.id)
                if (
                    staged is not None
                    and call.id in decided
                    and self._landed(staged)
                    and not self._made_by_another(call, staged)
                ):
                    if self._commit_logged(call) or self.runtime.find_commit(
                        staged.base, staged.after, self._owner(call)
                    ):
                        self._recover(call, staged)
                        recovered.append(call.id)
                    else:  # the bytes are there, but no commit of this session wrote them
                        self._found_in_place(call, staged)
                    continue
                part = (
                    self._landed_hunks(call, staged, partly[call.id])
                    if staged is not None and call.id in partly
                    else None
                )
                if part is not None:
                    self._recover(call, part[0], partly[call.id], part[1])
                    recovered.append(call.id)
                    continue
                self.queue.append((call, text))
                self._restaging[call.id] = staged
                if call.id in state.edited:
                    self._edited.add(call.id)
                if call.id in partly:  # its partial commit did not land: never the whole one
                    self._partly_approved[call.id] = not_landed(partly[call.id])
        self._emit(
            ev.Resumed(
                model=getattr(self.model, "name", type(self.model).__name__),
                requeued=[c.id for c, _ in self.queue],
                recovered=recovered,
                recovery=self.runtime.recovered,
            ),
            len(self.steps),
        )
        if state.ended is not None:
            self.state = State.DONE
            self.end_reason = state.ended.reason
            self.log.close()

    def _owner(self, call: ToolCall) -> str:
        """How this session names its commit of ``call`` to the journal (``Journal.find``)."""
        return f"session {self.id} call {call.id}"

    def _made_by_another(self, call: ToolCall, staged: ev.DiffStaged) -> bool:
        """Whether the change ``staged`` describes, found on disk, is a kept commit another
        session (or another of this session's calls) made: then this call's did not land."""
        if set(staged.base) != set(staged.after):
            return False
        files = {path: (staged.base[path], staged.after[path]) for path in staged.base}
        journal = self.runtime.journal
        return journal.find(files, self._owner(call)) is None and journal.find(files) is not None

    def _landed(self, staged: ev.DiffStaged) -> bool:
        """Whether the files hold what ``staged`` would write (its commit landed)."""
        return bool(staged.after) and all(
            staged.after.get(path) != staged.base.get(path)
            and self._disk_sha(path) == staged.after.get(path)
            for path in staged.paths
        )

    def _landed_hunks(
        self, call: ToolCall, staged: ev.DiffStaged, decision: ev.UserDecision
    ) -> tuple[ev.DiffStaged, str] | None:
        """What an ``approve_hunks`` decision committed, when that commit landed before the
        interruption: the part of ``staged`` it wrote, and what the model is told about the
        hunks declined. None when it did not land (or cannot be told apart from what did not).

        The log holds the whole proposal's hashes and the accepted hunks, not the bytes those
        hunks give: the journal does. The commit landed when the files the accepted hunks
        touch, and only those, went from the bytes staged to what they hold now by a commit
        the journal keeps, made after the decision and not already another call's.
        """
        if not staged.base or any(path not in staged.base for path in staged.paths):
            return None  # an old log without the staged hashes: nothing to compare
        part = accepted_part(staged.diff, decision.hunks or [])
        if part is not None:
            # The commit wrote these files only: a file whose hunks were all declined may
            # have changed since (an editor), and says nothing about this commit.
            touched = [path for path in part.paths if path in staged.base]
            if touched != part.paths:
                return None
        else:  # a diff that cannot be read back (hand-edited): the files that changed
            touched = [path for path in staged.paths if self._disk_sha(path) != staged.base[path]]
        disk = {path: self._disk_sha(path) for path in touched}
        if not touched or any(disk[path] in ("", staged.base[path]) for path in touched):
            return None  # not written (or unreadable): it did not land
        record = self.runtime.journal.find(
            {path: (staged.base[path], disk[path]) for path in touched}, self._owner(call)
        )
        claimed = {
            e.commit_id
            for e in self.log.events
            if isinstance(e, ev.Committed) and e.commit_id and e.seq < decision.seq
        }
        if (
            record is None
            or record.id in claimed  # an earlier commit's (the same change made before)
            # Made before this decision (asked only of a commit that names no owner: an
            # older version's; the clock may have stepped back since, an owner holds).
            or (record.owner is None and record.created < decision.ts - CLOCK_SLACK)
            or not record.label.endswith(" " + ", ".join(touched))
        ):
            return None
        landed = ev.DiffStaged(
            call_id=call.id,
            paths=touched,
            diff=part.diff if part is not None else staged.diff,
            added=part.added if part is not None else staged.added,
            removed=part.removed if part is not None else staged.removed,
            base={path: staged.base[path] for path in touched},
            after={path: disk[path] for path in touched},
        )
        return landed, declined_text(part, decision)

    def _recover(
        self,
        call: ToolCall,
        staged: ev.DiffStaged,
        hunks: ev.UserDecision | None = None,
        note: str = "",
    ) -> None:
        """Record a commit that landed before the interruption as the step's outcome.

        ``hunks``: the ``approve_hunks`` decision whose commit it was (``staged`` then holds
        the files and hashes of the accepted hunks only); ``note``: what the model is told
        about the hunks declined."""
        proposed = next(
            e
            for e in reversed(self.log.events)
            if isinstance(e, ev.ToolProposed) and e.call_id == call.id
        )
        step = Step(len(self.steps) + 1, call, recorded_proposal(proposed, staged))
        if hunks is not None:
            step.decision, step.reason = "approve_hunks", hunks.reason or None
        self.steps.append(step)
        text = (
            f"{call.name} was committed before the session was interrupted "
            f"({', '.join(staged.paths)}); it was not applied again"
        )
        notes = [note] if note else []
        text = "\n\n".join([text, *notes])
        step.observation = Observation(True, text)
        # Named, so that a rewind undoes it like any other (its undo record says which);
        # once only: a commit logged before the interruption (its observation was not) is
        # already in the log, and a rewind would undo it twice.
        if not self._commit_logged(call):
            commit_id = self.runtime.find_commit(staged.base, staged.after, self._owner(call))
            self._emit(
                ev.Committed(call_id=call.id, ok=True, commit_id=commit_id, paths=staged.paths),
                step.number,
            )
        self._emit(
            ev.Observed(
                call_id=call.id,
                tool=call.name,
                ok=True,
                output=text,
                target=target_of(step.proposal),
                summary=f"{call.name} -> committed before the interruption",
                notes=notes,
                fenced=False,
            ),
            step.number,
        )
        self.guards.after(step.number, step.proposal, step.observation, False)

    def _commit_logged(self, call: ToolCall) -> bool:
        """Whether the log holds a commit of ``call`` after its last proposal (models reuse
        call ids across replies: only what follows this call's proposal is its own)."""
        path = branch_events(self.log.events, self.branch)
        start = max(
            i for i, e in enumerate(path) if isinstance(e, ev.ToolProposed) and e.call_id == call.id
        )
        return any(
            isinstance(e, ev.Committed) and e.ok and e.call_id == call.id for e in path[start:]
        )

    def _found_in_place(self, call: ToolCall, staged: ev.DiffStaged) -> None:
        """Record an approved write whose change the files already held at the resume, though
        no commit of this session made it (the same fix typed by hand after the commit was
        interrupted, or a commit whose undo record is gone): done, as the user approved it,
        but with no ``commit`` event, so a rewind leaves those bytes alone and says so
        (``history.kept_changes``) instead of restoring what the session never wrote."""
        proposed = next(
            e
            for e in reversed(self.log.events)
            if isinstance(e, ev.ToolProposed) and e.call_id == call.id
        )
        step = Step(len(self.steps) + 1, call, recorded_proposal(proposed, staged))
        step.decision = "approve"
        self.steps.append(step)
        paths = ", ".join(staged.paths)
        text = (
            f"{call.name} was not applied: when the session resumed, {paths} already held "
            "exactly what it would write, and no commit of this session the workspace keeps "
            "wrote it (a change made outside the session, such as the same edit typed by "
            "hand, or a commit whose undo record is gone); nothing was written, and a rewind "
            "leaves it as it is"
        )
        step.observation = Observation(True, text)
        self._emit(
            ev.Observed(
                call_id=call.id,
                tool=call.name,
                ok=True,
                output=text,
                target=target_of(step.proposal),
                summary=f"{call.name} -> {KEPT_CHANGE}",
                fenced=False,
            ),
            step.number,
        )
        self.guards.after(step.number, step.proposal, step.observation, False)

    def _disk_sha(self, path: str) -> str | None:
        """sha256 of the file at ``path`` now (None: absent); "" when it cannot be read."""
        try:
            where = self.runtime.workspace.resolve(path)
            data, _ = read_regular(where.abs, path, SNAPSHOT_READ_BYTES, within=where.root)
        except ToolFailure as exc:
            return None if exc.error.code == "FILE_NOT_FOUND" else ""
        return sha256(data)

    # -- driving ----------------------------------------------------------------------------

    async def updates(self) -> AsyncIterator[Update]:
        """Drive the session to its end, yielding what happens (agent/updates.py).

        Updates are yielded as they happen, model text included, while a step is
        still being worked on. Each ``NeedsDecision`` waits for ``decide``: from the
        loop body, or from any other task or thread while the iterator waits. It is
        published when the proposal starts waiting, so every iterator sees it in the
        same place, even one whose turn comes after another front end has decided
        (``waiting`` says whether a decision is still wanted).

        Several iterators may run at once (a panel and a cell of the user's, say):
        each sees every update, and only one of them drives at a time.
        """
        with self._listeners.joined() as me:
            me.queue.extend(self._unheard)  # a new task, a rewind, a resume: said first
            self._unheard.clear()
            if self.waiting:  # joined while a proposal waits: it is asked here too
                assert self.pending is not None
                me.queue.append(NeedsDecision(self.pending))
            while True:
                me.arrived.clear()
                while me.queue:
                    update = me.queue.popleft()
                    me.consumer = asyncio.current_task()
                    try:
                        yield update
                    finally:
                        me.consumer = None
                    if isinstance(update, SessionEnded):
                        return
                if self.done:  # it ended before this iterator started
                    yield SessionEnded(self.end_reason or "", self.summary)
                    return
                if self.waiting:  # its NeedsDecision was yielded above
                    await me.arrived.wait()
                    continue
                if self._driver is not None:  # another iterator drives: listen
                    await me.arrived.wait()
                    continue
                async with aclosing(self._drive(me)) as driving:
                    async for update in driving:
                        me.consumer = asyncio.current_task()
                        try:
                            yield update
                        finally:
                            me.consumer = None
                        if isinstance(update, SessionEnded):
                            return

    async def _drive(self, me: Listener) -> AsyncGenerator[Update, None]:
        """Do one unit of work, yielding the updates it makes as they happen."""
        self._loop = asyncio.get_running_loop()
        work = self._driver = asyncio.ensure_future(self._advance())
        work.add_done_callback(self._work_done)  # even if this iterator is never resumed
        try:
            while not work.done():
                woken = asyncio.ensure_future(me.arrived.wait())
                await asyncio.wait({work, woken}, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
                me.arrived.clear()
                while me.queue and not work.done():
                    yield me.queue.popleft()
            work.result()  # a failure of the step is the caller's to see
        finally:
            # The caller stopped listening (or the session ended) mid-step: a model turn or
            # staging is cancelled; a commit or command runs on and records its outcome.
            if not work.done() and not self._committing:
                work.cancel()  # it only unwinds from here: another iterator may drive at once
                if self._driver is work:
                    self._driver = None

    def _work_done(self, work: asyncio.Future[None]) -> None:
        if self._driver is work:
            self._driver = None
        self._listeners.wake()  # a listener may take over driving

    async def run(self) -> Session:
        """Drive the session to its end; decisions must come from elsewhere (or the policy)."""
        async for _update in self.updates():
            pass
        return self

    def run_sync(self) -> Session:
        """``run`` for scripts (works inside a running event loop too)."""
        from grinta_jupyter.agent.blocking import run_blocking

        return run_blocking(self.run())

    async def _advance(self) -> None:
        """One unit of work: act on a decision, stage the next queued call, or ask the model."""
        if self.done or self._stop_if_log_failed():
            return
        self._watch_wall_time()
        if self.pending is not None:
            if self._decision is not None:
                await self._apply_decision()
            return
        if self.queue:
            # Steps and time before every step, not only before asking the model: one reply
            # may hold dozens of calls (a reply of 29 reads ran 29 steps under max_steps=5).
            if not self._out_of_budget(asking=False):
                await self._next_call()
            return
        if not self._out_of_budget(asking=True):
            await self._think()

    def _watch_wall_time(self) -> None:
        """Arm the wall-time budget's timer for the current task (once per task and loop):
        when it runs out, the model call, the staging or the command running then is cut
        short and the session ends (``_wall_time_out``)."""
        budgets, loop = self.guards.budgets, asyncio.get_running_loop()
        watch = self._wall_watch
        if watch is not None and watch[0] is budgets and watch[1] is loop:
            return
        if watch is not None:
            watch[2].cancel()
        left = budgets.wall_time_left()
        self._wall_watch = None
        if left is not None:
            timer = loop.call_later(max(0.0, left), self._wall_time_out, budgets)
            self._wall_watch = (budgets, loop, timer)

    def _wall_time_out(self, budgets: Budgets) -> None:
        """The wall-time budget's timer: end the session, cutting short what runs then (a
        model call or condensation is cancelled, a staging stopped, a command told to stop
        as by Stop; a write in progress finishes). Between those, and while a person
        decides (or their decision waits to be acted on), nothing is cut: the budget ends
        the session before its next step, and a step the person approves runs first."""
        if self.done or budgets is not self.guards.budgets:
            return
        firing = budgets.wall_time()
        if firing is None:  # woken early: wait for the rest
            self._wall_watch = None
            with contextlib.suppress(RuntimeError):  # no loop runs here any more
                self._watch_wall_time()
            return
        thinking = any(
            task is not None and not task.done() for task in (self._model_task, self._condensing)
        )
        running = self._committing or self._staging or thinking
        if self.pending is not None or self._stop_after_commit is not None or not running:
            return
        self._fire(firing)
        self.stop(ending(firing))

    def _out_of_budget(self, asking: bool) -> bool:
        """End the session when a budget is spent (counted from the current task's start):
        before asking the model, every budget; before another call of the same reply (paid
        for already), the steps and the time."""
        budgets, steps = self.guards.budgets, len(self.steps) - self._task_first_step
        firing = (
            budgets.check(
                steps,
                self.totals.prompt_tokens + self.totals.completion_tokens - self._task_tokens,
                self.totals.cost,
            )
            if asking
            else budgets.before_step(steps)
        )
        if firing:
            self._fire(firing)
            self._finish_session(ending(firing))
        return firing is not None

    # -- the machine --------------------------------------------------------------------

    async def _think(self) -> None:
        generation = self._generation
        self.state = State.THINKING
        self._feed.ready()
        schemas = self.runtime.tool_schemas_json()  # one text until the toolset changes
        tools = json.loads(schemas)
        tool_tokens = schema_json_tokens(schemas)
        if not await self._condense(tool_tokens) or generation != self._generation:
            return
        request = self.context.request()  # a turn costs what changed since the last one
        self._emit(
            ev.ModelRequest(
                messages=len(request.messages),
                digest=request.digest,
                tokens=request.tokens + tool_tokens,  # count_request_tokens
                masked=request.masked,
                budget=self.budget,
            ),
            len(self.steps) + 1,
        )
        started = time.monotonic()
        self._model_task = asyncio.ensure_future(
            self.model.complete(request.messages, tools, self._text)
        )
        try:
            reply = await self._model_task
        except asyncio.CancelledError:
            if self.done or generation != self._generation:  # stopped, or rewound
                return
            raise
        except ModelError as exc:
            self._emit(ev.ErrorEvent(code=exc.code, message=exc.message), len(self.steps) + 1)
            self._finish_session("error")
            return
        except Exception as exc:  # a bug in a model client: end cleanly, then let it be seen
            message = f"the model client failed unexpectedly: {exc!r}"
            self._emit(ev.ErrorEvent(code=INTERNAL_ERROR, message=message), len(self.steps) + 1)
            self._finish_session("error")
            raise
        finally:
            if generation == self._generation:
                self._model_task = None
        if self.done or generation != self._generation:
            return
        self.totals.add(reply.usage)
        replied = reply_event(reply, time.monotonic() - started)
        self._emit(replied, len(self.steps) + 1)
        if not reply.tool_calls:
            self._turns_without_tool += 1
            if self._turns_without_tool >= self.limits.max_model_turns_without_tool:
                self._fire(
                    Firing(
                        "no_tool_call",
                        f"{self._turns_without_tool} replies without a tool call",
                        "stop",
                    )
                )
                self._finish_session("no_tool_call")
                return
            self._note("Continue with a tool call. When the task is verified, call finish.")
            return
        self._turns_without_tool = 0
        self.queue = [(c, reply.text if i == 0 else "") for i, c in enumerate(reply.tool_calls)]

    async def _condense(self, tool_tokens: int) -> bool:
        """Keep the next request under the budget: condense older turns when it would not
        fit (``agent/condense.py``). False when the session moved on meanwhile."""
        plan = self.context.plan_condensation(self.budget, tool_tokens, self.limits.condense)
        if plan is None:
            return True
        text, after = plan.text, plan.tokens_after
        if plan.method == "model":
            generation = self._generation
            self._condensing = asyncio.ensure_future(
                condense_with_model(self.model, self.context, plan.upto)
            )
            try:
                text, spent = await self._condensing
            except asyncio.CancelledError:
                if self.done or generation != self._generation:
                    return False
                raise
            finally:
                self._condensing = None
            if self.done or generation != self._generation:
                return False
            self.totals.add(spent)  # the summary request costs like any other
            after = tokens_after(self.context, plan.upto, text, tool_tokens)
        self._emit(
            ev.Condensed(
                upto=plan.upto,
                text=text,
                method=plan.method,
                tokens_before=plan.tokens_before,
                tokens_after=after,
                budget=plan.budget,
            ),
            len(self.steps) + 1,
        )
        return True

    async def _next_call(self) -> Step | None:
        call, text = self.queue[0]
        generation = self._generation
        # Staging reads files, matches patterns and parses: off the event loop, so a slow read
        # never freezes the kernel (the Stop button and every widget keep working). The call
        # leaves the queue only once staged: staging cancelled half-way is done again later.
        self._staging = True
        try:
            proposal, snapshots = await asyncio.to_thread(self._stage, call, self._cancel_staging)
        finally:
            self._staging = False
        moved = (
            await asyncio.to_thread(self._before_finish)
            if isinstance(proposal, FinishProposal) and proposal.ok
            else []
        )
        if self.done or generation != self._generation:  # stopped or rewound while staging
            return None
        for snapshot in snapshots:
            self._emit(snapshot, len(self.steps) + 1)
        self.queue.pop(0)
        step = Step(len(self.steps) + 1, call, proposal, text)
        edited = call.id in self._edited
        self._edited.discard(call.id)
        if call.id in self._restaging:
            step.restaged = True
            partly = self._partly_approved.pop(call.id, None)
            step.stale = (
                _stale(self._restaging.pop(call.id), proposal)
                or partly
                or _redacted_arguments(call)
            )
        self.steps.append(step)
        self._record_proposal(step)
        if isinstance(step.proposal, FinishProposal) and step.proposal.ok:
            if moved:
                self.guards.finish.moved_on_disk(moved)
            return self._finish_check(step)
        if step.proposal.error is not None and not edited:
            await self._observe(step, Observation.failure(step.proposal.error, step.proposal.id))
            return step
        # Stale, or edited by the user (live, an edit waits for its approval whatever the
        # policy, and one that does not validate waits to be edited again): a person decides.
        verdict = False if step.stale or edited else self._policy_verdict(step)
        if verdict is True:
            step.decision = "auto"
            self._emit(ev.UserDecision(call_id=call.id, decision="auto"), step.number)
            await self._commit(step)
        elif isinstance(verdict, tuple):
            self.pending = step
            self._decision = Veto(verdict[1])
            await self._apply_decision()
        else:
            self._ask(step)
        return step

    def _ask(self, step: Step) -> None:
        """``step`` waits for a decision: every listener is told so, in the same place."""
        with self._lock:
            self.pending = step
        self.state = State.PROPOSED
        self._listeners.publish(NeedsDecision(step))

    async def _apply_decision(self) -> None:
        step = self._require_pending()
        decision = self._decision
        self._decision = None
        self.pending = None
        if isinstance(decision, Veto):
            step.decision, step.reason = "veto", decision.reason
            self._emit(
                ev.UserDecision(call_id=step.call.id, decision="veto", reason=decision.reason),
                step.number,
            )
            text = veto_text(step.call.name, decision.reason)
            await self._observe(step, Observation(False, text, None, step.proposal.id), vetoed=True)
            return
        if isinstance(decision, _Selected):
            step.decision, step.reason = "approve_hunks", decision.reason or None
            self._emit(
                ev.UserDecision(
                    call_id=step.call.id,
                    decision="approve_hunks",
                    reason=decision.reason or None,
                    hunks=list(decision.accepted),
                ),
                step.number,
            )
            step.proposal = decision.proposal
            await self._commit(step, notes=[decision.note])
            return
        step.decision = "approve"
        self._emit(ev.UserDecision(call_id=step.call.id, decision="approve"), step.number)
        if not step.proposal.ok:  # approving an invalid edit sends its error back to the model
            error = step.proposal.error
            assert error is not None
            await self._observe(step, Observation.failure(error, step.proposal.id))
        else:
            await self._commit(step)

    async def _commit(self, step: Step, notes: Sequence[str] = ()) -> None:
        if self._stop_if_log_failed():  # nothing is committed that the log cannot record
            return
        self.state = State.COMMITTED
        self._committing = True
        try:
            await self._commit_and_observe(step, notes)
        finally:
            self._committing = False
            if self._stop_after_commit is not None:
                self._end(self._stop_after_commit)

    async def _commit_and_observe(self, step: Step, notes: Sequence[str]) -> None:
        proposal = step.proposal
        try:
            if isinstance(proposal, ReadProposal):  # it ran when staged: this hands back its output
                obs = self.runtime.commit(proposal)
            else:  # commands may run for minutes and commits fsync: keep the event loop free
                obs = await asyncio.to_thread(
                    self.runtime.commit,
                    proposal,
                    cancel=self._cancel_command,
                    owner=self._owner(step.call),
                )
        except Exception as exc:  # the runtime reports failures as values; a bug must not strand us
            obs = Observation.failure(
                ToolError(INTERNAL_ERROR, f"{proposal.tool} failed unexpectedly: {exc!r}"),
                proposal.id,
            )
        if isinstance(proposal, WriteProposal):
            self._emit(
                ev.Committed(
                    call_id=step.call.id,
                    ok=obs.ok,
                    commit_id=obs.commit_id,
                    paths=proposal.paths,
                    code=obs.error.code if obs.error else None,
                ),
                step.number,
            )
        await self._observe(step, obs, notes=notes)

    async def _observe(
        self, step: Step, obs: Observation, vetoed: bool = False, notes: Sequence[str] = ()
    ) -> None:
        self.state = State.OBSERVED
        proposal = step.proposal
        data = obs.output  # what the tool produced: fenced as data for the model
        notes = list(notes)  # what grinta itself says about it: outside the fence
        firings = self.guards.after(step.number, proposal, obs, vetoed)
        if self.guards.finish.tested_at(step.number):
            self._tested_files = await asyncio.to_thread(self._after_test_run)
        for firing in firings:
            self._fire(firing, step)
            if firing.action == "force_read":
                fresh = await asyncio.to_thread(self._fresh_read, proposal)
                if fresh:
                    data += "\n\n" + fresh
                    why = firing.message or "This edit failed twice on the same target"
                    notes.append(
                        f"[guard] {why}; the file's current contents are at the end of the data "
                        "above."
                    )
            elif firing.action == "warn":
                notes.append(f"[guard] {firing.message}")
        output = "\n\n".join([data, *notes])
        step.observation = Observation(
            obs.ok, output, obs.error, obs.proposal_id, obs.commit_id, obs.exit_code, obs.outputs
        )
        self._emit(  # the context takes the result from this event (``ContextFeed``)
            ev.Observed(
                call_id=step.call.id,
                tool=step.call.name,
                ok=obs.ok,
                code=obs.error.code if obs.error else ("VETO" if vetoed else None),
                output=output,
                exit_code=obs.exit_code,
                target=target_of(proposal),
                outputs=list(obs.outputs),
                summary=one_line(step.call.name, proposal.args, data),
                notes=notes,
                fenced=not vetoed,  # a veto carries the user's own words, not data
            ),
            step.number,
        )
        reason = self.guards.end_reason(firings)
        if reason is not None:
            self._finish_session(reason)

    def _after_test_run(self) -> dict[str, tuple[int, int, int]] | None:
        """The source files' state after a test run; and, the first time each is named, the
        files holding the tests the session saw failing, read for the finish guard to
        compare with the disk at a finish (a test deleted or skipped by a command, kernel
        code or an editor). A file gone already counts if the last test run saw it (a
        command that ran the tests and removed it). In a worker thread."""
        previous = self._tested_files or {}
        state = self.runtime.workspace.source_state()
        finish = self.guards.finish
        for path in finish.failing_files()[:MAX_FAILING_FILES]:
            exists, text = self._disk_read(path)
            if (exists and text is None) or (not exists and path not in previous):
                # No file (a guess from a test's id), or none that reads as Python here (a
                # link out of the workspace, too large): the guard cannot compare it.
                finish.disk_missing.add(path)
                continue
            finish.disk_files.add(path)
            if text:
                finish.disk_first[path] = text
            if finish.disk_state is None:
                finish.disk_state = state
        return state

    def _before_finish(self) -> list[str]:
        """The source files written, made or removed since the last test run (sorted); and
        for the finish guard, the files ``_after_test_run`` read, read again, and the test
        files made since that name a test gone from its file, then its verdict on them
        (``FinishGuard.settle``). In a worker thread."""
        now = self.runtime.workspace.source_state()
        finish = self.guards.finish
        if finish.disk_files:
            finish.disk_now = {p: self._disk_read(p)[1] for p in sorted(finish.disk_files)}
            finish.disk_found = {}
            missing = finish.missing_names()
            then = finish.disk_state or {}
            made = sorted(p for p in now or {} if p not in then and test_file_name(p))
            for path in made[:MAX_FOUND_FILES] if missing else []:
                _, text = self._disk_read(path)
                if text and any(name in text for name in missing):
                    finish.disk_found[path] = text
        finish.settle()  # the verdict's parsing, here rather than on the event loop
        before = self._tested_files
        if before is None or now is None:
            return []
        return sorted(p for p in before.keys() | now.keys() if before.get(p) != now.get(p))

    def _disk_read(self, path: str) -> tuple[bool, str | None]:
        """Whether the workspace file ``path`` exists now, and its text: "" when it does not,
        None when it does not read as Python source (a folder, a FIFO, a link out of the
        workspace, over the read cap, not in its declared encoding)."""
        try:
            where = self.runtime.workspace.resolve(path)
            data, _ = read_regular(where.abs, path, SNAPSHOT_READ_BYTES, within=where.root)
        except ToolFailure as exc:
            return (False, "") if exc.error.code == "FILE_NOT_FOUND" else (True, None)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            return True, data.decode(encoding)
        except (SyntaxError, LookupError, UnicodeDecodeError):
            return True, None

    def _finish_check(self, step: Step) -> Step:
        self.state = State.FINISH_CHECK
        summary = str(step.proposal.args.get("summary", ""))
        firing = self.guards.finish.check(summary)
        accepted = firing is None
        self._emit(
            ev.FinishAttempt(
                call_id=step.call.id,
                summary=summary,
                accepted=accepted,
                reason=firing.detail if firing else "",
            ),
            step.number,
        )
        if firing is not None:
            self._fire(firing, step)
            step.observation = Observation(False, firing.message, None, step.proposal.id)
            self._emit(
                ev.Observed(
                    call_id=step.call.id,
                    tool="finish",
                    ok=False,
                    code="PREMATURE_FINISH",
                    output=firing.message,
                    summary="finish refused",
                    fenced=False,
                ),
                step.number,
            )
            self.state = State.OBSERVED
            return step
        step.observation = Observation(True, summary, None, step.proposal.id)
        self._emit(  # the context is told "accepted" (``ContextFeed``)
            ev.Observed(
                call_id=step.call.id,
                tool="finish",
                ok=True,
                output=summary,
                summary="finish accepted",
                fenced=False,
            ),
            step.number,
        )
        self.summary = summary
        self.queue.clear()
        self._finish_session("finished")
        return step

    # -- helpers ---------------------------------------------------------------------------

    def _policy_verdict(self, step: Step) -> bool | tuple[str, str]:
        try:
            return policy_verdict(self.policy, step.proposal, self.auto_reads)
        except Exception as exc:
            # A developer's mistake: end the session cleanly (nothing pending, nothing half-done),
            # then raise so whoever drives it sees exactly what was wrong.
            message = str(exc) if isinstance(exc, PolicyError) else f"the policy raised {exc!r}"
            self._emit(ev.ErrorEvent(code="POLICY_ERROR", message=message), step.number)
            self._finish_session("policy_error")
            raise PolicyError(message) from exc

    def _record(
        self, decision: Approve | Veto | _Selected, step: Step, edits: int | None = None
    ) -> None:
        with self._lock:  # the step may have been rewound, stopped away or edited meanwhile
            self._require_waiting(step.number, step, edits)
            self._decision = decision
        self._listeners.answered(step)
        self._listeners.wake()

    def _edit(self, arguments: dict[str, Any] | str, step: Step) -> Proposal:
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        raw = _unredacted(step.call.arguments or "", raw, self.secrets)
        call = ToolCall(step.call.id, step.call.name, raw)
        proposal = self.runtime.propose(call.name, raw)  # may take a while: nothing changes yet
        mark = _redaction_copied(step.call.arguments or "", raw, self.secrets)
        if mark is not None and proposal.ok:
            proposal = type(proposal)(
                proposal.tool, proposal.args, error=mark, summary=mark.message
            )
        with self._lock:
            self._require_waiting(step.number, step)
            self._emit(
                ev.UserDecision(call_id=step.call.id, decision="edit", arguments=raw), step.number
            )
            step.call, step.proposal = call, proposal
            step.edits += 1
            # An edit that does not validate still waits: the user may edit again.
            self._record_proposal(step, edited=True)
        self._listeners.answered(step)
        self._ask(step)
        return step.proposal

    def _select_hunks(self, decision: ApproveHunks, step: Step, edits: int | None) -> Proposal:
        with self._lock:  # the hunks are of this proposal: recorded only if it still waits
            proposal, seen = step.proposal, step.edits
        if edits is not None and edits != seen:
            self._require_waiting(step.number, step, edits)  # says it was edited
        selected = self.runtime.select_hunks(proposal, decision.hunks)
        every = isinstance(selected, WriteProposal) and not selected.declined
        if selected.ok and every:  # every hunk: that is an approval
            self._record(Approve(), step, seen)
        elif selected.ok:
            note = declined_note(proposal, decision.hunks, decision.reason)
            chosen = _Selected(selected, tuple(decision.hunks), decision.reason, note)
            self._record(chosen, step, seen)
        return selected

    def _require_pending(self) -> Step:
        if self.pending is None:
            raise RuntimeError("no proposal is waiting for a decision")
        return self.pending

    def _require_waiting(
        self, number: int | None = None, step: Step | None = None, edits: int | None = None
    ) -> Step:
        """The pending step, if nothing has been decided about it yet: one decision each.

        ``number`` / ``step``: the step the decision is for, which must be the one waiting;
        ``edits``: the edits count of the proposal decided on, which must be the one waiting.
        """
        with self._lock:
            pending = self.pending
            if pending is None and number is None:
                raise RuntimeError("no proposal is waiting for a decision")
            if pending is None or (step is not None and pending is not step):
                which = f"step {number}" if number is not None else "the proposal"
                raise RuntimeError(
                    f"{which} no longer waits for a decision (the session was stopped, rewound "
                    "or moved on); nothing was decided"
                )
            if number is not None and pending.number != number:
                raise RuntimeError(
                    f"step {pending.number} waits for a decision, not step {number}: nothing "
                    "was decided"
                )
            if self._decision is not None:
                raise RuntimeError(
                    f"step {pending.number} is already decided ({type(self._decision).__name__}); "
                    "the next decision is for the next proposal"
                )
            if edits is not None and pending.edits != edits:
                raise RuntimeError(
                    f"step {pending.number} was edited after the proposal decided on was shown: "
                    "look at its new diff; nothing was decided"
                )
            return pending

    def _record_proposal(self, step: Step, edited: bool = False) -> None:
        for event in proposal_events(step, edited):
            self._emit(event, step.number)

    def _note(self, text: str) -> None:
        """Grinta's own words to the model, at its next turn."""
        self._emit(ev.UserMessage(text=text, source="grinta"), len(self.steps))

    def _stage(
        self, call: ToolCall, cancel: threading.Event
    ) -> tuple[Proposal, list[ev.FileSnapshot]]:
        """Stage ``call``, and record the starting state of the files it is the first to
        read or stage (for replay anywhere: events/snapshots.py). In a worker thread;
        ``cancel`` set means nobody waits for the result any more."""
        proposal = self.runtime.propose(call.name, call.arguments, cancel=cancel)
        found: dict[str, bytes | None] = {c.path: c.old_bytes for c in proposal.changes}
        path = _read_path(proposal)
        if path and path not in self._snapshotted:
            try:
                where = self.runtime.workspace.resolve(path)
                if where.rel not in self._snapshotted:
                    found[where.rel] = read_regular(
                        where.abs,
                        path,
                        SNAPSHOT_READ_BYTES,
                        within=where.root,
                    )[0]
            except ToolFailure:
                pass  # nothing was read: nothing to record
        snapshots = []
        for path, data in found.items():
            if path in self._snapshotted:
                continue
            self._snapshotted.add(path)
            try:
                snapshots.append(self._snapshots.keep(path, data))
            except OSError:  # the record is for replay elsewhere; the session goes on
                continue
        return proposal, snapshots

    def _fresh_read(self, proposal: Proposal) -> str:
        path = proposal.args.get("path") or (proposal.args.get("edits") or [{}])[0].get("path")
        if not path:
            return ""
        return self.runtime.call("read", {"path": path}).output

    def _fire(self, firing: Firing, step: Step | None = None) -> None:
        if step is not None:
            step.guards.append(firing)
        self._emit(
            ev.GuardFired(guard=firing.guard, detail=firing.detail, action=firing.action),
            step.number if step else len(self.steps),
        )

    def _finish_session(self, reason: EndReason) -> None:
        """End the session for one of the machine's own reasons."""
        self._end(reason)

    def _end(self, reason: str) -> None:
        """End the session: an ``EndReason``, or the words given to ``stop``."""
        if self.done:
            return
        if self._wall_watch is not None:
            self._wall_watch[2].cancel()
            self._wall_watch = None
        self.state = State.DONE
        self.end_reason = reason
        with self._lock:
            self.pending = None
            self._decision = None
        self._emit(
            ev.SessionEnd(
                reason=reason,
                steps=len(self.steps),
                prompt_tokens=self.totals.prompt_tokens,
                completion_tokens=self.totals.completion_tokens,
                cost=self.totals.cost if self.totals.cost_known else None,
            ),
            len(self.steps),
        )
        self.log.close()

    def _text(self, piece: str) -> None:
        self._listeners.publish(ModelText(piece))

    def _emit(self, event: ev.Event, step: int = 0) -> ev.Event:
        with self._lock:  # the log's order is the context's order, whichever thread emits
            emitted = self.log.emit(event, step)
            self._feed.apply(emitted)
        if self._listeners:
            found = self.steps[step - 1] if 0 < step <= len(self.steps) else None
            update = update_for(emitted, found, self.summary)
            if update is not None:
                self._listeners.publish(update)
        elif isinstance(emitted, _ANNOUNCED):  # the next iterator starts with it
            update = update_for(emitted, None, self.summary)
            if update is not None:
                self._unheard.append(update)
        if self.log.error is not None and not self._log_failed:
            # The session survives a failed log write (events stay in memory) and ends at the
            # next unit of work, before anything else is committed: a session that cannot be
            # recorded cannot be replayed or measured.
            self._log_failed = True
            self.log.emit(ev.ErrorEvent(code="LOG_WRITE_FAILED", message=self.log.error), step)
        return emitted

    def _stop_if_log_failed(self) -> bool:
        if self._log_failed and not self.done:
            self._finish_session("log_write_failed")
        return self._log_failed


# How a resolution names the definition it chose: "path:line kind name" (tools/symbols.py).
_RESOLVED_AT = re.compile(r"(.+?):(\d+) ")

# What a front end that starts listening after the fact must still hear about.
_ANNOUNCED = (ev.TaskStarted, ev.Rewound, ev.Resumed, ev.UserMessage)


def _read_path(proposal: Proposal) -> str:
    """The file a successful read named ("" for none: a bare symbol names no file)."""
    if not (isinstance(proposal, ReadProposal) and proposal.ok and proposal.tool == "read"):
        return ""
    path, symbol = proposal.args.get("path"), proposal.args.get("symbol")
    if isinstance(path, str) and path:
        return path.split("::", 1)[0]
    if isinstance(symbol, str) and "::" in symbol:
        return symbol.split("::", 1)[0]
    for resolution in proposal.resolutions:  # a bare name resolved to one definition
        found = _RESOLVED_AT.match(resolution.chosen or "")
        if found:
            return found.group(1)
    return ""


def _unredacted(before: str, after: str, secrets: Secrets) -> str:
    """``after`` with each argument the person left as shown (redacted) given back its value
    as the model sent it: editing one argument of a call whose other one holds a secret
    keeps that secret, not the mark."""
    old, new = parsed_arguments(before), parsed_arguments(after)
    if not isinstance(old, dict) or not isinstance(new, dict):
        return after
    kept = {
        key: old[key]
        for key, value in new.items()
        if key in old and value != old[key] and secrets.redact_data(old[key]) == value
    }
    return json.dumps({**new, **kept}) if kept else after


def _redaction_copied(before: str, after: str, secrets: Secrets) -> ToolError | None:
    """INVALID_ARGS when edited arguments hold the redaction mark where the call held a
    secret: every surface shows a call's arguments redacted, so arguments copied back from
    one would write the mark over the secret, and its diff (redacted too) would show that
    line unchanged."""
    if after.count(REDACTED) <= before.count(REDACTED) or secrets.redact(before) == before:
        return None
    return ToolError(
        INVALID_ARGS,
        f"the edited arguments hold {REDACTED} where the call held a secret, which every "
        f"view shows redacted: approving would write {REDACTED} in its place, and the diff "
        "would not show it. Edit again with the value typed in, or veto",
    )


def _redacted_arguments(call: ToolCall) -> str | None:
    """Why a resumed call must not run as its log holds it, if it must not: its arguments
    held a secret, which the log keeps redacted, so the call would now write the mark."""
    if REDACTED not in (call.arguments or ""):
        return None
    return (
        "its arguments held a secret, which the session's log keeps redacted: as resumed, "
        f"the call would write {REDACTED} in its place; edit the arguments, or veto"
    )


def _unnamed(commit: ev.Committed, path: Sequence[ev.Event]) -> str:
    """Why a rewind cannot undo ``commit``, a commit the log records without its id."""
    observed = next(
        (
            e
            for e in path
            if isinstance(e, ev.Observed) and e.step == commit.step and e.call_id == commit.call_id
        ),
        None,
    )
    files = ", ".join(commit.paths) or "its files"
    if observed is not None and observed.summary.endswith("-> committed before the interruption"):
        # Written so by a version that logged a change found in place at a resume as a commit.
        return (
            f"the commit of step {commit.step} was recorded, without an id, when the session "
            f"resumed and found its change already in {files} (an older version recorded so a "
            "change no commit of the session had made, such as the same edit typed by hand), "
            "so the rewind cannot tell what to restore: rewind to "
            f"step {commit.step} or later, or put {files} back by hand"
        )
    return (
        f"the log cannot name the commit of step {commit.step} (it was written by an older "
        f"version or edited), so it cannot be undone: rewind to step {commit.step} or later, "
        f"or put {files} back by hand"
    )


def _stale(recorded: ev.DiffStaged | None, proposal: Proposal) -> str | None:
    """What changed since a resumed call was first staged, if anything did."""
    if recorded is None:
        return None
    changed = [
        c.path
        for c in proposal.changes
        if recorded.base.get(c.path, "?")
        != (sha256(c.old_bytes) if c.old_bytes is not None else None)
    ]
    if not changed and proposal.diff == recorded.diff:
        return None
    # A call that no longer stages (its file deleted, its text gone) names the files it
    # was staged on.
    where = ", ".join(changed or proposal.paths or recorded.paths) or "the target"
    return (
        f"{where} changed since this call was first staged: the diff is staged again "
        "against the files as they are now"
    )


MAX_MESSAGE_CHARS = 20_000  # what a person says or asks in one go (a file can be read instead)


def check_task(task: str) -> None:
    """ValueError when ``task`` is longer than what a person says in one go: a first task is
    bounded as a next task and a message are."""
    _check_length(task, "a task")


def _check_length(text: str, what: str) -> None:
    if len(text) > MAX_MESSAGE_CHARS:
        raise ValueError(
            f"{what} of {len(text):,} characters is too long (at most {MAX_MESSAGE_CHARS:,}): "
            "put the text in a file in the workspace and point the agent at it"
        )


def _bounded_reason(reason: str) -> str:
    """``reason`` cut to ``MAX_MESSAGE_CHARS``: it goes to the model and the log as a message
    does (a page or a pasted line may send megabytes), and a decision is never refused for it."""
    if not isinstance(reason, str) or len(reason) <= MAX_MESSAGE_CHARS:
        return reason
    return f"{reason[:MAX_MESSAGE_CHARS]} [... {len(reason) - MAX_MESSAGE_CHARS:,} characters cut]"


def _kept_by(log: Path, root: Path) -> bool:
    """Whether ``log`` is in the sessions folder of the workspace at ``root``."""
    try:
        return log.resolve().parent == (root / ".grinta" / "sessions").resolve()
    except OSError:
        return False


def _drop_torn_tail(path: Path) -> None:
    """Cut a log's last line when a crash left it half-written: appending after it would
    make it a broken line in the middle of the log. Never through a symlink."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # appending will say what is wrong with it
    with os.fdopen(fd, "rb+") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


class _Selected:
    """An ``ApproveHunks`` decision, staged: the proposal of the accepted hunks."""

    def __init__(self, proposal: Proposal, accepted: tuple[int, ...], reason: str, note: str):
        self.proposal = proposal
        self.accepted = accepted
        self.reason = reason
        self.note = note
