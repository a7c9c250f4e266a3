"""``Runtime``: the public, headless entry point (see docs/architecture.md).

It looks a tool up, validates its arguments, lets it stage changes, then
applies the checks every write shares (content guards, syntax, no-op) and
computes the diff. Nothing is written until ``commit``, which is atomic.
``select_hunks`` makes a new write proposal from some hunks of another,
staged from the same base bytes and checked the same way. Failures the model
must see come back as values; nothing raises through ``propose``,
``select_hunks``, ``commit``, ``call`` or ``undo``.
"""

from __future__ import annotations

import collections
import contextlib
import difflib
import functools
import json
import operator
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from grinta_jupyter.code import giveway
from grinta_jupyter.runtime import regions
from grinta_jupyter.runtime.diffs import unified_diff
from grinta_jupyter.runtime.documents import OpenDocuments
from grinta_jupyter.runtime.errors import (
    ALREADY_COMMITTED,
    CELL_PROTECTED,
    COMMIT_GONE,
    DOCUMENT_UNSAVED,
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
    fail,
    os_error,
)
from grinta_jupyter.runtime.guards import check_placeholder, check_serialized
from grinta_jupyter.runtime.hunks import Hunk, apply_hunks, file_hunks
from grinta_jupyter.runtime.notebook import NotebookFile, decode_file, is_notebook
from grinta_jupyter.runtime.notebook_checks import (
    cell_sources,
    check_notebook,
    cleared_outputs,
    selection_problem,
    source_digest,
    touched_cells,
)
from grinta_jupyter.runtime.proposal import (
    CommandProposal,
    FileChange,
    FinishProposal,
    Observation,
    Proposal,
    ReadProposal,
    ToolKind,
    WriteProposal,
    proposal_class,
)
from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.runtime.transaction import (
    CommitError,
    DamagedJournal,
    FileWrite,
    Journal,
    ReadOnlyError,
    StaleError,
    StepHook,
)
from grinta_jupyter.runtime.validation import check_syntax, compiles, compiling_ahead
from grinta_jupyter.runtime.workspace import Workspace
from grinta_jupyter.tools import get_toolset
from grinta_jupyter.tools.base import (
    RESULT_KINDS,
    CommandResult,
    FinishResult,
    Settings,
    StagedFile,
    StageResult,
    ToolContext,
    Toolset,
    ToolSpec,
    WriteResult,
)
from grinta_jupyter.tools.matching import snippet

if TYPE_CHECKING:
    from grinta_jupyter.code.index import SymbolIndex

_SHORT_DIFF_LINES = 60


