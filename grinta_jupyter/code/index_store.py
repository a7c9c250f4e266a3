"""The symbol index persisted under ``<workspace>/.grinta/index/``, so a new session starts warm.

One file, ``symbols.bin``::

    magic line | fingerprint (32) | HMACs (16 + 16) | head length (8) | head | rows

The *fingerprint* says what produced the store (format, Python and marshal versions,
the source of the symbol extractor and its queries, the grammar package's version).
The *head* (marshal) is small and cheap to read: the workspace it belongs to (its real
path), per file its path, stamp, content digest, racy flag and where its rows end, the
name table as postings (name -> file, position) and the SHA-256 of the *rows*, which
are every file's symbol rows (marshal), one file after the other. A second session
reads the head at once (about 5 MB of a 10,000-file store's 30), has a thread read and
check the rows meanwhile, and decodes a file's rows and a name's postings only when
first asked for (:class:`Snapshot`). Anything that does not check out (missing, truncated, corrupt, another
version, another workspace, unreadable) loads as nothing: the caller builds cold; the
status says why, for diagnostics, never for the model.

Two HMACs, each cut to 16 bytes: one over the fingerprint and the head's length, checked
before anything is read by that length (a planted store that claims a head of 900 MB is
refused at once, not read into memory first), and one over the fingerprint and the head,
and so over the rows through their digest. Both are keyed by this user's own key
(``index.key`` in the user's cache folder, made on first use, readable by the user
alone): ``marshal`` must never read bytes that were not written here, and a ``.grinta/``
that came with a cloned repository or an archive was not. Its store fails the check and
the index builds cold. A store is also bound to the folder it indexes: one copied or
moved along with its workspace is not used. Without a key (no writable cache folder)
nothing is stored or loaded.

Writes go to a temp file beside the target and are moved in with ``os.replace``, so
concurrent sessions on one folder leave one whole file or the other, never a mix (a
writer killed mid-save leaves its temp file: a later save removes it once it is
``STALE_TEMP_S`` old); a folder that cannot be written, or that is a link (a
repository may ship one), is reported in the status and otherwise ignored.

Freshness of what was loaded is the index's job: it serves a cached file only when
the file's stamp (size, mtime_ns, ctime_ns, inode) is unchanged, and a file marked
*racy* (changed within ``RACY_NS`` of when it was stamped, so a same-size edit in
the same clock tick could leave the stamp unchanged) is hashed again first.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.util
import marshal
import os
import stat
import struct
import sys
import tempfile
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from grinta_jupyter.runtime import collector, private

STORE_DIR = os.path.join(".grinta", "index")
STORE_NAME = "symbols.bin"
FORMAT = 3
MAGIC = b"grinta-symbols\n"
# A file changed this close to its stamp may change again without its stamp moving.
RACY_NS = 3_000_000_000
# Larger stores are not read (a 10,000-file tree stores about 30 MB).
MAX_STORE_BYTES = 1_000_000_000
# A temp file this old was left by a writer that died (a save takes about a second).
STALE_TEMP_S = 3600.0

# (mtime_ns, size, ctime_ns, inode)
Stamp = tuple[int, int, int, int]

_LENGTH = struct.Struct("<Q")
_DIGEST = 32
# Each of the two HMACs (of the head's length, of the head) keeps half a SHA-256.
_TAG = _DIGEST // 2
# Array type codes of the head: where rows end (64-bit), postings (32-bit). Stamps stay
# Python ints (an inode may not fit a signed 64-bit field, an mtime may be negative).
_WIDE, _NARROW = "q", "i"


@dataclass
class Snapshot:
    """What a store holds; ``paths``, ``stamps``, ``digests``, ``racy`` and ``rows`` run in
    parallel (one entry per file).

    ``rows[i]`` is the marshalled symbol rows of ``paths[i]``. After a load they are views
    into the store's bytes, which a thread reads and checks meanwhile: ``settle()`` waits
    for it (until then ``rows`` is empty). The name table is packed, ``names`` sorted:
    the symbols named ``names[k]`` are at ``posting_files[j]`` (an index into ``paths``)
    and ``posting_rows[j]`` (a position in that file's rows) for ``j`` in
    ``range(name_starts[k], name_starts[k + 1])``.
    """

    paths: list[str]
    stamps: list[Stamp]
    digests: list[bytes]
    racy: list[bool]
    rows: list[bytes | memoryview]
    names: list[str]
    name_starts: array[int]
    posting_files: array[int]
    posting_rows: array[int]
    _reading: _RowReader | None = field(default=None, repr=False, compare=False)

    def settle(self) -> bool:
        """Wait for the rows of a loaded store; False if they did not check out (then
        nothing of this snapshot may be used)."""
        reading, self._reading = self._reading, None
        if reading is None:
            return True
        blob = reading.result()
        if blob is None:
            return False
        view, begin = memoryview(blob), 0
        for end in reading.ends:
            self.rows.append(view[begin:end])
            begin = end
        return True


class _RowReader:
    """Reads the rows part of a store and checks it against the signed head's digest, in
    a thread: reading and hashing release the GIL, so this overlaps the stat walk."""

    def __init__(self, handle: BinaryIO, size: int, checksum: bytes, ends: list[int]) -> None:
        self.ends = ends
        self._handle, self._size, self._checksum = handle, size, checksum
        self._blob: bytes | None = None
        self._thread = threading.Thread(target=self._read, name="grinta-index-store", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            with self._handle:
                blob = self._handle.read(self._size + 1)
        except OSError:
            return
        if len(blob) == self._size and hashlib.sha256(blob).digest() == self._checksum:
            self._blob = blob

    def result(self) -> bytes | None:
        """The rows, once read, or None if they could not be read or did not check out."""
        self._thread.join()
        return self._blob


def key_path() -> Path:
    """Where this user's store key is kept (never inside a workspace)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "grinta" / "index.key"


def user_key() -> bytes | None:
    """This user's key for signing stores, made on first use; None if it cannot be."""
    path = key_path()
    try:
        key = _read_key(path)
        if len(key) == 32:
            return key
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix="index.key.")
        with os.fdopen(fd, "wb") as handle:  # mkstemp: readable by this user alone
            handle.write(os.urandom(32))
        try:  # a concurrent first use may have made one already: keep the first
            os.link(temp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(temp)
        key = _read_key(path)
    except OSError:
        return None
    return key if len(key) == 32 else None


def _read_key(path: Path) -> bytes:
    """The key file's first bytes; nothing from a FIFO (which would block) or a device
    such as ``/dev/zero`` (which never ends) put in its place."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        return os.read(fd, 33) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)


def _sign(key: bytes, *parts: bytes | memoryview) -> bytes:
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(part)
    return mac.digest()[:_TAG]


def _sign_length(key: bytes, expected: bytes, length: bytes) -> bytes:
    """The HMAC of the head's length: what says how much to read is checked first."""
    return _sign(key, b"head length|", expected, length)


def store_path(root: Path) -> Path:
    """Where the index of the workspace at ``root`` is kept."""
    return root / STORE_DIR / STORE_NAME


# The code whose every change may change the rows: what a symbol is, the queries, how a
# file is parsed for the index, and which language a file name is (runtime/grammars.py).
_PACKAGE = Path(__file__).parent.parent
PRODUCERS = tuple(
    _PACKAGE / name
    for name in ("code/symbols.py", "code/queries.py", "code/index_parse.py", "runtime/grammars.py")
)


def fingerprint() -> bytes:
    """What produced a store: a store with another fingerprint is never read."""
    digest = hashlib.sha256(f"{FORMAT}|{sys.version_info[:2]}|{marshal.version}".encode())
    digest.update(f"{sys.byteorder}|{array(_WIDE).itemsize}|{array(_NARROW).itemsize}".encode())
    for source in PRODUCERS:
        with contextlib.suppress(OSError):
            digest.update(source.read_bytes())
    # The grammars: where their package is installed and when (an upgrade rewrites it);
    # cheaper than importing it or reading distribution metadata.
    for package in ("tree_sitter_language_pack", "tree_sitter"):
        try:
            spec = importlib.util.find_spec(package)
            origin = spec.origin if spec is not None else None
            st = os.stat(origin) if origin else None
        except (ImportError, ValueError, OSError):
            st, origin = None, None
        digest.update(f"{package}|{origin}|{st and (st.st_mtime_ns, st.st_size)}".encode())
    return digest.digest()


def _owner(root: Path) -> str:
    """The folder a store belongs to: its real path (a store moved or copied elsewhere
    with its workspace is not used there)."""
    return os.path.realpath(root)


def load(root: Path, expected: bytes) -> tuple[Snapshot | None, str]:
    """The snapshot stored for ``root`` and "loaded", or None and why not.

    The snapshot's rows are still being read (see ``Snapshot.settle``).
    """
    key = user_key()
    if key is None:
        return None, "no key"
    try:  # without blocking: a FIFO put in the store's place must not hang the session
        fd = os.open(store_path(root), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, "absent"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    try:  # (a folder there fails here, and ``fdopen`` leaves its descriptor open)
        handle = os.fdopen(fd, "rb")  # (closed here on failure, else by the row reader)
    except OSError as exc:
        os.close(fd)
        return None, f"unreadable ({exc.strerror})"
    try:
        snapshot, status = _read_head(handle, root, key, expected)
    except OSError as exc:
        snapshot, status = None, f"unreadable ({exc.strerror})"
    if snapshot is None:
        handle.close()
    return snapshot, status


def _read_head(
    handle: BinaryIO, root: Path, key: bytes, expected: bytes
) -> tuple[Snapshot | None, str]:
    """Read and check everything but the rows, then start reading those."""
    status = os.fstat(handle.fileno())
    if not stat.S_ISREG(status.st_mode):
        return None, "not a file"
    total = status.st_size
    if total > MAX_STORE_BYTES:
        return None, "too large"
    start = len(MAGIC) + 2 * _DIGEST + _LENGTH.size
    preamble = handle.read(start)
    if preamble[: len(MAGIC)] != MAGIC:
        return None, "not a symbol store"
    if preamble[len(MAGIC) : len(MAGIC) + _DIGEST] != expected:
        return None, "another version"
    if len(preamble) != start:
        return None, "corrupt"
    length_mac = preamble[len(MAGIC) + _DIGEST : len(MAGIC) + _DIGEST + _TAG]
    head_mac = preamble[len(MAGIC) + _DIGEST + _TAG : len(MAGIC) + 2 * _DIGEST]
    length = preamble[-_LENGTH.size :]
    if not hmac.compare_digest(_sign_length(key, expected, length), length_mac):
        return None, "corrupt or not written here"
    (size,) = _LENGTH.unpack(length)
    if size > total - start:
        return None, "corrupt"
    head = handle.read(size)
    if len(head) != size or not hmac.compare_digest(_sign(key, expected, length, head), head_mac):
        return None, "corrupt or not written here"
    try:
        with collector.paused():  # tables of many small objects: nothing to free
            fields = marshal.loads(head)
            if not isinstance(fields, tuple) or len(fields) != 11:
                return None, "corrupt"
            if fields[0] != _owner(root):
                return None, "written for another folder"
            snapshot, ends, checksum = _decode(fields)
    except (ValueError, EOFError, TypeError, IndexError):
        return None, "corrupt"
    rows = total - start - size
    if (ends[-1] if ends else 0) != rows:
        return None, "corrupt"
    snapshot._reading = _RowReader(handle, rows, checksum, ends)
    return snapshot, "loaded"


def _decode(fields: tuple[Any, ...]) -> tuple[Snapshot, list[int], bytes]:
    """The snapshot (its rows still to read), where each file's rows end, their digest."""
    _, paths, stamps, digests, racy, ends, names, starts, files, positions, checksum = fields
    count = len(paths)
    row_ends = _array(_WIDE, ends).tolist()
    name_starts = _array(_NARROW, starts)
    if (
        not isinstance(stamps, list)
        or len(stamps) != count
        or len(digests) != _DIGEST * count
        or len(racy) != count
        or len(row_ends) != count
        or len(name_starts) != len(names) + 1
        or not isinstance(checksum, bytes)
    ):
        raise ValueError("inconsistent")
    snapshot = Snapshot(
        paths=paths,
        stamps=stamps,
        digests=[digests[i : i + _DIGEST] for i in range(0, len(digests), _DIGEST)],
        racy=[bool(flag) for flag in racy],
        rows=[],
        names=names,
        name_starts=name_starts,
        posting_files=_array(_NARROW, files),
        posting_rows=_array(_NARROW, positions),
    )
    return snapshot, row_ends, checksum


def _array(code: str, data: object) -> array[int]:
    values = array(code)
    if not isinstance(data, bytes):
        raise TypeError("not bytes")
    values.frombytes(data)
    return values


def save(root: Path, expected: bytes, snapshot: Snapshot) -> str:
    """Write ``snapshot`` for ``root`` atomically; "saved", or why not."""
    key = user_key()
    if key is None:
        return "no key"
    folder = root / STORE_DIR
    ends, total = array(_WIDE), 0
    for blob in snapshot.rows:
        total += len(blob)
        ends.append(total)
    rows = b"".join(snapshot.rows)
    head = (
        _owner(root),
        snapshot.paths,
        snapshot.stamps,
        b"".join(snapshot.digests),
        bytes(snapshot.racy),
        ends.tobytes(),
        snapshot.names,
        snapshot.name_starts.tobytes(),
        snapshot.posting_files.tobytes(),
        snapshot.posting_rows.tobytes(),
        hashlib.sha256(rows).digest(),
    )
    try:
        encoded = marshal.dumps(head)
    except ValueError:
        return "not storable"
    framed = _LENGTH.pack(len(encoded)) + encoded
    temp = ""
    try:  # real folders only: a repository may ship ``.grinta/index -> /elsewhere``
        private.make_dir(folder.parent)
        private.make_dir(folder)
        fd, temp = tempfile.mkstemp(dir=folder, prefix=STORE_NAME + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            length = framed[: _LENGTH.size]
            handle.write(MAGIC + expected + _sign_length(key, expected, length))
            handle.write(_sign(key, expected, framed))
            handle.write(framed)
            handle.write(rows)
        os.replace(temp, folder / STORE_NAME)
    except OSError as exc:
        if temp:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        return f"unwritable ({exc.strerror})"
    _sweep(folder)
    return "saved"


def _sweep(folder: Path) -> None:
    """Remove the temp files of writers that died mid-save (``kill -9``), each as large
    as a store; a live writer's is younger than ``STALE_TEMP_S``."""
    before = time.time() - STALE_TEMP_S
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith(STORE_NAME + ".") or not entry.name.endswith(".tmp"):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < before:
                    os.unlink(entry.path)
