"""Attacks on how much of a persisted symbol store is read before it is trusted.

A ``.grinta/index/symbols.bin`` can come with a cloned repository or be made by anyone
who can write the workspace. Nothing in it may cost a session start more than a real
store does before its signature says it was written here: these tests plant stores
that claim huge heads or rows (sparse files, so they take no disk), a folder in the
store's place, and replace a store while its rows are being read. Real files, the real
key under a fresh cache folder, the bytes this process read counted by the kernel.
"""

from __future__ import annotations

import marshal
import os
from array import array
from pathlib import Path

import pytest

from grinta_jupyter.code import index_store

# More than any real head (a 10,000-file store's is about 5 MB), sparse on disk.
PLANTED_BYTES = 400_000_000
# What loading a small store reads, and then some: far below ``PLANTED_BYTES``.
READ_BUDGET = 4_000_000


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's cache folder (the store key lives there), fresh for each test."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def snapshot_of(tag: str, count: int = 50) -> index_store.Snapshot:
    return index_store.Snapshot(
        paths=[f"{tag}{j}.py" for j in range(count)],
        stamps=[(j, j, 0, 0) for j in range(count)],
        digests=[bytes(32)] * count,
        racy=[False] * count,
        rows=[marshal.dumps([(tag, "function", j)]) for j in range(count)],
        names=[tag],
        name_starts=array("i", [0, count]),
        posting_files=array("i", range(count)),
        posting_rows=array("i", [0] * count),
    )


def bytes_read() -> int:
    """Bytes this process has read through system calls so far (Linux)."""
    with open("/proc/self/io") as stats:
        for line in stats:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def load_counting(root: Path) -> tuple[index_store.Snapshot | None, str, int]:
    """Load (and settle) the store of ``root``; what it said and how many bytes it read."""
    before = bytes_read()
    snapshot, status = index_store.load(root, index_store.fingerprint())
    if snapshot is not None:
        snapshot.settle()
    return snapshot, status, bytes_read() - before


PREAMBLE = len(index_store.MAGIC) + 64  # magic line, fingerprint, signature


@pytest.mark.parametrize("how", ["planted", "stretched"])
def test_a_store_claiming_a_huge_head_is_refused_before_it_is_read(root: Path, how: str) -> None:
    """Attack: a store with this version's magic line and fingerprint (neither is secret)
    whose head length says "the rest of the file", 400 MB of a sparse file; "stretched"
    keeps a real store's signature and only raises its length.

    Bug: the whole claimed head was read into memory and hashed before its HMAC was
    checked: 400 MB (up to 1 GB) of memory and seconds of every session start, for a
    store refused in the end.
    """
    store = index_store.store_path(root)
    if how == "planted":
        store.parent.mkdir(parents=True)
        preamble = index_store.MAGIC + index_store.fingerprint() + os.urandom(32)
    else:
        assert index_store.save(root, index_store.fingerprint(), snapshot_of("real")) == "saved"
        preamble = store.read_bytes()[:PREAMBLE]
    with open(store, "wb") as handle:
        handle.write(preamble + (PLANTED_BYTES - PREAMBLE - 8).to_bytes(8, "little"))
        handle.truncate(PLANTED_BYTES)
    snapshot, status, read = load_counting(root)
    assert (snapshot, status) == (None, "corrupt or not written here")
    assert read < READ_BUDGET, f"read {read} bytes of a store that was never going to be used"


def test_a_folder_in_the_stores_place_leaks_no_descriptor(root: Path) -> None:
    """Attack: a repository ships ``.grinta/index/symbols.bin/`` as a folder.

    Bug: opening it succeeded, wrapping it in a file object failed, and that failure left
    the descriptor open: one descriptor lost on every session start in the kernel.
    """
    index_store.store_path(root).mkdir(parents=True)
    open_before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        snapshot, status = index_store.load(root, index_store.fingerprint())
        assert snapshot is None and status.startswith("unreadable")
    assert len(os.listdir("/proc/self/fd")) == open_before


def test_rows_that_lie_about_their_length_are_refused_before_they_are_read(root: Path) -> None:
    """Guard: a real store with 400 MB (sparse) appended to its rows. The signed head says
    where the rows end, so the store is refused at once, without reading them."""
    assert index_store.save(root, index_store.fingerprint(), snapshot_of("real")) == "saved"
    store = index_store.store_path(root)
    with open(store, "r+b") as handle:
        handle.truncate(PLANTED_BYTES)
    snapshot, status, read = load_counting(root)
    assert (snapshot, status) == (None, "corrupt")
    assert read < READ_BUDGET


def test_a_store_replaced_while_its_rows_are_read_serves_one_whole_store(root: Path) -> None:
    """Guard: another session saves (``os.replace``) between this one's head and rows. The
    rows still come from the store the head was read from, never a mix of the two."""
    fingerprint = index_store.fingerprint()
    assert index_store.save(root, fingerprint, snapshot_of("old", 2000)) == "saved"
    snapshot, status = index_store.load(root, fingerprint)
    assert snapshot is not None and status == "loaded"
    assert index_store.save(root, fingerprint, snapshot_of("new", 3000)) == "saved"
    assert snapshot.settle()
    assert snapshot.names == ["old"] and len(snapshot.rows) == 2000
    assert all(marshal.loads(rows)[0][0] == "old" for rows in snapshot.rows)
    again, status = index_store.load(root, fingerprint)
    assert again is not None and again.settle() and again.names == ["new"]


def test_a_real_store_still_loads_whole(root: Path) -> None:
    """Guard: the signatures written are the signatures checked; nothing is lost."""
    saved = snapshot_of("real", 500)
    assert index_store.save(root, index_store.fingerprint(), saved) == "saved"
    snapshot, status, read = load_counting(root)
    assert status == "loaded" and snapshot is not None
    assert snapshot.rows == saved.rows and snapshot.paths == saved.paths
    assert snapshot.stamps == saved.stamps and snapshot.name_starts == saved.name_starts
