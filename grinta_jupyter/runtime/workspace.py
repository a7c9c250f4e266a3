"""The workspace: one root folder, and every path the model names resolved inside it.

Paths are checked lexically (no ``..`` escape, no absolute path elsewhere, no
NUL byte) and then physically (a symlink must not lead outside the root).
Writes into ``.git/`` and ``.grinta/`` are refused, case-insensitively, since a
case-insensitive file system would treat ``.GIT`` as ``.git``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from grinta_jupyter.runtime.errors import (
    INVALID_ARGS,
    PATH_FORBIDDEN,
    PATH_OUTSIDE_WORKSPACE,
    fail,
)

STATE_DIR = ".grinta"
FORBIDDEN_DIRS = frozenset({".git", STATE_DIR})
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


@dataclass(frozen=True)
class WorkspacePath:
    """A path the model named, resolved: ``rel`` is POSIX and relative to the root."""

    rel: str
    abs: Path


class Workspace:
    """Resolves and lists paths under one root directory."""

    def __init__(self, root: str | os.PathLike[str], protected: tuple[str, ...] = ()):
        path = Path(root)
        if not path.is_dir():
            raise NotADirectoryError(f"workspace root {path} is not a directory")
        self.root = path.resolve()
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
        text = path.strip().replace("\\", "/")
        candidate = Path(text) if os.path.isabs(text) else self.root / text
        lexical = Path(os.path.normpath(candidate))
        if not _is_within(lexical, self.root):
            raise fail(PATH_OUTSIDE_WORKSPACE, f"{path!r} is outside the workspace")
        real = Path(os.path.realpath(lexical))
        if not _is_within(real, self.root):
            raise fail(
                PATH_OUTSIDE_WORKSPACE,
                f"{path!r} resolves (through a symlink) outside the workspace",
            )
        rel = real.relative_to(self.root).as_posix()
        lexical_rel = lexical.relative_to(self.root).as_posix()
        if write:
            for parts in (PurePosixPath(rel).parts, PurePosixPath(lexical_rel).parts):
                if any(part.casefold() in FORBIDDEN_DIRS for part in parts):
                    raise fail(
                        PATH_FORBIDDEN, f"{path!r} is inside a protected folder (.git or .grinta)"
                    )
            for pattern in self.protected:
                if any(fnmatch.fnmatch(name, pattern) for name in (rel, PurePosixPath(rel).name)):
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
        start = self.resolve(under).abs if under else self.root
        if start.is_file():
            yield self.display(start)
            return
        yield from self._walk(start, self._ignores_above(start))

    def _ignores_above(self, start: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
        """The .gitignore specs of the folders between the root and ``start`` (exclusive)."""
        specs = []
        for directory in reversed(start.parents):
            if _is_within(directory, self.root):
                spec = _load_gitignore(directory)
                if spec is not None:
                    specs.append((directory, spec))
        return specs

    def _walk(
        self, directory: Path, specs: list[tuple[Path, pathspec.GitIgnoreSpec]]
    ) -> Iterator[str]:
        own = _load_gitignore(directory)
        if own is not None:
            specs = [*specs, (directory, own)]
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir and entry.name in SKIPPED_DIRS:
                continue
            if _ignored(path, is_dir, specs):
                continue
            if is_dir:
                yield from self._walk(path, specs)
            elif entry.is_file():
                real = Path(os.path.realpath(path))
                if _is_within(real, self.root):
                    yield path.relative_to(self.root).as_posix()


def _load_gitignore(directory: Path) -> pathspec.GitIgnoreSpec | None:
    ignore = directory / ".gitignore"
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, pathspec.GitIgnoreSpec]]) -> bool:
    for base, spec in specs:
        rel = path.relative_to(base).as_posix()
        if is_dir:
            rel += "/"
        if spec.match_file(rel):
            return True
    return False


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
