"""Parsing files for the symbol index, in this process or in worker processes.

A cold index of many files is parsed by workers started as ``python -m
grinta_jupyter.code.index_parse`` (not ``multiprocessing``), so it works the same
from a script, a test run and a Jupyter kernel. Each job is (path, known digest):
a file whose SHA-256 equals the known digest is reported unchanged, not parsed.
A file this process just committed from a symbol edit is not parsed either: its
symbols are located on the edit's kept tree (``code.edits.result_symbols``).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import subprocess
import sys
import threading

from grinta_jupyter.code import giveway
from grinta_jupyter.code.symbols import Symbol, extract_symbols
from grinta_jupyter.runtime.errors import ToolFailure
from grinta_jupyter.runtime.files import read_regular
from grinta_jupyter.runtime.grammars import language_for
from grinta_jupyter.runtime.notebook import is_notebook

# Larger files (minified bundles, generated tables) are not indexed.
MAX_FILE_BYTES = 4_000_000

# (path, digest or None if unreadable, symbol rows or None if the content is unchanged)
Row = tuple[str, str, str, str, int, int, int, int, int, str, str]  # Symbol fields but the path
Result = tuple[str, "bytes | None", "list[Row] | None"]


def parse_files(root: str, jobs: list[tuple[str, bytes]]) -> list[Result]:
    results: list[Result] = []
    real = os.path.realpath(root)  # a file opened outside it (a folder swapped) is not parsed
    for path, known_digest in jobs:
        giveway.pause()
        try:  # regular files only, never a FIFO or device swapped in since the listing
            source, _ = read_regular(os.path.join(root, path), path, MAX_FILE_BYTES, within=real)
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
            for s in _symbols(path, source)
        ]
        results.append((path, digest, rows))
    return results


def _symbols(path: str, source: bytes) -> list[Symbol]:
    """The definitions in ``source``: from the last symbol edit's tree when ``source`` is its
    result (about 1 ms instead of a parse of the whole file), else by parsing it."""
    edits = sys.modules.get("grinta_jupyter.code.edits")  # loaded only where an edit ran
    language = language_for(path)
    if edits is not None and language and not is_notebook(path):
        found: list[Symbol] | None = edits.result_symbols(path, language, source)
        if found is not None:
            return found
    return extract_symbols(path, source)


def parse_parallel(root: str, jobs: list[tuple[str, bytes]], workers: int) -> list[Result]:
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
                [sys.executable, "-m", "grinta_jupyter.code.index_parse"],
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
    results = parse_files(root, shares[0])
    for i, (proc, share) in enumerate(procs):
        readers[i].join()
        feeders[i].join()
        code = proc.wait()
        if code == 0:
            results.extend(marshal.loads(outputs[i]))
        else:  # a worker died: parse its share here rather than lose files
            results.extend(parse_files(root, share))
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
    sys.stdout.buffer.write(marshal.dumps(parse_files(root, jobs)))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _worker_main()
