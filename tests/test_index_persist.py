"""The persisted, watched symbol index: never stale, never broken by its own store.

Each test uses a real temp workspace, real files and real processes; the store is
the one under ``.grinta/index/`` that ``SymbolIndex(..., persist=True)`` keeps.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code import index_store, tree_watch
from grinta_jupyter.code.index import SymbolIndex, walk_files
from grinta_jupyter.runtime.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "store.py").write_text(
        "class Store:\n    def get(self, key):\n        return key\n"
    )
    (tmp_path / "pkg" / "cache.py").write_text("class Cache:\n    def get(self):\n        pass\n")
    (tmp_path / "main.py").write_text("def alpha():\n    return 1\n")
    return tmp_path


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's cache folder (the store key lives there), fresh for each test."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def index(root: Path) -> SymbolIndex:
    return SymbolIndex(root, list_files=Workspace(root).files, persist=True)


def names(idx: SymbolIndex, address: str) -> list[str]:
    return [s.address for s in idx.resolve(address).matches]


def saved(root: Path) -> SymbolIndex:
    """A session that built and saved the index, then ended."""
    first = index(root)
    assert first.refresh() == 3
    first.close()
    assert first.store_status == "saved"
    return first


def test_second_session_loads_the_store_and_parses_nothing(tree: Path) -> None:
    saved(tree)
    second = index(tree)
    assert second.refresh() == 0
    assert second.store_status == "loaded"
    assert names(second, "get") == ["pkg/cache.py::Cache.get", "pkg/store.py::Store.get"]
    assert second.resolve("Stor").suggestions[0].qualname == "Store"  # fragments rebuilt
    assert [s.qualname for s in second.symbols("main.py")] == ["alpha"]


def test_outside_edits_between_sessions_are_seen(tree: Path) -> None:
    saved(tree)
    target = tree / "main.py"
    before = target.stat()
    target.write_text("def omega():\n    return 1\n")  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    (tree / "pkg" / "cache.py").unlink()
    (tree / "pkg" / "new.py").write_text("def alpha():\n    pass\n")
    second = index(tree)
    second.refresh()
    assert names(second, "omega") == ["main.py::omega"]
    assert names(second, "alpha") == ["pkg/new.py::alpha"]
    assert names(second, "get") == ["pkg/store.py::Store.get"]


def test_recent_files_are_hashed_again_even_with_an_unchanged_stamp(tree: Path) -> None:
    """A file changed within RACY_NS of its stamp is marked racy in the store, so a
    same-size edit in the same clock tick (identical stamp) cannot be served stale."""
    saved(tree)
    snapshot, status = index_store.load(tree, index_store.fingerprint())
    assert snapshot is not None and status == "loaded"
    assert snapshot.racy[snapshot.paths.index("main.py")] is True  # just written: racy
    assert snapshot.settle()


@pytest.fixture(params=["watched", "stat'ed"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of seeing changes: the inotify watch, and stat'ing every file (as on a
    file system inotify cannot be trusted on, made so here by trusting none)."""
    if request.param == "stat'ed":
        monkeypatch.setattr(tree_watch, "LOCAL_FILE_SYSTEMS", frozenset())
    return str(request.param)


def test_same_size_edits_between_calls_are_seen(tree: Path, mode: str) -> None:
    idx = index(tree)
    idx.refresh()
    assert idx.watching == (mode == "watched")
    target = tree / "main.py"
    for name in ("omega", "gamma", "delta"):
        before = target.stat()
        target.write_text(f"def {name}():\n    return 1\n")
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        idx.refresh()
        assert names(idx, name) == ["main.py::" + name]


def test_outside_changes_between_calls_are_seen(tree: Path, mode: str) -> None:
    idx = index(tree)
    idx.refresh()
    (tree / "sub" / "deeper").mkdir(parents=True)
    (tree / "sub" / "deeper" / "one.py").write_text("def one():\n    pass\n")
    idx.refresh()
    assert names(idx, "one") == ["sub/deeper/one.py::one"]
    (tree / "sub" / "deeper" / "two.py").write_text("def two():\n    pass\n")  # a watched folder
    idx.refresh()
    assert names(idx, "two") == ["sub/deeper/two.py::two"]
    os.replace(tree / "sub" / "deeper" / "two.py", tree / "main.py")  # an atomic save
    idx.refresh()
    assert names(idx, "two") == ["main.py::two"]
    assert names(idx, "alpha") == []
    (tree / ".gitignore").write_text("pkg/\n")
    idx.refresh()
    assert names(idx, "get") == []
    (tree / ".gitignore").write_text("")
    idx.refresh()
    assert len(names(idx, "get")) == 2


@pytest.mark.parametrize(
    "damage",
    ["truncated", "flipped", "foreign", "garbage", "empty", "folder"],
)
def test_a_damaged_store_means_a_cold_build(tree: Path, damage: str) -> None:
    saved(tree)
    store = index_store.store_path(tree)
    data = store.read_bytes()
    if damage == "truncated":
        store.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        store.write_bytes(data[:-5] + bytes([data[-5] ^ 0xFF]) + data[-4:])
    elif damage == "foreign":
        head = len(index_store.MAGIC)
        store.write_bytes(data[:head] + bytes(32) + data[head + 32 :])
    elif damage == "garbage":
        store.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        store.write_bytes(b"")
    else:
        store.unlink()
        store.mkdir()
    second = index(tree)
    assert second.refresh() == 3
    assert second.store_status != "loaded"
    assert names(second, "alpha") == ["main.py::alpha"]


