"""Fifth round of attacks on the content guards: a function body gutted into a TODO stub,
placeholders written in other languages than English, and SQL placeholders that name
columns. Edits run through a real ``Runtime`` on a temp workspace; the new rules are also
run over real files of the standard library, which they must never refuse."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.guards import check_placeholder

PARSER = '''"""Tokens."""


class Parser:
    def parse(self, text):
        """Split text into tokens."""
        tokens = text.split()
        return [t.lower() for t in tokens]

    def empty(self):
        pass

    def abstract(self):
        raise NotImplementedError


def total(xs):
    acc = 0
    for x in xs:
        acc += x
    return acc
'''
PARSE_BODY = "        tokens = text.split()\n        return [t.lower() for t in tokens]"


def _replace(root: Path, path: str, text: str, old: str, new: str) -> str | None:
    """The error code of replacing ``old`` with ``new`` in a file holding ``text``; the
    file is left as it was when the edit is refused."""
    (root / path).write_text(text)
    proposal = Runtime(root).propose(
        "replace_string", {"path": path, "old_string": old, "new_string": new}
    )
    assert (root / path).read_text() == text  # a proposal writes nothing
    return proposal.error.code if proposal.error else None


# -- gutted bodies --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stub",
    [
        "        pass  # TODO",
        "        ...  # implement",
        "        raise NotImplementedError  # TODO",
        '        raise NotImplementedError("TODO: tokenize")',
        "        # TODO: implement\n        pass",
        "        return None  # FIXME: write the parser",
        "        pass  # your code here",
    ],
)
def test_a_body_replaced_by_a_todo_stub_is_refused(tmp_path: Path, stub: str) -> None:
    """Attack: "simplify" ``Parser.parse`` by replacing its two lines of code with a TODO
    stub. Bug: no guard compared the body with what it replaced, so the code was lost."""
    assert _replace(tmp_path, "m.py", PARSER, PARSE_BODY, stub) == "PLACEHOLDER"


def test_the_refusal_names_the_function_and_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(PARSER)
    proposal = Runtime(tmp_path).propose(
        "replace_string",
        {"path": "m.py", "old_string": PARSE_BODY, "new_string": "        pass  # TODO"},
    )
    assert proposal.error is not None and proposal.error.code == "PLACEHOLDER"
    message = proposal.error.message
    assert "Parser.parse" in message and "write out the whole body" in message
    assert proposal.error.line == 7


def test_a_function_replaced_through_edit_symbols_is_refused(tmp_path: Path) -> None:
    """The same gutting through ``edit_symbols``, a nested loop body too."""
    (tmp_path / "m.py").write_text(PARSER)
    stub = 'def total(xs):\n    """Sum."""\n    raise NotImplementedError("not yet implemented")\n'
    proposal = Runtime(tmp_path).propose(
        "edit_symbols",
        {"edits": [{"symbol": "m.py::total", "action": "replace", "new_source": stub}]},
    )
    assert proposal.error is not None and proposal.error.code == "PLACEHOLDER"
    assert "total" in proposal.error.message


@pytest.mark.parametrize(
    "old,new",
    [
        # A new stub: nothing of that name had code.
        ("\n\ndef total", "\n\ndef fresh():\n    pass  # TODO\n\n\ndef total"),
        # A stub the file held, now marked.
        ("    def empty(self):\n        pass", "    def empty(self):\n        pass  # TODO"),
        ("        raise NotImplementedError\n", "        raise NotImplementedError  # TODO\n"),
        # An abstract method made of real code, with no mark: a refactor, not laziness.
        (PARSE_BODY, "        raise NotImplementedError"),
        (PARSE_BODY, '        raise NotImplementedError("subclasses implement parse")'),
        # Code kept or rewritten, with a TODO beside it.
        (PARSE_BODY, "        return text.split()  # TODO: lower-case"),
        (PARSE_BODY, "        # TODO: cache\n        return [t.lower() for t in text.split()]"),
        # The whole function deleted.
        ('    def parse(self, text):\n        """Split text into tokens."""\n' + PARSE_BODY, ""),
    ],
)
def test_honest_edits_with_stubs_and_todos_pass(tmp_path: Path, old: str, new: str) -> None:
    assert _replace(tmp_path, "m.py", PARSER, old, new) is None


def test_a_one_line_body_made_a_stub_passes(tmp_path: Path) -> None:
    """A body of one line is cheap to write out again: it is not guarded (a miss on purpose,
    as a false refusal blocks a user)."""
    text = "def f(x):\n    return x + 1\n"
    assert _replace(tmp_path, "m.py", text, "    return x + 1", "    pass  # TODO") is None


# -- placeholders in other languages, and SQL -----------------------------------------------


@pytest.mark.parametrize(
    "path,line",
    [
        ("m.py", "    # 其余代码不变"),
        ("m.py", "    # 其他代码保持不变。"),
        ("m.py", "    # ... 现有代码 ..."),
        ("m.py", "    # 此处省略其他代码"),
        ("m.py", "    # 残りのコードは変更なし"),
        ("m.py", "    # resto del código sin cambios"),
        ("m.py", "    # Resto del código..."),
        ("m.py", "    # el resto del codigo se mantiene igual"),
        ("m.js", "    // reste du code inchangé"),
        ("m.js", "    // ... code existant ..."),
        ("m.py", "    # Rest des Codes bleibt unverändert"),
        ("m.py", "    # restante do código inalterado"),
        ("m.py", "    # остальной код без изменений"),
        ("m.py", "    # ... существующий код ..."),
    ],
)
def test_a_placeholder_in_another_language_is_refused(tmp_path: Path, path: str, line: str) -> None:
    """Attack: elide code with a comment in the user's language. Bug: the vocabulary was
    English only (and dropped every non-ASCII letter), so the elision was written."""
    code = "    a = 1\n    b = 2\n    return a + b\n"
    text = f"def f():\n{code}" if path.endswith(".py") else f"function f() {{\n{code}}}\n"
    assert _replace(tmp_path, path, text, code, line + "\n    return 3\n") == "PLACEHOLDER"


@pytest.mark.parametrize(
    "line", ["    -- ... existing columns ...", "    -- other columns unchanged"]
)
def test_a_sql_placeholder_naming_columns_is_refused(tmp_path: Path, line: str) -> None:
    text = "CREATE TABLE t (\n    id INT,\n    name TEXT\n);\n"
    new = f"{line}\n    email TEXT\n"
    assert _replace(tmp_path, "schema.sql", text, "    id INT,\n    name TEXT\n", new) == (
        "PLACEHOLDER"
    )


@pytest.mark.parametrize(
    "path,line",
    [
        ("m.py", "    # el resto del código se encarga de validar"),
        ("m.py", "    # 其他类型：直接使用 repr"),
        ("m.py", "    # 省略默认值，则使用默认值"),
        ("m.py", "    # 以下同じ"),
        ("m.py", "    # Same logging options as above."),
        ("m.py", "    # el código anterior fallaba con listas vacías"),
        ("m.py", "    # старый код"),
        ("schema.sql", "    -- existing columns"),
        ("schema.sql", "    -- rows skipped"),
    ],
)
def test_prose_comments_in_other_languages_pass(tmp_path: Path, path: str, line: str) -> None:
    """Guards: comments that say more than "code is elsewhere", or head real code."""
    if path.endswith(".sql"):
        text, old = "CREATE TABLE t (\n    id INT\n);\n", "    id INT\n"
    else:
        text, old = "def f():\n    return 1\n", "    return 1\n"
    assert _replace(tmp_path, path, text, old, f"{line}\n{old}") is None


# -- real files -----------------------------------------------------------------------------


def _stdlib_files(count: int) -> list[tuple[str, str]]:
    """``count`` modules of the standard library (no tests), read once, in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found: list[tuple[str, str]] = []
    for path in sorted(root.rglob("*.py")):
        parts = set(path.relative_to(root).parts)
        if parts & {"test", "tests", "site-packages", "idle_test", "lib2to3"}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found.append((str(path.relative_to(root)), text))
        if len(found) == count:
            break
    return found