class Runtime:
    """Resolve, stage, validate and atomically commit tool calls in one workspace."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        toolset: str | Toolset = "intent",
        settings: Settings | None = None,
        documents: OpenDocuments | None = None,
    ):
        self.settings = settings or Settings()
        # Editors with files open (JupyterLab through the labextension): asked before a write
        # is committed, told after (runtime/documents.py). None outside a kernel.
        self.documents = documents
        self.workspace = Workspace(root, protected=self.settings.protected)
        self.root: Path = self.workspace.root
        self.toolset = get_toolset(toolset) if isinstance(toolset, str) else toolset
        self.journal = Journal(self.root, self.workspace.state_dir)
        # What recovery did (or could not do) when opening; it never raises.
        self.recovered: list[str] = self.journal.recover()
        self._symbols: SymbolIndex | None = None
        # Ids of the proposals this runtime committed: a proposal is committed at most once.
        self._committed: set[int] = set()
        # tool_schemas as built, as JSON, with the toolset and tools it was built from.
        self._schemas: tuple[tuple[object, ...], str] | None = None

    # -- the contract ---------------------------------------------------------

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The toolset in OpenAI function-tool format.

        Asked for every model turn, and a tool's JSON schema takes pydantic milliseconds
        to build: it is built once, and again when ``toolset`` or a tool in it is replaced
        (a ``ToolSpec`` is frozen: its schema changes only with the spec). Each call
        returns a fresh copy, so a caller that changes it changes nothing here.
        """
        schemas: list[dict[str, Any]] = json.loads(self.tool_schemas_json())
        return schemas

    def tool_schemas_json(self) -> str:
        """``tool_schemas()`` as compact JSON, the same text (the same object) until the
        toolset changes: what its tokens are counted from (``tokens.schema_json_tokens``)."""
        specs = (self.toolset, *self.toolset.tools.values())
        built = self._schemas
        if (
            built is None
            or len(built[0]) != len(specs)
            or any(a is not b for a, b in zip(built[0], specs, strict=True))
        ):
            text = json.dumps(self.toolset.schemas(), separators=(",", ":"))
            built = self._schemas = (specs, text)
        return built[1]

    def propose(
        self,
        tool: str,
        args: dict[str, Any] | str | None,
        *,
        cancel: threading.Event | None = None,
    ) -> Proposal:
        """Resolve, stage and validate a tool call. Writes nothing. Setting ``cancel`` (from
        another thread) ends a long staging early, refused: a search stops at its next check."""
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
        ctx = ToolContext(self.workspace, self.settings, self._settled_index, cancel)
        try:
            with _REINDEXER.foreground():
                return self._proposal(spec, clean, spec.stage(model_args, ctx), ctx.staged)
        except ToolFailure as failure:
            return self._refused(tool, clean, spec.kind, failure.error, failure.resolutions)
        except Exception as exc:  # a bug of ours must not crash the session
            error = ToolError(INTERNAL_ERROR, f"{tool} failed unexpectedly: {exc!r}")
            return self._refused(tool, clean, spec.kind, error)

    def select_hunks(self, proposal: Proposal, accepted: Iterable[int]) -> Proposal:
        """A new write proposal with only the ``accepted`` hunks of ``proposal``.

        Hunks are numbered from 0 in ``proposal.diff`` order, across files
        (``runtime.hunks.hunks``). Declined hunks keep the original text; a file
        with no accepted hunk is not touched. The result is staged from the same
        base bytes (a file changed on disk since the original staging makes its
        commit STALE_FILE) and checked like any write, so it may come back refused
        (accepting half an edit can break the syntax). Bad indexes, no hunk at all
        (a veto, not an approval) or a proposal that is not a valid, uncommitted
        write come back as INVALID_ARGS (ALREADY_COMMITTED) refusals.
        """
        try:
            return self._select(proposal, accepted)
        except ToolFailure as failure:
            return self._refused(proposal.tool, proposal.args, "write", failure.error)
        except Exception as exc:  # a bug of ours must not crash the session
            error = ToolError(INTERNAL_ERROR, f"selecting hunks failed unexpectedly: {exc!r}")
            return self._refused(proposal.tool, proposal.args, "write", error)

    def commit(
        self,
        proposal: Proposal,
        *,
        hook: StepHook = None,
        cancel: threading.Event | None = None,
        owner: str | None = None,
    ) -> Observation:
        """Apply a proposal: all files or none. A stale file refuses the whole commit.

        ``cancel``, once set, ends a running command and its process tree (a write is
        never interrupted: it is atomic and short). ``owner`` names who commits a write
        (kept with its undo record: ``find_commit`` tells owners apart)."""
        if proposal.id in self._committed:
            return Observation.failure(
                ToolError(ALREADY_COMMITTED, "this proposal was already committed"), proposal.id
            )
        if proposal.error is not None:
            return Observation.failure(proposal.error, proposal.id)
        if isinstance(proposal, CommandProposal):
            execute = self.toolset.tools[proposal.tool].execute
            assert execute is not None, f"{proposal.tool} is a command tool without execute"
            self._committed.add(proposal.id)
            return execute(proposal, self.workspace, self.settings, cancel)
        if not isinstance(proposal, WriteProposal):
            self._committed.add(proposal.id)
            return Observation(True, proposal.output or "", None, proposal.id)
        with _REINDEXER.foreground():
            return self._commit_write(proposal, hook, owner)

    def _commit_write(
        self, proposal: WriteProposal, hook: StepHook, owner: str | None
    ) -> Observation:
        unsaved = self._unsaved(proposal.paths, "nothing was written")
        if unsaved is not None:
            return Observation.failure(unsaved, proposal.id)
        writes = [FileWrite(c.path, c.old_bytes, c.new_bytes) for c in proposal.changes]
        try:
            record = self.journal.commit(
                writes, f"{proposal.tool} {', '.join(proposal.paths)}", hook=hook, owner=owner
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
        self._committed.add(proposal.id)
        _keep_texts(proposal.changes)
        self._refresh_symbols(proposal.paths)
        for change in proposal.changes:  # the next edit of a large Python file checks a region
            after = change.after
            if change.before is not None and after is not None and change.path.endswith(".py"):
                _REINDEXER.submit(functools.partial(regions.learn, change.path, after), soon=True)
        self._changed(proposal.paths)
        return Observation(
            True, self._write_report(proposal), None, proposal.id, commit_id=record.id
        )

    def call(self, tool: str, args: dict[str, Any] | str | None) -> Observation:
        """Propose and commit in one go (reads just run)."""
        proposal = self.propose(tool, args)
        if proposal.error is not None:
            return Observation.failure(proposal.error, proposal.id)
        return self.commit(proposal)

    def undo(self, owner: str | None = None) -> Observation:
        """Restore the files of the last commit byte-for-byte; with ``owner``, the last commit
        whose owner starts with it (a session undoes its own, not another session's in the
        same folder)."""
        history = [
            record
            for record in self.journal.history()
            if owner is None or (record.owner or "").startswith(owner)
        ]
        if not history:
            whose = "" if owner is None else " of this session's"
            return Observation.failure(
                ToolError(NOTHING_TO_UNDO, f"there is no commit{whose} to undo")
            )
        record = history[-1]
        # Restoring over an editor's unsaved changes would lose them, as a commit would.
        unsaved = self._unsaved(record.files, "nothing was restored")
        if unsaved is not None:
            return Observation.failure(unsaved)
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
        self._changed(record.files)
        return Observation(
            True, f"undid {record.label}: restored {', '.join(record.files)}", commit_id=record.id
        )

    def find_commit(
        self,
        base: dict[str, str | None],
        after: dict[str, str | None],
        owner: str | None = None,
    ) -> str | None:
        """The id of the kept commit that took these files from ``base`` to ``after``
        (sha256 per path, None: absent): the newest such, or None. With ``owner``, only one
        ``owner`` made (or one that names no owner: an older version's)."""
        if set(base) != set(after):
            return None
        record = self.journal.find({path: (base[path], after[path]) for path in base}, owner)
        return record.id if record is not None else None

    def undo_commits(self, commit_ids: list[str], hook: StepHook = None) -> Observation:
        """Restore the files of these commits (any order) to before the first of them, byte
        for byte, in one atomic transaction; refused (STALE_FILE, COMMIT_GONE), nothing
        restored, when a file changed outside them since or a commit's undo record is gone."""
        if not commit_ids:
            return Observation(True, "nothing to undo")
        by_id = {record.id: record for record in self.journal.history()}
        missing = [c for c in commit_ids if c not in by_id]
        if missing:
            return Observation.failure(
                ToolError(
                    COMMIT_GONE,
                    f"the undo record of commit {missing[0]} is gone (undone already, or pruned: "
                    "the workspace keeps the last 50); nothing was restored",
                )
            )
        records = sorted((by_id[c] for c in commit_ids), key=lambda r: r.id)
        paths = sorted({p for record in records for p in record.files})
        unsaved = self._unsaved(paths, "nothing was restored")
        if unsaved is not None:
            return Observation.failure(unsaved)
        try:
            done = self.journal.undo_many(records, f"undo {len(records)} commits", hook=hook)
        except StaleError as exc:
            return Observation.failure(
                ToolError(
                    STALE_FILE,
                    f"{exc.path} changed since the session wrote it; restoring would lose that "
                    "change, so nothing was restored",
                )
            )
        except Exception as exc:  # OS faults, a damaged record, a bug of ours
            return Observation.failure(self._failure(exc, "undo", "nothing was restored"))
        self._refresh_symbols(paths)
        self._changed(paths)
        return Observation(True, f"restored {', '.join(paths)}", commit_id=done.id)

    def _unsaved(self, paths: list[str], nothing: str) -> ToolError | None:
        """DOCUMENT_UNSAVED when a file about to be written is open with unsaved changes.

        A front end that does not answer has nothing open (the documents bound their
        wait); but if asking fails, nobody knows, and a write could lose the user's work:
        the write is refused then too."""
        if self.documents is None:
            return None
        try:
            unsaved = self.documents.unsaved(paths)
        except Exception as exc:
            return ToolError(
                DOCUMENT_UNSAVED,
                f"could not learn whether {', '.join(paths)} {'is' if len(paths) == 1 else 'are'} "
                f"open with unsaved changes ({exc!r}); {nothing}. Ask the user to save the open "
                "documents, then try again",
            )
        if not unsaved:
            return None
        verb = "is" if len(unsaved) == 1 else "are"
        return ToolError(
            DOCUMENT_UNSAVED,
            f"{', '.join(unsaved)} {verb} open with unsaved changes; {nothing}. Ask the user to "
            "save or revert first, then read it again",
        )

    def _changed(self, paths: list[str]) -> None:
        if self.documents is not None:
            # The write happened; a stale editor view is not a failed commit.
            with contextlib.suppress(Exception):
                self.documents.changed(paths)

    def history(self) -> list[str]:
        """Labels of the commits that can be undone, oldest first."""
        return [record.label for record in self.journal.history()]

    # -- symbols (the code layer is imported only when a tool needs it) --------

    def _settled_index(self) -> SymbolIndex:
        """The symbol index, for a tool call staging: a re-index of this process under way
        or waiting (``_Reindexer``) runs to its end first, at most ``YIELD_S``, instead of
        giving way to this call: the call would parse again what it was parsing."""
        _REINDEXER.settle()
        return self._symbol_index()

    def _symbol_index(self) -> SymbolIndex:
        if self._symbols is None:
            from grinta_jupyter.code.index import SymbolIndex

            # Persisted under .grinta/ and watched: every read brings itself up to date.
            self._symbols = SymbolIndex(self.root, list_files=self.workspace.files, persist=True)
        return self._symbols

    @property
    def symbols(self) -> SymbolIndex:
        """The workspace's symbol index (built on first use, kept up to date)."""
        return self._symbol_index()

    def _refresh_symbols(self, paths: list[str]) -> None:
        """Re-index the files a commit or undo wrote, off the caller's path.

        Re-extracting a 3,000-line file costs 20-45 ms on a slow machine (an incremental
        parse from the tree kept for the text before, ``_keep_texts``, and the location of
        its definitions; the first time a whole parse); done in a thread it overlaps the
        model's next turn, and it waits for a tool call staging or committing meanwhile
        (``_Reindexer``). Nothing is served stale meanwhile: the re-index holds the index's
        lock, and every read brings itself up to date anyway (the file's stamp changed, and
        a watched tree saw the write).
        """
        if self._symbols is not None:
            _REINDEXER.submit(functools.partial(self._symbols.refresh, list(paths)))

    # -- building proposals -------------------------------------------------------

    def _proposal(
        self,
        spec: ToolSpec[Any],
        args: dict[str, Any],
        result: StageResult,
        staged: dict[str, StagedFile],
    ) -> Proposal:
        """The typed proposal for what ``spec.stage`` returned; a write is checked here."""
        if RESULT_KINDS[type(result)] != spec.kind:
            raise TypeError(
                f"{spec.name} is a {spec.kind} tool but staged a {type(result).__name__}"
            )
        if isinstance(result, WriteResult):
            # A large Python file's compile starts first: its helper half runs beside the
            # diff and the content guards.
            with compiling_ahead(
                (rel, item.original.text if item.original else None, item.text)
                for rel, item in staged.items()
                if item.original is None or item.original.text != item.text
            ):
                changes = self._changes(staged)
                error = self._check(changes)
            return WriteProposal(
                spec.name,
                args,
                error=error,
                summary="; ".join([result.summary, *_cleared(staged)]),
                resolutions=result.resolutions,
                changes=tuple(changes),
            )
        if isinstance(result, CommandResult):
            return CommandProposal(
                spec.name,
                args,
                summary=_first_line(result.summary, spec.name),
                command=result.command,
                timeout=result.timeout,
            )
        if isinstance(result, FinishResult):
            return FinishProposal(
                spec.name,
                args,
                summary=_first_line(result.summary, spec.name),
                output=result.summary,
            )
        return ReadProposal(
            spec.name,
            args,
            summary=_first_line(result.output, spec.name),
            resolutions=result.resolutions,
            output=result.output,
        )

    def _select(self, proposal: Proposal, accepted: Iterable[int]) -> WriteProposal:
        """``select_hunks`` without its safety net: raises ToolFailure for what the caller fixes."""
        if not isinstance(proposal, WriteProposal):
            raise fail(INVALID_ARGS, f"only a write proposal has hunks; this is a {proposal.kind}")
        if proposal.error is not None:
            raise fail(
                INVALID_ARGS, f"a refused proposal cannot be approved ({proposal.error.code})"
            )
        if proposal.id in self._committed:
            raise fail(ALREADY_COMMITTED, "this proposal was already committed")
        per_file = [(change, file_hunks(change)) for change in proposal.changes]
        total = sum(len(spans) for _, spans in per_file)
        chosen = _hunk_indexes(accepted, total)
        staged: dict[str, StagedFile] = {}
        declined: list[Hunk] = []
        first = 0  # the index of the file's first hunk
        for change, spans in per_file:
            mine = [k - first for k in chosen if first <= k < first + len(spans)]
            declined.extend(
                Hunk(first + k, change.path, span.header, span.lines)
                for k, span in enumerate(spans)
                if k not in mine
            )
            first += len(spans)
            if mine:
                text = apply_hunks(change.before, change.after, spans, mine)
                staged[change.path] = self._restage(change, text)
        changes = self._changes(staged)
        for change in changes:
            full = next(c for c in proposal.changes if c.path == change.path)
            problem = (
                selection_problem(full.before or "", full.after or "", change.after or "")
                if is_notebook(change.path) and full.before is not None
                else None
            )
            if problem:
                raise fail(
                    INVALID_ARGS,
                    f"{change.path}: {problem}; approve all of its hunks, or veto the edit",
                )
        # The outputs the whole proposal would clear, said in its summary, are not those of
        # the hunks chosen: the summary says what the chosen ones clear.
        whole = _cleared(
            {
                c.path: self._restage(c, c.after)
                for c in proposal.changes
                if is_notebook(c.path) and c.after is not None
            }
        )
        base = proposal.summary
        if whole and base.endswith("; " + "; ".join(whole)):
            base = base[: -len("; " + "; ".join(whole))]
        summary = "; ".join(
            [f"{base} ({len(chosen)} of {total} hunks accepted by the reviewer)", *_cleared(staged)]
        )
        return WriteProposal(
            proposal.tool,
            proposal.args,
            error=self._check(changes),
            summary=summary,
            resolutions=proposal.resolutions,
            changes=tuple(changes),
            declined=tuple(declined),
            selected_from=proposal.id,
        )

    def _restage(self, change: FileChange, text: str) -> StagedFile:
        """``text`` staged over the bytes ``change`` was staged from (its path checked again)."""
        where = self.workspace.resolve(change.path, write=True)
        original = None
        if change.old_bytes is not None:
            original = decode_file(change.old_bytes, change.path)
        return StagedFile(where, original, text)

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
                    tuple(diff.added),
                    diff.removed,
                )
            )
        return changes

    def _check(self, changes: list[FileChange]) -> ToolError | None:
        if not changes:
            return ToolError(NO_CHANGE, "the edit would not change any file")
        for change in changes:
            added = change.added
            # The placeholder guard before the syntax check: a compile started ahead runs
            # beside it. The serialized guard after: in a Python file that compiles it
            # scans less.
            placeholder = check_placeholder(
                added, change.before or "", change.path, change.after or ""
            )
            syntax = self._check_file(change)
            compiled = syntax is None and compiles(change.path, change.after or "")
            error = (
                check_serialized("\n".join([line for _, line in added]), change.path, compiled)
                or placeholder
                or syntax
            )
            if error is not None:
                message = (
                    error.message
                    if change.path in error.message
                    else f"{change.path}: {error.message}"
                )
                where: tuple[Candidate, ...] = ()
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

    def _check_file(self, change: FileChange) -> ToolError | None:
        """The syntax check, or for a notebook its own: valid nbformat, valid code cells,
        and the protected cells left alone (their before/after texts are cell views)."""
        if not is_notebook(change.path):
            return check_syntax(change.path, change.before, change.after or "")
        if change.before is not None:
            hit = self._protected_touched(change.path, change.before, change.after or "")
            if hit:
                return ToolError(
                    CELL_PROTECTED,
                    f"cell {hit[0]} of {change.path} is running this session, so the agent does "
                    "not edit or delete it; nothing was written. Edit other cells",
                )
        return check_notebook(
            change.path,
            change.before,
            change.after or "",
            change.new_bytes or b"",
            change.old_bytes,
        )

    def _protected_touched(self, path: str, before: str, after: str) -> list[str]:
        """The protected cells of notebook ``path`` the change edits or deletes.

        A cell is protected by its id (``path::cell:<id>``). A notebook saved before
        nbformat 4.5 has no ids on disk, while the front end that runs the cell makes one up
        in memory: when no cell on disk has a protected id, a cell whose source is a
        protected one's (``path::code:<sha256>``) is protected instead."""
        ids, codes = set(), set()
        for address in self.settings.protected_cells:
            where, kind, name = address.partition("::cell:")
            if kind and where == path:
                ids.add(name)
            where, kind, digest = address.partition("::code:")
            if kind and where == path:
                codes.add(digest)
        touched = touched_cells(before, after)
        if not touched:
            return []
        sources = cell_sources(before)
        by_code = bool(codes) and not ids & sources.keys()
        return [
            key
            for key in touched
            if key in ids or (by_code and source_digest(sources.get(key, "")) in codes)
        ]

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

    def _refused(
        self,
        tool: str,
        args: dict[str, Any],
        kind: ToolKind,
        error: ToolError,
        resolutions: tuple[Resolution, ...] = (),
    ) -> Proposal:
        return proposal_class(kind)(
            tool, args, error=error, summary=error.message, resolutions=resolutions
        )

    def _write_report(self, proposal: WriteProposal) -> str:
        diff = proposal.diff
        stats = ", ".join(
            f"{c.path} (+{c.added_lines} -{c.removed_lines})" for c in proposal.changes
        )
        report = f"{proposal.summary}. Committed: {stats}."
        if diff.count("\n") <= _SHORT_DIFF_LINES:
            report += "\n" + diff
        return report.rstrip()


