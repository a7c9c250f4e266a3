"""Attacks on commit 931c8e6: a write proposal of a large Python file sends the second half
of its text to the helper *before* the diff and the content guards run
(``halves.ahead``, ``validation.compiling_ahead``, ``Runtime._proposal``), ``_check`` runs
the placeholder guard before the syntax check, and ``regions.fingerprint`` keeps its last
(path, text).

What must hold: a proposal's verdict (refused or not, its code, its line) is what the whole
``compile()`` and the pre-change order of the guards give, with or without the half sent
ahead; and ``halves.compiles(text)`` is True only when ``compile(text)`` succeeds.

Every verdict test compares three things: the proposal as it is, the same proposal with
``facade.compiling_ahead`` replaced by a no-op (the code before the change), and what a whole
``compile()`` says. Tests whose docstring starts with "DEFECT" failed on 931c8e6 (fixed after it).
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import halves, regions, validation
from grinta_jupyter.tools import facade

STDLIB = Path(sysconfig.get_paths()["stdlib"])
TARFILE = (STDLIB / "tarfile.py").read_text(encoding="utf-8")
PYDOC = (STDLIB / "pydoc.py").read_text(encoding="utf-8")
ARGPARSE = (STDLIB / "argparse.py").read_text(encoding="utf-8")
MODULES = {"tarfile": TARFILE, "pydoc": PYDOC, "argparse": ARGPARSE}

Verdict = tuple[str, int | None] | None


@pytest.fixture(autouse=True)
def _fresh_helper() -> Iterator[None]:
    halves._HELPER.close()
    halves._HELPER = halves._Helper()
    validation.forget()
    yield
    halves._HELPER.close()


def _helper_up() -> None:
    for _ in range(200):
        if halves.compiles(TARFILE):
            return
        time.sleep(0.05)
    pytest.fail("the helper never came up")


def _whole(text: str) -> tuple[int, str] | None:
    """What a whole compile says, as ``validation._python`` reports it: (line, message)."""
    try:
        compile(text, "<whole>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    except ValueError as exc:
        return 1, str(exc)
    return None


def _ahead_cut(text: str) -> int:
    cut = halves._cut(text, halves._SHARE_AHEAD)
    assert cut is not None
    return cut


def _after_cut(text: str, statement: str) -> str:
    """``text`` with a module-level ``statement`` at the first top-level start after the cut
    ``ahead`` makes (so only the helper's half holds it, wherever the longer text's cut
    falls)."""
    cut = _ahead_cut(text)
    found = halves._CUT.search(text, cut + 1)
    assert found is not None
    at = found.start() + 1
    new = text[:at] + "\n" + statement + "\n" + text[at:]
    assert _ahead_cut(new) <= at, "the statement is not in the second half"
    return new


def _before_cut(text: str, statement: str) -> str:
    """``text`` with ``statement`` just before the cut (first half), at the cut's level: the
    module's, or the body of the class the cut is in."""
    place = halves._place(text, halves._SHARE_AHEAD)
    assert place is not None
    lines = "".join(f"{place.indent}{line}\n" for line in statement.split("\n"))
    new = text[: place.at - 1] + lines + "\n" + text[place.at :]
    assert _ahead_cut(new) >= place.at + len(lines), "the statement is not in the first half"
    return new


def _verdict(proposal: Any) -> Verdict:
    error = proposal.error
    return None if error is None else (str(error.code.value), error.line)


def _propose(root: Path, tool: str, args: dict[str, Any]) -> Verdict:
    validation.forget()
    return _verdict(Runtime(root).propose(tool, args))


