"""The workspace's symbol index: which definitions exist, and what an address means.

:class:`SymbolIndex` keeps the symbols of every supported file (never syntax
trees) and a name -> symbols table, so resolving an address is a dictionary
lookup. Nothing stale is served:

- A file's stamp is ``(mtime_ns, size, ctime_ns, inode)``; a file whose stamp is
  unchanged is skipped, otherwise its SHA-256 decides whether it is parsed again.
  A file stamped within ``RACY_NS`` of its last change is *racy* (a same-size edit
  in the same clock tick would leave the stamp alone) and is hashed at every check
  until a later stamp shows it settled.
- On Linux the tree is watched with inotify (``tree_watch``): a full ``refresh`` then
  re-checks only the files that had events (and symbolic links and files with
  several hard links, whose content changes unseen under their own name), so it
  costs microseconds on an unchanged tree; a new folder, a ``.gitignore`` or a new
  file make it list and stat the tree again. Without a
  watch (another OS, a network file system, a limit reached) every full ``refresh``
  stats every listed file.
- With ``persist=True`` the index is saved under ``.grinta/index/`` (``index_store``)
  and the next session starts from it: it reads the store's small head (stamps,
  digests, the name table packed), starts the watch, lists the tree and stats every
  file while a thread reads and checks the store's rows; nothing is served before
  both are done (``_rescan``, ``_settle``). Names and rows are unpacked when first
  asked for.
- A cold session's first ``resolve`` of a plain name parses only the files whose
  bytes contain the name and finishes the index in a background thread; anything
  that needs the whole index (suggestions, ``search``, ``symbols``, a full
  ``refresh``) waits for it.

Parsing runs here or in worker processes (``index_parse``).

Addresses:

- ``path::Qualified.name`` restricts the lookup to one file;
- ``Qualified.name`` and ``name`` search the whole workspace;
- an exact qualified-name match wins, else dotted-suffix matches count
  (``append_entries`` finds ``RaftNode.append_entries``; ``Node.f`` finds
  ``pkg.Node.f``). ``::`` between names (C++, Rust) and Ruby's ``#`` read as ``.``.
"""

from __future__ import annotations

import atexit
import bisect
import difflib
import heapq
import marshal
import os
import re
import shutil
import stat as stat_module
import subprocess
import threading
import time
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TypeVar

from grinta_jupyter.code import index_store
from grinta_jupyter.code.index_parse import (
    MAX_FILE_BYTES,
    Result,
    Row,
    parse_files,
    parse_parallel,
)
from grinta_jupyter.code.index_store import RACY_NS, Stamp
from grinta_jupyter.code.symbols import SYMBOL_LANGUAGES, Symbol
from grinta_jupyter.code.tree_watch import Changes, TreeWatch
from grinta_jupyter.runtime import collector
from grinta_jupyter.runtime.errors import ToolFailure
from grinta_jupyter.runtime.files import read_regular
from grinta_jupyter.runtime.grammars import language_for

T = TypeVar("T")

# Directories never indexed by the default lister.
SKIP_DIRS = frozenset({".git", ".grinta", "node_modules", "__pycache__", "venv", ".venv"})
# A name the cold start can find by scanning bytes (an ASCII identifier).
_SCANNABLE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# Files a background build parses between two looks at the lock.
_COLD_CHUNK = 400
# A changed index is saved at most this often (and when closed, and at exit).
SAVE_EVERY_S = 30.0
# After a tree watch could not start, the next attempt waits this long.
WATCH_RETRY_S = 60.0
# Files one grep is given at once (well under the kernel's limit on arguments), and how
# long a batch may take before the files are read here instead.
_GREP_BATCH = 500
_GREP_TIMEOUT_S = 20.0
# Below this many bytes to parse, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 8_000_000


@dataclass
class Resolution:
    """What an address names: one match, several (ambiguous), or none with suggestions."""

    address: str
    matches: list[Symbol]
    suggestions: list[Symbol] = field(default_factory=list)
    # Definitions whose qualified name only ends in the address, passed over because one
    # matched it exactly (``process`` names the function, not ``A.process``).
    passed_over: list[Symbol] = field(default_factory=list)

    @property
    def unique(self) -> Symbol | None:
        """The match when there is exactly one."""
        return self.matches[0] if len(self.matches) == 1 else None


def parse_address(address: str) -> tuple[str | None, str]:
    """Split ``path::Qualified.name`` into (path or None, dotted qualified name).

    The part before the first ``::`` is a path only when it looks like one (it
    has a ``/`` or a file suffix a grammar knows); otherwise ``Foo::bar`` is a
    C++/Rust qualified name and reads as ``Foo.bar``.
    """
    address = address.strip()
    path: str | None = None
    head, sep, rest = address.partition("::")
    if sep and (
        "/" in head
        or "\\" in head
        or language_for(head) is not None
        or head.lower().endswith(".ipynb")
    ):
        path, address = _normalize_path(head), rest
    qualname = address.replace("::", ".").replace("#", ".").strip(".")
    return path, qualname


def _normalize_path(path: str) -> str:
    if (
        "\\" not in path
        and "//" not in path
        and not path.startswith(("./", " "))
        and ("/./" not in path and not path.endswith(("/", " ")))
    ):
        return path  # already clean (the common case: paths from a lister)
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return str(PurePosixPath(path)) if path else path


