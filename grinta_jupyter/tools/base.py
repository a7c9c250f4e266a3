"""What a tool is, what it may touch while staging, and how toolsets are built.

A tool is a ``ToolSpec``: a name, a kind, a pydantic argument model whose
field descriptions are the schema the model reads, and a ``stage`` function.
``stage`` reads files through a ``ToolContext`` and stages whole new texts in
its staged-file buffer; it never writes. It returns a typed result of its
kind (``ReadResult``, ``WriteResult``, ``CommandResult``, ``FinishResult``:
the output, the one-line summary, the resolutions, the command), and raises
``ToolFailure`` for anything the model must fix.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from grinta_jupyter.runtime.errors import (
    FILE_NOT_FOUND,
    FILE_TOO_LARGE,
    INVALID_ARGS,
    NOTEBOOK_INVALID,
    PATH_FORBIDDEN,
    READ_ONLY_FILE,
    ToolFailure,
    fail,
)
from grinta_jupyter.runtime.files import (
    FORBIDDEN_DIRS,
    TOO_LARGE_ADVICE,
    folded_name,
    read_regular,
)
from grinta_jupyter.runtime.notebook import decode_file
from grinta_jupyter.runtime.proposal import CommandProposal, Observation, ToolKind
from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.runtime.textfile import TextFile
from grinta_jupyter.runtime.workspace import Workspace, WorkspacePath

if TYPE_CHECKING:
    from grinta_jupyter.code.index import SymbolIndex


class Args(BaseModel):
    """Base for tool arguments: unknown fields are an error the model sees."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Settings:
    """Limits that keep tool output bounded. Every limit is a setting."""

    read_max_lines: int = 400
    read_max_chars: int = 40_000
    max_line_chars: int = 2_000
    search_max_results: int = 50
    run_timeout: float = 120.0
    run_max_timeout: float = 1_800.0
    run_output_chars: int = 12_000  # head and tail are kept, the middle elided
    # What a command may print is read into a bounded buffer (head and tail, in bytes).
    run_capture_bytes: int = 2_000_000
    run_max_command_chars: int = 32_000
    # Secret environment variables (runtime/secrets.py) are withheld from commands,
    # except these, named on purpose (e.g. ("GITHUB_TOKEN",)).
    run_pass_env: tuple[str, ...] = ()
    # Files larger than this are refused by read and edit tools (FILE_TOO_LARGE).
    max_file_bytes: int = 8_000_000
    # search: files larger than this are skipped (and reported as skipped), and the
    # whole search, regular expressions included, stops after this many seconds.
    search_max_file_bytes: int = 2_000_000
    search_timeout: float = 10.0
    # Glob patterns (matched against workspace-relative paths and file names) that no tool may
    # write.
    protected: tuple[str, ...] = ()
    # Notebook cells no tool may edit or delete, as "path.ipynb::cell:<id>": the cell that is
    # running the session in its host notebook (CELL_PROTECTED). "path.ipynb::code:<sha256>"
    # (notebook_checks.source_digest) names it by its source, for a notebook saved without
    # cell ids, where the id the front end sends is on no cell on disk.
    protected_cells: tuple[str, ...] = ()


@dataclass
class StagedFile:
    """A file as the proposal sees it: its original state and its staged text."""

    path: WorkspacePath
    original: TextFile | None  # None when the file does not exist yet
    text: str

    @property
    def rel(self) -> str:
        return self.path.rel

    @property
    def conventions(self) -> TextFile:
        return self.original or TextFile.new()


