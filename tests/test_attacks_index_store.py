"""Attacks on the persisted symbol index: hostile trees, hostile ``.grinta/`` folders.

Each test names the attack and the bug it found. Real files, real processes, a real
inotify watch and real mounts (where this process may mount).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code import tree_watch
from grinta_jupyter.code.index import SymbolIndex
from grinta_jupyter.runtime.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's cache folder (the store key lives there), fresh for each test."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "inside.py").write_text("def inside_fn():\n    pass\n")
    return root


def index(root: Path) -> SymbolIndex:
    return SymbolIndex(root, list_files=Workspace(root).files, persist=True)


def names(idx: SymbolIndex, address: str) -> list[str]:
    return [s.address for s in idx.resolve(address).matches]


def test_a_link_retargeted_outside_through_a_hop_is_not_indexed(ws: Path, tmp_path: Path) -> None:
    """Attack: ``a.py -> hop -> inside.py``, then ``hop`` (no symbol suffix, so no relisting)
    is retargeted at a file outside the workspace, as ``ln -sfn`` does.

    Bug: the index re-hashed ``a.py`` through the link and served the outside file's
    definitions as ``a.py::secret_outside`` (``search`` listed them) although the lister
    and every file tool refuse ``a.py`` as a link to outside the workspace (in a watched
    tree: without a watch, every full refresh asks the lister again). And once ``hop``
    led inside again, ``a.py`` stayed out of the index: nothing listed it again.
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def secret_outside(password='hunter2'):\n    pass\n")
    os.symlink("inside.py", ws / "hop")
    os.symlink("hop", ws / "a.py")
    rt = Runtime(ws)
    for _ in range(2):  # (the first call makes .grinta/: the watch then starts anew)
        assert "a.py:1: function inside_fn" in rt.call("search", {"query": "inside_fn"}).output
    assert rt.symbols.watching
    os.symlink(outside / "secret.py", ws / "hop.tmp")
    os.replace(ws / "hop.tmp", ws / "hop")
    assert "function secret_outside" not in rt.call("search", {"query": "secret_outside"}).output
    assert names(rt.symbols, "secret_outside") == []
    assert names(rt.symbols, "inside_fn") == ["inside.py::inside_fn"]
    # and once it points inside again, it is indexed again
    os.symlink("inside.py", ws / "hop.tmp")
    os.replace(ws / "hop.tmp", ws / "hop")
    rt.symbols.refresh()
    assert names(rt.symbols, "inside_fn") == ["a.py::inside_fn", "inside.py::inside_fn"]


@pytest.mark.parametrize("link", [".grinta", ".grinta/index"])
def test_a_linked_state_folder_never_takes_the_store_outside(
    ws: Path, tmp_path: Path, link: str
) -> None:
    """Attack: a cloned repository ships ``.grinta/index -> /elsewhere`` (or ``.grinta``
    itself as a link).

    Bug: saving followed the link and replaced ``/elsewhere/symbols.bin``, a file outside
    the workspace, with the store (and left its temp files there). Grinta's other state
    refuses a state folder that is a link (``runtime/private.py``).
    """
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "symbols.bin").write_text("precious\n")
    if link == ".grinta/index":
        (ws / ".grinta").mkdir()
    os.symlink(elsewhere, ws / link)
    idx = index(ws)
    assert names(idx, "inside_fn") == ["inside.py::inside_fn"]
    idx.close()
    assert idx.store_status.startswith("unwritable")
    assert os.listdir(elsewhere) == ["symbols.bin"]
    assert (elsewhere / "symbols.bin").read_text() == "precious\n"


CRASHING_WRITER = """
import os, sys, time
from pathlib import Path
from grinta_jupyter.code.index import SymbolIndex
from grinta_jupyter.runtime.workspace import Workspace

def hang(*args):  # the store's temp file is written: stop before it is moved in
    print("written", flush=True)
    time.sleep(600)

os.replace = hang
root = Path(sys.argv[1])
idx = SymbolIndex(root, list_files=Workspace(root).files, persist=True)
idx.refresh()
idx.close()
"""


