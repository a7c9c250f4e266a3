"""Commits are atomic, refuse stale files, and undo restores bytes exactly."""

from __future__ import annotations

import json

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.transaction import DamagedJournal, parse_manifest
from tests.conftest import snapshot


def test_propose_writes_nothing(rt, ws):
    before = snapshot(ws)
    p = rt.propose(
        "multiedit",
        {"edits": [{"path": "pkg/core.py", "old_string": "a + b", "new_string": "b + a"}]},
    )
    assert p.ok
    assert snapshot(ws) == before
    assert p.changes[0].base_sha256 is not None


def test_commit_refuses_stale_file_and_keeps_outside_change(rt, ws):
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "a + b", "new_string": "b + a"}
    )
    outside = (ws / "pkg/core.py").read_text().replace("import os", "import sys")
    (ws / "pkg/core.py").write_text(outside)
    obs = rt.commit(p)
    assert not obs.ok and obs.error.code == "STALE_FILE"
    assert (ws / "pkg/core.py").read_text() == outside


def test_stale_new_file(rt, ws):
    p = rt.propose("create", {"path": "n.txt", "content": "mine\n"})
    (ws / "n.txt").write_text("theirs\n")
    assert rt.commit(p).error.code == "STALE_FILE"
    assert (ws / "n.txt").read_text() == "theirs\n"


def test_commit_twice_is_refused(rt):
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "a + b", "new_string": "b + a"}
    )
    assert rt.commit(p).ok
    assert rt.commit(p).error.code == "ALREADY_COMMITTED"


def test_refused_proposal_cannot_be_committed(rt, ws):
    before = snapshot(ws)
    p = rt.propose(
        "replace_string", {"path": "pkg/core.py", "old_string": "nope", "new_string": "x"}
    )
    assert rt.commit(p).error.code == "NOT_FOUND"
    assert snapshot(ws) == before


def test_undo_restores_twenty_five_steps_byte_for_byte(rt, ws):
    states = [snapshot(ws)]
    for i in range(25):
        if i % 5 == 0:
            assert rt.call("create", {"path": f"gen/f{i}.txt", "content": f"file {i}\n"}).ok
        else:
            assert rt.call(
                "replace_string", {"path": "README.md", "old_string": "\n", "new_string": f" {i}\n"}
            ).ok
        states.append(snapshot(ws))
    for expected in reversed(states[:-1]):
        assert rt.undo().ok
        assert snapshot(ws) == expected
    assert not (ws / "gen").exists(), "folders made by create go away on undo"
    assert rt.undo().error.code == "NOTHING_TO_UNDO"


def test_undo_survives_reopening_the_workspace(ws):
    Runtime(ws).call(
        "replace_string", {"path": "README.md", "old_string": "demo", "new_string": "x"}
    )
    assert Runtime(ws).undo().ok
    assert (ws / "README.md").read_text() == "# demo\n"


def test_undo_refuses_when_the_file_changed_since(rt, ws):
    assert rt.call(
        "replace_string", {"path": "README.md", "old_string": "demo", "new_string": "x"}
    ).ok
    (ws / "README.md").write_text("hand edit\n")
    obs = rt.undo()
    assert obs.error.code == "STALE_FILE"
    assert (ws / "README.md").read_text() == "hand edit\n"


def test_no_temp_files_left_behind(rt, ws):
    rt.call(
        "multiedit",
        {
            "edits": [
                {"path": "README.md", "old_string": "demo", "new_string": "x"},
                {"path": "pkg/core.py", "old_string": "os", "new_string": "sys"},
            ]
        },
    )
    leftovers = [p for p in ws.rglob("*.tmp")]
    assert leftovers == []
    assert list((ws / ".grinta" / "journal").iterdir()) == []


def test_undo_refuses_a_damaged_backup(rt, ws):
    assert rt.call(
        "replace_string", {"path": "README.md", "old_string": "demo", "new_string": "x"}
    ).ok
    record = rt.journal.history()[-1]
    (record.folder / "0.old").write_bytes(b"garbage")
    obs = rt.undo()
    assert obs.error.code == "IO_ERROR" and "damaged" in obs.error.message
    assert (ws / "README.md").read_text() == "# x\n"


