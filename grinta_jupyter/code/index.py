"""The workspace's symbol index: which definitions exist, and what an address means.

:class:`SymbolIndex` keeps the symbols of every supported file (never syntax
trees) and a name -> symbols table, so resolving an address is a dictionary
lookup. ``refresh`` re-parses only files whose content changed: a file whose
``(mtime_ns, size)`` is unchanged is skipped; otherwise its SHA-256 decides.
A cold index of many files is parsed by worker processes (``python -m
grinta_jupyter.code.index``), not by ``multiprocessing``, so it works the same
from a script, a test run and a Jupyter kernel.

Addresses:

- ``path::Qualified.name`` restricts the lookup to one file;
- ``Qualified.name`` and ``name`` search the whole workspace;
- an exact qualified-name match wins, else dotted-suffix matches count
  (``append_entries`` finds ``RaftNode.append_entries``; ``Node.f`` finds
  ``pkg.Node.f``). ``::`` between names (C++, Rust) and Ruby's ``#`` read as ``.``.
"""

from __future__ import annotations

import difflib
import hashlib
import heapq
import marshal
import os
import stat as stat_module
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TypeVar

from grinta_jupyter.code.symbols import SYMBOL_LANGUAGES, Symbol, extract_symbols
from grinta_jupyter.runtime.errors import ToolFailure
from grinta_jupyter.runtime.files import read_regular
from grinta_jupyter.runtime.grammars import language_for

T = TypeVar("T")

# Directories never indexed by the default lister.
SKIP_DIRS = frozenset({".git", ".grinta", "node_modules", "__pycache__", "venv", ".venv"})
# Larger files (minified bundles, generated tables) are not indexed.
MAX_FILE_BYTES = 4_000_000
# Below this many bytes to parse, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 8_000_000


@dataclass
class Resolution:
    """What an address names: one match, several (ambiguous), or none with suggestions."""

    address: str
    matches: list[Symbol]
    suggestions: list[Symbol] = field(default_factory=list)

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
    stat: tuple[int, int]  # (mtime_ns, size)
    digest: bytes
    symbols: list[Symbol]


