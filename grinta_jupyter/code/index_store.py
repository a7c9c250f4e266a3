"""The symbol index persisted under ``<workspace>/.grinta/index/``, so a new session starts warm.

One file, ``symbols.bin``: a magic line, a fingerprint of what produced it (format,
Python and marshal versions, the source of the symbol extractor and its queries, the
grammar package's version), an HMAC of the payload, then the payload (marshal):
per file its stamp, content digest and symbol rows, and the index's name tables, so
loading needs no per-symbol Python work. Anything that does not check out (missing,
truncated, corrupt, another version, unreadable) loads as nothing: the caller builds
cold; the status says why, for diagnostics, never for the model.

The HMAC's key is this user's own (``index.key`` in the user's cache folder, made on
first use, readable by the user alone): ``marshal`` must never read bytes that were not
written here, and a ``.grinta/`` that came with a cloned repository or an archive was
not. Its store fails the check and the index builds cold. Without a key (no writable
cache folder) nothing is stored or loaded.

Writes go to a temp file beside the target and are moved in with ``os.replace``, so
concurrent sessions on one folder leave one whole file or the other, never a mix; a
folder that cannot be written is reported in the status and otherwise ignored.

Freshness of what was loaded is the index's job: it serves a cached file only when
the file's stamp (size, mtime_ns, ctime_ns, inode) is unchanged, and a file marked
*racy* (changed within ``RACY_NS`` of when it was stamped, so a same-size edit in
the same clock tick could leave the stamp unchanged) is hashed again first.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import hmac
import importlib.util
import marshal
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

STORE_DIR = os.path.join(".grinta", "index")
STORE_NAME = "symbols.bin"
FORMAT = 1
MAGIC = b"grinta-symbols\n"
# A file changed this close to its stamp may change again without its stamp moving.
RACY_NS = 3_000_000_000
# Larger stores are not read (a 10,000-file tree stores about 30 MB).
MAX_STORE_BYTES = 1_000_000_000

# (mtime_ns, size, ctime_ns, inode)
Stamp = tuple[int, int, int, int]


def key_path() -> Path:
    """Where this user's store key is kept (never inside a workspace)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "grinta" / "index.key"


def user_key() -> bytes | None:
    """This user's key for signing stores, made on first use; None if it cannot be."""
    path = key_path()
    try:
        key = path.read_bytes()
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
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) == 32 else None


def _sign(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()


def store_path(root: Path) -> Path:
    """Where the index of the workspace at ``root`` is kept."""
    return root / STORE_DIR / STORE_NAME


def fingerprint() -> bytes:
    """What produced a store: a store with another fingerprint is never read."""
    digest = hashlib.sha256(f"{FORMAT}|{sys.version_info[:2]}|{marshal.version}".encode())
    here = Path(__file__).parent
    for name in ("symbols.py", "queries.py"):
        with contextlib.suppress(OSError):
            digest.update((here / name).read_bytes())
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


def load(root: Path, expected: bytes) -> tuple[Any, str]:
    """The payload stored for ``root`` and "loaded", or None and why not."""
    key = user_key()
    if key is None:
        return None, "no key"
    path = store_path(root)
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_STORE_BYTES:
                return None, "too large"
            data = handle.read()
    except FileNotFoundError:
        return None, "absent"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    head = len(MAGIC)
    if data[:head] != MAGIC:
        return None, "not a symbol store"
    if data[head : head + 32] != expected:
        return None, "another version"
    payload = data[head + 64 :]
    if not hmac.compare_digest(_sign(key, payload), data[head + 32 : head + 64]):
        return None, "corrupt or not written here"
    collecting = gc.isenabled()
    gc.disable()  # the collector would walk the growing payload again and again
    try:
        return marshal.loads(payload), "loaded"
    except (ValueError, EOFError, TypeError):
        return None, "corrupt"
    finally:
        if collecting:
            gc.enable()


def save(root: Path, expected: bytes, payload: Any) -> str:
    """Write ``payload`` for ``root`` atomically; "saved", or why not."""
    key = user_key()
    if key is None:
        return "no key"
    folder = root / STORE_DIR
    try:
        data = marshal.dumps(payload)
    except ValueError:
        return "not storable"
    temp = ""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=folder, prefix=STORE_NAME + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC + expected + _sign(key, data) + data)
        os.replace(temp, folder / STORE_NAME)
    except OSError as exc:
        if temp:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        return f"unwritable ({exc.strerror})"
    return "saved"
