"""The "Grinta" persona for Jupyter AI v3: jupyter-ai-acp-client's ACP persona running ``grinta acp``.

Loaded by Jupyter AI's persona manager through the ``jupyter_ai.personas``
entry point (pyproject.toml); see the package docstring for the contract.
Everything a chat shows comes from the ACP agent: tool calls with their
staged diffs, permission buttons (Approve / Veto), the model's text. This
class only says which agent to start, how the persona looks, and what of a
chat message becomes grinta's prompt.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, ClassVar

from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_persona_manager import PersonaDefaults
from jupyterlab_chat.models import Message

from grinta_jupyter.jupyter_ai import AGENT_COMMAND, AVATAR, PERSONA_NAME


# jupyter-ai-acp-client ships no type information, so its base class is Any to mypy.
class GrintaPersona(BaseAcpPersona):  # type: ignore[misc]
    """Grinta in the chat: each chat is one grinta session, run by one shared ``grinta acp``."""

    # The client prepends this to a session's first prompt, telling the agent to edit
    # notebooks through MCP tools. grinta takes no MCP servers and edits notebooks with
    # its own cell tools, validated before an atomic commit: the note would mislead it.
    NOTEBOOK_EDITING_GUIDANCE: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=list(AGENT_COMMAND), **kwargs)

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

    async def process_message(self, message: Message) -> None:
        """Hand the message to grinta as its prompt, without the ``@Grinta`` it starts with."""
        await super().process_message(replace(message, body=self.prompt_of(message.body)))

    def prompt_of(self, body: str) -> str:
        """``body`` without a leading mention of this persona (``@Grinta``, ``@Grinta:``)."""
        mention = re.escape(self.as_user().mention_name)
        return re.sub(rf"^\s*@{mention}(?![\w-]):?\s*", "", body, count=1)