@lru_cache(maxsize=4096)
def _suffix_has_symbols(suffix: str) -> bool:
    return suffix == ".ipynb" or language_for("x" + suffix) in SYMBOL_LANGUAGES


def _has_symbols(path: str) -> bool:
    """Whether ``path`` is in a language with symbol support (by its suffix)."""
    return _suffix_has_symbols(os.path.splitext(path)[1].lower())


def walk_files(root: Path) -> Iterator[str]:
    """Workspace-relative posix paths under ``root``, skipping VCS, caches, hidden dirs and venvs.

    Links to folders are not followed and link loops are left out (nothing can
    trap the walk), and the walk keeps its own stack (a very deep tree cannot
    exhaust recursion). Other entries that are not regular files (FIFOs,
    sockets, broken links) are listed: ``SymbolIndex`` stats each path and
    indexes regular files only.
    """
    root = Path(root)
    pending = [str(root)]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        dirs = []
        relative = os.path.relpath(directory, root)
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and entry.is_symlink() and entry.is_dir():
                    continue  # a link to a folder: never followed
            except OSError:  # a link loop
                continue
            if not is_dir:
                yield (
                    entry.name
                    if relative == "."
                    else f"{relative}/{entry.name}".replace(os.sep, "/")
                )
            elif (
                entry.name not in SKIP_DIRS
                and not entry.name.startswith(".")
                and not os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
            ):
                dirs.append(entry.path)
        pending.extend(reversed(dirs))  # walked in name order, as os.walk would


@dataclass(slots=True)
class _File:
    """One indexed file. Its symbol rows are kept marshalled and decoded on first use:
    a loaded index of 10,000 files then costs one small record per file to start."""

    stamp: Stamp
    digest: bytes
    blob: bytes | memoryview  # marshal.dumps of the symbol rows (a view into a loaded store)
    racy: bool  # changed close to when it was stamped: hashed again at the next check
    decoded: list[Row] | None = None
    built: list[Symbol] | None = None

    def rows(self) -> list[Row]:
        if self.decoded is None:
            self.decoded = marshal.loads(self.blob)
        return self.decoded

    def symbols(self, path: str) -> list[Symbol]:
        if self.built is None:
            self.built = [Symbol(r[0], r[1], r[2], path, *r[3:]) for r in self.rows()]
        return self.built


def _seen(known: _File | None) -> tuple[_File | None, Stamp | None, bool]:
    """What tells an entry apart from the same one later: a new entry is another object
    (compared with ``is``, and held here so its identity cannot be reused); the same entry
    stamped again (its bytes found unchanged) has another stamp or racy mark."""
    return (known, known.stamp, known.racy) if known is not None else (None, None, False)


def _same(
    one: tuple[_File | None, Stamp | None, bool], other: tuple[_File | None, Stamp | None, bool]
) -> bool:
    return one[0] is other[0] and one[1:] == other[1:]


class _NameTable:
    """name -> path -> positions of the symbols with that name in that file's rows.

    After a load the store's names stay packed (a sorted list, and postings into the
    store's list of paths) and each is unpacked when first asked for: a 10,000-file
    index has about 120,000 names, and a table of them all would cost more than the
    rest of a warm start. Packed entries only ever name files unchanged since the
    load: dropping a file unpacks every name it had.
    """

    def __init__(self) -> None:
        # Names unpacked or added this session; an empty entry is a packed name now gone.
        self._table: dict[str, dict[str, list[int]]] = {}
        self._stored: index_store.Snapshot | None = None
        self._packed: list[str] = []  # the store's names, sorted
        self._count = 0

    @classmethod
    def packed(cls, snapshot: index_store.Snapshot) -> _NameTable:
        table = cls()
        table._stored, table._packed = snapshot, snapshot.names
        table._count = len(snapshot.names)
        return table

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        """The names (a copy: looking names up while iterating is fine)."""
        names = [name for name, by_path in self._table.items() if by_path]
        names.extend(name for name in self._packed if name not in self._table)
        return iter(names)

    def get(self, name: str) -> dict[str, list[int]]:
        """The paths with symbols named ``name`` and their positions (empty if none)."""
        entry = self._table.get(name)
        if entry is None:
            k = self._find(name)
            if k < 0:
                return {}
            entry = self._table[name] = self._unpack(k)
        return entry

    def _find(self, name: str) -> int:
        k = bisect.bisect_left(self._packed, name)
        return k if k < len(self._packed) and self._packed[k] == name else -1

    def _unpack(self, k: int) -> dict[str, list[int]]:
        stored = self._stored
        assert stored is not None
        by_path: dict[str, list[int]] = {}
        paths, files, rows = stored.paths, stored.posting_files, stored.posting_rows
        for j in range(stored.name_starts[k], stored.name_starts[k + 1]):
            by_path.setdefault(paths[files[j]], []).append(rows[j])
        return by_path

    def add(self, name: str, path: str, position: int) -> bool:
        """Note symbol ``position`` of ``path``'s rows; True when the name is new."""
        by_path = self.get(name)
        if by_path:
            by_path.setdefault(path, []).append(position)
            return False
        self._table[name] = {path: [position]}
        self._count += 1
        return True

    def discard(self, name: str, path: str) -> bool:
        """Forget ``path``'s symbols named ``name``; True when no symbol has the name now."""
        by_path = self.get(name)
        if by_path.pop(path, None) is None or by_path:
            return False
        self._count -= 1
        if self._find(name) < 0:
            del self._table[name]
        return True

    def pack(self, order: dict[str, int]) -> tuple[list[str], array[int], array[int], array[int]]:
        """The table as a store keeps it (names sorted), with paths numbered as in ``order``.

        Runs of names still packed are copied whole (a save after a few edits must not
        walk 120,000 names one by one).
        """
        names: list[str] = []
        starts, files, rows = array("i", [0]), array("i"), array("i")
        stored = self._stored
        renumber: list[int] = []
        if stored is not None:
            renumber = [order.get(path, -1) for path in stored.paths]
            if renumber == list(range(len(renumber))):
                renumber = []  # no file came or went: the numbers hold

        def copy(first: int, last: int) -> None:
            """Packed names ``first`` to ``last`` (excluded), untouched this session."""
            if first >= last or stored is None:
                return
            begin, end = stored.name_starts[first], stored.name_starts[last]
            shift = len(files) - begin
            names.extend(self._packed[first:last])
            starts.extend(array("i", [s + shift for s in stored.name_starts[first + 1 : last + 1]]))
            found = stored.posting_files[begin:end]
            files.extend(array("i", [renumber[f] for f in found]) if renumber else found)
            rows.extend(stored.posting_rows[begin:end])

        k = 0
        for name in sorted(self._table):
            at = bisect.bisect_left(self._packed, name, k)
            copy(k, at)
            k = at + 1 if at < len(self._packed) and self._packed[at] == name else at
            by_path = self._table[name]
            if by_path:  # (empty: a packed name now gone)
                names.append(name)
                for path, positions in by_path.items():
                    files.extend([order[path]] * len(positions))
                    rows.extend(positions)
                starts.append(len(files))
        copy(k, len(self._packed))
        return names, starts, files, rows


