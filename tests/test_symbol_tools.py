"""Symbols through the tools: reads may search, writes must target."""

from __future__ import annotations

import pytest

from grinta_jupyter import Runtime
from tests.conftest import snapshot

SOURCE = '''\
class Store:
    """A tiny store."""

    def get(self, key):
        return self.data[key]

    def put(self, key, value):
        self.data[key] = value


class Cache:
    def get(self, key):
        return None


def helper():
    return 1
'''


@pytest.fixture
def rt(ws):
    (ws / "store.py").write_text(SOURCE)
    return Runtime(ws)


def test_read_unique_symbol(rt):
    out = rt.call("read", {"symbol": "Store.put"}).output
    assert out.splitlines()[0] == "store.py (lines 7-8 of 17)"
    assert "def put(self, key, value):" in out


def test_read_ambiguous_symbol_returns_candidates(rt):
    p = rt.propose("read", {"symbol": "get"})
    assert p.error.code == "AMBIGUOUS_SYMBOL"
    assert [(c.path, c.line, c.name, c.kind) for c in p.error.candidates] == [
        ("store.py", 4, "Store.get", "method"),
        ("store.py", 12, "Cache.get", "method"),
    ]
    assert p.resolutions[0].chosen is None and len(p.resolutions[0].candidates) == 2


def test_read_missing_symbol_suggests_close_names(rt):
    p = rt.propose("read", {"symbol": "Store.pt"})
    assert p.error.code == "SYMBOL_NOT_FOUND"
    assert "Store.put" in [c.name for c in p.error.candidates]


def test_outline_and_search_definitions(rt):
    out = rt.call("read", {"path": "store.py", "outline": True}).output
    assert "class     Store" in out and "method    Cache.get" in out and "function  helper" in out
    out = rt.call("search", {"query": "helper"}).output
    assert out.startswith("definitions:\nstore.py:16: function helper")


def test_edit_symbols_replace_is_byte_exact(rt, ws):
    obs = rt.call(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "Store.put",
                    "action": "replace",
                    "new_source": "def put(self, key, value):\n    self.data[key] = value\n    return value\n",
                }
            ]
        },
    )
    assert obs.ok, obs.output
    assert (ws / "store.py").read_text() == SOURCE.replace(
        "        self.data[key] = value\n", "        self.data[key] = value\n        return value\n"
    )


def test_edit_symbols_write_to_ambiguous_name_is_refused(rt, ws):
    before = snapshot(ws)
    p = rt.propose("edit_symbols", {"edits": [{"symbol": "get", "action": "delete"}]})
    assert p.error.code == "AMBIGUOUS_SYMBOL" and len(p.error.candidates) == 2
    assert p.error.message.startswith("edit 1 of 1 (get):")
    assert snapshot(ws) == before


def test_edit_symbols_several_edits_in_one_file_and_undo(rt, ws):
    obs = rt.call(
        "edit_symbols",
        {
            "edits": [
                {"symbol": "store.py::Cache.get", "action": "delete"},
                {"symbol": "Cache", "action": "insert_before", "new_source": "LIMIT = 10\n"},
                {
                    "symbol": "helper",
                    "action": "replace",
                    "new_source": "def helper():\n    return LIMIT\n",
                },
            ]
        },
    )
    assert obs.ok, obs.output
    text = (ws / "store.py").read_text()
    assert (
        "return None" not in text
        and "LIMIT = 10\n\n\nclass Cache:" in text
        and "return LIMIT" in text
    )
    assert "class Cache:\n    pass\n" in text, "an emptied class body stays valid"
    assert rt.undo().ok and (ws / "store.py").read_text() == SOURCE


def test_edit_symbols_that_breaks_syntax_changes_nothing(rt, ws):
    before = snapshot(ws)
    p = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "helper",
                    "action": "replace",
                    "new_source": "def helper(:\n    return 1\n",
                }
            ]
        },
    )
    assert p.error.code == "SYNTAX_ERROR"
    assert snapshot(ws) == before


def test_nested_method_is_reindented(rt, ws):
    obs = rt.call(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "Store.get",
                    "action": "replace",
                    "new_source": "def get(self, key):\n    return self.data.get(key)\n",
                }
            ]
        },
    )
    assert obs.ok
    assert (
        "    def get(self, key):\n        return self.data.get(key)\n"
        in (ws / "store.py").read_text()
    )


def test_create_into_a_class_and_the_end_of_a_file(rt, ws):
    assert rt.call(
        "create",
        {
            "path": "store.py",
            "into": "Store",
            "content": "def size(self):\n    return len(self.data)\n",
        },
    ).ok
    assert rt.call(
        "create", {"path": "store.py", "into": "*", "content": "def other():\n    return 2\n"}
    ).ok
    text = (ws / "store.py").read_text()
    assert (
        "        self.data[key] = value\n\n    def size(self):\n        return len(self.data)\n"
        in text
    )
    assert text.endswith("def helper():\n    return 1\n\n\ndef other():\n    return 2\n")
    p = rt.propose("create", {"path": "store.py", "content": "x = 1\n"})
    assert p.error.code == "FILE_EXISTS" and "into" in p.error.message


def test_index_follows_commits_and_outside_changes(rt, ws):
    assert rt.call("read", {"symbol": "helper"}).output.startswith("store.py (lines 16-17")
    rt.call(
        "replace_string",
        {
            "path": "store.py",
            "old_string": "class Store:\n",
            "new_string": "import os\n\n\nclass Store:\n",
        },
    )
    assert rt.call("read", {"symbol": "helper"}).output.startswith("store.py (lines 19-20")
    (ws / "more.py").write_text("def fresh():\n    pass\n")
    assert rt.call("read", {"symbol": "fresh"}).ok
