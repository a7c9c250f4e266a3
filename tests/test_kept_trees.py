"""Every commit keeps its text's tree cheap to reach, and background re-indexing yields.

- A file written by any tool (``replace_string``, ``multiedit``, ``create``, not only a
  symbol edit) is parsed in full once, by the index's re-read after the commit; each later
  commit of it is parsed incrementally from that tree. What the index then holds must be
  what a fresh parse of the bytes on disk gives, whatever happened between (a write from
  outside, an undo, a text in another encoding, commits with no re-read between them).
- ``_Reindexer``: a re-index does not start while a proposal is staged or a write is
  committed (it took those calls' time: a parse holds the GIL), unless one runs past
  ``YIELD_S``; the layout a large Python file's next edit needs is learnt at once.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grinta_jupyter import Runtime
from grinta_jupyter.code import edits, symbols
from grinta_jupyter.tools import facade
from grinta_jupyter.tools.facade import _REINDEXER
from tests.test_edit_speed import Parses, _workspace


def _fresh(rt: Runtime, name: str, root: Path) -> None:
    """The index's symbols of ``name`` equal a fresh parse of the bytes on disk."""
    _REINDEXER.wait()
    held = rt.symbols.symbols(name)
    assert held == symbols.extract_symbols(name, (root / name).read_bytes())


def _mark(rt: Runtime, name: str, root: Path, k: int) -> dict[str, str]:
    """A replace_string call that appends a comment to the ``k``-th unique def line."""
    text = (root / name).read_text()
    lines = [line for line in text.split("\n") if line.lstrip().startswith("def ")]
    unique = [line for line in lines if text.count(line) == 1]
    line = unique[(k * 7) % len(unique)]
    return {"path": name, "old_string": line, "new_string": f"{line}  # kept {k}"}


def _reread_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Runtime, str, Path, Parses]:
    """A copy of tarfile.py edited once and re-read (a whole parse, kept), and a counter of
    the whole-file parses from then on."""
    rt, name, size = _workspace(tmp_path, "tarfile.py")
    root = tmp_path / "ws"
    assert rt.call("replace_string", _mark(rt, name, root, 0)).ok
    _REINDEXER.wait()  # the first re-read parses the committed text in full and keeps it
    return rt, name, root, Parses(monkeypatch, size)


def test_replace_string_commits_are_reparsed_incrementally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first re-read, no commit of the file costs a whole parse, and the index
    gives what a whole parse gives."""
    rt, name, root, parses = _reread_once(tmp_path, monkeypatch)
    for k in range(1, 6):
        assert rt.call("replace_string", _mark(rt, name, root, k)).ok
        _REINDEXER.wait()
    assert parses.counts["tree-sitter"] == 0, parses.counts
    assert parses.counts["tree-sitter incremental"] == 5, parses.counts
    monkeypatch.undo()
    _fresh(rt, name, root)


def test_commits_with_no_reread_between_them_chain_into_one_reparse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three commits before any re-read: one incremental parse, from the last tree kept,
    over the range spanning the three edits, and the same symbols as a fresh parse."""
    rt, name, root, parses = _reread_once(tmp_path, monkeypatch)
    with _REINDEXER.foreground():  # held: the re-indexes queue up behind this block
        for k in (3, 11, 5):
            proposal = rt.propose("replace_string", _mark(rt, name, root, k))
            assert rt.commit(proposal).ok
        time.sleep(0.05)
        assert parses.counts["tree-sitter incremental"] == 0, "a re-index ran while held"
    _REINDEXER.wait()
    assert parses.counts["tree-sitter"] == 0, parses.counts
    assert parses.counts["tree-sitter incremental"] == 1, parses.counts
    monkeypatch.undo()
    _fresh(rt, name, root)


