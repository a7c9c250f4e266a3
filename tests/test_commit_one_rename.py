"""A one-file commit does not force its decision's name to disk (``_one_rename``).

A power cut can then lose the manifest's replacement while keeping, or losing, the file's
rename. These tests build each state a lost decision can leave (the ``prepare`` manifest
put back where the ``commit`` one was, at a step after the decision), end the process's
part there, and check that the next start leaves the file all-old or all-new, with no temp
file and no journal. A commit of several files, or an undo, is not allowed this: its
decision is forced to disk, and ``_one_rename`` says which is which.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.transaction import Manifest, ManifestFile, _one_rename


class PowerCut(BaseException):
    """Ends the commit where it is, as a power cut would: no rollback, no clean-up."""


def lose_the_decision_at(step: str, ws: Path):  # type: ignore[no-untyped-def]
    """A hook: keep the ``prepare`` manifest's bytes, and at ``step`` put them back over
    the ``commit`` manifest (its new name lost) and cut the power."""
    kept: dict[str, bytes] = {}

    def hook(label: str) -> None:
        (folder,) = (ws / ".grinta" / "journal").iterdir()
        if label == "prepared-manifest":
            kept["prepare"] = (folder / "manifest.json").read_bytes()
        if label == step:
            (folder / "manifest.json").write_bytes(kept["prepare"])
            raise PowerCut

    return hook


def assert_clean(ws: Path) -> None:
    assert not [p for p in ws.rglob("*.tmp") if ".grinta" not in p.parts]
    assert list((ws / ".grinta" / "journal").iterdir()) == []


@pytest.mark.parametrize(("step", "after"), [("decided", "old"), ("renamed-0", "new")])
def test_an_edit_whose_decision_is_lost_recovers_all_old_or_all_new(tmp_path, step, after):
    ws = tmp_path / "ws"
    ws.mkdir()
    old = b"def f():\n    return 1\n"
    (ws / "m.py").write_bytes(old)
    rt = Runtime(ws)
    proposal = rt.propose(
        "replace_string", {"path": "m.py", "old_string": "return 1", "new_string": "return 2"}
    )
    assert proposal.ok, proposal.error
    with pytest.raises(PowerCut):
        rt.commit(proposal, hook=lose_the_decision_at(step, ws))
    recovered = Runtime(ws).recovered
    assert [note.split(" ")[0] for note in recovered] == ["rolled"], recovered
    expected = old if after == "old" else old.replace(b"return 1", b"return 2")
    assert (ws / "m.py").read_bytes() == expected
    assert_clean(ws)


@pytest.mark.parametrize(("step", "exists"), [("decided", False), ("renamed-0", True)])
def test_a_create_in_new_folders_whose_decision_is_lost_leaves_all_or_nothing(
    tmp_path, step, exists
):
    ws = tmp_path / "ws"
    ws.mkdir()
    rt = Runtime(ws)
    proposal = rt.propose("create", {"path": "a/b/new.txt", "content": "hello\n"})
    assert proposal.ok, proposal.error
    with pytest.raises(PowerCut):
        rt.commit(proposal, hook=lose_the_decision_at(step, ws))
    Runtime(ws)
    if exists:
        assert (ws / "a" / "b" / "new.txt").read_bytes() == b"hello\n"
    else:
        assert not (ws / "a").exists()  # the folders made for it went with it
    assert_clean(ws)


def test_only_a_single_rename_that_consumes_no_undo_record_skips_the_forced_decision():
    def file(path: str) -> ManifestFile:
        return ManifestFile(path, None, "0" * 64, None, 1, None, None, f".{path}.grinta-1.tmp")

    one = Manifest("1", "edit", "commit", 0.0, True, None, (file("a"),))
    assert _one_rename(one)
    assert not _one_rename(Manifest("1", "edit", "commit", 0.0, True, None, (file("a"), file("b"))))
    assert not _one_rename(Manifest("1", "undo", "commit", 0.0, False, "0-x", (file("a"),)))
    assert not _one_rename(
        Manifest("1", "rewind", "commit", 0.0, False, None, (file("a"),), consumes=("0-x",))
    )
