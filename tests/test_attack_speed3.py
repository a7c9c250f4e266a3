"""Attacks on the edit fast paths: a fast path must give the answer of the slow path it
replaces.

Bugs these found in the first region check (each test failed then):

- It trusted a region because the same region of the old text compiled on its own. That
  does not prove its edges are statement boundaries: a string whose lines start with
  ``def`` at column 0 (a code template) made a region that started inside one template and
  ended inside the next; the real code between them was read as a string, and any edit of
  it passed. The text was also marked known-valid, so the escape scan that ``compiled``
  skips no longer refused a JSON-escaped payload there.
- A class-body region ended at the next line starting a member at the body's indentation,
  even when that line lay in a module-level block after the class (``if``/``else``,
  ``for``/``break``): the ``pass`` footer stood in for a block the edit changed the header
  of, or removed.
- A column-0 ``@`` line continued from the line before by a backslash is a matrix product,
  not a decorator, yet started a region.

The region is now cut where the compiler's own tree says statements start
(``runtime/regions.py``). Invariants: the placeholder prefilter around 64 lines and with odd
whitespace; deleting a block's only member; trees served while edits go on; a kept request
equals a fresh rendering; serialized payloads that compile are refused.
"""

from __future__ import annotations

import random
import sysconfig
import threading
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent import condense
from grinta_jupyter.agent.context import Context, Request
from grinta_jupyter.code import edits
from grinta_jupyter.code.edits import delete_symbol, insert_symbol, replace_symbol
from grinta_jupyter.code.symbols import Symbol, extract_symbols
from grinta_jupyter.runtime import guards
from tests.test_edit_speed_more import _compiles, _verdict

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _functions(prefix: str, count: int = 300) -> str:
    return "".join(f"def {prefix}_{i}():\n    return {i}\n\n\n" for i in range(count))


def _workspace(tmp_path: Path, text: str) -> tuple[Runtime, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "big.py").write_text(text)
    return Runtime(root), root / "big.py"


def _refused(rt: Runtime, path: Path, old_string: str, new_string: str) -> None:
    """A replace_string that would leave ``path`` not compiling is refused, the file kept."""
    before = path.read_bytes()
    proposal = rt.propose(
        "replace_string", {"path": "big.py", "old_string": old_string, "new_string": new_string}
    )
    if proposal.ok:
        assert rt.commit(proposal).ok
    written = path.read_text()
    assert not proposal.ok, f"accepted; the file compiles: {_compiles(written)}"
    assert path.read_bytes() == before


# -- 1. a region whose edges lie inside strings --------------------------------------------

TEMPLATES = (
    'HEADER = """\ndef setup():\n    pass\n"""\n\n'
    "x = compute(\n    1, 2)\n\n"
    'FOOTER = """\ndef teardown():\n    pass\n"""\n'
)


def test_an_edit_of_code_between_two_templates_is_compiled() -> None:
    """The region runs from ``def setup`` (in HEADER) to ``def teardown`` (in FOOTER): read on
    its own, the code between the templates is a string, so the old region compiles."""
    old = _functions("f") + TEMPLATES + _functions("g")
    assert _compiles(old)
    for new in (
        old.replace("    1, 2)\n", "    1, 2\n", 1),  # the call left open
        old.replace("x = compute(", "x = = compute(", 1),
    ):
        assert not _compiles(new)
        assert _verdict(old, new)[0] is False


def test_a_docstring_added_to_a_template_s_function_is_refused(tmp_path: Path) -> None:
    """The model adds a docstring to ``def a`` inside TEMPLATE: its quotes end the string."""
    text = (
        _functions("f")
        + 'TEMPLATE = """\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n"""\n'
    )
    rt, path = _workspace(tmp_path, text)
    _refused(rt, path, "def a():\n    return 1", 'def a():\n    """Doc."""\n    return 1')


def test_a_json_escaped_line_between_templates_is_refused(tmp_path: Path) -> None:
    """Refused before ed58485 as CONTENT_SERIALIZED; now the region path marks the broken
    text as compiling, and ``compiled`` skips the escape scan."""
    text = _functions("f") + TEMPLATES.replace("(\n    1, 2)", "(1, 2)") + _functions("g")
    payload = "x = compute(1, 2)\\nprint(x)\\nprint(HEADER)\\n"
    assert guards.check_serialized(payload, "big.py") is not None  # the scan alone refuses it
    rt, path = _workspace(tmp_path, text)
    _refused(rt, path, "x = compute(1, 2)\n", payload + "\n")


# -- 2. a class-body region that ends outside the class ------------------------------------


def _class_then(block: str) -> str:
    methods = "".join(f"    def method_{i}(self):\n        return {i}\n\n" for i in range(200))
    return (
        f"import sys\n\n\nclass Big:\n    LIMIT = 3\n\n{methods}\n{block}\n\n{_functions('g', 200)}"
    )


PLATFORM = (
    "if sys.platform == 'win32':\n    def helper():\n        return 'nt'\n"
    "else:\n    def helper():\n        return 'posix'\n"
)


