"""The persisted symbol index across sessions: every change is seen, whenever it happens.

A second session starts from the store under ``.grinta/index/``: it reads the store's
head, starts the tree watch, lists and stats the tree while the store's rows are read
and checked, and only then serves anything. These tests change, add, remove and replace
files between sessions and at each of those moments, and check the answers against an
index built from scratch (real files, real parses, a real inotify watch). A store that
was not written here for this folder (copied with its workspace, tampered with) is
never used.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grinta_jupyter.code import index, index_store
from grinta_jupyter.code.index import SymbolIndex
from grinta_jupyter.runtime.workspace import Workspace


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's cache folder (the store key lives there), fresh for each test."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture(autouse=True)
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """No file counts as racy (changed too recently to trust its stamp), as on a tree
    edited minutes ago: then only a stamp change, never a re-hash, reveals an edit."""
    monkeypatch.setattr(index, "RACY_NS", 0)


# The last line of each module: edits shorten or lengthen it to keep the size.
PAD = "#" * 40 + "\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace of a few dozen files, so the store has many names and paths to keep."""
    root = tmp_path / "ws"
    for i in range(40):
        folder = root / f"pkg{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i:02}.py").write_text(
            f"class Thing{i}:\n    def run(self):\n        return {i}\n\n\n"
            f"def helper_{i:02}():\n    return Thing{i}()\n\n\ndef shared():\n    return {i:02}\n"
            + PAD
        )
    (root / "main.py").write_text("def alpha():\n    return 1\n")
    return root


def same_size(text: str, size: int) -> str:
    """``text`` with its last line of ``#`` cut or grown to make it ``size`` bytes."""
    body = text.rstrip("#\n")
    return body + "\n" + "#" * (size - len(body.encode()) - 2) + "\n"


def session(root: Path, lister: Callable[[], Iterator[str]] | None = None) -> SymbolIndex:
    return SymbolIndex(root, list_files=lister or Workspace(root).files, persist=True)


def saved(root: Path) -> None:
    """A session that built and saved the index, then ended."""
    first = session(root)
    first.refresh()
    first.close()
    assert first.store_status == "saved"


