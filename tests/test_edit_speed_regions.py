"""Edits of large files that used to fall back to a whole-file compile, and the checks a
new file's text goes through once.

- The region of a large Python file never ends between a decorator and its ``def``, starts
  where a definition starts in the old text and the new one, and takes in a neighbour when
  the old text has nothing but blank lines in it (an insertion between members): those
  edits compile their region only, and the verdict is the whole file's.
- Deleting the only member of a block goes to ``pass`` at once (no failed attempt).
- A text the region path saw compile is not compiled again to judge a refusal.
- A Python file that compiles skips the escape scan unless a comment may hold an escape;
  serialized payloads are still refused. The placeholder guard looks only at lines that can
  open a placeholder, found by one search.
- A context renders its request once a turn.
"""

from __future__ import annotations

import random
import sysconfig
import uuid
from collections import Counter
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.context import Context, _Renderer
from grinta_jupyter.code.edits import delete_symbol, insert_symbol, replace_symbol
from grinta_jupyter.code.symbols import Symbol, extract_symbols
from grinta_jupyter.runtime import guards, regions
from grinta_jupyter.tools.facade import _REINDEXER
from tests.test_edit_speed import Parses
from tests.test_edit_speed_more import _compiles, _verdict

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _decorated_class_file() -> str:
    """About 1,300 lines: a class of decorated and plain methods, then functions."""
    methods = "".join(
        (f"    @property\n    def prop_{i}(self):\n        return {i}\n\n" if i % 3 == 0 else "")
        + (f"    @staticmethod\n    @cache\n    def static_{i}(x):\n        return x + {i}\n\n")
        + f"    def method_{i}(self, value):\n        total = value + {i}\n        return total\n\n"
        for i in range(60)
    )
    return (
        "import os\nfrom functools import cache\n\n\nclass Big:\n    LIMIT = 3\n\n"
        + methods
        + "\n"
        + "".join(f"@cache\ndef after_{i}():\n    return {i}\n\n\n" for i in range(150))
        + "".join(f"def plain_{i}():\n    return {i}\n\n\n" for i in range(60))
    )


def _symbol(text: str, qualname: str) -> Symbol:
    return next(s for s in extract_symbols("big.py", text.encode()) if s.qualname == qualname)


def test_symbol_edits_at_decorated_members_and_ends_take_the_region_path() -> None:
    old = _decorated_class_file()
    assert _compiles(old) and old.count("\n") >= regions.REGION_MIN_LINES
    results = {
        "replace a decorated method": replace_symbol(
            old,
            _symbol(old, "Big.static_7"),
            "@staticmethod\n@cache\ndef static_7(x):  # c\n    return x + 7\n",
        ),
        "delete a method before a decorated one": delete_symbol(old, _symbol(old, "Big.method_8")),
        "delete a decorated method": delete_symbol(old, _symbol(old, "Big.static_10")),
        "insert after the class's last member": insert_symbol(
            old, _symbol(old, "Big.method_59"), "def added(self):\n    return 1\n", "after"
        ),
        "insert before the first decorated function": insert_symbol(
            old, _symbol(old, "after_0"), "def first():\n    return 0\n", "before"
        ),
        "replace a decorated function": replace_symbol(
            old, _symbol(old, "after_20"), "@cache\ndef after_20():\n    return -20\n"
        ),
        "delete a decorated function": delete_symbol(old, _symbol(old, "after_30")),
        "insert after the file's last function": insert_symbol(
            old, _symbol(old, "plain_59"), "def last():\n    return 1\n", "after"
        ),
    }
    for name, new in results.items():
        accepted, fast = _verdict(old, new)
        assert accepted and _compiles(new), name
        assert fast, f"{name}: the region path was not taken"


@pytest.mark.parametrize("seed", [5, 6])
def test_edits_around_decorators_match_a_whole_compile(seed: int) -> None:
    """Random lines added, removed and moved around decorated members and functions."""
    old = _decorated_class_file()
    lines = old.splitlines(keepends=True)
    decorated = [i for i, line in enumerate(lines) if line.lstrip().startswith("@")]
    snippets = [
        "    @property\n", "@cache\n", "    def m(self):\n        return 1\n", "def f():\n",
        "    x = 1\n", "\n", "class C:\n", "    pass\n", "        return 2\n", "    @cache\n",
    ]  # fmt: skip
    rng = random.Random(seed)
    fast_paths = 0
    for _ in range(120):
        new = list(lines)
        k = rng.choice(decorated) + rng.randint(-2, 3)
        roll = rng.random()
        if roll < 0.45:
            new.insert(k, rng.choice(snippets))
        elif roll < 0.75:
            del new[k : k + rng.randint(1, 4)]
        else:
            new[k] = new[k].rstrip("\n") + "  # edited\n"
        text = "".join(new)
        accepted, fast = _verdict(old, text)
        fast_paths += fast
        assert accepted is _compiles(text), (k, new[k - 2 : k + 3])
    assert fast_paths > 30


