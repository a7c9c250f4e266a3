"""Edits change only the bytes they mean to: encoding, newlines, final newline, tabs."""

from __future__ import annotations

import pytest


def edit(rt, path, old, new):
    obs = rt.call("replace_string", {"path": path, "old_string": old, "new_string": new})
    assert obs.ok, obs.output
    return obs


def test_crlf_file_stays_crlf_when_edit_is_given_with_lf(rt, ws):
    (ws / "w.py").write_bytes(b"def f():\r\n    x = 1\r\n    return x\r\n")
    edit(rt, "w.py", "    x = 1\n    return x", "    x = 2\n    y = 3\n    return x")
    assert (ws / "w.py").read_bytes() == b"def f():\r\n    x = 2\r\n    y = 3\r\n    return x\r\n"


def test_mixed_line_endings_keep_untouched_bytes(rt, ws):
    data = b"a = 1\r\nb = 2\nc = 3\r\n"
    (ws / "m.py").write_bytes(data)
    edit(rt, "m.py", "b = 2", "b = 20")
    assert (ws / "m.py").read_bytes() == b"a = 1\r\nb = 20\nc = 3\r\n"


def test_bom_is_preserved(rt, ws):
    (ws / "b.py").write_bytes(b"\xef\xbb\xbfname = 'caf\xc3\xa9'\n")
    edit(rt, "b.py", "café", "cafe")
    assert (ws / "b.py").read_bytes() == b"\xef\xbb\xbfname = 'cafe'\n"


@pytest.mark.parametrize("final", [b"", b"\n"])
def test_final_newline_presence_is_preserved(rt, ws, final):
    (ws / "f.txt").write_bytes(b"one\ntwo" + final)
    edit(rt, "f.txt", "one", "uno")
    assert (ws / "f.txt").read_bytes() == b"uno\ntwo" + final


def test_tabs_and_trailing_spaces_survive(rt, ws):
    data = b"def f():\n\tif x:  \n\t\treturn 1\t\n\treturn 2\n"
    (ws / "t.py").write_bytes(data)
    edit(rt, "t.py", "\treturn 2", "\treturn 3")
    assert (ws / "t.py").read_bytes() == data.replace(b"\treturn 2", b"\treturn 3")


def test_create_writes_exact_bytes(rt, ws):
    obs = rt.call("create", {"path": "new/deep/x.txt", "content": "héllo\n\tworld"})
    assert obs.ok
    assert (ws / "new" / "deep" / "x.txt").read_bytes() == "héllo\n\tworld".encode()


def test_binary_files_are_refused(rt, ws):
    (ws / "img.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    for tool, args in [
        ("read", {"path": "img.bin"}),
        ("replace_string", {"path": "img.bin", "old_string": "PNG", "new_string": "JPG"}),
    ]:
        assert rt.propose(tool, args).error.code == "BINARY_FILE"


def test_non_utf8_text_is_refused_not_mangled(rt, ws):
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    p = rt.propose(
        "replace_string", {"path": "latin.txt", "old_string": "caf", "new_string": "kaf"}
    )
    assert p.error.code == "UNSUPPORTED_ENCODING"
    assert (ws / "latin.txt").read_bytes() == "café\n".encode("latin-1")


def test_file_mode_is_kept(rt, ws):
    script = ws / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    edit(rt, "run.sh", "echo hi", "echo bye")
    assert script.stat().st_mode & 0o777 == 0o755