class SymbolIndex:
    """Symbols of every supported file under ``root``, kept current by ``refresh``.

    With ``persist`` the index is loaded from and saved to
    ``<root>/.grinta/index/`` (see ``index_store``); ``store_status`` says how the last
    load or save went. On Linux the tree is watched (see ``tree_watch``), so checking
    for changes costs microseconds; elsewhere every full ``refresh`` stats each file.
    """

    def __init__(
        self,
        root: Path,
        list_files: Callable[[], Iterable[str]] | None = None,
        *,
        workers: int | None = None,
        parallel_min_bytes: int = PARALLEL_MIN_BYTES,
        persist: bool = False,
    ) -> None:
        self.root = Path(root)
        self._root_str = str(self.root)
        self._root_prefix = os.path.join(self._root_str, "")  # joined by hand in the stat walk
        self._real_prefix = os.path.join(os.path.realpath(self._root_str), "")  # links' targets
        self._list_files = list_files or (lambda: walk_files(self.root))
        self._workers = workers if workers is not None else _cpu_count()
        self._parallel_min_bytes = parallel_min_bytes
        self._files: dict[str, _File] = {}
        self._by_name = _NameTable()
        # spelling fragment (lower-case first two / last three characters) -> names,
        # so suggestions run difflib over hundreds of names, not the whole index
        # (None until first needed after a load: rebuilt from the names then)
        self._by_fragment: dict[str, set[str]] | None = {}
        self._lock = threading.RLock()
        self._built = False
        self._listed: set[str] = set()  # supported paths the lister gave last time
        # Of those, symbolic links and files with more than one hard link: written through
        # another name, their content changes with no event under their own.
        self._linked: set[str] = set()
        # Files read by path that the lister leaves out (ignored, in a skipped folder): held
        # for that path's own answers, dropped before any answer about the whole workspace.
        self._unlisted: set[str] = set()
        self._watch: TreeWatch | None = None
        self._watch_retry_at = 0.0
        # A cold build finishing in the background: listed files not parsed yet, those
        # being parsed, and the thread (see ``_resolve_cold``).
        self._pending: set[str] = set()
        self._in_flight: set[str] = set()
        self._building: threading.Thread | None = None
        self._persist = persist
        self._fingerprint = b""
        self._loading: index_store.Snapshot | None = None  # a load whose rows are still read
        self._dirty = False
        self._saved_at = 0.0  # time.monotonic() of the last save
        self.store_status = "not used" if not persist else "not loaded"
        self._closer = weakref.finalize(self, _close, None)
        if persist:
            _PERSISTED.add(self)  # saved at exit if changed since its last save

    @property
    def watching(self) -> bool:
        """Whether changes are seen through a tree watch (else by stat'ing every file)."""
        return self._watch is not None

    # --- keeping current ------------------------------------------------------

    def refresh(self, paths: Iterable[str] | None = None) -> int:
        """Re-parse files whose content changed (all listed files, or just ``paths``).

        Files that disappeared (or, on a full refresh, are no longer listed) are
        dropped. Returns how many files were parsed. A full refresh of a watched
        tree looks only at the files that had events since the last one.
        """
        if paths is not None:
            return self._refresh_paths(paths)
        self._wait_built()
        with self._lock:
            if not self._built and self._persist:
                self._load()
            self._forget_unlisted()
            changes = self._watch.changes() if self._watch is not None else None
            if changes is None:
                self._stop_watch()  # lost track (or never watched): rescan, watching anew
            if self._built and changes is not None and not self._needs_listing(changes):
                touched = {p for p in changes.files if p in self._listed} | self._linked
                parsed = self._check(touched, touched)
            else:
                parsed = self._rescan(changes.files if changes is not None else set())
            if self._dirty and self._persist and time.monotonic() - self._saved_at > SAVE_EVERY_S:
                self._save()
            return parsed

    def _refresh_paths(self, paths: Iterable[str]) -> int:
        """``refresh(paths)``: the files are parsed outside the lock, so a re-index in the
        background (``tools/facade.py``) can give way to a tool call between its steps
        (``code/giveway.py``) without holding up a call that reads the index. A file whose
        entry changed meanwhile keeps that newer entry: a read parsed it, dropped it, or
        found its bytes the entry's again and stamped it anew (a write put them back)."""
        with self._lock:
            self._settle()
            wanted = {_normalize_path(p) for p in paths}
            for path in {p for p in wanted if not _has_symbols(p)}:
                self._drop(path)
                wanted.discard(path)
            self._pending -= wanted
            now = time.time_ns()
            todo, vanished = self._stale(wanted, set())
            for path in vanished:
                self._drop(path)
            jobs = self._jobs(todo)
            before = {path: _seen(self._files.get(path)) for path, _ in todo}
        results = self._run(jobs)
        with self._lock:
            fresh = [r for r in results if _same(_seen(self._files.get(r[0])), before[r[0]])]
            parsed = self._merge(fresh, dict(todo), now)
            if self._built:
                self._unlisted |= {p for p in wanted - self._listed if p in self._files}
            return parsed

    def _forget_unlisted(self) -> None:
        """Drop the files read by path that the lister does not give: they are in no answer
        about the whole workspace, and nothing keeps them fresh (the watch's events and the
        stat walk cover listed files only), so a later path read parses them again."""
        for path in self._unlisted:
            if path not in self._listed:
                self._drop(path)
        self._unlisted.clear()

    def _needs_listing(self, changes: Changes) -> bool:
        """Whether the lister must be asked again: a new supported file or a .gitignore."""
        for path in changes.created:
            if os.path.islink(os.path.join(self._root_str, path)):
                return True  # a new or retargeted link (maybe a hop of a listed one)
            if _has_symbols(path) and path not in self._listed:
                return True
        return any(path.rpartition("/")[2] == ".gitignore" for path in changes.files)

    def _rescan(self, force: set[str]) -> int:
        """List and stat every file; parse new ones, changed ones and those in ``force``.

        Right after a load this stat walk is what proves the loaded files fresh, and it
        runs while the store's rows are still being read and checked (``_settle``).
        """
        if self._watch is None:
            self._start_watch()  # before listing: nothing between the two goes unseen
        wanted = {_normalize_path(p) for p in self._list_files() if _has_symbols(p)}
        self._listed = wanted
        self._linked = set()
        now = time.time_ns()
        todo, vanished = self._stale(wanted, force)
        if not self._settle():  # the store's rows did not check out: every file is new
            todo, vanished = self._stale(wanted, force)
        for path in (set(self._files) - wanted) | vanished:
            self._drop(path)
        parsed = self._parse(todo, now)
        self._built = True  # only now: after a failure above, the next call rescans
        return parsed

    def _start_watch(self) -> None:
        if time.monotonic() < self._watch_retry_at:
            return  # failed lately (a limit, a remote file system): stat meanwhile
        self._watch = TreeWatch.start(self._root_str, SKIP_DIRS)
        if self._watch is None:
            self._watch_retry_at = time.monotonic() + WATCH_RETRY_S
        self._closer = weakref.finalize(self, _close, self._watch)

    def _stop_watch(self) -> None:
        self._closer()
        self._watch = None

    def _check(self, wanted: set[str], force: set[str]) -> int:
        """Parse the paths in ``wanted`` whose stamp changed, racy ones and those in ``force``."""
        now = time.time_ns()
        todo, vanished = self._stale(wanted, force)
        for path in vanished:
            self._drop(path)
        return self._parse(todo, now)

    def _stale(self, wanted: set[str], force: set[str]) -> tuple[list[tuple[str, Stamp]], set[str]]:
        """The paths in ``wanted`` to parse (stamp changed, racy, in ``force``) with their
        stamps, and those gone; changes nothing but ``_linked``."""
        todo: list[tuple[str, Stamp]] = []
        vanished: set[str] = set()
        for path in wanted:
            stamp = self._stat(path)
            if stamp is None:
                vanished.add(path)
                continue
            known = self._files.get(path)
            if (
                known is None
                or known.stamp != stamp
                or known.racy
                or path in force
                or path in self._linked
            ):
                todo.append((path, stamp))
        todo.sort()  # parsed in path order (sorting only these is cheaper than all)
        return todo, vanished

    def _stat(self, path: str) -> Stamp | None:
        """The file's stamp; a symbolic link, or a file with other hard links, is noted in
        ``_linked`` (its content can change without an event under its own name, so it is
        always hashed). None for a symbolic link while it leads outside the workspace (as
        the lister and the file tools refuse it). Callers pass paths with symbol support
        only."""
        full = self._root_prefix + path
        try:
            st = os.lstat(full)
            if stat_module.S_ISLNK(st.st_mode):
                self._linked.add(path)
                if not os.path.realpath(full).startswith(self._real_prefix):
                    return None
                st = os.stat(full)
        except OSError:
            return None
        if not stat_module.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        if st.st_nlink > 1:
            self._linked.add(path)  # a write through another hard link names only that one
        return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)

    def _parse(self, todo: list[tuple[str, Stamp]], now: int) -> int:
        return self._merge(self._run(self._jobs(todo)), dict(todo), now)

    def _jobs(self, todo: list[tuple[str, Stamp]]) -> list[tuple[str, bytes, int]]:
        """(path, known digest, size) for each file to parse."""
        return [
            (path, self._files[path].digest if path in self._files else b"", stamp[1])
            for path, stamp in todo
        ]

    def _run(self, jobs: list[tuple[str, bytes, int]]) -> list[Result]:
        """Parse in this process or, for many bytes, in workers too (needs no lock)."""
        pairs = [(path, digest) for path, digest, _ in jobs]
        total = sum(size for *_, size in jobs)
        if self._workers > 1 and len(jobs) > 1 and total >= self._parallel_min_bytes:
            return parse_parallel(str(self.root), pairs, self._workers)
        return parse_files(str(self.root), pairs)

    def _merge(self, results: list[Result], stamps: dict[str, Stamp], now: int) -> int:
        parsed = 0
        for path, digest, rows in results:
            if digest is None:  # unreadable or vanished meanwhile
                self._drop(path)
                continue
            stamp = stamps[path]
            racy = max(stamp[0], stamp[2]) >= now - RACY_NS
            known = self._files.get(path)
            if rows is None and known is not None:  # touched, same content
                self._dirty |= known.stamp != stamp or known.racy != racy
                known.stamp, known.racy = stamp, racy
                continue
            parsed += 1
            self._dirty = True
            self._drop(path)
            rows = rows or []
            self._add(path, _File(stamp, digest, marshal.dumps(rows), racy, rows))
        return parsed

    def _add(self, path: str, known: _File) -> None:
        self._files[path] = known
        for i, row in enumerate(known.rows()):
            if self._by_name.add(row[0], path, i) and self._by_fragment is not None:
                for fragment in _fragments(row[0]):
                    self._by_fragment.setdefault(fragment, set()).add(row[0])

    def _drop(self, path: str) -> None:
        known = self._files.pop(path, None)
        if known is None:
            return
        self._dirty = True
        for name in {row[0] for row in known.rows()}:
            if self._by_name.discard(name, path):
                self._forget_fragments(name)

    def _forget_fragments(self, name: str) -> None:
        if self._by_fragment is None:
            return
        for fragment in _fragments(name):
            names = self._by_fragment.get(fragment)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._by_fragment[fragment]

    # --- persisting -------------------------------------------------------------

    def _load(self) -> None:
        """Start from the stored index, if there is a good one (the rescan then checks it;
        the store's rows are still being read until ``_settle``)."""
        if self._fingerprint:
            return  # tried once already this session
        self._fingerprint = index_store.fingerprint()
        with collector.paused():
            stored, self.store_status = index_store.load(self.root, self._fingerprint)
            if stored is None:
                return
            # Rows come with ``_settle`` (b"" meanwhile: decoding it would fail loudly).
            self._files = {
                path: _File(stamp, digest, b"", racy)
                for path, stamp, digest, racy in zip(
                    stored.paths, stored.stamps, stored.digests, stored.racy, strict=True
                )
            }
        self._by_name, self._by_fragment = _NameTable.packed(stored), None
        self._loading = stored
        self._dirty = False
        self._saved_at = time.monotonic()  # changes seen now are saved later, not at once

    def _settle(self) -> bool:
        """Finish a load: wait for the store's rows (read and checked in a thread since
        ``_load``) and hand them to the loaded files. False when they did not check out:
        then nothing loaded is kept. Until this runs, loaded files are only stat'ed."""
        stored, self._loading = self._loading, None
        if stored is None:
            return True
        if stored.settle():
            for path, blob in zip(stored.paths, stored.rows, strict=True):
                self._files[path].blob = blob
            return True
        self._files, self._by_name, self._by_fragment = {}, _NameTable(), {}
        self.store_status = "corrupt or not written here"
        return False

    def _save(self) -> None:
        self._settle()
        paths = sorted(self._files)
        names, starts, postings, positions = self._by_name.pack(
            {path: i for i, path in enumerate(paths)}
        )
        files = [self._files[path] for path in paths]
        snapshot = index_store.Snapshot(
            paths=paths,
            stamps=[f.stamp for f in files],
            digests=[f.digest for f in files],
            racy=[f.racy for f in files],
            rows=[f.blob for f in files],
            names=names,
            name_starts=starts,
            posting_files=postings,
            posting_rows=positions,
        )
        if not self._fingerprint:
            self._fingerprint = index_store.fingerprint()
        self.store_status = index_store.save(self.root, self._fingerprint, snapshot)
        self._saved_at = time.monotonic()
        self._dirty = False

    def _fragment_table(self) -> dict[str, set[str]]:
        """Spelling fragment -> names (rebuilt from the names after a load, on first use)."""
        if self._by_fragment is None:
            table: dict[str, set[str]] = {}
            for name in self._by_name:
                for fragment in _fragments(name):
                    table.setdefault(fragment, set()).add(name)
            self._by_fragment = table
        return self._by_fragment

    def close(self) -> None:
        """Stop watching the tree and save what changed since the last save."""
        with self._lock:
            if self._dirty and self._persist and self._built:
                self._save()
            self._stop_watch()

    def _ensure_built(self) -> None:
        self.refresh()  # the first build, or a look at what changed since the last call

    # --- reading ----------------------------------------------------------------

    def symbols(self, path: str | None = None) -> list[Symbol]:
        """All symbols (path order), or those of one file (source order)."""
        if path is None:
            self._wait_built()
        with self._lock:
            if path is not None:
                return self.outline(path)
            self._ensure_built()
            return [s for p in sorted(self._files) for s in self._files[p].symbols(p)]

    def outline(self, path: str) -> list[Symbol]:
        """The symbols of one file in source order (re-parsed first if it changed)."""
        path = _normalize_path(path)
        with self._lock:
            self.refresh([path])
            known = self._files.get(path)
            return list(known.symbols(path)) if known else []

    def paths(self) -> list[str]:
        """Indexed files."""
        self._wait_built()
        with self._lock:
            self._ensure_built()
            return sorted(self._files)

    def resolve(self, address: str) -> Resolution:
        """What ``address`` names; see the module docstring for the rules.

        The first resolution in a cold session parses only the files whose bytes
        contain the name and finishes the index in the background (``_resolve_cold``).
        """
        path, qualname = parse_address(address)
        name = qualname.rpartition(".")[2]
        scanned = path is None and bool(_SCANNABLE.fullmatch(name)) and self._start_cold(name)
        with self._lock:
            building = path is None and self._building is not None
            # Partial answers only while nothing changed (events wait for the full index).
            partial = building and self._watch is not None and not self._watch.pending()
            answer = None if building and not partial else self._resolve(address, partial, scanned)
        return answer if answer is not None else self._after_build(address)

    def _resolve(self, address: str, partial: bool, scanned: bool = False) -> Resolution | None:
        """``resolve`` under the lock; None when only the whole index can answer. ``scanned``:
        the cold start has just parsed the files holding the name, and nothing changed since
        (``partial``), so they are not read a second time."""
        path, qualname = parse_address(address)
        name = qualname.rpartition(".")[2]
        if path is not None:
            self.refresh([path])
        elif partial:
            self._forget_unlisted()
            self._check(set(self._linked), set())  # (their writes may send no event)
            if not scanned:
                self._parse_containing(name)
        else:
            self._ensure_built()
        if not qualname:
            return Resolution(address, [], [])
        by_path = self._by_name.get(name)
        if path is not None:
            candidates = self._at(path, by_path.get(path, []))
        else:
            candidates = [s for p in sorted(by_path) for s in self._at(p, by_path[p])]
        exact = [s for s in candidates if s.qualname == qualname]
        suffix = "." + qualname
        matches = [s for s in candidates if s.qualname.endswith(suffix)]
        if exact:
            return Resolution(address, exact, [], matches)
        if matches:
            return Resolution(address, matches, [])
        if partial and not candidates:
            return None  # suggestions come from the whole index
        return Resolution(address, [], self._suggest(qualname, path, candidates))

    def _after_build(self, address: str) -> Resolution:
        """Resolve ``address`` once the background build is done (called without the lock,
        which the build needs)."""
        self._wait_built()
        return self.resolve(address)

    # --- a cold start ---------------------------------------------------------------

    def _start_cold(self, name: str) -> bool:
        """In a cold session (no index, no usable store): list the files, parse those
        that contain ``name`` and start parsing the rest in the background. Whether it did."""
        with self._lock:
            if self._built or self._building is not None:
                return False
            if self._persist:
                self._load()
                if self._files:
                    return False  # a store to check: the usual refresh is fast enough
            if self._watch is None:
                self._start_watch()
            if self._watch is None:
                return False  # without a watch a partial index could miss an edit
            self._listed = {_normalize_path(p) for p in self._list_files() if _has_symbols(p)}
            self._pending = set(self._listed)
            self._built = True
            self._parse_containing(name)
            self._building = threading.Thread(target=self._finish_cold, daemon=True)
            self._building.start()
            return True

    def _parse_containing(self, name: str) -> None:
        """Parse the files not parsed yet whose bytes contain ``name`` (notebooks always:
        JSON may escape what the cell holds), so a partial index answers for ``name``."""
        needle = name.encode()
        todo = [p for p in self._pending | self._in_flight if p not in self._files]
        found = {p for p in todo if p.endswith(".ipynb")}
        todo = [p for p in todo if not p.endswith(".ipynb")]
        held = _files_holding(self._root_str, todo, needle)
        if held is not None:
            found |= held
            todo = []
        for path in todo:
            try:
                source, _ = read_regular(
                    os.path.join(self._root_str, path),
                    path,
                    MAX_FILE_BYTES,
                    within=self._real_prefix,
                )
            except ToolFailure:
                found.add(path)  # the parse decides (and drops it)
                continue
            if needle in source:
                found.add(path)
        self._pending -= found
        self._check(found, set())

    def _finish_cold(self) -> None:
        """Parse the files left after a cold start, a chunk at a time, outside the lock."""
        try:
            while True:
                with self._lock:
                    chunk = set(sorted(self._pending)[:_COLD_CHUNK])
                    if not chunk:
                        break
                    self._pending -= chunk
                    self._in_flight = chunk
                    todo = [
                        (path, stamp)
                        for path in sorted(chunk)
                        if path not in self._files and (stamp := self._stat(path)) is not None
                    ]
                    jobs = self._jobs(todo)
                    now = time.time_ns()
                results = self._run(jobs)
                with self._lock:  # a foreground resolution may have parsed some meanwhile
                    fresh = [r for r in results if r[0] not in self._files]
                    self._merge(fresh, dict(todo), now)
                    self._in_flight = set()
        except BaseException:
            with self._lock:
                self._built = False  # the next call builds in the foreground
            raise
        finally:
            with self._lock:
                self._pending, self._in_flight, self._building = set(), set(), None
                if self._dirty and self._persist and self._built:
                    self._save()

    def _wait_built(self) -> None:
        """Wait for a background build (never from inside it, nor holding the lock)."""
        building = self._building
        if building is not None and building is not threading.current_thread():
            building.join()

    def _suggest(self, qualname: str, path: str | None, same_name: list[Symbol]) -> list[Symbol]:
        """Up to five symbols the address may have meant."""
        if same_name:  # the name exists, the qualifier was wrong
            return same_name[:5]
        container, _, name = qualname.rpartition(".")
        # Members of the named container first: `Store.pt` -> `Store.put`.
        members = self._members(container, path) if container else []
        found = _closest(name, members, lambda s: s.name)
        if path is not None:
            known = self._files.get(path)
            pool = {row[0] for row in known.rows()} if known else set()
        else:
            pool = self._spelling_pool(name)
            if len(pool) < 5 and len(self._by_name) <= _FULL_SCAN_NAMES:
                pool = set(self._by_name)
        for candidate in _closest(name, list(pool), lambda n: n):
            for p, indexes in sorted(self._by_name.get(candidate).items()):
                if path is None or p == path:
                    found.extend(s for s in self._at(p, indexes) if s not in found)
        return found[:5]

    def _at(self, path: str, indexes: list[int]) -> list[Symbol]:
        """The symbols of ``path`` at these positions of its rows (none for a path the index
        does not hold)."""
        if not indexes:
            return []
        symbols = self._files[path].symbols(path)
        return [symbols[i] for i in indexes]

    def _members(self, container: str, path: str | None) -> list[Symbol]:
        """Symbols directly inside the symbols that ``container`` names."""
        owners = [
            s
            for p, indexes in self._by_name.get(container.rpartition(".")[2]).items()
            if path is None or p == path
            for s in self._at(p, indexes)
            if s.qualname == container or s.qualname.endswith("." + container)
        ]
        members: list[Symbol] = []
        for owner in owners:
            members.extend(
                s
                for s in self._files[owner.path].symbols(owner.path)
                if s.container == owner.qualname
            )
        return members

    def _spelling_pool(self, name: str) -> set[str]:
        """Indexed names that share a first-two or last-three character fragment with ``name``."""
        pool: set[str] = set()
        for fragment in _fragments(name):
            pool |= self._fragment_table().get(fragment, set())
        return pool

    def search(self, query: str, limit: int = 50) -> list[Symbol]:
        """Symbols whose name (or qualified name, for dotted queries) matches ``query``.

        Ranked: exact name, same name ignoring case, prefix, substring, then
        close spellings; ties break on path and line.
        """
        path, qualname = parse_address(query)
        if path is None:
            self._wait_built()
        with self._lock:
            if path is not None:
                self.refresh([path])
            else:
                self._ensure_built()
            if not qualname:
                return self.outline(path)[:limit] if path else []
            needle = qualname.lower()
            dotted = "." in needle
            ranked: list[tuple[int, str, int, Symbol]] = []
            for name in self._by_name:
                lowered = name.lower()
                if not dotted:
                    if name == qualname:
                        rank = 0
                    elif lowered == needle:
                        rank = 1
                    elif lowered.startswith(needle):
                        rank = 2
                    elif needle in lowered:
                        rank = 3
                    else:
                        continue
                elif not lowered.startswith(needle.rpartition(".")[2]) and (
                    needle.rpartition(".")[2] not in lowered
                ):
                    continue
                else:
                    rank = -1
                for p, indexes in self._by_name.get(name).items():
                    if path is not None and p != path:
                        continue
                    for symbol in self._at(p, indexes):
                        r = rank
                        if dotted:
                            q = symbol.qualname.lower()
                            if q == needle or q.endswith("." + needle):
                                r = 0
                            elif needle in q:
                                r = 3
                            else:
                                continue
                        ranked.append((r, p, symbol.start_line, symbol))
            if len(ranked) < limit and not dotted:
                pool = self._spelling_pool(qualname)
                if path is not None:
                    known = self._files.get(path)
                    pool &= {row[0] for row in known.rows()} if known else set()
                for name in difflib.get_close_matches(
                    qualname, _near_length(pool, qualname), n=limit, cutoff=0.7
                ):
                    for p, indexes in self._by_name.get(name).items():
                        if path is None or p == path:
                            ranked.extend((4, p, s.start_line, s) for s in self._at(p, indexes))
            ranked.sort(key=lambda item: item[:3])
            seen: set[tuple[str, int, str]] = set()
            results: list[Symbol] = []
            for *_, symbol in ranked:
                key = (symbol.path, symbol.start_byte, symbol.qualname)
                if key in seen:
                    continue
                seen.add(key)
                results.append(symbol)
                if len(results) >= limit:
                    break
            return results