class ToolContext:
    """What a tool may use while staging: files and symbols to read, and the buffer of
    staged files (edits within one proposal build on each other). Staging never writes
    to disk, and everything else a tool produces is in the result it returns."""

    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        symbols: Callable[[], SymbolIndex] | None = None,
        cancel: threading.Event | None = None,
    ):
        self.workspace = workspace
        self.settings = settings
        self._symbols = symbols
        # Set when the staging is no longer wanted (the session stopped or rewound): a tool
        # that may work for seconds (search) stops at its next check instead.
        self.cancel = cancel if cancel is not None else threading.Event()
        self.staged: dict[str, StagedFile] = {}

    @property
    def symbols(self) -> SymbolIndex:
        if self._symbols is None:
            raise RuntimeError("this runtime has no symbol index")
        return self._symbols()

    def resolve_readable(self, path: str) -> WorkspacePath:
        """``path`` resolved for a read or a search: never in git's or grinta's own state
        (.git, .grinta: undo records, session logs, a remote's credentials), which the walk
        of the whole workspace leaves out too; git's state is read through ``git``."""
        where = self.workspace.resolve(path)
        if any(folded_name(part) in FORBIDDEN_DIRS for part in where.rel.split("/")):
            raise fail(
                PATH_FORBIDDEN,
                f"{path!r} is inside .git or .grinta: reads and searches never look in git's or "
                "grinta's own state; read the project's files (git's state: run git)",
            )
        if any(char in path for char in "*?[") and not os.path.lexists(where.abs):
            raise fail(
                INVALID_ARGS,
                f"{path!r} is a pattern, and paths are not expanded: give a folder (search "
                "looks in every file below it, and read lists it) or one file",
            )
        return where

    def read_file(self, path: str) -> tuple[WorkspacePath, TextFile]:
        """Resolve and decode an existing file for reading (a notebook as its cells; one
        that is not a valid notebook as the text it is, since reading it is how to fix it)."""
        where = self.workspace.resolve(path)
        try:
            return where, _decode(where, self.settings)[0]
        except ToolFailure as failure:
            if failure.error.code != NOTEBOOK_INVALID:
                raise
            raw, _ = read_regular(
                where.abs,
                where.rel,
                self.settings.max_file_bytes,
                within=where.root,
            )
            return where, TextFile.decode(raw, where.rel)

    def open(self, path: str) -> StagedFile:
        """An existing file for editing; edits within one proposal build on each other.

        A file without write bits (e.g. mode 0444) is refused: the user made it read-only.
        """
        where = self.workspace.resolve(path, write=True)
        if where.rel in self.staged:
            return self.staged[where.rel]
        advice = _NOTEBOOK_ADVICE if where.rel.lower().endswith(".ipynb") else _EDIT_ADVICE
        original, status = _decode(where, self.settings, advice)
        if status.st_mode & 0o222 == 0:
            raise fail(
                READ_ONLY_FILE,
                f"{where.rel} is read-only (mode {status.st_mode & 0o7777:04o}); the agent does "
                "not change a file you protected; make it writable first",
            )
        staged = StagedFile(where, original, original.text)
        self.staged[where.rel] = staged
        return staged

    def open_new(self, path: str) -> StagedFile:
        """A file that must not exist yet. A path that names a folder (``.``, ``new/``) or
        goes through a file (``README.md/x``) is refused now, not when the commit fails."""
        where = self.workspace.resolve(path, write=True)
        if where.rel in self.staged:
            return self.staged[where.rel]
        if where.rel in ("", ".") or path.rstrip(" \t").endswith(("/", "\\")):
            raise fail(INVALID_ARGS, f"{path!r} names a folder; give the path of a file")
        for parent in where.abs.parents:
            if parent == self.workspace.root or not parent.is_relative_to(self.workspace.root):
                break
            if parent.exists() and not parent.is_dir():
                rel = parent.relative_to(self.workspace.root).as_posix()
                raise fail(
                    FILE_NOT_FOUND, f"{where.rel}: {rel} is a file, not a folder to put it in"
                )
        staged = StagedFile(where, None, "")
        self.staged[where.rel] = staged
        return staged


# -- what staging returns, one type per kind of tool ----------------------------------


@dataclass(frozen=True)
class ReadResult:
    """A read's output (what the model sees) and how its targets were resolved."""

    output: str
    resolutions: tuple[Resolution, ...] = ()


@dataclass(frozen=True)
class WriteResult:
    """A write's one-line summary; the staged texts are in the context's buffer."""

    summary: str
    resolutions: tuple[Resolution, ...] = ()


@dataclass(frozen=True)
class CommandResult:
    """The command commit will run, and its timeout (already capped)."""

    command: str
    timeout: float
    summary: str


@dataclass(frozen=True)
class FinishResult:
    """The model's closing summary."""

    summary: str