def test_deleting_the_if_line_of_a_block_after_a_class_is_refused(tmp_path: Path) -> None:
    """Its ``def`` lines join the class and the ``else`` is left alone (the region path
    refused this before ed58485, by luck: its cut started at the joined ``def``)."""
    rt, path = _workspace(tmp_path, _class_then(PLATFORM))
    _refused(rt, path, "\nif sys.platform == 'win32':\n", "\n")


@pytest.mark.parametrize(
    ("block", "old_line", "new_line"),
    [
        (PLATFORM, "if sys.platform == 'win32':", "with open(__file__):"),  # else after with
        (
            "for name in NAMES:\n    def helper():\n        return name\n    if name:\n        break\n",
            "for name in NAMES:",
            "if NAMES:",  # break outside a loop
        ),
        ("while True:\n    def w():\n        pass\n    continue\n", "while True:\n", ""),
    ],
)
def test_a_block_header_after_a_class_is_checked(block: str, old_line: str, new_line: str) -> None:
    old = _class_then(block)
    new = old.replace(old_line, new_line, 1)
    assert _compiles(old) and not _compiles(new)
    assert _verdict(old, new)[0] is False


# -- 3. a continued matrix product is no decorator ------------------------------------------


@pytest.mark.parametrize(
    ("old_line", "new_line"),
    [
        ("@ b\n", "@ not b\n"),  # a decorator expression, not an operand
        ("@ b\n", "@lambda g: g\n"),
        ("@ b\n", ""),  # the continued line now runs into ``def f``
    ],
)
def test_a_column_0_matrix_product_is_not_taken_for_a_decorator(
    old_line: str, new_line: str
) -> None:
    old = _functions("f") + "x = a \\\n@ b\ndef f():\n    return 1\n\n\n" + _functions("g")
    new = old.replace(old_line, new_line, 1)
    assert _compiles(old) and not _compiles(new)
    assert _verdict(old, new)[0] is False


# -- invariants that hold -------------------------------------------------------------------

ODD = [" ", "\t", "\x0b", "\x0c", "\r", "\x1c", "\x85", "\xa0", "\u2028", "\u3000", "\u200b", ""]


@pytest.mark.parametrize("count", [0, 1, 63, 64, 65, 200])
def test_the_placeholder_prefilter_keeps_every_candidate(count: int) -> None:
    rng = random.Random(count)
    starts = sorted(guards._MAY_OPEN) + list("ax=\"'\u2026\u22ef")
    lines = [
        "".join(rng.choice(ODD) for _ in range(rng.randint(0, 3)))
        + "".join(rng.choice(starts + [" ", "..."]) for _ in range(rng.randint(0, 6)))
        for _ in range(count)
    ]
    added = [(i * 2 + 1, line) for i, line in enumerate(lines)]  # numbers need not be dense
    kept = list(guards._may_open(added))
    expected = [(n, line) for n, line in added if line.strip()[:1] in guards._MAY_OPEN]
    assert [pair for pair in kept if pair in expected] == expected
    assert all(pair in added for pair in kept)
    placeholders = [(n, line) for n, line in added if guards._placeholder(line, False)]
    assert [p for p in kept if guards._placeholder(p[1], False)] == placeholders


ONLY_MEMBERS = {  # source, the symbol deleted, the result
    "a class body of a comment and the def": (
        "class A:\n    # only a comment\n    def f(self):\n        pass\n\n\nx = 1\n",
        "A.f",
        "class A:\n    pass\n\n\nx = 1\n",
    ),
    "a decorated method": (
        "class A:\n    @property\n    def p(self):\n        return 1\n",
        "A.p",
        "class A:\n    pass\n",
    ),
    "a nested function": (
        "def outer():\n    def inner():\n        pass\n\n\ny = 2\n",
        "outer.inner",
        "def outer():\n    pass\n\n\ny = 2\n",
    ),
    "an if block": (
        "import sys\nif sys.argv:\n    def h():\n        pass\nelse:\n    def h():\n        pass\n",
        "h",
        "import sys\nif sys.argv:\n    pass\nelse:\n    def h():\n        pass\n",
    ),
    "a nested class's method, CRLF": (
        "class K:\r\n    class N:\r\n        # c\r\n        def m(self):\r\n            pass\r\n",
        "K.N.m",
        "class K:\r\n    class N:\r\n        pass\r\n",
    ),
    "a docstring and the def": (
        "class B:\n    '''Doc.'''\n    def g(self):\n        pass\n",
        "B.g",
        "class B:\n    '''Doc.'''\n",
    ),
}


@pytest.mark.parametrize("name", ONLY_MEMBERS)
def test_deleting_the_only_member_of_a_block_leaves_a_valid_block(name: str) -> None:
    source, qualname, expected = ONLY_MEMBERS[name]
    symbols = extract_symbols("m.py", source.encode())
    symbol = next(s for s in symbols if s.qualname == qualname)  # the first, when two
    assert delete_symbol(source, symbol) == expected
    assert _compiles(expected)