# Persisted indexes still open; ``_save_at_exit`` saves the ones that changed.
_PERSISTED: weakref.WeakSet[SymbolIndex] = weakref.WeakSet()


@atexit.register
def _save_at_exit() -> None:
    for index in list(_PERSISTED):
        index.close()


def _close(watch: TreeWatch | None) -> None:
    """Close a tree watch when its index is closed or collected (a module function, so
    the finalizer holds no reference to the index)."""
    if isinstance(watch, TreeWatch):
        watch.close()


def _files_holding(root: str, paths: list[str], needle: bytes) -> set[str] | None:
    """Which of ``paths`` (under ``root``) hold ``needle``, asked of ``grep``; None when it
    cannot tell (no grep, a file it could not read, a timeout): then this process reads them.

    One process reading every file beside this one, where a loop here makes thousands of
    system calls, and each gives up the interpreter's lock: while another thread runs
    Python (the warming's import of litellm, the index's own background parse) each takes
    that lock back only after the other's switch interval, and 1,000 small files took 0.7 s
    to over 6 s instead of 13 ms. Devices, FIFOs and sockets are skipped (a FIFO never ends).
    """
    if not paths:
        return set()
    grep = _grep(root)
    if grep is None:
        return None
    found: set[str] = set()
    for start in range(0, len(paths), _GREP_BATCH):
        batch = paths[start : start + _GREP_BATCH]
        try:
            done = subprocess.run(
                [grep, "-lF", "--null", "-D", "skip", "-d", "skip", "-e", needle, "--", *batch],
                cwd=root,
                capture_output=True,
                timeout=_GREP_TIMEOUT_S,
                env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")},
            )
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        if done.returncode not in (0, 1):  # a file it could not read: read them here
            return None
        names = {os.fsdecode(name) for name in done.stdout.split(b"\0") if name}
        if not names <= set(batch):  # an output it was not asked for: not to be trusted
            return None
        found |= names
    return found