def test_a_writer_killed_mid_save_leaves_no_litter_for_good(ws: Path) -> None:
    """Attack: a kernel killed (``kill -9``) while it saves the store.

    Bug: its temp file (as large as the store: about 30 MB for 10,000 files) stayed in
    ``.grinta/index/`` for good; every crash added one, and nothing ever removed them.
    A later save now removes temp files old enough that no live writer owns them.
    """
    env = dict(os.environ, PYTHONPATH=str(REPO))
    writer = subprocess.Popen(
        [sys.executable, "-c", CRASHING_WRITER, str(ws)], env=env, stdout=subprocess.PIPE
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == b"written\n"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    folder = ws / ".grinta" / "index"
    (litter,) = os.listdir(folder)
    idx = index(ws)
    idx.refresh()
    idx.close()
    assert idx.store_status == "saved"
    assert sorted(os.listdir(folder)) == ["symbols.bin", litter]  # maybe a live writer's
    long_ago = time.time() - 2 * 86_400  # two days: no live writer's
    os.utime(folder / litter, (long_ago, long_ago))
    (ws / "inside.py").write_text("def inside_fn():\n    return 2\n")
    idx = index(ws)
    idx.refresh()
    idx.close()
    assert idx.store_status == "saved"
    assert os.listdir(folder) == ["symbols.bin"]
    assert names(index(ws), "inside_fn") == ["inside.py::inside_fn"]


def test_a_key_that_is_no_file_never_hangs_the_session(ws: Path, own_cache: Path) -> None:
    """Attack: the user's store key (``~/.cache/grinta/index.key``) replaced by a FIFO.

    Bug: the first symbol call blocked for good reading it. (A link to ``/dev/zero``
    there was read until the kernel killed the process for memory: not run here, as
    on the code before the fix it takes the machine's memory with it.) A key that is no
    regular file now means "no key": nothing is stored or loaded, answers stay right.
    """
    key = own_cache / "grinta" / "index.key"
    key.parent.mkdir()
    os.mkfifo(key)
    idx = index(ws)
    found: list[list[str]] = []
    worker = threading.Thread(target=lambda: found.append(names(idx, "inside_fn")), daemon=True)
    worker.start()
    worker.join(120)  # generous: the call takes milliseconds
    hung = worker.is_alive()
    while worker.is_alive():  # let it go (a writer's close is the reader's end of file)
        os.close(os.open(key, os.O_RDWR))  # (Linux: opens at once, as a writer too)
        worker.join(0.1)
    assert not hung
    assert found == [["inside.py::inside_fn"]]
    idx.close()
    assert idx.store_status == "no key"
    assert not (ws / ".grinta").exists()


@pytest.fixture
def mounted(ws: Path) -> Iterator[Path]:
    """A tmpfs mounted inside the workspace (skipped where this process may not mount)."""
    target = ws / "remote"
    target.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "grinta-test", str(target)], check=False)
    if made.returncode != 0:
        pytest.skip("cannot mount here")
    yield target
    subprocess.run(["umount", "-l", str(target)], check=False)


def test_a_remote_mount_inside_the_tree_is_stated_not_watched(
    ws: Path, mounted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: a network file system (NFS, sshfs, a container's bind mount) mounted inside
    the workspace, its files edited from the other side (no inotify event here). A tmpfs
    plays the remote file system: it is not on the local list for this test.

    Bug: the watch checked only the root's file system, watched the mount too, and so a
    change there was never seen: its symbols were served stale for the whole session.
    """
    monkeypatch.setattr(tree_watch, "LOCAL_FILE_SYSTEMS", tree_watch.LOCAL_FILE_SYSTEMS - {"tmpfs"})
    assert tree_watch._file_system(str(ws)) in tree_watch.LOCAL_FILE_SYSTEMS
    (mounted / "far.py").write_text("def far_fn():\n    pass\n")
    assert tree_watch.TreeWatch.start(str(ws), frozenset()) is None
    idx = index(ws)
    assert names(idx, "far_fn") == ["remote/far.py::far_fn"]
    assert not idx.watching


def test_the_fingerprint_covers_the_code_that_makes_the_rows() -> None:
    """Which language a file name is (runtime/grammars.py) and how a file is parsed for the
    index decide the rows: a store made before an upgrade that changed them must not be
    read. Before stop 33 only symbols.py and queries.py were in the fingerprint; a producer
    renamed away would silently drop out of it."""
    from grinta_jupyter.code import index_store

    names = {p.relative_to(index_store._PACKAGE).as_posix() for p in index_store.PRODUCERS}
    assert {"runtime/grammars.py", "code/index_parse.py", "code/symbols.py"} <= names
    assert all(p.is_file() for p in index_store.PRODUCERS)