def same_stamp_edit(path: Path, text: str) -> None:
    """Rewrite ``path`` with text of the same size and put its mtime back."""
    before = path.stat()
    path.write_text(same_size(text, before.st_size))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def same_stamp_replace(path: Path, text: str) -> None:
    """Replace ``path`` by a new file (another inode) of the same size and mtime."""
    before = path.stat()
    temp = path.with_suffix(".tmp")
    temp.write_text(same_size(text, before.st_size))
    os.utime(temp, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(temp, path)


def module(root: Path, i: int) -> Path:
    return root / f"pkg{i % 4}" / f"mod{i:02}.py"


def edit_everything(root: Path, tag: str, first: int = 0) -> None:
    """A change of each kind: a same-size same-mtime edit of module ``first`` (renaming
    ``helper_NN`` to ``<tag>_ed``), a same-size same-mtime replacement of the next one
    (``<tag>_rp``), the removal of the one after, a new file and a new folder."""
    edited, replaced = module(root, first), module(root, first + 1)
    same_stamp_edit(edited, edited.read_text().replace(f"helper_{first:02}", f"{tag}_ed"))
    same_stamp_replace(
        replaced, replaced.read_text().replace(f"helper_{first + 1:02}", f"{tag}_rp")
    )
    module(root, first + 2).unlink()
    (root / "pkg3" / f"{tag}_new.py").write_text(f"def {tag}_added():\n    pass\n")
    (root / f"fresh_{tag}").mkdir()
    (root / f"fresh_{tag}" / "deep.py").write_text(f"class {tag.title()}Deep:\n    pass\n")


EXPECTED_AFTER_EDITS = {
    "helper_00": [],
    "helper_01": [],
    "helper_02": [],
    "Thing2": [],
    "Thing3": ["pkg3/mod03.py::Thing3"],
}


def assert_agrees_with_a_fresh_build(root: Path, idx: SymbolIndex) -> None:
    """Every name, every file and a few misspellings answer as a fresh full build does."""
    fresh = SymbolIndex(root, list_files=Workspace(root).files)
    fresh.refresh()
    assert idx.paths() == fresh.paths()
    assert [s.address for s in idx.symbols()] == [s.address for s in fresh.symbols()]
    names = {s.name for s in fresh.symbols()} | {s.qualname for s in fresh.symbols()}
    # The name table itself (partly still packed as loaded): same names, same count.
    assert sorted(idx._by_name) == sorted(fresh._by_name)
    assert len(idx._by_name) == len(fresh._by_name)
    for address in sorted(names) + ["helpr_1", "Thng", "nothing_here", "main.py::alpha"]:
        got, want = idx.resolve(address), fresh.resolve(address)
        assert [s.address for s in got.matches] == [s.address for s in want.matches], address
        assert bool(got.suggestions) == bool(want.suggestions), address
    assert [s.address for s in idx.search("helper")] == [s.address for s in fresh.search("helper")]


def addresses(idx: SymbolIndex, address: str) -> list[str]:
    return [s.address for s in idx.resolve(address).matches]


# --- between sessions -----------------------------------------------------------------


@pytest.mark.parametrize("first_call", ["refresh", "resolve"])
def test_changes_between_sessions_are_seen(tree: Path, first_call: str) -> None:
    saved(tree)
    edit_everything(tree, "between")
    second = session(tree)
    if first_call == "refresh":
        second.refresh()
    assert addresses(second, "between_ed") == ["pkg0/mod00.py::between_ed"]
    assert addresses(second, "between_rp") == ["pkg1/mod01.py::between_rp"]
    assert addresses(second, "between_added") == ["pkg3/between_new.py::between_added"]
    assert addresses(second, "BetweenDeep") == ["fresh_between/deep.py::BetweenDeep"]
    for address, expected in EXPECTED_AFTER_EDITS.items():
        assert addresses(second, address) == expected, address
    assert second.store_status == "loaded"
    assert_agrees_with_a_fresh_build(tree, second)


def test_a_store_saved_after_changes_carries_every_name_on(tree: Path) -> None:
    """Session two loads, sees changes and saves; session three loads that save: the
    names of untouched files (kept packed through the save) and of changed ones agree
    with a fresh build."""
    saved(tree)
    edit_everything(tree, "two")
    second = session(tree)
    second.refresh()
    second.close()
    assert second.store_status == "saved"
    edit_everything(tree, "three", first=4)
    third = session(tree)
    assert third.refresh() == 4  # the edited, replaced and two new files; nothing else
    assert third.store_status == "loaded"
    assert_agrees_with_a_fresh_build(tree, third)
    third.close()
    fourth = session(tree)
    assert fourth.refresh() == 0
    assert_agrees_with_a_fresh_build(tree, fourth)
    edited = module(tree, 10)  # a content change only: no file comes or goes
    edited.write_text(edited.read_text().replace("def shared", "def own_10"))
    assert fourth.refresh() == 1
    fourth.close()
    assert fourth.store_status == "saved"
    fifth = session(tree)
    assert fifth.refresh() == 0
    assert addresses(fifth, "own_10") == ["pkg2/mod10.py::own_10"]
    assert_agrees_with_a_fresh_build(tree, fifth)


# --- while the next session starts ----------------------------------------------------


def test_changes_while_the_store_loads_are_seen(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits made while the store is being read (before the watch and the listing)."""
    saved(tree)
    real_load = index_store.load

    def load_while_editing(root: Path, expected: bytes) -> object:
        edit_everything(tree, "loading")
        return real_load(root, expected)

    monkeypatch.setattr(index_store, "load", load_while_editing)
    second = session(tree)
    second.refresh()
    assert second.store_status == "loaded"
    assert addresses(second, "loading_ed") == ["pkg0/mod00.py::loading_ed"]
    assert addresses(second, "loading_rp") == ["pkg1/mod01.py::loading_rp"]
    assert addresses(second, "LoadingDeep") == ["fresh_loading/deep.py::LoadingDeep"]
    assert_agrees_with_a_fresh_build(tree, second)


@pytest.mark.parametrize("when", ["before listing", "after listing"])
def test_changes_while_the_tree_is_listed_are_seen(tree: Path, when: str) -> None:
    """Edits made once the watch is up: before the lister runs, or after it listed (a new
    file it missed, and edits the stat walk may or may not see: the watch does)."""
    saved(tree)
    listing = Workspace(tree)
    edited = []

    def lister() -> Iterator[str]:
        if not edited:
            edited.append(True)
            if when == "before listing":
                edit_everything(tree, "listing")
            else:
                yield from list(listing.files())
                edit_everything(tree, "listing")
                return
        yield from listing.files()

    second = session(tree, lister)
    second.refresh()
    assert second.watching
    assert addresses(second, "listing_ed") == ["pkg0/mod00.py::listing_ed"]
    assert addresses(second, "listing_rp") == ["pkg1/mod01.py::listing_rp"]
    assert addresses(second, "listing_added") == ["pkg3/listing_new.py::listing_added"]
    assert addresses(second, "ListingDeep") == ["fresh_listing/deep.py::ListingDeep"]
    assert_agrees_with_a_fresh_build(tree, second)


def test_changes_while_the_rows_are_read_are_seen(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits made after the stat walk, while the store's rows are still being checked."""
    saved(tree)
    real_settle = index_store.Snapshot.settle

    def settle_while_editing(self: index_store.Snapshot) -> bool:
        if not (tree / "pkg3" / "rows_new.py").exists():
            edit_everything(tree, "rows")
        return real_settle(self)

    monkeypatch.setattr(index_store.Snapshot, "settle", settle_while_editing)
    second = session(tree)
    second.refresh()
    assert addresses(second, "rows_ed") == ["pkg0/mod00.py::rows_ed"]
    assert addresses(second, "rows_rp") == ["pkg1/mod01.py::rows_rp"]
    assert addresses(second, "rows_added") == ["pkg3/rows_new.py::rows_added"]
    assert addresses(second, "RowsDeep") == ["fresh_rows/deep.py::RowsDeep"]
    assert_agrees_with_a_fresh_build(tree, second)


def test_a_single_file_look_before_the_first_refresh(tree: Path) -> None:
    """``outline(path)`` as a session's first call, then a whole-tree question."""
    saved(tree)
    edit_everything(tree, "first")
    second = session(tree)
    assert [s.qualname for s in second.outline("pkg0/mod00.py")][2] == "first_ed"
    assert addresses(second, "first_rp") == ["pkg1/mod01.py::first_rp"]
    assert_agrees_with_a_fresh_build(tree, second)


# --- stores that must not be used -------------------------------------------------------


def test_a_store_copied_with_its_workspace_is_not_used(tree: Path, tmp_path: Path) -> None:
    saved(tree)
    copy = tmp_path / "copy"
    shutil.copytree(tree, copy, symlinks=True)  # mtimes kept, the store too
    (copy / "main.py").write_text("def omega():\n    return 1\n")
    assert index_store.load(copy, index_store.fingerprint()) == (
        None,
        "written for another folder",
    )
    second = session(copy)
    assert second.refresh() == 41, "built cold"
    assert addresses(second, "omega") == ["main.py::omega"]
    assert_agrees_with_a_fresh_build(copy, second)


def test_stamps_of_any_size_are_kept(tree: Path) -> None:
    """A file dated before 1970 (a negative mtime) is stored and checked like any other."""
    old = tree / "main.py"
    os.utime(old, ns=(-1_000_000_000_123, -1_000_000_000_123))
    saved(tree)
    second = session(tree)
    assert second.refresh() == 0
    same_stamp_edit(old, "def beta():\n    return 1\n")
    assert addresses(second, "beta") == ["main.py::beta"]


def test_the_same_folder_through_a_link_uses_its_store(tree: Path, tmp_path: Path) -> None:
    saved(tree)
    link = tmp_path / "link"
    link.symlink_to(tree, target_is_directory=True)
    second = session(link)
    assert second.refresh() == 0
    assert second.store_status == "loaded"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_store_that_is_no_file_is_passed_over(tree: Path, kind: str) -> None:
    """A FIFO (or a link to a device) where the store should be: never waited on, never read."""
    store = index_store.store_path(tree)
    store.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(store)
    else:
        store.symlink_to("/dev/zero")
    assert index_store.load(tree, index_store.fingerprint()) == (None, "not a file")
    idx = session(tree)
    assert idx.refresh() == 41
    assert addresses(idx, "alpha") == ["main.py::alpha"]


@pytest.mark.parametrize("where", ["head", "rows", "length", "tail"])
@pytest.mark.parametrize("first_call", ["refresh", "resolve"])
def test_a_tampered_store_is_never_used(tree: Path, where: str, first_call: str) -> None:
    saved(tree)
    store = index_store.store_path(tree)
    data = bytearray(store.read_bytes())
    start = len(index_store.MAGIC) + 64
    head = int.from_bytes(data[start : start + 8], "little")
    if where == "head":
        data[start + 8 + head // 2] ^= 0x01
    elif where == "rows":
        data[start + 8 + head + (len(data) - start - 8 - head) // 2] ^= 0x01
    elif where == "length":
        data[start] ^= 0x01
    else:
        data += b"\0"
    store.write_bytes(bytes(data))
    snapshot, status = index_store.load(tree, index_store.fingerprint())
    assert snapshot is None or not snapshot.settle(), "the store layer refuses it"
    assert status in ("loaded", "corrupt", "corrupt or not written here")
    second = session(tree)
    if first_call == "resolve":
        assert addresses(second, "alpha") == ["main.py::alpha"]
    else:
        assert second.refresh() == 41, "built cold"
    assert second.store_status != "loaded"
    assert_agrees_with_a_fresh_build(tree, second)