StageResult = ReadResult | WriteResult | CommandResult | FinishResult
RESULT_KINDS: dict[type[StageResult], ToolKind] = {
    ReadResult: "read",
    WriteResult: "write",
    CommandResult: "command",
    FinishResult: "finish",
}

_EDIT_ADVICE = "edit it with run (e.g. `sed -i`) instead, after finding the lines with `grep -n`"
# A notebook is large for its outputs (images): editing its JSON by hand would skip validation.
_NOTEBOOK_ADVICE = (
    "ask the user to clear its outputs in Jupyter (Edit > Clear Outputs of All Cells) and save it"
)


def _decode(
    where: WorkspacePath, settings: Settings, advice: str = TOO_LARGE_ADVICE
) -> tuple[TextFile, os.stat_result]:
    """The decoded file and its status, read by the safe reader (regular files, bounded size)."""
    name = where.rel or "."
    raw, status = read_regular(where.abs, name, settings.max_file_bytes, advice, within=where.root)
    return decode_file(raw, name), status


ArgsT = TypeVar("ArgsT", bound=Args)
# What commit runs for a command: the proposal, where, the limits, and an event that asks a
# running command to end now (its whole process tree), set when the session stops.
ExecuteFn = Callable[[CommandProposal, Workspace, Settings, "threading.Event | None"], Observation]


@dataclass(frozen=True)
class ToolSpec(Generic[ArgsT]):
    """One model-facing tool: ``stage`` takes its parsed ``args`` model."""

    name: str
    kind: ToolKind
    description: str
    args: type[ArgsT]
    stage: Callable[[ArgsT, ToolContext], StageResult]
    execute: ExecuteFn | None = None  # commands only: what commit runs

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema: exactly what the model reads."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": compact_schema(self.args),
            },
        }


@dataclass
class Toolset:
    """A named, ordered set of tools offered to the model together."""

    name: str
    tools: dict[str, ToolSpec[Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, specs: Iterable[ToolSpec[Any]]) -> Toolset:
        return cls(name, {spec.name: spec for spec in specs})

    def schemas(self) -> list[dict[str, Any]]:
        return [spec.schema() for spec in self.tools.values()]


def compact_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema without titles and with nested models inlined: fewer tokens, same meaning."""
    schema = copy.deepcopy(model.model_json_schema())
    defs = schema.pop("$defs", {})

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = defs[node["$ref"].rsplit("/", 1)[-1]]
                merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
                return visit(merged)
            node.pop("title", None)
            if "anyOf" in node:  # Optional[X] -> X (absent means None)
                options = [o for o in node["anyOf"] if o.get("type") != "null"]
                if len(options) == 1:
                    rest = {k: v for k, v in node.items() if k != "anyOf"}
                    node = {**options[0], **rest}
                    if node.get("default", 0) is None:
                        node.pop("default")
            return {k: visit(v) for k, v in node.items()}
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node

    result: dict[str, Any] = visit(schema)
    result.pop("description", None)  # the tool description says it
    # Enforced by pydantic (a call that breaks them is refused with INVALID_ARGS), and they
    # cost the model tokens on every turn without telling it anything it would get wrong:
    _drop_key(result, "additionalProperties")
    _drop_key(result, "minItems")  # an empty list of edits edits nothing
    _drop_false_defaults(result)  # an absent flag is off
    return result


def _drop_false_defaults(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "boolean" and node.get("default") is False:
            node.pop("default")
        for value in node.values():
            _drop_false_defaults(value)
    elif isinstance(node, list):
        for value in node:
            _drop_false_defaults(value)


def _drop_key(node: Any, key: str) -> None:
    if isinstance(node, dict):
        node.pop(key, None)
        for value in node.values():
            _drop_key(value, key)
    elif isinstance(node, list):
        for value in node:
            _drop_key(value, key)


def check_size(ctx: ToolContext, rel: str, text: str) -> None:
    """Refuse ``text`` as the content of ``rel`` when it is over the size limit for files
    the agent writes (a file that large the read and edit tools would refuse to open)."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > ctx.settings.max_file_bytes:
        raise fail(
            FILE_TOO_LARGE,
            f"{rel}: the content is {size:,} bytes, over the {ctx.settings.max_file_bytes:,}"
            "-byte limit for files the agent writes",
        )