# -- the journal's manifest is a typed record ---------------------------------------------


def _undo_manifest(ws) -> dict:  # type: ignore[type-arg]
    (record,) = sorted((ws / ".grinta" / "undo").iterdir())
    return json.loads((record / "manifest.json").read_text())


def test_the_manifest_on_disk_round_trips_through_the_typed_record(rt, ws):
    assert rt.call("create", {"path": "deep/er/n.txt", "content": "x\n"}).ok
    raw = _undo_manifest(ws)
    manifest = parse_manifest(raw, "record")
    assert manifest.state == "commit" and manifest.keep_undo and manifest.undoes is None
    (entry,) = manifest.files
    assert entry.path == "deep/er/n.txt" and entry.old_sha is None and entry.backup is None
    assert entry.new_dirs == ("deep", "deep/er") and isinstance(entry.folder, tuple)
    assert manifest.to_json() == raw  # the same field names and values as on disk


def test_an_older_manifest_without_optional_fields_reads_with_their_defaults():
    old = {"id": "1-a", "label": "l", "state": "prepare", "files": [{"path": "a.py"}]}
    manifest = parse_manifest(old, "1-a")
    assert (manifest.created, manifest.keep_undo, manifest.undoes) == (0.0, True, None)
    assert manifest.files[0].tmp is None and manifest.files[0].new_dirs == ()


def test_a_malformed_manifest_is_refused_naming_the_problem():
    good = {"id": "1-a", "label": "l", "state": "commit", "files": [{"path": "a.py"}]}
    bad = {
        "state 'committing' is unknown": {**good, "state": "committing"},
        "no list of files": {**good, "files": {}},
        "label is not a string": {**good, "label": 3},
        "keep_undo": {**good, "keep_undo": "yes"},
        "undoes": {**good, "undoes": "../x"},
        "path inside": {**good, "files": [{"path": "../a.py"}]},
        "temp file": {**good, "files": [{"path": "a.py", "tmp": "sub/x.tmp"}]},
        "backup": {**good, "files": [{"path": "a.py", "backup": "../0.old"}]},
        "natural number": {**good, "files": [{"path": "a.py", "mode": -1}]},
        "folder identity": {**good, "files": [{"path": "a.py", "folder": [1]}]},
        "new_dirs": {**good, "files": [{"path": "a.py", "new_dirs": ["/etc"]}]},
    }
    for words, data in bad.items():
        with pytest.raises(DamagedJournal, match="its manifest is damaged") as caught:
            parse_manifest(data, "1-a")
        assert words in str(caught.value), (words, str(caught.value))
    with pytest.raises(DamagedJournal):
        parse_manifest([], "1-a")


def test_a_commit_keeps_its_owner_and_find_tells_owners_apart(rt, ws):
    """A session names its commits; a resumed one must not take another's commit of the
    same bytes for its own, yet still find one an older version made (no owner)."""
    import hashlib

    before = (ws / "pkg/core.py").read_bytes()
    p = rt.propose(
        "replace_string",
        {"path": "pkg/core.py", "old_string": "import os", "new_string": "import sys"},
    )
    assert rt.commit(p, owner="session A call c1").ok
    after = (ws / "pkg/core.py").read_bytes()
    files = {"pkg/core.py": (hashlib.sha256(before).hexdigest(), hashlib.sha256(after).hexdigest())}
    [record] = rt.journal.history()
    assert record.owner == "session A call c1"
    assert rt.journal.find(files, "session A call c1") == record
    assert rt.journal.find(files, "session B call c1") is None
    assert rt.journal.find(files) == record  # asked of nobody in particular
    # An older version's record names no owner: any owner may find it.
    manifest = record.folder / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["owner"]
    manifest.write_text(json.dumps(data))
    assert rt.journal.find(files, "session B call c1") is not None
    # An owner of the wrong shape is nobody's, and the record stays readable.
    for odd in (5, ["x"], "o" * 5_000):
        data["owner"] = odd
        assert parse_manifest(data, "r").owner is None
