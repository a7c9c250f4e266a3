"""The "Grinta" persona for Jupyter AI v3: jupyter-ai-acp-client's ACP persona running ``grinta acp``.

Loaded by Jupyter AI's persona manager through the ``jupyter_ai.personas``
entry point (pyproject.toml); see the package docstring for the contract.
Everything a chat shows comes from the ACP agent: tool calls with their
staged diffs, permission buttons (Approve / Veto), the model's text. This
class only says which agent to start, how the persona looks, what of a chat
message becomes grinta's prompt, and where a message sent while grinta works
goes (to the model, not behind the task); and it stops a closed chat's turn. When the
agent process ends on its own (a crash, an out-of-memory kill), the chat says so in one
line and the next message starts a new agent, which loads the chat's session from its log.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import replace
from typing import Any, ClassVar

from acp import text_block
from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_persona_manager import PersonaDefaults
from jupyterlab_chat.models import Message

from grinta_jupyter.jupyter_ai import AGENT_COMMAND, AVATAR, PERSONA_NAME

EXIT_WAIT = 2.0  # seconds to wait for a crashed agent's exit code, to say it in the chat


# jupyter-ai-acp-client ships no type information, so its base class is Any to mypy.
class GrintaPersona(BaseAcpPersona):  # type: ignore[misc]
    """Grinta in the chat: each chat is one grinta session, run by one shared ``grinta acp``."""

    # The client prepends this to a session's first prompt, telling the agent to edit
    # notebooks through MCP tools. grinta takes no MCP servers and edits notebooks with
    # its own cell tools, validated before an atomic commit: the note would mislead it.
    NOTEBOOK_EDITING_GUIDANCE: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=list(AGENT_COMMAND), **kwargs)
        self._closing = False  # shutdown() began: a connection closing is no error to show
        self._prepared_on: object = None  # the shared client this chat's session was made on

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name=PERSONA_NAME,
            description=(
                "A step-by-step coding agent: every write is staged, validated and shown "
                "as a diff, and waits for your approval before it touches a file."
            ),
            avatar_path=str(AVATAR),
            # grinta builds its own prompt (its tools, the workspace's rules files).
            system_prompt="grinta's own",
        )

    async def on_message(self, message: Message) -> None:
        """A message while grinta works goes to the model at its next turn (docs/jupyter-ai.md).

        Jupyter AI would hold it until the task ends (a persona answers one message at a
        time), and its ACP client cancels the turn, with the write waiting for a click,
        before it sends a prompt. grinta's agent reads a prompt sent while its task runs as
        a message to the model (``Session.say``), so it is sent straight to the agent. One
        that crosses the task's end is its next task. A message with attachments still
        waits for the end, where the client resolves them.

        The mode the sender's picker shows rides on the message (its metadata) and applies
        first, as for any message: a person who switches to *Ask before every step* and says
        so while grinta runs without asking must not see the next writes go through unasked.
        """
        if not self.processing or message.attachments:
            self._forget_a_stopped_agent()
            await super().on_message(message)
            return
        try:
            await self.apply_specs_in_message(message)
            client = await self.get_client()
            connection = await client.get_connection()
            await connection.prompt(
                prompt=[text_block(self.prompt_of(message.body))],
                session_id=await self.get_session_id(),
            )
        except ConnectionError:
            pass  # the agent stopped: the task this message was said to tells the chat
        except Exception as exc:
            if not self._closing:
                await self.handle_uncaught_exception(exc)

    async def prepare(self) -> None:
        await super().prepare()
        self._prepared_on = type(self).__dict__.get("_client_future")

    async def process_message(self, message: Message) -> None:
        """Hand the message to grinta as its prompt, without the ``@Grinta`` it starts with."""
        try:
            await super().process_message(replace(message, body=self.prompt_of(message.body)))
        except ConnectionError:
            if self._closing:
                # The server stopped or the chat closed mid-turn: nothing to show. The
                # session stopped where it was; the chat reopened goes on with it.
                return
            # The agent process ended on its own. Its buttons would go nowhere; the
            # next message starts a new agent, which loads this session from its log.
            self._settle_buttons()
            self.send_message(
                f"grinta's agent process stopped ({await self._agent_exit()}) during this task; "
                "nothing more was written. Send a message to go on: the session is "
                "loaded again from its log, and a write that was waiting is asked again."
            )

    async def _agent_exit(self) -> str:
        """How the shared agent process ended, in words (its exit code when known)."""
        process = _result(type(self).__dict__.get("_subprocess_future"))
        if process is None:
            return "its connection closed"
        # Its output closed a moment before the exit is reaped; one that lingers is not waited for.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), EXIT_WAIT)
        if process.returncode is None:
            return "its connection closed"
        if process.returncode < 0:
            return f"killed by signal {-process.returncode}"
        return f"exit code {process.returncode}"

    def _forget_a_stopped_agent(self) -> None:
        """Make the next ``prepare()`` start a new agent if the shared one has ended.

        The client keeps its agent process for the server's life: once the process is gone,
        every message would meet "Connection closed". The first chat to notice drops the
        shared process and client; each chat whose session was made on a dropped client
        prepares again, which loads its session in the new agent.
        """
        cls = type(self)
        process = _result(cls.__dict__.get("_subprocess_future"))
        stdout = getattr(process, "stdout", None)
        if process is not None and (
            process.returncode is not None or (stdout is not None and stdout.at_eof())
        ):
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()  # its output closed: no use keeping it
            cls._subprocess_future = None
            cls._client_future = None
        if self._prepared_on is not None and self._prepared_on is not cls.__dict__.get(
            "_client_future"
        ):
            self._prepared_on = None
            self._client_session_future = None
            self._prepare_task = None

    async def shutdown(self) -> None:
        """Stop the persona; a turn in flight is cancelled when the agent outlives this chat.

        The agent serves every chat: when others still use it, it is not stopped, and the
        turn of this closed chat would go on (writing, in *Run without asking*) with nobody
        to see it. When it is the last, stopping the agent ends the turn (resumably, unless
        the agent records the stop before its process ends).
        """
        self._closing = True
        if self.processing and self._client_started():
            client = await self.get_client()
            if len(client.list_sessions()) > 1:
                await self.cancel_response()
        try:
            await super().shutdown()
        finally:
            self._settle_buttons()

    def _settle_buttons(self) -> None:
        """Take the Approve/Veto buttons off this persona's tool calls still waiting.

        Once the persona is gone nobody hears a click on them, yet the saved chat would
        keep them live. They are marked answered without an answer, as the client marks
        a request it cancels itself; the write stays undecided in grinta's session, and
        the chat reopened asks it again, in a new message.
        """
        try:
            ids = self._own_message_ids()
        except Exception:  # the chat document is gone with the server: nothing to keep
            return
        for message_id in ids:
            with contextlib.suppress(Exception):  # a message spoilt by a writer: left as is
                self._settle(message_id)

    def _own_message_ids(self) -> list[str]:
        """The ids of this persona's messages in the chat."""
        ymessages = getattr(self.chat, "ymessages", None)
        if ymessages is None:  # a chat kept by the server alone (no shared document)
            return [m.id for m in self.chat.get_messages() if m.sender == self.id]
        # Read as dicts (a shared document): one message this server's Message cannot take,
        # written by a newer client, must not keep the others' buttons live.
        return [
            m["id"]
            for m in ymessages.to_py() or []
            if isinstance(m, dict) and m.get("sender") == self.id and isinstance(m.get("id"), str)
        ]

    def _settle(self, message_id: str) -> None:
        message = self.chat.get_message(message_id)
        if message is None or not isinstance(message.metadata, dict):
            return  # metadata any writer of the shared chat could spoil
        calls = message.metadata.get("tool_calls")
        if not isinstance(calls, list):
            return
        waiting = [
            c for c in calls if isinstance(c, dict) and c.get("permission_status") == "pending"
        ]
        if not waiting:
            return
        settled = [{**c, "permission_status": "resolved"} if c in waiting else c for c in calls]
        self.chat.update_message(
            replace(message, metadata={**message.metadata, "tool_calls": settled}),
            trigger_actions=[],
        )

    def _build_history_context(self, *args: Any, **kwargs: Any) -> str:
        """No chat history in a prompt: the task is the message as written.

        A chat whose session cannot be loaded (the chat moved away from its log's folder,
        the log was deleted) starts a new session, and the client would put the chat's last
        50 messages before the message: they would be the new session's task, and can pass
        grinta's bound on a task (20,000 characters), refusing the person's message. The
        client builds that text here (whenever its session load fails, which can end after
        a message began), so nothing is built.
        """
        return ""

    def prompt_of(self, body: str) -> str:
        """``body`` without a leading mention of this persona (``@Grinta``, ``@Grinta:``)."""
        mention = re.escape(self.as_user().mention_name)
        return re.sub(rf"^\s*@{mention}(?![\w-]):?\s*", "", body, count=1)


def _result(future: object) -> Any:
    """The result of a finished, successful task; else None."""
    if not isinstance(future, asyncio.Future) or not future.done() or future.cancelled():
        return None
    if future.exception() is not None:
        return None
    return future.result()
