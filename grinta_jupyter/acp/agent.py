"""``grinta acp``: grinta as an Agent Client Protocol agent; one grinta session per ACP session.

An ACP client (Zed, Jupyter AI's ACP personas, any editor that speaks ACP)
starts ``grinta acp`` and talks JSON-RPC with it over stdio, through the
``agent-client-protocol`` SDK. This module is one more front end: a loop over
``session.updates()`` that reports each update as ACP session updates and
answers each ``NeedsDecision`` with the client's permission answer
(docs/acp.md has the whole mapping).

- ``session/new``: the workspace is the client's ``cwd``; the model is the
  configured one (``GRINTA_MODEL``, ``GRINTA_API_BASE``, ``GRINTA_API_KEY``),
  else the demo model, which says so. The ACP session id is the grinta
  session id (and names its log, ``.grinta/sessions/<id>.jsonl``).
- ``session/prompt``: the first prompt is the task; a prompt while the task
  runs is said to the model (``Session.say``) and waits for the same end; a
  prompt once the task ended, or once the turn was cancelled, is the next
  task (``continue_task``). The prompt answers when the task ends: ``end_turn``,
  ``cancelled``, ``max_tokens`` or ``max_turn_requests`` (the token and step
  budgets).
- ``session/load``: ``Session.resume`` of that log in ``cwd``, after the
  conversation is replayed to the client (acp/replay.py); the next prompt goes
  on with it, and a step that waited when the last process ended is staged
  again and asked again.
- ``session/cancel``: ``Session.stop``: a model call is cut at once; a commit
  or a command in flight finishes (a command is told to end) and is recorded;
  nothing is left half-written. A ``cancelled`` permission outcome is the same.
- Permission: every write and command asks (reads too in the ``review``
  mode). Options: approve once; veto (the model reads "The user vetoed this
  call ... Reason: rejected in CLIENT"); and an "always" that grinta keeps
  narrow: on a read, reads stop asking (the mode goes back to ``ask``); on a
  command, that exact command string runs without asking for the rest of this
  ACP session. Writes never offer it: every write asks again.
- Modes (ACP session modes): ``ask`` (reads run; writes and commands ask;
  the default, or ``auto`` when the configuration says so), ``review``
  (every step asks), ``auto`` (nothing asks; writes are still staged,
  validated and committed atomically).
- Files: when the client can read files, its buffers count (acp/fs.py); the
  commit stays grinta's, on disk, atomic and validated.

Everything grinta shows passes through the session's secret redaction. The
SDK is imported only in this package; nothing else in grinta imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import unquote, urlparse

from acp import PROTOCOL_VERSION, Agent, Client, RequestError, run_agent
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
from acp.helpers import update_agent_message_text, update_agent_thought_text, update_current_mode
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AudioContentBlock,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    StopReason,
    TextContentBlock,
)

from grinta_jupyter import __version__
from grinta_jupyter.acp import toolcalls
from grinta_jupyter.acp.fs import ClientBuffers
from grinta_jupyter.acp.replay import ending, replay
from grinta_jupyter.agent.history import branch_events
from grinta_jupyter.agent.models import Model, ModelError, configured_model
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.step import Step
from grinta_jupyter.agent.updates import (
    Approve,
    ContextCondensed,
    Decision,
    ModelText,
    NeedsDecision,
    SessionEnded,
    StepObserved,
    StepProposed,
    Update,
    Veto,
)
from grinta_jupyter.config import Config
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import LogError, read_log
from grinta_jupyter.runtime.secrets import StreamRedactor

log = logging.getLogger("grinta.acp")

CANCELLED = "cancelled by the user"  # the end reason of a session the client cancelled
GONE = "the ACP client went away"
CLOSE_WAIT = 30.0  # seconds a commit or command in flight gets to finish when the client leaves
# The model's streamed text goes out at most this often, the chunks between joined: a fast
# provider's thousands of chunks a second would be as many messages for the client to apply
# (Jupyter AI turns each into an update of the shared chat document).
# What a send gives out is redacted as a stream (runtime/secrets.StreamRedactor): the end of
# the text that could be part of a secret still being written waits for the rest of it.
TEXT_EVERY_S = 0.05

ModeId = Literal["ask", "review", "auto"]
MODES: dict[str, SessionMode] = {
    "ask": SessionMode(
        id="ask",
        name="Ask before changes",
        description="Reads run; every write and every command asks first.",
    ),
    "review": SessionMode(
        id="review",
        name="Ask before every step",
        description="Reads ask too; answering 'Allow all reads' goes back to 'Ask before changes'.",
    ),
    "auto": SessionMode(
        id="auto",
        name="Run without asking",
        description="Every step runs at once; writes are still staged, validated and atomic.",
    ),
}

# The permission options grinta offers; their ids come back in the client's answer.
APPROVE = "approve"
ALWAYS = "approve-always"
VETO = "veto"

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# JSON can carry lone UTF-16 surrogates ("\\ud800"), which no UTF-8 request to a model holds.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
# The blocks whose content a task can hold: text, and files by their path.
_READABLE = (TextContentBlock, ResourceContentBlock, EmbeddedResourceContentBlock)


@dataclass(eq=False)
class Conversation:
    """One ACP session: its workspace and grinta session (made by the first prompt)."""

    id: str
    root: Path
    model: Model | None  # None: ``problem`` says why no session can start
    problem: str | None
    documents: ClientBuffers | None
    mode: ModeId
    session: Session | None = None
    turn: asyncio.Task[StopReason] | None = None  # the prompt turn driving the session
    asking: asyncio.Future[RequestPermissionResponse] | None = None  # a permission request
    cancelled: bool = False
    cancels: int = 0  # the session/cancel notifications received
    commands: set[str] = field(default_factory=set)  # commands the user allowed always
    held_text: list[str] = field(default_factory=list)  # the model's text not sent yet
    text_redactor: StreamRedactor | None = None  # what the sends of this turn gave out
    text_sent_at: float = 0.0  # time.monotonic() of the last text sent
    text_timer: asyncio.TimerHandle | None = None  # sends the held text once it is due
    text_flush: asyncio.Task[None] | None = None  # that send, while it runs

    @property
    def running(self) -> bool:
        return self.turn is not None and not self.turn.done()


class GrintaAgent(Agent):
    """The ACP agent: maps ACP requests onto grinta sessions (module docstring)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._client: Client | None = None
        self._client_name = "the editor"
        self._reads_files = False  # the client offers fs/read_text_file
        self._conversations: dict[str, Conversation] = {}
        self._loading: dict[str, asyncio.Future[Conversation]] = {}  # resumes in progress

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the agent is not connected to a client")
        return self._client

    # -- lifecycle ------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        fs = client_capabilities.fs if client_capabilities is not None else None
        self._reads_files = bool(fs is not None and fs.read_text_file)
        if client_info is not None:
            self._client_name = client_info.title or client_info.name
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=False
                ),
            ),
            agent_info=Implementation(name="grinta", title="Grinta", version=__version__),
            auth_methods=[],
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        conv = self._open(_workspace(cwd), _new_session_id(), None)
        return NewSessionResponse(session_id=conv.id, modes=_modes(conv.mode))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse | None:
        root = _workspace(cwd)
        if not _SESSION_ID.match(session_id):
            raise _invalid(f"{session_id!r} is not a grinta session id")
        conv = self._conversations.get(session_id)
        if conv is None or conv.session is None:
            conv = await self._resume_once(root, session_id)
        elif conv.root != root:
            raise _invalid(f"session {session_id} works in {conv.root}, not in {root}")
        elif conv.running:
            raise _invalid(f"session {session_id} is working on a prompt; cancel it first")
        session = conv.session
        assert session is not None
        for update in replay(
            branch_events(session.log.events, session.branch), session.root, session.secrets.redact
        ):
            await self.client.session_update(conv.id, update)
        if not session.done:
            await self._say(
                conv,
                "\n\n(grinta: this session was resumed before its task ended; send a message "
                "to go on. A step that was waiting is staged again against the files as they "
                "are now, and asked again.)",
            )
        return LoadSessionResponse(modes=_modes(conv.mode))

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse | None:
        conv = await self._loaded(session_id)
        if mode_id not in MODES:
            raise _invalid(f"no mode {mode_id!r}; modes: {', '.join(MODES)}")
        conv.mode = _mode_id(mode_id)
        if conv.session is not None:
            _apply_mode(conv.session, conv.mode)
        return SetSessionModeResponse()

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        conv = await self._loaded(session_id)
        cancels = conv.cancels
        text = prompt_text(prompt, conv.root)
        if not text:
            await self._say(conv, "(grinta: the message was empty; say what to do.)")
            return PromptResponse(stop_reason="end_turn")
        if not prompt_text([block for block in prompt if isinstance(block, _READABLE)], conv.root):
            # Only pictures or sounds: their stand-in would be the whole task the model reads.
            await self._say(conv, "(grinta cannot read images or sounds; say in words what to do.)")
            return PromptResponse(stop_reason="end_turn")
        if conv.model is None:
            await self._say(conv, f"grinta cannot start a session: {conv.problem}")
            return PromptResponse(stop_reason="end_turn")
        while conv.running and conv.turn is not None:
            running = conv.turn
            assert conv.session is not None
            # While the task runs, a message is for the model, at its next turn. A cancelled
            # turn is only ending (a commit or a command finishing): the message waits for it.
            if not conv.session.done and not conv.cancelled:
                try:
                    conv.session.say(text)
                except ValueError as exc:  # too long
                    await self._say(conv, f"grinta: {exc}")
                    return PromptResponse(stop_reason="end_turn")
                return PromptResponse(stop_reason=await asyncio.shield(running))
            await asyncio.shield(running)  # it is ending: the message is the next task
        if conv.cancels != cancels:  # ... unless a cancel came after it: it is cancelled too
            return PromptResponse(stop_reason="cancelled")
        try:
            if conv.session is None:
                conv.session = self._start(conv, text)
            elif conv.session.done:
                conv.session.continue_task(text)
            else:  # resumed before its task ended
                conv.session.say(text)
        except (ValueError, OSError) as exc:
            await self._say(conv, f"grinta: {exc}")
            return PromptResponse(stop_reason="end_turn")
        conv.cancelled = False
        if conv.documents is not None:
            conv.documents.ask_again()
        turn = conv.turn = asyncio.ensure_future(self._drive(conv))
        return PromptResponse(stop_reason=await asyncio.shield(turn))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        conv = self._conversations.get(session_id)
        if conv is None:
            return
        conv.cancels += 1  # a prompt waiting for the turn to end is cancelled with it
        if conv.running:
            self._cancel(conv)

    async def close(self) -> None:
        """The client went away: stop every session; wait for commits and commands in flight
        and for loads (each opens its session's log); close every session's log."""
        turns = []
        for conv in self._conversations.values():
            if conv.running and conv.turn is not None:
                self._cancel(conv, GONE)
                turns.append(conv.turn)
        if turns:
            await asyncio.wait(turns, timeout=CLOSE_WAIT)
        if self._loading:  # a load goes on after its request is gone: it opens the log
            await asyncio.wait(list(self._loading.values()), timeout=CLOSE_WAIT)
        for conv in self._conversations.values():
            if conv.session is not None:
                conv.session.release()  # a loaded session never prompted held its log

    # -- not offered (the capabilities say so) -----------------------------------------------

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        raise RequestError.method_not_found("session/list")

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        raise RequestError.method_not_found("session/set_config_option")

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        raise RequestError.method_not_found("authenticate")

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        raise RequestError.method_not_found("session/fork")

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        raise RequestError.method_not_found("session/resume")

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse | None:
        raise RequestError.method_not_found("session/close")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- sessions -----------------------------------------------------------------------------

    def _open(self, root: Path, session_id: str, start_model: str | None) -> Conversation:
        conv = self._prepare(root, session_id, start_model)
        self._conversations[session_id] = conv
        return conv

    def _prepare(self, root: Path, session_id: str, start_model: str | None) -> Conversation:
        """A conversation in ``root``, not yet known to requests (``_open`` makes it so)."""
        model, problem = self._model(start_model)
        documents = None
        if self._reads_files:
            client = self.client

            async def read_text(path: str) -> str:
                return (await client.read_text_file(path=path, session_id=session_id)).content

            documents = ClientBuffers(read_text, root, asyncio.get_running_loop())
        return Conversation(
            session_id, root, model, problem, documents, "auto" if self.config.auto else "ask"
        )

    def _model(self, start_model: str | None) -> tuple[Model | None, str | None]:
        """The configured model (the demo model when none is), or why there is none."""
        if self.config.model is None and start_model not in (None, "demo"):
            return None, (
                f"no model is configured, and this session used {start_model!r}: set "
                "GRINTA_MODEL (and its key) in the environment the editor starts grinta with"
            )
        try:
            return configured_model(self.config, require_key=True), None
        except ModelError as exc:
            return None, exc.message

    def _start(self, conv: Conversation, task: str) -> Session:
        assert conv.model is not None
        options = self.config.session_options(conv.root)
        session = Session(
            task,
            model=conv.model,
            root=options["root"],
            toolset=options["toolset"],
            policy=options["policy"],
            limits=options["limits"],
            settings=options["settings"],
            log_dir=options["log_dir"],
            session_id=conv.id,
            documents=conv.documents,
        )
        _apply_mode(session, conv.mode)
        return session

    async def _resume_once(self, root: Path, session_id: str) -> Conversation:
        """A load of a session that another load is resuming (a client that sends it twice)
        waits for that one: two would each open the log, and the one that failed to would
        drop the other's conversation."""
        loading = self._loading.get(session_id)
        if loading is None:
            loading = asyncio.ensure_future(self._resume(root, session_id))
            self._loading[session_id] = loading
            loading.add_done_callback(lambda _: self._loading.pop(session_id, None))
        conv = await asyncio.shield(loading)
        if conv.root != root:
            raise _invalid(f"session {session_id} was loaded in {conv.root}, not in {root}")
        return conv

    async def _resume(self, root: Path, session_id: str) -> Conversation:
        folder = Path(self.config.log_dir).expanduser() if self.config.log_dir else None
        path = (folder or root / ".grinta" / "sessions") / f"{session_id}.jsonl"
        if not path.is_file():
            raise RequestError.resource_not_found(str(path))
        try:
            events = await asyncio.to_thread(read_log, path)
            start = next(e for e in events if isinstance(e, ev.SessionStart))
        except (LogError, StopIteration, OSError) as exc:
            raise _invalid(f"cannot read the log of session {session_id}: {exc}") from None
        if not _works_in(path, Path(start.root), root):
            raise _invalid(
                f"session {session_id} works in {start.root}, not in {root}: open that folder "
                "to load it"
            )
        # Known to requests only once its session is there: a prompt meanwhile (a client that
        # did not wait for this answer) would start a second session on the same log.
        conv = self._prepare(root, session_id, start.model)
        if conv.model is None:
            raise _invalid(f"cannot load session {session_id}: {conv.problem}")
        policy: Literal["ask", "auto"] = "auto" if conv.mode == "auto" else "ask"
        try:
            session = await asyncio.to_thread(
                Session.resume,
                path,
                model=conv.model,
                policy=policy,
                root=root,  # the workspace the client names, where the log was found
                documents=conv.documents,
                settings=self.config.settings(),
            )
        except (LogError, ValueError, OSError) as exc:
            raise _invalid(f"cannot load session {session_id}: {exc}") from None
        _apply_mode(session, conv.mode)
        conv.session = session
        self._conversations[session_id] = conv
        return conv

    async def _loaded(self, session_id: str) -> Conversation:
        """The conversation ``session_id`` names, once a load of it in progress is done."""
        loading = self._loading.get(session_id)
        if loading is not None:
            with contextlib.suppress(Exception):  # the load answers its own failure
                await asyncio.shield(loading)
        return self._conversation(session_id)

    def _conversation(self, session_id: str) -> Conversation:
        conv = self._conversations.get(session_id)
        if conv is None:
            raise RequestError.resource_not_found(f"session {session_id}")
        return conv

    # -- a prompt turn: the loop over the session's updates -----------------------------------

    async def _drive(self, conv: Conversation) -> StopReason:
        session = conv.session
        assert session is not None
        try:
            # updates() is an async generator: closed here if the turn ends early.
            stream = cast("AsyncGenerator[Update, None]", session.updates())
            async with aclosing(stream) as updates:
                async for update in updates:
                    await self._report(conv, update)
                    if isinstance(update, NeedsDecision):
                        await self._decide(conv, update.step)
            await self._send_text(conv)
        except ConnectionError:  # nobody to ask or tell: stop where it is
            conv.cancelled = True
            if not session.done:
                session.stop(GONE)
            return "cancelled"
        except Exception as exc:
            log.exception("the ACP turn of session %s failed", conv.id)
            if not session.done:
                session.stop(f"internal error: {exc!r}")
            with contextlib.suppress(Exception):
                await self._send_text(conv)  # the model's text before the failure
            with contextlib.suppress(Exception):
                failed = session.secrets.redact(f"{exc!r}")  # an error may quote a secret
                await self._say(conv, f"\n\n(grinta failed: {failed}; the session stopped.)")
            return "end_turn"
        finally:  # nothing of this turn is sent after it: text not sent by now is dropped
            if conv.text_timer is not None:
                conv.text_timer.cancel()
                conv.text_timer = None
            conv.held_text.clear()
            conv.text_redactor = None
        if conv.cancelled or session.end_reason in (CANCELLED, GONE):
            return "cancelled"
        if session.end_reason == "budget:tokens":
            return "max_tokens"
        if session.end_reason == "budget:steps":
            return "max_turn_requests"
        return "end_turn"

    async def _report(self, conv: Conversation, update: Update) -> None:
        """Tell the client what ``update`` means to it, if anything."""
        session = conv.session
        assert session is not None
        redact = session.secrets.redact
        if isinstance(update, ModelText):
            if update.text:
                conv.held_text.append(update.text)
                if time.monotonic() - conv.text_sent_at >= TEXT_EVERY_S:
                    await self._send_text(conv, whole=False)
                else:  # sent when due, even if the model pauses
                    self._arm_text(conv)
            return
        await self._send_text(conv)  # the text before what follows it
        if isinstance(update, StepProposed):
            await self.client.session_update(
                conv.id, toolcalls.started(session.root, session.branch, update.step, redact)
            )
        elif isinstance(update, StepObserved):
            notes = await self._read_notes(conv, update.step)
            await self.client.session_update(
                conv.id,
                toolcalls.observed(session.root, session.branch, update.step, redact, notes),
            )
        elif isinstance(update, ContextCondensed):
            await self.client.session_update(
                conv.id,
                update_agent_thought_text(
                    f"(grinta condensed older turns: {update.tokens_before:,} to "
                    f"{update.tokens_after:,} tokens, to stay under {update.budget:,})"
                ),
            )
        elif isinstance(update, SessionEnded) and update.reason not in (CANCELLED, GONE):
            await self._say(conv, redact(_ending(session, update)))

    async def _read_notes(self, conv: Conversation, step: Step) -> list[str]:
        """A read of a file the editor holds unsaved changes of says so."""
        proposal = step.proposal
        if conv.documents is None or proposal.tool != "read" or not proposal.ok:
            return []
        path = str(proposal.args.get("path") or "").split("::", 1)[0]
        if not path or not await conv.documents.differs(path):
            return []
        return [
            f"{path} is open in {self._client_name} with unsaved changes: grinta read the saved "
            "file, and a write to it is refused until it is saved."
        ]

    async def _decide(self, conv: Conversation, step: Step) -> None:
        """Ask the client about a step that waits, and hand its answer to the session."""
        session = conv.session
        assert session is not None
        if not (session.waiting and session.pending is step):
            return  # decided elsewhere meanwhile
        proposal = step.proposal
        if proposal.command and proposal.command in conv.commands and not step.stale:
            await self._hand(conv, step, Approve())
            return
        request = conv.asking = asyncio.ensure_future(
            self.client.request_permission(
                session_id=conv.id,
                tool_call=toolcalls.asking(
                    session.root, session.branch, step, session.secrets.redact
                ),
                options=permission_options(step),
            )
        )
        try:
            await asyncio.wait({request})
        finally:
            conv.asking = None
        if request.cancelled():  # cancelled: ``cancel`` stopped the session
            return
        failure = request.exception()
        if failure is not None:
            if isinstance(failure, ConnectionError):
                raise failure
            log.warning("the permission request of step %d failed: %r", step.number, failure)
            self._cancel(conv)
            return
        outcome = request.result().outcome
        if isinstance(outcome, DeniedOutcome):  # the client cancelled the turn
            self._cancel(conv)
            return
        await self._hand(conv, step, await self._decision(conv, step, outcome.option_id))

    async def _decision(self, conv: Conversation, step: Step, option: str) -> Decision:
        """The decision an option the user chose stands for (and what "always" switches on)."""
        proposal = step.proposal
        if option == VETO:
            return Veto(f"rejected in {self._client_name}")
        if option not in {offered.option_id for offered in permission_options(step)}:
            return Veto(f"{self._client_name} answered with an option grinta did not offer")
        if option == ALWAYS and proposal.kind == "read":
            conv.mode = "ask"
            if conv.session is not None:
                _apply_mode(conv.session, conv.mode)
            await self.client.session_update(conv.id, update_current_mode("ask"))
        elif option == ALWAYS and proposal.command:
            conv.commands.add(proposal.command)
        return Approve()

    async def _hand(self, conv: Conversation, step: Step, decision: Decision) -> None:
        session = conv.session
        assert session is not None
        if not (session.waiting and session.pending is step):
            return
        session.decide(decision, step)
        if isinstance(decision, Approve):  # a commit or a command runs now
            await self.client.session_update(
                conv.id, toolcalls.progress(session.branch, step, "in_progress")
            )

    def _cancel(self, conv: Conversation, reason: str = CANCELLED) -> None:
        """Stop the turn: a permission request in flight is dropped, the session stopped, and
        nothing waits for the client's files any more (a commit that needed them is refused)."""
        conv.cancelled = True
        if conv.asking is not None:
            conv.asking.cancel()
        if conv.documents is not None:
            conv.documents.stop_asking()
        if conv.session is not None and not conv.session.done:
            conv.session.stop(reason)

    def _arm_text(self, conv: Conversation) -> None:
        """Send the held text when it is due: ``TEXT_EVERY_S`` after the last send."""
        if not conv.held_text or conv.text_timer is not None:
            return
        due = conv.text_sent_at + TEXT_EVERY_S
        conv.text_timer = asyncio.get_running_loop().call_later(
            max(due - time.monotonic(), 0.0), self._text_due, conv
        )

    def _text_due(self, conv: Conversation) -> None:
        """The timer of held text: send it now, unless something else sent it first."""
        conv.text_timer = None
        flush = conv.text_flush = asyncio.ensure_future(self._send_text(conv, whole=False))
        # Its failure (the client gone) is met again by the turn's next send.
        flush.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _send_text(self, conv: Conversation, *, whole: bool = True) -> None:
        """Send the model's text held back (``TEXT_EVERY_S``) as one chunk, redacted; while
        the model streams (``whole`` False), less its end that could be part of a secret
        still being written (kept until the text goes on past it or the reply ends)."""
        flush = conv.text_flush
        if flush is not None and flush is not asyncio.current_task():
            conv.text_flush = None
            await asyncio.wait({flush})  # the timer's send goes first
        if conv.text_timer is not None:
            conv.text_timer.cancel()
            conv.text_timer = None
        if conv.session is None:
            return
        if conv.text_redactor is None:
            conv.text_redactor = StreamRedactor(conv.session.secrets)
        text = conv.text_redactor.feed("".join(conv.held_text))
        conv.held_text.clear()
        if whole:
            text += conv.text_redactor.end()
        if text:
            conv.text_sent_at = time.monotonic()
            await self._say(conv, text)
        self._arm_text(conv)

    async def _say(self, conv: Conversation, text: str) -> None:
        await self.client.session_update(conv.id, update_agent_message_text(text))


