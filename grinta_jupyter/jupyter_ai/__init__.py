"""Grinta in Jupyter AI's chat: a persona that runs ``grinta acp`` (docs/jupyter-ai.md).

``pip install 'grinta-jupyter[jupyter-ai]'`` installs Jupyter AI v3 and
``jupyter-ai-acp-client``; this package's entry point (group
``jupyter_ai.personas``, name ``grinta``) gives the chat a "Grinta" persona.
``@Grinta fix the failing test`` starts a grinta session whose tool calls,
diffs and permission requests show in the chat, through the ACP agent in
``grinta_jupyter/acp`` run as a subprocess of the Jupyter server.

The contract:

- The agent is ``AGENT_COMMAND``: this interpreter (the Jupyter server's, which
  imported grinta to load the persona) running ``-m grinta_jupyter.acp``, so it
  works whether or not the ``grinta`` script is on the server's PATH. It
  inherits the server's environment: ``GRINTA_MODEL``, ``GRINTA_API_BASE``,
  ``GRINTA_API_KEY`` and the budgets are read there (docs/acp.md).
- One agent process serves every chat (jupyter-ai-acp-client's design); each
  chat is one ACP session, and so one grinta session and log, whose workspace
  is the chat file's folder.
- The prompt grinta receives is the message without the leading ``@Grinta``,
  and without the client's note about notebook tools over MCP: grinta edits
  notebooks with its own validated cell tools and takes no MCP servers.

Nothing here is imported by grinta itself; ``persona.py`` imports Jupyter AI and
is loaded only by Jupyter AI's persona manager, through the entry point.
"""

from __future__ import annotations

import sys
from pathlib import Path

AVATAR = Path(__file__).with_name("grinta.svg")
"""The persona's avatar in the chat (an SVG shipped in the package)."""

AGENT_COMMAND: tuple[str, ...] = (sys.executable, "-m", "grinta_jupyter.acp")
"""The ACP agent the persona starts: ``grinta acp`` run by this interpreter."""

PERSONA_NAME = "Grinta"
"""The persona's name in the chat, and so its mention: ``@Grinta``."""

__all__ = ["AGENT_COMMAND", "AVATAR", "PERSONA_NAME"]