class SymbolIndex:
    """Symbols of every supported file under ``root``, kept current by ``refresh``."""

    def __init__(
        self,
        root: Path,
        list_files: Callable[[], Iterable[str]] | None = None,
        *,
        workers: int | None = None,
        parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    ) -> None:
        self.root = Path(root)
        self._root_str = str(self.root)
        self._list_files = list_files or (lambda: walk_files(self.root))
        self._workers = workers if workers is not None else _cpu_count()
        self._parallel_min_bytes = parallel_min_bytes
        self._files: dict[str, _File] = {}
        # name -> path -> symbols with that name in that file
        self._by_name: dict[str, dict[str, list[Symbol]]] = {}
        # spelling fragment (lower-case first two / last three characters) -> names,
        # so suggestions run difflib over hundreds of names, not the whole index
        self._by_fragment: dict[str, set[str]] = {}
        self._lock = threading.RLock()
        self._built = False

    # --- keeping current ------------------------------------------------------

    def refresh(self, paths: Iterable[str] | None = None) -> int:
        """Re-parse files whose content changed (all listed files, or just ``paths``).

        Files that disappeared (or, on a full refresh, are no longer listed) are
        dropped. Returns how many files were parsed.
        """
        with self._lock:
            if paths is None:
                wanted = {_normalize_path(p) for p in self._list_files() if _has_symbols(p)}
                for gone in set(self._files) - wanted:
                    self._drop(gone)
                self._built = True
            else:
                wanted = {_normalize_path(p) for p in paths}
            todo: list[tuple[str, tuple[int, int]]] = []
            for path in sorted(wanted):
                stat = self._stat(path)
                if stat is None:
                    self._drop(path)
                    continue
                known = self._files.get(path)
                if known is None or known.stat != stat:
                    todo.append((path, stat))
            return self._parse(todo)

    def _stat(self, path: str) -> tuple[int, int] | None:
        if not _has_symbols(path):
            return None
        try:
            st = os.stat(os.path.join(self._root_str, path))
        except OSError:
            return None
        if not stat_module.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _parse(self, todo: list[tuple[str, tuple[int, int]]]) -> int:
        jobs = [
            (path, self._files[path].digest if path in self._files else b"") for path, _ in todo
        ]
        stats = dict(todo)
        total = sum(stat[1] for _, stat in todo)
        if self._workers > 1 and len(jobs) > 1 and total >= self._parallel_min_bytes:
            results = _parse_parallel(str(self.root), jobs, self._workers)
        else:
            results = _parse_files(str(self.root), jobs)
        parsed = 0
        for path, digest, rows in results:
            if digest is None:  # unreadable or vanished meanwhile
                self._drop(path)
                continue
            if rows is None:  # touched, same content
                self._files[path].stat = stats[path]
                continue
            parsed += 1
            self._drop(path)
            symbols = [Symbol(row[0], row[1], row[2], path, *row[3:]) for row in rows]
            self._files[path] = _File(stats[path], digest, symbols)
            for symbol in symbols:
                by_path = self._by_name.get(symbol.name)
                if by_path is None:
                    by_path = self._by_name[symbol.name] = {}
                    for fragment in _fragments(symbol.name):
                        self._by_fragment.setdefault(fragment, set()).add(symbol.name)
                by_path.setdefault(path, []).append(symbol)
        return parsed

    def _drop(self, path: str) -> None:
        known = self._files.pop(path, None)
        if known is None:
            return
        for name in {symbol.name for symbol in known.symbols}:
            by_path = self._by_name.get(name)
            if by_path is not None:
                by_path.pop(path, None)
                if not by_path:
                    del self._by_name[name]
                    for fragment in _fragments(name):
                        names = self._by_fragment.get(fragment)
                        if names is not None:
                            names.discard(name)
                            if not names:
                                del self._by_fragment[fragment]

    def _ensure_built(self) -> None:
        if not self._built:
            self.refresh()

    # --- reading ----------------------------------------------------------------

    def symbols(self, path: str | None = None) -> list[Symbol]:
        """All symbols (path order), or those of one file (source order)."""
        with self._lock:
            if path is not None:
                return self.outline(path)
            self._ensure_built()
            return [s for p in sorted(self._files) for s in self._files[p].symbols]

    def outline(self, path: str) -> list[Symbol]:
        """The symbols of one file in source order (re-parsed first if it changed)."""
        path = _normalize_path(path)
        with self._lock:
            self.refresh([path])
            known = self._files.get(path)
            return list(known.symbols) if known else []

    def paths(self) -> list[str]:
        """Indexed files."""
        with self._lock:
            self._ensure_built()
            return sorted(self._files)

    def resolve(self, address: str) -> Resolution:
        """What ``address`` names; see the module docstring for the rules."""
        path, qualname = parse_address(address)
        with self._lock:
            if path is not None:
                self.refresh([path])
            else:
                self._ensure_built()
            if not qualname:
                return Resolution(address, [], [])
            name = qualname.rpartition(".")[2]
            by_path = self._by_name.get(name, {})
            if path is not None:
                candidates = list(by_path.get(path, ()))
            else:
                candidates = [s for p in sorted(by_path) for s in by_path[p]]
            exact = [s for s in candidates if s.qualname == qualname]
            if exact:
                return Resolution(address, exact, [])
            suffix = "." + qualname
            matches = [s for s in candidates if s.qualname.endswith(suffix)]
            if matches:
                return Resolution(address, matches, [])
            return Resolution(address, [], self._suggest(qualname, path, candidates))

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
            pool = {s.name for s in known.symbols} if known else set()
        else:
            pool = self._spelling_pool(name)
            if len(pool) < 5 and len(self._by_name) <= _FULL_SCAN_NAMES:
                pool = set(self._by_name)
        for candidate in _closest(name, list(pool), lambda n: n):
            for p, symbols in sorted(self._by_name.get(candidate, {}).items()):
                if path is None or p == path:
                    found.extend(s for s in symbols if s not in found)
        return found[:5]

    def _members(self, container: str, path: str | None) -> list[Symbol]:
        """Symbols directly inside the symbols that ``container`` names."""
        owners = [
            s
            for p, symbols in self._by_name.get(container.rpartition(".")[2], {}).items()
            if path is None or p == path
            for s in symbols
            if s.qualname == container or s.qualname.endswith("." + container)
        ]
        members: list[Symbol] = []
        for owner in owners:
            members.extend(
                s for s in self._files[owner.path].symbols if s.container == owner.qualname
            )
        return members

    def _spelling_pool(self, name: str) -> set[str]:
        """Indexed names that share a first-two or last-three character fragment with ``name``."""
        pool: set[str] = set()
        for fragment in _fragments(name):
            pool |= self._by_fragment.get(fragment, set())
        return pool

    def search(self, query: str, limit: int = 50) -> list[Symbol]:
        """Symbols whose name (or qualified name, for dotted queries) matches ``query``.

        Ranked: exact name, same name ignoring case, prefix, substring, then
        close spellings; ties break on path and line.
        """
        path, qualname = parse_address(query)
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
            for name, by_path in self._by_name.items():
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
                for p, symbols in by_path.items():
                    if path is not None and p != path:
                        continue
                    for symbol in symbols:
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
                    pool &= {s.name for s in known.symbols} if known else set()
                for name in difflib.get_close_matches(
                    qualname, _near_length(pool, qualname), n=limit, cutoff=0.7
                ):
                    for p, symbols in self._by_name[name].items():
                        if path is None or p == path:
                            ranked.extend((4, p, s.start_line, s) for s in symbols)
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