# -- the pieces -----------------------------------------------------------------------------


def permission_options(step: Step) -> list[PermissionOption]:
    """What the user may answer about ``step``; writes are never allowed "always"."""
    proposal = step.proposal
    veto = PermissionOption(option_id=VETO, name="Veto", kind="reject_once")
    if proposal.kind == "read":
        return [
            PermissionOption(option_id=APPROVE, name="Allow", kind="allow_once"),
            PermissionOption(option_id=ALWAYS, name="Allow all reads", kind="allow_always"),
            veto,
        ]
    if proposal.kind == "command" and not step.stale:
        return [
            PermissionOption(option_id=APPROVE, name="Run", kind="allow_once"),
            PermissionOption(
                option_id=ALWAYS, name="Always run this exact command", kind="allow_always"
            ),
            veto,
        ]
    return [PermissionOption(option_id=APPROVE, name="Approve", kind="allow_once"), veto]


def prompt_text(blocks: Sequence[PromptBlock], root: Path) -> str:
    """A prompt as the text of a task: mentioned files by their workspace path."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            piece = block.text
        elif isinstance(block, ResourceContentBlock):
            piece = f"`{_mentioned(block.uri, root)}`"
        elif isinstance(block, EmbeddedResourceContentBlock):
            piece = f"`{_mentioned(block.resource.uri, root)}`"
        else:
            piece = "[an image or a sound, which grinta cannot read]"
        if parts and piece and not parts[-1][-1:].isspace() and not piece[:1].isspace():
            piece = " " + piece
        parts.append(piece)
    return _LONE_SURROGATE.sub("\ufffd", "".join(parts)).strip()


def _mentioned(uri: str, root: Path) -> str:
    """A mentioned file's path relative to the workspace (the URI itself when outside it)."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return uri
    path = Path(unquote(parsed.path))
    if not path.is_absolute():
        return path.as_posix()
    with contextlib.suppress(ValueError):
        return path.relative_to(root).as_posix()
    try:
        return path.resolve().relative_to(root).as_posix()
    except (ValueError, OSError, RuntimeError):  # outside; a NUL byte; a symlink loop
        return uri