def test_a_write_from_outside_or_an_undo_is_parsed_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept tree is keyed by the committed bytes: bytes anyone else wrote (an editor,
    an undo) are never served that tree."""
    rt, name, _ = _workspace(tmp_path, "dataclasses.py")
    root = tmp_path / "ws"
    assert rt.call("replace_string", _mark(rt, name, root, 0)).ok
    _fresh(rt, name, root)
    committed = (root / name).read_bytes()
    assert edits.kept_tree(name, "python", committed) is not None
    # Someone else changes the file between the commit and the next edit.
    (root / name).write_bytes(committed.replace(b"def ", b"def  ", 3) + b"\ndef outside(): pass\n")
    assert rt.call("replace_string", _mark(rt, name, root, 1)).ok
    _fresh(rt, name, root)
    assert rt.undo().ok
    _fresh(rt, name, root)
    undone = (root / name).read_bytes()
    assert edits.kept_tree(name, "python", undone) is None  # the undo's bytes were not named


def test_a_file_with_a_bom_is_left_to_a_fresh_parse(tmp_path: Path) -> None:
    """The cache is keyed by the text's UTF-8 bytes; a file whose bytes are not just those
    (a byte-order mark in front) names nothing, and the index parses what is on disk."""
    root = tmp_path / "ws"
    root.mkdir()
    text = "NAME = 'caf\xe9'\r\n\r\n\r\ndef first():\r\n    return 1\r\n"
    (root / "b.py").write_bytes(b"\xef\xbb\xbf" + text.encode())
    rt = Runtime(root)
    assert rt.call("read", {"path": "b.py", "outline": True}).ok
    edited = rt.call(
        "replace_string",
        {"path": "b.py", "old_string": "def first():", "new_string": "def second():"},
    )
    assert edited.ok, edited.output
    _REINDEXER.wait()
    on_disk = (root / "b.py").read_bytes()
    assert on_disk.startswith(b"\xef\xbb\xbfNAME") and b"def second():\r\n" in on_disk
    assert edits.kept_tree("b.py", "python", on_disk) is None
    assert edits.kept_tree("b.py", "python", on_disk[3:]) is None
    assert [s.name for s in rt.symbols.symbols("b.py")] == ["NAME", "second"]
    assert rt.symbols.symbols("b.py") == symbols.extract_symbols("b.py", on_disk)


_PIECES = [
    "x = 1\n",
    "def f(a, b):\n    return a + b\n",
    "class K:\n    def m(self):\n        pass\n",
    "    def nested(self):\n        return (\n",
    "'''open string\n",
    ")]}\n",
    "@decorator\n",
    "# comment\n",
    "\n",
    "async def g():\n    await h()\n",
    "lambda: (yield)\n",
    "caf\u00e9 = '\u00e9\U0001f600'\n",
]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(_PIECES)), max_size=8))
def test_any_chain_of_commits_leaves_the_index_as_a_fresh_parse_would(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[int, str]]
) -> None:
    """Random texts (broken ones too) put in at random places through ``create`` and
    ``replace_string``, with and without a re-read between commits: the index's symbols
    and the kept tree always match a fresh parse of the bytes on disk."""
    root = tmp_path_factory.mktemp("chain")
    rt = Runtime(root)
    text = (
        "import os\n\n\nclass A:\n    def one(self):\n        return 1\n\n\ndef two():\n    pass\n"
    )
    assert rt.call("create", {"path": "m.py", "content": text}).ok
    assert rt.call("read", {"path": "m.py", "outline": True}).ok
    rng = random.Random(len(steps))
    for at, piece in steps:
        text = (root / "m.py").read_text()
        lines = text.split("\n")
        line = at % len(lines)
        anchor = lines[line]
        if not anchor or text.count(anchor) != 1:
            continue
        edited = rt.call(
            "replace_string", {"path": "m.py", "old_string": anchor, "new_string": piece + anchor}
        )
        if not edited.ok:  # a syntax error refused: nothing written, nothing named
            continue
        if rng.random() < 0.5:
            _REINDEXER.wait()
            on_disk = (root / "m.py").read_bytes()
            assert rt.symbols.symbols("m.py") == symbols.extract_symbols("m.py", on_disk)
            kept = edits.kept_tree("m.py", "python", on_disk)
            if kept is not None:
                fresh = symbols.parser_for("python").parse(on_disk)
                assert str(kept.root_node) == str(fresh.root_node)
    _REINDEXER.wait()
    on_disk = (root / "m.py").read_bytes()
    assert rt.symbols.symbols("m.py") == symbols.extract_symbols("m.py", on_disk)


def test_two_threads_asking_for_one_pending_tree_both_get_it() -> None:
    """The parse runs outside the cache's lock: two callers at once may both parse, each
    gets the right tree, and the tree kept for the older text is not edited in place."""
    cache = edits._TreeCache()
    old = b"def a():\n    return 1\n" * 300
    new = old.replace(b"return 1", b"return 22", 1)
    tree = symbols.parser_for("python").parse(old)
    before = str(tree.root_node)
    cache.committed("t.py", "python", None, old)
    assert cache.get("t.py", "python", old) is not None  # parsed in full, kept
    cache.committed("t.py", "python", old, new)
    results: list[str] = []
    barrier = threading.Barrier(4)

    def ask() -> None:
        barrier.wait()
        got = cache.get("t.py", "python", new)
        assert got is not None
        results.append(str(got.root_node))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [str(symbols.parser_for("python").parse(new).root_node)] * 4
    assert str(tree.root_node) == before


def test_a_symbol_edit_s_kept_result_is_not_replaced_by_its_own_commit(tmp_path: Path) -> None:
    """A symbol edit keeps its result's tree when staged; its commit names that same text
    and must leave the incremental parse it set up in place."""
    cache = edits._TreeCache()
    old = b"def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    tree = symbols.parser_for("python").parse(old)
    result = old.decode().replace("return 2", "return 3")
    cache.keep("t.py", "python", old, tree, result)
    pending = cache._pending
    cache.committed("t.py", "python", old, result.encode())
    assert cache._pending is pending


class _Gate:
    """A job that records when it ran."""

    def __init__(self) -> None:
        self.ran = threading.Event()
        self.at = 0.0

    def __call__(self) -> None:
        self.at = time.monotonic()
        self.ran.set()


def test_a_reindex_waits_for_the_foreground_call_and_a_soon_job_does_not() -> None:
    with _REINDEXER.foreground():
        later, soon = _Gate(), _Gate()
        _REINDEXER.submit(later)
        _REINDEXER.submit(soon, soon=True)
        assert soon.ran.wait(2), "the soon job was held"
        assert not later.ran.wait(0.15), "a re-index started during a foreground call"
        ended = time.monotonic()
    assert later.ran.wait(2)
    assert later.at >= ended
    _REINDEXER.wait()


def test_a_long_foreground_call_holds_a_reindex_only_so_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(facade._Reindexer, "YIELD_S", 0.2)
    with _REINDEXER.foreground():
        started = time.monotonic()
        later = _Gate()
        _REINDEXER.submit(later)
        assert later.ran.wait(3), "held for good"
        assert later.at - started >= 0.19
    _REINDEXER.wait()


def test_a_failing_job_does_not_stop_the_ones_after_it() -> None:
    def boom() -> None:
        raise RuntimeError("a job's bug")

    after = _Gate()
    _REINDEXER.submit(boom)
    _REINDEXER.submit(after)
    _REINDEXER.wait()
    assert after.ran.is_set()


def test_a_commit_s_foreground_block_ends_when_the_commit_fails(tmp_path: Path) -> None:
    """A refused or failed commit still releases the hold (else re-indexes would wait for
    ``YIELD_S`` after every failure)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    rt = Runtime(root)
    proposal = rt.propose(
        "replace_string", {"path": "a.py", "old_string": "return 1", "new_string": "return 2"}
    )
    (root / "a.py").write_text("def f():\n    return 5\n")  # stale: the commit refuses
    assert not rt.commit(proposal).ok
    assert _REINDEXER._busy == 0