@pytest.fixture(scope="module")
def stdlib() -> list[tuple[str, str]]:
    files = _stdlib_files(300)
    assert len(files) == 300
    return files


def test_no_standard_library_file_is_refused_as_new_text(stdlib: list[tuple[str, str]]) -> None:
    refused = []
    for name, text in stdlib:
        added = list(enumerate(text.split("\n"), 1))
        error = check_placeholder(added, "", name, text)
        if error is not None:
            refused.append((name, error.message))
    assert refused == []


def test_real_files_keep_passing_when_a_stub_is_added_or_marked(
    stdlib: list[tuple[str, str]],
) -> None:
    """Each of 120 files (of under 40,000 characters, for speed) edited as models do
    honestly: a new TODO stub appended, and every stub the file already had marked TODO.
    Neither removes code, so neither is refused."""
    refused, with_stubs = [], 0
    for name, text in [item for item in stdlib if len(item[1]) < 40_000][:120]:
        appended = text + "\n\ndef _added_stub():\n    pass  # TODO\n"
        added = [(text.count("\n") + 4, "    pass  # TODO")]
        if check_placeholder(added, text, name, appended) is not None:
            refused.append(name)
        lines = text.split("\n")
        marked = []
        for line_no in _stub_lines(text):
            lines[line_no - 1] += "  # TODO"
            marked.append((line_no, lines[line_no - 1]))
        if marked and check_placeholder(marked, text, name, "\n".join(lines)) is not None:
            refused.append(name)
        with_stubs += bool(marked)
    assert refused == []
    assert with_stubs >= 5  # the second edit was tried on real stubs