def _ending(session: Session, update: SessionEnded) -> str:
    if update.reason == "error":
        errors = [e for e in session.log.events if isinstance(e, ev.ErrorEvent)]
        if errors:
            return f"\n\n(grinta: the session stopped: {errors[-1].code}: {errors[-1].message})"
    return ending(update.reason, update.summary)


def _apply_mode(session: Session, mode: ModeId) -> None:
    session.policy = "auto" if mode == "auto" else "ask"
    session.auto_reads = mode != "review"


def _modes(current: ModeId) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=list(MODES.values()))


def _mode_id(text: str) -> ModeId:
    for mode in ("ask", "review", "auto"):
        if text == mode:
            return mode
    raise _invalid(f"no mode {text!r}")


def _workspace(cwd: str) -> Path:
    """The workspace a client names. ACP says absolute; a relative one is taken from the
    folder the client started grinta in, rather than refused; an empty one names no folder."""
    from grinta_jupyter.runtime.workspace import root_problem

    if not cwd.strip():  # not "." (wherever the editor started grinta: its home, "/")
        raise _invalid("the workspace is empty: name the project folder (an absolute cwd)")
    try:
        path = Path(cwd).expanduser()
    except RuntimeError:  # "~someone" with no such user: no home to expand
        path = Path(cwd)
    try:
        folder = path.is_dir()
    except OSError:  # a name too long for the file system (is_dir raises, not False)
        folder = False
    if not folder:
        raise _invalid(f"the workspace {cwd!r} is not a folder")
    path = path.resolve()
    # The file system root (an editor started without a project: cwd "/"), or a .grinta that
    # is a file, a link or unwritable: refused here, not a session writing /.grinta and
    # indexing every file system, or one that ends at once on a log it cannot open.
    problem = root_problem(path, f"the workspace {cwd!r}")
    if problem is not None:
        raise _invalid(problem)
    return path