_CLEAN = {
    "javascript": "class A {\n  one(b) { return `x${b}`; }\n}\nfunction two() { return /re/g; }\n",
    "typescript": "interface I { a: number }\nclass C<T> { m(x: T): T { return x; } }\n",
    "ruby": 'class A\n  def one(b)\n    "x#{b}"\n  end\nend\n\ndef two; end\n',
    "python": "class A:\n    def one(self, b):\n        return f'x{b}'\n\n\ndef two():\n    pass\n",
}
_SNIPPETS = [
    "x",
    "1",
    "`",
    "${",
    "}",
    "{",
    "(",
    ")",
    "'",
    '"',
    "#{",
    "\n",
    "/",
    "<a>",
    "end\n",
    "def z; end\n",
    "function z() {}\n",
    " ",
]


@settings(max_examples=100, deadline=None)
@given(
    language=st.sampled_from(sorted(_CLEAN)),
    edits_=st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.sampled_from(_SNIPPETS)),
        min_size=1,
        max_size=4,
    ),
)
def test_an_incremental_parse_is_served_only_where_it_equals_a_fresh_one(
    language: str, edits_: list[tuple[int, int, str]]
) -> None:
    """Texts with and without syntax errors, edited at random: whatever the cache serves
    after each commit is the tree a fresh parse gives (an incremental parse of a broken
    text is not, for some grammars: such texts are parsed afresh)."""
    cache = edits._TreeCache()
    text = _CLEAN[language].encode()
    cache.committed("f", language, None, text)
    for at, cut, snippet in edits_:
        at %= len(text) + 1
        new = text[:at] + snippet.encode() + text[at + cut :]
        cache.committed("f", language, text, new)
        served = cache.get("f", language, new)
        assert served is not None
        assert str(served.root_node) == str(symbols.parser_for(language).parse(new).root_node)
        text = new


def test_a_broken_text_is_not_served_an_incremental_parse() -> None:
    """tree-sitter's JavaScript grammar recovers from this error differently when it
    reuses the earlier tree: the incremental tree holds a method ``e`` a fresh parse does
    not find (found by tests/test_attacks_kept_trees.py)."""
    broken = b"class{e(${}c`\n}\no"
    more = broken + b"${"
    cache = edits._TreeCache()
    cache.committed("m.js", "javascript", None, broken)
    assert cache.get("m.js", "javascript", broken) is not None
    cache.committed("m.js", "javascript", broken, more)
    served = cache.get("m.js", "javascript", more)
    assert served is not None
    fresh = symbols.parser_for("javascript").parse(more)
    assert str(served.root_node) == str(fresh.root_node)
    assert symbols.locate_nodes("m.js", more, "javascript", served)[1] == []