def test_an_unwritable_store_is_reported_not_raised(tree: Path) -> None:
    (tree / ".grinta").write_text("a file where the state folder should be")
    idx = index(tree)
    assert idx.refresh() == 3
    assert idx.store_status.startswith("unwritable")
    assert names(idx, "alpha") == ["main.py::alpha"]


WRITER = """
import marshal, sys
from array import array
from pathlib import Path
from grinta_jupyter.code import index_store
root, tag = Path(sys.argv[1]), sys.argv[2]
fingerprint = index_store.fingerprint()
paths = [f"{tag}{j}.py" for j in range(2000)]
for i in range(40):
    snapshot = index_store.Snapshot(
        paths=paths,
        stamps=[(i, j, 0, 0) for j in range(2000)],
        digests=[bytes(32)] * 2000,
        racy=[False] * 2000,
        rows=[marshal.dumps([(tag, tag, "function", "python", j, j, 0, 1, j, "", "")])
              for j in range(2000)],
        names=[tag],
        name_starts=array("i", [0, 2000]),
        posting_files=array("i", range(2000)),
        posting_rows=array("i", [0] * 2000),
    )
    assert index_store.save(root, fingerprint, snapshot) == "saved"
"""


def test_concurrent_writers_never_leave_a_mixed_store(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), tag], env=env)
        for tag in ("a", "b")
    ]
    fingerprint = index_store.fingerprint()
    seen = set()
    while any(w.poll() is None for w in writers):
        snapshot, status = index_store.load(tmp_path, fingerprint)
        assert status in ("loaded", "absent")
        if snapshot is not None:
            assert snapshot.settle()
            (tag,) = snapshot.names
            assert len(snapshot.paths) == 2000 and all(p.startswith(tag) for p in snapshot.paths)
            assert all(marshal.loads(rows)[0][0] == tag for rows in snapshot.rows)
            seen.add(tag)
    assert [w.wait() for w in writers] == [0, 0]
    assert os.listdir(tmp_path / ".grinta" / "index") == ["symbols.bin"]  # no temp files left


def test_the_store_is_never_offered_as_a_workspace_file(tree: Path) -> None:
    saved(tree)
    assert index_store.store_path(tree).is_file()
    assert not any(".grinta" in p for p in Workspace(tree).files())
    assert not any(".grinta" in p for p in walk_files(tree))
    rt = Runtime(tree)
    out = rt.call("search", {"query": "alpha"}).output
    assert "main.py" in out and ".grinta" not in out


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """Enough files that a cold start's background build is still running at first."""
    for i in range(300):
        folder = tmp_path / f"m{i % 7}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.py").write_text(
            f"class Thing{i}:\n    def run(self):\n        return {i}\n\n\n"
            f"def helper_{i}():\n    return Thing{i}()\n" + "# filler\n" * 200
        )
    (tmp_path / "m0" / "special.py").write_text("def special_one():\n    pass\n")
    return tmp_path


def full_answers(root: Path, addresses: list[str]) -> list[tuple[list[str], list[str]]]:
    whole = SymbolIndex(root, list_files=Workspace(root).files)
    whole.refresh()
    return [answer(whole, a) for a in addresses]


def answer(idx: SymbolIndex, address: str) -> tuple[list[str], list[str]]:
    resolution = idx.resolve(address)
    return [s.address for s in resolution.matches], [s.address for s in resolution.suggestions]


ADDRESSES = ["special_one", "Thing7.run", "helper_250", "Thing299", "run", "helpr_25", "nothing"]


def test_a_cold_start_answers_as_the_whole_index_would(many: Path) -> None:
    expected = full_answers(many, ADDRESSES)
    cold = index(many)
    assert [answer(cold, a) for a in ADDRESSES] == expected
    assert cold.refresh() == 0  # waits for the background build, which parsed the rest
    assert len(cold.paths()) == 301
    assert cold.store_status == "saved"
    assert [answer(index(many), a) for a in ADDRESSES] == expected  # and the store agrees


def test_an_edit_during_a_cold_build_is_seen(many: Path) -> None:
    cold = index(many)
    assert answer(cold, "special_one")[0] == ["m0/special.py::special_one"]
    (many / "m0" / "special.py").write_text("def special_two():\n    pass\n")
    assert answer(cold, "special_two")[0] == ["m0/special.py::special_two"]
    assert answer(cold, "special_one")[0] == []
    (many / "m3" / "late.py").write_text("def special_one():\n    pass\n")
    assert answer(cold, "special_one")[0] == ["m3/late.py::special_one"]


def test_a_store_written_by_someone_else_is_never_read(
    tree: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .grinta/ that came with a clone or an archive: marshal never sees its bytes."""
    saved(tree)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("another-user")))
    snapshot, status = index_store.load(tree, index_store.fingerprint())
    assert (snapshot, status) == (None, "corrupt or not written here")
    second = index(tree)
    assert second.refresh() == 3, "built cold"
    assert names(second, "alpha") == ["main.py::alpha"]


def test_the_key_is_the_users_own(own_cache: Path, tree: Path) -> None:
    saved(tree)
    key = own_cache / "grinta" / "index.key"
    assert len(key.read_bytes()) == 32
    assert key.stat().st_mode & 0o077 == 0, "readable by this user alone"
    assert not list(tree.rglob("index.key")), "never inside the workspace"


def test_without_a_key_nothing_is_stored_and_everything_works(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    idx = index(tree)
    assert idx.refresh() == 3
    idx.close()
    assert idx.store_status == "no key"
    assert not index_store.store_path(tree).exists()
    assert names(idx, "alpha") == ["main.py::alpha"]
