"""API keys kept in this process's memory only: what the notebook panel's key field holds.

    HELD.put("openai", key)     # the key field's Enter: the key for that provider
    HELD.get("openai")          # what configured sessions of this kernel use
    HELD.drop("openai")         # forgotten (the field's Forget, or the provider rejected it)

Where a held key goes, and where it never goes:

- into the ``LiteLLMModel`` of the next session for that provider, as its ``api_key``
  (``apply_held_key``), and from there into the request to the provider;
- never into ``os.environ``: commands the agent runs get an environment without it
  (they would inherit any variable the kernel set), and nothing else in the
  kernel can pick it up by accident;
- never into a widget trait (the notebook may save widget state), the event log,
  or a file. Every key put here is also ``runtime.secrets.hold``-ed, so any text
  grinta shows or logs has it as ``[REDACTED]``, even after it was dropped.

Thread-safe: the panel's comm handler, the kernel's cells and worker threads may
all read it.
"""

from __future__ import annotations

import threading

from grinta_jupyter.agent.models.litellm_model import clean_key
from grinta_jupyter.runtime.secrets import hold

__all__ = ["HELD", "HeldKeys"]


class HeldKeys:
    """Provider name -> API key, in memory only."""

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # names only, never a value
        return f"HeldKeys({sorted(self.providers())})"

    def put(self, provider: str, key: str) -> None:
        """Hold ``key`` for ``provider`` (replacing any); a blank key is a developer mistake.

        Held as the model will send it (``clean_key``: without a byte order mark, quotes or
        whitespace around it): the redaction then hides the key the provider sees, and a
        refusal of that key finds it here to forget it.
        """
        cleaned = clean_key(key)
        if not provider or not cleaned:
            raise ValueError("a held key needs a provider and a non-blank key")
        hold(cleaned)
        with self._lock:
            self._keys[provider] = cleaned

    def get(self, provider: str | None) -> str | None:
        with self._lock:
            return self._keys.get(provider or "")

    def drop(self, provider: str) -> bool:
        """Forget ``provider``'s key; True when there was one."""
        with self._lock:
            return self._keys.pop(provider, None) is not None

    def providers(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._keys)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()


# The one store of this process (a kernel): the panel writes it, sessions read it.
HELD = HeldKeys()