def test_real_functions_gutted_into_todo_stubs_are_refused(
    stdlib: list[tuple[str, str]],
) -> None:
    """The rule finds the gutting in real code: the first function of two or more lines of
    code in each of 40 files, its body replaced by ``pass  # TODO``."""
    tried = 0
    for name, text in stdlib[:40]:
        target = _first_real_function(text)
        if target is None:
            continue
        first, last, indent = target
        lines = text.split("\n")
        new_lines = [*lines[: first - 1], f"{indent}pass  # TODO", *lines[last:]]
        error = check_placeholder([(first, new_lines[first - 1])], text, name, "\n".join(new_lines))
        assert error is not None and error.code == "PLACEHOLDER", name
        tried += 1
    assert tried >= 20


def _stub_lines(text: str) -> list[int]:
    """The lines of the one-line ``pass`` or ``...`` bodies of ``text``'s functions."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body[-1]
            if len(node.body) <= 2 and body.lineno == body.end_lineno:
                is_pass = isinstance(body, ast.Pass)
                is_dots = isinstance(body, ast.Expr) and getattr(body.value, "value", 0) is ...
                if (is_pass or is_dots) and body.lineno != node.lineno:
                    found.append(body.lineno)
    return found


def _first_real_function(text: str) -> tuple[int, int, str] | None:
    """(first line, last line, indent) of the code of the first function whose body, its
    docstring left out, spans two lines or more and holds no nested function or class."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.decorator_list:
            continue
        body = node.body
        if isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant
        ):
            body = body[1:]
        if not body or body[0].lineno == node.lineno:
            continue
        nested = any(
            isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for s in body
            for n in ast.walk(s)
        )
        last = body[-1].end_lineno or body[-1].lineno
        if not nested and last - body[0].lineno >= 1:
            indent = " " * body[0].col_offset
            return body[0].lineno, last, indent
    return None