def _first_line(text: str, fallback: str) -> str:
    """The one-line summary of an output: its first line, bounded."""
    return text.splitlines()[0][:200] if text else fallback


def _cleared(staged: dict[str, StagedFile]) -> list[str]:
    """What the diff of a notebook's cell view cannot show: the outputs writing it clears."""
    return [
        f"{rel}: {note}"
        for rel, item in staged.items()
        if isinstance(item.original, NotebookFile)
        and (note := cleared_outputs(item.original.nb, item.text))
    ]


def _hunk_indexes(accepted: Iterable[int], total: int) -> list[int]:
    """The accepted hunk indexes, sorted; INVALID_ARGS naming the valid range otherwise."""
    valid = f"0..{total - 1}" if total else "none: the proposal has no hunk"
    chosen: list[int] = []
    for given in accepted:
        if isinstance(given, bool) or not hasattr(given, "__index__"):
            raise fail(INVALID_ARGS, f"hunk {given!r} is not a hunk number; valid hunks: {valid}")
        index = operator.index(given)  # an int, or an integer like numpy's int64
        if not 0 <= index < total:
            raise fail(INVALID_ARGS, f"hunk {index} does not exist; valid hunks: {valid}")
        if index in chosen:
            raise fail(INVALID_ARGS, f"hunk {index} is listed twice; valid hunks: {valid}")
        chosen.append(index)
    if not chosen:
        raise fail(
            INVALID_ARGS,
            f"no hunk accepted (valid hunks: {valid}); approving none is a veto, so veto instead",
        )
    return sorted(chosen)