def _workspace(tmp_path: Path, text: str) -> tuple[Runtime, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "big.py").write_text(text)
    rt = Runtime(root)
    assert rt.call("read", {"path": "big.py", "outline": True}).ok
    return rt, root / "big.py"


def test_deleting_the_only_member_of_a_class_compiles_no_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (STDLIB / "tarfile.py").read_text() + f"\n# {uuid.uuid4()}\n"
    rt, path = _workspace(tmp_path, text)
    warm = rt.propose("edit_symbols", {"edits": [{"symbol": "big.py::nti", "action": "delete"}]})
    assert rt.commit(warm).ok  # the first edit learns that the file compiles
    _REINDEXER.wait()  # the layout of the committed text is learnt in the background
    parses = Parses(monkeypatch, len(text) // 2)
    proposal = rt.propose(
        "edit_symbols",
        {"edits": [{"symbol": "big.py::SpecialFileError.__init__", "action": "delete"}]},
    )
    assert proposal.ok, proposal.error
    assert parses.counts["compile"] == 0
    assert rt.commit(proposal).ok
    after = path.read_text()
    start = after.index("class SpecialFileError")
    assert after[start : after.index("\nclass ", start)].split("\n")[1].strip() == "pass"
    assert _compiles(after)


def test_a_refusal_does_not_compile_again_what_the_region_path_saw_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (STDLIB / "tarfile.py").read_text() + f"\n# {uuid.uuid4()}\n"
    rt, path = _workspace(tmp_path, text)
    first = rt.propose(
        "replace_string",
        {"path": "big.py", "old_string": "def nti(s):", "new_string": "def nti(s):  # one"},
    )
    assert rt.commit(first).ok
    parses = Parses(monkeypatch, len(text) // 2)
    before = path.read_bytes()
    broken = rt.propose(
        "replace_string",
        {"path": "big.py", "old_string": "def itn(", "new_string": "def itn(:"},
    )
    assert not broken.ok and broken.error is not None and broken.error.code == "SYNTAX_ERROR"
    assert parses.counts["compile"] == 1  # the new text's own error; the old one is known
    assert path.read_bytes() == before


def test_compiled_python_needs_no_escape_scan_but_comments_are_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scans: list[int] = []
    real_scan = guards._scan

    def counting_scan(text: str, *args: object, **kwargs: object) -> guards._Escapes:
        scans.append(len(text))
        return real_scan(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(guards, "_scan", counting_scan)
    code = 'PATTERN = "a\\nb"\nPATH = "C:\\\\temp"\n'
    assert guards.check_serialized(code, "a.py", compiled=True) is None
    assert scans == []
    one_escape = code + "x = 1  # ends with '\\n'\n"
    assert guards.check_serialized(one_escape, "a.py", compiled=True) is None
    assert scans == []  # one escape in a comment cannot outnumber the lines, nor pack one
    packed = code + "x = 1  # was: a = 1\\nb = 2\\nc = 3\n"
    assert guards.check_serialized(packed, "a.py", compiled=True) is not None
    assert len(scans) == 1
    for module in ("tarfile.py", "argparse.py", "json/decoder.py"):
        text = (STDLIB / module).read_text()
        assert guards.check_serialized(text, module, compiled=True) is None


def test_the_placeholder_prefilter_keeps_every_line_that_can_open_one() -> None:
    rng = random.Random(11)
    spaces = [" ", "\t", "\x0b", "\x0c", "\xa0", "\u2003", "\u3000", "\x1c", "\x85", ""]
    openers = sorted(guards._MAY_OPEN) + list("abxyz=\"'")
    lines = []
    for _ in range(5000):
        lead = "".join(rng.choice(spaces) for _ in range(rng.randint(0, 3)))
        rest = "".join(rng.choice(openers + [" ", "."]) for _ in range(rng.randint(0, 12)))
        lines.append(lead + rest)
    lines += (STDLIB / "tarfile.py").read_text().split("\n")
    added = [(i + 1, line) for i, line in enumerate(lines) if "\n" not in line]
    kept = guards._may_open(added)
    expected = [(n, line) for n, line in added if line.strip()[:1] in guards._MAY_OPEN]
    assert [pair for pair in kept if pair[1].strip()[:1] in guards._MAY_OPEN] == expected
    assert set(expected) <= set(kept)


def test_a_placeholder_among_thousands_of_lines_is_found_where_it_is() -> None:
    lines = (STDLIB / "tarfile.py").read_text().split("\n")
    at = lines.index("def nti(s):")
    lines.insert(at, "# ... existing code ...")
    added = [(i + 1, line) for i, line in enumerate(lines)]
    error = guards.check_placeholder(added, "", "big.py", "\n".join(lines))
    assert error is not None and error.line == at + 1


def test_a_turn_renders_the_request_once(monkeypatch: pytest.MonkeyPatch) -> None:
    renders: Counter[str] = Counter()
    real_render = _Renderer.render

    def counting_render(self: _Renderer, context: Context) -> object:
        renders["render"] += 1
        return real_render(self, context)

    monkeypatch.setattr(_Renderer, "render", counting_render)
    context = Context.start("/w", "task", 2)
    context.add_assistant("", [{"id": "c1", "name": "read", "arguments": "{}"}])
    context.add_tool_result("c1", "read", "text " * 50, "read a file")
    first = context.request()
    again = context.request()  # the condensation check, then the request itself
    assert renders["render"] == 1
    assert again == first and again.messages is not first.messages
    again.messages.clear()
    assert context.request() == first
    context.add_user("more")
    third = context.request()
    assert renders["render"] == 2
    assert third.messages[-1] == {"role": "user", "content": "more"}
    assert third.digest != first.digest


def _hostile_file() -> str:
    """Lines that look like statement starts but are not: code templates in strings, a
    continued matrix product, blocks after a class that hold definitions."""
    functions = "".join(f"def f_{i}():\n    return {i}\n\n\n" for i in range(150))
    methods = "".join(f"    def m_{i}(self):\n        return {i}\n\n" for i in range(150))
    return (
        "import sys\n\n\n"
        + functions
        + 'HEAD = """\ndef setup():\n    pass\n\nclass T:\n    def x(self):\n        pass\n"""\n\n'
        + "x = compute(\n    1, 2)\n\n"
        + "y = a \\\n@ b\ndef g():\n    return 1\n\n\n"
        + f"class Big:\n    '''Doc.'''\n\n{methods}"
        + "    @property\n    def p(self):\n        return 1\n\n\n"
        + "if sys.platform == 'win32':\n    def helper():\n        return 1\nelse:\n"
        + "    def helper():\n        return 2\n\n\n"
        + 'TAIL = """\n    def m_0(self):\n        pass\n"""\n'
        + functions.replace("f_", "h_")
    )


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_random_edits_of_a_file_full_of_false_starts_match_a_whole_compile(seed: int) -> None:
    old = _hostile_file()
    assert _compiles(old)
    lines = old.splitlines(keepends=True)
    hot = [i for i, line in enumerate(lines) if line.strip()[:1] in ('"', "@", "x", "y", "i", "e")]
    hot += [i for i, line in enumerate(lines) if "def " in line and i % 17 == 0]
    snippets = [
        "", '"""\n', "    pass\n", "def q():\n", "    def r(self):\n", "@dec\n", "    @dec\n",
        "else:\n", "    return 3\n", "x = (\n", ")\n", "global G\n", "    global G\n", "\\\n",
        "class K:\n", "        pass\n", "# comment\n", "    x = 1\n", "z = 1\n", "  y = 2\n",
    ]  # fmt: skip
    rng = random.Random(seed)
    fast = 0
    for _ in range(90):
        new = list(lines)
        k = min(len(new) - 1, max(0, rng.choice(hot) + rng.randint(-1, 2)))
        roll = rng.random()
        if roll < 0.4:
            new.insert(k, rng.choice(snippets))
        elif roll < 0.7:
            del new[k : k + rng.randint(1, 3)]
        else:
            new[k] = rng.choice(snippets) or new[k]
        text = "".join(new)
        accepted, took_region = _verdict(old, text)
        fast += took_region
        assert accepted is _compiles(text), (k, new[max(0, k - 2) : k + 3])
    assert fast > 10


@pytest.mark.parametrize("seed", [31, 32])
def test_a_layout_carried_over_edits_is_the_one_learnt_afresh(seed: int) -> None:
    """Edit after edit, each proven by its region from the layout the previous one left:
    every verdict is the whole file's, and every layout carried over equals the layout
    ``learn`` takes from the compiler's tree of that text."""
    text = _decorated_class_file() + _hostile_file()
    regions.forget()
    regions.learn("big.py", text)
    rng = random.Random(seed)
    snippets = [
        "    def added(self):\n        return 0\n\n", "def added():\n    return 0\n\n\n",
        "    # a comment\n", "\n", "    @property\n", "class New:\n    x = 1\n\n\n",
        "    x = 2\n", "x = 2\n", '    """Doc."""\n',
    ]  # fmt: skip
    proven = 0
    for _ in range(60):
        lines = text.splitlines(keepends=True)
        k = rng.randrange(len(lines))
        new = list(lines)
        roll = rng.random()
        if roll < 0.5:
            new.insert(k, rng.choice(snippets))
        elif roll < 0.8:
            del new[k : k + rng.randint(1, 6)]
        else:
            new[k] = new[k].rstrip("\n") + "  # edited\n"
        candidate = "".join(new)
        assert regions.known("big.py", text)
        fast = regions.region_ok("big.py", text, candidate)
        if fast:
            assert _compiles(candidate)
            carried = regions._layout_of("big.py", candidate)
            if carried is not None:
                proven += 1
                regions.forget()
                regions.learn("big.py", candidate)
                assert regions._layout_of("big.py", candidate) == carried
        if _compiles(candidate):
            text = candidate
            if not regions.known("big.py", text):
                regions.learn("big.py", text)
    assert proven > 15
