"""The workspace: one root folder, and every path the model names resolved inside it.

Paths are checked lexically (no ``..`` escape, no absolute path elsewhere, no
NUL byte, no name over the OS's limit; a leading ``~`` or ``$HOME`` means the home
folder, as in a shell; a Windows drive path, a URL or another variable is refused)
and then physically (a symlink must not lead outside the root). A path to write
must print as itself: no control or format characters (a newline, ESC, U+202E).
Writes into ``.git/`` and ``.grinta/`` and to the user's protected patterns are
refused, case-insensitively, since a case-insensitive file system would treat
``.GIT`` as ``.git`` and ``A.IPYNB`` as a notebook.

Walking the tree (``files``, ``walk``) never follows a link to a folder (so a
link loop cannot trap it), never opens anything but ``.gitignore`` files
(through the safe reader), and reports what it passed over (FIFOs, sockets,
devices, link loops, broken links, unreadable folders) as ``Skipped`` entries.

A root must be a folder other than the file system's root, and its ``.grinta``
(if there is one) a real folder grinta can write: ``root_problem`` says what is
wrong in one line, for front ends to refuse with before a session starts
(docs/guarantees.md, *The workspace root*).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from grinta_jupyter.runtime.errors import (
    INVALID_ARGS,
    PATH_FORBIDDEN,
    PATH_OUTSIDE_WORKSPACE,
    PATH_TOO_LONG,
    SYMLINK_LOOP,
    WORKSPACE_MISSING,
    ToolFailure,
    fail,
    os_error,
)
from grinta_jupyter.runtime.files import (
    FORBIDDEN_DIRS,
    STATE_DIR,
    file_kind,
    folded_name,
    opened_within,
    read_regular,
)

# Never walked when listing or searching, even without a .gitignore.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        STATE_DIR,
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        ".hypothesis",
    }
)
# A .gitignore larger than this is not honoured (real ones are a few KB; every
# pattern costs time for every file walked).
GITIGNORE_MAX_BYTES = 256_000


def _os_limit(name: str, default: int) -> int:
    try:
        return os.pathconf("/", name)
    except (OSError, ValueError, AttributeError):
        return default


NAME_MAX = _os_limit("PC_NAME_MAX", 255)  # bytes in one file name
PATH_MAX = _os_limit("PC_PATH_MAX", 4096)  # bytes in a whole path
_MISSING = "the workspace folder {root} was deleted or moved; nothing can be read or written"
# A folder a walk lists: never through a link in its last name (a folder the listing above
# found, swapped for a link since); one on the way is caught by ``opened_within``.
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

# (folder relative to the root, "" for the root; its .gitignore), outermost first
_Specs = list[tuple[str, pathspec.GitIgnoreSpec]]


@dataclass(frozen=True)
class WorkspacePath:
    """A path the model named, resolved: ``rel`` is POSIX and relative to the root."""

    rel: str
    abs: Path

    @property
    def root(self) -> Path:
        """The resolved workspace root ``abs`` lies in (``abs`` is ``root / rel``)."""
        if self.rel in ("", "."):
            return self.abs
        return Path(str(self.abs)[: -len(self.rel) - 1])


@dataclass(frozen=True)
class Skipped:
    """A path a walk passed over without reading it, and why (for reports like search's)."""

    rel: str
    reason: str  # e.g. "a FIFO (named pipe), not a regular file", "a symbolic link loop"


def skipped_note(first: list[Skipped], count: int) -> str:
    """'2 files: big.log (48.0 MB, ...), pipe (a FIFO ...)': the first few by name, then a count."""
    named = ", ".join(f"{item.rel} ({item.reason})" for item in first)
    rest = count - len(first)
    return f"{count} file{'s' if count != 1 else ''}: {named}" + (
        f" and {rest} more" if rest > 0 else ""
    )


_STATE_FOLDERS = ("sessions", "journal", "undo")  # what a session makes in .grinta first


def root_problem(root: str | os.PathLike[str], named: str) -> str | None:
    """Why ``root`` cannot be a session's workspace, in one line a person can act on; None
    when it can. ``named`` is how the person gave it ("--root /x", "the current folder").

    The file system root is refused: a session there keeps its logs in ``/.grinta`` and
    its symbol index walks every mounted file system. A ``.grinta`` (or its
    ``sessions``, ``journal`` or ``undo``) that is a file, a link or a folder grinta
    cannot write is refused too: the session would start, then end at once on a log it
    cannot open, with a note about a recovery that never ran.
    """
    path = Path(root)
    try:
        if not path.exists():
            return f"{named} does not exist"
        if not path.is_dir():
            return f"{named} is not a folder"
        real = path.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop, a name too long
        return f"{named}: {getattr(exc, 'strerror', None) or exc}"
    if real == Path(real.anchor):
        shown = f" ({real})" if str(path) != real.anchor else ""
        return (
            f"{named} is the file system root{shown}; give the project's folder (a session "
            "keeps its state in <root>/.grinta and indexes every file below the root)"
        )
    inside = _in_state_folder(real)
    if inside is not None:
        return (
            f"{named} is inside {inside}, where a session keeps its logs, journal and undo "
            "records; a session there could change them: give the project's folder"
        )
    state = real / STATE_DIR
    for folder in (state, *(state / name for name in _STATE_FOLDERS)):
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            break  # made by the session (the first missing one ends the chain)
        except OSError as exc:
            return f"cannot look at {folder}: {exc.strerror or exc}"
        if stat.S_ISLNK(mode):
            return (
                f"{folder} is a symbolic link; grinta keeps its session logs and undo records "
                "only in a real folder, and never follows a link there: remove the link"
            )
        if not stat.S_ISDIR(mode):
            kind = "a file" if stat.S_ISREG(mode) else file_kind(mode)
            return (
                f"{folder} is {kind}, where grinta keeps its session logs and undo records: "
                "rename or remove it"
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            return (
                f"{folder} is not writable, and grinta keeps its session logs there: "
                "make it writable (chmod u+rwx) or remove it"
            )
    else:
        return None
    parent = folder.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable, so grinta cannot make {folder.name} there for its logs"
    return None


# Every folder a session makes in its .grinta (the event logs, the journal, undo records, the
# symbol index, the snapshots' blobs).
_STATE_CONTENTS = frozenset({*_STATE_FOLDERS, "index", "blobs"})


def _in_state_folder(real: Path) -> Path | None:
    """The grinta state folder ``real`` is, or lies in, else None: a ``.grinta`` itself, or
    anything under the folders a session makes there. A project kept under a folder that
    only happens to be named ``.grinta`` (``~/.grinta/projects/ws``) is not one."""
    parts = real.parts
    for i, part in enumerate(parts):
        if part != STATE_DIR:
            continue
        if i == len(parts) - 1 or parts[i + 1] in _STATE_CONTENTS:
            return Path(*parts[: i + 1])
    return None


class Workspace:
    """Resolves and lists paths under one root directory."""

    def __init__(self, root: str | os.PathLike[str], protected: tuple[str, ...] = ()):
        path = Path(root)
        if not path.is_dir():
            raise NotADirectoryError(f"workspace root {path} is not a directory")
        real = path.resolve()
        if real == Path(real.anchor):  # front ends say so first (root_problem); the API too
            raise OSError(
                errno.EINVAL, f"{path} is the file system root; give the project's folder"
            )
        self.root = real
        # The root as given: through a link (``~/proj`` -> ``/data/proj``), absolute paths the
        # user and the model name start with it, not with the resolved root.
        self._given = Path(os.path.normpath(os.path.abspath(path)))
        self._root_str = str(self.root)
        self.protected = protected

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def resolve(self, path: str, *, write: bool = False) -> WorkspacePath:
        """Resolve ``path`` inside the root, or raise a ToolFailure saying why not."""
        if not isinstance(path, str) or not path.strip():
            raise fail(INVALID_ARGS, "path must be a non-empty string")
        if "\x00" in path:
            raise fail(PATH_FORBIDDEN, "path contains a NUL byte")
        # Models trained on Windows transcripts sometimes send backslashes.
        text = _as_shell_would(path.strip().replace("\\", "/"), path)
        if text.startswith("//"):  # POSIX lets "//x" differ from "/x"; Linux and macOS do not
            text = "/" + text.lstrip("/")
        candidate = Path(text) if os.path.isabs(text) else self.root / text
        lexical = Path(os.path.normpath(candidate))
        if not _is_within(lexical, self.root) and _is_within(lexical, self._given):
            lexical = self.root / lexical.relative_to(self._given)
        if not _is_within(lexical, self.root):
            raise fail(
                PATH_OUTSIDE_WORKSPACE,
                f"{path!r} is outside the workspace ({self._given}); tools read and write "
                "only inside it: give a path relative to the workspace root",
            )
        _check_length(lexical, path)
        if not os.path.isdir(self._root_str):
            raise fail(WORKSPACE_MISSING, _MISSING.format(root=self.root))
        try:
            os.stat(lexical)  # a link loop on the way would resolve to a made-up path
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise fail(SYMLINK_LOOP, f"{path!r} runs into a symbolic link loop") from None
        try:
            real = Path(os.path.realpath(lexical))
        except OSError as exc:  # a link on the way replaced or removed while it was followed
            raise fail(
                os_error(exc, path).code,
                f"{path!r} changed while it was being resolved ({exc.strerror or exc}); try again",
            ) from None
        if not _is_within(real, self.root):
            raise fail(
                PATH_OUTSIDE_WORKSPACE,
                f"{path!r} resolves (through a symlink) outside the workspace; tools never "
                "follow a link out of it: give a path whose target is inside the workspace",
            )
        rel = real.relative_to(self.root).as_posix()
        lexical_rel = lexical.relative_to(self.root).as_posix()
        if write:
            for parts in (PurePosixPath(rel).parts, PurePosixPath(lexical_rel).parts):
                if any(folded_name(part) in FORBIDDEN_DIRS for part in parts):
                    raise fail(
                        PATH_FORBIDDEN,
                        f"{path!r} is inside a protected folder (.git or .grinta): the agent "
                        "never writes git's or grinta's own state; change git's with run git",
                    )
            for pattern in self.protected:
                if _protected_by(pattern, rel, lexical_rel):
                    raise fail(
                        PATH_FORBIDDEN,
                        f"{path!r} is protected ({pattern}): the user has not allowed "
                        "the agent to write it",
                    )
        if rel == ".":
            rel = ""
        return WorkspacePath(rel=rel, abs=real)

    def display(self, abs_path: Path) -> str:
        return abs_path.relative_to(self.root).as_posix()

    def files(self, under: str = "") -> Iterator[str]:
        """Workspace-relative POSIX paths of regular files, honouring .gitignore files."""
        for item in self.walk(under):
            if isinstance(item, str):
                yield item

    def source_state(self, most: int = 20_000) -> dict[str, tuple[int, int, int]] | None:
        """Each source file's (size, mtime_ns, inode), for files a language is known for
        (``grammars.language_for``); None past ``most`` files or when the tree cannot be
        read. Two states differ where a file was written, replaced, made or removed."""
        from grinta_jupyter.runtime.grammars import language_for

        state: dict[str, tuple[int, int, int]] = {}
        try:
            for rel in self.files():
                if language_for(rel) is None:
                    continue
                if len(state) >= most:
                    return None
                try:
                    st = os.lstat(self.root / rel)
                except OSError:
                    continue  # removed while walking: absent, as it is now
                state[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
        except (OSError, ToolFailure):
            return None
        return state

    def walk(
        self, under: str = "", *, entering: Callable[[str], None] | None = None
    ) -> Iterator[str | Skipped]:
        """Regular files (as in ``files``) and, as ``Skipped``, what was passed over and why.

        Folders and files that .gitignore or ``SKIPPED_DIRS`` exclude are left
        out silently; links to folders are not followed (nor reported). ``entering`` is
        called with each folder before it is listed (a caller's deadline can raise there:
        a tree of empty folders yields nothing to check between).
        """
        start = self.resolve(under).abs if under else self.root
        try:
            status = os.stat(start)
        except OSError as exc:
            if not under and exc.errno == errno.ENOENT:
                raise fail(WORKSPACE_MISSING, _MISSING.format(root=self.root)) from None
            raise ToolFailure(
                os_error(exc, repr(under) if under else "the workspace folder")
            ) from None
        if not stat.S_ISDIR(status.st_mode):
            rel = self.display(start)
            yield rel if stat.S_ISREG(status.st_mode) else Skipped(rel, _not_regular(status))
            return
        # Depth-first with an explicit stack: a very deep tree cannot exhaust recursion.
        # Paths stay strings: pathlib parsing per entry costs time in the depth of the tree.
        top = self.display(start) if start != self.root else ""
        pending = [self._scan(top, self._ignores_above(top))]
        while pending:
            item = next(pending[-1], None)
            if item is None:
                pending.pop()
            elif isinstance(item, tuple):
                if entering is not None:
                    entering(item[0])
                pending.append(self._scan(*item))
            else:
                yield item

    def _ignores_above(self, top: str) -> _Specs:
        """The .gitignore specs of the folders from the root down to ``top`` (exclusive)."""
        specs = []
        parts = top.split("/") if top else []
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = _load_gitignore(os.path.join(self._root_str, base))
            if spec is not None:
                specs.append((base, spec))
        return specs

    def _scan(self, folder: str, specs: _Specs) -> Iterator[str | Skipped | tuple[str, _Specs]]:
        """One folder's entries in name order: files, skips, and sub-folders to walk next."""
        directory = os.path.join(self._root_str, folder) if folder else self._root_str
        own = _load_gitignore(directory)
        if own is not None:
            specs = [*specs, (folder, own)]
        try:
            entries = _listed(directory, self._root_str)
        except OSError as exc:
            why = "replaced by a link while walking" if exc.errno == errno.ELOOP else _why(exc)
            yield Skipped(folder + "/", why)
            return
        if entries is None:
            yield Skipped(folder + "/", "moved out of the workspace while walking")
            return
        for name, kind in entries:
            rel = f"{folder}/{name}" if folder else name
            try:
                if isinstance(kind, OSError):
                    raise kind
                is_dir = kind == "dir"
                if is_dir and name in SKIPPED_DIRS:
                    continue
                if _ignored(rel, is_dir, specs):
                    continue
                if is_dir:
                    yield rel, specs
                elif kind == "link":
                    yield from self._link(os.path.join(directory, name), rel)
                elif kind == "file":
                    yield rel
                else:
                    status = os.stat(os.path.join(directory, name), follow_symlinks=False)
                    yield Skipped(rel, _not_regular(status))
            except OSError as exc:
                yield Skipped(rel, _why(exc))

    def _link(self, path: str, rel: str) -> Iterator[str | Skipped]:
        """A symbolic link: its target file if regular and inside the root, else why not."""
        try:
            status = os.stat(path)  # follows the link; a loop raises ELOOP (reported by _scan)
        except FileNotFoundError:
            yield Skipped(rel, "a broken symbolic link")
            return
        if stat.S_ISDIR(status.st_mode):
            return  # links to folders are never followed: no loops, no duplicates
        if not _is_within(Path(os.path.realpath(path)), self.root):
            yield Skipped(rel, "a link to outside the workspace")
        elif stat.S_ISREG(status.st_mode):
            yield rel
        else:
            yield Skipped(rel, _not_regular(status))


def _listed(directory: str, root: str) -> list[tuple[str, str | OSError]] | None:
    """The entries of ``directory`` in name order, each with its kind (``dir``, ``link``,
    ``file``, ``other``, or the OSError telling it raised), or None when the folder opened
    lies outside ``root`` (a folder on the way swapped for a link since it was listed: its
    names are not the workspace's to show). OSError when it cannot be opened."""
    fd = os.open(directory, _FOLDER)
    try:
        if not opened_within(fd, directory, root):
            return None
        with os.scandir(fd) as listing:  # kinds read now, while the listing's folder is open
            return sorted(((entry.name, _kind(entry)) for entry in listing), key=lambda e: e[0])
    finally:
        os.close(fd)


def _kind(entry: os.DirEntry[str]) -> str | OSError:
    try:
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        if entry.is_symlink():
            return "link"
        return "file" if entry.is_file(follow_symlinks=False) else "other"
    except OSError as exc:
        return exc


def _load_gitignore(directory: str) -> pathspec.GitIgnoreSpec | None:
    ignore = os.path.join(directory, ".gitignore")
    if not os.path.lexists(ignore):
        return None
    try:
        raw, _ = read_regular(ignore, ".gitignore", GITIGNORE_MAX_BYTES)
    except ToolFailure:  # a FIFO, a loop, too large, unreadable: walk as if it were absent
        return None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError):  # a pattern pathspec cannot compile
        return None


def _ignored(rel: str, is_dir: bool, specs: _Specs) -> bool:
    for base, spec in specs:
        below = rel[len(base) + 1 :] if base else rel  # the path as seen from the spec's folder
        if is_dir:
            below += "/"
        if spec.match_file(below):
            return True
    return False


_HOME_VARIABLE = re.compile(r"\$(?:HOME|\{HOME\})(?=/|$)")
_LEADING_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?(?=/|$)")
_DRIVE = re.compile(r"[A-Za-z]:(?:/|$)")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _as_shell_would(text: str, named: str) -> str:
    """``text`` with a leading ``~``, ``~user``, ``$HOME`` or ``${HOME}`` expanded, as the
    shell the model has in mind would: taken literally, ``~/.bashrc`` was made as a folder
    named ``~`` in the workspace while the reviewer read it as the home folder's file.

    Other leading variables, Windows drive paths and URLs are refused rather than read as
    names in the root: a variable's value is not looked up (it may be a secret), and
    ``C:/x`` or ``file:///x`` never name the file the model meant.
    """
    home = _HOME_VARIABLE.match(text)
    if home is not None:
        text = "~" + text[home.end() :]
    if text.startswith("~"):
        expanded = os.path.expanduser(text)
        if expanded != text:
            return expanded
        # ``~nobody/x`` (no such user) is a name, as in a shell; ``~$lock.docx`` too.
    elif _LEADING_VARIABLE.match(text):
        raise fail(
            INVALID_ARGS,
            f"{named!r} starts with a shell variable; paths are not expanded here: "
            "give the path relative to the workspace root",
        )
    if _DRIVE.match(text):
        raise fail(
            PATH_OUTSIDE_WORKSPACE,
            f"{named!r} is a Windows drive path; the workspace is a POSIX folder: "
            "give the path relative to the workspace root",
        )
    if _URL.match(text):
        raise fail(
            INVALID_ARGS,
            f"{named!r} is a URL; give a file path relative to the workspace root",
        )
    return text


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _check_length(path: Path, named: str) -> None:
    """PATH_TOO_LONG for a name or a path the OS would refuse, before touching the disk."""
    try:
        encoded = os.fsencode(path)
    except UnicodeError:  # a lone surrogate: no file can have this name
        raise fail(PATH_FORBIDDEN, f"{named!r} is not a valid file name") from None
    shown = repr(named) if len(named) <= 80 else repr(named[:80]) + "..."
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > NAME_MAX:
        raise fail(
            PATH_TOO_LONG,
            f"a name in {shown} is {longest} bytes long, over the OS limit of {NAME_MAX}",
        )
    if len(encoded) >= PATH_MAX:
        raise fail(
            PATH_TOO_LONG,
            f"{shown} is {len(encoded)} bytes long as a full path, over the OS limit of {PATH_MAX}",
        )


def _protected_by(pattern: str, *paths: str) -> bool:
    """Whether ``pattern`` matches any of ``paths`` or its file name, ignoring case."""
    # NFC: macOS stores "café" typed either way as one file; the pattern must match both.
    folded = unicodedata.normalize("NFC", pattern).casefold()
    for path in paths:
        for name in (path, PurePosixPath(path).name):
            if fnmatch.fnmatchcase(unicodedata.normalize("NFC", name).casefold(), folded):
                return True
    return False


def _not_regular(status: os.stat_result) -> str:
    return f"{file_kind(status.st_mode)}, not a regular file"


def _why(exc: OSError) -> str:
    """Why a walk could not look at a path, in a few words."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop"
    if exc.errno == errno.ENOENT:
        return "removed while walking"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENAMETOOLONG:
        return "path too long"
    return (exc.strerror or "unreadable").lower()