def _works_in(log: Path, recorded: Path, root: Path) -> bool:
    """Whether the session of ``log``, started in ``recorded``, may be loaded in ``root``.

    Its own workspace, or one whose sessions folder holds the log (the project moved or
    copied with its ``.grinta``). A log in a shared folder (``GRINTA_LOG_DIR``) of another
    project is not: its conversation would be replayed as this one's, and a write that
    waited staged again and committed here, in files that session never read.
    """
    try:
        return (
            recorded.resolve() == root
            or log.resolve().parent == (root / ".grinta" / "sessions").resolve()
        )
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _invalid(message: str) -> RequestError:
    return RequestError(-32602, message)


# -- running on stdio -----------------------------------------------------------------------


class NotAPipe(RuntimeError):
    """Standard input or output is a file or a terminal: an ACP client was not what started us."""


async def serve(config: Config, protocol_out: Any) -> None:
    """Run the agent on stdin and ``protocol_out`` (the real stdout) until the client leaves:
    it closes stdin, or it stops reading what the agent writes."""
    agent = GrintaAgent(config)
    messages = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    try:
        stdin, reader, writer, writing = await _stdio(protocol_out)
    except ValueError as exc:  # asyncio's pipe transports take pipes and sockets only
        raise NotAPipe(
            f"standard input and output must be pipes from an ACP client ({exc}); an editor "
            "such as Zed starts `grinta acp` and talks to it through them"
        ) from None
    sieve = asyncio.ensure_future(_messages_only(reader, messages))
    writing.when_lost(lambda: _client_left(sieve, messages))
    try:
        await run_agent(agent, writer, messages, **_answered_not_kept())
    finally:
        sieve.cancel()
        await agent.close()
        # Closed here, while the loop runs: left to the garbage collector, the writer closed
        # itself after ``asyncio.run`` had closed the loop ("Exception ignored ... Event loop
        # is closed" on stderr when a thread collected it in between).
        writer.close()
        stdin.close()  # open still when the client stopped reading but did not close it
        await asyncio.sleep(0)  # the transports' connection_lost close the pipes


