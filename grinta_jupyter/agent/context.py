"""What the model sees: the system prompt, the task, and the history, with old
observations masked to one line beyond a window."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

SYSTEM_PROMPT = """\
You are grinta, a careful coding agent working in the folder {root}.
You act through tools, one call at a time; a person may approve, edit or veto each write or command.
- Look before you edit: search and read the code involved. Read definitions by name with read(symbol=...).
- Writes must target exactly: replace_string needs text that occurs once; edit_symbols needs a unique name.
  If a write is refused, read the candidates in the error and retry precisely.
- Send code with real newlines, never JSON-escaped text, and never elide code with placeholders.
- After editing, run the relevant tests. Call finish with a short summary only once the change is verified.
"""

MASK_NOTE = "[older result masked to save context: {summary}]"


@dataclass
class Context:
    """The conversation so far, rendered for a model request."""

    system: str
    task: str
    keep_observations: int = 5
    history: list[dict[str, Any]] = field(default_factory=list)
    # one-line summaries of tool results, by tool_call_id
    summaries: dict[str, str] = field(default_factory=dict)

    @classmethod
    def start(cls, root: str, task: str, keep_observations: int = 5) -> Context:
        return cls(SYSTEM_PROMPT.format(root=root), task, keep_observations)

    def add_assistant(self, text: str, tool_calls: list[dict[str, str]]) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if tool_calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in tool_calls
            ]
        self.history.append(message)

    def add_tool_result(self, call_id: str, name: str, output: str, summary: str) -> None:
        self.history.append(
            {"role": "tool", "tool_call_id": call_id, "name": name, "content": output}
        )
        self.summaries[call_id] = summary

    def add_user(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})

    def messages(self) -> tuple[list[dict[str, Any]], int]:
        """The request messages, and how many observations were masked."""
        tool_indexes = [i for i, m in enumerate(self.history) if m["role"] == "tool"]
        masked = set(tool_indexes[: max(0, len(tool_indexes) - self.keep_observations)])
        rendered = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.task},
        ]
        for i, message in enumerate(self.history):
            if i in masked:
                summary = self.summaries.get(message["tool_call_id"], "")
                message = {**message, "content": MASK_NOTE.format(summary=summary)}
            rendered.append(message)
        return rendered, len(masked)


def digest(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def count_request_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Prompt tokens of a request, counted offline with o200k (an estimate for other tokenizers)."""
    from grinta_jupyter.tools.tokens import count_tokens

    return count_tokens(json.dumps(messages, separators=(",", ":"))) + count_tokens(
        json.dumps(tools, separators=(",", ":"))
    )


def one_line(tool: str, args: dict[str, Any], output: str) -> str:
    """A short summary of an observation, kept when its full text is masked."""
    target = (
        args.get("path") or args.get("symbol") or args.get("query") or args.get("command") or ""
    )
    first = output.strip().splitlines()[0] if output.strip() else ""
    lines = output.count("\n") + 1 if output else 0
    return f"{tool} {str(target)[:80]} -> {first[:100]} ({lines} lines)"
