"""``Runtime``: the public, headless entry point (see docs/architecture.md).

It looks a tool up, validates its arguments, lets it stage changes, then
applies the checks every write shares (content guards, syntax, no-op) and
computes the diff. Nothing is written until ``commit``, which is atomic.
Failures the model must see come back as values; nothing raises through
``propose``, ``commit``, ``call`` or ``undo``.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grinta_jupyter.runtime.diffs import unified_diff
from grinta_jupyter.runtime.errors import (
    ALREADY_COMMITTED,
    INTERNAL_ERROR,
    INVALID_ARGS,
    IO_ERROR,
    NO_CHANGE,
    NO_SPACE,
    NOTHING_TO_UNDO,
    PATH_TOO_LONG,
    PERMISSION_DENIED,
    READ_ONLY_FILE,
    STALE_FILE,
    UNKNOWN_TOOL,
    WORKSPACE_MISSING,
    Candidate,
    ToolError,
    ToolFailure,
    os_error,
)
from grinta_jupyter.runtime.guards import check_placeholder, check_serialized
from grinta_jupyter.runtime.proposal import FileChange, Observation, Proposal
from grinta_jupyter.runtime.transaction import (
    CommitError,
    DamagedJournal,
    FileWrite,
    Journal,
    ReadOnlyError,
    StaleError,
    StepHook,
)
from grinta_jupyter.runtime.validation import check_syntax
from grinta_jupyter.runtime.workspace import Workspace
from grinta_jupyter.tools import get_toolset
from grinta_jupyter.tools.base import Settings, StagedFile, ToolContext, Toolset
from grinta_jupyter.tools.matching import snippet

_SHORT_DIFF_LINES = 60


class Runtime:
    """Resolve, stage, validate and atomically commit tool calls in one workspace."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        toolset: str | Toolset = "intent",
        settings: Settings | None = None,
    ):
        self.settings = settings or Settings()
        self.workspace = Workspace(root, protected=self.settings.protected)
        self.root: Path = self.workspace.root
        self.toolset = get_toolset(toolset) if isinstance(toolset, str) else toolset
        self.journal = Journal(self.root, self.workspace.state_dir)
        # What recovery did (or could not do) when opening; it never raises.
        self.recovered: list[str] = self.journal.recover()
        self._symbols: Any = None

    # -- the contract ---------------------------------------------------------

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The toolset in OpenAI function-tool format."""
        return self.toolset.schemas()

    def propose(self, tool: str, args: dict[str, Any] | str | None) -> Proposal:
        """Resolve, stage and validate a tool call. Writes nothing."""
        spec = self.toolset.tools.get(tool)
        raw_args = args if isinstance(args, dict) else {}
        if spec is None:
            close = difflib.get_close_matches(str(tool), list(self.toolset.tools), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            return self._refused(
                str(tool),
                raw_args,
                "read",
                ToolError(
                    UNKNOWN_TOOL,
                    f"no tool named {tool!r}{hint} Tools: {', '.join(self.toolset.tools)}",
                ),
            )
        try:
            parsed_args = _parse_json_args(args)
            model_args = spec.args.model_validate(parsed_args)
        except ToolFailure as failure:
            return self._refused(tool, raw_args, spec.kind, failure.error)
        except ValidationError as exc:
            return self._refused(
                tool, raw_args, spec.kind, ToolError(INVALID_ARGS, _describe(tool, exc))
            )
        clean = model_args.model_dump(exclude_none=True)
        ctx = ToolContext(self.workspace, self.settings, self._symbol_index)
        try:
            result = spec.stage(model_args, ctx)
            proposal = Proposal(
                tool,
                clean,
                spec.kind,
                resolutions=ctx.resolutions,
                command=ctx.command,
                timeout=ctx.timeout,
            )
            if spec.kind == "write":
                proposal.summary = result
                proposal.changes = self._changes(ctx.staged)
                proposal.error = self._check(proposal.changes)
            else:
                proposal.output = result
                proposal.summary = result.splitlines()[0][:200] if result else tool
        except ToolFailure as failure:
            proposal = self._refused(tool, clean, spec.kind, failure.error)
            proposal.resolutions = ctx.resolutions
        except Exception as exc:  # a bug of ours must not crash the session
            proposal = self._refused(
                tool,
                clean,
                spec.kind,
                ToolError(INTERNAL_ERROR, f"{tool} failed unexpectedly: {exc!r}"),
            )
        if proposal.error is not None:
            proposal.state = "refused"
        return proposal

    def commit(self, proposal: Proposal, *, hook: StepHook = None) -> Observation:
        """Apply a proposal: all files or none. A stale file refuses the whole commit."""
        if proposal.state == "committed":
            return Observation.failure(
                ToolError(ALREADY_COMMITTED, "this proposal was already committed"), proposal.id
            )
        if proposal.error is not None:
            return Observation.failure(proposal.error, proposal.id)
        spec = self.toolset.tools[proposal.tool]
        if proposal.kind == "command":
            assert spec.execute is not None
            proposal.state = "committed"
            return spec.execute(proposal, self.workspace, self.settings)
        if proposal.kind != "write":
            proposal.state = "committed"
            return Observation(True, proposal.output or "", None, proposal.id)
        writes = [FileWrite(c.path, c.old_bytes, c.new_bytes) for c in proposal.changes]
        try:
            record = self.journal.commit(
                writes, f"{proposal.tool} {', '.join(proposal.paths)}", hook=hook
            )
        except StaleError as exc:
            return Observation.failure(
                ToolError(
                    STALE_FILE,
                    f"{exc.path} changed on disk since this edit was staged; nothing was written. "
                    "Read it again and redo the edit",
                ),
                proposal.id,
            )
        except Exception as exc:  # OS faults, and a bug of ours: never through the session
            return Observation.failure(
                self._failure(exc, "commit", "nothing was written"), proposal.id
            )
        proposal.state = "committed"
        self._refresh_symbols(proposal.paths)
        return Observation(
            True, self._write_report(proposal), None, proposal.id, commit_id=record.id
        )

    def call(self, tool: str, args: dict[str, Any] | str | None) -> Observation:
        """Propose and commit in one go (reads just run)."""
        proposal = self.propose(tool, args)
        if not proposal.ok:
            return Observation.failure(proposal.error, proposal.id)  # type: ignore[arg-type]
        return self.commit(proposal)

    def undo(self) -> Observation:
        """Restore the files of the last commit byte-for-byte."""
        history = self.journal.history()
        if not history:
            return Observation.failure(ToolError(NOTHING_TO_UNDO, "there is no commit to undo"))
        record = history[-1]
        try:
            self.journal.undo(record)
        except StaleError as exc:
            return Observation.failure(
                ToolError(
                    STALE_FILE,
                    f"{exc.path} changed since the commit; undo would lose that change, so nothing "
                    "was restored",
                )
            )
        except Exception as exc:  # OS faults, a damaged record, a bug of ours
            return Observation.failure(self._failure(exc, "undo", "nothing was restored"))
        self._refresh_symbols(record.files)
        return Observation(
            True, f"undid {record.label}: restored {', '.join(record.files)}", commit_id=record.id
        )

    def history(self) -> list[str]:
        """Labels of the commits that can be undone, oldest first."""
        return [record.label for record in self.journal.history()]

    # -- symbols (the code layer is imported only when a tool needs it) --------

    def _symbol_index(self) -> Any:
        if self._symbols is None:
            from grinta_jupyter.code.index import SymbolIndex

            self._symbols = SymbolIndex(self.root, list_files=self.workspace.files)
        self._symbols.refresh()
        return self._symbols

    @property
    def symbols(self) -> Any:
        """The workspace's symbol index (built on first use, kept up to date)."""
        return self._symbol_index()

    def _refresh_symbols(self, paths: list[str]) -> None:
        if self._symbols is not None:
            self._symbols.refresh(paths)

    # -- shared checks ----------------------------------------------------------

    def _changes(self, staged: dict[str, StagedFile]) -> list[FileChange]:
        changes = []
        for rel, item in staged.items():
            before = item.original.text if item.original else None
            if before == item.text:
                continue
            diff = unified_diff(rel, before, item.text)
            changes.append(
                FileChange(
                    rel,
                    before,
                    item.text,
                    # The bytes the text was decoded from: a commit refuses if the disk moved on.
                    item.original.raw if item.original else None,
                    item.conventions.encode(item.text),
                    item.original.sha256 if item.original else None,
                    diff.text,
                    diff.added,
                    diff.removed,
                )
            )
        return changes

    def _check(self, changes: list[FileChange]) -> ToolError | None:
        if not changes:
            return ToolError(NO_CHANGE, "the edit would not change any file")
        for change in changes:
            added = change.added
            error = (
                check_serialized("\n".join(line for _, line in added), change.path)
                or check_placeholder(added, change.before or "", change.path, change.after or "")
                or check_syntax(change.path, change.before, change.after or "")
            )
            if error is not None:
                message = (
                    error.message
                    if change.path in error.message
                    else f"{change.path}: {error.message}"
                )
                where = ()
                if error.line:  # show the offending lines of the staged text
                    where = (
                        Candidate(
                            change.path,
                            error.line,
                            snippet(change.after or "", error.line),
                            note="in the staged text",
                        ),
                    )
                return ToolError(error.code, message, error.candidates or where, error.line)
        return None

    def _failure(self, exc: Exception, action: str, nothing: str) -> ToolError:
        """The ToolError for a commit or an undo that failed other than by a stale file."""
        if isinstance(exc, ReadOnlyError):
            return ToolError(
                READ_ONLY_FILE,
                f"{exc.path} is {exc.why}, so grinta does not write it; {nothing}. "
                "Ask the user to make it writable, or leave it alone",
            )
        if isinstance(exc, DamagedJournal):
            return ToolError(IO_ERROR, f"{action} failed: {exc}; {nothing}")
        if not isinstance(exc, CommitError | OSError):
            return ToolError(INTERNAL_ERROR, f"{action} failed unexpectedly: {exc!r}")
        cause, what = (exc.cause, exc.what) if isinstance(exc, CommitError) else (exc, action)
        error = os_error(cause, what)
        # A missing folder on the way is not the model's FILE_NOT_FOUND: the OS refused.
        code = (
            error.code if error.code in (NO_SPACE, PERMISSION_DENIED, PATH_TOO_LONG) else IO_ERROR
        )
        if not os.path.isdir(self.root):
            code = WORKSPACE_MISSING
        if isinstance(exc, CommitError) and exc.decided:
            nothing = (
                "the change was decided and is completed by the next commit or when the "
                "workspace is next opened"
            )
        return ToolError(code, f"{action} failed: {error.message}; {nothing}")

    def _refused(self, tool: str, args: dict[str, Any], kind: Any, error: ToolError) -> Proposal:
        return Proposal(tool, args, kind, error=error, summary=error.message, state="refused")

    def _write_report(self, proposal: Proposal) -> str:
        diff = proposal.diff
        stats = ", ".join(
            f"{c.path} (+{c.added_lines} -{c.removed_lines})" for c in proposal.changes
        )
        report = f"{proposal.summary}. Committed: {stats}."
        if diff.count("\n") <= _SHORT_DIFF_LINES:
            report += "\n" + diff
        return report.rstrip()


def _parse_json_args(args: dict[str, Any] | str | None) -> dict[str, Any]:
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    try:
        parsed = json.loads(args) if args.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolFailure(
            ToolError(
                INVALID_ARGS,
                f"arguments are not valid JSON ({exc.msg} at char {exc.pos}); send a JSON object",
            )
        ) from None
    if not isinstance(parsed, dict):
        raise ToolFailure(ToolError(INVALID_ARGS, "arguments must be a JSON object"))
    return parsed


def _describe(tool: str, exc: ValidationError) -> str:
    problems = []
    for item in exc.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r}")
        elif item["type"] == "missing":
            problems.append(f"{where} is required")
        else:
            problems.append(f"{where}: {item['msg']}")
    return f"invalid arguments for {tool}: " + "; ".join(problems)