async def _stdio(
    protocol_out: Any,
) -> tuple[asyncio.ReadTransport, asyncio.StreamReader, asyncio.StreamWriter, _Writing]:
    """Streams on stdin (its transport, and a reader) and ``protocol_out``, as the SDK's
    ``stdio_streams`` makes them, but with a writer that notices the client has stopped
    reading (``_Writing``)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    stdin, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    writing = _Writing()
    transport, _ = await loop.connect_write_pipe(lambda: writing, protocol_out)
    return stdin, reader, asyncio.StreamWriter(transport, writing, None, loop), writing


class _Writing(asyncio.BaseProtocol):
    """The protocol under the writer to the client: flow control as asyncio's streams do it,
    and the end of the pipe noticed. The SDK's own ignores it, and asyncio's pipe transport
    then drops every write unsaid: a client that stopped reading (closed its end) was sent a
    whole turn, and more model calls, for nobody, and a permission asked of it waited
    forever, its session's log locked. Here every write after that fails (the turn ends as
    when the client went away) and ``when_lost``'s callback is called, once."""

    def __init__(self) -> None:
        self._on_lost: Callable[[], None] | None = None
        self._paused = False
        self._drained: asyncio.Future[None] | None = None
        self._gone = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def when_lost(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the pipe is gone (now, if it already is)."""
        self._on_lost = callback
        if self._gone:
            self._tell()

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone = True
        self._wake()
        self._tell()

    def _tell(self) -> None:
        tell, self._on_lost = self._on_lost, None
        if tell is not None:
            tell()

    async def _drain_helper(self) -> None:  # what asyncio.StreamWriter.drain awaits
        if not self._gone and self._paused:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        if self._gone:
            raise ConnectionResetError("the ACP client stopped reading what grinta writes")

    def _wake(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)


def _client_left(sieve: asyncio.Future[None], messages: asyncio.StreamReader) -> None:
    """The client stopped reading: end the connection as if it had closed stdin too (the
    requests it still sends could not be answered)."""
    sieve.cancel()
    messages.feed_eof()


def _answered_not_kept() -> dict[str, Any]:
    """``run_agent``'s arguments for the SDK's record of requests, without its list of every
    request the client ever sent.

    The SDK's own store (0.11) appends each incoming request, params and answer included, to
    a list that nothing reads or empties: a ``grinta acp`` that an editor keeps for days held
    every prompt it was sent (a pasted log refused as too long too), megabytes each. Requests
    grinta sends (permission, files) are tracked as before, until answered. An SDK without
    that store (0.12 has none) keeps its own way.
    """
    try:
        from acp.task.state import IncomingMessage, InMemoryMessageStateStore
    except ImportError:
        return {}

    class AnsweredNotKept(InMemoryMessageStateStore):
        def begin_incoming(self, method: str, params: Any) -> IncomingMessage:
            return IncomingMessage(method=method, params=None)

    return {"state_store": AnsweredNotKept()}


async def _messages_only(source: asyncio.StreamReader, sink: asyncio.StreamReader) -> None:
    """Pass the client's lines on to the SDK's reader, all but those that are JSON and no
    JSON-RPC message (an array, ``null``, an error that is no object): on those, the SDK's
    read loop fails, ending the connection and every session on it. (What is not JSON at
    all, the SDK skips itself.)"""
    try:
        while line := await _line(source):
            if _message_or_not_json(line):
                sink.feed_data(line)
            else:
                log.warning("skipped a line from the client that is no JSON-RPC message")
    finally:
        sink.feed_eof()


async def _line(reader: asyncio.StreamReader) -> bytes:
    """The next line, however long (b"" once the client closed its end)."""
    chunks: list[bytes] = []
    try:
        while True:
            try:
                chunks.append(await reader.readuntil(b"\n"))
                break
            except asyncio.LimitOverrunError as exc:
                chunks.append(await reader.readexactly(exc.consumed))
    except asyncio.IncompleteReadError as exc:  # the last line, with no newline
        chunks.append(exc.partial)
    return b"".join(chunks)


def _message_or_not_json(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return True
    return isinstance(message, dict) and isinstance(message.get("error") or {}, dict)