def _edit(text: str, symbol: Symbol, roll: float, step: int) -> str:
    if roll < 0.4:
        receiver = "self, " if symbol.kind == "method" else ""
        new = f"def {symbol.name}({receiver}a={step}):\n    return a\n"
        return replace_symbol(text, symbol, new)
    if roll < 0.7:
        return insert_symbol(text, symbol, f"def added_{step}():\n    return {step}\n", "after")
    return delete_symbol(text, symbol)


def test_trees_served_to_the_index_and_the_next_edit_match_their_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Edits go on while another thread asks for the last result's symbols: every symbol
    list served is the text's, and every edit equals the same edit from a cold cache."""
    text = (STDLIB / "dataclasses.py").read_text()
    current = [text]
    stop = threading.Event()
    served: list[tuple[bytes, list[Symbol]]] = []

    def index() -> None:
        while not stop.is_set():
            source = current[0].encode()
            found = edits.result_symbols("big.py", "python", source)
            if found is not None:
                served.append((source, found))

    rng = random.Random(3)
    log: list[tuple[str, Symbol, float, int, str]] = []
    thread = threading.Thread(target=index)
    thread.start()
    try:
        for step in range(40):
            base = current[0]
            symbols = extract_symbols("big.py", base.encode())
            symbol = rng.choice([s for s in symbols if s.kind in ("function", "method")])
            roll = rng.random()
            try:
                result = _edit(base, symbol, roll, step)
            except edits.SymbolEditError as error:
                result = f"error: {error}"
            log.append((base, symbol, roll, step, result))
            if not result.startswith("error") and rng.random() < 0.8:
                current[0] = result  # committed; else vetoed
    finally:
        stop.set()
        thread.join()
    for source, found in served[:: max(1, len(served) // 20)]:
        assert found == extract_symbols("big.py", source)
    for base, symbol, roll, step, result in log:
        monkeypatch.setattr(edits, "_LAST_TREE", edits._TreeCache())
        try:
            cold = _edit(base, symbol, roll, step)
        except edits.SymbolEditError as error:
            cold = f"error: {error}"
        assert cold == result


def _fresh(context: Context) -> Request:
    """The request a context with nothing kept renders from the same state."""
    other = Context(
        context.system,
        context.task,
        context.keep_observations,
        history=list(context.history),
        summaries=dict(context.summaries),
        boundary=context.boundary,
        secrets=context.secrets,
    )
    return other.request()


def _step(context: Context, rng: random.Random, step: int, ids: list[str]) -> None:
    roll = rng.random()
    if roll < 0.35:
        call_id = rng.choice(ids) if ids and rng.random() < 0.25 else f"c{step}"
        ids.append(call_id)
        context.add_assistant("", [{"id": call_id, "name": "read", "arguments": "{}"}])
        context.add_tool_result(call_id, "read", "text " * rng.randint(1, 40), f"read {step}")
    elif roll < 0.45:
        context.add_user(f"more {step}")
    elif roll < 0.5:
        context.keep_observations = rng.choice([0, 1, 2, 5])
    elif roll < 0.53:
        context.task = rng.choice(["task", "another task"])
    elif roll < 0.6:
        cuts = [c for c in condense._cuts(context.history, end=True) if c > 0]
        if cuts:
            context.condense(rng.choice(cuts), f"digest {step}")
    elif roll < 0.7:
        request = context.request()
        if rng.random() < 0.5:
            request.messages.clear()
        else:
            request.messages.append({"role": "user", "content": "not sent"})


@pytest.mark.parametrize("seed", range(12))
def test_a_kept_request_is_the_fresh_rendering(seed: int) -> None:
    rng = random.Random(seed)
    context = Context.start("/w", "task", rng.choice([0, 1, 2, 5]))
    ids: list[str] = []
    for step in range(40):
        _step(context, rng, step, ids)
        for _ in range(rng.randint(0, 2)):
            got, want = context.request(), _fresh(context)
            fields: list[Any] = [got.messages, got.digest, got.tokens, got.masked]
            assert fields == [want.messages, want.digest, want.tokens, want.masked], step


SERIALIZED = [
    "#!/usr/bin/env python\\nimport os\\n\\n\\ndef main():\\n    return os.getcwd()\\n",
    "# module\\nimport sys\\nprint(sys.argv)\\nprint(sys.path)\\n",
    "#!/usr/bin/env python\\nprint(1)\n",  # a two-line script: one escape
    "#!/usr/bin/env python\\r\\nimport os\\r\\nprint(os.getcwd())\\r\\n",
    "# module\\\\nimport sys\\\\nprint(sys.argv)\\\\n",  # escaped twice
    '"import os\\nprint(os.getcwd())\\nprint(1)\\n"\n',
    "import os\n\n\ndef main():\n    return 1  # was: x = 1\\n    y = 2\\n    return x\n",
]


@pytest.mark.parametrize("content", SERIALIZED)
def test_serialized_payloads_that_compile_are_refused(tmp_path: Path, content: str) -> None:
    assert _compiles(content)
    rt, _ = _workspace(tmp_path, "x = 1\n")
    proposal = rt.propose("create", {"path": "made.py", "content": content})
    assert not proposal.ok and proposal.error is not None
    assert proposal.error.code == "CONTENT_SERIALIZED"
    assert not (tmp_path / "ws" / "made.py").exists()