def _grep(root: str) -> str | None:
    """The ``grep`` on PATH, looked for only in absolute folders outside the workspace: a
    relative entry ("", ".") or one inside it would run a ``grep`` the workspace holds."""
    inside = os.path.realpath(root) + os.sep
    folders = [
        folder
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        if os.path.isabs(folder) and not (os.path.realpath(folder) + os.sep).startswith(inside)
    ]
    # (Not resolved further: a link named grep to a multi-call binary needs that name.)
    return shutil.which("grep", path=os.pathsep.join(folders)) if folders else None


def _fragments(name: str) -> tuple[str, str]:
    lower = name.lower()
    return "<" + lower[:2], lower[-3:] + ">"


def _cpu_count() -> int:
    try:
        return max(1, min(len(os.sched_getaffinity(0)), 8))
    except AttributeError:  # not on Linux
        return max(1, min(os.cpu_count() or 1, 8))


# difflib compares at most this many names per lookup.
_DIFFLIB_POOL = 400
# Below this many distinct names, suggestions may scan them all.
_FULL_SCAN_NAMES = 50_000


def _closest(name: str, items: list[T], key: Callable[[T], str]) -> list[T]:
    """``items`` whose key is ``name`` ignoring case or close to it (difflib), best first."""
    lower = name.lower()
    exact = [item for item in items if key(item).lower() == lower]
    by_key: dict[str, list[T]] = {}
    for item in items:
        by_key.setdefault(key(item), []).append(item)
    close = difflib.get_close_matches(name, _near_length(by_key, name), n=5, cutoff=0.6)
    return exact + [item for k in close for item in by_key[k] if item not in exact]


def _near_length(pool: Iterable[str], name: str) -> list[str]:
    """Names difflib could accept, best character overlap first, at most ``_DIFFLIB_POOL``.

    difflib costs tens of microseconds per name; a length window and a
    character-set overlap (both cheap) keep large pools fast.
    """
    low, high = len(name) * 0.6, len(name) / 0.6 + 1
    near = [n for n in pool if low <= len(n) <= high]
    if len(near) <= _DIFFLIB_POOL:
        return near
    letters = set(name.lower())
    return heapq.nlargest(_DIFFLIB_POOL, near, key=lambda n: len(letters.intersection(n.lower())))