def _parse_json_args(args: dict[str, Any] | str | None) -> dict[str, Any]:
    if args is None:
        return {}
    if isinstance(args, dict):
        _refuse_lone_surrogates(args)
        return args
    try:
        parsed = json.loads(args) if args.strip() else {}
    except RecursionError:
        raise ToolFailure(
            ToolError(INVALID_ARGS, "arguments are nested too deeply; send a flat JSON object")
        ) from None
    except json.JSONDecodeError as exc:
        raise ToolFailure(
            ToolError(
                INVALID_ARGS,
                f"arguments are not valid JSON ({exc.msg} at char {exc.pos}); send a JSON object",
            )
        ) from None
    if not isinstance(parsed, dict):
        raise ToolFailure(ToolError(INVALID_ARGS, "arguments must be a JSON object"))
    _refuse_lone_surrogates(parsed)
    return parsed


_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_lone_surrogates(value: Any) -> None:
    """Refuse a string holding half a UTF-16 pair (JSON's ``"\\ud800"`` alone): no file,
    command or log can store it, so it is the model's to fix, not a crash of ours. Walked
    with a stack, not recursion (arguments may nest deeper than Python's recursion limit),
    and each item's place kept as a link to its parent's, spelled out only when needed."""
    Place = tuple[Any, str] | None  # (the parent's place, this key) or the top
    stack: list[tuple[Any, Place, bool]] = [(value, None, False)]
    while stack:
        item, place, is_key = stack.pop()
        if isinstance(item, str):
            # Only a surrogate fails to encode: a 100 kB text is checked in microseconds, not
            # scanned by the pattern (0.6 ms); the pattern then says which one.
            found = None if item.isascii() or _encodes(item) else _SURROGATE.search(item)
            if found:
                names = []
                while place is not None:
                    place, name = place
                    names.append(name)
                at = ".".join(reversed(names))
                if len(at) > 120:  # a place 5,000 levels deep is named by its ends
                    at = f"{at[:60]}...{at[-40:]}"
                if is_key:
                    at = f"an argument name{' in ' + at if at else ''}"
                raise ToolFailure(
                    ToolError(
                        INVALID_ARGS,
                        f"{at or 'an argument'} holds a lone surrogate "
                        f"(U+{ord(found.group()):04X}, half of a UTF-16 pair); send valid Unicode",
                    )
                )
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, place, True))
                if key != "path":  # the workspace refuses such a path by name (PATH_FORBIDDEN)
                    stack.append((child, (place, str(key)), False))
        elif isinstance(item, list):
            stack.extend((child, (place, str(n)), False) for n, child in enumerate(item))