@contextlib.contextmanager
def _no_ahead(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The proposal as it was before the change: nothing sent ahead."""
    with monkeypatch.context() as patch:
        patch.setattr(facade, "compiling_ahead", lambda changes: contextlib.nullcontext())
        yield


def _both(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    args: dict[str, Any],
    setup: Callable[[Path], None] = lambda root: None,
) -> tuple[Verdict, Verdict]:
    """The verdict with the half sent ahead, and without (each in a fresh workspace)."""
    verdicts = []
    for name in ("ahead", "before"):
        root = tmp_path / name
        root.mkdir()
        setup(root)
        _helper_up()
        if name == "ahead":
            verdicts.append(_propose(root, tool, args))
        else:
            with _no_ahead(monkeypatch):
                verdicts.append(_propose(root, tool, args))
    return verdicts[0], verdicts[1]


def _expected(text: str) -> Verdict:
    error = _whole(text)
    return None if error is None else ("SYNTAX_ERROR", error[0])


# -- verdicts of creates ----------------------------------------------------------------------

PLUS_CHAIN = "x = " + "+".join(["a"] * 2600)


def _case(module: str, case: str) -> str:
    text = MODULES[module]
    if case == "valid":
        return text
    if case == "error before the cut":
        return _before_cut(text, "def broken(:\n    pass")
    if case == "error after the cut":
        return _after_cut(text, "def broken(:\n    pass")
    if case == "error at the end":
        return text + "\n\ndef broken(:\n    pass\n"
    if case == "global crossing the cut":
        return "crossing = 1\n" + _after_cut(text, "global crossing")
    if case == "global before, use after":
        return _before_cut(text, "global crossing") + "\n\ncrossing = 2\n"
    if case == "global with a continuation after the cut":
        return "crossing = 1\n" + _after_cut(text, "global other, \\\n    crossing")
    if case == "global after a semicolon after the cut":
        return "crossing = 1\n" + _after_cut(text, "pass;global crossing")
    if case == "fullwidth global after the cut":
        # The compiler reads names NFKC-normalised: "ｃrossing" is "crossing".
        return "crossing = 1\n" + _after_cut(text, "global \uff43rossing")
    if case == "annotations future":
        return "from __future__ import annotations\n" + text
    if case == "barry future":  # != is an error with Barry as BDFL, <> is not
        return "from __future__ import barry_as_FLUFL\n" + text
    if case == "future after the cut":
        return _after_cut(text, "from __future__ import annotations")
    if case == "coding latin-1":
        return "# -*- coding: latin-1 -*-\n" + _after_cut(text, "s = 'caf\u00e9'")
    if case == "coding with an error after the cut":
        return "# -*- coding: utf-8 -*-\n" + _after_cut(text, "def broken(:\n    pass")
    if case == "crlf with an error after the cut":
        return _after_cut(text, "def broken(:\n    pass").replace("\n", "\r\n")
    if case == "deep nesting after the cut":
        return _after_cut(text, PLUS_CHAIN)
    if case == "tab indentation after the cut":
        return _after_cut(text, "def tabbed():\n\tif 1:\n        pass")
    if case == "unclosed string after the cut":
        return _after_cut(text, "s = '''never closed")
    if case == "return outside a function after the cut":
        return _after_cut(text, "return 1")
    if case == "nonlocal at module level after the cut":
        return _after_cut(text, "nonlocal x")
    if case == "await at module level after the cut":
        return _after_cut(text, "await x")
    if case == "huge integer after the cut":
        return _after_cut(text, "BIG = " + "7" * 5000)
    raise AssertionError(case)


CASES = [
    "valid",
    "error before the cut",
    "error after the cut",
    "error at the end",
    "global crossing the cut",
    "global before, use after",
    "global with a continuation after the cut",
    "global after a semicolon after the cut",
    "fullwidth global after the cut",
    "annotations future",
    "barry future",
    "future after the cut",
    "coding latin-1",
    "coding with an error after the cut",
    "crlf with an error after the cut",
    "deep nesting after the cut",
    "tab indentation after the cut",
    "unclosed string after the cut",
    "return outside a function after the cut",
    "nonlocal at module level after the cut",
    "await at module level after the cut",
    "huge integer after the cut",
]


@pytest.mark.parametrize("case", CASES)
def test_a_create_is_judged_as_the_whole_compile_judges_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    text = _case("tarfile", case)
    ahead, before = _both(tmp_path, monkeypatch, "create", {"path": "big.py", "content": text})
    assert ahead == before, f"{case}: {ahead} with the half sent ahead, {before} without"
    assert ahead == _expected(text), f"{case}: the whole compile says {_whole(text)}"


@pytest.mark.parametrize("module", ["pydoc", "argparse"])
@pytest.mark.parametrize("case", ["valid", "error after the cut", "global crossing the cut"])
def test_other_modules_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, case: str
) -> None:
    text = _case(module, case)
    ahead, before = _both(tmp_path, monkeypatch, "create", {"path": "m.py", "content": text})
    assert ahead == before == _expected(text), (ahead, before, _whole(text))


@pytest.mark.parametrize("delta", [-1, 0])
def test_texts_at_the_size_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delta: int
) -> None:
    """Just under and at ``SPLIT_MIN_CHARS``, an error after the ahead cut."""
    parts: list[str] = []
    k = 0
    while sum(map(len, parts)) < halves.SPLIT_MIN_CHARS - 200:
        parts.append(f"def f_{k}(a, b=1):\n    total = a + b * {k}\n    return [total, {k}]\n\n\n")
        k += 1
    text = "".join(parts)
    tail = "def broken(:\n    pass\n\n\n"
    pad = halves.SPLIT_MIN_CHARS + delta - len(text) - len(tail)
    text = text + "#" * (pad - 1) + "\n" + tail
    assert len(text) == halves.SPLIT_MIN_CHARS + delta
    ahead, before = _both(tmp_path, monkeypatch, "create", {"path": "t.py", "content": text})
    assert ahead == before == _expected(text), (ahead, before)


@pytest.mark.parametrize("where", ["before the cut", "after the cut"])
def test_a_nul_byte_is_judged_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    statement = "s = 1  # \x00"
    text = (
        _before_cut(TARFILE, statement)
        if where == "before the cut"
        else _after_cut(TARFILE, statement)
    )
    ahead, before = _both(tmp_path, monkeypatch, "create", {"path": "n.py", "content": text})
    assert ahead == before, (ahead, before)
    assert ahead is not None


# -- the order of the guards --------------------------------------------------------------------

PLACEHOLDER_LINE = "# ... rest of the code ..."
SERIALIZED_LINE = 'x = 1\\ny = 2\\nz = 3\\nprint(\\"a\\")\\nw = 4'


@pytest.mark.parametrize(
    "parts",
    [
        ("placeholder", "syntax"),
        ("serialized", "syntax"),
        ("serialized", "placeholder"),
        ("serialized", "placeholder", "syntax"),
        ("placeholder",),
        ("serialized",),
    ],
)
def test_serialized_outranks_placeholder_outranks_syntax(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: tuple[str, ...]
) -> None:
    text = TARFILE
    if "syntax" in parts:
        text = _after_cut(text, "def broken(:\n    pass")
    if "placeholder" in parts:
        text = _after_cut(text, "def later():\n    pass\n    " + PLACEHOLDER_LINE)
    if "serialized" in parts:
        text = _before_cut(text, SERIALIZED_LINE)
    ahead, before = _both(tmp_path, monkeypatch, "create", {"path": "p.py", "content": text})
    assert ahead == before, (parts, ahead, before)
    want = (
        "CONTENT_SERIALIZED"
        if "serialized" in parts
        else "PLACEHOLDER"
        if "placeholder" in parts
        else "SYNTAX_ERROR"
    )
    assert ahead is not None and ahead[0] == want, (parts, ahead)


# -- edits of files on disk -----------------------------------------------------------------------


def _on_disk(**files: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        for name, text in files.items():
            (root / name).write_bytes(text.encode("utf-8"))

    return setup


def test_replace_string_breaking_the_helpers_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = "def is_tarfile(name):"
    assert target in TARFILE and TARFILE.index(target) > _ahead_cut(TARFILE)
    args = {"path": "big.py", "old_string": target, "new_string": "def is_tarfile(name:"}
    ahead, before = _both(
        tmp_path, monkeypatch, "replace_string", args, _on_disk(**{"big.py": TARFILE})
    )
    assert ahead == before == _expected(TARFILE.replace(target, "def is_tarfile(name:"))


def test_replace_string_in_a_crlf_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crlf = TARFILE.replace("\n", "\r\n")
    target = "def is_tarfile(name):"
    args = {"path": "big.py", "old_string": target, "new_string": "def is_tarfile(name:"}
    ahead, before = _both(
        tmp_path, monkeypatch, "replace_string", args, _on_disk(**{"big.py": crlf})
    )
    assert ahead == before
    assert ahead is not None and ahead[0] == "SYNTAX_ERROR"
    assert ahead == _expected(crlf.replace(target, "def is_tarfile(name:"))


def test_multiedit_of_two_large_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both files broken in their helper half: the first one's error is the one reported,
    as before; the second file's half is never sent."""
    pydoc_target = "class TextDoc(Doc):"
    assert pydoc_target in PYDOC
    args = {
        "edits": [
            {
                "path": "a.py",
                "old_string": "def is_tarfile(name):",
                "new_string": "def is_tarfile(name:",
            },
            {"path": "b.py", "old_string": pydoc_target, "new_string": "class TextDoc(Doc:"},
        ]
    }
    ahead, before = _both(
        tmp_path, monkeypatch, "multiedit", args, _on_disk(**{"a.py": TARFILE, "b.py": PYDOC})
    )
    assert ahead == before
    assert ahead is not None and ahead[0] == "SYNTAX_ERROR"


def test_multiedit_placeholder_in_one_file_syntax_error_in_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = {
        "edits": [
            {
                "path": "a.py",
                "old_string": "def is_tarfile(name):",
                "new_string": "def is_tarfile(name:",
            },
            {
                "path": "b.py",
                "old_string": "class TextDoc(Doc):",
                "new_string": "class TextDoc(Doc):\n    " + PLACEHOLDER_LINE,
            },
        ]
    }
    ahead, before = _both(
        tmp_path, monkeypatch, "multiedit", args, _on_disk(**{"a.py": TARFILE, "b.py": PYDOC})
    )
    assert ahead == before, (ahead, before)


def test_edit_symbols_breaking_a_function_after_the_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = {
        "edits": [
            {
                "symbol": "big.py::is_tarfile",
                "action": "replace",
                "new_source": "def is_tarfile(name):\n    return (\n",
            }
        ]
    }
    ahead, before = _both(
        tmp_path, monkeypatch, "edit_symbols", args, _on_disk(**{"big.py": TARFILE})
    )
    assert ahead == before, (ahead, before)
    assert ahead is not None


# -- threads and the helper's life ----------------------------------------------------------------


def test_threads_proposing_large_creates_at_once_get_the_whole_compiles_verdicts(
    tmp_path: Path,
) -> None:
    _helper_up()
    texts = {
        "valid": TARFILE,
        "broken": _after_cut(TARFILE, "def broken(:\n    pass"),
        "crossing": _case("tarfile", "global crossing the cut"),
        "pydoc": PYDOC,
    }
    expected = {name: _expected(text) for name, text in texts.items()}
    (tmp_path / "shared").mkdir()
    shared = Runtime(tmp_path / "shared")
    wrong: list[str] = []

    def work(worker: int) -> None:
        own_root = tmp_path / f"own{worker}"
        own_root.mkdir()
        own = Runtime(own_root)
        for round_ in range(3):
            for name, text in texts.items():
                for rt in (own, shared):
                    got = _verdict(
                        rt.propose(
                            "create", {"path": f"w{worker}_{round_}_{name}.py", "content": text}
                        )
                    )
                    if got != expected[name]:
                        wrong.append(f"worker {worker} {name}: {got} != {expected[name]}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert not wrong, wrong
    assert not halves._HELPER._lock.locked()


def test_a_helper_killed_between_ahead_and_the_answer_proves_nothing() -> None:
    _helper_up()
    broken = _after_cut(TARFILE, "def broken(:\n    pass")
    for text, whole_ok in ((TARFILE, True), (broken, False)):
        with halves.ahead(text):
            process = halves._HELPER._process
            assert process is not None
            process.kill()
            process.wait(5)
            assert halves.compiles(text) is False
        _helper_up()
        assert halves.compiles(broken) is False
        assert halves.compiles(TARFILE) is True
        assert (_whole(text) is None) is whole_ok


def test_a_proposal_after_a_killed_helper_is_judged_right(tmp_path: Path) -> None:
    _helper_up()
    broken = _after_cut(TARFILE, "def broken(:\n    pass")
    with halves.ahead(TARFILE):
        assert halves._HELPER._process is not None
        halves._HELPER._process.kill()
    rt = Runtime(tmp_path)
    assert _verdict(rt.propose("create", {"path": "a.py", "content": broken})) == _expected(broken)
    _helper_up()
    assert _verdict(rt.propose("create", {"path": "b.py", "content": broken})) == _expected(broken)
    assert rt.propose("create", {"path": "c.py", "content": TARFILE}).error is None


def test_another_thread_compiling_an_equal_text_meanwhile_is_not_given_the_half() -> None:
    _helper_up()
    broken = _after_cut(TARFILE, "def broken(:\n    pass")
    equal = "".join(list(broken))  # equal, another object
    assert equal == broken and equal is not broken
    seen: list[bool] = []
    with halves.ahead(broken):
        worker = threading.Thread(target=lambda: seen.append(halves.compiles(equal)))
        worker.start()
        worker.join(20)
        assert seen == [False]
        assert halves.compiles(equal) is False
    assert halves.compiles(TARFILE) is True


# -- fingerprint's memo -------------------------------------------------------------------------


def _digest(path: str, text: str) -> bytes:
    import hashlib

    return hashlib.blake2b(
        f"{path}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


def test_fingerprint_memo_never_answers_for_another_path_or_text() -> None:
    a = "x = 1\n" * 10
    b = "".join(list(a))  # equal text, another object
    pairs = [
        ("", ""),
        ("a.py", ""),
        ("", "a.py"),
        ("a.py", a),
        ("b.py", a),
        ("a.py", b),
        ("a.py", a + " "),
        ("a.py\0x", a),  # the separator inside the path
        ("a.py", "\0" + a),
        ("a.py", a),
        ("A.py", a),
        ("a.py", "\ud800"),
        ("a.py", "\ud800"),
        ("", ""),
        ("a", "b"),
        ("a", "b"),
    ]
    for path, text in pairs:
        assert regions.fingerprint(path, text) == _digest(path, text), (path, text)


def test_fingerprint_from_threads_at_once() -> None:
    texts = [(f"p{k}.py", f"y = {k}\n" * 2000) for k in range(6)]
    wanted = {key: _digest(*key) for key in texts}
    wrong: list[tuple[str, str]] = []

    def work(offset: int) -> None:
        for n in range(3000):
            path, text = texts[(n + offset) % len(texts)]
            if regions.fingerprint(path, text) != wanted[(path, text)]:
                wrong.append((path, text[:10]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        sys.setswitchinterval(old)
    assert not wrong


# -- defects: the helper's half is judged by the state at ``ahead``, not at the compile --------


def test_a_digit_limit_lowered_while_the_diff_is_made_is_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DEFECT (fixed). The helper's limit on the digits of an integer literal is the one in force
    when the half is sent (``_prepare``, before the diff), not when the whole compile would
    be made. A kernel cell (same process, another thread) that lowers
    ``sys.set_int_max_str_digits`` while a proposal makes its diff gets a 700-digit literal
    in the second half accepted; without the half sent ahead the same proposal is refused
    SYNTAX_ERROR ("Exceeds the limit (640 digits)"). The window used to be the first half's
    compile; ahead widens it to diff + guards + first half. Fix: ``_Started.finish`` answers
    False when ``sys.get_int_max_str_digits()`` is not the one sent (and likewise for the
    frames left, see below)."""
    text = _after_cut(TARFILE, "BIG = " + "7" * 700)
    diff = facade.unified_diff
    old = sys.get_int_max_str_digits()

    def cell_meanwhile(*args: Any, **kwargs: Any) -> Any:
        sys.set_int_max_str_digits(640)  # what a kernel cell does, beside the proposal
        return diff(*args, **kwargs)

    monkeypatch.setattr(facade, "unified_diff", cell_meanwhile)
    verdicts = []
    try:
        for sent in (False, True):
            sys.set_int_max_str_digits(old)
            root = tmp_path / str(sent)
            root.mkdir()
            _helper_up()
            if sent:
                verdicts.append(_propose(root, "create", {"path": "d.py", "content": text}))
            else:
                with _no_ahead(monkeypatch):
                    verdicts.append(_propose(root, "create", {"path": "d.py", "content": text}))
            whole = _whole(text)  # at the limit now in force (640)
    finally:
        sys.set_int_max_str_digits(old)
    assert whole is not None and "limit" in whole[1]
    assert verdicts[0] == ("SYNTAX_ERROR", whole[0])
    assert verdicts[1] == verdicts[0], (
        f"with the half sent ahead the proposal was {verdicts[1]}: a literal the compile "
        "refuses at the limit in force was accepted"
    )


def _at_depth(frames: int, call: Callable[[], Any]) -> Any:
    return call() if frames == 0 else _at_depth(frames - 1, call)


def test_a_recursion_limit_lowered_inside_the_block_is_honoured() -> None:
    """DEFECT (fixed). ``ahead`` measures the frames left when it sends the half; a
    ``sys.setrecursionlimit`` lowered before ``compiles`` (another thread of the kernel) is
    not seen: a chain of 2,600 ``+`` in the helper's half is proven while the whole compile
    raises RecursionError (which ``validation._python`` does not catch either). Seen:
    compiles True, compile RecursionError."""
    _helper_up()
    text = _after_cut(TARFILE, PLUS_CHAIN)
    assert _whole(text) is None
    old = sys.getrecursionlimit()
    with halves.ahead(text):
        sys.setrecursionlimit(700)
        try:
            said = halves.compiles(text)
            try:
                _whole(text)
                whole = "ok"
            except RecursionError:
                whole = "RecursionError"
        finally:
            sys.setrecursionlimit(old)
    assert whole == "RecursionError"
    assert said is False, "compiles said True; the whole compile raised RecursionError"


def test_compiles_deeper_than_ahead_is_not_told_a_failing_text_compiles() -> None:
    """DEFECT (fixed; of ``halves.ahead`` as an API; the facade stays within the bound). The
    helper's budget is the frames left at ``ahead`` minus ``_AHEAD_FRAMES`` (40); a
    ``compiles`` of the same text made 300 frames deeper takes that answer. Seen: compiles
    True, the whole compile at that depth RecursionError. Fix: compare ``frames_left()`` at
    ``finish`` with the budget sent, and answer False when fewer are left."""
    _helper_up()
    text = _after_cut(TARFILE, PLUS_CHAIN)

    def both() -> tuple[bool, str]:
        said = halves.compiles(text)
        try:
            compile(text, "<whole>", "exec", dont_inherit=True)
        except RecursionError:
            return said, "RecursionError"
        return said, "ok"

    with halves.ahead(text):
        said, whole = _at_depth(300, both)
    assert whole == "RecursionError"
    assert said is False, "compiles said True; the whole compile raised RecursionError"


def test_a_child_forked_inside_ahead_does_not_read_its_parents_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DEFECT (fixed). ``_forget_after_fork`` gives a forked child a helper of its own, but not a
    fresh ``_AHEAD``: the forking thread's pending half (``_AHEAD.started``) goes with it,
    holding the parent's pipe. The child's ``compiles`` of that text then reads whatever
    the parent's helper answers next, here its "1" for the parent's next (valid) text, and
    says the child's broken text compiles. (The parent, meanwhile, waits ``_PATIENCE`` for
    an answer the child took, and kills its helper.) Fix: clear ``_AHEAD.started`` (make a
    new ``threading.local``) in ``_forget_after_fork``."""
    monkeypatch.setattr(halves, "_PATIENCE", 1.0)
    _helper_up()
    broken = _after_cut(TARFILE, "def broken(:\n    pass")
    read_end, write_end = os.pipe()
    with halves.ahead(broken):
        pid = os.fork()
        if pid == 0:  # the child
            try:
                time.sleep(0.5)  # the parent has sent its next half by now
                said = halves.compiles(broken)
                os.write(write_end, b"1" if said else b"0")
            finally:
                os._exit(0)
    with halves.ahead(TARFILE):
        time.sleep(1.5)  # the parent's answer waits in the pipe
        halves.compiles(TARFILE)
    os.waitpid(pid, 0)
    said_in_child = os.read(read_end, 1)
    os.close(read_end)
    os.close(write_end)
    assert _whole(broken) is not None
    assert said_in_child == b"0", "the child was told its broken text compiles"
