"""Attacks on commits: links planted among the undo records, and what a rewrite keeps.

Real files throughout: a ``.grinta`` is planted as a cloned repository could ship it
(links with relative targets, so they point outside whatever folder the clone lands
in), real extended attributes and POSIX ACLs on ext4 or tmpfs, and the real umask.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.transaction import Journal

OLD_ID = "00000000000000000001-aaaaaaaa"  # sorts before every real commit id


def _victim(tmp_path: Path) -> Path:
    """A folder outside the workspace holding a person's work."""
    victim = tmp_path / "thesis"
    victim.mkdir()
    (victim / "thesis.tex").write_bytes(b"years of work\n")
    (victim / "manifest.json").write_bytes(b"{}")  # a name the removal handles first
    return victim


def _plant_link(ws: Path, name: str) -> Path:
    undo = ws / ".grinta" / "undo"
    undo.mkdir(parents=True, exist_ok=True)
    link = undo / name
    link.symlink_to("../../../thesis")  # relative: the clone's sibling folder
    return link


def _edit(rt: Runtime, old: str, new: str) -> None:
    observation = rt.call("replace_string", {"path": "a.py", "old_string": old, "new_string": new})
    assert observation.ok, observation.error


def test_pruning_old_undo_records_never_empties_a_folder_a_planted_link_points_to(tmp_path):
    """Pruning keeps the last 50 records: a repository that ships 50 of them and a link as
    the oldest had the first commit delete every file in the folder the link points to."""
    victim = _victim(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    link = _plant_link(ws, OLD_ID)
    for i in range(2, 52):
        (ws / ".grinta" / "undo" / f"{i:020d}-bbbbbbbb").mkdir()
    _edit(Runtime(ws), "x = 1", "x = 2")
    assert sorted(os.listdir(victim)) == ["manifest.json", "thesis.tex"]
    assert (victim / "thesis.tex").read_bytes() == b"years of work\n"
    assert not os.path.lexists(link)  # the oldest entry was pruned: the link itself
    assert (ws / "a.py").read_text() == "x = 2\n"


def test_opening_a_clone_with_a_journal_consuming_a_linked_record_deletes_nothing_outside(
    tmp_path,
):
    """A decided journal with no files that "undoes" a record recovers at open, and drops
    that record: a record planted as a link made opening the clone empty its target."""
    victim = _victim(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    _plant_link(ws, OLD_ID)
    journal = ws / ".grinta" / "journal" / "00000000000000000002-bbbbbbbb"
    journal.mkdir(parents=True)
    manifest = {"id": journal.name, "label": "l", "state": "commit", "files": []}
    manifest.update(undoes=OLD_ID, keep_undo=False)
    (journal / "manifest.json").write_text(json.dumps(manifest))
    Runtime(ws)
    assert sorted(os.listdir(victim)) == ["manifest.json", "thesis.tex"]
    assert not journal.exists()


def test_a_link_among_the_undo_records_is_never_listed_or_undone(tmp_path):
    """A link to a folder outside holding a valid record was listed as the last commit,
    and ``undo`` restored the bytes it names and then emptied that folder."""
    victim = _victim(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    _plant_link(ws, "99999999999999999999-cccccccc")  # newer than any real commit
    record = {"id": "99999999999999999999-cccccccc", "label": "planted", "state": "commit"}
    record["files"] = []
    (victim / "manifest.json").write_text(json.dumps(record))
    rt = Runtime(ws)
    assert Journal(ws, ws / ".grinta").history() == []
    assert not rt.undo().ok  # nothing to undo
    assert sorted(os.listdir(victim)) == ["manifest.json", "thesis.tex"]


def _acl(*entries: tuple[int, int, int]) -> bytes:
    """A POSIX ACL as the kernel stores it in an extended attribute (version 2)."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


_ANY = 0xFFFFFFFF
_USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20


def _set_or_skip(path: Path, name: str, value: bytes) -> None:
    try:
        os.setxattr(path, name, value)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOTSUP):
            pytest.skip(f"this file system has no {name}")
        raise


def test_a_commit_and_its_undo_keep_the_files_acl_and_extended_attributes(tmp_path):
    """A rewrite renames a new file into place: the ACL that let a colleague (uid 1000)
    edit the file, and the user's tags, were lost at the agent's first edit."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "a.py"
    target.write_text("x = 1\n")
    target.chmod(0o664)
    colleague_may_write = _acl(
        (_USER_OBJ, 6, _ANY), (_USER, 6, 1000), (_GROUP_OBJ, 4, _ANY), (_MASK, 6, _ANY),
        (_OTHER, 4, _ANY),
    )  # fmt: skip
    _set_or_skip(target, "system.posix_acl_access", colleague_may_write)
    _set_or_skip(target, "user.reviewed-by", b"ana")
    rt = Runtime(ws)
    _edit(rt, "x = 1", "x = 2")
    assert target.read_text() == "x = 2\n"
    assert os.getxattr(target, "system.posix_acl_access") == colleague_may_write
    assert os.getxattr(target, "user.reviewed-by") == b"ana"
    assert stat.S_IMODE(target.stat().st_mode) == 0o664
    assert rt.undo().ok
    assert target.read_text() == "x = 1\n"
    assert os.getxattr(target, "system.posix_acl_access") == colleague_may_write
    assert os.getxattr(target, "user.reviewed-by") == b"ana"


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.parametrize(
    ("mask", "mode"),
    [(0o002, 0o664), (0o000, 0o666), (0o077, 0o600)],  # the last passes on the old code too
)
def test_a_file_a_commit_creates_gets_the_mode_the_umask_gives_any_new_file(tmp_path, mask, mode):
    """A shared project (umask 002) got 0644 files from the agent beside 0775 folders, so
    the group could not edit what the agent created."""
    ws = tmp_path / "ws"
    ws.mkdir()
    rt = Runtime(ws)
    with _umask(mask):
        observation = rt.call("create", {"path": "pkg/new.py", "content": "x = 1\n"})
    assert observation.ok, observation.error
    assert stat.S_IMODE((ws / "pkg" / "new.py").stat().st_mode) == mode
    assert stat.S_IMODE((ws / "pkg").stat().st_mode) == 0o777 & ~mask


def test_a_folders_default_acl_still_decides_a_new_files_mode(tmp_path):
    """Guard (passes on the old code too): under a default ACL the umask does not apply,
    and the created file must never be wider than the ACL allows (here: nothing for others)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    no_others = _acl((_USER_OBJ, 7, _ANY), (_GROUP_OBJ, 5, _ANY), (_OTHER, 0, _ANY))
    _set_or_skip(ws, "system.posix_acl_default", no_others)
    rt = Runtime(ws)
    with _umask(0o000):
        observation = rt.call("create", {"path": "new.py", "content": "x = 1\n"})
    assert observation.ok, observation.error
    assert stat.S_IMODE((ws / "new.py").stat().st_mode) & 0o007 == 0