# --- parsing, in this process or in workers ------------------------------------

# (path, digest or None if unreadable, symbol rows or None if the content is unchanged)
_Row = tuple[str, str, str, str, int, int, int, int, int, str, str]  # Symbol fields but the path
_Result = tuple[str, "bytes | None", "list[_Row] | None"]


def _parse_files(root: str, jobs: list[tuple[str, bytes]]) -> list[_Result]:
    results: list[_Result] = []
    for path, known_digest in jobs:
        try:  # regular files only, never a FIFO or device swapped in since the listing
            source, _ = read_regular(os.path.join(root, path), path, MAX_FILE_BYTES)
        except ToolFailure:
            results.append((path, None, None))
            continue
        digest = hashlib.sha256(source).digest()
        if digest == known_digest:
            results.append((path, digest, None))
            continue
        rows = [
            (
                s.name,
                s.qualname,
                s.kind,
                s.language,
                s.start_line,
                s.end_line,
                s.start_byte,
                s.end_byte,
                s.def_line,
                s.signature,
                s.cell,
            )
            for s in extract_symbols(path, source)
        ]
        results.append((path, digest, rows))
    return results


def _parse_parallel(root: str, jobs: list[tuple[str, bytes]], workers: int) -> list[_Result]:
    """Split ``jobs`` by size over ``workers - 1`` subprocesses and this process."""
    sizes = {}
    for path, _ in jobs:
        try:
            sizes[path] = os.path.getsize(os.path.join(root, path))
        except OSError:
            sizes[path] = 0
    shares: list[list[tuple[str, bytes]]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for job in sorted(jobs, key=lambda j: -sizes[j[0]]):
        i = loads.index(min(loads))
        shares[i].append(job)
        loads[i] += sizes[job[0]] + 2_000  # per-file overhead
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    procs = []
    for i, share in enumerate(shares[1:], start=1):
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "grinta_jupyter.code.index"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        except OSError:  # no interpreter to start: this process takes the share
            shares[0].extend(share)
            shares[i] = []
            continue
        procs.append((proc, share))
    # Feed workers from threads so a full pipe never blocks this process's share.
    feeders = [
        threading.Thread(target=_feed, args=(proc, marshal.dumps((root, share))), daemon=True)
        for proc, share in procs
    ]
    for feeder in feeders:
        feeder.start()
    outputs: dict[int, bytes] = {}

    def collect(i: int, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        outputs[i] = proc.stdout.read()

    readers = [
        threading.Thread(target=collect, args=(i, proc), daemon=True)
        for i, (proc, _) in enumerate(procs)
    ]
    for reader in readers:
        reader.start()
    results = _parse_files(root, shares[0])
    for i, (proc, share) in enumerate(procs):
        readers[i].join()
        feeders[i].join()
        code = proc.wait()
        if code == 0:
            results.extend(marshal.loads(outputs[i]))
        else:  # a worker died: parse its share here rather than lose files
            results.extend(_parse_files(root, share))
    return results


def _feed(proc: subprocess.Popen[bytes], payload: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except OSError:
        pass


def _worker_main() -> None:
    root, jobs = marshal.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(marshal.dumps(_parse_files(root, jobs)))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _worker_main()