def _encodes(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form (every code point but a surrogate has one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


def _keep_texts(changes: Iterable[FileChange]) -> None:
    """Name each written text to the tree cache of symbol edits (``code.edits``), so that
    the index's re-read of a file a commit wrote, and the next symbol edit of it, parse
    it incrementally from the last parse. Only a file whose bytes are its text in UTF-8:
    that cache is keyed by those bytes, and another encoding would only miss it."""
    from grinta_jupyter.code import edits

    for change in changes:
        after, new = change.after, change.new_bytes
        if after is None or new is None or new != after.encode("utf-8", "surrogatepass"):
            continue
        edits.committed(change.path, change.old_bytes, new)


class _Reindexer:
    """One daemon thread that does what a commit leaves for later: learning the layout of
    a large Python file for its next edit (``soon``), and re-indexing the written files.

    Starting a thread per commit cost the commit itself 5-8 ms: ``Thread.start`` waits
    until the new thread runs, and the new thread keeps the GIL for its first switch
    interval, re-indexing. Handing the job to a waiting thread costs microseconds.

    A re-index starts only while no proposal is being staged and no write committed (the
    ``foreground`` calls), or once such calls have held it ``YIELD_S`` seconds in a row (then
    the jobs waiting run; the clock restarts once no call is under way): a parse holds the
    GIL, so a re-index started beside the next tool call took that call's time (a 3,000-line
    file's: 20-45 ms). A re-index already running gives way too, at the points between its
    steps (``code/giveway.py``: before a file is read, after its parse, after the definitions
    query), on the same clock; it holds no lock of the index there. Nothing waits on a
    re-index to be correct: a read that needs a file's symbols re-checks the file itself. A
    ``soon`` job (under a millisecond, and what the next edit's own speed depends on) is not
    held, and runs before any re-index waiting.
    """

    YIELD_S = 0.5

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Start empty; in a forked child too: no thread, no job, no foreground call (those
        were the parent's; a job's count or a call's hold copied here would never end)."""
        self._soon: collections.deque[Callable[[], object]] = collections.deque()
        self._later: collections.deque[Callable[[], object]] = collections.deque()
        self._changed = threading.Condition()
        self._unfinished = 0  # jobs submitted and not done
        self._busy = 0  # foreground calls running
        self._held_since: float | None = None  # when foreground calls began holding a job
        self._mine = threading.local()  # ``depth``: this thread's foreground blocks
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Hold re-indexes not yet started until this block ends (or ``YIELD_S`` passes)."""
        with self._changed:
            self._busy += 1
        self._mine.depth = getattr(self._mine, "depth", 0) + 1
        try:
            yield
        finally:
            # (a child forked inside the block has a fresh ``_mine``: ``forget``)
            self._mine.depth = max(0, getattr(self._mine, "depth", 0) - 1)
            with self._changed:  # (not below 0: a child forked inside the block ends it)
                self._busy = max(0, self._busy - 1)
                self._changed.notify_all()

    def settle(self) -> None:
        """Let the jobs submitted so far finish, at most ``YIELD_S``: this thread's
        ``foreground`` blocks stop holding them meanwhile (other threads' still do)."""
        if threading.current_thread() is self._thread:
            return  # a job's own call: it would wait for itself
        with self._changed:
            if not self._unfinished:
                return
            mine = min(getattr(self._mine, "depth", 0), self._busy)
            self._busy -= mine
            self._changed.notify_all()
            try:
                self._changed.wait_for(lambda: not self._unfinished, timeout=self.YIELD_S)
            finally:
                self._busy += mine

    def submit(self, job: Callable[[], object], soon: bool = False) -> None:
        with self._changed:
            (self._soon if soon else self._later).append(job)
            self._unfinished += 1
            self._changed.notify_all()
            # (again after a fork: the child has no thread)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._work, name="grinta-index-refresh", daemon=True
                )
                self._thread.start()

    def wait(self) -> None:
        """Return once every job submitted so far is done (tests and benchmarks)."""
        with self._changed:
            self._changed.wait_for(lambda: not self._unfinished)

    def _next(self) -> tuple[Callable[[], object], bool]:
        """The next job, and whether it is a ``soon`` one."""
        with self._changed:
            while True:
                if self._soon:
                    return self._soon.popleft(), True
                if not self._later or not self._busy:
                    self._held_since = None
                if self._later:
                    now = time.monotonic()
                    if self._held_since is None and self._busy:
                        self._held_since = now
                    if self._held_since is None or now - self._held_since >= self.YIELD_S:
                        return self._later.popleft(), False
                    self._changed.wait(self._held_since + self.YIELD_S - now)
                else:
                    self._changed.wait()

    def pause(self) -> None:
        """Where a running re-index may give way (``giveway.pause``): wait while a
        ``foreground`` call is under way, at most until the hold's ``YIELD_S`` is up."""
        with self._changed:
            while self._busy:
                now = time.monotonic()
                if self._held_since is None:
                    self._held_since = now
                left = self._held_since + self.YIELD_S - now
                if left <= 0:
                    return
                self._changed.wait(left)
            self._held_since = None

    def _work(self) -> None:
        while True:
            job, soon = self._next()
            # A failure leaves it to the next read (which re-checks the file anyway) or to
            # the next edit (which compiles the whole file).
            with (
                contextlib.suppress(Exception),
                contextlib.nullcontext() if soon else giveway.pausing(self.pause),
            ):
                job()
            del job  # a closed session's index is not kept alive by this thread
            with self._changed:
                self._unfinished -= 1
                self._changed.notify_all()


_REINDEXER = _Reindexer()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_REINDEXER.forget)
