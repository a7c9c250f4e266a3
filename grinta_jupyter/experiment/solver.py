"""SolverModel: an offline stand-in for a model, for running the experiment without one.

It plays a task's reference solution (intent tool calls), translated into
whichever toolset the session offers, with seeded noise shared by both
toolsets: sometimes an exact-match edit is first sent with the wrong
indentation (then corrected), sometimes a file is read once more. Under the
broad toolset each write is expressed with one of the tools that can do it,
picked at random, as a model shopping between overlapping tools would.

It exercises the whole pipeline (sessions, logs, checks, statistics). Its
numbers are NOT evidence about real models: docs/experiment.md says why.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grinta_jupyter.agent.models.base import ModelReply, ToolCall

MISTAKE_RATE = 0.25
REREAD_RATE = 0.2


class SolverModel:
    """Plays ``plan`` (intent calls) in the offered toolset; a pure function of (plan, toolset, seed)."""

    def __init__(
        self,
        plan: list[tuple[str, dict[str, Any]]],
        toolset: str,
        seed: int,
        root: Path,
        name: str = "scripted",
    ):
        self.name = name
        self.toolset = toolset
        self.root = Path(root)
        self.rng = random.Random(f"{seed}:{toolset}:{json.dumps(plan, sort_keys=True)}")
        self.noise = random.Random(seed)  # the same noise decisions under either toolset
        self.plan = list(plan)
        self.queue: list[tuple[str, dict[str, Any]]] = []
        self.turn = 0

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        if not tools:  # a request for text (a condensation's summary, GRINTA_CONDENSE=model):
            # the plan holds tool calls only; no text makes the session keep its own digest
            return ModelReply(text="", tool_calls=[], finish_reason="stop")
        if not self.queue:
            self._refill()
        name, args = (
            self.queue.pop(0) if self.queue else ("finish", {"summary": "nothing left to do"})
        )
        self.turn += 1
        return ModelReply(
            text="",
            tool_calls=[ToolCall(f"call_{self.turn}", name, json.dumps(args))],
            finish_reason="tool_calls",
        )

    def _refill(self) -> None:
        if not self.plan:
            return
        name, args = self.plan.pop(0)
        if (
            name in ("replace_string", "edit_symbols", "multiedit", "create")
            and self.noise.random() < REREAD_RATE
        ):
            path = _first_path(args)
            if path:
                self.queue.append(("read", {"path": path}))
        if name == "replace_string" and self.noise.random() < MISTAKE_RATE:
            wrong = {**args, "old_string": _misindent(args["old_string"])}
            if wrong["old_string"] != args["old_string"]:
                self.queue.append(self._translate("replace_string", wrong))
        self.queue.append(self._translate(name, args))

    # -- translation into the broad toolset ------------------------------------------------

    def _translate(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self.toolset != "broad" or name in ("read", "search", "run", "finish"):
            return name, args
        options = ["apply_patch", "write_file", "shell_write"]
        if name == "replace_string" and not args.get("replace_all"):
            options += ["str_replace", "xml_edit", "replace_lines"]
        if name == "multiedit" and not any(e.get("replace_all") for e in args["edits"]):
            options.append("xml_edit")
        if name == "edit_symbols" and len(args["edits"]) == 1:
            options.append("ast")
        choice = self.rng.choice(options)
        if choice == "str_replace":
            return "str_replace", {
                "path": args["path"],
                "old": args["old_string"],
                "new": args["new_string"],
            }
        if choice == "xml_edit":
            edits = args["edits"] if name == "multiedit" else [args]
            block = "".join(
                f'<edit path="{e["path"]}"><old>{e["old_string"]}</old><new>{e["new_string"]}</new></edit>'
                for e in edits
            )
            return "xml_edit", {"block": block}
        if choice == "ast":
            edit = args["edits"][0]
            action = edit["action"]
            if action == "replace":
                return "ast_replace_symbol", {
                    "symbol": edit["symbol"],
                    "new_source": edit["new_source"],
                }
            if action == "delete":
                return "ast_delete_symbol", {"symbol": edit["symbol"]}
            return "ast_insert_symbol", {
                "anchor": edit["symbol"],
                "position": action.split("_")[1],
                "new_source": edit["new_source"],
            }
        staged = _stage_intent(self.root, name, args)
        if (
            staged is None
        ):  # the intent call would fail: send it as a patch and let the runtime say why
            return "apply_patch", {"patch": ""}
        if choice == "replace_lines":
            change = staged.changes[0]
            return "replace_lines", _line_range(
                change.before or "", change.after or "", change.path
            )
        if choice == "apply_patch":
            return "apply_patch", {"patch": staged.diff}
        change = self.rng.choice(staged.changes)
        if (
            len(staged.changes) > 1
        ):  # whole-file tools write one file at a time: use a patch for all
            return "apply_patch", {"patch": staged.diff}
        if (
            choice == "shell_write"
            and (change.after or "").endswith("\n")
            and "GRINTA_EOF" not in (change.after or "")
        ):
            return "shell_write", {
                "command": f"cat > {change.path} <<'GRINTA_EOF'\n{change.after}GRINTA_EOF"
            }
        return "write_file", {"path": change.path, "content": change.after or ""}


def _stage_intent(root: Path, name: str, args: dict[str, Any]):  # type: ignore[no-untyped-def]
    from grinta_jupyter.tools.facade import Runtime

    proposal = Runtime(root, "intent").propose(name, args)
    return proposal if proposal.ok else None


def _line_range(before: str, after: str, path: str) -> dict[str, Any]:
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    if end_a == start:  # a pure insertion: widen to one existing line
        end_a, end_b = start + 1, end_b + 1
    return {
        "path": path,
        "start_line": start + 1,
        "end_line": end_a,
        "new_text": "".join(b[start:end_b]),
    }


def _misindent(text: str) -> str:
    lines = text.split("\n")
    return "\n".join(line[2:] if line.startswith("    ") else line for line in lines)


def _first_path(args: dict[str, Any]) -> str | None:
    if "path" in args:
        return str(args["path"])
    edits = args.get("edits") or []
    if edits and "path" in edits[0]:
        return str(edits[0]["path"])
    return None
